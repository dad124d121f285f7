/* Synthetic off-resonance: a smooth field map and the exact signal of an
 * analytic phantom under it (docs/conventions.md section 4, issue 11):
 *
 *     d_c(k_m) = integral rho(x) s_c(x) exp(-i 2 pi (k_m . x + f(x) t_m)) dx
 *
 * (x in FOV fractions, FOV volume 1; f in Hz, t in s). There is no
 * closed form once f varies, so the integral is a direct sum on a grid
 * twice as fine per axis as the matrix (a flat z axis stays flat):
 *
 *     d_c(k_m) = (1/N2) phi2(k_m) sum_n rho2_n s_c(x_n) exp(-i 2 pi (k_m . x_n + f2_n t_m))
 *
 * rho2 the phantom's sub-voxel truth on the fine grid (LM_PROBLEM_TRUTH_SUB
 * samples per fine voxel and axis), s_c the coil maps' exact series at the
 * fine voxels, f2 the field map interpolated onto them (lm_fieldmap_upsample2)
 * and phi2 the fine voxel's box transform: the exact transform of the
 * piecewise-constant fine image, so with f = 0 and no coils it approaches
 * lm_phantom_kspace (the difference is the fine grid's discretisation
 * error; test_fieldmap_synth measures it). All coils go through one
 * lm_ksum_run as weight sets (one sin/cos per pair for every coil), with
 * the roles swapped: the fine voxels are the kernel's samples (k = -x_n,
 * t = -f2_n) and the trajectory its points (x = k_m, f = t_m). */
#ifndef LM_FIELDMAP_SYNTH_H
#define LM_FIELDMAP_SYNTH_H

#include <stdint.h>

#include "lm_coils_synth.h"
#include "lm_phantom.h"
#include "lm_types.h"

/* More than this many sample-voxel pairs (fine voxels x samples) is refused
 * as hours of work on a CPU. */
#define LM_FIELDMAP_SYNTH_MAX_PAIRS 2e12
/* Largest |f| a synthetic map may have (10 kHz: far beyond any head at 7 T). */
#define LM_FIELDMAP_SYNTH_MAX_HZ 1e4

/* The unscaled shape at x (FOV fractions): a gentle background
 * 0.25 x' + 0.15 y' - 0.1 z' + 0.2 (x'^2 + y'^2 + z'^2) (primes: x / 0.5, so
 * 1 at the FOV edge) plus a sinus-like Gaussian bump of height 1, sigma
 * 0.05 FOV (12 mm at 240 mm), centred at (0, 0.40, 0), inside the front of
 * the head (+y; the Shepp-Logan skull reaches 0.46). */
double lm_fieldmap_synth_shape(double x, double y, double z);

/* The shape on the n grid (n[2] == 1: the plane z = 0), scaled so that the
 * largest |f| over the grid is max_hz (0 <= max_hz <= LM_FIELDMAP_SYNTH_MAX_HZ;
 * 0 gives zeros). *out: lm_geom_voxels-many floats (caller frees). */
lm_code lm_fieldmap_synth(const int64_t n[3], double max_hz, float **out, lm_error *err);

/* A map on the n grid onto the 2x grid (2n per axis, a flat axis stays 1):
 * the fine voxel at a coarse voxel's position (2i, or 2i + 1 for odd n)
 * takes its value, the others the four-point cubic midpoint
 * (-f[i-1] + 9 f[i] + 9 f[i+1] - f[i+2]) / 16 per axis, with linear
 * extrapolation past the edges: cubics are reproduced exactly away from the
 * edges, linear maps everywhere. *out gets the fine grid (caller frees). */
lm_code lm_fieldmap_upsample2(const int64_t n[3], const float *f, float **out, lm_error *err);

/* The fine grid of the synthesis, for the k-space and for tests. */
typedef struct lm_fieldmap_fine {
    int64_t n[3];       /* 2x the matrix (a flat axis stays 1) */
    int64_t ncoils;     /* 1 without coils */
    float *rho;         /* N2 sub-voxel truth (real) */
    lm_cfloat *sens;    /* N2 x ncoils maps, or NULL without coils */
    float *f;           /* N2 field map in Hz, or NULL without one */
} lm_fieldmap_fine;

/* p on g's grid seen by cs (NULL: one uniform coil) under the field map
 * fieldmap (on g->n, Hz; NULL: none). cs must be 2D for a flat grid. */
lm_code lm_fieldmap_fine_make(const lm_phantom *p, const lm_geom *g, const lm_coils_synth *cs, const float *fieldmap,
                              lm_fieldmap_fine **out, lm_error *err);
void lm_fieldmap_fine_free(lm_fieldmap_fine *fine);

/* d_c(k_m) of the header for every sample of t into out (out->m == t->m,
 * out->ncoils == the coils). With a field map t->t must hold the times.
 * variant: a kernel with the off-resonance term (NULL: cpu-simd where
 * available, else cpu-dp). */
lm_code lm_fieldmap_synth_data(const lm_fieldmap_fine *fine, const lm_traj *t, const char *variant, lm_kdata *out,
                               lm_error *err);

/* The two in one call: fine grid, then data. */
lm_code lm_fieldmap_synth_kspace(const lm_phantom *p, const lm_geom *g, const lm_coils_synth *cs,
                                 const float *fieldmap, const lm_traj *t, const char *variant, lm_kdata *out,
                                 lm_error *err);

#endif
