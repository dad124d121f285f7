/* Throughput of the CPU direct kernels on a benchmark problem's geometry
 * (not a test: meson benchmark, or run by hand):
 *
 *   bench_ksum [--time] [problem] [variants] [threads] [fhd|q] [planes] [sets]
 *
 * problem B32/B64/B128 (default B64), variants comma-separated (default
 * cpu-simd,cpu-separable), threads 0 = all, fhd = F^H d on the image grid
 * (weights conj(phi) d), q = Q on the 2x grid (weights |phi|^2); planes > 0
 * evaluates only that many z planes (keeps cpu-dp and cpu-sp short: the
 * per-pair rate does not depend on it); sets a comma-separated list of
 * weight-set counts C (default 1): C channels in one call (lm_ksum_in.nsets),
 * channel c's data the problem's times exp(i 0.7 c). Prints seconds,
 * Gpairs/s (sample x point x set triples per second), paper-equivalent
 * GFLOPS and the relative error of each variant against the first one
 * listed, over all sets.
 *
 * --time: each variant runs without and with the off-resonance term
 * (lm_ksum_in.t, lm_points.f), alternately, 5 times each, and prints the
 * ratio of the best wall times and of the best process CPU times (the
 * latter barely moves with other programs' load on a shared machine).
 * Times are the problem's own or, without them, a readout of 2 ms per
 * spoke; the field map is smooth, up to about 130 Hz. The relative error
 * column then compares the runs with the term. */
#include <complex.h>
#include <time.h>

