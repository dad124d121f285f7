/* Resampling one volume onto another's grid through their NIfTI affines
 * (index -> scanner mm), optionally after a rigid transform in scanner
 * space: field maps and anatomical references come at another matrix, FOV
 * or orientation than the reconstruction. Trilinear; complex values are
 * interpolated as they are (real data keep imaginary 0). */
#ifndef LM_RESAMPLE_H
#define LM_RESAMPLE_H

#include "lm_types.h"

/* A rigid transform in scanner mm: p' = R p + t, R from rotations about
 * x, y, z (degrees, applied in that order) about the point centre_mm. */
typedef struct lm_rigid {
    double rot_deg[3];
    double shift_mm[3];
    double centre_mm[3];
} lm_rigid;

/* The 4x4 matrix of r (world -> world). */
void lm_rigid_matrix(const lm_rigid *r, double m[4][4]);
/* Inverts a 4x4 affine with last row 0 0 0 1; LM_ERR_INVALID if singular. */
lm_code lm_affine_invert(const double a[4][4], double inv[4][4], lm_error *err);

/* How points outside the source are filled. */
typedef enum lm_outside { LM_OUTSIDE_ZERO = 0, LM_OUTSIDE_NEAREST } lm_outside;

/* out(j) = src(A_src^-1 T A_dst j) for every voxel j of a new volume with
 * dst_dims, dst_voxel_mm and dst_affine (T = identity when xform is NULL;
 * xform maps the destination's world to the source's world). */
lm_code lm_resample(const lm_volume *src, const int64_t dst_dims[3], const double dst_voxel_mm[3],
                    const double dst_affine[4][4], const double xform[4][4], lm_outside outside,
                    lm_volume **out, lm_error *err);

/* True when a and b have the same dims and affines within 1e-3 mm:
 * nothing to resample. */
int lm_same_grid(const lm_volume *a, const int64_t dims[3], const double affine[4][4]);

#endif
