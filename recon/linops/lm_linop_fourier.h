/* The Fourier operator F of one trajectory as an operator on a back end's
 * vectors (lm_linop.h):
 *
 *   (F x)(m) = (1/N) phi(k_m) sum_n x(x_n) exp(-i 2 pi (k_m . x_n + f(x_n) t_m))
 *
 * image (N values) -> samples (m values), both in the back end's memory;
 * the adjoint is the variant's F^H d scaled by 1/N, the encoding's
 * convention (docs/conventions.md). Without a field map f = 0. How it is
 * computed follows the kernel variant and the back end:
 *
 *   gpu-nufft on a GPU    type 2 / type 1 NUFFT on the device, no transfers
 *   cpu-nufft             the CPU NUFFT both ways
 *   a direct variant      its exact sum for F^H (on its device); F through
 *                         the CPU NUFFT (1e-6), as the encoding always did
 *   with a field map      the direct variant's exact sums with the time term
 *                         both ways (O(MN): the accuracy reference)
 *
 * The trajectory (and field map) are borrowed: they must outlive the
 * operator. The operator carries no normal operator; the encoding attaches
 * F^H F through Q (lm_linop_set_normal) when it has made Q. */
#ifndef LM_LINOP_FOURIER_H
#define LM_LINOP_FOURIER_H

#include "lm_kernels.h"
#include "lm_linop.h"
#include "lm_types.h"

/* fieldmap: N values in Hz on g's grid (host), with t->t the sample times;
 * NULL for none. variant: a resolved, available variant. threads: CPU
 * threads of the host paths (0: all cores). */
lm_code lm_linop_fourier(lm_backend *be, const lm_geom *g, const lm_traj *t, const lm_variant *variant,
                         const float *fieldmap, int threads, lm_linop **out, lm_error *err);

#endif
