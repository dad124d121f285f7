/* Reconstruction runs in the window: end to end on B32 (CG, gridding, a
 * lambda sweep and its best run), cancel, progress delivered on the main
 * thread, errors shown, "Recompute Q" and where Q came from, FFT runs named,
 * Gpairs/s for every kernel and GFLOPS only for the direct sum, the L-curve
 * drawn without a stray line, and undo of a deleted run. No timed
 * assertions. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-colormap.h"
#include "larmor-compare-view.h"
#include "larmor-help.h"
#include "larmor-ortho-view.h"
#include "larmor-plot.h"
#include "larmor-recon-panel.h"
#include "larmor-recon-task.h"
#include "larmor-run.h"
#include "larmor-runs-view.h"
#include "larmor-settings.h"
#include "larmor-slice-view.h"
#include "larmor-sweep-view.h"
#include "larmor-window.h"
#include "lm_io.h"
#include "lm_kernels.h"
#include "lm_metrics.h"
#include "lm_trajgen.h"

static LarmorApplication *app;

static int ticks;

static gboolean count_tick(gpointer data)
{
    ticks++;
    return G_SOURCE_CONTINUE;
}

static void test_reconstruct(void)
{
    LarmorWindow *w = gui_test_open_window(GTK_APPLICATION(app), 1400, 900);
    LarmorDataset *ds = larmor_window_get_dataset(w);
    g_assert_cmpstr(larmor_dataset_get_name(ds), ==, "B32");
    LarmorVolume *truth = larmor_dataset_get_truth(ds);
    g_assert_nonnull(truth);

    LarmorReconParams p;
    gui_test_cpu_params(&p, "cpu-simd", 10);
    GError *error = NULL;
    ticks = 0;
    guint tick = g_timeout_add(5, count_tick, NULL);
    g_assert_true(larmor_window_reconstruct(w, &p, &error));
    g_assert_no_error(error);
    g_assert_true(larmor_window_is_busy(w));
    /* A second start while one runs is refused with a message, not a crash. */
    g_assert_false(larmor_window_reconstruct(w, &p, &error));
    g_assert_nonnull(error);
    g_clear_error(&error);
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    g_source_remove(tick);
    g_assert_cmpstr(larmor_window_get_last_status(w), ==, "done");
    /* The main loop ran while the worker computed (the window stayed live). */
    g_assert_cmpint(ticks, >, 0);

    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(w)), ==, 1);
    LarmorRun *run = gui_test_run_at(w, 0);
    g_assert_cmpint(larmor_run_get_iters_done(run), <=, 10);
    LarmorVolume *img = larmor_run_get_image(run);
    g_assert_nonnull(img);
    g_assert_true(larmor_run_get_compare(run));

    /* The same numbers as the library (and so as larmor-cli recon). */
    lm_metrics m;
    lm_error err = { 0 };
    const lm_volume *iv = larmor_volume_get_data(img), *tv = larmor_volume_get_data(truth);
    g_assert_cmpint(lm_metrics_compute(iv->data, tv->data, lm_volume_count(tv), NULL, 0, &m, &err), ==, LM_OK);
    g_assert_cmpfloat(larmor_run_get_psnr(run), ==, m.psnr_db);
    g_assert_cmpfloat(larmor_run_get_percent_error(run), ==, m.percent_error);
    g_assert_true(isfinite(m.psnr_db) && m.psnr_db > 10);

    /* The compare page shows it. */
    larmor_window_set_page(w, "compare");
    LarmorCompareView *cv = larmor_window_get_compare_view(w);
    gtk_test_widget_wait_for_draw(GTK_WIDGET(w));
    gui_test_spin(0.3);
    char want[32];
    g_snprintf(want, sizeof want, "%.2f", m.psnr_db);
    g_assert_cmpstr(larmor_compare_view_get_metric_text(cv, 0, "psnr"), ==, want);
    g_snprintf(want, sizeof want, "%.2f", m.percent_error);
    g_assert_cmpstr(larmor_compare_view_get_metric_text(cv, 0, "error"), ==, want);
    printf("# B32 CG %s, %d iterations: PSNR %.2f dB, error %.2f %%\n", p.variant,
           larmor_run_get_iters_done(run), m.psnr_db, m.percent_error);

    /* Not blank: the run's panel (after the truth's) has structure. */
    LarmorSliceView *panel = larmor_compare_view_get_panel(cv, 1);
    g_assert_nonnull(panel);
    g_assert_true(larmor_slice_view_get_volume(panel) == img);
    GuiTestImage shot;
    g_assert_true(gui_test_capture(GTK_WIDGET(panel), &shot));
    int lo = 255, hi = 0, bright = 0;
    for (int i = 0; i < shot.w * shot.h; i++) {
        int g = (shot.px[i] >> 8) & 0xff;
        lo = MIN(lo, g);
        hi = MAX(hi, g);
        bright += g > 60;
    }
    g_assert_cmpint(hi - lo, >, 100);
    g_assert_cmpint(bright, >, shot.w * shot.h / 50);
    gui_test_image_clear(&shot);

    /* Gridding: metrics after least-squares scale matching (docs/conventions.md section 3). */
    LarmorReconParams g = p;
    g.method = LM_METHOD_GRID_KB;
    g_assert_true(larmor_window_reconstruct(w, &g, &error));
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    g_assert_cmpstr(larmor_window_get_last_status(w), ==, "done");
    LarmorRun *grid = gui_test_run_at(w, 1);
    iv = larmor_volume_get_data(larmor_run_get_image(grid));
    g_assert_cmpint(lm_metrics_compute(iv->data, tv->data, lm_volume_count(tv), NULL, 1, &m, &err), ==, LM_OK);
    g_assert_cmpfloat(larmor_run_get_psnr(grid), ==, m.psnr_db);
    g_assert_cmpstr(larmor_compare_view_get_metric_text(cv, 1, "run"), ==, "#2 Gridding (Kaiser–Bessel)");

    /* A three-point sweep: the best lambda is marked and joins the runs. */
    LarmorReconParams s = p;
    s.iters = 4;
    g_assert_true(larmor_window_sweep(w, &s, 1e-3, 1e-1, 3, &error));
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    g_assert_cmpstr(larmor_window_get_last_status(w), ==, "done");
    g_assert_cmpstr(larmor_window_get_page(w), ==, "sweep");
    LarmorRun *best = larmor_sweep_view_get_best(LARMOR_SWEEP_VIEW(larmor_window_get_sweep_view(w)));
    g_assert_nonnull(best);
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(w)), ==, 3);
    g_assert_true(gui_test_run_at(w, 2) == best);
    g_assert_nonnull(larmor_run_get_image(best));
    /* The L-curve numbers were computed too (single channel, CG). */
    g_assert_true(isfinite(larmor_run_get_data_norm(best)) && larmor_run_get_data_norm(best) > 0);
    g_assert_true(isfinite(larmor_run_get_reg_norm(best)) && larmor_run_get_reg_norm(best) > 0);

    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
}

