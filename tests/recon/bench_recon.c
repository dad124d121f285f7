/* Benchmark (meson test --benchmark --suite recon): whole CG
 * reconstructions of a benchmark problem per kernel variant, Q cache off.
 *   bench_recon [PROBLEM [variant,variant,...]]   (default B32 cpu-dp,cpu-simd) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_tuning.h"
#include "lm_metrics.h"
#include "lm_recon.h"
#include "lm_trajgen.h"

int main(int argc, char **argv)
{
    lm_error tuning_err = {0};
    if (lm_tuning_init_from_env(&tuning_err) != LM_OK) { /* the LARMOR_* knobs being measured */
        fprintf(stderr, "%s\n", tuning_err.msg);
        return 2;
    }
    const char *name = argc > 1 ? argv[1] : "B32";
    char list[512];
    snprintf(list, sizeof list, "%s", argc > 2 ? argv[2] : "cpu-dp,cpu-simd");
    lm_error err = {0};
    const lm_problem_def *def = lm_problem_find(name, &err);
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *truth = NULL;
    if (!def || lm_problem_make(def, &g, &t, &k, &truth, &err) != LM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const int64_t nv = lm_geom_voxels(&g);
    for (char *save = NULL, *v = strtok_r(list, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
        lm_recon_opts o;
        lm_recon_opts_init(&o);
        o.variant = v;
        o.use_cache = 0;
        lm_recon_result r;
        if (lm_recon_run(&g, t, k, &o, &r, &err) != LM_OK) {
            printf("%s %s: %s\n", name, v, err.msg);
            continue;
        }
        lm_metrics m;
        lm_metrics_compute(r.image->data, truth->data, nv, NULL, 0, &m, &err);
        printf("%s %-12s Q %8.3f s  F^H d %7.3f s  CG %6.3f s (%d it)  total %8.3f s  %.2f %%  %.2f dB\n", name, v,
               r.time_q_s, r.time_fhd_s, r.time_cg_s, r.iters_done, r.time_total_s, m.percent_error, m.psnr_db);
        fflush(stdout);
        lm_recon_result_clear(&r);
    }
    lm_volume_free(truth);
    lm_traj_free(t);
    lm_kdata_free(k);
    return 0;
}
