/* The encoding operator (lm_encoding.h): one plan per acquisition, on the
 * CPU or resident on a GPU, with the coil loop written once over the back
 * end's vector operations; only the Toeplitz product and the sums differ
 * per device. */
#include "lm_encoding.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_gpu.h"
#include "lm_nufft.h"
#include "lm_progress.h"
#include "lm_qcache.h"
#include "lm_sums.h"

struct lm_encoding {
    lm_geom g;
    const lm_traj *t;        /* borrowed: outlives the encoding */
    const lm_variant *v;
    lm_backend *be;
    int64_t nvox, ncoils;
    lm_cfloat *s;            /* coil maps on the back end (N x coils), NULL without maps */
    const lm_cfloat *s_host; /* the caller's maps (borrowed, as the trajectory) */
    double map_mean;         /* mean sum_c |s_c|^2 over covered voxels; 1 without maps */
    int use_cache, threads;
    lm_linop *fhf;           /* F^H F through Q, on the back end */
    lm_cfloat *tmp;          /* back-end work vector of the coil loop */
    lm_linop *normal;
};

lm_backend *lm_encoding_backend(const lm_encoding *e) { return e->be; }
const lm_variant *lm_encoding_variant(const lm_encoding *e) { return e->v; }
int64_t lm_encoding_voxels(const lm_encoding *e) { return e->nvox; }
int64_t lm_encoding_coils(const lm_encoding *e) { return e->ncoils; }
int lm_encoding_segments(const lm_encoding *e, double *interp_error)
{
    (void)e;
    if (interp_error)
        *interp_error = 0;
    return 0;
}
double lm_encoding_diag(const lm_encoding *e) { return e->fhf ? e->fhf->diag * e->map_mean : 0; }

void lm_encoding_free(lm_encoding *e)
{
    if (!e)
        return;
    lm_linop_free(e->normal);
    lm_linop_free(e->fhf);
    if (e->be) {
        e->be->release(e->be, e->tmp);
        if (e->s != e->s_host)
            e->be->release(e->be, e->s);
        lm_backend_free(e->be);
    }
    free(e);
}

static lm_code check_sens(const lm_sens *s, const lm_geom *g, double *mean, lm_error *err)
{
    for (int a = 0; a < 3; a++)
        if (s->n[a] != g->n[a])
            return lm_fail(err, LM_ERR_INVALID, "coil maps are %lldx%lldx%lld but the matrix is %lldx%lldx%lld",
                           (long long)s->n[0], (long long)s->n[1], (long long)s->n[2], (long long)g->n[0],
                           (long long)g->n[1], (long long)g->n[2]);
    if (s->ncoils < 1 || s->ncoils > 1024)
        return lm_fail(err, LM_ERR_INVALID, "%lld coil maps is out of range", (long long)s->ncoils);
    const int64_t nv = lm_sens_voxels(s);
    double sum = 0;
    int64_t covered = 0, bad = -1;
#pragma omp parallel for reduction(+ : sum, covered) reduction(max : bad) schedule(static) if (nv >= 32768)
    for (int64_t j = 0; j < nv; j++) {
        double e2 = 0;
        for (int64_t c = 0; c < s->ncoils; c++) {
            lm_cfloat v = s->s[c * nv + j];
            e2 += (double)crealf(v) * crealf(v) + (double)cimagf(v) * cimagf(v);
        }
        if (!isfinite(e2))
            bad = j > bad ? j : bad;
        else if (e2 > 0) {
            sum += e2;
            covered++;
        }
    }
    if (bad >= 0)
        return lm_fail(err, LM_ERR_FORMAT, "coil maps are not finite numbers at voxel %lld", (long long)bad);
    if (covered == 0)
        return lm_fail(err, LM_ERR_INVALID, "coil maps are zero everywhere");
    *mean = sum / (double)covered;
    return LM_OK;
}

