/* Automatic lambda (lm_lambda.h, docs/lambda.md): the noise estimate, the
 * Tikhonov trial solver with its Hutchinson trace, and the three searches
 * over one "solve at lambda" callback. */
#include "lm_lambda.h"

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lm_cg.h"

const char *lm_lambda_criterion_name(lm_lambda_criterion c)
{
    switch (c) {
    case LM_LAMBDA_DEFAULT: return "default";
    case LM_LAMBDA_DISCREPANCY: return "discrepancy";
    case LM_LAMBDA_GCV: return "gcv";
    }
    return "unknown";
}

lm_code lm_lambda_criterion_parse(const char *s, lm_lambda_criterion *out, lm_error *err)
{
    static const lm_lambda_criterion all[] = {LM_LAMBDA_DEFAULT, LM_LAMBDA_DISCREPANCY, LM_LAMBDA_GCV};
    for (size_t i = 0; s && i < sizeof all / sizeof all[0]; i++)
        if (strcmp(s, lm_lambda_criterion_name(all[i])) == 0) {
            *out = all[i];
            return LM_OK;
        }
    return lm_fail(err, LM_ERR_INVALID, "lambda criterion '%s' is unknown (default, discrepancy, gcv)",
                   s ? s : "");
}

/* Measured on B64n/B64c8n against sweeps (docs/lambda.md): the discrepancy
 * meets the 10 % target for identity and gradient at 3 trial solves; with
 * the anatomical prior the best image fits the data below the noise level
 * (discrepancy: 45.3 % against 34.6 %), and GCV finds it (33.8 %). */
lm_lambda_criterion lm_lambda_default_criterion(lm_reg_kind reg)
{
    return reg == LM_REG_ANATOMICAL ? LM_LAMBDA_GCV : LM_LAMBDA_DISCREPANCY;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- noise from the outer k-space ---------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of v[0..n) (reorders v). */
static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* sigma^2 of one channel's samples v[0..n) (re, im interleaved; reordered):
 * MAD of the parts; Gaussian MAD = 0.6745 sd, each part sd = sigma / sqrt 2. */
static double mad_sigma2(double *v, size_t n)
{
    const double med = median(v, n);
    for (size_t i = 0; i < n; i++)
        v[i] = fabs(v[i] - med);
    const double sd = median(v, n) / 0.6744897501960817;
    return 2 * sd * sd;
}

lm_code lm_lambda_noise_outer(const lm_geom *g, const lm_traj *t, const lm_kdata *k, double frac,
                              lm_lambda_noise *out, lm_error *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!g || !t || !k || !out || !t->k || !k->d || t->m != k->m || k->ncoils < 1)
        return lm_fail(err, LM_ERR_INVALID, "noise estimate: missing or mismatched trajectory and k-space");
    if (!(frac > 0 && frac <= 1))
        return lm_fail(err, LM_ERR_INVALID, "noise estimate: fraction %g must be in (0, 1]", frac);
    const int64_t m = t->m;
    double *r = lm_alloc((size_t)m, sizeof *r, err, "noise estimate");
    double *sorted = r ? lm_alloc((size_t)m, sizeof *sorted, err, "noise estimate") : NULL;
    if (!sorted) {
        free(r);
        return LM_ERR_NOMEM;
    }
    for (int64_t j = 0; j < m; j++) {
        double s = 0;
        for (int a = 0; a < 3; a++)
            if (g->n[a] > 1) {
                const double u = t->k[3 * j + a] / (0.5 * (double)g->n[a]);
                s += u * u;
            }
        r[j] = sorted[j] = s;
    }
    qsort(sorted, (size_t)m, sizeof *sorted, cmp_double);
    const double thr = sorted[m - (int64_t)ceil(frac * (double)m)];
    free(sorted);
    int64_t count = 0;
    for (int64_t j = 0; j < m; j++)
        count += r[j] >= thr;
    if (count < 32) {
        free(r);
        return lm_fail(err, LM_ERR_INVALID, "noise estimate: only %lld samples in the outer %.0f %% of k-space "
                       "(need 32); give noise scans", (long long)count, 100 * frac);
    }
    double *v = lm_alloc((size_t)(2 * count), sizeof *v, err, "noise estimate");
    if (!v) {
        free(r);
        return LM_ERR_NOMEM;
    }
    double s2 = 0;
    lm_code rc = LM_OK;
    for (int64_t c = 0; c < k->ncoils && rc == LM_OK; c++) {
        const lm_cfloat *d = k->d + c * m;
        size_t n = 0;
        for (int64_t j = 0; j < m; j++)
            if (r[j] >= thr) {
                v[n++] = crealf(d[j]);
                v[n++] = cimagf(d[j]);
            }
        const double sig2 = mad_sigma2(v, n);
        if (!(sig2 > 0) || !isfinite(sig2))
            rc = lm_fail(err, LM_ERR_INVALID, "noise estimate: channel %lld has no noise in its outer k-space "
                         "(noiseless data?): give noise scans or a lambda", (long long)c);
        s2 += sig2;
    }
    free(v);
    free(r);
    if (rc != LM_OK)
        return rc;
    out->sigma2_sum = s2;
    out->sigma = sqrt(s2 / (double)k->ncoils);
    out->samples = count;
    return LM_OK;
}

