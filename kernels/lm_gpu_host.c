/* The GPU rows of the variant table (lm_kernels.c calls lm_gpu_variants).
 * Present in every build: without CUDA each row's available() says the
 * program was built without CUDA, and the GPU entry points of lm_gpu.h
 * return that as an error. */
#include "lm_config.h"
#include "lm_gpu.h"
#include "lm_kernels_impl.h"

static lm_code lm_gpu_row_available(lm_error *why)
{
    return lm_gpu_available(why);
}

#if !LM_HAVE_CUDA

#include <string.h>

#define LM_NO_CUDA "built without CUDA"

int lm_gpu_built(void)
{
    return 0;
}

lm_code lm_gpu_available(lm_error *why)
{
    return lm_fail(why, LM_ERR_UNSUPPORTED, LM_NO_CUDA);
}

int lm_gpu_device_count(void)
{
    return 0;
}

lm_code lm_gpu_describe(int device, lm_gpu_info *info, lm_error *err)
{
    (void)device;
    if (info)
        memset(info, 0, sizeof *info);
    return lm_fail(err, LM_ERR_UNSUPPORTED, "gpu: " LM_NO_CUDA);
}

void lm_gpu_info_string(const lm_gpu_info *info, char *buf, size_t len)
{
    (void)info;
    if (buf && len)
        buf[0] = '\0';
}

void lm_gpu_release(void)
{
}

void lm_gpu_prewarm(void)
{
}

lm_code lm_gpu_sense_split_new(const int64_t n[3], const lm_cfloat *q_host, const lm_cfloat *q_dev,
                               const lm_cfloat *s, int64_t ncoils, const int *devs, int ndev,
                               lm_gpu_sense_split **out, lm_error *err)
{
    (void)n, (void)q_host, (void)q_dev, (void)s, (void)ncoils, (void)devs, (void)ndev;
    *out = NULL;
    return lm_fail(err, LM_ERR_UNSUPPORTED, "sense split (gpu): " LM_NO_CUDA);
}

lm_code lm_gpu_sense_split_apply(lm_gpu_sense_split *m, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    (void)m, (void)x, (void)y;
    return lm_fail(err, LM_ERR_UNSUPPORTED, "sense split (gpu): " LM_NO_CUDA);
}

double lm_gpu_sense_split_diag(const lm_gpu_sense_split *m)
{
    (void)m;
    return 0;
}

int lm_gpu_sense_split_workers(const lm_gpu_sense_split *m)
{
    (void)m;
    return 0;
}

void lm_gpu_sense_split_free(lm_gpu_sense_split *m)
{
    (void)m;
}

int lm_gpu_device_list(int *devs, int max, lm_error *err)
{
    (void)devs, (void)max, (void)err;
    return 0;
}

int lm_gpu_sense_split_devices(int64_t ncoils, int *devs, int max, lm_error *err)
{
    (void)ncoils, (void)devs, (void)max, (void)err;
    return 0;
}

int lm_gpu_multi_by_samples(const lm_ksum_in *in, const lm_points *pts)
{
    (void)in, (void)pts;
    return -1;
}

void lm_gpu_prewarm_wait(void)
{
}

#define LM_NO_CUDA_KSUM(fn, name)                                                                  \
    lm_code fn(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im,           \
               const lm_ctl *ctl, lm_error *err)                                                   \
    {                                                                                              \
        (void)in, (void)pts, (void)out_re, (void)out_im, (void)ctl;                                \
        return lm_fail(err, LM_ERR_UNSUPPORTED, name ": not available: " LM_NO_CUDA);             \
    }
LM_NO_CUDA_KSUM(lm_ksum_gpu_base, "gpu-base")
LM_NO_CUDA_KSUM(lm_ksum_gpu_regalloc, "gpu-regalloc")
LM_NO_CUDA_KSUM(lm_ksum_gpu_coalesce, "gpu-coalesce")
LM_NO_CUDA_KSUM(lm_ksum_gpu_constmem, "gpu-constmem")
LM_NO_CUDA_KSUM(lm_ksum_gpu_fasttrig, "gpu-fasttrig")
LM_NO_CUDA_KSUM(lm_ksum_gpu_tuned, "gpu-tuned")
LM_NO_CUDA_KSUM(lm_ksum_gpu_multi, "gpu-multi")
LM_NO_CUDA_KSUM(lm_ksum_gpu_nufft, "gpu-nufft")
LM_NO_CUDA_KSUM(lm_ksum_gpu_phasor, "gpu-phasor")
LM_NO_CUDA_KSUM(lm_ksum_gpu_dp, "gpu-dp")

