/* lm_fieldmap_synth: the field map (scale, bump, smoothness, refusals), the
 * 2x upsampling (exact on cubics inside, on linear maps everywhere), and
 * the signal: against a brute-force double sum on a tiny problem (8 x 8, 2
 * coils, 200 Hz), against the exact phase of a constant field map, and
 * with f = 0 against the analytic k-space (the fine grid's discretisation
 * error, measured and bounded). */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_test.h"
#include "lm_fieldmap_synth.h"
#include "lm_kernels.h"
#include "lm_spiral.h"
#include "lm_trajgen.h"

/* ||a - b|| / ||b|| over m x coils samples, b in double */
static double rel_err(const lm_cfloat *a, const double complex *b, int64_t count)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < count; i++) {
        num += pow(cabs(a[i] - b[i]), 2);
        den += pow(cabs(b[i]), 2);
    }
    return sqrt(num / den);
}

/* d_c(k_m) = (1/N2) phi2(k_m) sum_n rho_n s_c,n exp(-i 2 pi (k_m . x_n + f_n t_m))
 * straight from the fine grid, in double. */
static double complex *brute_force(const lm_fieldmap_fine *fine, const lm_traj *t)
{
    const int64_t N2 = fine->n[0] * fine->n[1] * fine->n[2], M = t->m, C = fine->ncoils;
    double complex *d = calloc((size_t)(M * C), sizeof *d);
    for (int64_t m = 0; m < M; m++) {
        double k[3] = {t->k[3 * m], t->k[3 * m + 1], t->k[3 * m + 2]}, tm = t->t ? t->t[m] : 0;
        double phi = 1;
        for (int a = 0; a < 3; a++)
            if (k[a] != 0) {
                double u = M_PI * k[a] / (double)fine->n[a];
                phi *= sin(u) / u;
            }
        for (int64_t i = 0; i < N2; i++) {
            int64_t ix = i % fine->n[0], iy = (i / fine->n[0]) % fine->n[1], iz = i / (fine->n[0] * fine->n[1]);
            double x = lm_voxel_pos(ix, fine->n[0]), y = lm_voxel_pos(iy, fine->n[1]), z = lm_voxel_pos(iz, fine->n[2]);
            double f = fine->f ? fine->f[i] : 0;
            double complex e = cexp(-2 * M_PI * I * (k[0] * x + k[1] * y + k[2] * z + f * tm));
            for (int64_t c = 0; c < C; c++) {
                double complex s = fine->sens ? (double complex)fine->sens[c * N2 + i] : 1;
                d[c * M + m] += fine->rho[i] * s * e;
            }
        }
        for (int64_t c = 0; c < C; c++)
            d[c * M + m] *= phi / (double)N2;
    }
    return d;
}

static void test_map(void)
{
    lm_error err = {0};
    int64_t n[3] = {128, 128, 1};
    float *f = NULL;
    CHECK_OK(lm_fieldmap_synth(n, 150.0, &f, &err), &err);
    if (!f)
        return;
    double peak = 0, step = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < 128 * 128; i++) {
        if (fabs(f[i]) > peak)
            peak = fabs(f[i]), at = i;
        if (i % 128 > 0)
            step = fmax(step, fabs(f[i] - f[i - 1]));
        if (i >= 128)
            step = fmax(step, fabs(f[i] - f[i - 128]));
    }
    printf("field map 128^2, 150 Hz: largest |f| %.4f Hz at (%lld, %lld), largest step between neighbours %.2f Hz\n",
           peak, (long long)(at % 128), (long long)(at / 128), step);
    CHECK_NEAR(peak, 150.0, 1e-4);
    /* the bump's centre (0, 0.40) is voxel (64, 64 + 51.2) */
    CHECK(at % 128 == 64 && llabs(at / 128 - 115) <= 1);
    CHECK(f[at] > 0);
    /* smooth: the Gaussian's steepest slope is 150 e^-1/2 / (0.05 x 128) ~ 14 Hz per voxel */
    CHECK(step < 16.0);
    /* the background varies but stays gentle: the centre sits well below the peak */
    CHECK(fabs(f[64 * 128 + 64]) < 0.3 * 150 && f[64 * 128 + 64] != 0);
    free(f);
    f = NULL;
    CHECK_OK(lm_fieldmap_synth(n, 0.0, &f, &err), &err);
    CHECK(f && f[0] == 0.0f && f[5000] == 0.0f);
    free(f);
    f = NULL;
    CHECK(lm_fieldmap_synth(n, -1.0, &f, &err) == LM_ERR_INVALID && !f && strstr(err.msg, "-1"));
    CHECK(lm_fieldmap_synth(n, NAN, &f, &err) == LM_ERR_INVALID && !f);
    CHECK(lm_fieldmap_synth(n, 2e4, &f, &err) == LM_ERR_INVALID && !f);
}

/* a cubic in x and y (and z linear) on the coarse grid */
static double poly(double x, double y, double z)
{
    return 3 + 20 * x - 7 * y + 30 * x * x * y - 40 * y * y * y + 12 * x * x * x + 5 * z;
}

