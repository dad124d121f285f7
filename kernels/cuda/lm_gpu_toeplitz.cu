/* F^H F on the GPU (lm_gpu_toeplitz, lm_gpu.h), the twin of the CPU
 * operator in kernels/lm_toeplitz.c with its math and scaling:
 *
 *   y = (1/N^2) crop(IFFT(FFT(Qs) . FFT(zero-pad(x)))),
 *
 * Qs the raw Q shifted by n per padded axis with the unused difference -n
 * zeroed, so Qs is Hermitian and its FFT real (kept as real, 1/(N^2 P)
 * folded in). FFT(Q) is made once per operator, its cuFFT plans live with
 * it. The padded transforms skip the zero padding (forward: 2D transforms
 * of the planes that hold data, then the third axis; inverse mirrored),
 * 2/3 of a full 3D transform; LARMOR_GPU_CG_FFT=0 selects one full 3D plan
 * instead. The solvers that use it are in recon/ (one source for both
 * devices). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_gpu_device.cuh"
#include "lm_gpu_internal.h"

#define LM_TP_T 256

/* Shifted, Hermitian-completed Q into buf (P values). */
__global__ void k_cg_shift_q(long long P, long long p0, long long p1, long long p2, long long n0, long long n1,
                             long long n2, const float2 *__restrict__ qi, const float *__restrict__ qre,
                             const float *__restrict__ qim, float2 *__restrict__ buf)
{
    const long long d = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (d >= P)
        return;
    const long long i = d % p0, r = d / p0, j = r % p1, k = r / p1;
    const long long sh0 = p0 > 1 ? n0 : 0, sh1 = p1 > 1 ? n1 : 0, sh2 = p2 > 1 ? n2 : 0;
    const bool used = (p0 <= 1 || i != n0) && (p1 <= 1 || j != n1) && (p2 <= 1 || k != n2);
    float2 v = make_float2(0.0f, 0.0f);
    if (used) {
        const size_t s = (size_t)((i + sh0) % p0) + (size_t)p0 * ((size_t)((j + sh1) % p1) + (size_t)p1 * (size_t)((k + sh2) % p2));
        v = qi ? qi[s] : make_float2(qre[s], qim[s]);
    }
    buf[d] = v;
}

__global__ void k_cg_qhat(long long P, const float2 *__restrict__ buf, double scale, float *__restrict__ qhat)
{
    const long long d = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (d < P)
        qhat[d] = (float)((double)buf[d].x * scale);
}

/* Zero-padded copy of x on the 2x grid (all P values written). */
__global__ void k_tp_pad(long long P, long long p0, long long p1, long long n0, long long n1, long long n2,
                         const float2 *__restrict__ x, float2 *__restrict__ buf)
{
    const long long d = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (d >= P)
        return;
    const long long i = d % p0, q = d / p0, j = q % p1, k = q / p1;
    float2 v = make_float2(0.0f, 0.0f);
    if (i < n0 && j < n1 && k < n2)
        v = x[(size_t)i + (size_t)n0 * ((size_t)j + (size_t)n1 * (size_t)k)];
    buf[d] = v;
}

__global__ void k_cg_mul(long long P, float2 *__restrict__ buf, const float *__restrict__ qhat)
{
    const long long d = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (d < P) {
        const float q = qhat[d];
        float2 v = buf[d];
        buf[d] = make_float2(v.x * q, v.y * q);
    }
}

/* y = crop(buf) */
__global__ void k_tp_crop(long long N, long long n0, long long n1, long long p0, long long p1,
                          const float2 *__restrict__ buf, float2 *__restrict__ y)
{
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < N; v += (long long)gridDim.x * blockDim.x) {
        const long long i = v % n0, q = v / n0, j = q % n1, k = q / n1;
        y[v] = buf[(size_t)i + (size_t)p0 * ((size_t)j + (size_t)p1 * (size_t)k)];
    }
}

/* ---- cuFFT plans (owned by each operator) ---- */

