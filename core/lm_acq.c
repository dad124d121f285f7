/* Loading, checking and regridding an acquisition (lm_acq.h). */
#include "lm_acq.h"

#include <complex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_io.h"
#include "lm_io_fieldmap.h"
#include "lm_io_impatient.h"
#include "lm_resample.h"

static int ends_with(const char *s, const char *suffix)
{
    size_t a = s ? strlen(s) : 0, b = strlen(suffix);
    return s && a >= b && !strcmp(s + a - b, suffix);
}

void lm_acq_opts_init(lm_acq_opts *o)
{
    o->repetition = -1;
    o->contrast = -1;
    o->lenient = 0;
}

/* A companion that failed: lenient, its path is cleared and the message
 * kept in a->note (LM_OK); else the error stands. */
static lm_code companion_failed(lm_acq *a, char **path, lm_code c, lm_error *err)
{
    if (c == LM_OK || !a->lenient || c == LM_ERR_NOMEM)
        return c;
    size_t l = strlen(a->note);
    snprintf(a->note + l, sizeof a->note - l, "%s%s", l ? "; " : "", err ? err->msg : "companion dropped");
    lm_error_clear(err);
    free(*path);
    *path = NULL;
    return LM_OK;
}

void lm_acq_free(lm_acq *a)
{
    if (!a)
        return;
    lm_traj_free(a->traj);
    lm_kdata_free(a->kdata);
    lm_frames_free(a->frames);
    lm_kdata_free(a->noise);
    lm_sens_free(a->sens);
    free(a->fieldmap);
    lm_mrd_clear(&a->mrd);
    lm_acq_paths_clear(&a->paths);
    free(a);
}

int64_t lm_acq_channels(const lm_acq *a)
{
    if (a->kdata)
        return a->kdata->ncoils;
    if (a->nslices > 1 && a->mrd.slices && a->mrd.slices[0].kdata)
        return a->mrd.slices[0].kdata->ncoils;
    return 0;
}

static lm_code load_impatient(lm_acq *a, const char *dir, const char *kspace, lm_error *err)
{
    if (kspace && strcmp(kspace, dir) != 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: an IMPATIENT directory holds its own k-space (kdata_r/i.dat); "
                       "drop --kspace %s", dir, kspace);
    lm_impatient m;
    lm_code c = lm_impatient_read(dir, &m, err);
    if (c != LM_OK)
        return c;
    a->geom = m.geom;
    a->have_geom = 1;
    a->is_impatient = 1;
    a->traj = m.traj;
    a->kdata = m.kdata;
    a->sens = m.sens;
    a->fieldmap = m.fieldmap;
    return LM_OK; /* m's members now belong to a */
}

/* Moves m's data into a (m is left empty): the one place where MRD data,
 * from a file or a stream, become an acquisition. */
static void take_mrd(lm_acq *a, lm_mrd *m)
{
    a->geom = m->geom;
    a->have_geom = 1;
    a->traj = m->traj;
    a->kdata = m->kdata;
    a->noise = m->noise;
    a->cartesian = m->cartesian;
    if (m->cartesian) {
        a->accel = (m->parallel.accel[0] > 1 ? m->parallel.accel[0] : 1) *
                   (m->parallel.accel[1] > 1 ? m->parallel.accel[1] : 1);
        a->missing_lines = m->missing_lines;
    }
    a->prov = m->prov;
    a->is_mrd = 1;
    a->fov_known = 1;
    a->repetition = m->repetition;
    a->contrast = m->contrast;
    m->traj = NULL;
    m->kdata = NULL;
    m->noise = NULL;
    if (m->nslices > 1) {
        a->nslices = m->nslices;
        a->mrd = *m; /* owns the slices */
        memset(m, 0, sizeof *m);
    } else {
        lm_mrd_clear(m);
    }
}

static lm_code load_mrd(lm_acq *a, const char *h5, const lm_acq_opts *o, lm_error *err)
{
    lm_mrd m = {0};
    lm_mrd_opts mo;
    lm_mrd_opts_init(&mo);
    mo.repetition = o->repetition;
    mo.contrast = o->contrast;
    mo.units = lm_mrd_units_default();
    lm_code c = lm_mrd_read_opts(h5, &mo, &m, err);
    if (c != LM_OK)
        return c;
    take_mrd(a, &m);
    return LM_OK;
}

