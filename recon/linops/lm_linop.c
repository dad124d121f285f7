/* Operator plumbing (lm_linop.h): application with the back end's sticky
 * errors folded in, sums, and the regularisers' W^H W on either device. */
#include "lm_linop.h"

#include <stdlib.h>

#include "lm_gpu.h"
#include "lm_toeplitz.h"
#include "lm_toeplitz_block.h"

lm_code lm_linop_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    lm_code rc = op->apply(op, x, y, err);
    if (rc != LM_OK)
        return rc;
    return op->be->check(op->be, err);
}

lm_code lm_linop_adjoint(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err)
{
    if (!op->adjoint)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: no adjoint", op->name);
    lm_code rc = op->adjoint(op, y, x, err);
    if (rc != LM_OK)
        return rc;
    return op->be->check(op->be, err);
}

/* refs 0: an operator embedded in a struct or on the stack, which its
 * owner ends; references and frees leave it alone. */
void lm_linop_free(lm_linop *op)
{
    if (!op || op->refs == 0 || --op->refs > 0)
        return;
    if (op->destroy)
        op->destroy(op);
    for (int i = 0; i < op->nparts; i++)
        lm_linop_free(op->parts[i]);
    free(op->parts);
    lm_linop_free(op->normal);
    free(op);
}

lm_linop *lm_linop_ref(lm_linop *op)
{
    if (op && op->refs > 0)
        op->refs++;
    return op;
}

lm_linop *lm_linop_new(lm_backend *be, int64_t n_in, int64_t n_out, const char *name, lm_error *err)
{
    lm_linop *op = lm_calloc(1, sizeof *op, err, name);
    if (op) {
        op->refs = 1;
        op->be = be;
        op->n_in = n_in;
        op->n_out = n_out;
        op->name = name;
    }
    return op;
}

void lm_linop_set_normal(lm_linop *a, lm_linop *n)
{
    lm_linop_ref(n);
    lm_linop_free(a->normal);
    a->normal = n;
}

/* ---- sums ---- */

typedef struct sum_state {
    lm_linop *a, *b;
    float c;
    lm_cfloat *tmp;
} sum_state;

static lm_code sum_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    sum_state *s = op->state;
    lm_code rc = s->a->apply(s->a, x, y, err);
    if (rc == LM_OK && s->c != 0) {
        rc = s->b->apply(s->b, x, s->tmp, err);
        if (rc == LM_OK)
            op->be->axpy(op->be, op->n_out, y, s->c, s->tmp);
    }
    return rc;
}

static void sum_destroy(lm_linop *op)
{
    sum_state *s = op->state;
    if (s) {
        op->be->release(op->be, s->tmp);
        lm_linop_free(s->a);
        lm_linop_free(s->b);
        free(s);
    }
}

lm_code lm_linop_sum(lm_linop *a, lm_linop *b, double c, lm_linop **out, lm_error *err)
{
    *out = NULL;
    if (!a || !b || a->be != b->be || a->n_in != a->n_out || b->n_in != a->n_in || b->n_out != a->n_out)
        return lm_fail(err, LM_ERR_INVALID, "operator sum: operators of different sizes or devices");
    lm_linop *op = lm_linop_new(a->be, a->n_in, a->n_out, "sum", err);
    sum_state *s = op ? lm_calloc(1, sizeof *s, err, "operator sum") : NULL;
    if (!s) {
        free(op);
        return LM_ERR_NOMEM;
    }
    *s = (sum_state){.a = lm_linop_ref(a), .b = lm_linop_ref(b), .c = (float)c};
    op->state = s;
    op->apply = sum_apply;
    op->destroy = sum_destroy;
    if (c != 0) {
        s->tmp = a->be->alloc(a->be, a->n_out, "operator sum");
        lm_code rc = a->be->check(a->be, err);
        if (rc != LM_OK) {
            lm_linop_free(op);
            return rc;
        }
    }
    *out = op;
    return LM_OK;
}

/* ---- regularisers ---- */

typedef struct reg_state {
    int64_t n[3];
    lm_reg_kind kind;
    float *w;            /* back-end memory */
} reg_state;

static lm_code reg_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    reg_state *s = op->state;
    lm_backend *be = op->be;
    if (s->kind == LM_REG_IDENTITY || s->kind == LM_REG_WAVELET) {
        be->copy(be, op->n_out, y, x);
        return LM_OK;
    }
    if (be->device == LM_DEVICE_GPU)
        return lm_gpu_reg_apply(s->n, s->kind, s->w, x, y, err);
    lm_reg_apply(s->n, s->kind, s->w, x, y, be->threads);
    return LM_OK;
}