struct cg_plans {
    long long n[3];
    int mode;      /* 0 full 3D/2D plan, 1 pruned */
    int nplans;
    cufftHandle h[3]; /* mode 0: h[0]; mode 1: h[0] data planes, h[1] last axis */
    cufftHandle full; /* full transform of the padded grid (FFT(Q)); h[0] in mode 0 */
    int have_full;    /* full is its own plan (mode 1) */
    int valid;
};
static int g_fft_mode = -1;

extern "C" void lm_gpu_cg_set_fft_mode(int mode)
{
    g_fft_mode = mode;
}

static int fft_mode(void)
{
    if (g_fft_mode >= 0)
        return g_fft_mode;
    const char *e = getenv("LARMOR_GPU_CG_FFT");
    if (e && e[0])
        return atoi(e) <= 0 ? 0 : atoi(e) == 1 ? 1 : 2;
    return 2;
}

static void plans_clear(cg_plans *c)
{
    for (int i = 0; i < c->nplans; i++)
        (void)cufftDestroy(c->h[i]);
    if (c->have_full)
        (void)cufftDestroy(c->full);
    memset(c, 0, sizeof *c);
}

/* Makes (or reuses) the plans for padded grid p of data extent n. */
static lm_code plans_get(cg_plans *c, const long long n[3], const long long p[3], int want_mode, const char *who,
                         lm_error *err)
{
    lm_code rc = LM_OK;
    int mode = want_mode;
    /* pruning needs x and y padded; 3D also z */
    if (!(p[0] > 1 && p[1] > 1))
        mode = 0;
    if (c->valid && c->n[0] == n[0] && c->n[1] == n[1] && c->n[2] == n[2] && c->mode == mode)
        return LM_OK;
    plans_clear(c);
    {
        int rank = 0, dims[3];
        for (int a = 2; a >= 0; a--)
            if (p[a] > 1)
                dims[rank++] = (int)p[a];
        if (rank == 0) {
            dims[0] = 1;
            rank = 1;
        }
        LM_GFFT(cufftPlanMany(&c->full, rank, dims, NULL, 1, 0, NULL, 1, 0, CUFFT_C2C, 1), who, "FFT plan");
        c->have_full = 1;
    }
    if (mode == 0) {
        c->h[0] = c->full; /* one plan serves both */
        c->have_full = 0;
        c->nplans = 1;
    } else if (p[2] > 1) {
        int d2[2] = {(int)p[1], (int)p[0]};
        LM_GFFT(cufftPlanMany(&c->h[0], 2, d2, d2, 1, (int)(p[0] * p[1]), d2, 1, (int)(p[0] * p[1]), CUFFT_C2C,
                              (int)n[2]),
                who, "FFT plan");
        c->nplans = 1;
        int d1[1] = {(int)p[2]};
        LM_GFFT(cufftPlanMany(&c->h[1], 1, d1, d1, (int)(p[0] * p[1]), 1, d1, (int)(p[0] * p[1]), 1, CUFFT_C2C,
                              (int)(p[0] * p[1])),
                who, "FFT plan");
        c->nplans = 2;
    } else {
        int dx[1] = {(int)p[0]};
        LM_GFFT(cufftPlanMany(&c->h[0], 1, dx, dx, 1, (int)p[0], dx, 1, (int)p[0], CUFFT_C2C, (int)n[1]), who,
                "FFT plan");
        c->nplans = 1;
        int dy[1] = {(int)p[1]};
        LM_GFFT(cufftPlanMany(&c->h[1], 1, dy, dy, (int)p[0], 1, dy, (int)p[0], 1, CUFFT_C2C, (int)p[0]), who,
                "FFT plan");
        c->nplans = 2;
    }
    c->mode = mode;
    c->n[0] = n[0];
    c->n[1] = n[1];
    c->n[2] = n[2];
    c->valid = 1;
done:
    if (rc != LM_OK)
        plans_clear(c);
    return rc;
}

