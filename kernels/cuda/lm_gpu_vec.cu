/* Device memory, vector operations and the regularisers' W^H W for the GPU
 * back end of the solvers (lm_gpu.h, recon/lm_backend_gpu.c). Every
 * operation is a kernel on the calling thread's default stream; only the
 * dot product waits, to return its value. Dot products reduce per block in
 * double and then over a fixed number of blocks in a fixed order, so runs
 * are reproducible. */
#include <math.h>
#include <stdlib.h>

#include "lm_gpu_device.cuh"
#include "lm_gpu_internal.h"

#define VEC_T 256
#define VEC_RB 1024 /* reduction blocks (fixed: deterministic sums) */

static unsigned vec_blocks(int64_t n)
{
    long long b = (n + VEC_T - 1) / VEC_T;
    return (unsigned)(b < 1 ? 1 : b > 65535 * 16 ? 65535 * 16 : b);
}

#define VEC_LOOP(j, n) for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < (n); j += (long long)gridDim.x * blockDim.x)

__global__ void k_vec_copy(long long n, float2 *__restrict__ y, const float2 *__restrict__ x)
{
    VEC_LOOP(j, n) y[j] = x[j];
}
__global__ void k_vec_zero(long long n, float2 *__restrict__ x)
{
    VEC_LOOP(j, n) x[j] = make_float2(0.0f, 0.0f);
}
__global__ void k_vec_scale(long long n, float2 *__restrict__ x, float a)
{
    VEC_LOOP(j, n)
    {
        float2 v = x[j];
        x[j] = make_float2(a * v.x, a * v.y);
    }
}
__global__ void k_vec_axpy(long long n, float2 *__restrict__ y, float a, const float2 *__restrict__ x)
{
    VEC_LOOP(j, n)
    {
        float2 v = y[j], u = x[j];
        y[j] = make_float2(v.x + a * u.x, v.y + a * u.y);
    }
}
__global__ void k_vec_xpay(long long n, float2 *__restrict__ y, float a, const float2 *__restrict__ x)
{
    VEC_LOOP(j, n)
    {
        float2 v = y[j], u = x[j];
        y[j] = make_float2(u.x + a * v.x, u.y + a * v.y);
    }
}
__global__ void k_vec_mul(long long n, float2 *__restrict__ y, const float2 *__restrict__ s, const float2 *__restrict__ x)
{
    VEC_LOOP(j, n)
    {
        float2 a = s[j], b = x[j];
        y[j] = make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
    }
}
__global__ void k_vec_mulc_acc(long long n, float2 *__restrict__ y, const float2 *__restrict__ s,
                               const float2 *__restrict__ x)
{
    VEC_LOOP(j, n)
    {
        float2 a = s[j], b = x[j], v = y[j];
        y[j] = make_float2(v.x + a.x * b.x + a.y * b.y, v.y + a.x * b.y - a.y * b.x);
    }
}
__global__ void k_vec_dot(long long n, const float2 *__restrict__ x, const float2 *__restrict__ y,
                          double *__restrict__ part)
{
    __shared__ double sh[32];
    double acc = 0.0;
    VEC_LOOP(j, n)
    {
        float2 a = x[j], b = y[j];
        acc += (double)a.x * b.x + (double)a.y * b.y;
    }
    acc = lm_block_sum(acc, sh);
    if (threadIdx.x == 0)
        part[blockIdx.x] = acc;
}
__global__ void k_vec_dot_fin(const double *__restrict__ part, int nb, double *__restrict__ out)
{
    __shared__ double sh[32];
    double a = 0.0;
    for (int i = threadIdx.x; i < nb; i += blockDim.x)
        a += part[i];
    a = lm_block_sum(a, sh);
    if (threadIdx.x == 0)
        *out = a;
}

