/* Line profiles: the magnitude along a line of a synthetic image whose
 * values are linear in x, y, z (bilinear sampling reproduces them exactly)
 * against values computed here, distances in mm with anisotropic voxels;
 * a line drawn on a compare panel gives one profile per panel (truth and
 * each run), plotted, and a CSV with one column per panel. No timed
 * assertions. */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "gui-test.h"
#include "larmor-compare-view.h"
#include "larmor-profile.h"
#include "larmor-slice-view.h"

#define NX 16
#define NY 12
#define NZ 4

static double f(double x, double y, double z)
{
    return 1 + 2 * x + 3 * y + 5 * z;
}

/* gain x f on 2 x 3 x 4 mm voxels. */
static lm_volume *make_data(double gain)
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
    lm_volume *v = make_data(1);
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

static LarmorRun *make_run(double gain, int index)
{
    LarmorReconParams p;
    larmor_recon_params_init(&p);
    lm_recon_result res;
    memset(&res, 0, sizeof res);
    res.image = make_data(gain);
    LarmorRun *r = larmor_run_new(&p, "linear", &res);
    larmor_run_set_index(r, index);
    return r;
}

static void test_compare(void)
{
    LarmorCompareView *cv = LARMOR_COMPARE_VIEW(larmor_compare_view_new());
    GtkWidget *win = gtk_window_new();
    gtk_window_set_default_size(GTK_WINDOW(win), 1000, 700);
    gtk_window_set_child(GTK_WINDOW(win), GTK_WIDGET(cv));
    gui_test_show(GTK_WINDOW(win));
    LarmorVolume *truth = larmor_volume_new_take(make_data(1), "truth");
    LarmorRun *runs[2] = { make_run(2, 1), make_run(0.5, 2) };
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
    g_test_add_func("/profile/values", test_profile);
    g_test_add_func("/profile/compare", test_compare);
    return g_test_run();
}
