/* SVD coil compression (see lm_coils.h). The right singular vectors of the
 * data matrix D [m x C] are the eigenvectors of the C x C Gram D^H D, which
 * is cheap to accumulate in double and to decompose with LAPACK; its
 * eigenvalues are the squared singular values, so the energy kept by K
 * virtual coils is the sum of the K largest over the trace. */
#include "lm_coils.h"
#include "lm_coils_impl.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void lm_coil_compress_free(lm_coil_compress *p)
{
    if (p) {
        free(p->a);
        free(p->sv);
        free(p);
    }
}

lm_code lm_coil_compress_plan(const lm_kdata *k, int64_t nvirt, double energy,
                              lm_coil_compress **out, lm_error *err)
{
    if (!k || !k->d || !out)
        return lm_fail(err, LM_ERR_INVALID, "coil compression: missing data");
    *out = NULL;
    int64_t m = k->m, nc = k->ncoils;
    if (nc < 1 || nc > 1024 || m < 1)
        return lm_fail(err, LM_ERR_INVALID, "coil compression: %lld samples x %lld channels",
                       (long long)m, (long long)nc);
    if (nvirt < 0 || nvirt > nc)
        return lm_fail(err, LM_ERR_INVALID,
                       "coil compression: %lld virtual coils asked from %lld channels (1..%lld, or 0 for auto)",
                       (long long)nvirt, (long long)nc, (long long)nc);
    if (energy == 0)
        energy = LM_COIL_COMPRESS_ENERGY;
    if (!(energy > 0 && energy <= 1))
        return lm_fail(err, LM_ERR_INVALID, "coil compression: energy fraction %g is not in (0, 1]", energy);
    for (int64_t i = 0; i < m * nc; i++)
        if (!isfinite(crealf(k->d[i])) || !isfinite(cimagf(k->d[i])))
            return lm_fail(err, LM_ERR_FORMAT, "coil compression: sample %lld of channel %lld is not a finite number",
                           (long long)(i % m), (long long)(i / m));

    lm_cdouble *g = lm_calloc((size_t)(nc * nc), sizeof *g, err, "coil compression");
    double *ev = lm_alloc((size_t)nc, sizeof *ev, err, "coil compression");
    lm_coil_compress *p = lm_calloc(1, sizeof *p, err, "coil compression");
    lm_code rc = LM_OK;
    if (!g || !ev || !p) {
        rc = LM_ERR_NOMEM;
        goto fail;
    }
    /* Gram G_ij = sum_m conj(D_mi) D_mj = conj of the channel correlation */
    lm_channel_gram(k->d, m, nc, g);
    for (int64_t i = 0; i < nc * nc; i++)
        g[i] = conj(g[i]);
    double tr = 0;
    for (int64_t i = 0; i < nc; i++)
        tr += creal(g[i * nc + i]);
    if (!(tr > 0)) {
        rc = lm_fail(err, LM_ERR_INVALID, "coil compression: the data have no energy");
        goto fail;
    }
    lapack_int info = LAPACKE_zheevd(LAPACK_ROW_MAJOR, 'V', 'L', (lapack_int)nc, g, (lapack_int)nc, ev);
    if (info != 0) {
        rc = lm_fail(err, LM_ERR_INTERNAL, "coil compression: eigen-decomposition failed (%d)", (int)info);
        goto fail;
    }
    /* LAPACK sorts ascending: index nc-1-k is the k-th largest */
    double total = 0;
    for (int64_t i = 0; i < nc; i++)
        total += fmax(ev[i], 0.0);
    p->sv = lm_alloc((size_t)nc, sizeof(double), err, "coil compression");
    if (!p->sv) {
        rc = LM_ERR_NOMEM;
        goto fail;
    }
    for (int64_t i = 0; i < nc; i++)
        p->sv[i] = sqrt(fmax(ev[nc - 1 - i], 0.0));
    int64_t kk = nvirt;
    if (kk == 0) {
        double acc = 0;
        for (kk = 1; kk <= nc; kk++) {
            acc += p->sv[kk - 1] * p->sv[kk - 1];
            /* relative slack: rounding must not push K up when the fraction is met exactly */
            if (acc >= energy * total * (1 - 1e-12))
                break;
        }
        if (kk > nc)
            kk = nc;
    }
    double kept = 0;
    for (int64_t i = 0; i < kk; i++)
        kept += p->sv[i] * p->sv[i];
    p->a = lm_alloc((size_t)(kk * nc), sizeof(lm_cdouble), err, "coil compression");
    if (!p->a) {
        rc = LM_ERR_NOMEM;
        goto fail;
    }
    /* row-major eigenvectors: column nc-1-r of g is eigenvector r (descending) */
    for (int64_t r = 0; r < kk; r++)
        for (int64_t c = 0; c < nc; c++)
            p->a[r * nc + c] = g[c * nc + (nc - 1 - r)];
    p->ncoils = nc;
    p->nvirt = kk;
    p->energy = kept / total;
    free(g);
    free(ev);
    *out = p;
    return LM_OK;
fail:
    free(g);
    free(ev);
    lm_coil_compress_free(p);
    return rc;
}

/* out[k] = sum_c a_kc in[c] for `count` vectors of `stride` entries per channel. */
static void compress(const lm_coil_compress *p, const lm_cfloat *in, lm_cfloat *out, int64_t count)
{
    int64_t nc = p->ncoils, kk = p->nvirt;
#pragma omp parallel for schedule(static)
    for (int64_t s = 0; s < count; s++) {
        lm_cdouble v[1024]; /* nc <= 1024: checked by the plan */
        for (int64_t c = 0; c < nc; c++)
            v[c] = in[s + c * count];
        for (int64_t r = 0; r < kk; r++) {
            lm_cdouble acc = 0;
            const lm_cdouble *row = p->a + r * nc;
            for (int64_t c = 0; c < nc; c++)
                acc += row[c] * v[c];
            out[s + r * count] = (lm_cfloat)acc;
        }
    }
}

lm_code lm_coil_compress_apply_kdata(const lm_coil_compress *p, const lm_kdata *in, lm_kdata **out,
                                     lm_error *err)
{
    if (!p || !in || !in->d || !out)
        return lm_fail(err, LM_ERR_INVALID, "coil compression: missing plan or data");
    *out = NULL;
    if (in->ncoils != p->ncoils)
        return lm_fail(err, LM_ERR_INVALID, "coil compression: plan for %lld channels, data have %lld",
                       (long long)p->ncoils, (long long)in->ncoils);
    lm_kdata *o = lm_kdata_new(in->m, p->nvirt, err);
    if (!o)
        return err ? err->code : LM_ERR_NOMEM;
    compress(p, in->d, o->d, in->m);
    *out = o;
    return LM_OK;
}

lm_code lm_coil_compress_apply_sens(const lm_coil_compress *p, const lm_sens *in, lm_sens **out,
                                    lm_error *err)
{
    if (!p || !in || !in->s || !out)
        return lm_fail(err, LM_ERR_INVALID, "coil compression: missing plan or maps");
    *out = NULL;
    if (in->ncoils != p->ncoils)
        return lm_fail(err, LM_ERR_INVALID, "coil compression: plan for %lld channels, maps have %lld",
                       (long long)p->ncoils, (long long)in->ncoils);
    lm_sens *o = lm_sens_new(in->n, p->nvirt, err);
    if (!o)
        return err ? err->code : LM_ERR_NOMEM;
    compress(p, in->s, o->s, lm_sens_voxels(in));
    *out = o;
    return LM_OK;
}
