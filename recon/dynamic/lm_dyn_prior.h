/* The priors of a dynamic reconstruction (docs/dynamic.md) as one lm_prior
 * for ADMM (lm_admm.h):
 *
 *   lambda_t R_time(x) + lambda_s R_space(x),
 *
 *   R_time  ttv   ||D_t x||_1, temporal total variation (complex magnitudes)
 *           ttik  ||D_t x||_2^2, temporal Tikhonov
 *           llr   sum over blocks b of ||C_b x||_*, locally low rank: C_b x
 *                 the Casorati matrix (block voxels x frames) of block b of a
 *                 fixed grid of block^3 (block^2 in 2D) voxels, ||.||_* its
 *                 nuclear norm; prox: singular-value thresholding (LAPACKE)
 *   R_space tv    sum_t TV(x_t), each frame's isotropic total variation
 *
 * Several terms are one prior: G stacks their transforms, G^H G sums their
 * normal operators, and the proximal map is separable: each term's prox on
 * its block of the coefficients, with the step scaled by its weight. ADMM
 * then runs with lambda 1 (the weights live in the prior). One term is the
 * same with a stack of one. */
#ifndef LM_DYN_PRIOR_H
#define LM_DYN_PRIOR_H

#include "lm_prior.h"

typedef enum lm_dyn_time {
    LM_DYN_TIME_NONE = 0,
    LM_DYN_TIME_TV,       /* ttv */
    LM_DYN_TIME_TIKHONOV, /* ttik */
    LM_DYN_TIME_LLR       /* llr */
} lm_dyn_time;

#define LM_DYN_LLR_BLOCK_DEFAULT 8

typedef struct lm_dyn_prior_desc {
    int64_t n[3];        /* one frame's matrix */
    int64_t frames;
    lm_dyn_time time;
    double lambda_t;     /* absolute weight of R_time */
    int space_tv;        /* add R_space */
    double lambda_s;     /* absolute weight of R_space */
    int llr_block;       /* llr: block edge in voxels (0: LM_DYN_LLR_BLOCK_DEFAULT) */
} lm_dyn_prior_desc;

typedef struct lm_dyn_prior lm_dyn_prior;

/* A term with weight 0 is left out; LM_ERR_INVALID when none is left (the
 * caller solves without a prior then). */
lm_code lm_dyn_prior_new(lm_backend *be, const lm_dyn_prior_desc *d, lm_dyn_prior **out, lm_error *err);
/* What lm_admm takes (with lambda 1). */
const lm_prior *lm_dyn_prior_get(const lm_dyn_prior *p);
void lm_dyn_prior_free(lm_dyn_prior *p);

/* The locally low-rank prox alone, for tests: z = SVT_t of every block's
 * Casorati matrix of v (frames x N values, frame-major, back-end memory). */
void lm_dyn_llr_prox(lm_backend *be, const int64_t n[3], int64_t frames, int block, lm_cfloat *z, const lm_cfloat *v,
                     double t);
/* sum over blocks of the nuclear norms. */
double lm_dyn_llr_value(lm_backend *be, const int64_t n[3], int64_t frames, int block, const lm_cfloat *v);

#endif
