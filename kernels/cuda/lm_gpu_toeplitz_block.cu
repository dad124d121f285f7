/* Block Toeplitz operator of time segmentation on the device
 * (lm_gpu.h; the CPU twin and the mathematics in lm_toeplitz_block.h).
 *
 * Where every padded axis is a power of two from 16 to 512 (the four-step
 * lines of lm_gpu_f4.cuh): coils go in groups of G. In 3D with L <= 16
 * (TB_XF below) each coil's L products c_l' s x are transformed along z
 * and y (data columns only), then one kernel transforms rows along x,
 * forms the L x L block product (the Hermitian block matrix from its upper
 * triangle) for several coils at once and transforms back, and the y and
 * z passes mirror the forward, the z pass summing conj(c_l) times each
 * segment. Otherwise (2D, more segments, LARMOR_GPU_BLOCK_XFUSE=0): x, y,
 * z forward as one batch of L, one kernel for the block product of the
 * group's coils (each FFT(Q_ll') read once per group), the inverse
 * mirrored, the x pass accumulating. Where an axis is no such power: per
 * coil one kernel writes the L padded products, one batched cuFFT, the
 * block product, the batched inverse, one kernel crops and combines. */
#include <stdlib.h>
#include <string.h>

#include "lm_gpu_internal.h"
#include "lm_gpu_f4.cuh"
#include "lm_trace.h"

#define TB_T 256
#define TB_MAX_L 64 /* LM_BLOCK_MAX_L */

struct lm_gpu_toeplitz_block {
    long long n[3], p[3], N, P;
    int L;
    long long npairs;
    float2 *qhat;      /* npairs x P: FFT(shifted Q_ll') / (N^2 P) */
    float2 *work;      /* G x L x P */
    int G;             /* coils per group (four-step path; 1 otherwise) */
    int own;           /* the four-step path */
    float2 *twa[3];    /* its twiddles per padded axis */
    float2 *tmp, *acc; /* N each: s x, and the sum over segments of one coil (separate passes) */
    int xfuse;         /* 3D four-step path with x last (TB_XF) */
    int timed;         /* LARMOR_TRACE: time the phases (a sync after each) */
    long long napply;
    double t_phase[3]; /* forward passes, the block product pass, inverse passes */
    cufftHandle plan;  /* batched over L (cuFFT path) */
    int have_plan;
};

static unsigned tb_blocks(long long n)
{
    long long b = (n + TB_T - 1) / TB_T;
    return (unsigned)(b < 1 ? 1 : b > 65535LL * 16 ? 65535LL * 16 : b);
}

static __device__ __forceinline__ float2 tb_mul(float2 a, float2 b)
{
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

static __device__ __forceinline__ float2 tb_mulc(float2 a, float2 b) /* conj(a) b */
{
    return make_float2(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x);
}

/* o += a b and o += conj(a) b as four FMAs each (o + (a b) written out
 * costs a multiply, an FMA and an add per part: the block product's
 * inner step) */
static __device__ __forceinline__ void tb_fma(float2 &o, float2 a, float2 b)
{
    o.x = fmaf(a.x, b.x, fmaf(-a.y, b.y, o.x));
    o.y = fmaf(a.x, b.y, fmaf(a.y, b.x, o.y));
}

static __device__ __forceinline__ void tb_fmac(float2 &o, float2 a, float2 b)
{
    o.x = fmaf(a.x, b.x, fmaf(a.y, b.y, o.x));
    o.y = fmaf(a.x, b.y, fmaf(-a.y, b.x, o.y));
}

static __device__ __forceinline__ int tb_pair(int L, int l, int lp)
{
    return l * L - l * (l - 1) / 2 + (lp - l);
}

/* dst = Q shifted by n per padded axis (difference d at index d mod 2n),
 * the unused difference -n zeroed; scaled. */
__global__ void k_tb_shift(long long P, long long p0, long long p1, long long p2, long long n0, long long n1,
                           long long n2, const float2 *__restrict__ src, float2 *__restrict__ dst)
{
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < P; v += (long long)gridDim.x * blockDim.x) {
        const long long i = v % p0, j = (v / p0) % p1, k = v / (p0 * p1);
        const int used = (p0 <= 1 || i != n0) && (p1 <= 1 || j != n1) && (p2 <= 1 || k != n2);
        const long long si = (i + (p0 > 1 ? n0 : 0)) % p0, sj = (j + (p1 > 1 ? n1 : 0)) % p1,
                        sk = (k + (p2 > 1 ? n2 : 0)) % p2;
        dst[v] = used ? src[si + p0 * (sj + p1 * sk)] : make_float2(0.f, 0.f);
    }
}

__global__ void k_tb_scale(long long P, float2 *__restrict__ x, float a)
{
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < P; v += (long long)gridDim.x * blockDim.x)
        x[v] = make_float2(x[v].x * a, x[v].y * a);
}

/* work_l = zero-pad(c_l . s . x) on the 2x grid, every padded point written */
__global__ void k_tb_scatter(long long P, long long p0, long long p1, long long n0, long long n1, long long n2,
                             long long N, int L, const float2 *__restrict__ x, const float2 *__restrict__ s,
                             const float2 *__restrict__ c, float2 *__restrict__ w)
{
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < P; v += (long long)gridDim.x * blockDim.x) {
        const long long i = v % p0, j = (v / p0) % p1, k = v / (p0 * p1);
        if (i < n0 && j < n1 && k < n2) {
            const long long r = i + n0 * (j + n1 * k);
            float2 a = x[r];
            if (s)
                a = tb_mul(s[r], a);
            for (int l = 0; l < L; l++)
                w[l * P + v] = tb_mul(c[l * N + r], a);
        } else {
            for (int l = 0; l < L; l++)
                w[l * P + v] = make_float2(0.f, 0.f);
        }
    }
}