/* CG's update (lm_backend.h's cg_update) and its three sums per block. */
__global__ void k_vec_cg_update(long long n, float a, float2 *__restrict__ x, const float2 *__restrict__ p,
                                float2 *__restrict__ r, const float2 *__restrict__ q, const float2 *__restrict__ bv,
                                double *__restrict__ part)
{
    __shared__ double sh[32];
    double rr = 0.0, xr = 0.0, xb = 0.0;
    VEC_LOOP(j, n)
    {
        const float2 pj = p[j], qj = q[j], bj = bv[j];
        float2 xj = x[j], rj = r[j];
        xj.x += a * pj.x;
        xj.y += a * pj.y;
        rj.x -= a * qj.x;
        rj.y -= a * qj.y;
        x[j] = xj;
        r[j] = rj;
        rr += (double)rj.x * rj.x + (double)rj.y * rj.y;
        xr += (double)xj.x * rj.x + (double)xj.y * rj.y;
        xb += (double)xj.x * bj.x + (double)xj.y * bj.y;
    }
    rr = lm_block_sum(rr, sh);
    if (threadIdx.x == 0)
        part[blockIdx.x] = rr;
    __syncthreads();
    xr = lm_block_sum(xr, sh);
    if (threadIdx.x == 0)
        part[VEC_RB + blockIdx.x] = xr;
    __syncthreads();
    xb = lm_block_sum(xb, sh);
    if (threadIdx.x == 0)
        part[2 * VEC_RB + blockIdx.x] = xb;
}
/* Each of blockIdx.x's VEC_RB partial sums to out[blockIdx.x]. */
__global__ void k_vec_sum3_fin(const double *__restrict__ part, double *__restrict__ out)
{
    __shared__ double sh[32];
    double a = 0.0;
    for (int i = threadIdx.x; i < VEC_RB; i += blockDim.x)
        a += part[blockIdx.x * VEC_RB + i];
    a = lm_block_sum(a, sh);
    if (threadIdx.x == 0)
        out[blockIdx.x] = a;
}

/* Partial sums of the group norms sqrt(sum_g |v[g n + j]|^2) (lm_backend.h's group_norm). */
__global__ void k_vec_group_norm(long long n, int groups, const float2 *__restrict__ v, double *__restrict__ part)
{
    __shared__ double sh[32];
    double acc = 0.0;
    VEC_LOOP(j, n)
    {
        double s = 0.0;
        for (int g = 0; g < groups; g++) {
            const float2 a = v[g * n + j];
            s += (double)a.x * a.x + (double)a.y * a.y;
        }
        acc += sqrt(s);
    }
    acc = lm_block_sum(acc, sh);
    if (threadIdx.x == 0)
        part[blockIdx.x] = acc;
}

/* y = W^H W x: each voxel gathers its own weighted differences (as the CPU
 * lm_reg_apply); w NULL means weight 1 (gradient). */
__global__ void k_reg_apply(long long N, long long n0, long long n1, long long n2, const float *__restrict__ w,
                            const float2 *__restrict__ in, float2 *__restrict__ out)
{
    const long long sy = n0, sz = n0 * n1;
    VEC_LOOP(v, N)
    {
        const long long i = v % n0, q = v / n0, j = q % n1, k = q / n1;
        const float2 x = in[v];
        const float *wx = w, *wy = w ? w + N : NULL, *wz = w ? w + 2 * N : NULL;
        float ar = 0.0f, ai = 0.0f;
#define LM_REG_EDGE(nb, wt)         \
    do {                            \
        const float w_ = (wt);      \
        const float2 o_ = in[nb];   \
        ar += w_ * (x.x - o_.x);    \
        ai += w_ * (x.y - o_.y);    \
    } while (0)
        if (i + 1 < n0) LM_REG_EDGE(v + 1, wx ? wx[v] : 1.0f);
        if (i > 0) LM_REG_EDGE(v - 1, wx ? wx[v - 1] : 1.0f);
        if (j + 1 < n1) LM_REG_EDGE(v + sy, wy ? wy[v] : 1.0f);
        if (j > 0) LM_REG_EDGE(v - sy, wy ? wy[v - sy] : 1.0f);
        if (k + 1 < n2) LM_REG_EDGE(v + sz, wz ? wz[v] : 1.0f);
        if (k > 0) LM_REG_EDGE(v - sz, wz ? wz[v - sz] : 1.0f);
#undef LM_REG_EDGE
        out[v] = make_float2(ar, ai);
    }
}

