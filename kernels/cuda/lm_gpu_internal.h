/* Internal to kernels/cuda: shared host helpers of the GPU engine (C++,
 * compiled by nvcc). Device code is not shared between .cu files (no
 * relocatable device code): shared device helpers live in lm_gpu_device.cuh. */
#ifndef LM_GPU_INTERNAL_H
#define LM_GPU_INTERNAL_H

#include <cuda_runtime.h>
#include <cufft.h>
#include <stdint.h>

#include "lm_gpu.h"
#include "lm_tuning.h"

/* Samples resident on the device (structure of arrays). */
struct lm_gsamples {
    int64_t m;
    float *kx, *ky, *kz, *wr, *wi; /* wi NULL: real weights */
    int64_t nsets;                 /* 0 or 1: one weight set; C: wr, wi hold C x m
                                      and the outputs C x points (lm_gengine_run) */
    /* Off-resonance (both or neither): t, the sample times (m, seconds), and
     * f, the field map in Hz at every point of the lm_points the engine is
     * given (pts->n, device memory, whatever pts->f says on the host). */
    float *t;
    const float *f;
    float *f_own;                  /* f when lm_gfmap_upload made it */
};

/* Engines behind the variants. Each computes the raw sum for every point of
 * pts on the current device into device arrays d_re, d_im (pts->n each),
 * ordered on stream st; kernel_s (may be NULL) gets the device time. */
enum lm_gengine {
    LM_GE_BASE = 0,
    LM_GE_REGALLOC,
    LM_GE_COALESCE,
    LM_GE_CONSTMEM,
    LM_GE_FASTTRIG,
    LM_GE_TUNED,
    LM_GE_MULTI,
    LM_GE_NUFFT,
    LM_GE_PHASOR,
    LM_GE_DP
};

/* ---- error handling ---- */

/* Fills err from a CUDA error: out of memory -> LM_ERR_NOMEM, else LM_ERR_GPU. */
lm_code lm_gcuda_fail(lm_error *err, cudaError_t e, const char *who, const char *what);
lm_code lm_gcufft_fail(lm_error *err, cufftResult r, const char *who, const char *what);
/* cudaMalloc with a clear out-of-memory message (what, MiB wanted, MiB free). */
lm_code lm_gmalloc(void **p, size_t bytes, lm_error *err, const char *who, const char *what);
/* cudaFree that ignores NULL and errors (cleanup paths). */
void lm_gfree(void *p);

/* Statement macros for functions with an lm_code rc, an lm_error *err and a
 * "done:" cleanup label. */
#define LM_GCHECK(call, who, what)                                        \
    do {                                                                  \
        cudaError_t lm_e_ = (call);                                       \
        if (lm_e_ != cudaSuccess) {                                       \
            rc = lm_gcuda_fail(err, lm_e_, who, what);                    \
            goto done;                                                    \
        }                                                                 \
    } while (0)
#define LM_GLAUNCH(who, what) LM_GCHECK(cudaGetLastError(), who, what)
#define LM_GFFT(call, who, what)                                          \
    do {                                                                  \
        cufftResult lm_r_ = (call);                                       \
        if (lm_r_ != CUFFT_SUCCESS) {                                     \
            rc = lm_gcufft_fail(err, lm_r_, who, what);                   \
            goto done;                                                    \
        }                                                                 \
    } while (0)
#define LM_GTRY(expr)                                                     \
    do {                                                                  \
        rc = (expr);                                                      \
        if (rc != LM_OK)                                                  \
            goto done;                                                    \
    } while (0)

/* ---- streamed FFT(Q) (lm_gpu_qstream.cu) ---- */
lm_gpu_qstream *lm_gpu_qstream_ref(lm_gpu_qstream *q);
lm_code lm_gpu_qstream_put(lm_gpu_qstream *q, int frame, const float *dev, long long P, lm_error *err);
/* Member frame's FFT(Q) readable on st (*out: a device slot). */
lm_code lm_gpu_qstream_acquire(lm_gpu_qstream *q, int frame, cudaStream_t st, const float **out, lm_error *err);

