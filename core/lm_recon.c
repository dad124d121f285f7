/* The reconstruction pipeline shared by the CLI and the GUI (lm_recon.h):
 * validate, Q (disk cache), F^H d and CG per channel, or a gridding
 * baseline; root-sum-of-squares over channels; one progress callback. */
#include "lm_recon.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lm_gpu.h"
#include "lm_cartesian.h"
#include "lm_grid.h"
#include "lm_qcache.h"

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
    }
    return "unknown";
}

lm_code lm_reg_parse(const char *s, lm_reg_kind *out, lm_error *err)
{
    static const lm_reg_kind all[] = {LM_REG_IDENTITY, LM_REG_GRADIENT, LM_REG_ANATOMICAL};
    for (size_t i = 0; s && i < sizeof all / sizeof all[0]; i++)
        if (strcmp(s, lm_reg_name(all[i])) == 0) {
            *out = all[i];
            return LM_OK;
        }
    return lm_fail(err, LM_ERR_INVALID, "regulariser '%s' is unknown (identity, gradient, anatomical)",
                   s ? s : "");
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
    }
    return "unknown";
}

void lm_recon_opts_init(lm_recon_opts *o)
{
    memset(o, 0, sizeof *o);
    o->method = LM_METHOD_CG;
    o->variant = "cpu-simd";
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
    o->threads = 0;
    o->edge_frac = LM_EDGE_FRAC_DEFAULT;
}