lm_code lm_encoding_new(const lm_encoding_desc *d, lm_encoding **out, lm_error *err)
{
    *out = NULL;
    if (!d || !d->geom || !d->traj)
        return lm_fail(err, LM_ERR_INVALID, "encoding: missing geometry or trajectory");
    lm_code rc = lm_geom_check(d->geom, d->traj, err);
    if (rc != LM_OK)
        return rc;
    if (d->fieldmap)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "encoding: field-map correction is not built yet");
    const lm_variant *v = lm_sums_variant(d->variant, err);
    if (!v)
        return err ? err->code : LM_ERR_UNSUPPORTED;
    lm_encoding *e = lm_calloc(1, sizeof *e, err, "encoding operator");
    if (!e)
        return LM_ERR_NOMEM;
    e->g = *d->geom;
    e->t = d->traj;
    e->v = v;
    e->nvox = lm_geom_voxels(d->geom);
    e->ncoils = d->sens ? d->sens->ncoils : 1;
    e->map_mean = 1;
    e->use_cache = d->use_cache;
    e->threads = d->threads;
    if (d->sens && (rc = check_sens(d->sens, d->geom, &e->map_mean, err)) != LM_OK)
        goto fail;
    if ((rc = lm_backend_for_variant(v, d->threads, &e->be, err)) != LM_OK)
        goto fail;
    if (d->sens) {
        const size_t count = (size_t)(e->nvox * e->ncoils);
        e->s_host = d->sens->s;
        e->s = e->be->device == LM_DEVICE_CPU ? (lm_cfloat *)d->sens->s : e->be->alloc(e->be, (int64_t)count, "coil maps");
        if (e->s && e->s != e->s_host)
            e->be->upload(e->be, e->s, e->s_host, count * sizeof(lm_cfloat));
        e->tmp = e->be->alloc(e->be, e->nvox, "coil work vector");
        if ((rc = e->be->check(e->be, err)) != LM_OK)
            goto fail;
    }
    *out = e;
    return LM_OK;
fail:
    lm_encoding_free(e);
    return rc;
}

lm_code lm_encoding_prepare_normal(lm_encoding *e, const lm_ctl *ctl, int *q_from_cache, lm_error *err)
{
    int cached = 0;
    lm_code rc = LM_OK;
    if (q_from_cache)
        *q_from_cache = 0;
    if (e->fhf)
        return LM_OK;
    lm_cfloat *q = NULL;
    if (e->be->device == LM_DEVICE_CPU) {
        rc = lm_compute_q(&e->g, e->t, e->v->name, e->use_cache, ctl, &q, &cached, err);
        if (rc == LM_OK)
            rc = lm_linop_toeplitz(e->be, e->g.n, q, 0, &e->fhf, err);
    } else if (e->use_cache && lm_qcache_load(&e->g, e->t, lm_sums_q_class(e->v), &q, NULL) == LM_OK) {
        cached = 1;
        rc = lm_linop_toeplitz(e->be, e->g.n, q, 0, &e->fhf, err);
    } else {
        /* Summed on the device; it comes down only for the cache (best
         * effort, as on the CPU). */
        void *qd = NULL;
        const size_t bytes = (size_t)lm_q_count(e->g.n) * sizeof(lm_cfloat);
        rc = lm_gpu_mem_alloc(&qd, bytes, "Q", err);
        if (rc == LM_OK)
            rc = lm_gpu_q(&e->g, e->t, e->v->name, qd, ctl, err);
        if (rc == LM_OK)
            rc = lm_linop_toeplitz(e->be, e->g.n, qd, 1, &e->fhf, err);
        if (rc == LM_OK && e->use_cache && (q = malloc(bytes)) != NULL &&
            lm_gpu_mem_download(q, qd, bytes, NULL) == LM_OK)
            (void)lm_qcache_store(&e->g, e->t, lm_sums_q_class(e->v), q, NULL);
        lm_gpu_mem_free(qd);
    }
    free(q);
    if (q_from_cache)
        *q_from_cache = cached;
    return rc;
}

