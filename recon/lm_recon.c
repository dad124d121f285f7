/* The reconstruction pipeline shared by the CLI and the GUI (lm_recon.h):
 * validate, build the encoding operator (Q from the disk cache, coil maps,
 * on the variant's device), E^H d, CG over the one solver source; or a
 * gridding baseline; one progress callback. */
#include "lm_recon.h"

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lm_admm.h"
#include "lm_cartesian.h"
#include "lm_cg.h"
#include "lm_coil_prep.h"
#include "lm_encoding.h"
#include "lm_grid.h"
#include "lm_register.h"

const char *lm_method_name(lm_method m)
{
    switch (m) {
    case LM_METHOD_CG: return "cg";
    case LM_METHOD_GRID_LINEAR: return "grid-linear";
    case LM_METHOD_GRID_KB: return "grid-kb";
    case LM_METHOD_FFT: return "fft";
    }
    return "unknown";
}

lm_code lm_method_parse(const char *s, lm_method *out, lm_error *err)
{
    static const lm_method all[] = {LM_METHOD_CG, LM_METHOD_GRID_LINEAR, LM_METHOD_GRID_KB, LM_METHOD_FFT};
    for (size_t i = 0; s && i < sizeof all / sizeof all[0]; i++)
        if (strcmp(s, lm_method_name(all[i])) == 0) {
            *out = all[i];
            return LM_OK;
        }
    return lm_fail(err, LM_ERR_INVALID, "method '%s' is unknown (cg, grid-linear, grid-kb, fft)", s ? s : "");
}

const char *lm_reg_name(lm_reg_kind r)
{
    switch (r) {
    case LM_REG_IDENTITY: return "identity";
    case LM_REG_GRADIENT: return "gradient";
    case LM_REG_ANATOMICAL: return "anatomical";
    case LM_REG_TV: return "tv";
    case LM_REG_WAVELET: return "wavelet";
    case LM_REG_ANATOMICAL_EDGES: return "anatomical-edges";
    }
    return "unknown";
}

lm_code lm_reg_parse(const char *s, lm_reg_kind *out, lm_error *err)
{
    static const lm_reg_kind all[] = {LM_REG_IDENTITY, LM_REG_GRADIENT, LM_REG_ANATOMICAL, LM_REG_TV,
                                      LM_REG_WAVELET, LM_REG_ANATOMICAL_EDGES};
    for (size_t i = 0; s && i < sizeof all / sizeof all[0]; i++)
        if (strcmp(s, lm_reg_name(all[i])) == 0) {
            *out = all[i];
            return LM_OK;
        }
    return lm_fail(err, LM_ERR_INVALID,
                   "regulariser '%s' is unknown (identity, gradient, anatomical, tv, wavelet, anatomical-edges)",
                   s ? s : "");
}

const char *lm_coil_combine_name(lm_coil_combine c)
{
    switch (c) {
    case LM_COMBINE_AUTO: return "auto";
    case LM_COMBINE_SENSE: return "sense";
    case LM_COMBINE_RSS: return "rss";
    }
    return "unknown";
}

lm_code lm_coil_combine_parse(const char *s, lm_coil_combine *out, lm_error *err)
{
    static const lm_coil_combine all[] = {LM_COMBINE_AUTO, LM_COMBINE_SENSE, LM_COMBINE_RSS};
    for (size_t i = 0; s && i < sizeof all / sizeof all[0]; i++)
        if (strcmp(s, lm_coil_combine_name(all[i])) == 0) {
            *out = all[i];
            return LM_OK;
        }
    return lm_fail(err, LM_ERR_INVALID, "coil combination '%s' is unknown (auto, sense, rss)", s ? s : "");
}

const char *lm_sens_source_name(lm_sens_source s)
{
    switch (s) {
    case LM_SENS_NONE: return "none";
    case LM_SENS_GIVEN: return "from file";
    case LM_SENS_ESTIMATED: return "estimated";
    }
    return "unknown";
}

const char *lm_stage_name(lm_stage s)
{
    switch (s) {
    case LM_STAGE_LOAD: return "loading";
    case LM_STAGE_Q: return "computing Q";
    case LM_STAGE_FHD: return "computing F^H d";
    case LM_STAGE_CG: return "conjugate gradient";
    case LM_STAGE_GRID: return "gridding";
    case LM_STAGE_DONE: return "done";
    case LM_STAGE_COILS: return "preparing coils";
    }
    return "unknown";
}

void lm_recon_opts_init(lm_recon_opts *o)
{
    memset(o, 0, sizeof *o);
    o->method = LM_METHOD_CG;
    o->variant = LM_VARIANT_AUTO; /* the fastest here (lm_variant_resolve) */
    /* Tikhonov with lambda = 0.01 of the diagonal of F^H F: a light touch.
     * On noiseless B32 lambda 0 .. 0.1 give the same error after 60
     * iterations (47.8 %; the error there is set by undersampling, see
     * tests/solver/test_recon.c), while a non-zero lambda keeps the system
     * positive definite when the trajectory leaves k-space unsampled and
     * limits noise growth on noisy data if more iterations are run. */
    o->lambda = 0.01;
    o->reg = LM_REG_IDENTITY;
    o->iters = 60;
    o->tol = 0;
    o->use_cache = 1;
    o->segments = -1; /* LM_SEGMENTS_AUTO (lm_encoding.h) */
    o->threads = 0;
    o->edge_frac = LM_EDGE_FRAC_DEFAULT;
    o->ref_register = 1;
}

