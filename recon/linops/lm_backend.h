/* Where the solvers' vectors live and the few operations the solvers need
 * on them, provided by a CPU and a GPU back end (BART's md_* functions with
 * a GPU back end are the model). The iterative algorithms (lm_cg.h) are
 * written once over this interface and lm_linop.h, so they run on either
 * device from one source.
 *
 * Vectors are arrays of complex floats in the back end's memory (host
 * memory for the CPU, device memory for the GPU); only upload/download
 * cross. Operations are ordered; a GPU back end may run them
 * asynchronously (dot returns to the host and so synchronises). Errors are
 * sticky: an operation that fails records the first error and later ones
 * do nothing useful; lm_backend_check returns it (solvers call it once per
 * iteration and after set-up). */
#ifndef LM_BACKEND_H
#define LM_BACKEND_H

#include <stdint.h>

#include "lm_kernels.h"
#include "lm_types.h"

typedef struct lm_backend lm_backend;

struct lm_backend {
    const char *name;        /* "cpu" or "gpu" */
    lm_device_kind device;
    int threads;             /* CPU worker threads (0: all cores) */
    void *impl;              /* the back end's own state */
    lm_error sticky;         /* first error since the last check */

    /* n complex values; NULL (and a sticky LM_ERR_NOMEM) on failure. */
    lm_cfloat *(*alloc)(lm_backend *b, int64_t n, const char *what);
    void (*release)(lm_backend *b, void *x);
    /* n real floats (weights, masks). */
    float *(*alloc_real)(lm_backend *b, int64_t n, const char *what);
    void (*upload)(lm_backend *b, void *dst, const void *host, size_t bytes);
    void (*download)(lm_backend *b, void *host, const void *src, size_t bytes);

    void (*copy)(lm_backend *b, int64_t n, lm_cfloat *y, const lm_cfloat *x);  /* y = x */
    void (*zero)(lm_backend *b, int64_t n, lm_cfloat *x);
    void (*scale)(lm_backend *b, int64_t n, lm_cfloat *x, float a);             /* x *= a */
    void (*axpy)(lm_backend *b, int64_t n, lm_cfloat *y, float a, const lm_cfloat *x); /* y += a x */
    void (*xpay)(lm_backend *b, int64_t n, lm_cfloat *y, float a, const lm_cfloat *x); /* y = x + a y */
    /* Re <x, y> = Re sum conj(x) y, accumulated in double in a fixed order
     * (runs are reproducible). */
    double (*dot)(lm_backend *b, int64_t n, const lm_cfloat *x, const lm_cfloat *y);
    /* CG's update in one pass over the vectors: x += a p, r -= a q, then
     * out[0] = <r, r>, out[1] = Re <x, r>, out[2] = Re <x, bv> of the new x
     * and r, in double in a fixed order. Two axpys and three dots would read
     * the vectors nine times and, on a GPU, wait three times. */
    void (*cg_update)(lm_backend *b, int64_t n, float a, lm_cfloat *x, const lm_cfloat *p, lm_cfloat *r,
                      const lm_cfloat *q, const lm_cfloat *bv, double out[3]);
    /* y = s .* x (coil weighting), and y += conj(s) .* x (coil combination). */
    void (*mul)(lm_backend *b, int64_t n, lm_cfloat *y, const lm_cfloat *s, const lm_cfloat *x);
    void (*mulc_acc)(lm_backend *b, int64_t n, lm_cfloat *y, const lm_cfloat *s, const lm_cfloat *x);

    /* The non-quadratic priors (lm_admm.h). The discrete gradient D of a
     * volume of n voxels: forward differences along each axis with n[a] > 1
     * (lm_grad_axes of them), 0 past the last voxel (Neumann, as lm_reg.h),
     * y holding one block of N values per axis, axis-major. grad_adj is
     * D^H, so D^H D is lm_reg.h's gradient W^H W. x != y. */
    void (*grad)(lm_backend *b, const int64_t n[3], lm_cfloat *y, const lm_cfloat *x);
    void (*grad_adj)(lm_backend *b, const int64_t n[3], lm_cfloat *x, const lm_cfloat *y);
    /* Group soft threshold, the prox of t sum_j ||v_j||_2 over groups blocks
     * of n values (v_j = (v[j], v[n + j], ...)): z_j = v_j max(0, 1 - t /
     * ||v_j||). groups 1: complex soft threshold. z == v allowed. */
    void (*shrink)(lm_backend *b, int64_t n, int groups, lm_cfloat *z, const lm_cfloat *v, float t);
    /* sum_j ||v_j||_2 (as shrink), in double in a fixed order. */
    double (*group_norm)(lm_backend *b, int64_t n, int groups, const lm_cfloat *v);

    /* The first error since the last check (LM_OK if none); clears it. */
    lm_code (*check)(lm_backend *b, lm_error *err);
    void (*destroy)(lm_backend *b);
};

/* Axes with more than one voxel: the gradient's blocks. */
int lm_grad_axes(const int64_t n[3]);

/* threads 0: all cores. */
lm_code lm_backend_cpu_new(int threads, lm_backend **out, lm_error *err);
/* The calling thread's current CUDA device; LM_ERR_UNSUPPORTED with the
 * reason when there is none (built without CUDA, no driver, ...). */
lm_code lm_backend_gpu_new(lm_backend **out, lm_error *err);
/* CPU or GPU as the kernel variant's device. */
lm_code lm_backend_for_variant(const lm_variant *v, int threads, lm_backend **out, lm_error *err);
void lm_backend_free(lm_backend *b);

/* Returns b's sticky error (copied into err) and clears it: the check of
 * every back end. */
lm_code lm_backend_take_error(lm_backend *b, lm_error *err);

/* Records err's code and message as b's sticky error unless one is there
 * (for back-end implementations and operators built on them). */
void lm_backend_fail(lm_backend *b, lm_code code, const char *msg);

#endif