static lm_code fft_fwd(cg_plans *c, float2 *buf, cudaStream_t st, const char *who, lm_error *err)
{
    lm_code rc = LM_OK;
    for (int i = 0; i < c->nplans; i++) {
        LM_GFFT(cufftSetStream(c->h[i], st), who, "FFT stream");
        LM_GFFT(cufftExecC2C(c->h[i], (cufftComplex *)buf, (cufftComplex *)buf, CUFFT_FORWARD), who, "FFT");
    }
done:
    return rc;
}

static lm_code fft_inv(cg_plans *c, float2 *buf, cudaStream_t st, const char *who, lm_error *err)
{
    lm_code rc = LM_OK;
    for (int i = c->nplans - 1; i >= 0; i--) {
        LM_GFFT(cufftSetStream(c->h[i], st), who, "FFT stream");
        LM_GFFT(cufftExecC2C(c->h[i], (cufftComplex *)buf, (cufftComplex *)buf, CUFFT_INVERSE), who, "FFT");
    }
done:
    return rc;
}

/* ---- the third axis fused: forward FFT, times FFT(Q), inverse FFT ----
 *
 * One block owns 32 neighbouring x-lines of one y row: it reads their n2
 * data planes (the padded half is zero and never stored), transforms along
 * z in shared memory (radix 2: decimation in time from bit-reversed order,
 * then decimation in frequency back into it), multiplies by FFT(Q) and
 * writes back only the n2 planes the crop keeps. Against three cuFFT passes
 * over the whole 2x grid this moves a quarter of the bytes: the buffer
 * holds n2 planes, not 2 n2. Lengths: powers of two, 16 to 512. */
#define TP_LINES 32
#define TP_ZT 256

static __device__ __forceinline__ int tp_bitrev(int v, int bits)
{
    return (int)(__brev((unsigned)v) >> (32 - bits));
}

__global__ void __launch_bounds__(TP_ZT) k_tp_zfused(int P2, int bits, long long p0, long long p1, long long n2,
                                                     float2 *__restrict__ buf, const float *__restrict__ qhat,
                                                     const float2 *__restrict__ tw)
{
    extern __shared__ float2 zs[]; /* P2 rows of TP_LINES + 1 (no bank conflicts) */
    const int S = TP_LINES + 1;
    const int lane = threadIdx.x & 31, row = threadIdx.x >> 5, rows = TP_ZT / 32;
    const long long x = (long long)blockIdx.x * TP_LINES + lane, y = blockIdx.y;
    const bool in = x < p0;
    const long long plane = p0 * p1;
    for (int z = row; z < P2; z += rows) {
        float2 v = make_float2(0.0f, 0.0f);
        if (in && z < n2)
            v = buf[x + p0 * y + plane * z];
        zs[tp_bitrev(z, bits) * S + lane] = v;
    }
    __syncthreads();
    const int nb = (P2 / 2) * TP_LINES;
    for (int len = 2; len <= P2; len <<= 1) { /* forward, DIT: natural order out */
        const int half = len >> 1, step = P2 / len;
        for (int b = threadIdx.x; b < nb; b += TP_ZT) {
            const int l = b & 31, k = b >> 5, j = k & (half - 1);
            const int i0 = (k - j) * 2 + j, i1 = i0 + half;
            const float2 w = tw[j * step], a = zs[i0 * S + l], c = zs[i1 * S + l];
            const float2 t = make_float2(w.x * c.x - w.y * c.y, w.x * c.y + w.y * c.x);
            zs[i0 * S + l] = make_float2(a.x + t.x, a.y + t.y);
            zs[i1 * S + l] = make_float2(a.x - t.x, a.y - t.y);
        }
        __syncthreads();
    }
    for (int z = row; z < P2; z += rows) {
        const float q = in ? qhat[x + p0 * y + plane * z] : 0.0f;
        float2 v = zs[z * S + lane];
        zs[z * S + lane] = make_float2(v.x * q, v.y * q);
    }
    __syncthreads();
    for (int len = P2; len >= 2; len >>= 1) { /* inverse, DIF: bit-reversed order out */
        const int half = len >> 1, step = P2 / len;
        for (int b = threadIdx.x; b < nb; b += TP_ZT) {
            const int l = b & 31, k = b >> 5, j = k & (half - 1);
            const int i0 = (k - j) * 2 + j, i1 = i0 + half;
            const float2 w = tw[j * step], a = zs[i0 * S + l], c = zs[i1 * S + l];
            const float2 d = make_float2(a.x - c.x, a.y - c.y);
            zs[i0 * S + l] = make_float2(a.x + c.x, a.y + c.y);
            zs[i1 * S + l] = make_float2(w.x * d.x + w.y * d.y, w.x * d.y - w.y * d.x); /* times conj(w) */
        }
        __syncthreads();
    }
    for (int z = row; z < n2; z += rows)
        if (in)
            buf[x + p0 * y + plane * z] = zs[tp_bitrev(z, bits) * S + lane];
}

