/* Regions and lines: ROI statistics (rectangle, ellipse), drawing, tool
 * toggles, the ROI compare table and CSV, SNR against known statistics;
 * the line profile of a linear image against exact values, the profile
 * compare plot and CSV. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-compare-view.h"
#include "larmor-profile.h"
#include "larmor-roi.h"
#include "larmor-slice-view.h"

#define NX 16
#define NY 12
#define NZ 4

/* 16 x 16 x 4 voxels of 2 x 3 x 4 mm: `bg` everywhere, `fg` in the block
 * x 4..7, y 4..9 of slice z 2. */
static lm_volume *roi_make_data(float bg, float fg)
{
    const int64_t dims[3] = { 16, 16, 4 };
    const double mm[3] = { 2, 3, 4 };
    lm_volume *v = lm_volume_new(dims, mm, NULL);
    g_assert_nonnull(v);
    for (int64_t i = 0; i < 16 * 16 * 4; i++)
        v->data[i] = bg;
    for (int y = 4; y <= 9; y++)
        for (int x = 4; x <= 7; x++)
            v->data[x + 16 * (y + 16 * 2)] = fg * (x % 2 ? 1.0f : -1.0f); /* magnitude fg, sign alternating */
    return v;
}

static void test_stats(void)
{
    lm_volume *v = roi_make_data(1, 5);
    LarmorRoi roi;
    LarmorRoiStats st;
    /* The block itself: 4 x 6 voxels of 5. */
    larmor_roi_set(&roi, LARMOR_ROI_RECT, LARMOR_ORIENT_AXIAL, 2, 7, 9, 4, 4); /* corners in any order */
    g_assert_true(roi.u0 == 4 && roi.u1 == 7 && roi.v0 == 4 && roi.v1 == 9);
    g_assert_true(larmor_roi_stats(&roi, v, &st));
    g_assert_cmpint(st.count, ==, 24);
    g_assert_cmpfloat(st.mean, ==, 5);
    g_assert_cmpfloat(st.sd, ==, 0);
    g_assert_cmpfloat(st.min, ==, 5);
    g_assert_cmpfloat(st.max, ==, 5);
    g_assert_cmpfloat(st.area_mm2, ==, 24 * 2 * 3);
    /* Wider: 2 columns of background added (12 voxels of 1, 24 of 5). */
    larmor_roi_set(&roi, LARMOR_ROI_RECT, LARMOR_ORIENT_AXIAL, 2, 2, 4, 7, 9);
    g_assert_true(larmor_roi_stats(&roi, v, &st));
    const double mean = (12 * 1.0 + 24 * 5.0) / 36, sd = sqrt((12 * (1 - mean) * (1 - mean) + 24 * (5 - mean) * (5 - mean)) / 35);
    g_assert_cmpint(st.count, ==, 36);
    g_assert_cmpfloat_with_epsilon(st.mean, mean, 1e-12);
    g_assert_cmpfloat_with_epsilon(st.sd, sd, 1e-12);
    g_assert_cmpfloat(st.min, ==, 1);
    g_assert_cmpfloat(st.max, ==, 5);
    g_assert_cmpfloat(st.area_mm2, ==, 36 * 6);
    /* Another slice: all background. */
    roi.slice = 1;
    g_assert_true(larmor_roi_stats(&roi, v, &st));
    g_assert_cmpfloat(st.mean, ==, 1);
    g_assert_cmpfloat(st.sd, ==, 0);

    /* Ellipse in the 4 x 4 box x 4..7, y 5..8 (inside the block): the
     * four corner voxels' centres lie outside ((0.75^2 + 0.75^2) > 1), the
     * other 12 inside. */
    larmor_roi_set(&roi, LARMOR_ROI_ELLIPSE, LARMOR_ORIENT_AXIAL, 2, 4, 5, 7, 8);
    g_assert_false(larmor_roi_contains(&roi, 4, 5));
    g_assert_false(larmor_roi_contains(&roi, 7, 8));
    g_assert_true(larmor_roi_contains(&roi, 4, 6));
    g_assert_true(larmor_roi_contains(&roi, 5, 5));
    g_assert_true(larmor_roi_stats(&roi, v, &st));
    g_assert_cmpint(st.count, ==, 12);
    g_assert_cmpfloat(st.mean, ==, 5);
    g_assert_cmpfloat(st.sd, ==, 0);
    g_assert_cmpfloat(st.area_mm2, ==, 12 * 6);
    /* An ellipse across the block's edge: 1 x 3 box x 3..3? no: x 3..4, y 6..6
     * (a 2 x 1 box): both voxel centres are inside (du = +-0.5), one 1 and one 5. */
    larmor_roi_set(&roi, LARMOR_ROI_ELLIPSE, LARMOR_ORIENT_AXIAL, 2, 3, 6, 4, 6);
    g_assert_true(larmor_roi_stats(&roi, v, &st));
    g_assert_cmpint(st.count, ==, 2);
    g_assert_cmpfloat(st.mean, ==, 3);
    g_assert_cmpfloat_with_epsilon(st.sd, sqrt(8.0), 1e-12);
    g_assert_cmpfloat(st.min, ==, 1);
    g_assert_cmpfloat(st.max, ==, 5);
    /* Coronal plane (x, z) at y 5: the block's row at z 2. */
    larmor_roi_set(&roi, LARMOR_ROI_RECT, LARMOR_ORIENT_CORONAL, 5, 4, 2, 7, 2);
    g_assert_true(larmor_roi_stats(&roi, v, &st));
    g_assert_cmpint(st.count, ==, 4);
    g_assert_cmpfloat(st.mean, ==, 5);
    g_assert_cmpfloat(st.area_mm2, ==, 4 * 2 * 4);
    /* Nothing: no ROI, or a slice outside the volume. */
    roi.slice = 99;
    g_assert_false(larmor_roi_stats(&roi, v, &st));
    roi.shape = LARMOR_ROI_NONE;
    g_assert_false(larmor_roi_stats(&roi, v, &st));
    lm_volume_free(v);
}

