/* ADMM over lm_linop / lm_backend / lm_cg (lm_admm.h): one source for
 * every device. */
#include "lm_admm.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

/* Outer iterations between full residual computations (lm_admm.h). */
#define LM_ADMM_REFRESH 8

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* N + rho G^H G, rho changing between x-updates. */
typedef struct xsys_state {
    lm_linop *normal, *ghg;
    double rho;
    lm_cfloat *tmp;
} xsys_state;

static lm_code xsys_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    xsys_state *s = op->state;
    lm_backend *be = op->be;
    lm_code rc = s->normal->apply(s->normal, x, y, err);
    if (rc != LM_OK)
        return rc;
    if (!s->ghg) {
        be->axpy(be, op->n_in, y, (float)s->rho, x);
        return LM_OK;
    }
    rc = s->ghg->apply(s->ghg, x, s->tmp, err);
    if (rc == LM_OK)
        be->axpy(be, op->n_in, y, (float)s->rho, s->tmp);
    return rc;
}

/* The inner CG's last cost (its monitor never cancels). */
typedef struct inner_mon {
    int calls;
    double cost;
} inner_mon;

static int inner_monitor(void *user, int iter, double rel, double cost, double elapsed)
{
    (void)iter, (void)rel, (void)elapsed;
    inner_mon *m = user;
    m->calls++;
    m->cost = cost;
    return 0;
}

