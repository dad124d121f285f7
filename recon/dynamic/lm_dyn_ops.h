/* Operators over the frames of a dynamic reconstruction (docs/dynamic.md).
 * The unknown is T frames of N voxels, frame-major (frame t at t N); every
 * operator here is an lm_linop on one back end, so the solvers (lm_admm.h,
 * lm_cg.h) run on the CPU and the GPU from one source.
 *
 *   blockdiag  diag(A_1, ..., A_T): frame t's input block to its output
 *              block; the per-frame encodings E_t = F_t S and their normal
 *              operators E_t^H E_t (one Toeplitz Q per frame)
 *   tdiff      D_t: (D_t x)_t = x_{t+1} - x_t for t < T - 1 (T N -> (T - 1) N),
 *              the temporal finite difference; D_t^H D_t is the temporal
 *              Laplacian with Neumann ends
 *   identity   I on n values (the locally low-rank prior's transform) */
#ifndef LM_DYN_OPS_H
#define LM_DYN_OPS_H

#include "lm_linop.h"

/* diag(ops[0], ..., ops[n-1]) (a reference to each). The adjoint when every
 * part has one; the normal operator blockdiag(parts' normals) when every
 * part carries one. */
lm_code lm_linop_blockdiag(int n, lm_linop *const *ops, lm_linop **out, lm_error *err);
lm_code lm_linop_tdiff(lm_backend *be, int64_t nvox, int64_t frames, lm_linop **out, lm_error *err);
lm_code lm_linop_identity(lm_backend *be, int64_t n, lm_linop **out, lm_error *err);

#endif