static void test_cancel(void)
{
    LarmorWindow *w = gui_test_open_window(GTK_APPLICATION(app), 1400, 900);
    /* Iterations enough for minutes: only a cancel ends these runs. */
    LarmorReconParams p;
    gui_test_cpu_params(&p, "cpu-simd", 100000);
    GError *error = NULL;

    /* Cancel right after the start. */
    g_assert_true(larmor_window_reconstruct(w, &p, &error));
    larmor_window_cancel(w);
    g_assert_true(gui_test_wait(gui_test_idle, w, 120));
    g_assert_cmpstr(larmor_window_get_last_status(w), ==, "cancelled");
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(w)), ==, 0);
    g_assert_null(larmor_window_get_message(w)); /* a cancel is not an error */

    /* Cancel in the middle of CG: it ends cancelled (time printed only). */
    g_assert_true(larmor_window_reconstruct(w, &p, &error));
    gui_test_spin(1.0);
    gint64 t0 = g_get_monotonic_time();
    larmor_window_cancel(w);
    g_assert_true(gui_test_wait(gui_test_idle, w, 120));
    double stop_ms = (g_get_monotonic_time() - t0) / 1000.0;
    printf("# cancel mid-run: stopped %.1f ms after the request\n", stop_ms);
    g_assert_cmpstr(larmor_window_get_last_status(w), ==, "cancelled");
    /* The stop time is information only: no assertion on a wall time. */

    /* The window is still usable: a short run completes. */
    p.iters = 3;
    gui_test_reconstruct(w, &p);
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(w)), ==, 1);

    /* Closing while a run is going cancels it and destroys the window once
     * the worker is done. */
    p.iters = 100000;
    g_assert_true(larmor_window_reconstruct(w, &p, &error));
    gui_test_spin(0.3);
    gui_test_close_window(w);

    /* Destroyed outright while running: the late callbacks find it gone. */
    w = gui_test_open_window(GTK_APPLICATION(app), 1400, 900);
    g_assert_true(larmor_window_reconstruct(w, &p, &error));
    gui_test_spin(0.2);
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(1.0);
}

