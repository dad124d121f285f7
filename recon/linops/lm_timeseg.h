/* Time segmentation of the off-resonance term (Fessler, Lee, Olafsson,
 * Shi, Noll, "Toeplitz-based iterative image reconstruction for MRI with
 * correction for magnetic field inhomogeneity", IEEE TSP 53:3393, 2005):
 *
 *     exp(-i 2 pi f t) ~= sum_l b_l(t) exp(-i 2 pi f tau_l),  l = 0..L-1
 *
 * with L segment centres tau_l spread uniformly over [tmin, tmax] of the
 * sample times (both ends included; the midpoint for L = 1) and complex
 * interpolators b_l(t), fitted per distinct sample time by least squares:
 *
 *   LM_TIMESEG_HIST    weighted by the field map's histogram (voxel counts
 *                      per frequency bin): the error is small where voxels are;
 *   LM_TIMESEG_MINMAX  weighted uniformly over [fmin, fmax] (the continuous
 *                      integral, Fessler's min-max interpolator for a field
 *                      map known only by its range).
 *
 * With e(f, t) = exp(-i 2 pi f t) - sum_l b_l(t) exp(-i 2 pi f tau_l)
 * (relative: the exact term has modulus 1) and b rounded to float as the
 * operators use it, two errors are reported:
 *   error  the root mean square of e over the voxels (each histogram bin's
 *          mean field, weighted by its share of the voxels) and the
 *          distinct sample times: the relative error of E x for an image
 *          of uncorrelated voxels, which is what auto bounds;
 *   worst  the largest |e| over the histogram's support (each occupied
 *          bin's edges and mean) and every sample time; it sits at the
 *          ends of the range, in the few voxels there, and at the ends of
 *          the readout, and decides little of the image (docs/fieldmap.md). */
#ifndef LM_TIMESEG_H
#define LM_TIMESEG_H

#include <stdint.h>

#include "lm_toeplitz_block.h"
#include "lm_types.h"

typedef enum lm_timeseg_kind { LM_TIMESEG_HIST = 0, LM_TIMESEG_MINMAX } lm_timeseg_kind;

/* The most segments auto tries and a caller may ask for. */
#define LM_TIMESEG_MAX_L LM_BLOCK_MAX_L

typedef struct lm_timeseg {
    int L;
    lm_timeseg_kind kind;
    int64_t m;          /* samples */
    double *tau;        /* L segment centres, seconds */
    lm_cfloat *b;       /* L x m: b_l(t_j) at b[l * m + j] */
    double error;       /* root-mean-square interpolation error (see above) */
    double worst;       /* worst interpolation error (see above) */
    double fmin, fmax;  /* the field map's range, Hz */
    int64_t times;      /* distinct sample times */
    uint64_t hash;      /* of L, kind, tau, and b bit for bit through the interpolators at the distinct
                         * times and the sample times (the Q cache's key) */
} lm_timeseg;

/* t: m sample times (s); f: n field-map values (Hz). L >= 1, or
 * LM_SEGMENTS_AUTO (-1): the smallest L in 1..LM_TIMESEG_MAX_L whose
 * (root-mean-square) error is below tol x LM_TIMESEG_AUTO_SHARE
 * (LM_TIMESEG_MAX_L with its error when none is): E x's relative error is
 * about the rms (1.3x on tests/fieldmap's spiral) and E^H E x's about 3.5x
 * (the forward error enters twice); both stay within tol. The segments
 * follow the phase that the field map's range spans over the readout:
 * about 2 per cycle. */
#define LM_TIMESEG_AUTO_SHARE (1.0 / 3.0)
lm_code lm_timeseg_make(const float *t, int64_t m, const float *f, int64_t n, int L, lm_timeseg_kind kind,
                        double tol, lm_timeseg **out, lm_error *err);
void lm_timeseg_free(lm_timeseg *s);

/* c_l(x) = exp(-i 2 pi f(x) tau_l): L x n values, c[l * n + j]. */
void lm_timeseg_phases(const lm_timeseg *s, const float *f, int64_t n, lm_cfloat *c);

#endif
