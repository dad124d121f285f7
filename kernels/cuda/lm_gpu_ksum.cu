/* The GPU engine's host side (samples, the host driver every variant goes
 * through; devices, errors and pools are lm_gpu_runtime.cu's) and the
 * paper's kernels (Stone et al. 2008,
 * section 5): gpu-base, gpu-regalloc, gpu-coalesce, gpu-constmem,
 * gpu-fasttrig, gpu-tuned (with its tuner) and gpu-multi, plus the
 * double-precision reference kernel.
 *
 * Every kernel takes the phase in cycles, t = k . x (+ f t with the
 * off-resonance term), and reduces it to r = t - rint(t) in [-1/2, 1/2]
 * before sin/cos, so hardware sin/cos (accurate on [-pi, pi] only) keeps
 * float-level accuracy.
 *
 * Off-resonance (lm_gsamples.t and .f): each kernel keeps its paper
 * character. The point's f is held where the variant holds its position
 * (global memory in gpu-base, a register from gpu-regalloc on); the sample's
 * t travels with its weight's imaginary part, as one float2 (wi, t) next to
 * the float4 (kx, ky, kz, wr) in gpu-coalesce's global arrays and in the
 * constant-memory tiles of gpu-constmem .. gpu-tuned. One more FMA per
 * pair. Without the term the kernels are the ones the paper describes. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lm_gpu_device.cuh"
#include "lm_trace.h"
#include "lm_gpu_internal.h"

extern "C" {
#include "lm_atomic.h"
}

/* ======================================================================== */
/* arguments and samples                                                     */
/* ======================================================================== */

lm_code lm_gcheck_args(const char *who, const lm_ksum_in *in, const lm_points *pts,
                       const float *out_re, const float *out_im, int grid_only, lm_error *err)
{
    if (!in || !pts)
        return lm_fail(err, LM_ERR_INVALID, "%s: no samples or no points given", who);
    if (!out_re || !out_im)
        return lm_fail(err, LM_ERR_INVALID, "%s: no output arrays given", who);
    if (in->m < 0 || in->m > (int64_t)INT32_MAX)
        return lm_fail(err, LM_ERR_INVALID, "%s: %lld samples (1 .. 2^31-1 per call)", who,
                       (long long)in->m);
    if (in->m > 0 && (!in->kx || !in->ky || !in->kz || !in->wr))
        return lm_fail(err, LM_ERR_INVALID, "%s: samples without coordinates or weights", who);
    if (pts->n <= 0 || pts->n > (int64_t)LM_MAX_ELEMENTS)
        return lm_fail(err, LM_ERR_INVALID, "%s: %lld points to evaluate is invalid", who,
                       (long long)pts->n);
    if (!in->t != !pts->f)
        return lm_fail(err, LM_ERR_INVALID, "%s: sample times and a field map go together (got %s only)", who,
                       in->t ? "times" : "the field map");
    if (pts->x) {
        if (grid_only)
            return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: needs grid points, got explicit positions", who);
        return LM_OK;
    }
    int64_t n = 1;
    for (int a = 0; a < 3; a++) {
        if (pts->g[a] < 1 || pts->s[a] < 1 || pts->g[a] > (int64_t)1 << 30)
            return lm_fail(err, LM_ERR_INVALID, "%s: grid axis %d has size %lld, spacing 1/%lld", who, a,
                           (long long)pts->g[a], (long long)pts->s[a]);
        if (__builtin_mul_overflow(n, pts->g[a], &n))
            return lm_fail(err, LM_ERR_INVALID, "%s: grid size overflows", who);
        if (pts->c[a] < -((int64_t)1 << 30) || pts->c[a] > ((int64_t)1 << 30))
            return lm_fail(err, LM_ERR_INVALID, "%s: grid origin %lld along axis %d is absurd", who,
                           (long long)pts->c[a], a);
    }
    if (n != pts->n)
        return lm_fail(err, LM_ERR_INVALID, "%s: grid %lldx%lldx%lld does not hold n = %lld points", who,
                       (long long)pts->g[0], (long long)pts->g[1], (long long)pts->g[2], (long long)pts->n);
    return LM_OK;
}

void lm_gsamples_free(lm_gsamples *s)
{
    if (s) {
        lm_gfree(s->kx); /* one allocation holds every array */
        lm_gfree(s->f_own);
        memset(s, 0, sizeof *s);
    }
}

lm_code lm_gfmap_upload(const char *who, const lm_points *pts, lm_gsamples *s, cudaStream_t st, lm_error *err)
{
    lm_code rc = LM_OK;
    if (!pts->f)
        return LM_OK;
    LM_GTRY(lm_gmalloc((void **)&s->f_own, (size_t)pts->n * sizeof(float), err, who, "the field map"));
    s->f = s->f_own;
    LM_GCHECK(cudaMemcpyAsync(s->f_own, pts->f, (size_t)pts->n * sizeof(float), cudaMemcpyHostToDevice, st), who,
              "upload field map");
done:
    return rc;
}

lm_code lm_gno_time(const char *who, lm_error *err)
{
    return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: no off-resonance term; use time segmentation or a direct variant",
                   who);
}

lm_code lm_gsamples_upload(const char *who, const lm_ksum_in *in, lm_gsamples *s, cudaStream_t st,
                           lm_error *err)
{
    lm_code rc = LM_OK;
    memset(s, 0, sizeof *s);
    const size_t m = (size_t)in->m;
    const int narr = (in->wi ? 5 : 4) + (in->t ? 1 : 0);
    void *buf = NULL;
    rc = lm_gmalloc(&buf, (m ? m : 1) * narr * sizeof(float), err, who, "the k-space samples");
    if (rc != LM_OK)
        return rc;
    s->m = in->m;
    s->kx = (float *)buf;
    s->ky = s->kx + m;
    s->kz = s->ky + m;
    s->wr = s->kz + m;
    s->wi = in->wi ? s->wr + m : NULL;
    s->t = in->t ? s->wr + (in->wi ? 2 : 1) * m : NULL;
    if (m) {
        if (in->t)
            LM_GCHECK(cudaMemcpyAsync(s->t, in->t, m * sizeof(float), cudaMemcpyHostToDevice, st), who,
                      "upload sample times");
        LM_GCHECK(cudaMemcpyAsync(s->kx, in->kx, m * sizeof(float), cudaMemcpyHostToDevice, st), who, "upload kx");
        LM_GCHECK(cudaMemcpyAsync(s->ky, in->ky, m * sizeof(float), cudaMemcpyHostToDevice, st), who, "upload ky");
        LM_GCHECK(cudaMemcpyAsync(s->kz, in->kz, m * sizeof(float), cudaMemcpyHostToDevice, st), who, "upload kz");
        LM_GCHECK(cudaMemcpyAsync(s->wr, in->wr, m * sizeof(float), cudaMemcpyHostToDevice, st), who, "upload weights");
        if (in->wi)
            LM_GCHECK(cudaMemcpyAsync(s->wi, in->wi, m * sizeof(float), cudaMemcpyHostToDevice, st), who,
                      "upload weights");
    }
done:
    if (rc != LM_OK)
        lm_gsamples_free(s);
    return rc;
}

/* ======================================================================== */
/* pacing: progress and cancellation between launches                       */
/* ======================================================================== */

/* Keeps the host at most LM_PACE launches ahead of the device when someone
 * listens (progress callback, cancel flag or a done counter), so progress
 * is real and a cancel takes effect within a few launches. */
#define LM_PACE 6
struct lm_gpacer {
    cudaEvent_t ev[LM_PACE];
    int nev;
    int64_t issued, total;
    const lm_ctl *ctl;
    volatile int *cancel;
    volatile int64_t *done;
    cudaStream_t st;
    int active;
};