/* Y_l = sum_l' Qhat_ll' Z_l' per frequency, Qhat_ll' = conj(Qhat_l'l) for l > l' */
__global__ void k_tb_combine(long long P, int L, const float2 *__restrict__ qhat, float2 *__restrict__ w)
{
    float2 z[TB_MAX_L];
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < P; v += (long long)gridDim.x * blockDim.x) {
        for (int l = 0; l < L; l++)
            z[l] = w[l * P + v];
        for (int l = 0; l < L; l++) {
            float2 acc = make_float2(0.f, 0.f);
            for (int lp = 0; lp < L; lp++) {
                float2 r;
                if (lp >= l) {
                    r = tb_mul(qhat[(long long)tb_pair(L, l, lp) * P + v], z[lp]);
                } else {
                    r = tb_mulc(qhat[(long long)tb_pair(L, lp, l) * P + v], z[lp]);
                }
                acc.x += r.x;
                acc.y += r.y;
            }
            w[l * P + v] = acc;
        }
    }
}

/* k_tb_combine for the nc coils of a group (coil j's segments at w + j L P):
 * the same FFT(Q) values serve every coil, from the cache after the first. */
__global__ void k_tb_combine_group(long long P, int L, int nc, const float2 *__restrict__ qhat,
                                   float2 *__restrict__ w)
{
    float2 z[TB_MAX_L];
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < P; v += (long long)gridDim.x * blockDim.x)
        for (int j = 0; j < nc; j++) {
            float2 *wj = w + (size_t)j * L * P;
            for (int l = 0; l < L; l++)
                z[l] = wj[l * P + v];
            for (int l = 0; l < L; l++) {
                float2 acc = make_float2(0.f, 0.f);
                for (int lp = 0; lp < L; lp++) {
                    const float2 r = lp >= l ? tb_mul(__ldg(qhat + (long long)tb_pair(L, l, lp) * P + v), z[lp])
                                             : tb_mulc(__ldg(qhat + (long long)tb_pair(L, lp, l) * P + v), z[lp]);
                    acc.x += r.x;
                    acc.y += r.y;
                }
                wj[l * P + v] = acc;
            }
        }
}

/* The same with L a compile-time constant (L <= 10): the frequency's
 * L(L+1)/2 FFT(Q) values are read once into registers and serve every
 * coil of the group, which moves the least data (each block read once,
 * each segment read and written once). */
template <int L>
__global__ void __launch_bounds__(TB_T) k_tb_combine_reg(long long P, int nc, const float2 *__restrict__ qhat,
                                                         float2 *__restrict__ w)
{
    constexpr int NP = L * (L + 1) / 2;
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < P; v += (long long)gridDim.x * blockDim.x) {
        float2 q[NP];
#pragma unroll
        for (int pr = 0; pr < NP; pr++)
            q[pr] = __ldg(qhat + (long long)pr * P + v);
        for (int j = 0; j < nc; j++) {
            float2 *wj = w + (size_t)j * L * P;
            float2 z[L];
#pragma unroll
            for (int l = 0; l < L; l++)
                z[l] = wj[l * P + v];
#pragma unroll
            for (int l = 0; l < L; l++) {
                float2 acc = make_float2(0.f, 0.f);
#pragma unroll
                for (int lp = 0; lp < L; lp++) {
                    const float2 r = lp >= l ? tb_mul(q[l * L - l * (l - 1) / 2 + (lp - l)], z[lp])
                                             : tb_mulc(q[lp * L - lp * (lp - 1) / 2 + (l - lp)], z[lp]);
                    acc.x += r.x;
                    acc.y += r.y;
                }
                wj[l * P + v] = acc;
            }
        }
    }
}

/* The block product of a group: the register form where L allows. */
static void tb_combine_group(long long P, int L, int nc, const float2 *qhat, float2 *w, cudaStream_t st)
{
    const unsigned b = tb_blocks(P);
    switch (L) {
#define TB_CASE(K)                                                                                                   \
    case K: k_tb_combine_reg<K><<<b, TB_T, 0, st>>>(P, nc, qhat, w); return;
        TB_CASE(1) TB_CASE(2) TB_CASE(3) TB_CASE(4) TB_CASE(5) TB_CASE(6) TB_CASE(7) TB_CASE(8) TB_CASE(9) TB_CASE(10)
#undef TB_CASE
    default: k_tb_combine_group<<<b, TB_T, 0, st>>>(P, L, nc, qhat, w);
    }
}

/* The 3D four-step path with x last (TB_XF): z, then y, then x forward; the
 * x transform, the block product and the inverse x transform in one kernel;
 * then y and z back. Rows along x are contiguous, so a block can hold the
 * same row of every segment of several coils in shared memory: each
 * (coil, segment) grid is then read and written once by that kernel
 * instead of three times by separate x passes and the product, and the
 * row's FFT(Q) values serve all of the block's coils. The z passes also
 * carry the ends: the forward one reads the image times the coil map and
 * c_l, the inverse one sums conj(c_l) times each segment over l and adds
 * conj(s) times that into y. Per coil and segment about 3 grids move
 * instead of 7.25. (Session 5's z-fused kernel, which held z lines of one
 * coil, re-read FFT(Q) per coil and lost.) */
#define TB_XF_MAXL 16

/* Forward z of segment l = blockIdx.z: lines (x, y) of the image x times
 * the coil map s (NULL: 1) and c_l, zero padded from n2 to PZ, transformed
 * into buf + l P at x + p0 (y + p1 k). 32 x per block, blockIdx.y = y. */
