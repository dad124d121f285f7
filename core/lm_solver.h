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

typedef struct lm_cg_report {
    int iters_done;
    double rel_resid;
    double *resid_history;   /* iters_done + 1 entries (caller frees) */
} lm_cg_report;

/* Anatomical weights: w = 1 where the reference is smooth, small across its
 * edges: w = 1 / (1 + (|diff ref| / (edge_frac * max|ref|))^2). */
lm_code lm_reg_anatomical_weights(const lm_volume *ref, const int64_t n[3], double edge_frac,
                                  float **weights, lm_error *err);

/* CPU solver (FFTW). Q: 8N complex on the 2x grid (lm_points_q_grid order),
 * unscaled raw sum; fhd: N complex, unscaled raw sum; rho: N complex out. */
lm_code lm_cg_solve_cpu(const lm_geom *g, const lm_cfloat *q, const lm_cfloat *fhd,
                        lm_cfloat *rho, const lm_cg_opts *o, lm_cg_report *rep, lm_error *err);

/* Same contract on the GPU (cuFFT); LM_ERR_UNSUPPORTED without CUDA. */
lm_code lm_cg_solve_gpu(const lm_geom *g, const lm_cfloat *q, const lm_cfloat *fhd,
                        lm_cfloat *rho, const lm_cg_opts *o, lm_cg_report *rep, lm_error *err);

#endif
