/* gpu-nufft's persistent plan on a benchmark problem (issue 14):
 *
 *   bench_nufft [--problem B128] [--reps 30] [--out DIR] [--sweep MAXSUB:SMMIN[:MERGE[:V4[:OVERLAP]]],...] [--no-files]
 *
 * Prints the plan's time, then per transform (type 1: weights -> modes,
 * type 2: modes -> samples) the median over --reps warm calls (after 5
 * warm-up calls) of its GPU time (CUDA events around the exec only), its
 * stages, and the host wall of a warm call with its wait minus that GPU
 * time (the overhead; untimed calls, no events); then E^H d of one channel
 * (upload of the k-space included) through the plan against the one-shot
 * lm_gpu_adjoint; a spot check of type 1 against a double direct sum at
 * 16 voxels. --sweep remakes the plan with other subproblem limits
 * (LARMOR_GPU_NUFFT_MAXSUB, LARMOR_GPU_NUFFT_SMMIN), merging of identical
 * positions (LARMOR_GPU_NUFFT_MERGE), pairs of x points in the sparse
 * bins (LARMOR_GPU_NUFFT_V4) and the two spreads on two streams
 * (LARMOR_GPU_NUFFT_OVERLAP) and times type 1 again.
 *
 * Files for another NUFFT on identical inputs (BART cfl, float32 complex):
 *   DIR/b128_traj.cfl          3 x M: (kx, ky, kz) of sample m as the real
 *                              parts (imaginary 0), in cycles per FOV as
 *                              lm_traj holds them: |k| <= n/2 = 64; for a
 *                              FINUFFT-style x in [-pi, pi): x = 2 pi k / n
 *   DIR/b128_w.cfl             M complex weights w_m (the problem's k-space
 *                              data, coil 0)
 *   DIR/b128_larmor_type1.cfl  n x n x n complex modes, x fastest:
 *       f[i0, i1, i2] = sum_m w_m exp(+i 2 pi sum_a k_a,m (i_a - n/2) / n)
 *   i.e. sign +1 and centred modes j = i - n/2 in [-n/2, n/2) (FINUFFT's
 *   iflag = +1, modeord = 0 with x = 2 pi k / n), no scaling.
 * (The file names say b128 whatever --problem is.) */
#include <complex.h>
#include <string.h>
#include <time.h>

#include "lm_tuning.h"
#include "gpu_util.h"
#include "lm_io.h"
#include "lm_metrics.h"
#include "lm_trajgen.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define MAXREP 200
#define MAXST 8

typedef struct timing {
    double gpu_ms, wall_ms, launch_ms, stage_ms[MAXST];
    const char *stage[MAXST];
    int nst;
} timing;

/* kind 1: type 1 (wd -> yd), 2: type 2 (xd -> dd) */
static int run_one(lm_gpu_nufft *p, int kind, lm_cfloat *wd, lm_cfloat *yd, lm_cfloat *xd, lm_cfloat *dd,
                   lm_error *err)
{
    return kind == 1 ? lm_gpu_nufft_type1(p, wd, yd, err) : lm_gpu_nufft_type2(p, xd, dd, err);
}

