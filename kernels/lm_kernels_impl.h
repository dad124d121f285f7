/* Internal: the functions the variant table in lm_kernels.c points at. */
#ifndef LM_KERNELS_IMPL_H
#define LM_KERNELS_IMPL_H

#include "lm_kernels.h"

/* lm_ksum_cpu.c */
lm_code lm_ksum_cpu_dp(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im,
                       const lm_ctl *ctl, lm_error *err);
lm_code lm_ksum_cpu_sp(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im,
                       const lm_ctl *ctl, lm_error *err);
/* lm_ksum_simd.c */
lm_code lm_ksum_cpu_simd(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im,
                         const lm_ctl *ctl, lm_error *err);
lm_code lm_cpu_simd_available(lm_error *why);
/* lm_ksum_nufft.c: grid points only */
lm_code lm_ksum_cpu_nufft(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im,
                          const lm_ctl *ctl, lm_error *err);

/* lm_gpu_host.c: the GPU rows of the table (gpu-base ... gpu-nufft and any
 * faster ones). Present in every build; without CUDA each row's available()
 * says the program was built without CUDA. */
const lm_variant *lm_gpu_variants(size_t *count);

#endif
