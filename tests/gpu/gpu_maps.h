/* Coil maps for the GPU SENSE tests: nc Gaussian blobs on a ring in the
 * x-y plane, each with its own smooth phase. */
#ifndef GPU_MAPS_H
#define GPU_MAPS_H

#include <complex.h>
#include <math.h>

#include "lm_types.h"

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

#endif
