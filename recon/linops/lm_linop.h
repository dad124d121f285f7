/* Linear operators on a back end's vectors (lm_backend.h): what the
 * iterative algorithms see of the encoding, the regularisers and their
 * sums. An operator maps n_in values to n_out values, both in its back
 * end's memory; apply may use x == y only where the operator says so
 * (none of the ones here do).
 *
 * Operators compose (lm_linop_algebra.c, after BART's linops/): chains,
 * sums, stacks, point-wise (diagonal) multiplies, coil maps, a block
 * repeat over coils, and the adjoint of any of them. An operator is
 * reference counted: a composition takes a reference to its parts, and
 * lm_linop_free drops one, so parts may be freed in any order.
 *
 * An operator may carry its normal operator A^H A (lm_linop_set_normal):
 * the Fourier operator F carries F^H F through Q (Toeplitz), and
 * lm_linop_gram builds the fastest A^H A it recognises from a
 * composition (docs/ARCHITECTURE.md, "Operators"). */
#ifndef LM_LINOP_H
#define LM_LINOP_H

#include <stdint.h>

#include "lm_backend.h"
#include "lm_reg.h"

typedef struct lm_linop lm_linop;

/* What an operator is, for lm_linop_gram's recognition of compositions;
 * LM_LINOP_OTHER for every leaf that needs no recognition. */
typedef enum lm_linop_kind {
    LM_LINOP_OTHER = 0,
    LM_LINOP_CHAIN,   /* parts[1] after parts[0] */
    LM_LINOP_SUM,
    LM_LINOP_STACK,
    LM_LINOP_CDIAG,
    LM_LINOP_MAPS,    /* coil maps: N -> coils x N */
    LM_LINOP_REPEAT,  /* parts[0] on each of count blocks */
    LM_LINOP_ADJOINT, /* parts[0]^H */
    LM_LINOP_FOURIER, /* F: image -> samples */
    LM_LINOP_TOEPLITZ,       /* F^H F through Q */
    LM_LINOP_TOEPLITZ_BLOCK  /* the time-segmented F_t^H F_t */
} lm_linop_kind;

struct lm_linop {
    int64_t n_in, n_out;
    int refs;             /* references held (1 when made) */
    lm_linop_kind kind;
    int nparts;           /* the parts a composition holds references to */
    lm_linop **parts;
    lm_linop *normal;     /* A^H A when the operator knows a fast one (a reference), else NULL */
    lm_backend *be;
    const char *name;
    double diag;          /* mean of the diagonal when known, else 0 */
    lm_code (*apply)(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err);
    /* Optional: x = A^H y (n_out values in, n_in out; x != y). The
     * sparsifying transforms of the priors (lm_prior.h) have one. */
    lm_code (*adjoint)(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err);
    void (*destroy)(lm_linop *op);   /* frees state (not be) */
    void *state;
};

lm_code lm_linop_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err);
/* A^H y; LM_ERR_UNSUPPORTED when the operator has no adjoint. */
lm_code lm_linop_adjoint(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err);
/* Drops one reference; frees the operator (and its references to its
 * parts) at the last. */
void lm_linop_free(lm_linop *op);
/* Takes a reference: op, for chaining. */
lm_linop *lm_linop_ref(lm_linop *op);
/* A new operator of n_in -> n_out on be with one reference, for the
 * constructors of leaves (state, apply, adjoint and destroy set by the
 * caller). NULL and LM_ERR_NOMEM on failure. */
lm_linop *lm_linop_new(lm_backend *be, int64_t n_in, int64_t n_out, const char *name, lm_error *err);

/* y = A x + c B x for square A and B on one back end (a reference to
 * each). */
lm_code lm_linop_sum(lm_linop *a, lm_linop *b, double c, lm_linop **out, lm_error *err);

/* ---- composition (lm_linop_algebra.c); each takes references ---- */

