/* Automatic lambda (recon/lm_lambda.h, docs/lambda.md) on B32 with 5 %
 * complex noise (as B64n):
 *  - the outer-k-space noise estimate within 20 % of the noise's true
 *    sigma (measured from the noise actually added);
 *  - --lambda auto's error within 10 % of the best of a lambda sweep, for
 *    the identity and the gradient priors;
 *  - the discrepancy holds at the chosen lambda: ||E x - d||^2 of the
 *    returned image (forward NUFFT, independent of the search's formula)
 *    within 12 % of M sigma^2;
 *  - with noise scans (prewhitened, sigma = 1) the choice is close to the
 *    outer estimate's;
 *  - GCV through the same pipeline, and the search on an analytic callback;
 *  - 2D Shepp-Logan 48x48 from 30 spokes with 4 % noise, whose outer
 *    k-space holds signal: the outer estimate is high (documented); noise
 *    scans and GCV still meet the bound;
 *  - bad inputs: no noise to estimate (too few samples, zero outer data),
 *    GCV on a solver without tr H, unknown criterion names. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lm_encoding.h"
#include "lm_lambda.h"
#include "lm_metrics.h"
#include "lm_phantom.h"
#include "lm_recon.h"
#include "lm_test.h"
#include "lm_trajgen.h"

typedef struct problem {
    lm_geom g;
    lm_traj *t;
    lm_kdata *k, *k0;   /* noisy, clean */
    lm_volume *truth;
    double sigma;       /* of the noise added: sqrt(||k - k0||^2 / M) */
} problem;

/* 3D: B32's trajectory and phantom (35 % of its voxels sampled, radial)
 * with 5 % noise, as B64n; 2D: Shepp-Logan 48x48 from 30 golden-angle
 * spokes, whose outer k-space still holds signal above 4 % noise. */
static void problem_make(problem *p, int three_d)
{
    lm_error err = {0};
    memset(p, 0, sizeof *p);
    if (three_d) {
        CHECK_OK(lm_problem_make(lm_problem_find("B32", &err), &p->g, &p->t, &p->k0, &p->truth, &err), &err);
    } else {
        lm_geom_init(&p->g, 48, 48, 1, 240);
        const int64_t n[3] = {48, 48, 1};
        CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL2D, n, 30 * 48, 48, &p->t, &err), &err);
        p->k0 = lm_kdata_new(p->t->m, 1, &err);
        CHECK_OK(lm_phantom_kspace(lm_phantom_shepp_logan_2d(), p->t, p->k0->d, &err), &err);
        CHECK_OK(lm_phantom_truth(lm_phantom_shepp_logan_2d(), &p->g, 4, &p->truth, &err), &err);
    }
    p->k = lm_kdata_new(p->t->m, 1, &err);
    memcpy(p->k->d, p->k0->d, (size_t)p->t->m * sizeof *p->k->d);
    CHECK_OK(lm_noise_add(p->k, three_d ? 0.05 : 0.04, 7, &err), &err);
    double e = 0;
    for (int64_t j = 0; j < p->t->m; j++)
        e += pow(cabs(p->k->d[j] - p->k0->d[j]), 2);
    p->sigma = sqrt(e / (double)p->t->m);
}

static void problem_free(problem *p)
{
    lm_traj_free(p->t);
    lm_kdata_free(p->k);
    lm_kdata_free(p->k0);
    lm_volume_free(p->truth);
}

static void opts_for(lm_recon_opts *o, lm_reg_kind reg)
{
    lm_recon_opts_init(o);
    o->variant = "cpu-nufft";
    o->use_cache = 0;
    o->reg = reg;
}

/* Percent error of a CG reconstruction (as is, docs/conventions.md section 3). */
static double recon_error(const problem *p, const lm_recon_opts *o, lm_recon_result *res)
{
    lm_error err = {0};
    lm_code rc = lm_recon_run(&p->g, p->t, p->k, o, res, &err);
    CHECK_OK(rc, &err);
    if (rc != LM_OK)
        return INFINITY;
    lm_metrics m;
    CHECK_OK(lm_metrics_compute(res->image->data, p->truth->data, lm_geom_voxels(&p->g), NULL, 0, &m, &err), &err);
    return m.percent_error;
}