/* ---- devices ---- */

/* Availability plus the caller's current device (checks its capability). */
lm_code lm_gdevice_begin(const char *who, int *device, lm_error *err);
/* Per-device lock for state shared between calls (constant memory tiles,
 * cached plans and buffers). */
void lm_gdevice_lock(int device);
void lm_gdevice_unlock(int device);
/* Devices a and b may read and write each other's memory, pool
 * allocations included (peer copies stay on the device link). */
void lm_gpeer_open(int a, int b);
/* The most devices the back end tracks (device lists, gpu-multi's workers). */
#define LM_GMAX_DEV 64
int lm_gdevice_sm_count(int device);
/* Device d exists and has compute capability 8.0 or newer (probed once,
 * on first use: a command on one GPU reads no other's properties). */
int lm_gdevice_usable(int d);

double lm_gnow(void);
/* ctl progress; returns non-zero when the caller asked to stop. */
int lm_gctl_report(const lm_ctl *ctl, double fraction);
void lm_gstats_set(double total_s, double kernel_s, double upload_s, double download_s);
void lm_gstats_stages_clear(void);
void lm_gstats_stage(const char *name, double seconds);

/* ---- samples and arguments ---- */

lm_code lm_gcheck_args(const char *who, const lm_ksum_in *in, const lm_points *pts,
                       const float *out_re, const float *out_im, int grid_only, lm_error *err);
lm_code lm_gsamples_upload(const char *who, const lm_ksum_in *in, lm_gsamples *s, cudaStream_t st,
                           lm_error *err);
void lm_gsamples_free(lm_gsamples *s);
/* pts->f (host) to the device as s->f (freed by lm_gsamples_free); nothing
 * when pts->f is NULL. */
lm_code lm_gfmap_upload(const char *who, const lm_points *pts, lm_gsamples *s, cudaStream_t st, lm_error *err);
/* The refusal of an engine without the off-resonance term. */
lm_code lm_gno_time(const char *who, lm_error *err);

/* ---- engines (device in, device out) ---- */

/* Paper-structure engines on points [j0, j1) of pts (explicit or grid),
 * writing d_re[0 .. j1-j0), d_im likewise. progress_base/scale map its
 * fraction into the caller's; cancel (may be NULL) is polled between tiles. */
/* gpu-multi (lm_gpu_multi.cu): the samples or the points split over the
 * devices of LARMOR_GPU_DEVICES, partial sums added on the host. */
lm_code lm_gmulti_run(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im, const lm_ctl *ctl,
                      double *kernel_s, lm_error *err);
lm_code lm_gpaper_run(enum lm_gengine e, const char *who, const lm_gsamples *s, const lm_points *pts,
                      int64_t j0, int64_t j1, float *d_re, float *d_im, cudaStream_t st,
                      const lm_ctl *ctl, volatile int *cancel, volatile int64_t *done_units,
                      double *kernel_s, lm_error *err);
lm_code lm_gphasor_run(const char *who, const lm_gsamples *s, const lm_points *pts, float *d_re,
                       float *d_im, cudaStream_t st, const lm_ctl *ctl, double *kernel_s,
                       lm_error *err);
lm_code lm_gnufft_run(const char *who, const lm_gsamples *s, const lm_points *pts, float *d_re,
                      float *d_im, cudaStream_t st, const lm_ctl *ctl, double *kernel_s,
                      lm_error *err);
/* The forward (type 2) NUFFT, the adjoint of lm_gnufft_run with unit
 * weights: out(m) = sum_j sc(x_j) x(x_j) exp(-i 2 pi k_m (j - c)/s) on the
 * grid pts for nsets maps sc (device, nsets x pts->n; NULL: one set,
 * sc = 1); x (pts->n) and out (m x nsets) device memory. Fine grids of
 * powers of two from 16 to 512 only (LM_ERR_UNSUPPORTED otherwise). */
