/* Temporal-TV ADMM (lm_dyn_solve) converges to the minimiser of
 *
 *   F(x) = sum_t ||E_t x_t - d_t||^2 + lambda sum_{t,v} |x_{t+1,v} - x_{t,v}|
 *
 * on a small 16^2 x 6-frame, 4-coil radial problem: the reference is an
 * independent, slow solver in double precision (Condat-Vu primal-dual
 * with a gradient step on the data term, 20000 iterations; only E^H E
 * is applied in single precision). The reference satisfies its
 * optimality condition (its dual iterate y: 2 (E^H E x - E^H d) + D^H y =
 * 0, |y| <= lambda) to 1e-5 relative. Checked of ADMM: its iterate's
 * distance to the minimiser never grows between iterations j and 2j, it
 * at least halves from iteration 16 to 300 (a stall fails: the adaptive
 * penalty once ran away while the prox held every coefficient at zero,
 * and 4 CG steps no longer moved x), and F after 300 iterations is within
 * 1e-4 relative of F at the reference. The distance itself converges
 * slowly: the radial samples leave k-space's corners unmeasured, and
 * there only the temporal differences are fixed. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dyn_test.h"
#include "lm_coils_synth.h"
#include "lm_dyn_model.h"
#include "lm_dyn_recon.h"
#include "lm_dynamic_phantom.h"
#include "lm_test.h"
#include "lm_trajgen.h"

enum { N_EDGE = 16, FRAMES = 6, SPOKES = 24, READ = 16, COILS = 4, ADMM_ITERS = 300, REF_ITERS = 20000 };
#define LAMBDA_REL 0.3

typedef struct problem {
    lm_linop *normal;
    int64_t N, T;
    zc *b;
    lm_cfloat *xf, *yf; /* float scratch for E^H E */
} problem;

/* y = E^H E x, applied in single precision. */
static void normal_apply(problem *p, const zc *x, zc *y)
{
    const int64_t n = p->N * p->T;
    for (int64_t i = 0; i < n; i++)
        p->xf[i] = (lm_cfloat)x[i];
    lm_error err = {0};
    CHECK_OK(lm_linop_apply(p->normal, p->xf, p->yf, &err), &err);
    for (int64_t i = 0; i < n; i++)
        y[i] = p->yf[i];
}

static void tdiff(int64_t N, int64_t T, const zc *x, zc *y)
{
    for (int64_t t = 0; t + 1 < T; t++)
        for (int64_t v = 0; v < N; v++)
            y[t * N + v] = x[(t + 1) * N + v] - x[t * N + v];
}

static void tdiff_adj(int64_t N, int64_t T, const zc *y, zc *x)
{
    for (int64_t t = 0; t < T; t++)
        for (int64_t v = 0; v < N; v++)
            x[t * N + v] = (t > 0 ? y[(t - 1) * N + v] : 0) - (t + 1 < T ? y[t * N + v] : 0);
}

/* F(x) up to the constant ||d||^2: x^H N x - 2 Re x^H b + lambda ||D x||_1. */
static double objective(problem *p, const zc *x, double lambda)
{
    const int64_t n = p->N * p->T, m = p->N * (p->T - 1);
    zc *nx = malloc(sizeof *nx * (size_t)n), *dx = malloc(sizeof *dx * (size_t)m);
    normal_apply(p, x, nx);
    tdiff(p->N, p->T, x, dx);
    double f = 0;
    for (int64_t i = 0; i < n; i++)
        f += creal(conj(x[i]) * nx[i]) - 2 * creal(conj(x[i]) * p->b[i]);
    for (int64_t i = 0; i < m; i++)
        f += lambda * cabs(dx[i]);
    free(nx);
    free(dx);
    return f;
}

/* Condat-Vu: x+ = x - tau (2 (N x - b) + D^H y), y+ = proj_{|.|<=lambda}(y + sigma D (2 x+ - x)),
 * tau = 1 / L, sigma = L / 8 with L = 2 ||N|| (then 1/tau - sigma ||D||^2 >= L / 2). Returns the
 * optimality residual ||2 (N x - b) + D^H y|| / ||2 b||. */