/* ---- the Tikhonov trial solver -------------------------------------------- */

/* N + c R with c changed between solves (lm_linop_sum fixes c). */
typedef struct sys_state {
    lm_linop *n, *r;   /* r NULL: identity */
    double c;
    lm_cfloat *tmp;
} sys_state;

static lm_code sys_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    sys_state *s = op->state;
    lm_code rc = s->n->apply(s->n, x, y, err);
    if (rc != LM_OK || s->c == 0)
        return rc;
    if (!s->r) {
        op->be->axpy(op->be, op->n_out, y, (float)s->c, x);
        return LM_OK;
    }
    rc = s->r->apply(s->r, x, s->tmp, err);
    if (rc == LM_OK)
        op->be->axpy(op->be, op->n_out, y, (float)s->c, s->tmp);
    return rc;
}

struct lm_lambda_tik {
    lm_lambda_tik_desc d;
    lm_backend *be;
    int64_t n;
    sys_state ss;
    lm_linop sys;
    lm_cfloat *x, *tmp;
    int have_x;
    int probes;
    lm_cfloat **zb, **u;   /* E^H z and (N + c R)^-1 E^H z per probe */
    int have_u;
};

void lm_lambda_tik_free(lm_lambda_tik *t)
{
    if (!t)
        return;
    if (t->be) {
        for (int p = 0; p < t->probes; p++) {
            if (t->zb)
                t->be->release(t->be, t->zb[p]);
            if (t->u)
                t->be->release(t->be, t->u[p]);
        }
        t->be->release(t->be, t->x);
        t->be->release(t->be, t->tmp);
        t->be->release(t->be, t->ss.tmp);
    }
    free(t->zb);
    free(t->u);
    free(t);
}

/* splitmix64: a fixed, portable sequence for the probes. */
static uint64_t mix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

