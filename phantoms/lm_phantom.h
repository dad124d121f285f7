/* Analytic phantoms: the modified 3D Shepp-Logan of ten ellipsoids (Koay,
 * Sarlls & Ozarslan, MRM 58:430, 2007) and its 2D counterpart, with exact
 * Fourier transforms so k-space at any trajectory point has no inverse crime.
 * Coordinates: the phantom's [-1, 1] box fills the FOV, i.e. position in FOV
 * fractions is half the phantom coordinate. */
#ifndef LM_PHANTOM_H
#define LM_PHANTOM_H

#include <stdint.h>

#include "lm_types.h"

typedef struct lm_ellipsoid {
    double rho;             /* additive intensity */
    double a, b, c;         /* semi-axes (phantom units, [-1,1] box) */
    double x0, y0, z0;      /* centre */
    double phi, theta, psi; /* rotation angles in degrees (Euler z-x-z, as Koay) */
} lm_ellipsoid;

typedef struct lm_phantom {
    const char *name;
    int dim;                /* 2 (ellipses, c/z0 unused) or 3 */
    int count;
    lm_ellipsoid e[16];
} lm_phantom;

const lm_phantom *lm_phantom_shepp_logan_3d(void);
const lm_phantom *lm_phantom_shepp_logan_2d(void);
/* The 3D head's ellipsoids with another contrast: an anatomical reference
 * for LM_REG_ANATOMICAL that shares the truth's edges, not its values. */
const lm_phantom *lm_phantom_shepp_logan_3d_ref(void);
const lm_phantom *lm_phantom_by_name(const char *name, lm_error *err); /* "shepp-logan", "shepp-logan-2d", "shepp-logan-ref" */

/* Value at a position in FOV fractions. */
double lm_phantom_value(const lm_phantom *p, double x, double y, double z);
/* Exact k-space d(k) = integral over the FOV of rho(x) exp(-i 2 pi k.x) dx,
 * x in FOV fractions (FOV volume 1), for every sample of t. */
lm_code lm_phantom_kspace(const lm_phantom *p, const lm_traj *t, lm_cfloat *d, lm_error *err);
/* The same transform at one k (cycles/FOV) in double precision: the
 * reference that tests and other modules compare against. A 2D phantom
 * ignores kz. Returns 0 for an invalid phantom. */
double _Complex lm_phantom_ft(const lm_phantom *p, double kx, double ky, double kz);
/* Exact k-space of the phantom seen through trigonometric polynomials
 * (e.g. coil sensitivities given as Fourier series):
 *     w_s(x) = sum_j a[s nterms + j] exp(+i 2 pi f_j . x),
 *     d_s(k) = integral rho(x) w_s(x) exp(-i 2 pi k.x) dx = sum_j a_sj FT(k - f_j),
 * for every sample of t and every set s. f: nterms frequencies in
 * cycles/FOV, (fx, fy, fz) per term (a 2D phantom needs fz = 0); a: nsets x
 * nterms, term fastest; d: m x nsets, samples fastest (lm_kdata's layout).
 * Evaluated in double, stored as float; OpenMP over samples. */
lm_code lm_phantom_kspace_modulated(const lm_phantom *p, const lm_traj *t, int64_t nterms, const double *f,
                                    int64_t nsets, const double _Complex *a, lm_cfloat *d, lm_error *err);
/* The truth on the n grid, each voxel the mean of sub^3 (sub^2 in 2D)
 * sub-voxel samples. voxel_mm = fov_mm / n. */
lm_code lm_phantom_truth(const lm_phantom *p, const lm_geom *g, int sub, lm_volume **out, lm_error *err);

#endif
