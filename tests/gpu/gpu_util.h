/* Shared helpers for the GPU tests: skip when no device, random problems,
 * a double-precision CPU reference of the k-space sum, poisoning. */
#ifndef GPU_UTIL_H
#define GPU_UTIL_H

#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_gpu.h"
#include "lm_solver.h"
#include "lm_kernels.h"
#include "lm_kernels_impl.h" /* lm_gpu_variants */
#include "lm_test.h"
#include "lm_tuning.h"

/* The tuning's GPU list ("" or NULL: every visible GPU), as LARMOR_GPU_DEVICES
 * sets it for the front ends. */
static inline void gpu_tune_devices(const char *list)
{
    lm_tuning t = *lm_tuning_get();
    snprintf(t.gpu_devices, sizeof t.gpu_devices, "%s", list ? list : "");
    lm_tuning_set(&t);
}

/* The block Toeplitz product's x fusion on (1, the default) or off. */
static inline void gpu_tune_xfuse(int on)
{
    lm_tuning t = *lm_tuning_get();
    t.gpu_block_xfuse = on;
    lm_tuning_set(&t);
}

/* Smooth complex coil maps: coil c a Gaussian centred 0.3 c along x with a
 * phase ramp (GPU encoding tests). */
static inline lm_sens *gu_maps(const lm_geom *g, int nc)
{
    lm_sens *s = lm_sens_new(g->n, nc, NULL);
    const int64_t nv = lm_geom_voxels(g);
    for (int c = 0; c < nc; c++)
        for (int64_t v = 0; v < nv; v++) {
            const double x = lm_voxel_pos(v % g->n[0], g->n[0]), y = lm_voxel_pos((v / g->n[0]) % g->n[1], g->n[1]);
            s->s[c * nv + v] = (lm_cfloat)(exp(-(x - 0.3 * c) * (x - 0.3 * c) - y * y) * cexp(I * (0.4 * c + x)));
        }
    return s;
}

/* Exits 77 with the reason when no GPU is usable here. */
static inline void gpu_require(void)
{
    lm_error why;
    lm_error_clear(&why);
    if (lm_gpu_available(&why) != LM_OK)
        LM_TEST_SKIP("no usable GPU: %s", why.msg);
}

static uint64_t gu_rng = 0x2545F4914F6CDD1Dull;

static inline void gu_seed(uint64_t s)
{
    gu_rng = s * 0x9E3779B97F4A7C15ull + 1;
}

static inline double gu_uniform(void) /* [0, 1) */
{
    gu_rng ^= gu_rng << 13;
    gu_rng ^= gu_rng >> 7;
    gu_rng ^= gu_rng << 17;
    return (double)(gu_rng >> 11) * (1.0 / 9007199254740992.0);
}

/* Samples: k uniform in [-kmax, kmax] per axis (kz = 0 when kmax[2] == 0),
 * weights uniform in [-1, 1] (wi NULL when real). Arrays from one malloc. */
typedef struct gu_samples {
    lm_ksum_in in;
    float *buf;
} gu_samples;

static inline void gu_samples_make(gu_samples *s, int64_t m, const double kmax[3], int complex_w)
{
    memset(&s->in, 0, sizeof s->in); /* no sample times, one weight set */
    s->buf = malloc((size_t)(m ? m : 1) * 5 * sizeof(float));
    float *kx = s->buf, *ky = kx + m, *kz = ky + m, *wr = kz + m, *wi = wr + m;
    for (int64_t i = 0; i < m; i++) {
        kx[i] = (float)((2 * gu_uniform() - 1) * kmax[0]);
        ky[i] = (float)((2 * gu_uniform() - 1) * kmax[1]);
        kz[i] = (float)((2 * gu_uniform() - 1) * kmax[2]);
        wr[i] = (float)(2 * gu_uniform() - 1);
        wi[i] = (float)(2 * gu_uniform() - 1);
    }
    s->in.m = m;
    s->in.kx = kx;
    s->in.ky = ky;
    s->in.kz = kz;
    s->in.wr = wr;
    s->in.wi = complex_w ? wi : NULL;
    s->in.nsets = 1;
}

static inline void gu_samples_free(gu_samples *s)
{
    free(s->buf);
    s->buf = NULL;
}

/* Double-precision reference of out(x_j) = sum_m w_m exp(+i 2 pi k_m . x_j). */
static inline void gu_reference(const lm_ksum_in *in, const lm_points *p, double *re, double *im)
{
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t j = 0; j < p->n; j++) {
        double x[3];
        lm_points_get(p, j, x);
        double sr = 0, si = 0;
        for (int64_t m = 0; m < in->m; m++) {
            double t = (double)in->kx[m] * x[0] + (double)in->ky[m] * x[1] + (double)in->kz[m] * x[2];
            t -= rint(t);
            double c = cos(2 * M_PI * t), s = sin(2 * M_PI * t);
            double a = in->wr[m], b = in->wi ? in->wi[m] : 0.0;
            sr += a * c - b * s;
            si += a * s + b * c;
        }
        re[j] = sr;
        im[j] = si;
    }
}

/* ||a - ref|| / ||ref|| over complex values; NaN when a holds a non-finite value. */
static inline double gu_rel_error(const float *ar, const float *ai, const double *rr, const double *ri, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t j = 0; j < n; j++) {
        if (!isfinite(ar[j]) || !isfinite(ai[j]))
            return NAN;
        double dr = ar[j] - rr[j], di = ai[j] - ri[j];
        num += dr * dr + di * di;
        den += rr[j] * rr[j] + ri[j] * ri[j];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static inline void gu_poison(float *v, int64_t n)
{
    for (int64_t j = 0; j < n; j++)
        v[j] = NAN;
}

static inline int64_t gu_count_unwritten(const float *v, int64_t n)
{
    int64_t c = 0;
    for (int64_t j = 0; j < n; j++)
        c += !isfinite(v[j]);
    return c;
}

static inline void gu_grid(lm_points *p, int64_t g0, int64_t g1, int64_t g2, int64_t c0, int64_t c1, int64_t c2,
                           int64_t s0, int64_t s1, int64_t s2)
{
    memset(p, 0, sizeof *p);
    p->g[0] = g0;
    p->g[1] = g1;
    p->g[2] = g2;
    p->c[0] = c0;
    p->c[1] = c1;
    p->c[2] = c2;
    p->s[0] = s0;
    p->s[1] = s1;
    p->s[2] = s2;
    p->n = g0 * g1 * g2;
}

/* n explicit points uniform in [-1/2, 1/2)^3 (z = 0 when flat). */
static inline float *gu_points(lm_points *p, int64_t n, int flat_z)
{
    float *b = malloc((size_t)n * 3 * sizeof(float));
    for (int64_t j = 0; j < n; j++) {
        b[j] = (float)(gu_uniform() - 0.5);
        b[n + j] = (float)(gu_uniform() - 0.5);
        b[2 * n + j] = flat_z ? 0.0f : (float)(gu_uniform() - 0.5);
    }
    memset(p, 0, sizeof *p);
    p->n = n;
    p->x = b;
    p->y = b + n;
    p->z = b + 2 * n;
    return b;
}

#endif