void lm_recon_result_clear(lm_recon_result *r)
{
    if (!r)
        return;
    lm_volume_free(r->image);
    free(r->resid_history);
    lm_sens_free(r->coil_images);
    lm_volume_free(r->prior_influence);
    lm_sens_free(r->sens);
    free(r->noise_cov);
    memset(r, 0, sizeof *r);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- progress plumbing ---------------------------------------------------- */

typedef struct run_ctx {
    const lm_recon_opts *o;
    double t0;
    lm_stage stage;
    int coil, ncoils;    /* channel in progress, for stage fractions */
    int iters;
    double d_energy;     /* ||d||^2 of the channel in CG */
} run_ctx;

static int report(run_ctx *c, double fraction, int iter, double rel_resid, double cost)
{
    if (!c->o->progress)
        return 0;
    lm_progress p = {
        .stage = c->stage,
        .fraction = fraction < 0 ? 0 : fraction > 1 ? 1 : fraction,
        .iter = iter,
        .iters = c->stage == LM_STAGE_CG ? c->iters : 0,
        .rel_resid = rel_resid,
        .cost = cost,
        .elapsed_s = now_s() - c->t0,
    };
    return c->o->progress(c->o->progress_user, &p);
}

/* Stages done per channel report their fraction over all channels. */
static double channel_fraction(const run_ctx *c, double f)
{
    if (c->stage == LM_STAGE_Q)
        return f;
    return ((double)c->coil + f) / (double)c->ncoils;
}

static int ctl_progress(void *user, double f)
{
    run_ctx *c = user;
    return report(c, channel_fraction(c, f), 0, 0, 0);
}

static int cg_monitor(void *user, int iter, double rel_resid, double cost, double elapsed_s)
{
    run_ctx *c = user;
    (void)elapsed_s;
    double f = c->iters > 0 ? (double)iter / (double)c->iters : 1.0;
    return report(c, channel_fraction(c, f), iter, rel_resid, cost + c->d_energy);
}

static lm_code cancelled(lm_error *err, const run_ctx *c)
{
    return lm_fail(err, LM_ERR_CANCELLED, "reconstruction cancelled during %s", lm_stage_name(c->stage));
}

static lm_code validate(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_recon_opts *o,
                        lm_error *err)
{
    if (!g || !t || !k || !o || !t->k || !k->d)
        return lm_fail(err, LM_ERR_INVALID, "reconstruction: missing geometry, trajectory, k-space or options");
    lm_code rc = lm_geom_check(g, t, err);
    if (rc != LM_OK)
        return rc;
    if (t->m != k->m)
        return lm_fail(err, LM_ERR_INVALID, "reconstruction: trajectory has %lld samples, k-space %lld",
                       (long long)t->m, (long long)k->m);
    if (k->ncoils <= 0 || k->ncoils > 1024)
        return lm_fail(err, LM_ERR_INVALID, "reconstruction: %lld channels is out of range",
                       (long long)k->ncoils);
    int64_t total = k->m * k->ncoils;
    for (int64_t j = 0; j < total; j++)
        if (!isfinite(crealf(k->d[j])) || !isfinite(cimagf(k->d[j])))
            return lm_fail(err, LM_ERR_FORMAT, "k-space sample %lld of channel %lld is not a finite number",
                           (long long)(j % k->m), (long long)(j / k->m));
    if (o->method != LM_METHOD_CG && o->method != LM_METHOD_GRID_LINEAR && o->method != LM_METHOD_GRID_KB &&
        o->method != LM_METHOD_FFT)
        return lm_fail(err, LM_ERR_INVALID, "reconstruction: unknown method %d", (int)o->method);
    if (o->sens) {
        for (int a = 0; a < 3; a++)
            if (o->sens->n[a] != g->n[a])
                return lm_fail(err, LM_ERR_INVALID, "coil maps are %lldx%lldx%lld but the matrix is %lldx%lldx%lld",
                               (long long)o->sens->n[0], (long long)o->sens->n[1], (long long)o->sens->n[2],
                               (long long)g->n[0], (long long)g->n[1], (long long)g->n[2]);
        if (o->sens->ncoils != k->ncoils)
            return lm_fail(err, LM_ERR_INVALID, "%lld coil maps but the k-space has %lld channels",
                           (long long)o->sens->ncoils, (long long)k->ncoils);
    }
    if (o->estimate_sens && o->sens)
        return lm_fail(err, LM_ERR_INVALID, "coil maps are given: nothing to estimate");
    if (o->estimate_sens && o->combine == LM_COMBINE_RSS)
        return lm_fail(err, LM_ERR_INVALID, "estimated coil maps and root-sum-of-squares exclude each other");
    if (o->compress_coils < -1 || o->compress_coils > k->ncoils)
        return lm_fail(err, LM_ERR_INVALID, "cannot compress %lld channels to %d coils", (long long)k->ncoils,
                       o->compress_coils);
    if (o->combine != LM_COMBINE_AUTO && o->combine != LM_COMBINE_SENSE && o->combine != LM_COMBINE_RSS)
        return lm_fail(err, LM_ERR_INVALID, "unknown coil combination %d", (int)o->combine);
    if (o->method == LM_METHOD_CG && o->fieldmap && !t->t)
        return lm_fail(err, LM_ERR_INVALID, "reconstruction: a field map needs the sample times, and the "
                       "trajectory has none");
    if (o->method == LM_METHOD_CG) {
        if (!o->lambda_auto && (!(o->lambda >= 0) || !isfinite(o->lambda)))
            return lm_fail(err, LM_ERR_INVALID, "lambda %g must be finite and >= 0", o->lambda);
        if (o->iters < 0 || o->iters > 100000)
            return lm_fail(err, LM_ERR_INVALID, "iteration count %d is out of range (0..100000)", o->iters);
        if (o->reg != LM_REG_IDENTITY && o->reg != LM_REG_GRADIENT && !lm_reg_weighted(o->reg) &&
            o->reg != LM_REG_TV && o->reg != LM_REG_WAVELET)
            return lm_fail(err, LM_ERR_INVALID, "unknown regulariser %d", (int)o->reg);
        if (o->admm_cg_iters < 0 || o->admm_cg_iters > 1000)
            return lm_fail(err, LM_ERR_INVALID, "ADMM inner iteration count %d is out of range (0..1000)",
                           o->admm_cg_iters);
        if (!(o->admm_rho >= 0) || !isfinite(o->admm_rho))
            return lm_fail(err, LM_ERR_INVALID, "ADMM rho %g must be finite and >= 0", o->admm_rho);
        if (o->lambda_auto && (o->reg == LM_REG_TV || o->reg == LM_REG_WAVELET))
            return lm_fail(err, LM_ERR_INVALID, "--lambda auto: not available for the %s prior yet; give lambda",
                           o->reg == LM_REG_TV ? "tv" : "wavelet");
        if (lm_reg_weighted(o->reg) && (o->lambda > 0 || o->lambda_auto) && (!o->ref || !o->ref->data))
            return lm_fail(err, LM_ERR_INVALID, "the anatomical regulariser needs a reference image");
        if (!(o->data_edge >= 0) || !isfinite(o->data_edge) || !(o->data_edge_sigma >= 0) ||
            o->data_edge_sigma > 20)
            return lm_fail(err, LM_ERR_INVALID, "data edge scale %g or smoothing %g voxels is out of range",
                           o->data_edge, o->data_edge_sigma);
        for (int a = 0; o->ref_transform_given && a < 3; a++)
            if (!isfinite(o->ref_transform.rot_deg[a]) || !isfinite(o->ref_transform.shift_mm[a]))
                return lm_fail(err, LM_ERR_INVALID, "the reference transform is not finite");
        if (o->edge_frac < 0 || !isfinite(o->edge_frac))
            return lm_fail(err, LM_ERR_INVALID, "edge fraction %g must be > 0", o->edge_frac);
    }
    return LM_OK;
}

/* ||d||^2 of one channel, in double. */
static double channel_energy(const lm_cfloat *d, int64_t m)
{
    double e = 0;
    for (int64_t j = 0; j < m; j++)
        e += (double)crealf(d[j]) * crealf(d[j]) + (double)cimagf(d[j]) * cimagf(d[j]);
    return e;
}

/* Adds |img|^2 of one channel into the root-sum-of-squares accumulator. */
static void rss_add(double *rss, const lm_cfloat *img, int64_t n)
{
    for (int64_t j = 0; j < n; j++)
        rss[j] += (double)crealf(img[j]) * crealf(img[j]) + (double)cimagf(img[j]) * cimagf(img[j]);
}

/* Which channels go into one encoding: all of them (SENSE, or one channel)
 * or each on its own (root-sum-of-squares). */
static int use_rss(const lm_kdata *k, const lm_sens *sens)
{
    return k->ncoils > 1 && !sens;
}

/* One CG system, E^H E + lambda s W^H W (weights fixed for the solve). */
typedef struct prior_ctx {
    lm_linop *normal;
    int64_t n[3];
    double lambda;
    lm_reg_kind kind;
    int iters;
    lm_linop *reg, *sys;
    lm_prior *admm;       /* tv, wavelet (lambda > 0): solved by ADMM on normal instead */
} prior_ctx;

static lm_code prior_build(prior_ctx *p, const float *weights, lm_error *err)
{
    lm_linop_free(p->sys); /* before the regulariser it sums */
    lm_linop_free(p->reg);
    p->sys = p->reg = NULL;
    return lm_system_new(p->normal, p->n, p->lambda, p->kind, weights, &p->reg, &p->sys, err);
}

static void prior_clear(prior_ctx *p)
{
    lm_linop_free(p->sys);
    lm_linop_free(p->reg);
    lm_prior_free(p->admm);
    p->sys = p->reg = NULL;
    p->admm = NULL;
}

/* The 99th percentile of |x|: the image's bright tissue, robust to a few
 * noisy voxels (histogram of 4096 bins up to the maximum). */
static double robust_max(const lm_cfloat *x, int64_t n)
{
    double mx = 0;
    for (int64_t j = 0; j < n; j++)
        mx = fmax(mx, cabsf(x[j]));
    if (!(mx > 0))
        return 0;
    enum { NB = 4096 };
    int64_t *h = calloc(NB, sizeof *h);
    if (!h)
        return mx;
    for (int64_t j = 0; j < n; j++) {
        int b = (int)(cabsf(x[j]) / mx * (NB - 1));
        h[b < 0 ? 0 : b >= NB ? NB - 1 : b]++;
    }
    int64_t want = (int64_t)(0.99 * (double)n), acc = 0;
    int b = 0;
    for (; b < NB - 1 && acc + h[b] < want; b++)
        acc += h[b];
    free(h);
    return (b + 1) * mx / (NB - 1);
}

/* ADMM for the non-quadratic priors (lm_admm.h) on E^H E = N with b = E^H
 * d, lambda made absolute as lm_recon.h documents: lambda d s with d the
 * mean diagonal of N and s = RMS(b) / d the zero-filled image's RMS
 * intensity; rho (relative to d) likewise. */
static lm_code solve_admm(lm_linop *N, const lm_cfloat *b, const lm_prior *prior, lm_cfloat *x,
                          const lm_recon_opts *o, run_ctx *c, lm_cg_report *rep, lm_error *err)
{
    lm_backend *be = N->be;
    const double d = N->diag > 0 ? N->diag : 1;
    const double s = sqrt(be->dot(be, N->n_in, b, b) / (double)N->n_in) / d;
    lm_admm_params p = {
        .iters = o->iters,
        .cg_iters = o->admm_cg_iters > 0 ? o->admm_cg_iters : LM_ADMM_CG_ITERS_DEFAULT,
        .lambda = o->lambda * d * s,
        .rho = (o->admm_rho > 0 ? o->admm_rho : LM_ADMM_RHO_DEFAULT) * d,
        .adaptive = 1,
        .tol = o->tol,
        .monitor = cg_monitor,
        .monitor_user = c,
    };
    lm_admm_report ar = {0};
    lm_code rc = be->check(be, err);
    if (rc == LM_OK && s == 0) {
        be->zero(be, N->n_in, x); /* no data: 0 is the minimiser */
        rc = be->check(be, err);
        rep->iters_done = 0;
        rep->rel_resid = 0;
        if (rc == LM_OK && !(rep->resid_history = lm_calloc(1, sizeof(double), err, "history")))
            rc = LM_ERR_NOMEM;
        return rc;
    }
    if (rc == LM_OK)
        rc = lm_admm(N, b, prior, x, &p, &ar, err);
    rep->iters_done = ar.iters_done;
    rep->rel_resid = ar.rel_resid;
    rep->resid_history = ar.resid_history;
    return rc;
}

/* E^H d and CG on the system of p for the channels in k (all of E's
 * coils); rho (host) gets the solution. */
static lm_code solve_channels(lm_encoding *e, prior_ctx *p, const lm_kdata *k, run_ctx *c, lm_ctl *ctl,
                              lm_recon_result *res, lm_cfloat *rho, lm_cg_report *rep, lm_error *err)
{
    lm_backend *be = lm_encoding_backend(e);
    const int64_t nv = lm_encoding_voxels(e);
    lm_cfloat *b = be->alloc(be, nv, "E^H d");
    lm_cfloat *x = be->alloc(be, nv, "CG solution");
    lm_code rc = be->check(be, err);

    c->stage = LM_STAGE_FHD;
    double ts = now_s();
    if (rc == LM_OK)
        rc = lm_encoding_adjoint(e, k, b, ctl, err);
    if (rc == LM_OK)
        rc = be->check(be, err);
    res->time_fhd_s += now_s() - ts;

    if (rc == LM_OK) {
        double energy = 0;
        for (int64_t ch = 0; ch < k->ncoils; ch++)
            energy += channel_energy(k->d + ch * k->m, k->m);
        c->d_energy = energy;
        c->stage = LM_STAGE_CG;
        c->iters = p->iters;
        if (report(c, 0, 0, 1, energy))
            rc = cancelled(err, c);
    }
    if (rc == LM_OK) {
        free(rep->resid_history);
        rep->resid_history = NULL;
        ts = now_s();
        if (p->admm) {
            rc = solve_admm(p->normal, b, p->admm, x, c->o, c, rep, err);
        } else {
            lm_cg_params cp = {.iters = p->iters, .tol = c->o->tol, .monitor = cg_monitor, .monitor_user = c};
            rc = lm_cg(p->sys ? p->sys : p->normal, b, x, &cp, rep, err);
        }
        if (rc == LM_OK) {
            be->download(be, rho, x, (size_t)nv * sizeof *rho);
            rc = be->check(be, err);
        }
        res->time_cg_s += now_s() - ts;
    }
    be->release(be, x);
    be->release(be, b);
    return rc;
}

static int lambda_monitor(void *user, int iter, double rel_resid, double cost, double elapsed_s)
{
    (void)cost, (void)elapsed_s;
    return report(user, 0, iter, rel_resid, 0);
}

/* lambda_auto: the search of lm_lambda.h on this encoding (root-sum-of-
 * squares: on the channel with the most energy, the same lambda for all). */
static lm_code choose_lambda(lm_encoding *e, const lm_geom *g, const lm_traj *t, const lm_kdata *k, int rss_mode,
                             const float *weights, const lm_recon_opts *o, run_ctx *c, lm_recon_result *res,
                             lm_error *err)
{
    lm_kdata one = *k;
    if (rss_mode) {
        double best = -1;
        for (int64_t ch = 0; ch < k->ncoils; ch++) {
            const double en = channel_energy(k->d + ch * k->m, k->m);
            if (en > best)
                best = en, one = (lm_kdata){.m = k->m, .ncoils = 1, .d = k->d + ch * k->m};
        }
    }
    lm_linop *rop = NULL;
    lm_code rc = o->reg == LM_REG_IDENTITY ? LM_OK
                                           : lm_linop_reg(lm_encoding_backend(e), g->n, o->reg, weights, &rop, err);
    lm_lambda_auto_result a;
    lm_lambda_auto_desc d = {.enc = e, .reg_op = rop, .reg = o->reg, .criterion = o->lambda_criterion, .geom = g,
                             .traj = t, .k = &one, .whitened = res->noise_cov != NULL, .iters = o->iters,
                             .tol = o->tol, .monitor = lambda_monitor, .monitor_user = c};
    c->stage = LM_STAGE_CG;
    if (rc == LM_OK)
        rc = lm_lambda_auto(&d, &a, err);
    lm_linop_free(rop);
    res->time_lambda_s = a.time_s;
    res->lambda_solves = a.r.solves;
    res->lambda_iters = a.r.iters;
    if (rc == LM_OK) {
        res->lambda_used = a.r.lambda;
        res->lambda_sigma = a.sigma;
        snprintf(res->lambda_criterion, sizeof res->lambda_criterion, "%s", lm_lambda_criterion_name(a.r.criterion));
        snprintf(res->lambda_note, sizeof res->lambda_note, "%s", a.note);
    }
    return rc;
}

/* Solves p for every channel: all coils at once (SENSE, or one channel),
 * or each channel on its own combined by root-sum-of-squares; out (host,
 * N) gets the image, coils (may be NULL) the coil images. */
static lm_code solve_all(lm_encoding *e, prior_ctx *p, const lm_kdata *k, const lm_sens *sens, int rss_mode,
                         run_ctx *c, lm_ctl *ctl, lm_recon_result *res, lm_cfloat *out, lm_sens *coils,
                         lm_cg_report *rep, lm_error *err)
{
    const int64_t nv = lm_encoding_voxels(e), m = k->m;
    lm_code rc = LM_OK;
    if (!rss_mode) {
        c->ncoils = 1;
        c->coil = 0;
        rc = solve_channels(e, p, k, c, ctl, res, out, rep, err);
        for (int64_t ch = 0; rc == LM_OK && coils && ch < k->ncoils; ch++)
            for (int64_t j = 0; j < nv; j++)
                coils->s[ch * nv + j] = sens->s[ch * nv + j] * out[j];
        return rc;
    }
    c->ncoils = (int)k->ncoils;
    double *rss = lm_calloc((size_t)nv, sizeof *rss, err, "channel combination");
    lm_cfloat *img = rss ? lm_alloc((size_t)nv, sizeof *img, err, "channel image") : NULL;
    rc = img ? LM_OK : LM_ERR_NOMEM;
    for (int64_t ch = 0; ch < k->ncoils && rc == LM_OK; ch++) {
        const lm_kdata one = {.m = m, .ncoils = 1, .d = k->d + ch * m};
        c->coil = (int)ch;
        rc = solve_channels(e, p, &one, c, ctl, res, img, rep, err);
        if (rc == LM_OK)
            rss_add(rss, img, nv);
        if (rc == LM_OK && coils)
            memcpy(coils->s + ch * nv, img, (size_t)nv * sizeof *img);
    }
    if (rc == LM_OK)
        for (int64_t j = 0; j < nv; j++)
            out[j] = CMPLXF((float)sqrt(rss[j]), 0.0f);
    free(rss), free(img);
    return rc;
}

/* The pilot reconstruction: gradient prior, a few iterations; the
 * registration's fixed image and the first edges of LM_REG_ANATOMICAL. */
static lm_code pilot_solve(lm_encoding *e, lm_linop *normal, const lm_geom *g, const lm_kdata *k,
                           const lm_sens *sens, int rss_mode, run_ctx *c, lm_ctl *ctl, lm_recon_result *res,
                           lm_volume **out, lm_error *err)
{
    prior_ctx pilot = {.normal = normal, .n = {g->n[0], g->n[1], g->n[2]}, .lambda = LM_PILOT_LAMBDA,
                       .kind = LM_REG_GRADIENT, .iters = LM_PILOT_ITERS};
    const double t0 = now_s(), t_fhd = res->time_fhd_s, t_cg = res->time_cg_s;
    lm_volume *pv = lm_volume_copy(res->image, err);
    lm_cg_report rep = {0};
    lm_code rc = pv ? prior_build(&pilot, NULL, err) : LM_ERR_NOMEM;
    if (rc == LM_OK)
        rc = solve_all(e, &pilot, k, sens, rss_mode, c, ctl, res, pv->data, NULL, &rep, err);
    free(rep.resid_history);
    prior_clear(&pilot);
    /* counted once, as the reference's placement */
    res->time_fhd_s = t_fhd;
    res->time_cg_s = t_cg;
    res->time_register_s += now_s() - t0;
    if (rc != LM_OK) {
        lm_volume_free(pv);
        return rc;
    }
    *out = pv;
    return LM_OK;
}

/* The reference on the reconstruction grid, aligned: the transform given,
 * or one registered to the pilot, or none (the affines alone). */
static lm_code place_reference(const lm_geom *g, const lm_volume *pv, run_ctx *c, lm_recon_result *res,
                               lm_volume **ref_grid, lm_error *err)
{
    const lm_recon_opts *o = c->o;
    const double t0 = now_s();
    lm_code rc = LM_OK;
    lm_rigid t = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    if (o->ref_transform_given)
        t = o->ref_transform;
    lm_register_centre(res->image, t.centre_mm);
    if (!o->ref_transform_given && o->ref_register) {
        lm_register_report rr = {0};
        rc = lm_register_rigid(pv, o->ref, NULL, &t, &rr, err);
        if (rc != LM_OK && err) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            rc = lm_fail(err, rc, "anatomical reference: %s", msg);
        }
        res->ref_registered = rc == LM_OK;
        res->ref_mi_start = rr.mi_start;
        res->ref_mi_end = rr.mi_end;
        res->ref_evals = rr.evals;
    }
    if (rc == LM_OK) {
        double m[4][4];
        lm_rigid_matrix(&t, m);
        res->ref_transform = t;
        rc = lm_resample(o->ref, g->n, res->image->voxel_mm, res->image->affine, m, LM_OUTSIDE_NEAREST, ref_grid,
                         err);
    }
    res->ref_used = rc == LM_OK;
    res->time_register_s += now_s() - t0;
    return rc;
}

