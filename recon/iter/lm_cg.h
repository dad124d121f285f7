/* Conjugate gradient on A x = b for a Hermitian positive semidefinite
 * operator A (lm_linop.h), written once for every back end: it touches
 * vectors only through lm_backend.h, so the same source runs on the CPU
 * and, with A and the vectors on a GPU, entirely on the device (one small
 * read-back per dot product).
 *
 * The monitor's cost is the CG objective up to a constant:
 *   cost = x^H A x - 2 Re(x^H b) = -Re <x, r + b>,
 * r the recursively updated residual; for A = E^H E + lambda R and b = E^H d
 * it is ||E x - d||^2 + lambda x^H R x - ||d||^2 (lm_recon adds ||d||^2). CG
 * decreases it monotonically. */
#ifndef LM_CG_H
#define LM_CG_H

#include "lm_linop.h"

/* Reported after every iteration; return non-zero to cancel. */
typedef int (*lm_cg_monitor_fn)(void *user, int iter, double rel_resid, double cost, double elapsed_s);

typedef struct lm_cg_params {
    int iters;               /* maximum iterations (paper: 60) */
    double tol;              /* stop when ||r|| / ||b|| < tol (0: run all) */
    int warm_start;          /* x holds an initial guess (else x starts at 0) */
    lm_cg_monitor_fn monitor;
    void *monitor_user;
    /* Optional (NULL: unused), for callers that solve a sequence of nearby
     * systems (ADMM): with warm_start, r0 holds b - A x for the given x and
     * saves the first application of A; r_out receives the final residual
     * b - A x (CG's recursively updated one). A's back-end memory. */
    const lm_cfloat *r0;
    lm_cfloat *r_out;
} lm_cg_params;

/* iters_done counts completed iterations; on cancel (LM_ERR_CANCELLED)
 * iters_done is the iteration whose monitor call asked to stop, x holds
 * that iterate, and resid_history is NULL (nothing to free). CG stops early
 * on ||r|| / ||b|| < tol or when p^H A p <= 0 (A singular along p, e.g.
 * lambda = 0 with an unsampled direction). b = 0 gives x = 0. */
typedef struct lm_cg_report {
    int iters_done;
    double rel_resid;
    double *resid_history;   /* iters_done + 1 entries (caller frees) */
} lm_cg_report;

/* b and x: A->n_in values in A's back end's memory. */
lm_code lm_cg(lm_linop *A, const lm_cfloat *b, lm_cfloat *x, const lm_cg_params *p, lm_cg_report *rep,
              lm_error *err);

#endif
