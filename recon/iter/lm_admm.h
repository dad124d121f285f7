/* ADMM (Boyd et al. 2011, scaled form) for
 *
 *   minimise ||E x - d||^2 + lambda f(G x)
 *
 * given the normal operator N = E^H E and b = E^H d, and a prior (G, G^H G,
 * prox of f: lm_prior.h). With z = G x split off and u the scaled dual:
 *
 *   x <- CG on (N + rho G^H G) x = b + rho G^H (z - u)   (warm-started, cg_iters steps)
 *   z <- prox_{t f}(G x + u),  t = lambda / (2 rho)
 *   u <- u + G x - z
 *
 * (rho here is half of Boyd's: the augmented term is rho ||G x - z + u||^2,
 * so the x-update has the brief's form.) Written once over lm_backend /
 * lm_linop / lm_cg like CG itself: the same source runs on the CPU and the
 * GPU. Every outer iteration costs cg_iters applications of N, one of G
 * and one to three of G^H (the residuals): CG starts from the residual the
 * previous CG left, updated for the new right-hand side and rho, rather
 * than applying N again (recomputed in full every 8th iteration against
 * float drift).
 *
 * Residuals (relative, so they compare whatever the units):
 *   primal r = ||G x - z|| / max(||G x||, ||z||)
 *   dual   s = ||G^H (z - z_prev)|| / ||G^H u||
 * Adaptive rho (residual balancing, Boyd 3.4.1, on the relative residuals):
 * r > 10 s doubles rho, s > 10 r halves it (u rescaled to match); the
 * x-update's operator follows. rho_span > 0 keeps rho within
 * [rho / rho_span, rho * rho_span] of the initial: while the prox holds
 * every coefficient at zero (a weight large for the start) s is 0 and the
 * rule alone doubles rho every iteration without end; at a huge rho the few
 * warm-started CG steps no longer move x and ADMM stalls far from the
 * minimiser (tests/recon/test_dyn_converge.c). tol > 0 stops when r and s are
 * both below it.
 *
 * The monitor gets (outer iteration, r, cost, elapsed) with cost =
 * x^H N x - 2 Re x^H b + lambda f(G x), i.e. the objective less ||d||^2;
 * x^H N x - 2 Re x^H b comes from the inner CG's own cost (no extra
 * application of N). Non-zero from the monitor cancels (LM_ERR_CANCELLED,
 * x holds that iterate). */
#ifndef LM_ADMM_H
#define LM_ADMM_H

#include "lm_cg.h"
#include "lm_prior.h"

typedef struct lm_admm_params {
    int iters;               /* outer iterations */
    int cg_iters;            /* CG steps per x-update (>= 1) */
    double lambda;           /* weight of f, absolute (lm_recon scales it, lm_recon.h) */
    double rho;              /* initial penalty, absolute, > 0 */
    int adaptive;            /* residual balancing */
    double rho_span;         /* adaptive rho's bound around the initial (0: unbounded) */
    double tol;              /* 0: run all iterations */
    int warm_start;          /* x holds an initial guess (else x starts at 0) */
    lm_cg_monitor_fn monitor;
    void *monitor_user;
} lm_admm_params;

typedef struct lm_admm_report {
    int iters_done;
    int cg_iters_done;       /* inner CG steps in all */
    double rel_resid;        /* last primal residual r */
    double dual_resid;       /* last s */
    double rho;              /* final penalty */
    double cost;             /* last monitor cost */
    double *resid_history;   /* iters_done + 1 primal residuals (entry 0: 1); caller frees */
} lm_admm_report;

/* normal: N (square, N voxels); b and x: N values on its back end; the
 * prior's operators on the same back end. rep may be NULL. */
lm_code lm_admm(lm_linop *normal, const lm_cfloat *b, const lm_prior *prior, lm_cfloat *x, const lm_admm_params *p,
                lm_admm_report *rep, lm_error *err);

#endif
