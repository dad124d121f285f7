/* The GPU engine behind a plain C interface (CUDA code in kernels/cuda/).
 *
 * Every function here exists in every build. Without CUDA at build time the
 * availability checks say "built without CUDA" and everything else returns
 * LM_ERR_UNSUPPORTED with that message; with CUDA but no usable device they
 * return the driver's reason (no driver, no device, driver too old, ...).
 * Nothing here exits, aborts or prints.
 *
 * The k-space sums follow lm_ksum_fn (lm_kernels.h):
 *     out(x_j) = sum_m w_m exp(+i 2 pi (k_m . x_j + f_j t_m))
 * with real weights when wi == NULL (Q), the off-resonance term with
 * lm_ksum_in.t and lm_points.f (every direct variant: gpu-base .. gpu-multi,
 * gpu-phasor, the gpu-dp reference; not gpu-nufft). Each call is synchronous: it
 * uploads the samples, computes on the calling thread's current device
 * (device 0 unless the program chose another) and downloads the result.
 * gpu-multi uses every visible device. */
#ifndef LM_GPU_H
#define LM_GPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
/* The project's C headers have no C++ guards: give them C linkage here.
 * <complex.h> first, outside, since in C++ it pulls in templates. */
#include <complex.h>
extern "C" {
#endif

#include "lm_error.h"
#include "lm_kernels.h"
#include "lm_reg.h"
#include "lm_types.h"

/* ---- devices ------------------------------------------------------------ */

/* 1 when the library was compiled with CUDA. */
int lm_gpu_built(void);
/* Number of CUDA devices usable here (0 when none, or no driver). */
int lm_gpu_device_count(void);
/* LM_OK when at least one device of compute capability >= 8.0 is usable;
 * otherwise LM_ERR_UNSUPPORTED and why: "built without CUDA", "no CUDA
 * driver: ...", "no CUDA device", "CUDA driver too old: ...", ... */
lm_code lm_gpu_available(lm_error *why);

typedef struct lm_gpu_info {
    int device;
    char name[256];          /* e.g. "NVIDIA H200" */
    int cc_major, cc_minor;  /* compute capability */
    int sm_count;
    double clock_ghz;        /* maximum SM clock */
    double mem_total_gib, mem_free_gib;
    size_t l2_bytes;
    int driver_version;      /* CUDA version the driver supports, 13000 = 13.0 */
    int runtime_version;     /* CUDA runtime linked in */
} lm_gpu_info;

lm_code lm_gpu_describe(int device, lm_gpu_info *info, lm_error *err);
/* One line: "NVIDIA H200, sm_90, 132 SMs at 1.98 GHz, 139.8 GiB (139.1 free), driver 13.0, runtime 13.0". */
void lm_gpu_info_string(const lm_gpu_info *info, char *buf, size_t len);

/* Frees cached cuFFT plans and work buffers on every device (gpu-nufft and
 * CG keep them between calls). Safe to call at any time between calls. */
void lm_gpu_release(void);

/* Start creating the CUDA context of the current device (and its memory
 * pool) in a background thread, so that the ~0.1-0.2 s the driver takes
 * overlaps the caller's reading of its inputs; the first GPU call waits
 * for it inside the runtime. Once per process; a no-op without CUDA or
 * when LARMOR_GPU_PREWARM=0. lm_gpu_prewarm_wait joins the thread (call it
 * before the process ends; lm_gpu_release calls it too). */
void lm_gpu_prewarm(void);
void lm_gpu_prewarm_wait(void);

/* ---- a GPU that fails (lm_gpu_fault.c) ------------------------------------
 *
 * After an unrecoverable driver error (illegal address, launch failure, a
 * device that fell off the bus, ...) the CUDA context is unusable until the
 * process ends. The GPU layer remembers the first such error: from then on
 * lm_gpu_available and the entry points fail at once with LM_ERR_GPU and
 * that message instead of touching the device ("auto" then resolves to the
 * CPU). Out of memory is not such an error. */
int lm_gpu_lost(void);
void lm_gpu_mark_lost(const char *msg);

/* Test-only fault injection. spec: "nomem:plan" (the first device
 * allocation fails with LM_ERR_NOMEM: the encoding's set-up), "nomem:cg"
 * (the third application of E^H E fails: in the middle of CG or ADMM),
 * "lost:plan", "lost:cg" (the same with LM_ERR_GPU, and the GPU is then
 * lost as above), "none" or NULL (nothing; also forgets a lost state).
 * A fault fires once. Without a call, the environment variable
 * LARMOR_GPU_FAULT gives the spec (read once; an unknown value injects
 * nothing). Without CUDA nothing fires: no GPU code runs. */
lm_code lm_gpu_fault_set(const char *spec, lm_error *err);
typedef enum lm_gfault_site {
    LM_GFAULT_SITE_ENTRY = 0, /* an entry point: the lost state only */
    LM_GFAULT_SITE_ALLOC,     /* a device allocation */
    LM_GFAULT_SITE_APPLY      /* an application of the Toeplitz operator */
} lm_gfault_site;
/* Called by the GPU code at its sites: LM_OK, or the fault (who names the
 * caller in the message). */
lm_code lm_gpu_fault_check(lm_gfault_site site, const char *who, lm_error *err);

/* ---- the kernel variants (lm_ksum_fn) ------------------------------------ */

lm_code lm_ksum_gpu_base(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im,
                         const lm_ctl *ctl, lm_error *err);
lm_code lm_ksum_gpu_regalloc(const lm_ksum_in *in, const lm_points *pts, float *out_re,
                             float *out_im, const lm_ctl *ctl, lm_error *err);
lm_code lm_ksum_gpu_coalesce(const lm_ksum_in *in, const lm_points *pts, float *out_re,
                             float *out_im, const lm_ctl *ctl, lm_error *err);
lm_code lm_ksum_gpu_constmem(const lm_ksum_in *in, const lm_points *pts, float *out_re,
                             float *out_im, const lm_ctl *ctl, lm_error *err);
lm_code lm_ksum_gpu_fasttrig(const lm_ksum_in *in, const lm_points *pts, float *out_re,
                             float *out_im, const lm_ctl *ctl, lm_error *err);
lm_code lm_ksum_gpu_tuned(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im,
                          const lm_ctl *ctl, lm_error *err);
lm_code lm_ksum_gpu_multi(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im,
                          const lm_ctl *ctl, lm_error *err);
/* Grid points only: type-1 NUFFT (ES kernel, FINUFFT widths, tolerance 1e-5,
 * upsampling 2, samples binned and sorted, shared-memory spreading, cuFFT,
 * deapodisation). */
lm_code lm_ksum_gpu_nufft(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im,
                          const lm_ctl *ctl, lm_error *err);
/* Beyond the paper. Grid points: the phase factors over the axes, so each
 * thread owns an 8 x 4 patch of a grid plane and per sample needs one
 * range-reduced __sincosf for the patch's anchor plus complex multiplies by
 * per-sample phasor tables (exact powers, made in double); Q's conjugate
 * symmetry halves its work. Explicit points: shared-memory sample tiles,
 * several points per thread, range-reduced __sincosf. */
lm_code lm_ksum_gpu_phasor(const lm_ksum_in *in, const lm_points *pts, float *out_re,
                           float *out_im, const lm_ctl *ctl, lm_error *err);

/* Double-precision GPU reference (not a variant): the same sum with the
 * phase, sin/cos and accumulation in double. For tests and benchmarks. */
lm_code lm_ksum_gpu_dp(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im,
                       const lm_ctl *ctl, lm_error *err);

/* ---- gpu-tuned parameters ------------------------------------------------ */

typedef struct lm_gpu_tune_params {
    int threads;  /* threads per block: 64 .. 1024 */
    int tile;     /* samples per constant-memory tile: 64 .. 2048 */
    int unroll;   /* inner-loop unroll: 1, 2, 4 or 8 */
    int vpt;      /* points per thread: 1, 2 or 4 */
} lm_gpu_tune_params;

/* The parameters gpu-tuned uses on device: the stored sweep result for the
 * device's model ($XDG_CACHE_HOME/larmor/tune-<model>.txt) if there is one,
 * else the shipped default. source (may be NULL) receives the file's path
 * or "shipped default". */
lm_code lm_gpu_tune_get(int device, lm_gpu_tune_params *p, char *source, size_t source_len,
                        lm_error *err);
/* Times every candidate (threads x tile x unroll x vpt) on a synthetic
 * problem on device, keeps the fastest and stores it for the model; path
 * (may be NULL) receives the file written. progress (may be NULL) gets the
 * fraction done and may cancel. */
lm_code lm_gpu_tune(int device, lm_gpu_tune_params *best, char *path, size_t path_len,
                    const lm_ctl *ctl, lm_error *err);
/* Parse / format the tune file ("threads 256\ntile 2048\n..."). */
lm_code lm_gpu_tune_parse(const char *text, lm_gpu_tune_params *p, lm_error *err);

/* ---- timing of the last call -------------------------------------------- */

/* Filled by every GPU call on the calling thread: total is the call's wall
 * time; kernel is the device time of the compute (CUDA events), without the
 * uploads and downloads. */
typedef struct lm_gpu_stats {
    double total_s;
    double kernel_s;
    double upload_s;
    double download_s;
    int nstages;              /* engine stages timed with events (gpu-nufft) */
    char stage_name[8][16];
    double stage_s[8];
} lm_gpu_stats;
void lm_gpu_last_stats(lm_gpu_stats *s);

/* ---- device-resident building blocks of recon/ (back end, operators) ----
 *
 * Plain C over device memory of the calling thread's current device, every
 * operation ordered on its per-thread default stream. recon/lm_backend_gpu.c
 * makes the GPU back end of the solvers from these; the encoding operator
 * (recon/lm_encoding.c) keeps Q, the coil maps and its vectors resident. */

lm_code lm_gpu_mem_alloc(void **p, size_t bytes, const char *what, lm_error *err);
void lm_gpu_mem_free(void *p);
/* The calling thread's device: bytes allocated from its memory pool now
 * and at most since the last reset (cuFFT's plan workspaces are not in the
 * pool), and the device's free and total memory. Zeros without CUDA. */
typedef struct lm_gpu_mem_usage {
    int64_t pool_used, pool_peak, dev_free, dev_total;
} lm_gpu_mem_usage;
lm_code lm_gpu_mem_usage_get(lm_gpu_mem_usage *u, lm_error *err);
void lm_gpu_mem_peak_reset(void);
lm_code lm_gpu_mem_upload(void *dst, const void *host, size_t bytes, lm_error *err);
lm_code lm_gpu_mem_download(void *host, const void *src, size_t bytes, lm_error *err);

/* Vector operations with lm_backend.h's meaning (n complex values). */
lm_code lm_gpu_vec_copy(int64_t n, lm_cfloat *y, const lm_cfloat *x, lm_error *err);
lm_code lm_gpu_vec_zero(int64_t n, lm_cfloat *x, lm_error *err);
lm_code lm_gpu_vec_scale(int64_t n, lm_cfloat *x, float a, lm_error *err);
lm_code lm_gpu_vec_axpy(int64_t n, lm_cfloat *y, float a, const lm_cfloat *x, lm_error *err);
lm_code lm_gpu_vec_xpay(int64_t n, lm_cfloat *y, float a, const lm_cfloat *x, lm_error *err);
lm_code lm_gpu_vec_mul(int64_t n, lm_cfloat *y, const lm_cfloat *s, const lm_cfloat *x, lm_error *err);
lm_code lm_gpu_vec_mulc_acc(int64_t n, lm_cfloat *y, const lm_cfloat *s, const lm_cfloat *x, lm_error *err);
/* Re <x, y> in double, reduced in a fixed order; scratch from
 * lm_gpu_scratch_new (device partial sums and a pinned result). */
typedef struct lm_gpu_scratch lm_gpu_scratch;
lm_code lm_gpu_scratch_new(lm_gpu_scratch **out, lm_error *err);
void lm_gpu_scratch_free(lm_gpu_scratch *s);
lm_code lm_gpu_vec_dot(lm_gpu_scratch *s, int64_t n, const lm_cfloat *x, const lm_cfloat *y, double *out,
                       lm_error *err);
/* lm_backend.h's cg_update: x += a p, r -= a q; out = <r,r>, Re<x,r>, Re<x,bv>. */
lm_code lm_gpu_vec_cg_update(lm_gpu_scratch *s, int64_t n, float a, lm_cfloat *x, const lm_cfloat *p, lm_cfloat *r,
                             const lm_cfloat *q, const lm_cfloat *bv, double out[3], lm_error *err);

/* The priors' operations with lm_backend.h's meaning (grad, grad_adj,
 * shrink, group_norm); n: the volume's sizes, vectors in device memory. */
lm_code lm_gpu_grad(const int64_t n[3], const lm_cfloat *x, lm_cfloat *y, lm_error *err);
lm_code lm_gpu_grad_adj(const int64_t n[3], const lm_cfloat *y, lm_cfloat *x, lm_error *err);
lm_code lm_gpu_shrink(int64_t n, int groups, lm_cfloat *z, const lm_cfloat *v, float t, lm_error *err);
lm_code lm_gpu_vec_group_norm(lm_gpu_scratch *s, int64_t n, int groups, const lm_cfloat *v, double *out,
                              lm_error *err);

/* y = W^H W x (lm_reg.h), w: 3N edge weights in device memory (anatomical). */
lm_code lm_gpu_reg_apply(const int64_t n[3], lm_reg_kind kind, const float *w, const lm_cfloat *x,
                         lm_cfloat *y, lm_error *err);

/* F^H F on the device (lm_toeplitz.h's twin): FFT(Q) made once from Q in
 * host memory (q_host) or device memory (q_dev, interleaved), cuFFT plans
 * owned by the operator, the zero padding skipped, the third axis fused
 * with the product (lm_gpu_cg_set_fft_mode). x and y: N values in device
 * memory. */
typedef struct lm_gpu_toeplitz lm_gpu_toeplitz;
lm_code lm_gpu_toeplitz_new(const int64_t n[3], const lm_cfloat *q_host, const lm_cfloat *q_dev,
                            lm_gpu_toeplitz **out, lm_error *err);
lm_code lm_gpu_toeplitz_apply(lm_gpu_toeplitz *t, const lm_cfloat *x, lm_cfloat *y, lm_error *err);
/* One coil of the SENSE normal operator in one pass over the data:
 * y = conj(s) . F^H F (s . x), added to y when accumulate (s NULL: 1).
 * x != y. All device pointers, N values each. */
lm_code lm_gpu_toeplitz_apply_coil(lm_gpu_toeplitz *t, const lm_cfloat *x, const lm_cfloat *s, lm_cfloat *y,
                                   int accumulate, lm_error *err);
double lm_gpu_toeplitz_diag(const lm_gpu_toeplitz *t);
void lm_gpu_toeplitz_free(lm_gpu_toeplitz *t);

/* Operators of one shape that are applied in turn on one thread (the
 * frames of a dynamic model) need one padded grid, coil product, plan set
 * and twiddles between them: t drops its own and shares with's
 * (reference-counted; with may be freed first). A no-op when the two
 * differ in shape, device or FFT mode. */
lm_code lm_gpu_toeplitz_share(lm_gpu_toeplitz *t, lm_gpu_toeplitz *with, lm_error *err);

/* Streamed FFT(Q) (docs/gpu-design.md): the members' FFT(Q) in pinned host
 * memory, two device slots, the next member's upload on a copy stream
 * while this one computes. lm_gpu_toeplitz_park moves t's FFT(Q) there as
 * member `frame` and frees it on the device; its products then read the
 * slot (bit-identical results). The operators of one stream are applied
 * by one thread. Reference-counted: free after parking is allowed. */
typedef struct lm_gpu_qstream lm_gpu_qstream;
lm_code lm_gpu_qstream_new(int frames, lm_gpu_qstream **out, lm_error *err);
void lm_gpu_qstream_free(lm_gpu_qstream *q);
/* Uploads into the slots so far (a test's proof that it streamed). */
long long lm_gpu_qstream_uploads(const lm_gpu_qstream *q);
lm_code lm_gpu_toeplitz_park(lm_gpu_toeplitz *t, lm_gpu_qstream *qs, int frame, lm_error *err);

/* SENSE's normal operator sum_c conj(s_c) F^H F (s_c x) with the coils
 * split across devices (issue 14): devs[0] must be the current device,
 * where x, y, Q (q_host, or q_dev interleaved) and the maps s (ncoils x N)
 * live; each listed device gets a host thread, FFT(Q) and its share of the
 * maps, and the partial sums are added on devs[0]. A device listed twice
 * runs two workers on one GPU (how the split is tested without a
 * multi-GPU host). x != y, device pointers. */
typedef struct lm_gpu_sense_split lm_gpu_sense_split;
lm_code lm_gpu_sense_split_new(const int64_t n[3], const lm_cfloat *q_host, const lm_cfloat *q_dev,
                               const lm_cfloat *s, int64_t ncoils, const int *devs, int ndev,
                               lm_gpu_sense_split **out, lm_error *err);
lm_code lm_gpu_sense_split_apply(lm_gpu_sense_split *m, const lm_cfloat *x, lm_cfloat *y, lm_error *err);
double lm_gpu_sense_split_diag(const lm_gpu_sense_split *m);
int lm_gpu_sense_split_workers(const lm_gpu_sense_split *m);
void lm_gpu_sense_split_free(lm_gpu_sense_split *m);
/* The devices to split work over: LARMOR_GPU_DEVICES ("0,1"; "0,0" two
 * workers on device 0) when set, else every usable device. Returns how
 * many (<= max; 0: no usable device), or -1 with a one-line error
 * (LM_ERR_INVALID) when the list is malformed or names a device that this
 * machine lacks. */
int lm_gpu_device_list(int *devs, int max, lm_error *err);
/* The workers of a SENSE split of ncoils coils (lm_gpu_sense_split_new's
 * devs): an explicit LARMOR_GPU_DEVICES list as written; otherwise every
 * usable GPU twice (0,1,0,1: two host threads fill each other's launch
 * gaps) while each worker keeps two coils. Returns how many (< 2: no
 * split), or -1 with lm_gpu_device_list's error. */
int lm_gpu_sense_split_devices(int64_t ncoils, int *devs, int max, lm_error *err);

/* How gpu-multi shares this sum over lm_gpu_device_list's devices: 0 the
 * points (the paper's split), 1 the samples (a point share too small to
 * fill the GPU; the host adds the partial sums); -1 no usable device. */
int lm_gpu_multi_by_samples(const lm_ksum_in *in, const lm_points *pts);

/* The block Toeplitz operator of time segmentation on the device
 * (lm_toeplitz_block.h's twin): FFT of the L(L+1)/2 blocks Q_ll'
 * (lm_block_pair order; q in host memory, or device memory when
 * q_on_device) made once. apply_coil: y = conj(s) . sum_{l,l'} conj(c_l) .
 * T_ll' (c_l' . s . x), added to y when accumulate; apply_coils: the sum of
 * that over ncoils maps s (ncoils x N; NULL: one coil, s = 1) into y,
 * max_coils of them at a time (the work buffers: L padded grids per coil).
 * x, s, c (L x N phases) and y device pointers, x != y. */
typedef struct lm_gpu_toeplitz_block lm_gpu_toeplitz_block;
lm_code lm_gpu_toeplitz_block_new(const int64_t n[3], int L, const lm_cfloat *q, int q_on_device, int max_coils,
                                  lm_gpu_toeplitz_block **out, lm_error *err);
lm_code lm_gpu_toeplitz_block_apply_coil(lm_gpu_toeplitz_block *t, const lm_cfloat *x, const lm_cfloat *s,
                                         const lm_cfloat *c, lm_cfloat *y, int accumulate, lm_error *err);
lm_code lm_gpu_toeplitz_block_apply_coils(lm_gpu_toeplitz_block *t, const lm_cfloat *x, const lm_cfloat *s,
                                          long long ncoils, const lm_cfloat *c, lm_cfloat *y, lm_error *err);
void lm_gpu_toeplitz_block_free(lm_gpu_toeplitz_block *t);

/* Q (lm_q_count values, raw sums, interleaved) into device memory with a
 * GPU variant's engine; weights |phi|^2 from the geometry. */
lm_code lm_gpu_q(const lm_geom *g, const lm_traj *t, const char *variant, lm_cfloat *q_dev,
                 const lm_ctl *ctl, lm_error *err);
/* d_c = (1/N) phi(k) sum_x s_c(x) x(x) exp(-i 2 pi k . x) for every coil
 * (the encoding's forward) through the forward NUFFT on the device: x_dev
 * (N values) and s_dev (N x ncoils, or NULL: one coil, s = 1) device
 * memory, d_host (m x coils) host. gpu-nufft only (LM_ERR_UNSUPPORTED for
 * the direct variants, and for fine grids that are not powers of two from
 * 16 to 512). */
lm_code lm_gpu_forward(const lm_geom *g, const lm_traj *t, const lm_cfloat *x_dev, const lm_cfloat *s_dev,
                       long long ncoils, const char *variant, lm_cfloat *d_host, lm_error *err);
/* Q of in->nsets complex weight sets (in->wr, in->wi: nsets x m, host; the
 * caller's weights, |phi|^2 included) into q_dev, set after set
 * (lm_q_count values each, interleaved): time segmentation's blocks. */
lm_code lm_gpu_q_sets(const lm_geom *g, const lm_ksum_in *in, const char *variant, lm_cfloat *q_dev,
                      const lm_ctl *ctl, lm_error *err);
/* x = (1/N) sum_c conj(s_c) F^H d_c into device memory: the samples' coordinates go up once, each
 * channel's weights conj(phi) d_c in turn. s_dev (N x coils, device) NULL:
 * one channel, s = 1. f_dev (N floats, device, Hz on the image grid) or
 * NULL: with it F^H carries the off-resonance term exp(+i 2 pi f(x) t_m),
 * the times from t->t (uploaded once; required); the direct variants only
 * (gpu-nufft refuses: time segmentation is the recon's business). */
lm_code lm_gpu_adjoint(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_cfloat *s_dev,
                       const float *f_dev, const char *variant, lm_cfloat *x_dev, const lm_ctl *ctl, lm_error *err);

/* gpu-nufft's session of one encoding (lm_gpu_encode.cu): the trajectory's
 * coordinates and phi(k) on the device, the NUFFT plan (samples binned
 * and sorted, subproblems listed, deapodisation, fine grids, twiddles) and
 * the buffers of up to ncoils channels, made once on the calling thread's
 * current device; E^H d and E x then upload or download the data and
 * launch kernels only (no allocation, no re-binning). */
typedef struct lm_gpu_nufft lm_gpu_nufft;
lm_code lm_gpu_nufft_new(const lm_geom *g, const lm_traj *t, int64_t ncoils, lm_gpu_nufft **out, lm_error *err);
void lm_gpu_nufft_free(lm_gpu_nufft *p);
/* lm_gpu_adjoint (no field map) and lm_gpu_forward of gpu-nufft through the
 * session: k->m the plan's samples, k->ncoils and ncoils at most its own. */
lm_code lm_gpu_nufft_adjoint(lm_gpu_nufft *p, const lm_kdata *k, const lm_cfloat *s_dev, lm_cfloat *x_dev,
                             const lm_ctl *ctl, lm_error *err);
lm_code lm_gpu_nufft_forward(lm_gpu_nufft *p, const lm_cfloat *x_dev, const lm_cfloat *s_dev, long long ncoils,
                             lm_cfloat *d_host, lm_error *err);
/* Time-segmented E^H d (lm_timeseg.h) through the session, all on the
 * device: x = (1/N) sum_l conj(c_l) sum_c conj(s_c) F^H (conj(b_l) d_c),
 * the data uploaded once. b_dev: the L interpolators (L x m), c_dev: the
 * segment phases exp(-i 2 pi f tau_l) (L x N), both device memory. */
lm_code lm_gpu_nufft_adjoint_segmented(lm_gpu_nufft *p, const lm_kdata *k, const lm_cfloat *s_dev, int L,
                                       const lm_cfloat *b_dev, const lm_cfloat *c_dev, lm_cfloat *x_dev,
                                       const lm_ctl *ctl, lm_error *err);
/* c_dev (L x n, device) = exp(-i 2 pi f tau_l) from the field map f_host
 * (n values, Hz, host) and the segment centres tau (L, seconds): the
 * phases lm_timeseg_phases makes on the host, made where they are used. */
lm_code lm_gpu_segment_phases(const float *f_host, int64_t n, const double *tau, int L, lm_cfloat *c_dev,
                              lm_error *err);
/* The raw transforms on device memory (tests, bench), queued on the
 * thread's default stream and not waited for (lm_gpu_nufft_wait):
 *   type 1: out[i] = sum_m w_m exp(+i 2 pi k_m . (i - n/2)/n)   (N values)
 *   type 2: d_m    = sum_i x_i exp(-i 2 pi k_m . (i - n/2)/n)   (m values)
 * i the voxel index per axis (x fastest), n the matrix, k in cycles per
 * FOV (lm_traj's); no phi, no 1/N. */
lm_code lm_gpu_nufft_type1(lm_gpu_nufft *p, const lm_cfloat *w_dev, lm_cfloat *out_dev, lm_error *err);
lm_code lm_gpu_nufft_type2(lm_gpu_nufft *p, const lm_cfloat *x_dev, lm_cfloat *d_dev, lm_error *err);
lm_code lm_gpu_nufft_wait(lm_gpu_nufft *p, lm_error *err);
/* Stage times with CUDA events (off by default): after a timed call,
 * lm_gpu_nufft_stages waits for it and gives "total" then each stage
 * (seconds, at most max entries); 0 when timing is off. */
void lm_gpu_nufft_timing(lm_gpu_nufft *p, int on);
int lm_gpu_nufft_stages(lm_gpu_nufft *p, const char **names, double *secs, int max);
/* Host wall time of the plan's making (binning, sort, subproblems). */
double lm_gpu_nufft_plan_s(const lm_gpu_nufft *p);

/* The Toeplitz product's FFT strategy: 0 = one 3D cuFFT plan over the
 * padded grid, 1 = pruned (skip the zero padding as the CPU solver does),
 * 2 = pruned with the third axis, FFT(Q) and the crop fused in one pass
 * (power-of-two padded z from 16 to 512; others fall back to 1). Default 2;
 * the environment variable LARMOR_GPU_CG_FFT overrides (bench). */
void lm_gpu_cg_set_fft_mode(int mode);

#ifdef __cplusplus
}
#endif

#endif