lm_code lm_acq_from_mrd(lm_mrd *m, lm_acq **out, lm_error *err)
{
    *out = NULL;
    if (!m->traj && m->nslices <= 1)
        return lm_fail(err, LM_ERR_FORMAT, "MRD data hold no trajectory or no k-space data");
    lm_acq *a = calloc(1, sizeof *a);
    if (!a)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    a->nslices = 1;
    take_mrd(a, m);
    *out = a;
    return LM_OK;
}

/* Frames in BART's time dimension (lm_frames.h): traj and kspace must
 * agree. Files that are not cfl have none. */
static lm_code cfl_frames(lm_acq *a, const char *tp, const char *kp, lm_error *err)
{
    int nt, nk;
    int64_t dt[LM_CFL_MAX_DIMS], dk[LM_CFL_MAX_DIMS];
    lm_error ignore = {0};
    if (lm_cfl_read_dims(tp, &nt, dt, &ignore) != LM_OK || lm_cfl_read_dims(kp, &nk, dk, &ignore) != LM_OK)
        return LM_OK;
    const int64_t ft = dt[LM_CFL_TIME_DIM], fk = dk[LM_CFL_TIME_DIM];
    if (ft != fk)
        return lm_fail(err, LM_ERR_FORMAT, "%s: %lld frames in dimension %d, but %s has %lld", kp, (long long)fk,
                       LM_CFL_TIME_DIM, tp, (long long)ft);
    if (ft <= 1)
        return LM_OK;
    lm_code c = lm_frames_equal(a->traj->m, ft, &a->frames, err);
    return c == LM_OK ? lm_frames_check_kdata(a->frames, a->kdata, kp, err) : c;
}

/* Two BART files: whichever reads as a trajectory (3 x samples) is the
 * trajectory, so files picked in either order work. */
static lm_code load_pair(lm_acq *a, lm_error *err)
{
    char **tp = &a->paths.traj, **kp = &a->paths.kspace;
    lm_code c = lm_load_traj(*tp, &a->traj, err);
    if (c != LM_OK && strcmp(*tp, *kp) != 0) {
        lm_error e2 = {0};
        if (lm_load_traj(*kp, &a->traj, &e2) == LM_OK) {
            char *t = *tp;
            *tp = *kp;
            *kp = t;
            a->swapped = 1;
            lm_error_clear(err);
            c = LM_OK;
        }
    }
    if (c == LM_OK)
        c = lm_load_kdata(*kp, &a->kdata, err);
    if (c == LM_OK)
        c = lm_check_traj_kdata(a->traj, a->kdata, *tp, *kp, err);
    if (c == LM_OK)
        c = cfl_frames(a, *tp, *kp, err);
    return c;
}

