/* Composition of operators (lm_linop.h): chain, sum, stack, adjoint,
 * point-wise multiplies, coil maps, the block repeat over coils, and the
 * normal operator A^H A with the fused forms it recognises. Every
 * combination keeps its vectors on its parts' back end; the temporaries
 * it needs are made once, with the operator. */
#include "lm_linop.h"

#include <stdlib.h>
#include <string.h>

/* A composition of n parts (references taken) of kind on the parts' back
 * end. */
static lm_linop *comp_new(lm_backend *be, int64_t n_in, int64_t n_out, const char *name, lm_linop_kind kind,
                          int nparts, lm_linop *const *parts, lm_error *err)
{
    lm_linop *op = lm_linop_new(be, n_in, n_out, name, err);
    if (!op)
        return NULL;
    op->kind = kind;
    op->parts = lm_calloc((size_t)nparts, sizeof *op->parts, err, name);
    if (!op->parts) {
        lm_linop_free(op);
        return NULL;
    }
    op->nparts = nparts;
    for (int i = 0; i < nparts; i++)
        op->parts[i] = lm_linop_ref(parts[i]);
    return op;
}

/* Work vectors of a composition, on its back end. */
typedef struct comp_state {
    lm_cfloat *tmp_in, *tmp_out;   /* n_in and n_out values (NULL when unused) */
    lm_cfloat *tmp_mid;            /* chain: the first part's output */
    double *c;                     /* sum: the coefficients */
    const lm_cfloat *d;            /* cdiag, maps: the multiplier */
    int owns_d;
    int64_t count;                 /* maps: coils; repeat: blocks */
} comp_state;

static void comp_destroy(lm_linop *op)
{
    comp_state *s = op->state;
    if (!s)
        return;
    lm_backend *be = op->be;
    be->release(be, s->tmp_in);
    be->release(be, s->tmp_out);
    be->release(be, s->tmp_mid);
    if (s->owns_d)
        be->release(be, (void *)s->d);
    free(s->c);
    free(s);
}

static comp_state *comp_state_new(lm_linop *op, lm_error *err)
{
    comp_state *s = lm_calloc(1, sizeof *s, err, op->name);
    op->state = s;
    op->destroy = comp_destroy;
    return s;
}

/* Checks the back end after allocating work vectors; frees op on failure. */
static lm_code comp_finish(lm_linop *op, lm_linop **out, lm_error *err)
{
    lm_code rc = op->state ? op->be->check(op->be, err) : LM_ERR_NOMEM;
    if (rc != LM_OK) {
        lm_linop_free(op);
        return rc;
    }
    *out = op;
    return LM_OK;
}

static int all_have_adjoint(int n, lm_linop *const *ops)
{
    for (int i = 0; i < n; i++)
        if (!ops[i]->adjoint)
            return 0;
    return 1;
}

static lm_code parts_check(int n, lm_linop *const *ops, const char *what, lm_error *err)
{
    if (n < 1 || !ops || !ops[0])
        return lm_fail(err, LM_ERR_INVALID, "%s: no operators", what);
    for (int i = 1; i < n; i++)
        if (!ops[i] || ops[i]->be != ops[0]->be)
            return lm_fail(err, LM_ERR_INVALID, "%s: operators on different back ends", what);
    return LM_OK;
}

/* ---- chain ---- */

static lm_code chain_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    comp_state *s = op->state;
    lm_code rc = op->parts[0]->apply(op->parts[0], x, s->tmp_mid, err);
    return rc == LM_OK ? op->parts[1]->apply(op->parts[1], s->tmp_mid, y, err) : rc;
}

static lm_code chain_adjoint(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err)
{
    comp_state *s = op->state;
    lm_code rc = op->parts[1]->adjoint(op->parts[1], y, s->tmp_mid, err);
    return rc == LM_OK ? op->parts[0]->adjoint(op->parts[0], s->tmp_mid, x, err) : rc;
}

lm_code lm_linop_chain(lm_linop *a, lm_linop *b, lm_linop **out, lm_error *err)
{
    *out = NULL;
    lm_linop *ab[2] = {a, b};
    lm_code rc = parts_check(2, ab, "operator chain", err);
    if (rc != LM_OK)
        return rc;
    if (a->n_out != b->n_in)
        return lm_fail(err, LM_ERR_INVALID, "operator chain: %s gives %lld values, %s takes %lld", a->name,
                       (long long)a->n_out, b->name, (long long)b->n_in);
    lm_linop *op = comp_new(a->be, a->n_in, b->n_out, "chain", LM_LINOP_CHAIN, 2, ab, err);
    if (!op)
        return LM_ERR_NOMEM;
    comp_state *s = comp_state_new(op, err);
    if (s)
        s->tmp_mid = op->be->alloc(op->be, a->n_out, "chain work vector");
    op->apply = chain_apply;
    if (all_have_adjoint(2, ab))
        op->adjoint = chain_adjoint;
    return comp_finish(op, out, err);
}

