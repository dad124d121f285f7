/* Helpers shared by the coil-map estimators (not public API). */
#ifndef LM_COILS_IMPL_H
#define LM_COILS_IMPL_H

#include <lapacke.h>
#include <math.h>

#include "lm_coils.h"

/* Separable linear map of nc complex volumes:
 *   out[j0 + o0 (j1 + o1 (j2 + o2 c))] =
 *       sum_i M0[j0 n0 + i0] M1[j1 n1 + i1] M2[j2 n2 + i2] in[i0 + n0 (i1 + n1 (i2 + n2 c))]
 * with M_a row-major o_a x n_a. Passes run z, y, x (the maps here shrink a
 * small input along z first). threads > 0. */
lm_code lm_sep3(const int64_t n[3], const int64_t o[3], const lm_cdouble *const m[3], int64_t nc,
                const lm_cdouble *in, lm_cdouble *out, int threads, lm_error *err);

/* exp(sign i 2 pi t) */
static inline lm_cdouble lm_cis(double sign, double t)
{
    double s, c;
    sincos(sign * 2.0 * 3.14159265358979323846 * t, &s, &c);
    return c + I * s;
}

/* Workspace for the largest eigenpair of small Hermitian matrices (one per
 * thread): LAPACK zheevr with il = iu = n. */
typedef struct lm_eig_ws {
    lapack_int n, lwork, lrwork, liwork;
    lm_cdouble *a, *z, *work;
    double *w, *rwork;
    lapack_int *iwork, *isuppz;
} lm_eig_ws;

int lm_eig_ws_init(lm_eig_ws *ws, int64_t n);
void lm_eig_ws_free(lm_eig_ws *ws);
/* ws->a holds the matrix column-major (lower triangle read; destroyed).
 * Returns 0 and the largest eigenvalue and its unit eigenvector, or non-zero. */
int lm_eig_top(lm_eig_ws *ws, double *lambda, lm_cdouble *v);

/* First principal component u (unit C-vector) of the calibration data:
 * top eigenvector of sum_k y(k) y(k)^H. Fails on data without energy. */
/* Channel correlations of m samples x nc channels (channel c at d + c m):
 * g[i nc + j] = sum_s d_i(s) conj(d_j(s)), Hermitian, in double, one (i, j)
 * pair per OpenMP task. */
void lm_channel_gram(const lm_cfloat *d, int64_t m, int64_t nc, lm_cdouble *g);

lm_code lm_calib_principal(const lm_calib *cal, lm_cdouble *u, lm_error *err);

/* v <- v conj(r)/|r| with r = u^H v, so that the virtual coil u^H v is real
 * and positive (BART's rotation to the first principal component). */
static inline void lm_phase_ref(lm_cdouble *v, const lm_cdouble *u, int64_t nc)
{
    lm_cdouble r = 0;
    for (int64_t c = 0; c < nc; c++)
        r += conj(u[c]) * v[c];
    double a = cabs(r);
    if (a > 0) {
        lm_cdouble ph = conj(r) / a;
        for (int64_t c = 0; c < nc; c++)
            v[c] *= ph;
    }
}

#endif
