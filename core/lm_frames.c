/* Frame lists of dynamic acquisitions (lm_frames.h). */
#include "lm_frames.h"

#include <stdlib.h>
#include <string.h>

void lm_frames_free(lm_frames *f)
{
    if (!f)
        return;
    free(f->start);
    free(f);
}

static lm_frames *frames_new(int64_t count, lm_error *err)
{
    lm_frames *f = calloc(1, sizeof *f);
    if (!f) {
        lm_fail(err, LM_ERR_NOMEM, "frames: out of memory");
        return NULL;
    }
    f->count = count;
    f->start = lm_alloc((size_t)count + 1, sizeof *f->start, err, "frames");
    if (!f->start) {
        free(f);
        return NULL;
    }
    return f;
}

/* count frames of per samples each, from sample 0. */
static lm_code frames_even(int64_t count, int64_t per, lm_frames **out, lm_error *err)
{
    lm_frames *f = frames_new(count, err);
    if (!f)
        return err ? err->code : LM_ERR_NOMEM;
    for (int64_t t = 0; t <= count; t++)
        f->start[t] = t * per;
    *out = f;
    return LM_OK;
}

lm_code lm_frames_check(const lm_frames *f, int64_t m, const char *what, lm_error *err)
{
    if (!f || f->count < 1 || !f->start)
        return lm_fail(err, LM_ERR_INVALID, "%s: no frames", what);
    if (f->start[0] != 0 || f->start[f->count] > m)
        return lm_fail(err, LM_ERR_INVALID, "%s: frames cover samples %lld..%lld of %lld", what,
                       (long long)f->start[0], (long long)f->start[f->count], (long long)m);
    for (int64_t t = 0; t < f->count; t++)
        if (f->start[t + 1] <= f->start[t])
            return lm_fail(err, LM_ERR_INVALID, "%s: frame %lld has no samples", what, (long long)t);
    return LM_OK;
}

lm_code lm_frames_equal(int64_t m, int64_t frames, lm_frames **out, lm_error *err)
{
    *out = NULL;
    if (frames < 1 || m < frames || m % frames)
        return lm_fail(err, LM_ERR_INVALID, "frames: %lld samples do not split into %lld equal frames", (long long)m,
                       (long long)frames);
    return frames_even(frames, m / frames, out, err);
}

lm_code lm_frames_by_spokes(int64_t m, int64_t readout, int64_t spokes_per_frame, lm_frames **out, lm_error *err)
{
    *out = NULL;
    if (readout < 1 || m % readout)
        return lm_fail(err, LM_ERR_INVALID, "binning: %lld samples are not whole spokes of %lld", (long long)m,
                       (long long)readout);
    const int64_t spokes = m / readout;
    if (spokes_per_frame < 1 || spokes_per_frame > spokes)
        return lm_fail(err, LM_ERR_INVALID, "binning: %lld spokes per frame, the data hold %lld spokes",
                       (long long)spokes_per_frame, (long long)spokes);
    return frames_even(spokes / spokes_per_frame, spokes_per_frame * readout, out, err);
}

lm_code lm_frames_by_count(int64_t m, int64_t readout, int64_t frames, lm_frames **out, lm_error *err)
{
    *out = NULL;
    if (readout < 1 || m % readout)
        return lm_fail(err, LM_ERR_INVALID, "binning: %lld samples are not whole spokes of %lld", (long long)m,
                       (long long)readout);
    if (frames < 1 || frames > m / readout)
        return lm_fail(err, LM_ERR_INVALID, "binning: %lld frames from %lld spokes (need 1 to one per spoke)",
                       (long long)frames, (long long)(m / readout));
    return frames_even(frames, (m / readout) / frames * readout, out, err); /* the rest dropped */
}

