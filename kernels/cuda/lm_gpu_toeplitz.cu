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
#include "lm_gpu_f4.cuh"

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
    return lm_tuning_get()->gpu_cg_fft;
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


/* Shared-memory FFTs of 32 lines of P values (P a power of two), element i
 * of line l at sm[i * is + l * ls]; tw[k] = exp(-2 pi i k / P), k < P/2.
 * Two radix-2 stages run per pass as one radix-4 step in registers: half
 * the shared-memory traffic and barriers of plain radix-2 (the transforms
 * are bound by shared memory, not by DRAM). A warp's 32 threads take the
 * 32 lines, so with is = 33, ls = 1 or is = 1, ls = P + 1 no two of them
 * share a bank. Unnormalised; INV uses conj(tw). */

/* Decimation in time: bit-reversed order in, natural order out. */
template <bool INV> static __device__ void smem_fft_dit(float2 *sm, int P, int is, int ls, const float2 *__restrict__ tw)
{
    int L = 4;
    if (__ffs(P) % 2 == 0) { /* odd number of stages: one radix-2 stage (len 2, w = 1) first */
        for (int b = threadIdx.x; b < (P / 2) * 32; b += TP_ZT) {
            const int l = b & 31, k = b >> 5;
            float2 *p0 = sm + (2 * k) * is + l * ls, *p1 = p0 + is;
            const float2 a = *p0, c = *p1;
            *p0 = make_float2(a.x + c.x, a.y + c.y);
            *p1 = make_float2(a.x - c.x, a.y - c.y);
        }
        __syncthreads();
        L = 8;
    }
    for (; L <= P; L <<= 2) {
        const int q = L / 4, s1 = P / (L / 2), s2 = P / L;
        for (int b = threadIdx.x; b < (P / 4) * 32; b += TP_ZT) {
            const int l = b & 31, k = b >> 5, j = k & (q - 1);
            float2 *p0 = sm + ((k - j) * 4 + j) * is + l * ls;
            float2 v0 = p0[0], v1 = p0[q * is], v2 = p0[2 * q * is], v3 = p0[3 * q * is];
            const float2 wa = tw[j * s1];
            float2 t = twid<INV>(wa, v1); /* stage L/2: (0,1), (2,3) */
            v1 = make_float2(v0.x - t.x, v0.y - t.y);
            v0 = make_float2(v0.x + t.x, v0.y + t.y);
            t = twid<INV>(wa, v3);
            v3 = make_float2(v2.x - t.x, v2.y - t.y);
            v2 = make_float2(v2.x + t.x, v2.y + t.y);
            t = twid<INV>(tw[j * s2], v2); /* stage L: (0,2), (1,3) */
            p0[0] = make_float2(v0.x + t.x, v0.y + t.y);
            p0[2 * q * is] = make_float2(v0.x - t.x, v0.y - t.y);
            t = twid<INV>(tw[(j + q) * s2], v3);
            p0[q * is] = make_float2(v1.x + t.x, v1.y + t.y);
            p0[3 * q * is] = make_float2(v1.x - t.x, v1.y - t.y);
        }
        __syncthreads();
    }
}

