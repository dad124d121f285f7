/* The time estimate (lm_estimate.h): the nominal model's arithmetic, the
 * correction by measured runs (after one run of a size the estimate for
 * that size is its measured time; later runs average in log space), the
 * rates file (round trip, atomic save, a damaged file named in the error),
 * and a real run: after it, the estimate for the same size is within 2x of
 * the time it reported. Every assertion is on stored numbers; nothing is
 * timed here. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fm_common.h"
#include "lm_estimate.h"
#include "lm_test.h"

static int close_to(double a, double b, double tol)
{
    return fabs(a - b) <= tol * fmax(fabs(b), 1e-300);
}

static void test_model(void)
{
    lm_geom g;
    lm_geom_init(&g, 64, 64, 64, 220);
    lm_recon_opts o;
    lm_recon_opts_init(&o);
    o.variant = "cpu-simd";
    o.iters = 20;
    lm_estimate_size sz;
    lm_estimate_size_init(&sz, &g, 100000, 1, &o);
    lm_estimate e, e8, ec;
    lm_error err = {0};
    CHECK_OK(lm_estimate_time(&sz, NULL, &e, &err), &err);
    CHECK(strcmp(e.variant, "cpu-simd") == 0 && e.nominal_gpairs == 0.2 && e.measured == 0);
    /* Q: M x 8N pairs at 0.2 Gpairs/s; E^H d: M x N. */
    const double nv = 64.0 * 64 * 64;
    CHECK(close_to(e.part_s[LM_EST_Q], 1e5 * 8 * nv / 0.2e9, 1e-12));
    CHECK(close_to(e.part_s[LM_EST_FHD], 1e5 * nv / 0.2e9, 1e-12));
    double sum = 0;
    for (int p = 0; p < LM_EST_PARTS; p++)
        sum += e.part_s[p];
    CHECK(close_to(e.total_s, sum, 1e-12) && close_to(e.nominal_s, sum, 1e-12));
    /* Eight coils: E^H d and the steps scale with them; Q does not. */
    lm_estimate_size s8 = sz;
    s8.coils = 8;
    CHECK_OK(lm_estimate_time(&s8, NULL, &e8, &err), &err);
    CHECK(close_to(e8.part_s[LM_EST_FHD], 8 * e.part_s[LM_EST_FHD], 1e-12));
    CHECK(close_to(e8.part_s[LM_EST_Q], e.part_s[LM_EST_Q], 1e-12));
    CHECK(e8.part_s[LM_EST_ITER] > 7 * e.part_s[LM_EST_ITER]);
    /* A cached Q costs nothing. */
    lm_estimate_size sc = sz;
    sc.q_cached = 1;
    CHECK_OK(lm_estimate_time(&sc, NULL, &ec, &err), &err);
    CHECK(ec.part_s[LM_EST_Q] == 0 && close_to(ec.total_s, e.total_s - e.part_s[LM_EST_Q], 1e-12));
    /* Unknown variant: refused with its name. */
    sz.variant = "cpu-none";
    CHECK(lm_estimate_time(&sz, NULL, &e, &err) != LM_OK && strstr(err.msg, "cpu-none"));
    lm_error_clear(&err);
}

/* Synthetic measured runs: the estimate follows them exactly, then as the
 * documented average. */
static void test_correction(void)
{
    lm_geom g;
    lm_geom_init(&g, 32, 32, 32, 220);
    lm_recon_opts o;
    lm_recon_opts_init(&o);
    o.variant = "cpu-nufft";
    o.iters = 10;
    o.tol = 0;
    lm_estimate_size sz;
    lm_estimate_size_init(&sz, &g, 20000, 1, &o);
    lm_estimate_rates rates = {0};
    lm_error err = {0};
    lm_recon_result r = {0};
    r.time_q_s = 0.3, r.time_fhd_s = 0.1, r.time_cg_s = 0.5, r.iters_done = 10, r.time_total_s = 1.0;
    CHECK_OK(lm_estimate_record(&rates, &sz, &r, &err), &err);
    lm_estimate e;
    CHECK_OK(lm_estimate_time(&sz, &rates, &e, &err), &err);
    printf("nominal %.3g s; after a run of 1.0 s: %.6g s (q %.3g, fhd %.3g, iter %.3g, other %.3g)\n", e.nominal_s,
           e.total_s, e.part_s[LM_EST_Q], e.part_s[LM_EST_FHD], e.part_s[LM_EST_ITER], e.part_s[LM_EST_OTHER]);
    CHECK(close_to(e.total_s, 1.0, 1e-9) && e.measured == 4);
    CHECK(close_to(e.part_s[LM_EST_Q], 0.3, 1e-9) && close_to(e.part_s[LM_EST_ITER], 0.5, 1e-9));
    /* Twice the iterations: the steps' part doubles. */
    lm_estimate_size s2 = sz;
    s2.iters = 20;
    lm_estimate e2;
    CHECK_OK(lm_estimate_time(&s2, &rates, &e2, &err), &err);
    CHECK(close_to(e2.part_s[LM_EST_ITER], 1.0, 1e-9));
    /* A run that stopped early (tolerance) counts per step taken. */
    lm_estimate_rates r5 = {0};
    lm_recon_result half = r;
    half.iters_done = 5, half.time_cg_s = 0.25;
    CHECK_OK(lm_estimate_record(&r5, &sz, &half, &err), &err);
    CHECK_OK(lm_estimate_time(&sz, &r5, &e2, &err), &err);
    CHECK(close_to(e2.part_s[LM_EST_ITER], 0.5, 1e-9));
    /* A second, slower run: log-space average, the newest weighing 0.7. */
    lm_recon_result slow = r;
    slow.time_fhd_s = 0.4, slow.time_total_s = 1.3;
    CHECK_OK(lm_estimate_record(&rates, &sz, &slow, &err), &err);
    CHECK_OK(lm_estimate_time(&sz, &rates, &e, &err), &err);
    CHECK(close_to(e.part_s[LM_EST_FHD], exp(0.3 * log(0.1) + 0.7 * log(0.4)), 1e-9));
    CHECK(rates.v[0].runs[LM_EST_FHD] == 2);
    /* Q from the cache measures nothing about Q. */
    lm_recon_result cached = r;
    cached.q_from_cache = 1, cached.time_q_s = 0.001;
    CHECK_OK(lm_estimate_record(&rates, &sz, &cached, &err), &err);
    CHECK(rates.v[0].runs[LM_EST_Q] == 2);
    /* Another variant keeps its nominal speed. */
    lm_estimate_size sd = sz;
    sd.variant = "cpu-simd";
    CHECK_OK(lm_estimate_time(&sd, &rates, &e, &err), &err);
    CHECK(e.measured == 0 && close_to(e.total_s, e.nominal_s, 1e-12));
}

