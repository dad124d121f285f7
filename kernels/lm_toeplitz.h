/* The Toeplitz normal operator F^H F on the CPU (docs/conventions.md section 1):
 *   F^H F x = (1/N^2) crop(IFFT(FFT(Q) . FFT(zero-pad(x)))) on the 2x grid.
 * Made once per Q: the circularly shifted Q is transformed once; its FFT is
 * real because Q(-x) = conj(Q(x)) for real weights. The GPU twin is
 * lm_gpu_toeplitz (lm_gpu.h). */
#ifndef LM_TOEPLITZ_H
#define LM_TOEPLITZ_H

#include <stdint.h>

#include "lm_types.h"

typedef struct lm_toeplitz lm_toeplitz;

/* q: lm_q_count(n) raw values on the 2x grid (lm_points_q_grid order). */
lm_code lm_toeplitz_new(const int64_t n[3], const lm_cfloat *q, int threads, lm_toeplitz **out,
                        lm_error *err);
/* y = F^H F x = (1/N^2) crop(IFFT(FFT(Q) . FFT(zero-pad(x)))); N values
 * each; x and y may be the same array. Not reentrant on one operator. */
void lm_toeplitz_apply(lm_toeplitz *t, const lm_cfloat *x, lm_cfloat *y);
/* One coil of the SENSE normal operator: y = conj(s) . F^H F (s . x),
 * added to y when accumulate (s NULL: 1); x != y. The map products ride
 * on the first and last passes (no extra pass over memory). */
void lm_toeplitz_apply_coil(lm_toeplitz *t, const lm_cfloat *x, const lm_cfloat *s, lm_cfloat *y, int accumulate);
/* s = Re Q(0) / N^2, the diagonal of F^H F. */
double lm_toeplitz_diag(const lm_toeplitz *t);
void lm_toeplitz_free(lm_toeplitz *t);

#endif