lm_code lm_lambda_tik_new(const lm_lambda_tik_desc *d, lm_lambda_tik **out, lm_error *err)
{
    *out = NULL;
    if (!d || !d->normal || !d->b || d->normal->n_in != d->normal->n_out)
        return lm_fail(err, LM_ERR_INVALID, "lambda search: missing normal operator or right-hand side");
    if (d->reg && (d->reg->be != d->normal->be || d->reg->n_in != d->normal->n_in))
        return lm_fail(err, LM_ERR_INVALID, "lambda search: regulariser and normal operator differ in size or device");
    if (d->iters < 1 || d->probes < 0 || d->probes > 64)
        return lm_fail(err, LM_ERR_INVALID, "lambda search: %d iterations, %d probes", d->iters, d->probes);
    if (d->probes > 0 && (!d->adjoint || d->m < 1 || d->ncoils < 1))
        return lm_fail(err, LM_ERR_INVALID, "lambda search: probes need the adjoint and the data's shape");
    lm_lambda_tik *t = lm_calloc(1, sizeof *t, err, "lambda search");
    if (!t)
        return LM_ERR_NOMEM;
    t->d = *d;
    t->be = d->normal->be;
    t->n = d->normal->n_in;
    lm_backend *be = t->be;
    t->ss = (sys_state){.n = d->normal, .r = d->reg};
    t->sys = (lm_linop){.n_in = t->n, .n_out = t->n, .be = be, .name = "E^H E + c R", .apply = sys_apply,
                        .state = &t->ss, .diag = d->normal->diag};
    t->x = be->alloc(be, t->n, "lambda search");
    t->tmp = be->alloc(be, t->n, "lambda search");
    if (d->reg)
        t->ss.tmp = be->alloc(be, t->n, "lambda search");
    lm_code rc = be->check(be, err);
    if (rc == LM_OK && d->probes > 0) {
        t->zb = lm_calloc((size_t)d->probes, sizeof *t->zb, err, "lambda probes");
        t->u = t->zb ? lm_calloc((size_t)d->probes, sizeof *t->u, err, "lambda probes") : NULL;
        rc = t->u ? LM_OK : LM_ERR_NOMEM;
        if (rc == LM_OK)
            t->probes = d->probes;
        lm_kdata *z = rc == LM_OK ? lm_kdata_new(d->m, d->ncoils, err) : NULL;
        if (rc == LM_OK && !z)
            rc = LM_ERR_NOMEM;
        uint64_t seed = 0x4C41524D4F52ull; /* fixed: runs are reproducible */
        const float h = (float)M_SQRT1_2;
        for (int p = 0; rc == LM_OK && p < d->probes; p++) {
            for (int64_t j = 0; j < d->m * d->ncoils; j++) {
                const uint64_t bits = mix64(&seed);
                z->d[j] = CMPLXF(bits & 1 ? h : -h, bits & 2 ? h : -h);
            }
            t->zb[p] = be->alloc(be, t->n, "lambda probes");
            t->u[p] = be->alloc(be, t->n, "lambda probes");
            rc = be->check(be, err);
            if (rc == LM_OK)
                rc = d->adjoint(d->adjoint_user, z, t->zb[p], err);
        }
        lm_kdata_free(z);
    }
    if (rc != LM_OK) {
        lm_lambda_tik_free(t);
        return rc;
    }
    *out = t;
    return LM_OK;
}

const lm_cfloat *lm_lambda_tik_solution(const lm_lambda_tik *t) { return t->x; }

static lm_code cg_run(lm_lambda_tik *t, const lm_cfloat *b, lm_cfloat *x, int warm, int *iters, lm_error *err)
{
    lm_cg_params p = {.iters = t->d.iters, .tol = t->d.tol, .warm_start = warm, .monitor = t->d.monitor,
                      .monitor_user = t->d.monitor_user};
    lm_cg_report rep = {0};
    lm_code rc = lm_cg(&t->sys, b, x, &p, &rep, err);
    *iters += rep.iters_done;
    free(rep.resid_history);
    return rc;
}

lm_code lm_lambda_tik_solve(void *user, double lambda, int want_dof, lm_lambda_eval *ev, lm_error *err)
{
    lm_lambda_tik *t = user;
    lm_backend *be = t->be;
    *ev = (lm_lambda_eval){.dof = NAN};
    if (!(lambda >= 0) || !isfinite(lambda))
        return lm_fail(err, LM_ERR_INVALID, "lambda search: lambda %g must be finite and >= 0", lambda);
    t->ss.c = lambda * t->d.normal->diag;
    lm_code rc = cg_run(t, t->d.b, t->x, t->have_x, &ev->iters, err);
    if (rc != LM_OK)
        return rc;
    t->have_x = 1;
    /* ||E x - d||^2 = x^H N x - 2 Re x^H b + ||d||^2: no forward transform */
    rc = lm_linop_apply(t->d.normal, t->x, t->tmp, err);
    if (rc != LM_OK)
        return rc;
    const double xnx = be->dot(be, t->n, t->x, t->tmp), xb = be->dot(be, t->n, t->x, t->d.b);
    ev->resid = fmax(xnx - 2 * xb + t->d.d_energy, 0);
    if (t->d.reg) {
        rc = lm_linop_apply(t->d.reg, t->x, t->tmp, err);
        if (rc != LM_OK)
            return rc;
        ev->penalty = be->dot(be, t->n, t->x, t->tmp);
    } else {
        ev->penalty = be->dot(be, t->n, t->x, t->x);
    }
    if (want_dof && t->probes > 0) {
        double s = 0;
        for (int p = 0; p < t->probes && rc == LM_OK; p++) {
            rc = cg_run(t, t->zb[p], t->u[p], t->have_u, &ev->iters, err);
            if (rc == LM_OK)
                s += be->dot(be, t->n, t->zb[p], t->u[p]);
        }
        if (rc != LM_OK)
            return rc;
        t->have_u = 1;
        ev->dof = s / t->probes;
    }
    return be->check(be, err);
}

