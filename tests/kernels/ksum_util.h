/* Shared helpers for the kernel tests: seeded random problems, explicit
 * copies of grid points, relative errors (docs/conventions.md section 3). */
#ifndef KSUM_UTIL_H
#define KSUM_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lm_kernels.h"
#include "lm_test.h"

static uint64_t ku_state;

/* Fresh seed each run (printed, so a failure can be replayed with
 * LM_TEST_SEED=<seed>). */
static inline uint64_t ku_seed(const char *test)
{
    const char *e = getenv("LM_TEST_SEED");
    uint64_t s = e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
    ku_state = s ? s : 1;
    fprintf(stderr, "%s: seed %llu (replay with LM_TEST_SEED)\n", test, (unsigned long long)s);
    return s;
}

static inline uint64_t ku_next(void)
{ /* splitmix64 */
    uint64_t z = (ku_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [a, b). */
static inline double ku_uniform(double a, double b)
{
    return a + (b - a) * (double)(ku_next() >> 11) * 0x1p-53;
}

/* A random problem: m samples with |k| <= n/2 per axis (kz = 0 for 2D),
 * weights uniform in [-1, 1) (complex unless real). */
typedef struct ku_problem {
    lm_ksum_in in;
    float *kx, *ky, *kz, *wr, *wi;
} ku_problem;

static inline void ku_problem_make(ku_problem *p, int64_t m, const int64_t n[3], int complex_w)
{
    memset(p, 0, sizeof *p);
    p->kx = malloc(m * sizeof(float));
    p->ky = malloc(m * sizeof(float));
    p->kz = malloc(m * sizeof(float));
    p->wr = malloc(m * sizeof(float));
    p->wi = complex_w ? malloc(m * sizeof(float)) : NULL;
    for (int64_t i = 0; i < m; i++) {
        p->kx[i] = (float)ku_uniform(-0.5 * n[0], 0.5 * n[0]);
        p->ky[i] = (float)ku_uniform(-0.5 * n[1], 0.5 * n[1]);
        p->kz[i] = n[2] > 1 ? (float)ku_uniform(-0.5 * n[2], 0.5 * n[2]) : 0.0f;
        p->wr[i] = (float)ku_uniform(-1, 1);
        if (complex_w)
            p->wi[i] = (float)ku_uniform(-1, 1);
    }
    p->in = (lm_ksum_in){.m = m, .kx = p->kx, .ky = p->ky, .kz = p->kz, .wr = p->wr, .wi = p->wi, .nsets = 1};
}

static inline void ku_problem_free(ku_problem *p)
{
    free(p->kx);
    free(p->ky);
    free(p->kz);
    free(p->wr);
    free(p->wi);
}

/* Explicit copy of a point set (grid or not). */
typedef struct ku_points {
    lm_points pts;
    float *x, *y, *z;
} ku_points;

static inline void ku_points_explicit(ku_points *e, const lm_points *src)
{
    memset(e, 0, sizeof *e);
    int64_t n = src->n;
    e->x = malloc(n * sizeof(float));
    e->y = malloc(n * sizeof(float));
    e->z = malloc(n * sizeof(float));
    for (int64_t j = 0; j < n; j++) {
        double x[3];
        lm_points_get(src, j, x);
        e->x[j] = (float)x[0];
        e->y[j] = (float)x[1];
        e->z[j] = (float)x[2];
    }
    e->pts.n = n;
    e->pts.x = e->x;
    e->pts.y = e->y;
    e->pts.z = e->z;
}

/* Random explicit points in [-1/2, 1/2)^d (z = 0 for 2D). */
static inline void ku_points_random(ku_points *e, int64_t n, int dims)
{
    memset(e, 0, sizeof *e);
    e->x = malloc(n * sizeof(float));
    e->y = malloc(n * sizeof(float));
    e->z = malloc(n * sizeof(float));
    for (int64_t j = 0; j < n; j++) {
        e->x[j] = (float)ku_uniform(-0.5, 0.5);
        e->y[j] = (float)ku_uniform(-0.5, 0.5);
        e->z[j] = dims == 3 ? (float)ku_uniform(-0.5, 0.5) : 0.0f;
    }
    e->pts.n = n;
    e->pts.x = e->x;
    e->pts.y = e->y;
    e->pts.z = e->z;
}

static inline void ku_points_free(ku_points *e)
{
    free(e->x);
    free(e->y);
    free(e->z);
}

/* ||a - b||_2 / ||b||_2 over complex arrays (b the reference). */
static inline double ku_rel_error(int64_t n, const float *ar, const float *ai, const float *br,
                                  const float *bi)
{
    double num = 0, den = 0;
    for (int64_t j = 0; j < n; j++) {
        double dr = (double)ar[j] - br[j], di = (double)ai[j] - bi[j];
        num += dr * dr + di * di;
        den += (double)br[j] * br[j] + (double)bi[j] * bi[j];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Runs a variant by name; returns the code (output arrays allocated). */
static inline lm_code ku_run(const char *name, const lm_ksum_in *in, const lm_points *pts,
                             float **re, float **im, lm_error *err)
{
    *re = calloc(pts->n, sizeof(float));
    *im = calloc(pts->n, sizeof(float));
    const lm_variant *v = lm_variant_get_available(name, err);
    if (!v)
        return err->code;
    return lm_ksum_run(v, in, pts, *re, *im, NULL, err);
}

#endif
