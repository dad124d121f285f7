/* Block-diagonal, temporal-difference and identity operators (lm_dyn_ops.h). */
#include "lm_dyn_ops.h"

#include <stdlib.h>

/* ---- block diagonal ---- */

static lm_code blockdiag_run(lm_linop *op, int adjoint, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    int64_t in = 0, out = 0;
    for (int i = 0; i < op->nparts; i++) {
        lm_linop *a = op->parts[i];
        lm_code rc = adjoint ? a->adjoint(a, x + out, y + in, err) : a->apply(a, x + in, y + out, err);
        if (rc != LM_OK)
            return rc;
        in += a->n_in;
        out += a->n_out;
    }
    return LM_OK;
}

static lm_code blockdiag_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    return blockdiag_run(op, 0, x, y, err);
}

static lm_code blockdiag_adjoint(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err)
{
    return blockdiag_run(op, 1, y, x, err);
}

lm_code lm_linop_blockdiag(int n, lm_linop *const *ops, lm_linop **out, lm_error *err)
{
    *out = NULL;
    if (n < 1 || !ops)
        return lm_fail(err, LM_ERR_INVALID, "block diagonal: no operators");
    int64_t n_in = 0, n_out = 0;
    int adjoint = 1, normal = 1;
    double diag = 0;
    for (int i = 0; i < n; i++) {
        /* per-frame encodings each hold a back end of their own: vectors of
         * one device are interchangeable */
        if (!ops[i] || ops[i]->be->device != ops[0]->be->device)
            return lm_fail(err, LM_ERR_INVALID, "block diagonal: operators missing or on different devices");
        n_in += ops[i]->n_in;
        n_out += ops[i]->n_out;
        adjoint &= ops[i]->adjoint != NULL;
        normal &= ops[i]->normal != NULL;
        diag += ops[i]->diag * (double)ops[i]->n_in;
    }
    lm_linop *op = lm_linop_new(ops[0]->be, n_in, n_out, "block diagonal", err);
    if (!op)
        return LM_ERR_NOMEM;
    op->parts = lm_calloc((size_t)n, sizeof *op->parts, err, "block diagonal");
    if (!op->parts) {
        lm_linop_free(op);
        return LM_ERR_NOMEM;
    }
    op->nparts = n;
    for (int i = 0; i < n; i++)
        op->parts[i] = lm_linop_ref(ops[i]);
    op->apply = blockdiag_apply;
    if (adjoint)
        op->adjoint = blockdiag_adjoint;
    op->diag = diag / (double)n_in;
    if (normal) {
        lm_linop **nops = lm_calloc((size_t)n, sizeof *nops, err, "block diagonal");
        if (!nops) {
            lm_linop_free(op);
            return LM_ERR_NOMEM;
        }
        for (int i = 0; i < n; i++)
            nops[i] = ops[i]->normal;
        lm_linop *nd = NULL;
        lm_code rc = lm_linop_blockdiag(n, nops, &nd, err);
        free(nops);
        if (rc != LM_OK) {
            lm_linop_free(op);
            return rc;
        }
        lm_linop_set_normal(op, nd);
        lm_linop_free(nd);
    }
    *out = op;
    return LM_OK;
}

/* ---- temporal difference ---- */

typedef struct tdiff_state {
    int64_t nvox, frames;
} tdiff_state;

static lm_code tdiff_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    (void)err;
    const tdiff_state *s = op->state;
    lm_backend *be = op->be;
    const int64_t n = s->nvox;
    for (int64_t t = 0; t + 1 < s->frames; t++) {
        be->copy(be, n, y + t * n, x + (t + 1) * n);
        be->axpy(be, n, y + t * n, -1.0f, x + t * n);
    }
    return LM_OK;
}

/* x_t = y_{t-1} - y_t, with y_{-1} = y_{T-1} = 0. */
static lm_code tdiff_adjoint(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err)
{
    (void)err;
    const tdiff_state *s = op->state;
    lm_backend *be = op->be;
    const int64_t n = s->nvox, T = s->frames;
    for (int64_t t = 0; t < T; t++) {
        lm_cfloat *xt = x + t * n;
        if (t > 0)
            be->copy(be, n, xt, y + (t - 1) * n);
        else
            be->zero(be, n, xt);
        if (t < T - 1)
            be->axpy(be, n, xt, -1.0f, y + t * n);
    }
    return LM_OK;
}

static void state_free(lm_linop *op)
{
    free(op->state);
}

lm_code lm_linop_tdiff(lm_backend *be, int64_t nvox, int64_t frames, lm_linop **out, lm_error *err)
{
    *out = NULL;
    if (nvox < 1 || frames < 2)
        return lm_fail(err, LM_ERR_INVALID, "temporal difference: needs at least 2 frames (%lld given)",
                       (long long)frames);
    lm_linop *op = lm_linop_new(be, nvox * frames, nvox * (frames - 1), "temporal difference", err);
    tdiff_state *s = op ? lm_calloc(1, sizeof *s, err, "temporal difference") : NULL;
    if (!s) {
        lm_linop_free(op);
        return LM_ERR_NOMEM;
    }
    s->nvox = nvox;
    s->frames = frames;
    op->state = s;
    op->destroy = state_free;
    op->apply = tdiff_apply;
    op->adjoint = tdiff_adjoint;
    *out = op;
    return LM_OK;
}

/* ---- identity ---- */

static lm_code identity_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    (void)err;
    op->be->copy(op->be, op->n_in, y, x);
    return LM_OK;
}

lm_code lm_linop_identity(lm_backend *be, int64_t n, lm_linop **out, lm_error *err)
{
    *out = NULL;
    lm_linop *op = lm_linop_new(be, n, n, "identity", err);
    if (!op)
        return LM_ERR_NOMEM;
    op->apply = identity_apply;
    op->adjoint = identity_apply;
    op->diag = 1;
    *out = op;
    return LM_OK;
}
