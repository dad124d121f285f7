/* Dynamic reconstruction by ADMM over the per-frame encodings (lm_dyn_recon.h). */
#include "lm_dyn_recon.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lm_admm.h"
#include "lm_dyn_lambda.h"
#include "lm_encoding.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void lm_dyn_opts_init(lm_dyn_opts *o)
{
    *o = (lm_dyn_opts){.time = LM_DYN_TIME_TV, .iters = LM_DYN_ITERS_DEFAULT};
}

const char *lm_dyn_time_name(lm_dyn_time t)
{
    switch (t) {
    case LM_DYN_TIME_TV: return "ttv";
    case LM_DYN_TIME_TIKHONOV: return "ttik";
    case LM_DYN_TIME_LLR: return "llr";
    default: return "none";
    }
}

void lm_dyn_result_clear(lm_dyn_result *r)
{
    if (!r)
        return;
    free(r->x);
    *r = (lm_dyn_result){0};
}

/* Every frame on its own: CG on E_t^H E_t x_t = b_t (lambda 0). */
static lm_code solve_frames(lm_dyn_model *m, const lm_cfloat *b, lm_cfloat *x, const lm_dyn_opts *o, int *iters,
                            lm_error *err)
{
    const int64_t N = lm_dyn_model_voxels(m);
    for (int64_t t = 0; t < lm_dyn_model_frames(m); t++) {
        lm_linop *nt = NULL;
        lm_code rc = lm_encoding_normal_op(lm_dyn_model_encoding(m, t), &nt, err);
        if (rc != LM_OK)
            return rc;
        lm_cg_params cp = {.iters = o->iters, .monitor = o->monitor, .monitor_user = o->monitor_user};
        lm_cg_report cr = {0};
        rc = lm_cg(nt, b + t * N, x + t * N, &cp, &cr, err);
        free(cr.resid_history);
        if (rc != LM_OK)
            return rc;
        *iters = cr.iters_done;
    }
    return LM_OK;
}

/* ADMM's monitor: the caller's, then its watch with the iterate. */
typedef struct watch_ctx {
    const lm_dyn_opts *o;
    const lm_cfloat *x;
} watch_ctx;

static int watch_monitor(void *user, int iter, double rel, double cost, double elapsed)
{
    const watch_ctx *w = user;
    if (w->o->monitor && w->o->monitor(w->o->monitor_user, iter, rel, cost, elapsed))
        return 1;
    return w->o->watch ? w->o->watch(w->o->watch_user, iter, w->x, elapsed) : 0;
}

/* One solve at relative weights (lt, ls) into x (back end; warm when
 * warm is set). */
static lm_code solve_at(lm_dyn_model *m, lm_linop *normal, const lm_cfloat *b, lm_cfloat *x, const lm_dyn_opts *o,
                        double lt, double ls, const lm_dyn_result *r, int warm, int *iters, lm_error *err)
{
    const int want_time = o->time != LM_DYN_TIME_NONE && lt > 0, want_space = o->space_tv && ls > 0;
    if (!want_time && !want_space)
        return solve_frames(m, b, x, o, iters, err);
    const lm_geom *g = lm_dyn_model_geom(m);
    lm_dyn_prior_desc pd = {.n = {g->n[0], g->n[1], g->n[2]}, .frames = lm_dyn_model_frames(m), .time = o->time,
                            .lambda_t = lt * r->scale_t, .space_tv = o->space_tv, .lambda_s = ls * r->scale_s,
                            .llr_block = o->llr_block};
    lm_dyn_prior *p = NULL;
    lm_code rc = lm_dyn_prior_new(normal->be, &pd, &p, err);
    if (rc != LM_OK)
        return rc;
    watch_ctx wc = {.o = o, .x = x};
    lm_admm_params ap = {.iters = o->iters, .cg_iters = o->cg_iters > 0 ? o->cg_iters : LM_DYN_CG_ITERS_DEFAULT,
                         .lambda = 1, .rho = (o->rho > 0 ? o->rho : LM_DYN_RHO_DEFAULT) * normal->diag, .adaptive = 1,
                         .rho_span = LM_DYN_RHO_SPAN,
                         .warm_start = warm, .monitor = watch_monitor, .monitor_user = &wc};
    lm_admm_report ar = {0};
    rc = lm_admm(normal, b, lm_dyn_prior_get(p), x, &ap, &ar, err);
    free(ar.resid_history);
    *iters = ar.iters_done;
    lm_dyn_prior_free(p);
    return rc;
}