extern "C" {

lm_code lm_gpu_mem_alloc(void **p, size_t bytes, const char *what, lm_error *err)
{
    return lm_gmalloc(p, bytes, err, "gpu", what);
}

void lm_gpu_mem_free(void *p)
{
    lm_gfree(p);
}

lm_code lm_gpu_mem_upload(void *dst, const void *host, size_t bytes, lm_error *err)
{
    lm_code rc = LM_OK;
    LM_GCHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, cudaStreamPerThread), "gpu", "upload");
done:
    return rc;
}

lm_code lm_gpu_mem_download(void *host, const void *src, size_t bytes, lm_error *err)
{
    lm_code rc = LM_OK;
    LM_GCHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, cudaStreamPerThread), "gpu", "download");
    LM_GCHECK(cudaStreamSynchronize(cudaStreamPerThread), "gpu", "download");
done:
    return rc;
}

#define VEC_LAUNCH(kernel, n, ...)                                                            \
    do {                                                                                      \
        lm_code rc = LM_OK;                                                                   \
        kernel<<<vec_blocks(n), VEC_T, 0, cudaStreamPerThread>>>((long long)(n), __VA_ARGS__); \
        LM_GLAUNCH("gpu", #kernel);                                                           \
    done:                                                                                     \
        return rc;                                                                            \
    } while (0)

lm_code lm_gpu_vec_copy(int64_t n, lm_cfloat *y, const lm_cfloat *x, lm_error *err)
{
    VEC_LAUNCH(k_vec_copy, n, (float2 *)y, (const float2 *)x);
}
lm_code lm_gpu_vec_zero(int64_t n, lm_cfloat *x, lm_error *err)
{
    VEC_LAUNCH(k_vec_zero, n, (float2 *)x);
}
lm_code lm_gpu_vec_scale(int64_t n, lm_cfloat *x, float a, lm_error *err)
{
    VEC_LAUNCH(k_vec_scale, n, (float2 *)x, a);
}
lm_code lm_gpu_vec_axpy(int64_t n, lm_cfloat *y, float a, const lm_cfloat *x, lm_error *err)
{
    VEC_LAUNCH(k_vec_axpy, n, (float2 *)y, a, (const float2 *)x);
}
lm_code lm_gpu_vec_xpay(int64_t n, lm_cfloat *y, float a, const lm_cfloat *x, lm_error *err)
{
    VEC_LAUNCH(k_vec_xpay, n, (float2 *)y, a, (const float2 *)x);
}
lm_code lm_gpu_vec_mul(int64_t n, lm_cfloat *y, const lm_cfloat *s, const lm_cfloat *x, lm_error *err)
{
    VEC_LAUNCH(k_vec_mul, n, (float2 *)y, (const float2 *)s, (const float2 *)x);
}
lm_code lm_gpu_vec_mulc_acc(int64_t n, lm_cfloat *y, const lm_cfloat *s, const lm_cfloat *x, lm_error *err)
{
    VEC_LAUNCH(k_vec_mulc_acc, n, (float2 *)y, (const float2 *)s, (const float2 *)x);
}

struct lm_gpu_scratch {
    double *part;   /* 3 VEC_RB partial sums + 3 results, device */
    double *host;   /* 3, pinned */
};

lm_code lm_gpu_scratch_new(lm_gpu_scratch **out, lm_error *err)
{
    lm_code rc = LM_OK;
    lm_gpu_scratch *s = (lm_gpu_scratch *)lm_calloc(1, sizeof *s, err, "gpu scratch");
    *out = NULL;
    if (!s)
        return LM_ERR_NOMEM;
    LM_GTRY(lm_gmalloc((void **)&s->part, (3 * VEC_RB + 3) * sizeof(double), err, "gpu", "reductions"));
    LM_GCHECK(cudaMallocHost((void **)&s->host, 3 * sizeof(double)), "gpu", "pinned scalars");
    *out = s;
    return LM_OK;
done:
    lm_gpu_scratch_free(s);
    return rc;
}

void lm_gpu_scratch_free(lm_gpu_scratch *s)
{
    if (!s)
        return;
    lm_gfree(s->part);
    if (s->host)
        (void)cudaFreeHost(s->host);
    free(s);
}

lm_code lm_gpu_vec_dot(lm_gpu_scratch *s, int64_t n, const lm_cfloat *x, const lm_cfloat *y, double *out,
                       lm_error *err)
{
    lm_code rc = LM_OK;
    const cudaStream_t st = cudaStreamPerThread;
    k_vec_dot<<<VEC_RB, VEC_T, 0, st>>>((long long)n, (const float2 *)x, (const float2 *)y, s->part);
    LM_GLAUNCH("gpu", "dot product");
    k_vec_dot_fin<<<1, VEC_T, 0, st>>>(s->part, VEC_RB, s->part + VEC_RB);
    LM_GLAUNCH("gpu", "dot product");
    LM_GCHECK(cudaMemcpyAsync(s->host, s->part + VEC_RB, sizeof(double), cudaMemcpyDeviceToHost, st), "gpu",
              "dot product");
    LM_GCHECK(cudaStreamSynchronize(st), "gpu", "dot product");
    *out = *s->host;
done:
    return rc;
}

lm_code lm_gpu_vec_cg_update(lm_gpu_scratch *s, int64_t n, float a, lm_cfloat *x, const lm_cfloat *p, lm_cfloat *r,
                             const lm_cfloat *q, const lm_cfloat *bv, double out[3], lm_error *err)
{
    lm_code rc = LM_OK;
    const cudaStream_t st = cudaStreamPerThread;
    k_vec_cg_update<<<VEC_RB, VEC_T, 0, st>>>((long long)n, a, (float2 *)x, (const float2 *)p, (float2 *)r,
                                              (const float2 *)q, (const float2 *)bv, s->part);
    LM_GLAUNCH("gpu", "CG update");
    k_vec_sum3_fin<<<3, VEC_T, 0, st>>>(s->part, s->part + 3 * VEC_RB);
    LM_GLAUNCH("gpu", "CG update");
    LM_GCHECK(cudaMemcpyAsync(s->host, s->part + 3 * VEC_RB, 3 * sizeof(double), cudaMemcpyDeviceToHost, st), "gpu",
              "CG update");
    LM_GCHECK(cudaStreamSynchronize(st), "gpu", "CG update");
    for (int i = 0; i < 3; i++)
        out[i] = s->host[i];
done:
    return rc;
}

lm_code lm_gpu_vec_group_norm(lm_gpu_scratch *s, int64_t n, int groups, const lm_cfloat *v, double *out,
                              lm_error *err)
{
    lm_code rc = LM_OK;
    const cudaStream_t st = cudaStreamPerThread;
    k_vec_group_norm<<<VEC_RB, VEC_T, 0, st>>>((long long)n, groups, (const float2 *)v, s->part);
    LM_GLAUNCH("gpu", "group norm");
    k_vec_dot_fin<<<1, VEC_T, 0, st>>>(s->part, VEC_RB, s->part + VEC_RB);
    LM_GLAUNCH("gpu", "group norm");
    LM_GCHECK(cudaMemcpyAsync(s->host, s->part + VEC_RB, sizeof(double), cudaMemcpyDeviceToHost, st), "gpu",
              "group norm");
    LM_GCHECK(cudaStreamSynchronize(st), "gpu", "group norm");
    *out = *s->host;
done:
    return rc;
}

lm_code lm_gpu_reg_apply(const int64_t n[3], lm_reg_kind kind, const float *w, const lm_cfloat *x, lm_cfloat *y,
                         lm_error *err)
{
    const long long N = (long long)(n[0] * n[1] * n[2]);
    if (kind == LM_REG_IDENTITY || kind == LM_REG_WAVELET)
        return lm_gpu_vec_copy(N, y, x, err);
    lm_code rc = LM_OK;
    k_reg_apply<<<vec_blocks(N), VEC_T, 0, cudaStreamPerThread>>>(N, (long long)n[0], (long long)n[1],
                                                                   (long long)n[2],
                                                                   kind == LM_REG_ANATOMICAL ? w : NULL,
                                                                   (const float2 *)x, (float2 *)y);
    LM_GLAUNCH("gpu", "regulariser");
done:
    return rc;
}

} /* extern "C" */