/* B A: y = B (A x); adjoint A^H (B^H y). */
lm_code lm_linop_chain(lm_linop *a, lm_linop *b, lm_linop **out, lm_error *err);
/* sum_i c_i A_i over n operators of one shape (any n_in, n_out). */
lm_code lm_linop_sum_n(int n, lm_linop *const *ops, const double *c, lm_linop **out, lm_error *err);
/* [A_1; A_2; ...]: one input, the outputs one after another; adjoint the
 * sum of the parts' adjoints. */
lm_code lm_linop_stack(int n, lm_linop *const *ops, lm_linop **out, lm_error *err);
/* A^H as an operator (apply and adjoint swapped). */
lm_code lm_linop_adjoint_op(lm_linop *a, lm_linop **out, lm_error *err);

/* Point-wise multiply by d (n values): y = d . x, adjoint conj(d) . y.
 * d in host memory is copied to the back end; with LM_CDIAG_BORROW it is
 * already there and must outlive the operator. */
#define LM_CDIAG_BORROW 1
lm_code lm_linop_cdiag(lm_backend *be, int64_t n, const lm_cfloat *d, int flags, lm_linop **out,
                       lm_error *err);
/* Coil maps S: N -> ncoils x N, y_c = s_c . x; adjoint sum_c conj(s_c) y_c.
 * s: ncoils x N values in the back end's memory, borrowed (must outlive
 * the operator). */
lm_code lm_linop_maps(lm_backend *be, int64_t nvox, int64_t ncoils, const lm_cfloat *s, lm_linop **out,
                      lm_error *err);
/* I_count (x) A: A on each of count consecutive blocks (coils). */
lm_code lm_linop_repeat(lm_linop *a, int64_t count, lm_linop **out, lm_error *err);

/* y = sum_c conj(s_c) . T (s_c . x) over ncoils maps (s: ncoils x N on
 * T's back end; x != y): the coil sum of a SENSE normal operator. Fused
 * for the Toeplitz operators (the map read in the product's first pass,
 * the sum in its last; on a GPU the block product batches coils); for any
 * other square T by multiplies around T, with tmp1 and tmp2 (N values
 * each on the back end, unused by the fused forms, may then be NULL). */
lm_code lm_linop_coil_normal(lm_linop *t, const lm_cfloat *x, const lm_cfloat *s, int64_t ncoils, lm_cfloat *y,
                             lm_cfloat *tmp1, lm_cfloat *tmp2, lm_error *err);
/* Whether lm_linop_coil_normal fuses for t (needs no work vectors). */
int lm_linop_coil_fused(const lm_linop *t);

/* A's normal operator is n (a reference is taken; replaces any before). */
void lm_linop_set_normal(lm_linop *a, lm_linop *n);
/* A^H A: A's own normal operator when it carries one; for repeat(F) after
 * maps S with F carrying F^H F, the coil sum sum_c S_c^H (F^H F) S_c fused
 * as the Toeplitz products allow; else A^H (A x) by two applications.
 * A new reference either way. */
lm_code lm_linop_gram(lm_linop *a, lm_linop **out, lm_error *err);

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
/* The device operator inside an F^H F of lm_linop_toeplitz on a GPU
 * (borrowed), NULL for any other operator: for sharing its scratch and
 * streaming its FFT(Q) (lm_gpu.h). */
struct lm_gpu_toeplitz *lm_linop_toeplitz_gpu(const lm_linop *op);

/* The time-segmented normal operator's core (lm_toeplitz_block.h on the
 * CPU, lm_gpu_toeplitz_block on a GPU): L segments, q the L(L+1)/2 blocks
 * Q_ll' in host memory, or in the back end's memory when q_on_backend; c
 * the L x N phases c_l in the back end's memory (borrowed: must outlive
 * the operator). apply: sum_{l,l'} C_l^H T_ll' C_l' x; lm_linop_coil_normal
 * with the coil maps around it (on a GPU up to ncoils maps at once).
 * diag is left 0 (the encoding knows it). */
lm_code lm_linop_toeplitz_block(lm_backend *be, const int64_t n[3], int L, const lm_cfloat *q, int q_on_backend,
                                const lm_cfloat *c, int ncoils, lm_linop **out, lm_error *err);

#endif