static lm_code pacer_init(lm_gpacer *p, int64_t total, cudaStream_t st, const lm_ctl *ctl,
                          volatile int *cancel, volatile int64_t *done, const char *who, lm_error *err)
{
    memset(p, 0, sizeof *p);
    p->total = total > 0 ? total : 1;
    p->ctl = ctl;
    p->cancel = cancel;
    p->done = done;
    p->st = st;
    p->active = (ctl && ctl->progress) || cancel || done;
    if (!p->active)
        return LM_OK;
    for (; p->nev < LM_PACE; p->nev++) {
        cudaError_t e = cudaEventCreateWithFlags(&p->ev[p->nev], cudaEventDisableTiming);
        if (e != cudaSuccess)
            return lm_gcuda_fail(err, e, who, "progress events");
    }
    if (lm_gctl_report(ctl, 0.0) || (cancel && *cancel))
        return lm_fail(err, LM_ERR_CANCELLED, "%s: cancelled", who);
    return LM_OK;
}

static void pacer_free(lm_gpacer *p)
{
    for (int i = 0; i < p->nev; i++)
        (void)cudaEventDestroy(p->ev[i]);
    p->nev = 0;
}

/* Call after each launch (one unit of total). */
static lm_code pacer_step(lm_gpacer *p, const char *who, lm_error *err)
{
    if (!p->active)
        return LM_OK;
    cudaError_t e = cudaEventRecord(p->ev[p->issued % LM_PACE], p->st);
    if (e != cudaSuccess)
        return lm_gcuda_fail(err, e, who, "progress event");
    p->issued++;
    if (p->issued >= LM_PACE) {
        int64_t wait = p->issued - LM_PACE + 1; /* launches certainly finished after this event */
        e = cudaEventSynchronize(p->ev[(wait - 1) % LM_PACE]);
        if (e != cudaSuccess)
            return lm_gcuda_fail(err, e, who, "kernel");
        if (p->done)
            __atomic_store_n((int64_t *)p->done, wait, __ATOMIC_RELAXED);
        if (lm_gctl_report(p->ctl, (double)wait / (double)p->total) || (p->cancel && *p->cancel))
            return lm_fail(err, LM_ERR_CANCELLED, "%s: cancelled", who);
    }
    return LM_OK;
}

/* ======================================================================== */
/* the paper's kernels                                                       */
/* ======================================================================== */

/* Positions of points [j0, j0 + count) of a grid, in float (FOV fractions). */
__global__ void k_grid_positions(int64_t j0, int64_t count, int64_t g0, int64_t g1, int64_t c0, int64_t c1,
                                 int64_t c2, double is0, double is1, double is2, float *x, float *y, float *z)
{
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    int64_t j = j0 + t;
    int64_t i0 = j % g0, r = j / g0;
    int64_t i1 = r % g1, i2 = r / g1;
    x[t] = (float)((double)(i0 - c0) * is0);
    y[t] = (float)((double)(i1 - c1) * is1);
    z[t] = (float)((double)(i2 - c2) * is2);
}

/* 5.1 gpu-base: one point per thread; the point's position and its running
 * sums stay in global memory (re-read every sample), k data read from five
 * separate global arrays; accurate sinf/cosf (no fast math). */
template <bool CPLX, bool TIME>
__global__ void k_base(int64_t n, int m0, int cnt, int first, const float *x, const float *y, const float *z,
                       const float *f, const float *kx, const float *ky, const float *kz, const float *wr,
                       const float *wi, const float *tm, float *ore, float *oim)
{
    int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n)
        return;
    if (first) {
        ore[j] = 0.0f;
        oim[j] = 0.0f;
    }
    for (int i = m0; i < m0 + cnt; i++) {
        float t = kx[i] * x[j] + ky[i] * y[j] + kz[i] * z[j];
        if (TIME)
            t += f[j] * tm[i]; /* like the position: re-read from global memory */
        float s, c;
        lm_sincos_soft(lm_reduce_cycles(t), &s, &c);
        float a = wr[i], b = CPLX ? wi[i] : 0.0f;
        ore[j] += a * c - b * s;
        oim[j] += a * s + b * c;
    }
}

/* 5.2 gpu-regalloc: the position and the sums live in registers. */
template <bool CPLX, bool TIME>
__global__ void k_regalloc(int64_t n, int m0, int cnt, int first, const float *x, const float *y,
                           const float *z, const float *f, const float *kx, const float *ky, const float *kz,
                           const float *wr, const float *wi, const float *tm, float *ore, float *oim)
{
    int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n)
        return;
    const float px = x[j], py = y[j], pz = z[j], pf = TIME ? f[j] : 0.0f;
    float ar = first ? 0.0f : ore[j], ai = first ? 0.0f : oim[j];
    for (int i = m0; i < m0 + cnt; i++) {
        float t = kx[i] * px + ky[i] * py + kz[i] * pz;
        if (TIME)
            t = fmaf(pf, tm[i], t);
        float s, c;
        lm_sincos_soft(lm_reduce_cycles(t), &s, &c);
        float a = wr[i], b = CPLX ? wi[i] : 0.0f;
        ar += a * c - b * s;
        ai += a * s + b * c;
    }
    ore[j] = ar;
    oim[j] = ai;
}

/* 5.3 gpu-coalesce: k data packed as one float4 (kx, ky, kz, wr) per sample
 * (+ wi): one 16-byte load instead of four separate ones. */
template <bool CPLX, bool TIME>
__global__ void k_coalesce(int64_t n, int m0, int cnt, int first, const float *x, const float *y,
                           const float *z, const float *f, const float4 *__restrict__ kw,
                           const float *__restrict__ wi, const float2 *__restrict__ wt, float *ore, float *oim)
{
    int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n)
        return;
    const float px = x[j], py = y[j], pz = z[j], pf = TIME ? f[j] : 0.0f;
    float ar = first ? 0.0f : ore[j], ai = first ? 0.0f : oim[j];
    for (int i = m0; i < m0 + cnt; i++) {
        float4 k = kw[i];
        float t = k.x * px + k.y * py + k.z * pz;
        float b;
        if (TIME) {
            const float2 q = wt[i]; /* (wi, t): one 8-byte load */
            t = fmaf(pf, q.y, t);
            b = CPLX ? q.x : 0.0f;
        } else {
            b = CPLX ? wi[i] : 0.0f;
        }
        float s, c;
        lm_sincos_soft(lm_reduce_cycles(t), &s, &c);
        ar += k.w * c - b * s;
        ai += k.w * s + b * c;
    }
    ore[j] = ar;
    oim[j] = ai;
}

__global__ void k_pack_kw(int64_t m, const float *kx, const float *ky, const float *kz, const float *wr,
                          float4 *kw)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m)
        kw[i] = make_float4(kx[i], ky[i], kz[i], wr[i]);
}

/* The paper kernels' layout with a complex weight or times: two float4 per
 * sample, (kx, ky, kz, wr) then (wi, t, 0, 0), so a tile is one contiguous
 * run of constant memory (paper_cm_tile says why). */
__global__ void k_pack_kw2(int64_t m, const float *kx, const float *ky, const float *kz, const float *wr,
                           const float *wi, const float *tm, float4 *kw)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) {
        kw[2 * i] = make_float4(kx[i], ky[i], kz[i], wr[i]);
        kw[2 * i + 1] = make_float4(wi ? wi[i] : 0.0f, tm ? tm[i] : 0.0f, 0.0f, 0.0f);
    }
}

/* (wi, t) per sample, wi 0 for real weights: the off-resonance layout. */
__global__ void k_pack_wt(int64_t m, const float *wi, const float *tm, float2 *wt)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m)
        wt[i] = make_float2(wi ? wi[i] : 0.0f, tm[i]);
}

