/* The whole pipeline: names, options, validation, an end-to-end B32
 * reconstruction against the truth, the Q cache on the second run,
 * progress reporting, cancel, and root-sum-of-squares over channels. */
#include <string.h>
#include <unistd.h>

#include "lm_kernels.h"
#include "lm_metrics.h"
#include "lm_recon.h"
#include "lm_test.h"
#include "lm_trajgen.h"

typedef struct prog_log {
    int calls, cg_calls, last_iter, cancel_at_iter, order_ok;
    lm_stage last_stage;
    double last_cost, first_cost;
    int cost_mono;
    int saw[LM_STAGE_DONE + 1];
} prog_log;

static int progress(void *user, const lm_progress *p)
{
    prog_log *l = user;
    if (l->calls == 0)
        l->order_ok = 1;
    if (p->stage < l->last_stage)
        l->order_ok = 0;
    if (p->fraction < 0 || p->fraction > 1)
        l->order_ok = 0;
    l->last_stage = p->stage;
    l->saw[p->stage]++;
    l->calls++;
    if (p->stage == LM_STAGE_CG && p->iter > 0) {
        if (l->cg_calls == 0) {
            l->cost_mono = 1;
            l->first_cost = p->cost;
        } else if (p->cost > l->last_cost * (1 + 1e-6)) {
            l->cost_mono = 0;
        }
        l->cg_calls++;
        l->last_cost = p->cost;
        l->last_iter = p->iter;
        CHECK(p->iters > 0 && p->iter <= p->iters);
        return l->cancel_at_iter && p->iter == l->cancel_at_iter;
    }
    return 0;
}

static void test_names(void)
{
    lm_error err = {0};
    lm_method m;
    lm_reg_kind r;
    for (int i = LM_METHOD_CG; i <= LM_METHOD_GRID_KB; i++) {
        CHECK_OK(lm_method_parse(lm_method_name((lm_method)i), &m, &err), &err);
        CHECK((int)m == i);
    }
    for (int i = LM_REG_IDENTITY; i <= LM_REG_ANATOMICAL; i++) {
        CHECK_OK(lm_reg_parse(lm_reg_name((lm_reg_kind)i), &r, &err), &err);
        CHECK((int)r == i);
    }
    CHECK(!strcmp(lm_method_name(LM_METHOD_GRID_KB), "grid-kb"));
    CHECK(!strcmp(lm_reg_name(LM_REG_GRADIENT), "gradient"));
    CHECK(lm_method_parse("sense", &m, &err) == LM_ERR_INVALID && strstr(err.msg, "sense"));
    CHECK(lm_reg_parse(NULL, &r, &err) == LM_ERR_INVALID);
    for (int s = LM_STAGE_LOAD; s <= LM_STAGE_DONE; s++)
        CHECK(strcmp(lm_stage_name((lm_stage)s), "unknown") != 0);

    lm_recon_opts o;
    lm_recon_opts_init(&o);
    CHECK(o.method == LM_METHOD_CG && o.iters == 60 && o.use_cache == 1);
    CHECK(!strcmp(o.variant, "auto")); /* the fastest accurate variant here (lm_variant_resolve) */
    CHECK(o.lambda >= 0);
}

static const char *pick_variant(void)
{
    const char *v = getenv("LM_TEST_VARIANT");
    if (v && *v)
        return v;
    return lm_variant_get_available("cpu-simd", NULL) ? "cpu-simd" : "cpu-dp";
}

