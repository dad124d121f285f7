/* cpu-nufft: the k-space sum out(x_i) = sum_m w_m exp(+i 2 pi k_m . x_i) on a
 * regular grid through a type 1 NUFFT (lm_nufft.c). The last plan is kept
 * for the next call with the same grid, threads and samples (F^H d is often
 * asked for again with new data on one trajectory). Weight sets run through
 * one plan: the points are sorted and the spreading set up once, then the
 * sets go through lm_nufft_execute_sets. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lm_kernels_impl.h"
#include "lm_nufft.h"

/* Fine grids above this many points are not kept between calls (Q's grid
 * would pin gigabytes for a result that is itself cached on disk). */
#define LM_KSUM_NUFFT_CACHE_MAX ((int64_t)1 << 25)

typedef struct ksum_cache {
    lm_nufft_plan *plan;
    int64_t g[3], c[3], s[3], m;
    int threads;
    float *k; /* 3 x m copy of the samples the plan was set up with */
} ksum_cache;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static ksum_cache cache;

static void cache_clear_locked(void)
{
    lm_nufft_destroy(cache.plan);
    free(cache.k);
    memset(&cache, 0, sizeof cache);
}

void lm_ksum_nufft_release_cache(void)
{
    pthread_mutex_lock(&cache_lock);
    cache_clear_locked();
    pthread_mutex_unlock(&cache_lock);
}

static int same_samples(const ksum_cache *c, const lm_ksum_in *in)
{
    size_t bytes = (size_t)in->m * sizeof(float);
    return !memcmp(c->k, in->kx, bytes) && !memcmp(c->k + in->m, in->ky, bytes) &&
           (in->kz ? !memcmp(c->k + 2 * in->m, in->kz, bytes) : 1);
}

/* Takes the cached plan when it matches (the slot is emptied while in use,
 * so concurrent callers build their own). */
static lm_nufft_plan *cache_take(const lm_ksum_in *in, const lm_points *pts, int threads)
{
    lm_nufft_plan *p = NULL;
    pthread_mutex_lock(&cache_lock);
    if (cache.plan && cache.m == in->m && cache.threads == threads &&
        !memcmp(cache.g, pts->g, sizeof cache.g) && !memcmp(cache.c, pts->c, sizeof cache.c) &&
        !memcmp(cache.s, pts->s, sizeof cache.s) && same_samples(&cache, in)) {
        p = cache.plan;
        cache.plan = NULL;
    }
    pthread_mutex_unlock(&cache_lock);
    return p;
}

static void cache_put(lm_nufft_plan *p, const lm_ksum_in *in, const lm_points *pts, int threads)
{
    int64_t nf[3];
    lm_nufft_fine_grid(p, nf);
    float *k = NULL;
    if (nf[0] * nf[1] * nf[2] <= LM_KSUM_NUFFT_CACHE_MAX && (k = malloc((size_t)in->m * 3 * sizeof(float)))) {
        size_t bytes = (size_t)in->m * sizeof(float);
        memcpy(k, in->kx, bytes);
        memcpy(k + in->m, in->ky, bytes);
        if (in->kz)
            memcpy(k + 2 * in->m, in->kz, bytes);
        else
            memset(k + 2 * in->m, 0, bytes);
    }
    if (!k) {
        lm_nufft_destroy(p);
        return;
    }
    pthread_mutex_lock(&cache_lock);
    cache_clear_locked();
    cache.plan = p;
    cache.k = k;
    cache.m = in->m;
    cache.threads = threads;
    memcpy(cache.g, pts->g, sizeof cache.g);
    memcpy(cache.c, pts->c, sizeof cache.c);
    memcpy(cache.s, pts->s, sizeof cache.s);
    pthread_mutex_unlock(&cache_lock);
}

/* Upsampling 2, not 1.25: 1.25 has a 4x smaller FFT but its deapodisation
 * divides by a kernel transform that falls ~100x per axis towards the band
 * edge, which amplifies single-precision rounding: on B128 it measured
 * 1.1e-4 (F^H d) and 6.8e-5 (Q) relative error against ~1.3e-6 at 2, and 2
 * already runs far inside the time targets. */
#define LM_KSUM_NUFFT_UPSAMPFAC 2.0

lm_code lm_ksum_cpu_nufft(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im,
                          const lm_ctl *ctl, lm_error *err)
{
    if (!in || !pts || !out_re || !out_im)
        return lm_fail(err, LM_ERR_INVALID, "cpu-nufft: missing input or output");
    lm_code trc = lm_ksum_time_refuse("cpu-nufft", in, pts, err);
    if (trc != LM_OK)
        return trc;
    if (pts->x)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "cpu-nufft needs a regular grid");
    if (pts->g[0] < 2 || pts->g[1] < 2 || pts->g[2] < 1)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "cpu-nufft: grid %lldx%lldx%lld is not 2D or 3D",
                       (long long)pts->g[0], (long long)pts->g[1], (long long)pts->g[2]);
    if (pts->n != pts->g[0] * pts->g[1] * pts->g[2])
        return lm_fail(err, LM_ERR_INVALID, "cpu-nufft: %lld points do not fill a %lldx%lldx%lld grid",
                       (long long)pts->n, (long long)pts->g[0], (long long)pts->g[1], (long long)pts->g[2]);
    if (in->m < 0 || (in->m > 0 && (!in->kx || !in->ky || !in->wr)))
        return lm_fail(err, LM_ERR_INVALID, "cpu-nufft: samples without coordinates or weights");
    int dim = pts->g[2] == 1 ? 2 : 3;
    if (dim == 3 && !in->kz)
        return lm_fail(err, LM_ERR_INVALID, "cpu-nufft: 3D grid but no kz");
    int threads = ctl && ctl->threads > 0 ? ctl->threads : 0;
    lm_nufft_plan *p = cache_take(in, pts, threads);
    lm_code rc = LM_OK;
    if (!p) {
        lm_nufft_opts o;
        lm_nufft_default_opts(&o);
        o.threads = threads;
        o.upsampfac = LM_KSUM_NUFFT_UPSAMPFAC;
        rc = lm_nufft_make_plan(1, dim, pts->g, +1, LM_NUFFT_DEFAULT_TOL, &o, &p, err);
        if (rc != LM_OK)
            return rc;
        rc = lm_nufft_set_points(p, in->m, in->kx, in->ky, in->kz, pts->c, pts->s, err);
        if (rc != LM_OK) {
            lm_nufft_destroy(p);
            return rc;
        }
    }
    /* weight sets through one call: side by side on the threads when they fit */
    const int64_t nc = lm_ksum_nsets(in);
    rc = lm_nufft_execute_sets(p, nc, in->wr, in->wi, in->m, out_re, out_im, pts->n, ctl, err);
    if (rc != LM_OK) {
        lm_nufft_destroy(p);
        return rc;
    }
    cache_put(p, in, pts, threads);
    return LM_OK;
}
