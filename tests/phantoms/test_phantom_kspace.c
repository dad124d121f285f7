/* The analytic k-space of the phantoms against brute force: a DFT of the
 * phantom sampled on a fine grid, the closed-form volumes at k = 0, and a
 * long-double evaluation of the unit-ball transform across the switch
 * between its series and its closed form. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_phantom.h"
#include "lm_test.h"

#define NK 20

/* k points with |k| <= 8 cycles/FOV: k = 0, the axes and mostly oblique
 * directions, so that every rotation and shift shows in the phase. */
static void k_points(double k[NK][3], int dim)
{
    static const double base[NK][3] = {
        {0, 0, 0},      {1, 0, 0},       {0, 1, 0},      {0, 0, 1},       {1.5, -0.5, 0.25},
        {-2, 1, 3},     {3, 3, -1},      {0.5, 4, -2},   {-4, -1.5, 2.5}, {5, 0, 0},
        {0, -5.5, 1},   {2, -3, -4},     {6, 2, 1},      {-1, 6.5, -3},   {0.25, -2, 7},
        {4.5, 4.5, 4},  {-7.5, 1, -1.5}, {3, -6, 4},     {0, 0, -8},      {-5, -5, 2.5},
    };
    for (int i = 0; i < NK; i++) {
        k[i][0] = base[i][0];
        k[i][1] = base[i][1];
        k[i][2] = dim == 3 ? base[i][2] : 0.0;
    }
}

/* Riemann sum (1/G^d) sum_x rho(x) exp(-i 2 pi k.x) over the G^d grid of
 * points x = (i - G/2)/G. Point samples come from lm_phantom_truth with
 * sub = 1 (the voxel-centre value, which test_phantom_truth checks against
 * lm_phantom_value point by point); the sum is separable per axis. */
static void brute_dft(const lm_phantom *p, int64_t G, int dim, double k[NK][3], double complex out[NK])
{
    lm_error err = {0};
    lm_geom g;
    lm_geom_init(&g, G, G, dim == 3 ? G : 1, 1.0);
    lm_volume *v = NULL;
    CHECK_OK(lm_phantom_truth(p, &g, 1, &v, &err), &err);
    if (!v)
        return;
    int64_t nz = dim == 3 ? G : 1;
    /* exp(-i 2 pi k_a x_i) per k point and axis; the row sums then need
     * no trigonometry. */
    double complex *tab = malloc(sizeof(double complex) * NK * 3 * (size_t)G);
    for (int q = 0; q < NK; q++)
        for (int a = 0; a < 3; a++)
            for (int64_t i = 0; i < G; i++) {
                double x = a == 2 && dim == 2 ? 0.0 : lm_voxel_pos(i, G);
                tab[((size_t)q * 3 + a) * G + i] = cexp(-2 * M_PI * I * k[q][a] * x);
            }
    double complex acc[NK] = {0};
#pragma omp parallel
    {
        double complex loc[NK] = {0};
#pragma omp for schedule(static)
        for (int64_t iz = 0; iz < nz; iz++) {
            for (int64_t iy = 0; iy < G; iy++) {
                const lm_cfloat *row = v->data + (iz * G + iy) * G;
                for (int q = 0; q < NK; q++) {
                    const double complex *ex = tab + (size_t)q * 3 * G;
                    double sr = 0, si = 0;
                    for (int64_t ix = 0; ix < G; ix++) {
                        double r = crealf(row[ix]);
                        sr += r * creal(ex[ix]);
                        si += r * cimag(ex[ix]);
                    }
                    loc[q] += (sr + I * si) * ex[G + iy] * ex[2 * G + iz];
                }
            }
        }
#pragma omp critical
        for (int q = 0; q < NK; q++)
            acc[q] += loc[q];
    }
    double cell = 1.0 / ((double)G * G * (dim == 3 ? G : 1));
    for (int q = 0; q < NK; q++)
        out[q] = acc[q] * cell;
    free(tab);
    lm_volume_free(v);
}

