/* Trilinear resampling through NIfTI affines (lm_resample.h). */
#include "lm_resample.h"

#include <math.h>
#include <string.h>

void lm_rigid_matrix(const lm_rigid *r, double m[4][4])
{
    const double d2r = M_PI / 180.0;
    const double cx = cos(r->rot_deg[0] * d2r), sx = sin(r->rot_deg[0] * d2r);
    const double cy = cos(r->rot_deg[1] * d2r), sy = sin(r->rot_deg[1] * d2r);
    const double cz = cos(r->rot_deg[2] * d2r), sz = sin(r->rot_deg[2] * d2r);
    /* R = Rz Ry Rx: x first. */
    const double R[3][3] = {
        {cz * cy, cz * sy * sx - sz * cx, cz * sy * cx + sz * sx},
        {sz * cy, sz * sy * sx + cz * cx, sz * sy * cx - cz * sx},
        {-sy, cy * sx, cy * cx},
    };
    memset(m, 0, 16 * sizeof(double));
    for (int i = 0; i < 3; i++) {
        double rc = 0;
        for (int j = 0; j < 3; j++) {
            m[i][j] = R[i][j];
            rc += R[i][j] * r->centre_mm[j];
        }
        /* p' = R (p - c) + c + t */
        m[i][3] = r->centre_mm[i] - rc + r->shift_mm[i];
    }
    m[3][3] = 1;
}

lm_code lm_affine_invert(const double a[4][4], double inv[4][4], lm_error *err)
{
    const double det = a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) -
                       a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
                       a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
    if (!isfinite(det) || fabs(det) < 1e-12)
        return lm_fail(err, LM_ERR_INVALID, "affine is singular (determinant %g)", det);
    double r[3][3];
    r[0][0] = (a[1][1] * a[2][2] - a[1][2] * a[2][1]) / det;
    r[0][1] = (a[0][2] * a[2][1] - a[0][1] * a[2][2]) / det;
    r[0][2] = (a[0][1] * a[1][2] - a[0][2] * a[1][1]) / det;
    r[1][0] = (a[1][2] * a[2][0] - a[1][0] * a[2][2]) / det;
    r[1][1] = (a[0][0] * a[2][2] - a[0][2] * a[2][0]) / det;
    r[1][2] = (a[0][2] * a[1][0] - a[0][0] * a[1][2]) / det;
    r[2][0] = (a[1][0] * a[2][1] - a[1][1] * a[2][0]) / det;
    r[2][1] = (a[0][1] * a[2][0] - a[0][0] * a[2][1]) / det;
    r[2][2] = (a[0][0] * a[1][1] - a[0][1] * a[1][0]) / det;
    memset(inv, 0, 16 * sizeof(double));
    for (int i = 0; i < 3; i++) {
        double t = 0;
        for (int j = 0; j < 3; j++) {
            inv[i][j] = r[i][j];
            t += r[i][j] * a[j][3];
        }
        inv[i][3] = -t;
    }
    inv[3][3] = 1;
    return LM_OK;
}

static void mat_mul(const double a[4][4], const double b[4][4], double c[4][4])
{
    double t[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double s = 0;
            for (int k = 0; k < 4; k++)
                s += a[i][k] * b[k][j];
            t[i][j] = s;
        }
    memcpy(c, t, sizeof t);
}

int lm_same_grid(const lm_volume *a, const int64_t dims[3], const double affine[4][4])
{
    for (int i = 0; i < 3; i++)
        if (a->dims[i] != dims[i])
            return 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            if (fabs(a->affine[i][j] - affine[i][j]) > 1e-3)
                return 0;
    return 1;
}

/* Index along one axis and its weight, with the outside rule applied;
 * returns 0 when the point is outside and outside is zero. */
static int axis_at(double p, int64_t n, lm_outside outside, int64_t *i0, int64_t *i1, double *w)
{
    if (n == 1) {
        /* A flat axis: the single plane covers half a voxel either side. */
        if (outside == LM_OUTSIDE_ZERO && fabs(p) > 0.5 + 1e-9)
            return 0;
        *i0 = *i1 = 0;
        *w = 0;
        return 1;
    }
    if (p < 0 || p > (double)(n - 1)) {
        if (outside == LM_OUTSIDE_ZERO && (p < -0.5 - 1e-9 || p > (double)n - 0.5 + 1e-9))
            return 0;
        p = p < 0 ? 0 : (double)(n - 1); /* within half a voxel, or nearest */
    }
    int64_t f = (int64_t)floor(p);
    if (f >= n - 1)
        f = n - 2;
    *i0 = f;
    *i1 = f + 1;
    *w = p - (double)f;
    return 1;
}

lm_code lm_resample(const lm_volume *src, const int64_t dst_dims[3], const double dst_voxel_mm[3],
                    const double dst_affine[4][4], const double xform[4][4], lm_outside outside,
                    lm_volume **out, lm_error *err)
{
    *out = NULL;
    double src_inv[4][4], m[4][4];
    lm_code rc = lm_affine_invert(src->affine, src_inv, err);
    if (rc != LM_OK)
        return rc;
    lm_volume *v = lm_volume_new(dst_dims, dst_voxel_mm, err);
    if (!v)
        return err ? err->code : LM_ERR_NOMEM;
    memcpy(v->affine, dst_affine, sizeof v->affine);
    /* index of dst -> world -> (xform) -> source index */
    if (xform) {
        mat_mul(xform, dst_affine, m);
        mat_mul(src_inv, m, m);
    } else
        mat_mul(src_inv, dst_affine, m);
    const int64_t n0 = src->dims[0], n1 = src->dims[1], n2 = src->dims[2];
    const int64_t d0 = dst_dims[0], d1 = dst_dims[1], d2 = dst_dims[2];
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t k = 0; k < d2; k++)
        for (int64_t j = 0; j < d1; j++)
            for (int64_t i = 0; i < d0; i++) {
                double p[3];
                for (int a = 0; a < 3; a++)
                    p[a] = m[a][0] * (double)i + m[a][1] * (double)j + m[a][2] * (double)k + m[a][3];
                int64_t x0, x1, y0, y1, z0, z1;
                double wx, wy, wz;
                lm_cfloat val = 0;
                if (axis_at(p[0], n0, outside, &x0, &x1, &wx) && axis_at(p[1], n1, outside, &y0, &y1, &wy) &&
                    axis_at(p[2], n2, outside, &z0, &z1, &wz)) {
#define S(a, b, c) src->data[((c) * n1 + (b)) * n0 + (a)]
                    const lm_cfloat c00 = S(x0, y0, z0) * (float)(1 - wx) + S(x1, y0, z0) * (float)wx;
                    const lm_cfloat c10 = S(x0, y1, z0) * (float)(1 - wx) + S(x1, y1, z0) * (float)wx;
                    const lm_cfloat c01 = S(x0, y0, z1) * (float)(1 - wx) + S(x1, y0, z1) * (float)wx;
                    const lm_cfloat c11 = S(x0, y1, z1) * (float)(1 - wx) + S(x1, y1, z1) * (float)wx;
#undef S
                    const lm_cfloat c0 = c00 * (float)(1 - wy) + c10 * (float)wy;
                    const lm_cfloat c1 = c01 * (float)(1 - wy) + c11 * (float)wy;
                    val = c0 * (float)(1 - wz) + c1 * (float)wz;
                }
                v->data[(k * d1 + j) * d0 + i] = val;
            }
    *out = v;
    return LM_OK;
}
