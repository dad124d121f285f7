/* Priors for ADMM (lm_prior.h): the gradient and wavelet transforms as
 * operators with adjoints, and the l2,1 proximal operator. */
#include "lm_prior.h"

#include <stdlib.h>

static void l21_apply(const lm_prox *p, lm_backend *be, int64_t n, lm_cfloat *z, const lm_cfloat *v, double t)
{
    be->shrink(be, n / p->groups, p->groups, z, v, (float)t);
}

static double l21_value(const lm_prox *p, lm_backend *be, int64_t n, const lm_cfloat *v)
{
    return be->group_norm(be, n / p->groups, p->groups, v);
}

lm_prox lm_prox_l21(int groups)
{
    return (lm_prox){.name = groups > 1 ? "l2,1" : "l1", .apply = l21_apply, .value = l21_value,
                     .groups = groups > 0 ? groups : 1};
}

static lm_linop *op_new(lm_backend *be, int64_t n_in, int64_t n_out, const char *name, lm_error *err)
{
    return lm_linop_new(be, n_in, n_out, name, err);
}

/* ---- gradient ---- */

typedef struct grad_state {
    int64_t n[3];
} grad_state;

static lm_code grad_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    (void)err;
    op->be->grad(op->be, ((grad_state *)op->state)->n, y, x);
    return LM_OK;
}

static lm_code grad_adjoint(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err)
{
    (void)err;
    op->be->grad_adj(op->be, ((grad_state *)op->state)->n, x, y);
    return LM_OK;
}

static void free_state(lm_linop *op)
{
    free(op->state);
}

lm_code lm_linop_grad(lm_backend *be, const int64_t n[3], lm_linop **out, lm_error *err)
{
    *out = NULL;
    const int axes = lm_grad_axes(n);
    if (axes == 0)
        return lm_fail(err, LM_ERR_INVALID, "gradient: a volume of one voxel has no differences");
    const int64_t nv = n[0] * n[1] * n[2];
    lm_linop *op = op_new(be, nv, axes * nv, "gradient", err);
    grad_state *s = op ? lm_calloc(1, sizeof *s, err, "gradient") : NULL;
    if (!s) {
        free(op);
        return LM_ERR_NOMEM;
    }
    for (int a = 0; a < 3; a++)
        s->n[a] = n[a];
    op->state = s;
    op->apply = grad_apply;
    op->adjoint = grad_adjoint;
    op->destroy = free_state;
    *out = op;
    return LM_OK;
}

/* ---- wavelet ---- */

typedef struct wav_state {
    lm_wavelet *w;
    lm_cfloat *hx, *hc;   /* host staging for a GPU back end (N and M values) */
} wav_state;

static lm_code wav_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    (void)err;
    wav_state *s = op->state;
    lm_backend *be = op->be;
    if (!s->hx) {
        lm_wavelet_forward(s->w, x, y);
        return LM_OK;
    }
    be->download(be, s->hx, x, (size_t)op->n_in * sizeof *x);
    if (be->sticky.code == LM_OK) {
        lm_wavelet_forward(s->w, s->hx, s->hc);
        be->upload(be, y, s->hc, (size_t)op->n_out * sizeof *y);
    }
    return LM_OK;
}

static lm_code wav_adjoint(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err)
{
    (void)err;
    wav_state *s = op->state;
    lm_backend *be = op->be;
    if (!s->hx) {
        lm_wavelet_adjoint(s->w, y, x);
        return LM_OK;
    }
    be->download(be, s->hc, y, (size_t)op->n_out * sizeof *y);
    if (be->sticky.code == LM_OK) {
        lm_wavelet_adjoint(s->w, s->hc, s->hx);
        be->upload(be, x, s->hx, (size_t)op->n_in * sizeof *x);
    }
    return LM_OK;
}

static void wav_destroy(lm_linop *op)
{
    wav_state *s = op->state;
    if (s) {
        lm_wavelet_free(s->w);
        free(s->hx);
        free(s->hc);
        free(s);
    }
}

lm_code lm_linop_wavelet(lm_backend *be, const int64_t n[3], lm_wavelet_kind kind, lm_linop **out, lm_error *err)
{
    *out = NULL;
    lm_wavelet *w = NULL;
    lm_code rc = lm_wavelet_new(n, kind, be->device == LM_DEVICE_CPU ? be->threads : 0, &w, err);
    if (rc != LM_OK)
        return rc;
    const int64_t nv = n[0] * n[1] * n[2], m = lm_wavelet_coeffs(w, NULL);
    lm_linop *op = op_new(be, nv, m, "wavelet", err);
    wav_state *s = op ? lm_calloc(1, sizeof *s, err, "wavelet") : NULL;
    if (!s) {
        free(op);
        lm_wavelet_free(w);
        return LM_ERR_NOMEM;
    }
    s->w = w;
    op->state = s;
    op->apply = wav_apply;
    op->adjoint = wav_adjoint;
    op->destroy = wav_destroy;
    if (be->device != LM_DEVICE_CPU) {
        s->hx = lm_alloc((size_t)nv, sizeof *s->hx, err, "wavelet staging");
        s->hc = s->hx ? lm_alloc((size_t)m, sizeof *s->hc, err, "wavelet staging") : NULL;
        if (!s->hc) {
            lm_linop_free(op);
            return LM_ERR_NOMEM;
        }
    }
    *out = op;
    return LM_OK;
}

/* ---- priors ---- */

lm_code lm_prior_new(lm_backend *be, const int64_t n[3], lm_reg_kind kind, lm_prior **out, lm_error *err)
{
    *out = NULL;
    if (kind != LM_REG_TV && kind != LM_REG_WAVELET)
        return lm_fail(err, LM_ERR_INVALID, "prior: regulariser %d is not one of tv, wavelet", (int)kind);
    lm_prior *p = lm_calloc(1, sizeof *p, err, "prior");
    if (!p)
        return LM_ERR_NOMEM;
    p->kind = kind;
    lm_code rc;
    if (kind == LM_REG_TV) {
        rc = lm_linop_grad(be, n, &p->G, err);
        if (rc == LM_OK)
            rc = lm_linop_reg(be, n, LM_REG_GRADIENT, NULL, &p->GhG, err);
        p->prox = lm_prox_l21(lm_grad_axes(n));
    } else {
        rc = lm_linop_wavelet(be, n, LM_WAVELET_DB4, &p->G, err);
        p->prox = lm_prox_l21(1);
    }
    if (rc != LM_OK) {
        lm_prior_free(p);
        return rc;
    }
    *out = p;
    return LM_OK;
}

void lm_prior_free(lm_prior *p)
{
    if (!p)
        return;
    lm_linop_free(p->G);
    lm_linop_free(p->GhG);
    free(p);
}
