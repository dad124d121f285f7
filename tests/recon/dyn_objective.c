/* Diagnostic: the temporal-TV objective
 *
 *   F(x) = sum_t ||E_t x_t - d_t||^2 + lambda_abs sum |x_{t+1} - x_t|,
 *   lambda_abs = lambda * RMS(E^H d)   (lm_dyn_recon.h's relative weight)
 *
 * of a dynamic problem (D128c8 by default) at given images (e.g. BART's
 * `pics -R T:1024:0:L` output, or Larmor's own), each at its best complex
 * scale for F, with the data term by the NUFFT (lm_dyn_residual) and by
 * the Toeplitz normal operator, the per-frame residual and the error
 * against the centre-time truth (plain and scale-matched); and Larmor's
 * own ADMM from zero or warm from an image, with F along the way.
 *
 *   dyn_objective eval  PROBLEM LAMBDA IMG.cfl...   (also "truth", "avg": frame-averaged truth)
 *   dyn_objective solve PROBLEM LAMBDA ITERS OUT.cfl [WARM.cfl|truth]
 *
 * env LM_DIRAC=1: the Dirac voxel basis (phi = 1) instead of the box;
 * LM_BENCH_CG_ITERS, LM_BENCH_RHO as bench_dyn; LM_EVERY (10): F every
 * so many iterations in solve. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_admm.h"
#include "lm_dyn_recon.h"
#include "lm_dynamic_phantom.h"
#include "lm_encoding.h"
#include "lm_io.h"
#include "lm_metrics.h"

typedef struct ctx {
    lm_dyn_model *m;
    lm_linop *normal;
    lm_backend *be;
    int64_t T, N, n;
    lm_cfloat *b, *truth, *tmp;
    const lm_dyn_problem_def *def;
    lm_geom g;
    double dd, rms, lambda_abs;
} ctx;

static void die(const lm_error *e)
{
    fprintf(stderr, "dyn_objective: %s\n", e->msg);
    exit(1);
}

static double tv(const ctx *c, const lm_cfloat *x)
{
    double s = 0;
    for (int64_t t = 0; t + 1 < c->T; t++)
        for (int64_t v = 0; v < c->N; v++)
            s += cabsf(x[(t + 1) * c->N + v] - x[t * c->N + v]);
    return s;
}

/* ||E x - d||^2 - ||d||^2 by the Toeplitz normal operator. */
static double data_toeplitz(ctx *c, const lm_cfloat *x)
{
    lm_error err = {0};
    if (lm_linop_apply(c->normal, x, c->tmp, &err) != LM_OK)
        die(&err);
    double s = 0;
    for (int64_t i = 0; i < c->n; i++)
        s += creal(conj((double complex)x[i]) * c->tmp[i]) - 2 * creal(conj((double complex)x[i]) * c->b[i]);
    return s;
}

/* Per frame: E_t x_t (host kdata list); returns sum ||E x||^2, <E x, d>, ||d||^2 and per-frame residuals. */
static void forward_stats(ctx *c, const lm_cfloat *x, double *ee, double complex *ed, double *ddn, double *fr_res,
                          double alpha_r, double complex alpha)
{
    lm_error err = {0};
    *ee = 0, *ed = 0, *ddn = 0;
    for (int64_t t = 0; t < c->T; t++) {
        const lm_kdata *k = lm_dyn_model_kdata(c->m, t);
        lm_kdata *p = lm_kdata_new(k->m, k->ncoils, &err);
        if (!p || lm_encoding_forward(lm_dyn_model_encoding(c->m, t), x + t * c->N, p, &err) != LM_OK)
            die(&err);
        double r = 0, dn = 0;
        for (int64_t i = 0; i < k->m * k->ncoils; i++) {
            const double complex e = p->d[i], d = k->d[i];
            *ee += creal(e * conj(e));
            *ed += conj(e) * d;
            dn += creal(d * conj(d));
            const double complex dv = alpha * e - d;
            r += creal(dv * conj(dv));
        }
        (void)alpha_r;
        *ddn += dn;
        if (fr_res)
            fr_res[t] = sqrt(r / dn);
        lm_kdata_free(p);
    }
}

