/* Benchmark: the non-quadratic priors through lm_recon on a benchmark
 * problem, for sweeping their parameters (the CLI exposes --reg, --lambda
 * and --iters only):
 *   bench_admm PROBLEM REG LAMBDA[,LAMBDA...] [ITERS [CG_ITERS [RHO [VARIANT]]]]
 * e.g. bench_admm B64n tv 0.002,0.003,0.005 20 5 1 cpu-nufft. Q from the
 * cache; prints error, PSNR and the solve's wall time per lambda. */
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
    if (argc < 4) {
        fprintf(stderr, "usage: bench_admm PROBLEM REG LAMBDAS [ITERS [CG_ITERS [RHO [VARIANT]]]]\n");
        return 2;
    }
    lm_error err = {0};
    lm_reg_kind reg;
    if (lm_reg_parse(argv[2], &reg, &err) != LM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    const lm_problem_def *def = lm_problem_find(argv[1], &err);
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *truth = NULL;
    if (!def || lm_problem_make(def, &g, &t, &k, &truth, &err) != LM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    char list[512];
    snprintf(list, sizeof list, "%s", argv[3]);
    for (char *save = NULL, *l = strtok_r(list, ",", &save); l; l = strtok_r(NULL, ",", &save)) {
        lm_recon_opts o;
        lm_recon_opts_init(&o);
        o.reg = reg;
        o.lambda = atof(l);
        o.iters = argc > 4 ? atoi(argv[4]) : 30;
        o.admm_cg_iters = argc > 5 ? atoi(argv[5]) : 0;
        o.admm_rho = argc > 6 ? atof(argv[6]) : 0;
        if (argc > 7)
            o.variant = argv[7];
        lm_recon_result r;
        if (lm_recon_run(&g, t, k, &o, &r, &err) != LM_OK) {
            printf("%s %s %s: %s\n", argv[1], argv[2], l, err.msg);
            continue;
        }
        lm_metrics m;
        lm_metrics_compute(r.image->data, truth->data, lm_geom_voxels(&g), NULL, 0, &m, &err);
        printf("%s %s lambda %-8s iters %3d cg %2d rho %-5g  %.2f %%  %.2f dB  solve %.2f s  total %.2f s\n", argv[1],
               argv[2], l, o.iters, o.admm_cg_iters, o.admm_rho, m.percent_error, m.psnr_db, r.time_cg_s,
               r.time_total_s);
        fflush(stdout);
        lm_recon_result_clear(&r);
    }
    lm_volume_free(truth);
    lm_traj_free(t);
    lm_kdata_free(k);
    return 0;
}