static void reg_destroy(lm_linop *op)
{
    reg_state *s = op->state;
    if (s) {
        op->be->release(op->be, s->w);
        free(s);
    }
}

lm_code lm_linop_reg(lm_backend *be, const int64_t n[3], lm_reg_kind kind, const float *weights,
                     lm_linop **out, lm_error *err)
{
    *out = NULL;
    if (kind != LM_REG_IDENTITY && kind != LM_REG_GRADIENT && !lm_reg_weighted(kind) && kind != LM_REG_TV &&
        kind != LM_REG_WAVELET)
        return lm_fail(err, LM_ERR_INVALID, "unknown regulariser %d", (int)kind);
    if (lm_reg_weighted(kind) && !weights)
        return lm_fail(err, LM_ERR_INVALID, "anatomical regulariser without edge weights");
    /* Both anatomical kinds are D^T diag(w) D with their weights: one
     * kernel on either device. */
    if (lm_reg_weighted(kind))
        kind = LM_REG_ANATOMICAL;
    const int64_t count = n[0] * n[1] * n[2];
    lm_linop *op = lm_linop_new(be, count, count, "regulariser", err);
    reg_state *s = op ? lm_calloc(1, sizeof *s, err, "regulariser") : NULL;
    if (!s) {
        free(op);
        return LM_ERR_NOMEM;
    }
    for (int a = 0; a < 3; a++)
        s->n[a] = n[a];
    s->kind = kind;
    op->state = s;
    op->apply = reg_apply;
    op->destroy = reg_destroy;
    if (kind == LM_REG_ANATOMICAL) {
        s->w = be->alloc_real(be, 3 * count, "edge weights");
        if (s->w)
            be->upload(be, s->w, weights, (size_t)(3 * count) * sizeof(float));
    }
    lm_code rc = be->check(be, err);
    if (rc != LM_OK) {
        lm_linop_free(op);
        return rc;
    }
    *out = op;
    return LM_OK;
}

/* ---- F^H F ---- */

typedef struct toep_state {
    lm_toeplitz *cpu;
    lm_gpu_toeplitz *gpu;
} toep_state;

static lm_code toep_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    toep_state *s = op->state;
    if (s->gpu)
        return lm_gpu_toeplitz_apply(s->gpu, x, y, err);
    lm_toeplitz_apply(s->cpu, x, y);
    return LM_OK;
}

static lm_code toep_apply_coil(lm_linop *op, const lm_cfloat *x, const lm_cfloat *sc, lm_cfloat *y, int acc,
                               lm_error *err)
{
    toep_state *s = op->state;
    if (s->gpu)
        return lm_gpu_toeplitz_apply_coil(s->gpu, x, sc, y, acc, err);
    lm_toeplitz_apply_coil(s->cpu, x, sc, y, acc);
    return LM_OK;
}

static void toep_destroy(lm_linop *op)
{
    toep_state *s = op->state;
    if (s) {
        lm_toeplitz_free(s->cpu);
        lm_gpu_toeplitz_free(s->gpu);
        free(s);
    }
}

lm_gpu_toeplitz *lm_linop_toeplitz_gpu(const lm_linop *op)
{
    if (!op || op->kind != LM_LINOP_TOEPLITZ || op->destroy != toep_destroy)
        return NULL;
    return ((const toep_state *)op->state)->gpu;
}

lm_code lm_linop_toeplitz(lm_backend *be, const int64_t n[3], const lm_cfloat *q, int q_on_backend,
                          lm_linop **out, lm_error *err)
{
    *out = NULL;
    const int64_t count = n[0] * n[1] * n[2];
    lm_linop *op = lm_linop_new(be, count, count, "F^H F", err);
    toep_state *s = op ? lm_calloc(1, sizeof *s, err, "Toeplitz operator") : NULL;
    if (!s) {
        free(op);
        return LM_ERR_NOMEM;
    }
    op->kind = LM_LINOP_TOEPLITZ;
    op->state = s;
    op->apply = toep_apply;
    op->destroy = toep_destroy;
    lm_code rc;
    if (be->device == LM_DEVICE_GPU) {
        rc = lm_gpu_toeplitz_new(n, q_on_backend ? NULL : q, q_on_backend ? q : NULL, &s->gpu, err);
        if (rc == LM_OK)
            op->diag = lm_gpu_toeplitz_diag(s->gpu);
    } else {
        rc = lm_toeplitz_new(n, q, be->threads, &s->cpu, err);
        if (rc == LM_OK)
            op->diag = lm_toeplitz_diag(s->cpu);
    }
    if (rc != LM_OK) {
        lm_linop_free(op);
        return rc;
    }
    *out = op;
    return LM_OK;
}

