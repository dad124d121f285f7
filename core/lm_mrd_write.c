/* Writing ISMRMRD (MRD) HDF5 files through libismrmrd, into a temporary
 * file that is renamed over the destination when complete. */
#include "lm_config.h"

#include "lm_mrd_private.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !LM_HAVE_ISMRMRD

lm_code lm_mrd_write_named(const char *path, const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                           const char *trajectory, lm_error *err)
{
    (void)g, (void)t, (void)k, (void)trajectory;
    return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: ISMRMRD output unavailable: built without libismrmrd",
                   path ? path : "");
}

lm_code lm_mrd_write(const char *path, const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                     lm_error *err)
{
    return lm_mrd_write_named(path, g, t, k, NULL, err);
}

lm_code lm_mrd_write_dataset(const char *path, const lm_mrd *m, const char *trajectory, lm_error *err)
{
    (void)m, (void)trajectory;
    return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: ISMRMRD output unavailable: built without libismrmrd",
                   path ? path : "");
}

#else /* LM_HAVE_ISMRMRD */

#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>

#include "lm_atomic.h"
#include "lm_mrd_stream.h"

/* Writing                                                                   */
/* ------------------------------------------------------------------------ */

static const char *const traj_names[] = {"cartesian", "epi", "radial", "goldenangle", "spiral", "other"};

/* libismrmrd error capture: its default handler prints to stderr. Written
 * under the MRD lock. */
static char mrd_last_error[256];