static void test_noise_estimate(const problem *p)
{
    lm_error err = {0};
    lm_lambda_noise nz, n0;
    CHECK_OK(lm_lambda_noise_outer(&p->g, p->t, p->k, LM_LAMBDA_OUTER_FRAC, &nz, &err), &err);
    printf("outer estimate %g (true sigma %g), %lld samples\n", nz.sigma, p->sigma, (long long)nz.samples);
    CHECK_MSG(fabs(nz.sigma / p->sigma - 1) < 0.2, "outer estimate %g, true sigma %g", nz.sigma, p->sigma);
    CHECK_NEAR(nz.sigma2_sum, nz.sigma * nz.sigma, 1e-12 * nz.sigma2_sum);
    /* the clean data's outer k-space holds far less than the noise */
    CHECK_OK(lm_lambda_noise_outer(&p->g, p->t, p->k0, LM_LAMBDA_OUTER_FRAC, &n0, &err), &err);
    CHECK_MSG(n0.sigma < 0.5 * p->sigma, "clean outer level %g vs sigma %g", n0.sigma, p->sigma);
}

/* ||E x - d||^2 by the forward NUFFT. */
static double residual(const problem *p, const lm_cfloat *x)
{
    lm_error err = {0};
    lm_encoding *e = NULL;
    lm_encoding_desc d = {.geom = &p->g, .traj = p->t, .variant = "cpu-nufft"};
    CHECK_OK(lm_encoding_new(&d, &e, &err), &err);
    lm_kdata *f = lm_kdata_new(p->t->m, 1, &err);
    double r = INFINITY;
    if (e && f && lm_encoding_forward(e, x, f, &err) == LM_OK) { /* CPU back end: x is host memory */
        r = 0;
        for (int64_t j = 0; j < p->t->m; j++)
            r += pow(cabs(f->d[j] - p->k->d[j]), 2);
    }
    lm_kdata_free(f);
    lm_encoding_free(e);
    return r;
}

static void test_auto_vs_sweep(const problem *p, lm_reg_kind reg)
{
    lm_recon_opts o;
    lm_recon_result res = {0};
    opts_for(&o, reg);
    double best = INFINITY, best_lam = 0;
    for (int i = -4; i <= 6; i++) { /* 1e-2 .. 1e3 in half decades (bench/quality-sweep.sh's range) */
        o.lambda = pow(10.0, i / 2.0);
        const double e = recon_error(p, &o, &res);
        if (e < best)
            best = e, best_lam = o.lambda;
        lm_recon_result_clear(&res);
    }
    opts_for(&o, reg);
    o.lambda = -1; /* ignored under lambda_auto */
    o.lambda_auto = 1;
    const double ea = recon_error(p, &o, &res);
    printf("%s: auto lambda %.4g (%s, %d solves, %d iterations): error %.2f %%; sweep best %.2f %% at %g\n",
           lm_reg_name(reg), res.lambda_used, res.lambda_note, res.lambda_solves, res.lambda_iters, ea, best,
           best_lam);
    CHECK_MSG(ea <= 1.1 * best, "auto %.2f %% vs best %.2f %%", ea, best);
    CHECK(!strcmp(res.lambda_criterion, "discrepancy"));
    CHECK(strstr(res.lambda_note, "outer k-space") != NULL);
    CHECK(res.lambda_solves >= 2 && res.lambda_solves <= 16);
    CHECK(res.lambda_used > 0 && res.time_lambda_s > 0);
    CHECK_MSG(fabs(res.lambda_sigma / p->sigma - 1) < 0.2, "sigma used %g vs %g", res.lambda_sigma, p->sigma);
    /* the discrepancy at the returned image: the search stops within 5 %
     * of tau M sigma_est^2 (or at a bracket 10 % wide in lambda); the final
     * cold solve differs a little */
    if (res.image) {
        const double r = residual(p, res.image->data);
        const double target = LM_LAMBDA_TAU * (double)p->t->m * res.lambda_sigma * res.lambda_sigma;
        CHECK_MSG(fabs(r / target - 1) < 0.12, "residual %g vs tau M sigma^2 %g", r, target);
    }
    lm_recon_result_clear(&res);

    /* the same lambda given by hand gives the same image: the final solve
     * is an ordinary reconstruction */
    opts_for(&o, reg);
    o.lambda_auto = 1;
    CHECK(recon_error(p, &o, &res) == ea);
    const double lam = res.lambda_used;
    lm_recon_result_clear(&res);
    opts_for(&o, reg);
    o.lambda = lam;
    CHECK(recon_error(p, &o, &res) == ea);
    CHECK(!strcmp(res.lambda_criterion, "given") && res.lambda_used == lam && res.lambda_solves == 0);
    lm_recon_result_clear(&res);

    /* GCV through the pipeline: a choice in range with a finite score */
    opts_for(&o, reg);
    o.lambda_auto = 1;
    o.lambda_criterion = LM_LAMBDA_GCV;
    const double eg = recon_error(p, &o, &res);
    printf("%s: gcv lambda %.4g (%s, %d solves, %d iterations): error %.2f %%\n", lm_reg_name(reg),
           res.lambda_used, res.lambda_note, res.lambda_solves, res.lambda_iters, eg);
    CHECK(!strcmp(res.lambda_criterion, "gcv") && res.lambda_sigma == 0);
    CHECK(res.lambda_used >= 1e-2 && res.lambda_used <= 1e3);
    CHECK(isfinite(eg));
    lm_recon_result_clear(&res);
}

