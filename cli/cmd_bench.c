/* larmor-cli bench: the paper's Figure 9 for a benchmark problem and a list
 * of variants: Q, F^H d and CG times, Gpairs/s, GFLOPS, relative error
 * against cpu-dp, PSNR and percent error against the truth.
 *
 * cpu-dp is the reference but far too slow for the whole of B128, so the
 * reference is cpu-dp on a fixed subset of voxels (explicit points); a
 * variant whose full run would exceed --budget seconds is timed on that
 * subset and its full time extrapolated (marked "estimated").
 *
 * Q, CG and the total are those of the reconstruction `recon` runs
 * (lm_recon_run: the session's encoding with Q and its Toeplitz operator
 * made on the variant's device, E^H d there, CG on the resident operator),
 * so the two commands report the same stages. Only the F^H d column (and
 * Gpairs/s) is the kernel alone. A variant whose Q would exceed the budget
 * cannot run that path: its CG is the stand-alone solver (lm_solver.h) on
 * cpu-nufft's Q, named in its row ("cg_path": "solver"). */
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

typedef struct bench_row {
    const char *variant;       /* as asked: a name or "auto" */
    const char *resolved;      /* the variant that ran */
    char label[48];            /* "cpu-simd", or "auto -> cpu-nufft" */
    double time_q_s, time_fhd_s, time_cg_s, time_total_s;
    double gpairs, gflops, rel_error, psnr_db, percent_error;
    int q_estimated, fhd_estimated, iters;
    const char *cg_path;       /* "recon" (lm_recon_run's session), "solver" (Q from cpu-nufft), "" */
    double time_ehd_s;         /* the reconstruction's E^H d stage (recon path) */
    char note[160];
} bench_row;

/* Every stride-th voxel from a fixed odd offset: spread over the volume. */
static int64_t *subset_indices(int64_t n, int64_t count)
{
    if (count > n)
        count = n;
    int64_t *idx = malloc((size_t)count * sizeof *idx);
    if (!idx)
        return NULL;
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (int64_t i = 0; i < count; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        idx[i] = (int64_t)(s % (uint64_t)n);
    }
    return idx;
}

static lm_code fhd_on_subset(const lm_variant *v, const lm_geom *g, const lm_ksum_in *kin,
                             const int64_t *idx, int64_t count, lm_cfloat *out, double *secs, lm_error *err)
{
    float *x = malloc((size_t)count * 5 * sizeof(float));
    if (!x)
        return lm_fail(err, LM_ERR_NOMEM, "bench: out of memory for the voxel subset");
    float *y = x + count, *z = y + count, *re = z + count, *im = re + count;
    for (int64_t j = 0; j < count; j++) {
        int64_t i = idx[j];
        x[j] = (float)lm_voxel_pos(i % g->n[0], g->n[0]);
        y[j] = (float)lm_voxel_pos((i / g->n[0]) % g->n[1], g->n[1]);
        z[j] = (float)lm_voxel_pos(i / (g->n[0] * g->n[1]), g->n[2]);
    }
    lm_points pts = {.n = count, .x = x, .y = y, .z = z};
    double t0 = cli_now();
    lm_code c = lm_ksum_run(v, kin, &pts, re, im, NULL, err);
    *secs = cli_now() - t0;
    for (int64_t j = 0; c == LM_OK && j < count; j++)
        out[j] = re[j] + I * im[j];
    free(x);
    return c;
}

/* F^H d on `planes` central z planes of the image grid (a grid slab). */
static lm_code fhd_on_slab(const lm_variant *v, const lm_geom *g, const lm_ksum_in *kin, int64_t planes,
                           double *secs, lm_error *err)
{
    lm_points pts;
    lm_points_image_grid(&pts, g->n);
    pts.g[2] = planes;
    pts.c[2] = planes / 2;
    pts.n = pts.g[0] * pts.g[1] * planes;
    float *re = malloc((size_t)pts.n * 2 * sizeof(float));
    if (!re)
        return lm_fail(err, LM_ERR_NOMEM, "bench: out of memory for a slab");
    double t0 = cli_now();
    lm_code c = lm_ksum_run(v, kin, &pts, re, re + pts.n, NULL, err);
    *secs = cli_now() - t0;
    free(re);
    return c;
}

static void print_table(const char *problem, const bench_row *rows, int nrows)
{
    printf("\n%s  (times in s; * = extrapolated from a voxel subset)\n", problem);
    printf("%-18s %9s %9s %8s %9s %9s %9s %10s %8s %8s\n", "variant", "Q", "F^H d", "CG", "total",
           "Gpairs/s", "GFLOPS", "rel.err", "PSNR dB", "error %");
    for (int i = 0; i < nrows; i++) {
        const bench_row *r = &rows[i];
        printf("%-18s %8.3f%s %8.3f%s %8.3f %8.3f%s %9.3f %9.1f %10.2e %8.2f %8.2f%s%s\n", r->label,
               r->time_q_s, r->q_estimated ? "*" : " ", r->time_fhd_s, r->fhd_estimated ? "*" : " ",
               r->time_cg_s, r->time_total_s, (r->q_estimated || r->fhd_estimated) ? "*" : " ",
               r->gpairs, r->gflops, r->rel_error, r->psnr_db, r->percent_error, r->note[0] ? "  " : "",
               r->note);
    }
}

