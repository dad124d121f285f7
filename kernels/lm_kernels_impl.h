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
/* Grid points only: exp(i2pi k.x) factors over the axes, so the sum is a
 * complex matrix product of per-axis phasor tables (exact, not approximate). */
lm_code lm_ksum_cpu_separable(const lm_ksum_in *in, const lm_points *pts, float *out_re,
                              float *out_im, const lm_ctl *ctl, lm_error *err);
/* lm_ksum_nufft.c: grid points only */
lm_code lm_ksum_cpu_nufft(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im,
                          const lm_ctl *ctl, lm_error *err);

/* lm_gpu_host.c: the GPU rows of the table (gpu-base ... gpu-nufft and any
 * faster ones). Present in every build; without CUDA each row's available()
 * says the program was built without CUDA. */
const lm_variant *lm_gpu_variants(size_t *count);

/* lm_kernels.c: shared by the CPU kernels. */
/* Kernels called directly (not through lm_ksum_run) check the off-resonance
 * inputs too: times and field map come together. LM_OK when both or
 * neither are given. */
lm_code lm_ksum_time_check(const char *name, const lm_ksum_in *in, const lm_points *pts, lm_error *err);
/* The refusal of a variant without time_term when times are given (the
 * structure it relies on, a sum of separable or gridded exponentials, has
 * no room for f(x) t): LM_OK when no times are given. */
lm_code lm_ksum_time_refuse(const char *name, const lm_ksum_in *in, const lm_points *pts, lm_error *err);
/* One unit of work, [0, units): called from several threads at once. */
typedef void (*lm_unit_fn)(void *ctx, int64_t unit);
/* Runs body over every unit on lm_ctl_threads(ctl) OpenMP threads, handing
 * units out one at a time. Reports progress (units done / units) from one
 * thread at most every 20 ms, and 1.0 at the end; when progress asks to
 * cancel, no new unit starts and it returns LM_ERR_CANCELLED naming what.
 * Units should be small enough (milliseconds) to keep cancel responsive. */
lm_code lm_ksum_parallel(int64_t units, const lm_ctl *ctl, lm_unit_fn body, void *ctx,
                         const char *what, lm_error *err);

/* All weight sets of in (lm_ksum_nsets, real weights with zero imaginary
 * part), blocked for the multi-set kernels: the sets split into nblk even
 * blocks of B <= block_max (the last zero-padded), block b of sample j at
 * w + (b * m + j) * B * 2 as B (re, im) pairs, so that a kernel reading one
 * block walks memory in order. block_max >= nsets gives one block, [j][c]. */
typedef struct lm_wsets {
    float *w;
    int64_t m, nsets, nblk;
    int64_t B;
} lm_wsets;
lm_code lm_wsets_make(const lm_ksum_in *in, int64_t block_max, lm_wsets *ws, const char *what,
                      lm_error *err);
void lm_wsets_free(lm_wsets *ws);
static inline const float *lm_wsets_at(const lm_wsets *ws, int64_t blk, int64_t j)
{
    return ws->w + (blk * ws->m + j) * ws->B * 2;
}

#endif
