/* Rigid registration of an anatomical reference to a reconstruction by
 * mutual information: the reference and the data come from two scans, so
 * the patient may have moved between them, and the two images have
 * different contrasts (intensity differences are not comparable, their
 * joint statistics are).
 *
 * Six parameters p = (rx, ry, rz, tx, ty, tz): rotations in degrees about
 * x, y, z (applied in that order) and a shift in mm, about a centre point
 * (lm_rigid): the transform T maps a point of the fixed image's world
 * (scanner mm) to the moving image's world, so moving(T x) lines up with
 * fixed(x). The moving image is resampled through both NIfTI affines and T
 * (lm_resample, trilinear), so it may have any matrix, voxel size or
 * orientation.
 *
 * The metric is Mattes et al.'s mutual information (IEEE TMI 22:120,
 * 2003): a joint histogram of the fixed image's intensity (box window) and
 * the moving image's (cubic B-spline Parzen window), which makes MI a
 * smooth function of p. It is maximised by NLopt's BOBYQA (Powell's
 * derivative-free quadratic model, bounded) over a few resolution levels
 * (both images block-averaged by 2 per level), each level starting from
 * the last one's answer. A fixed image of one slice (nz = 1) gets the
 * in-plane parameters only (rz, tx, ty); the others keep their start. */
#ifndef LM_REGISTER_H
#define LM_REGISTER_H

#include "lm_resample.h"
#include "lm_types.h"

typedef struct lm_register_opts {
    int levels;            /* resolution levels; 0: as many as keep >= 16 voxels an axis (at most 3) */
    int bins;              /* histogram bins per image (default 32) */
    double max_rot_deg;    /* search bounds: |r| <= max_rot_deg (default 15) */
    double max_shift_mm;   /* |t| <= max_shift_mm (default: a quarter of the fixed FOV) */
    int max_evals;         /* metric evaluations per level (default 400) */
    double xtol;           /* stop when a step moves every parameter less than this (degrees
                              or mm) times the level's voxel size in mm / the finest's
                              (default 0.005) */
} lm_register_opts;

void lm_register_opts_init(lm_register_opts *o);

/* A registration is accepted only when, at its answer, the reference covers
 * at least this share of the reconstruction's signal and shares at least
 * this much mutual information (nats) with it. */
#define LM_REF_MIN_COVERED 0.5
#define LM_REF_MIN_MI 0.05

typedef struct lm_register_report {
    double mi_start;       /* MI (nats) at the starting point, finest level */
    double mi_end;         /* at the answer */
    double covered;        /* at the answer: the share of the fixed image's signal (sum of
                              |fixed|) that lies inside the moving image; near 0 when the two
                              barely overlap */
    int evals;             /* metric evaluations over all levels */
    int levels;
} lm_register_report;

/* The centre lm_register_rigid rotates about: the world position of fixed
 * voxel (n/2, n/2, n/2) (docs/conventions.md section 2: the grid's centre). */
void lm_register_centre(const lm_volume *fixed, double centre_mm[3]);

/* Finds T maximising MI(|fixed(x)|, |moving(T x)|) over fixed's voxels.
 * t: on entry the starting point (rot_deg, shift_mm; its centre_mm is
 * overwritten with lm_register_centre), on return the answer. o NULL:
 * defaults. rep may be NULL. */
lm_code lm_register_rigid(const lm_volume *fixed, const lm_volume *moving, const lm_register_opts *o,
                          lm_rigid *t, lm_register_report *rep, lm_error *err);

/* MI (nats) of |fixed| and |moving| seen through t (NULL: identity), with
 * the histogram of lm_register_rigid (bins as given, 0: 32): for tests and
 * reports. */
lm_code lm_register_mi(const lm_volume *fixed, const lm_volume *moving, const lm_rigid *t, int bins, double *mi,
                       lm_error *err);

#endif
