/* The defects of the hands-on review, one test each (each fails on the code
 * before its fix): runs of other data not offered for comparison and
 * metrics recomputed or marked stale when the truth changes; "Recompute Q"
 * and where Q came from; every control reachable at 1024 x 600; no stray
 * line in the L-curve; FFT runs named; Gpairs/s for every kernel and
 * GFLOPS only for the direct sum; 0-based slice labels; window/level per
 * image; every setting of the panel kept; files opened through the
 * application's open path. No timed assertions. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-colormap.h"
#include "larmor-plot.h"
#include "larmor-recon-panel.h"
#include "larmor-runs-view.h"
#include "larmor-slice-view.h"
#include "larmor-window.h"
#include "lm_io.h"
#include "lm_kernels.h"
#include "lm_metrics.h"
#include "lm_trajgen.h"

static LarmorApplication *app;

static void load_spec(LarmorWindow *w, const LarmorDatasetSpec *spec)
{
    larmor_window_load(w, spec);
    g_assert_true(gui_test_wait(gui_test_idle, w, 120));
    g_assert_nonnull(larmor_window_get_dataset(w));
}

static void check_metrics(LarmorRun *run, LarmorVolume *truth)
{
    const lm_volume *iv = larmor_volume_get_data(larmor_run_get_image(run)), *tv = larmor_volume_get_data(truth);
    lm_metrics m;
    lm_error err = { 0 };
    g_assert_cmpint(lm_metrics_compute(iv->data, tv->data, lm_volume_count(tv), NULL,
                                       larmor_run_get_params(run)->method != LM_METHOD_CG, &m, &err), ==, LM_OK);
    g_assert_cmpfloat(larmor_run_get_percent_error(run), ==, m.percent_error);
    g_assert_cmpfloat(larmor_run_get_psnr(run), ==, m.psnr_db);
    g_assert_cmpuint(larmor_run_get_metrics_truth(run), ==, larmor_volume_get_serial(truth));
    g_assert_false(larmor_run_get_metrics_stale(run));
}

static gboolean truth_is(gpointer data)
{
    gpointer *d = data;
    LarmorDataset *ds = larmor_window_get_dataset(d[0]);
    return ds && larmor_dataset_get_truth(ds) && larmor_dataset_get_truth(ds) != d[1];
}

/* 1. Runs carry their data set: after other data are loaded an earlier run
 * is not offered for comparison (and says so); loaded again, it is, with
 * metrics against that truth; a new truth recomputes them; without a truth
 * they are marked stale. */
