/* The non-quadratic priors' vector operations on the device (lm_gpu.h):
 * the discrete gradient, its adjoint and the group soft threshold, with
 * the CPU back end's meaning (recon/lm_backend.h). Each output value is
 * written by one thread that gathers what it needs: no atomics, so runs
 * are reproducible. The reduction (lm_gpu_vec_group_norm) lives with the
 * dot product in lm_gpu_vec.cu. */
#include <math.h>

#include "lm_gpu_device.cuh"
#include "lm_gpu_internal.h"

#define PROX_T 256

static unsigned prox_blocks(long long n)
{
    long long b = (n + PROX_T - 1) / PROX_T;
    return (unsigned)(b < 1 ? 1 : b > 65535 * 16 ? 65535 * 16 : b);
}

#define PROX_LOOP(j, n) for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < (n); j += (long long)gridDim.x * blockDim.x)

struct grad_dims {
    long long n[3], st[3], nv;
};

/* y_g(v) = x(v + e_a) - x(v) for the g-th axis a with n[a] > 1, 0 on its last slice. */
__global__ void k_grad(grad_dims d, const float2 *__restrict__ x, float2 *__restrict__ y)
{
    PROX_LOOP(v, d.nv)
    {
        const long long idx[3] = {v % d.n[0], (v / d.n[0]) % d.n[1], v / (d.n[0] * d.n[1])};
        const float2 c = x[v];
        int g = 0;
        for (int a = 0; a < 3; a++) {
            if (d.n[a] < 2)
                continue;
            float2 o = make_float2(0.0f, 0.0f);
            if (idx[a] + 1 < d.n[a]) {
                const float2 nb = x[v + d.st[a]];
                o = make_float2(nb.x - c.x, nb.y - c.y);
            }
            y[g++ * d.nv + v] = o;
        }
    }
}

/* x(v) = sum_g y_g(v - e_a) - y_g(v), the terms that exist. */
__global__ void k_grad_adj(grad_dims d, const float2 *__restrict__ y, float2 *__restrict__ x)
{
    PROX_LOOP(v, d.nv)
    {
        const long long idx[3] = {v % d.n[0], (v / d.n[0]) % d.n[1], v / (d.n[0] * d.n[1])};
        float ar = 0.0f, ai = 0.0f;
        int g = 0;
        for (int a = 0; a < 3; a++) {
            if (d.n[a] < 2)
                continue;
            const float2 *yg = y + g++ * d.nv;
            if (idx[a] > 0) {
                const float2 p = yg[v - d.st[a]];
                ar += p.x, ai += p.y;
            }
            if (idx[a] + 1 < d.n[a]) {
                const float2 q = yg[v];
                ar -= q.x, ai -= q.y;
            }
        }
        x[v] = make_float2(ar, ai);
    }
}

__global__ void k_shrink(long long n, int groups, float2 *z, const float2 *v, float t)
{
    PROX_LOOP(j, n)
    {
        float s = 0.0f;
        for (int g = 0; g < groups; g++) {
            const float2 a = v[g * n + j];
            s += a.x * a.x + a.y * a.y;
        }
        const float norm = sqrtf(s);
        const float f = norm > t ? 1.0f - t / norm : 0.0f;
        for (int g = 0; g < groups; g++) {
            const float2 a = v[g * n + j];
            z[g * n + j] = make_float2(f * a.x, f * a.y);
        }
    }
}

static grad_dims dims_of(const int64_t n[3])
{
    grad_dims d;
    for (int a = 0; a < 3; a++)
        d.n[a] = (long long)n[a];
    d.st[0] = 1;
    d.st[1] = d.n[0];
    d.st[2] = d.n[0] * d.n[1];
    d.nv = d.n[0] * d.n[1] * d.n[2];
    return d;
}

extern "C" {

lm_code lm_gpu_grad(const int64_t n[3], const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    lm_code rc = LM_OK;
    const grad_dims d = dims_of(n);
    k_grad<<<prox_blocks(d.nv), PROX_T, 0, cudaStreamPerThread>>>(d, (const float2 *)x, (float2 *)y);
    LM_GLAUNCH("gpu", "gradient");
done:
    return rc;
}

lm_code lm_gpu_grad_adj(const int64_t n[3], const lm_cfloat *y, lm_cfloat *x, lm_error *err)
{
    lm_code rc = LM_OK;
    const grad_dims d = dims_of(n);
    k_grad_adj<<<prox_blocks(d.nv), PROX_T, 0, cudaStreamPerThread>>>(d, (const float2 *)y, (float2 *)x);
    LM_GLAUNCH("gpu", "gradient adjoint");
done:
    return rc;
}

lm_code lm_gpu_shrink(int64_t n, int groups, lm_cfloat *z, const lm_cfloat *v, float t, lm_error *err)
{
    lm_code rc = LM_OK;
    k_shrink<<<prox_blocks((long long)n), PROX_T, 0, cudaStreamPerThread>>>((long long)n, groups, (float2 *)z,
                                                                          (const float2 *)v, t);
    LM_GLAUNCH("gpu", "soft threshold");
done:
    return rc;
}

} /* extern "C" */