lm_code lm_frames_by_time(const double *spoke_time, int64_t nspokes, int64_t readout, int64_t frames,
                          lm_frames **out, lm_error *err)
{
    *out = NULL;
    if (!spoke_time || nspokes < 1 || readout < 1)
        return lm_fail(err, LM_ERR_INVALID, "binning by time: no spoke times");
    if (frames < 1 || frames > nspokes)
        return lm_fail(err, LM_ERR_INVALID, "binning by time: %lld frames from %lld spokes", (long long)frames,
                       (long long)nspokes);
    for (int64_t s = 1; s < nspokes; s++)
        if (!(spoke_time[s] >= spoke_time[s - 1]))
            return lm_fail(err, LM_ERR_INVALID, "binning by time: spoke %lld's time %g s is before spoke %lld's",
                           (long long)s, spoke_time[s], (long long)(s - 1));
    const double t0 = spoke_time[0];
    /* the last spoke lasts as long as the mean spacing, so equal spacing
     * gives equal spoke counts */
    const double dt = nspokes > 1 ? (spoke_time[nspokes - 1] - t0) / (double)(nspokes - 1) : 1;
    const double span = spoke_time[nspokes - 1] - t0 + dt;
    if (!(span > 0))
        return lm_fail(err, LM_ERR_INVALID, "binning by time: every spoke has the same time");
    lm_frames *f = frames_new(frames, err);
    if (!f)
        return err ? err->code : LM_ERR_NOMEM;
    f->duration_s = span / (double)frames;
    int64_t s = 0;
    f->start[0] = 0;
    for (int64_t t = 0; t < frames; t++) {
        /* window t: [t0 + t w, t0 + (t + 1) w); the last takes the rest */
        const double end = t0 + (double)(t + 1) * f->duration_s;
        while (s < nspokes && (t == frames - 1 || spoke_time[s] < end - 1e-9 * dt))
            s++;
        f->start[t + 1] = s * readout;
    }
    lm_code c = lm_frames_check(f, nspokes * readout, "binning by time", err);
    if (c != LM_OK) {
        lm_frames_free(f);
        return c;
    }
    *out = f;
    return LM_OK;
}

lm_code lm_frames_check_kdata(const lm_frames *f, const lm_kdata *k, const char *what, lm_error *err)
{
    lm_code rc = lm_frames_check(f, k ? k->m : 0, what, err);
    if (rc != LM_OK)
        return rc;
    for (int64_t t = 0; t < f->count; t++) {
        int any = 0;
        for (int64_t c = 0; c < k->ncoils && !any; c++)
            for (int64_t i = f->start[t]; i < f->start[t + 1] && !any; i++)
                any = k->d[c * k->m + i] != 0;
        if (!any)
            return lm_fail(err, LM_ERR_INVALID, "%s: frame %lld has no samples (its k-space is zero in every channel)",
                           what, (long long)t);
    }
    return LM_OK;
}

lm_code lm_frames_extract(const lm_frames *f, int64_t t, const lm_traj *traj, const lm_kdata *k, lm_traj **traj_out,
                          lm_kdata **k_out, lm_error *err)
{
    if (traj_out)
        *traj_out = NULL;
    if (k_out)
        *k_out = NULL;
    if (!f || t < 0 || t >= f->count)
        return lm_fail(err, LM_ERR_INVALID, "frames: no frame %lld", (long long)t);
    const int64_t a = f->start[t], n = lm_frames_samples(f, t);
    if (traj_out && traj) {
        if (f->start[f->count] > traj->m)
            return lm_fail(err, LM_ERR_INVALID, "frames: the trajectory has %lld samples, the frames %lld",
                           (long long)traj->m, (long long)f->start[f->count]);
        lm_traj *o = lm_traj_new(n, traj->ndim, err);
        if (!o)
            return err ? err->code : LM_ERR_NOMEM;
        memcpy(o->k, traj->k + 3 * a, (size_t)n * 3 * sizeof *o->k);
        o->readout = traj->readout > 0 && n % traj->readout == 0 ? traj->readout : 0;
        if (traj->w) {
            o->w = lm_alloc((size_t)n, sizeof *o->w, err, "frame weights");
            if (!o->w) {
                lm_traj_free(o);
                return LM_ERR_NOMEM;
            }
            memcpy(o->w, traj->w + a, (size_t)n * sizeof *o->w);
        }
        if (traj->t) {
            if (lm_traj_alloc_times(o, err) != LM_OK) {
                lm_traj_free(o);
                return LM_ERR_NOMEM;
            }
            memcpy(o->t, traj->t + a, (size_t)n * sizeof *o->t);
        }
        *traj_out = o;
    }
    if (k_out && k) {
        if (f->start[f->count] > k->m) {
            if (traj_out) {
                lm_traj_free(*traj_out);
                *traj_out = NULL;
            }
            return lm_fail(err, LM_ERR_INVALID, "frames: the k-space has %lld samples, the frames %lld",
                           (long long)k->m, (long long)f->start[f->count]);
        }
        lm_kdata *o = lm_kdata_new(n, k->ncoils, err);
        if (!o) {
            if (traj_out) {
                lm_traj_free(*traj_out);
                *traj_out = NULL;
            }
            return err ? err->code : LM_ERR_NOMEM;
        }
        for (int64_t c = 0; c < k->ncoils; c++)
            memcpy(o->d + c * n, k->d + c * k->m + a, (size_t)n * sizeof *o->d);
        *k_out = o;
    }
    return LM_OK;
}
