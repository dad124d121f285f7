/* Automatic choice of the regularisation weight lambda (issue 12;
 * docs/lambda.md). lambda is dimensionless as everywhere in Larmor
 * (relative to the mean diagonal of E^H E, lm_encoding_diag).
 *
 * The search is written over one callback, "reconstruct at lambda and
 * report the residual ||E x - d||^2 and the penalty ||W x||^2", so it
 * serves any solver: the Tikhonov CG here (lm_lambda_tik, which also
 * estimates the trace of the influence matrix for GCV) and, later,
 * nonlinear priors (TV, wavelets through ADMM), for which the discrepancy
 * principle needs nothing more.
 *
 * Criteria:
 *   discrepancy  lambda with ||E x - d||^2 = tau * M_total * sigma^2,
 *                sigma from noise scans (after prewhitening sigma = 1) or
 *                from the outermost k-space samples (lm_lambda_noise_outer);
 *   gcv          minimum of M ||E x - d||^2 / (M - tr H)^2, H = E (E^H E +
 *                lambda c R)^-1 E^H, tr H by Hutchinson probes (fixed seed),
 *                for linear solvers only.
 * The L-curve was measured and left out: with 60 CG iterations its corner
 * sits at lambda ~0.3 on B64n, far from the best (docs/lambda.md). */
#ifndef LM_LAMBDA_H
#define LM_LAMBDA_H

#include <stdint.h>

#include "lm_cg.h"
#include "lm_lambda_criterion.h"
#include "lm_encoding.h"
#include "lm_linop.h"
#include "lm_reg.h"
#include "lm_types.h"

/* The criterion that met the target for this regulariser
 * (docs/lambda.md): discrepancy for identity and gradient (and any other
 * prior), GCV for anatomical. */
lm_lambda_criterion lm_lambda_default_criterion(lm_reg_kind reg);

/* Discrepancy safety factor: the residual aimed at is tau M sigma^2
 * (Morozov; tau slightly above 1 because the model error of a discretised
 * object adds to the noise; docs/lambda.md for the measurements). */
#define LM_LAMBDA_TAU 1.0
/* Fraction of the samples, by normalised |k|, that the noise estimate uses. */
#define LM_LAMBDA_OUTER_FRAC 0.1
/* Trial solves stop at this relative CG residual (or the caller's tol when
 * smaller): the criteria need the residual to a few per cent, and the
 * final reconstruction at the chosen lambda is an ordinary run. */
#define LM_LAMBDA_TRIAL_TOL 1e-4
/* Search range of lambda. */
#define LM_LAMBDA_MIN 1e-3
#define LM_LAMBDA_MAX 1e4

/* What one trial reconstruction reports. */
typedef struct lm_lambda_eval {
    double resid;    /* ||E x - d||^2 */
    double penalty;  /* ||W x||^2 = x^H W^H W x */
    double dof;      /* tr H (trace of the influence matrix), NAN when not estimated */
    int iters;       /* CG (or other) iterations this trial took, probes included */
} lm_lambda_eval;

/* Reconstruct at lambda (warm-started from the last call where the solver
 * can) and fill ev; want_dof asks for tr H (GCV). Return non-zero codes as
 * lm_code with err filled. */
typedef lm_code (*lm_lambda_solve_fn)(void *user, double lambda, int want_dof, lm_lambda_eval *ev, lm_error *err);

typedef struct lm_lambda_search {
    lm_lambda_criterion criterion;   /* not LM_LAMBDA_DEFAULT: resolve it first */
    lm_lambda_solve_fn solve;
    void *user;
    double m_total;                  /* data values: samples x channels */
    double noise_power;              /* sum over channels of M sigma_c^2 (discrepancy; <= 0: unknown) */
    double tau;                      /* 0: LM_LAMBDA_TAU */
    double lo, hi;                   /* 0: LM_LAMBDA_MIN, LM_LAMBDA_MAX */
    double start;                    /* discrepancy: the first trial (0: 10) */
    double resid_tol;                /* discrepancy: stop within this relative residual (0: 0.05) */
} lm_lambda_search;

typedef struct lm_lambda_result {
    double lambda;
    lm_lambda_criterion criterion;
    double value;         /* the criterion at lambda: resid / (tau M sigma^2), or GCV */
    lm_lambda_eval at;    /* the trial at lambda */
    int solves;           /* trial reconstructions */
    int iters;            /* their iterations, all together */
    int clamped;          /* lambda is an end of the range (criterion not met inside it) */
} lm_lambda_result;

lm_code lm_lambda_search_run(const lm_lambda_search *s, lm_lambda_result *r, lm_error *err);

