/* Performance of cpu-nufft on the B128 geometry (not a test: meson
 * benchmark, or run by hand). 3D radial centre-out spokes of 64 samples
 * spaced 1/FOV, directions by 2D golden means, cut to 284,592 samples.
 * Prints plan, set-up and execute times for F^H d (128^3 image grid,
 * complex weights) and Q (256^3 Q grid, real weights) at both upsampling
 * factors, with the relative error at 400 random voxels against a direct
 * double-precision sum.
 *   bench_nufft [n] [fhd|q|all]   (n = 128 by default) */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lm_tuning.h"
#include "lm_kernels_impl.h"
#include "lm_nufft.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double spot_error(const lm_ksum_in *in, const lm_points *p, const float *re, const float *im)
{
    double num = 0, den = 0;
    uint64_t st = 12345;
    for (int q = 0; q < 400; q++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        int64_t j = (int64_t)((st >> 33) % (uint64_t)p->n);
        double x[3];
        x[0] = (double)(j % p->g[0] - p->c[0]) / (double)p->s[0];
        x[1] = (double)((j / p->g[0]) % p->g[1] - p->c[1]) / (double)p->s[1];
        x[2] = (double)(j / (p->g[0] * p->g[1]) - p->c[2]) / (double)p->s[2];
        double complex acc = 0;
        for (int64_t m = 0; m < in->m; m++) {
            double ph = 2 * M_PI * (in->kx[m] * x[0] + in->ky[m] * x[1] + in->kz[m] * x[2]);
            acc += (in->wr[m] + I * (in->wi ? in->wi[m] : 0.0f)) * cexp(I * ph);
        }
        double complex d = re[j] + I * im[j] - acc;
        num += creal(d) * creal(d) + cimag(d) * cimag(d);
        den += creal(acc) * creal(acc) + cimag(acc) * cimag(acc);
    }
    return sqrt(num / den);
}

static void run(const char *what, const lm_ksum_in *in, const lm_points *pts, double upsampfac, int check)
{
    lm_error err = {0};
    lm_nufft_opts o;
    lm_nufft_default_opts(&o);
    o.upsampfac = upsampfac;
    float *re = malloc(pts->n * sizeof(float)), *im = malloc(pts->n * sizeof(float));
    double t0 = now();
    lm_nufft_plan *p = NULL;
    if (lm_nufft_make_plan(1, 3, pts->g, 1, LM_NUFFT_DEFAULT_TOL, &o, &p, &err) != LM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    double t1 = now();
    lm_nufft_set_points(p, in->m, in->kx, in->ky, in->kz, pts->c, pts->s, &err);
    double t2 = now();
    lm_nufft_execute(p, in->wr, in->wi, re, im, NULL, &err);
    double t3 = now();
    lm_nufft_execute(p, in->wr, in->wi, re, im, NULL, &err);
    double t4 = now();
    int64_t nf[3];
    lm_nufft_fine_grid(p, nf);
    printf("%-4s sigma %.2f fine %lld^3 w %d: plan %.3f s, points %.3f s, execute %.3f s (again %.3f s)", what,
           upsampfac, (long long)nf[0], lm_nufft_width(p), t1 - t0, t2 - t1, t3 - t2, t4 - t3);
    if (check)
        printf(", spot rel. error %.2e", spot_error(in, pts, re, im));
    printf("\n");
    fflush(stdout);
    lm_nufft_destroy(p);
    /* through the variant entry point, as the solver calls it */
    t0 = now();
    lm_ksum_cpu_nufft(in, pts, re, im, NULL, &err);
    t1 = now();
    printf("     lm_ksum_cpu_nufft total %.3f s\n", t1 - t0);
    lm_ksum_nufft_release_cache();
    free(re);
    free(im);
}

int main(int argc, char **argv)
{
    lm_error tuning_err = {0};
    if (lm_tuning_init_from_env(&tuning_err) != LM_OK) { /* the LARMOR_* knobs being measured */
        fprintf(stderr, "%s\n", tuning_err.msg);
        return 2;
    }
    int64_t n = argc > 1 ? atoll(argv[1]) : 128;
    const char *which = argc > 2 ? argv[2] : "all";
    int64_t per = n / 2, m = (int64_t)llround(284592.0 * (double)(n * n * n) / (128.0 * 128 * 128));
    int64_t spokes = (m + per - 1) / per;
    float *kx = malloc(m * sizeof(float)), *ky = malloc(m * sizeof(float)), *kz = malloc(m * sizeof(float));
    float *wr = malloc(m * sizeof(float)), *wi = malloc(m * sizeof(float)), *q = malloc(m * sizeof(float));
    const double phi1 = 0.4656, phi2 = 0.6823; /* 2D golden means (Chan et al. 2009) */
    int64_t i = 0;
    for (int64_t s = 0; s < spokes && i < m; s++) {
        double cz = fmod(s * phi1, 1.0), az = 2 * M_PI * fmod(s * phi2, 1.0), sz = sqrt(1 - cz * cz);
        for (int64_t r = 0; r < per && i < m; r++, i++) {
            kx[i] = (float)(r * sz * cos(az));
            ky[i] = (float)(r * sz * sin(az));
            kz[i] = (float)(r * cz);
            wr[i] = (float)cos(0.37 * i);
            wi[i] = (float)sin(0.11 * i);
            q[i] = (float)(0.5 + 0.5 * cos(0.05 * i));
        }
    }
    printf("n %lld, samples %lld, threads (OMP) %s\n", (long long)n, (long long)m,
           getenv("OMP_NUM_THREADS") ? getenv("OMP_NUM_THREADS") : "all");
    int64_t nn[3] = {n, n, n};
    lm_points pts;
    int check = getenv("LM_BENCH_CHECK") != NULL;
    if (!strcmp(which, "all") || !strcmp(which, "fhd")) {
        lm_ksum_in in = {.m = m, .kx = kx, .ky = ky, .kz = kz, .wr = wr, .wi = wi, .nsets = 1};
        lm_points_image_grid(&pts, nn);
        run("FHd", &in, &pts, 2.0, check);
        run("FHd", &in, &pts, 1.25, check);
    }
    if (!strcmp(which, "all") || !strcmp(which, "q")) {
        lm_ksum_in in = {.m = m, .kx = kx, .ky = ky, .kz = kz, .wr = q, .wi = NULL, .nsets = 1};
        lm_points_q_grid(&pts, nn);
        run("Q", &in, &pts, 2.0, check);
        run("Q", &in, &pts, 1.25, check);
    }
    free(kx);
    free(ky);
    free(kz);
    free(wr);
    free(wi);
    free(q);
    return 0;
}
