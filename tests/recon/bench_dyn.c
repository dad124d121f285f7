/* Dynamic reconstruction benchmark (BENCHMARKS.md, "Dynamic"): a dynamic
 * problem (D128c8 by default) with its true maps; Q and E^H d once, then
 * for each temporal weight the error over all frames after every ADMM
 * iteration with the solve's elapsed time (one run gives the whole curve),
 * frame-by-frame SENSE (lambda 0), and the automatic lambda. Errors are
 * against the centre-time truth and, after "avg", the frame-averaged truth
 * (the mean of the phantom over the frame's spoke times).
 *   bench_dyn [PROBLEM [ITERS [REG [LAMBDA...]]]]   REG: ttv ttik llr ttv+tv
 * LM_BENCH_VARIANT picks the kernel variant (default auto); LM_BENCH_CG_ITERS
 * the CG steps per ADMM iteration and LM_BENCH_RHO the initial penalty
 * (lm_dyn_opts.cg_iters, rho; default theirs); LM_BENCH_BASIS=box or dirac
 * the voxel basis (default the dynamic runs', LM_DYN_BASIS_DEFAULT);
 * LM_BENCH_NOISE=LEVEL adds noise as `phantom --noise LEVEL` does. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dyn_problem.h"
#include "lm_dyn_lambda.h"
#include "lm_dynamic_phantom.h"
#include "lm_metrics.h"
#include "lm_trajgen.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct watch {
    lm_backend *be;
    const lm_cfloat *truth, *truth_avg;
    lm_cfloat *host;
    int64_t n;
} watch;

/* The error after the one complex scale that fits x to the truth best
 * (least squares), as bench/dyn_error.py scores BART's output. */
static double matched_error(const lm_cfloat *x, const lm_cfloat *truth, int64_t n)
{
    double complex xt = 0;
    double xx = 0, tt = 0;
    for (int64_t i = 0; i < n; i++) {
        xt += conj((double complex)x[i]) * truth[i];
        xx += creal(x[i]) * creal(x[i]) + cimag(x[i]) * cimag(x[i]);
        tt += creal(truth[i]) * creal(truth[i]) + cimag(truth[i]) * cimag(truth[i]);
    }
    const double complex a = xx > 0 ? xt / xx : 0;
    double e = 0;
    for (int64_t i = 0; i < n; i++) {
        const double complex r = a * x[i] - truth[i];
        e += creal(r) * creal(r) + cimag(r) * cimag(r);
    }
    return tt > 0 ? sqrt(e / tt) : 0;
}