lm_code lm_gpu_tune_get(int device, lm_gpu_tune_params *p, char *source, size_t source_len, lm_error *err)
{
    (void)device, (void)p, (void)source, (void)source_len;
    return lm_fail(err, LM_ERR_UNSUPPORTED, "tune: " LM_NO_CUDA);
}

lm_code lm_gpu_tune(int device, lm_gpu_tune_params *best, char *path, size_t path_len, const lm_ctl *ctl,
                    lm_error *err)
{
    (void)device, (void)best, (void)path, (void)path_len, (void)ctl;
    return lm_fail(err, LM_ERR_UNSUPPORTED, "tune: " LM_NO_CUDA);
}

lm_code lm_gpu_tune_parse(const char *text, lm_gpu_tune_params *p, lm_error *err)
{
    (void)text, (void)p;
    return lm_fail(err, LM_ERR_UNSUPPORTED, "tune: " LM_NO_CUDA);
}

void lm_gpu_last_stats(lm_gpu_stats *s)
{
    if (s)
        memset(s, 0, sizeof *s);
}

void lm_gpu_cg_set_fft_mode(int mode)
{
    (void)mode;
}

lm_code lm_gpu_mem_alloc(void **p, size_t bytes, const char *what, lm_error *err)
{
    (void)bytes, (void)what;
    *p = NULL;
    return lm_fail(err, LM_ERR_UNSUPPORTED, "gpu: " LM_NO_CUDA);
}
void lm_gpu_mem_free(void *p)
{
    (void)p;
}
#define LM_NO_CUDA_CALL(...) \
    {                        \
        (void)0, __VA_ARGS__; \
        return lm_fail(err, LM_ERR_UNSUPPORTED, "gpu: " LM_NO_CUDA); \
    }
lm_code lm_gpu_mem_upload(void *dst, const void *host, size_t bytes, lm_error *err) LM_NO_CUDA_CALL((void)dst, (void)host, (void)bytes)
lm_code lm_gpu_mem_download(void *host, const void *src, size_t bytes, lm_error *err) LM_NO_CUDA_CALL((void)host, (void)src, (void)bytes)
lm_code lm_gpu_vec_copy(int64_t n, lm_cfloat *y, const lm_cfloat *x, lm_error *err) LM_NO_CUDA_CALL((void)n, (void)y, (void)x)
lm_code lm_gpu_vec_zero(int64_t n, lm_cfloat *x, lm_error *err) LM_NO_CUDA_CALL((void)n, (void)x)
lm_code lm_gpu_vec_scale(int64_t n, lm_cfloat *x, float a, lm_error *err) LM_NO_CUDA_CALL((void)n, (void)x, (void)a)
lm_code lm_gpu_vec_axpy(int64_t n, lm_cfloat *y, float a, const lm_cfloat *x, lm_error *err) LM_NO_CUDA_CALL((void)n, (void)y, (void)a, (void)x)
lm_code lm_gpu_vec_xpay(int64_t n, lm_cfloat *y, float a, const lm_cfloat *x, lm_error *err) LM_NO_CUDA_CALL((void)n, (void)y, (void)a, (void)x)
lm_code lm_gpu_vec_mul(int64_t n, lm_cfloat *y, const lm_cfloat *s, const lm_cfloat *x, lm_error *err) LM_NO_CUDA_CALL((void)n, (void)y, (void)s, (void)x)
lm_code lm_gpu_vec_mulc_acc(int64_t n, lm_cfloat *y, const lm_cfloat *s, const lm_cfloat *x, lm_error *err) LM_NO_CUDA_CALL((void)n, (void)y, (void)s, (void)x)
lm_code lm_gpu_scratch_new(lm_gpu_scratch **out, lm_error *err) LM_NO_CUDA_CALL(*out = NULL)
void lm_gpu_scratch_free(lm_gpu_scratch *s)
{
    (void)s;
}
lm_code lm_gpu_vec_dot(lm_gpu_scratch *s, int64_t n, const lm_cfloat *x, const lm_cfloat *y, double *out,
                       lm_error *err) LM_NO_CUDA_CALL((void)s, (void)n, (void)x, (void)y, *out = 0)
