/* Block Toeplitz operator of time segmentation on the device
 * (lm_gpu.h; the CPU twin and the mathematics in lm_toeplitz_block.h).
 * Per coil: one kernel writes the L zero-padded c_l' s x, one batched cuFFT
 * over the L segments, one kernel for the L x L product per frequency (the
 * Hermitian block matrix from its upper triangle), the batched inverse, one
 * kernel crops and combines with conj(c_l) and conj(s). */
#include <stdlib.h>
#include <string.h>

#include "lm_gpu_internal.h"

#define TB_T 256
#define TB_MAX_L 64 /* LM_BLOCK_MAX_L */

struct lm_gpu_toeplitz_block {
    long long n[3], p[3], N, P;
    int L;
    long long npairs;
    float2 *qhat;      /* npairs x P: FFT(shifted Q_ll') / (N^2 P) */
    float2 *work;      /* L x P */
    cufftHandle plan;  /* batched over L */
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
    if (t->have_plan)
        (void)cufftDestroy(t->plan);
    lm_gfree(t->qhat);
    lm_gfree(t->work);
    free(t);
}

extern "C" lm_code lm_gpu_toeplitz_block_new(const int64_t n_[3], int L, const lm_cfloat *q_host,
                                             lm_gpu_toeplitz_block **out, lm_error *err)
{
    const char *who = "block toeplitz (gpu)";
    lm_code rc = LM_OK;
    const cudaStream_t st = cudaStreamPerThread;
    float2 *stage = NULL;
    cufftHandle one = 0;
    int have_one = 0, device = 0;
    lm_gpu_toeplitz_block *t = NULL;
    *out = NULL;
    if (!q_host)
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
    LM_GTRY(lm_gdevice_begin(who, &device, err));
    LM_GTRY(lm_gmalloc((void **)&t->work, (size_t)(t->P * L) * sizeof(float2), err, who, "the padded segments"));
    LM_GTRY(lm_gmalloc((void **)&t->qhat, (size_t)(t->P * t->npairs) * sizeof(float2), err, who, "FFT(Q) blocks"));
    LM_GTRY(lm_gmalloc((void **)&stage, (size_t)t->P * sizeof(float2), err, who, "Q upload"));
    LM_GTRY(tb_plan(t->p, L, &t->plan, who, err));
    t->have_plan = 1;
    LM_GTRY(tb_plan(t->p, 1, &one, who, err));
    have_one = 1;
    LM_GFFT(cufftSetStream(one, st), who, "FFT stream");
    for (long long pr = 0; pr < t->npairs; pr++) {
        float2 *dst = t->qhat + pr * t->P;
        LM_GCHECK(cudaMemcpyAsync(stage, q_host + pr * t->P, (size_t)t->P * sizeof(float2), cudaMemcpyHostToDevice, st),
                  who, "upload Q");
        k_tb_shift<<<tb_blocks(t->P), TB_T, 0, st>>>(t->P, t->p[0], t->p[1], t->p[2], t->n[0], t->n[1], t->n[2], stage,
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

extern "C" lm_code lm_gpu_toeplitz_block_apply_coil(lm_gpu_toeplitz_block *t, const lm_cfloat *x_, const lm_cfloat *s_,
                                                    const lm_cfloat *c_, lm_cfloat *y_, int accumulate, lm_error *err)
{
    const char *who = "block toeplitz (gpu)";
    lm_code rc = LM_OK;
    const cudaStream_t st = cudaStreamPerThread;
    const float2 *x = (const float2 *)x_, *s = (const float2 *)s_, *c = (const float2 *)c_;
    float2 *y = (float2 *)y_;
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