/* Zero-padded x and y of the n2 data planes (the fused pass pads z). */
__global__ void k_tp_pad_planes(long long total, long long p0, long long p1, long long n0, long long n1,
                                const float2 *__restrict__ x, float2 *__restrict__ buf)
{
    const long long d = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (d >= total)
        return;
    const long long i = d % p0, q = d / p0, j = q % p1, k = q / p1;
    float2 v = make_float2(0.0f, 0.0f);
    if (i < n0 && j < n1)
        v = x[(size_t)i + (size_t)n0 * ((size_t)j + (size_t)n1 * (size_t)k)];
    buf[d] = v;
}

/* ---- the operator ---- */

struct lm_gpu_toeplitz {
    long long n[3], p[3], N, P;
    cg_plans plans;
    int fused;         /* the z axis in k_tp_zfused (mode 2) */
    int zbits;         /* log2 p[2] */
    float2 *tw;        /* p[2]/2 twiddles exp(-2 pi i k / p[2]) */
    float2 *buf;       /* the padded grid */
    float *qhat;       /* FFT(Qs) / (N^2 P), real */
    double diag;
    int device;
};

extern "C" void lm_gpu_toeplitz_free(lm_gpu_toeplitz *t)
{
    if (!t)
        return;
    plans_clear(&t->plans);
    lm_gfree(t->tw);
    lm_gfree(t->buf);
    lm_gfree(t->qhat);
    free(t);
}

extern "C" double lm_gpu_toeplitz_diag(const lm_gpu_toeplitz *t)
{
    return t->diag;
}

