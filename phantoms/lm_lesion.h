/* The lesion test of an anatomical prior (issue 12): a benchmark problem
 * whose truth and k-space hold a small spherical lesion that the
 * anatomical reference lacks, the reference optionally moved (by whole or
 * fractional voxels, as patient motion between the two scans) or acquired
 * at half the resolution. The lesion is one more ellipsoid of the analytic
 * phantom, so its k-space is exact like the others'.
 *
 * The lesion mask labels voxels 1 (lesion core) and 2 (a shell of the
 * surrounding tissue); lm_lesion_contrast (lm_metrics.h) scores an image
 * on it. */
#ifndef LM_LESION_H
#define LM_LESION_H

#include "lm_phantom.h"
#include "lm_trajgen.h"
#include "lm_types.h"

typedef struct lm_lesion {
    double centre[3]; /* phantom units ([-1, 1] box) */
    double radius;    /* phantom units */
    double rho;       /* intensity added to the tissue there */
} lm_lesion;

/* The default lesion: radius 0.08 (2.6 voxels at 64^3, 9.6 mm in a 240 mm
 * FOV) in the brain of the upper left hemisphere, away from every other
 * ellipsoid, raising the tissue's 0.2 to 0.6 (a bright lesion, as in FLAIR
 * or after contrast). A fainter one sits at the noise floor of B64n: at
 * +0.1 the lesion-free reconstruction's own core-minus-shell difference is
 * a third of the lesion's contrast, so the score would measure the noise
 * (BENCHMARKS.md). */
void lm_lesion_default(lm_lesion *l);

/* p with the lesion appended as a sphere. */
lm_code lm_lesion_phantom(const lm_phantom *p, const lm_lesion *l, lm_phantom *out, lm_error *err);

/* p with every ellipsoid moved by shift (phantom units). */
void lm_phantom_shift(const lm_phantom *p, const double shift[3], lm_phantom *out);

/* Mask on g's grid (real values 0, 1, 2): 1 where the voxel centre lies at
 * least half a voxel inside the lesion (the voxel at the centre always);
 * 2 for voxels whose centres lie 1.5 to 3.5 voxels outside its surface and
 * whose lesion-free truth equals the tissue value at the lesion's centre
 * (same tissue, no partial volume with another ellipsoid). base is the
 * phantom without the lesion. */
lm_code lm_lesion_mask(const lm_phantom *base, const lm_lesion *l, const lm_geom *g, lm_volume **out,
                       lm_error *err);

typedef struct lm_lesion_opts {
    int lesion;            /* put the lesion in the truth and the data */
    double ref_shift_vox[3]; /* the reference's content moved by this many voxels of the
                              * reconstruction grid (its affine unchanged: motion) */
    int ref_half_res;      /* reference on an n/2 grid (voxels twice as large, same FOV,
                              * centred affine) */
} lm_lesion_opts;

/* A benchmark problem (lm_problem_def: matrix, samples, noise, coils) on
 * the lesion phantom: geometry, trajectory, k-space (noise seeded as the
 * benchmark's), truth, coil maps (NULL for one coil), the reference (the
 * lesion-free ellipsoids in the reference contrast,
 * lm_phantom_shepp_logan_3d_ref) and the lesion mask (NULL without a
 * lesion). Out pointers other than g may be NULL. */
lm_code lm_lesion_problem(const lm_problem_def *def, const lm_lesion_opts *lo, const lm_lesion *l, lm_geom *g,
                          lm_traj **traj, lm_kdata **kdata, lm_volume **truth, lm_sens **sens, lm_volume **ref,
                          lm_volume **mask, lm_error *err);

#endif