/* ---- the searches ---------------------------------------------------------- */

#define MAX_TRIALS 48

typedef struct trial {
    double lam;
    lm_lambda_eval ev;
    int has_dof;
} trial;

typedef struct search {
    const lm_lambda_search *s;
    lm_lambda_result *r;
    trial tr[MAX_TRIALS];
    int n;
    double lo, hi;
} search;

/* The trial at lam, solved once (repeats come from the table). */
static lm_code eval_at(search *S, double lam, int want_dof, const trial **out, lm_error *err)
{
    lam = fmin(fmax(lam, S->lo), S->hi);
    for (int i = 0; i < S->n; i++)
        if (fabs(S->tr[i].lam - lam) <= 1e-9 * lam && (S->tr[i].has_dof || !want_dof)) {
            *out = &S->tr[i];
            return LM_OK;
        }
    if (S->n == MAX_TRIALS)
        return lm_fail(err, LM_ERR_INVALID, "lambda search: more than %d trials", MAX_TRIALS);
    trial *t = &S->tr[S->n];
    *t = (trial){.lam = lam, .has_dof = want_dof};
    lm_code rc = S->s->solve(S->s->user, lam, want_dof, &t->ev, err);
    if (rc != LM_OK)
        return rc;
    if (!isfinite(t->ev.resid) || !isfinite(t->ev.penalty))
        return lm_fail(err, LM_ERR_INVALID, "lambda search: the reconstruction at lambda %g is not finite", lam);
    if (want_dof && !isfinite(t->ev.dof))
        return lm_fail(err, LM_ERR_UNSUPPORTED, "lambda search: this solver gives no trace of the influence "
                       "matrix (GCV): use the discrepancy principle");
    S->n++;
    S->r->solves++;
    S->r->iters += t->ev.iters;
    *out = t;
    return LM_OK;
}

static void finish(search *S, const trial *t, double value)
{
    S->r->lambda = t->lam;
    S->r->at = t->ev;
    S->r->value = value;
}

/* Morozov: resid(lambda) = tau M sigma^2. resid grows with lambda, so
 * bracket the root in log lambda by decades from lambda = 10, then regula
 * falsi (Illinois) on log(resid / target) in log lambda. The error against
 * the truth is flat over a factor of ~3 around its minimum on the benchmark
 * problems (docs/lambda.md), so 5 % in the residual is enough. */
