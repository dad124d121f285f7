/* Per-frame encodings and their block-diagonal operators (lm_dyn_model.h). */
#include "lm_dyn_model.h"

#include <stdlib.h>
#include <string.h>

#include "lm_coils.h"
#include "lm_dyn_budget.h"
#include "lm_dyn_ops.h"
#include "lm_encoding.h"
#include "lm_gpu.h"
#include "lm_io.h"
#include "lm_trace.h"
#include "lm_tuning.h"

struct lm_dyn_model {
    lm_geom geom;
    int64_t T, N;
    lm_traj **traj;
    lm_kdata **kdata;
    lm_encoding **enc;
    lm_linop *op, *normal;
    lm_sens *estimated;   /* maps from the time-averaged data (no maps given) */
    const lm_sens *sens;
    char *variant;        /* the desc's, kept for lm_dyn_model_subset */
    int use_cache, threads;
    lm_gpu_qstream *qs;   /* GPU, streamed: the frames' FFT(Q) (lm_dyn_budget.h) */
    lm_dyn_qplan qplan;
    lm_cfloat *ehd;       /* E^H d on the back end, made by the first lm_dyn_model_ehd */
};

void lm_dyn_model_free(lm_dyn_model *m)
{
    if (!m)
        return;
    lm_linop_free(m->op);
    lm_linop_free(m->normal);
    lm_gpu_qstream_free(m->qs);
    if (m->ehd)
        lm_dyn_model_backend(m)->release(lm_dyn_model_backend(m), m->ehd);
    /* the last first: frame 0's encoding holds the device maps the others borrow */
    for (int64_t t = m->T - 1; t >= 0; t--) {
        if (m->enc)
            lm_encoding_free(m->enc[t]);
        if (m->traj)
            lm_traj_free(m->traj[t]);
        if (m->kdata)
            lm_kdata_free(m->kdata[t]);
    }
    lm_sens_free(m->estimated);
    free(m->enc);
    free(m->traj);
    free(m->kdata);
    free(m->variant);
    free(m);
}

lm_code lm_dyn_model_new(const lm_dyn_model_desc *d, lm_dyn_model **out, lm_error *err)
{
    *out = NULL;
    if (!d || !d->geom || !d->traj || !d->frames)
        return lm_fail(err, LM_ERR_INVALID, "dynamic model: geometry, trajectory or frames missing");
    lm_code rc = lm_frames_check(d->frames, d->traj->m, "dynamic data", err);
    if (rc != LM_OK)
        return rc;
    if (d->kdata && d->kdata->m != d->traj->m)
        return lm_fail(err, LM_ERR_INVALID, "dynamic data: %lld k-space samples per channel, %lld trajectory samples",
                       (long long)d->kdata->m, (long long)d->traj->m);
    if (d->sens && (rc = lm_check_sens(d->sens, d->geom->n, d->kdata ? d->kdata->ncoils : d->sens->ncoils, "coil maps",
                                       err)) != LM_OK)
        return rc;
    lm_dyn_model *m = calloc(1, sizeof *m);
    if (!m)
        return lm_fail(err, LM_ERR_NOMEM, "dynamic model: out of memory");
    m->geom = *d->geom;
    m->T = d->frames->count;
    m->use_cache = d->use_cache;
    m->threads = d->threads;
    if (d->variant && !(m->variant = strdup(d->variant))) {
        free(m);
        return lm_fail(err, LM_ERR_NOMEM, "dynamic model: out of memory");
    }
    /* No maps for multi-coil data: estimated once from every frame's samples
     * together (time-averaged: all of the acquisition's k-space coverage). */
    m->sens = d->sens;
    if (!m->sens && d->kdata && d->kdata->ncoils > 1) {
        rc = lm_sens_estimate(d->geom, d->traj, d->kdata, NULL, NULL, &m->estimated, NULL, err);
        if (rc != LM_OK) {
            lm_dyn_model_free(m);
            return rc;
        }
        m->sens = m->estimated;
    }
    m->N = lm_geom_voxels(d->geom);
    m->traj = lm_calloc((size_t)m->T, sizeof *m->traj, err, "dynamic model");
    m->kdata = m->traj ? lm_calloc((size_t)m->T, sizeof *m->kdata, err, "dynamic model") : NULL;
    m->enc = m->kdata ? lm_calloc((size_t)m->T, sizeof *m->enc, err, "dynamic model") : NULL;
    if (!m->enc) {
        lm_dyn_model_free(m);
        return LM_ERR_NOMEM;
    }
    for (int64_t t = 0; t < m->T && rc == LM_OK; t++) {
        rc = lm_frames_extract(d->frames, t, d->traj, d->kdata, &m->traj[t], d->kdata ? &m->kdata[t] : NULL, err);
        if (rc != LM_OK)
            break;
        /* on a GPU the frames share frame 0's device maps, and each frame's
         * NUFFT plan lives only for its E^H d or E x: the normal operator
         * runs through Q */
        lm_encoding_desc ed = {.geom = d->geom, .traj = m->traj[t], .sens = m->sens,
                               .variant = d->variant ? d->variant : "auto", .use_cache = d->use_cache,
                               .threads = d->threads, .trim_plan = m->T > 1,
                               .sens_on_backend = t > 0 ? lm_encoding_maps(m->enc[0]) : NULL};
        rc = lm_encoding_new(&ed, &m->enc[t], err);
        if (rc == LM_OK && lm_encoding_backend(m->enc[t])->device != lm_encoding_backend(m->enc[0])->device)
            rc = lm_fail(err, LM_ERR_INVALID, "dynamic model: frames on different devices");
    }
    if (rc != LM_OK) {
        lm_dyn_model_free(m);
        return rc;
    }
    *out = m;
    return LM_OK;
}

