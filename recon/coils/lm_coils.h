/* Multi-coil numerics: noise prewhitening, coil compression and coil
 * sensitivity estimation from the data (ESPIRiT, Walsh/Inati fallback).
 *
 * Order in a pipeline: prewhiten (noise scan), then compress, then estimate
 * maps from the compressed data (or compress given maps with the same plan).
 *
 * Matrices are double complex, row-major (a[i * n + j] is row i, column j).
 * Coil vectors are columns: the coil vector of sample m is
 * (d[m + c * k->m])_c, and a matrix M acts on it as d' = M d. */
#ifndef LM_COILS_H
#define LM_COILS_H

#include <complex.h>
#include <stdint.h>

#include "lm_error.h"
#include "lm_kernels.h"
#include "lm_types.h"

typedef double _Complex lm_cdouble;

/* n x n complex matrix, row-major. */
typedef struct lm_cmat {
    int64_t n;
    lm_cdouble *a;
} lm_cmat;

lm_cmat *lm_cmat_new(int64_t n, lm_error *err);
void lm_cmat_free(lm_cmat *m);

/* ---------- prewhitening ---------- */

/* Noise covariance Psi_ij = (1/ns) sum_m n_i(m) conj(n_j(m)) = E[n n^H] from
 * ns noise samples per channel (noise->m, at least 2 x channels). No mean is
 * subtracted (receiver noise is zero-mean, and removing a mean would hide a
 * DC offset), so 1/ns, not 1/(ns - 1), is the unbiased normalisation.
 * Fails on NaN/Inf samples and on a channel without any noise energy. */
lm_code lm_noise_covariance(const lm_kdata *noise, lm_cmat **cov, lm_error *err);

/* W = L^{-1} with Psi = L L^H (Cholesky, lower triangular), so that W n has
 * identity covariance. Fails if Psi is not Hermitian, holds NaN, or is not
 * (numerically: smallest pivot^2 < 1e-10 x largest diagonal) positive
 * definite. */
lm_code lm_prewhiten_make(const lm_cmat *cov, lm_cmat **w, lm_error *err);

/* In place: every sample's coil vector d <- W d. W->n must equal k->ncoils.
 * Maps estimated from whitened data are already in the whitened basis; maps
 * from elsewhere (a reference scan) need the same W: lm_cmat_apply_sens. */
lm_code lm_prewhiten_apply(const lm_cmat *w, lm_kdata *k, lm_error *err);
/* In place: s(x) <- W s(x) at every voxel (W->n == s->ncoils). */
lm_code lm_cmat_apply_sens(const lm_cmat *w, lm_sens *s, lm_error *err);

/* ---------- coil compression (SVD / PCA, as BART's cc -S) ---------- */

typedef struct lm_coil_compress {
    int64_t ncoils;     /* C, channels in */
    int64_t nvirt;      /* K, virtual channels out */
    lm_cdouble *a;      /* K x C, row-major: d'_k = sum_c a[k C + c] d_c */
    double *sv;         /* C singular values of the data matrix [m x C], descending */
    double energy;      /* sum_{k<K} sv_k^2 / sum_c sv_c^2: energy kept */
} lm_coil_compress;

#define LM_COIL_COMPRESS_ENERGY 0.99

/* From the data D [m x C] = U S V^H: rows of A are the first K right
 * singular vectors transposed, A_kc = V_ck (eigenvectors of D^H D, computed
 * in double). nvirt in 1..C, or 0 for "auto": the smallest K whose energy is
 * at least `energy` (0: LM_COIL_COMPRESS_ENERGY). Fails on NaN data, data
 * without energy, K > C or K < 0. */
lm_code lm_coil_compress_plan(const lm_kdata *k, int64_t nvirt, double energy,
                              lm_coil_compress **out, lm_error *err);
/* d'_k(m) = sum_c A_kc d_c(m): a new lm_kdata with K channels. */
lm_code lm_coil_compress_apply_kdata(const lm_coil_compress *p, const lm_kdata *in, lm_kdata **out,
                                     lm_error *err);
/* s'_k(x) = sum_c A_kc s_c(x): with d_c = F(s_c rho), the compressed data are
 * d'_k = F(s'_k rho), so E stays consistent. The maps are no longer
 * normalised to sum_k |s'_k|^2 = 1 (the energy dropped is missing). */
lm_code lm_coil_compress_apply_sens(const lm_coil_compress *p, const lm_sens *in, lm_sens **out,
                                    lm_error *err);
void lm_coil_compress_free(lm_coil_compress *p);