static void test_draw(void)
{
    LarmorVolume *vol = larmor_volume_new_take(roi_make_data(1, 5), "blocks");
    LarmorSliceView *view = LARMOR_SLICE_VIEW(larmor_slice_view_new(LARMOR_ORIENT_AXIAL));
    larmor_slice_view_set_volume(view, vol);
    LarmorViewState *st = larmor_slice_view_get_state(view);
    larmor_view_state_set_dims(st, larmor_volume_get_data(vol)->dims);
    const int64_t cur[3] = { 0, 0, 2 };
    larmor_view_state_set_cursor(st, cur);
    GtkWidget *win = gtk_window_new();
    gtk_window_set_default_size(GTK_WINDOW(win), 400, 400);
    gtk_window_set_child(GTK_WINDOW(win), GTK_WIDGET(view));
    gui_test_show(GTK_WINDOW(win));

    /* The tool toggles: at most one on, none = no tool. */
    GtkToggleButton *rect = GTK_TOGGLE_BUTTON(g_object_ref_sink(gtk_toggle_button_new()));
    GtkToggleButton *ell = GTK_TOGGLE_BUTTON(g_object_ref_sink(gtk_toggle_button_new()));
    larmor_bind_roi_tool(G_OBJECT(st), rect, ell);
    g_assert_cmpint(larmor_view_state_get_roi_tool(st), ==, LARMOR_ROI_NONE);
    gtk_toggle_button_set_active(ell, TRUE);
    g_assert_cmpint(larmor_view_state_get_roi_tool(st), ==, LARMOR_ROI_ELLIPSE);
    gtk_toggle_button_set_active(rect, TRUE);
    g_assert_cmpint(larmor_view_state_get_roi_tool(st), ==, LARMOR_ROI_RECT);
    g_assert_false(gtk_toggle_button_get_active(ell));

    /* Drag from voxel (7, 9) to (4, 4): the block. */
    const int64_t a[3] = { 7, 9, 2 }, b[3] = { 4, 4, 2 };
    double x0, y0, x1, y1;
    g_assert_true(larmor_slice_view_voxel_to_widget(view, a, &x0, &y0));
    g_assert_true(larmor_slice_view_voxel_to_widget(view, b, &x1, &y1));
    larmor_slice_view_draw_roi(view, x0, y0, x1, y1);
    LarmorRoiStats s;
    g_assert_true(larmor_slice_view_get_roi_stats(view, &s));
    g_assert_cmpint(s.count, ==, 24);
    g_assert_cmpfloat(s.mean, ==, 5);
    g_assert_cmpfloat(s.sd, ==, 0);
    g_assert_cmpfloat(s.area_mm2, ==, 144);
    char *text = larmor_roi_stats_text(&s);
    g_assert_nonnull(strstr(text, "mean 5"));
    g_assert_nonnull(strstr(text, "24 voxels"));
    g_free(text);
    gtk_widget_queue_draw(GTK_WIDGET(view));
    gtk_test_widget_wait_for_draw(GTK_WIDGET(view));

    /* The ellipse tool over the 4 x 4 box x 4..7, y 5..8: 12 voxels. */
    gtk_toggle_button_set_active(ell, TRUE);
    const int64_t c[3] = { 4, 5, 2 }, d[3] = { 7, 8, 2 };
    g_assert_true(larmor_slice_view_voxel_to_widget(view, c, &x0, &y0));
    g_assert_true(larmor_slice_view_voxel_to_widget(view, d, &x1, &y1));
    larmor_slice_view_draw_roi(view, x0, y0, x1, y1);
    g_assert_true(larmor_slice_view_get_roi_stats(view, &s));
    g_assert_cmpint(s.count, ==, 12);
    g_assert_cmpfloat(s.mean, ==, 5);
    g_assert_cmpfloat(s.area_mm2, ==, 72);
    gtk_widget_queue_draw(GTK_WIDGET(view));
    gtk_test_widget_wait_for_draw(GTK_WIDGET(view));
    /* On another slice the ROI is not shown and gives no statistics. */
    larmor_view_state_set_cursor_axis(st, 2, 1);
    g_assert_false(larmor_slice_view_get_roi_stats(view, &s));
    /* Tool off: a drag draws nothing new. */
    gtk_toggle_button_set_active(ell, FALSE);
    g_assert_cmpint(larmor_view_state_get_roi_tool(st), ==, LARMOR_ROI_NONE);

    g_object_unref(rect);
    g_object_unref(ell);
    gtk_window_destroy(GTK_WINDOW(win));
    g_object_unref(vol);
}

