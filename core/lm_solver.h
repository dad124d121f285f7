/* Toeplitz conjugate gradient on (F^H F + lambda s W^H W) rho = F^H d
 * (GUIDE.md section 1). F^H F is applied through Q on the 2x grid:
 *   F^H F rho = (1/N^2) crop(IFFT(FFT(Q) . FFT(zero-pad(rho)))).
 * lambda is dimensionless: it is scaled by s = Q(0)/N^2, the diagonal of
 * F^H F, so one lambda means the same on every matrix size and trajectory. */
#ifndef LM_SOLVER_H
#define LM_SOLVER_H

#include <stdint.h>

#include "lm_types.h"

typedef enum lm_reg_kind {
    LM_REG_IDENTITY = 0, /* W = I (Tikhonov) */
    LM_REG_GRADIENT,     /* W = 3D forward finite differences */
    LM_REG_ANATOMICAL    /* finite differences weighted by a reference's edges */
} lm_reg_kind;

/* Regularisers, ||W rho||^2 with forward differences along each axis a
 * (no difference past the last voxel: Neumann boundaries):
 *   identity:   ||rho||^2                              (W^H W = I)
 *   gradient:   sum_a sum_i |rho(i + e_a) - rho(i)|^2   (W^H W = -Laplacian)
 *   anatomical: sum_a sum_i w_a(i) |rho(i + e_a) - rho(i)|^2,
 *               i.e. W = diag(sqrt(w)) D, W^H W = D^T diag(w) D.
 * Edge weights are 3 x N floats, axis-major: w[a * N + i] weights the
 * difference between voxel i and voxel i + e_a (entries on the last slice
 * of an axis are unused). 2D volumes have no z differences.
 *
 * The monitor's cost is the CG objective up to the data's energy:
 *   cost = rho^H A rho - 2 Re(rho^H b)
 *        = ||F rho - d||^2 + lambda s ||W rho||^2 - ||d||^2,
 * A = F^H F + lambda s W^H W, b = F^H d (both with the 1/N factors). CG
 * decreases it monotonically; it is computed as -Re <rho, r + b> from the
 * recursively updated residual r, so costs one extra dot product.
 * lm_recon adds ||d||^2 before reporting progress. */

/* Reported after every iteration; return non-zero to cancel. */
typedef int (*lm_cg_monitor_fn)(void *user, int iter, double rel_resid, double cost, double elapsed_s);

typedef struct lm_cg_opts {
    double lambda;           /* >= 0, dimensionless (see above) */
    lm_reg_kind reg;
    const float *edge_weights; /* LM_REG_ANATOMICAL: 3 x N weights in [0,1] for
                                  the x, y, z differences (lm_reg_anatomical_weights) */
    int iters;               /* maximum iterations (paper: 60) */
    double tol;              /* stop when ||r|| / ||b|| < tol (0: run all) */
    int warm_start;          /* rho holds an initial guess */
    lm_cg_monitor_fn monitor;
    void *monitor_user;
    int threads;             /* 0: all cores */
} lm_cg_opts;

/* iters_done counts completed iterations; on cancel (LM_ERR_CANCELLED)
 * iters_done is the iteration whose monitor call asked to stop, rho holds
 * that iterate, and resid_history is NULL (nothing to free). CG stops early
 * on ||r|| / ||b|| < tol or when p^H A p <= 0 (A singular along p, e.g.
 * lambda = 0 with an unsampled direction). b = 0 gives rho = 0. */
typedef struct lm_cg_report {
    int iters_done;
    double rel_resid;
    double *resid_history;   /* iters_done + 1 entries (caller frees) */
} lm_cg_report;

/* Anatomical weights: w = 1 where the reference is smooth, small across its
 * edges: w = 1 / (1 + (|diff ref| / (edge_frac * max|ref|))^2).
 * |diff ref| is the forward difference of the reference's magnitude along
 * each axis (layout above); edge_frac > 0 (lm_recon's default is LM_EDGE_FRAC_DEFAULT). A reference
 * whose dims differ from n is resampled by nearest neighbour: voxel i maps
 * to reference voxel round(i * dims / n) (both grids share the FOV and put
 * voxel n/2 at the centre). An all-zero reference gives w = 1. *weights is
 * malloc'd (3N floats). */
/* 0.05: region steps in a typical reference are well above 5 % of its
 * maximum, so edges get weights near 1/17 while noise-level wiggles keep ~1
 * (B32: 16.7 % error at 0.05 against 24.7 % at 0.1; BENCHMARKS.md). */
#define LM_EDGE_FRAC_DEFAULT 0.05

lm_code lm_reg_anatomical_weights(const lm_volume *ref, const int64_t n[3], double edge_frac,
                                  float **weights, lm_error *err);

/* Values of Q on the 2x grid for matrix n (lm_points_q_grid): 2n per
 * axis, except that a flat axis (n == 1) stays flat: 8N in 3D, 4N in 2D. */
int64_t lm_q_count(const int64_t n[3]);

/* y = W^H W x for the regulariser (identity, gradient or anatomical with
 * edge_weights as above); threads 0: all cores. */
void lm_reg_apply(const int64_t n[3], lm_reg_kind kind, const float *edge_weights,
                  const lm_cfloat *x, lm_cfloat *y, int threads);

/* The normal operator F^H F on its own, as CG applies it (tests, bench).
 * Made once per Q: the circularly shifted Q is transformed once; its FFT is
 * real because Q(-x) = conj(Q(x)) for real weights. */
typedef struct lm_toeplitz lm_toeplitz;
lm_code lm_toeplitz_new(const int64_t n[3], const lm_cfloat *q, int threads, lm_toeplitz **out,
                        lm_error *err);
/* y = F^H F x = (1/N^2) crop(IFFT(FFT(Q) . FFT(zero-pad(x)))); N values
 * each; x and y may be the same array. Not reentrant on one operator. */
void lm_toeplitz_apply(lm_toeplitz *t, const lm_cfloat *x, lm_cfloat *y);
/* s = Re Q(0) / N^2, the diagonal of F^H F. */
double lm_toeplitz_diag(const lm_toeplitz *t);
void lm_toeplitz_free(lm_toeplitz *t);

/* CPU solver (FFTW). Q: 8N complex on the 2x grid (lm_points_q_grid order),
 * unscaled raw sum; fhd: N complex, unscaled raw sum; rho: N complex out.
 * (lm_q_count() values of Q in general; the solver builds one
 * lm_toeplitz per call.) */
lm_code lm_cg_solve_cpu(const lm_geom *g, const lm_cfloat *q, const lm_cfloat *fhd,
                        lm_cfloat *rho, const lm_cg_opts *o, lm_cg_report *rep, lm_error *err);

/* Same contract on the GPU (cuFFT); LM_ERR_UNSUPPORTED without CUDA. */
lm_code lm_cg_solve_gpu(const lm_geom *g, const lm_cfloat *q, const lm_cfloat *fhd,
                        lm_cfloat *rho, const lm_cg_opts *o, lm_cg_report *rep, lm_error *err);

#endif
