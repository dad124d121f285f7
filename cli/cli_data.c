#include "cli_data.h"

#include <complex.h>
#include <stdlib.h>
#include <string.h>

#include "lm_io.h"
#include "lm_io_fieldmap.h"
#include "lm_io_impatient.h"
#include "lm_io_ismrmrd.h"
#include "lm_resample.h"

int cli_has_suffix(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

lm_code cli_load_inputs(const char *traj_path, const char *kspace_path, cli_inputs *in, lm_error *err)
{
    return cli_load_inputs_mrd(traj_path, kspace_path, -1, -1, in, err);
}

lm_code cli_load_inputs_mrd(const char *traj_path, const char *kspace_path, int repetition, int contrast,
                            cli_inputs *in, lm_error *err)
{
    memset(in, 0, sizeof *in);
    in->nslices = 1;
    if (traj_path && lm_is_impatient_dir(traj_path)) {
        if (kspace_path && strcmp(kspace_path, traj_path) != 0)
            return lm_fail(err, LM_ERR_INVALID, "%s: an IMPATIENT directory holds its own k-space (kdata_r/i.dat); "
                           "drop --kspace %s", traj_path, kspace_path);
        lm_impatient m;
        lm_code c = lm_impatient_read(traj_path, &m, err);
        if (c != LM_OK)
            return c;
        in->geom = m.geom;
        in->have_geom = 1;
        in->is_impatient = 1;
        in->traj = m.traj;
        in->kdata = m.kdata;
        in->sens = m.sens;
        in->fieldmap = m.fieldmap;
        return LM_OK; /* m's members now belong to in */
    }
    const char *h5 = NULL;
    if (traj_path && cli_has_suffix(traj_path, ".h5"))
        h5 = traj_path;
    else if (kspace_path && cli_has_suffix(kspace_path, ".h5"))
        h5 = kspace_path;
    if (h5) {
        lm_mrd m = {0};
        lm_mrd_opts o;
        lm_mrd_opts_init(&o);
        o.repetition = repetition;
        o.contrast = contrast;
        lm_code c = lm_mrd_units_env(h5, &o.units, err);
        if (c == LM_OK)
            c = lm_mrd_read_opts(h5, &o, &m, err);
        if (c != LM_OK)
            return c;
        in->geom = m.geom;
        in->have_geom = 1;
        in->traj = m.traj;
        in->kdata = m.kdata;
        in->noise = m.noise;
        in->cartesian = m.cartesian;
        if (m.cartesian) {
            in->accel = (m.parallel.accel[0] > 1 ? m.parallel.accel[0] : 1) *
                        (m.parallel.accel[1] > 1 ? m.parallel.accel[1] : 1);
            in->missing_lines = m.missing_lines;
        }
        in->is_mrd = 1;
        in->fov_known = 1;
        in->repetition = m.repetition;
        in->contrast = m.contrast;
        m.traj = NULL;
        m.kdata = NULL;
        m.noise = NULL;
        if (m.nslices > 1) {
            in->nslices = m.nslices;
            in->mrd = m; /* owns the slices */
        } else {
            lm_mrd_clear(&m);
        }
        return LM_OK;
    }
    if (!traj_path || !kspace_path)
        return lm_fail(err, LM_ERR_INVALID, "recon: give --traj T and --kspace K (or one ISMRMRD .h5)");
    lm_code c = lm_load_traj(traj_path, &in->traj, err);
    if (c == LM_OK)
        c = lm_load_kdata(kspace_path, &in->kdata, err);
    if (c == LM_OK)
        c = lm_check_traj_kdata(in->traj, in->kdata, traj_path, kspace_path, err);
    if (c != LM_OK)
        cli_inputs_clear(in);
    return c;
}

void cli_inputs_clear(cli_inputs *in)
{
    lm_traj_free(in->traj);
    lm_kdata_free(in->kdata);
    lm_kdata_free(in->noise);
    lm_sens_free(in->sens);
    free(in->fieldmap);
    lm_mrd_clear(&in->mrd);
    in->traj = NULL;
    in->kdata = NULL;
    in->noise = NULL;
    in->sens = NULL;
    in->fieldmap = NULL;
    in->nslices = 1;
}

/* One volume from in's grid (src) to g's, in place of data. */
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

lm_code cli_inputs_regrid(cli_inputs *in, const lm_geom *g, lm_error *err)
{
    if (in->geom.n[0] == g->n[0] && in->geom.n[1] == g->n[1] && in->geom.n[2] == g->n[2])
        return LM_OK;
    lm_geom src = in->geom;
    for (int a = 0; a < 3; a++)
        if (!(src.fov_mm[a] > 0))
            src.fov_mm[a] = g->fov_mm[a]; /* same field of view, another matrix */
    const int64_t ns = lm_geom_voxels(&src), nd = lm_geom_voxels(g);
    lm_code rc = LM_OK;
    lm_cfloat *buf = NULL;
    if (in->fieldmap) {
        float *f = lm_alloc((size_t)nd, sizeof *f, err, "field map");
        buf = lm_alloc((size_t)(ns > nd ? ns : nd), sizeof *buf, err, "field map");
        if (!f || !buf) {
            free(f);
            free(buf);
            return LM_ERR_NOMEM;
        }
        for (int64_t i = 0; i < ns; i++)
            buf[i] = in->fieldmap[i];
        rc = regrid_one(&src, g, buf, buf, err);
        for (int64_t i = 0; i < nd && rc == LM_OK; i++)
            f[i] = crealf(buf[i]);
        free(buf);
        if (rc != LM_OK) {
            free(f);
            return rc;
        }
        free(in->fieldmap);
        in->fieldmap = f;
    }
    if (in->sens) {
        lm_sens *s = lm_sens_new(g->n, in->sens->ncoils, err);
        if (!s)
            return err ? err->code : LM_ERR_NOMEM;
        for (int64_t c = 0; c < s->ncoils && rc == LM_OK; c++)
            rc = regrid_one(&src, g, in->sens->s + c * ns, s->s + c * nd, err);
        if (rc != LM_OK) {
            lm_sens_free(s);
            return rc;
        }
        lm_sens_free(in->sens);
        in->sens = s;
    }
    for (int a = 0; a < 3; a++)
        in->geom.n[a] = g->n[a];
    return LM_OK;
}

lm_code cli_load_sens(const char *path, const lm_geom *g, int64_t ncoils, lm_sens **out, lm_error *err)
{
    *out = NULL;
    lm_sens *s = NULL;
    lm_code c = lm_load_sens(path, &s, err);
    if (c == LM_OK)
        c = lm_check_sens(s, g->n, ncoils, path, err);
    if (c != LM_OK) {
        lm_sens_free(s);
        return c;
    }
    *out = s;
    return LM_OK;
}

lm_code cli_load_noise(const char *path, int64_t ncoils, lm_kdata **out, lm_error *err)
{
    *out = NULL;
    lm_kdata *k = NULL;
    lm_code c = lm_load_noise(path, &k, err);
    if (c == LM_OK)
        c = lm_check_noise(k, ncoils, path, err);
    if (c != LM_OK) {
        lm_kdata_free(k);
        return c;
    }
    *out = k;
    return LM_OK;
}

int64_t cli_inputs_channels(const cli_inputs *in)
{
    if (in->kdata)
        return in->kdata->ncoils;
    if (in->nslices > 1 && in->mrd.slices && in->mrd.slices[0].kdata)
        return in->mrd.slices[0].kdata->ncoils;
    return 0;
}

lm_code cli_write_image(const char *path, const lm_volume *v, int as_complex, lm_error *err)
{
    if (cli_has_suffix(path, ".nii") || cli_has_suffix(path, ".nii.gz"))
        return lm_nifti_write(path, v, as_complex, err);
    if (cli_has_suffix(path, ".cfl") || !strrchr(path, '.'))
        return lm_cfl_write_volume(path, v, err);
    return lm_fail(err, LM_ERR_INVALID, "%s: output must end in .nii, .nii.gz or .cfl", path);
}