static double reference(problem *p, double lambda, zc *x)
{
    const int64_t n = p->N * p->T, m = p->N * (p->T - 1);
    zc *v = calloc((size_t)n, sizeof *v), *nx = calloc((size_t)n, sizeof *nx), *xo = calloc((size_t)n, sizeof *xo);
    zc *y = calloc((size_t)m, sizeof *y), *dy = calloc((size_t)n, sizeof *dy), *dx = calloc((size_t)m, sizeof *dx);
    /* ||N|| by power iteration */
    for (int64_t i = 0; i < n; i++)
        v[i] = 1.0 + 0.1 * (double)(i % 7);
    double norm = 0;
    for (int k = 0; k < 100; k++) {
        normal_apply(p, v, nx);
        double s = 0;
        for (int64_t i = 0; i < n; i++)
            s += pow(cabs(nx[i]), 2);
        norm = sqrt(s);
        for (int64_t i = 0; i < n; i++)
            v[i] = nx[i] / norm;
    }
    const double L = 2 * 1.05 * norm, tau = 1 / L, sigma = L / 8;
    memset(x, 0, sizeof *x * (size_t)n);
    for (int k = 0; k < REF_ITERS; k++) {
        normal_apply(p, x, nx);
        tdiff_adj(p->N, p->T, y, dy);
        for (int64_t i = 0; i < n; i++) {
            xo[i] = x[i];
            x[i] -= tau * (2 * (nx[i] - p->b[i]) + dy[i]);
            v[i] = 2 * x[i] - xo[i];
        }
        tdiff(p->N, p->T, v, dx);
        for (int64_t i = 0; i < m; i++) {
            const zc w = y[i] + sigma * dx[i];
            const double a = cabs(w);
            y[i] = a > lambda ? w * (lambda / a) : w;
        }
    }
    normal_apply(p, x, nx);
    tdiff_adj(p->N, p->T, y, dy);
    double r = 0, bb = 0;
    for (int64_t i = 0; i < n; i++) {
        r += pow(cabs(2 * (nx[i] - p->b[i]) + dy[i]), 2);
        bb += pow(cabs(2 * p->b[i]), 2);
    }
    free(v);
    free(nx);
    free(xo);
    free(y);
    free(dy);
    free(dx);
    return sqrt(r / bb);
}

/* lm_dyn_opts.watch: the distance to the reference after chosen iterations. */
typedef struct watch {
    const zc *ref;
    int64_t n;
    double dist[ADMM_ITERS + 1];
} watch;

static int on_iter(void *user, int iter, const lm_cfloat *x, double elapsed)
{
    (void)elapsed;
    watch *w = user;
    if (iter >= 0 && iter <= ADMM_ITERS)
        w->dist[iter] = dyn_rel_err(x, w->ref, w->n);
    return 0;
}