/* 5.4 / 5.5 / 5.6: k data tiled through constant memory (every thread of a
 * warp reads the same sample: the constant cache broadcasts it). */
#define LM_CT_MAX 2048
__constant__ float4 c_kw[LM_CT_MAX];
__constant__ float c_wi[LM_CT_MAX];   /* gpu-tuned's imaginary weights (the paper kernels: k_pack_kw2) */
__constant__ float2 c_wt[LM_CT_MAX]; /* gpu-tuned with the off-resonance term: (wi, t) */

template <bool CPLX, bool FAST, bool TIME>
__global__ void k_constmem(int64_t n, int cnt, int first, const float *x, const float *y, const float *z,
                           const float *f, float *ore, float *oim)
{
    int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n)
        return;
    const float px = x[j], py = y[j], pz = z[j], pf = TIME ? f[j] : 0.0f;
    float ar = first ? 0.0f : ore[j], ai = first ? 0.0f : oim[j];
    for (int i = 0; i < cnt; i++) {
        float4 k;
        float t, b = 0.0f;
        if (CPLX || TIME) { /* k_pack_kw2's pairs */
            k = c_kw[2 * i];
            const float4 e = c_kw[2 * i + 1];
            t = k.x * px + k.y * py + k.z * pz;
            if (TIME)
                t = fmaf(pf, e.y, t);
            if (CPLX)
                b = e.x;
        } else {
            k = c_kw[i];
            t = k.x * px + k.y * py + k.z * pz;
        }
        float s, c;
        if (FAST)
            lm_sincos_fast(lm_reduce_cycles(t), &s, &c);
        else
            lm_sincos_soft(lm_reduce_cycles(t), &s, &c);
        ar += k.w * c - b * s;
        ai += k.w * s + b * c;
    }
    ore[j] = ar;
    oim[j] = ai;
}

/* 5.6 gpu-tuned: constant-memory tiles and hardware trig, with VPT points
 * per thread (independent work for the pipelines) and an unrolled sample
 * loop; threads per block and tile length are run-time parameters. */
template <int VPT, int UNROLL, bool CPLX, bool TIME>
__global__ void k_tuned(int64_t n, int cnt, int first, const float *__restrict__ x, const float *__restrict__ y,
                        const float *__restrict__ z, const float *__restrict__ f, float *__restrict__ ore,
                        float *__restrict__ oim)
{
    const int64_t base = (int64_t)blockIdx.x * blockDim.x * VPT + threadIdx.x;
    float px[VPT], py[VPT], pz[VPT], pf[VPT], ar[VPT], ai[VPT];
#pragma unroll
    for (int v = 0; v < VPT; v++) {
        int64_t j = base + (int64_t)v * blockDim.x;
        bool ok = j < n;
        px[v] = ok ? x[j] : 0.0f;
        py[v] = ok ? y[j] : 0.0f;
        pz[v] = ok ? z[j] : 0.0f;
        pf[v] = ok && TIME ? f[j] : 0.0f;
        ar[v] = ok && !first ? ore[j] : 0.0f;
        ai[v] = ok && !first ? oim[j] : 0.0f;
    }
#pragma unroll UNROLL
    for (int i = 0; i < cnt; i++) {
        float4 k = c_kw[i];
        float b, tm = 0.0f;
        if (TIME) {
            const float2 q = c_wt[i];
            b = CPLX ? q.x : 0.0f;
            tm = q.y;
        } else {
            b = CPLX ? c_wi[i] : 0.0f;
        }
#pragma unroll
        for (int v = 0; v < VPT; v++) {
            float t = k.x * px[v] + k.y * py[v] + k.z * pz[v];
            if (TIME)
                t = fmaf(pf[v], tm, t);
            float s, c;
            lm_sincos_fast(lm_reduce_cycles(t), &s, &c);
            ar[v] += k.w * c - b * s;
            ai[v] += k.w * s + b * c;
        }
    }
#pragma unroll
    for (int v = 0; v < VPT; v++) {
        int64_t j = base + (int64_t)v * blockDim.x;
        if (j < n) {
            ore[j] = ar[v];
            oim[j] = ai[v];
        }
    }
}

typedef void (*lm_tuned_kernel)(int64_t, int, int, const float *, const float *, const float *, const float *,
                                float *, float *);

static lm_tuned_kernel tuned_kernel(int vpt, int unroll, bool cplx, bool time)
{
#define LM_TK(V, U)                                                                                    \
    if (vpt == V && unroll == U)                                                                       \
        return time ? (cplx ? (lm_tuned_kernel)k_tuned<V, U, true, true> : (lm_tuned_kernel)k_tuned<V, U, false, true>) \
                    : (cplx ? (lm_tuned_kernel)k_tuned<V, U, true, false> : (lm_tuned_kernel)k_tuned<V, U, false, false>);
    LM_TK(1, 1) LM_TK(1, 2) LM_TK(1, 4) LM_TK(1, 8)
    LM_TK(2, 1) LM_TK(2, 2) LM_TK(2, 4) LM_TK(2, 8)
    LM_TK(4, 1) LM_TK(4, 2) LM_TK(4, 4) LM_TK(4, 8)
    LM_TK(8, 1) LM_TK(8, 2) LM_TK(8, 4) LM_TK(8, 8)
#undef LM_TK
    return NULL;
}

/* Double-precision reference: positions in double (exact for grids), the
 * phase, sin/cos and the sums in double; samples tiled through shared
 * memory. */
#define LM_DP_TILE 256
template <bool CPLX>
__global__ void k_dp(int64_t n, int m, const float *__restrict__ kx, const float *__restrict__ ky,
                     const float *__restrict__ kz, const float *__restrict__ wr, const float *__restrict__ wi,
                     const float *__restrict__ tm, const float *__restrict__ x, const float *__restrict__ y,
                     const float *__restrict__ z, const float *__restrict__ f, int64_t j0, int64_t g0, int64_t g1,
                     int64_t c0, int64_t c1, int64_t c2, double is0, double is1, double is2, float *ore,
                     float *oim)
{
    __shared__ double s_k[LM_DP_TILE][6];
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    double px = 0, py = 0, pz = 0, pf = 0;
    if (t < n) {
        if (tm)
            pf = f[t]; /* f holds this call's points from j0 on */
        if (x) {
            px = x[t];
            py = y[t];
            pz = z[t];
        } else {
            int64_t j = j0 + t;
            int64_t i0 = j % g0, r = j / g0;
            int64_t i1 = r % g1, i2 = r / g1;
            px = (double)(i0 - c0) * is0;
            py = (double)(i1 - c1) * is1;
            pz = (double)(i2 - c2) * is2;
        }
    }
    double ar = 0, ai = 0;
    for (int base = 0; base < m; base += LM_DP_TILE) {
        const int cnt = min(LM_DP_TILE, m - base);
        __syncthreads();
        for (int q = threadIdx.x; q < cnt; q += blockDim.x) {
            s_k[q][0] = kx[base + q];
            s_k[q][1] = ky[base + q];
            s_k[q][2] = kz[base + q];
            s_k[q][3] = wr[base + q];
            s_k[q][4] = CPLX ? wi[base + q] : 0.0;
            s_k[q][5] = tm ? tm[base + q] : 0.0;
        }
        __syncthreads();
        for (int q = 0; q < cnt; q++) {
            /* f t: a product of floats, exact in double */
            double ph = s_k[q][0] * px + s_k[q][1] * py + s_k[q][2] * pz + pf * s_k[q][5];
            ph -= rint(ph);
            double s, c;
            sincospi(2.0 * ph, &s, &c);
            double a = s_k[q][3], b = s_k[q][4];
            ar += a * c - b * s;
            ai += a * s + b * c;
        }
    }
    if (t < n) {
        ore[t] = (float)ar;
        oim[t] = (float)ai;
    }
}

