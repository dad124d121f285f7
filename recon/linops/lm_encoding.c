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
#include "lm_linop_fourier.h"
#include "lm_nufft.h"
#include "lm_progress.h"
#include "lm_qcache.h"
#include "lm_sums.h"
#include "lm_timeseg.h"
#include "lm_toeplitz_block.h"
#include "lm_trace.h"

struct lm_encoding {
    lm_geom g;
    const lm_traj *t;        /* borrowed: outlives the encoding */
    const lm_variant *v;
    lm_backend *be;
    int64_t nvox, ncoils;
    lm_cfloat *s;            /* coil maps on the back end (N x coils), NULL without maps */
    const lm_cfloat *s_host; /* the caller's maps (borrowed, as the trajectory) */
    int trim_plan;           /* gpu-nufft's plan freed after each E^H d and E x (lm_encoding_desc) */
    int s_borrowed;          /* s is another encoding's (lm_encoding_desc.sens_on_backend) */
    double map_mean;         /* mean sum_c |s_c|^2 over covered voxels; 1 without maps */
    int use_cache, threads;
    lm_linop *fhf;           /* F^H F through Q, on the back end */
    lm_linop *normal;
    lm_linop *op;            /* E composed (lm_encoding_op), made on first request */
    /* off-resonance (NULL / 0 without a field map) */
    const float *f;          /* field map, Hz (borrowed, as the trajectory) */
    const lm_variant *vx;    /* exact: the direct variant with the time term */
    lm_timeseg *ts;          /* segmented: centres and interpolators b_l(t_m) */
    lm_cfloat *c_host;       /* segmented: L x N phases exp(-i 2 pi f tau_l) (on a GPU made when a host path needs them) */
    lm_cfloat *c;            /* the same on the back end (c_host on the CPU) */
    lm_cfloat *b_dev;        /* gpu-nufft, segmented: the interpolators b_l(t_m) on the device (E^H d) */
    lm_cfloat *seg_tmp;      /* GPU adjoint of a direct variant: one segment's image (made on first use) */
    float *f_dev;            /* exact on a GPU: the field map on the device (E^H d there) */
    lm_toeplitz_block *tb;   /* CPU, segmented: the block Toeplitz product, all coils at once */
    lm_gpu_nufft *nu;        /* gpu-nufft: the NUFFT plan, trajectory and buffers on the device */
    lm_gpu_sense_split *split; /* GPU, SENSE on several devices (or workers): coils split across them */
    double diag0;            /* sum_m phi(k_m)^2 / N^2: the diagonal of F_t^H F_t */
};

lm_backend *lm_encoding_backend(const lm_encoding *e) { return e->be; }
const lm_variant *lm_encoding_variant(const lm_encoding *e) { return e->v; }
int64_t lm_encoding_voxels(const lm_encoding *e) { return e->nvox; }
int64_t lm_encoding_coils(const lm_encoding *e) { return e->ncoils; }
int lm_encoding_segments(const lm_encoding *e, double *interp_error)
{
    if (interp_error)
        *interp_error = e->ts ? e->ts->error : 0;
    return e->ts ? e->ts->L : 0;
}
const lm_variant *lm_encoding_exact_variant(const lm_encoding *e) { return e->vx; }
static lm_code fourier_diag(lm_encoding *e, lm_error *err);

double lm_encoding_diag(lm_encoding *e)
{
    if (e->fhf && !e->f)
        return e->fhf->diag * e->map_mean;
    lm_error err = {0};
    if (!(e->diag0 > 0) && fourier_diag(e, &err) != LM_OK)
        return 0; /* out of memory: no diagonal */
    return e->diag0 * e->map_mean;
}