template <int P1, int P2>
__global__ void __launch_bounds__(32 * P2) k_tb_zin(long long n0, long long n1, int n2, long long p0, long long p1,
                                                    long long N, long long P, const float2 *__restrict__ x,
                                                    const float2 *__restrict__ s, const float2 *__restrict__ c,
                                                    float2 *__restrict__ buf, const float2 *__restrict__ tw)
{
    extern __shared__ float2 ex[];
    const int lane = threadIdx.x & 31, sub = threadIdx.x >> 5;
    const long long xi = (long long)blockIdx.x * 32 + lane;
    const bool in = xi < n0;
    const size_t src = (size_t)xi + (size_t)n0 * blockIdx.y, plane = (size_t)n0 * (size_t)n1;
    c += (size_t)N * blockIdx.z;
    float2 v[P1];
#pragma unroll
    for (int a = 0; a < P1; a++) {
        const int i = P2 * a + sub;
        float2 u = make_float2(0.0f, 0.0f);
        if (in && i < n2) {
            const size_t j = src + plane * (size_t)i;
            u = x[j];
            if (s)
                u = cmul(u, s[j]);
            u = cmul(u, c[j]);
        }
        v[a] = u;
    }
    f4_phase_a<P1, P2>(v, sub, tw);
#pragma unroll
    for (int k1 = 0; k1 < P1; k1++)
        ex[(k1 + P1 * sub) * FS + lane] = v[k1];
    __syncthreads();
    float2 *g = buf + (size_t)P * blockIdx.z;
    const size_t base = (size_t)xi + (size_t)p0 * blockIdx.y;
    for (int k1 = sub; k1 < P1; k1 += P2)
        f4_phase_b<P1, P2, F4_FWD>(ex, k1, lane, in, g, base, p0 * p1, NULL, tw);
}

/* Inverse z of lines (x, y) of the L segments in buf, cropped to n2, y[j]
 * (+)= conj(s) sum_l conj(c_l) segment_l. */
template <int P1, int P2>
__global__ void __launch_bounds__(32 * P2) k_tb_zout(int L, long long n0, long long n1, int n2, long long p0,
                                                     long long p1, long long N, long long P,
                                                     const float2 *__restrict__ buf, const float2 *__restrict__ c,
                                                     const float2 *__restrict__ s, float2 *__restrict__ y, int acc,
                                                     const float2 *__restrict__ tw)
{
    extern __shared__ float2 ex[];
    const int lane = threadIdx.x & 31, sub = threadIdx.x >> 5;
    const long long xi = (long long)blockIdx.x * 32 + lane;
    const bool in = xi < n0;
    const size_t src = (size_t)xi + (size_t)n0 * blockIdx.y, plane = (size_t)n0 * (size_t)n1;
    const size_t base = (size_t)xi + (size_t)p0 * blockIdx.y;
    float2 sum[P1];
#pragma unroll
    for (int a = 0; a < P1; a++)
        sum[a] = make_float2(0.0f, 0.0f);
    for (int l = 0; l < L; l++) {
        float2 *g = (float2 *)buf + (size_t)P * l;
        for (int k1 = sub; k1 < P1; k1 += P2)
            f4_phase_b<P1, P2, F4_INV>(ex, k1, lane, in, g, base, p0 * p1, NULL, tw);
        __syncthreads();
        float2 v[P1];
        f4_phase_c<P1, P2>(v, ex, sub, lane, tw);
        __syncthreads(); /* the next segment's phase B rewrites the exchange */
#pragma unroll
        for (int a = 0; a < P1; a++) {
            const int i = P2 * a + sub;
            if (in && i < n2) {
                const float2 t = cmulc(c[(size_t)N * l + src + plane * (size_t)i], v[a]);
                sum[a].x += t.x;
                sum[a].y += t.y;
            }
        }
    }
    if (!in)
        return;
#pragma unroll
    for (int a = 0; a < P1; a++) {
        const int i = P2 * a + sub;
        if (i < n2) {
            const size_t j = src + plane * (size_t)i;
            float2 u = s ? cmulc(s[j], sum[a]) : sum[a];
            if (acc) {
                const float2 o = y[j];
                u = make_float2(u.x + o.x, u.y + o.y);
            }
            y[j] = u;
        }
    }
}

/* The L x L Hermitian block product at one frequency of one coil, in
 * place on its L segments e[0 .. L): e_l = sum_l' Q_ll' e_l', the upper
 * triangle's Q_ll' (l <= l', pair k in tb_pair order) from q(l, l', k). */
template <int LM, typename QF>
static __device__ __forceinline__ void tb_seg_product(float2 *e, int L, QF q)
{
    float2 z[LM], o[LM];
#pragma unroll
    for (int sg = 0; sg < LM; sg++) {
        z[sg] = sg < L ? e[sg] : make_float2(0.0f, 0.0f);
        o[sg] = make_float2(0.0f, 0.0f);
    }
#pragma unroll
    for (int l = 0, k = 0; l < LM; l++)
#pragma unroll
        for (int lp = l; lp < LM; lp++, k++)
            if (lp < L) {
                const float2 qv = q(l, lp, k);
                tb_fma(o[l], qv, z[lp]);
                if (lp > l)
                    tb_fmac(o[lp], qv, z[l]);
            }
#pragma unroll
    for (int sg = 0; sg < LM; sg++)
        if (sg < L)
            e[sg] = o[sg];
}