/* ======================================================================== */
/* gpu-tuned parameters                                                      */
/* ======================================================================== */

/* Shipped defaults, per model (substring of the device name), from sweeps
 * of lm_gpu_tune (docs/gpu-design.md); the last row matches everything. */
struct lm_tune_default {
    const char *model;
    lm_gpu_tune_params p;
};
static const lm_tune_default g_tune_defaults[] = {
    {"H200", {256, 2048, 8, 8}}, /* lm_gpu_tune on an H200, 2026-11-21 (192 candidates) */
    {"H100", {256, 2048, 8, 8}}, /* the H200's SMs: the same parameters (not swept on an H100) */
    {"", {256, 2048, 8, 8}},
};

static int tune_valid(const lm_gpu_tune_params *p)
{
    return p->threads >= 32 && p->threads <= 1024 && p->threads % 32 == 0 && p->tile >= 32 &&
           p->tile <= LM_CT_MAX && (p->unroll == 1 || p->unroll == 2 || p->unroll == 4 || p->unroll == 8) &&
           (p->vpt == 1 || p->vpt == 2 || p->vpt == 4 || p->vpt == 8);
}

extern "C" lm_code lm_gpu_tune_parse(const char *text, lm_gpu_tune_params *p, lm_error *err)
{
    lm_gpu_tune_params q = {0, 0, 0, 0};
    const char *s = text;
    int line = 0;
    while (s && *s) {
        line++;
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        char buf[256];
        if (len >= sizeof buf)
            len = sizeof buf - 1;
        memcpy(buf, s, len);
        buf[len] = '\0';
        s = e ? e + 1 : NULL;
        char key[64];
        long val;
        if (buf[0] == '#' || buf[0] == '\0')
            continue;
        if (sscanf(buf, "%63s %ld", key, &val) != 2)
            continue; /* "model NVIDIA H200" and other text lines */
        if (!strcmp(key, "threads"))
            q.threads = (int)val;
        else if (!strcmp(key, "tile"))
            q.tile = (int)val;
        else if (!strcmp(key, "unroll"))
            q.unroll = (int)val;
        else if (!strcmp(key, "vpt"))
            q.vpt = (int)val;
    }
    if (!tune_valid(&q))
        return lm_fail(err, LM_ERR_FORMAT,
                       "tune file: needs threads (32..1024, multiple of 32), tile (32..%d), unroll (1,2,4,8), vpt (1,2,4,8); got %d %d %d %d",
                       LM_CT_MAX, q.threads, q.tile, q.unroll, q.vpt);
    *p = q;
    return LM_OK;
}

/* $XDG_CACHE_HOME/larmor (default ~/.cache/larmor), created when create. */
static lm_code cache_dir(char *buf, size_t len, int create, lm_error *err)
{
    const char *x = getenv("XDG_CACHE_HOME");
    const char *h = getenv("HOME");
    if (x && x[0])
        snprintf(buf, len, "%s/larmor", x);
    else if (h && h[0])
        snprintf(buf, len, "%s/.cache/larmor", h);
    else
        return lm_fail(err, LM_ERR_IO, "tune: neither XDG_CACHE_HOME nor HOME is set");
    if (!create)
        return LM_OK;
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", buf);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return lm_fail(err, LM_ERR_IO, "%s: cannot create folder: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return lm_fail(err, LM_ERR_IO, "%s: cannot create folder: %s", tmp, strerror(errno));
    return LM_OK;
}

static lm_code tune_path(int device, char *buf, size_t len, char *model, size_t mlen, int create, lm_error *err)
{
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, device);
    if (e != cudaSuccess)
        return lm_gcuda_fail(err, e, "tune", "device properties");
    snprintf(model, mlen, "%s", p.name);
    char dir[700];
    lm_code rc = cache_dir(dir, sizeof dir, create, err);
    if (rc != LM_OK)
        return rc;
    char safe[256];
    size_t k = 0;
    for (const char *c = p.name; *c && k + 1 < sizeof safe; c++)
        safe[k++] = ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                     *c == '-' || *c == '.')
                        ? *c
                        : '_';
    safe[k] = '\0';
    snprintf(buf, len, "%s/tune-%s.txt", dir, safe);
    return LM_OK;
}

static pthread_mutex_t g_tune_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_tune_loaded[LM_GMAX_DEV];
static lm_gpu_tune_params g_tune[LM_GMAX_DEV];
static char g_tune_src[LM_GMAX_DEV][1100];

static lm_code tune_load_locked(int device, lm_error *err)
{
    if (g_tune_loaded[device])
        return LM_OK;
    char path[1024], model[256];
    lm_error e2;
    lm_error_clear(&e2);
    lm_code rc = tune_path(device, path, sizeof path, model, sizeof model, 0, &e2);
    if (rc == LM_ERR_GPU)
        return lm_fail(err, rc, "%s", e2.msg);
    if (rc == LM_OK) {
        FILE *f = fopen(path, "r");
        if (f) {
            char text[2048];
            size_t nr = fread(text, 1, sizeof text - 1, f);
            fclose(f);
            text[nr] = '\0';
            lm_gpu_tune_params p;
            if (lm_gpu_tune_parse(text, &p, &e2) == LM_OK) {
                g_tune[device] = p;
                snprintf(g_tune_src[device], sizeof g_tune_src[device], "%s", path);
                g_tune_loaded[device] = 1;
                return LM_OK;
            }
        }
    }
    for (size_t i = 0; i < sizeof g_tune_defaults / sizeof g_tune_defaults[0]; i++)
        if (strstr(model, g_tune_defaults[i].model)) {
            g_tune[device] = g_tune_defaults[i].p;
            snprintf(g_tune_src[device], sizeof g_tune_src[device], "shipped default%s%s",
                     g_tune_defaults[i].model[0] ? " for " : "", g_tune_defaults[i].model);
            break;
        }
    g_tune_loaded[device] = 1;
    return LM_OK;
}

lm_code lm_gtune_params(int device, lm_gpu_tune_params *p, lm_error *err)
{
    if (device < 0 || device >= LM_GMAX_DEV)
        return lm_fail(err, LM_ERR_INVALID, "tune: device %d is out of range", device);
    pthread_mutex_lock(&g_tune_lock);
    lm_code rc = tune_load_locked(device, err);
    if (rc == LM_OK)
        *p = g_tune[device];
    pthread_mutex_unlock(&g_tune_lock);
    return rc;
}

extern "C" lm_code lm_gpu_tune_get(int device, lm_gpu_tune_params *p, char *source, size_t source_len,
                                   lm_error *err)
{
    lm_error why;
    lm_error_clear(&why);
    if (lm_gpu_available(&why) != LM_OK)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "tune: %s", why.msg);
    if (!lm_gdevice_usable(device))
        return lm_fail(err, LM_ERR_INVALID, "tune: no usable CUDA device %d", device);
    pthread_mutex_lock(&g_tune_lock);
    lm_code rc = tune_load_locked(device, err);
    if (rc == LM_OK) {
        *p = g_tune[device];
        if (source && source_len)
            snprintf(source, source_len, "%s", g_tune_src[device]);
    }
    pthread_mutex_unlock(&g_tune_lock);
    return rc;
}

/* ======================================================================== */
/* the paper engines                                                         */
/* ======================================================================== */

#define LM_GLOBAL_CHUNK 16384 /* samples per launch for the global-memory kernels */

