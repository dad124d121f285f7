/* Dynamic reconstruction on the GPU back end (docs/dynamic.md): D128c8 with
 * its true maps, gpu-nufft against cpu-nufft through the same source
 * (lm_dyn_solve: per-frame encodings, block-diagonal normal operator, ADMM):
 * temporal TV (device vectors throughout) and locally low rank (host SVDs
 * with downloads and uploads), 8 ADMM iterations each. Tolerances: images
 * within 5e-3 (relative l2; float solves on two devices), errors against
 * the truth within 0.2 points. Prints the GPU's set-up and solve times
 * (targets: BENCHMARKS.md, not asserted). */
#include <stdlib.h>

#include "gpu_util.h"
#include "lm_dyn_recon.h"
#include "lm_dynamic_phantom.h"
#include "lm_metrics.h"

static lm_code solve(const lm_dyn_model_desc *d, const char *variant, lm_dyn_time time, lm_dyn_result *r,
                     lm_error *err)
{
    lm_dyn_model_desc md = *d;
    md.variant = variant;
    lm_dyn_model *m = NULL;
    lm_code rc = lm_dyn_model_new(&md, &m, err);
    if (rc != LM_OK)
        return rc;
    lm_dyn_opts o;
    lm_dyn_opts_init(&o);
    o.time = time;
    o.lambda_t = 0.03;
    o.iters = 8;
    rc = lm_dyn_solve(m, &o, r, err);
    lm_dyn_model_free(m);
    return rc;
}

int main(void)
{
    gpu_require();
    lm_error err = {0};
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_sens *s = NULL;
    lm_cfloat *truth = NULL;
    lm_frames *f = NULL;
    CHECK_OK(lm_dyn_problem_make(lm_dyn_problem_find("D128c8"), &g, &t, &k, &s, &truth, &f, &err), &err);
    if (!t)
        return lm_test_finish("gpu-dynamic");
    const int64_t n = f->count * lm_geom_voxels(&g);
    lm_dyn_model_desc d = {.geom = &g, .traj = t, .kdata = k, .sens = s, .frames = f};
    const lm_dyn_time kinds[2] = {LM_DYN_TIME_TV, LM_DYN_TIME_LLR};
    for (int i = 0; i < 2; i++) {
        lm_dyn_result rg = {0}, rc = {0};
        CHECK_OK(solve(&d, "gpu-nufft", kinds[i], &rg, &err), &err);
        CHECK_OK(solve(&d, "cpu-nufft", kinds[i], &rc, &err), &err);
        if (rg.x && rc.x) {
            const double diff = lm_rel_error_c(rg.x, rc.x, n);
            const double eg = 100 * lm_rel_error_c(rg.x, truth, n), ec = 100 * lm_rel_error_c(rc.x, truth, n);
            printf("%s: gpu %.2f %% (set-up %.3f s, solve %.3f s), cpu %.2f %% (set-up %.3f s, solve %.3f s), "
                   "images %.2e apart\n", lm_dyn_time_name(kinds[i]), eg, rg.time_prep_s, rg.time_solve_s, ec,
                   rc.time_prep_s, rc.time_solve_s, diff);
            CHECK(diff < 5e-3);
            CHECK_NEAR(eg, ec, 0.2);
        }
        lm_dyn_result_clear(&rg);
        lm_dyn_result_clear(&rc);
    }
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_sens_free(s);
    free(truth);
    lm_frames_free(f);
    return lm_test_finish("gpu-dynamic");
}