/* Forward x, the L x L block product and inverse x of one row (y, z) of
 * the grids of C = 32 / L coils (fewer in the last chunk), the lines
 * coil * L + segment staged in shared memory; the first n0 values of each
 * row are data (the y pass wrote them), the rest zero; the first n0 go
 * back. blockIdx.x = chunk + chunks * row, so a row's chunks run side by
 * side and share its FFT(Q) through L2. LM: the register arrays' size (a
 * compile-time bound on L). For LM <= 8 a thread takes a frequency for all
 * the block's coils with its L(L+1)/2 FFT(Q) values loaded into registers
 * at once (issued together: the first try, which loaded them one pair at a
 * time per coil, waited on memory most of the time: 16 ms per B128c8f
 * iteration against 4 for the transforms around it). */
template <int P1, int P2, int LM>
__global__ void __launch_bounds__(32 * P2, P2 <= 8 ? 2 : 1)
    k_tb_xfused(int L, int C, int nc, int chunks, long long n0, long long P, float2 *__restrict__ w,
                const float2 *__restrict__ qhat, const float2 *__restrict__ tw)
{
    constexpr int PX = P1 * P2, NT = 32 * P2;
    extern __shared__ float2 ex[];
    const int lane = threadIdx.x & 31, sub = threadIdx.x >> 5;
    const int chunk = (int)(blockIdx.x % (unsigned)chunks);
    const size_t row = (size_t)(blockIdx.x / (unsigned)chunks) * PX;
    const int j0 = chunk * C, cn = nc - j0 < C ? nc - j0 : C, lines = cn * L;
    float2 *wj = w + (size_t)j0 * (size_t)L * (size_t)P + row; /* line l at wj + l P */
    if (LM <= 8) /* the row's FFT(Q) on its way to L2 while the lines load and transform */
        for (int i = threadIdx.x; i < PX; i += NT) {
            const float2 *qp = qhat + row + i;
            for (int k = 0; k < L * (L + 1) / 2; k++, qp += P)
                asm volatile("prefetch.global.L2 [%0];" ::"l"(qp));
        }
    /* the 32 lines in: a thread keeps its places i along the row and steps
     * through the lines by pointer (index arithmetic per value was a fifth
     * of the kernel's instructions) */
    constexpr int IS = NT < PX ? NT : PX, LS = NT / IS; /* values per pass along a line; lines per pass */
    const int i0 = threadIdx.x % IS, l0 = threadIdx.x / IS, nx = (int)n0;
    for (int i = i0; i < PX; i += IS) {
        const float2 *src = wj + (size_t)l0 * (size_t)P + i;
#pragma unroll 8
        for (int l = l0; l < 32; l += LS, src += (size_t)LS * (size_t)P)
            ex[i * FS + l] = l < lines && i < nx ? *src : make_float2(0.0f, 0.0f);
    }
    f4_rows_forward_staged<P1, P2>(ex, lane, sub, tw);
    if (LM <= 8) {
        constexpr int NQ = LM * (LM + 1) / 2;
        for (int i = threadIdx.x; i < PX; i += NT) {
            float2 q[NQ];
            const float2 *qp = qhat + row + i; /* the valid pairs come in tb_pair order: one block further each */
#pragma unroll
            for (int l = 0, k = 0; l < LM; l++)
#pragma unroll
                for (int lp = l; lp < LM; lp++, k++) {
                    q[k] = lp < L ? __ldg(qp) : make_float2(0.0f, 0.0f);
                    if (lp < L)
                        qp += P;
                }
            for (int cl = 0; cl < lines; cl += L)
                tb_seg_product<LM>(ex + i * FS + cl, L, [&](int, int, int k) { return q[k]; });
        }
    } else {
        for (int it = threadIdx.x; it < PX * cn; it += NT) {
            const int i = it % PX;
            tb_seg_product<LM>(ex + i * FS + (it / PX) * L, L, [&](int l, int lp, int) {
                return __ldg(qhat + (size_t)tb_pair(L, l, lp) * (size_t)P + row + i);
            });
        }
    }
    f4_rows_inverse_staged<P1, P2>(ex, lane, sub, tw);
    for (int i = i0; i < nx; i += IS) { /* the first n0 of each line out, as they came in */
        float2 *dst = wj + (size_t)l0 * (size_t)P + i;
#pragma unroll 8
        for (int l = l0; l < lines; l += LS, dst += (size_t)LS * (size_t)P)
            *dst = ex[i * FS + l];
    }
}

template <int P1, int P2> static cudaError_t tb_smem_attr(const void *fn)
{
    const int sm = (int)f4_smem<P1, P2>();
    return sm > 48 * 1024 ? cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, sm) : cudaSuccess;
}

template <int P1, int P2> static cudaError_t tb_z_setup(void)
{
    cudaError_t e = tb_smem_attr<P1, P2>((const void *)k_tb_zin<P1, P2>);
    return e == cudaSuccess ? tb_smem_attr<P1, P2>((const void *)k_tb_zout<P1, P2>) : e;
}

template <int P1, int P2> static cudaError_t tb_x_setup(void)
{
    const void *fns[3] = {(const void *)k_tb_xfused<P1, P2, 4>, (const void *)k_tb_xfused<P1, P2, 8>,
                          (const void *)k_tb_xfused<P1, P2, 16>};
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < 3 && e == cudaSuccess; i++)
        e = tb_smem_attr<P1, P2>(fns[i]);
    return e;
}

/* The launch shapes of the x-last path, by axis length (16 .. 512), as the
 * four-step lines, except that 256 takes (A256, B256): the fused x kernel
 * runs it as 32 x 8 (256 threads, two blocks per SM, registers for
 * FFT(Q)), the z passes as 16 x 16. */
#define TB_BY_LEN(P, CALL, A256, B256)                                                                               \
    switch (P) {                                                                                                     \
    case 16: CALL(4, 4); break;                                                                                      \
    case 32: CALL(8, 4); break;                                                                                      \
    case 64: CALL(8, 8); break;                                                                                      \
    case 128: CALL(16, 8); break;                                                                                    \
    case 256: CALL(A256, B256); break;                                                                               \
    default: CALL(32, 16); break;                                                                                    \
    }

