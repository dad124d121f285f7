/* Noise prewhitening (see lm_coils.h): covariance from a noise scan,
 * W = L^{-1} from its Cholesky factor, and W applied to each sample's coil
 * vector. Accumulation in double; the data stay single precision. */
#include "lm_coils.h"
#include "lm_coils_impl.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

lm_cmat *lm_cmat_new(int64_t n, lm_error *err)
{
    if (n <= 0 || n > 1024) /* lm_sens's channel limit */
        return lm_fail(err, LM_ERR_INVALID, "matrix of %lld x %lld is invalid", (long long)n,
                       (long long)n), NULL;
    lm_cmat *m = lm_calloc(1, sizeof *m, err, "matrix");
    if (!m)
        return NULL;
    m->a = lm_calloc((size_t)(n * n), sizeof(lm_cdouble), err, "matrix");
    if (!m->a) {
        free(m);
        return NULL;
    }
    m->n = n;
    return m;
}

void lm_cmat_free(lm_cmat *m)
{
    if (m) {
        free(m->a);
        free(m);
    }
}

lm_code lm_noise_covariance(const lm_kdata *noise, lm_cmat **cov, lm_error *err)
{
    if (!noise || !noise->d || !cov)
        return lm_fail(err, LM_ERR_INVALID, "noise covariance: missing noise data");
    *cov = NULL;
    int64_t ns = noise->m, nc = noise->ncoils;
    if (nc < 1)
        return lm_fail(err, LM_ERR_INVALID, "noise covariance: %lld channels", (long long)nc);
    /* fewer samples than 2 per channel cannot give a full-rank estimate */
    if (ns < 2 * nc)
        return lm_fail(err, LM_ERR_INVALID,
                       "noise covariance: %lld noise samples per channel, need at least %lld",
                       (long long)ns, (long long)(2 * nc));
    for (int64_t i = 0; i < ns * nc; i++)
        if (!isfinite(crealf(noise->d[i])) || !isfinite(cimagf(noise->d[i])))
            return lm_fail(err, LM_ERR_FORMAT, "noise covariance: noise sample %lld of channel %lld is not a finite number",
                           (long long)(i % ns), (long long)(i / ns));
    lm_cmat *c = lm_cmat_new(nc, err);
    if (!c)
        return LM_ERR_NOMEM;
    lm_channel_gram(noise->d, ns, nc, c->a);
    for (int64_t i = 0; i < nc * nc; i++)
        c->a[i] /= (double)ns;
    for (int64_t i = 0; i < nc; i++)
        if (!(creal(c->a[i * nc + i]) > 0)) {
            lm_cmat_free(c);
            return lm_fail(err, LM_ERR_INVALID, "noise covariance: channel %lld has no noise energy",
                           (long long)i);
        }
    *cov = c;
    return LM_OK;
}

lm_code lm_prewhiten_make(const lm_cmat *cov, lm_cmat **w, lm_error *err)
{
    if (!cov || !cov->a || !w)
        return lm_fail(err, LM_ERR_INVALID, "prewhitening: missing noise covariance");
    *w = NULL;
    int64_t n = cov->n;
    double dmax = 0;
    for (int64_t i = 0; i < n * n; i++)
        if (!isfinite(creal(cov->a[i])) || !isfinite(cimag(cov->a[i])))
            return lm_fail(err, LM_ERR_INVALID, "prewhitening: noise covariance entry (%lld, %lld) is not a finite number",
                           (long long)(i / n), (long long)(i % n));
    for (int64_t i = 0; i < n; i++)
        dmax = fmax(dmax, creal(cov->a[i * n + i]));
    if (!(dmax > 0))
        return lm_fail(err, LM_ERR_INVALID, "prewhitening: noise covariance has no positive diagonal entry");
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++)
            if (cabs(cov->a[i * n + j] - conj(cov->a[j * n + i])) > 1e-6 * dmax)
                return lm_fail(err, LM_ERR_INVALID, "prewhitening: noise covariance is not Hermitian at (%lld, %lld)",
                               (long long)i, (long long)j);
    lm_cmat *l = lm_cmat_new(n, err);
    if (!l)
        return LM_ERR_NOMEM;
    memcpy(l->a, cov->a, (size_t)(n * n) * sizeof(lm_cdouble));
    lapack_int info = LAPACKE_zpotrf(LAPACK_ROW_MAJOR, 'L', (lapack_int)n, l->a, (lapack_int)n);
    if (info == 0) {
        /* a tiny pivot would make W amplify rounding noise by 1/pivot */
        for (int64_t i = 0; i < n; i++) {
            double p = creal(l->a[i * n + i]);
            if (!(p * p >= 1e-10 * dmax)) {
                info = (lapack_int)(i + 1);
                break;
            }
        }
    }
    if (info > 0) {
        lm_cmat_free(l);
        return lm_fail(err, LM_ERR_INVALID,
                       "prewhitening: noise covariance is not positive definite (pivot %d of %lld)",
                       (int)info, (long long)n);
    }
    if (info == 0)
        info = LAPACKE_ztrtri(LAPACK_ROW_MAJOR, 'L', 'N', (lapack_int)n, l->a, (lapack_int)n);
    if (info != 0) {
        lm_cmat_free(l);
        return lm_fail(err, LM_ERR_INTERNAL, "prewhitening: LAPACK failed (%d)", (int)info);
    }
    for (int64_t i = 0; i < n; i++) /* the strict upper triangle is left from Psi */
        for (int64_t j = i + 1; j < n; j++)
            l->a[i * n + j] = 0;
    *w = l;
    return LM_OK;
}

/* d <- M d for each of count coil vectors strided by `stride` channels apart. */
static void apply_rows(const lm_cmat *w, lm_cfloat *d, int64_t count, int64_t stride)
{
    int64_t n = w->n;
#pragma omp parallel
    {
        lm_cdouble tmp[1024]; /* n <= 1024: lm_cmat_new */
#pragma omp for schedule(static)
        for (int64_t m = 0; m < count; m++) {
            for (int64_t c = 0; c < n; c++)
                tmp[c] = d[m + c * stride];
            for (int64_t i = 0; i < n; i++) {
                lm_cdouble s = 0;
                const lm_cdouble *row = w->a + i * n;
                for (int64_t c = 0; c < n; c++)
                    s += row[c] * tmp[c];
                d[m + i * stride] = (lm_cfloat)s;
            }
        }
    }
}

lm_code lm_prewhiten_apply(const lm_cmat *w, lm_kdata *k, lm_error *err)
{
    if (!w || !w->a || !k || !k->d)
        return lm_fail(err, LM_ERR_INVALID, "prewhitening: missing matrix or data");
    if (w->n != k->ncoils)
        return lm_fail(err, LM_ERR_INVALID,
                       "prewhitening: noise has %lld channels but the data have %lld",
                       (long long)w->n, (long long)k->ncoils);
    apply_rows(w, k->d, k->m, k->m);
    return LM_OK;
}

lm_code lm_cmat_apply_sens(const lm_cmat *w, lm_sens *s, lm_error *err)
{
    if (!w || !w->a || !s || !s->s)
        return lm_fail(err, LM_ERR_INVALID, "coil maps: missing matrix or maps");
    if (w->n != s->ncoils)
        return lm_fail(err, LM_ERR_INVALID, "coil maps: matrix for %lld channels, maps have %lld",
                       (long long)w->n, (long long)s->ncoils);
    int64_t nv = lm_sens_voxels(s);
    apply_rows(w, s->s, nv, nv);
    return LM_OK;
}