static lm_code search_discrepancy(search *S, lm_error *err)
{
    const double tau = S->s->tau > 0 ? S->s->tau : LM_LAMBDA_TAU;
    const double target = tau * S->s->noise_power;
    if (!(target > 0) || !isfinite(target))
        return lm_fail(err, LM_ERR_INVALID, "lambda search: the discrepancy principle needs the noise level "
                       "(noise scans, or noise in the outer k-space)");
    const trial *t;
    double lam = fmin(fmax(S->s->start > 0 ? S->s->start : 10.0, S->lo), S->hi);
    lm_code rc = eval_at(S, lam, 0, &t, err);
    if (rc != LM_OK)
        return rc;
    double g = log(t->ev.resid / target);
    double ta, tb, ga, gb; /* bracket in log lambda: g(ta) < 0 < g(tb) */
    if (g > 0) {
        tb = log(lam), gb = g;
        for (;;) {
            if (lam <= S->lo) { /* over the target everywhere: the noise is overestimated */
                S->r->clamped = 1;
                finish(S, t, t->ev.resid / target);
                return LM_OK;
            }
            lam = fmax(lam / 10, S->lo);
            if ((rc = eval_at(S, lam, 0, &t, err)) != LM_OK)
                return rc;
            g = log(t->ev.resid / target);
            if (g <= 0)
                break;
            tb = log(lam), gb = g;
        }
        ta = log(lam), ga = g;
    } else {
        ta = log(lam), ga = g;
        for (;;) {
            if (lam >= S->hi) { /* under the target everywhere: the data fit worse than the noise */
                S->r->clamped = 1;
                finish(S, t, t->ev.resid / target);
                return LM_OK;
            }
            lam = fmin(lam * 10, S->hi);
            if ((rc = eval_at(S, lam, 0, &t, err)) != LM_OK)
                return rc;
            g = log(t->ev.resid / target);
            if (g >= 0)
                break;
            ta = log(lam), ga = g;
        }
        tb = log(lam), gb = g;
    }
    /* regula falsi with the Illinois halving */
    int side = 0;
    const double gtol = log(1 + (S->s->resid_tol > 0 ? S->s->resid_tol : 0.05));
    for (int it = 0; it < 10 && fabs(g) > gtol && tb - ta > log(1.1); it++) {
        const double tc = ta - ga * (tb - ta) / (gb - ga);
        if ((rc = eval_at(S, exp(tc), 0, &t, err)) != LM_OK)
            return rc;
        g = log(t->ev.resid / target);
        if (g < 0) {
            ta = tc, ga = g;
            if (side == -1)
                gb /= 2;
            side = -1;
        } else {
            tb = tc, gb = g;
            if (side == 1)
                ga /= 2;
            side = 1;
        }
    }
    /* the trial closest to the target */
    const trial *best = &S->tr[0];
    for (int i = 1; i < S->n; i++)
        if (fabs(log(S->tr[i].ev.resid / target)) < fabs(log(best->ev.resid / target)))
            best = &S->tr[i];
    finish(S, best, best->ev.resid / target);
    return LM_OK;
}

static double gcv_of(const search *S, const trial *t)
{
    const double m = S->s->m_total, den = m - t->ev.dof;
    return den > 0 ? m * t->ev.resid / (den * den) : INFINITY;
}

/* GCV: half-decade grid from the top down (warm starts go from smooth to
 * sharp), stopped two points after the minimum has been passed, then a
 * golden-section refinement over the minimum's two neighbours. */
static lm_code search_gcv(search *S, lm_error *err)
{
    if (!(S->s->m_total > 0))
        return lm_fail(err, LM_ERR_INVALID, "lambda search: GCV needs the data's size");
    const double top = log10(fmin(S->hi, 1e3)), bottom = log10(fmax(S->lo, 1e-2));
    const trial *t, *best = NULL;
    double tbest = 0, rises = 0;
    lm_code rc;
    for (double e = top; e >= bottom - 1e-9; e -= 0.5) {
        if ((rc = eval_at(S, pow(10.0, e), 1, &t, err)) != LM_OK)
            return rc;
        if (!best || gcv_of(S, t) < gcv_of(S, best))
            best = t, tbest = log(t->lam), rises = 0;
        else if (++rises >= 2)
            break;
    }
    const double h = 0.5 * log(10.0), gr = 0.5 * (sqrt(5.0) - 1);
    double a = fmax(tbest - h, log(S->lo)), b = fmin(tbest + h, log(S->hi));
    double c = b - gr * (b - a), d = a + gr * (b - a), fc, fd;
    if ((rc = eval_at(S, exp(c), 1, &t, err)) != LM_OK)
        return rc;
    fc = gcv_of(S, t);
    if ((rc = eval_at(S, exp(d), 1, &t, err)) != LM_OK)
        return rc;
    fd = gcv_of(S, t);
    for (int it = 0; it < 4; it++) {
        if (fc < fd) {
            b = d, d = c, fd = fc;
            c = b - gr * (b - a);
            if ((rc = eval_at(S, exp(c), 1, &t, err)) != LM_OK)
                return rc;
            fc = gcv_of(S, t);
        } else {
            a = c, c = d, fc = fd;
            d = a + gr * (b - a);
            if ((rc = eval_at(S, exp(d), 1, &t, err)) != LM_OK)
                return rc;
            fd = gcv_of(S, t);
        }
    }
    for (int i = 0; i < S->n; i++)
        if (S->tr[i].has_dof && gcv_of(S, &S->tr[i]) < gcv_of(S, best))
            best = &S->tr[i];
    S->r->clamped = best->lam <= S->lo * (1 + 1e-9) || best->lam >= S->hi * (1 - 1e-9);
    finish(S, best, gcv_of(S, best));
    return LM_OK;
}