/* The kernels' shared memory: the fused x kernel for rows of px, the z
 * passes for lines of pz. */
static cudaError_t tb_xfused_setup(long long px, long long pz)
{
    cudaError_t e = cudaSuccess;
#define TB_SETUP_X(A, B) e = tb_x_setup<A, B>()
#define TB_SETUP_Z(A, B) e = tb_z_setup<A, B>()
    TB_BY_LEN(px, TB_SETUP_X, 32, 8)
    if (e == cudaSuccess)
        TB_BY_LEN(pz, TB_SETUP_Z, 16, 16)
#undef TB_SETUP_X
#undef TB_SETUP_Z
    return e;
}

/* Under LARMOR_TRACE: the time since *t0 added to phase k (the stream
 * synchronised first), *t0 moved on. */
static cudaError_t tb_phase(lm_gpu_toeplitz_block *t, int k, double *t0, cudaStream_t st)
{
    if (!t->timed)
        return cudaSuccess;
    const cudaError_t e = cudaStreamSynchronize(st);
    const double now = lm_gnow();
    t->t_phase[k] += now - *t0;
    *t0 = now;
    return e;
}

/* Forward z of coil j (s NULL: one coil) into buf, all L segments. */
static void tb_zin(const lm_gpu_toeplitz_block *t, const float2 *x, const float2 *s, const float2 *c, float2 *buf,
                   cudaStream_t st)
{
    const long long *n = t->n, *p = t->p;
    const dim3 grid((unsigned)((n[0] + 31) / 32), (unsigned)n[1], (unsigned)t->L);
#define TB_ZIN(A, B)                                                                                                 \
    k_tb_zin<A, B><<<grid, 32 * B, f4_smem<A, B>(), st>>>(n[0], n[1], (int)n[2], p[0], p[1], t->N, t->P, x, s, c,    \
                                                          buf, t->twa[2])
    TB_BY_LEN(p[2], TB_ZIN, 16, 16)
#undef TB_ZIN
}

static void tb_zout(const lm_gpu_toeplitz_block *t, const float2 *buf, const float2 *c, const float2 *s, float2 *y,
                    int acc, cudaStream_t st)
{
    const long long *n = t->n, *p = t->p;
    const dim3 grid((unsigned)((n[0] + 31) / 32), (unsigned)n[1]);
#define TB_ZOUT(A, B)                                                                                                \
    k_tb_zout<A, B><<<grid, 32 * B, f4_smem<A, B>(), st>>>(t->L, n[0], n[1], (int)n[2], p[0], p[1], t->N, t->P, buf, \
                                                           c, s, y, acc, t->twa[2])
    TB_BY_LEN(p[2], TB_ZOUT, 16, 16)
#undef TB_ZOUT
}

/* The x transforms and the block product of nc coils (their grids from
 * t->work). */
static void tb_xfused(const lm_gpu_toeplitz_block *t, int nc, cudaStream_t st)
{
    const int L = t->L, C = 32 / L, chunks = (nc + C - 1) / C;
    const unsigned blocks = (unsigned)(t->p[1] * t->p[2] * chunks);
#define TB_XF(A, B)                                                                                                  \
    if (L <= 4)                                                                                                      \
        k_tb_xfused<A, B, 4><<<blocks, 32 * B, f4_smem<A, B>(), st>>>(L, C, nc, chunks, t->n[0], t->P, t->work,      \
                                                                      t->qhat, t->twa[0]);                           \
    else if (L <= 8)                                                                                                 \
        k_tb_xfused<A, B, 8><<<blocks, 32 * B, f4_smem<A, B>(), st>>>(L, C, nc, chunks, t->n[0], t->P, t->work,      \
                                                                      t->qhat, t->twa[0]);                           \
    else                                                                                                             \
        k_tb_xfused<A, B, 16><<<blocks, 32 * B, f4_smem<A, B>(), st>>>(L, C, nc, chunks, t->n[0], t->P, t->work,     \
                                                                       t->qhat, t->twa[0])
    TB_BY_LEN(t->p[0], TB_XF, 32, 8)
#undef TB_XF
}

/* out = s . x */
__global__ void k_tb_mul(long long N, const float2 *__restrict__ x, const float2 *__restrict__ s,
                         float2 *__restrict__ out)
{
    for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < N; r += (long long)gridDim.x * blockDim.x)
        out[r] = tb_mul(s[r], x[r]);
}

/* y (+)= conj(s) . a (s NULL: 1) */
__global__ void k_tb_coil_acc(long long N, const float2 *__restrict__ a, const float2 *__restrict__ s, int acc,
                              float2 *__restrict__ y)
{
    for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < N; r += (long long)gridDim.x * blockDim.x) {
        float2 v = s ? tb_mulc(s[r], a[r]) : a[r];
        if (acc)
            v = make_float2(v.x + y[r].x, v.y + y[r].y);
        y[r] = v;
    }
}

/* y (+)= conj(s) . sum_l conj(c_l) . crop(work_l) */
__global__ void k_tb_gather(long long N, long long p0, long long p1, long long n0, long long n1, long long P, int L,
                            const float2 *__restrict__ w, const float2 *__restrict__ s, const float2 *__restrict__ c,
                            int acc, float2 *__restrict__ y)
{
    for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < N; r += (long long)gridDim.x * blockDim.x) {
        const long long i = r % n0, j = (r / n0) % n1, k = r / (n0 * n1);
        const long long v = i + p0 * (j + p1 * k);
        float2 a = make_float2(0.f, 0.f);
        for (int l = 0; l < L; l++) {
            const float2 t = tb_mulc(c[l * N + r], w[l * P + v]);
            a.x += t.x;
            a.y += t.y;
        }
        if (s)
            a = tb_mulc(s[r], a);
        if (acc) {
            a.x += y[r].x;
            a.y += y[r].y;
        }
        y[r] = a;
    }
}