static double err_matched(const lm_cfloat *x, const lm_cfloat *truth, int64_t n, double complex *a_out)
{
    double complex xt = 0;
    double xx = 0;
    for (int64_t i = 0; i < n; i++) {
        xt += conj((double complex)x[i]) * truth[i];
        xx += creal(conj((double complex)x[i]) * x[i]);
    }
    const double complex a = xx > 0 ? xt / xx : 0;
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        const double complex dv = a * x[i] - truth[i];
        num += creal(dv * conj(dv));
        den += creal(truth[i] * conj((double complex)truth[i]));
    }
    if (a_out)
        *a_out = a;
    return sqrt(num / den);
}

static lm_cfloat *load(ctx *c, const char *path)
{
    lm_cfloat *x = malloc(sizeof *x * (size_t)c->n);
    if (!strcmp(path, "truth")) {
        memcpy(x, c->truth, sizeof *x * (size_t)c->n);
        return x;
    }
    if (!strcmp(path, "avg")) { /* the frame-averaged truth */
        lm_error err = {0};
        lm_cfloat *a = NULL;
        if (lm_dyn_truth_averaged(c->def, &c->g, c->def->spokes_per_frame, &a, &err) != LM_OK)
            die(&err);
        memcpy(x, a, sizeof *x * (size_t)c->n);
        free(a);
        return x;
    }
    lm_error err = {0};
    int nd;
    int64_t dims[LM_CFL_MAX_DIMS];
    lm_cfloat *d = NULL;
    if (lm_cfl_read(path, &nd, dims, &d, &err) != LM_OK)
        die(&err);
    int64_t tot = 1;
    for (int i = 0; i < nd; i++)
        tot *= dims[i];
    if (tot != c->n) {
        fprintf(stderr, "dyn_objective: %s has %lld values, want %lld\n", path, (long long)tot, (long long)c->n);
        exit(1);
    }
    memcpy(x, d, sizeof *x * (size_t)c->n);
    free(d);
    return x;
}

static void eval(ctx *c, const char *name, const lm_cfloat *x0, double lambda)
{
    const double la = lambda * c->rms;
    double ee, ddn;
    double complex ed;
    forward_stats(c, x0, &ee, &ed, &ddn, NULL, 0, 1);
    const double tvx = tv(c, x0);
    /* best complex scale for F: phase of <Ex, d>, magnitude (|c| - la TV / 2) / ||Ex||^2 */
    double r = (cabs(ed) - 0.5 * la * tvx) / ee;
    if (r < 0)
        r = 0;
    const double complex alpha = r * ed / cabs(ed);
    const double complex alpha_ls = ed / ee;
    double *fr = malloc(sizeof *fr * (size_t)c->T);
    forward_stats(c, x0, &ee, &ed, &ddn, fr, 0, alpha);
    lm_cfloat *x = malloc(sizeof *x * (size_t)c->n);
    for (int64_t i = 0; i < c->n; i++)
        x[i] = (lm_cfloat)(alpha * x0[i]);
    lm_error err = {0};
    double resid;
    if (lm_dyn_residual(c->m, x, &resid, &err) != LM_OK)
        die(&err);
    const double dt = data_toeplitz(c, x) + ddn, tvs = tv(c, x);
    double complex am;
    const double em = err_matched(x, c->truth, c->n, &am);
    double fmin = 1e9, fmax = 0;
    for (int64_t t = 0; t < c->T; t++) {
        fmin = fr[t] < fmin ? fr[t] : fmin;
        fmax = fr[t] > fmax ? fr[t] : fmax;
    }
    printf("%-28s alpha %.4f%+.4fi (LS %.4f%+.4fi)  F %.6e  data %.6e (toeplitz %.6e)  rel resid %.4f %% "
           "[frames %.3f..%.3f %%]  lambda*TV %.6e  err %.2f %% matched %.2f %%\n",
           name, creal(alpha), cimag(alpha), creal(alpha_ls), cimag(alpha_ls), resid + la * tvs, resid, dt,
           100 * sqrt(resid / ddn), 100 * fmin, 100 * fmax, la * tvs, 100 * lm_rel_error_c(x, c->truth, c->n),
           100 * em);
    fflush(stdout);
    free(fr);
    free(x);
}

