/* Maps and data agree: on tiny fully sampled Cartesian problems (2D 32^2,
 * 3D 16^3) the direct inverse DFT of coil c's k-space,
 *     img_c(x_n) = sum_m d_c(k_m) exp(+i 2 pi k_m.x_n)   (FOV 1: no 1/N),
 * is the band-limited s_c rho. It is compared with s_c times the same
 * inverse DFT of the single-coil k-space (the same band limit, so the
 * remaining difference is only what the coil's few Fourier terms move
 * across the edge of k-space) and, loosely, with s_c times the truth (at
 * most 1.5 x the single-coil image's own error against the truth, which is
 * Gibbs ringing at 32 or 16 samples a side). The conjugate maps (the wrong
 * sign convention) must do far worse. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

#include "lm_coils_synth.h"
#include "lm_test.h"
#include "lm_trajgen.h"

/* Inverse DFT of m samples onto the n grid, double precision. */
static double complex *idft(const lm_traj *t, const lm_cfloat *d, const int64_t n[3])
{
    const int64_t V = n[0] * n[1] * n[2];
    double complex *img = calloc((size_t)V, sizeof *img);
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < V; v++) {
        double x = lm_voxel_pos(v % n[0], n[0]), y = lm_voxel_pos((v / n[0]) % n[1], n[1]);
        double z = lm_voxel_pos(v / (n[0] * n[1]), n[2]);
        double re = 0, im = 0;
        for (int64_t i = 0; i < t->m; i++) {
            double ph = 2 * M_PI * (t->k[3 * i] * x + t->k[3 * i + 1] * y + t->k[3 * i + 2] * z);
            double c = cos(ph), s = sin(ph), dr = crealf(d[i]), di = cimagf(d[i]);
            re += dr * c - di * s;
            im += dr * s + di * c;
        }
        img[v] = re + I * im;
    }
    return img;
}

static void check(const char *what, const lm_phantom *p, int dim, int64_t C, const int64_t n[3], double tol_band)
{
    lm_error err = {0};
    lm_traj *t = NULL;
    CHECK_OK(lm_traj_generate(LM_TRAJ_CARTESIAN, n, 0, 0, &t, &err), &err);
    lm_coils_synth *cs = NULL;
    CHECK_OK(lm_coils_synth_make(dim, C, &cs, &err), &err);
    lm_geom g;
    lm_geom_init(&g, n[0], n[1], n[2], 240.0);
    lm_volume *truth = NULL;
    CHECK_OK(lm_phantom_truth(p, &g, 4, &truth, &err), &err);
    lm_sens *s = NULL;
    if (cs)
        CHECK_OK(lm_coils_synth_maps(cs, n, &s, &err), &err);
    lm_kdata *k = t ? lm_kdata_new(t->m, C, &err) : NULL;
    lm_cfloat *d1 = t ? malloc(sizeof(lm_cfloat) * (size_t)t->m) : NULL;
    if (!t || !cs || !truth || !s || !k || !d1)
        goto done;
    CHECK_OK(lm_coils_synth_data(cs, p, t, k, &err), &err);
    CHECK_OK(lm_phantom_kspace(p, t, d1, &err), &err);
    const int64_t V = n[0] * n[1] * n[2];
    double complex *img1 = idft(t, d1, n);
    /* Single coil, for scale: how far the band-limited image is from the truth. */
    double e0n = 0, e0d = 0;
    for (int64_t v = 0; v < V; v++) {
        e0n += pow(cabs(img1[v] - crealf(truth->data[v])), 2);
        e0d += pow(crealf(truth->data[v]), 2);
    }
    double e0 = sqrt(e0n / e0d), worst_band = 0, worst_truth = 0, best_conj = INFINITY;
    for (int64_t c = 0; c < C; c++) {
        double complex *img = idft(t, k->d + c * t->m, n);
        double bn = 0, bd = 0, tn = 0, td = 0, cn = 0;
        for (int64_t v = 0; v < V; v++) {
            double complex sc = s->s[c * V + v];
            bn += pow(cabs(img[v] - sc * img1[v]), 2);
            bd += pow(cabs(sc * img1[v]), 2);
            tn += pow(cabs(img[v] - sc * crealf(truth->data[v])), 2);
            td += pow(cabs(sc * crealf(truth->data[v])), 2);
            cn += pow(cabs(img[v] - conj(sc) * img1[v]), 2);
        }
        worst_band = fmax(worst_band, sqrt(bn / bd));
        worst_truth = fmax(worst_truth, sqrt(tn / td));
        best_conj = fmin(best_conj, sqrt(cn / bd));
        free(img);
    }
    CHECK_MSG(worst_band <= tol_band, "%s: coil image against s_c x single-coil image: %.4f > %.4f", what,
              worst_band, tol_band);
    const double tol_truth = 1.5 * e0;
    CHECK_MSG(worst_truth <= tol_truth, "%s: coil image against s_c x truth: %.4f > %.4f", what, worst_truth,
              tol_truth);
    CHECK_MSG(best_conj >= 0.4, "%s: conjugate maps fit too well: %.4f", what, best_conj);
    fprintf(stderr,
            "%s, %lld coils: relative error of the coil images against s_c x single-coil image <= %.4f "
            "(tolerance %.3f), against s_c x truth <= %.4f (tolerance %.3f; single coil against truth %.4f), "
            "conjugate maps >= %.4f\n",
            what, (long long)C, worst_band, tol_band, worst_truth, tol_truth, e0, best_conj);
    free(img1);
done:
    free(d1);
    lm_kdata_free(k);
    lm_sens_free(s);
    lm_volume_free(truth);
    lm_coils_synth_free(cs);
    lm_traj_free(t);
}

int main(void)
{
    const int64_t n2[3] = {32, 32, 1}, n3[3] = {16, 16, 16};
    /* Tolerance 0.15: measured 0.084 (2D) and 0.099 (3D); the conjugate
     * maps give 0.70 or more. */
    check("2D Shepp-Logan 32^2", lm_phantom_shepp_logan_2d(), 2, 8, n2, 0.15);
    check("3D Shepp-Logan 16^3", lm_phantom_shepp_logan_3d(), 3, 8, n3, 0.15);
    return lm_test_finish("coils_recon");
}
