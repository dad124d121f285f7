/* F as an operator (lm_linop_fourier.h): the NUFFT on either device, the
 * variants' direct sums, and the exact off-resonance sums. */
#include "lm_linop_fourier.h"

#include <complex.h>
#include <stdlib.h>
#include <string.h>

#include "lm_gpu.h"
#include "lm_nufft.h"
#include "lm_sums.h"

typedef struct fourier_state {
    lm_geom g;
    const lm_traj *t;
    const lm_variant *v;        /* F^H's sums (the exact variant with a field map) */
    const float *f;             /* field map (borrowed) or NULL */
    int threads;
    int64_t nv, m;
    float *w_host;              /* phi(k_m) / N */
    lm_cfloat *w_be;            /* the same, complex, on a GPU back end (gpu-nufft) */
    lm_gpu_nufft *gnu;          /* gpu-nufft on a GPU */
    lm_nufft_plan *fwd, *adj;   /* the CPU NUFFT (adj: cpu-nufft only) */
    lm_cfloat *kbuf;            /* m values: host staging, or the device's weighted samples */
    lm_cfloat *xbuf;            /* N values of host staging (GPU back end, host paths) */
} fourier_state;

static int on_gpu(const lm_linop *op)
{
    return op->be->device == LM_DEVICE_GPU;
}

static void fourier_destroy(lm_linop *op)
{
    fourier_state *s = op->state;
    if (!s)
        return;
    lm_nufft_destroy(s->fwd);
    lm_nufft_destroy(s->adj);
    lm_gpu_nufft_free(s->gnu);
    if (s->gnu) {
        op->be->release(op->be, s->w_be);
        op->be->release(op->be, s->kbuf);
    } else {
        free(s->kbuf);
    }
    free(s->xbuf);
    free(s->w_host);
    free(s);
}

/* The CPU NUFFT of one type on the trajectory (type 2 sign -1: F; type 1
 * sign +1: F^H), grid x_i = (i - n/2)/n as the image's. */
static lm_code cpu_plan(fourier_state *s, int type, lm_nufft_plan **out, lm_error *err)
{
    const int64_t m = s->m;
    float *k = lm_alloc((size_t)(3 * m), sizeof *k, err, "NUFFT samples");
    if (!k)
        return LM_ERR_NOMEM;
    for (int64_t j = 0; j < m; j++)
        for (int a = 0; a < 3; a++)
            k[a * m + j] = s->t->k[3 * j + a];
    const int dim = s->g.n[2] > 1 ? 3 : 2;
    const int64_t c[3] = {s->g.n[0] / 2, s->g.n[1] / 2, s->g.n[2] / 2};
    lm_nufft_opts o;
    lm_nufft_default_opts(&o);
    o.threads = s->threads;
    lm_code rc = lm_nufft_make_plan(type, dim, s->g.n, type == 2 ? -1 : +1, LM_NUFFT_DEFAULT_TOL, &o, out, err);
    if (rc == LM_OK)
        rc = lm_nufft_set_points(*out, m, k, k + m, dim == 3 ? k + 2 * m : NULL, c, s->g.n, err);
    free(k);
    return rc;
}

/* The image on the host: x itself on the CPU, else downloaded. */
static const lm_cfloat *host_image(lm_linop *op, const lm_cfloat *x, lm_error *err)
{
    fourier_state *s = op->state;
    if (!on_gpu(op))
        return x;
    op->be->download(op->be, s->xbuf, x, (size_t)s->nv * sizeof *x);
    return op->be->check(op->be, err) == LM_OK ? s->xbuf : NULL;
}

static lm_code fourier_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    fourier_state *s = op->state;
    lm_backend *be = op->be;
    if (s->gnu) {
        lm_code rc = lm_gpu_nufft_type2(s->gnu, x, y, err);
        if (rc == LM_OK)
            rc = lm_gpu_nufft_wait(s->gnu, err);
        if (rc == LM_OK)
            be->mul(be, s->m, y, s->w_be, y);
        return rc;
    }
    const lm_cfloat *xh = host_image(op, x, err);
    if (!xh)
        return err ? err->code : LM_ERR_INTERNAL;
    lm_cfloat *yh = on_gpu(op) ? s->kbuf : y;
    lm_code rc;
    if (s->f) {
        rc = lm_compute_forward_exact(&s->g, s->t, s->f, xh, 1, s->v->name, NULL, yh, err);
    } else {
        rc = s->fwd ? LM_OK : cpu_plan(s, 2, &s->fwd, err);
        if (rc == LM_OK)
            rc = lm_nufft_execute_c(s->fwd, xh, yh, NULL, err);
    }
    if (rc != LM_OK)
        return rc;
    for (int64_t j = 0; j < s->m; j++)
        yh[j] *= s->w_host[j];
    if (on_gpu(op))
        be->upload(be, y, yh, (size_t)s->m * sizeof *yh);
    return LM_OK;
}

