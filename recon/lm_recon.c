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

#include "lm_cartesian.h"
#include "lm_coil_prep.h"
#include "lm_gpu.h"
#include "lm_grid.h"
#include "lm_metrics.h"
#include "lm_recon_impl.h"
#include "lm_trace.h"

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

const char *lm_fallback_name(lm_fallback f)
{
    switch (f) {
    case LM_FALLBACK_NONE: return "none";
    case LM_FALLBACK_CPU: return "cpu";
    }
    return "unknown";
}

lm_code lm_fallback_parse(const char *s, lm_fallback *out, lm_error *err)
{
    static const lm_fallback all[] = {LM_FALLBACK_NONE, LM_FALLBACK_CPU};
    for (size_t i = 0; s && i < sizeof all / sizeof all[0]; i++)
        if (strcmp(s, lm_fallback_name(all[i])) == 0) {
            *out = all[i];
            return LM_OK;
        }
    return lm_fail(err, LM_ERR_INVALID, "fallback '%s' is unknown (none, cpu)", s ? s : "");
}

int lm_recon_scale_match(lm_method method, lm_coil_combine combine, lm_sens_source sens)
{
    return lm_metrics_scale_match_for(method == LM_METHOD_GRID_LINEAR || method == LM_METHOD_GRID_KB,
                                      combine == LM_COMBINE_RSS, sens == LM_SENS_ESTIMATED);
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
     * tests/recon/test_recon.c), while a non-zero lambda keeps the system
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

double lm_run_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- progress plumbing ---------------------------------------------------- */

int lm_run_report(lm_run_ctx *c, double fraction, int iter, double rel_resid, double cost)
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
        .elapsed_s = lm_run_now() - c->t0,
    };
    return c->o->progress(c->o->progress_user, &p);
}

/* Stages done per channel report their fraction over all channels. */
static double channel_fraction(const lm_run_ctx *c, double f)
{
    if (c->stage == LM_STAGE_Q)
        return f;
    return ((double)c->coil + f) / (double)c->ncoils;
}

int lm_run_ctl_progress(void *user, double f)
{
    lm_run_ctx *c = user;
    return lm_run_report(c, channel_fraction(c, f), 0, 0, 0);
}

int lm_run_cg_monitor(void *user, int iter, double rel_resid, double cost, double elapsed_s)
{
    lm_run_ctx *c = user;
    (void)elapsed_s;
    double f = c->iters > 0 ? (double)iter / (double)c->iters : 1.0;
    return lm_run_report(c, channel_fraction(c, f), iter, rel_resid, cost + c->d_energy);
}

lm_code lm_run_cancelled(lm_error *err, const lm_run_ctx *c)
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
        if (o->lambda_auto && (o->reg == LM_REG_TV || o->reg == LM_REG_WAVELET) &&
            o->lambda_criterion == LM_LAMBDA_GCV)
            return lm_fail(err, LM_ERR_INVALID, "--lambda auto: the %s prior takes the discrepancy principle (GCV "
                           "needs a linear solver)", o->reg == LM_REG_TV ? "tv" : "wavelet");
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

double lm_channel_energy(const lm_cfloat *d, int64_t m)
{
    double e = 0;
    for (int64_t j = 0; j < m; j++)
        e += (double)crealf(d[j]) * crealf(d[j]) + (double)cimagf(d[j]) * cimagf(d[j]);
    return e;
}

void lm_rss_add(double *rss, const lm_cfloat *img, int64_t n)
{
    for (int64_t j = 0; j < n; j++)
        rss[j] += (double)crealf(img[j]) * crealf(img[j]) + (double)cimagf(img[j]) * cimagf(img[j]);
}

/* Gridding baselines and the Cartesian FFT, per channel; channels combined
 * with the maps when given, else by root-sum-of-squares. */