static double compare(const char *what, const lm_phantom *p, int64_t G, int dim, double tol)
{
    double k[NK][3];
    double complex ref[NK];
    k_points(k, dim);
    brute_dft(p, G, dim, k, ref);
    double worst = 0;
    for (int q = 0; q < NK; q++) {
        double complex a = lm_phantom_ft(p, k[q][0], k[q][1], k[q][2]);
        double e = cabs(a - ref[q]);
        if (e > worst)
            worst = e;
        CHECK_MSG(e <= tol, "%s: k = (%g, %g, %g): analytic %.8f%+.8fi, brute force %.8f%+.8fi, |diff| %.3g > %.3g",
                  what, k[q][0], k[q][1], k[q][2], creal(a), cimag(a), creal(ref[q]), cimag(ref[q]), e, tol);
    }
    fprintf(stderr, "%s: grid %lld^%d, max |analytic - DFT| = %.3g (tolerance %.3g)\n", what, (long long)G, dim,
            worst, tol);
    return worst;
}

/* Volume of the phantom's ellipsoids in FOV fractions, summed with rho. */
static double closed_form_d0(const lm_phantom *p)
{
    double s = 0;
    for (int i = 0; i < p->count; i++) {
        const lm_ellipsoid *e = &p->e[i];
        s += p->dim == 3 ? e->rho * 4.0 / 3.0 * M_PI * (e->a / 2) * (e->b / 2) * (e->c / 2)
                         : e->rho * M_PI * (e->a / 2) * (e->b / 2);
    }
    return s;
}

