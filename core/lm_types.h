/* Larmor's data model: complex volumes, trajectories, k-space data and the
 * reconstruction geometry. Units and layout follow docs/conventions.md section 2:
 * k in cycles per FOV, positions in FOV fractions, x fastest. */
#ifndef LM_TYPES_H
#define LM_TYPES_H

#include <complex.h>
#include <stdint.h>

#include "lm_error.h"

/* Interleaved single-precision (re, im): the layout of BART cfl and CUDA float2. */
typedef float _Complex lm_cfloat;

typedef struct lm_volume {
    int64_t dims[3];     /* x fastest, then y, then z; 2D volumes have dims[2] == 1 */
    double voxel_mm[3];  /* voxel size */
    double affine[4][4]; /* index (i,j,k,1) -> scanner mm (RAS), NIfTI's sform */
    lm_cfloat *data;
    int no_geometry;     /* the file stored none (BART cfl): voxel_mm and affine are a
                            1 mm centred placeholder; users place it on their own grid */
} lm_volume;

/* Zero-filled volume, centred so that voxel n/2 sits at 0 mm. */
lm_volume *lm_volume_new(const int64_t dims[3], const double voxel_mm[3], lm_error *err);
lm_volume *lm_volume_copy(const lm_volume *v, lm_error *err);
void lm_volume_free(lm_volume *v);
int64_t lm_volume_count(const lm_volume *v);
/* Sets a centred, axis-aligned affine from voxel_mm. */
void lm_volume_set_centered_affine(lm_volume *v);
/* mag[i] = |data[i]| for n values, equal to cabsf's, vectorised. */
void lm_magnitude(const lm_cfloat *data, float *mag, int64_t n);

typedef struct lm_traj {
    int64_t m;          /* number of samples */
    int ndim;           /* 2 (kz == 0) or 3 */
    float *k;           /* m x 3, (kx, ky, kz) per sample, cycles/FOV */
    float *w;           /* optional density weights, m entries, or NULL */
    int64_t readout;    /* samples per readout/spoke, 0 if unknown (display, cfl shape) */
    float *t;           /* optional sample times in seconds, m entries, or NULL: the
                           time of each sample after the echo-time reference (t = 0),
                           for off-resonance (docs/conventions.md section 1; docs/fieldmap.md) */
} lm_traj;

lm_traj *lm_traj_new(int64_t m, int ndim, lm_error *err);
void lm_traj_free(lm_traj *t);
/* Allocates t->t (zeroed) unless present; LM_OK or LM_ERR_NOMEM. */
lm_code lm_traj_alloc_times(lm_traj *t, lm_error *err);
/* Largest |k| along each axis (for checking against the matrix). */
void lm_traj_extent(const lm_traj *t, double kmax[3]);

typedef struct lm_kdata {
    int64_t m;          /* samples per channel */
    int64_t ncoils;     /* receive channels */
    lm_cfloat *d;       /* m x ncoils, samples fastest */
} lm_kdata;

lm_kdata *lm_kdata_new(int64_t m, int64_t ncoils, lm_error *err);
void lm_kdata_free(lm_kdata *k);

/* Coil sensitivities s_c(x) on the image grid: ncoils complex volumes, x
 * fastest, coil slowest ([nx, ny, nz, coils], the layout of BART's ecalib
 * and of a 4D NIfTI). Voxel positions as the image grid (docs/conventions.md section 2). */
typedef struct lm_sens {
    int64_t n[3];
    int64_t ncoils;
    lm_cfloat *s;       /* n0 n1 n2 x ncoils */
} lm_sens;

lm_sens *lm_sens_new(const int64_t n[3], int64_t ncoils, lm_error *err);
lm_sens *lm_sens_copy(const lm_sens *s, lm_error *err);
void lm_sens_free(lm_sens *s);
/* Voxels per coil map. */
int64_t lm_sens_voxels(const lm_sens *s);

typedef enum lm_basis {
    LM_BASIS_BOX = 0,   /* phi(k) = sinc(kx/nx) sinc(ky/ny) sinc(kz/nz) */
    LM_BASIS_DIRAC      /* phi = 1 */
} lm_basis;

typedef struct lm_geom {
    int64_t n[3];       /* image matrix; n[2] == 1 for 2D */
    double fov_mm[3];   /* field of view */
    lm_basis basis;
} lm_geom;

void lm_geom_init(lm_geom *g, int64_t nx, int64_t ny, int64_t nz, double fov_mm);
int64_t lm_geom_voxels(const lm_geom *g);
/* Fourier transform of the voxel basis function at k (cycles/FOV). */
double lm_geom_phi(const lm_geom *g, double kx, double ky, double kz);
/* Checks sizes and that every sample lies inside the matrix's k-space. */
lm_code lm_geom_check(const lm_geom *g, const lm_traj *t, lm_error *err);

/* Values of Q on the 2x grid for matrix n (lm_points_q_grid): 2n per
 * axis, except that a flat axis (n == 1) stays flat: 8N in 3D, 4N in 2D. */
int64_t lm_q_count(const int64_t n[3]);

/* Positions in FOV fractions of voxel i along an axis of n: (i - n/2)/n. */
static inline double lm_voxel_pos(int64_t i, int64_t n) { return (double)(i - n / 2) / (double)n; }

#endif