static void test_data_identity(void)
{
    LarmorWindow *w = gui_test_open_window(GTK_APPLICATION(app), 1400, 900);
    LarmorCompareView *cv = larmor_window_get_compare_view(w);
    LarmorReconParams p;
    gui_test_cpu_params(&p, "cpu-simd", 4);
    gui_test_reconstruct(w, &p);
    LarmorRun *run = gui_test_run_at(w, 0);
    g_assert_true(larmor_run_get_current(run));
    g_assert_true(larmor_run_get_compare(run));
    check_metrics(run, larmor_dataset_get_truth(larmor_window_get_dataset(w)));
    g_assert_nonnull(larmor_compare_view_get_metric_text(cv, 0, "error"));

    /* Another phantom on the same 32^3 grid: other data all the same. */
    LarmorDatasetSpec other = { .kind = LARMOR_SOURCE_PHANTOM, .matrix = 32, .traj_kind = LM_TRAJ_RADIAL3D,
                                .samples = 4000, .noise = 0.01, .seed = 3 };
    g_strlcpy(other.phantom, "shepp-logan", sizeof other.phantom);
    load_spec(w, &other);
    g_assert_false(larmor_run_get_current(run));
    g_assert_false(larmor_run_get_compare(run));
    /* Not in the comparison: the truth alone, no metrics row. */
    g_assert_nonnull(larmor_compare_view_get_panel(cv, 0));
    g_assert_null(larmor_compare_view_get_panel(cv, 1));
    g_assert_null(larmor_compare_view_get_metric_text(cv, 0, "error"));
    /* Ticking it is refused with a message naming its data. */
    larmor_run_set_compare(run, TRUE);
    g_assert_false(larmor_run_get_compare(run));
    g_assert_nonnull(larmor_window_get_message(w));
    g_assert_nonnull(strstr(larmor_window_get_message(w), "B32"));
    g_assert_null(larmor_compare_view_get_panel(cv, 1));
    char *data = larmor_runs_cell_text(run, "Data");
    g_assert_cmpstr(data, ==, "B32 (not loaded)");
    g_free(data);

    /* Another grid (2D, 32 x 32): the same. */
    LarmorDatasetSpec flat = { .kind = LARMOR_SOURCE_PHANTOM, .matrix = 32, .traj_kind = LM_TRAJ_RADIAL2D, .seed = 1 };
    g_strlcpy(flat.phantom, "shepp-logan-2d", sizeof flat.phantom);
    load_spec(w, &flat);
    g_assert_false(larmor_run_get_current(run));
    larmor_run_set_compare(run, TRUE);
    g_assert_false(larmor_run_get_compare(run));

    /* B32 again: the run belongs to the data loaded, with metrics against
     * this (new) truth, and can be compared. */
    LarmorDatasetSpec b32 = { .kind = LARMOR_SOURCE_PROBLEM };
    g_strlcpy(b32.problem, "B32", sizeof b32.problem);
    load_spec(w, &b32);
    LarmorVolume *truth = larmor_dataset_get_truth(larmor_window_get_dataset(w));
    g_assert_true(larmor_run_get_current(run));
    check_metrics(run, truth);
    larmor_run_set_compare(run, TRUE);
    g_assert_true(larmor_run_get_compare(run));
    g_assert_nonnull(larmor_compare_view_get_panel(cv, 1));

    /* A new truth (twice the old one): the metrics follow it, at once. */
    char *dir = gui_test_tmp_dir("identity");
    char *np = g_build_filename(dir, "truth2.nii", NULL);
    lm_error err = { 0 };
    lm_volume *t2 = lm_volume_copy(larmor_volume_get_data(truth), &err);
    g_assert_nonnull(t2);
    for (int64_t i = 0; i < lm_volume_count(t2); i++)
        t2->data[i] *= 2;
    g_assert_cmpint(lm_nifti_write(np, t2, 0, &err), ==, LM_OK);
    lm_volume_free(t2);
    double before = larmor_run_get_percent_error(run);
    larmor_window_open_truth(w, np);
    g_assert_true(gui_test_wait(truth_is, (gpointer[]){ w, truth }, 30));
    LarmorVolume *truth2 = larmor_dataset_get_truth(larmor_window_get_dataset(w));
    check_metrics(run, truth2);
    g_assert_cmpfloat(fabs(larmor_run_get_percent_error(run) - before), >, 1.0);
    char want[32];
    g_snprintf(want, sizeof want, "%.2f", larmor_run_get_percent_error(run));
    g_assert_cmpstr(larmor_compare_view_get_metric_text(cv, 0, "error"), ==, want);

    /* No truth for the data any more: the metrics stay, marked stale. */
    char *tp = g_build_filename(dir, "traj.cfl", NULL), *kp = g_build_filename(dir, "ksp.cfl", NULL);
    const lm_traj *t = larmor_dataset_get_traj(larmor_window_get_dataset(w));
    g_assert_cmpint(lm_cfl_write_traj(tp, t, &err), ==, LM_OK);
    g_assert_cmpint(lm_cfl_write_kdata(kp, larmor_dataset_get_kdata(larmor_window_get_dataset(w)), t->readout, &err),
                    ==, LM_OK);
    GFile *f[2] = { g_file_new_for_path(tp), g_file_new_for_path(kp) };
    larmor_window_open_files(w, f, 2);
    g_assert_true(gui_test_wait(gui_test_idle, w, 60));
    /* named after the folder, not "traj" (issue 25, 13) */
    char *folder = g_path_get_basename(dir);
    g_assert_cmpstr(larmor_dataset_get_name(larmor_window_get_dataset(w)), ==, folder);
    g_free(folder);
    larmor_window_open_truth(w, np);
    g_assert_true(gui_test_wait(truth_is, (gpointer[]){ w, NULL }, 30));
    gui_test_reconstruct(w, &p);
    LarmorRun *frun = gui_test_run_at(w, 1);
    g_assert_true(larmor_run_has_metrics(frun));
    larmor_window_open_files(w, f, 2); /* the same files again, no truth this time */
    g_assert_true(gui_test_wait(gui_test_idle, w, 60));
    g_assert_null(larmor_dataset_get_truth(larmor_window_get_dataset(w)));
    g_assert_true(larmor_run_get_current(frun));
    g_assert_true(larmor_run_get_metrics_stale(frun));
    char *cell = larmor_runs_cell_text(frun, "Error %");
    g_assert_true(cell[0] == '(');
    g_free(cell);
    g_assert_false(larmor_run_get_current(run)); /* B32's run: other data */

    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
    g_object_unref(f[0]);
    g_object_unref(f[1]);
    const char *names[] = { "truth2.nii", "traj.cfl", "traj.hdr", "ksp.cfl", "ksp.hdr" };
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        char *pth = g_build_filename(dir, names[i], NULL);
        g_remove(pth);
        g_free(pth);
    }
    g_rmdir(dir);
    g_free(dir);
    g_free(np);
    g_free(tp);
    g_free(kp);
}

