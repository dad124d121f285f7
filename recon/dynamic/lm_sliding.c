/* Sliding-window real-time frames (lm_sliding.h). */
#include "lm_sliding.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lm_cg.h"
#include "lm_coils.h"
#include "lm_encoding.h"
#include "lm_frames.h"
#include "lm_kernels.h"
#include "lm_solver.h"

struct lm_sliding {
    lm_geom g;
    lm_sliding_opts o;
    const lm_sens *given;
    lm_sens *estimated;   /* or the given maps compressed */
    lm_coil_compress *cc; /* virtual coils, planned on the first window */
    lm_cfloat *x;   /* the frame before (host), the next one's start */
    int have_x;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

lm_code lm_sliding_check(int window, int step, lm_error *err)
{
    if (window < 1 || step < 1)
        return lm_fail(err, LM_ERR_INVALID, "--realtime %d:%d: WINDOW and STEP must be at least 1 acquisition",
                       window, step);
    return LM_OK;
}

lm_code lm_sliding_parse(const char *text, int *window, int *step, lm_error *err)
{
    long long w = 0, st = 0;
    char tail = 0;
    if (!text || sscanf(text, "%lld:%lld%c", &w, &st, &tail) != 2 || w < 1 || st < 1 || w > 100000 || st > 100000)
        return lm_fail(err, LM_ERR_INVALID, "--realtime '%s': want WINDOW:STEP, acquisitions (1 to 100000 each)",
                       text ? text : "");
    *window = (int)w;
    *step = (int)st;
    return LM_OK;
}

const char *lm_sliding_variant(const char *requested)
{
    const lm_variant *v = requested && !lm_variant_is_auto(requested) ? lm_variant_find(requested, NULL) : NULL;
    if (v && strstr(v->name, "nufft"))
        return v->name;
    return v && v->device == LM_DEVICE_GPU ? "gpu-nufft" : "cpu-nufft";
}

lm_code lm_sliding_new(const lm_geom *g, const lm_sens *sens, const lm_sliding_opts *o, lm_sliding **out,
                       lm_error *err)
{
    *out = NULL;
    if (sens && (sens->n[0] != g->n[0] || sens->n[1] != g->n[1] || sens->n[2] != g->n[2]))
        return lm_fail(err, LM_ERR_INVALID, "real time: coil maps of %lldx%lldx%lld on a %lldx%lldx%lld matrix",
                       (long long)sens->n[0], (long long)sens->n[1], (long long)sens->n[2], (long long)g->n[0],
                       (long long)g->n[1], (long long)g->n[2]);
    lm_sliding *s = lm_calloc(1, sizeof *s, err, "real-time state");
    if (!s)
        return LM_ERR_NOMEM;
    s->g = *g;
    s->o = *o;
    s->o.variant = lm_sliding_variant(s->o.variant);
    if (s->o.iters <= 0)
        s->o.iters = LM_SLIDING_ITERS_DEFAULT;
    s->given = sens;
    s->x = lm_calloc((size_t)lm_geom_voxels(g), sizeof *s->x, err, "real-time frame");
    if (!s->x) {
        free(s);
        return LM_ERR_NOMEM;
    }
    *out = s;
    return LM_OK;
}

const lm_sens *lm_sliding_sens(const lm_sliding *s)
{
    return s->estimated ? s->estimated : s->given;
}

void lm_sliding_free(lm_sliding *s)
{
    if (!s)
        return;
    lm_sens_free(s->estimated);
    lm_coil_compress_free(s->cc);
    free(s->x);
    free(s);
}

/* A = E^H E + lambda d I with E^H E as the NUFFT pair (no Q), b = E^H d,
 * CG from the frame before. */
static lm_code solve(lm_sliding *s, lm_encoding *e, const lm_kdata *k, lm_cfloat *image, lm_sliding_report *rep,
                     lm_error *err)
{
    lm_backend *be = lm_encoding_backend(e);
    const int64_t nv = lm_geom_voxels(&s->g);
    lm_linop *E = NULL, *EH = NULL, *N = NULL, *reg = NULL, *sys = NULL;
    lm_cfloat *b = NULL, *x = NULL;
    lm_cg_report cr = {0};
    lm_code rc = lm_encoding_op(e, &E, err);
    if (rc == LM_OK)
        rc = lm_linop_adjoint_op(E, &EH, err);
    if (rc == LM_OK)
        rc = lm_linop_chain(E, EH, &N, err);
    if (rc == LM_OK) {
        N->diag = lm_encoding_diag(e);
        if (!(N->diag > 0))
            rc = lm_fail(err, LM_ERR_INVALID, "real time: the window's encoding has no diagonal (no samples?)");
    }
    if (rc == LM_OK) {
        rc = lm_system_new(N, s->g.n, s->o.lambda, LM_REG_IDENTITY, NULL, &reg, &sys, err);
    }
    if (rc == LM_OK) {
        b = be->alloc(be, nv, "real-time E^H d");
        x = be->alloc(be, nv, "real-time frame");
        rc = be->check(be, err);
    }
    if (rc == LM_OK)
        rc = lm_encoding_adjoint(e, k, b, NULL, err);
    if (rc == LM_OK) {
        if (s->have_x)
            be->upload(be, x, s->x, (size_t)nv * sizeof *x);
        lm_cg_params p = {.iters = s->o.iters, .warm_start = s->have_x};
        rc = lm_cg(sys ? sys : N, b, x, &p, &cr, err); /* sys NULL: lambda 0 */
    }
    if (rc == LM_OK) {
        be->download(be, image, x, (size_t)nv * sizeof *image);
        rc = be->check(be, err);
    }
    if (rc == LM_OK) {
        memcpy(s->x, image, (size_t)nv * sizeof *image);
        s->have_x = 1;
        if (rep) {
            rep->iters = cr.iters_done;
            rep->rel_resid = cr.rel_resid;
        }
    }
    free(cr.resid_history);
    if (b)
        be->release(be, b);
    if (x)
        be->release(be, x);
    lm_linop_free(sys);
    lm_linop_free(reg);
    lm_linop_free(N);
    lm_linop_free(EH);
    return rc;
}

/* The first window: the virtual coils' plan (compress), then the maps
 * (estimated from it, or the given ones compressed). */
static lm_code first_window(lm_sliding *s, const lm_traj *t, const lm_kdata *k, lm_error *err)
{
    lm_code rc = LM_OK;
    if (s->o.compress && k->ncoils > 1) {
        const int64_t kv = s->o.compress < 0 ? 0 : s->o.compress;
        if (kv > k->ncoils)
            return lm_fail(err, LM_ERR_INVALID, "--coils-compress %lld: the data have only %lld channels",
                           (long long)kv, (long long)k->ncoils);
        rc = lm_coil_compress_plan(k, kv, 0, &s->cc, err);
    }
    lm_kdata *kc = NULL;
    if (rc == LM_OK && s->cc)
        rc = lm_coil_compress_apply_kdata(s->cc, k, &kc, err);
    if (rc == LM_OK && s->given && s->cc)
        rc = lm_coil_compress_apply_sens(s->cc, s->given, &s->estimated, err);
    else if (rc == LM_OK && !s->given && k->ncoils > 1)
        rc = lm_sens_estimate(&s->g, t, kc ? kc : k, NULL, NULL, &s->estimated, NULL, err);
    lm_kdata_free(kc);
    return rc;
}

lm_code lm_sliding_frame(lm_sliding *s, const lm_traj *t, const lm_kdata *k, lm_cfloat *image,
                         lm_sliding_report *rep, lm_error *err)
{
    const double t0 = now_s();
    if (!t || !k || t->m != k->m || t->m < 1)
        return lm_fail(err, LM_ERR_INVALID, "real time: a window without samples");
    if (s->given && s->given->ncoils != k->ncoils)
        return lm_fail(err, LM_ERR_INVALID, "real time: %lld coil maps but %lld channels", (long long)s->given->ncoils,
                       (long long)k->ncoils);
    const int first = !s->estimated && !s->cc;
    const int64_t channels = first ? k->ncoils : s->cc ? s->cc->ncoils : s->estimated ? s->estimated->ncoils : 1;
    if (!first && k->ncoils != channels)
        return lm_fail(err, LM_ERR_INVALID, "real time: the channel count changed from %lld to %lld",
                       (long long)channels, (long long)k->ncoils);
    lm_code rc = first ? first_window(s, t, k, err) : LM_OK;
    lm_kdata *kc = NULL;
    if (rc == LM_OK && s->cc)
        rc = lm_coil_compress_apply_kdata(s->cc, k, &kc, err);
    const lm_sens *sens = lm_sliding_sens(s);
    if (rc == LM_OK && !sens && k->ncoils > 1)
        rc = lm_fail(err, LM_ERR_INVALID, "real time: %lld channels and no coil maps", (long long)k->ncoils);
    lm_encoding *e = NULL;
    if (rc == LM_OK) {
        lm_encoding_desc d = {.geom = &s->g, .traj = t, .sens = sens, .variant = s->o.variant, .threads = s->o.threads};
        rc = lm_encoding_new(&d, &e, err);
    }
    if (rc == LM_OK)
        rc = solve(s, e, kc ? kc : k, image, rep, err);
    lm_encoding_free(e);
    lm_kdata_free(kc);
    if (rep)
        rep->time_s = now_s() - t0;
    return rc;
}

lm_code lm_sliding_run(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_sens *sens, int64_t readout,
                       int window, int step, const lm_sliding_opts *o, lm_cfloat **images, int64_t *frames,
                       lm_error *err)
{
    *images = NULL;
    *frames = 0;
    lm_code rc = lm_sliding_check(window, step, err);
    if (rc != LM_OK)
        return rc;
    if (readout < 1 || t->m % readout)
        return lm_fail(err, LM_ERR_INVALID, "real time: %lld samples are not whole acquisitions of %lld", (long long)t->m,
                       (long long)readout);
    const int64_t nacq = t->m / readout;
    if (nacq < window)
        return lm_fail(err, LM_ERR_INVALID, "real time: %lld acquisitions, fewer than a window of %d", (long long)nacq,
                       window);
    const int64_t nf = (nacq - window) / step + 1, nv = lm_geom_voxels(g);
    lm_cfloat *im = lm_alloc((size_t)(nf * nv), sizeof *im, err, "real-time frames");
    if (!im)
        return LM_ERR_NOMEM;
    lm_sliding *s = NULL;
    rc = lm_sliding_new(g, sens, o, &s, err);
    for (int64_t f = 0; f < nf && rc == LM_OK; f++) {
        int64_t range[2] = {f * step * readout, (f * step + window) * readout};
        const lm_frames one = {.count = 1, .start = range};
        lm_traj *tw = NULL;
        lm_kdata *kw = NULL;
        rc = lm_frames_extract(&one, 0, t, k, &tw, &kw, err);
        if (rc == LM_OK)
            rc = lm_sliding_frame(s, tw, kw, im + f * nv, NULL, err);
        lm_traj_free(tw);
        lm_kdata_free(kw);
    }
    lm_sliding_free(s);
    if (rc != LM_OK) {
        free(im);
        return rc;
    }
    *images = im;
    *frames = nf;
    return LM_OK;
}