lm_code lm_gnufft_type2(const char *who, const lm_gsamples *s, const lm_points *pts, const float2 *x,
                        const float2 *sc, long long nsets, float2 *out, cudaStream_t st, lm_error *err);
/* A persistent type-1/type-2 NUFFT plan of one trajectory on one grid
 * (lm_gpu_nufft.cu): made once from the samples' coordinates (device; the
 * weights are not read) and grid points pts: samples binned and sorted,
 * the shared-memory subproblems listed and counted (the plan's only host
 * sync), deapodisation factors, fine grids for max_sets (1..4) weight sets
 * spread together, the pruned transform's twiddles (or a cuFFT plan). The
 * execs only launch kernels on st: no allocation, no sync. */
struct lm_gnufft_plan;
/* Weights of a type-1 exec: set c of sample i is wc[c m + i] (interleaved)
 * or wr/wi[c m + i] (split; wi NULL: real), times scale[i] when not NULL. */
struct lm_gnufft_wts {
    const float *wr, *wi;
    const float2 *wc;
    const float *scale;
};
lm_code lm_gnufft_plan_new(const char *who, const lm_gsamples *s, const lm_points *pts, int max_sets, cudaStream_t st,
                           lm_gnufft_plan **out, lm_error *err);
void lm_gnufft_plan_free(lm_gnufft_plan *p);
/* type 1: d_re/d_im (nsets x pts->n) = sum_m w_m exp(+i 2 pi k_m (i - c)/s)
 * per set (lm_gnufft_run's sum), or interleaved into d_c when it is not
 * NULL; ctl (may be NULL) between groups. */
lm_code lm_gnufft_exec1(lm_gnufft_plan *p, const char *who, const lm_gnufft_wts *w, long long nsets, float *d_re,
                        float *d_im, float2 *d_c, cudaStream_t st, const lm_ctl *ctl, lm_error *err);
/* type 2: lm_gnufft_type2's sum (powers-of-two fine grids only). */
lm_code lm_gnufft_exec2(lm_gnufft_plan *p, const char *who, const float2 *x, const float2 *sc, long long nsets,
                        float2 *out, cudaStream_t st, lm_error *err);
/* Stage timing with events (off by default): after an exec,
 * lm_gnufft_plan_stages waits for it and gives "total" then its stages
 * (at most max); 0 when timing is off. */
void lm_gnufft_plan_timing(lm_gnufft_plan *p, int on);
int lm_gnufft_plan_stages(lm_gnufft_plan *p, const char **names, double *secs, int max);
double lm_gnufft_plan_make_s(const lm_gnufft_plan *p);
/* The direct sum for s->nsets channels with one sin/cos per pair shared by
 * all of them (lm_gpu_sets.cu); outputs nsets x pts->n each. */
lm_code lm_gsets_run(const char *who, const lm_gsamples *s, const lm_points *pts, float *d_re, float *d_im,
                     cudaStream_t st, const lm_ctl *ctl, double *kernel_s, lm_error *err);
/* Any engine by kind, on the current device (gpu-multi runs as gpu-tuned). */
lm_code lm_gengine_run(enum lm_gengine e, const char *who, const lm_gsamples *s, const lm_points *pts,
                       float *d_re, float *d_im, cudaStream_t st, const lm_ctl *ctl, double *kernel_s,
                       lm_error *err);
/* Engine kind of a GPU variant name; -1 if none. */
int lm_gengine_by_name(const char *name);
/* Host-level driver used by every lm_ksum_gpu_* entry point. */
lm_code lm_gksum_host(enum lm_gengine e, const char *who, const lm_ksum_in *in, const lm_points *pts,
                      float *out_re, float *out_im, const lm_ctl *ctl, lm_error *err);

/* gpu-tuned parameters for a device (cached after the first lookup). */
lm_code lm_gtune_params(int device, lm_gpu_tune_params *p, lm_error *err);

/* Released by lm_gpu_release(): the nufft caches. */
void lm_gnufft_release(void);

#endif