/* Decimation in frequency: natural order in, bit-reversed order out. */
template <bool INV> static __device__ void smem_fft_dif(float2 *sm, int P, int is, int ls, const float2 *__restrict__ tw)
{
    int L = P;
    for (; L >= 4; L >>= 2) {
        const int q = L / 4, s1 = P / L, s2 = P / (L / 2);
        for (int b = threadIdx.x; b < (P / 4) * 32; b += TP_ZT) {
            const int l = b & 31, k = b >> 5, j = k & (q - 1);
            float2 *p0 = sm + ((k - j) * 4 + j) * is + l * ls;
            const float2 v0 = p0[0], v1 = p0[q * is], v2 = p0[2 * q * is], v3 = p0[3 * q * is];
            /* stage L: (0,2) w^j, (1,3) w^(j+q) */
            const float2 a0 = make_float2(v0.x + v2.x, v0.y + v2.y);
            const float2 a2 = twid<INV>(tw[j * s1], make_float2(v0.x - v2.x, v0.y - v2.y));
            const float2 a1 = make_float2(v1.x + v3.x, v1.y + v3.y);
            const float2 a3 = twid<INV>(tw[(j + q) * s1], make_float2(v1.x - v3.x, v1.y - v3.y));
            /* stage L/2: (0,1), (2,3), both w^j */
            const float2 wb = tw[j * s2];
            p0[0] = make_float2(a0.x + a1.x, a0.y + a1.y);
            p0[q * is] = twid<INV>(wb, make_float2(a0.x - a1.x, a0.y - a1.y));
            p0[2 * q * is] = make_float2(a2.x + a3.x, a2.y + a3.y);
            p0[3 * q * is] = twid<INV>(wb, make_float2(a2.x - a3.x, a2.y - a3.y));
        }
        __syncthreads();
    }
    if (L == 2) { /* odd number of stages: the last (len 2, w = 1) */
        for (int b = threadIdx.x; b < (P / 2) * 32; b += TP_ZT) {
            const int l = b & 31, k = b >> 5;
            float2 *p0 = sm + (2 * k) * is + l * ls, *p1 = p0 + is;
            const float2 a = *p0, c = *p1;
            *p0 = make_float2(a.x + c.x, a.y + c.y);
            *p1 = make_float2(a.x - c.x, a.y - c.y);
        }
        __syncthreads();
    }
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
    smem_fft_dit<false>(zs, P2, S, 1, tw); /* forward: natural order out */
    for (int z = row; z < P2; z += rows) {
        const float q = in ? qhat[x + p0 * y + plane * z] : 0.0f;
        float2 v = zs[z * S + lane];
        zs[z * S + lane] = make_float2(v.x * q, v.y * q);
    }
    __syncthreads();
    smem_fft_dif<true>(zs, P2, S, 1, tw); /* inverse: bit-reversed order out */
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


/* ---- mode 3: every axis as a four-step FFT (lm_gpu_f4.cuh), the coil
 * maps fused ----
 *
 * Against radix-2 stages through shared memory (log2 P barriers and
 * exchanges each way) the four-step line is one exchange per direction:
 * the transforms become bound by DRAM again. Strided lines (y and z axes):
 * lanes are 32 neighbouring x, coalesced in global memory. Rows (x axis):
 * 32 rows are staged through shared memory so that global reads and writes
 * stay along the rows. The x pass reads the image times the coil map and
 * its inverse writes conj(map) times the result, accumulated: no separate
 * pad, crop or coil passes. */
/* Coil products for the modes that transform through cuFFT (s NULL: 1). */
__global__ void k_tp_coil_mul(long long N, const float2 *__restrict__ x, const float2 *__restrict__ s,
                              float2 *__restrict__ out)
{
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < N; j += (long long)gridDim.x * blockDim.x)
        out[j] = cmul(x[j], s[j]);
}

__global__ void k_tp_coil_acc(long long N, const float2 *__restrict__ v, const float2 *__restrict__ s,
                              float2 *__restrict__ y, int acc)
{
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < N; j += (long long)gridDim.x * blockDim.x) {
        float2 r = s ? cmulc(s[j], v[j]) : v[j];
        if (acc) {
            const float2 o = y[j];
            r = make_float2(r.x + o.x, r.y + o.y);
        }
        y[j] = r;
    }
}

static int pow2_in(long long p, long long lo, long long hi)
{
    return p >= lo && p <= hi && (p & (p - 1)) == 0;
}


/* ---- the operator ---- */

/* What the operator needs besides FFT(Q): the padded grid, the coil
 * product, the plans and twiddles. One per operator, or shared by a group
 * of operators of one shape (lm_gpu_toeplitz_share: the frames of a
 * dynamic model), which are applied in turn on one thread's stream, so one
 * scratch serves them all without a synchronisation. Reference-counted. */