/* 4096 noise samples of p's sigma (a noise scan). */
static lm_kdata *noise_scan(const problem *p)
{
    lm_error err = {0};
    lm_kdata *nz = lm_kdata_new(4096, 1, &err);
    memset(nz->d, 0, (size_t)nz->m * sizeof *nz->d);
    nz->d[0] = 1; /* lm_noise_add scales by RMS|d|: one unit sample, then rescale */
    CHECK_OK(lm_noise_add(nz, 1.0, 99, &err), &err);
    nz->d[0] -= 1;
    double e = 0;
    for (int64_t j = 0; j < nz->m; j++)
        e += pow(cabs(nz->d[j]), 2);
    const float scale = (float)(p->sigma / sqrt(e / (double)nz->m));
    for (int64_t j = 0; j < nz->m; j++)
        nz->d[j] *= scale;
    return nz;
}

/* Noise scans: prewhitened single-coil data have sigma = 1. */
static void test_noise_scans(const problem *p)
{
    lm_kdata *nz = noise_scan(p);
    lm_recon_opts o;
    lm_recon_result a = {0}, b = {0};
    opts_for(&o, LM_REG_IDENTITY);
    o.lambda_auto = 1;
    o.noise = nz;
    recon_error(p, &o, &a);
    o.noise = NULL;
    recon_error(p, &o, &b);
    printf("noise scans: lambda %.4g (%s); outer: %.4g\n", a.lambda_used, a.lambda_note, b.lambda_used);
    CHECK(strstr(a.lambda_note, "noise scans") != NULL && a.lambda_sigma == 1);
    CHECK_MSG(a.lambda_used > b.lambda_used / 2 && a.lambda_used < b.lambda_used * 2, "%g vs %g", a.lambda_used,
              b.lambda_used);
    lm_recon_result_clear(&a);
    lm_recon_result_clear(&b);
    lm_kdata_free(nz);
}

/* The search alone on an analytic "solver": resid(lambda) = 1 - 1/(1 +
 * lambda/5) + 0.01, whose discrepancy root for target 0.51 is lambda = 5;
 * GCV without tr H is refused. */
static lm_code toy_solve(void *user, double lambda, int want_dof, lm_lambda_eval *ev, lm_error *err)
{
    (void)err;
    int *calls = user;
    ++*calls;
    *ev = (lm_lambda_eval){.resid = 1 - 1 / (1 + lambda / 5) + 0.01, .penalty = 1 / (1 + lambda), .dof = NAN,
                           .iters = 3};
    (void)want_dof;
    return LM_OK;
}

