#include "cli_data.h"

#include <string.h>

#include "lm_io.h"
#include "lm_io_ismrmrd.h"

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
        in->is_mrd = 1;
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
    lm_mrd_clear(&in->mrd);
    in->traj = NULL;
    in->kdata = NULL;
    in->noise = NULL;
    in->nslices = 1;
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