struct tp_scratch {
    int refs;          /* atomic */
    cg_plans plans;
    int fused;         /* the z axis in k_tp_zfused (mode 2) */
    int own;           /* every axis in shared memory (mode 3) */
    int zbits;         /* log2 p[2] */
    float2 *tw;        /* p[2]/2 twiddles exp(-2 pi i k / p[2]) */
    float2 *twa[3];    /* mode 3: p[a] twiddles per padded axis */
    float2 *tmp;       /* coil product for modes 0-2 (N values), made on first use */
    float2 *buf;       /* the padded grid */
};

struct lm_gpu_toeplitz {
    long long n[3], p[3], N, P;
    tp_scratch *sc;
    float *qhat;       /* FFT(Qs) / (N^2 P), real; NULL once parked */
    const float *qcur; /* the FFT(Q) the products read: qhat, or a streamed slot */
    lm_gpu_qstream *qs; /* parked: FFT(Q) in the stream's host memory as frame `frame` */
    int frame;
    double diag;
    int device;
};

static void scratch_release(tp_scratch *c)
{
    if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    plans_clear(&c->plans);
    lm_gfree(c->tw);
    for (int a = 0; a < 3; a++)
        lm_gfree(c->twa[a]);
    lm_gfree(c->tmp);
    lm_gfree(c->buf);
    free(c);
}

extern "C" void lm_gpu_toeplitz_free(lm_gpu_toeplitz *t)
{
    if (!t)
        return;
    scratch_release(t->sc);
    lm_gfree(t->qhat);
    lm_gpu_qstream_free(t->qs);
    free(t);
}

extern "C" lm_code lm_gpu_toeplitz_share(lm_gpu_toeplitz *t, lm_gpu_toeplitz *with, lm_error *err)
{
    (void)err;
    if (!t || !with || t == with || t->sc == with->sc)
        return LM_OK;
    const tp_scratch *a = t->sc, *b = with->sc;
    /* another shape, device or FFT mode (the tuning changed between the
     * two): each keeps its own */
    if (t->device != with->device || t->n[0] != with->n[0] || t->n[1] != with->n[1] || t->n[2] != with->n[2] ||
        a->own != b->own || a->fused != b->fused || a->plans.mode != b->plans.mode)
        return LM_OK;
    __atomic_add_fetch(&with->sc->refs, 1, __ATOMIC_ACQ_REL);
    scratch_release(t->sc);
    t->sc = with->sc;
    return LM_OK;
}

extern "C" lm_code lm_gpu_toeplitz_park(lm_gpu_toeplitz *t, lm_gpu_qstream *qs, int frame, lm_error *err)
{
    if (t->qs && t->qs == qs && t->frame == frame)
        return LM_OK; /* again (a model's set-up retried after an error) */
    if (t->qs)
        return lm_fail(err, LM_ERR_INVALID, "toeplitz (gpu): FFT(Q) is parked in another stream already");
    lm_code rc = lm_gpu_qstream_put(qs, frame, t->qhat, t->P, err);
    if (rc != LM_OK)
        return rc;
    lm_gfree(t->qhat);
    t->qhat = NULL;
    t->qcur = NULL;
    t->qs = lm_gpu_qstream_ref(qs);
    t->frame = frame;
    return LM_OK;
}