static lm_code recon_grid(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_sens *sens,
                          const lm_recon_opts *o, lm_run_ctx *c, lm_ctl *ctl, lm_recon_result *res, lm_error *err)
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
    lm_code rc = lm_run_report(c, 0, 0, 0, 0) ? lm_run_cancelled(err, c) : LM_OK;
    double ts = lm_run_now();
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
            lm_rss_add(acc, out, nv);
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
    res->time_grid_s = lm_run_now() - ts;
    free(acc), free(img), free(num);
    return rc;
}

/* lm_recon_run; with keep, CG hands over its session (lm_recon_session.h),
 * and without solve it stops there (lm_recon_session_new). */
static lm_code recon_run(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_recon_opts *o,
                         int solve, lm_recon_result *res, lm_recon_session **keep, lm_error *err)
{
    if (keep)
        *keep = NULL;
    if (!res)
        return lm_fail(err, LM_ERR_INVALID, "reconstruction: missing result");
    memset(res, 0, sizeof *res);
    res->resid_norm = res->prior_norm = NAN;
    lm_code rc = validate(g, t, k, o, err);
    if (rc != LM_OK)
        return rc;
    lm_trace("inputs checked");
    if (!solve && o->method != LM_METHOD_CG)
        return lm_fail(err, LM_ERR_INVALID, "reconstruction session: only for cg, not %s", lm_method_name(o->method));

    lm_run_ctx c = {.o = o, .t0 = lm_run_now(), .ncoils = (int)k->ncoils, .iters = o->iters};
    lm_ctl ctl = {.progress = lm_run_ctl_progress, .user = &c, .threads = o->threads};
    double vox[3];
    for (int a = 0; a < 3; a++)
        vox[a] = g->fov_mm[a] > 0 ? g->fov_mm[a] / (double)g->n[a] : 1.0;
    res->image = lm_volume_new(g->n, vox, err);
    if (!res->image)
        return LM_ERR_NOMEM;
    lm_trace("image allocated");
    res->coils = (int)k->ncoils;

    /* The coils as the operator sees them: whitened, compressed, maps given
     * or estimated. CG estimates maps unless told to combine by
     * root-sum-of-squares; gridding uses maps only when given. */
    lm_coil_prep prep = {0};
    const int want_maps = k->ncoils > 1 && o->combine != LM_COMBINE_RSS &&
                          (o->estimate_sens || (o->method == LM_METHOD_CG && !o->sens));
    c.stage = LM_STAGE_COILS;
    double tp = lm_run_now();
    if (k->ncoils > 1 && lm_run_report(&c, 0, 0, 0, 0))
        rc = lm_run_cancelled(err, &c);
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
    res->time_prep_s = lm_run_now() - tp;
    lm_trace("coils prepared");
    if (rc == LM_OK) {
        if (o->combine == LM_COMBINE_SENSE && prep.k->ncoils > 1 && !prep.sens)
            rc = lm_fail(err, LM_ERR_INVALID, "SENSE needs coil maps for the %lld channels", (long long)prep.k->ncoils);
        else
            rc = o->method == LM_METHOD_CG
                     ? lm_session_recon_cg(g, t, prep.k, prep.sens, o, solve, &c, &ctl, res, keep, err)
                     : recon_grid(g, t, prep.k, prep.sens, o, &c, &ctl, res, err);
    }
    if (prep.k)
        res->coils = (int)prep.k->ncoils;
    lm_coil_prep_clear(&prep);
    if (rc != LM_OK) {
        lm_recon_result_clear(res);
        return rc;
    }
    if (!solve) {
        lm_session_take_info(*keep, res);
        return LM_OK;
    }
    res->time_total_s = lm_run_now() - c.t0;
    c.stage = LM_STAGE_DONE;
    c.coil = 0;
    c.ncoils = 1;
    /* Too late to cancel: the result is complete. */
    (void)lm_run_report(&c, 1, 0, 0, 0);
    return LM_OK;
}

const lm_variant *lm_recon_cpu_twin(const lm_variant *v, lm_error *err)
{
    if (!v)
        return NULL;
    if (v->device == LM_DEVICE_CPU)
        return v;
    if (v->approximate)
        return lm_variant_get_available("cpu-nufft", err);
    const lm_variant *x = lm_variant_get_available("cpu-simd", NULL);
    return x ? x : lm_variant_get_available("cpu-sp", err); /* no SIMD ISA here */
}