int64_t lm_dyn_model_frames(const lm_dyn_model *m) { return m->T; }
const lm_sens *lm_dyn_model_sens(const lm_dyn_model *m) { return m->sens; }
int lm_dyn_model_sens_estimated(const lm_dyn_model *m) { return m->estimated != NULL; }
int64_t lm_dyn_model_voxels(const lm_dyn_model *m) { return m->N; }
const lm_geom *lm_dyn_model_geom(const lm_dyn_model *m) { return &m->geom; }
lm_backend *lm_dyn_model_backend(const lm_dyn_model *m) { return lm_encoding_backend(m->enc[0]); }
lm_encoding *lm_dyn_model_encoding(const lm_dyn_model *m, int64_t t) { return m->enc[t]; }
const lm_traj *lm_dyn_model_traj(const lm_dyn_model *m, int64_t t) { return m->traj[t]; }
const lm_kdata *lm_dyn_model_kdata(const lm_dyn_model *m, int64_t t) { return m->kdata[t]; }

/* diag(parts(t)) over the frames. */
static lm_code frames_blockdiag(lm_dyn_model *m, lm_code (*part)(lm_encoding *, lm_linop **, lm_error *),
                                lm_linop **out, lm_error *err)
{
    lm_linop **ops = lm_calloc((size_t)m->T, sizeof *ops, err, "dynamic model");
    if (!ops)
        return LM_ERR_NOMEM;
    lm_code rc = LM_OK;
    for (int64_t t = 0; t < m->T && rc == LM_OK; t++)
        rc = part(m->enc[t], &ops[t], err);
    if (rc == LM_OK)
        rc = lm_linop_blockdiag((int)m->T, ops, out, err);
    free(ops); /* the encodings own their operators */
    return rc;
}

lm_code lm_dyn_model_op(lm_dyn_model *m, lm_linop **out, lm_error *err)
{
    if (!m->op) {
        lm_code rc = frames_blockdiag(m, lm_encoding_op, &m->op, err);
        if (rc != LM_OK)
            return rc;
    }
    *out = m->op;
    return LM_OK;
}

/* GPU: every frame's Q in turn; the frames' Toeplitz products share frame
 * 0's scratch (grid, plans), and their FFT(Q) stay resident or stream
 * (lm_dyn_budget.h). */