/* 2, 5, 9. "Recompute Q" bypasses the cache for one run; where Q came from
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

/* 3. At 1024 x 600 every control is reachable: no page is wider than the
 * room it gets, and the sidebar scrolls down to the sweep. */
static void test_small_window(void)
{
    LarmorWindow *w = gui_test_open_window(GTK_APPLICATION(app), 1024, 600);
    gui_test_spin(0.3);
    g_assert_cmpint(gtk_widget_get_width(GTK_WIDGET(w)), <=, 1024);
    g_assert_cmpint(gtk_widget_get_height(GTK_WIDGET(w)), <=, 600);
    /* Each page fits the width it is given (none is clipped). */
    static const char *pages[] = { "viewer", "compare", "runs", "sweep", "coils" };
    for (guint i = 0; i < G_N_ELEMENTS(pages); i++) {
        larmor_window_set_page(w, pages[i]);
        gui_test_spin(0.3);
        GtkWidget *stack = gtk_widget_get_parent(GTK_WIDGET(larmor_window_get_ortho_view(w)));
        int min, nat;
        gtk_widget_measure(stack, GTK_ORIENTATION_HORIZONTAL, -1, &min, &nat, NULL, NULL);
        g_assert_cmpint(min, <=, gtk_widget_get_width(stack));
        gtk_widget_measure(stack, GTK_ORIENTATION_VERTICAL, gtk_widget_get_width(stack), &min, &nat, NULL, NULL);
        g_assert_cmpint(min, <=, gtk_widget_get_height(stack));
    }
    /* The sidebar scrolls, and the sweep button lies in what it scrolls. */
    GtkWidget *sidebar = larmor_window_get_sidebar(w);
    g_assert_true(GTK_IS_SCROLLED_WINDOW(sidebar));
    GtkWidget *sweep = larmor_recon_panel_get_sweep_button(larmor_window_get_recon_panel(w));
    g_assert_true(gtk_widget_is_ancestor(sweep, sidebar));
    GtkAdjustment *adj = gtk_scrolled_window_get_vadjustment(GTK_SCROLLED_WINDOW(sidebar));
    g_assert_cmpfloat(gtk_adjustment_get_upper(adj), >, gtk_adjustment_get_page_size(adj));
    graphene_rect_t b;
    g_assert_true(gtk_widget_compute_bounds(sweep, sidebar, &b));
    double top = b.origin.y + gtk_adjustment_get_value(adj);
    g_assert_cmpfloat(top + b.size.height, <=, gtk_adjustment_get_upper(adj) + 0.5);
    /* Scrolled to the bottom, the button is inside the visible part. */
    gtk_adjustment_set_value(adj, gtk_adjustment_get_upper(adj) - gtk_adjustment_get_page_size(adj));
    gtk_test_widget_wait_for_draw(GTK_WIDGET(w));
    gui_test_spin(0.2);
    g_assert_true(gtk_widget_compute_bounds(sweep, sidebar, &b));
    g_assert_cmpfloat(b.origin.y, >=, 0);
    g_assert_cmpfloat(b.origin.y + b.size.height, <=, gtk_widget_get_height(sidebar));
    g_assert_true(gtk_widget_get_mapped(sweep));
    g_assert_true(gtk_widget_is_sensitive(sweep));
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
}

