/* The encoding operator's sums on the device (lm_gpu.h): Q into device
 * memory, and E^H d = (1/N) sum_c conj(s_c) F^H d_c accumulated on the
 * device, with the samples' coordinates uploaded once and each channel's
 * weights in turn. Nothing but the samples (and their times, with a field
 * map) goes up; nothing comes down. */
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

/* x (+)= conj(c) conj(s) (re + i im) / N; s NULL: s = 1; c NULL: c = 1
 * (c: a time segment's phases exp(-i 2 pi f tau_l)) */
__global__ void k_enc_combine(long long n, const float *__restrict__ re, const float *__restrict__ im,
                              const float2 *__restrict__ s, const float2 *__restrict__ c, float invn, int first,
                              float2 *__restrict__ x)
{
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += (long long)gridDim.x * blockDim.x) {
        const float2 f = make_float2(re[j] * invn, im[j] * invn);
        float2 v = f;
        if (s) {
            const float2 a = s[j];
            v = make_float2(a.x * f.x + a.y * f.y, a.x * f.y - a.y * f.x);
        }
        if (c) {
            const float2 a = c[j], u = v;
            v = make_float2(a.x * u.x + a.y * u.y, a.x * u.y - a.y * u.x);
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

/* Weight sets of Q (time segmentation's blocks): the coordinates go up
 * once, all the weights in one copy, then groups of sets through the
 * engine, each set interleaved into its place in q_dev. */
#define ENC_Q_GROUP 4
extern "C" lm_code lm_gpu_q_sets(const lm_geom *g, const lm_ksum_in *in, const char *variant, lm_cfloat *q_dev,
                                 const lm_ctl *ctl, lm_error *err)
{
    const char *who = "Q blocks (gpu)";
    lm_code rc = LM_OK;
    int device = 0;
    const cudaStream_t st = cudaStreamPerThread;
    lm_gsamples s;
    float *wbuf = NULL, *split = NULL;
    lm_points pq;
    lm_ksum_in kin = *in;
    const long long m = in->m, ns = in->nsets > 1 ? in->nsets : 1;
    const int e = engine_of(variant);
    memset(&s, 0, sizeof s);
    if (e < 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: %s is not a GPU variant", who, variant);
    if (!in->wi)
        return lm_fail(err, LM_ERR_INVALID, "%s: the block weights are complex", who);
    LM_GTRY(lm_gdevice_begin(who, &device, err));
    grid_points(g, 1, &pq);
    kin.nsets = 1;
    kin.t = NULL;
    LM_GTRY(lm_gsamples_upload(who, &kin, &s, st, err));
    LM_GTRY(lm_gmalloc((void **)&wbuf, (size_t)(m * ns) * 2 * sizeof(float), err, who, "the weights"));
    LM_GCHECK(cudaMemcpyAsync(wbuf, in->wr, (size_t)(m * ns) * sizeof(float), cudaMemcpyHostToDevice, st), who,
              "upload weights");
    LM_GCHECK(cudaMemcpyAsync(wbuf + m * ns, in->wi, (size_t)(m * ns) * sizeof(float), cudaMemcpyHostToDevice, st),
              who, "upload weights");
    LM_GTRY(lm_gmalloc((void **)&split, (size_t)(pq.n * ENC_Q_GROUP) * 2 * sizeof(float), err, who, "Q"));
    for (long long s0 = 0; s0 < ns; s0 += ENC_Q_GROUP) {
        const long long ng = ns - s0 < ENC_Q_GROUP ? ns - s0 : ENC_Q_GROUP;
        lm_gsamples gs = s;
        gs.wr = wbuf + s0 * m;
        gs.wi = wbuf + ns * m + s0 * m;
        gs.nsets = ng;
        LM_GTRY(lm_gengine_run((enum lm_gengine)e, variant, &gs, &pq, split, split + ng * pq.n, st, NULL, NULL, err));
        for (long long c = 0; c < ng; c++) {
            k_enc_interleave<<<enc_blocks(pq.n), ENC_T, 0, st>>>(pq.n, split + c * pq.n, split + (ng + c) * pq.n,
                                                                 (float2 *)q_dev + (s0 + c) * pq.n);
            LM_GLAUNCH(who, "interleave");
        }
        if (lm_gctl_report(ctl, (double)(s0 + ng) / (double)ns)) {
            rc = lm_fail(err, LM_ERR_CANCELLED, "%s: cancelled", who);
            goto done;
        }
    }
    LM_GCHECK(cudaStreamSynchronize(st), who, "Q");
done:
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st);
    lm_gsamples_free(&s);
    lm_gfree(split);
    lm_gfree(wbuf);
    return rc;
}

/* phi(k) of the voxel basis (lm_geom_phi) at every sample, or its square
 * (Q's weights), on the device: the host loop cost ~10 ms on B128. */
static __device__ double enc_sinc(double t)
{
    return t == 0.0 ? 1.0 : sinpi(t) / (M_PI * t);
}

__global__ void k_enc_phi(long long m, const float *__restrict__ kx, const float *__restrict__ ky,
                          const float *__restrict__ kz, double n0, double n1, double n2, int dirac, int squared,
                          float *__restrict__ out)
{
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < m; i += (long long)gridDim.x * blockDim.x) {
        double p = 1.0;
        if (!dirac) {
            p = enc_sinc((double)kx[i] / n0) * enc_sinc((double)ky[i] / n1);
            if (n2 > 1.0)
                p *= enc_sinc((double)kz[i] / n2);
        }
        out[i] = (float)(squared ? p * p : p);
    }
}

/* Weights conj(phi) d of g channels (phi real), split re/im: wr[c m + j]. */
__global__ void k_enc_weights(long long m, long long g, const float *__restrict__ phi, const float2 *__restrict__ d,
                              float *__restrict__ wr, float *__restrict__ wi)
{
    const long long total = m * g;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        const float p = phi[i % m];
        const float2 v = d[i];
        wr[i] = p * v.x;
        wi[i] = p * v.y;
    }
}