lm_code lm_lambda_search_run(const lm_lambda_search *s, lm_lambda_result *r, lm_error *err)
{
    if (!r)
        return lm_fail(err, LM_ERR_INVALID, "lambda search: missing result");
    memset(r, 0, sizeof *r);
    if (!s || !s->solve)
        return lm_fail(err, LM_ERR_INVALID, "lambda search: missing solver");
    search *S = lm_calloc(1, sizeof *S, err, "lambda search");
    if (!S)
        return LM_ERR_NOMEM;
    S->s = s;
    S->r = r;
    S->lo = s->lo > 0 ? s->lo : LM_LAMBDA_MIN;
    S->hi = s->hi > 0 ? s->hi : LM_LAMBDA_MAX;
    lm_code rc = LM_OK;
    if (!(S->lo < S->hi) || !isfinite(S->hi))
        rc = lm_fail(err, LM_ERR_INVALID, "lambda search: range %g .. %g is empty", S->lo, S->hi);
    else if (s->criterion == LM_LAMBDA_DISCREPANCY)
        rc = search_discrepancy(S, err);
    else if (s->criterion == LM_LAMBDA_GCV)
        rc = search_gcv(S, err);
    else
        rc = lm_fail(err, LM_ERR_INVALID, "lambda search: criterion %s is not a search (resolve the default first)",
                     lm_lambda_criterion_name(s->criterion));
    r->criterion = s->criterion;
    free(S);
    if (rc != LM_OK) {
        const int solves = r->solves, iters = r->iters;
        memset(r, 0, sizeof *r);
        r->solves = solves, r->iters = iters;
    }
    return rc;
}

/* ---- for a reconstruction ------------------------------------------------- */

static lm_code enc_adjoint(void *user, const lm_kdata *z, lm_cfloat *x, lm_error *err)
{
    return lm_encoding_adjoint(user, z, x, NULL, err);
}

/* Hutchinson probes for GCV: the trace of a projection-like H of rank up
 * to N has relative standard deviation ~ sqrt(2 / tr H) per probe; 2 keep
 * it under 2 % on the benchmark problems (tr H > 2000). */
#define GCV_PROBES 2