/* CG: one encoding (one Q for every channel) and one solve, or one solve
 * per channel combined by root-sum-of-squares; anatomical priors place
 * their reference first; prior_influence solves once more with the
 * identity prior. */
static lm_code recon_cg(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_sens *sens,
                        const lm_recon_opts *o, run_ctx *c, lm_ctl *ctl, lm_recon_result *res, lm_error *err)
{
    const int rss_mode = use_rss(k, sens);
    const int64_t nv = lm_geom_voxels(g), m = t->m;
    lm_encoding *e = NULL;
    float *weights = NULL;
    lm_volume *ref_grid = NULL, *pilot = NULL;
    lm_linop *normal = NULL;
    prior_ctx pc = {0};
    lm_cg_report rep = {0};
    lm_encoding_desc d = {.geom = g, .traj = t, .sens = rss_mode ? NULL : sens, .variant = o->variant,
                          .fieldmap = o->fieldmap, .segments = o->segments, .use_cache = o->use_cache,
                          .threads = o->threads};
    double t_prep = now_s();
    lm_code rc = lm_encoding_new(&d, &e, err);
    res->time_prep_s += now_s() - t_prep;
    if (rc != LM_OK)
        return rc;
    res->segments = lm_encoding_segments(e, &res->segment_error);
    const lm_variant *vx = lm_encoding_exact_variant(e);
    if (vx && vx != lm_encoding_variant(e)) {
        const size_t len = strlen(res->note);
        snprintf(res->note + len, sizeof res->note - len, "%sexact off-resonance sums by %s (%s is a NUFFT)",
                 len ? "; " : "", vx->name, lm_encoding_variant(e)->name);
    }
    res->combine = rss_mode ? LM_COMBINE_RSS : LM_COMBINE_SENSE;
    res->fhd_pairs = (double)m * (double)nv * (double)k->ncoils;

    c->stage = LM_STAGE_Q;
    if (report(c, 0, 0, 0, 0)) {
        rc = cancelled(err, c);
        goto out;
    }
    double ts = now_s();
    rc = lm_encoding_prepare_normal(e, ctl, &res->q_from_cache, err);
    res->time_q_s = now_s() - ts;
    if (rc != LM_OK)
        goto out;
    if (report(c, 1, 0, 0, 0)) {
        rc = cancelled(err, c);
        goto out;
    }
    rc = lm_encoding_normal_op(e, &normal, err);
    if (rc != LM_OK)
        goto out;
    const int weighted = lm_reg_weighted(o->reg) && (o->lambda > 0 || o->lambda_auto);
    /* The pilot: the registration's image, and the data's own edges for
     * LM_REG_ANATOMICAL. */
    const int data_edges = weighted && o->reg == LM_REG_ANATOMICAL;
    if (weighted && ((!o->ref_transform_given && o->ref_register) || data_edges))
        rc = pilot_solve(e, normal, g, k, sens, rss_mode, c, ctl, res, &pilot, err);
    if (rc != LM_OK)
        goto out;
    if (weighted) {
        rc = place_reference(g, pilot, c, res, &ref_grid, err);
        if (rc == LM_OK)
            rc = lm_reg_anatomical_weights(ref_grid, g->n, o->edge_frac > 0 ? o->edge_frac : LM_EDGE_FRAC_DEFAULT,
                                           &weights, err);
        /* Joint edges: the reference's, times the half-quadratic weight of
         * the Lorentzian at the pilot's (smoothed) differences, so an edge
         * the data show and the reference lacks is let through
         * (docs/priors.md). In place: the weights are per difference. */
        const double kappa =
            data_edges ? (o->data_edge > 0 ? o->data_edge : LM_DATA_EDGE) * robust_max(pilot->data, nv) : 0;
        if (rc == LM_OK && data_edges && kappa > 0)
            rc = lm_reg_robust_weights(g->n, weights, LM_ROBUST_LORENTZIAN, kappa,
                                       o->data_edge_sigma > 0 ? o->data_edge_sigma : LM_DATA_EDGE_SIGMA, pilot->data,
                                       weights, o->threads, err);
        if (rc != LM_OK)
            goto out;
    }
    /* E^H E + lambda W^H W once: every channel of rss solves the same system */
    res->lambda_used = o->lambda;
    snprintf(res->lambda_criterion, sizeof res->lambda_criterion, "given");
    if (o->lambda_auto && !(o->reg == LM_REG_TV || o->reg == LM_REG_WAVELET))
        rc = choose_lambda(e, g, t, k, rss_mode, weights, o, c, res, err);
    if (rc != LM_OK)
        goto out;
    pc = (prior_ctx){.normal = normal, .n = {g->n[0], g->n[1], g->n[2]}, .lambda = res->lambda_used, .kind = o->reg,
                     .iters = o->iters};
    if (o->reg == LM_REG_TV || o->reg == LM_REG_WAVELET) {
        if (o->lambda > 0) /* lambda 0: plain CG on E^H E, as for the others */
            rc = lm_prior_new(lm_encoding_backend(e), g->n, o->reg, &pc.admm, err);
    } else {
        rc = prior_build(&pc, weights, err);
    }
    if (rc != LM_OK)
        goto out;
    if (o->keep_coil_images && k->ncoils > 1 && !(res->coil_images = lm_sens_new(g->n, k->ncoils, err))) {
        rc = LM_ERR_NOMEM;
        goto out;
    }
    rc = solve_all(e, &pc, k, sens, rss_mode, c, ctl, res, res->image->data, res->coil_images, &rep, err);
    if (rc == LM_OK) {
        res->iters_done = rep.iters_done;
        res->resid_history = rep.resid_history;
        rep.resid_history = NULL;
    }
    if (rc == LM_OK && o->prior_influence) {
        /* The same solve without the prior: identity at the same lambda
         * (lambda 0 when the prior is the identity itself, or tv/wavelet,
         * whose lambda has another scale). */
        const int plain = o->reg == LM_REG_IDENTITY || o->reg == LM_REG_TV || o->reg == LM_REG_WAVELET;
        prior_ctx base = {.normal = normal, .n = {g->n[0], g->n[1], g->n[2]}, .lambda = plain ? 0 : res->lambda_used,
                          .kind = LM_REG_IDENTITY, .iters = o->iters};
        lm_volume *inf = lm_volume_copy(res->image, err);
        lm_cg_report r2 = {0};
        rc = inf ? prior_build(&base, NULL, err) : LM_ERR_NOMEM;
        if (rc == LM_OK)
            rc = solve_all(e, &base, k, sens, rss_mode, c, ctl, res, inf->data, NULL, &r2, err);
        if (rc == LM_OK) {
            for (int64_t j = 0; j < nv; j++)
                inf->data[j] = res->image->data[j] - inf->data[j];
            res->prior_influence = inf;
        } else
            lm_volume_free(inf);
        free(r2.resid_history);
        prior_clear(&base);
    }
out:
    free(rep.resid_history);
    free(weights);
    lm_volume_free(ref_grid);
    lm_volume_free(pilot);
    prior_clear(&pc); /* normal is the encoding's */
    lm_encoding_free(e);
    return rc;
}

