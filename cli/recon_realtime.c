/* larmor-cli recon --realtime (recon_realtime.h). */
#include "recon_realtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli_data.h"
#include "cli_util.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cli_recon_realtime(const lm_acq *in, const lm_geom *g, const cli_rt_run *r)
{
    lm_error err = {0};
    const char *name = r->name ? r->name : "input";
    if (!in->traj || in->nslices > 1)
        return cli_errorf("%s: --realtime takes one slice (a 2D or 3D acquisition), not %d slices", name, in->nslices);
    if (in->traj->readout < 1)
        return cli_errorf("%s: --realtime needs acquisitions of one length (the file's readouts differ)", name);
    const char *variant = lm_sliding_variant(r->variant);
    lm_sliding_opts so = {.variant = variant, .iters = r->iters, .lambda = r->lambda, .threads = r->threads,
                          .compress = r->compress};
    lm_cfloat *frames = NULL;
    int64_t nf = 0;
    const double t0 = now_s();
    if (lm_sliding_run(g, in->traj, in->kdata, in->sens, in->traj->readout, r->window, r->step, &so, &frames, &nf,
                       &err) != LM_OK)
        return cli_error(&err);
    const double secs = now_s() - t0;
    lm_code rc = LM_OK;
    if (r->out && cli_has_suffix(r->out, ".cfl")) {
        rc = lm_cfl_write_image_frames(r->out, g->n, nf, frames, &err);
    } else if (r->out) {
        double vox[3];
        for (int a = 0; a < 3; a++)
            vox[a] = g->fov_mm[a] > 0 ? g->fov_mm[a] / (double)g->n[a] : 1.0;
        lm_volume *v = lm_volume_new(g->n, vox, &err);
        rc = v ? lm_nifti_write_series(r->out, v, nf, frames, r->as_complex, 0, &err) : LM_ERR_NOMEM;
        lm_volume_free(v);
    }
    free(frames);
    if (rc != LM_OK)
        return cli_error(&err);
    const int iters = r->iters > 0 ? r->iters : LM_SLIDING_ITERS_DEFAULT;
    if (r->json)
        printf("{\"realtime_frames\": %lld, \"window\": %d, \"step\": %d, \"variant\": \"%s\", \"iters\": %d, "
               "\"lambda\": %.9g, \"time_s\": %.6f, \"out\": \"%s\"}\n",
               (long long)nf, r->window, r->step, variant, iters, r->lambda, secs, r->out ? r->out : "");
    else
        printf("real time: %lld frames of %d acquisitions every %d (%s, %d CG iterations each, lambda %g), "
               "%.3f s, %.1f ms per frame%s%s\n",
               (long long)nf, r->window, r->step, variant, iters, r->lambda, secs, 1e3 * secs / (double)nf,
               r->out ? "; wrote " : "", r->out ? r->out : "");
    return 0;
}
