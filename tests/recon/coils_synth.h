/* Synthetic multi-coil problems for the coil tests: smooth analytic maps
 * (Gaussian magnitude centred outside the object, linear phase, per coil)
 * times an object that fills most of the FOV (an ellipsoid of semi-axes
 * 0.43, 0.38, 0.40 FOV with a brighter inner ellipsoid and a smooth phase),
 * its k-space from the CPU NUFFT type 2 at tolerance 1e-6:
 *   d_c(k_m) = (1/N) phi(k_m) sum_n s_c(x_n) rho(x_n) exp(-i 2 pi k_m . x_n)
 * (docs/conventions.md section 1). Seeded Gaussian noise for the prewhitening tests. */
#ifndef COILS_SYNTH_H
#define COILS_SYNTH_H

#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lm_coils.h"
#include "lm_nufft.h"
#include "lm_trajgen.h"
#include "lm_types.h"

#define SYN_PI 3.14159265358979323846

/* xorshift64* and Box-Muller: reproducible everywhere */
typedef struct syn_rng { uint64_t s; } syn_rng;
static inline double syn_uniform(syn_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return ((double)((r->s * 2685821657736338717ULL) >> 11) + 0.5) / 9007199254740992.0;
}
/* complex standard normal: E|z|^2 = 1 */
static inline double _Complex syn_cnormal(syn_rng *r)
{
    double u1 = syn_uniform(r), u2 = syn_uniform(r);
    double rad = sqrt(-log(u1));
    return rad * cos(2 * SYN_PI * u2) + I * rad * sin(2 * SYN_PI * u2);
}

/* normalised ellipsoid radius (1 on the object's edge) */
static inline double syn_obj_r(double x, double y, double z, int dim)
{
    double r2 = (x / 0.43) * (x / 0.43) + (y / 0.38) * (y / 0.38);
    if (dim == 3)
        r2 += (z / 0.40) * (z / 0.40);
    return sqrt(r2);
}

static inline double _Complex syn_rho(double x, double y, double z, int dim)
{
    if (syn_obj_r(x, y, z, dim) > 1.0)
        return 0;
    double v = 1.0;
    double ri = sqrt(((x - 0.1) / 0.18) * ((x - 0.1) / 0.18) + ((y + 0.05) / 0.12) * ((y + 0.05) / 0.12) +
                     (dim == 3 ? (z / 0.2) * (z / 0.2) : 0));
    if (ri <= 1.0)
        v = 1.6;
    return v * cexp(I * SYN_PI * (0.8 * x + 0.4 * y));
}

static inline double _Complex syn_map(int c, int nc, double x, double y, double z, int dim)
{
    double th = 2 * SYN_PI * (double)c / (double)nc;
    double px = 0.75 * cos(th), py = 0.75 * sin(th), pz = dim == 3 ? (c % 2 ? 0.35 : -0.35) : 0;
    double d2 = (x - px) * (x - px) + (y - py) * (y - py) + (z - pz) * (z - pz);
    double ph = 2 * SYN_PI * (0.3 * cos(th + 1.0) * x + 0.3 * sin(th + 1.0) * y + 0.2 * z) + 0.7 * c;
    return exp(-d2 / (2 * 0.45 * 0.45)) * cexp(I * ph);
}

typedef struct syn_problem {
    lm_geom g;
    int dim;
    lm_traj *t;
    lm_kdata *k;
    lm_sens *s;       /* true maps, not normalised */
    lm_cfloat *rho;   /* object on the grid */
} syn_problem;

static inline void syn_free(syn_problem *p)
{
    lm_traj_free(p->t);
    lm_kdata_free(p->k);
    lm_sens_free(p->s);
    free(p->rho);
    memset(p, 0, sizeof *p);
}

/* k-space of every coil of `maps` times rho on trajectory t (NUFFT type 2). */
static inline lm_code syn_kspace(const lm_geom *g, const lm_traj *t, const lm_sens *maps,
                                 const lm_cfloat *rho, lm_kdata **out, lm_error *err)
{
    int dim = g->n[2] == 1 ? 2 : 3;
    int64_t nv = g->n[0] * g->n[1] * g->n[2], m = t->m;
    lm_kdata *k = lm_kdata_new(m, maps->ncoils, err);
    float *kx = malloc((size_t)m * 3 * sizeof(float));
    lm_cfloat *img = malloc((size_t)nv * sizeof(lm_cfloat));
    lm_nufft_plan *p = NULL;
    lm_code rc = k && kx && img ? LM_OK : LM_ERR_NOMEM;
    for (int64_t i = 0; rc == LM_OK && i < m; i++) {
        kx[i] = t->k[3 * i];
        kx[i + m] = t->k[3 * i + 1];
        kx[i + 2 * m] = t->k[3 * i + 2];
    }
    int64_t c[3] = {g->n[0] / 2, g->n[1] / 2, g->n[2] / 2}, s[3] = {g->n[0], g->n[1], g->n[2]};
    if (rc == LM_OK)
        rc = lm_nufft_make_plan(2, dim, g->n, -1, 1e-6, NULL, &p, err);
    if (rc == LM_OK)
        rc = lm_nufft_set_points(p, m, kx, kx + m, dim == 3 ? kx + 2 * m : NULL, c, s, err);
    for (int64_t ch = 0; rc == LM_OK && ch < maps->ncoils; ch++) {
        for (int64_t v = 0; v < nv; v++)
            img[v] = maps->s[v + ch * nv] * rho[v];
        rc = lm_nufft_execute_c(p, img, k->d + ch * m, NULL, err);
        for (int64_t i = 0; rc == LM_OK && i < m; i++)
            k->d[i + ch * m] *= (float)(lm_geom_phi(g, t->k[3 * i], t->k[3 * i + 1], t->k[3 * i + 2]) / (double)nv);
    }
    lm_nufft_destroy(p);
    free(kx);
    free(img);
    if (rc != LM_OK) {
        lm_kdata_free(k);
        return rc;
    }
    *out = k;
    return LM_OK;
}

