/* The encoding operator's sums on the device (lm_gpu.h): Q into device
 * memory, and E^H d = (1/N) sum_c conj(s_c) F^H d_c accumulated on the
 * device, with the samples' coordinates uploaded once and each channel's
 * weights in turn. Nothing but the samples goes up; nothing comes down. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_gpu_device.cuh"
#include "lm_gpu_internal.h"

#define ENC_T 256

/* q = re + i im, interleaved */
__global__ void k_enc_interleave(long long n, const float *__restrict__ re, const float *__restrict__ im,
                                 float2 *__restrict__ q)
{
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += (long long)gridDim.x * blockDim.x)
        q[j] = make_float2(re[j], im[j]);
}

/* x (+)= conj(s) (re + i im) / N; s NULL: s = 1 */
__global__ void k_enc_combine(long long n, const float *__restrict__ re, const float *__restrict__ im,
                              const float2 *__restrict__ s, float invn, int first, float2 *__restrict__ x)
{
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += (long long)gridDim.x * blockDim.x) {
        const float2 f = make_float2(re[j] * invn, im[j] * invn);
        float2 v = f;
        if (s) {
            const float2 a = s[j];
            v = make_float2(a.x * f.x + a.y * f.y, a.x * f.y - a.y * f.x);
        }
        if (!first) {
            const float2 o = x[j];
            v.x += o.x;
            v.y += o.y;
        }
        x[j] = v;
    }
}

static unsigned enc_blocks(long long n)
{
    long long b = (n + ENC_T - 1) / ENC_T;
    return (unsigned)(b < 1 ? 1 : b > 65535 * 16 ? 65535 * 16 : b);
}

static void grid_points(const lm_geom *g, int q, lm_points *p)
{
    memset(p, 0, sizeof *p);
    p->n = 1;
    for (int a = 0; a < 3; a++) {
        if (q) {
            p->g[a] = g->n[a] > 1 ? 2 * g->n[a] : 1;
            p->c[a] = g->n[a] > 1 ? g->n[a] : 0;
            p->s[a] = g->n[a] > 1 ? g->n[a] : 1;
        } else {
            p->g[a] = g->n[a];
            p->c[a] = g->n[a] / 2;
            p->s[a] = g->n[a];
        }
        p->n *= p->g[a];
    }
}

static int engine_of(const char *variant)
{
    int e = lm_gengine_by_name(variant);
    return e == LM_GE_MULTI ? LM_GE_TUNED : e; /* one device here */
}

extern "C" lm_code lm_gpu_q(const lm_geom *g, const lm_traj *t, const char *variant, lm_cfloat *q_dev,
                            const lm_ctl *ctl, lm_error *err)
{
    const char *who = "Q (gpu)";
    lm_code rc = LM_OK;
    int device = 0;
    const cudaStream_t st = cudaStreamPerThread;
    lm_gsamples s;
    float *hk = NULL, *split = NULL;
    lm_points pq;
    lm_ksum_in kin;
    memset(&kin, 0, sizeof kin);
    const long long m = t->m;
    const int e = engine_of(variant);
    memset(&s, 0, sizeof s);
    if (e < 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: %s is not a GPU variant", who, variant);
    LM_GTRY(lm_gdevice_begin(who, &device, err));
    grid_points(g, 1, &pq);
    hk = (float *)lm_alloc((size_t)m, 4 * sizeof(float), err, "Q samples");
    if (!hk) {
        rc = LM_ERR_NOMEM;
        goto done;
    }
    for (long long i = 0; i < m; i++) {
        const float kx = t->k[3 * i], ky = t->k[3 * i + 1], kz = t->k[3 * i + 2];
        const double ph = lm_geom_phi(g, kx, ky, kz);
        hk[i] = kx;
        hk[m + i] = ky;
        hk[2 * m + i] = kz;
        hk[3 * m + i] = (float)(ph * ph); /* |phi|^2 */
    }
    kin.m = m;
    kin.kx = hk;
    kin.ky = hk + m;
    kin.kz = hk + 2 * m;
    kin.wr = hk + 3 * m;
    kin.wi = NULL;
    LM_GTRY(lm_gmalloc((void **)&split, (size_t)pq.n * 2 * sizeof(float), err, who, "Q"));
    LM_GTRY(lm_gsamples_upload(who, &kin, &s, st, err));
    LM_GTRY(lm_gengine_run((enum lm_gengine)e, variant, &s, &pq, split, split + pq.n, st, ctl, NULL, err));
    k_enc_interleave<<<enc_blocks(pq.n), ENC_T, 0, st>>>(pq.n, split, split + pq.n, (float2 *)q_dev);
    LM_GLAUNCH(who, "interleave");
    LM_GCHECK(cudaStreamSynchronize(st), who, "Q");
done:
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st);
    lm_gsamples_free(&s);
    lm_gfree(split);
    free(hk);
    return rc;
}