static int show(void *user, int iter, const lm_cfloat *x, double elapsed)
{
    watch *w = user;
    w->be->download(w->be, w->host, x, (size_t)w->n * sizeof *w->host);
    printf("  iter %3d  %8.3f s  error %6.2f %%  avg %6.2f %%  matched %6.2f %%\n", iter, elapsed,
           100 * lm_rel_error_c(w->host, w->truth, w->n), 100 * lm_rel_error_c(w->host, w->truth_avg, w->n),
           100 * matched_error(w->host, w->truth, w->n));
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "D128c8";
    const int iters = argc > 2 ? atoi(argv[2]) : 30;
    const char *reg = argc > 3 ? argv[3] : "ttv";
    const lm_dyn_problem_def *def = lm_dyn_problem_find(name);
    if (!def) {
        fprintf(stderr, "bench_dyn: no dynamic problem %s\n", name);
        return 1;
    }
    lm_error err = {0};
    dyn_problem P;
    double t0 = now_s();
    if (dyn_problem_make(def, &P, &err) != LM_OK) {
        fprintf(stderr, "bench_dyn: %s\n", err.msg);
        return 1;
    }
    const double noise = getenv("LM_BENCH_NOISE") ? atof(getenv("LM_BENCH_NOISE")) : 0;
    if (noise > 0 && lm_noise_add(P.k, noise, LM_PROBLEM_NOISE_SEED, &err) != LM_OK) {
        fprintf(stderr, "bench_dyn: %s\n", err.msg);
        return 1;
    }
    lm_cfloat *truth_avg = NULL;
    if (lm_dyn_truth_averaged(def, &P.g, def->spokes_per_frame, &truth_avg, &err) != LM_OK) {
        fprintf(stderr, "bench_dyn: %s\n", err.msg);
        return 1;
    }
    const char *basis = getenv("LM_BENCH_BASIS");
    P.g.basis = basis && !strcmp(basis, "box") ? LM_BASIS_BOX : basis && !strcmp(basis, "dirac") ? LM_BASIS_DIRAC
                                                                                               : LM_DYN_BASIS_DEFAULT;
    printf("%s: %lld frames, made in %.1f s, %s basis\n", name, (long long)P.f->count, now_s() - t0,
           P.g.basis == LM_BASIS_DIRAC ? "Dirac" : "box");
    const char *variant = getenv("LM_BENCH_VARIANT");
    lm_dyn_model_desc md = {.geom = &P.g, .traj = P.t, .kdata = P.k, .sens = P.s, .frames = P.f,
                            .variant = variant ? variant : "auto"};
    lm_dyn_model *m = NULL;
    t0 = now_s();
    if (lm_dyn_model_new(&md, &m, &err) != LM_OK) {
        fprintf(stderr, "bench_dyn: %s\n", err.msg);
        return 1;
    }
    const int64_t n = P.f->count * lm_geom_voxels(&P.g);
    watch w = {.be = lm_dyn_model_backend(m), .truth = P.truth, .truth_avg = truth_avg, .host = malloc(sizeof(lm_cfloat) * (size_t)n), .n = n};
    lm_dyn_opts o;
    lm_dyn_opts_init(&o);
    o.iters = iters;
    o.cg_iters = getenv("LM_BENCH_CG_ITERS") ? atoi(getenv("LM_BENCH_CG_ITERS")) : 0;
    o.rho = getenv("LM_BENCH_RHO") ? atof(getenv("LM_BENCH_RHO")) : 0;
    o.time = !strcmp(reg, "ttik") ? LM_DYN_TIME_TIKHONOV : !strcmp(reg, "llr") ? LM_DYN_TIME_LLR : LM_DYN_TIME_TV;
    o.space_tv = !strcmp(reg, "ttv+tv");
    o.lambda_s = o.space_tv ? 0.002 : 0;
    lm_dyn_result r = {0};
    /* frame-by-frame SENSE first: it also makes every Q (timed) */
    o.lambda_t = 0;
    o.lambda_s = 0;
    if (lm_dyn_solve(m, &o, &r, &err) != LM_OK) {
        fprintf(stderr, "bench_dyn: %s\n", err.msg);
        return 1;
    }
    printf("frame-by-frame SENSE, %d CG iterations: error %.2f %% avg %.2f %% (set-up with every Q %.2f s, solve %.2f s)\n",
           iters, 100 * lm_rel_error_c(r.x, P.truth, n), 100 * lm_rel_error_c(r.x, truth_avg, n),
           now_s() - t0 - r.time_solve_s, r.time_solve_s);
    lm_dyn_result_clear(&r);
    o.watch = show;
    o.watch_user = &w;
    o.lambda_s = o.space_tv ? 0.002 : 0;
    for (int i = 4; i < argc; i++) {
        o.lambda_t = atof(argv[i]);
        printf("%s lambda %g:\n", reg, o.lambda_t);
        if (lm_dyn_solve(m, &o, &r, &err) != LM_OK) {
            fprintf(stderr, "bench_dyn: %s\n", err.msg);
            return 1;
        }
        lm_dyn_result_clear(&r);
    }
    if (argc <= 4 || getenv("LM_BENCH_AUTO")) {
        o.watch = NULL;
        lm_dyn_cv_report cv;
        if (lm_dyn_lambda_cv(m, &o, &cv, &err) != LM_OK) {
            fprintf(stderr, "bench_dyn: %s\n", err.msg);
            return 1;
        }
        for (int i = 0; i < cv.trials; i++)
            printf("  cross-validation trial lambda %-8.4g held-out error %.5g\n", cv.lambdas[i], cv.scores[i]);
        o.lambda_auto = 1;
        if (lm_dyn_solve(m, &o, &r, &err) != LM_OK) {
            fprintf(stderr, "bench_dyn: %s\n", err.msg);
            return 1;
        }
        printf("%s lambda auto: %.4g (held-out error %.4g, %d solves, %.1f s): error %.2f %% avg %.2f %% matched %.2f %%\n",
               reg, r.lambda_t, r.cv_score, r.solves, r.time_solve_s, 100 * lm_rel_error_c(r.x, P.truth, n),
               100 * lm_rel_error_c(r.x, truth_avg, n), 100 * matched_error(r.x, P.truth, n));
        lm_dyn_result_clear(&r);
    }
    free(w.host);
    lm_dyn_model_free(m);
    free(truth_avg);
    dyn_problem_free(&P);
    return 0;
}
