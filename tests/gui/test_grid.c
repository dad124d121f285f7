/* Matrix and FOV of file data, and the estimate shown before a run: the
 * memory model against sizes computed here; the sidebar's estimate follows
 * the settings and the grid; data from files reload on another matrix (runs
 * of them stay comparable) or FOV (k rescaled: other data); absurd values
 * are refused in one line and the data stay. No
 * timed assertions (the time estimate is a model, checked as arithmetic). */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-estimate.h"
#include "larmor-window.h"
#include "lm_io.h"

static LarmorApplication *app;

static void test_model(void)
{
    LarmorReconParams p;
    larmor_recon_params_init(&p);
    p.method = LM_METHOD_CG;
    g_strlcpy(p.variant, "cpu-sp", sizeof p.variant);
    p.iters = 10;
    const int64_t n[3] = { 32, 32, 32 };
    const double N = 32768, M = 4447;
    LarmorEstimate e;
    larmor_estimate_compute(n, (int64_t)M, 1, &p, FALSE, NULL, &e);
    g_assert_cmpfloat(e.q, ==, 2 * 8 * N * 8);             /* Q and its FFT: 8N complex each */
    g_assert_cmpfloat(e.vectors, ==, 5 * N * 8);
    g_assert_cmpfloat(e.coils, ==, 0);
    g_assert_cmpfloat(e.kdata, ==, M * 8 + M * 12);
    g_assert_cmpfloat(e.total, ==, e.q + e.work + e.vectors + e.coils + e.kdata);
    /* The time is recon/'s model (lm_estimate.h) at the variant's nominal speed. */
    g_assert_true(e.time_ok);
    g_assert_cmpint(e.time.measured, ==, 0);
    double gpairs, gflops;
    g_assert_cmpstr(lm_estimate_nominal("cpu-sp", &gpairs, &gflops, NULL), ==, "cpu-sp");
    g_assert_cmpfloat(e.time.nominal_gpairs, ==, gpairs);
    g_assert_cmpfloat_with_epsilon(e.time.part_s[LM_EST_Q], M * 8 * N / (gpairs * 1e9), 1e-12);
    g_assert_cmpfloat_with_epsilon(e.time.part_s[LM_EST_FHD], M * N / (gpairs * 1e9), 1e-12);
    /* Eight coils: maps and coil images, k-space and F^H d eight times; a
     * measured speed (E^H d twice as fast as nominal) replaces the nominal one. */
    lm_estimate_rates rates = { .n = 1 };
    g_strlcpy(rates.v[0].variant, "cpu-sp", sizeof rates.v[0].variant);
    rates.v[0].ratio[LM_EST_FHD] = 0.5;
    rates.v[0].runs[LM_EST_FHD] = 1;
    LarmorEstimate e8;
    larmor_estimate_compute(n, (int64_t)M, 8, &p, FALSE, &rates, &e8);
    g_assert_cmpfloat(e8.coils, ==, 2 * 8 * N * 8);
    g_assert_cmpfloat(e8.kdata, ==, M * 8 * 8 + M * 12);
    g_assert_cmpint(e8.time.measured, ==, 1);
    g_assert_cmpfloat_with_epsilon(e8.time.part_s[LM_EST_FHD], 0.5 * 8 * M * N / (gpairs * 1e9), 1e-12);
    char *t = larmor_estimate_text(&e8, &p);
    g_assert_true(g_str_has_prefix(t, "Estimate: "));
    g_assert_nonnull(strstr(t, "measured here"));
    g_free(t);
    /* Gridding: no Q. */
    p.method = LM_METHOD_GRID_LINEAR;
    larmor_estimate_compute(n, (int64_t)M, 1, &p, FALSE, NULL, &e);
    g_assert_cmpfloat(e.q, ==, 0);
    g_assert_cmpfloat(e.time.part_s[LM_EST_Q], ==, 0);
}