static lm_code toeplitz(lm_encoding *e, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    return e->fhf->apply(e->fhf, x, y, err);
}

lm_code lm_encoding_normal(lm_encoding *e, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    lm_code rc = lm_encoding_prepare_normal(e, NULL, NULL, err);
    if (rc != LM_OK)
        return rc;
    lm_backend *be = e->be;
    const int64_t nv = e->nvox;
    if (!e->s)
        return toeplitz(e, x, y, err);
    if (e->fhf->apply_coil) {
        for (int64_t c = 0; c < e->ncoils && rc == LM_OK; c++)
            rc = e->fhf->apply_coil(e->fhf, x, e->s + c * nv, y, c > 0, err);
        return rc != LM_OK ? rc : be->check(be, err);
    }
    be->zero(be, nv, y);
    for (int64_t c = 0; c < e->ncoils && rc == LM_OK; c++) {
        const lm_cfloat *sc = e->s + c * nv;
        be->mul(be, nv, e->tmp, sc, x);
        rc = toeplitz(e, e->tmp, e->tmp, err);
        be->mulc_acc(be, nv, y, sc, e->tmp);
    }
    if (rc != LM_OK)
        return rc;
    return be->check(be, err);
}

/* F^H d of a group of channels holds 16 bytes per voxel and channel (the
 * kernel's planes and the complex copy): groups stay under this. */
#define LM_ADJOINT_GROUP_BYTES ((int64_t)1 << 29)

lm_code lm_encoding_adjoint(lm_encoding *e, const lm_kdata *d, lm_cfloat *x, const lm_ctl *ctl, lm_error *err)
{
    if (!d || d->m != e->t->m || d->ncoils != e->ncoils)
        return lm_fail(err, LM_ERR_INVALID, "encoding: k-space of %lld samples x %lld channels, the operator "
                       "has %lld x %lld", d ? (long long)d->m : 0LL, d ? (long long)d->ncoils : 0LL,
                       (long long)e->t->m, (long long)e->ncoils);
    if (e->be->device == LM_DEVICE_GPU)
        return lm_gpu_adjoint(&e->g, e->t, d, e->s, NULL, e->v->name, x, ctl, err);

    /* Channels go to the kernel together (one sin/cos per pair for all of
     * them), in groups when N x channels would take too much memory. */
    const int64_t nv = e->nvox, m = d->m, nc = e->ncoils;
    int64_t group = LM_ADJOINT_GROUP_BYTES / (16 * nv);
    group = group < 1 ? 1 : group > nc ? nc : group;
    const int64_t ngroups = (nc + group - 1) / group;
    group = (nc + ngroups - 1) / ngroups; /* even: 20 channels by 16 go as 10 + 10 */
    const float inv_n = (float)(1.0 / (double)nv);
    lm_code rc = LM_OK;
    for (int64_t c0 = 0; c0 < nc && rc == LM_OK; c0 += group) {
        const int64_t ng = nc - c0 < group ? nc - c0 : group;
        const lm_kdata part = {.m = m, .ncoils = ng, .d = d->d + c0 * m};
        lm_cfloat *fhd = NULL;
        lm_ctl_range range;
        const lm_ctl sub = lm_ctl_sub(&range, ctl, (double)c0 / (double)nc, (double)(c0 + ng) / (double)nc);
        rc = lm_compute_fhd_sets(&e->g, e->t, &part, e->v->name, ctl ? &sub : NULL, &fhd, err);
        if (rc != LM_OK)
            break;
        for (int64_t k = 0; k < ng; k++) {
            const int64_t c = c0 + k;
            const lm_cfloat *fc = fhd + k * nv;
            const lm_cfloat *sc = e->s_host ? e->s_host + c * nv : NULL;
#pragma omp parallel for num_threads(e->be->threads) schedule(static) if (nv >= 32768)
            for (int64_t j = 0; j < nv; j++) {
                const lm_cfloat b = fc[j] * inv_n; /* F^H d / N, as the single-coil solver always did */
                if (!sc)
                    x[j] = b;
                else if (c == 0)
                    x[j] = conjf(sc[j]) * b;
                else
                    x[j] += conjf(sc[j]) * b;
            }
        }
        free(fhd);
    }
    return rc;
}