static void test_upsample(void)
{
    lm_error err = {0};
    /* odd x (15): the coarse voxels sit at the odd fine ones */
    int64_t n[3] = {15, 12, 1};
    float c[15 * 12], *fine = NULL;
    for (int64_t i = 0; i < 15 * 12; i++)
        c[i] = (float)poly(lm_voxel_pos(i % 15, 15), lm_voxel_pos(i / 15, 12), 0);
    CHECK_OK(lm_fieldmap_upsample2(n, c, &fine, &err), &err);
    if (!fine)
        return;
    double inner = 0, coarse = 0;
    for (int64_t iy = 0; iy < 24; iy++)
        for (int64_t ix = 0; ix < 30; ix++) {
            double v = fine[iy * 30 + ix];
            if (ix % 2 == 1 && iy % 2 == 0)
                coarse = fmax(coarse, fabs(v - c[(iy / 2) * 15 + ix / 2]));
            /* the four-point stencil needs one coarse voxel each side */
            if (ix >= 3 && ix <= 26 && iy >= 2 && iy <= 20)
                inner = fmax(inner, fabs(v - poly(lm_voxel_pos(ix, 30), lm_voxel_pos(iy, 24), 0)));
        }
    CHECK(coarse == 0);      /* fine 2i is coarse i, bit for bit */
    CHECK(inner < 2e-5);     /* float rounding of values up to ~20 */
    free(fine);
    fine = NULL;
    /* 3D and linear: exact to float rounding everywhere, the edges too */
    int64_t m[3] = {6, 5, 4};
    float lin[6 * 5 * 4];
    for (int64_t i = 0; i < 120; i++)
        lin[i] = (float)(1 + 4 * lm_voxel_pos(i % 6, 6) - 3 * lm_voxel_pos((i / 6) % 5, 5) + 2 * lm_voxel_pos(i / 30, 4));
    CHECK_OK(lm_fieldmap_upsample2(m, lin, &fine, &err), &err);
    double worst = 0;
    for (int64_t i = 0; fine && i < 12 * 10 * 8; i++) {
        double want = 1 + 4 * lm_voxel_pos(i % 12, 12) - 3 * lm_voxel_pos((i / 12) % 10, 10) + 2 * lm_voxel_pos(i / 120, 8);
        worst = fmax(worst, fabs(fine[i] - want));
    }
    CHECK_NEAR(worst, 0, 2e-6); /* float rounding of values up to ~5 */
    free(fine);
}

static void test_signal(void)
{
    lm_error err = {0};
    const lm_phantom *p = lm_phantom_shepp_logan_2d();
    lm_geom g;
    lm_geom_init(&g, 8, 8, 1, 240.0);
    lm_coils_synth *cs = NULL;
    lm_traj *t = NULL;
    float *fm = NULL;
    lm_fieldmap_fine *fine = NULL;
    lm_spiral_opts so = {.n = 8, .interleaves = 1, .readout_s = 0.010};
    CHECK_OK(lm_coils_synth_make(2, 2, &cs, &err), &err);
    CHECK_OK(lm_spiral_make(&so, &t, NULL, &err), &err);
    CHECK_OK(lm_fieldmap_synth(g.n, 200.0, &fm, &err), &err);
    if (!cs || !t || !fm)
        goto out;
    CHECK_OK(lm_fieldmap_fine_make(p, &g, cs, fm, &fine, &err), &err);
    if (!fine)
        goto out;
    CHECK(fine->n[0] == 16 && fine->n[1] == 16 && fine->n[2] == 1 && fine->ncoils == 2 && fine->sens && fine->f);
    double complex *ref = brute_force(fine, t);
    lm_kdata *k = lm_kdata_new(t->m, 2, &err);
    /* cpu-dp: float inputs, double sums, float outputs; the default
     * (cpu-simd where available): float sums over 16 x 16 voxels; measured
     * 3.1e-8 and 2.3e-7 */
    const char *variants[] = {"cpu-dp", NULL};
    const double tol[] = {1e-6, 2e-6};
    for (int v = 0; v < 2 && k; v++) {
        CHECK_OK(lm_fieldmap_synth_data(fine, t, variants[v], k, &err), &err);
        double e = rel_err(k->d, ref, t->m * 2);
        printf("8x8, 2 coils, 200 Hz, %lld samples: %s against the double brute force: %.2e (tolerance %.0e)\n",
               (long long)t->m, variants[v] ? variants[v] : "default", e, tol[v]);
        CHECK(e <= tol[v]);
    }
    free(ref);

    /* a constant map f0 multiplies every sample by exp(-i 2 pi f0 t): the
     * sign and units of the time term without the brute force */
    float flat[64];
    for (int i = 0; i < 64; i++)
        flat[i] = 37.0f;
    lm_kdata *k0 = lm_kdata_new(t->m, 2, &err), *kf = lm_kdata_new(t->m, 2, &err);
    if (k0 && kf) {
        CHECK_OK(lm_fieldmap_synth_kspace(p, &g, cs, NULL, t, "cpu-dp", k0, &err), &err);
        CHECK_OK(lm_fieldmap_synth_kspace(p, &g, cs, flat, t, "cpu-dp", kf, &err), &err);
        double complex *want = malloc(sizeof *want * (size_t)(2 * t->m));
        for (int64_t c = 0; c < 2; c++)
            for (int64_t m = 0; m < t->m; m++)
                want[c * t->m + m] = k0->d[c * t->m + m] * cexp(-2 * M_PI * I * 37.0 * (double)t->t[m]);
        double e = rel_err(kf->d, want, 2 * t->m);
        printf("constant 37 Hz map against d(f = 0) exp(-i 2 pi 37 t): %.2e\n", e);
        CHECK(e <= 1e-6);
        free(want);
    }
    lm_kdata_free(k0);
    lm_kdata_free(kf);

    /* refusals: a field map without sample times, a variant without the
     * term, a 3D coil set on a 2D matrix, the wrong output shape */
    float *times = t->t;
    t->t = NULL;
    CHECK(k && lm_fieldmap_synth_data(fine, t, NULL, k, &err) == LM_ERR_INVALID && strstr(err.msg, "times"));
    t->t = times;
    CHECK(k && lm_fieldmap_synth_data(fine, t, "cpu-nufft", k, &err) != LM_OK);
    lm_coils_synth *cs3 = NULL;
    lm_fieldmap_fine *bad = NULL;
    CHECK_OK(lm_coils_synth_make(3, 2, &cs3, &err), &err);
    CHECK(lm_fieldmap_fine_make(p, &g, cs3, fm, &bad, &err) == LM_ERR_INVALID && !bad);
    lm_coils_synth_free(cs3);
    lm_kdata *k1 = lm_kdata_new(t->m, 1, &err);
    CHECK(k1 && lm_fieldmap_synth_data(fine, t, NULL, k1, &err) == LM_ERR_INVALID && strstr(err.msg, "coils"));
    lm_kdata_free(k1);
    lm_kdata_free(k);
out:
    lm_fieldmap_fine_free(fine);
    lm_coils_synth_free(cs);
    lm_traj_free(t);
    free(fm);
}

