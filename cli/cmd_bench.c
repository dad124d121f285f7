/* larmor-cli bench: the paper's Figure 9 for a benchmark problem and a list
 * of variants: Q, F^H d and CG times, Gpairs/s, GFLOPS, relative error
 * against cpu-dp, PSNR and percent error against the truth. The rows are
 * the library's (lm_bench.h: the cpu-dp reference on a voxel subset, the
 * extrapolation past --budget, recon's own stages); this file parses the
 * options, picks the variants and prints. Problems with coils, a field map
 * or frames have their own benches (bench_coils.c, bench_fieldmap.c,
 * bench_dynamic.c). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_coils.h"
#include "bench_dynamic.h"
#include "bench_fieldmap.h"
#include "cli_util.h"
#include "commands.h"
#include "larmor.h"

static void print_table(const char *problem, const lm_bench_row *rows, int nrows)
{
    printf("\n%s  (times in s; * = extrapolated from a voxel subset)\n", problem);
    printf("%-18s %9s %9s %8s %9s %9s %9s %10s %8s %8s\n", "variant", "Q", "F^H d", "CG", "total",
           "Gpairs/s", "GFLOPS", "rel.err", "PSNR dB", "error %");
    for (int i = 0; i < nrows; i++) {
        const lm_bench_row *r = &rows[i];
        printf("%-18s %8.3f%s %8.3f%s %8.3f %8.3f%s %9.3f %9.1f %10.2e %8.2f %8.2f%s%s\n", r->label,
               r->time_q_s, r->q_estimated ? "*" : " ", r->time_fhd_s, r->fhd_estimated ? "*" : " ",
               r->time_cg_s, r->time_total_s, (r->q_estimated || r->fhd_estimated) ? "*" : " ",
               r->gpairs, r->gflops, r->rel_error, r->psnr_db, r->percent_error, r->note[0] ? "  " : "",
               r->note);
    }
}

int cmd_bench(int argc, char **argv)
{
    static const struct option opts[] = {
        {"problem", required_argument, 0, 'p'}, {"variants", required_argument, 0, 'v'},
        {"iters", required_argument, 0, 'i'}, {"lambda", required_argument, 0, 'l'},
        {"budget", required_argument, 0, 'b'}, {"ref-voxels", required_argument, 0, 'r'},
        {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *problem = "B128";
    char *list = NULL;
    long long iters = 60, ref_voxels = 4096;
    double lambda = -1, budget = 120;
    int json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': problem = optarg; break;
        case 'v': list = optarg; break;
        case 'i': if (!cli_parse_int("--iters", optarg, 0, 10000, &iters)) return 1; break;
        case 'l': if (!cli_parse_double("--lambda", optarg, &lambda)) return 1; break;
        case 'b': if (!cli_parse_double("--budget", optarg, &budget)) return 1; break;
        case 'r': if (!cli_parse_int("--ref-voxels", optarg, 16, 1 << 24, &ref_voxels)) return 1; break;
        case 'j': json = 1; break;
        case 'h':
            puts("usage: larmor-cli bench [--problem B128] [--variants a,b,...] [--iters 60] [--lambda L]\n"
                 "        [--budget 120] [--ref-voxels 4096] [--json]\n"
                 "  default variants: auto (the fastest accurate one here, named in its row), then every other\n"
                 "  available one. A variant whose full F^H d (or Q) would take\n"
                 "  longer than --budget seconds is timed on the reference voxel subset and extrapolated.\n"
                 "  A problem with a field map (S128c8f, B128c8f) is reconstructed uncorrected, time-segmented and\n"
                 "  exact per variant (default variants: auto only).\n"
                 "  A dynamic problem (D128c8, D64c8) runs frame-by-frame SENSE and temporal TV (--lambda, default\n"
                 "  the sweep's best on D128c8; --iters default 8) with one variant (--variants NAME, default auto).");
            return 0;
        default: return 2;
        }
    }
    lm_error err = {0};
    if (lm_dyn_problem_find(problem)) { /* dynamic: auto unless named (bench_dynamic.c) */
        const char *one[1] = {list ? list : LM_VARIANT_AUTO};
        return bench_dynamic(lm_dyn_problem_find(problem), one, 1, iters == 60 ? LM_DYN_ITERS_DEFAULT : (int)iters,
                             lambda, json);
    }
    const lm_problem_def *def = lm_problem_find(problem, &err);
    if (!def)
        return cli_error(&err);
    lm_recon_opts ropts;
    lm_recon_opts_init(&ropts);
    if (lambda < 0)
        lambda = ropts.lambda;

    /* Variant list. */
    const char *names[64];
    int nnames = 0;
    char *copy = list ? strdup(list) : NULL;
    if (copy) {
        for (char *tok = strtok(copy, ","); tok && nnames < 64; tok = strtok(NULL, ","))
            names[nnames++] = tok;
    } else {
        /* auto first; the variant it resolves to is its row, not repeated */
        const lm_variant *best = lm_variant_resolve(LM_VARIANT_AUTO, &err);
        if (!best)
            return cli_error(&err);
        names[nnames++] = LM_VARIANT_AUTO;
        for (size_t i = 0; i < lm_variant_count() && nnames < 64; i++) {
            const lm_variant *v = lm_variant_at(i);
            if (v != best && v->available(NULL) == LM_OK)
                names[nnames++] = v->name;
        }
    }
    for (int i = 0; i < nnames; i++) {
        const lm_variant *v = lm_variant_get_available(names[i], &err);
        if (!v) {
            free(copy);
            return cli_error(&err);
        }
        if (lm_variant_is_auto(names[i]))
            fprintf(stderr, "bench: %s -> %s (the fastest accurate variant here)\n", names[i], v->name);
    }

    if (def->fieldmap_hz > 0) { /* uncorrected, segmented, exact per variant (bench_fieldmap.c) */
        if (!copy)
            nnames = 1; /* auto only: the exact mode on every CPU variant would take hours */
        int brc = bench_fieldmap(def, names, nnames, (int)iters, lambda, json);
        free(copy);
        return brc;
    }
    if (def->coils > 1) {
        for (int i = 0; i < nnames && !json; i++)
            if (lm_variant_is_auto(names[i]))
                printf("%s = %s here\n", names[i], lm_variant_resolve(names[i], NULL)->name);
        int brc = bench_coils(def, names, nnames, (int)iters, lambda, json);
        free(copy);
        return brc;
    }

    lm_bench *bench = NULL;
    lm_bench_row *rows = calloc((size_t)nnames, sizeof *rows);
    int rc = 1;
    fprintf(stderr, "bench: building %s...\n", def->name);
    if (!rows || lm_bench_new(def, &bench, &err) != LM_OK)
        goto done;
    int64_t N = lm_bench_voxels(bench), R = ref_voxels < N ? ref_voxels : N;
    fprintf(stderr, "bench: cpu-dp reference on %lld voxels...\n", (long long)R);
    if (lm_bench_reference(bench, R, &err) != LM_OK)
        goto done;
    double flops = lm_ksum_flops_per_pair(0);
    for (int i = 0; i < nnames; i++) {
        fprintf(stderr, "bench: %s...\n", lm_variant_find(names[i], NULL)->name);
        if (lm_bench_variant(bench, names[i], (int)iters, lambda, budget, &rows[i], &err) != LM_OK)
            goto done;
    }
    if (json) {
        printf("[");
        for (int i = 0; i < nnames; i++) {
            const lm_bench_row *r = &rows[i];
            printf("%s{", i ? ",\n " : "");
            cli_json_str(stdout, "variant", r->variant, 1);
            cli_json_str(stdout, "resolved", r->resolved, 1);
            cli_json_str(stdout, "problem", def->name, 1);
            cli_json_num(stdout, "time_q_s", r->time_q_s, 1);
            cli_json_num(stdout, "time_fhd_s", r->time_fhd_s, 1);
            cli_json_num(stdout, "time_cg_s", r->time_cg_s, 1);
            cli_json_num(stdout, "time_total_s", r->time_total_s, 1);
            cli_json_num(stdout, "gpairs_per_s", r->gpairs, 1);
            cli_json_num(stdout, "gflops", r->gflops, 1);
            cli_json_num(stdout, "rel_error", r->rel_error, 1);
            cli_json_num(stdout, "psnr_db", r->psnr_db, 1);
            cli_json_num(stdout, "percent_error", r->percent_error, 1);
            cli_json_bool(stdout, "q_estimated", r->q_estimated, 1);
            cli_json_bool(stdout, "fhd_estimated", r->fhd_estimated, 1);
            cli_json_int(stdout, "cg_iters", r->iters, 1);
            cli_json_str(stdout, "cg_path", r->cg_path, 1);
            cli_json_num(stdout, "time_ehd_s", r->time_ehd_s, 1);
            cli_json_num(stdout, "lambda", lambda, 0);
            printf("}");
        }
        printf("]\n");
    } else {
        print_table(def->name, rows, nnames);
        printf("(lambda %g, %lld CG iterations, identity; rel.err against cpu-dp on %lld voxels; "
               "GFLOPS at %.0f flops per pair;\n Q, CG and total are recon's own stages (lm_recon_run, Q not cached; "
               "GPU: its second run), F^H d the kernel alone)\n", lambda, iters, (long long)R, flops);
    }
    rc = 0;
done:
    if (rc)
        cli_error(&err);
    free(copy);
    free(rows);
    lm_bench_free(bench);
    return rc;
}
