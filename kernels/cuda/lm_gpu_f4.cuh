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
#define F4_FWD 1
#define F4_MUL 2
#define F4_INV 4

static __host__ __device__ constexpr int brev_ct(int i, int bits)
{
    int r = 0;
    for (int b = 0; b < bits; b++)
        r |= ((i >> b) & 1) << (bits - 1 - b);
    return r;
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
            const float2 w = __ldg(tw + j * (R / len) * tstride);
#pragma unroll
            for (int b = 0; b < R; b += len) {
                const float2 a = v[b + j], c = twid<INV>(w, v[b + j + half]);
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
