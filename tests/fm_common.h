/* The off-resonance test problem: a 2D spiral (8 interleaves of 256
 * samples, 25 ms readout each, the same times in every interleave) on a
 * small matrix with a smooth field map up to ~150 Hz, and double-precision
 * brute-force E and E^H with the field term (docs/conventions.md section 1), no kernels used. */
#ifndef FM_COMMON_H
#define FM_COMMON_H

#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "lm_types.h"

#define FM_INTERLEAVES 8
#define FM_READOUT 256
#define FM_T_READ 25e-3

static uint64_t fm_rng = 88172645463325252ull;
static inline double fm_uniform(void) /* [0, 1) */
{
    fm_rng ^= fm_rng << 13;
    fm_rng ^= fm_rng >> 7;
    fm_rng ^= fm_rng << 17;
    return (double)(fm_rng >> 11) * (1.0 / 9007199254740992.0);
}

/* Archimedean spiral to |k| = 0.96 n/2, 2 turns per interleave (ring
 * spacing 1/FOV over the 8 interleaves), t from 0 to 25 ms. */
static inline lm_traj *fm_spiral(int64_t n)
{
    const int64_t m = FM_INTERLEAVES * FM_READOUT;
    lm_traj *t = lm_traj_new(m, 2, NULL);
    if (!t || lm_traj_alloc_times(t, NULL) != LM_OK)
        return NULL;
    const double kmax = 0.48 * (double)n;
    for (int i = 0; i < FM_INTERLEAVES; i++)
        for (int j = 0; j < FM_READOUT; j++) {
            const double u = (double)j / (FM_READOUT - 1), r = kmax * u;
            const double th = 2 * M_PI * (2.0 * u + (double)i / FM_INTERLEAVES);
            const int64_t s = (int64_t)i * FM_READOUT + j;
            t->k[3 * s] = (float)(r * cos(th));
            t->k[3 * s + 1] = (float)(r * sin(th));
            t->k[3 * s + 2] = 0;
            t->t[s] = (float)(FM_T_READ * u);
        }
    t->readout = FM_READOUT;
    return t;
}

/* Smooth field map in Hz at position (x, y) (FOV fractions): a 150 Hz bump
 * off centre over a gentle gradient, range about -10 .. 150 Hz. */
static inline double fm_field(double x, double y)
{
    const double dx = x - 0.12, dy = y + 0.08;
    return 140.0 * exp(-(dx * dx + dy * dy) / (2 * 0.18 * 0.18)) + 20.0 * x + 5.0;
}

static inline float *fm_fieldmap(const lm_geom *g)
{
    const int64_t nv = lm_geom_voxels(g);
    float *f = malloc((size_t)nv * sizeof *f);
    for (int64_t v = 0; v < nv; v++)
        f[v] = (float)fm_field(lm_voxel_pos(v % g->n[0], g->n[0]), lm_voxel_pos(v / g->n[0], g->n[1]));
    return f;
}

/* d_c = (1/N) phi sum_n s_c x exp(-i 2 pi (k.x + f t)), double; s NULL: one coil. */
static inline void fm_forward(const lm_geom *g, const lm_traj *t, const float *f, const lm_cfloat *s, int64_t nc,
                              const double complex *x, double complex *d)
{
    const int64_t nv = lm_geom_voxels(g), m = t->m;
    for (int64_t c = 0; c < nc; c++)
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < m; j++) {
            const float *k = t->k + 3 * j;
            double complex acc = 0;
            for (int64_t v = 0; v < nv; v++) {
                const double px = lm_voxel_pos(v % g->n[0], g->n[0]), py = lm_voxel_pos(v / g->n[0], g->n[1]);
                const double a = -2 * M_PI * (k[0] * px + k[1] * py + (double)f[v] * t->t[j]);
                const double complex sv = s ? (double complex)s[c * nv + v] : 1.0;
                acc += sv * x[v] * CMPLX(cos(a), sin(a));
            }
            d[c * m + j] = acc * lm_geom_phi(g, k[0], k[1], k[2]) / (double)nv;
        }
}

/* x = sum_c conj(s_c) (1/N) sum_m phi d_c exp(+i 2 pi (k.x + f t)), double. */
static inline void fm_adjoint(const lm_geom *g, const lm_traj *t, const float *f, const lm_cfloat *s, int64_t nc,
                              const double complex *d, double complex *x)
{
    const int64_t nv = lm_geom_voxels(g), m = t->m;
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < nv; v++) {
        const double px = lm_voxel_pos(v % g->n[0], g->n[0]), py = lm_voxel_pos(v / g->n[0], g->n[1]);
        double complex acc = 0;
        for (int64_t c = 0; c < nc; c++) {
            double complex a1 = 0;
            for (int64_t j = 0; j < m; j++) {
                const float *k = t->k + 3 * j;
                const double a = 2 * M_PI * (k[0] * px + k[1] * py + (double)f[v] * t->t[j]);
                a1 += lm_geom_phi(g, k[0], k[1], k[2]) * d[c * m + j] * CMPLX(cos(a), sin(a));
            }
            acc += (s ? conj((double complex)s[c * nv + v]) : 1.0) * a1;
        }
        x[v] = acc / (double)nv;
    }
}

/* ||a - b|| / ||b|| with a in float, b in double. */
static inline double fm_rel(const lm_cfloat *a, const double complex *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        const double complex e = (double complex)a[i] - b[i];
        num += creal(e * conj(e));
        den += creal(b[i] * conj(b[i]));
    }
    return sqrt(num / den);
}

#endif
