/* Device helpers shared (by inclusion) between the .cu files. */
#ifndef LM_GPU_DEVICE_CUH
#define LM_GPU_DEVICE_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#define LM_TWO_PI_F 6.28318530717958647692f
#define LM_TWO_PI 6.28318530717958647692

/* Nearest integer of |t| < 2^22 on the FMA pipe (FRND is a slower pipe):
 * adding and subtracting 1.5 * 2^23 rounds to nearest even. */
static __device__ __forceinline__ float lm_rint_fma(float t)
{
    const float magic = 12582912.0f;
    return __fsub_rn(__fadd_rn(t, magic), magic);
}

/* t - nearest integer: the phase in cycles reduced to [-1/2, 1/2]. */
static __device__ __forceinline__ float lm_reduce_cycles(float t)
{
    return t - lm_rint_fma(t);
}

/* Hardware sin/cos of a reduced phase r (cycles, |r| <= 1/2). Absolute
 * error about 2^-21.4 on [-pi, pi]. */
static __device__ __forceinline__ void lm_sincos_fast(float r, float *s, float *c)
{
    __sincosf(r * LM_TWO_PI_F, s, c);
}

/* Accurate (software) sin/cos of a reduced phase. */
static __device__ __forceinline__ void lm_sincos_soft(float r, float *s, float *c)
{
    sincosf(r * LM_TWO_PI_F, s, c);
}

static __device__ __forceinline__ double lm_warp_sum(double v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

/* Sum over a block of up to 1024 threads; the result is valid in thread 0.
 * shared: 32 doubles. */
static __device__ __forceinline__ double lm_block_sum(double v, double *shared)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = lm_warp_sum(v);
    __syncthreads();
    if (lane == 0)
        shared[warp] = v;
    __syncthreads();
    const int nw = (blockDim.x + 31) >> 5;
    v = threadIdx.x < (unsigned)nw ? shared[threadIdx.x] : 0.0;
    if (warp == 0)
        v = lm_warp_sum(v);
    return v;
}

#endif