static lm_code tb_plan(const long long p[3], int batch, cufftHandle *h, const char *who, lm_error *err)
{
    lm_code rc = LM_OK;
    int rank = 0, dims[3];
    for (int a = 2; a >= 0; a--) /* row-major: slowest axis first */
        if (p[a] > 1)
            dims[rank++] = (int)p[a];
    LM_GFFT(cufftPlanMany(h, rank, dims, NULL, 1, 0, NULL, 1, 0, CUFFT_C2C, batch), who, "FFT plan");
done:
    return rc;
}

extern "C" void lm_gpu_toeplitz_block_free(lm_gpu_toeplitz_block *t)
{
    if (!t)
        return;
    if (t->timed && t->napply) {
        char line[256];
        snprintf(line, sizeof line,
                 "block toeplitz: %lld group applications (L %d, %d coils per group, %s): forward %.3f s, "
                 "block product %.3f s, inverse %.3f s",
                 t->napply, t->L, t->G, t->xfuse ? "x last, fused" : "separate passes", t->t_phase[0], t->t_phase[1],
                 t->t_phase[2]);
        lm_trace(line);
    }
    if (t->have_plan)
        (void)cufftDestroy(t->plan);
    lm_gfree(t->qhat);
    lm_gfree(t->work);
    lm_gfree(t->tmp);
    lm_gfree(t->acc);
    for (int a = 0; a < 3; a++)
        lm_gfree(t->twa[a]);
    free(t);
}

static int tb_pow2(long long p)
{
    return p >= 16 && p <= 512 && (p & (p - 1)) == 0;
}

extern "C" lm_code lm_gpu_toeplitz_block_new(const int64_t n_[3], int L, const lm_cfloat *q, int q_on_device,
                                             int max_coils, lm_gpu_toeplitz_block **out, lm_error *err)
{
    const char *who = "block toeplitz (gpu)";
    lm_code rc = LM_OK;
    const cudaStream_t st = cudaStreamPerThread;
    float2 *stage = NULL;
    cufftHandle one = 0;
    int have_one = 0, device = 0;
    lm_gpu_toeplitz_block *t = NULL;
    *out = NULL;
    if (!q)
        return lm_fail(err, LM_ERR_INVALID, "%s: Q is missing", who);
    if (L < 1 || L > TB_MAX_L)
        return lm_fail(err, LM_ERR_INVALID, "%s: %d segments is out of range", who, L);
    t = (lm_gpu_toeplitz_block *)lm_calloc(1, sizeof *t, err, "block Toeplitz operator");
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
    t->L = L;
    t->npairs = (long long)L * (L + 1) / 2;
    t->N = t->n[0] * t->n[1] * t->n[2];
    t->P = t->p[0] * t->p[1] * t->p[2];
    if (t->P > (1LL << 31) || t->P == 1) {
        rc = lm_fail(err, LM_ERR_INVALID, "%s: %lld-point FFT grid is out of range", who, t->P);
        goto done;
    }
    t->own = tb_pow2(t->p[0]) && tb_pow2(t->p[1]) && (t->p[2] == 1 || tb_pow2(t->p[2])) && !lm_tuning_get()->gpu_block_cufft;
    t->G = 1;
    LM_GTRY(lm_gdevice_begin(who, &device, err));
    if (t->own) {
        /* as many coils per group as a quarter of the free memory holds */
        size_t fr = 0, tot = 0;
        LM_GCHECK(cudaMemGetInfo(&fr, &tot), who, "memory");
        const long long per = (long long)L * t->P * (long long)sizeof(float2);
        long long g = (long long)(fr / 4) / per - (long long)t->npairs * t->P * (long long)sizeof(float2) / per;
        g = g < 1 ? 1 : g > max_coils ? max_coils : g;
        t->G = (int)(g < 1 ? 1 : g);
        for (int a = 0; a < 3; a++)
            if (t->p[a] > 1) {
                LM_GTRY(upload_twiddles(t->p[a], t->p[a], &t->twa[a], who, err));
                LM_GCHECK(f4_setup_len(t->p[a]), who, "shared memory");
            }
        t->timed = lm_tuning_get()->trace;
        /* gpu_block_xfuse 0: the separate passes (x first) */
        t->xfuse = t->p[2] > 1 && L <= TB_XF_MAXL && lm_tuning_get()->gpu_block_xfuse;
        if (t->xfuse) {
            LM_GCHECK(tb_xfused_setup(t->p[0], t->p[2]), who, "shared memory");
        } else { /* the separate passes' coil product and segment sum */
            LM_GTRY(lm_gmalloc((void **)&t->tmp, (size_t)t->N * sizeof(float2), err, who, "the coil product"));
            LM_GTRY(lm_gmalloc((void **)&t->acc, (size_t)t->N * sizeof(float2), err, who, "the segment sum"));
        }
    }
    LM_GTRY(lm_gmalloc((void **)&t->work, (size_t)(t->P * L) * t->G * sizeof(float2), err, who,
                       "the padded segments"));
    LM_GTRY(lm_gmalloc((void **)&t->qhat, (size_t)(t->P * t->npairs) * sizeof(float2), err, who, "FFT(Q) blocks"));
    if (!q_on_device)
        LM_GTRY(lm_gmalloc((void **)&stage, (size_t)t->P * sizeof(float2), err, who, "Q upload"));
    if (!t->own) {
        LM_GTRY(tb_plan(t->p, L, &t->plan, who, err));
        t->have_plan = 1;
    }
    LM_GTRY(tb_plan(t->p, 1, &one, who, err));
    have_one = 1;
    LM_GFFT(cufftSetStream(one, st), who, "FFT stream");
    for (long long pr = 0; pr < t->npairs; pr++) {
        float2 *dst = t->qhat + pr * t->P;
        const float2 *src = (const float2 *)q + pr * t->P;
        if (!q_on_device) {
            LM_GCHECK(cudaMemcpyAsync(stage, src, (size_t)t->P * sizeof(float2), cudaMemcpyHostToDevice, st), who,
                      "upload Q");
            src = stage;
        }
        k_tb_shift<<<tb_blocks(t->P), TB_T, 0, st>>>(t->P, t->p[0], t->p[1], t->p[2], t->n[0], t->n[1], t->n[2], src,
                                                     dst);
        LM_GLAUNCH(who, "shift Q");
        LM_GFFT(cufftExecC2C(one, (cufftComplex *)dst, (cufftComplex *)dst, CUFFT_FORWARD), who, "FFT(Q)");
        k_tb_scale<<<tb_blocks(t->P), TB_T, 0, st>>>(t->P, dst,
                                                     (float)(1.0 / ((double)t->N * (double)t->N * (double)t->P)));
        LM_GLAUNCH(who, "scale FFT(Q)");
    }
    LM_GCHECK(cudaStreamSynchronize(st), who, "FFT(Q)");
    *out = t;
    t = NULL;
done:
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st);
    if (have_one)
        (void)cufftDestroy(one);
    lm_gfree(stage);
    lm_gpu_toeplitz_block_free(t);
    return rc;
}