static void test_search_generic(void)
{
    lm_error err = {0};
    int calls = 0;
    lm_lambda_search s = {.criterion = LM_LAMBDA_DISCREPANCY, .solve = toy_solve, .user = &calls, .m_total = 100,
                          .noise_power = 0.51};
    lm_lambda_result r;
    CHECK_OK(lm_lambda_search_run(&s, &r, &err), &err);
    CHECK_MSG(fabs(log(r.lambda / 5)) < log(1.15), "lambda %g", r.lambda);
    CHECK_NEAR(r.value, 1, 0.05);
    CHECK(r.solves == calls && r.iters == 3 * calls && calls <= 12 && !r.clamped);
    /* target below every residual: clamped at the bottom of the range */
    s.noise_power = 1e-3;
    CHECK_OK(lm_lambda_search_run(&s, &r, &err), &err);
    CHECK(r.clamped && r.lambda == LM_LAMBDA_MIN);
    /* no noise level */
    s.noise_power = 0;
    CHECK(lm_lambda_search_run(&s, &r, &err) == LM_ERR_INVALID && strstr(err.msg, "noise"));
    s.criterion = LM_LAMBDA_GCV;
    CHECK(lm_lambda_search_run(&s, &r, &err) == LM_ERR_UNSUPPORTED && strstr(err.msg, "discrepancy"));
    s.criterion = LM_LAMBDA_DEFAULT;
    CHECK(lm_lambda_search_run(&s, &r, &err) == LM_ERR_INVALID);
    lm_lambda_criterion c;
    CHECK(lm_lambda_criterion_parse("l-curve", &c, &err) == LM_ERR_INVALID && strstr(err.msg, "gcv"));
    CHECK_OK(lm_lambda_criterion_parse("gcv", &c, &err), &err);
    CHECK(c == LM_LAMBDA_GCV && lm_lambda_default_criterion(LM_REG_GRADIENT) == LM_LAMBDA_DISCREPANCY &&
          lm_lambda_default_criterion(LM_REG_IDENTITY) == LM_LAMBDA_DISCREPANCY &&
          lm_lambda_default_criterion(LM_REG_ANATOMICAL) == LM_LAMBDA_GCV);
}

/* No noise to measure: too few samples, or outer samples exactly zero. */
static void test_no_noise(const problem *p)
{
    lm_error err = {0};
    lm_traj *t = NULL;
    const int64_t n[3] = {48, 48, 1};
    CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL2D, n, 4 * 48, 48, &t, &err), &err); /* 19 outer samples */
    lm_kdata *k = lm_kdata_new(t->m, 1, &err);
    memcpy(k->d, p->k->d, (size_t)t->m * sizeof *k->d); /* the first 4 spokes are the same */
    lm_lambda_noise s;
    CHECK(lm_lambda_noise_outer(&p->g, t, k, LM_LAMBDA_OUTER_FRAC, &s, &err) == LM_ERR_INVALID &&
          strstr(err.msg, "noise scans"));
    lm_recon_opts o;
    lm_recon_result res = {0};
    opts_for(&o, LM_REG_IDENTITY);
    o.lambda_auto = 1;
    o.lambda_criterion = LM_LAMBDA_DISCREPANCY; /* asked for: an error */
    CHECK(lm_recon_run(&p->g, t, k, &o, &res, &err) == LM_ERR_INVALID && strstr(err.msg, "noise scans"));
    CHECK(res.image == NULL);
    o.lambda_criterion = LM_LAMBDA_DEFAULT; /* the default: GCV, and says why */
    CHECK_OK(lm_recon_run(&p->g, t, k, &o, &res, &err), &err);
    CHECK(!strcmp(res.lambda_criterion, "gcv") && strstr(res.lambda_note, "no noise level"));
    lm_recon_result_clear(&res);
    /* zero outer k-space (data cut at 80 % of kmax) */
    for (int64_t j = 0; j < p->t->m; j++) {
        const float *kk = p->t->k + 3 * j;
        if (hypotf(kk[0], kk[1]) > 0.8f * 24)
            p->k->d[j] = 0;
    }
    CHECK(lm_lambda_noise_outer(&p->g, p->t, p->k, LM_LAMBDA_OUTER_FRAC, &s, &err) == LM_ERR_INVALID &&
          strstr(err.msg, "no noise"));
    CHECK(lm_lambda_noise_outer(&p->g, p->t, p->k, 0, &s, &err) == LM_ERR_INVALID);
    lm_kdata_free(k);
    lm_traj_free(t);
}

/* 2D: the outer k-space still holds signal (2.3 sigma: sharp 2D edges
 * decay as |k|^-1.5 only), so the outer estimate is high and lambda too
 * (documented, docs/lambda.md); noise scans (sigma known) and GCV both
 * meet the 10 % bound. */
