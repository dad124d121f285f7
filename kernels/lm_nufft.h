/* CPU non-uniform FFT with a FINUFFT-like life cycle:
 *
 *     lm_nufft_make_plan -> lm_nufft_set_points -> lm_nufft_execute (many) -> lm_nufft_destroy
 *
 * Samples k_m are in cycles (per FOV); the uniform side is the lm_points grid
 * x_i = (i - c)/s per axis, i = 0..g-1, x fastest. With t = 2 pi k / s:
 *
 *   type 1 (samples -> grid):  f_i = sum_m w_m exp(+sign i 2 pi k_m . x_i)
 *   type 2 (grid -> samples):  v_m = sum_i f_i exp(+sign i 2 pi k_m . x_i)
 *
 * A type 1 plan with sign +1 is the exact adjoint (up to float rounding) of
 * a type 2 plan with sign -1 on the same points.
 *
 * Method: spread with a compact kernel onto a fine grid of about upsampfac*g
 * points per axis, FFTW, then divide by the kernel's Fourier transform
 * (computed by quadrature) and crop (type 2: the same steps reversed). The
 * kernel width follows the tolerance as in FINUFFT (Barnett, Magland, af
 * Klinteberg 2019). Axes with g == 1 are trivial (no spreading along them).
 * A plan is not re-entrant: one execute at a time per plan. */
#ifndef LM_NUFFT_H
#define LM_NUFFT_H

#include <stdint.h>

#include "lm_error.h"
#include "lm_kernels.h"
#include "lm_types.h"

/* The default tolerance gives a relative l2 error near 1e-6 (B128's F^H d
 * and Q against cpu-dp: 1.3e-6 .. 2.2e-6), about what single precision
 * allows and far inside the project's 1e-4 budget; 1e-5 (kernel width 6
 * instead of 7) spreads ~1.6x fewer points per sample at ~2e-5 error. */
#define LM_NUFFT_DEFAULT_TOL 1e-6
/* The spreader's blocks per thread and colour by default (lm_tuning.h). */
#define LM_NUFFT_BLOCKS_PER_THREAD 4

typedef enum lm_nufft_kernel {
    LM_NUFFT_KERNEL_ES = 0, /* exponential of semicircle (FINUFFT) */
    LM_NUFFT_KERNEL_KB,     /* Kaiser-Bessel, beta per Beatty et al. 2005 */
    LM_NUFFT_KERNEL_LINEAR  /* tent of width 2 (linear interpolation gridding) */
} lm_nufft_kernel;

typedef struct lm_nufft_opts {
    double upsampfac;       /* fine grid / output grid: 2.0 (default) or 1.25; 1.0 only for LINEAR.
                               1.25 has a 4x smaller 3D FFT but, in single precision, an error
                               floor near 1e-5 on random data and ~1e-4 on B128 (its deapodisation
                               amplifies FFT rounding ~100x per axis at the band edge). */
    int threads;            /* 0: all cores (OpenMP and FFTW) */
    lm_nufft_kernel kernel;
    int width;              /* kernel width in fine-grid points; 0: from the tolerance */
    double beta;            /* kernel shape; 0: the default for kernel, width and upsampfac */
    int deapodize;          /* 1 (default): divide by the kernel's transform; 0: leave it in */
    unsigned fftw_flags;    /* default FFTW_ESTIMATE (MEASURE is slow to plan on big grids) */
} lm_nufft_opts;

typedef struct lm_nufft_plan lm_nufft_plan;

void lm_nufft_default_opts(lm_nufft_opts *o);

/* type 1 or 2; dim 2 (then g[2] must be 1) or 3; sign +1 or -1; tol in
 * [1e-7, 1e-1] (single precision floors near 1e-6). opts NULL: defaults. */
lm_code lm_nufft_make_plan(int type, int dim, const int64_t g[3], int sign, double tol,
                           const lm_nufft_opts *opts, lm_nufft_plan **out, lm_error *err);

/* Sorts the m samples into bins and stores their fine-grid coordinates; the
 * arrays are not kept. kz may be NULL in 2D (then z contributes phase 0 unless
 * c[2] != 0). c and s give the grid mapping (s > 0). */
lm_code lm_nufft_set_points(lm_nufft_plan *p, int64_t m, const float *kx, const float *ky,
                            const float *kz, const int64_t c[3], const int64_t s[3], lm_error *err);

/* Split complex: type 1 reads m weights (in_im NULL: real weights) and writes
 * g0*g1*g2 grid values; type 2 reads the grid (in_im NULL: real) and writes m
 * values. ctl (may be NULL) gets coarse progress and may cancel. */
lm_code lm_nufft_execute(lm_nufft_plan *p, const float *in_re, const float *in_im, float *out_re,
                         float *out_im, const lm_ctl *ctl, lm_error *err);
/* The same with interleaved complex input and output. */
lm_code lm_nufft_execute_c(lm_nufft_plan *p, const lm_cfloat *in, lm_cfloat *out, const lm_ctl *ctl,
                           lm_error *err);

/* nsets executes on the same points: set c reads in_re + c in_dist (and
 * in_im + c in_dist; in_im NULL: real) and writes out_re + c out_dist and
 * out_im + c out_dist, split complex as lm_nufft_execute. With several
 * threads and at least as many sets, each thread runs whole sets on a fine
 * grid of its own (single-threaded transforms), when those grids take at
 * most LM_NUFFT_SETS_BYTES; else the sets run one by one. */
#define LM_NUFFT_SETS_BYTES ((double)(256 << 20))
lm_code lm_nufft_execute_sets(lm_nufft_plan *p, int64_t nsets, const float *in_re, const float *in_im,
                              int64_t in_dist, float *out_re, float *out_im, int64_t out_dist, const lm_ctl *ctl,
                              lm_error *err);

/* Pipe-Menon density compensation with the plan's kernel on its fine grid:
 * iterates w <- w * T / (C C^T w) from w = 1, C the spreading operator, T
 * chosen so that, where samples are dense compared with the kernel, w is the
 * k-space volume per sample (in cycles^dim) and sum w is the covered volume. */
lm_code lm_nufft_density(lm_nufft_plan *p, int iterations, float *w, const lm_ctl *ctl, lm_error *err);

/* Facts about a plan (for benchmarks and tests). */
void lm_nufft_fine_grid(const lm_nufft_plan *p, int64_t nf[3]);
int lm_nufft_width(const lm_nufft_plan *p);
/* How type 1 spreading is blocked after lm_nufft_set_points: blocks along
 * x, y, z (1 where the axis is not blocked); for tests and benchmarks. */
void lm_nufft_spread_blocks(const lm_nufft_plan *p, int nb[3]);
void lm_nufft_destroy(lm_nufft_plan *p);

/* lm_ksum_nufft.c keeps its last plan (fine grids up to 32 Mi points) for a
 * repeat call on the same samples; this frees it. */
void lm_ksum_nufft_release_cache(void);

/* Gauss-Legendre nodes and weights on [-1, 1] for the deapodisation
 * quadrature (shared with the GPU plan). */
void lm_nufft_gauss_legendre(int n, double *x, double *w);

#endif
