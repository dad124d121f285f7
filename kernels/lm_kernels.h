/* The one table of kernel variants (docs/conventions.md section 7) behind a plain C
 * interface. Q and F^H d are the same sum with different weights:
 *
 *     out(x_j) = sum_m w_m exp(+i 2 pi (k_m . x_j + f_j t_m))
 *
 * where the off-resonance term f_j t_m (f in Hz at point j, t in seconds at
 * sample m) is present only when both lm_ksum_in.t and lm_points.f are
 * given (variants with time_term; docs/conventions.md section 1); otherwise it is 0.
 *
 *   F^H d:  w_m = conj(phi(k_m)) d_m, evaluated on the N image voxels;
 *   Q:      w_m = |phi(k_m)|^2 (real), evaluated on the 2x grid (8N points).
 * The solver applies the 1/N scale factors; kernels compute the raw sum. */
#ifndef LM_KERNELS_H
#define LM_KERNELS_H

#include <stdint.h>

#include "lm_error.h"

/* k-space samples and their weights, structure of arrays (coalescing-friendly).
 *
 * Weight sets: with nsets = C > 1 the same sum is taken for C weight vectors
 * on one trajectory (F^H d of C receive channels): wr and wi hold C blocks
 * of m weights (set c at wr + c * m), and the outputs C blocks of pts->n
 * values (set c at out_re + c * pts->n). Variants with multi_set compute
 * each exp(i 2 pi k.x) once per sample-point pair for all C sets; for the
 * others lm_ksum_run runs the sets one after another. nsets 0 (a
 * zero-initialised struct) and 1 both mean one set. */
typedef struct lm_ksum_in {
    int64_t m;
    const float *kx, *ky, *kz; /* cycles/FOV */
    const float *wr, *wi;      /* weights; wi == NULL means real weights (Q) */
    int64_t nsets;             /* weight sets: 0 or 1 one, C > 1 see above */
    const float *t;            /* sample times in seconds (m), or NULL: no off-resonance */
} lm_ksum_in;

/* Beyond this many weight sets lm_ksum_run calls the request absurd. */
#define LM_KSUM_MAX_SETS 65536

/* The number of weight sets in (nsets 0 counts as 1). */
static inline int64_t lm_ksum_nsets(const lm_ksum_in *in)
{
    return in->nsets > 1 ? in->nsets : 1;
}

/* Where to evaluate: either explicit points (x != NULL) or a regular grid
 * x_i = (i - c) / s per axis, x fastest (lets NUFFT and phasor-rotation
 * kernels exploit the structure). */
typedef struct lm_points {
    int64_t n;                 /* number of points */
    const float *x, *y, *z;    /* explicit positions in FOV fractions, or NULL */
    int64_t g[3];              /* grid size per axis (n == g0*g1*g2) */
    int64_t c[3];              /* index of position 0 */
    int64_t s[3];              /* spacing is 1/s */
    const float *f;            /* off-resonance in Hz per point (n), or NULL */
} lm_points;

/* The image grid of an n0 x n1 x n2 matrix: g = n, c = n/2, s = n. */
void lm_points_image_grid(lm_points *p, const int64_t n[3]);
/* The 2x-oversampled grid on which Q lives: g = 2n, c = n, s = n
 * (covers every difference x_i - x_j; 2D keeps g[2] = 1). */
void lm_points_q_grid(lm_points *p, const int64_t n[3]);
/* Position of point j along each axis (explicit or grid). */
void lm_points_get(const lm_points *p, int64_t j, double x[3]);

/* Progress and cancellation. progress() gets a fraction in [0, 1] and
 * returns non-zero to cancel; a kernel then returns LM_ERR_CANCELLED. */
typedef struct lm_ctl {
    int (*progress)(void *user, double fraction);
    void *user;
    int threads;               /* 0: all cores */
} lm_ctl;

/* True when the caller asked to stop. ctl may be NULL. */
int lm_ctl_report(const lm_ctl *ctl, double fraction);
/* Threads a kernel should use: ctl->threads, or all (OpenMP's default). */
int lm_ctl_threads(const lm_ctl *ctl);

typedef lm_code (*lm_ksum_fn)(const lm_ksum_in *in, const lm_points *pts,
                              float *out_re, float *out_im, const lm_ctl *ctl, lm_error *err);

typedef enum lm_device_kind { LM_DEVICE_CPU = 0, LM_DEVICE_GPU } lm_device_kind;

struct lm_cg_opts;
struct lm_cg_monitor;

typedef struct lm_variant {
    const char *name;          /* cpu-dp, gpu-tuned, ... */
    const char *description;   /* one line, paper section */
    lm_device_kind device;
    int approximate;           /* NUFFT: accuracy set by tolerance, not float rounding */
    int grid_only;             /* needs lm_points as a grid */
    /* LM_OK when it can run here; otherwise why not (no GPU, no AVX, ...). */
    lm_code (*available)(lm_error *why);
    /* Through lm_ksum_run. Called directly, a kernel without multi_set
     * computes only the first weight set. */
    lm_ksum_fn ksum;
    int multi_set;             /* ksum handles nsets > 1 itself (one sin/cos per pair) */
    int time_term;             /* ksum handles lm_ksum_in.t with lm_points.f */
} lm_variant;

size_t lm_variant_count(void);
const lm_variant *lm_variant_at(size_t i);
/* NULL and an error naming the known variants when name is unknown.
 * "auto" is found as the variant it resolves to (lm_variant_resolve). */
const lm_variant *lm_variant_find(const char *name, lm_error *err);
/* Finds and checks availability; the error says why not. "auto" is
 * resolved as by lm_variant_resolve. */
const lm_variant *lm_variant_get_available(const char *name, lm_error *err);

/* The name that stands for "the fastest variant here". */
#define LM_VARIANT_AUTO "auto"
/* Resolves a variant name to an available variant: "auto", NULL and ""
 * mean the fastest one on this machine that meets the accuracy of docs/conventions.md section 7
 * (the NUFFT, 1e-6 relative): gpu-nufft when a GPU is usable, else
 * cpu-nufft. Any other name is looked up and checked for availability as
 * lm_variant_get_available does. NULL and the error when none fits. */
const lm_variant *lm_variant_resolve(const char *name, lm_error *err);
/* True for the names lm_variant_resolve resolves itself (auto, NULL, ""). */
int lm_variant_is_auto(const char *name);

/* Paper's FLOP accounting per sample-voxel pair: 15 for F^H d (complex
 * weights: phase 5, sin and cos 1 each, complex accumulate 8), 11 for Q
 * (real weights); see lm_kernels.c. Used by bench for GFLOPS. */
double lm_ksum_flops_per_pair(int real_weights);

/* Convenience: run a variant, checking availability and arguments. Every
 * variant accepts weight sets here: those without multi_set run set by set
 * (progress spans all sets). */
lm_code lm_ksum_run(const lm_variant *v, const lm_ksum_in *in, const lm_points *pts,
                    float *out_re, float *out_im, const lm_ctl *ctl, lm_error *err);

#endif
