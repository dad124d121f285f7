/* LSQR (Paige and Saunders 1982) on min ||A x - b||^2 + damp^2 ||x||^2,
 * through A and A^H only (lm_linop.h): no normal operator, no Q. It is
 * the algorithm that shows the operator algebra carries a solver by
 * itself: with damp^2 = lambda times the mean diagonal of E^H E it solves
 * the Tikhonov problem that CG solves through the Toeplitz normal
 * operator, and converges to the same image. Written once over the back
 * end's vector operations, like lm_cg. */
#ifndef LM_LSQR_H
#define LM_LSQR_H

#include "lm_linop.h"

/* Reported after every iteration with the estimate of
 * ||A^H r - damp^2 x|| / ||A^H b||; non-zero cancels. */
typedef int (*lm_lsqr_monitor_fn)(void *user, int iter, double rel_normal_resid);

typedef struct lm_lsqr_params {
    int iters;                /* maximum iterations */
    double damp;              /* Tikhonov damping (>= 0) */
    double tol;               /* stop when the normal-equation residual estimate / ||A^H b|| < tol (0: run all) */
    lm_lsqr_monitor_fn monitor;
    void *monitor_user;
} lm_lsqr_params;

typedef struct lm_lsqr_report {
    int iters_done;
    double rel_normal_resid;  /* the last estimate */
} lm_lsqr_report;

/* b: A->n_out values, x: A->n_in values (output, started at 0), both in
 * A's back end's memory. LM_ERR_CANCELLED when the monitor asks, x the
 * last iterate. */
lm_code lm_lsqr(lm_linop *A, const lm_cfloat *b, lm_cfloat *x, const lm_lsqr_params *p, lm_lsqr_report *rep,
                lm_error *err);

#endif