extern "C" lm_code lm_gpu_toeplitz_new(const int64_t n_[3], const lm_cfloat *q_host, const lm_cfloat *q_dev,
                                       lm_gpu_toeplitz **out, lm_error *err)
{
    const char *who = "toeplitz (gpu)";
    lm_code rc = LM_OK;
    const cudaStream_t st = cudaStreamPerThread;
    float2 *stage = NULL;
    lm_gpu_toeplitz *t = NULL;
    *out = NULL;
    if (!q_host && !q_dev)
        return lm_fail(err, LM_ERR_INVALID, "%s: Q is missing", who);
    t = (lm_gpu_toeplitz *)lm_calloc(1, sizeof *t, err, "Toeplitz operator");
    if (!t)
        return LM_ERR_NOMEM;
    for (int a = 0; a < 3; a++) {
        if (n_[a] <= 0 || n_[a] > 4096) {
            rc = lm_fail(err, LM_ERR_INVALID, "%s: matrix %lldx%lldx%lld is out of range", who, (long long)n_[0],
                         (long long)n_[1], (long long)n_[2]);
            goto done;
        }
        t->n[a] = n_[a];
        t->p[a] = n_[a] > 1 ? 2 * n_[a] : 1;
    }
    t->N = t->n[0] * t->n[1] * t->n[2];
    t->P = t->p[0] * t->p[1] * t->p[2];
    if (t->P > (1LL << 31)) {
        rc = lm_fail(err, LM_ERR_NOMEM, "%s: %lld-point FFT grid is too large", who, t->P);
        goto done;
    }
    LM_GTRY(lm_gdevice_begin(who, &t->device, err));
    LM_GTRY(lm_gmalloc((void **)&t->buf, (size_t)t->P * sizeof(float2), err, who, "the padded FFT grid"));
    LM_GTRY(lm_gmalloc((void **)&t->qhat, (size_t)t->P * sizeof(float), err, who, "FFT(Q)"));
    {
        const int mode = fft_mode();
        LM_GTRY(plans_get(&t->plans, t->n, t->p, mode > 0 ? 1 : 0, who, err));
        const long long p2 = t->p[2];
        /* fused z: 3D with pruned plans and a power-of-two third axis whose
         * shared-memory tile fits (512 x 33 x 8 bytes = 135 KB on sm_80+) */
        if (mode == 2 && t->plans.mode == 1 && p2 >= 16 && p2 <= 512 && (p2 & (p2 - 1)) == 0) {
            const size_t smem = (size_t)p2 * (TP_LINES + 1) * sizeof(float2);
            float2 *htw = (float2 *)lm_alloc((size_t)p2 / 2, sizeof(float2), err, "twiddles");
            if (!htw) {
                rc = LM_ERR_NOMEM;
                goto done;
            }
            for (long long k = 0; k < p2 / 2; k++) {
                double sn, cs;
                sincospi(-2.0 * (double)k / (double)p2, &sn, &cs);
                htw[k] = make_float2((float)cs, (float)sn);
            }
            rc = lm_gmalloc((void **)&t->tw, (size_t)p2 / 2 * sizeof(float2), err, who, "twiddles");
            if (rc == LM_OK && cudaMemcpy(t->tw, htw, (size_t)p2 / 2 * sizeof(float2), cudaMemcpyHostToDevice) != cudaSuccess)
                rc = lm_fail(err, LM_ERR_GPU, "%s: cannot upload the twiddles", who);
            free(htw);
            if (rc != LM_OK)
                goto done;
            if (smem > 48 * 1024)
                LM_GCHECK(cudaFuncSetAttribute((const void *)k_tp_zfused, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               (int)smem),
                          who, "shared memory");
            t->fused = 1;
            while ((1LL << t->zbits) < p2)
                t->zbits++;
        }
    }
    {
        const long long *n = t->n, *p = t->p;
        const size_t c0 = (size_t)(p[0] > 1 ? n[0] : 0) +
                          (size_t)p[0] * ((size_t)(p[1] > 1 ? n[1] : 0) + (size_t)p[1] * (size_t)(p[2] > 1 ? n[2] : 0));
        const unsigned blocks = (unsigned)((t->P + LM_TP_T - 1) / LM_TP_T);
        float2 qc;
        const float2 *src = (const float2 *)q_dev;
        if (q_host) {
            LM_GTRY(lm_gmalloc((void **)&stage, (size_t)t->P * sizeof(float2), err, who, "Q upload"));
            LM_GCHECK(cudaMemcpyAsync(stage, q_host, (size_t)t->P * sizeof(float2), cudaMemcpyHostToDevice, st), who,
                      "upload Q");
            src = stage;
        }
        LM_GCHECK(cudaMemcpyAsync(&qc, src + c0, sizeof qc, cudaMemcpyDeviceToHost, st), who, "Q centre");
        k_cg_shift_q<<<blocks, LM_TP_T, 0, st>>>(t->P, p[0], p[1], p[2], n[0], n[1], n[2], src, NULL, NULL, t->buf);
        LM_GLAUNCH(who, "shift Q");
        /* a full transform: Q fills the whole padded grid */
        LM_GFFT(cufftSetStream(t->plans.full, st), who, "FFT stream");
        LM_GFFT(cufftExecC2C(t->plans.full, (cufftComplex *)t->buf, (cufftComplex *)t->buf, CUFFT_FORWARD), who,
                "FFT(Q)");
        k_cg_qhat<<<blocks, LM_TP_T, 0, st>>>(t->P, t->buf, 1.0 / ((double)t->N * (double)t->N * (double)t->P),
                                              t->qhat);
        LM_GLAUNCH(who, "FFT(Q)");
        LM_GCHECK(cudaStreamSynchronize(st), who, "FFT(Q)");
        t->diag = (double)qc.x / ((double)t->N * (double)t->N);
    }
    *out = t;
    t = NULL;
done:
    lm_gfree(stage);
    lm_gpu_toeplitz_free(t);
    return rc;
}