lm_code lm_gpu_vec_cg_update(lm_gpu_scratch *s, int64_t n, float a, lm_cfloat *x, const lm_cfloat *p, lm_cfloat *r,
                             const lm_cfloat *q, const lm_cfloat *bv, double out[3], lm_error *err)
    LM_NO_CUDA_CALL((void)s, (void)n, (void)a, (void)x, (void)p, (void)r, (void)q, (void)bv,
                    out[0] = out[1] = out[2] = 0)
lm_code lm_gpu_grad(const int64_t n[3], const lm_cfloat *x, lm_cfloat *y, lm_error *err)
    LM_NO_CUDA_CALL((void)n, (void)x, (void)y)
lm_code lm_gpu_grad_adj(const int64_t n[3], const lm_cfloat *y, lm_cfloat *x, lm_error *err)
    LM_NO_CUDA_CALL((void)n, (void)y, (void)x)
lm_code lm_gpu_shrink(int64_t n, int groups, lm_cfloat *z, const lm_cfloat *v, float t, lm_error *err)
    LM_NO_CUDA_CALL((void)n, (void)groups, (void)z, (void)v, (void)t)
lm_code lm_gpu_vec_group_norm(lm_gpu_scratch *s, int64_t n, int groups, const lm_cfloat *v, double *out,
                              lm_error *err) LM_NO_CUDA_CALL((void)s, (void)n, (void)groups, (void)v, *out = 0)
lm_code lm_gpu_reg_apply(const int64_t n[3], lm_reg_kind kind, const float *w, const lm_cfloat *x, lm_cfloat *y,
                         lm_error *err) LM_NO_CUDA_CALL((void)n, (void)kind, (void)w, (void)x, (void)y)
lm_code lm_gpu_toeplitz_new(const int64_t n[3], const lm_cfloat *q_host, const lm_cfloat *q_dev,
                            lm_gpu_toeplitz **out, lm_error *err) LM_NO_CUDA_CALL((void)n, (void)q_host, (void)q_dev, *out = NULL)
lm_code lm_gpu_toeplitz_apply(lm_gpu_toeplitz *t, const lm_cfloat *x, lm_cfloat *y, lm_error *err) LM_NO_CUDA_CALL((void)t, (void)x, (void)y)
lm_code lm_gpu_toeplitz_apply_coil(lm_gpu_toeplitz *t, const lm_cfloat *x, const lm_cfloat *s, lm_cfloat *y,
                                   int accumulate, lm_error *err)
    LM_NO_CUDA_CALL((void)t, (void)x, (void)s, (void)y, (void)accumulate)
lm_code lm_gpu_toeplitz_share(lm_gpu_toeplitz *t, lm_gpu_toeplitz *with, lm_error *err)
    LM_NO_CUDA_CALL((void)t, (void)with)
lm_code lm_gpu_qstream_new(int frames, lm_gpu_qstream **out, lm_error *err)
    LM_NO_CUDA_CALL((void)frames, *out = NULL)
void lm_gpu_qstream_free(lm_gpu_qstream *q)
{
    (void)q;
}
long long lm_gpu_qstream_uploads(const lm_gpu_qstream *q)
{
    (void)q;
    return 0;
}
lm_code lm_gpu_toeplitz_park(lm_gpu_toeplitz *t, lm_gpu_qstream *qs, int frame, lm_error *err)
    LM_NO_CUDA_CALL((void)t, (void)qs, (void)frame)
