/* The CPU back end of lm_backend.h: host memory, OpenMP loops. Small
 * vectors run on one thread: a parallel region's barrier costs more than
 * the work, and far more when cores are shared. */
#include "lm_backend.h"

#include <complex.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAR_MIN 32768

void lm_backend_fail(lm_backend *b, lm_code code, const char *msg)
{
    if (b->sticky.code == LM_OK) {
        b->sticky.code = code;
        snprintf(b->sticky.msg, sizeof b->sticky.msg, "%s", msg);
    }
}

static lm_cfloat *cpu_alloc(lm_backend *b, int64_t n, const char *what)
{
    lm_error e = {0};
    lm_cfloat *x = n > 0 ? lm_alloc((size_t)n, sizeof *x, &e, what) : NULL;
    if (!x)
        lm_backend_fail(b, LM_ERR_NOMEM, n > 0 ? e.msg : "empty vector");
    return x;
}

static float *cpu_alloc_real(lm_backend *b, int64_t n, const char *what)
{
    lm_error e = {0};
    float *x = n > 0 ? lm_alloc((size_t)n, sizeof *x, &e, what) : NULL;
    if (!x)
        lm_backend_fail(b, LM_ERR_NOMEM, n > 0 ? e.msg : "empty vector");
    return x;
}

static void cpu_release(lm_backend *b, void *x)
{
    (void)b;
    free(x);
}

static void cpu_move(lm_backend *b, void *dst, const void *src, size_t bytes)
{
    (void)b;
    if (dst != src)
        memcpy(dst, src, bytes);
}

static void cpu_copy(lm_backend *b, int64_t n, lm_cfloat *y, const lm_cfloat *x)
{
    if (y == x)
        return;
#pragma omp parallel for num_threads(b->threads) schedule(static) if (n >= PAR_MIN)
    for (int64_t j = 0; j < n; j++)
        y[j] = x[j];
}

static void cpu_zero(lm_backend *b, int64_t n, lm_cfloat *x)
{
#pragma omp parallel for num_threads(b->threads) schedule(static) if (n >= PAR_MIN)
    for (int64_t j = 0; j < n; j++)
        x[j] = 0;
}

static void cpu_scale(lm_backend *b, int64_t n, lm_cfloat *x, float a)
{
#pragma omp parallel for num_threads(b->threads) schedule(static) if (n >= PAR_MIN)
    for (int64_t j = 0; j < n; j++)
        x[j] *= a;
}

static void cpu_axpy(lm_backend *b, int64_t n, lm_cfloat *y, float a, const lm_cfloat *x)
{
#pragma omp parallel for num_threads(b->threads) schedule(static) if (n >= PAR_MIN)
    for (int64_t j = 0; j < n; j++)
        y[j] += a * x[j];
}

static void cpu_xpay(lm_backend *b, int64_t n, lm_cfloat *y, float a, const lm_cfloat *x)
{
#pragma omp parallel for num_threads(b->threads) schedule(static) if (n >= PAR_MIN)
    for (int64_t j = 0; j < n; j++)
        y[j] = x[j] + a * y[j];
}

/* Sums of long vectors are made of fixed chunks added in chunk order: the
 * same bits whatever the thread count and whichever thread finishes first.
 * (OpenMP's reduction clause adds the threads' partial sums in the order
 * they finish, so the same CG or ADMM could differ in its last bits, and
 * its percent error in the second decimal, from run to run.) */
#define SUM_CHUNK 16384

static int64_t sum_chunks(int64_t n) { return (n + SUM_CHUNK - 1) / SUM_CHUNK; }

static double dot_range(int64_t lo, int64_t hi, const lm_cfloat *x, const lm_cfloat *y)
{
    double s = 0;
    for (int64_t j = lo; j < hi; j++)
        s += (double)crealf(x[j]) * crealf(y[j]) + (double)cimagf(x[j]) * cimagf(y[j]);
    return s;
}

static double cpu_dot(lm_backend *b, int64_t n, const lm_cfloat *x, const lm_cfloat *y)
{
    const int64_t nc = sum_chunks(n);
    double *part = n >= PAR_MIN ? malloc((size_t)nc * sizeof *part) : NULL;
    if (!part)
        return dot_range(0, n, x, y);
#pragma omp parallel for num_threads(b->threads) schedule(static)
    for (int64_t c = 0; c < nc; c++)
        part[c] = dot_range(c * SUM_CHUNK, c == nc - 1 ? n : (c + 1) * SUM_CHUNK, x, y);
    double s = 0;
    for (int64_t c = 0; c < nc; c++)
        s += part[c];
    free(part);
    return s;
}

