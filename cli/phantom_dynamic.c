/* Dynamic phantoms from the command line (phantom_dynamic.h). */
#include "phantom_dynamic.h"

#include <stdio.h>
#include <stdlib.h>

#include "cli_util.h"
#include "larmor.h"

int cli_phantom_dynamic(const lm_dyn_problem_def *def, const char *dir, double noise, long long seed)
{
    lm_error err = {0};
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_sens *sens = NULL;
    lm_cfloat *truth = NULL;
    lm_frames *f = NULL;
    lm_volume *v = NULL;
    int rc = 1;
    char path[4096];
    if (lm_dyn_problem_make(def, &g, &t, &k, &sens, &truth, &f, &err) != LM_OK)
        goto done;
    if (noise > 0 && lm_noise_add(k, noise, (uint64_t)seed, &err) != LM_OK)
        goto done;
    if (!cli_mkdirs(dir, &err))
        goto done;
    snprintf(path, sizeof path, "%s/traj", dir);
    if (lm_cfl_write_traj_frames(path, t, f->count, &err) != LM_OK)
        goto done;
    snprintf(path, sizeof path, "%s/kspace", dir);
    if (lm_cfl_write_kdata_frames(path, k, t->readout, f->count, &err) != LM_OK)
        goto done;
    snprintf(path, sizeof path, "%s/sens", dir);
    const int64_t sd[4] = {sens->n[0], sens->n[1], sens->n[2], sens->ncoils};
    if (lm_cfl_write(path, 4, sd, sens->s, &err) != LM_OK)
        goto done;
    double vox[3];
    for (int a = 0; a < 3; a++)
        vox[a] = g.fov_mm[a] / (double)g.n[a];
    if (!(v = lm_volume_new(g.n, vox, &err)))
        goto done;
    snprintf(path, sizeof path, "%s/truth.nii.gz", dir);
    if (lm_nifti_write_series(path, v, f->count, truth, 0, f->duration_s, &err) != LM_OK)
        goto done;
    fprintf(stderr, "phantom: %s: %lld frames of %lld spokes (%lld samples each) x %lld coils, matrix "
            "%lldx%lldx%lld, %.1f ms frames -> %s\n", def->name, (long long)f->count,
            (long long)(lm_frames_samples(f, 0) / t->readout), (long long)t->readout, (long long)k->ncoils,
            (long long)g.n[0], (long long)g.n[1], (long long)g.n[2], 1e3 * f->duration_s, dir);
    rc = 0;
done:
    if (rc)
        cli_error(&err);
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_sens_free(sens);
    free(truth);
    lm_frames_free(f);
    lm_volume_free(v);
    return rc;
}