static void test_file(void)
{
    char dir[] = "/tmp/lm-estimate-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/rates.txt", dir);
    lm_error err = {0};
    lm_estimate_rates a = {0}, b;
    /* Missing: empty, no error. */
    CHECK_OK(lm_estimate_rates_load(path, &b, &err), &err);
    CHECK(b.n == 0);
    a.n = 2;
    snprintf(a.v[0].variant, sizeof a.v[0].variant, "cpu-nufft");
    a.v[0].ratio[LM_EST_Q] = 0.0123456, a.v[0].runs[LM_EST_Q] = 3;
    a.v[0].ratio[LM_EST_OTHER] = 40, a.v[0].runs[LM_EST_OTHER] = 1;
    snprintf(a.v[1].variant, sizeof a.v[1].variant, "cpu-simd");
    a.v[1].ratio[LM_EST_ITER] = 2.5, a.v[1].runs[LM_EST_ITER] = 7;
    CHECK_OK(lm_estimate_rates_save(path, &a, &err), &err);
    CHECK_OK(lm_estimate_rates_load(path, &b, &err), &err);
    CHECK(b.n == 2 && strcmp(b.v[1].variant, "cpu-simd") == 0 && b.v[1].runs[LM_EST_ITER] == 7);
    CHECK(close_to(b.v[0].ratio[LM_EST_Q], 0.0123456, 1e-6) && b.v[0].runs[LM_EST_OTHER] == 1);
    /* Damaged: an error naming the file and the line, and no rates. */
    FILE *f = fopen(path, "a");
    fprintf(f, "cpu-simd iter banana 2\n");
    fclose(f);
    CHECK(lm_estimate_rates_load(path, &b, &err) == LM_ERR_FORMAT);
    printf("damaged file: %s\n", err.msg);
    CHECK(strstr(err.msg, path) && strstr(err.msg, "line 5") && b.n == 0);
    lm_error_clear(&err);
    unlink(path);
    rmdir(dir);
}

/* A real run: afterwards the estimate for the same size is within 2x of the
 * time the run reported (the model's other parts keep their nominal ratios
 * only where the run did not measure them). */
static void test_real_run(void)
{
    lm_error err = {0};
    lm_geom g;
    lm_geom_init(&g, 32, 32, 1, 240);
    lm_traj *t = fm_spiral(32);
    lm_kdata *k = lm_kdata_new(t->m, 1, &err);
    for (int64_t j = 0; j < t->m; j++)
        k->d[j] = (lm_cfloat)(1.0 / (1 + t->k[3 * j] * t->k[3 * j] + t->k[3 * j + 1] * t->k[3 * j + 1]));
    lm_recon_opts o;
    lm_recon_opts_init(&o);
    o.variant = "cpu-nufft";
    o.iters = 20;
    o.tol = 0;
    o.use_cache = 0;
    o.threads = 2;
    lm_recon_result r = {0};
    CHECK_OK(lm_recon_run(&g, t, k, &o, &r, &err), &err);
    lm_estimate_size sz;
    lm_estimate_size_init(&sz, &g, t->m, 1, &o);
    lm_estimate_rates rates = {0};
    lm_estimate before, after;
    CHECK_OK(lm_estimate_time(&sz, &rates, &before, &err), &err);
    CHECK_OK(lm_estimate_record(&rates, &sz, &r, &err), &err);
    CHECK_OK(lm_estimate_time(&sz, &rates, &after, &err), &err);
    const double ratio = after.total_s / r.time_total_s;
    printf("real run %.4f s (Q %.4f, E^H d %.4f, CG %.4f): nominal estimate %.4f s (x%.2f), after recording %.4f s "
           "(x%.2f)\n", r.time_total_s, r.time_q_s, r.time_fhd_s, r.time_cg_s, before.total_s,
           before.total_s / r.time_total_s, after.total_s, ratio);
    CHECK_MSG(ratio > 0.5 && ratio < 2, "estimate %.4f s for a run of %.4f s", after.total_s, r.time_total_s);
    lm_recon_result_clear(&r);
    lm_kdata_free(k);
    lm_traj_free(t);
}

int main(void)
{
    test_model();
    test_correction();
    test_file();
    test_real_run();
    return lm_test_finish("estimate");
}
