/* Internal to lm_recon.c and lm_recon_session.c (not installed): the
 * progress plumbing of one run and the CG half of the pipeline, which the
 * session implements. */
#ifndef LM_RECON_IMPL_H
#define LM_RECON_IMPL_H

#include "lm_encoding.h"
#include "lm_recon.h"
#include "lm_recon_session.h"

typedef struct lm_run_ctx {
    const lm_recon_opts *o;
    double t0;
    lm_stage stage;
    int coil, ncoils;    /* channel in progress, for stage fractions */
    int iters;
    double d_energy;     /* ||d||^2 of the channel in CG */
} lm_run_ctx;

double lm_run_now(void);
/* Non-zero: the callback asked to cancel. */
int lm_run_report(lm_run_ctx *c, double fraction, int iter, double rel_resid, double cost);
/* lm_ctl.progress with user = the lm_run_ctx. */
int lm_run_ctl_progress(void *user, double f);
/* lm_cg_monitor_fn with user = the lm_run_ctx. */
int lm_run_cg_monitor(void *user, int iter, double rel_resid, double cost, double elapsed_s);
lm_code lm_run_cancelled(lm_error *err, const lm_run_ctx *c);
/* ||d||^2 of one channel, in double. */
double lm_channel_energy(const lm_cfloat *d, int64_t m);
/* Adds |img|^2 of one channel into the root-sum-of-squares accumulator. */
void lm_rss_add(double *rss, const lm_cfloat *img, int64_t n);

/* The CG reconstruction of lm_recon_run on prepared coils (k, sens):
 * builds a session and, with solve, runs lambda_auto, the solve and
 * prior_influence into res. keep (may be NULL): receives the session,
 * which then owns copies of its inputs (and, without solve, res's coil
 * report); else it is freed here. */
lm_code lm_session_recon_cg(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_sens *sens,
                            const lm_recon_opts *o, int solve, lm_run_ctx *c, lm_ctl *ctl, lm_recon_result *res,
                            lm_recon_session **keep, lm_error *err);

/* The L-curve's numbers of a solved image (host, N values) on encoding e
 * with its data d (the coils as solved): resid = ||E x - d||, prior =
 * sqrt(x^H W^H W x) for the quadratic priors (weights: the anatomical ones'
 * edge weights, NULL without a reference: prior stays NaN), f(G x) for tv
 * and wavelet (lm_prior.h). NaN where not computed. */
lm_code lm_recon_norms(lm_encoding *e, const int64_t n[3], const lm_kdata *d, lm_reg_kind reg, const float *weights,
                       const lm_cfloat *image, double *resid, double *prior, lm_error *err);

/* lm_recon_session_new: the set-up's result (coil report, the grid's
 * image) moves into the session; res is left zeroed. */
void lm_session_take_info(lm_recon_session *s, lm_recon_result *res);

#endif
