/* End to end: the application window reconstructs B32 with CG on the CPU
 * in the worker thread while the main loop keeps running; the comparison
 * is not blank and shows the PSNR that lm_metrics_compute gives (as the
 * CLI prints it); gridding is scale-matched; a small lambda sweep marks a
 * best lambda. Cancelling right after the start, or in the middle, ends the
 * run cancelled and leaves the window usable. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-recon-panel.h"
#include "larmor-recon-task.h"
#include "larmor-sweep-view.h"
#include "larmor-window.h"
#include "lm_io.h"
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

static gboolean has_truth(gpointer w)
{
    return larmor_window_get_dataset(w) && larmor_dataset_get_truth(larmor_window_get_dataset(w)) &&
           g_strcmp0(larmor_volume_get_name(larmor_dataset_get_truth(larmor_window_get_dataset(w))), "Truth") == 0 &&
           larmor_window_get_message(w);
}

static gboolean message_changed(gpointer data)
{
    gpointer *d = data;
    const char *m = larmor_window_get_message(d[0]);
    return m && g_strcmp0(m, d[1]) != 0;
}

/* Files as a user has them: a BART pair (given in either order, as a drop
 * would) and a NIfTI truth. */
static void test_open_files(void)
{
    char *dir = gui_test_tmp_dir("gui");
    char *tp = g_build_filename(dir, "traj.cfl", NULL), *kp = g_build_filename(dir, "ksp.hdr", NULL);
    char *np = g_build_filename(dir, "truth.nii.gz", NULL);
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *v = NULL;
    lm_error err = { 0 };
    g_assert_cmpint(lm_problem_make(lm_problem_find("B32", NULL), &g, &t, &k, &v, &err), ==, LM_OK);
    g_assert_cmpint(lm_cfl_write_traj(tp, t, &err), ==, LM_OK);
    g_assert_cmpint(lm_cfl_write_kdata(kp, k, t->readout, &err), ==, LM_OK);
    g_assert_cmpint(lm_nifti_write(np, v, 0, &err), ==, LM_OK);

    LarmorWindow *w = gui_test_open_window(GTK_APPLICATION(app), 1400, 900);
    GFile *f[2] = { g_file_new_for_path(kp), g_file_new_for_path(tp) };
    larmor_window_open_files(w, f, 2);
    g_assert_true(gui_test_wait(gui_test_idle, w, 60));
    LarmorDataset *ds = larmor_window_get_dataset(w);
    char *folder = g_path_get_basename(dir); /* "traj.cfl" names no data: its folder does */
    g_assert_cmpstr(larmor_dataset_get_name(ds), ==, folder);
    g_free(folder);
    g_assert_cmpint(larmor_dataset_get_geom(ds)->n[0], ==, 32);
    g_assert_cmpint(larmor_dataset_get_traj(ds)->m, ==, t->m);
    /* truth.nii.gz beside the pair is found with it, as larmor-cli finds it */
    g_assert_nonnull(larmor_dataset_get_truth(ds));

    GFile *nf = g_file_new_for_path(np);
    larmor_window_open_files(w, &nf, 1);
    g_assert_true(gui_test_wait(has_truth, w, 60));
    LarmorReconParams p;
    gui_test_cpu_params(&p, "cpu-simd", 5);
    GError *error = NULL;
    g_assert_true(larmor_window_reconstruct(w, &p, &error));
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    LarmorRun *run = gui_test_run_at(w, 0);
    g_assert_true(larmor_run_has_metrics(run));
    lm_metrics m;
    g_assert_cmpint(lm_metrics_compute(larmor_volume_get_data(larmor_run_get_image(run))->data, v->data,
                                       lm_volume_count(v), NULL, 0, &m, &err), ==, LM_OK);
    g_assert_cmpfloat(larmor_run_get_psnr(run), ==, m.psnr_db);

    /* The truth as anatomical reference: the regulariser runs with it. */
    char *tn = g_strdup(larmor_window_get_message(w));
    larmor_window_open_reference(w, np);
    g_assert_true(gui_test_wait(message_changed, (gpointer[]){ w, tn }, 30));
    g_free(tn);
    g_assert_nonnull(strstr(larmor_window_get_message(w), "Reference"));
    p.reg = LM_REG_ANATOMICAL;
    p.lambda = 0.05;
    gui_test_reconstruct(w, &p);
    g_assert_true(larmor_run_has_metrics(gui_test_run_at(w, 1)));

    /* Exports: NIfTI magnitude and complex, PNG of the view, CSV. */
    char *out = g_build_filename(dir, "out.nii.gz", NULL), *outc = g_build_filename(dir, "outc.nii", NULL);
    char *png = g_build_filename(dir, "view.png", NULL), *csv = g_build_filename(dir, "runs.csv", NULL);
    const lm_volume *shown = larmor_volume_get_data(larmor_ortho_view_get_volume(larmor_window_get_ortho_view(w)));
    for (int c = 0; c < 2; c++) {
        char *before = g_strdup(larmor_window_get_message(w));
        larmor_window_export_nifti(w, c ? outc : out, c);
        g_assert_true(gui_test_wait(message_changed, (gpointer[]){ w, before }, 30));
        g_free(before);
        g_assert_true(g_str_has_prefix(larmor_window_get_message(w), "Wrote"));
        lm_volume *back = NULL;
        g_assert_cmpint(lm_nifti_read(c ? outc : out, &back, &err), ==, LM_OK);
        g_assert_cmpint(back->dims[0], ==, 32);
        for (int64_t i = 0; i < lm_volume_count(back); i += 97) {
            lm_cfloat want = c ? shown->data[i] : cabsf(shown->data[i]);
            g_assert_cmpfloat_with_epsilon(cabsf(back->data[i] - want), 0, 1e-5);
        }
        lm_volume_free(back);
    }
    gtk_test_widget_wait_for_draw(GTK_WIDGET(w));
    g_assert_true(larmor_window_export_png(w, png, &error));
    g_assert_no_error(error);
    GdkTexture *tex = gdk_texture_new_from_filename(png, &error);
    g_assert_no_error(error);
    g_assert_cmpint(gdk_texture_get_width(tex), >, 200);
    g_object_unref(tex);
    g_assert_true(larmor_window_export_csv(w, csv, &error));
    char *text = NULL;
    g_assert_true(g_file_get_contents(csv, &text, NULL, NULL));
    char **lines = g_strsplit(text, "\n", -1);
    g_assert_cmpint(g_strv_length(lines), ==, 4); /* header, two runs, final newline */
    g_strfreev(lines);
    g_free(text);

    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
    g_object_unref(f[0]);
    g_object_unref(f[1]);
    g_object_unref(nf);
    const char *outs[] = { out, outc, png, csv };
    for (guint i = 0; i < G_N_ELEMENTS(outs); i++)
        g_remove(outs[i]);
    g_free(out);
    g_free(outc);
    g_free(png);
    g_free(csv);
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_volume_free(v);
    const char *names[] = { "traj.cfl", "traj.hdr", "ksp.cfl", "ksp.hdr", "truth.nii.gz" };
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        char *pth = g_build_filename(dir, names[i], NULL);
        g_remove(pth);
        g_free(pth);
    }
    g_rmdir(dir);
    g_free(dir);
    g_free(tp);
    g_free(kp);
    g_free(np);
}