extern "C" lm_code lm_gpu_toeplitz_apply(lm_gpu_toeplitz *t, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    const char *who = "toeplitz (gpu)";
    lm_code rc = LM_OK;
    const cudaStream_t st = cudaStreamPerThread;
    const unsigned pblocks = (unsigned)((t->P + LM_TP_T - 1) / LM_TP_T);
    const unsigned nblocks = (unsigned)((t->N + LM_TP_T - 1) / LM_TP_T < 65535 * 16 ? (t->N + LM_TP_T - 1) / LM_TP_T
                                                                                       : 65535 * 16);
    if (t->fused) {
        /* 2D transforms of the n2 data planes (the pruned plan's first
         * stage), the z axis fused with FFT(Q), then the 2D inverse */
        const long long half = t->p[0] * t->p[1] * t->n[2];
        k_tp_pad_planes<<<(unsigned)((half + LM_TP_T - 1) / LM_TP_T), LM_TP_T, 0, st>>>(
            half, t->p[0], t->p[1], t->n[0], t->n[1], (const float2 *)x, t->buf);
        LM_GLAUNCH(who, "pad");
        LM_GFFT(cufftSetStream(t->plans.h[0], st), who, "FFT stream");
        LM_GFFT(cufftExecC2C(t->plans.h[0], (cufftComplex *)t->buf, (cufftComplex *)t->buf, CUFFT_FORWARD), who, "FFT");
        const dim3 zg((unsigned)((t->p[0] + TP_LINES - 1) / TP_LINES), (unsigned)t->p[1]);
        const size_t smem = (size_t)t->p[2] * (TP_LINES + 1) * sizeof(float2);
        k_tp_zfused<<<zg, TP_ZT, smem, st>>>((int)t->p[2], t->zbits, t->p[0], t->p[1], t->n[2], t->buf, t->qhat, t->tw);
        LM_GLAUNCH(who, "z axis");
        LM_GFFT(cufftExecC2C(t->plans.h[0], (cufftComplex *)t->buf, (cufftComplex *)t->buf, CUFFT_INVERSE), who, "FFT");
        k_tp_crop<<<nblocks, LM_TP_T, 0, st>>>(t->N, t->n[0], t->n[1], t->p[0], t->p[1], t->buf, (float2 *)y);
        LM_GLAUNCH(who, "crop");
        return LM_OK;
    }
    k_tp_pad<<<pblocks, LM_TP_T, 0, st>>>(t->P, t->p[0], t->p[1], t->n[0], t->n[1], t->n[2], (const float2 *)x,
                                          t->buf);
    LM_GLAUNCH(who, "pad");
    LM_GTRY(fft_fwd(&t->plans, t->buf, st, who, err));
    k_cg_mul<<<pblocks, LM_TP_T, 0, st>>>(t->P, t->buf, t->qhat);
    LM_GLAUNCH(who, "multiply");
    LM_GTRY(fft_inv(&t->plans, t->buf, st, who, err));
    k_tp_crop<<<nblocks, LM_TP_T, 0, st>>>(t->N, t->n[0], t->n[1], t->p[0], t->p[1], t->buf, (float2 *)y);
    LM_GLAUNCH(who, "crop");
done:
    return rc;
}