/* lm_recon_opts.fallback around recon_run: a GPU variant that is not
 * available, or a run that fails for want of GPU memory or by a driver
 * error, goes again on the CPU twin. */
static lm_code recon_run_fallback(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_recon_opts *o,
                                  int solve, lm_recon_result *res, lm_recon_session **keep, lm_error *err)
{
    const lm_variant *gv = NULL;
    if (o && o->fallback == LM_FALLBACK_CPU && o->method == LM_METHOD_CG)
        gv = lm_variant_is_auto(o->variant) ? lm_variant_resolve(o->variant, NULL) : lm_variant_find(o->variant, NULL);
    if (!gv || gv->device != LM_DEVICE_GPU)
        return recon_run(g, t, k, o, solve, res, keep, err); /* nothing to fall back from (or an unknown name) */
    lm_error gerr;
    lm_error_clear(&gerr);
    lm_code rc = gv->available ? gv->available(&gerr) : LM_OK;
    const char *why = rc != LM_OK ? "not available" : NULL;
    if (rc == LM_OK) {
        rc = recon_run(g, t, k, o, solve, res, keep, &gerr);
        if (rc != LM_ERR_NOMEM && rc != LM_ERR_GPU) { /* done, cancelled or bad input */
            if (rc != LM_OK && err)
                *err = gerr;
            return rc;
        }
        why = rc == LM_ERR_NOMEM ? "out of GPU memory" : "GPU error";
        lm_gpu_release(); /* the failed run freed its own; the cached plans and pools go too */
    }
    lm_error cerr;
    lm_error_clear(&cerr);
    const lm_variant *cv = lm_recon_cpu_twin(gv, &cerr);
    char note[sizeof res->fallback_note];
    snprintf(note, sizeof note, "%s: %s (%.300s); falling back to %s", gv->name, why, gerr.msg,
             cv ? cv->name : "the CPU");
    if (!cv) {
        if (res)
            memset(res, 0, sizeof *res);
        if (keep)
            *keep = NULL;
        return lm_fail(err, rc, "%s, but none is available: %.100s", note, cerr.msg);
    }
    lm_recon_opts co = *o;
    co.variant = cv->name;
    co.fallback = LM_FALLBACK_NONE;
    rc = recon_run(g, t, k, &co, solve, res, keep, &cerr);
    if (rc == LM_ERR_CANCELLED || rc == LM_ERR_INVALID || rc == LM_ERR_FORMAT || rc == LM_ERR_IO) {
        if (err)
            *err = cerr; /* the CPU run's own answer (bad input fails there as on the GPU) */
        return rc;
    }
    if (rc != LM_OK)
        return lm_fail(err, rc, "%s, which failed too: %.200s", note, cerr.msg);
    res->fell_back = 1;
    res->fallback_variant = cv->name;
    memcpy(res->fallback_note, note, sizeof note);
    return LM_OK;
}

lm_code lm_recon_run(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_recon_opts *o,
                     lm_recon_result *res, lm_error *err)
{
    return recon_run_fallback(g, t, k, o, 1, res, NULL, err);
}

lm_code lm_recon_run_session(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_recon_opts *o,
                             lm_recon_result *res, lm_recon_session **keep, lm_error *err)
{
    if (!keep)
        return lm_fail(err, LM_ERR_INVALID, "reconstruction: missing session pointer");
    return recon_run_fallback(g, t, k, o, 1, res, keep, err);
}

lm_code lm_recon_session_new(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_recon_opts *o,
                             lm_recon_session **out, lm_error *err)
{
    if (!out)
        return lm_fail(err, LM_ERR_INVALID, "reconstruction session: missing output pointer");
    lm_recon_result res;
    return recon_run_fallback(g, t, k, o, 0, &res, out, err);
}