/* Noise sigma (complex: E|n|^2 = sigma^2) of each channel from the
 * outermost frac of the samples by |k| relative to each axis' Nyquist
 * limit n/2, where an object's spectrum has decayed: a median absolute
 * deviation of the real and imaginary parts (robust to the few samples
 * that still carry signal). Needs >= 32 outer samples. Where the object's
 * spectrum has not decayed there (2D objects with sharp edges decay as
 * |k|^-1.5 only), sigma is overestimated: noise scans are better. */
typedef struct lm_lambda_noise {
    double sigma;        /* sqrt of the mean over channels of sigma_c^2 */
    double sigma2_sum;   /* sum_c sigma_c^2 */
    int64_t samples;     /* per channel */
} lm_lambda_noise;

lm_code lm_lambda_noise_outer(const lm_geom *g, const lm_traj *t, const lm_kdata *k, double frac,
                              lm_lambda_noise *out, lm_error *err);

/* The Tikhonov trial solver: CG on (N + lambda N->diag R) x = b over an
 * operator N = E^H E, R = W^H W (NULL: the identity), b = E^H d on N's
 * back end (borrowed) and ||d||^2. Warm-starts every solve from the one
 * before; for tr H, probes Hutchinson vectors z (complex +-1, fixed seed)
 * in data space: tr H ~ mean Re (E^H z)^H (N + c R)^-1 E^H z, the E^H z
 * given by adjoint (made once). */
typedef struct lm_lambda_tik lm_lambda_tik;

typedef lm_code (*lm_lambda_adjoint_fn)(void *user, const lm_kdata *z, lm_cfloat *x, lm_error *err);

typedef struct lm_lambda_tik_desc {
    lm_linop *normal;         /* E^H E (borrowed), diag set */
    lm_linop *reg;            /* W^H W (borrowed) or NULL for the identity */
    const lm_cfloat *b;       /* E^H d, normal's back end (borrowed) */
    double d_energy;          /* ||d||^2 */
    int iters;                /* CG iterations per solve */
    double tol;               /* CG stop (0: run all iters) */
    int probes;               /* Hutchinson probes (GCV), 0: none */
    int64_t m, ncoils;        /* the data's shape (probes) */
    lm_lambda_adjoint_fn adjoint;   /* E^H of a probe (probes > 0) */
    void *adjoint_user;
    lm_cg_monitor_fn monitor;       /* every CG iteration; non-zero cancels (may be NULL) */
    void *monitor_user;
} lm_lambda_tik_desc;

lm_code lm_lambda_tik_new(const lm_lambda_tik_desc *d, lm_lambda_tik **out, lm_error *err);
void lm_lambda_tik_free(lm_lambda_tik *t);
/* The lm_lambda_solve_fn of t (user = t). */
lm_code lm_lambda_tik_solve(void *user, double lambda, int want_dof, lm_lambda_eval *ev, lm_error *err);
/* The last solution (N values, back end). */
const lm_cfloat *lm_lambda_tik_solution(const lm_lambda_tik *t);

/* The whole choice for a reconstruction: E^H d, the noise level (prewhitened
 * data: sigma = 1; else lm_lambda_noise_outer), the search with the
 * Tikhonov solver. The regulariser's W^H W is reg_op (NULL: identity). */
typedef struct lm_lambda_auto_desc {
    lm_encoding *enc;
    lm_linop *reg_op;
    lm_reg_kind reg;
    lm_lambda_criterion criterion;    /* LM_LAMBDA_DEFAULT: lm_lambda_default_criterion(reg) */
    const lm_geom *geom;
    const lm_traj *traj;
    const lm_kdata *k;                /* the data as the encoding sees them */
    int whitened;                     /* k is prewhitened: sigma = 1 */
    int iters;
    double tol;
    lm_cg_monitor_fn monitor;         /* as lm_lambda_tik_desc */
    void *monitor_user;
    /* Another trial solver than the Tikhonov CG (the non-quadratic priors'
     * ADMM, lm_recon_session.c): the discrepancy principle only; its search
     * range and first trial (0: the defaults). */
    lm_lambda_solve_fn solve;
    void *solve_user;
    double lo, hi, start;
    double tau;                       /* the discrepancy's factor (0: LM_LAMBDA_TAU) */
    double resid_tol;                 /* its stopping tolerance (0: 0.05) */
} lm_lambda_auto_desc;

typedef struct lm_lambda_auto_result {
    lm_lambda_result r;
    double sigma;             /* noise sigma used (discrepancy), else 0 */
    const char *sigma_source; /* "noise scans (prewhitened)", "outer k-space", or "" */
    double time_s;
    char note[160];           /* "discrepancy, sigma 0.051 from outer k-space" */
} lm_lambda_auto_result;

lm_code lm_lambda_auto(const lm_lambda_auto_desc *d, lm_lambda_auto_result *out, lm_error *err);

#endif
