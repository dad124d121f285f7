/* The L-curve's two numbers of a CG run (lm_recon_result.resid_norm and
 * prior_norm), computed with the model the run solved: every coil with its
 * map, the field map (exact or time-segmented, as solved), the data as
 * whitened and compressed. Double sums over float values. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

#include "lm_encoding.h"
#include "lm_prior.h"
#include "lm_recon_impl.h"

/* ||E x - d||: x on the back end, d on the host (m x coils). */
static lm_code resid_norm(lm_encoding *e, const lm_kdata *d, const lm_cfloat *x, double *out, lm_error *err)
{
    lm_kdata ex = {.m = d->m, .ncoils = d->ncoils};
    ex.d = lm_alloc((size_t)(d->m * d->ncoils), sizeof *ex.d, err, "residual");
    if (!ex.d)
        return LM_ERR_NOMEM;
    lm_code rc = lm_encoding_forward(e, x, &ex, err);
    if (rc == LM_OK) {
        double r2 = 0;
        for (int64_t i = 0; i < d->m * d->ncoils; i++) {
            const double re = (double)crealf(ex.d[i]) - crealf(d->d[i]), im = (double)cimagf(ex.d[i]) - cimagf(d->d[i]);
            r2 += re * re + im * im;
        }
        *out = sqrt(r2);
    }
    free(ex.d);
    return rc;
}

/* The prior's size: sqrt(x^H W^H W x) for the quadratic priors, f(G x)
 * (TV, the wavelets' l1 norm) for tv and wavelet. */
static lm_code prior_norm(lm_backend *be, const int64_t n[3], lm_reg_kind reg, const float *weights,
                          const lm_cfloat *x, double *out, lm_error *err)
{
    int64_t nv = n[0] * n[1] * n[2];
    if (reg == LM_REG_IDENTITY) {
        *out = sqrt(fmax(be->dot(be, nv, x, x), 0));
        return be->check(be, err);
    }
    if (reg == LM_REG_TV || reg == LM_REG_WAVELET) {
        lm_prior *p = NULL;
        lm_code rc = lm_prior_new(be, n, reg, &p, err);
        lm_cfloat *gx = rc == LM_OK ? be->alloc(be, p->G->n_out, "prior coefficients") : NULL;
        if (rc == LM_OK)
            rc = be->check(be, err);
        if (rc == LM_OK)
            rc = lm_linop_apply(p->G, x, gx, err);
        if (rc == LM_OK)
            *out = p->prox.value(&p->prox, be, p->G->n_out, gx);
        if (gx)
            be->release(be, gx);
        lm_prior_free(p);
        return rc == LM_OK ? be->check(be, err) : rc;
    }
    if (lm_reg_weighted(reg) && !weights)
        return LM_OK; /* no reference: the prior was not used */
    lm_linop *w = NULL;
    lm_code rc = lm_linop_reg(be, n, reg, weights, &w, err);
    lm_cfloat *y = rc == LM_OK ? be->alloc(be, nv, "prior norm") : NULL;
    if (rc == LM_OK)
        rc = be->check(be, err);
    if (rc == LM_OK)
        rc = lm_linop_apply(w, x, y, err);
    if (rc == LM_OK)
        *out = sqrt(fmax(be->dot(be, nv, x, y), 0));
    if (y)
        be->release(be, y);
    lm_linop_free(w);
    return rc == LM_OK ? be->check(be, err) : rc;
}

lm_code lm_recon_norms(lm_encoding *e, const int64_t n[3], const lm_kdata *d, lm_reg_kind reg, const float *weights,
                       const lm_cfloat *image, double *resid, double *prior, lm_error *err)
{
    *resid = *prior = NAN;
    lm_backend *be = lm_encoding_backend(e);
    const int64_t nv = n[0] * n[1] * n[2];
    lm_cfloat *x = be->alloc(be, nv, "L-curve image");
    lm_code rc = be->check(be, err);
    if (rc == LM_OK) {
        be->upload(be, x, image, (size_t)nv * sizeof *image);
        rc = be->check(be, err);
    }
    if (rc == LM_OK)
        rc = resid_norm(e, d, x, resid, err);
    if (rc == LM_OK)
        rc = prior_norm(be, n, reg, weights, x, prior, err);
    if (x)
        be->release(be, x);
    return rc;
}