lm_code lm_gpu_mem_usage_get(lm_gpu_mem_usage *u, lm_error *err)
{
    (void)err;
    memset(u, 0, sizeof *u);
    return LM_OK;
}
void lm_gpu_mem_peak_reset(void) {}
double lm_gpu_toeplitz_diag(const lm_gpu_toeplitz *t)
{
    (void)t;
    return 0;
}
void lm_gpu_toeplitz_free(lm_gpu_toeplitz *t)
{
    (void)t;
}
lm_code lm_gpu_toeplitz_block_new(const int64_t n[3], int L, const lm_cfloat *q, int q_on_device, int max_coils,
                                  lm_gpu_toeplitz_block **out, lm_error *err)
    LM_NO_CUDA_CALL((void)n, (void)L, (void)q, (void)q_on_device, (void)max_coils, *out = NULL)
lm_code lm_gpu_toeplitz_block_apply_coils(lm_gpu_toeplitz_block *t, const lm_cfloat *x, const lm_cfloat *s,
                                          long long ncoils, const lm_cfloat *c, lm_cfloat *y, lm_error *err)
    LM_NO_CUDA_CALL((void)t, (void)x, (void)s, (void)ncoils, (void)c, (void)y)
lm_code lm_gpu_toeplitz_block_apply_coil(lm_gpu_toeplitz_block *t, const lm_cfloat *x, const lm_cfloat *s,
                                         const lm_cfloat *c, lm_cfloat *y, int accumulate, lm_error *err)
    LM_NO_CUDA_CALL((void)t, (void)x, (void)s, (void)c, (void)y, (void)accumulate)
void lm_gpu_toeplitz_block_free(lm_gpu_toeplitz_block *t)
{
    (void)t;
}
lm_code lm_gpu_q(const lm_geom *g, const lm_traj *t, const char *variant, lm_cfloat *q_dev, const lm_ctl *ctl,
                 lm_error *err) LM_NO_CUDA_CALL((void)g, (void)t, (void)variant, (void)q_dev, (void)ctl)
lm_code lm_gpu_forward(const lm_geom *g, const lm_traj *t, const lm_cfloat *x_dev, const lm_cfloat *s_dev,
                       long long ncoils, const char *variant, lm_cfloat *d_host, lm_error *err)
    LM_NO_CUDA_CALL((void)g, (void)t, (void)x_dev, (void)s_dev, (void)ncoils, (void)variant, (void)d_host)
lm_code lm_gpu_q_sets(const lm_geom *g, const lm_ksum_in *in, const char *variant, lm_cfloat *q_dev,
                      const lm_ctl *ctl, lm_error *err)
    LM_NO_CUDA_CALL((void)g, (void)in, (void)variant, (void)q_dev, (void)ctl)
lm_code lm_gpu_adjoint(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_cfloat *s_dev,
                       const float *f_dev, const char *variant, lm_cfloat *x_dev, const lm_ctl *ctl, lm_error *err)
    LM_NO_CUDA_CALL((void)g, (void)t, (void)k, (void)s_dev, (void)f_dev, (void)variant, (void)x_dev, (void)ctl)
lm_code lm_gpu_nufft_new(const lm_geom *g, const lm_traj *t, int64_t ncoils, lm_gpu_nufft **out, lm_error *err)
    LM_NO_CUDA_CALL((void)g, (void)t, (void)ncoils, *out = NULL)
void lm_gpu_nufft_free(lm_gpu_nufft *p)
{
    (void)p;
}
lm_code lm_gpu_nufft_adjoint(lm_gpu_nufft *p, const lm_kdata *k, const lm_cfloat *s_dev, lm_cfloat *x_dev,
                             const lm_ctl *ctl, lm_error *err)
    LM_NO_CUDA_CALL((void)p, (void)k, (void)s_dev, (void)x_dev, (void)ctl)
lm_code lm_gpu_nufft_forward(lm_gpu_nufft *p, const lm_cfloat *x_dev, const lm_cfloat *s_dev, long long ncoils,
                             lm_cfloat *d_host, lm_error *err)
    LM_NO_CUDA_CALL((void)p, (void)x_dev, (void)s_dev, (void)ncoils, (void)d_host)
lm_code lm_gpu_nufft_adjoint_segmented(lm_gpu_nufft *p, const lm_kdata *k, const lm_cfloat *s_dev, int L,
                                       const lm_cfloat *b_dev, const lm_cfloat *c_dev, lm_cfloat *x_dev,
                                       const lm_ctl *ctl, lm_error *err)
    LM_NO_CUDA_CALL((void)p, (void)k, (void)s_dev, (void)L, (void)b_dev, (void)c_dev, (void)x_dev, (void)ctl)