/* Preferences: the settings of the last run come back in a new window. */
static void test_preferences(void)
{
    char *dir = gui_test_tmp_dir("prefs");
    char *path = g_build_filename(dir, "settings.ini", NULL);
    LarmorSettings *settings = larmor_settings_new(path);
    LarmorWindow *w = larmor_window_new(GTK_APPLICATION(app), settings, "B32");
    gui_test_show(GTK_WINDOW(w));
    g_assert_true(gui_test_wait(gui_test_has_data, w, 120));
    LarmorReconParams p, q;
    gui_test_cpu_params(&p, "cpu-simd", 7);
    p.lambda = 0.05;
    p.reg = LM_REG_GRADIENT;
    GError *error = NULL;
    g_assert_true(larmor_window_reconstruct(w, &p, &error));
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    larmor_window_set_confirm_close(w, FALSE); /* the unsaved-runs question: test_recent.c */
    gtk_window_close(GTK_WINDOW(w));
    gui_test_spin(0.1);
    g_object_unref(settings);
    g_assert_true(g_file_test(path, G_FILE_TEST_EXISTS));

    settings = larmor_settings_new(path);
    w = larmor_window_new(GTK_APPLICATION(app), settings, NULL);
    gui_test_show(GTK_WINDOW(w));
    g_assert_true(larmor_window_get_params(w, &q));
    g_assert_cmpint(q.iters, ==, 7);
    g_assert_cmpfloat_with_epsilon(q.lambda, 0.05, 1e-12);
    g_assert_cmpint(q.reg, ==, LM_REG_GRADIENT);
    g_assert_cmpstr(q.variant, ==, p.variant);
    g_assert_true(gui_test_wait(gui_test_has_data, w, 120));
    g_assert_cmpstr(larmor_dataset_get_name(larmor_window_get_dataset(w)), ==, "B32");
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
    g_object_unref(settings);
    g_remove(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
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

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = gui_test_app_new();
    g_test_add_func("/recon/reconstruct", test_reconstruct);
    g_test_add_func("/recon/cancel", test_cancel);
    g_test_add_func("/recon/progress-main-thread", test_progress_main_thread);
    g_test_add_func("/recon/errors", test_errors_shown);
    g_test_add_func("/recon/open-files", test_open_files);
    g_test_add_func("/recon/preferences", test_preferences);
    return gui_test_app_run(app);
}
