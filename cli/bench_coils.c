/* larmor-cli bench on a multi-coil problem (B64c8, B128c32, ...): the whole
 * SENSE reconstruction with the problem's true maps, per variant: Q from
 * the cache (a first, untimed run fills it), E^H d over every coil, CG.
 * Times are the pipeline's own stage times of the timed run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_coils.h"
#include "cli_util.h"
#include "larmor.h"

int bench_coils(const lm_problem_def *def, const char *const *names, int nnames, int iters, double lambda,
                int json)
{
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *truth = NULL;
    lm_sens *sens = NULL;
    lm_error err = {0};
    int rc = 1;
    fprintf(stderr, "bench: building %s (%lld coils)...\n", def->name, (long long)def->coils);
    if (lm_problem_make_coils(def, &g, &t, &k, &truth, &sens, &err) != LM_OK)
        return cli_error(&err);
    const int64_t nv = lm_geom_voxels(&g);
    if (json)
        printf("[");
    else
        printf("\n%s: SENSE with the true maps, %lld coils, %d CG iterations, lambda %g, Q cached\n"
               "%-14s %9s %9s %9s %9s %9s %10s %9s %9s\n",
               def->name, (long long)def->coils, iters, lambda, "variant", "set-up", "Q", "E^H d", "CG", "total",
               "Gpairs/s", "PSNR dB", "error %");
    for (int i = 0; i < nnames; i++) {
        lm_recon_opts o;
        lm_recon_opts_init(&o);
        o.variant = names[i];
        o.iters = iters;
        o.lambda = lambda;
        o.sens = sens;
        o.combine = LM_COMBINE_SENSE;
        lm_recon_result warm = {0}, r = {0};
        fprintf(stderr, "bench: %s...\n", names[i]);
        /* the first run fills the Q cache and warms plans and the device */
        if (lm_recon_run(&g, t, k, &o, &warm, &err) != LM_OK)
            goto done;
        lm_recon_result_clear(&warm);
        if (lm_recon_run(&g, t, k, &o, &r, &err) != LM_OK)
            goto done;
        /* "auto" is shown with what it resolved to */
        const lm_variant *rv = lm_variant_resolve(names[i], NULL);
        char shown[64];
        snprintf(shown, sizeof shown, "%s%s%s", names[i], rv && strcmp(rv->name, names[i]) ? " -> " : "",
                 rv && strcmp(rv->name, names[i]) ? rv->name : "");
        lm_metrics m = {.psnr_db = NAN, .percent_error = NAN};
        (void)lm_metrics_compute(r.image->data, truth->data, nv, NULL, 0, &m, &err);
        const double gp = r.fhd_pairs / r.time_fhd_s * 1e-9;
        if (json) {
            printf("%s{", i ? ",\n " : "");
            cli_json_str(stdout, "variant", names[i], 1);
            cli_json_str(stdout, "resolved", rv ? rv->name : names[i], 1);
            cli_json_str(stdout, "problem", def->name, 1);
            cli_json_int(stdout, "coils", r.coils, 1);
            cli_json_num(stdout, "time_q_s", r.time_q_s, 1);
            cli_json_bool(stdout, "q_cached", r.q_from_cache, 1);
            cli_json_num(stdout, "time_fhd_s", r.time_fhd_s, 1);
            cli_json_num(stdout, "time_cg_s", r.time_cg_s, 1);
            cli_json_num(stdout, "time_prep_s", r.time_prep_s, 1);
            cli_json_num(stdout, "time_total_s", r.time_total_s, 1);
            cli_json_num(stdout, "gpairs_per_s", gp, 1);
            cli_json_num(stdout, "psnr_db", m.psnr_db, 1);
            cli_json_num(stdout, "percent_error", m.percent_error, 1);
            cli_json_int(stdout, "cg_iters", r.iters_done, 1);
            cli_json_num(stdout, "lambda", lambda, 0);
            printf("}");
        } else {
            printf("%-14s %9.3f %9.3f %9.3f %9.3f %9.3f %10.2f %9.2f %9.2f%s\n", shown, r.time_prep_s, r.time_q_s,
                   r.time_fhd_s,
                   r.time_cg_s, r.time_total_s, gp, m.psnr_db, m.percent_error, r.q_from_cache ? "" : " (Q not cached)");
        }
        lm_recon_result_clear(&r);
    }
    if (json)
        printf("]\n");
    else
        printf("(Gpairs/s: samples x voxels x coils of E^H d per second of its stage)\n");
    rc = 0;
done:
    if (rc)
        cli_error(&err);
    lm_sens_free(sens);
    lm_volume_free(truth);
    lm_kdata_free(k);
    lm_traj_free(t);
    return rc;
}
