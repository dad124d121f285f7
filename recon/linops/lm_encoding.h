/* The encoding operator E of an acquisition (docs/conventions.md section 1):
 *
 *   (E rho)_c(m) = (1/N) phi(k_m) sum_n s_c(x_n) rho(x_n) exp(-i 2 pi k_m . x_n)
 *
 * for coil c with sensitivity s_c (s = 1 for one coil without maps). It owns
 * what the operator depends on (geometry, trajectory with its sample times,
 * coil maps, field map) and its plan, made once on the
 * device of the chosen kernel variant: the back end, the coil maps and Q
 * resident there. Three applications:
 *
 *   adjoint  E^H d  = (1/N) sum_c conj(s_c) F^H d_c   (F^H d: the variant's sum)
 *   normal   E^H E x = sum_c conj(s_c) (F^H F)(s_c x)  (one Toeplitz Q for all coils)
 *   forward  E x     (NUFFT type 2: gpu-nufft on the device, else the CPU plan)
 *
 * With a field map f and sample times t each sum gains exp(-i 2 pi f(x) t_m)
 * (docs/conventions.md section 1), either exactly (segments 0: direct sums with the kernel's
 * time term, O(MN) per application, normal = adjoint(forward): the
 * accuracy reference; a NUFFT variant hands these to its device's best
 * direct variant, lm_encoding_exact_variant) or time-segmented (lm_timeseg.h,
 * Fessler et al. 2005): adjoint sum_l conj(c_l) F^H (conj(b_l) d) with the
 * coils x segments as weight sets, normal through the block Toeplitz
 * operator of the L(L+1)/2 blocks Q_ll' (lm_toeplitz_block.h).
 *
 * Vectors of the image (N values) live in lm_encoding_backend()'s memory;
 * k-space (m x coils, lm_kdata) in host memory. */
#ifndef LM_ENCODING_H
#define LM_ENCODING_H

#include "lm_backend.h"
#include "lm_kernels.h"
#include "lm_linop.h"
#include "lm_segments.h"
#include "lm_types.h"

typedef struct lm_encoding lm_encoding;

typedef struct lm_encoding_desc {
    const lm_geom *geom;
    const lm_traj *traj;
    const lm_sens *sens;    /* NULL: one coil, s = 1; else its n must be geom->n. Borrowed,
                               as traj: both must outlive the encoding */
    const char *variant;    /* kernel variant for Q and F^H d; its device picks the back end */
    const float *fieldmap;  /* off-resonance f(x) in Hz on geom's grid (N values), or NULL;
                               with it traj->t must hold the sample times. Borrowed */
    int segments;           /* with a field map: LM_SEGMENTS_AUTO, 0 (exact) or L >= 1 */
    int seg_minmax;         /* 1: the min-max interpolator (uniform over the field's range)
                               instead of least squares over its histogram (lm_timeseg.h) */
    int use_cache;          /* Q from / to the disk cache (lm_qcache.h) */
    int threads;            /* CPU threads, 0: all cores */
    const lm_cfloat *sens_on_backend; /* sens's maps already in the back end's memory (another
                               encoding's lm_encoding_maps on the same device, borrowed: must
                               outlive this one): not uploaded again. NULL: uploaded here */
    int trim_plan;          /* 1: gpu-nufft's plan (fine grids, trajectory) is freed after each
                               E^H d and E x and made again by the next: for models of many
                               encodings, whose normal operator runs through Q alone */
} lm_encoding_desc;

lm_code lm_encoding_new(const lm_encoding_desc *d, lm_encoding **out, lm_error *err);
void lm_encoding_free(lm_encoding *e);

lm_backend *lm_encoding_backend(const lm_encoding *e);
const lm_variant *lm_encoding_variant(const lm_encoding *e);
int64_t lm_encoding_voxels(const lm_encoding *e);
/* Coils of the model: the maps' count, or 1 without maps. */
int64_t lm_encoding_coils(const lm_encoding *e);
/* Time segments in use: 0 without a field map or when exact; L >= 1
 * otherwise, with the interpolator's worst relative error over the field
 * map's range in *interp_error (may be NULL). */