/* ---- sum ---- */

static lm_code sum_n_run(lm_linop *op, int adjoint, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    comp_state *s = op->state;
    lm_backend *be = op->be;
    const int64_t n = adjoint ? op->n_in : op->n_out;
    lm_cfloat *tmp = adjoint ? s->tmp_in : s->tmp_out;
    lm_code rc = LM_OK;
    for (int i = 0; i < op->nparts && rc == LM_OK; i++) {
        lm_linop *p = op->parts[i];
        lm_cfloat *dst = i == 0 ? y : tmp;
        rc = adjoint ? p->adjoint(p, x, dst, err) : p->apply(p, x, dst, err);
        if (rc != LM_OK)
            break;
        if (i == 0) {
            if (s->c[0] != 1)
                be->scale(be, n, y, (float)s->c[0]);
        } else {
            be->axpy(be, n, y, (float)s->c[i], tmp);
        }
    }
    return rc;
}

static lm_code sum_n_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    return sum_n_run(op, 0, x, y, err);
}

static lm_code sum_n_adjoint(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err)
{
    return sum_n_run(op, 1, y, x, err);
}

lm_code lm_linop_sum_n(int n, lm_linop *const *ops, const double *c, lm_linop **out, lm_error *err)
{
    *out = NULL;
    lm_code rc = parts_check(n, ops, "operator sum", err);
    if (rc != LM_OK)
        return rc;
    for (int i = 1; i < n; i++)
        if (ops[i]->n_in != ops[0]->n_in || ops[i]->n_out != ops[0]->n_out)
            return lm_fail(err, LM_ERR_INVALID, "operator sum: %s and %s differ in size", ops[0]->name,
                           ops[i]->name);
    lm_linop *op = comp_new(ops[0]->be, ops[0]->n_in, ops[0]->n_out, "sum", LM_LINOP_SUM, n, ops, err);
    if (!op)
        return LM_ERR_NOMEM;
    comp_state *s = comp_state_new(op, err);
    if (s && (s->c = lm_alloc((size_t)n, sizeof *s->c, err, "sum coefficients")) != NULL) {
        for (int i = 0; i < n; i++)
            s->c[i] = c ? c[i] : 1.0;
        if (n > 1) {
            s->tmp_out = op->be->alloc(op->be, op->n_out, "sum work vector");
            if (all_have_adjoint(n, ops))
                s->tmp_in = op->be->alloc(op->be, op->n_in, "sum work vector");
        }
    } else if (s) {
        op->state = NULL;
        free(s);
    }
    op->apply = sum_n_apply;
    if (all_have_adjoint(n, ops))
        op->adjoint = sum_n_adjoint;
    return comp_finish(op, out, err);
}

/* ---- stack ---- */

static lm_code stack_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    int64_t off = 0;
    lm_code rc = LM_OK;
    for (int i = 0; i < op->nparts && rc == LM_OK; i++) {
        rc = op->parts[i]->apply(op->parts[i], x, y + off, err);
        off += op->parts[i]->n_out;
    }
    return rc;
}

static lm_code stack_adjoint(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err)
{
    comp_state *s = op->state;
    int64_t off = 0;
    lm_code rc = LM_OK;
    for (int i = 0; i < op->nparts && rc == LM_OK; i++) {
        lm_linop *p = op->parts[i];
        rc = p->adjoint(p, y + off, i == 0 ? x : s->tmp_in, err);
        if (rc == LM_OK && i > 0)
            op->be->axpy(op->be, op->n_in, x, 1.0f, s->tmp_in);
        off += p->n_out;
    }
    return rc;
}

lm_code lm_linop_stack(int n, lm_linop *const *ops, lm_linop **out, lm_error *err)
{
    *out = NULL;
    lm_code rc = parts_check(n, ops, "operator stack", err);
    if (rc != LM_OK)
        return rc;
    int64_t n_out = 0;
    for (int i = 0; i < n; i++) {
        if (ops[i]->n_in != ops[0]->n_in)
            return lm_fail(err, LM_ERR_INVALID, "operator stack: %s and %s take different sizes", ops[0]->name,
                           ops[i]->name);
        n_out += ops[i]->n_out;
    }
    lm_linop *op = comp_new(ops[0]->be, ops[0]->n_in, n_out, "stack", LM_LINOP_STACK, n, ops, err);
    if (!op)
        return LM_ERR_NOMEM;
    comp_state *s = comp_state_new(op, err);
    op->apply = stack_apply;
    if (all_have_adjoint(n, ops)) {
        op->adjoint = stack_adjoint;
        if (s && n > 1)
            s->tmp_in = op->be->alloc(op->be, op->n_in, "stack work vector");
    }
    return comp_finish(op, out, err);
}