/* Constant-memory tiles: copies tile i and launches kern for it. */
static lm_code constmem_tiles(const char *who, const lm_gsamples *s, const float4 *kw, const float2 *wt, int64_t n,
                              int tile, int threads, int vpt, lm_tuned_kernel tk, int cm_mode, const float *x,
                              const float *y, const float *z, const float *f, float *ore, float *oim,
                              cudaStream_t st, lm_gpacer *pace, lm_error *err)
{
    lm_code rc = LM_OK;
    const bool cplx = s->wi != NULL, time = s->t != NULL;
    const bool pairs = !tk && (cplx || time); /* k_pack_kw2's layout */
    const int per = pairs ? 2 : 1;             /* float4 per sample */
    const int64_t m = s->m;
    const int64_t per_block = (int64_t)threads * vpt;
    const int64_t blocks = (n + per_block - 1) / per_block;
    for (int64_t off = 0; off < m; off += tile) {
        const int cnt = (int)(m - off < tile ? m - off : tile);
        LM_GCHECK(cudaMemcpyToSymbolAsync(c_kw, kw + per * off, (size_t)(per * cnt) * sizeof(float4), 0,
                                          cudaMemcpyDeviceToDevice, st),
                  who, "constant-memory tile");
        if (!pairs && time) /* gpu-tuned's separate (wi, t) and wi arrays */
            LM_GCHECK(cudaMemcpyToSymbolAsync(c_wt, wt + off, (size_t)cnt * sizeof(float2), 0,
                                              cudaMemcpyDeviceToDevice, st),
                      who, "constant-memory tile");
        else if (!pairs && cplx)
            LM_GCHECK(cudaMemcpyToSymbolAsync(c_wi, s->wi + off, (size_t)cnt * sizeof(float), 0,
                                              cudaMemcpyDeviceToDevice, st),
                      who, "constant-memory tile");
        const int first = off == 0;
        const unsigned nb = (unsigned)blocks;
        if (tk) {
            tk<<<nb, threads, 0, st>>>(n, cnt, first, x, y, z, f, ore, oim);
        } else {
#define LM_CM(C, F, T) k_constmem<C, F, T><<<nb, threads, 0, st>>>(n, cnt, first, x, y, z, f, ore, oim)
            if (cm_mode == 0) {
                if (time) {
                    if (cplx) LM_CM(true, false, true); else LM_CM(false, false, true);
                } else {
                    if (cplx) LM_CM(true, false, false); else LM_CM(false, false, false);
                }
            } else {
                if (time) {
                    if (cplx) LM_CM(true, true, true); else LM_CM(false, true, true);
                } else {
                    if (cplx) LM_CM(true, true, false); else LM_CM(false, true, false);
                }
            }
#undef LM_CM
        }
        LM_GLAUNCH(who, "kernel launch");
        LM_GTRY(pacer_step(pace, who, err));
    }
done:
    return rc;
}

/* The constant-memory tile of gpu-constmem and gpu-fasttrig (the paper's
 * sections 5.4-5.5). The paper filled the G80's 64 KB of constant memory
 * (2048 samples); on Hopper the constant cache of an SM holds about 2 KB,
 * and every warp walking a 2048-sample tile at its own pace misses it (ncu:
 * most cycles stalled on constant-cache misses). 128 real-weighted samples
 * (c_kw, 16 bytes each) fill exactly 2 KB: B64 on an H100, fasttrig Q 0.25
 * -> 0.057 s (BENCHMARKS.md). A complex weight or a time term used to sit in
 * a second array (c_wi, c_wt) 32 KB further on, whose lines fall on the same
 * sets of that cache as the start of the tile: the two evicted each other
 * (B128 F^H d on an H200, ncu: 3.7 instructions issued per one executed,
 * 82 % of stalls on constant-cache misses; 166 Gpairs/s against Q's 1,361,
 * at 96 or 128 samples alike). They now sit beside the sample's k
 * (k_pack_kw2: 32 bytes a sample, 64 samples in 2 KB): 3.60 -> 0.74 s.
 * gpu-constmem (accurate sincosf) wants far smaller tiles: on B64 (H200)
 * its F^H d took 0.074 s at 64 samples, 0.060 at 32, 0.026 at 16, and Q
 * 0.186 / 0.128 / 0.134 s, as if sincosf's own code and constants took
 * most of that cache; it gets 16.
 * The tuning's gpu_cm_tile (16 to 2048, 1024 with pairs) sets another size. */
#define LM_CT_CACHE_BYTES 2048
#define LM_CT_ACCURATE 16
static int paper_cm_tile(enum lm_gengine e, bool cplx, bool time)
{
    const int bytes = (int)sizeof(float4) * (cplx || time ? 2 : 1);
    const long t = lm_tuning_get()->gpu_cm_tile;
    if (t >= 16 && t <= LM_CT_MAX * (int)sizeof(float4) / bytes)
        return (int)t;
    return e == LM_GE_CONSTMEM ? LM_CT_ACCURATE : LM_CT_CACHE_BYTES / bytes;
}

static int64_t units_for(enum lm_gengine e, int64_t m, int tile)
{
    if (e == LM_GE_BASE || e == LM_GE_REGALLOC || e == LM_GE_COALESCE)
        return (m + LM_GLOBAL_CHUNK - 1) / LM_GLOBAL_CHUNK;
    if (e == LM_GE_DP)
        return 1;
    return (m + tile - 1) / tile;
}

/* Runs one of the paper engines (or the double reference) on points
 * [j0, j1). With tp non-NULL gpu-tuned uses those parameters (the tuner). */