static int time_kind(lm_gpu_nufft *p, int kind, int reps, lm_cfloat *wd, lm_cfloat *yd, lm_cfloat *xd, lm_cfloat *dd,
                     timing *out)
{
    lm_error err = {0};
    static double g[MAXREP], w[MAXREP], l[MAXREP], st[MAXST][MAXREP];
    memset(out, 0, sizeof *out);
    for (int i = 0; i < 5; i++)
        if (run_one(p, kind, wd, yd, xd, dd, &err) != LM_OK)
            goto fail;
    if (lm_gpu_nufft_wait(p, &err) != LM_OK)
        goto fail;
    lm_gpu_nufft_timing(p, 1); /* GPU time and stages with events */
    for (int r = 0; r < reps; r++) {
        if (run_one(p, kind, wd, yd, xd, dd, &err) != LM_OK)
            goto fail;
        const char *names[MAXST];
        double secs[MAXST];
        const int k = lm_gpu_nufft_stages(p, names, secs, MAXST);
        g[r] = k > 0 ? secs[0] * 1e3 : -1;
        out->nst = k > 1 ? k - 1 : 0;
        for (int i = 1; i < k; i++) {
            out->stage[i - 1] = names[i];
            st[i - 1][r] = secs[i] * 1e3;
        }
    }
    lm_gpu_nufft_timing(p, 0); /* the host's cost: no events */
    for (int r = 0; r < reps; r++) {
        const double t0 = now_s();
        if (run_one(p, kind, wd, yd, xd, dd, &err) != LM_OK)
            goto fail;
        const double t1 = now_s();
        if (lm_gpu_nufft_wait(p, &err) != LM_OK)
            goto fail;
        w[r] = (now_s() - t0) * 1e3;
        l[r] = (t1 - t0) * 1e3;
    }
    out->gpu_ms = median(g, reps);
    out->wall_ms = median(w, reps);
    out->launch_ms = median(l, reps);
    for (int i = 0; i < out->nst; i++)
        out->stage_ms[i] = median(st[i], reps);
    return 0;
fail:
    fprintf(stderr, "bench_nufft: %s\n", err.msg);
    return 1;
}

static void print_timing(const char *what, const timing *t)
{
    printf("%-8s GPU %.3f ms (median), warm call wall %.3f ms (launch %.3f ms), overhead %.3f ms  [", what, t->gpu_ms,
           t->wall_ms, t->launch_ms, t->wall_ms - t->gpu_ms);
    for (int i = 0; i < t->nst; i++)
        printf("%s%s %.3f", i ? ", " : "", t->stage[i], t->stage_ms[i]);
    printf("]\n");
}