#include "lm_tuning.h"
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

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One run: wall seconds, and CPU seconds of the whole process in *cpu
 * (robust to other programs' load on a shared machine). */
static double timed_run(const lm_variant *v, const lm_ksum_in *in, const lm_points *pts, float *re, float *im,
                        const lm_ctl *ctl, double *cpu, lm_code *c, lm_error *err)
{
    double c0 = cpu_now(), t0 = now();
    *c = lm_ksum_run(v, in, pts, re, im, ctl, err);
    double dt = now() - t0;
    if (cpu)
        *cpu = cpu_now() - c0;
    return dt;
}

int main(int argc, char **argv)
{
    lm_error tuning_err = {0};
    if (lm_tuning_init_from_env(&tuning_err) != LM_OK) { /* the LARMOR_* knobs being measured */
        fprintf(stderr, "%s\n", tuning_err.msg);
        return 2;
    }
    /* --time anywhere; the rest positional */
    int with_time = 0, na = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--time"))
            with_time = 1;
        else
            argv[na++] = argv[i];
    }
    argc = na;
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
    int64_t counts[64], ncounts = 0, cmax = 1;
    char *sets = strdup(argc > 6 ? argv[6] : "1"), *sv = NULL;
    for (char *c = strtok_r(sets, ",", &sv); c && ncounts < 64; c = strtok_r(NULL, ",", &sv))
        if (atoll(c) >= 1) {
            counts[ncounts++] = atoll(c);
            cmax = counts[ncounts - 1] > cmax ? counts[ncounts - 1] : cmax;
        }
    free(sets);
    if (cmax > LM_KSUM_MAX_SETS) {
        fprintf(stderr, "bench_ksum: at most %d sets\n", LM_KSUM_MAX_SETS);
        return 1;
    }
    float *buf = malloc((size_t)m * (3 + 2 * cmax) * sizeof(float));
    float *kx = buf, *ky = buf + m, *kz = buf + 2 * m, *wr = buf + 3 * m, *wi = wr + cmax * m;
    for (int64_t i = 0; i < m; i++) {
        kx[i] = t->k[3 * i];
        ky[i] = t->k[3 * i + 1];
        kz[i] = t->k[3 * i + 2];
        double phi = lm_geom_phi(&g, kx[i], ky[i], kz[i]);
        for (int64_t c = 0; c < cmax; c++) {
            if (q) {
                wr[c * m + i] = (float)(phi * phi);
            } else {
                double complex w = phi * kd->d[i] * cexp(0.7 * I * (double)c);
                wr[c * m + i] = (float)creal(w);
                wi[c * m + i] = (float)cimag(w);
            }
        }
    }
    lm_points pts;
    if (q)
        lm_points_q_grid(&pts, g.n);
    else
        lm_points_image_grid(&pts, g.n);
    if (planes > 0 && planes < pts.g[2]) {
        pts.g[2] = planes;
        pts.n = pts.g[0] * pts.g[1] * planes;
    }
    float *times = NULL, *fmap = NULL;
    if (with_time) {
        times = malloc((size_t)m * sizeof(float));
        fmap = malloc((size_t)pts.n * sizeof(float));
        const int64_t ro = t->readout > 0 ? t->readout : 64;
        for (int64_t i = 0; i < m; i++)
            times[i] = t->t ? t->t[i] : (float)(2e-3 * (double)(i % ro) / (double)ro);
        for (int64_t j = 0; j < pts.n; j++) {
            double x[3];
            lm_points_get(&pts, j, x);
            fmap[j] = (float)(100.0 * sin(2 * M_PI * x[0]) * cos(2 * M_PI * x[1]) + 60.0 * x[2]);
        }
    }
    lm_ctl ctl = {NULL, NULL, threads};
    char *names = NULL;
    int rc = 0;
    for (int64_t ci = 0; ci < ncounts; ci++) {
        const int64_t C = counts[ci];
        lm_ksum_in in = {.m = m, .kx = kx, .ky = ky, .kz = kz, .wr = wr, .wi = q ? NULL : wi, .nsets = C};
        size_t nout = (size_t)pts.n * (size_t)C;
        float *rr = NULL, *ri = NULL;
        const char *refname = NULL;
        free(names);
        names = strdup(list);
        char *vs = NULL;
        for (char *s = strtok_r(names, ",", &vs); s; s = strtok_r(NULL, ",", &vs)) {
            const lm_variant *v = lm_variant_get_available(s, &err);
            if (!v) {
                fprintf(stderr, "bench_ksum: %s\n", err.msg);
                rc = 1;
                continue;
            }
            float *re = malloc(nout * sizeof(float)), *im = malloc(nout * sizeof(float));
            lm_code c;
            double dt = 1e30, dt0 = 1e30, cpu = 1e30, cpu0 = 1e30;
            if (with_time) {
                /* without and with, alternated (load from other programs
                 * hits both alike); best of 5 of each, wall and CPU time */
                lm_ksum_in tin = in;
                lm_points tp = pts;
                tin.t = times;
                tp.f = fmap;
                c = LM_OK;
                for (int r = 0; r < 5 && c == LM_OK; r++) {
                    double w, u;
                    w = timed_run(v, &in, &pts, re, im, &ctl, &u, &c, &err);
                    dt0 = w < dt0 ? w : dt0;
                    cpu0 = u < cpu0 ? u : cpu0;
                    if (c == LM_OK) {
                        w = timed_run(v, &tin, &tp, re, im, &ctl, &u, &c, &err);
                        dt = w < dt ? w : dt;
                        cpu = u < cpu ? u : cpu;
                    }
                }
            } else {
                dt = timed_run(v, &in, &pts, re, im, &ctl, NULL, &c, &err);
            }
            if (c != LM_OK) {
                fprintf(stderr, "bench_ksum: %s\n", err.msg);
                rc = 1;
                free(re);
                free(im);
                continue;
            }
            double pairs = (double)m * (double)pts.n * (double)C;
            printf("%s %s %-14s threads %d sets %3lld: M %lld x %lld points (%lldx%lldx%lld) "
                   "%8.3f s %8.3f Gpairs/s %7.1f GFLOPS",
                   problem, q ? "Q  " : "FHd", v->name, lm_ctl_threads(&ctl), (long long)C,
                   (long long)m, (long long)pts.n, (long long)pts.g[0], (long long)pts.g[1],
                   (long long)pts.g[2], dt, pairs / dt * 1e-9,
                   pairs * lm_ksum_flops_per_pair(q) / dt * 1e-9);
            if (with_time)
                printf("  with field map; without %8.3f s: ratio %.3f wall, %.3f CPU (%.2f / %.2f s)", dt0,
                       dt / dt0, cpu / cpu0, cpu, cpu0);
            if (!rr) {
                rr = re;
                ri = im;
                refname = v->name;
                printf("\n");
            } else {
                printf("  rel err vs %s %.3g\n", refname,
                       ku_rel_error((int64_t)nout, re, im, rr, ri));
                free(re);
                free(im);
            }
            fflush(stdout);
        }
        free(rr);
        free(ri);
    }
    free(names);
    free(times);
    free(fmap);
    free(buf);
    lm_traj_free(t);
    lm_kdata_free(kd);
    return rc;
}
