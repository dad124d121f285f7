/* Shared helpers for the solver tests: a reproducible random generator and
 * double-precision brute-force versions of Q, F and F^H (no kernels used),
 * in the conventions of docs/conventions.md section 2 and lm_kernels.h. */
#ifndef SOLVER_COMMON_H
#define SOLVER_COMMON_H

#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "lm_types.h"

static uint64_t tst_rng = 88172645463325252ull;

static inline double tst_uniform(void) /* [0, 1) */
{
    tst_rng ^= tst_rng << 13;
    tst_rng ^= tst_rng >> 7;
    tst_rng ^= tst_rng << 17;
    return (double)(tst_rng >> 11) * (1.0 / 9007199254740992.0);
}

/* m random samples filling |k| < n/2 per axis (kz = 0 for 2D). */
static inline lm_traj *tst_random_traj(const lm_geom *g, int64_t m)
{
    lm_traj *t = lm_traj_new(m, g->n[2] > 1 ? 3 : 2, NULL);
    for (int64_t j = 0; j < m; j++)
        for (int a = 0; a < 3; a++)
            t->k[3 * j + a] = g->n[a] > 1 ? (float)((tst_uniform() - 0.5) * (double)g->n[a]) : 0.0f;
    return t;
}

/* Raw Q on the 2x grid: positions (i - n)/n on padded axes, 0 on a flat one. */
static inline lm_cfloat *tst_q_direct(const lm_geom *g, const lm_traj *t)
{
    int64_t p[3], c[3];
    for (int a = 0; a < 3; a++) {
        p[a] = g->n[a] > 1 ? 2 * g->n[a] : 1;
        c[a] = p[a] > 1 ? g->n[a] : 0;
    }
    int64_t total = p[0] * p[1] * p[2];
    lm_cfloat *q = malloc((size_t)total * sizeof *q);
    for (int64_t v = 0; v < total; v++) {
        int64_t idx[3] = {v % p[0], (v / p[0]) % p[1], v / (p[0] * p[1])};
        double x[3];
        for (int a = 0; a < 3; a++)
            x[a] = (double)(idx[a] - c[a]) / (double)g->n[a];
        double sr = 0, si = 0;
        for (int64_t m = 0; m < t->m; m++) {
            const float *k = t->k + 3 * m;
            double ph = lm_geom_phi(g, k[0], k[1], k[2]);
            double arg = 2 * M_PI * (k[0] * x[0] + k[1] * x[1] + k[2] * x[2]);
            sr += ph * ph * cos(arg);
            si += ph * ph * sin(arg);
        }
        q[v] = CMPLXF((float)sr, (float)si);
    }
    return q;
}

static inline void tst_pos(const lm_geom *g, int64_t v, double x[3])
{
    int64_t idx[3] = {v % g->n[0], (v / g->n[0]) % g->n[1], v / (g->n[0] * g->n[1])};
    for (int a = 0; a < 3; a++)
        x[a] = lm_voxel_pos(idx[a], g->n[a]);
}

/* d = F x: (1/N) phi(k) sum_n x_n exp(-i 2 pi k . x_n). */
static inline void tst_forward(const lm_geom *g, const lm_traj *t, const double complex *x, double complex *d)
{
    int64_t nv = lm_geom_voxels(g);
    for (int64_t m = 0; m < t->m; m++) {
        const float *k = t->k + 3 * m;
        double complex s = 0;
        for (int64_t v = 0; v < nv; v++) {
            double p[3];
            tst_pos(g, v, p);
            double arg = -2 * M_PI * (k[0] * p[0] + k[1] * p[1] + k[2] * p[2]);
            s += x[v] * CMPLX(cos(arg), sin(arg));
        }
        d[m] = s * lm_geom_phi(g, k[0], k[1], k[2]) / (double)nv;
    }
}

/* Raw adjoint sum (no 1/N): sum_m phi(k) d_m exp(+i 2 pi k . x_n). */
static inline void tst_adjoint_raw(const lm_geom *g, const lm_traj *t, const double complex *d, double complex *x)
{
    int64_t nv = lm_geom_voxels(g);
    for (int64_t v = 0; v < nv; v++) {
        double p[3];
        tst_pos(g, v, p);
        double complex s = 0;
        for (int64_t m = 0; m < t->m; m++) {
            const float *k = t->k + 3 * m;
            double arg = 2 * M_PI * (k[0] * p[0] + k[1] * p[1] + k[2] * p[2]);
            s += d[m] * lm_geom_phi(g, k[0], k[1], k[2]) * CMPLX(cos(arg), sin(arg));
        }
        x[v] = s;
    }
}

#endif