static void test_signal_in_outer(const problem *p, const lm_kdata *nz)
{
    lm_error err = {0};
    lm_lambda_noise est;
    CHECK_OK(lm_lambda_noise_outer(&p->g, p->t, p->k, LM_LAMBDA_OUTER_FRAC, &est, &err), &err);
    printf("2D: outer estimate %g (true sigma %g)\n", est.sigma, p->sigma);
    CHECK(est.sigma > 1.5 * p->sigma);
    lm_recon_opts o;
    lm_recon_result res = {0};
    opts_for(&o, LM_REG_IDENTITY);
    double best = INFINITY;
    for (int i = -4; i <= 6; i++) {
        o.lambda = pow(10.0, i / 2.0);
        best = fmin(best, recon_error(p, &o, &res));
        lm_recon_result_clear(&res);
    }
    o.lambda_auto = 1;
    double lam[3];
    for (int c = 0; c < 3; c++) {
        o.lambda_criterion = c == 2 ? LM_LAMBDA_GCV : LM_LAMBDA_DEFAULT;
        o.noise = c == 1 ? nz : NULL;
        double ea = recon_error(p, &o, &res);
        if (c == 1 && res.image) { /* whitened data: the image is in units of the noise; undo that scale */
            lm_metrics m;
            CHECK_OK(lm_metrics_compute(res.image->data, p->truth->data, lm_geom_voxels(&p->g), NULL, 1, &m, &err),
                     &err);
            ea = m.percent_error;
        }
        lam[c] = res.lambda_used;
        printf("2D identity: auto lambda %.4g (%s): error %.2f %%, sweep best %.2f %%\n", res.lambda_used,
               res.lambda_note, ea, best);
        if (c > 0)
            CHECK_MSG(ea <= 1.1 * best, "auto %.2f %% vs best %.2f %%", ea, best);
        lm_recon_result_clear(&res);
    }
    CHECK(lam[0] > 2 * lam[1]); /* the overestimated sigma over-regularises */
}

/* tv and wavelet (ADMM): the discrepancy principle over ADMM trial solves
 * (10 outer iterations, as the reconstruction) against a sweep over 1e-4
 * .. 0.1 in half decades: the 10 % bound; the image's residual at
 * tau M sigma^2; GCV refused (no linear solver). */
static void test_auto_admm(const problem *p, lm_reg_kind reg)
{
    lm_error err = {0};
    lm_recon_opts o;
    lm_recon_result res = {0};
    opts_for(&o, reg);
    o.iters = 10;
    double best = INFINITY, best_lam = 0;
    for (int i = -8; i <= -2; i++) {
        o.lambda = pow(10.0, i / 2.0);
        const double e = recon_error(p, &o, &res);
        if (e < best)
            best = e, best_lam = o.lambda;
        lm_recon_result_clear(&res);
    }
    o.lambda_auto = 1;
    const double ea = recon_error(p, &o, &res);
    printf("%s: auto lambda %.4g (%s, %d solves, %d outer iterations): error %.2f %%; sweep best %.2f %% at %g\n",
           lm_reg_name(reg), res.lambda_used, res.lambda_note, res.lambda_solves, res.lambda_iters, ea, best,
           best_lam);
    CHECK_MSG(ea <= 1.1 * best, "auto %.2f %% vs best %.2f %%", ea, best);
    CHECK(!strcmp(res.lambda_criterion, "discrepancy"));
    CHECK(res.lambda_solves >= 2 && res.lambda_solves <= 16 && res.lambda_used > 0);
    if (res.image) {
        const double r = residual(p, res.image->data);
        const double target = 0.9 * (double)p->t->m * res.lambda_sigma * res.lambda_sigma; /* LAMBDA_ADMM_TAU */
        printf("%s: residual %g, tau M sigma^2 %g\n", lm_reg_name(reg), r, target);
        CHECK_MSG(fabs(r / target - 1) < 0.12, "residual %g vs tau M sigma^2 %g", r, target);
    }
    lm_recon_result_clear(&res);
    o.lambda_criterion = LM_LAMBDA_GCV;
    CHECK(lm_recon_run(&p->g, p->t, p->k, &o, &res, &err) == LM_ERR_INVALID && strstr(err.msg, "discrepancy"));
    CHECK(res.image == NULL);
}

int main(void)
{
    problem p, p2;
    problem_make(&p, 1);
    problem_make(&p2, 0);
    test_search_generic();
    test_noise_estimate(&p);
    test_auto_vs_sweep(&p, LM_REG_IDENTITY);
    test_auto_vs_sweep(&p, LM_REG_GRADIENT);
    test_auto_admm(&p, LM_REG_TV);
    test_auto_admm(&p, LM_REG_WAVELET);
    test_noise_scans(&p);
    lm_kdata *nz2 = noise_scan(&p2);
    test_signal_in_outer(&p2, nz2);
    lm_kdata_free(nz2);
    test_no_noise(&p2); /* last: zeroes part of p2's data */
    problem_free(&p);
    problem_free(&p2);
    return lm_test_failures ? 1 : 0;
}
