/* The exact multi-coil k-space of lm_coils_synth against brute force: a
 * double-precision Riemann sum over a fine grid of s_c(x) rho(x)
 * exp(-i 2 pi k.x), with s_c(x) written out here from the coefficients as
 * sum_j a_cj exp(+i 2 pi f_j.x) (so a sign slip in the shift identity
 * d_c(k) = sum_j a_cj RHO(k - f_j) shows), in 2D and 3D, for several coils
 * and k points; then the fast single-precision path against the
 * double-precision reference, and lm_phantom_kspace_modulated's own
 * contract. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_coils_synth.h"
#include "lm_test.h"
#include "lm_trajgen.h"

#define NK 12
#define NC 3

/* |k| <= 8 cycles/FOV, oblique and on the axes, k = 0 included. */
static void k_points(double k[NK][3], int dim)
{
    static const double base[NK][3] = {
        {0, 0, 0},     {1, 0, 0},      {0, -2, 1},   {1.5, -0.5, 0.25}, {-2, 1, 3},    {3, 3, -1},
        {0.5, 4, -2},  {-4, -1.5, 2.5}, {5, 0, 0},   {2, -3, -4},       {6, 2, 1},     {-1, 6.5, -3},
    };
    for (int i = 0; i < NK; i++) {
        k[i][0] = base[i][0];
        k[i][1] = base[i][1];
        k[i][2] = dim == 3 ? base[i][2] : 0.0;
    }
}

/* brute[c][q] = (1/G^d) sum_x rho(x) s_c(x) exp(-i 2 pi k_q.x) over the
 * G^d grid x = (i - G/2)/G; rho from lm_phantom_truth with sub = 1 (point
 * values). s_c separable per axis: per plane z, b[fx, fy] = sum_fz a e(fz z);
 * per row, r[fx] = sum_fy b e(fy y); per point, sum_fx r e(fx x). */
static void brute(const lm_phantom *p, const lm_coils_synth *cs, const int coils[NC], int64_t G, double k[NK][3],
                  double complex out[NC][NK])
{
    const int dim = p->dim, mdim = cs->dim; /* the grid's and the maps' */
    lm_error err = {0};
    lm_geom g;
    lm_geom_init(&g, G, G, dim == 3 ? G : 1, 1.0);
    lm_volume *v = NULL;
    CHECK_OK(lm_phantom_truth(p, &g, 1, &v, &err), &err);
    if (!v)
        return;
    const int64_t nz = dim == 3 ? G : 1;
    const int K = cs->order, L = 2 * K + 1, lz = mdim == 3 ? L : 1;
    /* ek[q][axis][i] = exp(-i 2 pi k_q,a x_i); ef[axis][f][i] = exp(+i 2 pi f x_i) */
    double complex *ek = malloc(sizeof(double complex) * NK * 3 * (size_t)G);
    double complex *ef = malloc(sizeof(double complex) * 3 * L * (size_t)G);
    for (int64_t i = 0; i < G; i++) {
        double x = lm_voxel_pos(i, G);
        for (int a = 0; a < 3; a++) {
            double xa = a == 2 && dim == 2 ? 0.0 : x;
            for (int q = 0; q < NK; q++)
                ek[((size_t)q * 3 + a) * G + i] = cexp(-2 * M_PI * I * k[q][a] * xa);
            for (int f = -K; f <= K; f++)
                ef[((size_t)a * L + f + K) * G + i] = cexp(2 * M_PI * I * f * xa);
        }
    }
    for (int ci = 0; ci < NC; ci++) {
        const double complex *a = cs->a + coils[ci] * cs->nterms;
        double acc_re[NK] = {0}, acc_im[NK] = {0};
#pragma omp parallel
        {
            double lre[NK] = {0}, lim[NK] = {0};
            double complex b[64], r[8], *u = malloc(sizeof(double complex) * (size_t)G);
#pragma omp for schedule(static)
            for (int64_t iz = 0; iz < nz; iz++) {
                for (int fxy = 0; fxy < L * L; fxy++) {
                    b[fxy] = 0;
                    for (int fz = 0; fz < lz; fz++)
                        b[fxy] += a[fz * L * L + fxy] * (mdim == 3 ? ef[((size_t)2 * L + fz) * G + iz] : 1.0);
                }
                for (int64_t iy = 0; iy < G; iy++) {
                    for (int fx = 0; fx < L; fx++) {
                        r[fx] = 0;
                        for (int fy = 0; fy < L; fy++)
                            r[fx] += b[fy * L + fx] * ef[((size_t)L + fy) * G + iy];
                    }
                    const lm_cfloat *row = v->data + (iz * G + iy) * G;
                    for (int64_t ix = 0; ix < G; ix++) {
                        double rho = crealf(row[ix]);
                        double sr = 0, si = 0;
                        if (rho != 0)
                            for (int fx = 0; fx < L; fx++) {
                                double complex e = ef[(size_t)fx * G + ix];
                                sr += creal(r[fx]) * creal(e) - cimag(r[fx]) * cimag(e);
                                si += creal(r[fx]) * cimag(e) + cimag(r[fx]) * creal(e);
                            }
                        u[ix] = rho * sr + I * (rho * si);
                    }
                    for (int q = 0; q < NK; q++) {
                        const double complex *ex = ek + (size_t)q * 3 * G;
                        double re = 0, im = 0;
                        for (int64_t ix = 0; ix < G; ix++) {
                            re += creal(u[ix]) * creal(ex[ix]) - cimag(u[ix]) * cimag(ex[ix]);
                            im += creal(u[ix]) * cimag(ex[ix]) + cimag(u[ix]) * creal(ex[ix]);
                        }
                        double complex t = (re + I * im) * ex[G + iy] * ex[2 * G + iz];
                        lre[q] += creal(t);
                        lim[q] += cimag(t);
                    }
                }
            }
#pragma omp critical
            for (int q = 0; q < NK; q++) {
                acc_re[q] += lre[q];
                acc_im[q] += lim[q];
            }
            free(u);
        }
        double cell = 1.0 / ((double)G * G * (double)nz);
        for (int q = 0; q < NK; q++)
            out[ci][q] = (acc_re[q] + I * acc_im[q]) * cell;
    }
    free(ek);
    free(ef);
    lm_volume_free(v);
}

