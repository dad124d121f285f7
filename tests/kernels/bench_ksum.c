/* Throughput of the CPU direct kernels on a benchmark problem's geometry
 * (not a test: meson benchmark, or run by hand):
 *
 *   bench_ksum [problem] [variants] [threads] [fhd|q] [planes]
 *
 * problem B32/B64/B128 (default B64), variants comma-separated (default
 * cpu-simd,cpu-separable), threads 0 = all, fhd = F^H d on the image grid
 * (weights conj(phi) d), q = Q on the 2x grid (weights |phi|^2); planes > 0
 * evaluates only that many z planes (keeps cpu-dp and cpu-sp short: the
 * per-pair rate does not depend on it). Prints seconds, Gpairs/s (sample x
 * point pairs per second), paper-equivalent GFLOPS and the relative error
 * of each variant against the first one listed. */
#include <complex.h>
#include <time.h>

#include "ksum_util.h"
#include "lm_kernels_impl.h"
#include "lm_trajgen.h"
#include "lm_types.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    const char *problem = argc > 1 ? argv[1] : "B64";
    const char *list = argc > 2 ? argv[2] : "cpu-simd,cpu-separable";
    int threads = argc > 3 ? atoi(argv[3]) : 0;
    int q = argc > 4 && strcmp(argv[4], "q") == 0;
    int planes = argc > 5 ? atoi(argv[5]) : 0;

    lm_error err;
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *kd = NULL;
    const lm_problem_def *def = lm_problem_find(problem, &err);
    if (!def || lm_problem_make(def, &g, &t, q ? NULL : &kd, NULL, &err) != LM_OK) {
        fprintf(stderr, "bench_ksum: %s\n", err.msg);
        return 1;
    }
    int64_t m = t->m;
    float *buf = malloc((size_t)m * 5 * sizeof(float));
    float *kx = buf, *ky = buf + m, *kz = buf + 2 * m, *wr = buf + 3 * m, *wi = buf + 4 * m;
    for (int64_t i = 0; i < m; i++) {
        kx[i] = t->k[3 * i];
        ky[i] = t->k[3 * i + 1];
        kz[i] = t->k[3 * i + 2];
        double phi = lm_geom_phi(&g, kx[i], ky[i], kz[i]);
        if (q) {
            wr[i] = (float)(phi * phi);
        } else {
            wr[i] = (float)(phi * crealf(kd->d[i]));
            wi[i] = (float)(phi * cimagf(kd->d[i]));
        }
    }
    lm_ksum_in in = {m, kx, ky, kz, wr, q ? NULL : wi, 1};
    lm_points pts;
    if (q)
        lm_points_q_grid(&pts, g.n);
    else
        lm_points_image_grid(&pts, g.n);
    if (planes > 0 && planes < pts.g[2]) {
        pts.g[2] = planes;
        pts.n = pts.g[0] * pts.g[1] * planes;
    }
    lm_ctl ctl = {NULL, NULL, threads};
    float *rr = NULL, *ri = NULL;
    const char *refname = NULL;
    char *names = strdup(list);
    int rc = 0;
    for (char *s = strtok(names, ","); s; s = strtok(NULL, ",")) {
        const lm_variant *v = lm_variant_get_available(s, &err);
        if (!v) {
            fprintf(stderr, "bench_ksum: %s\n", err.msg);
            rc = 1;
            continue;
        }
        float *re = malloc(pts.n * sizeof(float)), *im = malloc(pts.n * sizeof(float));
        double t0 = now();
        lm_code c = lm_ksum_run(v, &in, &pts, re, im, &ctl, &err);
        double dt = now() - t0;
        if (c != LM_OK) {
            fprintf(stderr, "bench_ksum: %s\n", err.msg);
            rc = 1;
            free(re);
            free(im);
            continue;
        }
        double pairs = (double)m * (double)pts.n;
        printf("%s %s %-14s threads %d: M %lld x %lld points (%lldx%lldx%lld) %8.3f s %8.3f "
               "Gpairs/s %7.1f GFLOPS",
               problem, q ? "Q  " : "FHd", v->name, lm_ctl_threads(&ctl), (long long)m,
               (long long)pts.n, (long long)pts.g[0], (long long)pts.g[1], (long long)pts.g[2], dt,
               pairs / dt * 1e-9, pairs * lm_ksum_flops_per_pair(q) / dt * 1e-9);
        if (!rr) {
            rr = re;
            ri = im;
            refname = v->name;
            printf("\n");
        } else {
            printf("  rel err vs %s %.3g\n", refname, ku_rel_error(pts.n, re, im, rr, ri));
            free(re);
            free(im);
        }
        fflush(stdout);
    }
    free(names);
    free(rr);
    free(ri);
    free(buf);
    lm_traj_free(t);
    lm_kdata_free(kd);
    return rc;
}
