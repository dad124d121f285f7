/* Dynamic reconstruction (docs/dynamic.md): minimise over T frames x_t
 *
 *   sum_t ||E_t x_t - d_t||^2 + lambda_t R_time(x) + lambda_s R_space(x)
 *
 * by ADMM (lm_admm.h) on the block-diagonal normal operator of the
 * per-frame encodings (lm_dyn_model.h) with the priors of lm_dyn_prior.h
 * as one separable prior. Without a prior (both weights 0) the frames
 * decouple: each is its own static reconstruction, CG on E_t^H E_t x_t =
 * E_t^H d_t for iters steps.
 *
 * The weights are relative, as lm_recon's (lm_recon.h): with d the mean
 * diagonal of E^H E and s = RMS(E^H d) / d, the absolute weight is
 * lambda d s for the terms of degree 1 (ttv, llr, tv) and lambda d for
 * temporal Tikhonov, so one lambda means the same whatever the data's
 * scale. lambda_auto chooses lambda_t by k-space cross-validation
 * (lm_dyn_lambda.h). */
#ifndef LM_DYN_RECON_H
#define LM_DYN_RECON_H

#include "lm_cg.h"
#include "lm_dyn_model.h"
#include "lm_dyn_prior.h"

typedef struct lm_dyn_opts {
    lm_dyn_time time;     /* temporal prior */
    double lambda_t;      /* its relative weight */
    int space_tv;         /* spatial TV on every frame */
    double lambda_s;      /* its relative weight */
    int iters;            /* ADMM iterations (CG steps without a prior); LM_DYN_ITERS_DEFAULT */
    int cg_iters;         /* CG steps per ADMM x-update (0: LM_DYN_CG_ITERS_DEFAULT) */
    double rho;           /* initial ADMM penalty relative to d (0: LM_DYN_RHO_DEFAULT) */
    int llr_block;        /* llr block edge (0: LM_DYN_LLR_BLOCK_DEFAULT) */
    int lambda_auto;      /* choose lambda_t (cross-validation, lm_dyn_lambda.h) */
    lm_cg_monitor_fn monitor;  /* ADMM's (or each frame's CG) */
    void *monitor_user;
    /* Optional, for benchmarks: after every ADMM iteration, the current
     * frames (T N values in the back end's memory); non-zero cancels. */
    int (*watch)(void *user, int iter, const lm_cfloat *x, double elapsed_s);
    void *watch_user;
} lm_dyn_opts;

/* The defaults of dynamic runs, D128c8's least error (BENCHMARKS.md,
 * "Dynamic"; docs/dynamic.md, "Voxel basis"): the Dirac voxel basis
 * (BART's: under the box basis an exact fit of data from a continuous
 * object is the voxel-averaged truth sharpened by 1 / phi^2, and the error
 * rises from 9 to 14.6 % as ADMM converges, against 8.7 % with Dirac), 2
 * CG steps per ADMM iteration (4 or more reach the same minimiser sooner
 * but pass a worse least error on the way: 8.2 against 7.8 %), the
 * penalty at twice the mean diagonal, 25 iterations, weight 0.02. The
 * front ends use this basis unless the user chose one; the library takes
 * the geometry's. */
#define LM_DYN_LAMBDA_DEFAULT 0.02
#define LM_DYN_ITERS_DEFAULT 25
#define LM_DYN_CG_ITERS_DEFAULT 2
#define LM_DYN_RHO_DEFAULT 2.0
#define LM_DYN_BASIS_DEFAULT LM_BASIS_DIRAC
/* ADMM's adaptive penalty stays within this factor of its start (lm_admm.h:
 * unbounded, it doubled every iteration while the prox held z at 0 and
 * ADMM stalled; tests/recon/test_dyn_converge.c) */
#define LM_DYN_RHO_SPAN 4.0

void lm_dyn_opts_init(lm_dyn_opts *o);
const char *lm_dyn_time_name(lm_dyn_time t);

typedef struct lm_dyn_result {
    int64_t frames, nvox;
    lm_cfloat *x;          /* frames x nvox (host), frame-major */
    double lambda_t, lambda_s; /* relative weights solved with */
    double scale_t, scale_s;   /* the absolute weight per unit of each */
    int iters_done;
    int solves;            /* full solves (lambda_auto: its trials and the last) */
    double cv_score;       /* lambda_auto: the held-out relative prediction error at the weight chosen */
    double time_prep_s;    /* E^H d and every frame's Q */
    double time_solve_s;
} lm_dyn_result;

void lm_dyn_result_clear(lm_dyn_result *r);

/* Solves on m (made with k-space). r is overwritten. */
lm_code lm_dyn_solve(lm_dyn_model *m, const lm_dyn_opts *o, lm_dyn_result *r, lm_error *err);
/* ||E x - d||^2 over every frame and channel for x (T N values, host). */
lm_code lm_dyn_residual(lm_dyn_model *m, const lm_cfloat *x, double *resid, lm_error *err);

#endif