static lm_code fourier_adjoint(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err)
{
    fourier_state *s = op->state;
    lm_backend *be = op->be;
    if (s->gnu) {
        be->mul(be, s->m, s->kbuf, s->w_be, y);
        lm_code rc = lm_gpu_nufft_type1(s->gnu, s->kbuf, x, err);
        return rc == LM_OK ? lm_gpu_nufft_wait(s->gnu, err) : rc;
    }
    const lm_kdata *kd = NULL;
    lm_kdata k = {.m = s->m, .ncoils = 1, .d = (lm_cfloat *)y};
    if (on_gpu(op)) { /* the sums read host samples */
        be->download(be, s->kbuf, y, (size_t)s->m * sizeof *y);
        lm_code rc = be->check(be, err);
        if (rc != LM_OK)
            return rc;
        k.d = s->kbuf;
    }
    kd = &k;
    if (on_gpu(op) && !s->f && s->v->device == LM_DEVICE_GPU) /* (1/N) F^H d straight into x */
        return lm_gpu_adjoint(&s->g, s->t, kd, NULL, NULL, s->v->name, x, NULL, err);
    lm_cfloat *xh = on_gpu(op) ? s->xbuf : x;
    lm_cfloat *fhd = NULL;
    lm_code rc;
    const float inv_n = (float)(1.0 / (double)s->nv);
    if (s->adj) { /* (the CPU back end: kbuf holds the weighted samples) */
        for (int64_t j = 0; j < s->m; j++)
            s->kbuf[j] = kd->d[j] * s->w_host[j];
        rc = lm_nufft_execute_c(s->adj, s->kbuf, xh, NULL, err);
    } else {
        rc = s->f ? lm_compute_fhd_exact(&s->g, s->t, kd, s->f, s->v->name, NULL, &fhd, err)
                  : lm_compute_fhd_sets(&s->g, s->t, kd, s->v->name, NULL, &fhd, err);
        if (rc == LM_OK)
            for (int64_t j = 0; j < s->nv; j++)
                xh[j] = fhd[j] * inv_n;
        free(fhd);
    }
    if (rc == LM_OK && on_gpu(op))
        be->upload(be, x, xh, (size_t)s->nv * sizeof *xh);
    return rc;
}

lm_code lm_linop_fourier(lm_backend *be, const lm_geom *g, const lm_traj *t, const lm_variant *v,
                         const float *fieldmap, int threads, lm_linop **out, lm_error *err)
{
    *out = NULL;
    if (!be || !g || !t || !v)
        return lm_fail(err, LM_ERR_INVALID, "Fourier operator: missing geometry, trajectory or variant");
    if (fieldmap && !t->t)
        return lm_fail(err, LM_ERR_INVALID, "Fourier operator: a field map needs the sample times");
    lm_code rc = lm_geom_check(g, t, err);
    if (rc != LM_OK)
        return rc;
    if (fieldmap && !(v = lm_sums_exact_variant(v, err)))
        return err ? err->code : LM_ERR_UNSUPPORTED;
    const int64_t nv = lm_geom_voxels(g), m = t->m;
    lm_linop *op = lm_linop_new(be, nv, m, "F", err);
    fourier_state *s = op ? lm_calloc(1, sizeof *s, err, "Fourier operator") : NULL;
    if (!s) {
        lm_linop_free(op);
        return LM_ERR_NOMEM;
    }
    *s = (fourier_state){.g = *g, .t = t, .v = v, .f = fieldmap, .threads = threads, .nv = nv, .m = m};
    op->kind = LM_LINOP_FOURIER;
    op->state = s;
    op->destroy = fourier_destroy;
    op->apply = fourier_apply;
    op->adjoint = fourier_adjoint;
    if (!(s->w_host = lm_alloc((size_t)m, sizeof *s->w_host, err, "phi(k)"))) {
        lm_linop_free(op);
        return LM_ERR_NOMEM;
    }
    for (int64_t j = 0; j < m; j++)
        s->w_host[j] = (float)(lm_geom_phi(g, t->k[3 * j], t->k[3 * j + 1], t->k[3 * j + 2]) / (double)nv);
    if (on_gpu(op) && !fieldmap && strcmp(v->name, "gpu-nufft") == 0) {
        rc = lm_gpu_nufft_new(g, t, 1, &s->gnu, err);
        lm_cfloat *w = rc == LM_OK ? lm_alloc((size_t)m, sizeof *w, err, "phi(k)") : NULL;
        if (w) {
            for (int64_t j = 0; j < m; j++)
                w[j] = s->w_host[j];
            s->w_be = be->alloc(be, m, "phi(k)");
            s->kbuf = be->alloc(be, m, "weighted samples");
            if (s->w_be)
                be->upload(be, s->w_be, w, (size_t)m * sizeof *w);
            free(w);
            rc = be->check(be, err);
        } else if (rc == LM_OK) {
            rc = LM_ERR_NOMEM;
        }
    } else {
        if (on_gpu(op)) {
            s->kbuf = lm_alloc((size_t)m, sizeof *s->kbuf, err, "sample staging");
            s->xbuf = s->kbuf ? lm_alloc((size_t)nv, sizeof *s->xbuf, err, "image staging") : NULL;
            rc = s->xbuf ? LM_OK : LM_ERR_NOMEM;
        }
        if (rc == LM_OK && !fieldmap && strcmp(v->name, "cpu-nufft") == 0 && !on_gpu(op)) {
            s->kbuf = lm_alloc((size_t)m, sizeof *s->kbuf, err, "weighted samples");
            rc = s->kbuf ? cpu_plan(s, 1, &s->adj, err) : LM_ERR_NOMEM;
        }
    }
    if (rc != LM_OK) {
        lm_linop_free(op);
        return rc;
    }
    *out = op;
    return LM_OK;
}
