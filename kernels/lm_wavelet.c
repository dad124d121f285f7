/* Orthogonal wavelets through GSL (lm_wavelet.h). */
#include "lm_wavelet.h"

#include <complex.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "lm_config.h"

#if LM_HAVE_GSL
#include <gsl/gsl_errno.h>
#include <gsl/gsl_wavelet.h>

struct lm_wavelet {
    int64_t n[3], p[3], nv, m;
    int threads;
    gsl_wavelet *gw;
    gsl_wavelet_workspace **work;   /* one per thread */
    double **line;                  /* one per thread: 2 pmax doubles */
    lm_cfloat *scratch;             /* M values, for the adjoint */
};

static int64_t next_pow2(int64_t n)
{
    int64_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

lm_code lm_wavelet_new(const int64_t n[3], lm_wavelet_kind kind, int threads, lm_wavelet **out, lm_error *err)
{
    *out = NULL;
    if (kind != LM_WAVELET_HAAR && kind != LM_WAVELET_DB4)
        return lm_fail(err, LM_ERR_INVALID, "wavelet: unknown kind %d", (int)kind);
    int64_t p[3], pmax = 1;
    size_t m = 1, nv = 1;
    for (int a = 0; a < 3; a++) {
        if (n[a] < 1 || n[a] > ((int64_t)1 << 20))
            return lm_fail(err, LM_ERR_INVALID, "wavelet: axis %d of %lld voxels is out of range (1..2^20)", a,
                           (long long)n[a]);
        p[a] = next_pow2(n[a]);
        pmax = p[a] > pmax ? p[a] : pmax;
        if (!lm_size_mul(m, (size_t)p[a], &m) || !lm_size_mul(nv, (size_t)n[a], &nv))
            return lm_fail(err, LM_ERR_NOMEM, "wavelet: size is absurd");
    }
    gsl_set_error_handler_off();
    lm_wavelet *w = lm_calloc(1, sizeof *w, err, "wavelet");
    if (!w)
        return LM_ERR_NOMEM;
    w->threads = threads > 0 ? threads : omp_get_max_threads();
    for (int a = 0; a < 3; a++)
        w->n[a] = n[a], w->p[a] = p[a];
    w->nv = (int64_t)nv;
    w->m = (int64_t)m;
    lm_code rc = LM_ERR_NOMEM;
    w->gw = gsl_wavelet_alloc(kind == LM_WAVELET_HAAR ? gsl_wavelet_haar : gsl_wavelet_daubechies,
                              kind == LM_WAVELET_HAAR ? 2 : 4);
    w->work = lm_calloc((size_t)w->threads, sizeof *w->work, err, "wavelet");
    w->line = lm_calloc((size_t)w->threads, sizeof *w->line, err, "wavelet");
    w->scratch = lm_alloc(m, sizeof *w->scratch, err, "wavelet coefficients");
    if (!w->gw || !w->work || !w->line || !w->scratch)
        goto fail;
    for (int t = 0; t < w->threads; t++) {
        w->work[t] = gsl_wavelet_workspace_alloc((size_t)pmax);
        w->line[t] = lm_alloc(2 * (size_t)pmax, sizeof(double), err, "wavelet");
        if (!w->work[t] || !w->line[t])
            goto fail;
    }
    *out = w;
    return LM_OK;
fail:
    lm_wavelet_free(w);
    return lm_fail(err, rc, "wavelet: out of memory for a %lldx%lldx%lld transform", (long long)p[0],
                   (long long)p[1], (long long)p[2]);
}

void lm_wavelet_free(lm_wavelet *w)
{
    if (!w)
        return;
    for (int t = 0; w->work && t < w->threads; t++)
        if (w->work[t])
            gsl_wavelet_workspace_free(w->work[t]);
    for (int t = 0; w->line && t < w->threads; t++)
        free(w->line[t]);
    if (w->gw)
        gsl_wavelet_free(w->gw);
    free(w->work);
    free(w->line);
    free(w->scratch);
    free(w);
}

int64_t lm_wavelet_coeffs(const lm_wavelet *w, int64_t p[3])
{
    if (p)
        for (int a = 0; a < 3; a++)
            p[a] = w->p[a];
    return w->m;
}

/* The 1D pyramid along axis a of the padded volume c, every line. */
static void transform_axis(lm_wavelet *w, lm_cfloat *c, int a, gsl_wavelet_direction dir)
{
    const int64_t len = w->p[a];
    if (len < 2)
        return;
    const int64_t s = a == 0 ? 1 : a == 1 ? w->p[0] : w->p[0] * w->p[1];
    const int64_t lines = w->m / len;
#pragma omp parallel for num_threads(w->threads) schedule(static) if (w->m >= 32768)
    for (int64_t v = 0; v < lines; v++) {
        const int t = omp_get_thread_num();
        double *buf = w->line[t];
        lm_cfloat *base = c + (v / s) * s * len + v % s;
        for (int64_t i = 0; i < len; i++) {
            buf[2 * i] = crealf(base[i * s]);
            buf[2 * i + 1] = cimagf(base[i * s]);
        }
        /* lengths are powers of two and the workspace is long enough: no error */
        (void)gsl_wavelet_transform(w->gw, buf, 2, (size_t)len, dir, w->work[t]);
        (void)gsl_wavelet_transform(w->gw, buf + 1, 2, (size_t)len, dir, w->work[t]);
        for (int64_t i = 0; i < len; i++)
            base[i * s] = CMPLXF((float)buf[2 * i], (float)buf[2 * i + 1]);
    }
}

void lm_wavelet_forward(lm_wavelet *w, const lm_cfloat *x, lm_cfloat *c)
{
    const int64_t n0 = w->n[0], n1 = w->n[1], n2 = w->n[2], p0 = w->p[0], p1 = w->p[1];
    if (w->m != w->nv)
        memset(c, 0, (size_t)w->m * sizeof *c);
    for (int64_t k = 0; k < n2; k++)
        for (int64_t j = 0; j < n1; j++)
            memcpy(c + (k * p1 + j) * p0, x + (k * n1 + j) * n0, (size_t)n0 * sizeof *c);
    for (int a = 0; a < 3; a++)
        transform_axis(w, c, a, gsl_wavelet_forward);
}

void lm_wavelet_adjoint(lm_wavelet *w, const lm_cfloat *c, lm_cfloat *x)
{
    const int64_t n0 = w->n[0], n1 = w->n[1], n2 = w->n[2], p0 = w->p[0], p1 = w->p[1];
    memcpy(w->scratch, c, (size_t)w->m * sizeof *c);
    /* Psi is orthogonal: its adjoint is its inverse, the axes in any order */
    for (int a = 2; a >= 0; a--)
        transform_axis(w, w->scratch, a, gsl_wavelet_backward);
    for (int64_t k = 0; k < n2; k++)
        for (int64_t j = 0; j < n1; j++)
            memcpy(x + (k * n1 + j) * n0, w->scratch + (k * p1 + j) * p0, (size_t)n0 * sizeof *x);
}

#else /* !LM_HAVE_GSL */

struct lm_wavelet {
    int unused;
};

lm_code lm_wavelet_new(const int64_t n[3], lm_wavelet_kind kind, int threads, lm_wavelet **out, lm_error *err)
{
    (void)n, (void)kind, (void)threads;
    *out = NULL;
    return lm_fail(err, LM_ERR_UNSUPPORTED, "wavelet: built without GSL (apt-get install libgsl-dev, rebuild)");
}
void lm_wavelet_free(lm_wavelet *w)
{
    (void)w;
}
int64_t lm_wavelet_coeffs(const lm_wavelet *w, int64_t p[3])
{
    (void)w, (void)p;
    return 0;
}
void lm_wavelet_forward(lm_wavelet *w, const lm_cfloat *x, lm_cfloat *c)
{
    (void)w, (void)x, (void)c;
}
void lm_wavelet_adjoint(lm_wavelet *w, const lm_cfloat *c, lm_cfloat *x)
{
    (void)w, (void)c, (void)x;
}

#endif