lm_code lm_acq_load(const lm_acq_paths *p, const lm_acq_opts *o, lm_acq **out, lm_error *err)
{
    *out = NULL;
    lm_acq_opts defaults;
    if (!o) {
        lm_acq_opts_init(&defaults);
        o = &defaults;
    }
    const char *traj = p->traj ? p->traj : p->kspace, *kspace = p->kspace ? p->kspace : p->traj;
    if (!traj)
        return lm_fail(err, LM_ERR_INVALID, "no data given: a trajectory and its k-space, one .h5, or a data "
                       "directory");
    lm_acq *a = calloc(1, sizeof *a);
    if (!a)
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", traj);
    a->nslices = 1;
    a->repetition = a->contrast = -1;
    a->lenient = o->lenient;
    lm_code c = lm_acq_paths_copy(&a->paths, p, err);
    if (c == LM_OK) {
        lm_acq_paths_set(&a->paths.traj, traj, NULL);
        lm_acq_paths_set(&a->paths.kspace, kspace, NULL);
        if (!a->paths.traj || !a->paths.kspace)
            c = lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", traj);
    }
    const char *h5 = ends_with(traj, ".h5") ? traj : ends_with(kspace, ".h5") ? kspace : NULL;
    if (c != LM_OK)
        ;
    else if (lm_is_impatient_dir(traj))
        c = load_impatient(a, traj, p->kspace, err);
    else if (h5)
        c = load_mrd(a, h5, o, err);
    else if (!p->traj || !p->kspace)
        c = lm_fail(err, LM_ERR_INVALID, "%s: give the trajectory and its k-space (or one .h5, or a data "
                    "directory)", traj);
    else
        c = load_pair(a, err);
    if (c == LM_OK && !a->traj && a->nslices <= 1)
        c = lm_fail(err, LM_ERR_FORMAT, "%s: holds no trajectory or no k-space data", traj);
    /* Multi-slice files take no companions: the caller says so. */
    const int one_volume = a->nslices <= 1;
    if (c == LM_OK && p->times && one_volume) {
        c = companion_failed(a, &a->paths.times, lm_load_times(p->times, a->traj, err), err);
        if (!a->paths.times) {
            free(a->traj->t); /* a lenient load dropped them: none, rather than half */
            a->traj->t = NULL;
        }
    }
    if (c == LM_OK && p->sens && one_volume) {
        lm_sens *s = NULL;
        c = lm_load_sens(p->sens, &s, err);
        if (c == LM_OK) {
            lm_sens_free(a->sens); /* a file given overrides maps the input carries */
            a->sens = s;
        } else {
            lm_sens_free(s);
            c = companion_failed(a, &a->paths.sens, c, err);
        }
    }
    if (c != LM_OK) {
        lm_acq_free(a);
        return c;
    }
    *out = a;
    return LM_OK;
}

/* One volume from src's grid to g's (dst: lm_geom_voxels(g) values). */
static lm_code regrid_one(const lm_geom *src, const lm_geom *g, lm_cfloat *data, lm_cfloat *dst, lm_error *err)
{
    double vs[3], vd[3], ad[4][4];
    for (int a = 0; a < 3; a++) {
        vs[a] = src->fov_mm[a] > 0 ? src->fov_mm[a] / (double)src->n[a] : 1.0;
        vd[a] = g->fov_mm[a] > 0 ? g->fov_mm[a] / (double)g->n[a] : 1.0;
    }
    lm_volume v = {.dims = {src->n[0], src->n[1], src->n[2]}, .voxel_mm = {vs[0], vs[1], vs[2]}, .data = data};
    lm_geom_affine(src, v.affine);
    lm_geom_affine(g, ad);
    lm_volume *r = NULL;
    lm_code rc = lm_resample(&v, g->n, vd, ad, NULL, LM_OUTSIDE_NEAREST, &r, err);
    if (rc == LM_OK)
        memcpy(dst, r->data, (size_t)lm_geom_voxels(g) * sizeof *dst);
    lm_volume_free(r);
    return rc;
}

/* The companions the input carries (IMPATIENT), on a->geom's matrix, onto g's. */
static lm_code regrid_carried(lm_acq *a, const lm_geom *g, int sens_carried, lm_error *err)
{
    lm_geom src = a->geom;
    for (int ax = 0; ax < 3; ax++)
        if (!(src.fov_mm[ax] > 0))
            src.fov_mm[ax] = g->fov_mm[ax]; /* same field of view, another matrix */
    const int64_t ns = lm_geom_voxels(&src), nd = lm_geom_voxels(g);
    lm_code rc = LM_OK;
    if (a->fieldmap && !a->paths.fieldmap) {
        float *f = lm_alloc((size_t)nd, sizeof *f, err, "field map");
        lm_cfloat *buf = lm_alloc((size_t)(ns > nd ? ns : nd), sizeof *buf, err, "field map");
        if (!f || !buf) {
            free(f);
            free(buf);
            return LM_ERR_NOMEM;
        }
        for (int64_t i = 0; i < ns; i++)
            buf[i] = a->fieldmap[i];
        rc = regrid_one(&src, g, buf, buf, err);
        for (int64_t i = 0; i < nd && rc == LM_OK; i++)
            f[i] = crealf(buf[i]);
        free(buf);
        if (rc != LM_OK) {
            free(f);
            return rc;
        }
        free(a->fieldmap);
        a->fieldmap = f;
        a->fieldmap_resampled = 1;
    }
    if (a->sens && sens_carried) {
        lm_sens *s = lm_sens_new(g->n, a->sens->ncoils, err);
        if (!s)
            return err ? err->code : LM_ERR_NOMEM;
        for (int64_t c = 0; c < s->ncoils && rc == LM_OK; c++)
            rc = regrid_one(&src, g, a->sens->s + c * ns, s->s + c * nd, err);
        if (rc != LM_OK) {
            lm_sens_free(s);
            return rc;
        }
        lm_sens_free(a->sens);
        a->sens = s;
    }
    return LM_OK;
}

