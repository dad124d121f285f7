/* Helpers of the GPU encoding tests: coil maps, E^H E x of host vectors
 * through an encoding's back end, relative differences. */
#ifndef GPU_ENC_UTIL_H
#define GPU_ENC_UTIL_H

#include <complex.h>
#include <math.h>

#include "lm_encoding.h"
#include "lm_test.h"
#include "lm_types.h"

/* nc Gaussian blobs on a ring in the x-y plane, each with its own smooth
 * phase. */
static inline lm_sens *gu_ring_maps(const lm_geom *g, int nc)
{
    lm_sens *s = lm_sens_new(g->n, nc, NULL);
    const int64_t nv = lm_geom_voxels(g);
    for (int c = 0; c < nc; c++)
        for (int64_t v = 0; v < nv; v++) {
            const int64_t i = v % g->n[0], j = (v / g->n[0]) % g->n[1];
            const double x = lm_voxel_pos(i, g->n[0]), y = lm_voxel_pos(j, g->n[1]);
            const double a = 2 * M_PI * c / nc;
            const double r2 = (x - 0.5 * cos(a)) * (x - 0.5 * cos(a)) + (y - 0.5 * sin(a)) * (y - 0.5 * sin(a));
            s->s[c * nv + v] = (lm_cfloat)(exp(-r2 / 0.25) * cexp(I * (0.3 * c + x - y)));
        }
    return s;
}

/* ||a - b|| / ||b|| in double. */
static inline double gu_rel_diff(const lm_cfloat *a, const lm_cfloat *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t j = 0; j < n; j++) {
        num += (double)cabsf(a[j] - b[j]) * cabsf(a[j] - b[j]);
        den += (double)cabsf(b[j]) * cabsf(b[j]);
    }
    return sqrt(num / (den > 0 ? den : 1));
}

/* y = E^H E x for host vectors of N values, through e's back end, applied
 * `times` times (the result of the last). */
static inline void gu_normal_host(lm_encoding *e, const lm_cfloat *x, lm_cfloat *y, int times)
{
    lm_error err = {0};
    const int64_t nv = lm_encoding_voxels(e);
    lm_backend *be = lm_encoding_backend(e);
    lm_cfloat *xd = be->alloc(be, nv, "x"), *yd = be->alloc(be, nv, "y");
    CHECK_OK(be->check(be, &err), &err);
    be->upload(be, xd, x, (size_t)nv * sizeof *x);
    for (int i = 0; i < times; i++)
        CHECK_OK(lm_encoding_normal(e, xd, yd, &err), &err);
    be->download(be, y, yd, (size_t)nv * sizeof *y);
    CHECK_OK(be->check(be, &err), &err);
    be->release(be, xd);
    be->release(be, yd);
}

#endif