int main(int argc, char **argv)
{
    lm_error tuning_err = {0};
    if (lm_tuning_init_from_env(&tuning_err) != LM_OK) { /* the LARMOR_* knobs being measured */
        fprintf(stderr, "%s\n", tuning_err.msg);
        return 2;
    }
    const char *pname = "B128", *outdir = ".", *sweep = NULL;
    int reps = 30, files = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--problem") && i + 1 < argc)
            pname = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            outdir = argv[++i];
        else if (!strcmp(argv[i], "--sweep") && i + 1 < argc)
            sweep = argv[++i];
        else if (!strcmp(argv[i], "--no-files"))
            files = 0;
        else {
            fprintf(stderr, "usage: bench_nufft [--problem B128] [--reps N] [--out DIR] [--sweep MAXSUB:SMMIN[:MERGE[:V4[:OVERLAP]]],...] "
                            "[--no-files]\n");
            return 2;
        }
    }
    reps = reps < 3 ? 3 : reps > MAXREP ? MAXREP : reps;
    gpu_require();
    lm_error err = {0};
    const lm_problem_def *def = lm_problem_find(pname, &err);
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    if (!def || lm_problem_make(def, &g, &t, &k, NULL, &err) != LM_OK) {
        fprintf(stderr, "bench_nufft: %s\n", err.msg);
        return 1;
    }
    const int64_t m = t->m, nv = lm_geom_voxels(&g);
    printf("bench_nufft: %s, %lldx%lldx%lld, %lld samples, %d reps\n", pname, (long long)g.n[0], (long long)g.n[1],
           (long long)g.n[2], (long long)m, reps);
    lm_gpu_info info;
    if (lm_gpu_describe(0, &info, NULL) == LM_OK)
        printf("device: %s\n", info.name);
    lm_cfloat *x = malloc((size_t)nv * sizeof *x), *y = malloc((size_t)nv * sizeof *y);
    for (int64_t v = 0; v < nv; v++)
        x[v] = (float)(2 * gu_uniform() - 1) + I * (float)(2 * gu_uniform() - 1);
    lm_cfloat *wd = NULL, *yd = NULL, *xd = NULL, *dd = NULL;
    int rc = 1;
    lm_gpu_nufft *p = NULL;
    if (lm_gpu_mem_alloc((void **)&wd, (size_t)m * sizeof *wd, "w", &err) != LM_OK ||
        lm_gpu_mem_alloc((void **)&dd, (size_t)m * sizeof *dd, "d", &err) != LM_OK ||
        lm_gpu_mem_alloc((void **)&xd, (size_t)nv * sizeof *xd, "x", &err) != LM_OK ||
        lm_gpu_mem_alloc((void **)&yd, (size_t)nv * sizeof *yd, "y", &err) != LM_OK ||
        lm_gpu_mem_upload(wd, k->d, (size_t)m * sizeof *wd, &err) != LM_OK ||
        lm_gpu_mem_upload(xd, x, (size_t)nv * sizeof *x, &err) != LM_OK) {
        fprintf(stderr, "bench_nufft: %s\n", err.msg);
        goto out;
    }
    /* the plan: cold (first in the process: context, kernels' first launch) then warm */
    for (int i = 0; i < 3; i++) {
        const double t0 = now_s();
        if (lm_gpu_nufft_new(&g, t, 1, &p, &err) != LM_OK) {
            fprintf(stderr, "bench_nufft: %s\n", err.msg);
            goto out;
        }
        printf("plan %d: %.3f ms wall (upload of the samples and phi, plan %.3f ms: bin, sort, subproblems, "
               "count read back)\n", i, (now_s() - t0) * 1e3, lm_gpu_nufft_plan_s(p) * 1e3);
        if (i < 2) {
            lm_gpu_nufft_free(p);
            p = NULL;
        }
    }
    timing t1, t2;
    if (time_kind(p, 1, reps, wd, yd, xd, dd, &t1) || time_kind(p, 2, reps, wd, yd, xd, dd, &t2))
        goto out;
    print_timing("type 1", &t1);
    print_timing("type 2", &t2);

    /* E^H d, one channel, through the plan and one-shot (k-space upload from pageable host memory included) */
    {
        double a[MAXREP], b[MAXREP];
        for (int r = 0; r < reps + 3; r++) {
            double t0 = now_s();
            if (lm_gpu_nufft_adjoint(p, k, NULL, yd, NULL, &err) != LM_OK)
                break;
            const double ta = (now_s() - t0) * 1e3;
            t0 = now_s();
            if (lm_gpu_adjoint(&g, t, k, NULL, NULL, "gpu-nufft", yd, NULL, &err) != LM_OK)
                break;
            if (r >= 3)
                a[r - 3] = ta, b[r - 3] = (now_s() - t0) * 1e3;
        }
        if (err.code)
            fprintf(stderr, "bench_nufft: %s\n", err.msg);
        else
            printf("E^H d  1 channel: through the plan %.3f ms wall, one-shot lm_gpu_adjoint %.3f ms wall "
                   "(medians)\n", median(a, reps), median(b, reps));
    }

    /* type 1 of the weights, checked at 16 voxels against a double direct sum */
    if (lm_gpu_nufft_type1(p, wd, yd, &err) != LM_OK || lm_gpu_nufft_wait(p, &err) != LM_OK ||
        lm_gpu_mem_download(y, yd, (size_t)nv * sizeof *y, &err) != LM_OK) {
        fprintf(stderr, "bench_nufft: %s\n", err.msg);
        goto out;
    }
    {
        double num = 0, den = 0;
        for (int q = 0; q < 16; q++) {
            const int64_t v = q == 0 ? nv / 2 + g.n[0] * g.n[1] / 2 + g.n[0] / 2 : (int64_t)(gu_uniform() * nv);
            const int64_t i0 = v % g.n[0], i1 = (v / g.n[0]) % g.n[1], i2 = v / (g.n[0] * g.n[1]);
            double complex acc = 0;
            for (int64_t j = 0; j < m; j++) {
                const double ph = t->k[3 * j] * lm_voxel_pos(i0, g.n[0]) + t->k[3 * j + 1] * lm_voxel_pos(i1, g.n[1]) +
                                  (g.n[2] > 1 ? t->k[3 * j + 2] * lm_voxel_pos(i2, g.n[2]) : 0.0);
                acc += (double complex)k->d[j] * cexp(2.0 * I * M_PI * ph);
            }
            const double complex d = (double complex)y[v] - acc;
            num += creal(d * conj(d));
            den += creal(acc * conj(acc));
        }
        printf("type 1 rel error at 16 voxels against the double direct sum: %.3g\n", sqrt(num / den));
    }
    if (files) {
        char path[4096];
        lm_cfloat *tk = malloc((size_t)(3 * m) * sizeof *tk);
        for (int64_t j = 0; j < 3 * m; j++)
            tk[j] = t->k[j];
        const int64_t dt[2] = {3, m}, dw[1] = {m}, dy[3] = {g.n[0], g.n[1], g.n[2]};
        snprintf(path, sizeof path, "%s/b128_traj.cfl", outdir);
        lm_code w1 = lm_cfl_write(path, 2, dt, tk, &err);
        snprintf(path, sizeof path, "%s/b128_w.cfl", outdir);
        lm_code w2 = w1 == LM_OK ? lm_cfl_write(path, 1, dw, k->d, &err) : w1;
        snprintf(path, sizeof path, "%s/b128_larmor_type1.cfl", outdir);
        lm_code w3 = w2 == LM_OK ? lm_cfl_write(path, 3, dy, y, &err) : w2;
        free(tk);
        if (w3 != LM_OK)
            fprintf(stderr, "bench_nufft: %s\n", err.msg);
        else
            printf("wrote %s/b128_{traj,w,larmor_type1}.cfl\n", outdir);
    }

    /* subproblem limits: a new plan each, type 1 timed again */
    for (const char *s = sweep; s && *s;) {
        int v[5] = {0, 0, 1, 1, 1}, used = 0, k = 0;
        while (k < 5 && sscanf(s, "%d%n", &v[k], &used) == 1) {
            s += used;
            k++;
            if (*s != ':')
                break;
            s++;
        }
        if (k < 2)
            break;
        s += *s == ',';
        const char *names[5] = {"LARMOR_GPU_NUFFT_MAXSUB", "LARMOR_GPU_NUFFT_SMMIN", "LARMOR_GPU_NUFFT_MERGE",
                                "LARMOR_GPU_NUFFT_V4", "LARMOR_GPU_NUFFT_OVERLAP"};
        for (int i = 0; i < 5; i++) {
            char a[32];
            snprintf(a, sizeof a, "%d", v[i]);
            setenv(names[i], a, 1);
        }
        lm_gpu_nufft *q = NULL;
        timing ts;
        if (lm_gpu_nufft_new(&g, t, 1, &q, &err) != LM_OK || time_kind(q, 1, reps, wd, yd, xd, dd, &ts)) {
            fprintf(stderr, "bench_nufft: %s\n", err.msg);
            lm_gpu_nufft_free(q);
            break;
        }
        char what[48];
        snprintf(what, sizeof what, "sweep %d:%d:%d:%d:%d", v[0], v[1], v[2], v[3], v[4]);
        print_timing(what, &ts);
        lm_gpu_nufft_free(q);
    }
    unsetenv("LARMOR_GPU_NUFFT_MAXSUB");
    unsetenv("LARMOR_GPU_NUFFT_SMMIN");
    unsetenv("LARMOR_GPU_NUFFT_MERGE");
    unsetenv("LARMOR_GPU_NUFFT_V4");
    unsetenv("LARMOR_GPU_NUFFT_OVERLAP");
    rc = 0;
out:
    lm_gpu_nufft_free(p);
    lm_gpu_mem_free(wd), lm_gpu_mem_free(dd), lm_gpu_mem_free(xd), lm_gpu_mem_free(yd);
    free(x), free(y);
    lm_traj_free(t);
    lm_kdata_free(k);
    return rc;
}
