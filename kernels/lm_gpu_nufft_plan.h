/* gpu-nufft with the CPU NUFFT's plan life cycle (lm_nufft.h, after
 * FINUFFT and cuFINUFFT):
 *
 *   lm_gpu_nufft_make_plan -> lm_gpu_nufft_set_points -> lm_gpu_nufft_execute (many) -> lm_gpu_nufft_destroy
 *
 * on the calling thread's current GPU, with the values in device memory.
 * The uniform side is the image grid x_i = (i - n/2)/n per axis (the CPU
 * plan's c = n/2, s = n), and the GPU plan's signs are the encoding's:
 *
 *   type 1 (samples -> grid):  f_i = sum_m w_m exp(+i 2 pi k_m . x_i)
 *   type 2 (grid -> samples):  v_m = sum_i f_i exp(-i 2 pi k_m . x_i)
 *
 * with about 1e-6 relative error (its kernel is fixed: a tolerance finer
 * than LM_GPU_NUFFT_TOL is refused). Type 2 runs on the pruned fine grids
 * only: each grid size a power of two from 8 to 256. Built in every program; without CUDA
 * every call says so. */
#ifndef LM_GPU_NUFFT_PLAN_H
#define LM_GPU_NUFFT_PLAN_H

#include <stdint.h>

#include "lm_error.h"
#include "lm_types.h"

#define LM_GPU_NUFFT_TOL 1e-6

typedef struct lm_gpu_nufft_plan lm_gpu_nufft_plan;

/* type 1 or 2; dim 2 (n[2] must be 1) or 3; sign +1 for type 1, -1 for
 * type 2; tol in [LM_GPU_NUFFT_TOL, 1e-1]. */
lm_code lm_gpu_nufft_make_plan(int type, int dim, const int64_t n[3], int sign, double tol, lm_gpu_nufft_plan **out,
                               lm_error *err);
/* The m samples' coordinates in cycles (host arrays, not kept; kz NULL in
 * 2D): bins and sorts them on the device. Again for new points. */
lm_code lm_gpu_nufft_set_points(lm_gpu_nufft_plan *p, int64_t m, const float *kx, const float *ky, const float *kz,
                                lm_error *err);
/* type 1: in m values, out N; type 2: in N, out m (device memory,
 * interleaved complex); returns when out is ready. */
lm_code lm_gpu_nufft_execute(lm_gpu_nufft_plan *p, const lm_cfloat *in_dev, lm_cfloat *out_dev, lm_error *err);
void lm_gpu_nufft_destroy(lm_gpu_nufft_plan *p);

#endif