static lm_code prepare_gpu(lm_dyn_model *m, lm_error *err)
{
    lm_gpu_mem_usage u = {0};
    (void)lm_gpu_mem_usage_get(&u, NULL);
    lm_dyn_qplan_make(m->T, m->geom.n, lm_tuning_get()->gpu_dyn_budget, u.dev_free, &m->qplan);
    lm_code rc = LM_OK;
    struct lm_gpu_toeplitz *first = NULL;
    for (int64_t t = 0; t < m->T && rc == LM_OK; t++) {
        if ((rc = lm_encoding_prepare_normal(m->enc[t], NULL, NULL, err)) != LM_OK)
            break;
        struct lm_gpu_toeplitz *tp = lm_encoding_gpu_toeplitz(m->enc[t]);
        if (!tp)
            continue; /* segmented or split across devices: as it is */
        if (!first)
            first = tp;
        else
            rc = lm_gpu_toeplitz_share(tp, first, err);
        if (rc == LM_OK && m->qplan.stream) {
            if (!m->qs)
                rc = lm_gpu_qstream_new((int)m->T, &m->qs, err);
            if (rc == LM_OK)
                rc = lm_gpu_toeplitz_park(tp, m->qs, (int)t, err);
        }
    }
    if (rc == LM_OK && m->qs)
        lm_trace("dynamic model: the frames' FFT(Q) stream (over the GPU budget)");
    return rc;
}

int lm_dyn_model_q_streamed(const lm_dyn_model *m) { return m->qs != NULL; }
long long lm_dyn_model_q_uploads(const lm_dyn_model *m) { return lm_gpu_qstream_uploads(m->qs); }

lm_code lm_dyn_model_normal(lm_dyn_model *m, lm_linop **out, lm_error *err)
{
    if (!m->normal) {
        lm_code rc = LM_OK;
        if (lm_dyn_model_backend(m)->device == LM_DEVICE_GPU && m->T > 1 && (rc = prepare_gpu(m, err)) != LM_OK)
            return rc;
        rc = frames_blockdiag(m, lm_encoding_normal_op, &m->normal, err);
        if (rc != LM_OK)
            return rc;
        m->normal->name = "dynamic E^H E";
        m->normal->diag = lm_dyn_model_diag(m);
    }
    *out = m->normal;
    return LM_OK;
}

lm_code lm_dyn_model_adjoint(lm_dyn_model *m, lm_cfloat *b, lm_error *err)
{
    if (!m->kdata[0])
        return lm_fail(err, LM_ERR_INVALID, "dynamic model: made without k-space");
    for (int64_t t = 0; t < m->T; t++) {
        lm_code rc = lm_encoding_adjoint(m->enc[t], m->kdata[t], b + t * m->N, NULL, err);
        if (rc != LM_OK)
            return rc;
    }
    return LM_OK;
}

lm_code lm_dyn_model_ehd(lm_dyn_model *m, const lm_cfloat **out, lm_error *err)
{
    *out = NULL;
    if (!m->ehd) {
        lm_backend *be = lm_dyn_model_backend(m);
        lm_cfloat *b = be->alloc(be, m->T * m->N, "dynamic E^H d");
        lm_code rc = be->check(be, err);
        if (rc == LM_OK)
            rc = lm_dyn_model_adjoint(m, b, err);
        if (rc != LM_OK) {
            be->release(be, b);
            return rc;
        }
        m->ehd = b;
    }
    *out = m->ehd;
    return LM_OK;
}

double lm_dyn_model_diag(const lm_dyn_model *m)
{
    double s = 0;
    for (int64_t t = 0; t < m->T; t++)
        s += lm_encoding_diag(m->enc[t]);
    return s / (double)m->T;
}

/* Readouts of frame t: its readout length when it divides the frame, else
 * LM_DYN_SUBSET_CHUNKS equal runs of samples (the last one longer). */
#define LM_DYN_SUBSET_CHUNKS 16

static int64_t frame_readout(const lm_traj *t)
{
    if (t->readout > 0 && t->m % t->readout == 0)
        return t->readout;
    return t->m >= LM_DYN_SUBSET_CHUNKS ? t->m / LM_DYN_SUBSET_CHUNKS : t->m;
}