lm_code lm_lambda_auto(const lm_lambda_auto_desc *d, lm_lambda_auto_result *out, lm_error *err)
{
    if (!out)
        return lm_fail(err, LM_ERR_INVALID, "automatic lambda: missing result");
    memset(out, 0, sizeof *out);
    out->sigma_source = "";
    if (!d || !d->enc || !d->geom || !d->traj || !d->k || d->k->ncoils != lm_encoding_coils(d->enc))
        return lm_fail(err, LM_ERR_INVALID, "automatic lambda: missing encoding or data, or channels differ");
    const double t0 = now_s();
    lm_lambda_criterion crit = d->criterion == LM_LAMBDA_DEFAULT ? lm_lambda_default_criterion(d->reg) : d->criterion;
    const double mt = (double)d->k->m * (double)d->k->ncoils;
    double noise_power = 0, sigma = 0;
    if (d->solve && crit != LM_LAMBDA_DISCREPANCY)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "automatic lambda: %s needs a linear solver (the Tikhonov CG); "
                       "a non-quadratic prior takes the discrepancy principle", lm_lambda_criterion_name(crit));
    char why[160] = "";
    lm_code rc = LM_OK;
    if (crit == LM_LAMBDA_DISCREPANCY) {
        if (d->whitened) {
            sigma = 1, noise_power = mt;
            out->sigma_source = "noise scans (prewhitened)";
        } else {
            lm_lambda_noise nz;
            rc = lm_lambda_noise_outer(d->geom, d->traj, d->k, LM_LAMBDA_OUTER_FRAC, &nz, err);
            if (rc == LM_OK) {
                sigma = nz.sigma;
                noise_power = nz.sigma2_sum * (double)d->k->m;
                out->sigma_source = "outer k-space";
            } else if (d->criterion == LM_LAMBDA_DEFAULT && rc != LM_ERR_NOMEM) {
                /* the default asks for no noise information: say why and use GCV */
                snprintf(why, sizeof why, "%.120s", err ? err->msg : "");
                lm_error_clear(err);
                crit = LM_LAMBDA_GCV;
                rc = LM_OK;
            }
        }
    }
    if (rc == LM_OK && crit == LM_LAMBDA_GCV && d->solve)
        rc = lm_fail(err, LM_ERR_UNSUPPORTED, "automatic lambda: no noise level for the discrepancy principle (%s), "
                     "and a non-quadratic prior has no GCV", why);
    if (rc == LM_OK && d->solve) { /* the caller's trial solver */
        lm_lambda_search s = {.criterion = crit, .solve = d->solve, .user = d->solve_user, .m_total = mt,
                              .noise_power = noise_power, .lo = d->lo, .hi = d->hi, .start = d->start,
                              .tau = d->tau, .resid_tol = d->resid_tol};
        rc = lm_lambda_search_run(&s, &out->r, err);
        out->time_s = now_s() - t0;
        if (rc != LM_OK)
            return rc;
        out->sigma = sigma;
        snprintf(out->note, sizeof out->note, "discrepancy, sigma %.3g from %s%s", sigma, out->sigma_source,
                 out->r.clamped ? "; not met in range, clamped" : "");
        return LM_OK;
    }
    lm_linop *normal = NULL;
    lm_backend *be = lm_encoding_backend(d->enc);
    const int64_t nv = lm_encoding_voxels(d->enc);
    lm_cfloat *b = NULL;
    lm_lambda_tik *tik = NULL;
    if (rc == LM_OK)
        rc = lm_encoding_normal_op(d->enc, &normal, err);
    if (rc == LM_OK) {
        b = be->alloc(be, nv, "E^H d");
        rc = be->check(be, err);
    }
    if (rc == LM_OK)
        rc = lm_encoding_adjoint(d->enc, d->k, b, NULL, err);
    if (rc == LM_OK) {
        double de = 0;
        for (int64_t j = 0; j < d->k->m * d->k->ncoils; j++)
            de += (double)crealf(d->k->d[j]) * crealf(d->k->d[j]) + (double)cimagf(d->k->d[j]) * cimagf(d->k->d[j]);
        lm_lambda_tik_desc td = {.normal = normal, .reg = d->reg == LM_REG_IDENTITY ? NULL : d->reg_op, .b = b,
                                 .d_energy = de, .iters = d->iters > 0 ? d->iters : 60,
                                 .tol = d->tol > 0 && d->tol < LM_LAMBDA_TRIAL_TOL ? d->tol : LM_LAMBDA_TRIAL_TOL,
                                 .probes = crit == LM_LAMBDA_GCV ? GCV_PROBES : 0, .m = d->k->m,
                                 .ncoils = d->k->ncoils, .adjoint = enc_adjoint, .adjoint_user = d->enc,
                                 .monitor = d->monitor, .monitor_user = d->monitor_user};
        if (d->reg != LM_REG_IDENTITY && !d->reg_op)
            rc = lm_fail(err, LM_ERR_INVALID, "automatic lambda: the %s regulariser's operator is missing",
                         d->reg == LM_REG_GRADIENT ? "gradient" : "anatomical");
        else
            rc = lm_lambda_tik_new(&td, &tik, err);
    }
    if (rc == LM_OK) {
        lm_lambda_search s = {.criterion = crit, .solve = lm_lambda_tik_solve, .user = tik, .m_total = mt,
                              .noise_power = noise_power};
        rc = lm_lambda_search_run(&s, &out->r, err);
    }
    lm_lambda_tik_free(tik);
    if (b)
        be->release(be, b);
    out->time_s = now_s() - t0;
    if (rc != LM_OK)
        return rc;
    out->sigma = crit == LM_LAMBDA_DISCREPANCY ? sigma : 0;
    if (crit == LM_LAMBDA_DISCREPANCY)
        snprintf(out->note, sizeof out->note, "discrepancy, sigma %.3g from %s%s", sigma, out->sigma_source,
                 out->r.clamped ? "; not met in range, clamped" : "");
    else
        snprintf(out->note, sizeof out->note, "gcv%s%s%s", out->r.clamped ? ", clamped to the range" : "",
                 why[0] ? "; no noise level: " : "", why);
    return LM_OK;
}
