/* The CPU block Toeplitz operator (lm_toeplitz_block.h) against a double
 * brute-force convolution, with random (not Hermitian) blocks Q_ll', random
 * phases and maps, on grids that take every path of its passes: 3D, 2D,
 * 1D, a flat first axis, odd sizes, coils in several groups, accumulate,
 * and a 2D grid large enough to run its loops on two threads. The operator
 * is y = sum_k conj(s_k) sum_{l,l'} conj(c_l) T_ll' (c_l' s_k x) with
 * T_ll' the convolution with Q_ll'(d) / N^2 for l <= l' and with
 * conj(Q_l'l(-d)) / N^2 below the diagonal. Tolerance: 2e-5 relative
 * (single precision FFTs of at most 96 points per axis). */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fm_common.h"
#include "lm_test.h"
#include "lm_toeplitz_block.h"

static double complex crand(void)
{
    return CMPLX(fm_uniform() - 0.5, fm_uniform() - 0.5);
}

static void check_case(int64_t n0, int64_t n1, int64_t n2, int L, int coils, int max_coils, int use_maps,
                       int accumulate)
{
    const int64_t n[3] = {n0, n1, n2}, nv = n0 * n1 * n2, nq = lm_q_count(n), np = (int64_t)L * (L + 1) / 2;
    const int64_t p[3] = {n0 > 1 ? 2 * n0 : 1, n1 > 1 ? 2 * n1 : 1, n2 > 1 ? 2 * n2 : 1};
    lm_cfloat *q = malloc((size_t)(nq * np) * sizeof *q), *c = malloc((size_t)(nv * L) * sizeof *c);
    lm_cfloat *s = malloc((size_t)(nv * coils) * sizeof *s), *x = malloc((size_t)nv * sizeof *x);
    lm_cfloat *y = malloc((size_t)nv * sizeof *y);
    double complex *ref = malloc((size_t)nv * sizeof *ref), *u = malloc((size_t)(nv * L) * sizeof *u);
    for (int64_t i = 0; i < nq * np; i++)
        q[i] = (lm_cfloat)crand();
    for (int64_t i = 0; i < nv * L; i++)
        c[i] = (lm_cfloat)cexp(I * 2 * M_PI * fm_uniform());
    for (int64_t i = 0; i < nv * coils; i++)
        s[i] = (lm_cfloat)crand();
    for (int64_t i = 0; i < nv; i++) {
        x[i] = (lm_cfloat)crand();
        y[i] = (lm_cfloat)crand();
        ref[i] = accumulate ? y[i] : 0;
    }
    const double inv = 1.0 / ((double)nv * (double)nv);
    for (int k = 0; k < (use_maps ? coils : 1); k++) {
        for (int l = 0; l < L; l++) /* u_l = c_l s_k x */
            for (int64_t i = 0; i < nv; i++)
                u[l * nv + i] = (double complex)c[l * nv + i] * (use_maps ? s[k * nv + i] : 1) * x[i];
        for (int64_t a = 0; a < nv; a++) {
            const int64_t a0 = a % n0, a1 = a / n0 % n1, a2 = a / (n0 * n1);
            double complex v = 0;
            for (int l = 0; l < L; l++) {
                double complex vl = 0;
                for (int lp = 0; lp < L; lp++) {
                    const int lo = l <= lp ? l : lp, hi = l <= lp ? lp : l;
                    const lm_cfloat *qb = q + lm_block_pair(L, lo, hi) * nq;
                    for (int64_t b = 0; b < nv; b++) {
                        int64_t d0 = a0 - b % n0, d1 = a1 - b / n0 % n1, d2 = a2 - b / (n0 * n1);
                        if (l > lp) /* conj(Q_l'l(-d)) */
                            d0 = -d0, d1 = -d1, d2 = -d2;
                        const int64_t qi = (p[0] > 1 ? d0 + n0 : 0) + p[0] * ((p[1] > 1 ? d1 + n1 : 0) +
                                                                              p[1] * (p[2] > 1 ? d2 + n2 : 0));
                        const double complex qv = l > lp ? conj((double complex)qb[qi]) : (double complex)qb[qi];
                        vl += qv * u[lp * nv + b];
                    }
                }
                v += conj((double complex)c[l * nv + a]) * vl;
            }
            ref[a] += (use_maps ? conj((double complex)s[k * nv + a]) : 1) * v * inv;
        }
    }
    lm_error err = {0};
    lm_toeplitz_block *t = NULL;
    CHECK_OK(lm_toeplitz_block_new_coils(n, L, q, 2, max_coils, &t, &err), &err);
    if (t) {
        lm_toeplitz_block_apply_sense(t, x, use_maps ? s : NULL, coils, c, y, accumulate);
        double num = 0, den = 0;
        for (int64_t i = 0; i < nv; i++) {
            num += pow(cabs((double complex)y[i] - ref[i]), 2);
            den += pow(cabs(ref[i]), 2);
        }
        const double r = sqrt(num / den);
        printf("%lldx%lldx%lld, L %d, %d coil(s) by %d%s%s: rel %.2e\n", (long long)n0, (long long)n1, (long long)n2,
               L, use_maps ? coils : 1, max_coils, use_maps ? ", maps" : "", accumulate ? ", accumulate" : "", r);
        CHECK_MSG(r < 2e-5, "%lldx%lldx%lld L %d: rel %.3e", (long long)n0, (long long)n1, (long long)n2, L, r);
        CHECK(lm_toeplitz_block_segments(t) == L);
    }
    lm_toeplitz_block_free(t);
    free(q), free(c), free(s), free(x), free(y), free(ref), free(u);
}

int main(void)
{
    check_case(6, 5, 4, 3, 3, 2, 1, 1);  /* 3D, two groups, accumulate */
    check_case(7, 6, 1, 2, 1, 1, 0, 0);  /* 2D, no maps */
    check_case(10, 1, 1, 3, 2, 4, 1, 0); /* 1D: the fused pass reads x and writes y */
    check_case(1, 6, 5, 2, 2, 2, 1, 1);  /* a flat first axis */
    check_case(5, 1, 6, 2, 1, 1, 1, 0);  /* a flat middle axis */
    check_case(48, 40, 1, 3, 3, 3, 1, 0); /* large enough for two threads */
    /* refusals */
    lm_error err = {0};
    lm_toeplitz_block *t = NULL;
    const int64_t n1[3] = {1, 1, 1}, n8[3] = {8, 8, 1};
    lm_cfloat q1[64] = {0};
    CHECK(lm_toeplitz_block_new(n1, 1, q1, 1, &t, &err) == LM_ERR_INVALID && !t);
    CHECK(lm_toeplitz_block_new(n8, 0, q1, 1, &t, &err) == LM_ERR_INVALID && !t);
    CHECK(lm_toeplitz_block_new(n8, 2, NULL, 1, &t, &err) == LM_ERR_INVALID && !t);
    return lm_test_finish("toeplitz_block");
}