/* ---- adjoint ---- */

static lm_code adj_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    return op->parts[0]->adjoint(op->parts[0], x, y, err);
}

static lm_code adj_adjoint(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err)
{
    return op->parts[0]->apply(op->parts[0], y, x, err);
}

lm_code lm_linop_adjoint_op(lm_linop *a, lm_linop **out, lm_error *err)
{
    *out = NULL;
    if (!a || !a->adjoint)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: no adjoint", a ? a->name : "operator");
    lm_linop *op = comp_new(a->be, a->n_out, a->n_in, "adjoint", LM_LINOP_ADJOINT, 1, &a, err);
    if (!op)
        return LM_ERR_NOMEM;
    op->apply = adj_apply;
    op->adjoint = adj_adjoint;
    op->diag = a->n_in == a->n_out ? a->diag : 0;
    *out = op;
    return LM_OK;
}

/* ---- point-wise multiplies ---- */

static lm_code cdiag_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    comp_state *s = op->state;
    op->be->mul(op->be, op->n_in, y, s->d, x);
    return LM_OK;
}

static lm_code cdiag_adjoint(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err)
{
    comp_state *s = op->state;
    op->be->zero(op->be, op->n_in, x);
    op->be->mulc_acc(op->be, op->n_in, x, s->d, y);
    return LM_OK;
}

lm_code lm_linop_cdiag(lm_backend *be, int64_t n, const lm_cfloat *d, int flags, lm_linop **out, lm_error *err)
{
    *out = NULL;
    if (!be || !d || n < 1)
        return lm_fail(err, LM_ERR_INVALID, "point-wise operator: no values");
    lm_linop *op = lm_linop_new(be, n, n, "point-wise multiply", err);
    if (!op)
        return LM_ERR_NOMEM;
    op->kind = LM_LINOP_CDIAG;
    comp_state *s = comp_state_new(op, err);
    if (s && (flags & LM_CDIAG_BORROW)) {
        s->d = d;
    } else if (s) {
        lm_cfloat *dd = be->alloc(be, n, "point-wise values");
        if (dd)
            be->upload(be, dd, d, (size_t)n * sizeof *dd);
        s->d = dd;
        s->owns_d = 1;
    }
    op->apply = cdiag_apply;
    op->adjoint = cdiag_adjoint;
    return comp_finish(op, out, err);
}

/* The multiplier of a point-wise operator or of coil maps (NULL for
 * others), for the fused forms below. */
static const lm_cfloat *mult_of(const lm_linop *op)
{
    return (op->kind == LM_LINOP_CDIAG || op->kind == LM_LINOP_MAPS) && op->state
               ? ((const comp_state *)op->state)->d
               : NULL;
}

/* ---- coil maps ---- */

static lm_code maps_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    comp_state *s = op->state;
    const int64_t nv = op->n_in;
    for (int64_t c = 0; c < s->count; c++)
        op->be->mul(op->be, nv, y + c * nv, s->d + c * nv, x);
    return LM_OK;
}

static lm_code maps_adjoint(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err)
{
    comp_state *s = op->state;
    const int64_t nv = op->n_in;
    op->be->zero(op->be, nv, x);
    for (int64_t c = 0; c < s->count; c++)
        op->be->mulc_acc(op->be, nv, x, s->d + c * nv, y + c * nv);
    return LM_OK;
}

lm_code lm_linop_maps(lm_backend *be, int64_t nvox, int64_t ncoils, const lm_cfloat *s_be, lm_linop **out,
                      lm_error *err)
{
    *out = NULL;
    if (!be || !s_be || nvox < 1 || ncoils < 1)
        return lm_fail(err, LM_ERR_INVALID, "coil-map operator: no maps");
    lm_linop *op = lm_linop_new(be, nvox, nvox * ncoils, "coil maps", err);
    if (!op)
        return LM_ERR_NOMEM;
    op->kind = LM_LINOP_MAPS;
    comp_state *s = comp_state_new(op, err);
    if (s) {
        s->d = s_be;
        s->count = ncoils;
    }
    op->apply = maps_apply;
    op->adjoint = maps_adjoint;
    return comp_finish(op, out, err);
}

