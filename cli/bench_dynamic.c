/* larmor-cli bench for the dynamic problems (bench_dynamic.h). */
#include "bench_dynamic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli_util.h"
#include "larmor.h"

int bench_dynamic(const lm_dyn_problem_def *def, const char *const *names, int nnames, int iters, double lambda,
                  int json)
{
    lm_error err = {0};
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_sens *s = NULL;
    lm_cfloat *truth = NULL;
    lm_frames *f = NULL;
    int rc = 1;
    if (lambda < 0)
        lambda = LM_DYN_LAMBDA_DEFAULT;
    fprintf(stderr, "bench: building %s...\n", def->name);
    if (lm_dyn_problem_make(def, &g, &t, &k, &s, &truth, &f, &err) != LM_OK)
        goto done;
    g.basis = LM_DYN_BASIS_DEFAULT; /* as recon's dynamic runs */
    const int64_t n = f->count * lm_geom_voxels(&g);
    if (!json)
        printf("\n%s: %lld frames, ttv lambda %g, %d iterations (times in s; error over all frames)\n", def->name,
               (long long)f->count, lambda, iters);
    for (int i = 0; i < nnames; i++) {
        lm_dyn_model_desc md = {.geom = &g, .traj = t, .kdata = k, .sens = s, .frames = f, .variant = names[i]};
        lm_dyn_model *m = NULL;
        const double t0 = cli_now();
        if (lm_dyn_model_new(&md, &m, &err) != LM_OK)
            goto done;
        lm_dyn_opts o;
        lm_dyn_opts_init(&o);
        o.iters = iters;
        lm_dyn_result sense = {0}, ttv = {0};
        o.lambda_t = 0;
        lm_code c = lm_dyn_solve(m, &o, &sense, &err);
        const double t_sense = cli_now() - t0;
        o.lambda_t = lambda;
        const double t1 = cli_now();
        if (c == LM_OK)
            c = lm_dyn_solve(m, &o, &ttv, &err);
        const double t_ttv = cli_now() - t1;
        if (c == LM_OK) {
            const double es = 100 * lm_rel_error_c(sense.x, truth, n), et = 100 * lm_rel_error_c(ttv.x, truth, n);
            if (json) {
                printf("{");
                cli_json_str(stdout, "problem", def->name, 1);
                cli_json_str(stdout, "variant", names[i], 1);
                cli_json_int(stdout, "frames", f->count, 1);
                cli_json_int(stdout, "iters", iters, 1);
                cli_json_num(stdout, "lambda", lambda, 1);
                cli_json_num(stdout, "sense_error", es, 1);
                cli_json_num(stdout, "sense_total_s", t_sense, 1);
                cli_json_num(stdout, "ttv_error", et, 1);
                cli_json_num(stdout, "ttv_prep_s", ttv.time_prep_s, 1);
                cli_json_num(stdout, "ttv_solve_s", ttv.time_solve_s, 1);
                cli_json_num(stdout, "ttv_total_s", t_ttv, 0);
                printf("}\n");
            } else {
                printf("  %-12s frame-by-frame SENSE %6.2f %% in %7.3f s (with every Q); ttv %6.2f %% in %7.3f s "
                       "(E^H d %.3f, solve %.3f)\n", names[i], es, t_sense, et, t_ttv, ttv.time_prep_s,
                       ttv.time_solve_s);
            }
        }
        lm_dyn_result_clear(&sense);
        lm_dyn_result_clear(&ttv);
        lm_dyn_model_free(m);
        if (c != LM_OK)
            goto done;
    }
    rc = 0;
done:
    if (rc)
        cli_error(&err);
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_sens_free(s);
    free(truth);
    lm_frames_free(f);
    return rc;
}