static LarmorRun *roi_make_run(float bg, float fg, int index)
{
    return gui_test_run_new(roi_make_data(bg, fg), "blocks", index);
}

static void test_roi_compare(void)
{
    LarmorCompareView *cv = LARMOR_COMPARE_VIEW(larmor_compare_view_new());
    GtkWidget *win = gtk_window_new();
    gtk_window_set_default_size(GTK_WINDOW(win), 1000, 700);
    gtk_window_set_child(GTK_WINDOW(win), GTK_WIDGET(cv));
    gui_test_show(GTK_WINDOW(win));
    LarmorVolume *truth = larmor_volume_new_take(roi_make_data(1, 5), "truth");
    LarmorRun *runs[2] = { roi_make_run(2, 4, 1), roi_make_run(0, 7, 2) };
    larmor_compare_view_set_truth(cv, truth);
    larmor_compare_view_set_runs(cv, runs, 2);
    g_assert_cmpint(larmor_compare_view_get_roi_rows(cv), ==, 0);

    /* A rectangle drawn on a run's panel (tool on through the shared state). */
    LarmorViewState *st = larmor_compare_view_get_state(cv);
    larmor_view_state_set_roi_tool(st, LARMOR_ROI_RECT);
    const int64_t cur[3] = { 0, 0, 2 };
    larmor_view_state_set_cursor(st, cur);
    gui_test_spin(0.2);
    LarmorSliceView *panel = larmor_compare_view_get_panel(cv, 2);
    g_assert_nonnull(panel);
    const int64_t a[3] = { 2, 4, 2 }, b[3] = { 7, 9, 2 };
    double x0, y0, x1, y1;
    g_assert_true(larmor_slice_view_voxel_to_widget(panel, a, &x0, &y0));
    g_assert_true(larmor_slice_view_voxel_to_widget(panel, b, &x1, &y1));
    larmor_slice_view_draw_roi(panel, x0, y0, x1, y1);

    /* One row per panel: the truth and each run, over the same 36 voxels. */
    g_assert_cmpint(larmor_compare_view_get_roi_rows(cv), ==, 3);
    const double bgs[3] = { 1, 2, 0 }, fgs[3] = { 5, 4, 7 };
    for (int i = 0; i < 3; i++) {
        LarmorRoiStats s;
        const char *name;
        g_assert_true(larmor_compare_view_get_roi_stats(cv, i, &s, &name));
        const double mean = (12 * bgs[i] + 24 * fgs[i]) / 36;
        g_assert_cmpint(s.count, ==, 36);
        g_assert_cmpfloat_with_epsilon(s.mean, mean, 1e-12);
        g_assert_cmpfloat(s.min, ==, MIN(bgs[i], fgs[i]));
        g_assert_cmpfloat(s.max, ==, MAX(bgs[i], fgs[i]));
        g_assert_cmpfloat(s.area_mm2, ==, 216);
        if (i == 0)
            g_assert_cmpstr(name, ==, "truth");
        else
            g_assert_cmpstr(name, ==, larmor_run_get_label(runs[i - 1]));
    }

    /* The CSV: a header and one line per row, written atomically. */
    char *dir = gui_test_tmp_dir("roi");
    char *path = g_build_filename(dir, "roi.csv", NULL);
    GError *error = NULL;
    g_assert_true(larmor_compare_view_write_roi_csv(cv, path, &error));
    g_assert_no_error(error);
    char *csv = NULL;
    g_assert_true(g_file_get_contents(path, &csv, NULL, NULL));
    char **lines = g_strsplit(csv, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 5); /* header, 3 rows, "" after the last newline */
    g_assert_true(g_str_has_prefix(lines[0], "image,shape,orientation,slice_axis,slice,"));
    g_assert_true(g_str_has_prefix(lines[1], "\"truth\",rectangle,Axial,z,2,x,2,7,y,4,9,36,216,"));
    g_assert_nonnull(strstr(lines[2], ",36,216,3.33333333,")); /* (12 * 2 + 24 * 4) / 36 */
    g_assert_cmpstr(lines[4], ==, "");
    g_strfreev(lines);
    g_free(csv);
    /* No temporary file is left beside it. */
    GDir *dd = g_dir_open(dir, 0, NULL);
    int files = 0;
    while (g_dir_read_name(dd))
        files++;
    g_dir_close(dd);
    g_assert_cmpint(files, ==, 1);
    g_remove(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);

    /* Cleared: no table, and exporting says why. */
    larmor_view_state_clear_roi(st);
    g_assert_cmpint(larmor_compare_view_get_roi_rows(cv), ==, 0);
    g_assert_false(larmor_compare_view_write_roi_csv(cv, "/nonexistent/roi.csv", &error));
    g_assert_nonnull(error);
    g_clear_error(&error);

    gtk_window_destroy(GTK_WINDOW(win));
    g_object_unref(runs[0]);
    g_object_unref(runs[1]);
    g_object_unref(truth);
}

