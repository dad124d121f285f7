/* Regularisers of the reconstruction, ||W rho||^2, as CPU kernels: W^H W
 * applied to a volume, and the anatomical edge weights. The GPU twin is
 * lm_gpu_reg_apply (lm_gpu.h).
 *
 * With forward differences along each axis a (no difference past the last
 * voxel: Neumann boundaries):
 *   identity:   ||rho||^2                              (W^H W = I)
 *   gradient:   sum_a sum_i |rho(i + e_a) - rho(i)|^2   (W^H W = -Laplacian)
 *   anatomical-edges: sum_a sum_i w_a(i) |rho(i + e_a) - rho(i)|^2,
 *               i.e. W = diag(sqrt(w)) D, W^H W = D^T diag(w) D.
 *   anatomical: a robust penalty of the differences weighted by the
 *               reference's edges (lm_reg_robust_value below), minimised
 *               by reweighting: each step solves the quadratic problem
 *               with the weights of lm_reg_robust_weights (docs/priors.md);
 *               its W^H W is the one of anatomical-edges with them.
 * Edge weights are 3 x N floats, axis-major: w[a * N + i] weights the
 * difference between voxel i and voxel i + e_a (entries on the last slice
 * of an axis are unused). 2D volumes have no z differences. */
#ifndef LM_REG_H
#define LM_REG_H

#include <stdint.h>

#include "lm_reg_kind.h"
#include "lm_types.h"


/* Anatomical weights: w = 1 where the reference is smooth, small across its
 * edges: w = 1 / (1 + (|diff ref| / (edge_frac * max|ref|))^2).
 * |diff ref| is the forward difference of the reference's magnitude along
 * each axis (layout above); edge_frac > 0. A reference whose dims differ
 * from n is resampled by nearest neighbour: voxel i maps to reference voxel
 * round(i * dims / n) (both grids share the FOV and put voxel n/2 at the
 * centre). An all-zero reference gives w = 1. *weights is malloc'd (3N
 * floats). */
/* edge_frac: LM_EDGE_FRAC_DEFAULT (lm_reg_kind.h) unless the caller has another. */

lm_code lm_reg_anatomical_weights(const lm_volume *ref, const int64_t n[3], double edge_frac,
                                  float **weights, lm_error *err);

/* Robust penalties of the differences for LM_REG_ANATOMICAL
 * (docs/priors.md): with t = |D_a rho(i)| and the edge weights w above
 * (NULL: 1),
 *   R(rho) = sum_a sum_i w_a(i) phi(t),
 *   Charbonnier (smoothed total variation): phi(t) = delta^2 (sqrt(1 + t^2/delta^2) - 1),
 *   Lorentzian (Perona-Malik):              phi(t) = delta^2/2 log(1 + t^2/delta^2);
 * both are t^2/2 for t << delta; above delta the first grows like
 * delta t, the second like log t, so the data can carry an edge the
 * reference lacks. delta > 0 in intensity units. */
typedef enum lm_robust { LM_ROBUST_CHARBONNIER = 0, LM_ROBUST_LORENTZIAN } lm_robust;

/* R(rho) in double. */
double lm_reg_robust_value(const int64_t n[3], const float *edge_weights, lm_robust pen, double delta,
                           const lm_cfloat *rho);
/* The weights of one reweighted (half-quadratic) step at rho:
 *   out_a(i) = w_a(i) psi(t),  psi(t) = phi'(t) / t,
 * so that D^T diag(out) D rho (lm_reg_apply) is the gradient of R at rho
 * (Re and Im of the result against Re and Im of each voxel) and
 * sum out |D rho'|^2 / 2 + const majorises R (both phi are concave in t^2).
 * sigma_vox > 0 measures t on rho smoothed by a Gaussian of that many
 * voxels (Catte et al. 1992: noise then makes no edges; it is no longer
 * R's exact gradient). out: 3N floats. */
lm_code lm_reg_robust_weights(const int64_t n[3], const float *edge_weights, lm_robust pen, double delta,
                              double sigma_vox, const lm_cfloat *rho, float *out, int threads, lm_error *err);

/* y = W^H W x for the regulariser (identity, gradient, or either
 * anatomical kind with edge_weights as above); threads 0: all cores. For
 * the ADMM priors it is G^H G of their transform: D^H D for LM_REG_TV (as
 * gradient), the identity for LM_REG_WAVELET (Psi is orthogonal). */
void lm_reg_apply(const int64_t n[3], lm_reg_kind kind, const float *edge_weights,
                  const lm_cfloat *x, lm_cfloat *y, int threads);

#endif
