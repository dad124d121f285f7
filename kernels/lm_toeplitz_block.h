/* The block Toeplitz operator of time-segmented off-resonance on the CPU
 * (Fessler et al. 2005; lm_timeseg.h, lm_encoding.h). With coils,
 *
 *   E^H E = sum_c S_c^H [ sum_{l,l'} C_l^H T_ll' C_l' ] S_c,
 *   (T_ll' x)(a) = (1/N^2) sum_b Q_ll'(x_a - x_b) x(b),
 *   Q_ll'(x) = sum_m |phi(k_m)|^2 conj(b_l(t_m)) b_l'(t_m) exp(+i 2 pi k_m . x),
 *
 * with C_l = diag(c_l), c_l(x) = exp(-i 2 pi f(x) tau_l). Q_l'l(x) =
 * conj(Q_ll'(-x)), so only the L(L+1)/2 blocks l <= l' are given, and the
 * L x L matrix of their FFTs is Hermitian at every frequency. An
 * application: per coil L forward FFTs of the zero-padded c_l' s_c x on
 * the 2x grid, the L x L product per frequency, L inverse FFTs, cropped and
 * combined with conj(c_l s_c). The coils of a group go through together so
 * that each frequency's L x L matrix is read once for all of them. The GPU
 * twin is lm_gpu_toeplitz_block (lm_gpu.h). */
#ifndef LM_TOEPLITZ_BLOCK_H
#define LM_TOEPLITZ_BLOCK_H

#include <stdint.h>

#include "lm_types.h"

typedef struct lm_toeplitz_block lm_toeplitz_block;

/* The most segments an operator takes. */
#define LM_BLOCK_MAX_L 64

/* Index of the pair (l, lp), l <= lp, in the upper triangle stored row by
 * row: (0,0), (0,1), .., (0,L-1), (1,1), .. ; L(L+1)/2 pairs. */
static inline int64_t lm_block_pair(int L, int l, int lp)
{
    return (int64_t)l * L - (int64_t)l * (l - 1) / 2 + (lp - l);
}

/* q: L(L+1)/2 blocks of lm_q_count(n) raw values on the 2x grid
 * (lm_points_q_grid order), pair (l, l') at lm_block_pair(L, l, l').
 * max_coils: the most coils one pass takes together (the work array holds
 * max_coils x L half-transformed images; fewer when they would take more
 * than a few hundred MB); more coils go in groups. lm_toeplitz_block_new
 * is max_coils 1. */
lm_code lm_toeplitz_block_new_coils(const int64_t n[3], int L, const lm_cfloat *q, int threads, int max_coils,
                                    lm_toeplitz_block **out, lm_error *err);
lm_code lm_toeplitz_block_new(const int64_t n[3], int L, const lm_cfloat *q, int threads,
                              lm_toeplitz_block **out, lm_error *err);
/* y = sum_k conj(s_k) . sum_{l,l'} conj(c_l) . T_ll' (c_l' . s_k . x) over
 * ncoils maps s (coil k at s + k N; s NULL: one coil, s = 1), added to y
 * when accumulate; c: L x N phases (c_l at c + l N); x != y. Not reentrant
 * on one operator. */
void lm_toeplitz_block_apply_sense(lm_toeplitz_block *t, const lm_cfloat *x, const lm_cfloat *s, int64_t ncoils,
                                   const lm_cfloat *c, lm_cfloat *y, int accumulate);
/* One coil: lm_toeplitz_block_apply_sense with ncoils 1. */
void lm_toeplitz_block_apply_coil(lm_toeplitz_block *t, const lm_cfloat *x, const lm_cfloat *s, const lm_cfloat *c,
                                  lm_cfloat *y, int accumulate);
int lm_toeplitz_block_segments(const lm_toeplitz_block *t);
void lm_toeplitz_block_free(lm_toeplitz_block *t);

#endif
