/* larmor-cli bench on a problem with a field map (S128c8f): per variant,
 * the SENSE reconstruction with the true maps three ways:
 *   uncorrected  the field map ignored (what off-resonance does to an image),
 *   segmented    time-segmented correction (opts.segments auto),
 *   exact        the direct sums with the off-resonance term (segments 0).
 * Each is run once with one CG iteration (fills the Q cache, warms plans
 * and the device), then timed in full; times are the pipeline's own, and
 * cpu the process' CPU time over the timed run (all threads: less
 * sensitive than wall time to other work on the machine).
 * rel_error is the image's distance to the same variant's exact image. A
 * mode the variant or the build cannot do (LM_ERR_UNSUPPORTED, or a
 * reconstruction that returned the uncorrected image) is a row with its
 * reason; any other error stops the bench. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_fieldmap.h"
#include "cli_util.h"
#include "larmor.h"

enum { MODE_UNCORRECTED, MODE_SEGMENTED, MODE_EXACT, MODES };
static const char *const mode_names[MODES] = {"uncorrected", "segmented", "exact"};

typedef struct fm_row {
    lm_recon_result r;
    lm_metrics m;
    double rel_error;
    double cpu_s;
    int ran;
    char error[sizeof ((lm_error *)0)->msg];
} fm_row;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double rel_diff(const lm_volume *a, const lm_volume *b)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < lm_volume_count(b); i++) {
        num += pow(cabsf(a->data[i] - b->data[i]), 2);
        den += pow(cabsf(b->data[i]), 2);
    }
    return den > 0 ? sqrt(num / den) : NAN;
}

int bench_fieldmap(const lm_problem_def *def, const char *const *names, int nnames, int iters, double lambda,
                   int json)
{
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *truth = NULL;
    lm_sens *sens = NULL;
    float *fm = NULL;
    lm_error err = {0};
    int rc = 1, printed = 0;
    fm_row rows[MODES];
    memset(rows, 0, sizeof rows);
    fprintf(stderr, "bench: building %s (%lld coils, field map up to %g Hz)...\n", def->name, (long long)def->coils,
            def->fieldmap_hz);
    if (lm_problem_make_fieldmap(def, &g, &t, &k, &truth, &sens, &fm, &err) != LM_OK)
        return cli_error(&err);
    if (!fm) {
        lm_fail(&err, LM_ERR_INVALID, "bench: problem %s has no field map", def->name);
        goto done;
    }
    const int64_t nv = lm_geom_voxels(&g);
    if (json)
        printf("[");
    else
        printf("\n%s: SENSE with the true maps, %lld coils, field map up to %g Hz, %lld samples of %g ms, "
               "%d CG iterations, lambda %g\n%-24s %-11s %4s %9s %9s %9s %9s %9s %8s %8s %9s %9s\n",
               def->name, (long long)def->coils, def->fieldmap_hz, (long long)t->m,
               def->readout_ms > 0 ? def->readout_ms : LM_PROBLEM_READOUT_MS, iters, lambda, "variant", "mode", "L",
               "set-up", "Q", "E^H d", "CG", "total", "cpu", "PSNR dB", "error %", "vs exact");
    for (int i = 0; i < nnames; i++) {
        const lm_variant *rv = lm_variant_resolve(names[i], NULL);
        char shown[64];
        snprintf(shown, sizeof shown, "%s%s%s", names[i], rv && strcmp(rv->name, names[i]) ? " -> " : "",
                 rv && strcmp(rv->name, names[i]) ? rv->name : "");
        for (int md = 0; md < MODES; md++) {
            fm_row *w = &rows[md];
            lm_recon_opts o;
            lm_recon_opts_init(&o);
            o.variant = names[i];
            o.lambda = lambda;
            o.sens = sens;
            o.combine = LM_COMBINE_SENSE;
            o.fieldmap = md == MODE_UNCORRECTED ? NULL : fm;
            o.segments = md == MODE_EXACT ? 0 : LM_SEGMENTS_AUTO;
            w->m = (lm_metrics){.psnr_db = NAN, .percent_error = NAN};
            w->rel_error = NAN;
            /* exact E^H E is two direct sums per iteration: on a 3D problem
             * (B128c8f: 1.2e13 pairs) minutes per iteration even on a GPU */
            const double exact_pairs = 2.0 * (double)t->m * (double)nv * (double)def->coils;
            if (md == MODE_EXACT && exact_pairs > 1e12 && !getenv("LARMOR_BENCH_EXACT")) {
                snprintf(w->error, sizeof w->error, "skipped: %.1e sample-voxel pairs per iteration "
                         "(LARMOR_BENCH_EXACT=1 runs it)", exact_pairs);
                continue;
            }
            fprintf(stderr, "bench: %s %s...\n", names[i], mode_names[md]);
            lm_recon_result warm = {0};
            o.iters = 1;
            lm_code c = lm_recon_run(&g, t, k, &o, &warm, &err);
            lm_recon_result_clear(&warm);
            o.iters = iters;
            const double cpu0 = cpu_now();
            if (c == LM_OK)
                c = lm_recon_run(&g, t, k, &o, &w->r, &err);
            w->cpu_s = cpu_now() - cpu0;
            if (c == LM_ERR_UNSUPPORTED) {
                snprintf(w->error, sizeof w->error, "%s", err.msg);
                continue;
            }
            if (c != LM_OK)
                goto done;
            w->ran = 1;
            (void)lm_metrics_compute(w->r.image->data, truth->data, nv, NULL, 0, &w->m, &err);
        }
        /* A build whose reconstruction does not apply opts.fieldmap returns
         * the uncorrected image again: never report that as a correction. */
        for (int md = MODE_SEGMENTED; md < MODES; md++) {
            fm_row *w = &rows[md];
            if (w->ran && rows[MODE_UNCORRECTED].ran &&
                ((md == MODE_SEGMENTED && w->r.segments < 1) ||
                 rel_diff(w->r.image, rows[MODE_UNCORRECTED].r.image) == 0)) {
                w->ran = 0;
                w->m = (lm_metrics){.psnr_db = NAN, .percent_error = NAN};
                lm_recon_result_clear(&w->r);
                snprintf(w->error, sizeof w->error, "the reconstruction ignored the field map (no field-map "
                         "correction in this build)");
            }
        }
        for (int md = 0; md < MODES; md++)
            if (rows[md].ran && rows[MODE_EXACT].ran)
                rows[md].rel_error = rel_diff(rows[md].r.image, rows[MODE_EXACT].r.image);
        for (int md = 0; md < MODES; md++) {
            const fm_row *w = &rows[md];
            const lm_recon_result *r = &w->r;
            const double gp = w->ran ? r->fhd_pairs / r->time_fhd_s * 1e-9 : NAN;
            if (json) {
                printf("%s{", printed++ ? ",\n " : "");
                cli_json_str(stdout, "variant", names[i], 1);
                cli_json_str(stdout, "resolved", rv ? rv->name : names[i], 1);
                cli_json_str(stdout, "problem", def->name, 1);
                cli_json_str(stdout, "mode", mode_names[md], 1);
                cli_json_int(stdout, "segments", w->ran ? r->segments : 0, 1);
                cli_json_num(stdout, "segment_error", w->ran && md == MODE_SEGMENTED ? r->segment_error : NAN, 1);
                cli_json_int(stdout, "coils", w->ran ? r->coils : def->coils, 1);
                cli_json_num(stdout, "time_q_s", w->ran ? r->time_q_s : NAN, 1);
                cli_json_bool(stdout, "q_cached", w->ran && r->q_from_cache, 1);
                cli_json_num(stdout, "time_fhd_s", w->ran ? r->time_fhd_s : NAN, 1);
                cli_json_num(stdout, "time_cg_s", w->ran ? r->time_cg_s : NAN, 1);
                cli_json_num(stdout, "time_prep_s", w->ran ? r->time_prep_s : NAN, 1);
                cli_json_num(stdout, "time_total_s", w->ran ? r->time_total_s : NAN, 1);
                cli_json_num(stdout, "cpu_s", w->ran ? w->cpu_s : NAN, 1);
                cli_json_num(stdout, "gpairs_per_s", gp, 1);
                cli_json_num(stdout, "gflops", gp * lm_ksum_flops_per_pair(0), 1);
                cli_json_num(stdout, "rel_error", w->rel_error, 1);
                cli_json_num(stdout, "psnr_db", w->m.psnr_db, 1);
                cli_json_num(stdout, "percent_error", w->m.percent_error, 1);
                cli_json_int(stdout, "cg_iters", w->ran ? r->iters_done : 0, 1);
                cli_json_num(stdout, "lambda", lambda, 1);
                cli_json_str(stdout, "error", w->error, 0);
                printf("}");
            } else if (!w->ran) {
                printf("%-24s %-11s %s%s\n", shown, mode_names[md], strncmp(w->error, "skipped", 7) ? "unsupported: " : "", w->error);
            } else {
                char seg[16];
                snprintf(seg, sizeof seg, "%d", r->segments);
                printf("%-24s %-11s %4s %9.3f %9.3f %9.3f %9.3f %9.3f %8.3f %8.2f %9.2f %9.2e\n", shown,
                       mode_names[md], md == MODE_SEGMENTED ? seg : "-", r->time_prep_s, r->time_q_s, r->time_fhd_s,
                       r->time_cg_s, r->time_total_s, w->cpu_s, w->m.psnr_db, w->m.percent_error, w->rel_error);
            }
        }
        for (int md = 0; md < MODES; md++)
            lm_recon_result_clear(&rows[md].r);
        memset(rows, 0, sizeof rows);
    }
    if (json)
        printf("]\n");
    else
        printf("(L: time segments; cpu: the process' CPU seconds, all threads; vs exact: ||image - exact image|| / "
               "||exact image|| of the same variant)\n");
    rc = 0;
done:
    if (rc)
        cli_error(&err);
    for (int md = 0; md < MODES; md++)
        lm_recon_result_clear(&rows[md].r);
    free(fm);
    lm_sens_free(sens);
    lm_volume_free(truth);
    lm_kdata_free(k);
    lm_traj_free(t);
    return rc;
}
