/* Four-step FFT building blocks for lines of P = P1 P2 values (powers of
 * two, 16..512), shared by the Toeplitz product (lm_gpu_toeplitz.cu, mode
 * 3) and the NUFFT's pruned inverse transform (lm_gpu_nufft.cu):
 *
 *   X[k1 + P1 k2] = sum_n2 W_P2^(n2 k2) W_P^(n2 k1) sum_n1 W_P1^(n1 k1) x[P2 n1 + n2]
 *
 * each thread does one length-P1 DFT in registers (phase A), one exchange
 * through shared memory, then length-P2 DFTs in registers (phase B); the
 * inverse runs the same steps backwards. The exchange keeps A[k1][n2] at
 * k1 + P1 n2, so phase B reads and writes the same places (in-place safe
 * per thread). 32 lines per block, the warp's lanes are the 32 lines:
 * every shared access is to consecutive words. Twiddles tw[k] =
 * exp(-2 pi i k / P), k < P; unnormalised, the inverse uses conj(tw) (the
 * signs of cuFFT's forward and inverse). */
#ifndef LM_GPU_F4_CUH /* after lm_gpu_internal.h */
#define LM_GPU_F4_CUH

static __device__ __forceinline__ float2 cmul(float2 a, float2 b)
{
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

static __device__ __forceinline__ float2 cmulc(float2 a, float2 b) /* conj(a) b */
{
    return make_float2(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x);
}

/* w times v, or conj(w) times v for the inverse transform. */
template <bool INV> static __device__ __forceinline__ float2 twid(float2 w, float2 v)
{
    return INV ? cmulc(w, v) : cmul(w, v);
}

#define FS 33 /* shared row stride: 32 lanes + 1 */
#define LM_F4_RSQRT2 0.70710678118654752f
#define F4_FWD 1
#define F4_MUL 2
#define F4_INV 4

/* i's low bits (at most 9) reversed. No loop: with i an unrolled loop's
 * counter it must fold to a constant so that reg_dft's swaps name fixed
 * registers. (A loop here was left unrolled in the larger kernels: the
 * reversal then ran at run time and each swap became a chain of selects,
 * a fifth of k_tb_xfused's instructions.) */
static __host__ __device__ __forceinline__ constexpr int brev_ct(int i, int bits)
{
    return (((i & 1) << 8) | ((i & 2) << 6) | ((i & 4) << 4) | ((i & 8) << 2) | (i & 16) | ((i & 32) >> 2) |
            ((i & 64) >> 4) | ((i & 128) >> 6) | ((i & 256) >> 8)) >>
           (9 - bits);
}

static __host__ __device__ constexpr int log2_ct(int r)
{
    return r <= 1 ? 0 : 1 + log2_ct(r / 2);
}

/* DFT of R values in registers, natural order in and out; tw holds the
 * line's P twiddles exp(-2 pi i k / P), tstride = P / R. */
template <int R, bool INV> static __device__ __forceinline__ void reg_dft(float2 (&v)[R], const float2 *__restrict__ tw,
                                                                         int tstride)
{
    constexpr int bits = log2_ct(R);
#pragma unroll
    for (int i = 0; i < R; i++) {
        const int j = brev_ct(i, bits);
        if (j > i) {
            const float2 t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
    }
#pragma unroll
    for (int len = 2; len <= R; len <<= 1) {
        const int half = len / 2;
#pragma unroll
        for (int j = 0; j < half; j++) {
            /* the twiddle is exp(-2 pi i j / len): 1, -i and (+-1 - i)/sqrt 2
             * (j = 0, len/4, len/8, 3 len/8; known once unrolled) cost no
             * load and fewer multiplies; the rest come from tw (about half
             * of the butterflies of a 32-point line need no table) */
            const int kind = j == 0 ? 0 : 4 * j == len ? 1 : 8 * j == len ? 2 : 8 * j == 3 * len ? 3 : 4;
            const float2 w = kind == 4 ? __ldg(tw + j * (R / len) * tstride) : make_float2(1.0f, 0.0f);
#pragma unroll
            for (int b = 0; b < R; b += len) {
                const float2 a = v[b + j], u = v[b + j + half];
                float2 c;
                if (kind == 0) {
                    c = u;
                } else if (kind == 1) { /* -i u, conj: +i u */
                    c = INV ? make_float2(-u.y, u.x) : make_float2(u.y, -u.x);
                } else if (kind == 2) { /* (1 - i)/sqrt2 u, conj (1 + i)/sqrt2 u */
                    c = INV ? make_float2(LM_F4_RSQRT2 * (u.x - u.y), LM_F4_RSQRT2 * (u.x + u.y))
                            : make_float2(LM_F4_RSQRT2 * (u.x + u.y), LM_F4_RSQRT2 * (u.y - u.x));
                } else if (kind == 3) { /* (-1 - i)/sqrt2 u, conj (-1 + i)/sqrt2 u */
                    c = INV ? make_float2(-LM_F4_RSQRT2 * (u.x + u.y), LM_F4_RSQRT2 * (u.x - u.y))
                            : make_float2(LM_F4_RSQRT2 * (u.y - u.x), -LM_F4_RSQRT2 * (u.x + u.y));
                } else {
                    c = twid<INV>(w, u);
                }
                v[b + j] = make_float2(a.x + c.x, a.y + c.y);
                v[b + j + half] = make_float2(a.x - c.x, a.y - c.y);
            }
        }
    }
}

/* Phase A forward: this thread's n2 = sub, input values in v (x[P2 n1 + n2]). */
template <int P1, int P2> static __device__ __forceinline__ void f4_phase_a(float2 (&v)[P1], int sub,
                                                                           const float2 *__restrict__ tw)
{
    constexpr int P = P1 * P2;
    reg_dft<P1, false>(v, tw, P / P1);
#pragma unroll
    for (int k1 = 1; k1 < P1; k1++)
        v[k1] = cmul(__ldg(tw + sub * k1), v[k1]); /* sub k1 < P */
}

/* Phase B on the exchange for one k1: forward DFT over n2 (FWD), times
 * FFT(Q) (MUL), inverse DFT and twiddle back (INV). Reads and writes
 * ex[(k1 + P1 j) FS + lane], j < P2; or global X when the flags say. */
template <int P1, int P2, int FLAGS> static __device__ __forceinline__ void
f4_phase_b(float2 *ex, int k1, int lane, bool in, float2 *__restrict__ g, size_t base, long long es,
           const float *__restrict__ qhat, const float2 *__restrict__ tw)
{
    constexpr int P = P1 * P2;
    float2 u[P2];
#pragma unroll
    for (int j = 0; j < P2; j++)
        u[j] = (FLAGS & F4_FWD) ? ex[(k1 + P1 * j) * FS + lane]
                                : (in ? g[base + (size_t)es * (k1 + P1 * j)] : make_float2(0.0f, 0.0f));
    if (FLAGS & F4_FWD)
        reg_dft<P2, false>(u, tw, P / P2);
    if (FLAGS & F4_MUL)
#pragma unroll
        for (int j = 0; j < P2; j++) {
            const float q = in ? qhat[base + (size_t)es * (k1 + P1 * j)] : 0.0f;
            u[j] = make_float2(u[j].x * q, u[j].y * q);
        }
    if (!(FLAGS & F4_INV)) { /* forward only: X to global, natural order */
        if (in)
#pragma unroll
            for (int j = 0; j < P2; j++)
                g[base + (size_t)es * (k1 + P1 * j)] = u[j];
        return;
    }
    reg_dft<P2, true>(u, tw, P / P2);
#pragma unroll
    for (int n2 = 0; n2 < P2; n2++)
        ex[(k1 + P1 * n2) * FS + lane] = n2 ? cmulc(__ldg(tw + n2 * k1), u[n2]) : u[n2];
}

/* Phase C inverse: this thread's n2 = sub, from the exchange; natural
 * order out in v (x[P2 n1 + n2]). */
template <int P1, int P2> static __device__ __forceinline__ void f4_phase_c(float2 (&v)[P1], const float2 *ex, int sub,
                                                                           int lane, const float2 *__restrict__ tw)
{
    constexpr int P = P1 * P2;
#pragma unroll
    for (int k1 = 0; k1 < P1; k1++)
        v[k1] = ex[(k1 + P1 * sub) * FS + lane];
    reg_dft<P1, true>(v, tw, P / P1);
}


/* Launch set-up: dynamic shared memory of one block. */
template <int P1, int P2> static size_t f4_smem(void)
{
    return (size_t)P1 * P2 * FS * sizeof(float2);
}

/* Strided lines: element i of line (x, o) at g[x + os o + es i], 32 x per
 * block, blockIdx.y = o, blockIdx.z = b a batch of such grids bs apart.
 * Loads the first nload values (zero padding after), stores the first
 * nstore. */
template <int P1, int P2, int FLAGS>
__global__ void __launch_bounds__(32 * P2) k_f4_lines(long long p0, long long es, long long os, int nload, int nstore,
                                                      float2 *__restrict__ g, const float *__restrict__ qhat,
                                                      const float2 *__restrict__ tw, long long bs)
{
    g += (size_t)bs * blockIdx.z;
    extern __shared__ float2 ex[];
    const int lane = threadIdx.x & 31, sub = threadIdx.x >> 5;
    const long long x = (long long)blockIdx.x * 32 + lane;
    const bool in = x < p0;
    const size_t base = (size_t)x + (size_t)os * blockIdx.y;
    float2 v[P1];
    if (FLAGS & F4_FWD) {
#pragma unroll
        for (int n1 = 0; n1 < P1; n1++) {
            const int i = P2 * n1 + sub;
            v[n1] = in && i < nload ? g[base + (size_t)es * i] : make_float2(0.0f, 0.0f);
        }
        f4_phase_a<P1, P2>(v, sub, tw);
#pragma unroll
        for (int k1 = 0; k1 < P1; k1++)
            ex[(k1 + P1 * sub) * FS + lane] = v[k1];
        __syncthreads();
    }
    for (int k1 = sub; k1 < P1; k1 += P2)
        f4_phase_b<P1, P2, FLAGS>(ex, k1, lane, in, g, base, es, qhat, tw);
    if (!(FLAGS & F4_INV))
        return;
    __syncthreads();
    f4_phase_c<P1, P2>(v, ex, sub, lane, tw);
    if (in)
#pragma unroll
        for (int n1 = 0; n1 < P1; n1++) {
            const int i = P2 * n1 + sub;
            if (i < nstore)
                g[base + (size_t)es * i] = v[n1];
        }
}

/* The forward transform of 32 rows staged in shared memory (value i of
 * row l at ex[i FS + l], natural order), in place: the spectrum in natural
 * order at the same places. Every thread of the block calls it; it begins
 * and ends with a barrier. */
template <int P1, int P2>
static __device__ __forceinline__ void f4_rows_forward_staged(float2 *ex, int lane, int sub,
                                                              const float2 *__restrict__ tw)
{
    constexpr int P = P1 * P2;
    __syncthreads();
    float2 v[P1];
#pragma unroll
    for (int n1 = 0; n1 < P1; n1++)
        v[n1] = ex[(P2 * n1 + sub) * FS + lane];
    __syncthreads();
    f4_phase_a<P1, P2>(v, sub, tw);
#pragma unroll
    for (int k1 = 0; k1 < P1; k1++)
        ex[(k1 + P1 * sub) * FS + lane] = v[k1];
    __syncthreads();
    for (int k1 = sub; k1 < P1; k1 += P2) { /* phase B forward, kept in the exchange */
        float2 u[P2];
#pragma unroll
        for (int j = 0; j < P2; j++)
            u[j] = ex[(k1 + P1 * j) * FS + lane];
        reg_dft<P2, false>(u, tw, P / P2);
#pragma unroll
        for (int j = 0; j < P2; j++)
            ex[(k1 + P1 * j) * FS + lane] = u[j]; /* X[k1 + P1 k2] at its natural place */
    }
    __syncthreads();
}

/* The 32 staged rows r0 + l (ex[i FS + l]) out to buf, row r = y + n1 z at
 * buf + P (y + p1 z), whole rows. */
template <int P1, int P2>
static __device__ __forceinline__ void f4_rows_store(const float2 *ex, long long r0, long long rows, long long n1,
                                                     long long p1, float2 *__restrict__ buf)
{
    constexpr int P = P1 * P2, NT = 32 * P2;
    for (int idx = threadIdx.x; idx < 32 * P; idx += NT) {
        const int l = idx / P, i = idx % P;
        const long long r = r0 + l;
        if (r < rows)
            buf[(size_t)i + (size_t)P * ((size_t)(r % n1) + (size_t)p1 * (size_t)(r / n1))] = ex[i * FS + l];
    }
}

/* The x axis forward: rows r = y + n1 z (y < n1, z < n2) of the image times
 * the coil map (s NULL: 1), padded from n0 to P, to buf + P (y + p1 z);
 * blockIdx.z = b takes s + b ss and buf + b bs (a batch of products). */
template <int P1, int P2>
__global__ void __launch_bounds__(32 * P2) k_f4_rows_fwd(long long rows, long long n0, long long n1, long long p1,
                                                         const float2 *__restrict__ x, const float2 *__restrict__ s,
                                                         float2 *__restrict__ buf, const float2 *__restrict__ tw,
                                                         long long ss, long long bs)
{
    constexpr int P = P1 * P2, NT = 32 * P2;
    if (s)
        s += (size_t)ss * blockIdx.z;
    buf += (size_t)bs * blockIdx.z;
    extern __shared__ float2 ex[];
    const int lane = threadIdx.x & 31, sub = threadIdx.x >> 5;
    const long long r0 = (long long)blockIdx.x * 32;
    for (int idx = threadIdx.x; idx < 32 * P; idx += NT) { /* stage the rows, coalesced */
        const int l = idx / P, i = idx % P;
        const long long r = r0 + l;
        float2 v = make_float2(0.0f, 0.0f);
        if (i < n0 && r < rows) {
            const size_t j = (size_t)i + (size_t)n0 * (size_t)r;
            v = x[j];
            if (s)
                v = cmul(v, s[j]);
        }
        ex[i * FS + l] = v;
    }
    f4_rows_forward_staged<P1, P2>(ex, lane, sub, tw);
    f4_rows_store<P1, P2>(ex, r0, rows, n1, p1, buf);
}

/* The inverse transform of 32 rows staged in shared memory (value i of
 * row l at ex[i FS + l], natural order), in place: natural order out at
 * the same places. Every thread of the block calls it; it begins and ends
 * with a barrier. */
template <int P1, int P2>
static __device__ __forceinline__ void f4_rows_inverse_staged(float2 *ex, int lane, int sub,
                                                              const float2 *__restrict__ tw)
{
    constexpr int P = P1 * P2;
    __syncthreads();
    for (int k1 = sub; k1 < P1; k1 += P2) { /* phase B inverse, in place */
        float2 u[P2];
#pragma unroll
        for (int j = 0; j < P2; j++)
            u[j] = ex[(k1 + P1 * j) * FS + lane];
        reg_dft<P2, true>(u, tw, P / P2);
#pragma unroll
        for (int n2 = 0; n2 < P2; n2++)
            ex[(k1 + P1 * n2) * FS + lane] = n2 ? cmulc(__ldg(tw + n2 * k1), u[n2]) : u[n2];
    }
    __syncthreads();
    float2 v[P1];
    f4_phase_c<P1, P2>(v, ex, sub, lane, tw);
    __syncthreads();
#pragma unroll
    for (int n1 = 0; n1 < P1; n1++)
        ex[(P2 * n1 + sub) * FS + lane] = v[n1];
    __syncthreads();
}

/* The x axis inverse: rows of buf back, cropped to n0, times conj(s) (s
 * NULL: 1), written to y or added to it. */
template <int P1, int P2>
__global__ void __launch_bounds__(32 * P2) k_f4_rows_inv(long long rows, long long n0, long long n1, long long p1,
                                                         const float2 *__restrict__ buf, const float2 *__restrict__ s,
                                                         float2 *__restrict__ y, int acc, const float2 *__restrict__ tw)
{
    constexpr int P = P1 * P2, NT = 32 * P2;
    extern __shared__ float2 ex[];
    const int lane = threadIdx.x & 31, sub = threadIdx.x >> 5;
    const long long r0 = (long long)blockIdx.x * 32;
    for (int idx = threadIdx.x; idx < 32 * P; idx += NT) {
        const int l = idx / P, i = idx % P;
        const long long r = r0 + l;
        ex[i * FS + l] = r < rows ? buf[(size_t)i + (size_t)P * ((size_t)(r % n1) + (size_t)p1 * (size_t)(r / n1))]
                                  : make_float2(0.0f, 0.0f);
    }
    f4_rows_inverse_staged<P1, P2>(ex, lane, sub, tw);
    for (int idx = threadIdx.x; idx < 32 * P; idx += NT) {
        const int l = idx / P, i = idx % P;
        const long long r = r0 + l;
        if (i < n0 && r < rows) {
            const size_t j = (size_t)i + (size_t)n0 * (size_t)r;
            float2 v2 = ex[i * FS + l];
            if (s)
                v2 = cmulc(s[j], v2);
            if (acc) {
                const float2 o = y[j];
                v2 = make_float2(v2.x + o.x, v2.y + o.y);
            }
            y[j] = v2;
        }
    }
}

/* Launchers by line length: (P1, P2) = (4,4) (8,4) (8,8) (16,8) (16,16) (32,16). */

template <int P1, int P2> static cudaError_t f4_setup(void)
{
    const int sm = (int)f4_smem<P1, P2>();
    cudaError_t e = cudaSuccess;
    const void *fns[5] = {(const void *)k_f4_lines<P1, P2, F4_FWD>,
                          (const void *)k_f4_lines<P1, P2, F4_FWD | F4_MUL | F4_INV>,
                          (const void *)k_f4_lines<P1, P2, F4_INV>, (const void *)k_f4_rows_fwd<P1, P2>,
                          (const void *)k_f4_rows_inv<P1, P2>};
    for (int i = 0; i < 5 && e == cudaSuccess; i++)
        if (sm > 48 * 1024)
            e = cudaFuncSetAttribute(fns[i], cudaFuncAttributeMaxDynamicSharedMemorySize, sm);
    return e;
}

static cudaError_t f4_setup_len(long long P)
{
    switch (P) {
    case 16: return f4_setup<4, 4>();
    case 32: return f4_setup<8, 4>();
    case 64: return f4_setup<8, 8>();
    case 128: return f4_setup<16, 8>();
    case 256: return f4_setup<16, 16>();
    case 512: return f4_setup<32, 16>();
    default: return cudaErrorInvalidValue;
    }
}

template <int P1, int P2>
static void f4_lines(int flags, dim3 grid, cudaStream_t st, long long p0, long long es, long long os, int nload,
                     int nstore, float2 *g, const float *qhat, const float2 *tw, long long bs)
{
    const size_t sm = f4_smem<P1, P2>();
    if (flags == F4_FWD)
        k_f4_lines<P1, P2, F4_FWD><<<grid, 32 * P2, sm, st>>>(p0, es, os, nload, nstore, g, qhat, tw, bs);
    else if (flags == F4_INV)
        k_f4_lines<P1, P2, F4_INV><<<grid, 32 * P2, sm, st>>>(p0, es, os, nload, nstore, g, qhat, tw, bs);
    else
        k_f4_lines<P1, P2, F4_FWD | F4_MUL | F4_INV><<<grid, 32 * P2, sm, st>>>(p0, es, os, nload, nstore, g, qhat, tw,
                                                                              bs);
}

/* grid.z: a batch of grids bs values apart (bs 0 with grid.z 1). */
static void f4_lines_len(long long P, int flags, dim3 grid, cudaStream_t st, long long p0, long long es, long long os,
                         int nload, int nstore, float2 *g, const float *qhat, const float2 *tw, long long bs = 0)
{
    switch (P) {
    case 16: f4_lines<4, 4>(flags, grid, st, p0, es, os, nload, nstore, g, qhat, tw, bs); break;
    case 32: f4_lines<8, 4>(flags, grid, st, p0, es, os, nload, nstore, g, qhat, tw, bs); break;
    case 64: f4_lines<8, 8>(flags, grid, st, p0, es, os, nload, nstore, g, qhat, tw, bs); break;
    case 128: f4_lines<16, 8>(flags, grid, st, p0, es, os, nload, nstore, g, qhat, tw, bs); break;
    case 256: f4_lines<16, 16>(flags, grid, st, p0, es, os, nload, nstore, g, qhat, tw, bs); break;
    default: f4_lines<32, 16>(flags, grid, st, p0, es, os, nload, nstore, g, qhat, tw, bs); break;
    }
}

template <int P1, int P2>
static void f4_rows(int inverse, dim3 blocks, cudaStream_t st, long long rows, long long n0, long long n1, long long p1,
                    const float2 *x, const float2 *s, float2 *buf, float2 *y, int acc, const float2 *tw, long long ss,
                    long long bs)
{
    const size_t sm = f4_smem<P1, P2>();
    if (!inverse)
        k_f4_rows_fwd<P1, P2><<<blocks, 32 * P2, sm, st>>>(rows, n0, n1, p1, x, s, buf, tw, ss, bs);
    else
        k_f4_rows_inv<P1, P2><<<blocks, 32 * P2, sm, st>>>(rows, n0, n1, p1, buf, s, y, acc, tw);
}

/* Forward: blocks.z products x s_b (s + b ss) into buf + b bs. Inverse: one
 * grid (blocks.z 1). */
static void f4_rows_len(long long P, int inverse, dim3 blocks, cudaStream_t st, long long rows, long long n0,
                        long long n1, long long p1, const float2 *x, const float2 *s, float2 *buf, float2 *y, int acc,
                        const float2 *tw, long long ss = 0, long long bs = 0)
{
    switch (P) {
    case 16: f4_rows<4, 4>(inverse, blocks, st, rows, n0, n1, p1, x, s, buf, y, acc, tw, ss, bs); break;
    case 32: f4_rows<8, 4>(inverse, blocks, st, rows, n0, n1, p1, x, s, buf, y, acc, tw, ss, bs); break;
    case 64: f4_rows<8, 8>(inverse, blocks, st, rows, n0, n1, p1, x, s, buf, y, acc, tw, ss, bs); break;
    case 128: f4_rows<16, 8>(inverse, blocks, st, rows, n0, n1, p1, x, s, buf, y, acc, tw, ss, bs); break;
    case 256: f4_rows<16, 16>(inverse, blocks, st, rows, n0, n1, p1, x, s, buf, y, acc, tw, ss, bs); break;
    default: f4_rows<32, 16>(inverse, blocks, st, rows, n0, n1, p1, x, s, buf, y, acc, tw, ss, bs); break;
    }
}

/* count twiddles exp(-2 pi i k / p) on the device. */
static lm_code upload_twiddles(long long p, long long count, float2 **out, const char *who, lm_error *err)
{
    float2 *h = (float2 *)lm_alloc((size_t)count, sizeof(float2), err, "twiddles");
    if (!h)
        return LM_ERR_NOMEM;
    for (long long k = 0; k < count; k++) {
        double sn, cs;
        sincospi(-2.0 * (double)k / (double)p, &sn, &cs);
        h[k] = make_float2((float)cs, (float)sn);
    }
    lm_code rc = lm_gmalloc((void **)out, (size_t)count * sizeof(float2), err, who, "twiddles");
    if (rc == LM_OK && cudaMemcpy(*out, h, (size_t)count * sizeof(float2), cudaMemcpyHostToDevice) != cudaSuccess)
        rc = lm_fail(err, LM_ERR_GPU, "%s: cannot upload the twiddles", who);
    free(h);
    return rc;
}

#endif