/* 4. The L-curve: point labels, then the corner marker; nothing joins the
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

/* 6. One convention: the slice label and the cursor read-out say the same
 * (0-based) index. */
static void test_slice_labels(void)
{
    int64_t dims[3] = { 8, 6, 4 };
    double mm[3] = { 1, 1, 1 };
    lm_volume *v = lm_volume_new(dims, mm, NULL);
    LarmorVolume *vol = larmor_volume_new_take(v, "v");
    LarmorSliceView *view = LARMOR_SLICE_VIEW(larmor_slice_view_new(LARMOR_ORIENT_AXIAL));
    g_object_ref_sink(view);
    larmor_slice_view_set_volume(view, vol);
    LarmorViewState *st = larmor_slice_view_get_state(view);
    larmor_view_state_set_dims(st, dims);
    larmor_view_state_set_cursor(st, (int64_t[]){ 1, 2, 0 });
    char *label = larmor_slice_view_get_slice_text(view);
    g_assert_cmpstr(label, ==, "z 0 (0–3)");
    g_free(label);
    larmor_view_state_set_cursor_axis(st, 2, 3);
    label = larmor_slice_view_get_slice_text(view);
    g_assert_cmpstr(label, ==, "z 3 (0–3)");
    char *readout = larmor_format_voxel(vol, (int64_t[]){ 1, 2, 3 });
    g_assert_nonnull(strstr(readout, "z   3"));
    g_free(readout);
    g_free(label);
    g_object_unref(view);
    g_object_unref(vol);
}

/* 7. Window/level per image: each from its own histogram (1st and 99.5th
 * magnitude percentiles), kept per image when switching. */
static LarmorVolume *ramp(double scale, const char *name)
{
    int64_t dims[3] = { 20, 10, 5 }; /* 1000 voxels: values 0 .. 999 x scale */
    double mm[3] = { 1, 1, 1 };
    lm_volume *v = lm_volume_new(dims, mm, NULL);
    for (int64_t i = 0; i < 1000; i++)
        v->data[i] = (float)(i * scale);
    return larmor_volume_new_take(v, name);
}