/* What `larmor-cli recon --method cg --variant V --lambda L --iters I
 * --no-cache` runs on the problem (lm_recon_run), timed by its own stages.
 * A GPU variant runs twice and reports the second. */
static lm_code recon_path(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_variant *v, double lambda,
                          int iters, lm_recon_result *res, lm_error *err)
{
    lm_recon_opts o;
    lm_recon_opts_init(&o);
    o.variant = v->name;
    o.lambda = lambda;
    o.iters = iters;
    o.use_cache = 0; /* Q computed, as the Q column has always been */
    if (v->device == LM_DEVICE_GPU) {
        lm_recon_result warm = {0};
        lm_code rc = lm_recon_run(g, t, k, &o, &warm, err);
        lm_recon_result_clear(&warm);
        if (rc != LM_OK)
            return rc;
    }
    return lm_recon_run(g, t, k, &o, res, err);
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

    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *truth = NULL;
    bench_row *rows = calloc((size_t)nnames, sizeof *rows);
    int64_t *idx = NULL;
    lm_cfloat *ref = NULL, *sub = NULL, *fallback_q = NULL;
    float *kx = NULL, *wr = NULL, *wi = NULL;
    int rc = 1;
    fprintf(stderr, "bench: building %s...\n", def->name);
    if (!rows || lm_problem_make(def, &g, &t, &k, &truth, &err) != LM_OK)
        goto done;
    int64_t N = lm_geom_voxels(&g), M = t->m;

    /* F^H d weights conj(phi) d in structure-of-arrays form, for the subset runs. */
    kx = malloc((size_t)M * 3 * sizeof *kx);
    wr = malloc((size_t)M * sizeof *wr);
    wi = malloc((size_t)M * sizeof *wi);
    if (!kx || !wr || !wi) {
        lm_fail(&err, LM_ERR_NOMEM, "bench: out of memory");
        goto done;
    }
    for (int64_t m = 0; m < M; m++) {
        kx[m] = t->k[3 * m], kx[M + m] = t->k[3 * m + 1], kx[2 * M + m] = t->k[3 * m + 2];
        double phi = lm_geom_phi(&g, t->k[3 * m], t->k[3 * m + 1], t->k[3 * m + 2]);
        wr[m] = (float)(phi * crealf(k->d[m]));
        wi[m] = (float)(phi * cimagf(k->d[m]));
    }
    lm_ksum_in kin = {.m = M, .kx = kx, .ky = kx + M, .kz = kx + 2 * M, .wr = wr, .wi = wi};
    int64_t R = ref_voxels < N ? ref_voxels : N;
    idx = subset_indices(N, R);
    ref = malloc((size_t)R * sizeof *ref);
    sub = malloc((size_t)R * sizeof *sub);
    if (!idx || !ref || !sub) {
        lm_fail(&err, LM_ERR_NOMEM, "bench: out of memory");
        goto done;
    }
    double tref;
    fprintf(stderr, "bench: cpu-dp reference on %lld voxels...\n", (long long)R);
    if (fhd_on_subset(lm_variant_find("cpu-dp", NULL), &g, &kin, idx, R, ref, &tref, &err) != LM_OK)
        goto done;

    double pairs = (double)M * (double)N, flops = lm_ksum_flops_per_pair(0);
    for (int i = 0; i < nnames; i++) {
        bench_row *r = &rows[i];
        const lm_variant *v = lm_variant_find(names[i], NULL);
        r->variant = names[i];
        r->resolved = v->name;
        if (strcmp(names[i], v->name) != 0)
            snprintf(r->label, sizeof r->label, "%s -> %s", names[i], v->name);
        else
            snprintf(r->label, sizeof r->label, "%s", v->name);
        r->psnr_db = r->percent_error = NAN;
        fprintf(stderr, "bench: %s...\n", v->name);
        lm_cfloat *fhd = NULL;
        double predicted = 0, tsub = 0;
        /* Only CPU kernels are slow enough to need extrapolating; GPU
         * grid kernels are not represented by an explicit-point subset. */
        if (!v->grid_only && v->device == LM_DEVICE_CPU) {
            if (fhd_on_subset(v, &g, &kin, idx, R, sub, &tsub, &err) != LM_OK)
                goto done;
            predicted = tsub * (double)N / (double)R;
            /* Grid kernels run faster on rows than on scattered points: when
             * the whole would exceed the budget, time a slab of z planes
             * (about 10 s) and scale that instead. */
            if (predicted > budget && g.n[2] > 1) {
                double per_plane = predicted / (double)g.n[2];
                int64_t planes = (int64_t)(10.0 / per_plane);
                planes = planes < 1 ? 1 : planes > g.n[2] ? g.n[2] : planes;
                double tslab = 0;
                if (fhd_on_slab(v, &g, &kin, planes, &tslab, &err) != LM_OK)
                    goto done;
                predicted = tslab * (double)g.n[2] / (double)planes;
            }
        }
        if (predicted <= budget) {
            if (v->device == LM_DEVICE_GPU) { /* warm up: context and plans */
                lm_cfloat *warm = NULL;
                if (lm_compute_fhd(&g, t, k->d, v->name, NULL, &warm, &err) != LM_OK)
                    goto done;
                free(warm);
            }
            double t0 = cli_now();
            if (lm_compute_fhd(&g, t, k->d, v->name, NULL, &fhd, &err) != LM_OK)
                goto done;
            r->time_fhd_s = cli_now() - t0;
            for (int64_t j = 0; j < R; j++)
                sub[j] = fhd[idx[j]];
        } else {
            r->time_fhd_s = predicted;
            r->fhd_estimated = 1;
        }
        r->rel_error = lm_rel_error_c(sub, ref, R);
        r->gpairs = pairs / r->time_fhd_s * 1e-9;
        r->gflops = pairs * flops / r->time_fhd_s * 1e-9;
        r->cg_path = "";
        r->time_ehd_s = NAN;
        const int q_fits = 8.0 * r->time_fhd_s <= budget;
        if (!q_fits) {
            r->time_q_s = 8.0 * r->time_fhd_s; /* Q is 8x the pairs of F^H d */
            r->q_estimated = 1;
        }
        if (fhd && q_fits) {
            /* recon's own path; a GPU variant's timed run is its second in
             * this process (context, plans and pools warm, as served) */
            lm_recon_result res = {0};
            if (recon_path(&g, t, k, v, lambda, (int)iters, &res, &err) != LM_OK) {
                free(fhd);
                goto done;
            }
            r->cg_path = "recon";
            r->time_q_s = res.time_q_s;
            r->time_ehd_s = res.time_fhd_s;
            r->time_cg_s = res.time_cg_s;
            r->iters = res.iters_done;
            lm_metrics met;
            if (lm_metrics_compute(res.image->data, truth->data, N, NULL, 0, &met, &err) == LM_OK) {
                r->psnr_db = met.psnr_db;
                r->percent_error = met.percent_error;
            }
            r->time_total_s = res.time_total_s;
            lm_recon_result_clear(&res);
            free(fhd);
            continue;
        }
        if (fhd) { /* Q would exceed the budget: solve with an accurate Q from the cache (or cpu-nufft) */
            if (!fallback_q) {
                int cached = 0;
                if (lm_compute_q(&g, t, "cpu-nufft", 1, NULL, &fallback_q, &cached, &err) != LM_OK)
                    goto done;
            }
            snprintf(r->note, sizeof r->note, "CG by the solver with Q from cpu-nufft");
            r->cg_path = "solver";
            lm_volume *img = lm_volume_new(g.n, NULL, &err);
            if (!img) {
                free(fhd);
                goto done;
            }
            lm_cg_opts co = {.lambda = lambda, .reg = LM_REG_IDENTITY, .iters = (int)iters};
            lm_cg_report rep = {0};
            double t0 = cli_now();
            lm_code cc = v->device == LM_DEVICE_GPU ? lm_cg_solve_gpu(&g, fallback_q, fhd, img->data, &co, &rep, &err)
                                                    : lm_cg_solve_cpu(&g, fallback_q, fhd, img->data, &co, &rep, &err);
            r->time_cg_s = cli_now() - t0;
            r->iters = rep.iters_done;
            free(rep.resid_history);
            if (cc != LM_OK) {
                lm_volume_free(img);
                free(fhd);
                goto done;
            }
            lm_metrics met;
            if (lm_metrics_compute(img->data, truth->data, N, NULL, 0, &met, &err) == LM_OK) {
                r->psnr_db = met.psnr_db;
                r->percent_error = met.percent_error;
            }
            lm_volume_free(img);
        } else {
            r->time_cg_s = NAN;
            snprintf(r->note, sizeof r->note, "F^H d extrapolated: no image");
        }
        r->time_total_s = r->time_q_s + r->time_fhd_s + (isfinite(r->time_cg_s) ? r->time_cg_s : 0);
        free(fhd);
    }
    if (json) {
        printf("[");
        for (int i = 0; i < nnames; i++) {
            const bench_row *r = &rows[i];
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
    free(idx), free(ref), free(sub), free(fallback_q);
    free(kx), free(wr), free(wi);
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_volume_free(truth);
    return rc;
}
