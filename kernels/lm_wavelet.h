/* Orthogonal wavelet transform Psi of a complex volume, the sparsifying
 * transform of the wavelet prior (recon/lm_admm.h), on the host through
 * GSL's gsl_wavelet (Haar or Daubechies-4, periodic boundaries). Psi is
 * separable: GSL's full 1D pyramid (every level down to one coefficient)
 * along x, then y, then z ("standard" decomposition), real and imaginary
 * parts alike; GSL's filters are orthonormal, so Psi^H Psi = I.
 *
 * GSL transforms power-of-two lengths only: each axis with n > 1 is zero
 * padded to the next power of two p (an axis of 1 is left alone), so the
 * operator is G = Psi P from N voxels to M = p0 p1 p2 coefficients, P the
 * zero padding. Then G^H G = P^H Psi^H Psi P = I still holds, which is what
 * ADMM relies on; M <= 8 N (e.g. 65^3 -> 128^3), and sizes past 2^20 per
 * axis are refused. Coefficients are stored as the padded volume (x
 * fastest), each axis in GSL's packed order (scaling coefficient first). */
#ifndef LM_WAVELET_H
#define LM_WAVELET_H

#include <stdint.h>

#include "lm_types.h"

typedef enum lm_wavelet_kind {
    LM_WAVELET_HAAR = 0,
    LM_WAVELET_DB4        /* Daubechies, 4 taps (2 vanishing moments) */
} lm_wavelet_kind;

typedef struct lm_wavelet lm_wavelet;

/* LM_ERR_UNSUPPORTED when built without GSL. threads 0: all cores. Turns
 * GSL's abort-on-error handler off (process-wide): the library never aborts. */
lm_code lm_wavelet_new(const int64_t n[3], lm_wavelet_kind kind, int threads, lm_wavelet **out, lm_error *err);
void lm_wavelet_free(lm_wavelet *w);
/* M, and the padded sizes p. */
int64_t lm_wavelet_coeffs(const lm_wavelet *w, int64_t p[3]);
/* c (M values) = Psi P x (x: N values). */
void lm_wavelet_forward(lm_wavelet *w, const lm_cfloat *x, lm_cfloat *c);
/* x (N values) = P^H Psi^H c. Uses the plan's scratch: one call at a time
 * per plan. */
void lm_wavelet_adjoint(lm_wavelet *w, const lm_cfloat *c, lm_cfloat *x);

#endif
