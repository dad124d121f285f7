#include "lm_types.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

lm_volume *lm_volume_new(const int64_t dims[3], const double voxel_mm[3], lm_error *err)
{
    size_t count = 1;
    for (int a = 0; a < 3; a++) {
        if (dims[a] <= 0 || !lm_size_mul(count, (size_t)dims[a], &count))
            return lm_fail(err, LM_ERR_INVALID, "volume size %lldx%lldx%lld is invalid",
                           (long long)dims[0], (long long)dims[1], (long long)dims[2]), NULL;
    }
    lm_volume *v = lm_calloc(1, sizeof *v, err, "volume");
    if (!v)
        return NULL;
    v->data = lm_calloc(count, sizeof(lm_cfloat), err, "volume data");
    if (!v->data) {
        free(v);
        return NULL;
    }
    for (int a = 0; a < 3; a++) {
        v->dims[a] = dims[a];
        v->voxel_mm[a] = voxel_mm && voxel_mm[a] > 0 ? voxel_mm[a] : 1.0;
    }
    lm_volume_set_centered_affine(v);
    return v;
}

void lm_volume_set_centered_affine(lm_volume *v)
{
    memset(v->affine, 0, sizeof v->affine);
    for (int a = 0; a < 3; a++) {
        v->affine[a][a] = v->voxel_mm[a];
        v->affine[a][3] = -(double)(v->dims[a] / 2) * v->voxel_mm[a];
    }
    v->affine[3][3] = 1.0;
}

lm_volume *lm_volume_copy(const lm_volume *v, lm_error *err)
{
    lm_volume *c = lm_volume_new(v->dims, v->voxel_mm, err);
    if (!c)
        return NULL;
    memcpy(c->affine, v->affine, sizeof c->affine);
    c->no_geometry = v->no_geometry;
    memcpy(c->data, v->data, (size_t)lm_volume_count(v) * sizeof(lm_cfloat));
    return c;
}

void lm_volume_free(lm_volume *v)
{
    if (v) {
        free(v->data);
        free(v);
    }
}

int64_t lm_volume_count(const lm_volume *v)
{
    return v->dims[0] * v->dims[1] * v->dims[2];
}

lm_traj *lm_traj_new(int64_t m, int ndim, lm_error *err)
{
    if (m <= 0 || (ndim != 2 && ndim != 3))
        return lm_fail(err, LM_ERR_INVALID, "trajectory of %lld samples in %d dimensions is invalid",
                       (long long)m, ndim), NULL;
    lm_traj *t = lm_calloc(1, sizeof *t, err, "trajectory");
    if (!t)
        return NULL;
    t->k = lm_calloc((size_t)m, 3 * sizeof(float), err, "trajectory samples");
    if (!t->k) {
        free(t);
        return NULL;
    }
    t->m = m;
    t->ndim = ndim;
    return t;
}

void lm_traj_free(lm_traj *t)
{
    if (t) {
        free(t->k);
        free(t->w);
        free(t->t);
        free(t);
    }
}

lm_code lm_traj_alloc_times(lm_traj *t, lm_error *err)
{
    if (!t->t && !(t->t = lm_calloc((size_t)t->m, sizeof(float), err, "sample times")))
        return LM_ERR_NOMEM;
    return LM_OK;
}

void lm_traj_extent(const lm_traj *t, double kmax[3])
{
    kmax[0] = kmax[1] = kmax[2] = 0;
    for (int64_t i = 0; i < t->m; i++)
        for (int a = 0; a < 3; a++) {
            double v = fabs(t->k[3 * i + a]);
            if (v > kmax[a])
                kmax[a] = v;
        }
}

lm_kdata *lm_kdata_new(int64_t m, int64_t ncoils, lm_error *err)
{
    size_t count;
    if (m <= 0 || ncoils <= 0 || !lm_size_mul((size_t)m, (size_t)ncoils, &count))
        return lm_fail(err, LM_ERR_INVALID, "k-space of %lld samples x %lld channels is invalid",
                       (long long)m, (long long)ncoils), NULL;
    lm_kdata *k = lm_calloc(1, sizeof *k, err, "k-space");
    if (!k)
        return NULL;
    k->d = lm_calloc(count, sizeof(lm_cfloat), err, "k-space data");
    if (!k->d) {
        free(k);
        return NULL;
    }
    k->m = m;
    k->ncoils = ncoils;
    return k;
}

void lm_kdata_free(lm_kdata *k)
{
    if (k) {
        free(k->d);
        free(k);
    }
}

