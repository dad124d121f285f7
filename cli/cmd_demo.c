/* larmor-cli demo: the headless main job. Reconstructs B32 (or --problem)
 * with Toeplitz CG and both gridding baselines, writes NIfTI volumes, a PNG
 * montage and a metrics table (CSV + printed). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "larmor.h"
#include "montage.h"

int cmd_demo(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, 0, 'o'}, {"problem", required_argument, 0, 'p'},
        {"variant", required_argument, 0, 'v'}, {"lambda", required_argument, 0, 'l'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *out = "larmor-demo", *problem = "B32", *variant = NULL;
    double lambda = -1;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'p': problem = optarg; break;
        case 'v': variant = optarg; break;
        case 'l': if (!cli_parse_double("--lambda", optarg, &lambda)) return 1; break;
        case 'h':
            puts("usage: larmor-cli demo [--out DIR] [--problem B32] [--variant NAME] [--lambda L]\n"
                 "writes DIR/{truth,cg,cg-anatomical,grid-linear,grid-kb,cg-sense8,cg-rss8}.nii.gz, DIR/montage.png,\n"
                 "DIR/metrics.csv (the last two: the same object seen by 8 coils, SENSE with the true maps and\n"
                 "root-sum-of-squares of the channels)");
            return 0;
        default: return 2;
        }
    }
    lm_error err = {0};
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *truth = NULL;
    /* CG twice: Tikhonov, and with the anatomical prior (the paper's
     * advanced reconstruction; lambda 0.3 is B32's best in BENCHMARKS.md). */
    /* Then the same object seen by 8 receive coils: SENSE with the true
     * maps against each channel on its own combined by root-sum-of-squares. */
    enum { RUNS = 6, COILS = 8 };
    lm_recon_result res[RUNS] = {{0}};
    lm_metrics met[RUNS];
    const lm_method methods[RUNS] = {LM_METHOD_CG, LM_METHOD_CG, LM_METHOD_GRID_LINEAR, LM_METHOD_GRID_KB,
                                     LM_METHOD_CG, LM_METHOD_CG};
    const char *names[RUNS] = {"cg", "cg-anatomical", "grid-linear", "grid-kb", "cg-sense8", "cg-rss8"};
    /* scored after scale matching (lm_recon_scale_match): gridding, and rss (its image carries the coils' profile) */
    int scaled[RUNS] = {0};
    lm_kdata *kc = NULL;
    lm_sens *sens = NULL;
    lm_volume *ref = NULL;
    int rc = 1;
    const lm_problem_def *def = lm_problem_find(problem, &err);
    if (!def || !cli_mkdirs(out, &err))
        goto done;
    fprintf(stderr, "demo: synthesising %s (%lld^3, %lld samples)...\n", def->name, (long long)def->n,
            (long long)def->m);
    if (lm_problem_make(def, &g, &t, &k, &truth, &err) != LM_OK)
        goto done;
    char path[4096];
    snprintf(path, sizeof path, "%s/truth.nii.gz", out);
    if (lm_nifti_write(path, truth, 0, &err) != LM_OK)
        goto done;
    if (lm_phantom_truth(lm_phantom_shepp_logan_3d_ref(), &g, 4, &ref, &err) != LM_OK)
        goto done;
    const int dim = g.n[2] > 1 ? 3 : 2;
    if (!(kc = lm_kdata_new(t->m, COILS, &err)) ||
        lm_coils_synth_sens(dim, COILS, g.n, &sens, &err) != LM_OK ||
        lm_coils_synth_kspace(dim == 3 ? lm_phantom_shepp_logan_3d() : lm_phantom_shepp_logan_2d(), dim, COILS, t, kc,
                              &err) != LM_OK)
        goto done;
    if (def->noise > 0 && lm_noise_add(kc, def->noise, LM_PROBLEM_NOISE_SEED, &err) != LM_OK)
        goto done;
    for (int i = 0; i < RUNS; i++) {
        lm_recon_opts o;
        lm_recon_opts_init(&o);
        o.method = methods[i];
        if (variant)
            o.variant = variant;
        if (lambda >= 0)
            o.lambda = lambda;
        if (i == 1) {
            o.reg = LM_REG_ANATOMICAL;
            o.ref = ref;
            o.lambda = lambda >= 0 ? lambda : 0.3;
        }
        if (i >= 4) {
            o.sens = sens;
            o.combine = i == 4 ? LM_COMBINE_SENSE : LM_COMBINE_RSS;
        }
        cli_progress prog;
        cli_progress_init(&prog, 1);
        o.progress = cli_progress_cb;
        o.progress_user = &prog;
        fprintf(stderr, "demo: %s...\n", names[i]);
        lm_code code = lm_recon_run(&g, t, i >= 4 ? kc : k, &o, &res[i], &err);
        cli_progress_done(&prog);
        if (code != LM_OK)
            goto done;
        scaled[i] = lm_recon_scale_match(methods[i], res[i].combine, res[i].sens_source);
        if (lm_metrics_compute(res[i].image->data, truth->data, lm_volume_count(truth), NULL, scaled[i], &met[i],
                               &err) != LM_OK)
            goto done;
        snprintf(path, sizeof path, "%s/%s.nii.gz", out, names[i]);
        if (lm_nifti_write(path, res[i].image, 0, &err) != LM_OK)
            goto done;
        if (i == 0)
            fprintf(stderr, "demo: CG used %s, lambda %g, %d iterations\n", o.variant, o.lambda,
                    res[i].iters_done);
    }
    /* Gridding and rss are shown scale-matched, as they are scored. */
    for (int i = 2; i < RUNS; i++) {
        if (!scaled[i])
            continue;
        lm_cfloat alpha = (lm_cfloat)(met[i].scale_re + I * met[i].scale_im);
        for (int64_t j = 0; j < lm_volume_count(res[i].image); j++)
            res[i].image->data[j] *= alpha;
    }
    const lm_volume *vols[RUNS + 1] = {truth, res[0].image, res[1].image, res[2].image, res[3].image, res[4].image,
                                       res[5].image};
    const char *labels[RUNS + 1] = {"truth", "CG Tikhonov", "CG anatomical", "grid trilinear", "grid Kaiser-B.",
                                    "SENSE 8 coils", "rss 8 coils"};
    snprintf(path, sizeof path, "%s/montage.png", out);
    lm_code mc = cli_write_montage(path, vols, labels, RUNS + 1, 0, &err);
    if (mc == LM_ERR_UNSUPPORTED)
        fprintf(stderr, "demo: %s\n", err.msg); /* built without cairo: no PNG */
    else if (mc != LM_OK)
        goto done;

    char csv[2048];
    int len = snprintf(csv, sizeof csv, "method,psnr_db,percent_error,scale_matched,time_total_s\n");
    printf("\n%-14s %9s %9s %8s %9s\n", "method", "PSNR dB", "error %", "scaled", "time s");
    for (int i = 0; i < RUNS; i++) {
        len += snprintf(csv + len, sizeof csv - (size_t)len, "%s,%.4f,%.4f,%d,%.4f\n", names[i],
                        met[i].psnr_db, met[i].percent_error, scaled[i], res[i].time_total_s);
        printf("%-14s %9.2f %9.2f %8s %9.3f\n", names[i], met[i].psnr_db, met[i].percent_error,
               scaled[i] ? "yes" : "no", res[i].time_total_s);
    }
    snprintf(path, sizeof path, "%s/metrics.csv", out);
    lm_atomic a;
    if (lm_atomic_begin(&a, path, 1, &err) != LM_OK)
        goto done;
    fputs(csv, a.f);
    if (lm_atomic_commit(&a, &err) != LM_OK)
        goto done;
    printf("\nwrote %s/{truth,cg,cg-anatomical,grid-linear,grid-kb,cg-sense8,cg-rss8}.nii.gz, montage.png, "
           "metrics.csv\n", out);
    rc = 0;
done:
    if (rc)
        cli_error(&err);
    for (int i = 0; i < RUNS; i++)
        lm_recon_result_clear(&res[i]);
    lm_volume_free(ref);
    lm_kdata_free(kc);
    lm_sens_free(sens);
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_volume_free(truth);
    return rc;
}