static void test_errors_shown(void)
{
    LarmorWindow *w = gui_test_open_window(GTK_APPLICATION(app), 1400, 900);
    /* An unknown variant is refused with the reason in the message bar. */
    GError *error = NULL;
    LarmorReconParams p;
    gui_test_cpu_params(&p, "cpu-simd", 3);
    g_strlcpy(p.variant, "no-such-variant", sizeof p.variant);
    g_assert_false(larmor_window_reconstruct(w, &p, &error));
    g_assert_nonnull(error);
    g_clear_error(&error);
    /* The phantom brings its anatomical reference (same edges, another
     * contrast); a 2D phantom has none, and the 3D one's leaves with it. */
    g_assert_nonnull(larmor_dataset_get_reference(larmor_window_get_dataset(w)));
    LarmorDatasetSpec flat = { .kind = LARMOR_SOURCE_PHANTOM, .matrix = 32, .traj_kind = LM_TRAJ_RADIAL2D, .seed = 1 };
    g_strlcpy(flat.phantom, "shepp-logan-2d", sizeof flat.phantom);
    larmor_window_load(w, &flat);
    g_assert_true(gui_test_wait(gui_test_idle, w, 30));
    g_assert_null(larmor_dataset_get_reference(larmor_window_get_dataset(w)));
    /* Anatomical regularisation without a reference: refused. */
    gui_test_cpu_params(&p, "cpu-simd", 3);
    p.reg = LM_REG_ANATOMICAL;
    g_assert_false(larmor_window_reconstruct(w, &p, &error));
    g_assert_nonnull(strstr(error->message, "reference"));
    g_clear_error(&error);
    /* A missing file: the library's one-line error is shown, data kept. */
    char *kept = g_strdup(larmor_dataset_get_name(larmor_window_get_dataset(w)));
    GFile *f[2] = { g_file_new_for_path("/nonexistent/traj.cfl"), g_file_new_for_path("/nonexistent/ksp.cfl") };
    larmor_window_open_files(w, f, 2);
    g_assert_true(gui_test_wait(gui_test_idle, w, 30));
    g_assert_nonnull(larmor_window_get_message(w));
    g_assert_nonnull(strstr(larmor_window_get_message(w), "/nonexistent/"));
    g_assert_cmpstr(larmor_dataset_get_name(larmor_window_get_dataset(w)), ==, kept);
    g_free(kept);
    g_object_unref(f[0]);
    g_object_unref(f[1]);
    /* The shortcuts window comes from the resources (gtk/help-overlay.ui). */
    GtkShortcutsWindow *help = gtk_application_window_get_help_overlay(GTK_APPLICATION_WINDOW(w));
    g_assert_nonnull(help);
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.show-help-overlay", NULL));
    gui_test_spin(0.2);
    g_assert_true(gtk_widget_get_visible(GTK_WIDGET(help)));
    gtk_window_close(GTK_WINDOW(help));
    /* Actions switch pages (Alt+1..4). */
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.page", "s", "runs"));
    g_assert_cmpstr(larmor_window_get_page(w), ==, "runs");
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
}

/* Progress reaches the handlers in the main thread only, also while the main
 * thread is not iterating its context (a test's g_usleep between
 * g_main_context_iteration calls, any blocking wait): then
 * g_main_context_invoke_full let the worker acquire the default context and
 * run the handlers, so GTK, in the worker thread (random heap corruption,
 * criticals from GDK). */
typedef struct {
    GThread *main;
    int delivered, off_thread;
    gboolean done;
} ProgressProbe;