/* ---- repeat over blocks ---- */

static lm_code repeat_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    comp_state *s = op->state;
    lm_linop *a = op->parts[0];
    lm_code rc = LM_OK;
    for (int64_t b = 0; b < s->count && rc == LM_OK; b++)
        rc = a->apply(a, x + b * a->n_in, y + b * a->n_out, err);
    return rc;
}

static lm_code repeat_adjoint(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err)
{
    comp_state *s = op->state;
    lm_linop *a = op->parts[0];
    lm_code rc = LM_OK;
    for (int64_t b = 0; b < s->count && rc == LM_OK; b++)
        rc = a->adjoint(a, y + b * a->n_out, x + b * a->n_in, err);
    return rc;
}

lm_code lm_linop_repeat(lm_linop *a, int64_t count, lm_linop **out, lm_error *err)
{
    *out = NULL;
    if (!a || count < 1)
        return lm_fail(err, LM_ERR_INVALID, "operator repeat: no operator or no blocks");
    lm_linop *op = comp_new(a->be, a->n_in * count, a->n_out * count, "repeat", LM_LINOP_REPEAT, 1, &a, err);
    if (!op)
        return LM_ERR_NOMEM;
    comp_state *s = comp_state_new(op, err);
    if (s)
        s->count = count;
    op->apply = repeat_apply;
    if (a->adjoint)
        op->adjoint = repeat_adjoint;
    return comp_finish(op, out, err);
}

/* ---- normal operators ---- */

/* sum_c S_c^H T S_c with T = F^H F carried by the repeated F, fused where
 * T is a Toeplitz product (lm_linop_coil_normal). */
static lm_code sense_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    comp_state *s = op->state;
    return lm_linop_coil_normal(op->parts[1], x, s->d, s->count, y, s->tmp_in, s->tmp_out, err);
}

/* A^H (A x) by two applications. */
static lm_code gram_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    comp_state *s = op->state;
    lm_linop *a = op->parts[0];
    lm_code rc = a->apply(a, x, s->tmp_mid, err);
    return rc == LM_OK ? a->adjoint(a, s->tmp_mid, y, err) : rc;
}

static lm_code gram_sense(lm_linop *maps, lm_linop *t, lm_linop **out, lm_error *err)
{
    lm_linop *parts[2] = {maps, t};
    const comp_state *ms = maps->state;
    lm_linop *op = comp_new(maps->be, maps->n_in, maps->n_in, "sum_c S_c^H F^H F S_c", LM_LINOP_OTHER, 2, parts, err);
    if (!op)
        return LM_ERR_NOMEM;
    comp_state *s = comp_state_new(op, err);
    if (s) {
        s->d = ms->d;
        s->count = ms->count;
        if (!lm_linop_coil_fused(t)) {
            s->tmp_in = op->be->alloc(op->be, op->n_in, "coil work vector");
            s->tmp_out = op->be->alloc(op->be, op->n_in, "coil work vector");
        }
    }
    op->apply = sense_apply;
    op->adjoint = sense_apply;
    /* the mean diagonal over all voxels: T's times the mean of sum_c |s_c|^2 */
    const double s2 = op->be->dot(op->be, maps->n_out, ms->d, ms->d);
    op->diag = t->diag * s2 / (double)maps->n_in;
    return comp_finish(op, out, err);
}

lm_code lm_linop_gram(lm_linop *a, lm_linop **out, lm_error *err)
{
    *out = NULL;
    if (!a)
        return lm_fail(err, LM_ERR_INVALID, "normal operator: no operator");
    if (a->normal) {
        *out = lm_linop_ref(a->normal);
        return LM_OK;
    }
    /* repeat(F) after coil maps, F carrying F^H F */
    if (a->kind == LM_LINOP_CHAIN && a->parts[0]->kind == LM_LINOP_MAPS && a->parts[1]->kind == LM_LINOP_REPEAT &&
        a->parts[1]->parts[0]->normal && mult_of(a->parts[0]))
        return gram_sense(a->parts[0], a->parts[1]->parts[0]->normal, out, err);
    if (!a->adjoint)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: no adjoint, so no normal operator", a->name);
    lm_linop *op = comp_new(a->be, a->n_in, a->n_in, "A^H A", LM_LINOP_OTHER, 1, &a, err);
    if (!op)
        return LM_ERR_NOMEM;
    comp_state *s = comp_state_new(op, err);
    if (s)
        s->tmp_mid = op->be->alloc(op->be, a->n_out, "normal work vector");
    op->apply = gram_apply;
    op->adjoint = gram_apply;
    return comp_finish(op, out, err);
}
