/* Small numerical helpers for the coil-map estimators (lm_coils_impl.h):
 * separable transforms, per-voxel largest eigenpairs, the principal
 * component of calibration data. */
#include "lm_coils_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One pass along axis `ax` of an array with dims d (d[3] = volumes):
 * out[.. j ..] = sum_i m[j * d[ax] + i] in[.. i ..]; od: out dims. */
static void sep_pass(const int64_t d[4], int ax, int64_t oa, const lm_cdouble *m,
                     const lm_cdouble *in, lm_cdouble *out, int threads)
{
    int64_t inner = 1, outer = 1, na = d[ax];
    for (int a = 0; a < ax; a++)
        inner *= d[a];
    for (int a = ax + 1; a < 4; a++)
        outer *= d[a];
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t q = 0; q < outer; q++) {
        const lm_cdouble *src = in + q * na * inner;
        lm_cdouble *dst = out + q * oa * inner;
        for (int64_t j = 0; j < oa; j++) {
            lm_cdouble *o = dst + j * inner;
            for (int64_t p = 0; p < inner; p++)
                o[p] = 0;
            const lm_cdouble *row = m + j * na;
            for (int64_t i = 0; i < na; i++) {
                lm_cdouble c = row[i];
                if (c == 0)
                    continue;
                const lm_cdouble *s = src + i * inner;
                for (int64_t p = 0; p < inner; p++)
                    o[p] += c * s[p];
            }
        }
    }
}

lm_code lm_sep3(const int64_t n[3], const int64_t o[3], const lm_cdouble *const m[3], int64_t nc,
                const lm_cdouble *in, lm_cdouble *out, int threads, lm_error *err)
{
    int64_t d[4] = {n[0], n[1], n[2], nc};
    /* sizes after the z pass and after the y pass */
    size_t s1 = (size_t)(n[0] * n[1] * o[2] * nc), s2 = (size_t)(n[0] * o[1] * o[2] * nc);
    lm_cdouble *t1 = lm_alloc(s1, sizeof *t1, err, "separable transform");
    lm_cdouble *t2 = lm_alloc(s2, sizeof *t2, err, "separable transform");
    if (!t1 || !t2) {
        free(t1);
        free(t2);
        return LM_ERR_NOMEM;
    }
    sep_pass(d, 2, o[2], m[2], in, t1, threads);
    d[2] = o[2];
    sep_pass(d, 1, o[1], m[1], t1, t2, threads);
    d[1] = o[1];
    sep_pass(d, 0, o[0], m[0], t2, out, threads);
    free(t1);
    free(t2);
    return LM_OK;
}

int lm_eig_ws_init(lm_eig_ws *ws, int64_t n)
{
    memset(ws, 0, sizeof *ws);
    ws->n = (lapack_int)n;
    ws->a = malloc((size_t)(n * n) * sizeof(lm_cdouble));
    ws->z = malloc((size_t)n * sizeof(lm_cdouble));
    ws->w = malloc((size_t)n * sizeof(double));
    ws->isuppz = malloc(2 * sizeof(lapack_int));
    if (!ws->a || !ws->z || !ws->w || !ws->isuppz)
        return -1;
    /* workspace query */
    lm_cdouble wq;
    double rq;
    lapack_int iq, m;
    for (int64_t i = 0; i < n * n; i++)
        ws->a[i] = (i % (n + 1)) == 0;
    lapack_int info = LAPACKE_zheevr_work(LAPACK_COL_MAJOR, 'V', 'I', 'L', ws->n, ws->a, ws->n, 0, 0,
                                          ws->n, ws->n, 0, &m, ws->w, ws->z, ws->n, ws->isuppz, &wq,
                                          -1, &rq, -1, &iq, -1);
    if (info != 0)
        return -1;
    ws->lwork = (lapack_int)creal(wq);
    ws->lrwork = (lapack_int)rq;
    ws->liwork = iq;
    ws->work = malloc((size_t)ws->lwork * sizeof(lm_cdouble));
    ws->rwork = malloc((size_t)ws->lrwork * sizeof(double));
    ws->iwork = malloc((size_t)ws->liwork * sizeof(lapack_int));
    return ws->work && ws->rwork && ws->iwork ? 0 : -1;
}

void lm_eig_ws_free(lm_eig_ws *ws)
{
    free(ws->a);
    free(ws->z);
    free(ws->w);
    free(ws->isuppz);
    free(ws->work);
    free(ws->rwork);
    free(ws->iwork);
    memset(ws, 0, sizeof *ws);
}

int lm_eig_top(lm_eig_ws *ws, double *lambda, lm_cdouble *v)
{
    lapack_int m = 0;
    lapack_int info = LAPACKE_zheevr_work(LAPACK_COL_MAJOR, 'V', 'I', 'L', ws->n, ws->a, ws->n, 0, 0,
                                          ws->n, ws->n, 0, &m, ws->w, ws->z, ws->n, ws->isuppz,
                                          ws->work, ws->lwork, ws->rwork, ws->lrwork, ws->iwork,
                                          ws->liwork);
    if (info != 0 || m != 1)
        return -1;
    *lambda = ws->w[0];
    memcpy(v, ws->z, (size_t)ws->n * sizeof(lm_cdouble));
    return 0;
}

lm_code lm_calib_principal(const lm_calib *cal, lm_cdouble *u, lm_error *err)
{
    int64_t nc = cal->ncoils, nk = cal->n[0] * cal->n[1] * cal->n[2];
    lm_eig_ws ws;
    if (lm_eig_ws_init(&ws, nc) != 0) {
        lm_eig_ws_free(&ws);
        return lm_fail(err, LM_ERR_NOMEM, "coil maps: out of memory for an eigenproblem");
    }
    /* column-major lower: a[i + nc j] = sum_k y_i conj(y_j), i >= j */
    for (int64_t j = 0; j < nc; j++)
        for (int64_t i = j; i < nc; i++) {
            lm_cdouble s = 0;
            const lm_cdouble *yi = cal->y + i * nk, *yj = cal->y + j * nk;
            for (int64_t q = 0; q < nk; q++)
                s += yi[q] * conj(yj[q]);
            ws.a[i + nc * j] = s;
        }
    double lam = 0;
    int bad = lm_eig_top(&ws, &lam, u);
    lm_eig_ws_free(&ws);
    if (bad || !(lam > 0))
        return lm_fail(err, LM_ERR_INVALID, "coil maps: the calibration data have no energy");
    return LM_OK;
}

void lm_channel_gram(const lm_cfloat *d, int64_t m, int64_t nc, lm_cdouble *g)
{
    /* the lower triangle; the rest by Hermitian symmetry */
#pragma omp parallel for schedule(dynamic)
    for (int64_t p = 0; p < nc * nc; p++) {
        int64_t i = p / nc, j = p % nc;
        if (j > i)
            continue;
        const lm_cfloat *a = d + i * m, *b = d + j * m;
        double re = 0, im = 0;
        for (int64_t s = 0; s < m; s++) {
            double ar = crealf(a[s]), ai = cimagf(a[s]), br = crealf(b[s]), bi = cimagf(b[s]);
            re += ar * br + ai * bi; /* a conj(b) */
            im += ai * br - ar * bi;
        }
        g[i * nc + j] = re + I * im;
        g[j * nc + i] = re - I * im;
    }
}