int main(void)
{
    test_names();

    lm_error err = {0};
    const lm_problem_def *def = lm_problem_find("B32", &err);
    if (!def)
        LM_TEST_SKIP("no B32 problem: %s", err.msg);
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *truth = NULL;
    CHECK_OK(lm_problem_make(def, &g, &t, &k, &truth, &err), &err);
    if (!t || !k || !truth)
        return lm_test_finish("recon");
    const int64_t nv = lm_geom_voxels(&g);

    /* Private cache folder so the first run really computes Q. */
    char root[256];
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/larmor-recon-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(root) != NULL);
    setenv("XDG_CACHE_HOME", root, 1);

    lm_recon_opts o;
    lm_recon_opts_init(&o);
    o.variant = pick_variant();
    prog_log log = {0};
    o.progress = progress;
    o.progress_user = &log;
    lm_recon_result r1, r2;
    CHECK_OK(lm_recon_run(&g, t, k, &o, &r1, &err), &err);
    if (!r1.image)
        return lm_test_finish("recon");
    lm_metrics met;
    CHECK_OK(lm_metrics_compute(r1.image->data, truth->data, nv, NULL, 0, &met, &err), &err);
    fprintf(stderr, "B32 cg %s lambda %g: %.2f %% error, %.2f dB; Q %.3f s (cache %d), F^H d %.3f s, "
                    "CG %.3f s (%d iters, resid %.3g), total %.3f s\n",
            o.variant, o.lambda, met.percent_error, met.psnr_db, r1.time_q_s, r1.q_from_cache,
            r1.time_fhd_s, r1.time_cg_s, r1.iters_done, r1.resid_history[r1.iters_done], r1.time_total_s);
    /* Observed 47.8 % (21.9 dB) with cpu-dp: B32 has 0.136 samples per
     * voxel, so k-space is fully sampled only within |k| < ~4.7 of 16 and
     * the missing high frequencies dominate (lambda 0..1 and 60..300
     * iterations all land at 47-49 %). The bound leaves margin. */
    CHECK_MSG(met.percent_error < 52, "B32 percent error %.2f", met.percent_error);
    CHECK(met.psnr_db > 20);
    const double err_identity = met.percent_error;
    CHECK(r1.q_from_cache == 0);
    CHECK(r1.iters_done == 60 && r1.coils == 1);
    CHECK(r1.fhd_pairs == (double)t->m * (double)nv);
    CHECK(r1.image->dims[0] == 32 && r1.image->dims[2] == 32);
    CHECK_NEAR(r1.image->voxel_mm[0], 240.0 / 32, 1e-9);
    CHECK(log.order_ok && log.saw[LM_STAGE_Q] && log.saw[LM_STAGE_FHD] && log.saw[LM_STAGE_DONE] == 1);
    CHECK(log.cg_calls == 60 && log.last_iter == 60);
    CHECK_MSG(log.cost_mono, "progress cost not monotone");
    /* Progress cost is the true objective ||F rho - d||^2 + ...: positive,
     * and far below ||d||^2 once fitted. */
    CHECK(log.last_cost > 0 && log.last_cost < log.first_cost);

    /* Second run: Q from the cache, same image. */
    memset(&log, 0, sizeof log);
    CHECK_OK(lm_recon_run(&g, t, k, &o, &r2, &err), &err);
    CHECK(r2.q_from_cache == 1);
    if (r2.image)
        CHECK(lm_rel_error_c(r2.image->data, r1.image->data, nv) < 1e-5);
    fprintf(stderr, "second run: Q %.3f s from cache, total %.3f s\n", r2.time_q_s, r2.time_total_s);
    lm_recon_result_clear(&r2);

    /* Regularisers: gradient stays close; the anatomical priors with the
     * truth as reference must help clearly (anatomical-edges: observed 30 %
     * at lambda 0.05; anatomical, whose data edges lower the weights
     * further, at lambda 0.5: observed 22.5 %; docs/priors.md). */
    const lm_reg_kind regs[3] = {LM_REG_GRADIENT, LM_REG_ANATOMICAL_EDGES, LM_REG_ANATOMICAL};
    const double lams[3] = {0.05, 0.05, 0.5};
    for (int i = 0; i < 3; i++) {
        lm_recon_opts o2 = o;
        o2.progress = NULL;
        o2.reg = regs[i];
        o2.lambda = lams[i];
        o2.ref = truth;
        CHECK_OK(lm_recon_run(&g, t, k, &o2, &r2, &err), &err);
        if (r2.image) {
            CHECK_OK(lm_metrics_compute(r2.image->data, truth->data, nv, NULL, 0, &met, &err), &err);
            fprintf(stderr, "B32 cg %s lambda %g: %.2f %% error, %.2f dB\n", lm_reg_name(regs[i]), o2.lambda,
                    met.percent_error, met.psnr_db);
            if (regs[i] == LM_REG_GRADIENT)
                CHECK(met.percent_error < 52);
            else
                CHECK_MSG(met.percent_error < err_identity - 8, "anatomical %.2f vs identity %.2f",
                          met.percent_error, err_identity);
        }
        lm_recon_result_clear(&r2);
    }

    /* Cancel in CG at iteration 3: nothing left in the result. */
    memset(&log, 0, sizeof log);
    log.cancel_at_iter = 3;
    lm_code rc = lm_recon_run(&g, t, k, &o, &r2, &err);
    CHECK(rc == LM_ERR_CANCELLED && err.code == LM_ERR_CANCELLED);
    CHECK(r2.image == NULL && r2.resid_history == NULL);
    CHECK(log.last_iter == 3);

    /* Two channels, the second twice the first, combined by
     * root-sum-of-squares (the default estimates maps): RSS = sqrt(5) |rho|. */
    lm_kdata *k2 = lm_kdata_new(k->m, 2, &err);
    for (int64_t j = 0; j < k->m; j++) {
        k2->d[j] = k->d[j];
        k2->d[k->m + j] = 2 * k->d[j];
    }
    o.progress = NULL;
    o.combine = LM_COMBINE_RSS;
    CHECK_OK(lm_recon_run(&g, t, k2, &o, &r2, &err), &err);
    o.combine = LM_COMBINE_AUTO;
    if (r2.image) {
        CHECK(r2.coils == 2 && r2.fhd_pairs == 2.0 * (double)t->m * (double)nv);
        double num = 0, den = 0;
        for (int64_t j = 0; j < nv; j++) {
            double want = sqrt(5.0) * cabsf(r1.image->data[j]);
            num += pow(crealf(r2.image->data[j]) - want, 2) + pow(cimagf(r2.image->data[j]), 2);
            den += want * want;
        }
        CHECK_MSG(sqrt(num / den) < 1e-4, "RSS rel diff %g", sqrt(num / den));
    }
    lm_recon_result_clear(&r2);
    lm_kdata_free(k2);

    /* Validation: sample counts, NaN data, anatomical without reference. */
    lm_kdata *bad = lm_kdata_new(k->m - 1, 1, &err);
    CHECK(lm_recon_run(&g, t, bad, &o, &r2, &err) == LM_ERR_INVALID);
    lm_kdata_free(bad);
    lm_cfloat keep = k->d[5];
    k->d[5] = CMPLXF(NAN, 0);
    CHECK(lm_recon_run(&g, t, k, &o, &r2, &err) == LM_ERR_FORMAT && strstr(err.msg, "sample 5"));
    k->d[5] = keep;
    lm_recon_opts o3 = o;
    o3.reg = LM_REG_ANATOMICAL;
    o3.ref = NULL;
    CHECK(lm_recon_run(&g, t, k, &o3, &r2, &err) == LM_ERR_INVALID);
    o3 = o;
    o3.variant = "no-such-variant";
    CHECK(lm_recon_run(&g, t, k, &o3, &r2, &err) != LM_OK && r2.image == NULL);

    /* Gridding baselines run (scored after scale matching, as the paper). */
    const lm_method grids[2] = {LM_METHOD_GRID_LINEAR, LM_METHOD_GRID_KB};
    for (int i = 0; i < 2; i++) {
        lm_recon_opts o4 = o;
        o4.method = grids[i];
        rc = lm_recon_run(&g, t, k, &o4, &r2, &err);
        if (rc == LM_ERR_UNSUPPORTED) {
            fprintf(stderr, "%s: %s\n", lm_method_name(grids[i]), err.msg);
            continue;
        }
        CHECK_OK(rc, &err);
        if (r2.image) {
            CHECK_OK(lm_metrics_compute(r2.image->data, truth->data, nv, NULL, 1, &met, &err), &err);
            fprintf(stderr, "B32 %s: %.2f %% error, %.2f dB (scale matched), %.3f s\n", lm_method_name(grids[i]),
                    met.percent_error, met.psnr_db, r2.time_grid_s);
            CHECK(isfinite(met.percent_error));
        }
        lm_recon_result_clear(&r2);
    }

    lm_recon_result_clear(&r1);
    lm_volume_free(truth);
    lm_traj_free(t);
    lm_kdata_free(k);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
    return lm_test_finish("recon");
}