static void cg_update_range(int64_t lo, int64_t hi, float a, lm_cfloat *x, const lm_cfloat *p, lm_cfloat *r,
                            const lm_cfloat *q, const lm_cfloat *bv, double out[3])
{
    double rr = 0, xr = 0, xb = 0;
    for (int64_t j = lo; j < hi; j++) {
        const lm_cfloat xj = x[j] + a * p[j], rj = r[j] - a * q[j];
        x[j] = xj;
        r[j] = rj;
        rr += (double)crealf(rj) * crealf(rj) + (double)cimagf(rj) * cimagf(rj);
        xr += (double)crealf(xj) * crealf(rj) + (double)cimagf(xj) * cimagf(rj);
        xb += (double)crealf(xj) * crealf(bv[j]) + (double)cimagf(xj) * cimagf(bv[j]);
    }
    out[0] = rr;
    out[1] = xr;
    out[2] = xb;
}

static void cpu_cg_update(lm_backend *b, int64_t n, float a, lm_cfloat *x, const lm_cfloat *p, lm_cfloat *r,
                          const lm_cfloat *q, const lm_cfloat *bv, double out[3])
{
    const int64_t nc = sum_chunks(n);
    double *part = n >= PAR_MIN ? malloc((size_t)nc * 3 * sizeof *part) : NULL;
    if (!part) {
        cg_update_range(0, n, a, x, p, r, q, bv, out);
        return;
    }
#pragma omp parallel for num_threads(b->threads) schedule(static)
    for (int64_t c = 0; c < nc; c++)
        cg_update_range(c * SUM_CHUNK, c == nc - 1 ? n : (c + 1) * SUM_CHUNK, a, x, p, r, q, bv, part + 3 * c);
    out[0] = out[1] = out[2] = 0;
    for (int64_t c = 0; c < nc; c++)
        for (int i = 0; i < 3; i++)
            out[i] += part[3 * c + i];
    free(part);
}

static void cpu_mul(lm_backend *b, int64_t n, lm_cfloat *y, const lm_cfloat *s, const lm_cfloat *x)
{
#pragma omp parallel for num_threads(b->threads) schedule(static) if (n >= PAR_MIN)
    for (int64_t j = 0; j < n; j++)
        y[j] = s[j] * x[j];
}

static void cpu_mulc_acc(lm_backend *b, int64_t n, lm_cfloat *y, const lm_cfloat *s, const lm_cfloat *x)
{
#pragma omp parallel for num_threads(b->threads) schedule(static) if (n >= PAR_MIN)
    for (int64_t j = 0; j < n; j++)
        y[j] += conjf(s[j]) * x[j];
}

int lm_grad_axes(const int64_t n[3])
{
    return (n[0] > 1) + (n[1] > 1) + (n[2] > 1);
}

/* Rows (j, k) in parallel, as lm_reg_apply; each output voxel is written by
 * its own iteration (the adjoint gathers), so no write conflicts. */
static void cpu_grad(lm_backend *b, const int64_t n[3], lm_cfloat *y, const lm_cfloat *x)
{
    const int64_t n0 = n[0], n1 = n[1], n2 = n[2], nv = n0 * n1 * n2, st[3] = {1, n0, n0 * n1};
#pragma omp parallel for num_threads(b->threads) collapse(2) schedule(static) if (nv >= PAR_MIN)
    for (int64_t k = 0; k < n2; k++)
        for (int64_t j = 0; j < n1; j++) {
            const int64_t row = k * st[2] + j * st[1], idx[3] = {0, j, k};
            int g = 0;
            for (int a = 0; a < 3; a++) {
                if (n[a] < 2)
                    continue;
                lm_cfloat *yg = y + g++ * nv + row;
                const lm_cfloat *xr = x + row;
                if (a == 0) {
                    for (int64_t i = 0; i + 1 < n0; i++)
                        yg[i] = xr[i + 1] - xr[i];
                    yg[n0 - 1] = 0;
                } else if (idx[a] + 1 < n[a]) {
                    for (int64_t i = 0; i < n0; i++)
                        yg[i] = xr[i + st[a]] - xr[i];
                } else {
                    for (int64_t i = 0; i < n0; i++)
                        yg[i] = 0;
                }
            }
        }
}

