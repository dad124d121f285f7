/* Live lambda (lm_recon_session.h), not a test: on a benchmark problem,
 * the time of a cold lm_recon_run against one re-solve at a new lambda on
 * a kept session: a warm preview of a few iterations, a warm solve of the
 * run's iterations, and a cold one (the GUI's final image).
 *   bench_session [PROBLEM [VARIANT [PREVIEW_ITERS [REPEATS]]]]   e.g. B64 auto 8 5
 * Medians over REPEATS; results in BENCHMARKS.md ("Live lambda"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lm_tuning.h"
#include "lm_recon_session.h"
#include "lm_trajgen.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
    lm_error tuning_err = {0};
    if (lm_tuning_init_from_env(&tuning_err) != LM_OK) { /* the LARMOR_* knobs being measured */
        fprintf(stderr, "%s\n", tuning_err.msg);
        return 2;
    }
    const char *name = argc > 1 ? argv[1] : "B32";
    const char *variant = argc > 2 ? argv[2] : "auto";
    const int preview = argc > 3 ? atoi(argv[3]) : 8;
    int reps = argc > 4 ? atoi(argv[4]) : 5;
    if (reps < 1 || reps > 100)
        reps = 5;
    lm_error err = {0};
    const lm_problem_def *def = lm_problem_find(name, &err);
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *truth = NULL;
    if (!def || lm_problem_make(def, &g, &t, &k, &truth, &err) != LM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    lm_recon_opts o;
    lm_recon_opts_init(&o);
    o.variant = variant;
    lm_recon_result r;
    double *cold = calloc((size_t)reps, sizeof *cold), *pre = calloc((size_t)reps, sizeof *pre),
           *full = calloc((size_t)reps, sizeof *full), *fresh = calloc((size_t)reps, sizeof *fresh);
    lm_recon_session *s = NULL;
    lm_code rc = LM_OK;
    /* cold runs (Q from the disk cache after the first, as in the GUI) */
    for (int i = 0; i <= reps && rc == LM_OK; i++) {
        double t0 = now_s();
        rc = lm_recon_run(&g, t, k, &o, &r, &err);
        if (i > 0)
            cold[i - 1] = now_s() - t0;
        lm_recon_result_clear(&r);
    }
    if (rc == LM_OK)
        rc = lm_recon_run_session(&g, t, k, &o, &r, &s, &err);

    lm_recon_result_clear(&r);
    lm_cfloat *out = rc == LM_OK ? calloc((size_t)lm_recon_session_voxels(s), sizeof *out) : NULL;
    lm_session_solve_opts p;
    lm_session_solve_opts_init(&p, s);
    lm_session_report rep;
    double lam = o.lambda;
    for (int i = 0; i < reps && rc == LM_OK; i++) {
        lam *= 1.3; /* a new lambda every time, as a slider gives */
        p.lambda = lam;
        p.warm_start = 1;
        p.iters = preview;
        double t0 = now_s();
        rc = lm_recon_session_solve(s, &p, out, &rep, &err);
        pre[i] = now_s() - t0;
        p.iters = o.iters;
        t0 = now_s();
        if (rc == LM_OK)
            rc = lm_recon_session_solve(s, &p, out, &rep, &err);
        full[i] = now_s() - t0;
        p.warm_start = 0;
        t0 = now_s();
        if (rc == LM_OK)
            rc = lm_recon_session_solve(s, &p, out, &rep, &err);
        fresh[i] = now_s() - t0;
    }

    if (rc != LM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    printf("%s %s (%lld voxels, %lld samples), %d repeats, medians:\n", name, variant,
           (long long)lm_geom_voxels(&g), (long long)t->m, reps);
    printf("  cold lm_recon_run (%d iterations, Q cached)   %8.1f ms\n", o.iters, 1e3 * median(cold, reps));
    printf("  session re-solve, warm preview (%d its)       %8.1f ms\n", preview, 1e3 * median(pre, reps));
    printf("  session re-solve, warm full (%d its)          %8.1f ms\n", o.iters, 1e3 * median(full, reps));
    printf("  session re-solve, cold full (%d its: final)   %8.1f ms\n", o.iters, 1e3 * median(fresh, reps));
    printf("  E^H d computed %d time(s), Q %d time(s) over %d solves\n", rep.fhd_count, rep.q_count, rep.solves);
    lm_recon_session_free(&s);
    free(out), free(cold), free(pre), free(full), free(fresh);
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_volume_free(truth);
    return 0;
}