lm_code lm_dyn_residual(lm_dyn_model *m, const lm_cfloat *x, double *resid, lm_error *err)
{
    const int64_t T = lm_dyn_model_frames(m), N = lm_dyn_model_voxels(m);
    double sum = 0;
    lm_code rc = LM_OK;
    for (int64_t t = 0; t < T && rc == LM_OK; t++) {
        const lm_kdata *k = lm_dyn_model_kdata(m, t);
        if (!k)
            return lm_fail(err, LM_ERR_INVALID, "dynamic model: made without k-space");
        lm_encoding *e = lm_dyn_model_encoding(m, t);
        lm_backend *be = lm_encoding_backend(e);
        lm_kdata *p = lm_kdata_new(k->m, k->ncoils, err);
        lm_cfloat *xt = p ? be->alloc(be, N, "residual") : NULL;
        if (xt) {
            be->upload(be, xt, x + t * N, (size_t)N * sizeof *xt);
            rc = lm_encoding_forward(e, xt, p, err);
            for (int64_t i = 0; rc == LM_OK && i < k->m * k->ncoils; i++) {
                const lm_cfloat dv = p->d[i] - k->d[i];
                sum += (double)crealf(dv) * crealf(dv) + (double)cimagf(dv) * cimagf(dv);
            }
        } else {
            rc = err && err->code ? err->code : LM_ERR_NOMEM;
        }
        if (xt)
            be->release(be, xt);
        lm_kdata_free(p);
    }
    *resid = sum;
    return rc;
}

lm_code lm_dyn_solve(lm_dyn_model *m, const lm_dyn_opts *o, lm_dyn_result *r, lm_error *err)
{
    *r = (lm_dyn_result){0};
    if (!m || !o)
        return lm_fail(err, LM_ERR_INVALID, "dynamic reconstruction: missing argument");
    if (o->iters < 0 || !(o->lambda_t >= 0) || !(o->lambda_s >= 0) || !isfinite(o->lambda_t) ||
        !isfinite(o->lambda_s))
        return lm_fail(err, LM_ERR_INVALID, "dynamic reconstruction: iterations %d and weights %g, %g must be >= 0",
                       o->iters, o->lambda_t, o->lambda_s);
    if (o->lambda_auto && o->time == LM_DYN_TIME_NONE)
        return lm_fail(err, LM_ERR_INVALID, "dynamic reconstruction: --lambda auto needs a temporal prior");
    const double t0 = now_s();
    const int64_t T = lm_dyn_model_frames(m), N = lm_dyn_model_voxels(m);
    r->frames = T;
    r->nvox = N;
    lm_linop *normal = NULL;
    lm_code rc = lm_dyn_model_normal(m, &normal, err);
    if (rc != LM_OK)
        return rc;
    for (int64_t t = 0; t < T && rc == LM_OK; t++)
        rc = lm_encoding_prepare_normal(lm_dyn_model_encoding(m, t), NULL, NULL, err);
    if (rc != LM_OK)
        return rc;
    normal->diag = lm_dyn_model_diag(m);
    lm_backend *be = normal->be;
    const lm_cfloat *b = NULL;
    lm_cfloat *x = be->alloc(be, T * N, "dynamic image");
    r->x = lm_alloc((size_t)(T * N), sizeof *r->x, err, "dynamic image");
    if ((rc = be->check(be, err)) != LM_OK || !r->x)
        goto done;
    if ((rc = lm_dyn_model_ehd(m, &b, err)) != LM_OK)
        goto done;
    const double d = normal->diag > 0 ? normal->diag : 1;
    const double rms = sqrt(be->dot(be, T * N, b, b) / (double)(T * N));
    r->scale_t = o->time == LM_DYN_TIME_TIKHONOV ? d : rms;
    r->scale_s = rms;
    r->lambda_t = o->lambda_t;
    r->lambda_s = o->lambda_s;
    r->time_prep_s = now_s() - t0;
    if (o->lambda_auto) {
        lm_dyn_cv_report cv;
        if ((rc = lm_dyn_lambda_cv(m, o, &cv, err)) != LM_OK)
            goto done;
        r->lambda_t = cv.lambda;
        r->cv_score = cv.score;
        r->solves += cv.trials;
    }
    rc = solve_at(m, normal, b, x, o, r->lambda_t, r->lambda_s, r, 0, &r->iters_done, err);
    r->solves++;
    if (rc == LM_OK) {
        be->download(be, r->x, x, (size_t)(T * N) * sizeof *r->x);
        rc = be->check(be, err);
    }
done:
    be->release(be, x);
    r->time_solve_s = now_s() - t0 - r->time_prep_s;
    if (rc != LM_OK)
        lm_dyn_result_clear(r);
    return rc;
}