lm_code lm_admm(lm_linop *normal, const lm_cfloat *b, const lm_prior *prior, lm_cfloat *x, const lm_admm_params *p,
                lm_admm_report *rep, lm_error *err)
{
    if (rep)
        *rep = (lm_admm_report){0};
    if (!normal || !b || !prior || !prior->G || !prior->prox.apply || !prior->prox.value || !x || !p)
        return lm_fail(err, LM_ERR_INVALID, "admm: missing argument");
    lm_linop *G = prior->G;
    if (!G->adjoint)
        return lm_fail(err, LM_ERR_INVALID, "admm: the prior's transform %s has no adjoint", G->name);
    if (normal->n_in != normal->n_out || G->n_in != normal->n_in || G->be != normal->be ||
        (prior->GhG && (prior->GhG->be != normal->be || prior->GhG->n_in != normal->n_in)))
        return lm_fail(err, LM_ERR_INVALID, "admm: operators of different sizes or devices");
    if (p->iters < 0 || p->cg_iters < 1)
        return lm_fail(err, LM_ERR_INVALID, "admm: %d outer and %d inner iterations (need >= 0 and >= 1)",
                       p->iters, p->cg_iters);
    if (!(p->lambda >= 0) || !isfinite(p->lambda) || !(p->rho > 0) || !isfinite(p->rho))
        return lm_fail(err, LM_ERR_INVALID, "admm: lambda %g must be >= 0 and rho %g > 0, both finite", p->lambda,
                       p->rho);
    const double t0 = now_s();
    lm_backend *be = normal->be;
    const int64_t n = normal->n_in, m = G->n_out;
    double rho = p->rho, r = 1, s = 0, cost = 0;
    int done_iters = 0, cg_total = 0;
    lm_code rc = be->check(be, err);
    if (rc != LM_OK)
        return rc;

    double *hist = lm_alloc((size_t)p->iters + 1, sizeof *hist, err, "admm history");
    if (!hist)
        return LM_ERR_NOMEM;
    xsys_state xs = {.normal = normal, .ghg = prior->GhG, .rho = p->rho};
    lm_linop sys = {.n_in = n, .n_out = n, .be = be, .name = "admm x-update", .diag = normal->diag,
                    .apply = xsys_apply, .state = &xs};
    lm_cfloat *rhs = be->alloc(be, n, "admm vectors");
    lm_cfloat *tn = be->alloc(be, n, "admm vectors");
    lm_cfloat *res = be->alloc(be, n, "admm vectors");
    lm_cfloat *z = be->alloc(be, m, "admm coefficients");
    lm_cfloat *u = be->alloc(be, m, "admm coefficients");
    lm_cfloat *gx = be->alloc(be, m, "admm coefficients");
    lm_cfloat *w = be->alloc(be, m, "admm coefficients");
    if (prior->GhG)
        xs.tmp = be->alloc(be, n, "admm vectors");
    if ((rc = be->check(be, err)) != LM_OK)
        goto done;

    const double bnorm = sqrt(be->dot(be, n, b, b));
    if (!isfinite(bnorm)) {
        rc = lm_fail(err, LM_ERR_INVALID, "admm: the right-hand side (E^H d) is not finite");
        goto done;
    }
    /* z = G x, u = 0: the constraint holds at the start */
    if (!p->warm_start)
        be->zero(be, n, x);
    /* res stays unused until the first CG fills it */
    if ((rc = lm_linop_apply(G, x, z, err)) != LM_OK)
        goto done;
    be->zero(be, m, u);
    hist[0] = 1;
    const double mu = 10, tau = 2;

    for (int it = 1; it <= p->iters; it++) {
        /* x-update: rhs = b + rho G^H (z - u) */
        be->copy(be, m, w, z);
        be->axpy(be, m, w, -1.0f, u);
        if ((rc = lm_linop_adjoint(G, w, tn, err)) != LM_OK)
            goto done;
        be->xpay(be, n, tn, (float)rho, b);
        /* CG's starting residual without applying N: rhs' - A' x =
         * res + (rhs' - rhs) - (rho' - rho) G^H G x, res = rhs - A x from the
         * last CG; recomputed in full every LM_ADMM_REFRESH iterations
         * against drift, and at the start of a warm start */
        const int carry = it > 1 && (it - 1) % LM_ADMM_REFRESH != 0;
        if (carry) {
            be->axpy(be, n, res, 1.0f, tn);
            be->axpy(be, n, res, -1.0f, rhs);
            if (rho != xs.rho) {
                if (prior->GhG && (rc = lm_linop_apply(prior->GhG, x, xs.tmp, err)) != LM_OK)
                    goto done;
                be->axpy(be, n, res, (float)-(rho - xs.rho), prior->GhG ? xs.tmp : x);
            }
        }
        be->copy(be, n, rhs, tn);
        xs.rho = rho;
        inner_mon im = {0};
        lm_cg_params cp = {.iters = p->cg_iters, .warm_start = it > 1 || p->warm_start, .monitor = inner_monitor,
                           .monitor_user = &im, .r0 = carry ? res : NULL, .r_out = res};
        lm_cg_report cr = {0};
        rc = lm_cg(&sys, rhs, x, &cp, &cr, err);
        free(cr.resid_history);
        if (rc != LM_OK)
            goto done;
        cg_total += cr.iters_done;
        if ((rc = lm_linop_apply(G, x, gx, err)) != LM_OK)
            goto done;
        /* x^H N x - 2 Re x^H b from CG's cost x^H A x - 2 Re x^H rhs */
        double data;
        if (im.calls > 0) {
            data = im.cost - rho * be->dot(be, m, gx, gx) + 2 * rho * be->dot(be, m, gx, w);
        } else {
            if ((rc = lm_linop_apply(normal, x, tn, err)) != LM_OK)
                goto done;
            data = be->dot(be, n, x, tn) - 2 * be->dot(be, n, x, b);
        }
        cost = data + p->lambda * prior->prox.value(&prior->prox, be, m, gx);

        /* z-update (the previous z kept in w), then u += G x - z */
        be->copy(be, m, w, z);
        be->copy(be, m, z, gx);
        be->axpy(be, m, z, 1.0f, u);
        prior->prox.apply(&prior->prox, be, m, z, z, p->lambda / (2 * rho));
        const double gx_norm = sqrt(be->dot(be, m, gx, gx)), z_norm = sqrt(be->dot(be, m, z, z));
        be->axpy(be, m, gx, -1.0f, z); /* gx now holds G x - z */
        const double rp = sqrt(be->dot(be, m, gx, gx));
        be->axpy(be, m, u, 1.0f, gx);
        const double scale_p = gx_norm > z_norm ? gx_norm : z_norm;
        r = scale_p > 0 ? rp / scale_p : 0;
        if (p->adaptive || p->tol > 0) {
            be->axpy(be, m, w, -1.0f, z); /* z_prev - z */
            if ((rc = lm_linop_adjoint(G, w, tn, err)) != LM_OK)
                goto done;
            const double dz = sqrt(be->dot(be, n, tn, tn));
            if ((rc = lm_linop_adjoint(G, u, tn, err)) != LM_OK)
                goto done;
            const double gu = sqrt(be->dot(be, n, tn, tn));
            s = gu > 0 ? dz / gu : dz > 0 ? 1 : 0;
        }
        if ((rc = be->check(be, err)) != LM_OK)
            goto done;
        hist[it] = r;
        done_iters = it;
        if (p->monitor && p->monitor(p->monitor_user, it, r, cost, now_s() - t0)) {
            rc = lm_fail(err, LM_ERR_CANCELLED, "admm: cancelled at iteration %d", it);
            goto done;
        }
        if (p->tol > 0 && r < p->tol && s < p->tol)
            break;
        if (p->adaptive && it < p->iters) {
            const double hi = p->rho_span > 0 ? p->rho * p->rho_span : INFINITY,
                         lo = p->rho_span > 0 ? p->rho / p->rho_span : 0;
            if (r > mu * s && rho * tau <= hi) {
                rho *= tau;
                be->scale(be, m, u, (float)(1 / tau));
            } else if (s > mu * r && rho / tau >= lo) {
                rho /= tau;
                be->scale(be, m, u, (float)tau);
            }
        }
    }
    if ((rc = be->check(be, err)) != LM_OK)
        goto done;
done:
    if (rep) {
        rep->iters_done = done_iters;
        rep->cg_iters_done = cg_total;
        rep->rel_resid = r;
        rep->dual_resid = s;
        rep->rho = rho;
        rep->cost = cost;
        if (rc == LM_OK) {
            rep->resid_history = hist;
            hist = NULL;
        }
    }
    free(hist);
    be->release(be, xs.tmp);
    be->release(be, w);
    be->release(be, gx);
    be->release(be, u);
    be->release(be, z);
    be->release(be, res);
    be->release(be, tn);
    be->release(be, rhs);
    return rc;
}
