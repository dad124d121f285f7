/* LSQR over lm_linop and lm_backend (lm_lsqr.h), with the damped
 * bidiagonalisation of Paige and Saunders (ACM TOMS 8, 1982), section 4. */
#include "lm_lsqr.h"

#include <math.h>

static double norm2(lm_backend *be, int64_t n, const lm_cfloat *x)
{
    return sqrt(be->dot(be, n, x, x));
}

lm_code lm_lsqr(lm_linop *A, const lm_cfloat *b, lm_cfloat *x, const lm_lsqr_params *p, lm_lsqr_report *rep,
                lm_error *err)
{
    if (rep)
        *rep = (lm_lsqr_report){0};
    if (!A || !b || !x || !p)
        return lm_fail(err, LM_ERR_INVALID, "lsqr: missing argument");
    if (!A->adjoint)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "lsqr: %s has no adjoint", A->name);
    if (p->iters < 0 || !(p->damp >= 0))
        return lm_fail(err, LM_ERR_INVALID, "lsqr: iterations %d or damping %g out of range", p->iters, p->damp);
    lm_backend *be = A->be;
    const int64_t n = A->n_in, m = A->n_out;
    lm_cfloat *u = be->alloc(be, m, "lsqr vectors");
    lm_cfloat *au = be->alloc(be, m, "lsqr vectors");
    lm_cfloat *v = be->alloc(be, n, "lsqr vectors");
    lm_cfloat *av = be->alloc(be, n, "lsqr vectors");
    lm_cfloat *w = be->alloc(be, n, "lsqr vectors");
    lm_code rc = be->check(be, err);
    if (rc != LM_OK)
        goto done;
    be->zero(be, n, x);
    be->copy(be, m, u, b);
    double beta = norm2(be, m, u);
    if (!isfinite(beta)) {
        rc = lm_fail(err, LM_ERR_INVALID, "lsqr: the data are not finite");
        goto done;
    }
    if (beta == 0)
        goto done; /* x = 0 */
    be->scale(be, m, u, (float)(1.0 / beta));
    if ((rc = lm_linop_adjoint(A, u, v, err)) != LM_OK)
        goto done;
    double alpha = norm2(be, n, v);
    if (alpha == 0)
        goto done; /* b is orthogonal to the range of A */
    be->scale(be, n, v, (float)(1.0 / alpha));
    be->copy(be, n, w, v);
    double phibar = beta, rhobar = alpha;
    const double atb = alpha * beta; /* ||A^H b|| */
    for (int it = 1; it <= p->iters; it++) {
        /* bidiagonalisation: beta u = A v - alpha u, alpha v = A^H u - beta v */
        if ((rc = lm_linop_apply(A, v, au, err)) != LM_OK)
            break;
        be->xpay(be, m, u, (float)-alpha, au);
        beta = norm2(be, m, u);
        if (beta > 0) {
            be->scale(be, m, u, (float)(1.0 / beta));
            if ((rc = lm_linop_adjoint(A, u, av, err)) != LM_OK)
                break;
            be->xpay(be, n, v, (float)-beta, av);
            alpha = norm2(be, n, v);
            if (alpha > 0)
                be->scale(be, n, v, (float)(1.0 / alpha));
        } else {
            alpha = 0;
        }
        /* the damping's rotation, then the bidiagonal's */
        const double rhobar1 = hypot(rhobar, p->damp);
        const double cs1 = rhobar / rhobar1;
        phibar *= cs1;
        const double rho = hypot(rhobar1, beta);
        const double c = rhobar1 / rho, s = beta / rho;
        const double theta = s * alpha;
        rhobar = -c * alpha;
        const double phi = c * phibar;
        phibar *= s;
        be->axpy(be, n, x, (float)(phi / rho), w);
        be->xpay(be, n, w, (float)(-theta / rho), v);
        if ((rc = be->check(be, err)) != LM_OK)
            break;
        /* ||A^H r - damp^2 x|| = |phibar| alpha |c| (Paige and Saunders, 5.2) */
        const double rel = fabs(phibar) * alpha * fabs(c) / atb;
        if (rep) {
            rep->iters_done = it;
            rep->rel_normal_resid = rel;
        }
        if (p->monitor && p->monitor(p->monitor_user, it, rel)) {
            rc = lm_fail(err, LM_ERR_CANCELLED, "lsqr: cancelled");
            break;
        }
        if (p->tol > 0 && rel < p->tol)
            break;
        if (alpha == 0 || beta == 0)
            break; /* the Krylov space is exhausted: x is the solution */
    }
done:
    be->release(be, u);
    be->release(be, au);
    be->release(be, v);
    be->release(be, av);
    be->release(be, w);
    if (rc == LM_OK)
        rc = be->check(be, err);
    return rc;
}
