/* The truth volume: layout and geometry, exact values in voxels wholly
 * inside one region, voxel-by-voxel equality with the brute-force mean of
 * sub-samples of lm_phantom_value, and mean = d(0). */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_phantom.h"
#include "lm_test.h"

/* Brute force: mean of lm_phantom_value over the sub^d sub-samples of voxel
 * (ix, iy, iz), placed at centre + ((s + 0.5)/sub - 0.5) h. */
static double brute_voxel(const lm_phantom *p, const int64_t n[3], int sub, int64_t ix, int64_t iy, int64_t iz)
{
    int planar = p->dim == 2 || n[2] == 1;
    int sz = planar ? 1 : sub;
    double sum = 0;
    for (int c = 0; c < sz; c++)
        for (int b = 0; b < sub; b++)
            for (int a = 0; a < sub; a++) {
                double fa = (a + 0.5) / sub - 0.5, fb = (b + 0.5) / sub - 0.5, fc = (c + 0.5) / sub - 0.5;
                double x = lm_voxel_pos(ix, n[0]) + fa / (double)n[0];
                double y = lm_voxel_pos(iy, n[1]) + fb / (double)n[1];
                double z = lm_voxel_pos(iz, n[2]) + (planar ? 0.0 : fc / (double)n[2]);
                sum += lm_phantom_value(p, x, y, z);
            }
    return sum / ((double)sub * sub * sz);
}

/* Compares every voxel of slice iz with brute force; returns how many of
 * them were partial (neither 0 nor a sum of whole intensities), so the
 * caller can check the edge path was exercised. */
static int check_slice(const lm_phantom *p, const lm_volume *v, int sub, int64_t iz)
{
    int partial = 0, bad = 0;
    for (int64_t iy = 0; iy < v->dims[1]; iy++)
        for (int64_t ix = 0; ix < v->dims[0]; ix++) {
            double ref = brute_voxel(p, v->dims, sub, ix, iy, iz);
            double got = crealf(v->data[(iz * v->dims[1] + iy) * v->dims[0] + ix]);
            /* Stored as float: |value| <= 1.1, so rounding < 1e-7; the sum
             * order of the library (per ellipsoid fractions) and of the
             * brute force (per sample) differ by ~1e-16. */
            if (fabs(got - ref) > 2e-7 && bad++ < 5)
                fprintf(stderr, "voxel (%lld, %lld, %lld): truth %.9f, brute force %.9f\n", (long long)ix,
                        (long long)iy, (long long)iz, got, ref);
            double tenths = ref * 10;
            if (fabs(tenths - round(tenths)) > 1e-9)
                partial++;
        }
    CHECK_MSG(bad == 0, "%d voxels of slice %lld differ from brute force", bad, (long long)iz);
    return partial;
}

static double mean_re(const lm_volume *v, double *max_im)
{
    double s = 0;
    *max_im = 0;
    int64_t n = lm_volume_count(v);
    for (int64_t i = 0; i < n; i++) {
        s += crealf(v->data[i]);
        *max_im = fmax(*max_im, fabs(cimagf(v->data[i])));
    }
    return s / (double)n;
}