static void probe_progress(LarmorReconTask *task, const LarmorProgressInfo *info, ProgressProbe *pr)
{
    if (g_thread_self() != pr->main)
        g_atomic_int_inc(&pr->off_thread);
    else
        pr->delivered++;
}

static void probe_done(GObject *source, GAsyncResult *result, gpointer data)
{
    ProgressProbe *pr = data;
    GError *error = NULL;
    GPtrArray *runs = larmor_recon_task_run_finish(LARMOR_RECON_TASK(source), result, &error);
    g_assert_null(runs);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_error_free(error);
    pr->done = TRUE;
}

static gboolean probe_delivered(gpointer data)
{
    return ((ProgressProbe *)data)->delivered > 0;
}

static gboolean probe_finished(gpointer data)
{
    return ((ProgressProbe *)data)->done;
}

static void test_progress_main_thread(void)
{
    LarmorWindow *w = gui_test_open_window(GTK_APPLICATION(app), 1400, 900);
    LarmorReconParams p;
    gui_test_cpu_params(&p, "cpu-simd", 100000);
    ProgressProbe pr = { g_thread_self(), 0, 0, FALSE };
    LarmorReconTask *task = larmor_recon_task_new(larmor_window_get_dataset(w), NULL, &p, NULL, 0);
    g_signal_connect(task, "progress", G_CALLBACK(probe_progress), &pr);
    GCancellable *cancel = g_cancellable_new();
    larmor_recon_task_run_async(task, cancel, probe_done, &pr);
    /* The worker reports many times a second; the context stays unowned. */
    g_usleep(G_USEC_PER_SEC);
    g_assert_cmpint(g_atomic_int_get(&pr.off_thread), ==, 0);
    g_assert_cmpint(pr.delivered, ==, 0);
    g_assert_true(gui_test_wait(probe_delivered, &pr, 60));
    g_cancellable_cancel(cancel);
    g_assert_true(gui_test_wait(probe_finished, &pr, 60));
    g_assert_cmpint(g_atomic_int_get(&pr.off_thread), ==, 0);
    g_object_unref(cancel);
    g_object_unref(task);
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
}

/* "Recompute Q" bypasses the cache for one run; where Q came from
 * is shown; FFT runs have a name; Gpairs/s for every kernel, GFLOPS only for
 * the direct sum. */
static void test_q_cache_and_figures(void)
{
    LarmorWindow *w = gui_test_open_window(GTK_APPLICATION(app), 1400, 900);
    LarmorReconPanel *panel = larmor_window_get_recon_panel(w);
    LarmorReconParams p, q;
    gui_test_cpu_params(&p, "cpu-simd", 2);
    gui_test_reconstruct(w, &p); /* Q is in the cache after this one, if not before */

    /* Ticked in the panel: the next run computes Q, then the box clears. */
    larmor_recon_panel_set_params(panel, &p);
    g_assert_true(larmor_recon_panel_get_params(panel, &q, NULL));
    g_assert_false(q.recompute_q);
    q.recompute_q = TRUE;
    larmor_recon_panel_set_params(panel, &q);
    GError *error = NULL;
    g_assert_true(larmor_window_reconstruct(w, NULL, &error));
    g_assert_no_error(error);
    g_assert_true(larmor_recon_panel_get_params(panel, &q, NULL));
    g_assert_false(q.recompute_q);
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    LarmorRun *computed = gui_test_run_at(w, 1);
    g_assert_false(larmor_run_get_q_from_cache(computed));
    char *t = larmor_runs_cell_text(computed, "Q from");
    g_assert_cmpstr(t, ==, "computed");
    g_free(t);
    /* The next run takes the cache again. */
    gui_test_reconstruct(w, &p);
    LarmorRun *cached = gui_test_run_at(w, 2);
    g_assert_true(larmor_run_get_q_from_cache(cached));
    t = larmor_runs_cell_text(cached, "Q from");
    g_assert_cmpstr(t, ==, "cache");
    g_free(t);

    /* Throughput: the direct sum has both figures, explained. */
    g_assert_true(isfinite(larmor_run_get_gpairs(cached)) && larmor_run_get_gpairs(cached) > 0);
    g_assert_true(isfinite(larmor_run_get_gflops(cached)));
    g_assert_nonnull(strstr(larmor_runs_column_tooltip("Gpairs/s"), "pairs per second"));
    g_assert_nonnull(strstr(larmor_runs_column_tooltip("GFLOPS"), "direct-sum"));
    /* A NUFFT kernel: pairs per second, no direct-sum GFLOPS. */
    if (larmor_variant_is_available("cpu-nufft", NULL)) {
        LarmorReconParams n = p;
        g_strlcpy(n.variant, "cpu-nufft", sizeof n.variant);
        gui_test_reconstruct(w, &n);
        LarmorRun *nu = gui_test_run_at(w, 3);
        g_assert_true(isfinite(larmor_run_get_gpairs(nu)) && larmor_run_get_gpairs(nu) > 0);
        g_assert_true(isnan(larmor_run_get_gflops(nu)));
        t = larmor_runs_cell_text(nu, "GFLOPS");
        g_assert_cmpstr(t, ==, "—");
        g_free(t);
    } else
        printf("# cpu-nufft unavailable here: NUFFT figures not checked\n");
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);

    /* FFT runs: named, never "?". */
    LarmorReconParams f;
    larmor_recon_params_init(&f);
    f.method = LM_METHOD_FFT;
    lm_recon_result res;
    memset(&res, 0, sizeof res);
    LarmorRun *r = larmor_run_new(&f, "cart", &res);
    larmor_run_set_index(r, 8);
    g_assert_cmpstr(larmor_run_get_label(r), ==, "#8 FFT");
    t = larmor_runs_cell_text(r, "Method");
    g_assert_cmpstr(t, ==, "FFT");
    g_free(t);
    g_object_unref(r);
}