/* Samples of frame t that keep() selects; copied into traj/kdata at offset
 * `at` when they are given. */
static int64_t subset_frame(const lm_dyn_model *m, int64_t t, lm_dyn_keep_fn keep, void *user, lm_traj *traj,
                            lm_kdata *kd, int64_t at)
{
    const lm_traj *src = m->traj[t];
    const lm_kdata *ks = m->kdata[t];
    const int64_t len = frame_readout(src), nr = src->m / len;
    int64_t n = 0;
    for (int64_t r = 0; r < nr; r++) {
        if (!keep(user, t, r))
            continue;
        const int64_t a = r * len, cnt = r == nr - 1 ? src->m - a : len;
        if (traj) {
            memcpy(traj->k + 3 * (at + n), src->k + 3 * a, (size_t)cnt * 3 * sizeof *traj->k);
            if (src->w)
                memcpy(traj->w + at + n, src->w + a, (size_t)cnt * sizeof *traj->w);
            if (src->t)
                memcpy(traj->t + at + n, src->t + a, (size_t)cnt * sizeof *traj->t);
        }
        if (kd)
            for (int64_t c = 0; c < ks->ncoils; c++)
                memcpy(kd->d + c * kd->m + at + n, ks->d + c * ks->m + a, (size_t)cnt * sizeof *kd->d);
        n += cnt;
    }
    return n;
}

int64_t lm_dyn_model_readouts(const lm_dyn_model *m, int64_t t)
{
    return m->traj[t]->m / frame_readout(m->traj[t]);
}

lm_code lm_dyn_model_subset(const lm_dyn_model *m, lm_dyn_keep_fn keep, void *user, lm_dyn_model **out, lm_error *err)
{
    *out = NULL;
    if (!m->kdata[0])
        return lm_fail(err, LM_ERR_INVALID, "dynamic model: made without k-space");
    lm_frames f = {.count = m->T, .duration_s = 0};
    f.start = lm_calloc((size_t)m->T + 1, sizeof *f.start, err, "dynamic subset");
    if (!f.start)
        return LM_ERR_NOMEM;
    for (int64_t t = 0; t < m->T; t++) {
        const int64_t n = subset_frame(m, t, keep, user, NULL, NULL, 0);
        if (n == 0) {
            free(f.start);
            return lm_fail(err, LM_ERR_INVALID, "dynamic subset: frame %lld keeps no samples", (long long)t);
        }
        f.start[t + 1] = f.start[t] + n;
    }
    const int64_t total = f.start[m->T];
    lm_traj *traj = lm_traj_new(total, m->traj[0]->ndim, err);
    lm_kdata *kd = traj ? lm_kdata_new(total, m->kdata[0]->ncoils, err) : NULL;
    lm_code rc = kd ? LM_OK : LM_ERR_NOMEM;
    if (rc == LM_OK && m->traj[0]->w && !(traj->w = lm_alloc((size_t)total, sizeof *traj->w, err, "subset weights")))
        rc = LM_ERR_NOMEM;
    if (rc == LM_OK && m->traj[0]->t)
        rc = lm_traj_alloc_times(traj, err);
    if (rc == LM_OK) {
        /* readouts stay whole, so the subset keeps the readout length when
         * every frame has one */
        traj->readout = m->traj[0]->readout;
        for (int64_t t = 0; t < m->T; t++) {
            subset_frame(m, t, keep, user, traj, kd, f.start[t]);
            if (m->traj[t]->readout != traj->readout || frame_readout(m->traj[t]) != traj->readout)
                traj->readout = 0;
        }
        lm_dyn_model_desc d = {.geom = &m->geom, .traj = traj, .kdata = kd, .sens = m->sens, .frames = &f,
                               .variant = m->variant, .use_cache = m->use_cache, .threads = m->threads};
        rc = lm_dyn_model_new(&d, out, err);
    }
    /* the new model copied every frame's samples */
    lm_traj_free(traj);
    lm_kdata_free(kd);
    free(f.start);
    return rc;
}