/* Outputs of one engine call stay under this (split re/im, all channels of
 * a group): B128 with 32 coils goes in one group. */
#define ENC_GROUP_BYTES ((long long)1 << 30)

/* The trajectory's coordinates (and, with times, the sample times) up to
 * the device once, and phi(k) made there into s->wr (the weights' place). */
static lm_code enc_samples_up(const char *who, const lm_geom *g, const lm_traj *t, int with_times, lm_gsamples *s,
                              cudaStream_t st, lm_error *err)
{
    lm_code rc = LM_OK;
    const long long m = t->m;
    lm_ksum_in kin;
    memset(&kin, 0, sizeof kin);
    float *hk = (float *)lm_alloc((size_t)(m ? m : 1), 3 * sizeof(float), err, "the samples");
    if (!hk)
        return LM_ERR_NOMEM;
    for (long long i = 0; i < m; i++) {
        hk[i] = t->k[3 * i];
        hk[m + i] = t->k[3 * i + 1];
        hk[2 * m + i] = t->k[3 * i + 2];
    }
    kin.m = m;
    kin.kx = hk;
    kin.ky = hk + m;
    kin.kz = hk + 2 * m;
    kin.wr = hk; /* a placeholder: phi is made on the device below, kept as s->wr */
    kin.t = with_times ? t->t : NULL;
    LM_GTRY(lm_gsamples_upload(who, &kin, s, st, err));
    k_enc_phi<<<enc_blocks(m), ENC_T, 0, st>>>(m, s->kx, s->ky, s->kz, (double)g->n[0], (double)g->n[1],
                                               (double)g->n[2], g->basis == LM_BASIS_DIRAC, 0, s->wr);
    LM_GLAUNCH(who, "phi");
done:
    free(hk);
    return rc;
}