static lm_code paper_run(enum lm_gengine e, const lm_gpu_tune_params *tp, const char *who, const lm_gsamples *s,
                         const lm_points *pts, int64_t j0, int64_t j1, float *d_re, float *d_im, cudaStream_t st,
                         const lm_ctl *ctl, volatile int *cancel, volatile int64_t *done_units, double *kernel_s,
                         lm_error *err)
{
    lm_code rc = LM_OK;
    const int64_t n = j1 - j0, m = s->m;
    const bool cplx = s->wi != NULL, time = s->t != NULL;
    const float *f = time ? s->f + j0 : NULL; /* this call's points */
    float *pos = NULL, *x = NULL, *y = NULL, *z = NULL;
    float4 *kw = NULL;
    float2 *wt = NULL;
    cudaEvent_t ev0 = NULL, ev1 = NULL;
    int device = 0, locked = 0, tile = 0;
    lm_gpacer pace;
    lm_gpu_tune_params par = {256, LM_CT_MAX, 1, 1};
    lm_tuned_kernel tk = NULL;
    memset(&pace, 0, sizeof pace);

    LM_GCHECK(cudaGetDevice(&device), who, "current device");
    if (e == LM_GE_TUNED || e == LM_GE_MULTI) {
        if (tp)
            par = *tp;
        else
            LM_GTRY(lm_gtune_params(device, &par, err));
        tk = tuned_kernel(par.vpt, par.unroll, cplx, time);
        if (!tk || !tune_valid(&par)) {
            rc = lm_fail(err, LM_ERR_INVALID, "%s: tuning parameters %d/%d/%d/%d are invalid", who, par.threads,
                         par.tile, par.unroll, par.vpt);
            goto done;
        }
    }
    if (time && !s->f) {
        rc = lm_fail(err, LM_ERR_INVALID, "%s: sample times without a field map on the device", who);
        goto done;
    }
    if (m == 0) {
        LM_GCHECK(cudaMemsetAsync(d_re, 0, (size_t)n * sizeof(float), st), who, "clear");
        LM_GCHECK(cudaMemsetAsync(d_im, 0, (size_t)n * sizeof(float), st), who, "clear");
        goto done;
    }

    /* Positions: explicit ones are uploaded, grid ones made on the device
     * (the double reference computes grid positions itself, in double). */
    if (!(e == LM_GE_DP && !pts->x)) {
        LM_GTRY(lm_gmalloc((void **)&pos, (size_t)n * 3 * sizeof(float), err, who, "the point positions"));
        x = pos;
        y = pos + n;
        z = pos + 2 * n;
        if (pts->x) {
            LM_GCHECK(cudaMemcpyAsync(x, pts->x + j0, (size_t)n * sizeof(float), cudaMemcpyHostToDevice, st), who,
                      "upload positions");
            if (pts->y)
                LM_GCHECK(cudaMemcpyAsync(y, pts->y + j0, (size_t)n * sizeof(float), cudaMemcpyHostToDevice, st),
                          who, "upload positions");
            else
                LM_GCHECK(cudaMemsetAsync(y, 0, (size_t)n * sizeof(float), st), who, "positions");
            if (pts->z)
                LM_GCHECK(cudaMemcpyAsync(z, pts->z + j0, (size_t)n * sizeof(float), cudaMemcpyHostToDevice, st),
                          who, "upload positions");
            else
                LM_GCHECK(cudaMemsetAsync(z, 0, (size_t)n * sizeof(float), st), who, "positions");
        } else {
            k_grid_positions<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(
                j0, n, pts->g[0], pts->g[1], pts->c[0], pts->c[1], pts->c[2], 1.0 / (double)pts->s[0],
                1.0 / (double)pts->s[1], 1.0 / (double)pts->s[2], x, y, z);
            LM_GLAUNCH(who, "positions");
        }
    }
    if ((e == LM_GE_CONSTMEM || e == LM_GE_FASTTRIG) && (cplx || time)) {
        LM_GTRY(lm_gmalloc((void **)&kw, (size_t)m * 2 * sizeof(float4), err, who, "the packed samples"));
        k_pack_kw2<<<(unsigned)((m + 255) / 256), 256, 0, st>>>(m, s->kx, s->ky, s->kz, s->wr, s->wi, s->t, kw);
        LM_GLAUNCH(who, "pack samples");
    } else if (e == LM_GE_COALESCE || e == LM_GE_CONSTMEM || e == LM_GE_FASTTRIG || e == LM_GE_TUNED ||
               e == LM_GE_MULTI) {
        LM_GTRY(lm_gmalloc((void **)&kw, (size_t)m * sizeof(float4), err, who, "the packed samples"));
        k_pack_kw<<<(unsigned)((m + 255) / 256), 256, 0, st>>>(m, s->kx, s->ky, s->kz, s->wr, kw);
        LM_GLAUNCH(who, "pack samples");
        if (time) {
            LM_GTRY(lm_gmalloc((void **)&wt, (size_t)m * sizeof(float2), err, who, "the packed samples"));
            k_pack_wt<<<(unsigned)((m + 255) / 256), 256, 0, st>>>(m, s->wi, s->t, wt);
            LM_GLAUNCH(who, "pack samples");
        }
    }
    if (e == LM_GE_CONSTMEM || e == LM_GE_FASTTRIG || e == LM_GE_TUNED || e == LM_GE_MULTI) {
        lm_gdevice_lock(device); /* constant memory is per device, not per call */
        locked = 1;
    }
    LM_GCHECK(cudaEventCreate(&ev0), who, "events");
    LM_GCHECK(cudaEventCreate(&ev1), who, "events");
    tile = e == LM_GE_TUNED || e == LM_GE_MULTI ? par.tile : paper_cm_tile(e, cplx, time);
    LM_GTRY(pacer_init(&pace, units_for(e, m, tile), st, ctl, cancel, done_units, who, err));
    LM_GCHECK(cudaEventRecord(ev0, st), who, "events");
    switch (e) {
    case LM_GE_BASE:
    case LM_GE_REGALLOC:
    case LM_GE_COALESCE: {
        const unsigned blocks = (unsigned)((n + 255) / 256);
        for (int64_t off = 0; off < m; off += LM_GLOBAL_CHUNK) {
            const int cnt = (int)(m - off < LM_GLOBAL_CHUNK ? m - off : LM_GLOBAL_CHUNK);
            const int first = off == 0;
            const int o = (int)off;
#define LM_GK(K, C, T) K<C, T><<<blocks, 256, 0, st>>>
#define LM_GARGS n, o, cnt, first, x, y, z, f, s->kx, s->ky, s->kz, s->wr, s->wi, s->t, d_re, d_im
#define LM_CARGS n, o, cnt, first, x, y, z, f, kw, s->wi, wt, d_re, d_im
            if (e == LM_GE_BASE) {
                if (time) {
                    if (cplx) LM_GK(k_base, true, true)(LM_GARGS); else LM_GK(k_base, false, true)(LM_GARGS);
                } else {
                    if (cplx) LM_GK(k_base, true, false)(LM_GARGS); else LM_GK(k_base, false, false)(LM_GARGS);
                }
            } else if (e == LM_GE_REGALLOC) {
                if (time) {
                    if (cplx) LM_GK(k_regalloc, true, true)(LM_GARGS); else LM_GK(k_regalloc, false, true)(LM_GARGS);
                } else {
                    if (cplx) LM_GK(k_regalloc, true, false)(LM_GARGS); else LM_GK(k_regalloc, false, false)(LM_GARGS);
                }
            } else {
                if (time) {
                    if (cplx) LM_GK(k_coalesce, true, true)(LM_CARGS); else LM_GK(k_coalesce, false, true)(LM_CARGS);
                } else {
                    if (cplx) LM_GK(k_coalesce, true, false)(LM_CARGS); else LM_GK(k_coalesce, false, false)(LM_CARGS);
                }
            }
#undef LM_GK
#undef LM_GARGS
#undef LM_CARGS
            LM_GLAUNCH(who, "kernel launch");
            LM_GTRY(pacer_step(&pace, who, err));
        }
        break;
    }
    case LM_GE_CONSTMEM:
    case LM_GE_FASTTRIG:
        LM_GTRY(constmem_tiles(who, s, kw, wt, n, tile, 256, 1, NULL, e == LM_GE_FASTTRIG, x, y, z, f,
                               d_re, d_im, st, &pace, err));
        break;
    case LM_GE_TUNED:
    case LM_GE_MULTI:
        LM_GTRY(constmem_tiles(who, s, kw, wt, n, par.tile, par.threads, par.vpt, tk, 0, x, y, z, f, d_re, d_im,
                               st, &pace, err));
        break;
    case LM_GE_DP: {
        const unsigned blocks = (unsigned)((n + 127) / 128);
        if (cplx)
            k_dp<true><<<blocks, 128, 0, st>>>(n, (int)m, s->kx, s->ky, s->kz, s->wr, s->wi, s->t, x, y, z, f, j0,
                                               pts->g[0], pts->g[1], pts->c[0], pts->c[1], pts->c[2],
                                               1.0 / (double)pts->s[0], 1.0 / (double)pts->s[1],
                                               1.0 / (double)pts->s[2], d_re, d_im);
        else
            k_dp<false><<<blocks, 128, 0, st>>>(n, (int)m, s->kx, s->ky, s->kz, s->wr, s->wi, s->t, x, y, z, f, j0,
                                                pts->g[0], pts->g[1], pts->c[0], pts->c[1], pts->c[2],
                                                1.0 / (double)pts->s[0], 1.0 / (double)pts->s[1],
                                                1.0 / (double)pts->s[2], d_re, d_im);
        LM_GLAUNCH(who, "kernel launch");
        LM_GTRY(pacer_step(&pace, who, err));
        break;
    }
    default:
        rc = lm_fail(err, LM_ERR_INTERNAL, "%s: not a paper engine", who);
        goto done;
    }
    LM_GCHECK(cudaEventRecord(ev1, st), who, "events");
    LM_GCHECK(cudaEventSynchronize(ev1), who, "kernel");
    if (kernel_s) {
        float ms = 0;
        LM_GCHECK(cudaEventElapsedTime(&ms, ev0, ev1), who, "events");
        *kernel_s = ms * 1e-3;
    }
    if (done_units)
        __atomic_store_n((int64_t *)done_units, pace.total, __ATOMIC_RELAXED);
done:
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st); /* nothing may still use the buffers below */
    if (locked)
        lm_gdevice_unlock(device);
    pacer_free(&pace);
    if (ev0)
        (void)cudaEventDestroy(ev0);
    if (ev1)
        (void)cudaEventDestroy(ev1);
    lm_gfree(wt);
    lm_gfree(kw);
    lm_gfree(pos);
    return rc;
}