int main(void)
{
    const lm_phantom *p3 = lm_phantom_shepp_logan_3d();
    const lm_phantom *p2 = lm_phantom_shepp_logan_2d();
    lm_error err = {0};
    lm_geom g;
    lm_volume *v = NULL;

    /* 3D, 64^3, FOV 240 mm, sub = 4. */
    lm_geom_init(&g, 64, 64, 64, 240.0);
    CHECK_OK(lm_phantom_truth(p3, &g, 4, &v, &err), &err);
    if (!v)
        return lm_test_finish("phantom_truth");
    CHECK(v->dims[0] == 64 && v->dims[1] == 64 && v->dims[2] == 64);
    CHECK_NEAR(v->voxel_mm[0], 3.75, 1e-12);
    CHECK_NEAR(v->voxel_mm[2], 3.75, 1e-12);
    CHECK_NEAR(v->affine[0][0], 3.75, 1e-12);
    CHECK_NEAR(v->affine[1][3], -32 * 3.75, 1e-12); /* voxel n/2 at 0 mm */

    double max_im;
    double mean = mean_re(v, &max_im);
    double d0 = creal(lm_phantom_ft(p3, 0, 0, 0));
    CHECK(max_im == 0.0);
    /* The mean is a Riemann sum on the (64*4)^3 sub-sample lattice, h =
     * 1/256: the cap estimate of test_phantom_kspace (2 pi R h^2 |delta rho|
     * per cap, R ~ 0.4) gives ~4e-5; allow twice that. */
    fprintf(stderr, "3D 64^3 sub 4: mean %.8f, d(0) %.8f, diff %.3g\n", mean, d0, mean - d0);
    CHECK_NEAR(mean, d0, 8e-5);

    /* Wholly inside one region, exact values (float of the double sums):
     * the centre voxel is in ellipsoids 1 and 2 only (1 - 0.8); voxel
     * (32, 60, 32) spans y in [0.430, 0.445] FOV, inside ellipsoid 1
     * (top at 0.46) and above ellipsoid 2 (top at 0.428): the skull, 1.0.
     * A corner voxel is outside everything. */
    CHECK(crealf(v->data[(32 * 64 + 32) * 64 + 32]) == (float)(1.0 - 0.8));
    CHECK(crealf(v->data[(32 * 64 + 60) * 64 + 32]) == 1.0f);
    CHECK(crealf(v->data[0]) == 0.0f);
    CHECK(crealf(v->data[lm_volume_count(v) - 1]) == 0.0f);

    /* Voxel-by-voxel against brute force: the centre slice z = 0 (iz = 32:
     * the shells, the tilted ellipsoids 3 and 4, the small 8-10 near
     * y = -0.3) and z = 0.125 FOV (iz = 40: the small ellipsoids 6 and 7). */
    int partial = check_slice(p3, v, 4, 32);
    partial += check_slice(p3, v, 4, 40);
    CHECK_MSG(partial > 200, "only %d partial voxels: edge path not exercised", partial);
    /* Random voxels everywhere. */
    {
        uint64_t s = 12345;
        int bad = 0;
        for (int i = 0; i < 3000; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            int64_t idx = (int64_t)((s >> 20) % (uint64_t)lm_volume_count(v));
            int64_t ix = idx % 64, iy = (idx / 64) % 64, iz = idx / 4096;
            double ref = brute_voxel(p3, v->dims, 4, ix, iy, iz);
            if (fabs(crealf(v->data[idx]) - ref) > 2e-7)
                bad++;
        }
        CHECK_MSG(bad == 0, "%d of 3000 random voxels differ from brute force", bad);
    }
    lm_volume_free(v);
    v = NULL;

    /* Anisotropic matrix and sub = 3 (odd sub-sample lattice), checked in
     * full against brute force in two slices. */
    lm_geom_init(&g, 40, 36, 20, 200.0);
    CHECK_OK(lm_phantom_truth(p3, &g, 3, &v, &err), &err);
    if (v) {
        CHECK_NEAR(v->voxel_mm[1], 200.0 / 36, 1e-12);
        check_slice(p3, v, 3, 10);
        check_slice(p3, v, 3, 13);
        lm_volume_free(v);
        v = NULL;
    }

    /* 2D phantom, 256 x 256 x 1: mean = d(0), lattice h = 1/1024; the 2D
     * cap estimate sqrt(2R) h^1.5 ~ 3e-5 per cap, allow 6e-5. */
    lm_geom_init(&g, 256, 256, 1, 240.0);
    CHECK_OK(lm_phantom_truth(p2, &g, 4, &v, &err), &err);
    if (v) {
        CHECK(v->dims[2] == 1);
        mean = mean_re(v, &max_im);
        d0 = creal(lm_phantom_ft(p2, 0, 0, 0));
        fprintf(stderr, "2D 256^2 sub 4: mean %.8f, d(0) %.8f, diff %.3g\n", mean, d0, mean - d0);
        CHECK_NEAR(mean, d0, 6e-5);
        CHECK(crealf(v->data[128 * 256 + 128]) == (float)(1.0 - 0.8));
        check_slice(p2, v, 4, 0);
        lm_volume_free(v);
        v = NULL;
    }

    /* 3D phantom on a single-slice grid: the plane z = 0, sub^2 samples. */
    lm_geom_init(&g, 48, 48, 1, 240.0);
    CHECK_OK(lm_phantom_truth(p3, &g, 4, &v, &err), &err);
    if (v) {
        CHECK(check_slice(p3, v, 4, 0) > 20);
        lm_volume_free(v);
        v = NULL;
    }

    /* 2D phantom on a 3D grid: every slice the same. */
    lm_geom_init(&g, 32, 32, 4, 240.0);
    CHECK_OK(lm_phantom_truth(p2, &g, 2, &v, &err), &err);
    if (v) {
        CHECK(memcmp(v->data, v->data + 3 * 32 * 32, 32 * 32 * sizeof(lm_cfloat)) == 0);
        check_slice(p2, v, 2, 1);
        lm_volume_free(v);
        v = NULL;
    }

    /* Bad arguments fail with a message, and leave the output alone. */
    lm_geom_init(&g, 16, 16, 16, 240.0);
    CHECK(lm_phantom_truth(p3, &g, 0, &v, &err) == LM_ERR_INVALID && v == NULL && err.msg[0]);
    CHECK(lm_phantom_truth(p3, NULL, 2, &v, &err) == LM_ERR_INVALID);
    lm_geom_init(&g, 0, 16, 16, 240.0);
    CHECK(lm_phantom_truth(p3, &g, 2, &v, &err) == LM_ERR_INVALID && v == NULL);
    lm_phantom broken = *p3;
    broken.e[3].b = 0;
    lm_geom_init(&g, 16, 16, 16, 240.0);
    CHECK(lm_phantom_truth(&broken, &g, 2, &v, &err) == LM_ERR_INVALID && v == NULL);

    return lm_test_finish("phantom_truth");
}
