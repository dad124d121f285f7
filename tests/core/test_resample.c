/* lm_resample against analytic cases: a field linear in scanner mm is
 * reproduced exactly by trilinear interpolation at any grid and
 * orientation, and a rigid transform moves it as its matrix says. */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "lm_resample.h"
#include "lm_test.h"

static double field(const double p[3]) { return 2.0 * p[0] - p[1] + 0.5 * p[2] + 7.0; }

static void world(const double a[4][4], double i, double j, double k, double p[3])
{
    for (int r = 0; r < 3; r++)
        p[r] = a[r][0] * i + a[r][1] * j + a[r][2] * k + a[r][3];
}

static lm_volume *linear_source(void)
{
    const int64_t dims[3] = {20, 18, 16};
    const double vox[3] = {2.0, 2.5, 3.0};
    lm_volume *v = lm_volume_new(dims, vox, NULL);
    for (int64_t k = 0; k < dims[2]; k++)
        for (int64_t j = 0; j < dims[1]; j++)
            for (int64_t i = 0; i < dims[0]; i++) {
                double p[3];
                world(v->affine, (double)i, (double)j, (double)k, p);
                v->data[(k * dims[1] + j) * dims[0] + i] = (float)field(p) + I * (float)(0.25 * field(p));
            }
    return v;
}

int main(void)
{
    lm_volume *src = linear_source();
    CHECK(src != NULL);

    /* Affine inverse. */
    double inv[4][4], id[4][4];
    CHECK(lm_affine_invert(src->affine, inv, NULL) == LM_OK);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double s = 0;
            for (int k = 0; k < 4; k++)
                s += inv[i][k] * src->affine[k][j];
            id[i][j] = s;
            CHECK_NEAR(id[i][j], i == j ? 1.0 : 0.0, 1e-12);
        }
    double sing[4][4] = {{1, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}};
    lm_error err = {0};
    CHECK(lm_affine_invert(sing, inv, &err) == LM_ERR_INVALID);

    /* A smaller grid, rotated 90 degrees about z and shifted, inside the source. */
    const int64_t dd[3] = {9, 7, 5};
    const double dv[3] = {1.5, 1.7, 2.2};
    double da[4][4] = {{0, -1.7, 0, 3.0}, {1.5, 0, 0, -4.0}, {0, 0, 2.2, 1.0}, {0, 0, 0, 1}};
    lm_volume *out = NULL;
    CHECK(lm_resample(src, dd, dv, da, NULL, LM_OUTSIDE_ZERO, &out, &err) == LM_OK);
    double worst = 0;
    for (int64_t k = 0; out && k < dd[2]; k++)
        for (int64_t j = 0; j < dd[1]; j++)
            for (int64_t i = 0; i < dd[0]; i++) {
                double p[3];
                world(da, (double)i, (double)j, (double)k, p);
                const lm_cfloat v = out->data[(k * dd[1] + j) * dd[0] + i];
                worst = fmax(worst, fabs(crealf(v) - field(p)));
                worst = fmax(worst, fabs(cimagf(v) - 0.25 * field(p)));
            }
    CHECK_MSG(worst < 1e-4, "linear field resampled with error %g", worst);
    CHECK(out && memcmp(out->affine, da, sizeof da) == 0);
    lm_volume_free(out);

    /* Rigid transform: destination world p reads the source at R p + t. */
    lm_rigid r = {.rot_deg = {0, 0, 10}, .shift_mm = {1.5, -2.0, 0.5}, .centre_mm = {1, 2, 0}};
    double T[4][4];
    lm_rigid_matrix(&r, T);
    CHECK(lm_resample(src, dd, dv, da, (const double(*)[4])T, LM_OUTSIDE_ZERO, &out, &err) == LM_OK);
    worst = 0;
    for (int64_t k = 0; out && k < dd[2]; k++)
        for (int64_t j = 0; j < dd[1]; j++)
            for (int64_t i = 0; i < dd[0]; i++) {
                double p[3], q[3];
                world(da, (double)i, (double)j, (double)k, p);
                world(T, p[0], p[1], p[2], q);
                worst = fmax(worst, fabs(crealf(out->data[(k * dd[1] + j) * dd[0] + i]) - field(q)));
            }
    CHECK_MSG(worst < 1e-4, "rigidly moved field resampled with error %g", worst);
    /* The rotation keeps the centre fixed (before the shift). */
    double c[3];
    world(T, 1, 2, 0, c);
    CHECK_NEAR(c[0], 1 + 1.5, 1e-12);
    CHECK_NEAR(c[1], 2 - 2.0, 1e-12);
    lm_volume_free(out);

    /* Outside: zero, or the nearest value. */
    double far[4][4] = {{1, 0, 0, 500}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}};
    const int64_t d1[3] = {2, 2, 2};
    CHECK(lm_resample(src, d1, dv, far, NULL, LM_OUTSIDE_ZERO, &out, &err) == LM_OK);
    CHECK(out && out->data[0] == 0);
    lm_volume_free(out);
    CHECK(lm_resample(src, d1, dv, far, NULL, LM_OUTSIDE_NEAREST, &out, &err) == LM_OK);
    CHECK(out && crealf(out->data[0]) != 0);
    lm_volume_free(out);

    CHECK(lm_same_grid(src, src->dims, src->affine));
    CHECK(!lm_same_grid(src, dd, src->affine));
    lm_volume_free(src);
    return lm_test_finish("resample");
}
