/* The GPU back end of lm_backend.h over the device building blocks of
 * lm_gpu.h: vectors in device memory, each operation a kernel on the
 * calling thread's stream, errors kept sticky for lm_backend_check. */
#include "lm_backend.h"

#include <stdlib.h>
#include <string.h>

#include "lm_gpu.h"

typedef struct gpu_state {
    lm_gpu_scratch *scratch;   /* dot products */
} gpu_state;

/* Keeps the first failure of an operation. */
static void keep(lm_backend *b, lm_code rc, const lm_error *e)
{
    if (rc != LM_OK)
        lm_backend_fail(b, rc, e->msg);
}

static void *gpu_alloc_bytes(lm_backend *b, size_t bytes, const char *what)
{
    void *p = NULL;
    lm_error e = {0};
    if (b->sticky.code != LM_OK)
        return NULL;
    keep(b, lm_gpu_mem_alloc(&p, bytes, what, &e), &e);
    return p;
}

static lm_cfloat *gpu_alloc(lm_backend *b, int64_t n, const char *what)
{
    return gpu_alloc_bytes(b, (size_t)n * sizeof(lm_cfloat), what);
}

static float *gpu_alloc_real(lm_backend *b, int64_t n, const char *what)
{
    return gpu_alloc_bytes(b, (size_t)n * sizeof(float), what);
}

static void gpu_release(lm_backend *b, void *x)
{
    (void)b;
    lm_gpu_mem_free(x);
}

static void gpu_upload(lm_backend *b, void *dst, const void *host, size_t bytes)
{
    lm_error e = {0};
    if (b->sticky.code == LM_OK)
        keep(b, lm_gpu_mem_upload(dst, host, bytes, &e), &e);
}

static void gpu_download(lm_backend *b, void *host, const void *src, size_t bytes)
{
    lm_error e = {0};
    if (b->sticky.code == LM_OK)
        keep(b, lm_gpu_mem_download(host, src, bytes, &e), &e);
}

#define GPU_OP(call)                        \
    do {                                    \
        lm_error e_ = {0};                  \
        if (b->sticky.code == LM_OK)        \
            keep(b, (call), &e_);           \
    } while (0)

static void gpu_copy(lm_backend *b, int64_t n, lm_cfloat *y, const lm_cfloat *x)
{
    if (y != x)
        GPU_OP(lm_gpu_vec_copy(n, y, x, &e_));
}
static void gpu_zero(lm_backend *b, int64_t n, lm_cfloat *x) { GPU_OP(lm_gpu_vec_zero(n, x, &e_)); }
static void gpu_scale(lm_backend *b, int64_t n, lm_cfloat *x, float a) { GPU_OP(lm_gpu_vec_scale(n, x, a, &e_)); }
static void gpu_axpy(lm_backend *b, int64_t n, lm_cfloat *y, float a, const lm_cfloat *x)
{
    GPU_OP(lm_gpu_vec_axpy(n, y, a, x, &e_));
}
static void gpu_xpay(lm_backend *b, int64_t n, lm_cfloat *y, float a, const lm_cfloat *x)
{
    GPU_OP(lm_gpu_vec_xpay(n, y, a, x, &e_));
}
static void gpu_mul(lm_backend *b, int64_t n, lm_cfloat *y, const lm_cfloat *s, const lm_cfloat *x)
{
    GPU_OP(lm_gpu_vec_mul(n, y, s, x, &e_));
}
static void gpu_mulc_acc(lm_backend *b, int64_t n, lm_cfloat *y, const lm_cfloat *s, const lm_cfloat *x)
{
    GPU_OP(lm_gpu_vec_mulc_acc(n, y, s, x, &e_));
}

static double gpu_dot(lm_backend *b, int64_t n, const lm_cfloat *x, const lm_cfloat *y)
{
    gpu_state *s = b->impl;
    double v = 0;
    GPU_OP(lm_gpu_vec_dot(s->scratch, n, x, y, &v, &e_));
    return v;
}

static void gpu_cg_update(lm_backend *b, int64_t n, float a, lm_cfloat *x, const lm_cfloat *p, lm_cfloat *r,
                          const lm_cfloat *q, const lm_cfloat *bv, double out[3])
{
    gpu_state *s = b->impl;
    out[0] = out[1] = out[2] = 0;
    GPU_OP(lm_gpu_vec_cg_update(s->scratch, n, a, x, p, r, q, bv, out, &e_));
}

static void gpu_grad(lm_backend *b, const int64_t n[3], lm_cfloat *y, const lm_cfloat *x)
{
    GPU_OP(lm_gpu_grad(n, x, y, &e_));
}
static void gpu_grad_adj(lm_backend *b, const int64_t n[3], lm_cfloat *x, const lm_cfloat *y)
{
    GPU_OP(lm_gpu_grad_adj(n, y, x, &e_));
}
static void gpu_shrink(lm_backend *b, int64_t n, int groups, lm_cfloat *z, const lm_cfloat *v, float t)
{
    GPU_OP(lm_gpu_shrink(n, groups, z, v, t, &e_));
}
static double gpu_group_norm(lm_backend *b, int64_t n, int groups, const lm_cfloat *v)
{
    gpu_state *s = b->impl;
    double r = 0;
    GPU_OP(lm_gpu_vec_group_norm(s->scratch, n, groups, v, &r, &e_));
    return r;
}

static void gpu_destroy(lm_backend *b)
{
    gpu_state *s = b->impl;
    if (s)
        lm_gpu_scratch_free(s->scratch);
    free(s);
    free(b);
}

lm_code lm_backend_gpu_new(lm_backend **out, lm_error *err)
{
    *out = NULL;
    lm_code rc = lm_gpu_available(err);
    if (rc != LM_OK)
        return rc;
    lm_backend *b = lm_calloc(1, sizeof *b, err, "GPU back end");
    gpu_state *s = b ? lm_calloc(1, sizeof *s, err, "GPU back end") : NULL;
    if (!s) {
        free(b);
        return LM_ERR_NOMEM;
    }
    if ((rc = lm_gpu_scratch_new(&s->scratch, err)) != LM_OK) {
        free(s);
        free(b);
        return rc;
    }
    *b = (lm_backend){
        .name = "gpu", .device = LM_DEVICE_GPU, .threads = 1, .impl = s,
        .alloc = gpu_alloc, .release = gpu_release, .alloc_real = gpu_alloc_real,
        .upload = gpu_upload, .download = gpu_download, .copy = gpu_copy, .zero = gpu_zero,
        .scale = gpu_scale, .axpy = gpu_axpy, .xpay = gpu_xpay, .dot = gpu_dot, .cg_update = gpu_cg_update, .mul = gpu_mul,
        .mulc_acc = gpu_mulc_acc, .grad = gpu_grad, .grad_adj = gpu_grad_adj, .shrink = gpu_shrink,
        .group_norm = gpu_group_norm, .check = lm_backend_take_error, .destroy = gpu_destroy,
    };
    *out = b;
    return LM_OK;
}
