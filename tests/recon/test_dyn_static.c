/* With lambda_t = 0 (and no spatial term) the dynamic problem decouples:
 * every frame of lm_dyn_solve equals the static SENSE reconstruction of
 * that frame's samples alone (lm_recon_run, CG with lambda 0, the same
 * iterations and maps), to 1e-5 relative. And a positive temporal weight
 * changes the frames (the prior is in the solve). */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_coils_synth.h"
#include "lm_dyn_recon.h"
#include "lm_dynamic_phantom.h"
#include "lm_metrics.h"
#include "lm_recon.h"
#include "lm_test.h"
#include "lm_trajgen.h"

int main(void)
{
    lm_error err = {0};
    const int64_t n = 24, T = 3, spokes = 12, r = 24, C = 4, iters = 12;
    lm_geom g;
    lm_geom_init(&g, n, n, 1, 240);
    const int64_t N = lm_geom_voxels(&g), nn[3] = {n, n, 1};
    lm_traj *t = NULL;
    lm_sens *s = NULL;
    lm_frames *f = NULL;
    CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL2D, nn, T * spokes * r, r, &t, &err), &err);
    CHECK_OK(lm_coils_synth_sens(2, C, nn, &s, &err), &err);
    CHECK_OK(lm_frames_equal(t->m, T, &f, &err), &err);
    lm_kdata *k = lm_kdata_new(t->m, C, &err);
    if (!t || !s || !f || !k)
        return lm_test_finish("test_dyn_static");
    /* each frame the phantom of its moment */
    for (int64_t fr = 0; fr < T; fr++) {
        lm_phantom ph;
        lm_dyn_phantom_at(2, ((double)fr + 0.5) / (double)T, &ph);
        lm_traj *ft = NULL;
        CHECK_OK(lm_frames_extract(f, fr, t, NULL, &ft, NULL, &err), &err);
        lm_kdata *fk = lm_kdata_new(ft->m, C, &err);
        CHECK_OK(lm_coils_synth_kspace(&ph, 2, C, ft, fk, &err), &err);
        for (int64_t c = 0; c < C; c++)
            memcpy(k->d + c * t->m + f->start[fr], fk->d + c * ft->m, sizeof *fk->d * (size_t)ft->m);
        lm_traj_free(ft);
        lm_kdata_free(fk);
    }
    lm_dyn_model *m = NULL;
    lm_dyn_model_desc d = {.geom = &g, .traj = t, .kdata = k, .sens = s, .frames = f, .variant = "auto"};
    CHECK_OK(lm_dyn_model_new(&d, &m, &err), &err);
    lm_dyn_opts o;
    lm_dyn_opts_init(&o);
    o.time = LM_DYN_TIME_TV;
    o.lambda_t = 0;
    o.iters = (int)iters;
    lm_dyn_result res = {0}, reg = {0};
    CHECK_OK(lm_dyn_solve(m, &o, &res, &err), &err);
    o.lambda_t = 0.05;
    CHECK_OK(lm_dyn_solve(m, &o, &reg, &err), &err);
    for (int64_t fr = 0; res.x && fr < T; fr++) {
        lm_traj *ft = NULL;
        lm_kdata *fk = NULL;
        CHECK_OK(lm_frames_extract(f, fr, t, k, &ft, &fk, &err), &err);
        lm_recon_opts ro;
        lm_recon_opts_init(&ro);
        ro.sens = s;
        ro.lambda = 0;
        ro.iters = (int)iters;
        ro.use_cache = 0;
        lm_recon_result rr = {0};
        CHECK_OK(lm_recon_run(&g, ft, fk, &ro, &rr, &err), &err);
        if (rr.image) {
            const double e = lm_rel_error_c(res.x + fr * N, rr.image->data, N);
            fprintf(stderr, "frame %lld: %.3g relative to its static reconstruction\n", (long long)fr, e);
            CHECK(e < 1e-5);
            if (reg.x)
                CHECK(lm_rel_error_c(reg.x + fr * N, rr.image->data, N) > 1e-3);
        }
        lm_recon_result_clear(&rr);
        lm_traj_free(ft);
        lm_kdata_free(fk);
    }
    lm_dyn_result_clear(&res);
    lm_dyn_result_clear(&reg);
    lm_dyn_model_free(m);
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_sens_free(s);
    lm_frames_free(f);
    return lm_test_finish("test_dyn_static");
}