lm_code lm_encoding_forward(lm_encoding *e, const lm_cfloat *x, lm_kdata *d, lm_error *err)
{
    if (!d || d->m != e->t->m || d->ncoils != e->ncoils)
        return lm_fail(err, LM_ERR_INVALID, "encoding: forward into k-space of the wrong size");
    const int64_t nv = e->nvox, m = e->t->m;
    lm_cfloat *xh = lm_alloc((size_t)nv, sizeof *xh, err, "forward image");
    lm_cfloat *tmp = xh ? lm_alloc((size_t)nv, sizeof *tmp, err, "forward image") : NULL;
    float *k = tmp ? lm_alloc((size_t)(3 * m), sizeof *k, err, "forward samples") : NULL;
    lm_nufft_plan *plan = NULL;
    lm_code rc = k ? LM_OK : LM_ERR_NOMEM;
    if (rc == LM_OK) {
        e->be->download(e->be, xh, x, (size_t)nv * sizeof *xh);
        rc = e->be->check(e->be, err);
    }
    if (rc == LM_OK) {
        for (int64_t j = 0; j < m; j++)
            for (int a = 0; a < 3; a++)
                k[a * m + j] = e->t->k[3 * j + a];
        const int dim = e->g.n[2] > 1 ? 3 : 2;
        const int64_t c[3] = {e->g.n[0] / 2, e->g.n[1] / 2, e->g.n[2] / 2};
        lm_nufft_opts no;
        lm_nufft_default_opts(&no);
        no.threads = e->threads;
        rc = lm_nufft_make_plan(2, dim, e->g.n, -1, 1e-6, &no, &plan, err);
        if (rc == LM_OK)
            rc = lm_nufft_set_points(plan, m, k, k + m, dim == 3 ? k + 2 * m : NULL, c, e->g.n, err);
    }
    for (int64_t ch = 0; ch < e->ncoils && rc == LM_OK; ch++) {
        const lm_cfloat *sc = e->s_host ? e->s_host + ch * nv : NULL;
        for (int64_t j = 0; j < nv; j++)
            tmp[j] = sc ? sc[j] * xh[j] : xh[j];
        lm_cfloat *dc = d->d + ch * m;
        rc = lm_nufft_execute_c(plan, tmp, dc, NULL, err);
        if (rc != LM_OK)
            break;
        for (int64_t j = 0; j < m; j++) {
            const double ph = lm_geom_phi(&e->g, k[j], k[m + j], k[2 * m + j]);
            dc[j] *= (float)(ph / (double)nv);
        }
    }
    lm_nufft_destroy(plan);
    free(k), free(tmp), free(xh);
    return rc;
}

static lm_code normal_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    return lm_encoding_normal(op->state, x, y, err);
}

lm_code lm_encoding_normal_op(lm_encoding *e, lm_linop **op, lm_error *err)
{
    *op = NULL;
    lm_code rc = lm_encoding_prepare_normal(e, NULL, NULL, err);
    if (rc != LM_OK)
        return rc;
    if (!e->normal) {
        e->normal = lm_calloc(1, sizeof *e->normal, err, "normal operator");
        if (!e->normal)
            return LM_ERR_NOMEM;
        *e->normal = (lm_linop){.n_in = e->nvox, .n_out = e->nvox, .be = e->be, .name = "E^H E",
                                .apply = normal_apply, .state = e, .diag = lm_encoding_diag(e)};
    }
    *op = e->normal;
    return LM_OK;
}