static void cpu_grad_adj(lm_backend *b, const int64_t n[3], lm_cfloat *x, const lm_cfloat *y)
{
    const int64_t n0 = n[0], n1 = n[1], n2 = n[2], nv = n0 * n1 * n2, st[3] = {1, n0, n0 * n1};
#pragma omp parallel for num_threads(b->threads) collapse(2) schedule(static) if (nv >= PAR_MIN)
    for (int64_t k = 0; k < n2; k++)
        for (int64_t j = 0; j < n1; j++) {
            const int64_t row = k * st[2] + j * st[1], idx[3] = {0, j, k};
            lm_cfloat *xr = x + row;
            for (int64_t i = 0; i < n0; i++)
                xr[i] = 0;
            int g = 0;
            for (int a = 0; a < 3; a++) {
                if (n[a] < 2)
                    continue;
                const lm_cfloat *yg = y + g++ * nv + row;
                if (a == 0) {
                    /* (D^H y)_i = y_{i-1} - y_i, the terms that exist */
                    for (int64_t i = 0; i < n0; i++)
                        xr[i] += (i > 0 ? yg[i - 1] : 0) - (i + 1 < n0 ? yg[i] : 0);
                    continue;
                }
                if (idx[a] > 0)
                    for (int64_t i = 0; i < n0; i++)
                        xr[i] += yg[i - st[a]];
                if (idx[a] + 1 < n[a])
                    for (int64_t i = 0; i < n0; i++)
                        xr[i] -= yg[i];
            }
        }
}

static void cpu_shrink(lm_backend *b, int64_t n, int groups, lm_cfloat *z, const lm_cfloat *v, float t)
{
#pragma omp parallel for num_threads(b->threads) schedule(static) if (n >= PAR_MIN)
    for (int64_t j = 0; j < n; j++) {
        float s = 0;
        for (int g = 0; g < groups; g++) {
            const lm_cfloat a = v[g * n + j];
            s += crealf(a) * crealf(a) + cimagf(a) * cimagf(a);
        }
        const float norm = sqrtf(s);
        const float f = norm > t ? 1.0f - t / norm : 0.0f;
        for (int g = 0; g < groups; g++)
            z[g * n + j] = f * v[g * n + j];
    }
}

static double group_norm_range(int64_t lo, int64_t hi, int64_t n, int groups, const lm_cfloat *v)
{
    double sum = 0;
    for (int64_t j = lo; j < hi; j++) {
        double s = 0;
        for (int g = 0; g < groups; g++) {
            const lm_cfloat a = v[g * n + j];
            s += (double)crealf(a) * crealf(a) + (double)cimagf(a) * cimagf(a);
        }
        sum += sqrt(s);
    }
    return sum;
}

static double cpu_group_norm(lm_backend *b, int64_t n, int groups, const lm_cfloat *v)
{
    const int64_t nc = sum_chunks(n);
    double *part = n >= PAR_MIN ? malloc((size_t)nc * sizeof *part) : NULL;
    if (!part)
        return group_norm_range(0, n, n, groups, v);
#pragma omp parallel for num_threads(b->threads) schedule(static)
    for (int64_t c = 0; c < nc; c++)
        part[c] = group_norm_range(c * SUM_CHUNK, c == nc - 1 ? n : (c + 1) * SUM_CHUNK, n, groups, v);
    double sum = 0;
    for (int64_t c = 0; c < nc; c++)
        sum += part[c];
    free(part);
    return sum;
}

lm_code lm_backend_take_error(lm_backend *b, lm_error *err)
{
    lm_code rc = b->sticky.code;
    if (rc != LM_OK) {
        if (err)
            *err = b->sticky;
        memset(&b->sticky, 0, sizeof b->sticky);
    }
    return rc;
}

static void cpu_destroy(lm_backend *b)
{
    free(b);
}

lm_code lm_backend_cpu_new(int threads, lm_backend **out, lm_error *err)
{
    *out = NULL;
    lm_backend *b = lm_calloc(1, sizeof *b, err, "CPU back end");
    if (!b)
        return LM_ERR_NOMEM;
    *b = (lm_backend){
        .name = "cpu", .device = LM_DEVICE_CPU, .threads = threads > 0 ? threads : omp_get_max_threads(),
        .impl = NULL, .alloc = cpu_alloc, .release = cpu_release, .alloc_real = cpu_alloc_real,
        .upload = cpu_move, .download = cpu_move, .copy = cpu_copy, .zero = cpu_zero, .scale = cpu_scale,
        .axpy = cpu_axpy, .xpay = cpu_xpay, .dot = cpu_dot, .cg_update = cpu_cg_update, .mul = cpu_mul, .mulc_acc = cpu_mulc_acc,
        .grad = cpu_grad, .grad_adj = cpu_grad_adj, .shrink = cpu_shrink, .group_norm = cpu_group_norm,
        .check = lm_backend_take_error, .destroy = cpu_destroy,
    };
    *out = b;
    return LM_OK;
}

lm_code lm_backend_for_variant(const lm_variant *v, int threads, lm_backend **out, lm_error *err)
{
    if (v && v->device == LM_DEVICE_GPU)
        return lm_backend_gpu_new(out, err);
    return lm_backend_cpu_new(threads, out, err);
}

void lm_backend_free(lm_backend *b)
{
    if (b)
        b->destroy(b);
}