/* The rates the window estimates with: this machine's, from the file its
 * runs write (lm_estimate_rates_load). */
static lm_estimate_rates *rates_now(void)
{
    static lm_estimate_rates r;
    lm_estimate_rates_load(NULL, &r, NULL);
    return &r;
}

static void test_grid(void)
{
    LarmorWindow *w = gui_test_open_window(GTK_APPLICATION(app), 1200, 800);
    larmor_window_set_confirm_close(w, FALSE);
    /* B32 as files. */
    char *dir = gui_test_tmp_dir("grid");
    char *tp = g_build_filename(dir, "traj", NULL), *kp = g_build_filename(dir, "kspace", NULL);
    LarmorDataset *b32 = larmor_window_get_dataset(w);
    lm_error err = { 0 };
    g_assert_cmpint(lm_cfl_write_traj(tp, larmor_dataset_get_traj(b32), &err), ==, LM_OK);
    g_assert_cmpint(lm_cfl_write_kdata(kp, larmor_dataset_get_kdata(b32), larmor_dataset_get_traj(b32)->readout, &err), ==,
                    LM_OK);
    char *tc = g_strconcat(tp, ".cfl", NULL), *kc = g_strconcat(kp, ".cfl", NULL);
    GFile *files[2] = { g_file_new_for_path(tc), g_file_new_for_path(kc) };
    larmor_window_open_files(w, files, 2);
    g_assert_true(gui_test_wait(gui_test_has_data, w, 60));
    LarmorDataset *ds = larmor_window_get_dataset(w);
    g_assert_true(ds != b32);
    const lm_geom g0 = *larmor_dataset_get_geom(ds);
    g_assert_cmpint(g0.n[0], ==, 32);
    double ext0[3];
    lm_traj_extent(larmor_dataset_get_traj(ds), ext0);

    /* The estimate: shown, following the settings. */
    LarmorReconPanel *panel = larmor_window_get_recon_panel(w);
    LarmorReconParams p;
    larmor_recon_params_init(&p);
    p.method = LM_METHOD_CG;
    g_strlcpy(p.variant, "cpu-sp", sizeof p.variant);
    p.iters = 7;
    larmor_recon_panel_set_params(panel, &p);
    const char *est = larmor_window_get_estimate_text(w);
    g_assert_nonnull(est);
    g_assert_nonnull(strstr(est, "7 iterations"));
    LarmorEstimate e;
    larmor_estimate_compute(g0.n, larmor_dataset_get_traj(ds)->m, 1, &p, FALSE, rates_now(), &e);
    char *want = larmor_estimate_text(&e, &p);
    g_assert_cmpstr(est, ==, want);
    g_free(want);
    p.iters = 20;
    larmor_recon_panel_set_params(panel, &p);
    g_assert_nonnull(strstr(larmor_window_get_estimate_text(w), "20 iterations"));

    /* A gridding run on 32^3, then the matrix 48^3 (same FOV): reloaded, the run still of these data. */
    LarmorReconParams gp = p;
    gp.method = LM_METHOD_GRID_LINEAR;
    GError *error = NULL;
    g_assert_true(larmor_window_reconstruct(w, &gp, &error));
    g_assert_true(gui_test_wait(gui_test_has_data, w, 120));
    LarmorRun *run = g_list_model_get_item(larmor_window_get_runs(w), 0);
    g_object_unref(run);
    larmor_recon_panel_set_params(panel, &p);
    const int64_t n48[3] = { 48, 48, 48 };
    g_assert_true(larmor_window_set_grid(w, n48, g0.fov_mm, &error));
    g_assert_no_error(error);
    g_assert_true(gui_test_wait(gui_test_has_data, w, 60));
    ds = larmor_window_get_dataset(w);
    g_assert_cmpint(larmor_dataset_get_geom(ds)->n[0], ==, 48);
    g_assert_cmpfloat(larmor_dataset_get_geom(ds)->fov_mm[0], ==, g0.fov_mm[0]);
    g_assert_true(larmor_run_get_current(run));
    larmor_estimate_compute(n48, larmor_dataset_get_traj(ds)->m, 1, &p, FALSE, rates_now(), &e);
    want = larmor_estimate_text(&e, &p);
    g_assert_cmpstr(larmor_window_get_estimate_text(w), ==, want);
    g_free(want);
    g_assert_true(strstr(larmor_dataset_get_key(ds), "48x48x48") != NULL);

    /* A coarse preview (8^3, below the trajectory's Nyquist matrix) is the user's call: it loads. */
    const int64_t n8[3] = { 8, 8, 8 };
    g_assert_true(larmor_window_set_grid(w, n8, g0.fov_mm, &error));
    g_assert_true(gui_test_wait(gui_test_has_data, w, 60));
    g_assert_cmpint(larmor_dataset_get_geom(larmor_window_get_dataset(w))->n[2], ==, 8);
    /* Absurd values are refused before loading, in one line; the data stay. */
    ds = larmor_window_get_dataset(w);
    const int64_t bad[3] = { 0, 48, 48 };
    g_assert_false(larmor_window_set_grid(w, bad, g0.fov_mm, &error));
    g_assert_nonnull(error);
    g_assert_null(strchr(error->message, '\n'));
    g_clear_error(&error);
    const double nofov[3] = { 0, 1, 1 };
    g_assert_false(larmor_window_set_grid(w, n48, nofov, &error));
    g_clear_error(&error);
    g_assert_true(larmor_window_get_dataset(w) == ds);
    g_assert_false(larmor_window_is_busy(w));

    /* Twice the FOV on 64^3: k rescaled to cycles per new FOV, other data. */
    const int64_t n64[3] = { 64, 64, 64 };
    const double fov2[3] = { 2 * g0.fov_mm[0], 2 * g0.fov_mm[1], 2 * g0.fov_mm[2] };
    g_assert_true(larmor_window_set_grid(w, n64, fov2, &error));
    g_assert_true(gui_test_wait(gui_test_has_data, w, 60));
    ds = larmor_window_get_dataset(w);
    g_assert_cmpfloat(larmor_dataset_get_geom(ds)->fov_mm[1], ==, fov2[1]);
    double ext[3];
    lm_traj_extent(larmor_dataset_get_traj(ds), ext);
    for (int a = 0; a < 3; a++)
        g_assert_cmpfloat_with_epsilon(ext[a], 2 * ext0[a], 1e-4 * ext0[a]);
    g_assert_false(larmor_run_get_current(run));

    /* Benchmark data have no such controls. */
    LarmorDatasetSpec spec = { .kind = LARMOR_SOURCE_PROBLEM };
    g_strlcpy(spec.problem, "B32", sizeof spec.problem);
    larmor_window_load(w, &spec);
    g_assert_true(gui_test_wait(gui_test_has_data, w, 60));
    g_assert_false(larmor_window_set_grid(w, n48, g0.fov_mm, &error));
    g_assert_nonnull(strstr(error->message, "files"));
    g_clear_error(&error);

    gtk_window_destroy(GTK_WINDOW(w));
    g_object_unref(files[0]);
    g_object_unref(files[1]);
    const char *names[] = { "traj.cfl", "traj.hdr", "kspace.cfl", "kspace.hdr" };
    for (int i = 0; i < 4; i++) {
        char *f = g_build_filename(dir, names[i], NULL);
        g_remove(f);
        g_free(f);
    }
    g_rmdir(dir);
    g_free(tc);
    g_free(kc);
    g_free(tp);
    g_free(kp);
    g_free(dir);
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = gui_test_app_new();
    g_test_add_func("/grid/estimate-model", test_model);
    g_test_add_func("/grid/matrix-fov", test_grid);
    return g_test_run();
}