/* ---------- coil sensitivity estimation ---------- */

typedef enum lm_sens_method {
    LM_SENS_AUTO = 0,   /* ESPIRiT; Walsh if ESPIRiT fails or masks out (almost) everything */
    LM_SENS_ESPIRIT,
    LM_SENS_WALSH
} lm_sens_method;

typedef struct lm_sens_est_opts {
    lm_sens_method method;
    int calib;          /* calibration region per axis (even); 0: min(24, n/2) per axis */
    int kernel;         /* ESPIRiT kernel per axis; 0: 6 in 2D, 5 in 3D (see .c: eigen cost) */
    double thresh;      /* ESPIRiT: keep kernels whose eigenvalue of A^H A is >= thresh x the
                           largest (BART ecalib -t 0.001: singular value ratio sqrt(0.001)) */
    double crop;        /* ESPIRiT: maps zero where the eigenvalue is < crop (BART -c 0.8) */
    int window;         /* Walsh: local window (odd) on the low-resolution grid; 0: 3 */
    double mask;        /* Walsh: maps zero where the low-resolution RSS is < mask x its max; 0.05 */
} lm_sens_est_opts;
/* Start from lm_sens_est_default_opts; thresh <= 0 and window 0 mean the
 * default, crop and mask are taken as given (0: no masking). */

typedef struct lm_sens_est_info {
    lm_sens_method used;        /* ESPIRIT or WALSH */
    int64_t calib[3];           /* calibration grid (1 on a 2D's z) */
    int64_t centre_samples;     /* samples inside the calibration box */
    int64_t kernels_kept;       /* ESPIRiT: signal-space dimension kept */
    int64_t kernels_total;      /* ESPIRiT: C x kernel^dim */
    double mask_fraction;       /* fraction of voxels with non-zero maps */
    char note[160];             /* why AUTO fell back to Walsh, else empty */
} lm_sens_est_info;

void lm_sens_est_default_opts(lm_sens_est_opts *o);

/* Coil maps on g's image grid from non-Cartesian multi-coil data (no maps
 * given): calibration k-space gridded from the centre samples
 * (lm_calib_from_noncart), then ESPIRiT or Walsh. Maps are unit-norm over
 * coils (sum_c |s_c|^2 = 1) inside their mask and 0 outside, with the phase
 * referred to the calibration data's first principal component (a virtual
 * coil), as BART's ecalib does. o, ctl, info may be NULL. */
lm_code lm_sens_estimate(const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                         const lm_sens_est_opts *o, const lm_ctl *ctl, lm_sens **out,
                         lm_sens_est_info *info, lm_error *err);

/* Cartesian calibration k-space: y[i + n0 (j + n1 (l + n2 c))] at integer
 * k = (i - n0/2, j - n1/2, l - n2/2) cycles/FOV, in the forward model's sign
 * convention (docs/conventions.md section 1); scale arbitrary. */
typedef struct lm_calib {
    int64_t n[3];       /* calibration grid, 1 on a 2D's z */
    int64_t ncoils;
    lm_cdouble *y;
} lm_calib;

void lm_calib_free(lm_calib *c);

/* Grids the samples inside the calibration box (cal[a] per axis, even,
 * <= n[a]) onto it: type 1 NUFFT of the density-weighted, phi-divided,
 * tapered samples onto an image grid a little larger than the box, then an
 * exact DFT back to the box's integer k (see .c for why). Density: t->w
 * when given, else Pipe-Menon. Fails on NaN data and when the box holds fewer
 * than a quarter as many samples as grid points. centre (may be NULL): the
 * sample count inside the box. */
lm_code lm_calib_from_noncart(const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                              const int64_t cal[3], const lm_ctl *ctl, lm_calib **out,
                              int64_t *centre, lm_error *err);

/* ESPIRiT maps on an image grid n from calibration data. kernel per axis
 * (clamped to the calibration size), thresh and crop as in the options. */
lm_code lm_espirit_maps(const lm_calib *cal, const int64_t n[3], int kernel, double thresh,
                        double crop, const lm_ctl *ctl, lm_sens **out, lm_sens_est_info *info,
                        lm_error *err);

/* Walsh/Inati adaptive-combine maps: low-resolution coil images from the
 * (Tukey-windowed) calibration data, local C x C covariance over a window,
 * principal eigenvector per voxel, then interpolated (trilinear) to n. */
lm_code lm_walsh_maps(const lm_calib *cal, const int64_t n[3], int window, double mask,
                      const lm_ctl *ctl, lm_sens **out, lm_sens_est_info *info, lm_error *err);

#endif