static void test_window_per_image(void)
{
    LarmorVolume *a = ramp(1, "a"), *b = ramp(1000, "b");
    double w, l;
    larmor_volume_auto_window(a, LARMOR_MODE_MAGNITUDE, &w, &l);
    /* p1 = 10, p99.5 = 995, within a histogram bin. */
    g_assert_cmpfloat(fabs((l - w / 2) - 10), <, 1.0);
    g_assert_cmpfloat(fabs((l + w / 2) - 995), <, 1.0);

    LarmorOrthoView *ov = LARMOR_ORTHO_VIEW(larmor_ortho_view_new());
    GtkWidget *win = gtk_window_new();
    gtk_window_set_default_size(GTK_WINDOW(win), 900, 600);
    gtk_window_set_child(GTK_WINDOW(win), GTK_WIDGET(ov));
    gui_test_show(GTK_WINDOW(win));
    LarmorViewState *st = larmor_ortho_view_get_state(ov);
    larmor_ortho_view_show_volume(ov, a);
    double wa, la, wb, lb;
    larmor_volume_auto_window(a, LARMOR_MODE_MAGNITUDE, &wa, &la);
    larmor_volume_auto_window(b, LARMOR_MODE_MAGNITUDE, &wb, &lb);
    g_assert_cmpfloat(larmor_view_state_get_window(st), ==, wa);
    /* Same grid, 1000 times the values: b gets its own window. */
    larmor_ortho_view_show_volume(ov, b);
    g_assert_cmpfloat(larmor_view_state_get_window(st), ==, wb);
    g_assert_cmpfloat(larmor_view_state_get_level(st), ==, lb);
    /* A window set by hand on b stays with b; a gets its own back. */
    larmor_view_state_set_window_level(st, 5000, 2500);
    larmor_ortho_view_show_volume(ov, a);
    g_assert_cmpfloat(larmor_view_state_get_window(st), ==, wa);
    g_assert_cmpfloat(larmor_view_state_get_level(st), ==, la);
    larmor_ortho_view_show_volume(ov, b);
    g_assert_cmpfloat(larmor_view_state_get_window(st), ==, 5000);
    g_assert_cmpfloat(larmor_view_state_get_level(st), ==, 2500);
    gtk_window_destroy(GTK_WINDOW(win));
    g_object_unref(a);
    g_object_unref(b);
}

/* 8. Every setting of the panel comes back after a restart, the anatomical
 * regulariser and its edge included, and the colour map. */