/* The FFT(Q) of this product on the calling thread's stream. */
static lm_code q_ready(lm_gpu_toeplitz *t, lm_error *err)
{
    if (!t->qs)
        return LM_OK;
    return lm_gpu_qstream_acquire(t->qs, t->frame, cudaStreamPerThread, &t->qcur, err);
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
    t->sc = (tp_scratch *)lm_calloc(1, sizeof *t->sc, err, "Toeplitz operator");
    if (!t->sc) {
        free(t);
        return LM_ERR_NOMEM;
    }
    t->sc->refs = 1;
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
    LM_GTRY(lm_gmalloc((void **)&t->sc->buf, (size_t)t->P * sizeof(float2), err, who, "the padded FFT grid"));
    LM_GTRY(lm_gmalloc((void **)&t->qhat, (size_t)t->P * sizeof(float), err, who, "FFT(Q)"));
    {
        const int mode = fft_mode();
        const long long *p = t->p;
        /* mode 3: x and y padded, every padded axis a power of two whose
         * shared-memory tile fits (32 x 513 x 8 bytes = 131 KB on sm_80+) */
        if (mode == 3 && pow2_in(p[0], 16, 512) && pow2_in(p[1], 16, 512) && (p[2] == 1 || pow2_in(p[2], 16, 512))) {
            for (int a = 0; a < 3; a++)
                if (p[a] > 1) {
                    LM_GTRY(upload_twiddles(p[a], p[a], &t->sc->twa[a], who, err));
                    LM_GCHECK(f4_setup_len(p[a]), who, "shared memory");
                }
            t->sc->own = 1;
        }
        /* FFT(Q) needs the full plan in every mode */
        LM_GTRY(plans_get(&t->sc->plans, t->n, t->p, mode > 0 ? 1 : 0, who, err));
        const long long p2 = t->p[2];
        /* fused z: 3D with pruned plans and a power-of-two third axis whose
         * shared-memory tile fits (512 x 33 x 8 bytes = 135 KB on sm_80+) */
        if (!t->sc->own && mode >= 2 && t->sc->plans.mode == 1 && p2 >= 16 && p2 <= 512 && (p2 & (p2 - 1)) == 0) {
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
            rc = lm_gmalloc((void **)&t->sc->tw, (size_t)p2 / 2 * sizeof(float2), err, who, "twiddles");
            if (rc == LM_OK && cudaMemcpy(t->sc->tw, htw, (size_t)p2 / 2 * sizeof(float2), cudaMemcpyHostToDevice) != cudaSuccess)
                rc = lm_fail(err, LM_ERR_GPU, "%s: cannot upload the twiddles", who);
            free(htw);
            if (rc != LM_OK)
                goto done;
            if (smem > 48 * 1024)
                LM_GCHECK(cudaFuncSetAttribute((const void *)k_tp_zfused, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               (int)smem),
                          who, "shared memory");
            t->sc->fused = 1;
            while ((1LL << t->sc->zbits) < p2)
                t->sc->zbits++;
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
        k_cg_shift_q<<<blocks, LM_TP_T, 0, st>>>(t->P, p[0], p[1], p[2], n[0], n[1], n[2], src, NULL, NULL, t->sc->buf);
        LM_GLAUNCH(who, "shift Q");
        /* a full transform: Q fills the whole padded grid */
        LM_GFFT(cufftSetStream(t->sc->plans.full, st), who, "FFT stream");
        LM_GFFT(cufftExecC2C(t->sc->plans.full, (cufftComplex *)t->sc->buf, (cufftComplex *)t->sc->buf, CUFFT_FORWARD), who,
                "FFT(Q)");
        k_cg_qhat<<<blocks, LM_TP_T, 0, st>>>(t->P, t->sc->buf, 1.0 / ((double)t->N * (double)t->N * (double)t->P),
                                              t->qhat);
        LM_GLAUNCH(who, "FFT(Q)");
        LM_GCHECK(cudaStreamSynchronize(st), who, "FFT(Q)");
        t->diag = (double)qc.x / ((double)t->N * (double)t->N);
    }
    t->qcur = t->qhat;
    *out = t;
    t = NULL;
done:
    lm_gfree(stage);
    lm_gpu_toeplitz_free(t);
    return rc;
}

/* Mode 3: x forward (times s), y forward, z with FFT(Q), y inverse, x
 * inverse (times conj(s), accumulated); 2D: x, y with FFT(Q), x. */
static lm_code apply_own(lm_gpu_toeplitz *t, const float2 *x, const float2 *s, float2 *y, int acc, lm_error *err)
{
    const char *who = "toeplitz (gpu)";
    lm_code rc = LM_OK;
    const cudaStream_t st = cudaStreamPerThread;
    const long long *n = t->n, *p = t->p;
    const long long rows = n[1] * n[2];
    const unsigned xblocks = (unsigned)((rows + 31) / 32);
    const unsigned lx = (unsigned)((p[0] + 31) / 32);
    f4_rows_len(p[0], 0, xblocks, st, rows, n[0], n[1], p[1], x, s, t->sc->buf, NULL, 0, t->sc->twa[0]);
    LM_GLAUNCH(who, "x axis");
    if (p[2] > 1) {
        f4_lines_len(p[1], F4_FWD, dim3(lx, (unsigned)n[2]), st, p[0], p[0], p[0] * p[1], (int)n[1], (int)p[1], t->sc->buf,
                     t->qcur, t->sc->twa[1]);
        LM_GLAUNCH(who, "y axis");
        f4_lines_len(p[2], F4_FWD | F4_MUL | F4_INV, dim3(lx, (unsigned)p[1]), st, p[0], p[0] * p[1], p[0], (int)n[2],
                     (int)n[2], t->sc->buf, t->qcur, t->sc->twa[2]);
        LM_GLAUNCH(who, "z axis");
        f4_lines_len(p[1], F4_INV, dim3(lx, (unsigned)n[2]), st, p[0], p[0], p[0] * p[1], (int)p[1], (int)n[1], t->sc->buf,
                     t->qcur, t->sc->twa[1]);
        LM_GLAUNCH(who, "y axis");
    } else {
        f4_lines_len(p[1], F4_FWD | F4_MUL | F4_INV, dim3(lx, 1), st, p[0], p[0], 0, (int)n[1], (int)n[1], t->sc->buf,
                     t->qcur, t->sc->twa[1]);
        LM_GLAUNCH(who, "y axis");
    }
    f4_rows_len(p[0], 1, xblocks, st, rows, n[0], n[1], p[1], NULL, s, t->sc->buf, y, acc, t->sc->twa[0]);
    LM_GLAUNCH(who, "x axis");
done:
    return rc;
}

/* y = F^H F x through cuFFT (modes 0-2); x == y allowed. */
static lm_code apply_cufft(lm_gpu_toeplitz *t, const float2 *x, float2 *y, lm_error *err)
{
    const char *who = "toeplitz (gpu)";
    lm_code rc = LM_OK;
    const cudaStream_t st = cudaStreamPerThread;
    const unsigned pblocks = (unsigned)((t->P + LM_TP_T - 1) / LM_TP_T);
    const unsigned nblocks = (unsigned)((t->N + LM_TP_T - 1) / LM_TP_T < 65535 * 16 ? (t->N + LM_TP_T - 1) / LM_TP_T
                                                                                       : 65535 * 16);
    if (t->sc->fused) {
        /* 2D transforms of the n2 data planes (the pruned plan's first
         * stage), the z axis fused with FFT(Q), then the 2D inverse */
        const long long half = t->p[0] * t->p[1] * t->n[2];
        k_tp_pad_planes<<<(unsigned)((half + LM_TP_T - 1) / LM_TP_T), LM_TP_T, 0, st>>>(
            half, t->p[0], t->p[1], t->n[0], t->n[1], x, t->sc->buf);
        LM_GLAUNCH(who, "pad");
        LM_GFFT(cufftSetStream(t->sc->plans.h[0], st), who, "FFT stream");
        LM_GFFT(cufftExecC2C(t->sc->plans.h[0], (cufftComplex *)t->sc->buf, (cufftComplex *)t->sc->buf, CUFFT_FORWARD), who, "FFT");
        const dim3 zg((unsigned)((t->p[0] + TP_LINES - 1) / TP_LINES), (unsigned)t->p[1]);
        const size_t smem = (size_t)t->p[2] * (TP_LINES + 1) * sizeof(float2);
        k_tp_zfused<<<zg, TP_ZT, smem, st>>>((int)t->p[2], t->sc->zbits, t->p[0], t->p[1], t->n[2], t->sc->buf, t->qcur, t->sc->tw);
        LM_GLAUNCH(who, "z axis");
        LM_GFFT(cufftExecC2C(t->sc->plans.h[0], (cufftComplex *)t->sc->buf, (cufftComplex *)t->sc->buf, CUFFT_INVERSE), who, "FFT");
        k_tp_crop<<<nblocks, LM_TP_T, 0, st>>>(t->N, t->n[0], t->n[1], t->p[0], t->p[1], t->sc->buf, y);
        LM_GLAUNCH(who, "crop");
        return LM_OK;
    }
    k_tp_pad<<<pblocks, LM_TP_T, 0, st>>>(t->P, t->p[0], t->p[1], t->n[0], t->n[1], t->n[2], x, t->sc->buf);
    LM_GLAUNCH(who, "pad");
    LM_GTRY(fft_fwd(&t->sc->plans, t->sc->buf, st, who, err));
    k_cg_mul<<<pblocks, LM_TP_T, 0, st>>>(t->P, t->sc->buf, t->qcur);
    LM_GLAUNCH(who, "multiply");
    LM_GTRY(fft_inv(&t->sc->plans, t->sc->buf, st, who, err));
    k_tp_crop<<<nblocks, LM_TP_T, 0, st>>>(t->N, t->n[0], t->n[1], t->p[0], t->p[1], t->sc->buf, y);
    LM_GLAUNCH(who, "crop");
done:
    return rc;
}

extern "C" lm_code lm_gpu_toeplitz_apply(lm_gpu_toeplitz *t, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    lm_code rc = lm_gpu_fault_check(LM_GFAULT_SITE_APPLY, "toeplitz (gpu)", err);
    if (rc != LM_OK || (rc = q_ready(t, err)) != LM_OK)
        return rc;
    if (t->sc->own)
        return apply_own(t, (const float2 *)x, NULL, (float2 *)y, 0, err);
    return apply_cufft(t, (const float2 *)x, (float2 *)y, err);
}

extern "C" lm_code lm_gpu_toeplitz_apply_coil(lm_gpu_toeplitz *t, const lm_cfloat *x, const lm_cfloat *s, lm_cfloat *y,
                                              int accumulate, lm_error *err)
{
    const char *who = "toeplitz (gpu)";
    lm_code rc = LM_OK;
    const cudaStream_t st = cudaStreamPerThread;
    LM_GTRY(lm_gpu_fault_check(LM_GFAULT_SITE_APPLY, who, err));
    LM_GTRY(q_ready(t, err));
    if (t->sc->own)
        return apply_own(t, (const float2 *)x, (const float2 *)s, (float2 *)y, accumulate, err);
    if (!s && !accumulate)
        return apply_cufft(t, (const float2 *)x, (float2 *)y, err);
    {
        const unsigned blocks = (unsigned)((t->N + LM_TP_T - 1) / LM_TP_T < 65535 * 16 ? (t->N + LM_TP_T - 1) / LM_TP_T
                                                                                        : 65535 * 16);
        if (!t->sc->tmp)
            LM_GTRY(lm_gmalloc((void **)&t->sc->tmp, (size_t)t->N * sizeof(float2), err, who, "coil product"));
        if (s) {
            k_tp_coil_mul<<<blocks, LM_TP_T, 0, st>>>(t->N, (const float2 *)x, (const float2 *)s, t->sc->tmp);
            LM_GLAUNCH(who, "coil product");
        } else
            LM_GCHECK(cudaMemcpyAsync(t->sc->tmp, x, (size_t)t->N * sizeof(float2), cudaMemcpyDeviceToDevice, st), who,
                      "copy");
        LM_GTRY(apply_cufft(t, t->sc->tmp, t->sc->tmp, err));
        k_tp_coil_acc<<<blocks, LM_TP_T, 0, st>>>(t->N, t->sc->tmp, (const float2 *)s, (float2 *)y, accumulate);
        LM_GLAUNCH(who, "coil product");
    }
done:
    return rc;
}
