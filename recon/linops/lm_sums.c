/* The raw k-space sums of the encoding through a kernel variant (lm_kernels.h):
 * Q on the 2x grid (cached on disk) and F^H d of one or every channel on the
 * image grid (channels as weight sets: one sin/cos per pair for all). */
#include "lm_sums.h"

#include <complex.h>
#include <stdlib.h>
#include <string.h>

#include "lm_gpu.h"
#include "lm_qcache.h"
#include "lm_toeplitz_block.h"
#include "lm_trace.h"

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

const lm_variant *lm_sums_exact_variant(const lm_variant *v, lm_error *err)
{
    if (!v->approximate && !v->grid_only)
        return v;
    const char *name = v->device == LM_DEVICE_GPU ? "gpu-tuned" : "cpu-simd";
    const lm_variant *x = lm_variant_get_available(name, NULL);
    if (!x && v->device == LM_DEVICE_CPU)
        x = lm_variant_get_available("cpu-sp", err); /* no SIMD ISA here */
    else if (!x)
        x = lm_variant_get_available(name, err);
    return x;
}

/* The block weights |phi|^2 conj(b_l) b_l' of every pair (np sets). */
static lm_code segment_weights(const lm_geom *g, const lm_traj *t, int L, const lm_cfloat *b, int all_pairs,
                               int64_t np, ksoa *s, lm_error *err)
{
    const int64_t m = t->m;
    lm_code rc = ksoa_make(t, 1, np, s, err);
    if (rc != LM_OK)
        return rc;
#pragma omp parallel for schedule(static) if (m >= 32768)
    for (int64_t j = 0; j < m; j++) {
        const double ph = lm_geom_phi(g, s->kx[j], s->ky[j], s->kz[j]), p2 = ph * ph;
        for (int l = 0; l < L; l++)
            for (int lp = all_pairs ? 0 : l; lp < L; lp++) {
                const int64_t pr = all_pairs ? (int64_t)l * L + lp : lm_block_pair(L, l, lp);
                const lm_cfloat w = conjf(b[l * m + j]) * b[lp * m + j];
                s->wr[pr * m + j] = (float)(p2 * crealf(w));
                s->wi[pr * m + j] = (float)(p2 * cimagf(w));
            }
    }
    return LM_OK;
}

static lm_code segments_check(const lm_geom *g, const lm_traj *t, int L, const lm_cfloat *b, lm_error *err)
{
    if (!g || !t || !b || L < 1 || L > LM_BLOCK_MAX_L)
        return lm_fail(err, LM_ERR_INVALID, "segmented Q: missing geometry, trajectory or interpolators");
    return lm_geom_check(g, t, err);
}

lm_code lm_compute_q_segments(const lm_geom *g, const lm_traj *t, int L, const lm_cfloat *b, uint64_t seg_hash,
                              int all_pairs, const char *variant, int use_cache, const lm_ctl *ctl, lm_cfloat **q,
                              int *from_cache, lm_error *err)
{
    *q = NULL;
    if (from_cache)
        *from_cache = 0;
    lm_code rc = segments_check(g, t, L, b, err);
    if (rc != LM_OK)
        return rc;
    const lm_variant *v = lm_sums_variant(variant, err);
    if (!v)
        return err ? err->code : LM_ERR_UNSUPPORTED;
    const int64_t np = all_pairs ? (int64_t)L * L : (int64_t)L * (L + 1) / 2, m = t->m;
    const char *cls = lm_sums_q_class(v);
    use_cache = use_cache && !all_pairs;
    if (use_cache && lm_qcache_load_sets(g, t, cls, seg_hash, np, q, NULL) == LM_OK) {
        if (from_cache)
            *from_cache = 1;
        return LM_OK;
    }
    lm_points pts;
    lm_points_q_grid(&pts, g->n);
    ksoa s;
    rc = segment_weights(g, t, L, b, all_pairs, np, &s, err);
    if (rc != LM_OK)
        return rc;
    rc = run_sum(v, &s, m, np, &pts, ctl, q, err);
    ksoa_free(&s);
    if (rc == LM_OK && use_cache)
        (void)lm_qcache_store_sets(g, t, cls, seg_hash, np, *q, NULL);
    return rc;
}

lm_code lm_compute_q_segments_gpu(const lm_geom *g, const lm_traj *t, int L, const lm_cfloat *b, const char *variant,
                                  lm_cfloat *q_dev, const lm_ctl *ctl, lm_error *err)
{
    lm_code rc = segments_check(g, t, L, b, err);
    if (rc != LM_OK)
        return rc;
    const int64_t np = (int64_t)L * (L + 1) / 2;
    ksoa s;
    rc = segment_weights(g, t, L, b, 0, np, &s, err);
    if (rc != LM_OK)
        return rc;
    lm_trace("Q block weights made");
    const lm_ksum_in in = {.m = t->m, .kx = s.kx, .ky = s.ky, .kz = s.kz, .wr = s.wr, .wi = s.wi, .nsets = np};
    rc = lm_gpu_q_sets(g, &in, variant, q_dev, ctl, err);
    ksoa_free(&s);
    return rc;
}

static lm_code need_times(const lm_traj *t, const float *f, lm_error *err)
{
    if (!t->t || !f)
        return lm_fail(err, LM_ERR_INVALID, "off-resonance: the sample times and the field map go together");
    return LM_OK;
}