extern "C" lm_code lm_gpu_adjoint(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_cfloat *s_dev,
                                  const float *f_dev, const char *variant, lm_cfloat *x_dev, const lm_ctl *ctl,
                                  lm_error *err)
{
    const char *who = "E^H d (gpu)";
    lm_code rc = LM_OK;
    int device = 0;
    const cudaStream_t st = cudaStreamPerThread;
    lm_gsamples s;
    float *split = NULL, *wbuf = NULL;
    float2 *dbuf = NULL;
    lm_points pf;
    const long long m = t->m, nc = k->ncoils;
    const int e = engine_of(variant);
    long long group = 1;
    memset(&s, 0, sizeof s);
    if (e < 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: %s is not a GPU variant", who, variant);
    if (f_dev && !t->t)
        return lm_fail(err, LM_ERR_INVALID, "%s: a field map needs the trajectory's sample times", who);
    if (f_dev && e == LM_GE_NUFFT)
        return lm_gno_time(variant, err);
    LM_GTRY(lm_gdevice_begin(who, &device, err));
    grid_points(g, 0, &pf);
    group = ENC_GROUP_BYTES / (8 * (long long)pf.n);
    group = group < 1 ? 1 : group > nc ? nc : group;
    /* The NUFFT spreads 4 channels together anyway: groups of 4 let each
     * group's upload overlap the previous group's work on the device. */
    if (e == LM_GE_NUFFT && group > 4)
        group = 4;
    group = (nc + (nc + group - 1) / group - 1) / ((nc + group - 1) / group); /* even groups */
    /* coordinates, times and phi go up once; the channels' data in one copy */
    LM_GTRY(enc_samples_up(who, g, t, f_dev != NULL, &s, st, err));
    s.f = f_dev;
    LM_GTRY(lm_gmalloc((void **)&dbuf, (size_t)(m * nc) * sizeof(float2), err, who, "the k-space"));
    LM_GTRY(lm_gmalloc((void **)&wbuf, (size_t)(m * group) * 2 * sizeof(float), err, who, "the weights"));
    LM_GTRY(lm_gmalloc((void **)&split, (size_t)(pf.n * group) * 2 * sizeof(float), err, who, "F^H d"));
    for (long long c0 = 0; c0 < nc; c0 += group) {
        const long long ng = nc - c0 < group ? nc - c0 : group;
        LM_GCHECK(cudaMemcpyAsync(dbuf + c0 * m, k->d + c0 * m, (size_t)(m * ng) * sizeof(float2),
                                  cudaMemcpyHostToDevice, st),
                  who, "upload k-space");
        k_enc_weights<<<enc_blocks(m * ng), ENC_T, 0, st>>>(m, ng, s.wr, dbuf + c0 * m, wbuf, wbuf + ng * m);
        LM_GLAUNCH(who, "weights");
        lm_gsamples gs = s;
        gs.wr = wbuf;
        gs.wi = wbuf + ng * m;
        gs.nsets = ng;
        LM_GTRY(lm_gengine_run((enum lm_gengine)e, variant, &gs, &pf, split, split + ng * pf.n, st, NULL, NULL, err));
        for (long long c = 0; c < ng; c++) {
            k_enc_combine<<<enc_blocks(pf.n), ENC_T, 0, st>>>(pf.n, split + c * pf.n, split + (ng + c) * pf.n,
                                                              s_dev ? (const float2 *)(s_dev + (c0 + c) * pf.n) : NULL, NULL,
                                                              (float)(1.0 / (double)pf.n), c0 + c == 0,
                                                              (float2 *)x_dev);
            LM_GLAUNCH(who, "coil combination");
        }
        if (lm_gctl_report(ctl, (double)(c0 + ng) / (double)nc)) {
            rc = lm_fail(err, LM_ERR_CANCELLED, "%s: cancelled", who);
            goto done;
        }
    }
    LM_GCHECK(cudaStreamSynchronize(st), who, "E^H d");
done:
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st);
    lm_gsamples_free(&s);
    lm_gfree(split);
    lm_gfree(wbuf);
    lm_gfree(dbuf);
    return rc;
}