/* Gridding baselines and the Cartesian FFT, per channel; channels combined
 * with the maps when given, else by root-sum-of-squares. */
static lm_code recon_grid(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_sens *sens,
                          const lm_recon_opts *o, run_ctx *c, lm_ctl *ctl, lm_recon_result *res, lm_error *err)
{
    const int64_t nv = lm_geom_voxels(g), m = t->m, nc = k->ncoils;
    const int maps = sens && nc > 1;
    double *acc = NULL;
    lm_cfloat *img = NULL, *num = NULL;
    if (nc > 1) {
        acc = lm_calloc((size_t)nv, sizeof *acc, err, "channel combination");
        img = acc ? lm_alloc((size_t)nv, sizeof *img, err, "channel image") : NULL;
        num = img && maps ? lm_calloc((size_t)nv, sizeof *num, err, "channel combination") : NULL;
        if (!img || (maps && !num)) {
            free(acc), free(img);
            return LM_ERR_NOMEM;
        }
    }
    res->combine = nc == 1 ? LM_COMBINE_SENSE : maps ? LM_COMBINE_SENSE : LM_COMBINE_RSS;
    if (o->keep_coil_images && nc > 1 && !(res->coil_images = lm_sens_new(g->n, nc, err))) {
        free(acc), free(img), free(num);
        return LM_ERR_NOMEM;
    }
    c->stage = LM_STAGE_GRID;
    lm_code rc = report(c, 0, 0, 0, 0) ? cancelled(err, c) : LM_OK;
    double ts = now_s();
    for (int64_t ch = 0; ch < nc && rc == LM_OK; ch++) {
        const lm_cfloat *d = k->d + ch * m;
        lm_cfloat *out = nc > 1 ? img : res->image->data;
        c->coil = (int)ch;
        rc = o->method == LM_METHOD_GRID_LINEAR ? lm_grid_linear(g, t, d, out, ctl, err)
             : o->method == LM_METHOD_GRID_KB   ? lm_grid_kb(g, t, d, out, ctl, err)
                                                : lm_cartesian_fft(g, t, d, out, ctl, err);
        if (rc != LM_OK || nc == 1)
            continue;
        if (res->coil_images)
            memcpy(res->coil_images->s + ch * nv, out, (size_t)nv * sizeof *out);
        if (!maps) {
            rss_add(acc, out, nv);
            continue;
        }
        /* Roemer: sum conj(s_c) img_c / sum |s_c|^2 */
        const lm_cfloat *s = sens->s + ch * nv;
        for (int64_t j = 0; j < nv; j++) {
            num[j] += conjf(s[j]) * out[j];
            acc[j] += (double)crealf(s[j]) * crealf(s[j]) + (double)cimagf(s[j]) * cimagf(s[j]);
        }
    }
    if (rc == LM_OK && nc > 1)
        for (int64_t j = 0; j < nv; j++)
            res->image->data[j] = maps ? (acc[j] > 0 ? num[j] / (float)acc[j] : 0) : CMPLXF((float)sqrt(acc[j]), 0.0f);
    res->time_grid_s = now_s() - ts;
    free(acc), free(img), free(num);
    return rc;
}