int lm_encoding_segments(const lm_encoding *e, double *interp_error);
/* GPU SENSE: how many device workers the normal operator's coils are split
 * across (LARMOR_GPU_DEVICES or several GPUs); 1 otherwise. */
int lm_encoding_gpu_workers(const lm_encoding *e);
/* With a field map and segments 0: the direct variant that computes the
 * exact sums (the chosen one, or its device's best direct variant when the
 * chosen one is a NUFFT); NULL otherwise. */
const lm_variant *lm_encoding_exact_variant(const lm_encoding *e);

/* The coil maps in the back end's memory (N x coils), NULL without maps. */
const lm_cfloat *lm_encoding_maps(const lm_encoding *e);
/* The device Toeplitz product of the normal operator (lm_gpu.h; borrowed),
 * NULL before Q, off a GPU, time-segmented or with coils split across
 * devices: the dynamic model shares its scratch and streams its FFT(Q). */
struct lm_gpu_toeplitz *lm_encoding_gpu_toeplitz(const lm_encoding *e);
/* Frees the gpu-nufft plan's device memory (fine grids, trajectory); the
 * next E^H d or E x makes it again (lm_encoding_desc.trim_plan: after
 * each). */
void lm_encoding_trim(lm_encoding *e);

/* Makes Q (from the cache when allowed) and the Toeplitz operator; called
 * once, before the first normal application (which calls it otherwise).
 * ctl gets the fraction of Q's sum and may cancel. */
lm_code lm_encoding_prepare_normal(lm_encoding *e, const lm_ctl *ctl, int *q_from_cache, lm_error *err);

/* x = E^H d, d with lm_encoding_coils() channels (host); x on the back end.
 * ctl gets the fraction over channels. */
lm_code lm_encoding_adjoint(lm_encoding *e, const lm_kdata *d, lm_cfloat *x, const lm_ctl *ctl, lm_error *err);
/* y = E^H E x (x != y), both on the back end. */
lm_code lm_encoding_normal(lm_encoding *e, const lm_cfloat *x, lm_cfloat *y, lm_error *err);
/* d = E x: x on the back end, d (host) m x coils, allocated by the caller. */
lm_code lm_encoding_forward(lm_encoding *e, const lm_cfloat *x, lm_kdata *d, lm_error *err);

/* E as an operator on the back end (borrowed: freed with e), composed of
 * the Fourier operator F (lm_linop_fourier.h), the coil maps S, and with
 * time segmentation the phases C_l and interpolators B_l:
 *
 *   E = repeat_c(F) S                       (no field map, or exact: F with the time term)
 *   E = repeat_c(sum_l B_l F C_l) S         (time-segmented)
 *
 * image (N values) -> k-space (m x coils values, coil-major as lm_kdata),
 * both in the back end's memory. Its normal operator is the encoding's
 * fused E^H E once that is made (lm_encoding_normal_op), so lm_linop_gram
 * of it picks the Toeplitz product. */
lm_code lm_encoding_op(lm_encoding *e, lm_linop **op, lm_error *err);

/* E^H E as an operator (borrowed: freed with e). Prepares Q if needed. */
lm_code lm_encoding_normal_op(lm_encoding *e, lm_linop **op, lm_error *err);
/* The mean diagonal of E^H E: sum_m phi(k_m)^2 / N^2 (= Q(0)/N^2) times
 * the mean of sum_c |s_c|^2 over the voxels the maps cover; lambda is
 * relative to it (README). With a field map the same (|exp(-i 2 pi f t)| =
 * 1 leaves the diagonal as it is). Known before Q: computed from the
 * trajectory on first use when there is none. */
double lm_encoding_diag(lm_encoding *e);

#endif