/* ---- time-segmented F_t^H F_t ---- */

typedef struct tblock_state {
    lm_toeplitz_block *cpu;
    lm_gpu_toeplitz_block *gpu;
    const lm_cfloat *c;
} tblock_state;

static lm_code tblock_apply_coil(lm_linop *op, const lm_cfloat *x, const lm_cfloat *sc, lm_cfloat *y, int acc,
                                 lm_error *err)
{
    tblock_state *s = op->state;
    if (s->gpu)
        return lm_gpu_toeplitz_block_apply_coil(s->gpu, x, sc, s->c, y, acc, err);
    lm_toeplitz_block_apply_coil(s->cpu, x, sc, s->c, y, acc);
    return LM_OK;
}


static lm_code tblock_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    return tblock_apply_coil(op, x, NULL, y, 0, err);
}

static void tblock_destroy(lm_linop *op)
{
    tblock_state *s = op->state;
    if (s) {
        lm_toeplitz_block_free(s->cpu);
        lm_gpu_toeplitz_block_free(s->gpu);
        free(s);
    }
}

lm_code lm_linop_toeplitz_block(lm_backend *be, const int64_t n[3], int L, const lm_cfloat *q, int q_on_backend,
                                const lm_cfloat *c, int ncoils, lm_linop **out, lm_error *err)
{
    *out = NULL;
    const int64_t count = n[0] * n[1] * n[2];
    lm_linop *op = lm_linop_new(be, count, count, "F_t^H F_t", err);
    tblock_state *s = op ? lm_calloc(1, sizeof *s, err, "block Toeplitz operator") : NULL;
    if (!s) {
        free(op);
        return LM_ERR_NOMEM;
    }
    s->c = c;
    op->kind = LM_LINOP_TOEPLITZ_BLOCK;
    op->state = s;
    op->apply = tblock_apply;
    op->destroy = tblock_destroy;
    if (q_on_backend && be->device != LM_DEVICE_GPU) {
        lm_linop_free(op);
        return lm_fail(err, LM_ERR_INVALID, "block Toeplitz: Q on the back end needs a GPU back end");
    }
    lm_code rc = be->device == LM_DEVICE_GPU
                     ? lm_gpu_toeplitz_block_new(n, L, q, q_on_backend, ncoils > 1 ? ncoils : 1, &s->gpu, err)
                     : lm_toeplitz_block_new(n, L, q, be->threads, &s->cpu, err);
    if (rc != LM_OK) {
        lm_linop_free(op);
        return rc;
    }
    *out = op;
    return LM_OK;
}

/* ---- the coil sum of a SENSE normal operator ---- */

int lm_linop_coil_fused(const lm_linop *t)
{
    return t->kind == LM_LINOP_TOEPLITZ || t->kind == LM_LINOP_TOEPLITZ_BLOCK;
}

lm_code lm_linop_coil_normal(lm_linop *t, const lm_cfloat *x, const lm_cfloat *s, int64_t ncoils, lm_cfloat *y,
                             lm_cfloat *tmp1, lm_cfloat *tmp2, lm_error *err)
{
    const int64_t nv = t->n_in;
    lm_backend *be = t->be;
    lm_code rc = LM_OK;
    if (t->kind == LM_LINOP_TOEPLITZ_BLOCK && ((tblock_state *)t->state)->gpu) {
        tblock_state *b = t->state;
        return lm_gpu_toeplitz_block_apply_coils(b->gpu, x, s, (long long)ncoils, b->c, y, err);
    }
    if (lm_linop_coil_fused(t)) {
        for (int64_t c = 0; c < ncoils && rc == LM_OK; c++)
            rc = t->kind == LM_LINOP_TOEPLITZ ? toep_apply_coil(t, x, s + c * nv, y, c > 0, err)
                                              : tblock_apply_coil(t, x, s + c * nv, y, c > 0, err);
        return rc;
    }
    if (!tmp1 || !tmp2)
        return lm_fail(err, LM_ERR_INVALID, "%s: the coil sum needs two work vectors", t->name);
    be->zero(be, nv, y);
    for (int64_t c = 0; c < ncoils && rc == LM_OK; c++) {
        be->mul(be, nv, tmp1, s + c * nv, x);
        rc = t->apply(t, tmp1, tmp2, err);
        be->mulc_acc(be, nv, y, s + c * nv, tmp2);
    }
    return rc;
}