lm_code lm_recon_run(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_recon_opts *o,
                     lm_recon_result *res, lm_error *err)
{
    if (!res)
        return lm_fail(err, LM_ERR_INVALID, "reconstruction: missing result");
    memset(res, 0, sizeof *res);
    lm_code rc = validate(g, t, k, o, err);
    if (rc != LM_OK)
        return rc;

    run_ctx c = {.o = o, .t0 = now_s(), .ncoils = (int)k->ncoils, .iters = o->iters};
    lm_ctl ctl = {.progress = ctl_progress, .user = &c, .threads = o->threads};
    double vox[3];
    for (int a = 0; a < 3; a++)
        vox[a] = g->fov_mm[a] > 0 ? g->fov_mm[a] / (double)g->n[a] : 1.0;
    res->image = lm_volume_new(g->n, vox, err);
    if (!res->image)
        return LM_ERR_NOMEM;
    res->coils = (int)k->ncoils;

    /* The coils as the operator sees them: whitened, compressed, maps given
     * or estimated. CG estimates maps unless told to combine by
     * root-sum-of-squares; gridding uses maps only when given. */
    lm_coil_prep prep = {0};
    const int want_maps = k->ncoils > 1 && o->combine != LM_COMBINE_RSS &&
                          (o->estimate_sens || (o->method == LM_METHOD_CG && !o->sens));
    c.stage = LM_STAGE_COILS;
    double tp = now_s();
    if (k->ncoils > 1 && report(&c, 0, 0, 0, 0))
        rc = cancelled(err, &c);
    if (rc == LM_OK && (k->ncoils > 1 || o->noise))
        rc = lm_coil_prep_run(g, t, k, o, want_maps, &ctl, res, &prep, err);
    else if (rc == LM_OK) {
        prep = (lm_coil_prep){.k = k, .sens = o->combine == LM_COMBINE_RSS ? NULL : o->sens};
        res->sens_source = prep.sens ? LM_SENS_GIVEN : LM_SENS_NONE;
    }
    if (rc != LM_OK && rc != LM_ERR_CANCELLED && want_maps && !o->estimate_sens && o->combine == LM_COMBINE_AUTO) {
        /* estimation is the default, not a demand: say why and fall back */
        snprintf(res->note, sizeof res->note, "coil maps could not be estimated (%.160s): channels combined by "
                 "root-sum-of-squares", err ? err->msg : "");
        lm_error_clear(err);
        rc = lm_coil_prep_run(g, t, k, o, 0, &ctl, res, &prep, err);
    }
    res->time_prep_s = now_s() - tp;
    if (rc == LM_OK) {
        if (o->combine == LM_COMBINE_SENSE && prep.k->ncoils > 1 && !prep.sens)
            rc = lm_fail(err, LM_ERR_INVALID, "SENSE needs coil maps for the %lld channels", (long long)prep.k->ncoils);
        else
            rc = o->method == LM_METHOD_CG ? recon_cg(g, t, prep.k, prep.sens, o, &c, &ctl, res, err)
                                           : recon_grid(g, t, prep.k, prep.sens, o, &c, &ctl, res, err);
    }
    res->coils = (int)prep.k->ncoils;
    lm_coil_prep_clear(&prep);
    if (rc != LM_OK) {
        lm_recon_result_clear(res);
        return rc;
    }
    res->time_total_s = now_s() - c.t0;
    c.stage = LM_STAGE_DONE;
    c.coil = 0;
    c.ncoils = 1;
    /* Too late to cancel: the result is complete. */
    (void)report(&c, 1, 0, 0, 0);
    return LM_OK;
}