static void compare(const char *what, const lm_phantom *p, int dim, int64_t C, int64_t G, double tol)
{
    lm_error err = {0};
    lm_coils_synth *cs = NULL;
    CHECK_OK(lm_coils_synth_make(dim, C, &cs, &err), &err);
    if (!cs)
        return;
    const int coils[NC] = {0, (int)(C / 3), (int)(C - 1)};
    double k[NK][3];
    double complex ref[NC][NK];
    k_points(k, p->dim);
    brute(p, cs, coils, G, k, ref);
    double worst = 0, wrong = 0, dmax = 0;
    for (int ci = 0; ci < NC; ci++)
        for (int q = 0; q < NK; q++) {
            double complex a = lm_coils_synth_ft(cs, p, coils[ci], k[q][0], k[q][1], k[q][2]);
            double e = cabs(a - ref[ci][q]);
            worst = fmax(worst, e);
            dmax = fmax(dmax, cabs(a));
            CHECK_MSG(e <= tol, "%s: coil %d, k = (%g, %g, %g): exact %.8f%+.8fi, brute force %.8f%+.8fi, |diff| %.3g > %.3g",
                      what, coils[ci], k[q][0], k[q][1], k[q][2], creal(a), cimag(a), creal(ref[ci][q]),
                      cimag(ref[ci][q]), e, tol);
            /* The opposite shift sign, sum_j a_cj RHO(k + f_j). */
            double complex b = 0;
            for (int64_t j = 0; j < cs->nterms; j++) {
                const double *f = cs->freq + 3 * j;
                b += cs->a[coils[ci] * cs->nterms + j] * lm_phantom_ft(p, k[q][0] + f[0], k[q][1] + f[1], k[q][2] + f[2]);
            }
            wrong = fmax(wrong, cabs(b - ref[ci][q]));
        }
    /* A sign slip must move the data by far more than the tolerance. */
    CHECK_MSG(wrong > 20 * tol, "%s: the opposite sign differs by only %.3g", what, wrong);
    fprintf(stderr,
            "%s: %lld coils, grid %lld^%d: max |exact - brute force| = %.3g (tolerance %.3g; max |d| %.3g; "
            "opposite shift sign: %.3g)\n",
            what, (long long)C, (long long)G, p->dim, worst, tol, dmax, wrong);
    lm_coils_synth_free(cs);
}

