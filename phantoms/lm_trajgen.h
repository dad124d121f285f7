/* Trajectory generators, noise and the named benchmark problems (docs/conventions.md
 * section 4). Units: cycles per FOV. */
#ifndef LM_TRAJGEN_H
#define LM_TRAJGEN_H

#include <stdint.h>

#include "lm_phantom.h"
#include "lm_types.h"

typedef enum lm_traj_kind {
    LM_TRAJ_RADIAL3D = 0,     /* centre-out spokes, 2D golden-means ordering */
    LM_TRAJ_RADIAL3D_FULL,    /* full diameter spokes through the centre */
    LM_TRAJ_STACK_OF_SPIRALS, /* 3D: Archimedean spirals on Cartesian kz planes */
    LM_TRAJ_SPIRAL2D,
    LM_TRAJ_RADIAL2D,         /* full spokes, golden angle */
    LM_TRAJ_CARTESIAN         /* fully sampled grid (2D or 3D by n[2]) */
} lm_traj_kind;

const char *lm_traj_kind_name(lm_traj_kind k);
lm_code lm_traj_kind_parse(const char *s, lm_traj_kind *out, lm_error *err);

/* n: image matrix (kmax = n/2 per axis); m: exact sample count (0: the
 * kind's natural count); readout: samples per spoke/interleaf (0: default). */
/* Samples of one spoke/interleaf are contiguous; m cuts the last one short.
 * Defaults (nmin = smallest matrix size of the kind's axes):
 *   radial3d          sample j at radius j (j = 0..readout-1), readout nmin/2,
 *                     m = round(nx ny nz 284,592 / 128^3) (the paper's ratio);
 *                     spoke s: cos(theta) = 2 frac(s phi1) - 1,
 *                     azimuth 2 pi frac(s phi2) (Chan et al. 2009)
 *   radial3d-full     sample j at j - readout/2, readout nmin, same m; spokes on
 *                     the hemisphere, cos(theta) = frac(s phi1)
 *   radial2d          as radial3d-full in the plane, golden angle 111.25 deg,
 *                     ceil(pi nmin / 2) spokes (Nyquist)
 *   spiral2d          max(1, nmin/8) Archimedean interleaves of kmax/interleaves
 *                     turns, samples at equal arc length <= 1/FOV apart
 *   stack-of-spirals  those spirals on every Cartesian plane kz = p - nz/2
 *   cartesian         every grid point, k = i - n/2, x fastest; m and readout
 *                     must be 0 or the grid's */
lm_code lm_traj_generate(lm_traj_kind kind, const int64_t n[3], int64_t m, int64_t readout,
                         lm_traj **out, lm_error *err);

/* Adds complex white Gaussian noise n with E|n|^2 = (level x RMS|d|)^2,
 * i.e. real and imaginary parts each of standard deviation
 * level x RMS|d| / sqrt(2) (RMS over all samples and channels), seeded and
 * reproducible on every machine (own xoshiro256** stream, see .c). */
lm_code lm_noise_add(lm_kdata *k, double level, uint64_t seed, lm_error *err);

typedef struct lm_problem_def {
    const char *name;        /* B32, B64, B128, B64n, B128n, B64c8, B128c32, B64c8n, S128c8f */
    int64_t n;               /* matrix n^3 (dim 2: n^2) */
    int64_t m;               /* samples */
    int64_t readout;         /* samples per spoke */
    double noise;            /* relative sigma, 0 = none */
    int64_t coils;           /* receive coils: 1 = one uniform coil (no maps), else
                              * lm_coils_synth maps (3D) and their exact k-space */
    /* Off-resonance problems (issue 11); zero in the B problems. */
    int dim;                 /* 0 or 3: 3D radial of the 3D head; 2: an n x n matrix, the
                              * 2D head, lm_spiral's trajectory (m and readout then follow
                              * from the design and are checked by test_problems) */
    int64_t interleaves;     /* dim 2: spiral interleaves */
    double readout_ms;       /* readout duration for the sample times (lm_traj.t); 0: no
                              * times unless fieldmap_hz > 0 (then LM_PROBLEM_READOUT_MS) */
    double fieldmap_hz;      /* > 0: lm_fieldmap_synth's map with this largest |f|, and the
                              * data under it (lm_fieldmap_synth_kspace, a fine-grid sum) */
} lm_problem_def;

/* Fixed parts of every benchmark problem (docs/conventions.md section 4). */
#define LM_PROBLEM_FOV_MM 240.0
#define LM_PROBLEM_NOISE_SEED 1
#define LM_PROBLEM_TRUTH_SUB 4
/* Readout duration when a field map is asked for without one. */
#define LM_PROBLEM_READOUT_MS 25.0

const lm_problem_def *lm_problem_find(const char *name, lm_error *err);
size_t lm_problem_count(void);
const lm_problem_def *lm_problem_at(size_t i);

/* Builds a benchmark problem: geometry (FOV 240 mm), trajectory, exact
 * k-space (plus noise) and the truth (sub-voxel averaged). Any out pointer
 * may be NULL to skip that part (the truth is the slow one). */
lm_code lm_problem_make(const lm_problem_def *def, lm_geom *g, lm_traj **traj, lm_kdata **kdata,
                        lm_volume **truth, lm_error *err);
/* The same with the coil maps: kdata holds m x def->coils samples (noise
 * added over all channels with one sigma, lm_noise_add), *sens the maps on
 * the problem's grid, NULL for a single-coil problem. truth is rho itself,
 * not coil-weighted. lm_problem_make is this with sens NULL. */
lm_code lm_problem_make_coils(const lm_problem_def *def, lm_geom *g, lm_traj **traj, lm_kdata **kdata,
                              lm_volume **truth, lm_sens **sens, lm_error *err);
/* The same with the field map (Hz, lm_geom_voxels floats, caller frees;
 * NULL when def->fieldmap_hz is 0). With readout_ms or fieldmap_hz the
 * trajectory carries its sample times. lm_problem_make_coils is this with
 * fieldmap NULL (the data are the same). */
lm_code lm_problem_make_fieldmap(const lm_problem_def *def, lm_geom *g, lm_traj **traj, lm_kdata **kdata,
                                 lm_volume **truth, lm_sens **sens, float **fieldmap, lm_error *err);

#endif