lm_code lm_gpaper_run(enum lm_gengine e, const char *who, const lm_gsamples *s, const lm_points *pts, int64_t j0,
                      int64_t j1, float *d_re, float *d_im, cudaStream_t st, const lm_ctl *ctl, volatile int *cancel,
                      volatile int64_t *done_units, double *kernel_s, lm_error *err)
{
    return paper_run(e, NULL, who, s, pts, j0, j1, d_re, d_im, st, ctl, cancel, done_units, kernel_s, err);
}

lm_code lm_gengine_run(enum lm_gengine e, const char *who, const lm_gsamples *s, const lm_points *pts, float *d_re,
                       float *d_im, cudaStream_t st, const lm_ctl *ctl, double *kernel_s, lm_error *err)
{
    if (e == LM_GE_NUFFT) { /* sorts once for every set */
        if (s->t)
            return lm_gno_time(who, err);
        return lm_gnufft_run(who, s, pts, d_re, d_im, st, ctl, kernel_s, err);
    }
    if ((e == LM_GE_TUNED || e == LM_GE_MULTI) && s->nsets > 1) /* one sin/cos per pair for every set */
        return lm_gsets_run(who, s, pts, d_re, d_im, st, ctl, kernel_s, err);
    const int64_t nsets = s->nsets > 1 ? s->nsets : 1;
    lm_code rc = LM_OK;
    double total = 0;
    for (int64_t c = 0; c < nsets && rc == LM_OK; c++) {
        lm_gsamples one = *s;
        one.nsets = 1;
        one.wr = s->wr + c * s->m;
        one.wi = s->wi ? s->wi + c * s->m : NULL;
        double ks = 0;
        float *re = d_re + c * pts->n, *im = d_im + c * pts->n;
        rc = e == LM_GE_PHASOR ? lm_gphasor_run(who, &one, pts, re, im, st, ctl, &ks, err)
                               : paper_run(e, NULL, who, &one, pts, 0, pts->n, re, im, st, ctl, NULL, NULL, &ks, err);
        total += ks;
    }
    if (kernel_s)
        *kernel_s = total;
    return rc;
}

int lm_gengine_by_name(const char *name)
{
    static const struct {
        const char *name;
        enum lm_gengine e;
    } tab[] = {{"gpu-base", LM_GE_BASE},         {"gpu-regalloc", LM_GE_REGALLOC}, {"gpu-coalesce", LM_GE_COALESCE},
               {"gpu-constmem", LM_GE_CONSTMEM}, {"gpu-fasttrig", LM_GE_FASTTRIG}, {"gpu-tuned", LM_GE_TUNED},
               {"gpu-multi", LM_GE_MULTI},       {"gpu-nufft", LM_GE_NUFFT},       {"gpu-phasor", LM_GE_PHASOR},
               {"gpu-dp", LM_GE_DP}};
    for (size_t i = 0; name && i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(tab[i].name, name))
            return (int)tab[i].e;
    return -1;
}

/* ======================================================================== */
/* the host driver of every variant                                          */
/* ======================================================================== */

lm_code lm_gksum_host(enum lm_gengine e, const char *who, const lm_ksum_in *in, const lm_points *pts, float *out_re,
                      float *out_im, const lm_ctl *ctl, lm_error *err)
{
    const double t0 = lm_gnow();
    lm_code rc = LM_OK;
    int device = 0;
    lm_gsamples s;
    float *d = NULL;
    double ks = 0, tup = 0, tdown = 0, t1;
    cudaStream_t st = cudaStreamPerThread;
    memset(&s, 0, sizeof s);
    lm_gstats_stages_clear();
    LM_GTRY(lm_gcheck_args(who, in, pts, out_re, out_im, e == LM_GE_NUFFT, err));
    LM_GTRY(lm_gdevice_begin(who, &device, err));
    if (e == LM_GE_MULTI) {
        LM_GTRY(lm_gmulti_run(in, pts, out_re, out_im, ctl, &ks, err));
        lm_gstats_set(lm_gnow() - t0, ks, 0, 0);
        return LM_OK;
    }
    LM_GTRY(lm_gmalloc((void **)&d, (size_t)pts->n * 2 * sizeof(float), err, who, "the output"));
    t1 = lm_gnow();
    LM_GTRY(lm_gsamples_upload(who, in, &s, st, err));
    LM_GTRY(lm_gfmap_upload(who, pts, &s, st, err));
    LM_GCHECK(cudaStreamSynchronize(st), who, "upload");
    tup = lm_gnow() - t1;
    LM_GTRY(lm_gengine_run(e, who, &s, pts, d, d + pts->n, st, ctl, &ks, err));
    t1 = lm_gnow();
    LM_GCHECK(cudaMemcpyAsync(out_re, d, (size_t)pts->n * sizeof(float), cudaMemcpyDeviceToHost, st), who,
              "download");
    LM_GCHECK(cudaMemcpyAsync(out_im, d + pts->n, (size_t)pts->n * sizeof(float), cudaMemcpyDeviceToHost, st), who,
              "download");
    LM_GCHECK(cudaStreamSynchronize(st), who, "download");
    tdown = lm_gnow() - t1;
    (void)lm_gctl_report(ctl, 1.0); /* complete: a late cancel changes nothing */
done:
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st);
    lm_gfree(d);
    lm_gsamples_free(&s);
    if (rc == LM_OK)
        lm_gstats_set(lm_gnow() - t0, ks, tup, tdown);
    return rc;
}

#define LM_GVARIANT(fn, eng, name)                                                                           \
    extern "C" lm_code fn(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im,         \
                          const lm_ctl *ctl, lm_error *err)                                                  \
    {                                                                                                        \
        return lm_gksum_host(eng, name, in, pts, out_re, out_im, ctl, err);                                  \
    }
LM_GVARIANT(lm_ksum_gpu_base, LM_GE_BASE, "gpu-base")
LM_GVARIANT(lm_ksum_gpu_regalloc, LM_GE_REGALLOC, "gpu-regalloc")
LM_GVARIANT(lm_ksum_gpu_coalesce, LM_GE_COALESCE, "gpu-coalesce")
LM_GVARIANT(lm_ksum_gpu_constmem, LM_GE_CONSTMEM, "gpu-constmem")
LM_GVARIANT(lm_ksum_gpu_fasttrig, LM_GE_FASTTRIG, "gpu-fasttrig")
LM_GVARIANT(lm_ksum_gpu_tuned, LM_GE_TUNED, "gpu-tuned")
LM_GVARIANT(lm_ksum_gpu_multi, LM_GE_MULTI, "gpu-multi")
LM_GVARIANT(lm_ksum_gpu_nufft, LM_GE_NUFFT, "gpu-nufft")
LM_GVARIANT(lm_ksum_gpu_phasor, LM_GE_PHASOR, "gpu-phasor")
LM_GVARIANT(lm_ksum_gpu_dp, LM_GE_DP, "gpu-dp")

/* ======================================================================== */
/* the tuner                                                                 */
/* ======================================================================== */

__global__ void k_tune_fill(int64_t n, uint32_t seed, float lo, float hi, float *v)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    uint32_t h = (uint32_t)i * 2654435761u ^ seed;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    v[i] = lo + (hi - lo) * (float)(h >> 8) * (1.0f / 16777216.0f);
}