lm_code lm_acq_regrid(lm_acq *a, const lm_geom *g, lm_error *err)
{
    const int sens_carried = a->sens && !a->paths.sens;
    const int same = a->geom.n[0] == g->n[0] && a->geom.n[1] == g->n[1] && a->geom.n[2] == g->n[2];
    lm_code c = LM_OK;
    if (!same && a->have_geom)
        c = regrid_carried(a, g, sens_carried, err);
    if (c == LM_OK && a->paths.fieldmap && a->nslices <= 1) {
        float *f = NULL;
        c = lm_load_fieldmap_series(a->paths.fieldmap, a->paths.fieldmap_series, g, NULL, &f,
                                    &a->fieldmap_resampled, err);
        if (c == LM_OK) {
            free(a->fieldmap);
            a->fieldmap = f;
        }
        c = companion_failed(a, &a->paths.fieldmap, c, err);
    }
    if (c == LM_OK && a->sens && a->paths.sens) {
        c = companion_failed(a, &a->paths.sens, lm_check_sens(a->sens, g->n, lm_acq_channels(a), a->paths.sens, err),
                             err);
        if (!a->paths.sens) {
            lm_sens_free(a->sens);
            a->sens = NULL;
        }
    }
    if (c == LM_OK && a->fieldmap && a->traj && !a->traj->t) {
        char *fm = a->paths.fieldmap;
        c = lm_fail(err, LM_ERR_INVALID, "%s: a field map needs the sample times: give --times T (.cfl [1, "
                    "samples, spokes], seconds)", fm ? fm : a->paths.traj);
        c = companion_failed(a, &a->paths.fieldmap, c, err);
        if (c == LM_OK) {
            free(a->fieldmap);
            a->fieldmap = NULL;
        }
    }
    if (c != LM_OK)
        return c;
    for (int ax = 0; ax < 3; ax++) {
        a->geom.n[ax] = g->n[ax];
        a->geom.fov_mm[ax] = g->fov_mm[ax];
    }
    a->geom.basis = g->basis;
    return LM_OK;
}

lm_code lm_acq_bin(lm_acq *a, int64_t spokes_per_frame, int64_t frames, lm_error *err)
{
    const char *what = a->paths.kspace ? a->paths.kspace : "data";
    if (!a->traj || !a->kdata)
        return lm_fail(err, LM_ERR_INVALID, "%s: no single-volume data to bin into frames", what);
    if (a->frames)
        return lm_fail(err, LM_ERR_INVALID, "%s: already has %lld frames (dimension %d); drop the binning option",
                       what, (long long)a->frames->count, LM_CFL_TIME_DIM);
    const int64_t readout = a->traj->readout > 0 ? a->traj->readout : a->traj->m;
    lm_frames *f = NULL;
    lm_code c = spokes_per_frame > 0 ? lm_frames_by_spokes(a->traj->m, readout, spokes_per_frame, &f, err)
                                     : lm_frames_by_count(a->traj->m, readout, frames, &f, err);
    if (c != LM_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
        return lm_fail(err, c, "%s: %s", what, msg);
    }
    c = lm_frames_check_kdata(f, a->kdata, what, err);
    if (c != LM_OK) {
        lm_frames_free(f);
        return c;
    }
    a->frames = f;
    return LM_OK;
}