/* A standard normal deviate (Box-Muller) from a seeded GRand. */
static double gauss(GRand *r)
{
    double u = g_rand_double_range(r, 1e-12, 1), v = g_rand_double(r);
    return sqrt(-2 * log(u)) * cos(2 * G_PI * v);
}

/* SNR against known statistics: exact with a deterministic background,
 * and the Rayleigh correction recovering the true SNR of complex Gaussian
 * noise (seeded: the same numbers every run). */
static void test_snr(void)
{
    /* Signal 100 everywhere in the ROI; background of 3 and 5 alternating:
     * SD with n - 1 = sqrt(n / (n - 1)). */
    LarmorRoiStats sig = { .count = 10, .mean = 100, .sd = 0 };
    LarmorRoiStats bg = { .count = 4, .mean = 4, .sd = sqrt(4.0 / 3.0) };
    g_assert_cmpfloat_with_epsilon(larmor_roi_snr(&sig, &bg), 100 * 0.655 / sqrt(4.0 / 3.0), 1e-12);
    LarmorRoiStats flat = { .count = 4, .mean = 4, .sd = 0 };
    g_assert_true(isnan(larmor_roi_snr(&sig, &flat)));
    g_assert_true(isnan(larmor_roi_snr(&sig, NULL)));

    /* 64 x 64 x 2: slice 0 is complex noise of sigma 2 per part (the
     * background), slice 1 is 50 plus that noise (the object): true SNR 25. */
    const int64_t dims[3] = { 64, 64, 2 };
    const double mm[3] = { 1, 1, 1 };
    lm_volume *v = lm_volume_new(dims, mm, NULL);
    GRand *rng = g_rand_new_with_seed(1);
    const double sigma = 2;
    for (int64_t i = 0; i < 64 * 64 * 2; i++) {
        double re = sigma * gauss(rng), im = sigma * gauss(rng);
        v->data[i] = (float)((i >= 64 * 64 ? 50 : 0) + re) + (float)im * I;
    }
    g_rand_free(rng);
    LarmorRoi noise_roi, sig_roi;
    larmor_roi_set(&noise_roi, LARMOR_ROI_RECT, LARMOR_ORIENT_AXIAL, 0, 0, 0, 63, 63);
    larmor_roi_set(&sig_roi, LARMOR_ROI_RECT, LARMOR_ORIENT_AXIAL, 1, 0, 0, 63, 63);
    LarmorRoiStats ns, ss;
    g_assert_true(larmor_roi_stats(&noise_roi, v, &ns));
    g_assert_true(larmor_roi_stats(&sig_roi, v, &ss));
    /* The background magnitude is Rayleigh: SD 0.655 sigma, mean 1.2533 sigma. */
    g_assert_cmpfloat_with_epsilon(ns.sd / sigma, 0.655, 0.655 * 0.03);
    g_assert_cmpfloat_with_epsilon(ns.mean / sigma, sqrt(G_PI / 2), 0.03);
    double snr = larmor_roi_snr(&ss, &ns);
    g_assert_cmpfloat_with_epsilon(snr, 25, 25 * 0.03);
    /* Without the correction it would be 0.655 times that: well outside. */
    g_assert_cmpfloat(fabs(ss.mean / ns.sd - 25), >, 10);

    /* The compare view: the noise ROI set with "Use as Noise ROI", then
     * the signal ROI; the table's SNR column and the CSV. */
    LarmorCompareView *cv = LARMOR_COMPARE_VIEW(larmor_compare_view_new());
    GtkWidget *win = gtk_window_new();
    gtk_window_set_default_size(GTK_WINDOW(win), 900, 700);
    gtk_window_set_child(GTK_WINDOW(win), GTK_WIDGET(cv));
    gui_test_show(GTK_WINDOW(win));
    LarmorVolume *truth = larmor_volume_new_take(v, "noisy");
    larmor_compare_view_set_truth(cv, truth);
    LarmorViewState *st = larmor_compare_view_get_state(cv);
    g_assert_false(larmor_compare_view_use_roi_as_noise(cv));
    larmor_view_state_set_roi(st, &noise_roi);
    g_assert_true(isnan(larmor_compare_view_get_roi_snr(cv, 0, NULL)));
    g_assert_true(larmor_compare_view_use_roi_as_noise(cv));
    LarmorRoi got;
    larmor_view_state_get_roi(st, &got);
    g_assert_cmpint(got.shape, ==, LARMOR_ROI_NONE);
    larmor_view_state_get_noise_roi(st, &got);
    g_assert_true(larmor_roi_equal(&got, &noise_roi));
    larmor_view_state_set_roi(st, &sig_roi);
    g_assert_cmpint(larmor_compare_view_get_roi_rows(cv), ==, 1);
    double nsd;
    g_assert_cmpfloat(larmor_compare_view_get_roi_snr(cv, 0, &nsd), ==, snr);
    g_assert_cmpfloat(nsd, ==, ns.sd);
    char *dir = gui_test_tmp_dir("snr");
    char *path = g_build_filename(dir, "roi.csv", NULL);
    GError *error = NULL;
    g_assert_true(larmor_compare_view_write_roi_csv(cv, path, &error));
    char *csv = NULL;
    g_assert_true(g_file_get_contents(path, &csv, NULL, NULL));
    g_assert_nonnull(strstr(csv, ",noise_sd,snr\n"));
    char **lines = g_strsplit(csv, "\n", -1);
    char **cols = g_strsplit(lines[1], ",", -1);
    guint nc = g_strv_length(cols);
    g_assert_cmpfloat_with_epsilon(g_ascii_strtod(cols[nc - 1], NULL), snr, 1e-6 * snr);
    g_strfreev(cols);
    g_strfreev(lines);
    g_free(csv);
    g_remove(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
    gtk_window_destroy(GTK_WINDOW(win));
    g_object_unref(truth);
}

static double f(double x, double y, double z)
{
    return 1 + 2 * x + 3 * y + 5 * z;
}

/* gain x f on 2 x 3 x 4 mm voxels. */
static lm_volume *profile_make_data(double gain)
{
    const int64_t dims[3] = { NX, NY, NZ };
    const double mm[3] = { 2, 3, 4 };
    lm_volume *v = lm_volume_new(dims, mm, NULL);
    g_assert_nonnull(v);
    for (int z = 0; z < NZ; z++)
        for (int y = 0; y < NY; y++)
            for (int x = 0; x < NX; x++)
                v->data[x + NX * (y + NY * z)] = (float)(gain * f(x, y, z));
    return v;
}

static void test_profile(void)
{
    lm_volume *v = profile_make_data(1);
    LarmorLine line;
    /* Axial z 2 from (1, 2) to (9, 7): 8 x 5 voxels, 16 x 15 mm. */
    larmor_line_set(&line, LARMOR_ORIENT_AXIAL, 2, 1, 2, 9, 7);
    int n = larmor_line_samples(&line);
    g_assert_cmpint(n, ==, (int)ceil(hypot(8, 5)) + 1);
    g_assert_cmpfloat_with_epsilon(larmor_line_length_mm(&line, v), hypot(16, 15), 1e-12);
    double *d = g_new(double, n), *val = g_new(double, n);
    g_assert_true(larmor_line_profile(&line, v, n, d, val));
    for (int i = 0; i < n; i++) {
        double t = (double)i / (n - 1);
        g_assert_cmpfloat_with_epsilon(d[i], t * hypot(16, 15), 1e-9);
        g_assert_cmpfloat_with_epsilon(val[i], f(1 + 8 * t, 2 + 5 * t, 2), 1e-4);
    }
    g_assert_cmpfloat(val[0], ==, f(1, 2, 2));        /* the ends lie on voxel centres */
    g_assert_cmpfloat(val[n - 1], ==, f(9, 7, 2));
    g_free(d);
    g_free(val);

    /* Coronal (x, z) at y 5, off-grid ends: (0.5, 0.25) to (12.5, 3). */
    larmor_line_set(&line, LARMOR_ORIENT_CORONAL, 5, 0.5, 0.25, 12.5, 3);
    n = larmor_line_samples(&line);
    d = g_new(double, n);
    val = g_new(double, n);
    g_assert_true(larmor_line_profile(&line, v, n, d, val));
    for (int i = 0; i < n; i++) {
        double t = (double)i / (n - 1);
        g_assert_cmpfloat_with_epsilon(d[i], t * hypot(12 * 2, 2.75 * 4), 1e-9);
        g_assert_cmpfloat_with_epsilon(val[i], f(0.5 + 12 * t, 5, 0.25 + 2.75 * t), 1e-4);
    }
    /* No line, or a slice outside the volume: nothing. */
    line.slice = NY;
    g_assert_false(larmor_line_profile(&line, v, n, d, val));
    line.set = FALSE;
    g_assert_false(larmor_line_profile(&line, v, n, d, val));
    g_free(d);
    g_free(val);
    lm_volume_free(v);
}

static LarmorRun *profile_make_run(double gain, int index)
{
    return gui_test_run_new(profile_make_data(gain), "linear", index);
}

static void test_profile_compare(void)
{
    LarmorCompareView *cv = LARMOR_COMPARE_VIEW(larmor_compare_view_new());
    GtkWidget *win = gtk_window_new();
    gtk_window_set_default_size(GTK_WINDOW(win), 1000, 700);
    gtk_window_set_child(GTK_WINDOW(win), GTK_WIDGET(cv));
    gui_test_show(GTK_WINDOW(win));
    LarmorVolume *truth = larmor_volume_new_take(profile_make_data(1), "truth");
    LarmorRun *runs[2] = { profile_make_run(2, 1), profile_make_run(0.5, 2) };
    larmor_compare_view_set_truth(cv, truth);
    larmor_compare_view_set_runs(cv, runs, 2);
    g_assert_cmpint(larmor_compare_view_get_profile_rows(cv), ==, 0);

    LarmorViewState *st = larmor_compare_view_get_state(cv);
    larmor_view_state_set_roi_tool(st, LARMOR_ROI_LINE);
    const int64_t cur[3] = { 0, 0, 2 };
    larmor_view_state_set_cursor(st, cur);
    gui_test_spin(0.2);
    /* Drawn on the second run's panel from (1, 2) to (9, 7). */
    LarmorSliceView *panel = larmor_compare_view_get_panel(cv, 2);
    double x0, y0, x1, y1;
    g_assert_true(larmor_slice_view_plane_to_widget(panel, 1, 2, &x0, &y0));
    g_assert_true(larmor_slice_view_plane_to_widget(panel, 9, 7, &x1, &y1));
    larmor_slice_view_draw_line(panel, x0, y0, x1, y1);
    LarmorLine line;
    larmor_view_state_get_line(st, &line);
    g_assert_true(line.set);
    g_assert_cmpint(line.slice, ==, 2);
    g_assert_cmpfloat_with_epsilon(line.u0, 1, 1e-6);
    g_assert_cmpfloat_with_epsilon(line.v1, 7, 1e-6);
    /* No ROI drawn by the line tool. */
    LarmorRoi roi;
    larmor_view_state_get_roi(st, &roi);
    g_assert_cmpint(roi.shape, ==, LARMOR_ROI_NONE);

    /* One profile per panel: truth x1, run #1 x2, run #2 x0.5. */
    g_assert_cmpint(larmor_compare_view_get_profile_rows(cv), ==, 3);
    g_assert_cmpint(larmor_plot_get_series_count(larmor_compare_view_get_profile_plot(cv)), ==, 3);
    const double gains[3] = { 1, 2, 0.5 };
    for (int r = 0; r < 3; r++) {
        const double *d, *val;
        const char *name;
        int n = larmor_compare_view_get_profile(cv, r, &d, &val, &name);
        g_assert_cmpint(n, ==, 11);
        g_assert_cmpstr(name, ==, r == 0 ? "truth" : larmor_run_get_label(runs[r - 1]));
        for (int i = 0; i < n; i++) {
            double t = (double)i / (n - 1);
            double x = line.u0 + t * (line.u1 - line.u0), y = line.v0 + t * (line.v1 - line.v0);
            g_assert_cmpfloat_with_epsilon(val[i], gains[r] * f(x, y, 2), 1e-3);
            g_assert_cmpfloat_with_epsilon(d[i], t * larmor_line_length_mm(&line, larmor_volume_get_data(truth)), 1e-9);
        }
    }
    gtk_widget_queue_draw(GTK_WIDGET(panel));
    gtk_test_widget_wait_for_draw(GTK_WIDGET(panel));

    /* The CSV: header, then one line per sample with every panel's value. */
    char *dir = gui_test_tmp_dir("profile");
    char *path = g_build_filename(dir, "profile.csv", NULL);
    GError *error = NULL;
    g_assert_true(larmor_compare_view_write_profile_csv(cv, path, &error));
    g_assert_no_error(error);
    char *csv = NULL;
    g_assert_true(g_file_get_contents(path, &csv, NULL, NULL));
    char **lines = g_strsplit(csv, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 1 + 11 + 1);
    g_assert_true(g_str_has_prefix(lines[0], "distance_mm,x,y,z,\"truth\",\"#1"));
    char **first = g_strsplit(lines[1], ",", -1);
    g_assert_cmpuint(g_strv_length(first), ==, 7);
    g_assert_cmpfloat(g_ascii_strtod(first[0], NULL), ==, 0);
    g_assert_cmpfloat_with_epsilon(g_ascii_strtod(first[4], NULL), f(line.u0, line.v0, 2), 1e-3);
    g_assert_cmpfloat_with_epsilon(g_ascii_strtod(first[5], NULL), 2 * f(line.u0, line.v0, 2), 1e-3);
    g_strfreev(first);
    g_strfreev(lines);
    g_free(csv);
    g_remove(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);

    /* Another slice keeps the line (it is on z 2); cleared: no profile, and exporting says why. */
    LarmorLine none = { .set = FALSE };
    larmor_view_state_set_line(st, &none);
    g_assert_cmpint(larmor_compare_view_get_profile_rows(cv), ==, 0);
    g_assert_false(larmor_compare_view_write_profile_csv(cv, "/nonexistent/p.csv", &error));
    g_assert_nonnull(error);
    g_clear_error(&error);

    gtk_window_destroy(GTK_WINDOW(win));
    g_object_unref(runs[0]);
    g_object_unref(runs[1]);
    g_object_unref(truth);
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    g_test_add_func("/roi-profile/stats", test_stats);
    g_test_add_func("/roi-profile/draw", test_draw);
    g_test_add_func("/roi-profile/compare", test_roi_compare);
    g_test_add_func("/roi-profile/snr", test_snr);
    g_test_add_func("/roi-profile/values", test_profile);
    g_test_add_func("/roi-profile/profile-compare", test_profile_compare);
    return g_test_run();
}