static void mrd_error_handler(const char *file, int line, const char *function, int code, const char *msg)
{
    (void)file, (void)line, (void)function, (void)code;
    snprintf(mrd_last_error, sizeof mrd_last_error, "%s", msg ? msg : "unknown error");
    for (char *p = mrd_last_error; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

static lm_code mrd_fail_lib(lm_error *err, const char *path, const char *what)
{
    if (mrd_last_error[0])
        return lm_fail(err, LM_ERR_IO, "%s: %s (libismrmrd: %s)", path, what, mrd_last_error);
    return lm_fail(err, LM_ERR_IO, "%s: %s", path, what);
}

/* One slice (or the only one) to write: its acquisitions carry idx.slice
 * and, when geo is not NULL, its position and directions. */
typedef struct wpart {
    const lm_traj *t;
    const lm_kdata *k;
    int slice;
    const lm_mrd_slice *geo;
} wpart;

/* Sample times as MRD holds them: t_j = (j - center_sample) * dwell. Set
 * only when the readout's times are of that form (else the file has none). */
static void set_dwell(ISMRMRD_AcquisitionHeader *hd, const float *t, int64_t ns)
{
    if (ns < 2)
        return;
    const double dt = (double)t[1] - (double)t[0];
    if (!(dt > 0) || !isfinite(dt))
        return;
    const double c = -(double)t[0] / dt;
    const double ci = nearbyint(c);
    if (fabs(c - ci) > 1e-3 || ci < 0 || ci > 65535)
        return;
    for (int64_t j = 0; j < ns; j++)
        if (fabs((double)t[j] - ((double)j - ci) * dt) > 1e-3 * dt)
            return;
    hd->sample_time_us = (float)(dt * 1e6);
    hd->center_sample = (uint16_t)ci;
}

/* Samples per acquisition of a part. */
static int64_t part_per(const lm_traj *t)
{
    int64_t per = t->readout > 0 ? t->readout : (t->m < 4096 ? t->m : 4096);
    return per > 65535 ? 65535 : per;
}

static lm_code check_part(const char *path, const wpart *p, const wpart *first, lm_error *err)
{
    const lm_traj *t = p->t;
    const lm_kdata *k = p->k;
    if (!t || !k || !t->k || !k->d)
        return lm_fail(err, LM_ERR_INVALID, "%s: nothing to write", path);
    if (t->m != k->m || t->m <= 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: trajectory has %lld samples, k-space %lld", path,
                       (long long)t->m, (long long)k->m);
    if (t->ndim != 2 && t->ndim != 3)
        return lm_fail(err, LM_ERR_INVALID, "%s: trajectory in %d dimensions", path, t->ndim);
    if (k->ncoils < 1 || k->ncoils > 65535)
        return lm_fail(err, LM_ERR_INVALID, "%s: %lld channels (ISMRMRD holds 1..65535)", path,
                       (long long)k->ncoils);
    /* what the reader refuses is not written */
    if (p != first && (k->ncoils != first->k->ncoils || t->ndim != first->t->ndim))
        return lm_fail(err, LM_ERR_INVALID,
                       "%s: slice %d has %lld channels in %d dimensions, the first %lld in %d", path, p->slice,
                       (long long)k->ncoils, t->ndim, (long long)first->k->ncoils, first->t->ndim);
    for (int64_t i = 0; i < 3 * t->m; i++)
        if (!isfinite(t->k[i]))
            return lm_fail(err, LM_ERR_INVALID, "%s: trajectory sample %lld is not a finite number", path,
                           (long long)(i / 3));
    return LM_OK;
}

static void set_mask(ISMRMRD_AcquisitionHeader *hd, int64_t nc)
{
    hd->available_channels = (uint16_t)nc;
    hd->active_channels = (uint16_t)nc;
    for (int64_t c = 0; c < nc && c < 64 * ISMRMRD_CHANNEL_MASKS; c++)
        hd->channel_mask[c / 64] |= (uint64_t)1 << (c % 64);
}

/* The header's extras from an lm_mrd (NULL for the plain writers). */
typedef struct wextra {
    const lm_geom *recon;
    const lm_mrd_provenance *prov;
    const lm_mrd_parallel *par;
} wextra;

/* An MRD file being written: a temporary beside path (renamed over it by
 * mrd_out_end on success), HDF5's own messages silenced, the XML header
 * written. */
typedef struct mrd_out {
    const char *path;
    lm_atomic at;
    lm_h5_quiet q;
    ISMRMRD_Dataset d;
    int begun, opened; /* the temporary made; the dataset open */
} mrd_out;

static lm_code mrd_out_begin(mrd_out *o, const char *path, const char *xml, lm_error *err)
{
    memset(o, 0, sizeof *o);
    o->path = path;
    lm_code rc = lm_atomic_begin(&o->at, path, 0, err);
    if (rc != LM_OK)
        return rc;
    o->begun = 1;
    lm_h5_quiet_begin(&o->q);
    mrd_last_error[0] = '\0';
    ismrmrd_set_error_handler(mrd_error_handler);
    if (ismrmrd_init_dataset(&o->d, o->at.tmp_path, "/dataset") != ISMRMRD_NOERROR)
        return mrd_fail_lib(err, path, "cannot start the ISMRMRD file");
    if (ismrmrd_open_dataset(&o->d, true) != ISMRMRD_NOERROR)
        return mrd_fail_lib(err, path, "cannot create the ISMRMRD file");
    o->opened = 1;
    if (ismrmrd_write_header(&o->d, xml) != ISMRMRD_NOERROR)
        return mrd_fail_lib(err, path, "cannot write the XML header");
    return LM_OK;
}

/* Closes the file; renamed into place when rc (the writing's result) and
 * the close succeeded, else removed. Call after every mrd_out_begin that
 * set o->begun, whatever it returned. */
static lm_code mrd_out_end(mrd_out *o, lm_code rc, lm_error *err)
{
    if (o->opened && ismrmrd_close_dataset(&o->d) != ISMRMRD_NOERROR && rc == LM_OK)
        rc = mrd_fail_lib(err, o->path, "cannot close the ISMRMRD file");
    free(o->d.filename);
    free(o->d.groupname);
    lm_h5_quiet_end(&o->q);
    if (rc == LM_OK)
        return lm_atomic_commit(&o->at, err);
    lm_atomic_abort(&o->at);
    return rc;
}

static lm_code mrd_write_parts(const char *path, const lm_geom *g, const wpart *parts, int nparts,
                               const lm_kdata *noise, int rep, int con, const char *trajectory, const wextra *ex,
                               lm_error *err)
{
    if (!path || !*path)
        return lm_fail(err, LM_ERR_INVALID, "empty ISMRMRD output file name");
    if (!g || nparts < 1 || !parts)
        return lm_fail(err, LM_ERR_INVALID, "%s: nothing to write", path);
    if (!trajectory)
        trajectory = "other";
    int known = 0;
    for (size_t i = 0; i < sizeof traj_names / sizeof traj_names[0]; i++)
        known |= strcmp(trajectory, traj_names[i]) == 0;
    if (!known)
        return lm_fail(err, LM_ERR_INVALID,
                       "%s: ISMRMRD trajectory '%s' unknown (cartesian, epi, radial, goldenangle, spiral, other)",
                       path, trajectory);
    for (int a = 0; a < 3; a++) {
        if (g->n[a] < 1 || g->n[a] > 65535)
            return lm_fail(err, LM_ERR_INVALID, "%s: matrix %lldx%lldx%lld out of ISMRMRD's range", path,
                           (long long)g->n[0], (long long)g->n[1], (long long)g->n[2]);
        if (!(g->fov_mm[a] > 0) || !isfinite(g->fov_mm[a]))
            return lm_fail(err, LM_ERR_INVALID, "%s: field of view %gx%gx%g mm is invalid", path,
                           g->fov_mm[0], g->fov_mm[1], g->fov_mm[2]);
    }
    if (nparts > 1 && g->n[2] != 1)
        return lm_fail(err, LM_ERR_INVALID, "%s: %d slices need a 2D matrix (z = 1), not %lldx%lldx%lld", path,
                       nparts, (long long)g->n[0], (long long)g->n[1], (long long)g->n[2]);
    if (rep < 0 || rep > 65535 || con < 0 || con > 65535)
        return lm_fail(err, LM_ERR_INVALID, "%s: repetition %d or contrast %d out of ISMRMRD's range 0..65535", path,
                       rep, con);
    int64_t nacq = 0, maxacq = 0, readout = parts[0].t && parts[0].t->readout > 0 ? parts[0].t->readout : 0;
    for (int p = 0; p < nparts; p++) {
        lm_code rc = check_part(path, &parts[p], &parts[0], err);
        if (rc != LM_OK)
            return rc;
        if (parts[p].slice < 0 || parts[p].slice > 65535)
            return lm_fail(err, LM_ERR_INVALID, "%s: slice index %d out of ISMRMRD's range 0..65535", path,
                           parts[p].slice);
        for (int q = 0; q < p; q++)
            if (parts[q].slice == parts[p].slice)
                return lm_fail(err, LM_ERR_INVALID, "%s: two slices with index %d", path, parts[p].slice);
        if ((parts[p].t->readout > 0 ? parts[p].t->readout : 0) != readout)
            readout = 0; /* the header's tag holds one readout length: "unknown" */
        int64_t n = (parts[p].t->m + part_per(parts[p].t) - 1) / part_per(parts[p].t);
        nacq += n;
        maxacq = n > maxacq ? n : maxacq;
    }
    const int64_t nc = parts[0].k->ncoils;
    int64_t noise_per = 4096, nnoise = 0;
    if (noise) {
        if (!noise->d || noise->m < 1 || noise->ncoils != nc)
            return lm_fail(err, LM_ERR_INVALID, "%s: noise samples have %lld channels but the k-space has %lld", path,
                           (long long)noise->ncoils, (long long)nc);
        nnoise = (noise->m + noise_per - 1) / noise_per;
    }
    if ((uint64_t)(nacq + nnoise) > (uint64_t)UINT32_MAX)
        return lm_fail(err, LM_ERR_INVALID, "%s: too many readouts (%lld)", path, (long long)(nacq + nnoise));

    static const wextra none;
    if (!ex)
        ex = &none;
    if (ex->prov) {
        lm_code rc = lm_mrd_provenance_check(ex->prov, path, err);
        if (rc != LM_OK)
            return rc;
    }
    char *xml = lm_mrd_header_make(g, ex->recon, nc, maxacq, readout, trajectory, nparts, rep, con, ex->prov, ex->par);
    if (!xml)
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory for the XML header", path);

    mrd_out o;
    lm_code rc = mrd_out_begin(&o, path, xml, err);
    if (rc != LM_OK && !o.begun) { /* (nothing begun) */
        free(xml);
        return rc;
    }
    ISMRMRD_Dataset *const d = &o.d;
    ISMRMRD_Acquisition acq;
    int acq_init = 0;
    uint32_t counter = 0;
    if (rc != LM_OK)
        goto out;
    if (ismrmrd_init_acquisition(&acq) != ISMRMRD_NOERROR) {
        rc = mrd_fail_lib(err, path, "cannot make an acquisition");
        goto out;
    }
    acq_init = 1;
    /* Noise scans first, as scanners record them: no trajectory. */
    for (int64_t j = 0; j < nnoise; j++) {
        int64_t s0 = j * noise_per, ns = noise->m - s0 < noise_per ? noise->m - s0 : noise_per;
        ISMRMRD_AcquisitionHeader *hd = &acq.head;
        ismrmrd_init_acquisition_header(hd);
        hd->number_of_samples = (uint16_t)ns;
        set_mask(hd, nc);
        hd->trajectory_dimensions = 0;
        hd->scan_counter = counter++;
        hd->idx.repetition = (uint16_t)rep;
        hd->idx.contrast = (uint16_t)con;
        ismrmrd_set_flag(&hd->flags, ISMRMRD_ACQ_IS_NOISE_MEASUREMENT);
        if (ismrmrd_make_consistent_acquisition(&acq) != ISMRMRD_NOERROR) {
            rc = mrd_fail_lib(err, path, "out of memory for an acquisition");
            goto out;
        }
        for (int64_t c = 0; c < nc; c++)
            memcpy(acq.data + c * ns, noise->d + (size_t)c * (size_t)noise->m + (size_t)s0,
                   (size_t)ns * sizeof(lm_cfloat));
        if (ismrmrd_append_acquisition(d, &acq) != ISMRMRD_NOERROR) {
            rc = mrd_fail_lib(err, path, "cannot write an acquisition (disk full?)");
            goto out;
        }
    }
    for (int p = 0; p < nparts; p++) {
        const lm_traj *t = parts[p].t;
        const lm_kdata *k = parts[p].k;
        const int64_t per = part_per(t), n = (t->m + per - 1) / per;
        for (int64_t j = 0; j < n; j++) {
            int64_t s0 = j * per, ns = t->m - s0 < per ? t->m - s0 : per;
            ISMRMRD_AcquisitionHeader *hd = &acq.head;
            ismrmrd_init_acquisition_header(hd);
            hd->number_of_samples = (uint16_t)ns;
            set_mask(hd, nc);
            hd->trajectory_dimensions = (uint16_t)t->ndim;
            hd->center_sample = 0;
            if (t->t)
                set_dwell(hd, t->t + s0, ns);
            hd->scan_counter = counter++;
            hd->idx.kspace_encode_step_1 = (uint16_t)(j > 65535 ? 65535 : j);
            hd->idx.slice = (uint16_t)parts[p].slice;
            hd->idx.repetition = (uint16_t)rep;
            hd->idx.contrast = (uint16_t)con;
            if (parts[p].geo) {
                for (int a = 0; a < 3; a++) {
                    hd->position[a] = (float)parts[p].geo->position[a];
                    hd->read_dir[a] = (float)parts[p].geo->read_dir[a];
                    hd->phase_dir[a] = (float)parts[p].geo->phase_dir[a];
                    hd->slice_dir[a] = (float)parts[p].geo->slice_dir[a];
                }
            } else {
                hd->read_dir[0] = 1.0f;
                hd->phase_dir[1] = 1.0f;
                hd->slice_dir[2] = 1.0f;
            }
            if (j == 0)
                ismrmrd_set_flag(&hd->flags, ISMRMRD_ACQ_FIRST_IN_SLICE);
            if (j == n - 1) {
                ismrmrd_set_flag(&hd->flags, ISMRMRD_ACQ_LAST_IN_SLICE);
                if (p == nparts - 1)
                    ismrmrd_set_flag(&hd->flags, ISMRMRD_ACQ_LAST_IN_MEASUREMENT);
            }
            if (ismrmrd_make_consistent_acquisition(&acq) != ISMRMRD_NOERROR) {
                rc = mrd_fail_lib(err, path, "out of memory for an acquisition");
                goto out;
            }
            for (int64_t i = 0; i < ns; i++)
                for (int a = 0; a < t->ndim; a++)
                    acq.traj[i * t->ndim + a] = t->k[3 * (s0 + i) + a];
            /* data are channels x samples, samples fastest: every channel of this readout */
            for (int64_t c = 0; c < nc; c++)
                memcpy(acq.data + c * ns, k->d + (size_t)c * (size_t)k->m + (size_t)s0,
                       (size_t)ns * sizeof(lm_cfloat));
            if (ismrmrd_append_acquisition(d, &acq) != ISMRMRD_NOERROR) {
                rc = mrd_fail_lib(err, path, "cannot write an acquisition (disk full?)");
                goto out;
            }
        }
    }
out:
    if (acq_init)
        ismrmrd_cleanup_acquisition(&acq);
    free(xml);
    return mrd_out_end(&o, rc, err);
}

lm_code lm_mrd_write_named(const char *path, const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                           const char *trajectory, lm_error *err)
{
    const wpart p = {t, k, 0, NULL};
    if (!t || !k)
        return lm_fail(err, LM_ERR_INVALID, "%s: nothing to write", path ? path : "");
    return mrd_write_parts(path, g, &p, 1, NULL, 0, 0, trajectory, NULL, err);
}

lm_code lm_mrd_write(const char *path, const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                     lm_error *err)
{
    return lm_mrd_write_named(path, g, t, k, NULL, err);
}

lm_code lm_mrd_write_dataset(const char *path, const lm_mrd *m, const char *trajectory, lm_error *err)
{
    if (!m)
        return lm_fail(err, LM_ERR_INVALID, "%s: nothing to write", path ? path : "");
    const int rep = m->repetition > 0 ? m->repetition : 0, con = m->contrast > 0 ? m->contrast : 0;
    const wextra ex = {m->recon_geom.n[0] > 0 ? &m->recon_geom : NULL, &m->prov, &m->parallel};
    if (m->nslices <= 1 || !m->slices) {
        const wpart p = {m->traj, m->kdata, 0, NULL};
        return mrd_write_parts(path, &m->geom, &p, 1, m->noise, rep, con, trajectory, &ex, err);
    }
    wpart *parts = calloc((size_t)m->nslices, sizeof *parts);
    if (!parts)
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path ? path : "");
    for (int i = 0; i < m->nslices; i++)
        parts[i] = (wpart){m->slices[i].traj, m->slices[i].kdata, m->slices[i].index, &m->slices[i]};
    lm_code rc = mrd_write_parts(path, &m->geom, parts, m->nslices, m->noise, rep, con, trajectory, &ex, err);
    free(parts);
    return rc;
}

lm_code lm_mrd_write_stream(const char *path, const char *xml, const lm_mrd_msg *const *acqs, size_t n,
                            lm_error *err)
{
    if (!xml)
        return lm_fail(err, LM_ERR_INVALID, "%s: no MRD header to write", path ? path : "");
    for (size_t i = 0; i < n; i++)
        if (acqs[i]->id != LM_MRD_MSG_ACQUISITION)
            return lm_fail(err, LM_ERR_INVALID, "%s: message %zu is not an acquisition", path, i);
    mrd_out o;
    lm_code rc = mrd_out_begin(&o, path, xml, err);
    if (rc != LM_OK && !o.begun) /* (nothing begun) */
        return rc;
    for (size_t i = 0; i < n && rc == LM_OK; i++) {
        /* the message's buffers lent to a libismrmrd acquisition, not copied */
        ISMRMRD_Acquisition a;
        memset(&a, 0, sizeof a);
        a.head = acqs[i]->acq;
        a.traj = acqs[i]->traj;
        a.data = (complex_float_t *)acqs[i]->data;
        if (ismrmrd_append_acquisition(&o.d, &a) != ISMRMRD_NOERROR)
            rc = mrd_fail_lib(err, path, "cannot write an acquisition (disk full?)");
    }
    return mrd_out_end(&o, rc, err);
}

#endif /* LM_HAVE_ISMRMRD */