lm_code lm_compute_fhd_exact(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const float *f,
                             const char *variant, const lm_ctl *ctl, lm_cfloat **fhd, lm_error *err)
{
    *fhd = NULL;
    if (!g || !t || !k || k->m != t->m || k->ncoils < 1 || k->ncoils > LM_KSUM_MAX_SETS)
        return lm_fail(err, LM_ERR_INVALID, "F^H d: missing or mismatched geometry, trajectory or data");
    lm_code rc = lm_geom_check(g, t, err);
    if (rc == LM_OK)
        rc = need_times(t, f, err);
    if (rc != LM_OK)
        return rc;
    const lm_variant *v = lm_sums_variant(variant, err);
    if (!v)
        return err ? err->code : LM_ERR_UNSUPPORTED;
    const int64_t m = t->m, nc = k->ncoils;
    ksoa s;
    rc = ksoa_make(t, 1, nc, &s, err);
    if (rc != LM_OK)
        return rc;
    for (int64_t j = 0; j < m; j++) {
        const double ph = lm_geom_phi(g, s.kx[j], s.ky[j], s.kz[j]);
        for (int64_t c = 0; c < nc; c++) {
            s.wr[c * m + j] = (float)(ph * crealf(k->d[c * m + j]));
            s.wi[c * m + j] = (float)(ph * cimagf(k->d[c * m + j]));
        }
    }
    lm_points pts;
    lm_points_image_grid(&pts, g->n);
    pts.f = f;
    lm_cfloat *out = NULL;
    size_t n;
    if (!lm_size_mul((size_t)pts.n, (size_t)nc, &n)) {
        ksoa_free(&s);
        return lm_fail(err, LM_ERR_NOMEM, "F^H d: %lld channels overflow", (long long)nc);
    }
    float *re = lm_alloc(n, sizeof(float), err, "kernel output");
    float *im = re ? lm_alloc(n, sizeof(float), err, "kernel output") : NULL;
    out = im ? lm_alloc(n, sizeof *out, err, "kernel output") : NULL;
    rc = out ? LM_OK : LM_ERR_NOMEM;
    if (rc == LM_OK) {
        const lm_ksum_in in = {.m = m, .kx = s.kx, .ky = s.ky, .kz = s.kz, .wr = s.wr, .wi = s.wi, .nsets = nc,
                               .t = t->t};
        rc = lm_ksum_run(v, &in, &pts, re, im, ctl, err);
    }
    if (rc == LM_OK) {
        for (size_t j = 0; j < n; j++)
            out[j] = CMPLXF(re[j], im[j]);
        *fhd = out;
    } else {
        free(out);
    }
    free(re), free(im);
    ksoa_free(&s);
    return rc;
}

lm_code lm_compute_forward_exact(const lm_geom *g, const lm_traj *t, const float *f, const lm_cfloat *x,
                                 int64_t nsets, const char *variant, const lm_ctl *ctl, lm_cfloat *out, lm_error *err)
{
    if (!g || !t || !x || !out || nsets < 1 || nsets > LM_KSUM_MAX_SETS)
        return lm_fail(err, LM_ERR_INVALID, "E x: missing geometry, trajectory or image");
    lm_code rc = lm_geom_check(g, t, err);
    if (rc == LM_OK)
        rc = need_times(t, f, err);
    if (rc != LM_OK)
        return rc;
    const lm_variant *v = lm_sums_variant(variant, err);
    if (!v)
        return err ? err->code : LM_ERR_UNSUPPORTED;
    const int64_t nv = lm_geom_voxels(g), m = t->m;
    size_t nw, no;
    if (!lm_size_mul((size_t)nv, (size_t)nsets, &nw) || !lm_size_mul((size_t)m, (size_t)nsets, &no))
        return lm_fail(err, LM_ERR_NOMEM, "E x: %lld images overflow", (long long)nsets);
    /* the voxels as samples: positions, weights conj(x), "times" f */
    float *pos = lm_alloc((size_t)nv, 3 * sizeof(float), err, "voxel positions");
    float *wr = pos ? lm_alloc(nw, sizeof(float), err, "forward weights") : NULL;
    float *wi = wr ? lm_alloc(nw, sizeof(float), err, "forward weights") : NULL;
    /* the samples as points: k as positions, t as the field */
    float *kp = wi ? lm_alloc((size_t)m, 3 * sizeof(float), err, "sample positions") : NULL;
    float *re = kp ? lm_alloc(no, sizeof(float), err, "forward output") : NULL;
    float *im = re ? lm_alloc(no, sizeof(float), err, "forward output") : NULL;
    rc = im ? LM_OK : LM_ERR_NOMEM;
    if (rc == LM_OK) {
        lm_points grid;
        lm_points_image_grid(&grid, g->n);
        for (int64_t j = 0; j < nv; j++) {
            double p[3];
            lm_points_get(&grid, j, p);
            pos[j] = (float)p[0], pos[nv + j] = (float)p[1], pos[2 * nv + j] = (float)p[2];
        }
        for (size_t j = 0; j < nw; j++)
            wr[j] = crealf(x[j]), wi[j] = -cimagf(x[j]);
        for (int64_t j = 0; j < m; j++)
            for (int a = 0; a < 3; a++)
                kp[a * m + j] = t->k[3 * j + a];
        const lm_ksum_in in = {.m = nv, .kx = pos, .ky = pos + nv, .kz = pos + 2 * nv, .wr = wr, .wi = wi,
                               .nsets = nsets, .t = f};
        const lm_points pts = {.n = m, .x = kp, .y = kp + m, .z = kp + 2 * m, .f = t->t};
        rc = lm_ksum_run(v, &in, &pts, re, im, ctl, err);
    }
    if (rc == LM_OK)
        for (size_t j = 0; j < no; j++)
            out[j] = CMPLXF(re[j], -im[j]);
    free(pos), free(wr), free(wi), free(kp), free(re), free(im);
    return rc;
}