/* d = phi / N times d (m x nsets, interleaved) */
__global__ void k_enc_scale_phi(long long m, long long nsets, const float *__restrict__ phi, float invn,
                                float2 *__restrict__ d)
{
    for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < m * nsets;
         q += (long long)gridDim.x * blockDim.x) {
        const float f = phi[q % m] * invn;
        d[q] = make_float2(d[q].x * f, d[q].y * f);
    }
}

extern "C" lm_code lm_gpu_forward(const lm_geom *g, const lm_traj *t, const lm_cfloat *x_dev, const lm_cfloat *s_dev,
                                  long long ncoils, const char *variant, lm_cfloat *d_host, lm_error *err)
{
    const char *who = "E x (gpu)";
    lm_code rc = LM_OK;
    int device = 0;
    const cudaStream_t st = cudaStreamPerThread;
    lm_gsamples s;
    lm_points pf;
    float2 *dbuf = NULL;
    const long long m = t->m, nc = s_dev ? ncoils : 1;
    memset(&s, 0, sizeof s);
    if (engine_of(variant) != LM_GE_NUFFT)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: %s has no forward transform on the GPU (gpu-nufft has)", who,
                       variant);
    LM_GTRY(lm_gdevice_begin(who, &device, err));
    grid_points(g, 0, &pf);
    LM_GTRY(enc_samples_up(who, g, t, 0, &s, st, err));
    LM_GTRY(lm_gmalloc((void **)&dbuf, (size_t)(m * nc) * sizeof(float2), err, who, "the k-space"));
    LM_GTRY(lm_gnufft_type2(who, &s, &pf, (const float2 *)x_dev, (const float2 *)s_dev, nc, dbuf, st, err));
    k_enc_scale_phi<<<enc_blocks(m * nc), ENC_T, 0, st>>>(m, nc, s.wr, (float)(1.0 / (double)pf.n), dbuf);
    LM_GLAUNCH(who, "phi");
    LM_GCHECK(cudaMemcpyAsync(d_host, dbuf, (size_t)(m * nc) * sizeof(float2), cudaMemcpyDeviceToHost, st), who,
              "download");
    LM_GCHECK(cudaStreamSynchronize(st), who, "E x");
done:
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st);
    lm_gsamples_free(&s);
    lm_gfree(dbuf);
    return rc;
}

/* ---- gpu-nufft's session: the trajectory, plan and buffers made once ---- */

struct lm_gpu_nufft {
    lm_points pf;           /* the image grid */
    long long m, ncap;      /* samples; channels the buffers hold */
    long long group;        /* channels spread together (<= 4) */
    int device;
    lm_gsamples s;          /* coordinates, and phi(k) in s.wr */
    lm_gnufft_plan *plan;
    float2 *dbuf;           /* k-space of ncap channels */
    float *split;           /* F^H d of a group, split re/im */
    float2 *dseg;           /* segmented E^H d: conj(b_l) d of a group (made on first use) */
};

/* out[c m + j] = conj(b[j]) d[c m + j], c < ng: a group's data for one
 * time segment */
__global__ void k_enc_seg_data(long long m, long long ng, const float2 *__restrict__ b, const float2 *__restrict__ d,
                               float2 *__restrict__ out)
{
    for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < m * ng;
         q += (long long)gridDim.x * blockDim.x) {
        const float2 a = b[q % m], v = d[q];
        out[q] = make_float2(a.x * v.x + a.y * v.y, a.x * v.y - a.y * v.x);
    }
}

/* c[l n + j] = exp(-i 2 pi f[j] tau[l]), the argument in double as the
 * host's lm_timeseg_phases (|f tau| of a few cycles keeps float phases
 * within an ulp of it) */