int main(void)
{
    lm_error err = {0};
    const int64_t n = N_EDGE, T = FRAMES;
    lm_geom g;
    lm_geom_init(&g, n, n, 1, 240);
    const int64_t N = lm_geom_voxels(&g), nn[3] = {n, n, 1};
    lm_traj *t = NULL;
    lm_sens *s = NULL;
    lm_frames *f = NULL;
    CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL2D, nn, T * SPOKES * READ, READ, &t, &err), &err);
    CHECK_OK(lm_coils_synth_sens(2, COILS, nn, &s, &err), &err);
    CHECK_OK(lm_frames_equal(t->m, T, &f, &err), &err);
    lm_kdata *k = lm_kdata_new(t->m, COILS, &err);
    if (!t || !s || !f || !k)
        return lm_test_finish("test_dyn_converge");
    for (int64_t fr = 0; fr < T; fr++) {
        lm_phantom ph;
        lm_dyn_phantom_at(2, ((double)fr + 0.5) / (double)T, &ph);
        lm_traj *ft = NULL;
        CHECK_OK(lm_frames_extract(f, fr, t, NULL, &ft, NULL, &err), &err);
        lm_kdata *fk = lm_kdata_new(ft->m, COILS, &err);
        CHECK_OK(lm_coils_synth_kspace(&ph, 2, COILS, ft, fk, &err), &err);
        for (int64_t c = 0; c < COILS; c++)
            memcpy(k->d + c * t->m + f->start[fr], fk->d + c * ft->m, sizeof *fk->d * (size_t)ft->m);
        lm_traj_free(ft);
        lm_kdata_free(fk);
    }
    lm_dyn_model *m = NULL;
    /* a CPU variant: the reference applies the model's normal operator to
     * host arrays (with a GPU, "auto" would put it on the device) */
    lm_dyn_model_desc d = {.geom = &g, .traj = t, .kdata = k, .sens = s, .frames = f, .variant = "cpu-nufft"};
    CHECK_OK(lm_dyn_model_new(&d, &m, &err), &err);
    if (!m)
        return lm_test_finish("test_dyn_converge");

    /* the ADMM solve first (it makes every frame's Q), then E^H d for the reference */
    problem p = {.N = N, .T = T};
    const int64_t nt = N * T;
    zc *ref = calloc((size_t)nt, sizeof *ref);
    watch *w = calloc(1, sizeof *w);
    w->ref = ref;
    w->n = nt;
    lm_dyn_opts o;
    lm_dyn_opts_init(&o);
    o.time = LM_DYN_TIME_TV;
    o.lambda_t = LAMBDA_REL;
    o.iters = 1;
    lm_dyn_result probe = {0};
    CHECK_OK(lm_dyn_solve(m, &o, &probe, &err), &err);
    const double lambda = LAMBDA_REL * probe.scale_t;
    CHECK_OK(lm_dyn_model_normal(m, &p.normal, &err), &err);
    lm_backend *be = lm_dyn_model_backend(m);
    lm_cfloat *bf = be->alloc(be, nt, "test b");
    CHECK_OK(lm_dyn_model_adjoint(m, bf, &err), &err);
    p.b = calloc((size_t)nt, sizeof *p.b);
    p.xf = malloc(sizeof *p.xf * (size_t)nt);
    p.yf = malloc(sizeof *p.yf * (size_t)nt);
    lm_cfloat *bh = malloc(sizeof *bh * (size_t)nt);
    be->download(be, bh, bf, sizeof *bh * (size_t)nt);
    for (int64_t i = 0; i < nt; i++)
        p.b[i] = bh[i];

    const double opt = reference(&p, lambda, ref);
    fprintf(stderr, "reference: optimality residual %.2e, F %.10g\n", opt, objective(&p, ref, lambda));
    CHECK(opt < 1e-5);

    o.iters = ADMM_ITERS;
    /* convergence at 4 CG steps per iteration and the penalty at the mean
     * diagonal: the defaults (2 steps, twice the diagonal) are D128c8's
     * early-stopping optimum and approach the minimiser more slowly */
    o.cg_iters = 4;
    o.rho = 1.0;
    o.watch = on_iter;
    o.watch_user = w;
    lm_dyn_result res = {0};
    CHECK_OK(lm_dyn_solve(m, &o, &res, &err), &err);
    if (res.x) {
        const int marks[] = {4, 8, 16, 32, 64, 128, ADMM_ITERS};
        for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
            fprintf(stderr, "ADMM iteration %3d: %.3e from the minimiser\n", marks[i], w->dist[marks[i]]);
        /* getting closer after the first iterations: never farther at
         * iteration 2j than at j */
        for (size_t i = 1; i + 1 < sizeof marks / sizeof *marks; i++)
            CHECK(w->dist[marks[i + 1]] <= w->dist[marks[i]] * 1.01);
        const double e = dyn_rel_err(res.x, ref, nt);
        zc *xa = malloc(sizeof *xa * (size_t)nt);
        for (int64_t i = 0; i < nt; i++)
            xa[i] = res.x[i];
        const double fa = objective(&p, xa, lambda), fr = objective(&p, ref, lambda);
        fprintf(stderr, "after %d: %.3e from the minimiser, F %.10g (reference %.10g, %.2e relative)\n", ADMM_ITERS,
                e, fa, fr, (fa - fr) / fabs(fr));
        CHECK(w->dist[ADMM_ITERS] < 0.5 * w->dist[16]);
        CHECK((fa - fr) / fabs(fr) < 1e-4);
        free(xa);
    }
    lm_dyn_result_clear(&res);
    lm_dyn_result_clear(&probe);
    be->release(be, bf);
    free(bh);
    free(p.b);
    free(p.xf);
    free(p.yf);
    free(ref);
    free(w);
    lm_dyn_model_free(m);
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_sens_free(s);
    lm_frames_free(f);
    return lm_test_finish("test_dyn_converge");
}