void lm_geom_init(lm_geom *g, int64_t nx, int64_t ny, int64_t nz, double fov_mm)
{
    g->n[0] = nx;
    g->n[1] = ny;
    g->n[2] = nz;
    for (int a = 0; a < 3; a++)
        g->fov_mm[a] = fov_mm;
    g->basis = LM_BASIS_BOX;
}

int64_t lm_geom_voxels(const lm_geom *g)
{
    return g->n[0] * g->n[1] * g->n[2];
}

static double sinc(double t)
{
    if (fabs(t) < 1e-8)
        return 1.0;
    double a = M_PI * t;
    return sin(a) / a;
}

double lm_geom_phi(const lm_geom *g, double kx, double ky, double kz)
{
    if (g->basis == LM_BASIS_DIRAC)
        return 1.0;
    double p = sinc(kx / (double)g->n[0]) * sinc(ky / (double)g->n[1]);
    if (g->n[2] > 1)
        p *= sinc(kz / (double)g->n[2]);
    return p;
}

lm_code lm_geom_check(const lm_geom *g, const lm_traj *t, lm_error *err)
{
    for (int a = 0; a < 3; a++)
        if (g->n[a] <= 0 || g->n[a] > 4096)
            return lm_fail(err, LM_ERR_INVALID, "matrix %lldx%lldx%lld is out of range (1..4096 per axis)",
                           (long long)g->n[0], (long long)g->n[1], (long long)g->n[2]);
    if (!t)
        return LM_OK;
    for (int64_t i = 0; i < 3 * t->m; i++)
        if (!isfinite(t->k[i]))
            return lm_fail(err, LM_ERR_FORMAT, "trajectory sample %lld is not a finite number",
                           (long long)(i / 3));
    return LM_OK;
}

lm_sens *lm_sens_new(const int64_t n[3], int64_t ncoils, lm_error *err)
{
    size_t count = 1;
    for (int a = 0; a < 3; a++)
        if (n[a] <= 0 || !lm_size_mul(count, (size_t)n[a], &count))
            return lm_fail(err, LM_ERR_INVALID, "coil maps of %lldx%lldx%lld voxels are invalid",
                           (long long)n[0], (long long)n[1], (long long)n[2]), NULL;
    if (ncoils <= 0 || ncoils > 1024 || !lm_size_mul(count, (size_t)ncoils, &count))
        return lm_fail(err, LM_ERR_INVALID, "coil maps for %lld coils are invalid", (long long)ncoils), NULL;
    lm_sens *s = lm_calloc(1, sizeof *s, err, "coil maps");
    if (!s)
        return NULL;
    s->s = lm_calloc(count, sizeof(lm_cfloat), err, "coil maps");
    if (!s->s) {
        free(s);
        return NULL;
    }
    for (int a = 0; a < 3; a++)
        s->n[a] = n[a];
    s->ncoils = ncoils;
    return s;
}

lm_sens *lm_sens_copy(const lm_sens *s, lm_error *err)
{
    lm_sens *c = lm_sens_new(s->n, s->ncoils, err);
    if (c)
        memcpy(c->s, s->s, (size_t)(lm_sens_voxels(s) * s->ncoils) * sizeof(lm_cfloat));
    return c;
}

void lm_sens_free(lm_sens *s)
{
    if (s) {
        free(s->s);
        free(s);
    }
}

int64_t lm_sens_voxels(const lm_sens *s)
{
    return s->n[0] * s->n[1] * s->n[2];
}

int64_t lm_q_count(const int64_t n[3])
{
    return (n[0] > 1 ? 2 * n[0] : 1) * (n[1] > 1 ? 2 * n[1] : 1) * (n[2] > 1 ? 2 * n[2] : 1);
}

void lm_magnitude(const lm_cfloat *data, float *mag, int64_t n)
{
    /* A float's square is exact in double and cannot overflow it: the
     * double sqrt rounded to float is glibc's cabsf (hypotf) bit for bit,
     * and vectorises (cabsf's call does not). */
    const float *f = (const float *)data;
    int nan = 0;
    for (int64_t i = 0; i < n; i++) {
        const double a = f[2 * i], b = f[2 * i + 1];
        mag[i] = (float)sqrt(a * a + b * b);
        nan |= mag[i] != mag[i];
    }
    if (nan) /* |inf + NaN i| is inf (C99 Annex G, as cabsf) */
        for (int64_t i = 0; i < n; i++)
            if (isinf(f[2 * i]) || isinf(f[2 * i + 1]))
                mag[i] = INFINITY;
}