__global__ void k_enc_seg_phases(long long n, int L, const float *__restrict__ f, const double *__restrict__ tau,
                                 float2 *__restrict__ c)
{
    for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < n * L;
         q += (long long)gridDim.x * blockDim.x) {
        const long long l = q / n, j = q - l * n;
        double sn, cs;
        sincospi(2.0 * (double)f[j] * tau[l], &sn, &cs);
        c[q] = make_float2((float)cs, (float)-sn);
    }
}

extern "C" lm_code lm_gpu_segment_phases(const float *f_host, int64_t n, const double *tau, int L, lm_cfloat *c_dev,
                                         lm_error *err)
{
    const char *who = "segment phases (gpu)";
    lm_code rc = LM_OK;
    int device = 0;
    const cudaStream_t st = cudaStreamPerThread;
    float *fd = NULL;
    double *td = NULL;
    if (n < 1 || L < 1)
        return lm_fail(err, LM_ERR_INVALID, "%s: %lld voxels, %d segments", who, (long long)n, L);
    LM_GTRY(lm_gdevice_begin(who, &device, err));
    LM_GTRY(lm_gmalloc((void **)&fd, (size_t)n * sizeof(float), err, who, "the field map"));
    LM_GTRY(lm_gmalloc((void **)&td, (size_t)L * sizeof(double), err, who, "the segment centres"));
    LM_GCHECK(cudaMemcpyAsync(fd, f_host, (size_t)n * sizeof(float), cudaMemcpyHostToDevice, st), who, "upload");
    LM_GCHECK(cudaMemcpyAsync(td, tau, (size_t)L * sizeof(double), cudaMemcpyHostToDevice, st), who, "upload");
    k_enc_seg_phases<<<enc_blocks(n * L), ENC_T, 0, st>>>(n, L, fd, td, (float2 *)c_dev);
    LM_GLAUNCH(who, "phases");
    LM_GCHECK(cudaStreamSynchronize(st), who, "phases");
done:
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st);
    lm_gfree(fd);
    lm_gfree(td);
    return rc;
}

extern "C" void lm_gpu_nufft_free(lm_gpu_nufft *p)
{
    if (!p)
        return;
    int prev = 0;
    const int have = cudaGetDevice(&prev) == cudaSuccess;
    if (have && prev != p->device)
        (void)cudaSetDevice(p->device);
    lm_gnufft_plan_free(p->plan);
    lm_gsamples_free(&p->s);
    lm_gfree(p->dbuf);
    lm_gfree(p->split);
    lm_gfree(p->dseg);
    if (have && prev != p->device)
        (void)cudaSetDevice(prev);
    (void)cudaGetLastError();
    free(p);
}

extern "C" lm_code lm_gpu_nufft_new(const lm_geom *g, const lm_traj *t, int64_t ncoils, lm_gpu_nufft **out,
                                    lm_error *err)
{
    const char *who = "gpu-nufft plan";
    lm_code rc = LM_OK;
    const cudaStream_t st = cudaStreamPerThread;
    *out = NULL;
    lm_gpu_nufft *p = (lm_gpu_nufft *)calloc(1, sizeof *p);
    if (!p)
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", who);
    LM_GTRY(lm_gdevice_begin(who, &p->device, err));
    grid_points(g, 0, &p->pf);
    p->m = t->m;
    p->ncap = ncoils > 1 ? ncoils : 1;
    p->group = p->ncap < 4 ? p->ncap : 4;
    LM_GTRY(enc_samples_up(who, g, t, 0, &p->s, st, err));
    LM_GTRY(lm_gnufft_plan_new(who, &p->s, &p->pf, (int)p->group, st, &p->plan, err));
    LM_GTRY(lm_gmalloc((void **)&p->dbuf, (size_t)((p->m ? p->m : 1) * p->ncap) * sizeof(float2), err, who,
                       "the k-space"));
    LM_GTRY(lm_gmalloc((void **)&p->split, (size_t)(p->pf.n * p->group) * 2 * sizeof(float), err, who, "F^H d"));
    LM_GCHECK(cudaStreamSynchronize(st), who, "plan");
    *out = p;
    return LM_OK;
done:
    (void)cudaStreamSynchronize(st);
    lm_gpu_nufft_free(p);
    return rc;
}

