/* Toeplitz CG on (F^H F + lambda s W^H W) rho = F^H d with Q and F^H d
 * given (docs/conventions.md section 1): the single-coil system as one call, on the
 * CPU or a GPU, for tests, bench and callers that hold Q. It is lm_cg
 * (one source for both devices) over lm_linop_toeplitz and lm_linop_reg.
 *
 * lambda is dimensionless: it is scaled by s = Q(0)/N^2, the diagonal of
 * F^H F, so one lambda means the same on every matrix size and trajectory.
 * The monitor's cost is ||F rho - d||^2 + lambda s ||W rho||^2 - ||d||^2
 * (lm_cg.h). */
#ifndef LM_SOLVER_H
#define LM_SOLVER_H

#include <stdint.h>

#include "lm_cg.h"
#include "lm_reg.h"
#include "lm_toeplitz.h"
#include "lm_types.h"

typedef struct lm_cg_opts {
    double lambda;           /* >= 0, dimensionless (see above) */
    lm_reg_kind reg;
    const float *edge_weights; /* either anatomical kind: 3 x N weights in [0,1] for
                                  the x, y, z differences (lm_reg_anatomical_weights);
                                  one quadratic solve with them (the reweighting of
                                  LM_REG_ANATOMICAL is lm_recon's) */
    int iters;               /* maximum iterations (paper: 60) */
    double tol;              /* stop when ||r|| / ||b|| < tol (0: run all) */
    int warm_start;          /* rho holds an initial guess */
    lm_cg_monitor_fn monitor;
    void *monitor_user;
    int threads;             /* 0: all cores */
} lm_cg_opts;

/* Q: lm_q_count(n) raw values on the 2x grid (lm_points_q_grid order);
 * fhd: N raw values; rho: N complex out (host memory, also on the GPU). */
lm_code lm_cg_solve_cpu(const lm_geom *g, const lm_cfloat *q, const lm_cfloat *fhd,
                        lm_cfloat *rho, const lm_cg_opts *o, lm_cg_report *rep, lm_error *err);
/* Same on the current GPU (cuFFT); LM_ERR_UNSUPPORTED without CUDA. */
lm_code lm_cg_solve_gpu(const lm_geom *g, const lm_cfloat *q, const lm_cfloat *fhd,
                        lm_cfloat *rho, const lm_cg_opts *o, lm_cg_report *rep, lm_error *err);

/* A = N + lambda d R for a normal operator N with mean diagonal d = N->diag
 * and the regulariser's W^H W (lm_linop_reg): the system every CG of Larmor
 * solves. *reg and *sum are the caller's to free (sum first). */
lm_code lm_system_new(lm_linop *normal, const int64_t n[3], double lambda, lm_reg_kind reg,
                      const float *edge_weights, lm_linop **reg_op, lm_linop **sum, lm_error *err);

#endif
