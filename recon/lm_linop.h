/* Linear operators on a back end's vectors (lm_backend.h): what the
 * iterative algorithms see of the encoding, the regularisers and their
 * sums. An operator maps n_in values to n_out values, both in its back
 * end's memory; apply may use x == y only where the operator says so
 * (none of the ones here do). */
#ifndef LM_LINOP_H
#define LM_LINOP_H

#include <stdint.h>

#include "lm_backend.h"
#include "lm_reg.h"

typedef struct lm_linop lm_linop;

struct lm_linop {
    int64_t n_in, n_out;
    lm_backend *be;
    const char *name;
    double diag;          /* mean of the diagonal when known, else 0 */
    lm_code (*apply)(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err);
    /* Optional, square operators: y = conj(s) . A (s . x), added to y when
     * accumulate (x != y): one coil of a SENSE normal operator, fused where
     * the back end can (the GPU Toeplitz product reads s in its first pass
     * and accumulates in its last). NULL: the caller multiplies itself. */
    lm_code (*apply_coil)(lm_linop *op, const lm_cfloat *x, const lm_cfloat *s, lm_cfloat *y, int accumulate,
                          lm_error *err);
    /* Optional: y = sum_c conj(s_c) . A (s_c . x) over ncoils maps (s: ncoils
     * x n_in), where the back end batches coils (the GPU block Toeplitz
     * product reads each FFT(Q) block once per group of coils). */
    lm_code (*apply_coils)(lm_linop *op, const lm_cfloat *x, const lm_cfloat *s, int64_t ncoils, lm_cfloat *y,
                           lm_error *err);
    /* Optional: x = A^H y (n_out values in, n_in out; x != y). The
     * sparsifying transforms of the priors (lm_prior.h) have one. */
    lm_code (*adjoint)(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err);
    void (*destroy)(lm_linop *op);   /* frees state (not be) */
    void *state;
};

lm_code lm_linop_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err);
/* A^H y; LM_ERR_UNSUPPORTED when the operator has no adjoint. */
lm_code lm_linop_adjoint(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err);
void lm_linop_free(lm_linop *op);

/* y = A x + c B x for square A and B on one back end. The sum does not own
 * A or B (free them after it). */
lm_code lm_linop_sum(lm_linop *a, lm_linop *b, double c, lm_linop **out, lm_error *err);

/* W^H W of a regulariser on a back end (lm_reg.h); weights (3N floats,
 * host memory) only for either anatomical kind (lm_reg_weighted), copied. For LM_REG_TV and
 * LM_REG_WAVELET it is G^H G of their ADMM transform (lm_reg_apply). */
lm_code lm_linop_reg(lm_backend *be, const int64_t n[3], lm_reg_kind kind, const float *weights,
                     lm_linop **out, lm_error *err);

/* F^H F through Q (lm_toeplitz.h on the CPU, lm_gpu_toeplitz on a GPU):
 * q holds lm_q_count(n) raw values in host memory, or in the back end's
 * memory when q_on_backend. diag = Re Q(0) / N^2. */
lm_code lm_linop_toeplitz(lm_backend *be, const int64_t n[3], const lm_cfloat *q, int q_on_backend,
                          lm_linop **out, lm_error *err);

/* The time-segmented normal operator's core (lm_toeplitz_block.h on the
 * CPU, lm_gpu_toeplitz_block on a GPU): L segments, q the L(L+1)/2 blocks
 * Q_ll' in host memory, or in the back end's memory when q_on_backend; c
 * the L x N phases c_l in the back end's memory (borrowed: must outlive
 * the operator). apply: sum_{l,l'} C_l^H T_ll' C_l' x; apply_coil with the
 * coil map around it; on a GPU apply_coils for up to ncoils maps at once.
 * diag is left 0 (the encoding knows it). */
lm_code lm_linop_toeplitz_block(lm_backend *be, const int64_t n[3], int L, const lm_cfloat *q, int q_on_backend,
                                const lm_cfloat *c, int ncoils, lm_linop **out, lm_error *err);

#endif