/* The L-curve: point labels, then the corner marker; nothing joins the
 * last label to the marker. Highlight pixels (yellow) lie on its ring only. */
static gboolean is_highlight(guint32 p)
{
    int r = (p >> 16) & 0xff, g = (p >> 8) & 0xff, b = p & 0xff;
    return r > 200 && g > 150 && g < 240 && b < 120 && r - b > 120;
}

static void test_plot_no_stray_line(void)
{
    GtkWidget *plot = larmor_plot_new();
    GtkWidget *win = gtk_window_new();
    gtk_window_set_default_size(GTK_WINDOW(win), 600, 400);
    gtk_window_set_decorated(GTK_WINDOW(win), FALSE);
    gtk_window_set_child(GTK_WINDOW(win), plot);
    const double x[5] = { 1, 1.1, 1.3, 3, 9 }, y[5] = { 90, 20, 4, 3, 2.5 };
    const char *labels[5] = { "1e-4", "1e-3", "0.01", "0.1", "1" };
    larmor_plot_set_axes(LARMOR_PLOT(plot), "‖Fρ − d‖", TRUE, "‖Wρ‖", TRUE);
    larmor_plot_add_series(LARMOR_PLOT(plot), "", x, y, 5, LARMOR_PLOT_LINES | LARMOR_PLOT_MARKERS, 0);
    larmor_plot_set_point_labels(LARMOR_PLOT(plot), labels, 5);
    larmor_plot_set_highlight(LARMOR_PLOT(plot), x[2], y[2], NULL);
    gui_test_show(GTK_WINDOW(win));
    GuiTestImage img;
    g_assert_true(gui_test_capture(plot, &img));
    /* The marker's centre: the highlighted pixels' bounding box centre
     * within the ring is unknown to the test, so find the ring as the
     * densest highlight area, then count highlight pixels far from it. */
    int n = 0;
    double sx = 0, sy = 0;
    for (int yy = 0; yy < img.h; yy++)
        for (int xx = 0; xx < img.w; xx++)
            if (is_highlight(img.px[(size_t)yy * img.w + xx] & 0xffffff)) {
                n++;
                sx += xx;
                sy += yy;
            }
    g_assert_cmpint(n, >, 20); /* the ring is drawn */
    /* The ring is symmetric about its centre: with nothing else yellow the
     * mean is that centre, and every highlight pixel is within its radius. */
    double cx = sx / n, cy = sy / n;
    int far = 0;
    for (int yy = 0; yy < img.h; yy++)
        for (int xx = 0; xx < img.w; xx++)
            if (is_highlight(img.px[(size_t)yy * img.w + xx] & 0xffffff) && hypot(xx - cx, yy - cy) > 12)
                far++;
    printf("# L-curve marker: %d highlight pixels, %d away from the ring\n", n, far);
    g_assert_cmpint(far, ==, 0);
    gui_test_image_clear(&img);
    gtk_window_destroy(GTK_WINDOW(win));
}