/* The four-step passes of one coil, by path. Forward: the L products
 * c_l sc x (sc NULL: 1) padded and transformed into buf, all but the axis
 * the block product's kernel transforms itself (x on the x-last path).
 * Inverse: the rest back, y (+)= conj(sc) sum_l conj(c_l) . segment_l.
 * The first launch error is returned. */
static cudaError_t tb_forward_coil(lm_gpu_toeplitz_block *t, const float2 *x, const float2 *sc, const float2 *c,
                                   float2 *buf, cudaStream_t st)
{
    const long long *n = t->n, *p = t->p, N = t->N, P = t->P;
    const unsigned L = (unsigned)t->L;
    if (t->xfuse) {
        tb_zin(t, x, sc, c, buf, st);
        f4_lines_len(p[1], F4_FWD, dim3((unsigned)((n[0] + 31) / 32), (unsigned)p[2], L), st, n[0], p[0],
                     p[0] * p[1], (int)n[1], (int)p[1], buf, NULL, t->twa[1], P);
        return cudaGetLastError();
    }
    const long long rows = n[1] * n[2];
    const unsigned lx = (unsigned)((p[0] + 31) / 32);
    if (sc)
        k_tb_mul<<<tb_blocks(N), TB_T, 0, st>>>(N, x, sc, t->tmp);
    f4_rows_len(p[0], 0, dim3((unsigned)((rows + 31) / 32), 1, L), st, rows, n[0], n[1], p[1], sc ? t->tmp : x, c,
                buf, NULL, 0, t->twa[0], N, P);
    if (p[2] > 1) {
        f4_lines_len(p[1], F4_FWD, dim3(lx, (unsigned)n[2], L), st, p[0], p[0], p[0] * p[1], (int)n[1], (int)p[1],
                     buf, NULL, t->twa[1], P);
        f4_lines_len(p[2], F4_FWD, dim3(lx, (unsigned)p[1], L), st, p[0], p[0] * p[1], p[0], (int)n[2], (int)p[2],
                     buf, NULL, t->twa[2], P);
    } else {
        f4_lines_len(p[1], F4_FWD, dim3(lx, 1, L), st, p[0], p[0], 0, (int)n[1], (int)p[1], buf, NULL, t->twa[1], P);
    }
    return cudaGetLastError();
}

static cudaError_t tb_inverse_coil(lm_gpu_toeplitz_block *t, float2 *buf, const float2 *sc, const float2 *c,
                                   float2 *y, int acc, cudaStream_t st)
{
    const long long *n = t->n, *p = t->p, N = t->N, P = t->P;
    const unsigned L = (unsigned)t->L;
    if (t->xfuse) {
        f4_lines_len(p[1], F4_INV, dim3((unsigned)((n[0] + 31) / 32), (unsigned)p[2], L), st, n[0], p[0],
                     p[0] * p[1], (int)p[1], (int)n[1], buf, NULL, t->twa[1], P);
        tb_zout(t, buf, c, sc, y, acc, st);
        return cudaGetLastError();
    }
    const long long rows = n[1] * n[2];
    const unsigned lx = (unsigned)((p[0] + 31) / 32);
    if (p[2] > 1) {
        f4_lines_len(p[2], F4_INV, dim3(lx, (unsigned)p[1], L), st, p[0], p[0] * p[1], p[0], (int)p[2], (int)n[2],
                     buf, NULL, t->twa[2], P);
        f4_lines_len(p[1], F4_INV, dim3(lx, (unsigned)n[2], L), st, p[0], p[0], p[0] * p[1], (int)p[1], (int)n[1],
                     buf, NULL, t->twa[1], P);
    } else {
        f4_lines_len(p[1], F4_INV, dim3(lx, 1, L), st, p[0], p[0], 0, (int)p[1], (int)n[1], buf, NULL, t->twa[1], P);
    }
    for (unsigned l = 0; l < L; l++)
        f4_rows_len(p[0], 1, dim3((unsigned)((rows + 31) / 32)), st, rows, n[0], n[1], p[1], NULL, c + (size_t)l * N,
                    buf + (size_t)l * P, t->acc, l > 0, t->twa[0]);
    k_tb_coil_acc<<<tb_blocks(N), TB_T, 0, st>>>(N, t->acc, sc, acc, y);
    return cudaGetLastError();
}