static void test_settings_persist(void)
{
    char *dir = gui_test_tmp_dir("prefs");
    char *path = g_build_filename(dir, "settings.ini", NULL);
    LarmorSettings *settings = larmor_settings_new(path);
    LarmorWindow *w = larmor_window_new(GTK_APPLICATION(app), settings, "B32");
    gui_test_show(GTK_WINDOW(w));
    g_assert_true(gui_test_wait(gui_test_has_data, w, 120));
    LarmorReconParams p, q;
    gui_test_cpu_params(&p, "cpu-simd", 9);
    g_strlcpy(p.variant, "cpu-sp", sizeof p.variant);
    p.lambda = 0.3;
    p.reg = LM_REG_ANATOMICAL;
    p.edge = 0.08;
    p.tol = 1e-4;
    LarmorReconPanel *panel = larmor_window_get_recon_panel(w);
    larmor_recon_panel_set_params(panel, &p);
    larmor_recon_panel_set_sweep(panel, 1e-3, 3, 7);
    larmor_view_state_set_colormap(larmor_ortho_view_get_state(larmor_window_get_ortho_view(w)),
                                   LARMOR_COLORMAP_VIRIDIS);
    gtk_window_close(GTK_WINDOW(w));
    gui_test_spin(0.1);
    g_object_unref(settings);

    settings = larmor_settings_new(path);
    w = larmor_window_new(GTK_APPLICATION(app), settings, NULL);
    gui_test_show(GTK_WINDOW(w));
    g_assert_true(larmor_window_get_params(w, &q));
    g_assert_cmpint(q.method, ==, LM_METHOD_CG);
    g_assert_cmpstr(q.variant, ==, "cpu-sp");
    g_assert_cmpfloat_with_epsilon(q.lambda, 0.3, 1e-12);
    g_assert_cmpint(q.reg, ==, LM_REG_ANATOMICAL);
    g_assert_cmpfloat_with_epsilon(q.edge, 0.08, 1e-9);
    g_assert_cmpint(q.iters, ==, 9);
    g_assert_cmpfloat_with_epsilon(q.tol, 1e-4, 1e-15);
    double from, to;
    int steps;
    g_assert_true(larmor_recon_panel_get_sweep(larmor_window_get_recon_panel(w), &from, &to, &steps, NULL));
    g_assert_cmpfloat(from, ==, 1e-3);
    g_assert_cmpfloat(to, ==, 3);
    g_assert_cmpint(steps, ==, 7);
    g_assert_cmpint(larmor_view_state_get_colormap(larmor_ortho_view_get_state(larmor_window_get_ortho_view(w))), ==,
                    LARMOR_COLORMAP_VIRIDIS);
    g_assert_true(gui_test_wait(gui_test_has_data, w, 120));
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
    g_object_unref(settings);
    g_remove(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
}

/* 10. `larmor FILE...`: the application's open path (what the command line
 * and the file manager use) opens data and their truth in a window; the
 * .desktop file passes files (%F) and names the types. */
static gboolean window_with_truth(gpointer data)
{
    GList *l = gtk_application_get_windows(GTK_APPLICATION(app));
    for (; l; l = l->next) {
        if (!LARMOR_IS_WINDOW(l->data))
            continue;
        LarmorDataset *ds = larmor_window_get_dataset(l->data);
        if (ds && g_str_has_prefix(larmor_dataset_get_name(ds), "larmor-open-") && larmor_dataset_get_truth(ds) &&
            !larmor_window_is_busy(l->data)) {
            *(LarmorWindow **)((gpointer *)data)[0] = l->data;
            return TRUE;
        }
    }
    return FALSE;
}

static void test_open_path(void)
{
    g_assert_true(g_application_get_flags(G_APPLICATION(app)) & G_APPLICATION_HANDLES_OPEN);
    char *dir = gui_test_tmp_dir("open");
    char *tp = g_build_filename(dir, "traj.cfl", NULL), *kp = g_build_filename(dir, "ksp.cfl", NULL);
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

    GFile *files[3] = { g_file_new_for_path(tp), g_file_new_for_path(kp), g_file_new_for_path(np) };
    g_application_open(G_APPLICATION(app), files, 3, "");
    LarmorWindow *w = NULL;
    g_assert_true(gui_test_wait(window_with_truth, (gpointer[]){ &w }, 120));
    LarmorDataset *ds = larmor_window_get_dataset(w);
    g_assert_cmpint(larmor_dataset_get_traj(ds)->m, ==, t->m);
    const lm_volume *tv = larmor_volume_get_data(larmor_dataset_get_truth(ds));
    g_assert_cmpint(tv->dims[0], ==, 32);
    g_assert_cmpfloat(cabsf(tv->data[lm_volume_count(tv) / 2] - v->data[lm_volume_count(v) / 2]), <, 1e-5);
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);

    /* The .desktop file: files passed, types named. */
    const char *desktop = g_getenv("LARMOR_DESKTOP_FILE");
    g_assert_nonnull(desktop);
    GKeyFile *kf = g_key_file_new();
    GError *error = NULL;
    g_assert_true(g_key_file_load_from_file(kf, desktop, G_KEY_FILE_NONE, &error));
    char *exec = g_key_file_get_string(kf, "Desktop Entry", "Exec", NULL);
    g_assert_nonnull(strstr(exec, "%F"));
    char **types = g_key_file_get_string_list(kf, "Desktop Entry", "MimeType", NULL, NULL);
    g_assert_nonnull(types);
    g_assert_true(g_strv_contains((const char *const *)types, "application/x-hdf"));
    g_assert_true(g_strv_contains((const char *const *)types, "application/x-nifti"));
    g_strfreev(types);
    g_free(exec);
    g_key_file_unref(kf);

    for (int i = 0; i < 3; i++)
        g_object_unref(files[i]);
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
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_volume_free(v);
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = gui_test_app_new();
    g_test_add_func("/window/data-identity", test_data_identity);
    g_test_add_func("/window/q-cache-and-figures", test_q_cache_and_figures);
    g_test_add_func("/window/small-window", test_small_window);
    g_test_add_func("/window/plot-no-stray-line", test_plot_no_stray_line);
    g_test_add_func("/window/slice-labels", test_slice_labels);
    g_test_add_func("/window/window-per-image", test_window_per_image);
    g_test_add_func("/window/settings-persist", test_settings_persist);
    g_test_add_func("/window/open-path", test_open_path);
    return gui_test_app_run(app);
}