typedef struct watch {
    ctx *c;
    double lambda;
    int every;
    double dnorm2;
} watch;

static int show(void *user, int iter, const lm_cfloat *x, double elapsed)
{
    watch *w = user;
    ctx *c = w->c;
    if (iter % w->every == 0 || iter <= 10) {
        const double d = data_toeplitz(c, x) + w->dnorm2, t = tv(c, x);
        printf("  iter %4d %8.1f s  err %6.2f %%  F %.6e  data %.6e  lambda*TV %.6e\n", iter, elapsed,
               100 * lm_rel_error_c(x, c->truth, c->n), d + w->lambda * c->rms * t, d, w->lambda * c->rms * t);
    } else {
        printf("  iter %4d %8.1f s  err %6.2f %%\n", iter, elapsed, 100 * lm_rel_error_c(x, c->truth, c->n));
    }
    fflush(stdout);
    return 0;
}

/* lm_admm's monitor: the watch with the iterate (one solve at a time) */
static watch *g_watch;
static const lm_cfloat *g_x;

static int admm_monitor(void *user, int iter, double rr, double cost, double el)
{
    (void)user, (void)rr, (void)cost;
    return show(g_watch, iter, g_x, el);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: dyn_objective eval PROBLEM LAMBDA IMG...\n"
                        "       dyn_objective solve PROBLEM LAMBDA ITERS OUT.cfl [WARM.cfl|truth]\n");
        return 1;
    }
    const lm_dyn_problem_def *def = lm_dyn_problem_find(argv[2]);
    if (!def) {
        fprintf(stderr, "dyn_objective: no problem %s\n", argv[2]);
        return 1;
    }
    const double lambda = atof(argv[3]);
    lm_error err = {0};
    lm_geom g;
    lm_traj *tr = NULL;
    lm_kdata *k = NULL;
    lm_sens *s = NULL;
    lm_frames *f = NULL;
    ctx c = {0};
    if (lm_dyn_problem_make(def, &g, &tr, &k, &s, &c.truth, &f, &err) != LM_OK)
        die(&err);
    if (getenv("LM_DIRAC") && atoi(getenv("LM_DIRAC")))
        g.basis = LM_BASIS_DIRAC;
    c.def = def;
    c.g = g;
    lm_dyn_model_desc md = {.geom = &g, .traj = tr, .kdata = k, .sens = s, .frames = f, .variant = "auto"};
    if (lm_dyn_model_new(&md, &c.m, &err) != LM_OK)
        die(&err);
    c.T = f->count;
    c.N = lm_geom_voxels(&g);
    c.n = c.T * c.N;
    if (lm_dyn_model_normal(c.m, &c.normal, &err) != LM_OK)
        die(&err);
    for (int64_t t = 0; t < c.T; t++)
        if (lm_encoding_prepare_normal(lm_dyn_model_encoding(c.m, t), NULL, NULL, &err) != LM_OK)
            die(&err);
    c.be = c.normal->be;
    if (c.be->device != LM_DEVICE_CPU) {
        fprintf(stderr, "dyn_objective: CPU back end only\n");
        return 1;
    }
    c.b = c.be->alloc(c.be, c.n, "b");
    c.tmp = c.be->alloc(c.be, c.n, "tmp");
    if (lm_dyn_model_adjoint(c.m, c.b, &err) != LM_OK)
        die(&err);
    c.dd = lm_dyn_model_diag(c.m);
    double bb = 0, dn2 = 0;
    for (int64_t i = 0; i < c.n; i++)
        bb += creal(conj((double complex)c.b[i]) * c.b[i]);
    c.rms = sqrt(bb / (double)c.n);
    for (int64_t t = 0; t < c.T; t++) {
        const lm_kdata *kt = lm_dyn_model_kdata(c.m, t);
        for (int64_t i = 0; i < kt->m * kt->ncoils; i++)
            dn2 += creal(conj((double complex)kt->d[i]) * kt->d[i]);
    }
    c.lambda_abs = lambda * c.rms;
    printf("%s: %lld frames, N %lld; mean diag d %.6g, RMS(E^H d) %.6g (s = %.6g), ||d||^2 %.6e, lambda %g -> "
           "lambda_abs %.6g\n",
           argv[2], (long long)c.T, (long long)c.N, c.dd, c.rms, c.rms / c.dd, dn2, lambda, c.lambda_abs);
    if (!strcmp(argv[1], "eval")) {
        for (int i = 4; i < argc; i++) {
            lm_cfloat *x = load(&c, argv[i]);
            eval(&c, argv[i], x, lambda);
            free(x);
        }
    } else if (!strcmp(argv[1], "solve") && argc >= 6) {
        const int iters = atoi(argv[4]);
        lm_cfloat *x = c.be->alloc(c.be, c.n, "x");
        int warm = 0;
        if (argc > 6) {
            lm_cfloat *w0 = load(&c, argv[6]);
            /* scale to the data by least squares first */
            double ee, ddn;
            double complex ed;
            forward_stats(&c, w0, &ee, &ed, &ddn, NULL, 0, 1);
            for (int64_t i = 0; i < c.n; i++)
                x[i] = (lm_cfloat)(ed / ee * w0[i]);
            free(w0);
            warm = 1;
        } else {
            c.be->zero(c.be, c.n, x);
        }
        lm_dyn_prior_desc pd = {.n = {g.n[0], g.n[1], g.n[2]}, .frames = c.T, .time = LM_DYN_TIME_TV,
                                .lambda_t = c.lambda_abs};
        lm_dyn_prior *p = NULL;
        if (lm_dyn_prior_new(c.be, &pd, &p, &err) != LM_OK)
            die(&err);
        const char *cg = getenv("LM_BENCH_CG_ITERS"), *rho = getenv("LM_BENCH_RHO"), *ev = getenv("LM_EVERY");
        watch w = {.c = &c, .lambda = lambda, .every = ev ? atoi(ev) : 10, .dnorm2 = dn2};
        c.normal->diag = c.dd;
        lm_admm_params ap = {.iters = iters, .cg_iters = cg ? atoi(cg) : LM_DYN_CG_ITERS_DEFAULT, .lambda = 1,
                             .rho = (rho ? atof(rho) : 1.0) * c.dd, .adaptive = 1, .rho_span = LM_DYN_RHO_SPAN,
                             .warm_start = warm};
        lm_admm_report ar = {0};
        g_watch = &w;
        g_x = x;
        show(&w, 0, x, 0);
        ap.monitor = admm_monitor;
        if (lm_admm(c.normal, c.b, lm_dyn_prior_get(p), x, &ap, &ar, &err) != LM_OK)
            die(&err);
        printf("final rho %.4g (start %.4g), r %.3g s %.3g\n", ar.rho, ap.rho, ar.rel_resid, ar.dual_resid);
        free(ar.resid_history);
        int64_t dims[11] = {g.n[0], g.n[1], g.n[2], 1, 1, 1, 1, 1, 1, 1, c.T};
        if (lm_cfl_write(argv[5], 11, dims, x, &err) != LM_OK)
            die(&err);
        eval(&c, "final", x, lambda);
        lm_dyn_prior_free(p);
        c.be->release(c.be, x);
    } else {
        fprintf(stderr, "dyn_objective: unknown mode %s\n", argv[1]);
        return 1;
    }
    return 0;
}