int main(void)
{
    lm_error err = {0};
    const lm_phantom *p3 = lm_phantom_shepp_logan_3d(), *p2 = lm_phantom_shepp_logan_2d();

    /* Brute force. test_phantom_kspace bounds the Riemann sum's error for
     * rho alone at 5e-5 (3D, G = 224) and 3e-6 (2D, G = 4096), tolerances
     * 1e-4 and 2e-5; the smooth map scales it by |s_c| at the edges (<= 1.2
     * for 8 coils: lm_coils_synth_maps' test) and adds the map's own
     * Riemann error, which for a band-limited s_c times rho is the same
     * edge error. So the same tolerances times 1.5. */
    compare("3D Shepp-Logan, 8 coils", p3, 3, 8, 224, 1.5e-4);
    compare("2D Shepp-Logan, 8 coils", p2, 2, 8, 4096, 3e-5);
    /* 2D maps (no z dependence) on the 3D phantom: still exact. */
    compare("3D Shepp-Logan, 2D maps, 5 coils", p3, 2, 5, 224, 1.5e-4);

    /* The fast path (lm_coils_synth_data: tables, float output) against the
     * double reference at 300 radial samples with |k| up to 16: float
     * rounding of values <= 0.1 is < 1e-8. */
    {
        int64_t n[3] = {32, 32, 32};
        lm_traj *t = NULL;
        CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL3D, n, 300, 16, &t, &err), &err);
        for (int dim = 2; dim <= 3 && t; dim++) {
            const int64_t C = dim == 3 ? 8 : 4;
            lm_coils_synth *cs = NULL;
            lm_kdata *kd = lm_kdata_new(t->m, C, &err);
            CHECK_OK(lm_coils_synth_make(dim, C, &cs, &err), &err);
            if (!cs || !kd)
                break;
            CHECK_OK(lm_coils_synth_data(cs, p3, t, kd, &err), &err);
            double worst = 0;
            for (int64_t c = 0; c < C; c++)
                for (int64_t i = 0; i < t->m; i++) {
                    double complex r = lm_coils_synth_ft(cs, p3, c, t->k[3 * i], t->k[3 * i + 1], t->k[3 * i + 2]);
                    worst = fmax(worst, cabs(kd->d[c * t->m + i] - r));
                }
            CHECK_MSG(worst < 1e-8, "fast path, %dD maps: max |float - double| = %.3g", dim, worst);
            fprintf(stderr, "fast path, %dD maps, %lld coils: max |float - double| = %.3g\n", dim, (long long)C, worst);
            /* The one-call form gives the same numbers. */
            lm_kdata *k2 = lm_kdata_new(t->m, C, &err);
            CHECK_OK(lm_coils_synth_kspace(p3, dim, C, t, k2, &err), &err);
            CHECK(k2 && memcmp(k2->d, kd->d, sizeof(lm_cfloat) * (size_t)(t->m * C)) == 0);
            /* Errors: wrong output shape; a 2D phantom with 3D maps. */
            lm_kdata short_by_one = {t->m, C - 1, kd->d};
            CHECK(lm_coils_synth_data(cs, p3, t, &short_by_one, &err) == LM_ERR_INVALID);
            if (dim == 3) {
                CHECK(lm_coils_synth_data(cs, p2, t, kd, &err) == LM_ERR_INVALID && strstr(err.msg, "2D"));
                CHECK(lm_coils_synth_ft(cs, p2, 0, 1, 2, 3) == 0);
            }
            lm_kdata_free(k2);
            lm_kdata_free(kd);
            lm_coils_synth_free(cs);
        }

        /* lm_phantom_kspace_modulated: one term f = 0, a = 1 is
         * lm_phantom_kspace; one shifted term is the shifted transform. */
        if (t) {
            lm_cfloat *d = malloc(sizeof(lm_cfloat) * 2 * (size_t)t->m), *d0 = malloc(sizeof(lm_cfloat) * (size_t)t->m);
            double f[6] = {0, 0, 0, 1, -2, 1};
            double complex a[4] = {1, 0, 0, 0.5 - 0.25 * I};
            CHECK_OK(lm_phantom_kspace_modulated(p3, t, 2, f, 2, a, d, &err), &err);
            CHECK_OK(lm_phantom_kspace(p3, t, d0, &err), &err);
            double w0 = 0, w1 = 0;
            for (int64_t i = 0; i < t->m; i++) {
                const float *k = t->k + 3 * i;
                w0 = fmax(w0, cabsf(d[i] - d0[i]));
                w1 = fmax(w1, cabs(d[t->m + i] - (0.5 - 0.25 * I) * lm_phantom_ft(p3, k[0] - 1, k[1] + 2, k[2] - 1)));
            }
            CHECK_MSG(w0 < 1e-8 && w1 < 1e-8, "modulated: %.3g %.3g", w0, w1);
            f[5] = 1; /* fz != 0 with a 2D phantom */
            CHECK(lm_phantom_kspace_modulated(p2, t, 2, f, 1, a, d, &err) == LM_ERR_INVALID && strstr(err.msg, "2D"));
            f[5] = NAN;
            CHECK(lm_phantom_kspace_modulated(p3, t, 2, f, 1, a, d, &err) == LM_ERR_INVALID);
            CHECK(lm_phantom_kspace_modulated(p3, t, 0, f, 1, a, d, &err) == LM_ERR_INVALID);
            CHECK(lm_phantom_kspace_modulated(p3, NULL, 1, f, 1, a, d, &err) == LM_ERR_INVALID);
            free(d);
            free(d0);
        }
        lm_traj_free(t);
    }
    return lm_test_finish("coils_kspace");
}
