/* The block Toeplitz operator of time-segmented off-resonance on the CPU
 * (Fessler et al. 2005; lm_timeseg.h, lm_encoding.h). One coil of
 *
 *   E^H E = sum_c S_c^H [ sum_{l,l'} C_l^H T_ll' C_l' ] S_c,
 *   (T_ll' x)(a) = (1/N^2) sum_b Q_ll'(x_a - x_b) x(b),
 *   Q_ll'(x) = sum_m |phi(k_m)|^2 conj(b_l(t_m)) b_l'(t_m) exp(+i 2 pi k_m . x),
 *
 * with C_l = diag(c_l), c_l(x) = exp(-i 2 pi f(x) tau_l). Q_l'l(x) =
 * conj(Q_ll'(-x)), so only the L(L+1)/2 blocks l <= l' are given, and the
 * L x L matrix of their FFTs is Hermitian at every frequency. An
 * application: L forward FFTs of the zero-padded c_l' s x on the 2x grid,
 * the L x L product per frequency, L inverse FFTs, cropped and combined
 * with conj(c_l). The GPU twin is lm_gpu_toeplitz_block (lm_gpu.h). */
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
 * (lm_points_q_grid order), pair (l, l') at lm_block_pair(L, l, l'). */
lm_code lm_toeplitz_block_new(const int64_t n[3], int L, const lm_cfloat *q, int threads,
                              lm_toeplitz_block **out, lm_error *err);
/* y = conj(s) . sum_{l,l'} conj(c_l) . T_ll' (c_l' . s . x), added to y
 * when accumulate; c: L x N phases (c_l at c + l N); s NULL: 1; x != y.
 * Not reentrant on one operator. */
void lm_toeplitz_block_apply_coil(lm_toeplitz_block *t, const lm_cfloat *x, const lm_cfloat *s, const lm_cfloat *c,
                                  lm_cfloat *y, int accumulate);
int lm_toeplitz_block_segments(const lm_toeplitz_block *t);
void lm_toeplitz_block_free(lm_toeplitz_block *t);

#endif