/* n: matrix (n[2] == 1: 2D), nc coils, trajectory kind with m samples (0: default). */
static inline lm_code syn_make(syn_problem *p, const int64_t n[3], int nc, lm_traj_kind kind,
                               int64_t m, lm_error *err)
{
    memset(p, 0, sizeof *p);
    lm_geom_init(&p->g, n[0], n[1], n[2], 240.0);
    p->dim = n[2] == 1 ? 2 : 3;
    int64_t nv = n[0] * n[1] * n[2];
    p->s = lm_sens_new(n, nc, err);
    p->rho = malloc((size_t)nv * sizeof(lm_cfloat));
    if (!p->s || !p->rho)
        return LM_ERR_NOMEM;
    for (int64_t v = 0; v < nv; v++) {
        double x = lm_voxel_pos(v % n[0], n[0]), y = lm_voxel_pos((v / n[0]) % n[1], n[1]);
        double z = p->dim == 3 ? lm_voxel_pos(v / (n[0] * n[1]), n[2]) : 0;
        p->rho[v] = (lm_cfloat)syn_rho(x, y, z, p->dim);
        for (int c = 0; c < nc; c++)
            p->s->s[v + c * nv] = (lm_cfloat)syn_map(c, nc, x, y, z, p->dim);
    }
    lm_code rc = lm_traj_generate(kind, n, m, 0, &p->t, err);
    if (rc == LM_OK)
        rc = syn_kspace(&p->g, p->t, p->s, p->rho, &p->k, err);
    return rc;
}

/* Map error inside the object's interior (normalised ellipsoid radius <=
 * `inner`): both maps normalised per voxel to sum_c |s_c|^2 = 1, the
 * estimate rotated by the per-voxel phase that best matches the truth (the
 * object's phase and the phase reference are common to all coils):
 *   e(x)^2 = min_a || s_true(x) - exp(i a) s_est(x) ||^2 = 2 - 2 |s_est^H s_true|,
 * a masked (zero) estimate counting e^2 = 1. Returns sqrt(mean e^2) (an
 * RMS relative to ||s_true(x)|| = 1); *cover: fraction of the interior in
 * the estimate's mask; *jump: largest phase step between x-neighbours of
 * the estimate inside the interior (the maps' own phase must be smooth). */
static inline double syn_map_error(const syn_problem *p, const lm_sens *est, double inner,
                                   double *cover, double *jump)
{
    const int64_t *n = p->g.n;
    int64_t nv = n[0] * n[1] * n[2], nc = p->s->ncoils, cnt = 0, in = 0;
    double sum = 0, jmax = 0;
    for (int64_t v = 0; v < nv; v++) {
        int64_t ix = v % n[0];
        double x = lm_voxel_pos(ix, n[0]), y = lm_voxel_pos((v / n[0]) % n[1], n[1]);
        double z = p->dim == 3 ? lm_voxel_pos(v / (n[0] * n[1]), n[2]) : 0;
        if (syn_obj_r(x, y, z, p->dim) > inner)
            continue;
        double nt = 0, ne = 0;
        double _Complex dot = 0, step = 0;
        for (int64_t c = 0; c < nc; c++) {
            double _Complex st = p->s->s[v + c * nv], se = est->s[v + c * nv];
            nt += creal(st * conj(st));
            ne += creal(se * conj(se));
            dot += conj(se) * st;
            if (ix + 1 < n[0])
                step += conj(se) * est->s[v + 1 + c * nv];
        }
        cnt++;
        if (ne > 0) {
            in++;
            sum += 2 - 2 * cabs(dot) / sqrt(nt * ne);
            if (ix + 1 < n[0] && cabs(step) > 0)
                jmax = fmax(jmax, fabs(carg(step)));
        } else {
            sum += 1;
        }
    }
    *cover = cnt ? (double)in / (double)cnt : 0;
    *jump = jmax;
    return cnt ? sqrt(sum / (double)cnt) : 1;
}

#endif
