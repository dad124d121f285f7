#include "cli_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "larmor.h"

int cli_has_suffix(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

lm_code cli_load_acq(const cli_acq_args *args, lm_acq **out, lm_acq_paths *found, lm_error *err)
{
    *out = NULL;
    if (found)
        memset(found, 0, sizeof *found);
    lm_acq_paths p = {0};
    lm_code c = LM_OK;
    const char *one = args->traj && args->kspace ? NULL : args->traj ? args->traj : args->kspace;
    if (!args->traj && !args->kspace)
        return lm_fail(err, LM_ERR_INVALID, "%s: give --traj T and --kspace K, one ISMRMRD .h5, or a data directory",
                       args->cmd);
    if (one) {
        c = lm_acq_discover(one, &p, err);
    } else {
        c = lm_acq_paths_set(&p.traj, args->traj, err);
        if (c == LM_OK)
            c = lm_acq_paths_set(&p.kspace, args->kspace, err);
    }
    if (c == LM_OK && args->sens)
        c = lm_acq_paths_set(&p.sens, args->sens, err);
    if (c == LM_OK && args->fieldmap)
        c = lm_acq_paths_set(&p.fieldmap, args->fieldmap, err);
    if (c == LM_OK && args->fieldmap && args->series)
        c = lm_acq_paths_set(&p.fieldmap_series, args->series, err);
    if (c == LM_OK && args->times)
        c = lm_acq_paths_set(&p.times, args->times, err);
    if (c == LM_OK) {
        lm_acq_opts o;
        lm_acq_opts_init(&o);
        o.repetition = args->repetition;
        o.contrast = args->contrast;
        c = lm_acq_load(&p, &o, out, err);
    }
    if (c == LM_OK && found)
        *found = p;
    else
        lm_acq_paths_clear(&p);
    return c;
}

void cli_report_found(const cli_acq_args *args, const lm_acq *a)
{
    const lm_acq_paths *p = &a->paths;
    const char *one = args->traj && args->kspace ? NULL : args->traj ? args->traj : args->kspace;
    if (args->quiet || !one || !(p->sens || p->fieldmap || p->times || p->truth || p->ref))
        return;
    char *what = lm_acq_paths_describe(p);
    fprintf(stderr, "%s: %s: found %s\n", args->cmd, one, what ? what : "");
    free(what);
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

lm_code cli_write_image(const char *path, const lm_volume *v, int as_complex, lm_error *err)
{
    if (cli_has_suffix(path, ".nii") || cli_has_suffix(path, ".nii.gz"))
        return lm_nifti_write(path, v, as_complex, err);
    if (cli_has_suffix(path, ".cfl") || lm_cfl_is_base(path))
        return lm_cfl_write_volume(path, v, err);
    return lm_fail(err, LM_ERR_INVALID, "%s: output must end in .nii, .nii.gz or .cfl", path);
}
