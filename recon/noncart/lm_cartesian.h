/* Reconstruction of Cartesian data by one inverse FFT: the first method for
 * fully or partially sampled grids (ISMRMRD Cartesian acquisitions). Samples
 * must lie on the integer k grid of the matrix (k in cycles/FOV,
 * -n/2 <= k < n/2); missing samples are zero, repeated ones averaged.
 * rho(x_i) = sum_k d(k) exp(+i 2 pi k.x_i), the adjoint of the Dirac-basis
 * forward model, which for a full grid is its exact inverse. */
#ifndef LM_CARTESIAN_H
#define LM_CARTESIAN_H

#include "lm_kernels.h"
#include "lm_types.h"

/* LM_OK when every sample sits on the integer grid of g (tolerance 1e-3). */
lm_code lm_cartesian_check(const lm_geom *g, const lm_traj *t, lm_error *err);
lm_code lm_cartesian_fft(const lm_geom *g, const lm_traj *t, const lm_cfloat *d, lm_cfloat *img,
                         const lm_ctl *ctl, lm_error *err);

#endif