/* E^H d through the session; L > 0: time-segmented, with b_dev (L x m) and
 * c_dev (L x N) on the device. */
static lm_code nufft_adjoint(lm_gpu_nufft *p, const lm_kdata *k, const lm_cfloat *s_dev, int L, const lm_cfloat *b_dev,
                             const lm_cfloat *c_dev, lm_cfloat *x_dev, const lm_ctl *ctl, lm_error *err)
{
    const char *who = "E^H d (gpu-nufft)";
    lm_code rc = LM_OK;
    int device = 0;
    const cudaStream_t st = cudaStreamPerThread;
    const long long m = p->m, nc = k->ncoils, n = p->pf.n, nl = L > 0 ? L : 1;
    if (k->m != m || nc < 1 || nc > p->ncap)
        return lm_fail(err, LM_ERR_INVALID, "%s: %lld samples x %lld channels, the plan holds %lld x %lld", who,
                       (long long)k->m, nc, m, p->ncap);
    LM_GTRY(lm_gdevice_begin(who, &device, err));
    if (device != p->device)
        return lm_fail(err, LM_ERR_INVALID, "%s: the plan is on device %d, the thread on %d", who, p->device, device);
    if (L > 0 && !p->dseg)
        LM_GTRY(lm_gmalloc((void **)&p->dseg, (size_t)(m * p->group) * sizeof(float2), err, who,
                           "the segment's k-space"));
    LM_GCHECK(cudaMemcpyAsync(p->dbuf, k->d, (size_t)(m * nc) * sizeof(float2), cudaMemcpyHostToDevice, st), who,
              "upload k-space");
    for (long long l = 0; l < nl; l++)
        for (long long c0 = 0; c0 < nc; c0 += p->group) {
            const long long ng = nc - c0 < p->group ? nc - c0 : p->group;
            const float2 *dg = p->dbuf + c0 * m;
            if (L > 0) {
                k_enc_seg_data<<<enc_blocks(m * ng), ENC_T, 0, st>>>(m, ng, (const float2 *)(b_dev + l * m), dg,
                                                                      p->dseg);
                LM_GLAUNCH(who, "segment data");
                dg = p->dseg;
            }
            const lm_gnufft_wts w = {NULL, NULL, dg, p->s.wr}; /* conj(phi) d, phi real */
            LM_GTRY(lm_gnufft_exec1(p->plan, who, &w, ng, p->split, p->split + ng * n, NULL, st, NULL, err));
            for (long long c = 0; c < ng; c++) {
                k_enc_combine<<<enc_blocks(n), ENC_T, 0, st>>>(
                    n, p->split + c * n, p->split + (ng + c) * n,
                    s_dev ? (const float2 *)(s_dev + (c0 + c) * n) : NULL,
                    L > 0 ? (const float2 *)(c_dev + l * n) : NULL, (float)(1.0 / (double)n), l == 0 && c0 + c == 0,
                    (float2 *)x_dev);
                LM_GLAUNCH(who, "coil combination");
            }
            if (lm_gctl_report(ctl, (double)(l * nc + c0 + ng) / (double)(nl * nc))) {
                rc = lm_fail(err, LM_ERR_CANCELLED, "%s: cancelled", who);
                goto done;
            }
        }
    LM_GCHECK(cudaStreamSynchronize(st), who, "E^H d");
done:
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st);
    return rc;
}

extern "C" lm_code lm_gpu_nufft_adjoint(lm_gpu_nufft *p, const lm_kdata *k, const lm_cfloat *s_dev, lm_cfloat *x_dev,
                                        const lm_ctl *ctl, lm_error *err)
{
    return nufft_adjoint(p, k, s_dev, 0, NULL, NULL, x_dev, ctl, err);
}