/* Progress of one channel within the whole adjoint. */
struct chan_ctl {
    const lm_ctl *parent;
    long long c, nc;
};

static int chan_progress(void *user, double f)
{
    chan_ctl *cc = (chan_ctl *)user;
    return lm_gctl_report(cc->parent, ((double)cc->c + f) / (double)cc->nc);
}

extern "C" lm_code lm_gpu_adjoint(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_cfloat *s_dev,
                                  const char *variant, lm_cfloat *x_dev, const lm_ctl *ctl, lm_error *err)
{
    const char *who = "E^H d (gpu)";
    lm_code rc = LM_OK;
    int device = 0;
    const cudaStream_t st = cudaStreamPerThread;
    lm_gsamples s;
    float *hk = NULL, *split = NULL;
    double *ph = NULL;
    lm_points pf;
    lm_ksum_in kin;
    memset(&kin, 0, sizeof kin);
    const long long m = t->m;
    const int e = engine_of(variant);
    chan_ctl cc = {ctl, 0, k->ncoils};
    lm_ctl sub;
    memset(&s, 0, sizeof s);
    memset(&sub, 0, sizeof sub);
    sub.progress = chan_progress;
    sub.user = &cc;
    if (e < 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: %s is not a GPU variant", who, variant);
    LM_GTRY(lm_gdevice_begin(who, &device, err));
    grid_points(g, 0, &pf);
    hk = (float *)lm_alloc((size_t)m, 5 * sizeof(float), err, "E^H d samples");
    ph = hk ? (double *)lm_alloc((size_t)m, sizeof(double), err, "E^H d samples") : NULL;
    if (!ph) {
        rc = LM_ERR_NOMEM;
        goto done;
    }
    for (long long i = 0; i < m; i++) {
        hk[i] = t->k[3 * i];
        hk[m + i] = t->k[3 * i + 1];
        hk[2 * m + i] = t->k[3 * i + 2];
        ph[i] = lm_geom_phi(g, hk[i], hk[m + i], hk[2 * m + i]);
    }
    kin.m = m;
    kin.kx = hk;
    kin.ky = hk + m;
    kin.kz = hk + 2 * m;
    kin.wr = hk + 3 * m;
    kin.wi = hk + 4 * m;
    LM_GTRY(lm_gmalloc((void **)&split, (size_t)pf.n * 2 * sizeof(float), err, who, "F^H d"));
    for (long long c = 0; c < k->ncoils; c++) {
        const float *d = (const float *)(k->d + c * m);
        for (long long i = 0; i < m; i++) { /* conj(phi) d, phi real */
            hk[3 * m + i] = (float)(ph[i] * d[2 * i]);
            hk[4 * m + i] = (float)(ph[i] * d[2 * i + 1]);
        }
        if (c == 0) {
            LM_GTRY(lm_gsamples_upload(who, &kin, &s, st, err));
        } else { /* coordinates stay; only the weights change */
            LM_GCHECK(cudaMemcpyAsync(s.wr, kin.wr, (size_t)m * sizeof(float), cudaMemcpyHostToDevice, st), who,
                      "upload weights");
            LM_GCHECK(cudaMemcpyAsync(s.wi, kin.wi, (size_t)m * sizeof(float), cudaMemcpyHostToDevice, st), who,
                      "upload weights");
        }
        /* the host weights are rewritten next round */
        LM_GCHECK(cudaStreamSynchronize(st), who, "upload weights");
        cc.c = c;
        LM_GTRY(lm_gengine_run((enum lm_gengine)e, variant, &s, &pf, split, split + pf.n, st, ctl ? &sub : NULL,
                               NULL, err));
        k_enc_combine<<<enc_blocks(pf.n), ENC_T, 0, st>>>(pf.n, split, split + pf.n,
                                                          s_dev ? (const float2 *)(s_dev + c * pf.n) : NULL,
                                                          (float)(1.0 / (double)pf.n), c == 0, (float2 *)x_dev);
        LM_GLAUNCH(who, "coil combination");
    }
    LM_GCHECK(cudaStreamSynchronize(st), who, "E^H d");
done:
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st);
    lm_gsamples_free(&s);
    lm_gfree(split);
    free(ph);
    free(hk);
    return rc;
}