void lm_encoding_free(lm_encoding *e)
{
    if (!e)
        return;
    lm_linop_free(e->op);
    lm_linop_free(e->normal);
    lm_gpu_sense_split_free(e->split);
    lm_linop_free(e->fhf);
    lm_toeplitz_block_free(e->tb);
    if (e->be) {
        e->be->release(e->be, e->seg_tmp);
        e->be->release(e->be, e->b_dev);
        if (e->c != e->c_host)
            e->be->release(e->be, e->c);
        if (e->s != e->s_host && !e->s_borrowed)
            e->be->release(e->be, e->s);
        lm_backend_free(e->be);
    }
    lm_gpu_mem_free(e->f_dev);
    lm_gpu_nufft_free(e->nu);
    free(e->c_host);
    lm_timeseg_free(e->ts);
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

/* The diagonal of F^H F, sum_m phi(k_m)^2 / N^2: known before Q, and the
 * only one a NUFFT-pair normal operator or a field map has. phi^2 per
 * sample in parallel (three sines each: 17 ms on B128 in one thread),
 * summed in order (the same diagonal on any core count). */
static lm_code fourier_diag(lm_encoding *e, lm_error *err)
{
    const int64_t nv = e->nvox, m = e->t->m;
    double *phi2 = lm_alloc((size_t)m, sizeof *phi2, err, "diagonal");
    if (!phi2)
        return LM_ERR_NOMEM;
#pragma omp parallel for schedule(static) if (m >= 32768)
    for (int64_t j = 0; j < m; j++) {
        const double ph = lm_geom_phi(&e->g, e->t->k[3 * j], e->t->k[3 * j + 1], e->t->k[3 * j + 2]);
        phi2[j] = ph * ph;
    }
    double p2 = 0;
    for (int64_t j = 0; j < m; j++)
        p2 += phi2[j];
    free(phi2);
    e->diag0 = p2 / ((double)nv * (double)nv);
    return LM_OK;
}

/* The field map's part of the plan: the exact sums' variant, or the
 * segmentation with its phases on the back end. */
static lm_code setup_fieldmap(lm_encoding *e, const lm_encoding_desc *d, lm_error *err)
{
    const int64_t nv = e->nvox, m = e->t->m;
    for (int64_t j = 0; j < nv; j++)
        if (!isfinite(d->fieldmap[j]))
            return lm_fail(err, LM_ERR_INVALID, "field map: voxel %lld is not a finite number", (long long)j);
    e->f = d->fieldmap;
    lm_code drc = fourier_diag(e, err);
    if (drc != LM_OK)
        return drc;
    if (d->segments == 0) {
        e->vx = lm_sums_exact_variant(e->v, err);
        if (!e->vx)
            return err ? err->code : LM_ERR_UNSUPPORTED;
        if (e->be->device != LM_DEVICE_GPU || e->vx->device != LM_DEVICE_GPU)
            return LM_OK;
        lm_code rc = lm_gpu_mem_alloc((void **)&e->f_dev, (size_t)nv * sizeof(float), "field map", err);
        return rc == LM_OK ? lm_gpu_mem_upload(e->f_dev, d->fieldmap, (size_t)nv * sizeof(float), err) : rc;
    }
    lm_code rc = lm_timeseg_make(e->t->t, m, d->fieldmap, nv, d->segments,
                                 d->seg_minmax ? LM_TIMESEG_MINMAX : LM_TIMESEG_HIST, LM_SEGMENTS_TOL, &e->ts, err);
    if (rc != LM_OK)
        return rc;
    lm_trace("time segments fitted");
    const int L = e->ts->L;
    if (e->be->device == LM_DEVICE_CPU) {
        e->c = e->c_host = lm_alloc((size_t)nv * (size_t)L, sizeof *e->c_host, err, "segment phases");
        if (!e->c_host)
            return LM_ERR_NOMEM;
        lm_timeseg_phases(e->ts, d->fieldmap, nv, e->c_host);
        return LM_OK;
    }
    /* on the device from the field map: 8 MB go up instead of L x 16 MB,
     * and no host exponentials */
    e->c = e->be->alloc(e->be, nv * L, "segment phases");
    rc = e->be->check(e->be, err);
    return rc == LM_OK ? lm_gpu_segment_phases(d->fieldmap, nv, e->ts->tau, L, e->c, err) : rc;
}

/* The segment phases on the host, made there on first need when the back
 * end made its own (a GPU's host paths: E x of the direct variants). */
static const lm_cfloat *host_phases(lm_encoding *e, lm_error *err)
{
    if (!e->c_host && (e->c_host = lm_alloc((size_t)e->nvox * (size_t)e->ts->L, sizeof *e->c_host, err,
                                            "segment phases")) != NULL)
        lm_timeseg_phases(e->ts, e->f, e->nvox, e->c_host);
    return e->c_host;
}

lm_code lm_encoding_new(const lm_encoding_desc *d, lm_encoding **out, lm_error *err)
{
    *out = NULL;
    if (!d || !d->geom || !d->traj)
        return lm_fail(err, LM_ERR_INVALID, "encoding: missing geometry or trajectory");
    lm_code rc = lm_geom_check(d->geom, d->traj, err);
    if (rc != LM_OK)
        return rc;
    if (d->fieldmap && !d->traj->t)
        return lm_fail(err, LM_ERR_INVALID, "encoding: a field map needs the sample times, and the trajectory has none");
    if (d->fieldmap && (d->segments < LM_SEGMENTS_AUTO || d->segments > LM_TIMESEG_MAX_L))
        return lm_fail(err, LM_ERR_INVALID, "encoding: %d time segments is out of range (auto, 0 exact, 1..%d)",
                       d->segments, LM_TIMESEG_MAX_L);
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
    e->trim_plan = d->trim_plan;
    if (d->sens && (rc = check_sens(d->sens, d->geom, &e->map_mean, err)) != LM_OK)
        goto fail;
    if ((rc = lm_backend_for_variant(v, d->threads, &e->be, err)) != LM_OK)
        goto fail;
    if (d->sens) {
        const size_t count = (size_t)(e->nvox * e->ncoils);
        e->s_host = d->sens->s;
        e->s_borrowed = e->be->device != LM_DEVICE_CPU && d->sens_on_backend;
        e->s = e->be->device == LM_DEVICE_CPU ? (lm_cfloat *)d->sens->s
               : e->s_borrowed                ? (lm_cfloat *)d->sens_on_backend
                                              : e->be->alloc(e->be, (int64_t)count, "coil maps");
        if (e->s && e->s != e->s_host && !e->s_borrowed)
            e->be->upload(e->be, e->s, e->s_host, count * sizeof(lm_cfloat));
        if ((rc = e->be->check(e->be, err)) != LM_OK)
            goto fail;
        lm_trace("coil maps on the back end");
    }
    if (d->fieldmap && (rc = setup_fieldmap(e, d, err)) != LM_OK)
        goto fail;
    *out = e;
    return LM_OK;
fail:
    lm_encoding_free(e);
    return rc;
}

const lm_cfloat *lm_encoding_maps(const lm_encoding *e) { return e->s; }

struct lm_gpu_toeplitz *lm_encoding_gpu_toeplitz(const lm_encoding *e)
{
    return e->split || e->be->device != LM_DEVICE_GPU ? NULL : lm_linop_toeplitz_gpu(e->fhf);
}

void lm_encoding_trim(lm_encoding *e)
{
    lm_gpu_nufft_free(e->nu);
    e->nu = NULL;
}

int lm_encoding_gpu_workers(const lm_encoding *e)
{
    return e->split ? lm_gpu_sense_split_workers(e->split) : 1;
}

/* SENSE on a GPU with several devices listed (lm_gpu_sense_split_devices):
 * the normal operator's coils split across them, from the same Q. */
static lm_code make_split(lm_encoding *e, const lm_cfloat *q_host, const lm_cfloat *q_dev, lm_error *err)
{
    int devs[32];
    const int nd = lm_gpu_sense_split_devices(e->s ? e->ncoils : 1, devs, 32, err);
    if (nd < 0)
        return LM_ERR_INVALID;
    if (!e->s || e->ncoils < 2 || nd < 2)
        return LM_OK;
    return lm_gpu_sense_split_new(e->g.n, q_host, q_dev, e->s, e->ncoils, devs, nd, &e->split, err);
}

lm_code lm_encoding_prepare_normal(lm_encoding *e, const lm_ctl *ctl, int *q_from_cache, lm_error *err)
{
    int cached = 0;
    lm_code rc = LM_OK;
    if (q_from_cache)
        *q_from_cache = 0;
    if (e->fhf || e->tb || (e->f && !e->ts))
        return LM_OK; /* made, or exact (no Q) */
    lm_cfloat *q = NULL;
    if (e->ts && e->be->device == LM_DEVICE_GPU) {
        /* Q_ll' summed on the device and kept there: no disk cache (the
         * blocks take milliseconds there, reading them seconds) */
        void *qd = NULL;
        const size_t bytes = (size_t)lm_q_count(e->g.n) * sizeof(lm_cfloat) * (size_t)(e->ts->L * (e->ts->L + 1) / 2);
        rc = lm_gpu_mem_alloc(&qd, bytes, "Q blocks", err);
        if (rc == LM_OK)
            rc = lm_compute_q_segments_gpu(&e->g, e->t, e->ts->L, e->ts->b, e->v->name, qd, ctl, err);
        if (rc == LM_OK) {
            lm_trace("Q blocks summed");
            rc = lm_linop_toeplitz_block(e->be, e->g.n, e->ts->L, qd, 1, e->c, (int)e->ncoils, &e->fhf, err);
        }
        lm_gpu_mem_free(qd);
    } else if (e->ts) {
        /* Q_ll' as weight sets of one kernel call */
        rc = lm_compute_q_segments(&e->g, e->t, e->ts->L, e->ts->b, e->ts->hash, 0, e->v->name, e->use_cache, ctl,
                                   &q, &cached, err);
        if (rc == LM_OK) /* (CPU: the GPU's blocks are summed above) */
            rc = lm_toeplitz_block_new_coils(e->g.n, e->ts->L, q, e->be->threads, (int)e->ncoils, &e->tb, err);
    } else if (e->be->device == LM_DEVICE_CPU) {
        rc = lm_compute_q(&e->g, e->t, e->v->name, e->use_cache, ctl, &q, &cached, err);
        if (rc == LM_OK)
            rc = lm_linop_toeplitz(e->be, e->g.n, q, 0, &e->fhf, err);
    } else if (e->use_cache && !e->v->approximate &&
               lm_qcache_load(&e->g, e->t, lm_sums_q_class(e->v), &q, NULL) == LM_OK) {
        /* (a GPU NUFFT sums Q in milliseconds: reading it from disk and
         * uploading it takes longer, 0.12 s on B128; so does storing it) */
        cached = 1;
        rc = lm_linop_toeplitz(e->be, e->g.n, q, 0, &e->fhf, err);
        if (rc == LM_OK)
            rc = make_split(e, q, NULL, err);
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
        if (rc == LM_OK)
            rc = make_split(e, NULL, qd, err);
        if (rc == LM_OK && e->use_cache && !e->v->approximate && (q = malloc(bytes)) != NULL &&
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

static lm_code normal_exact(lm_encoding *e, const lm_cfloat *x, lm_cfloat *y, lm_error *err);

lm_code lm_encoding_normal(lm_encoding *e, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    if (e->f && !e->ts)
        return normal_exact(e, x, y, err);
    lm_code rc = lm_encoding_prepare_normal(e, NULL, NULL, err);
    if (rc != LM_OK)
        return rc;
    lm_backend *be = e->be;
    if (e->tb) { /* CPU, segmented: every coil in one pass over the frequencies */
        lm_toeplitz_block_apply_sense(e->tb, x, e->s, e->s ? e->ncoils : 1, e->c, y, 0);
        return LM_OK;
    }
    if (!e->s)
        return toeplitz(e, x, y, err);
    if (e->split)
        return lm_gpu_sense_split_apply(e->split, x, y, err);
    rc = lm_linop_coil_normal(e->fhf, x, e->s, e->ncoils, y, NULL, NULL, err); /* Q's products fuse */
    return rc != LM_OK ? rc : be->check(be, err);
}

/* F^H d of a group of channels holds 16 bytes per voxel and weight set (the
 * kernel's planes and the complex copy): groups stay under this. */
#define LM_ADJOINT_GROUP_BYTES ((int64_t)1 << 29)

/* x (host) = (1/N) sum_c conj(s_c) fhd_c exactly, fhd from the direct
 * variant with the time term. */
static lm_code adjoint_exact_host(lm_encoding *e, const lm_kdata *d, lm_cfloat *x, const lm_ctl *ctl, lm_error *err)
{
    const int64_t nv = e->nvox;
    lm_cfloat *fhd = NULL;
    lm_code rc = lm_compute_fhd_exact(&e->g, e->t, d, e->f, e->vx->name, ctl, &fhd, err);
    if (rc != LM_OK)
        return rc;
    const float inv_n = (float)(1.0 / (double)nv);
    for (int64_t j = 0; j < nv; j++) {
        lm_cfloat v = 0;
        for (int64_t c = 0; c < d->ncoils; c++)
            v += (e->s_host ? conjf(e->s_host[c * nv + j]) : 1.0f) * fhd[c * nv + j];
        x[j] = v * inv_n;
    }
    free(fhd);
    return LM_OK;
}

/* d (host) = E x exactly for x in host memory. */
static lm_code forward_exact_host(lm_encoding *e, const lm_cfloat *xh, lm_kdata *d, lm_error *err)
{
    const int64_t nv = e->nvox, m = e->t->m, nc = e->ncoils;
    lm_cfloat *sx = lm_alloc((size_t)nv, (size_t)nc * sizeof *sx, err, "coil images");
    if (!sx)
        return LM_ERR_NOMEM;
    for (int64_t c = 0; c < nc; c++)
        for (int64_t j = 0; j < nv; j++)
            sx[c * nv + j] = e->s_host ? e->s_host[c * nv + j] * xh[j] : xh[j];
    lm_code rc = lm_compute_forward_exact(&e->g, e->t, e->f, sx, nc, e->vx->name, NULL, d->d, err);
    free(sx);
    if (rc != LM_OK)
        return rc;
    for (int64_t j = 0; j < m; j++) {
        const float ph = (float)(lm_geom_phi(&e->g, e->t->k[3 * j], e->t->k[3 * j + 1], e->t->k[3 * j + 2]) /
                                 (double)nv);
        for (int64_t c = 0; c < nc; c++)
            d->d[c * m + j] *= ph;
    }
    return LM_OK;
}

/* E^H E x = E^H (E x), both exact: O(MN) per application, the reference. */
static lm_code normal_exact(lm_encoding *e, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    const int64_t nv = e->nvox, m = e->t->m;
    lm_cfloat *xh = lm_alloc((size_t)nv, 2 * sizeof *xh, err, "normal image");
    lm_cfloat *dk = xh ? lm_alloc((size_t)m, (size_t)e->ncoils * sizeof *dk, err, "normal k-space") : NULL;
    lm_code rc = dk ? LM_OK : LM_ERR_NOMEM;
    if (rc == LM_OK) {
        e->be->download(e->be, xh, x, (size_t)nv * sizeof *xh);
        rc = e->be->check(e->be, err);
    }
    lm_kdata d = {.m = m, .ncoils = e->ncoils, .d = dk};
    if (rc == LM_OK)
        rc = forward_exact_host(e, xh, &d, err);
    if (rc == LM_OK)
        rc = adjoint_exact_host(e, &d, xh + nv, NULL, err);
    if (rc == LM_OK) {
        e->be->upload(e->be, y, xh + nv, (size_t)nv * sizeof *y);
        rc = e->be->check(e->be, err);
    }
    free(dk), free(xh);
    return rc;
}

/* gpu-nufft on a GPU: the session of E^H d and E x (plan, trajectory,
 * buffers), made at the first call and kept with the encoding. */
static int gpu_nufft(const lm_encoding *e)
{
    return e->be->device == LM_DEVICE_GPU && strcmp(e->v->name, "gpu-nufft") == 0;
}

static lm_code gpu_nufft_ready(lm_encoding *e, lm_error *err)
{
    return e->nu ? LM_OK : lm_gpu_nufft_new(&e->g, e->t, e->ncoils, &e->nu, err);
}

/* E^H d on the device without a field map: gpu-nufft's session, else the
 * direct variant's one-shot sums. */
static lm_code adjoint_gpu(lm_encoding *e, const lm_kdata *d, lm_cfloat *x, const lm_ctl *ctl, lm_error *err)
{
    if (!gpu_nufft(e))
        return lm_gpu_adjoint(&e->g, e->t, d, e->s, NULL, e->v->name, x, ctl, err);
    lm_code rc = gpu_nufft_ready(e, err);
    return rc == LM_OK ? lm_gpu_nufft_adjoint(e->nu, d, e->s, x, ctl, err) : rc;
}

/* GPU, segmented: per segment l the channels' conj(b_l) d_c through the
 * device's E^H d (coil maps applied there), then x += conj(c_l) . x_l. */
static lm_code adjoint_segmented_gpu(lm_encoding *e, const lm_kdata *d, lm_cfloat *x, const lm_ctl *ctl,
                                     lm_error *err)
{
    const int64_t nv = e->nvox, m = d->m, nc = d->ncoils, L = e->ts->L;
    if (gpu_nufft(e)) { /* all on the device: the data go up once */
        lm_code rc = gpu_nufft_ready(e, err);
        if (rc == LM_OK && !e->b_dev) {
            e->b_dev = e->be->alloc(e->be, L * m, "segment interpolators");
            if (e->b_dev)
                e->be->upload(e->be, e->b_dev, e->ts->b, (size_t)(L * m) * sizeof *e->b_dev);
            rc = e->be->check(e->be, err);
        }
        return rc == LM_OK ? lm_gpu_nufft_adjoint_segmented(e->nu, d, e->s, (int)L, e->b_dev, e->c, x, ctl, err) : rc;
    }
    lm_cfloat *dl = lm_alloc((size_t)m, (size_t)nc * sizeof *dl, err, "segment k-space");
    if (!dl)
        return LM_ERR_NOMEM;
    lm_backend *be = e->be;
    if (!e->seg_tmp)
        e->seg_tmp = be->alloc(be, nv, "segment image");
    be->zero(be, nv, x);
    lm_code rc = be->check(be, err);
    for (int64_t l = 0; l < L && rc == LM_OK; l++) {
        const lm_cfloat *bl = e->ts->b + l * m;
        for (int64_t c = 0; c < nc; c++)
            for (int64_t j = 0; j < m; j++)
                dl[c * m + j] = conjf(bl[j]) * d->d[c * m + j];
        const lm_kdata part = {.m = m, .ncoils = nc, .d = dl};
        lm_ctl_range range;
        const lm_ctl sub = lm_ctl_sub(&range, ctl, (double)l / (double)L, (double)(l + 1) / (double)L);
        rc = adjoint_gpu(e, &part, e->seg_tmp, ctl ? &sub : NULL, err);
        if (rc == LM_OK) {
            be->mulc_acc(be, nv, x, e->c + l * nv, e->seg_tmp);
            rc = be->check(be, err);
        }
    }
    free(dl);
    return rc;
}

lm_code lm_encoding_adjoint(lm_encoding *e, const lm_kdata *d, lm_cfloat *x, const lm_ctl *ctl, lm_error *err)
{
    if (!d || d->m != e->t->m || d->ncoils != e->ncoils)
        return lm_fail(err, LM_ERR_INVALID, "encoding: k-space of %lld samples x %lld channels, the operator "
                       "has %lld x %lld", d ? (long long)d->m : 0LL, d ? (long long)d->ncoils : 0LL,
                       (long long)e->t->m, (long long)e->ncoils);
    if (e->f && !e->ts) {
        if (e->be->device == LM_DEVICE_CPU)
            return adjoint_exact_host(e, d, x, ctl, err);
        if (e->f_dev) /* the direct sum with the time term on the device, no round trip */
            return lm_gpu_adjoint(&e->g, e->t, d, e->s, e->f_dev, e->vx->name, x, ctl, err);
        lm_cfloat *xh = lm_alloc((size_t)e->nvox, sizeof *xh, err, "E^H d");
        lm_code rc = xh ? adjoint_exact_host(e, d, xh, ctl, err) : LM_ERR_NOMEM;
        if (rc == LM_OK) {
            e->be->upload(e->be, x, xh, (size_t)e->nvox * sizeof *xh);
            rc = e->be->check(e->be, err);
        }
        free(xh);
        return rc;
    }
    if (e->be->device == LM_DEVICE_GPU) {
        const lm_code rc = e->ts ? adjoint_segmented_gpu(e, d, x, ctl, err) : adjoint_gpu(e, d, x, ctl, err);
        if (e->trim_plan)
            lm_encoding_trim(e);
        return rc;
    }

    /* Channels (times segments) go to the kernel together as weight sets
     * (one sin/cos per pair for all of them), in groups when N x sets would
     * take too much memory. Set (channel k, segment l) is k L + l with
     * weights conj(b_l) d_k. */
    const int64_t nv = e->nvox, m = d->m, nc = e->ncoils, L = e->ts ? e->ts->L : 1;
    int64_t group = LM_ADJOINT_GROUP_BYTES / (16 * nv * L);
    group = group < 1 ? 1 : group > nc ? nc : group;
    const int64_t ngroups = (nc + group - 1) / group;
    group = (nc + ngroups - 1) / ngroups; /* even: 20 channels by 16 go as 10 + 10 */
    const float inv_n = (float)(1.0 / (double)nv);
    lm_cfloat *dl = NULL;
    if (e->ts && !(dl = lm_alloc((size_t)(m * L), (size_t)group * sizeof *dl, err, "segment k-space")))
        return LM_ERR_NOMEM;
    lm_code rc = LM_OK;
    for (int64_t c0 = 0; c0 < nc && rc == LM_OK; c0 += group) {
        const int64_t ng = nc - c0 < group ? nc - c0 : group;
        lm_kdata part = {.m = m, .ncoils = ng, .d = d->d + c0 * m};
        if (e->ts) {
            for (int64_t k = 0; k < ng; k++)
                for (int64_t l = 0; l < L; l++) {
                    const lm_cfloat *bl = e->ts->b + l * m, *dk = d->d + (c0 + k) * m;
                    lm_cfloat *o = dl + (k * L + l) * m;
                    for (int64_t j = 0; j < m; j++)
                        o[j] = conjf(bl[j]) * dk[j];
                }
            part = (lm_kdata){.m = m, .ncoils = ng * L, .d = dl};
        }
        lm_cfloat *fhd = NULL;
        lm_ctl_range range;
        const lm_ctl sub = lm_ctl_sub(&range, ctl, (double)c0 / (double)nc, (double)(c0 + ng) / (double)nc);
        rc = lm_compute_fhd_sets(&e->g, e->t, &part, e->v->name, ctl ? &sub : NULL, &fhd, err);
        if (rc != LM_OK)
            break;
        for (int64_t k = 0; k < ng; k++) {
            const int64_t c = c0 + k;
            const lm_cfloat *fc = fhd + k * L * nv;
            const lm_cfloat *sc = e->s_host ? e->s_host + c * nv : NULL;
            const lm_cfloat *cl = e->c_host;
#pragma omp parallel for num_threads(e->be->threads) schedule(static) if (nv >= 32768)
            for (int64_t j = 0; j < nv; j++) {
                lm_cfloat b;
                if (cl) { /* sum_l conj(c_l) F^H (conj(b_l) d) */
                    b = 0;
                    for (int64_t l = 0; l < L; l++)
                        b += conjf(cl[l * nv + j]) * fc[l * nv + j];
                    b *= inv_n;
                } else {
                    b = fc[j] * inv_n; /* F^H d / N, as the single-coil solver always did */
                }
                if (!sc)
                    x[j] = c == 0 ? b : x[j] + b;
                else if (c == 0)
                    x[j] = conjf(sc[j]) * b;
                else
                    x[j] += conjf(sc[j]) * b;
            }
        }
        free(fhd);
    }
    free(dl);
    return rc;
}

/* E x on the GPU through the forward NUFFT (gpu-nufft; segmented: one per
 * segment of c_l x, weighted by b_l on the host). LM_ERR_UNSUPPORTED: the
 * caller takes the host path. */
static lm_code forward_one_gpu(lm_encoding *e, const lm_cfloat *x, lm_cfloat *out, lm_error *err)
{
    if (!gpu_nufft(e))
        return lm_gpu_forward(&e->g, e->t, x, e->s, e->ncoils, e->v->name, out, err);
    lm_code rc = gpu_nufft_ready(e, err);
    return rc == LM_OK ? lm_gpu_nufft_forward(e->nu, x, e->s, e->ncoils, out, err) : rc;
}

static lm_code forward_gpu(lm_encoding *e, const lm_cfloat *x, lm_kdata *d, lm_error *err)
{
    if (!e->ts)
        return forward_one_gpu(e, x, d->d, err);
    const int64_t nv = e->nvox, m = e->t->m, nd = m * e->ncoils;
    lm_cfloat *part = lm_alloc((size_t)nd, sizeof *part, err, "forward segment");
    lm_cfloat *cx = part ? e->be->alloc(e->be, nv, "forward segment image") : NULL;
    lm_code rc = part ? e->be->check(e->be, err) : LM_ERR_NOMEM;
    for (int64_t l = 0; l < e->ts->L && rc == LM_OK; l++) {
        e->be->mul(e->be, nv, cx, e->c + l * nv, x);
        rc = e->be->check(e->be, err);
        if (rc == LM_OK)
            rc = forward_one_gpu(e, cx, part, err);
        const lm_cfloat *bl = e->ts->b + l * m;
        for (int64_t q = 0; rc == LM_OK && q < nd; q++)
            d->d[q] = l == 0 ? bl[q % m] * part[q] : d->d[q] + bl[q % m] * part[q];
    }
    if (cx)
        e->be->release(e->be, cx);
    free(part);
    return rc;
}

lm_code lm_encoding_forward(lm_encoding *e, const lm_cfloat *x, lm_kdata *d, lm_error *err)
{
    if (!d || d->m != e->t->m || d->ncoils != e->ncoils)
        return lm_fail(err, LM_ERR_INVALID, "encoding: forward into k-space of the wrong size");
    if (e->be->device == LM_DEVICE_GPU && !(e->f && !e->ts)) {
        lm_error e2 = {0};
        lm_code rc = forward_gpu(e, x, d, &e2);
        if (e->trim_plan)
            lm_encoding_trim(e);
        if (rc != LM_ERR_UNSUPPORTED) {
            if (rc != LM_OK && err)
                *err = e2;
            return rc;
        }
    }
    const int64_t nv = e->nvox, m = e->t->m, L = e->ts ? e->ts->L : 1;
    lm_cfloat *xh = lm_alloc((size_t)nv, sizeof *xh, err, "forward image");
    lm_cfloat *tmp = xh ? lm_alloc((size_t)nv, sizeof *tmp, err, "forward image") : NULL;
    float *k = tmp ? lm_alloc((size_t)(3 * m), sizeof *k, err, "forward samples") : NULL;
    lm_cfloat *seg = k && e->ts ? lm_alloc((size_t)m, sizeof *seg, err, "forward segment") : NULL;
    lm_nufft_plan *plan = NULL;
    lm_code rc = k && (seg || !e->ts) ? LM_OK : LM_ERR_NOMEM;
    const lm_cfloat *phases = NULL;
    if (rc == LM_OK && e->ts && !(phases = host_phases(e, err)))
        rc = LM_ERR_NOMEM;
    if (rc == LM_OK) {
        e->be->download(e->be, xh, x, (size_t)nv * sizeof *xh);
        rc = e->be->check(e->be, err);
    }
    if (rc == LM_OK && e->f && !e->ts) {
        rc = forward_exact_host(e, xh, d, err);
        goto out;
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
        lm_cfloat *dc = d->d + ch * m;
        /* segmented: d_c = sum_l b_l . F (c_l s_c x) */
        for (int64_t l = 0; l < L && rc == LM_OK; l++) {
            const lm_cfloat *cl = e->ts ? phases + l * nv : NULL;
            for (int64_t j = 0; j < nv; j++) {
                const lm_cfloat v = sc ? sc[j] * xh[j] : xh[j];
                tmp[j] = cl ? cl[j] * v : v;
            }
            rc = lm_nufft_execute_c(plan, tmp, e->ts ? seg : dc, NULL, err);
            if (rc == LM_OK && e->ts) {
                const lm_cfloat *bl = e->ts->b + l * m;
                for (int64_t j = 0; j < m; j++)
                    dc[j] = l == 0 ? bl[j] * seg[j] : dc[j] + bl[j] * seg[j];
            }
        }
        if (rc != LM_OK)
            break;
        for (int64_t j = 0; j < m; j++) {
            const double ph = lm_geom_phi(&e->g, k[j], k[m + j], k[2 * m + j]);
            dc[j] *= (float)(ph / (double)nv);
        }
    }
out:
    lm_nufft_destroy(plan);
    free(seg), free(k), free(tmp), free(xh);
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
        e->normal = lm_linop_new(e->be, e->nvox, e->nvox, "E^H E", err);
        if (!e->normal)
            return LM_ERR_NOMEM;
        e->normal->apply = normal_apply;
        e->normal->state = e;
        e->normal->diag = lm_encoding_diag(e);
        if (e->op)
            lm_linop_set_normal(e->op, e->normal);
    }
    *op = e->normal;
    return LM_OK;
}

/* sum_l B_l F C_l: one coil's time-segmented F_t. */
static lm_code segmented_f(lm_encoding *e, lm_linop *f, lm_linop **out, lm_error *err)
{
    const int L = e->ts->L;
    const int64_t m = e->t->m, nv = e->nvox;
    lm_linop *terms[LM_TIMESEG_MAX_L] = {0};
    lm_code rc = LM_OK;
    for (int l = 0; l < L && rc == LM_OK; l++) {
        lm_linop *c = NULL, *b = NULL, *fc = NULL;
        rc = lm_linop_cdiag(e->be, nv, e->c + (int64_t)l * nv, LM_CDIAG_BORROW, &c, err);
        if (rc == LM_OK)
            rc = lm_linop_cdiag(e->be, m, e->ts->b + (int64_t)l * m, 0, &b, err);
        if (rc == LM_OK)
            rc = lm_linop_chain(c, f, &fc, err);
        if (rc == LM_OK)
            rc = lm_linop_chain(fc, b, &terms[l], err);
        lm_linop_free(fc), lm_linop_free(b), lm_linop_free(c);
    }
    if (rc == LM_OK)
        rc = lm_linop_sum_n(L, terms, NULL, out, err);
    for (int l = 0; l < L; l++)
        lm_linop_free(terms[l]);
    return rc;
}

lm_code lm_encoding_op(lm_encoding *e, lm_linop **op, lm_error *err)
{
    *op = NULL;
    if (e->op) {
        *op = e->op;
        return LM_OK;
    }
    const int exact = e->f && !e->ts;
    lm_linop *f = NULL, *ft = NULL, *s = NULL, *rep = NULL, *E = NULL;
    lm_code rc = lm_linop_fourier(e->be, &e->g, e->t, exact ? e->vx : e->v, exact ? e->f : NULL, e->threads, &f,
                                  err);
    if (rc == LM_OK && e->ts)
        rc = segmented_f(e, f, &ft, err);
    else if (rc == LM_OK)
        ft = lm_linop_ref(f);
    if (rc == LM_OK && e->s) {
        rc = lm_linop_maps(e->be, e->nvox, e->ncoils, e->s, &s, err);
        if (rc == LM_OK)
            rc = lm_linop_repeat(ft, e->ncoils, &rep, err);
        if (rc == LM_OK)
            rc = lm_linop_chain(s, rep, &E, err);
    } else if (rc == LM_OK) {
        E = lm_linop_ref(ft);
    }
    lm_linop_free(rep), lm_linop_free(s), lm_linop_free(ft), lm_linop_free(f);
    if (rc != LM_OK)
        return rc;
    E->name = "E";
    if (e->normal)
        lm_linop_set_normal(E, e->normal);
    *op = e->op = E;
    return LM_OK;
}