extern "C" lm_code lm_gpu_nufft_adjoint_segmented(lm_gpu_nufft *p, const lm_kdata *k, const lm_cfloat *s_dev, int L,
                                                  const lm_cfloat *b_dev, const lm_cfloat *c_dev, lm_cfloat *x_dev,
                                                  const lm_ctl *ctl, lm_error *err)
{
    if (L < 1 || !b_dev || !c_dev)
        return lm_fail(err, LM_ERR_INVALID, "E^H d (gpu-nufft): %d segments without interpolators or phases", L);
    return nufft_adjoint(p, k, s_dev, L, b_dev, c_dev, x_dev, ctl, err);
}

extern "C" lm_code lm_gpu_nufft_forward(lm_gpu_nufft *p, const lm_cfloat *x_dev, const lm_cfloat *s_dev,
                                        long long ncoils, lm_cfloat *d_host, lm_error *err)
{
    const char *who = "E x (gpu-nufft)";
    lm_code rc = LM_OK;
    int device = 0;
    const cudaStream_t st = cudaStreamPerThread;
    const long long m = p->m, nc = s_dev ? ncoils : 1;
    if (nc < 1 || nc > p->ncap)
        return lm_fail(err, LM_ERR_INVALID, "%s: %lld channels, the plan holds %lld", who, nc, p->ncap);
    LM_GTRY(lm_gdevice_begin(who, &device, err));
    if (device != p->device)
        return lm_fail(err, LM_ERR_INVALID, "%s: the plan is on device %d, the thread on %d", who, p->device, device);
    LM_GTRY(lm_gnufft_exec2(p->plan, who, (const float2 *)x_dev, (const float2 *)s_dev, nc, p->dbuf, st, err));
    k_enc_scale_phi<<<enc_blocks(m * nc), ENC_T, 0, st>>>(m, nc, p->s.wr, (float)(1.0 / (double)p->pf.n), p->dbuf);
    LM_GLAUNCH(who, "phi");
    LM_GCHECK(cudaMemcpyAsync(d_host, p->dbuf, (size_t)(m * nc) * sizeof(float2), cudaMemcpyDeviceToHost, st), who,
              "download");
    LM_GCHECK(cudaStreamSynchronize(st), who, "E x");
done:
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st);
    return rc;
}

extern "C" lm_code lm_gpu_nufft_type1(lm_gpu_nufft *p, const lm_cfloat *w_dev, lm_cfloat *out_dev, lm_error *err)
{
    lm_code rc = LM_OK;
    const lm_gnufft_wts w = {NULL, NULL, (const float2 *)w_dev, NULL};
    LM_GTRY(lm_gnufft_exec1(p->plan, "type-1 NUFFT (gpu)", &w, 1, NULL, NULL, (float2 *)out_dev, cudaStreamPerThread,
                            NULL, err));
done:
    return rc;
}

extern "C" lm_code lm_gpu_nufft_type2(lm_gpu_nufft *p, const lm_cfloat *x_dev, lm_cfloat *d_dev, lm_error *err)
{
    return lm_gnufft_exec2(p->plan, "type-2 NUFFT (gpu)", (const float2 *)x_dev, NULL, 1, (float2 *)d_dev,
                           cudaStreamPerThread, err);
}

extern "C" lm_code lm_gpu_nufft_wait(lm_gpu_nufft *p, lm_error *err)
{
    (void)p;
    const cudaError_t e = cudaStreamSynchronize(cudaStreamPerThread);
    return e == cudaSuccess ? LM_OK : lm_gcuda_fail(err, e, "gpu-nufft", "wait");
}

extern "C" void lm_gpu_nufft_timing(lm_gpu_nufft *p, int on)
{
    lm_gnufft_plan_timing(p->plan, on);
}

extern "C" int lm_gpu_nufft_stages(lm_gpu_nufft *p, const char **names, double *secs, int max)
{
    return lm_gnufft_plan_stages(p->plan, names, secs, max);
}

extern "C" double lm_gpu_nufft_plan_s(const lm_gpu_nufft *p)
{
    return lm_gnufft_plan_make_s(p->plan);
}