extern "C" lm_code lm_gpu_tune(int device, lm_gpu_tune_params *best, char *path_out, size_t path_len,
                               const lm_ctl *ctl, lm_error *err)
{
    const char *who = "gpu-tune";
    lm_code rc = LM_OK;
    /* 2^21 points (B128's voxel count: fills the device as a real problem
     * does; a smaller set under-occupies it and flatters the constant
     * cache) x 4096 samples, 8.6 G pairs per run: ~6 ms when tuned */
    const int64_t n = 1 << 21, m = 4096;
    lm_gsamples s;
    float *pos = NULL, *out = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    lm_gpu_tune_params cand, bestp = {0, 0, 0, 0};
    double best_t = 1e30;
    int prev = 0, have_prev = 0, idx = 0;
    char path[1024], model[256];
    static const int threads_c[] = {64, 128, 256, 512};
    static const int tile_c[] = {512, 1024, 2048};
    static const int unroll_c[] = {1, 2, 4, 8};
    static const int vpt_c[] = {1, 2, 4, 8};
    const int total = 4 * 3 * 4 * 4;
    double all_t[4 * 3 * 4 * 4];
    cudaStream_t st = cudaStreamPerThread;
    lm_atomic af;
    memset(&af, 0, sizeof af);
    memset(&s, 0, sizeof s);

    lm_error why;
    lm_error_clear(&why);
    if (lm_gpu_available(&why) != LM_OK)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: %s", who, why.msg);
    if (!lm_gdevice_usable(device))
        return lm_fail(err, LM_ERR_INVALID, "%s: no usable CUDA device %d", who, device);
    LM_GCHECK(cudaGetDevice(&prev), who, "current device");
    have_prev = 1;
    LM_GCHECK(cudaSetDevice(device), who, "select device");
    LM_GTRY(tune_path(device, path, sizeof path, model, sizeof model, 1, err));

    /* Synthetic problem: random points in the FOV, samples in a 128 matrix's
     * k-space, complex weights (F^H d). */
    LM_GTRY(lm_gmalloc((void **)&s.kx, (size_t)m * 5 * sizeof(float), err, who, "samples"));
    s.m = m;
    s.ky = s.kx + m;
    s.kz = s.ky + m;
    s.wr = s.kz + m;
    s.wi = s.wr + m;
    LM_GTRY(lm_gmalloc((void **)&pos, (size_t)n * 3 * sizeof(float), err, who, "points"));
    LM_GTRY(lm_gmalloc((void **)&out, (size_t)n * 2 * sizeof(float), err, who, "output"));
    for (int a = 0; a < 5; a++) {
        k_tune_fill<<<(unsigned)((m + 255) / 256), 256, 0, st>>>(m, 17u + a, a < 3 ? -64.f : -1.f,
                                                                   a < 3 ? 64.f : 1.f, s.kx + a * m);
        LM_GLAUNCH(who, "fill");
    }
    for (int a = 0; a < 3; a++) {
        k_tune_fill<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(n, 101u + a, -0.5f, 0.5f, pos + a * n);
        LM_GLAUNCH(who, "fill");
    }
    LM_GCHECK(cudaEventCreate(&e0), who, "events");
    LM_GCHECK(cudaEventCreate(&e1), who, "events");
    LM_GCHECK(cudaStreamSynchronize(st), who, "fill");

    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 4; c++)
                for (int d = 0; d < 4; d++, idx++) {
                    cand.threads = threads_c[a];
                    cand.tile = tile_c[b];
                    cand.unroll = unroll_c[c];
                    cand.vpt = vpt_c[d];
                    lm_tuned_kernel tk = tuned_kernel(cand.vpt, cand.unroll, true, false);
                    float4 *kw = NULL;
                    double times[3];
                    LM_GTRY(lm_gmalloc((void **)&kw, (size_t)m * sizeof(float4), err, who, "packed samples"));
                    k_pack_kw<<<(unsigned)((m + 255) / 256), 256, 0, st>>>(m, s.kx, s.ky, s.kz, s.wr, kw);
                    lm_code lrc = LM_OK;
                    if (cudaGetLastError() != cudaSuccess)
                        lrc = LM_ERR_GPU;
                    lm_gdevice_lock(device);
                    for (int rep = 0; rep < 4 && lrc == LM_OK; rep++) {
                        lm_gpacer none;
                        memset(&none, 0, sizeof none);
                        float ms = 0;
                        if (cudaEventRecord(e0, st) != cudaSuccess) {
                            lrc = LM_ERR_GPU;
                            break;
                        }
                        lrc = constmem_tiles(who, &s, kw, NULL, n, cand.tile, cand.threads, cand.vpt, tk, 0, pos,
                                             pos + n, pos + 2 * n, NULL, out, out + n, st, &none, err);
                        if (lrc == LM_OK && (cudaEventRecord(e1, st) != cudaSuccess ||
                                             cudaEventSynchronize(e1) != cudaSuccess ||
                                             cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess))
                            lrc = lm_fail(err, LM_ERR_GPU, "%s: timing failed", who);
                        if (rep > 0)
                            times[rep - 1] = ms * 1e-3;
                    }
                    lm_gdevice_unlock(device);
                    lm_gfree(kw);
                    if (lrc != LM_OK) {
                        rc = lrc;
                        goto done;
                    }
                    /* median of three */
                    double t = times[0] < times[1] ? (times[1] < times[2] ? times[1] : (times[0] < times[2] ? times[2] : times[0]))
                                                   : (times[0] < times[2] ? times[0] : (times[1] < times[2] ? times[2] : times[1]));
                    all_t[idx] = t;
                    if (t < best_t) {
                        best_t = t;
                        bestp = cand;
                    }
                    if (lm_gctl_report(ctl, (double)(idx + 1) / total)) {
                        rc = lm_fail(err, LM_ERR_CANCELLED, "%s: cancelled", who);
                        goto done;
                    }
                }

    LM_GTRY(lm_atomic_begin(&af, path, 1, err));
    fprintf(af.f,
            "# larmor gpu-tuned parameters (lm_gpu_tune): fastest of %d candidates,\n"
            "# %lld points x %lld samples, complex weights, median of 3 runs\n"
            "model %s\nthreads %d\ntile %d\nunroll %d\nvpt %d\n# time_s %.6f  gpairs_per_s %.1f\n",
            total, (long long)n, (long long)m, model, bestp.threads, bestp.tile, bestp.unroll, bestp.vpt, best_t,
            (double)n * (double)m / best_t * 1e-9);
    fprintf(af.f, "# every candidate: threads tile unroll vpt seconds\n");
    for (int i = 0; i < total; i++)
        fprintf(af.f, "#  %4d %5d %d %d %.6f\n", threads_c[i / 48], tile_c[(i / 16) % 3], unroll_c[(i / 4) % 4],
                vpt_c[i % 4], all_t[i]);
    LM_GTRY(lm_atomic_commit(&af, err));
    pthread_mutex_lock(&g_tune_lock);
    g_tune[device] = bestp;
    snprintf(g_tune_src[device], sizeof g_tune_src[device], "%s", path);
    g_tune_loaded[device] = 1;
    pthread_mutex_unlock(&g_tune_lock);
    if (best)
        *best = bestp;
    if (path_out && path_len)
        snprintf(path_out, path_len, "%s", path);
done:
    lm_atomic_abort(&af);
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st);
    if (e0)
        (void)cudaEventDestroy(e0);
    if (e1)
        (void)cudaEventDestroy(e1);
    lm_gfree(out);
    lm_gfree(pos);
    lm_gfree(s.kx);
    if (have_prev)
        (void)cudaSetDevice(prev);
    return rc;
}