/* The four-step path for coils c0 .. c0 + nc - 1 (s NULL: one coil, s = 1):
 * y = sum over them of conj(s) sum_l conj(c_l) T_ll' (c_l' s x), added to y
 * when acc. Each coil's forward passes, one block product for the group
 * (k_tb_xfused with its x transforms, or k_tb_combine*), each coil's
 * inverse passes. */
static lm_code apply_group_own(lm_gpu_toeplitz_block *t, const float2 *x, const float2 *s, long long c0, int nc,
                               const float2 *c, float2 *y, int acc, lm_error *err)
{
    const char *who = "block toeplitz (gpu)";
    lm_code rc = LM_OK;
    const cudaStream_t st = cudaStreamPerThread;
    const long long N = t->N, LP = (long long)t->L * t->P;
    double t0 = t->timed ? lm_gnow() : 0;
    t->napply++;
    for (int j = 0; j < nc; j++)
        LM_GCHECK(tb_forward_coil(t, x, s ? s + (c0 + j) * N : NULL, c, t->work + j * LP, st), who, "forward");
    LM_GCHECK(tb_phase(t, 0, &t0, st), who, "forward");
    if (t->xfuse)
        tb_xfused(t, nc, st);
    else
        tb_combine_group(t->P, t->L, nc, t->qhat, t->work, st);
    LM_GLAUNCH(who, "block product");
    LM_GCHECK(tb_phase(t, 1, &t0, st), who, "block product");
    for (int j = 0; j < nc; j++)
        LM_GCHECK(tb_inverse_coil(t, t->work + j * LP, s ? s + (c0 + j) * N : NULL, c, y, acc || j > 0, st), who,
                  "inverse");
    LM_GCHECK(tb_phase(t, 2, &t0, st), who, "inverse");
done:
    return rc;
}

/* The cuFFT path for one coil. */
static lm_code apply_one_cufft(lm_gpu_toeplitz_block *t, const float2 *x, const float2 *s, const float2 *c, float2 *y,
                               int accumulate, lm_error *err)
{
    const char *who = "block toeplitz (gpu)";
    lm_code rc = LM_OK;
    const cudaStream_t st = cudaStreamPerThread;
    k_tb_scatter<<<tb_blocks(t->P), TB_T, 0, st>>>(t->P, t->p[0], t->p[1], t->n[0], t->n[1], t->n[2], t->N, t->L, x, s,
                                                   c, t->work);
    LM_GLAUNCH(who, "pad");
    LM_GFFT(cufftSetStream(t->plan, st), who, "FFT stream");
    LM_GFFT(cufftExecC2C(t->plan, (cufftComplex *)t->work, (cufftComplex *)t->work, CUFFT_FORWARD), who, "FFT");
    k_tb_combine<<<tb_blocks(t->P), TB_T, 0, st>>>(t->P, t->L, t->qhat, t->work);
    LM_GLAUNCH(who, "block product");
    LM_GFFT(cufftExecC2C(t->plan, (cufftComplex *)t->work, (cufftComplex *)t->work, CUFFT_INVERSE), who, "FFT");
    k_tb_gather<<<tb_blocks(t->N), TB_T, 0, st>>>(t->N, t->p[0], t->p[1], t->n[0], t->n[1], t->P, t->L, t->work, s, c,
                                                  accumulate, y);
    LM_GLAUNCH(who, "crop");
done:
    return rc;
}

extern "C" lm_code lm_gpu_toeplitz_block_apply_coil(lm_gpu_toeplitz_block *t, const lm_cfloat *x_, const lm_cfloat *s_,
                                                    const lm_cfloat *c_, lm_cfloat *y_, int accumulate, lm_error *err)
{
    const float2 *x = (const float2 *)x_, *s = (const float2 *)s_, *c = (const float2 *)c_;
    float2 *y = (float2 *)y_;
    lm_code rc = lm_gpu_fault_check(LM_GFAULT_SITE_APPLY, "block toeplitz (gpu)", err);
    if (rc != LM_OK)
        return rc;
    if (t->own)
        return apply_group_own(t, x, s, 0, 1, c, y, accumulate, err);
    return apply_one_cufft(t, x, s, c, y, accumulate, err);
}

extern "C" lm_code lm_gpu_toeplitz_block_apply_coils(lm_gpu_toeplitz_block *t, const lm_cfloat *x_,
                                                     const lm_cfloat *s_, long long ncoils, const lm_cfloat *c_,
                                                     lm_cfloat *y_, lm_error *err)
{
    const float2 *x = (const float2 *)x_, *s = (const float2 *)s_, *c = (const float2 *)c_;
    float2 *y = (float2 *)y_;
    lm_code rc = lm_gpu_fault_check(LM_GFAULT_SITE_APPLY, "block toeplitz (gpu)", err);
    if (!s)
        ncoils = 1;
    for (long long c0 = 0; c0 < ncoils && rc == LM_OK; c0 += t->G) {
        const int nc = (int)(ncoils - c0 < t->G ? ncoils - c0 : t->G);
        rc = t->own ? apply_group_own(t, x, s, c0, nc, c, y, c0 > 0, err)
                    : apply_one_cufft(t, x, s ? s + c0 * t->N : NULL, c, y, c0 > 0, err);
    }
    return rc;
}