/* With f = 0 the fine-grid sum is the transform of the piecewise-constant
 * fine image, not of the ellipses: the difference is the discretisation
 * error of the 2x grid (edges smeared over 1/(2n) voxels), largest at the
 * rim of k-space. */
static void test_discretisation(int64_t n, int64_t coils, double bound, double bound_lo)
{
    lm_error err = {0};
    const lm_phantom *p = lm_phantom_shepp_logan_2d();
    lm_geom g;
    lm_geom_init(&g, n, n, 1, 240.0);
    lm_coils_synth *cs = NULL;
    lm_traj *t = NULL;
    lm_spiral_opts so = {.n = n, .interleaves = n / 16 > 1 ? n / 16 : 1, .readout_s = 0.010};
    CHECK_OK(lm_spiral_make(&so, &t, NULL, &err), &err);
    if (coils > 1)
        CHECK_OK(lm_coils_synth_make(2, coils, &cs, &err), &err);
    lm_kdata *k = t ? lm_kdata_new(t->m, coils, &err) : NULL;
    if (k) {
        CHECK_OK(lm_fieldmap_synth_kspace(p, &g, cs, NULL, t, NULL, k, &err), &err);
        double complex *ref = malloc(sizeof *ref * (size_t)(t->m * coils));
        double lo_num = 0, lo_den = 0;
        for (int64_t c = 0; c < coils; c++)
            for (int64_t m = 0; m < t->m; m++) {
                const float *q = t->k + 3 * m;
                double complex r = cs ? lm_coils_synth_ft(cs, p, c, q[0], q[1], 0) : lm_phantom_ft(p, q[0], q[1], 0);
                ref[c * t->m + m] = r;
                if (hypot(q[0], q[1]) <= n / 8.0) {
                    lo_num += pow(cabs(k->d[c * t->m + m] - r), 2);
                    lo_den += pow(cabs(r), 2);
                }
            }
        double e = rel_err(k->d, ref, t->m * coils), elo = sqrt(lo_num / lo_den);
        printf("f = 0, %lldx%lld, %lld coil(s), %lld samples: fine grid against the analytic k-space %.3e "
               "(bound %.0e; |k| <= n/8: %.3e, bound %.0e)\n",
               (long long)n, (long long)n, (long long)coils, (long long)t->m, e, bound, elo, bound_lo);
        CHECK(e <= bound);
        CHECK(elo <= bound_lo); /* the centre, where the energy is, is much better */
        free(ref);
    }
    lm_kdata_free(k);
    lm_traj_free(t);
    lm_coils_synth_free(cs);
}

int main(void)
{
    test_map();
    test_upsample();
    test_signal();
    /* measured: 4.3e-2 (centre 5.0e-3) and 3.3e-2 (centre 2.2e-3) */
    test_discretisation(32, 1, 6e-2, 8e-3);
    test_discretisation(64, 2, 5e-2, 4e-3);
    return lm_test_finish("fieldmap_synth");
}
