/* gpu-nufft's fine-grid geometry and its pruned transforms
 * (lm_gpu_nufft_fft.cu), shared by the plan (lm_gpu_nufft.cu). */
#ifndef LM_GPU_NUFFT_FFT_CUH
#define LM_GPU_NUFFT_FFT_CUH

#include <cuda_runtime.h>

#include "lm_error.h"

struct nu_geo {
    int nf[3];      /* fine grid */
    int bs[3];      /* bin size (1 on flat axes) */
    int nb[3];      /* bins per axis */
    int tl[3];      /* shared tile extent: bs + W (1 on flat axes) */
    int g[3];
};

/* The pruned path applies: every transformed axis a power of two in 16..512
 * (flat z allowed), unless the tuning asks for cuFFT (gpu_nufft_cufft). */
int lm_gnu_prunable(const nu_geo &geo);
/* Sets the pass kernels' shared memory limits for line length P. */
cudaError_t lm_gnu_fft_setup(long long P);
/* The inverse transform of one fine grid fc and the deapodisation (dec)
 * into ore/oim, or interleaved into oc (ore NULL); the grid is overwritten. */
lm_code lm_gnu_prune_apply(const nu_geo &geo, float2 *fc, float2 *const tw[3], const float *dec, float *ore,
                           float *oim, float2 *oc, cudaStream_t st, const char *who, lm_error *err);
/* The type-2 mirror: the image x (times the coil map sc, or NULL)
 * deapodised into the fine grid fc and transformed forward. */
lm_code lm_gnu_expand_apply(const nu_geo &geo, const float2 *x, const float2 *sc, float2 *fc, float2 *const tw[3],
                            const float *dec, cudaStream_t st, const char *who, lm_error *err);

#endif