void lm_recon_result_clear(lm_recon_result *r)
{
    if (!r)
        return;
    lm_volume_free(r->image);
    free(r->resid_history);
    memset(r, 0, sizeof *r);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Structure-of-arrays copy of the trajectory, as the kernels take it. */
typedef struct ksoa {
    float *kx, *ky, *kz, *wr, *wi;
} ksoa;

static void ksoa_free(ksoa *s)
{
    free(s->kx), free(s->ky), free(s->kz), free(s->wr), free(s->wi);
    memset(s, 0, sizeof *s);
}

static lm_code ksoa_make(const lm_traj *t, int complex_w, ksoa *s, lm_error *err)
{
    memset(s, 0, sizeof *s);
    size_t m = (size_t)t->m;
    s->kx = lm_alloc(m, sizeof(float), err, "k-space coordinates");
    s->ky = s->kx ? lm_alloc(m, sizeof(float), err, "k-space coordinates") : NULL;
    s->kz = s->ky ? lm_alloc(m, sizeof(float), err, "k-space coordinates") : NULL;
    s->wr = s->kz ? lm_alloc(m, sizeof(float), err, "k-space weights") : NULL;
    if (s->wr && complex_w)
        s->wi = lm_alloc(m, sizeof(float), err, "k-space weights");
    if (!s->wr || (complex_w && !s->wi)) {
        ksoa_free(s);
        return LM_ERR_NOMEM;
    }
    for (size_t j = 0; j < m; j++) {
        s->kx[j] = t->k[3 * j];
        s->ky[j] = t->k[3 * j + 1];
        s->kz[j] = t->k[3 * j + 2];
    }
    return LM_OK;
}

/* Runs the variant on pts and returns interleaved complex values. */
static lm_code run_sum(const lm_variant *v, const ksoa *s, int64_t m, const lm_points *pts,
                       const lm_ctl *ctl, lm_cfloat **out, lm_error *err)
{
    *out = NULL;
    size_t n = (size_t)pts->n;
    float *re = lm_alloc(n, sizeof(float), err, "kernel output");
    float *im = re ? lm_alloc(n, sizeof(float), err, "kernel output") : NULL;
    lm_cfloat *c = im ? lm_alloc(n, sizeof(lm_cfloat), err, "kernel output") : NULL;
    if (!c) {
        free(re), free(im);
        return LM_ERR_NOMEM;
    }
    lm_ksum_in in = {.m = m, .kx = s->kx, .ky = s->ky, .kz = s->kz, .wr = s->wr, .wi = s->wi};
    lm_code rc = lm_ksum_run(v, &in, pts, re, im, ctl, err);
    if (rc == LM_OK) {
        for (size_t j = 0; j < n; j++)
            c[j] = CMPLXF(re[j], im[j]);
        *out = c;
    } else {
        free(c);
    }
    free(re), free(im);
    return rc;
}

static const lm_variant *pick_variant(const char *name, lm_error *err)
{
    return lm_variant_get_available(name && *name ? name : "cpu-simd", err);
}

lm_code lm_compute_q(const lm_geom *g, const lm_traj *t, const char *variant, int use_cache,
                     const lm_ctl *ctl, lm_cfloat **q, int *from_cache, lm_error *err)
{
    *q = NULL;
    if (from_cache)
        *from_cache = 0;
    if (!g || !t)
        return lm_fail(err, LM_ERR_INVALID, "Q: missing geometry or trajectory");
    lm_code rc = lm_geom_check(g, t, err);
    if (rc != LM_OK)
        return rc;
    const lm_variant *v = pick_variant(variant, err);
    if (!v)
        return err ? err->code : LM_ERR_UNSUPPORTED;

    if (use_cache && lm_qcache_load(g, t, q, NULL) == LM_OK) {
        if (from_cache)
            *from_cache = 1;
        return LM_OK;
    }

    lm_points pts;
    lm_points_q_grid(&pts, g->n);
    if (pts.n != lm_q_count(g->n))
        return lm_fail(err, LM_ERR_INTERNAL, "Q: grid of %lld points, solver expects %lld",
                       (long long)pts.n, (long long)lm_q_count(g->n));
    ksoa s;
    rc = ksoa_make(t, 0, &s, err);
    if (rc != LM_OK)
        return rc;
    for (int64_t j = 0; j < t->m; j++) {
        double ph = lm_geom_phi(g, s.kx[j], s.ky[j], s.kz[j]);
        s.wr[j] = (float)(ph * ph);
    }
    rc = run_sum(v, &s, t->m, &pts, ctl, q, err);
    ksoa_free(&s);
    /* The cache is best effort: an unwritable cache folder costs only the
     * next run's time. Only exact (float-rounding) Q is stored, so a NUFFT
     * run never hands its approximation to a later exact one. */
    if (rc == LM_OK && use_cache && !v->approximate)
        (void)lm_qcache_store(g, t, *q, NULL);
    return rc;
}

lm_code lm_compute_fhd(const lm_geom *g, const lm_traj *t, const lm_cfloat *d, const char *variant,
                       const lm_ctl *ctl, lm_cfloat **fhd, lm_error *err)
{
    *fhd = NULL;
    if (!g || !t || !d)
        return lm_fail(err, LM_ERR_INVALID, "F^H d: missing geometry, trajectory or data");
    lm_code rc = lm_geom_check(g, t, err);
    if (rc != LM_OK)
        return rc;
    const lm_variant *v = pick_variant(variant, err);
    if (!v)
        return err ? err->code : LM_ERR_UNSUPPORTED;
    ksoa s;
    rc = ksoa_make(t, 1, &s, err);
    if (rc != LM_OK)
        return rc;
    /* w = conj(phi) d, phi real */
    for (int64_t j = 0; j < t->m; j++) {
        double ph = lm_geom_phi(g, s.kx[j], s.ky[j], s.kz[j]);
        s.wr[j] = (float)(ph * crealf(d[j]));
        s.wi[j] = (float)(ph * cimagf(d[j]));
    }
    lm_points pts;
    lm_points_image_grid(&pts, g->n);
    rc = run_sum(v, &s, t->m, &pts, ctl, fhd, err);
    ksoa_free(&s);
    return rc;
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
    if (o->method == LM_METHOD_CG) {
        if (!(o->lambda >= 0) || !isfinite(o->lambda))
            return lm_fail(err, LM_ERR_INVALID, "lambda %g must be finite and >= 0", o->lambda);
        if (o->iters < 0 || o->iters > 100000)
            return lm_fail(err, LM_ERR_INVALID, "iteration count %d is out of range (0..100000)", o->iters);
        if (o->reg != LM_REG_IDENTITY && o->reg != LM_REG_GRADIENT && o->reg != LM_REG_ANATOMICAL)
            return lm_fail(err, LM_ERR_INVALID, "unknown regulariser %d", (int)o->reg);
        if (o->reg == LM_REG_ANATOMICAL && o->lambda > 0 && !o->ref)
            return lm_fail(err, LM_ERR_INVALID, "the anatomical regulariser needs a reference image");
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

/* GPU variants: Q (unless cached), F^H d and CG stay resident on the device
 * (lm_gpu_recon), so only the samples go up and only rho comes down. */
static lm_code recon_cg_gpu(const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                            const lm_recon_opts *o, const lm_variant *v, run_ctx *c,
                            lm_recon_result *res, double *rss, lm_cfloat *img, lm_error *err)
{
    const int64_t nv = lm_geom_voxels(g), m = t->m;
    lm_cfloat *q = NULL;
    float *weights = NULL;
    lm_cg_report rep = {0};
    lm_code rc = LM_OK;
    c->stage = LM_STAGE_Q;
    if (report(c, 0, 0, 0, 0))
        return cancelled(err, c);
    if (o->use_cache && lm_qcache_load(g, t, &q, NULL) == LM_OK)
        res->q_from_cache = 1;
    if (o->reg == LM_REG_ANATOMICAL && o->lambda > 0) {
        rc = lm_reg_anatomical_weights(o->ref, g->n, o->edge_frac > 0 ? o->edge_frac : LM_EDGE_FRAC_DEFAULT, &weights, err);
        if (rc != LM_OK)
            goto out;
    }
    lm_cg_opts cg = {
        .lambda = o->lambda, .reg = o->reg, .edge_weights = weights, .iters = o->iters,
        .tol = o->tol, .monitor = cg_monitor, .monitor_user = c, .threads = o->threads,
    };
    for (int ch = 0; ch < (int)k->ncoils; ch++) {
        const lm_cfloat *d = k->d + (size_t)ch * (size_t)m;
        c->coil = ch;
        c->stage = LM_STAGE_CG;
        double energy = channel_energy(d, m);
        c->d_energy = energy;
        lm_cfloat *rho = k->ncoils > 1 ? img : res->image->data;
        free(rep.resid_history);
        rep.resid_history = NULL;
        lm_gpu_recon_times times = {0};
        rc = lm_gpu_recon(g, t, d, q, v->name, &cg, rho, &rep, &times, err);
        if (rc != LM_OK)
            goto out;
        res->time_q_s += times.q_s;
        res->time_fhd_s += times.fhd_s;
        res->time_cg_s += times.cg_s;
        if (k->ncoils > 1)
            rss_add(rss, rho, nv);
    }
    res->iters_done = rep.iters_done;
    res->resid_history = rep.resid_history;
    rep.resid_history = NULL;
out:
    free(rep.resid_history);
    free(q);
    free(weights);
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
    const int64_t nv = lm_geom_voxels(g);
    const int64_t m = t->m;
    const int ncoils = (int)k->ncoils;

    lm_cfloat *q = NULL, *fhd = NULL, *img = NULL;
    float *weights = NULL;
    double *rss = NULL;
    lm_cg_report rep = {0};
    const lm_variant *v = NULL;

    double vox[3];
    for (int a = 0; a < 3; a++)
        vox[a] = g->fov_mm[a] > 0 ? g->fov_mm[a] / (double)g->n[a] : 1.0;
    res->image = lm_volume_new(g->n, vox, err);
    if (!res->image) {
        rc = LM_ERR_NOMEM;
        goto fail;
    }
    if (ncoils > 1) {
        rss = lm_calloc((size_t)nv, sizeof *rss, err, "channel combination");
        img = rss ? lm_alloc((size_t)nv, sizeof *img, err, "channel image") : NULL;
        if (!img) {
            rc = LM_ERR_NOMEM;
            goto fail;
        }
    }
    res->coils = ncoils;

    if (o->method == LM_METHOD_CG) {
        v = pick_variant(o->variant, err);
        if (!v) {
            rc = err ? err->code : LM_ERR_UNSUPPORTED;
            goto fail;
        }
        res->fhd_pairs = (double)m * (double)nv * (double)ncoils;
        if (v->device == LM_DEVICE_GPU) {
            rc = recon_cg_gpu(g, t, k, o, v, &c, res, rss, img, err);
            if (rc != LM_OK)
                goto fail;
            goto finish;
        }

        c.stage = LM_STAGE_Q;
        if (report(&c, 0, 0, 0, 0)) {
            rc = cancelled(err, &c);
            goto fail;
        }
        double ts = now_s();
        rc = lm_compute_q(g, t, v->name, o->use_cache, &ctl, &q, &res->q_from_cache, err);
        res->time_q_s = now_s() - ts;
        if (rc != LM_OK)
            goto fail;
        if (report(&c, 1, 0, 0, 0)) {
            rc = cancelled(err, &c);
            goto fail;
        }
        if (o->reg == LM_REG_ANATOMICAL && o->lambda > 0) {
            rc = lm_reg_anatomical_weights(o->ref, g->n, o->edge_frac > 0 ? o->edge_frac : LM_EDGE_FRAC_DEFAULT, &weights, err);
            if (rc != LM_OK)
                goto fail;
        }
        lm_cg_opts cg = {
            .lambda = o->lambda,
            .reg = o->reg,
            .edge_weights = weights,
            .iters = o->iters,
            .tol = o->tol,
            .warm_start = 0,
            .monitor = cg_monitor,
            .monitor_user = &c,
            .threads = o->threads,
        };

        for (int ch = 0; ch < ncoils; ch++) {
            const lm_cfloat *d = k->d + (size_t)ch * (size_t)m;
            c.coil = ch;
            c.stage = LM_STAGE_FHD;
            ts = now_s();
            rc = lm_compute_fhd(g, t, d, v->name, &ctl, &fhd, err);
            res->time_fhd_s += now_s() - ts;
            if (rc != LM_OK)
                goto fail;

            double energy = channel_energy(d, m);
            c.d_energy = energy;
            c.stage = LM_STAGE_CG;
            if (report(&c, 0, 0, 1, energy)) {
                rc = cancelled(err, &c);
                goto fail;
            }
            lm_cfloat *rho = ncoils > 1 ? img : res->image->data;
            free(rep.resid_history);
            rep.resid_history = NULL;
            ts = now_s();
            if (v->device == LM_DEVICE_GPU)
                rc = lm_cg_solve_gpu(g, q, fhd, rho, &cg, &rep, err);
            else
                rc = lm_cg_solve_cpu(g, q, fhd, rho, &cg, &rep, err);
            res->time_cg_s += now_s() - ts;
            free(fhd);
            fhd = NULL;
            if (rc != LM_OK)
                goto fail;
            if (ncoils > 1)
                rss_add(rss, rho, nv);
        }
        res->iters_done = rep.iters_done;
        res->resid_history = rep.resid_history;
        rep.resid_history = NULL;
    } else {
        c.stage = LM_STAGE_GRID;
        if (report(&c, 0, 0, 0, 0)) {
            rc = cancelled(err, &c);
            goto fail;
        }
        double ts = now_s();
        for (int ch = 0; ch < ncoils; ch++) {
            const lm_cfloat *d = k->d + (size_t)ch * (size_t)m;
            lm_cfloat *out = ncoils > 1 ? img : res->image->data;
            c.coil = ch;
            rc = o->method == LM_METHOD_GRID_LINEAR ? lm_grid_linear(g, t, d, out, &ctl, err)
                 : o->method == LM_METHOD_GRID_KB   ? lm_grid_kb(g, t, d, out, &ctl, err)
                                                    : lm_cartesian_fft(g, t, d, out, &ctl, err);
            if (rc != LM_OK)
                goto fail;
            if (ncoils > 1)
                rss_add(rss, out, nv);
        }
        res->time_grid_s = now_s() - ts;
    }

finish:
    if (ncoils > 1)
        for (int64_t j = 0; j < nv; j++)
            res->image->data[j] = CMPLXF((float)sqrt(rss[j]), 0.0f);
    res->time_total_s = now_s() - c.t0;
    c.stage = LM_STAGE_DONE;
    c.coil = 0;
    c.ncoils = 1;
    free(q), free(weights), free(rss), free(img);
    /* Too late to cancel: the result is complete. */
    (void)report(&c, 1, 0, 0, 0);
    return LM_OK;

fail:
    if (rc == LM_OK)
        rc = LM_ERR_INTERNAL;
    free(q), free(fhd), free(weights), free(rss), free(img);
    free(rep.resid_history);
    lm_recon_result_clear(res);
    return rc;
}