static void reconstruct(LarmorWindow *w, int iters)
{
    LarmorReconParams p;
    larmor_recon_params_init(&p);
    p.method = LM_METHOD_CG;
    p.iters = iters;
    gui_test_reconstruct(w, &p);
}

static gboolean model_has(GListModel *m, gpointer item, guint *pos)
{
    for (guint i = 0; i < g_list_model_get_n_items(m); i++) {
        gpointer it = g_list_model_get_item(m, i);
        g_object_unref(it);
        if (it == item) {
            *pos = i;
            return TRUE;
        }
    }
    return FALSE;
}

static void test_undo_delete(void)
{
    LarmorWindow *w = larmor_window_new(GTK_APPLICATION(app), NULL, "B32");
    gui_test_show(GTK_WINDOW(w));
    g_assert_true(gui_test_wait(gui_test_has_data, w, 120));
    reconstruct(w, 1);
    reconstruct(w, 2);
    GListModel *runs = larmor_window_get_runs(w);
    g_assert_cmpuint(g_list_model_get_n_items(runs), ==, 2);
    LarmorRun *first = g_list_model_get_item(runs, 0); /* ours: kept alive for the checks */
    LarmorVolume *img = larmor_run_get_image(first);
    g_assert_nonnull(img);
    double psnr = larmor_run_get_psnr(first), err = larmor_run_get_percent_error(first);
    int index = larmor_run_get_index(first);
    g_assert_true(isfinite(psnr));

    /* Nothing to undo yet. */
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.undo", NULL));
    g_assert_cmpuint(g_list_model_get_n_items(runs), ==, 2);
    /* Select the first run on the Runs page, then Delete's action. */
    larmor_window_set_page(w, "runs");
    g_assert_true(larmor_window_select_run(w, first));
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.remove-run", NULL));
    g_assert_cmpuint(g_list_model_get_n_items(runs), ==, 1);
    guint pos = G_MAXUINT;
    g_assert_false(model_has(runs, first, &pos));
    g_assert_nonnull(strstr(larmor_window_get_message(w), "deleted"));
    g_assert_true(larmor_window_get_message_has_undo(w));

    /* Ctrl+Z's action: the same object, at index 0, same image and metrics. */
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.undo", NULL));
    g_assert_cmpuint(g_list_model_get_n_items(runs), ==, 2);
    g_assert_true(model_has(runs, first, &pos));
    g_assert_cmpuint(pos, ==, 0);
    g_assert_true(larmor_run_get_image(first) == img);
    g_assert_cmpfloat(larmor_run_get_psnr(first), ==, psnr);
    g_assert_cmpfloat(larmor_run_get_percent_error(first), ==, err);
    g_assert_cmpint(larmor_run_get_index(first), ==, index);
    g_assert_false(larmor_window_get_message_has_undo(w));
    /* Its image is offered in the viewer again. */
    GListModel *vols = larmor_window_get_volumes(w);
    g_assert_true(model_has(vols, img, &pos));
    /* Once only: a second undo changes nothing. */
    gtk_widget_activate_action(GTK_WIDGET(w), "win.undo", NULL);
    g_assert_cmpuint(g_list_model_get_n_items(runs), ==, 2);
    g_object_unref(first);
    gui_test_close_window(w);
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = gui_test_app_new();
    g_test_add_func("/runs/reconstruct", test_reconstruct);
    g_test_add_func("/runs/cancel", test_cancel);
    g_test_add_func("/runs/progress-main-thread", test_progress_main_thread);
    g_test_add_func("/runs/errors", test_errors_shown);
    g_test_add_func("/runs/q-cache-and-figures", test_q_cache_and_figures);
    g_test_add_func("/runs/plot-no-stray-line", test_plot_no_stray_line);
    g_test_add_func("/runs/undo-delete", test_undo_delete);
    return gui_test_app_run(app);
}
