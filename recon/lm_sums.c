/* The raw k-space sums of the encoding through a kernel variant (lm_kernels.h):
 * Q on the 2x grid (cached on disk) and F^H d of one or every channel on the
 * image grid (channels as weight sets: one sin/cos per pair for all). */
#include "lm_sums.h"

#include <complex.h>
#include <stdlib.h>
#include <string.h>

#include "lm_qcache.h"

/* Structure-of-arrays copy of the trajectory, as the kernels take it. */
typedef struct ksoa {
    float *kx, *ky, *kz, *wr, *wi;
} ksoa;

static void ksoa_free(ksoa *s)
{
    free(s->kx), free(s->ky), free(s->kz), free(s->wr), free(s->wi);
    memset(s, 0, sizeof *s);
}

/* nsets blocks of m weights (one set for Q). */
static lm_code ksoa_make(const lm_traj *t, int complex_w, int64_t nsets, ksoa *s, lm_error *err)
{
    memset(s, 0, sizeof *s);
    size_t m = (size_t)t->m, mw;
    if (!lm_size_mul(m, (size_t)nsets, &mw))
        return lm_fail(err, LM_ERR_NOMEM, "k-space weights: %lld channels overflow",
                       (long long)nsets);
    s->kx = lm_alloc(m, sizeof(float), err, "k-space coordinates");
    s->ky = s->kx ? lm_alloc(m, sizeof(float), err, "k-space coordinates") : NULL;
    s->kz = s->ky ? lm_alloc(m, sizeof(float), err, "k-space coordinates") : NULL;
    s->wr = s->kz ? lm_alloc(mw, sizeof(float), err, "k-space weights") : NULL;
    if (s->wr && complex_w)
        s->wi = lm_alloc(mw, sizeof(float), err, "k-space weights");
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

/* Runs the variant on pts for nsets weight sets and returns interleaved
 * complex values, set after set. */
static lm_code run_sum(const lm_variant *v, const ksoa *s, int64_t m, int64_t nsets,
                       const lm_points *pts, const lm_ctl *ctl, lm_cfloat **out, lm_error *err)
{
    *out = NULL;
    size_t n;
    if (!lm_size_mul((size_t)pts->n, (size_t)nsets, &n))
        return lm_fail(err, LM_ERR_NOMEM, "kernel output: %lld channels overflow",
                       (long long)nsets);
    float *re = lm_alloc(n, sizeof(float), err, "kernel output");
    float *im = re ? lm_alloc(n, sizeof(float), err, "kernel output") : NULL;
    lm_cfloat *c = im ? lm_alloc(n, sizeof(lm_cfloat), err, "kernel output") : NULL;
    if (!c) {
        free(re), free(im);
        return LM_ERR_NOMEM;
    }
    lm_ksum_in in = {.m = m, .kx = s->kx, .ky = s->ky, .kz = s->kz, .wr = s->wr, .wi = s->wi,
                     .nsets = nsets};
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

const lm_variant *lm_sums_variant(const char *name, lm_error *err)
{
    return lm_variant_resolve(name, err); /* "", NULL and "auto": the fastest here */
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
    const lm_variant *v = lm_sums_variant(variant, err);
    if (!v)
        return err ? err->code : LM_ERR_UNSUPPORTED;

    const char *cls = lm_sums_q_class(v);
    if (use_cache && lm_qcache_load(g, t, cls, q, NULL) == LM_OK) {
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
    rc = ksoa_make(t, 0, 1, &s, err);
    if (rc != LM_OK)
        return rc;
    for (int64_t j = 0; j < t->m; j++) {
        double ph = lm_geom_phi(g, s.kx[j], s.ky[j], s.kz[j]);
        s.wr[j] = (float)(ph * ph);
    }
    rc = run_sum(v, &s, t->m, 1, &pts, ctl, q, err);
    ksoa_free(&s);
    /* The cache is best effort: an unwritable cache folder costs only the
     * next run's time. Entries are keyed by accuracy class, so a NUFFT run
     * never hands its approximation to a later exact one. */
    if (rc == LM_OK && use_cache)
        (void)lm_qcache_store(g, t, cls, *q, NULL);
    return rc;
}

/* F^H d of nc channels, d holding nc blocks of t->m samples. */
static lm_code fhd_channels(const lm_geom *g, const lm_traj *t, const lm_cfloat *d, int64_t nc,
                            const char *variant, const lm_ctl *ctl, lm_cfloat **fhd,
                            lm_error *err)
{
    *fhd = NULL;
    if (!g || !t || !d)
        return lm_fail(err, LM_ERR_INVALID, "F^H d: missing geometry, trajectory or data");
    if (nc < 1 || nc > LM_KSUM_MAX_SETS)
        return lm_fail(err, LM_ERR_INVALID, "F^H d: %lld channels is out of range", (long long)nc);
    lm_code rc = lm_geom_check(g, t, err);
    if (rc != LM_OK)
        return rc;
    const lm_variant *v = lm_sums_variant(variant, err);
    if (!v)
        return err ? err->code : LM_ERR_UNSUPPORTED;
    ksoa s;
    rc = ksoa_make(t, 1, nc, &s, err);
    if (rc != LM_OK)
        return rc;
    /* w = conj(phi) d, phi real; phi once per sample for every channel */
    const int64_t m = t->m;
    for (int64_t j = 0; j < m; j++) {
        double ph = lm_geom_phi(g, s.kx[j], s.ky[j], s.kz[j]);
        for (int64_t c = 0; c < nc; c++) {
            s.wr[c * m + j] = (float)(ph * crealf(d[c * m + j]));
            s.wi[c * m + j] = (float)(ph * cimagf(d[c * m + j]));
        }
    }
    lm_points pts;
    lm_points_image_grid(&pts, g->n);
    rc = run_sum(v, &s, m, nc, &pts, ctl, fhd, err);
    ksoa_free(&s);
    return rc;
}

lm_code lm_compute_fhd(const lm_geom *g, const lm_traj *t, const lm_cfloat *d, const char *variant,
                       const lm_ctl *ctl, lm_cfloat **fhd, lm_error *err)
{
    return fhd_channels(g, t, d, 1, variant, ctl, fhd, err);
}

lm_code lm_compute_fhd_sets(const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                            const char *variant, const lm_ctl *ctl, lm_cfloat **fhd, lm_error *err)
{
    *fhd = NULL;
    if (!k || !t)
        return lm_fail(err, LM_ERR_INVALID, "F^H d: missing k-space or trajectory");
    if (k->m != t->m)
        return lm_fail(err, LM_ERR_INVALID, "F^H d: k-space of %lld samples, trajectory of %lld",
                       (long long)k->m, (long long)t->m);
    return fhd_channels(g, t, k->d, k->ncoils, variant, ctl, fhd, err);
}

const char *lm_sums_q_class(const lm_variant *v)
{
    if (v->approximate)
        return v->name; /* each NUFFT has its own tolerance */
    return strcmp(v->name, "cpu-dp") == 0 ? "exact-double" : "exact-single";
}
