/* Conjugate gradient over lm_linop and lm_backend (lm_cg.h): one source for
 * every device. */
#include "lm_cg.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The back end's fused update, or its steps one by one (a back end
 * without one, such as a test's). */
static void cg_update(lm_backend *be, int64_t n, float alpha, lm_cfloat *x, const lm_cfloat *pv, lm_cfloat *r,
                      const lm_cfloat *ap, const lm_cfloat *b, double sums[3])
{
    if (be->cg_update) {
        be->cg_update(be, n, alpha, x, pv, r, ap, b, sums);
        return;
    }
    be->axpy(be, n, x, alpha, pv);
    be->axpy(be, n, r, -alpha, ap);
    sums[0] = be->dot(be, n, r, r);
    sums[1] = be->dot(be, n, x, r);
    sums[2] = be->dot(be, n, x, b);
}

lm_code lm_cg(lm_linop *A, const lm_cfloat *b, lm_cfloat *x, const lm_cg_params *p, lm_cg_report *rep,
              lm_error *err)
{
    if (rep) {
        rep->iters_done = 0;
        rep->rel_resid = 0;
        rep->resid_history = NULL;
    }
    if (!A || !b || !x || !p)
        return lm_fail(err, LM_ERR_INVALID, "cg: missing argument");
    if (p->iters < 0)
        return lm_fail(err, LM_ERR_INVALID, "cg: iteration count %d is negative", p->iters);
    if (A->n_in != A->n_out)
        return lm_fail(err, LM_ERR_INVALID, "cg: the operator is not square");
    const double t0 = now_s();
    lm_backend *be = A->be;
    const int64_t n = A->n_in;
    lm_code rc = be->check(be, err);
    if (rc != LM_OK)
        return rc;

    double *hist = lm_alloc((size_t)p->iters + 1, sizeof *hist, err, "cg history");
    if (!hist)
        return LM_ERR_NOMEM;
    lm_cfloat *r = be->alloc(be, n, "cg vectors");
    lm_cfloat *pv = be->alloc(be, n, "cg vectors");
    lm_cfloat *ap = be->alloc(be, n, "cg vectors");
    if ((rc = be->check(be, err)) != LM_OK)
        goto done;

    const double bnorm = sqrt(be->dot(be, n, b, b));
    if ((rc = be->check(be, err)) != LM_OK)
        goto done;
    if (!isfinite(bnorm)) {
        rc = lm_fail(err, LM_ERR_INVALID, "cg: the right-hand side (F^H d) is not finite");
        goto done;
    }
    if (bnorm == 0) {
        /* A is positive semidefinite: 0 solves it (the minimum-norm answer). */
        be->zero(be, n, x);
        if (p->r_out)
            be->zero(be, n, p->r_out);
        hist[0] = 0;
        if ((rc = be->check(be, err)) == LM_OK && rep) {
            rep->resid_history = hist;
            hist = NULL;
        }
        goto done;
    }

    if (p->warm_start && p->r0) {
        be->copy(be, n, r, p->r0);
    } else if (p->warm_start) {
        if ((rc = lm_linop_apply(A, x, ap, err)) != LM_OK)
            goto done;
        be->copy(be, n, r, b);
        be->axpy(be, n, r, -1.0f, ap);
    } else {
        be->zero(be, n, x);
        be->copy(be, n, r, b);
    }
    be->copy(be, n, pv, r);
    double rr = be->dot(be, n, r, r);
    if ((rc = be->check(be, err)) != LM_OK)
        goto done;
    double rel = sqrt(rr) / bnorm;
    hist[0] = rel;
    int done_iters = 0;

    for (int it = 1; it <= p->iters && !(p->tol > 0 && rel < p->tol); it++) {
        if ((rc = lm_linop_apply(A, pv, ap, err)) != LM_OK)
            goto done;
        const double pap = be->dot(be, n, pv, ap);
        if (!(pap > 0))
            break; /* p in the null space (or rounding): no further descent */
        const float alpha = (float)(rr / pap);
        double sums[3]; /* <r, r>, Re <x, r>, Re <x, b> after the step */
        cg_update(be, n, alpha, x, pv, r, ap, b, sums);
        const double rr_new = sums[0];
        /* cost = x^H A x - 2 Re x^H b = -Re <x, r + b> */
        const double cost = -(sums[1] + sums[2]);
        if ((rc = be->check(be, err)) != LM_OK)
            goto done;
        rel = sqrt(rr_new) / bnorm;
        hist[it] = rel;
        done_iters = it;
        if (p->monitor && p->monitor(p->monitor_user, it, rel, cost, now_s() - t0)) {
            if (rep) {
                rep->iters_done = it;
                rep->rel_resid = rel;
            }
            rc = lm_fail(err, LM_ERR_CANCELLED, "cg: cancelled at iteration %d", it);
            goto done;
        }
        be->xpay(be, n, pv, (float)(rr_new / rr), r);
        rr = rr_new;
    }
    if (p->r_out)
        be->copy(be, n, p->r_out, r);
    if ((rc = be->check(be, err)) != LM_OK)
        goto done;
    if (rep) {
        rep->iters_done = done_iters;
        rep->rel_resid = rel;
        rep->resid_history = hist;
        hist = NULL;
    }
done:
    free(hist);
    be->release(be, ap);
    be->release(be, pv);
    be->release(be, r);
    return rc;
}