int main(void)
{
    const lm_phantom *p3 = lm_phantom_shepp_logan_3d();
    const lm_phantom *p2 = lm_phantom_shepp_logan_2d();
    lm_error err = {0};

    /* Tables: ten ellipsoids, the modified intensities. */
    CHECK(p3->count == 10 && p3->dim == 3 && p2->count == 10 && p2->dim == 2);
    CHECK(p3->e[0].rho == 1.0 && p3->e[1].rho == -0.8 && p3->e[2].rho == -0.2 && p3->e[4].rho == 0.1);
    CHECK(lm_phantom_by_name("shepp-logan", &err) == p3);
    CHECK(lm_phantom_by_name("shepp-logan-2d", &err) == p2);
    CHECK(lm_phantom_by_name("nope", &err) == NULL && err.code == LM_ERR_INVALID && strstr(err.msg, "shepp-logan"));

    /* d(0) is sum rho x volume exactly (only rounding differs). */
    CHECK_NEAR(creal(lm_phantom_ft(p3, 0, 0, 0)), closed_form_d0(p3), 1e-14);
    CHECK_NEAR(cimag(lm_phantom_ft(p3, 0, 0, 0)), 0.0, 1e-14);
    CHECK_NEAR(creal(lm_phantom_ft(p2, 0, 0, 0)), closed_form_d0(p2), 1e-14);
    /* A 2D phantom ignores kz. */
    CHECK(lm_phantom_ft(p2, 1.5, -2, 0) == lm_phantom_ft(p2, 1.5, -2, 7));

    /* Tiny k: the closed form would lose ~eps/x^2 ~ 1e-3 relative at
     * |k| = 1e-7 (x ~ 1e-7); the series must give Re d(0) to rounding (the
     * real part changes by O(k^2) ~ 1e-14 there, the imaginary part by the
     * first moment, O(k) ~ 1e-9). */
    for (int dim = 2; dim <= 3; dim++) {
        const lm_phantom *p = dim == 3 ? p3 : p2;
        double complex d0 = lm_phantom_ft(p, 0, 0, 0), dk = lm_phantom_ft(p, 1e-7, -0.7e-7, 0.3e-7);
        CHECK_NEAR(creal(dk), creal(d0), 1e-12);
        CHECK_NEAR(cimag(dk), 0.0, 1e-8);
    }

    /* The unit-ball transform across the series/closed-form switch (x = 1)
     * and beyond, against a long-double closed form: one centred sphere of
     * radius 1 (0.5 FOV), rho = 1, so d(k) = (1/8) 4 pi (sin x - x cos x)/x^3
     * with x = pi |k|. Long double carries 11 more bits than double, so the
     * reference is good to ~1e-16 / x^2 relative; 1e-13 absolute leaves
     * room for the double evaluation's own rounding. */
    {
        lm_phantom ball = {.name = "ball", .dim = 3, .count = 1, .e = {{1, 1, 1, 1, 0, 0, 0, 0, 0, 0}}};
        const double xs[] = {0.05, 0.3, 0.9, 0.999999, 1.0, 1.000001, 1.7, 3.1, 7.3, 25.0, 60.2};
        for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
            long double x = xs[i];
            long double ref = 0.5L * M_PI * (sinl(x) - x * cosl(x)) / (x * x * x);
            double kk = xs[i] / M_PI; /* x = 2 pi q, q = (1/2) |k| */
            double complex d = lm_phantom_ft(&ball, kk * 0.6, kk * 0.8, 0);
            CHECK_NEAR(creal(d), (double)ref, 1e-13);
            CHECK_NEAR(cimag(d), 0.0, 1e-15);
        }
        /* Same for the disc: (1/4) 2 pi J1(x)/x with x = pi |k| (radius 0.5 FOV). */
        lm_phantom disc = {.name = "disc", .dim = 2, .count = 1, .e = {{1, 1, 1, 0, 0, 0, 0, 0, 0, 0}}};
        for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
            double x = xs[i], kk = x / M_PI;
            double ref = 0.5 * M_PI * j1(x) / x;
            CHECK_NEAR(creal(lm_phantom_ft(&disc, kk, 0, 0)), ref, 1e-15);
        }
        CHECK_NEAR(creal(lm_phantom_ft(&disc, 0, 0, 0)), M_PI / 4, 1e-15);
    }

    /* lm_phantom_kspace writes the same values in single precision. */
    {
        double k[NK][3];
        k_points(k, 3);
        lm_traj *t = lm_traj_new(NK, 3, &err);
        for (int q = 0; q < NK; q++)
            for (int a = 0; a < 3; a++)
                t->k[3 * q + a] = (float)k[q][a];
        lm_cfloat d[NK];
        CHECK_OK(lm_phantom_kspace(p3, t, d, &err), &err);
        for (int q = 0; q < NK; q++) {
            double complex ref = lm_phantom_ft(p3, k[q][0], k[q][1], k[q][2]);
            /* float rounding of a value <= |d(0)| ~ 0.1: < 1e-8 */
            CHECK_NEAR(crealf(d[q]), creal(ref), 1e-8);
            CHECK_NEAR(cimagf(d[q]), cimag(ref), 1e-8);
        }
        CHECK(lm_phantom_kspace(p3, NULL, d, &err) == LM_ERR_INVALID);
        lm_traj_free(t);
    }

    /* Brute force. A Riemann sum on a grid of spacing h = 1/G misjudges
     * the cells that edges cut, each by up to |delta rho| h^d, with signs
     * that mostly cancel; what does not cancel comes from the flat caps of
     * the ellipsoids, where the surface stays within h of a grid plane over
     * an area ~2 pi R h (3D) or a chord ~sqrt(2 R h) (2D), an error of about
     * |delta rho| 2 pi R h^2 (3D) or |delta rho| sqrt(2 R) h^1.5 (2D) per
     * cap. With R ~ 0.4 FOV: 5e-5 at G = 224 in 3D, 3e-6 at G = 4096 in 2D.
     * The tolerances are twice (3D) and six times (2D) that one-cap
     * estimate (measured errors are printed on stderr). A wrong sign,
     * rotation or centre moves d(k) by 1e-3 .. 1e-1 at these k. */
    const int64_t G3 = 224;
    const double tol3 = 1e-4;
    compare("3D Shepp-Logan", p3, G3, 3, tol3);

    /* One large tilted, shifted ellipsoid with all three Euler angles: the
     * rotation convention of the value and of the FT must agree. */
    {
        lm_phantom tilt = {.name = "tilted", .dim = 3, .count = 1,
                           .e = {{1.0, 0.7, 0.45, 0.3, 0.12, -0.08, 0.2, 30, 50, -20}}};
        compare("tilted ellipsoid", &tilt, G3, 3, tol3);
        /* Its mirror image (swapped angle signs) differs by far more than
         * the tolerance at these k, so the comparison above can fail. */
        lm_phantom mirror = tilt;
        mirror.e[0].phi = -30;
        mirror.e[0].psi = 20;
        double worst = 0;
        double k[NK][3];
        k_points(k, 3);
        for (int q = 0; q < NK; q++)
            worst = fmax(worst, cabs(lm_phantom_ft(&tilt, k[q][0], k[q][1], k[q][2]) -
                                     lm_phantom_ft(&mirror, k[q][0], k[q][1], k[q][2])));
        CHECK(worst > 20 * tol3);
    }

    compare("2D Shepp-Logan", p2, 4096, 2, 2e-5);
    {
        lm_phantom tilt2 = {.name = "tilted-2d", .dim = 2, .count = 1,
                            .e = {{1.0, 0.7, 0.35, 0, 0.12, -0.2, 0, 35, 0, 0}}};
        compare("tilted ellipse", &tilt2, 4096, 2, 2e-5);
    }
    return lm_test_finish("phantom_kspace");
}