lm_code lm_gpu_segment_phases(const float *f_host, int64_t n, const double *tau, int L, lm_cfloat *c_dev,
                              lm_error *err) LM_NO_CUDA_CALL((void)f_host, (void)n, (void)tau, (void)L, (void)c_dev)
lm_code lm_gpu_nufft_type1(lm_gpu_nufft *p, const lm_cfloat *w_dev, lm_cfloat *out_dev, lm_error *err)
    LM_NO_CUDA_CALL((void)p, (void)w_dev, (void)out_dev)
lm_code lm_gpu_nufft_type2(lm_gpu_nufft *p, const lm_cfloat *x_dev, lm_cfloat *d_dev, lm_error *err)
    LM_NO_CUDA_CALL((void)p, (void)x_dev, (void)d_dev)
lm_code lm_gpu_nufft_wait(lm_gpu_nufft *p, lm_error *err) LM_NO_CUDA_CALL((void)p)
void lm_gpu_nufft_timing(lm_gpu_nufft *p, int on)
{
    (void)p, (void)on;
}
int lm_gpu_nufft_stages(lm_gpu_nufft *p, const char **names, double *secs, int max)
{
    (void)p, (void)names, (void)secs, (void)max;
    return 0;
}
double lm_gpu_nufft_plan_s(const lm_gpu_nufft *p)
{
    (void)p;
    return 0;
}
#endif

/* Rows in the paper's order, then the ones beyond it. */
static const lm_variant lm_gpu_rows[] = {
    {"gpu-base", "voxel and k data in global memory, software sin/cos (paper 5.1)", LM_DEVICE_GPU, 0, 0,
     lm_gpu_row_available, lm_ksum_gpu_base, 0, 1},
    {"gpu-regalloc", "voxel data and sums in registers (paper 5.2)", LM_DEVICE_GPU, 0, 0,
     lm_gpu_row_available, lm_ksum_gpu_regalloc, 0, 1},
    {"gpu-coalesce", "k data packed as float4 for one coalesced 16-byte load (paper 5.3)", LM_DEVICE_GPU, 0, 0,
     lm_gpu_row_available, lm_ksum_gpu_coalesce, 0, 1},
    {"gpu-constmem", "k data tiled through constant memory (paper 5.4)", LM_DEVICE_GPU, 0, 0,
     lm_gpu_row_available, lm_ksum_gpu_constmem, 0, 1},
    {"gpu-fasttrig", "constant memory plus hardware __sincosf on the range-reduced phase (paper 5.5)",
     LM_DEVICE_GPU, 0, 0, lm_gpu_row_available, lm_ksum_gpu_fasttrig, 0, 1},
    {"gpu-tuned", "fasttrig with swept threads/block, tile, unroll and points per thread (paper 5.6)",
     LM_DEVICE_GPU, 0, 0, lm_gpu_row_available, lm_ksum_gpu_tuned, 0, 1},
    {"gpu-multi", "gpu-tuned over every visible GPU (LARMOR_GPU_DEVICES), one host thread each: the points split "
                  "(paper 5.7), or the samples when a share of points is too small to fill a GPU",
     LM_DEVICE_GPU, 0, 0, lm_gpu_row_available, lm_ksum_gpu_multi, 0, 1},
    {"gpu-nufft", "non-uniform FFT on the GPU: binned shared-memory spreading, cuFFT, deapodisation",
     LM_DEVICE_GPU, 1, 1, lm_gpu_row_available, lm_ksum_gpu_nufft, 0, 0},
    {"gpu-phasor", "grid: per-axis phasor tables, 8x4 points per thread, FMA-bound; explicit (and a grid with a "
                   "field map): shared k tiles",
     LM_DEVICE_GPU, 0, 0, lm_gpu_row_available, lm_ksum_gpu_phasor, 0, 1},
};

const lm_variant *lm_gpu_variants(size_t *count)
{
    if (count)
        *count = sizeof lm_gpu_rows / sizeof lm_gpu_rows[0];
    return lm_gpu_rows;
}
