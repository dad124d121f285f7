/* Comparing runs: compare through affines (a shifted run and one of
 * another matrix), re-scoring against a new truth, and runs of other data
 * not offered for comparison with their metrics recomputed or marked stale
 * when the truth changes. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-colormap.h"
#include "larmor-compare-view.h"
#include "larmor-plot.h"
#include "larmor-recon-panel.h"
#include "larmor-runs-view.h"
#include "larmor-slice-view.h"
#include "larmor-window.h"
#include "lm_io.h"
#include "lm_kernels.h"
#include "lm_metrics.h"
#include "lm_resample.h"
#include "lm_trajgen.h"

static LarmorApplication *app;

/* Linear in scanner mm: trilinear resampling reproduces it exactly. */
static double f(const double mm[3])
{
    return 100 + 2 * mm[0] - 1.5 * mm[1] + 0.5 * mm[2];
}

static void world(const lm_volume *v, int64_t i, int64_t j, int64_t k, double mm[3])
{
    const double ijk[3] = { (double)i, (double)j, (double)k };
    for (int r = 0; r < 3; r++) {
        mm[r] = v->affine[r][3];
        for (int c = 0; c < 3; c++)
            mm[r] += v->affine[r][c] * ijk[c];
    }
}

/* f sampled on a centred grid of n^3 voxels of `vox` mm, moved by shift_mm in x. */
static lm_volume *make(int64_t n, double vox, double shift_mm)
{
    const int64_t dims[3] = { n, n, n };
    const double mm[3] = { vox, vox, vox };
    lm_volume *v = lm_volume_new(dims, mm, NULL);
    g_assert_nonnull(v);
    v->affine[0][3] += shift_mm;
    for (int64_t k = 0; k < n; k++)
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < n; i++) {
                double p[3];
                world(v, i, j, k, p);
                v->data[i + n * (j + n * k)] = (float)f(p);
            }
    return v;
}

/* Largest |difference| over the voxels i, j, k in [lo, hi]. */
static double max_diff(LarmorVolume *d, int lo, int hi)
{
    const lm_volume *v = larmor_volume_get_data(d);
    double m = 0;
    for (int k = lo; k <= hi; k++)
        for (int j = lo; j <= hi; j++)
            for (int i = lo; i <= hi; i++)
                m = MAX(m, cabsf(v->data[i + v->dims[0] * (j + v->dims[1] * k)]));
    return m;
}

static void test_shifted(void)
{
    LarmorCompareView *cv = LARMOR_COMPARE_VIEW(larmor_compare_view_new());
    GtkWidget *win = gtk_window_new();
    gtk_window_set_default_size(GTK_WINDOW(win), 1000, 700);
    gtk_window_set_child(GTK_WINDOW(win), GTK_WIDGET(cv));
    gui_test_show(GTK_WINDOW(win));
    /* Truth: 16^3 of 2 mm. Run #1: the same grid moved 6 mm (3 voxels)
     * along x in its affine, with f where it now lies. Run #2: 8^3 of 4 mm. */
    LarmorVolume *truth = larmor_volume_new_take(make(16, 2, 0), "truth");
    LarmorRun *runs[2] = { gui_test_run_new(make(16, 2, 6), "linear", 1), gui_test_run_new(make(8, 4, 0), "linear", 2) };
    /* Index by index the shifted run differs from the truth everywhere (by 12). */
    const lm_volume *t = larmor_volume_get_data(truth), *a = larmor_volume_get_data(larmor_run_get_image(runs[0]));
    g_assert_cmpfloat(fabs(crealf(a->data[100]) - crealf(t->data[100]) - 12), <, 1e-4);
    larmor_compare_view_set_truth(cv, truth);
    larmor_compare_view_set_differences(cv, TRUE);
    larmor_compare_view_set_runs(cv, runs, 2);

    for (int p = 1; p <= 2; p++) {
        LarmorVolume *diff = NULL;
        LarmorVolume *shown = larmor_compare_view_get_volume(cv, p, &diff);
        g_assert_nonnull(shown);
        g_assert_nonnull(diff);
        g_assert_true(larmor_volume_same_world_grid(shown, truth));
        g_assert_true(shown != larmor_run_get_image(runs[p - 1])); /* resampled */
    }
    LarmorVolume *d1 = NULL, *d2 = NULL;
    larmor_compare_view_get_volume(cv, 1, &d1);
    larmor_compare_view_get_volume(cv, 2, &d2);
    /* Run #1 covers truth voxels x 3..15 (its x 0..15 sit at the truth's 3..18). */
    const lm_volume *dv = larmor_volume_get_data(d1);
    double m = 0;
    for (int k = 0; k < 16; k++)
        for (int j = 0; j < 16; j++)
            for (int i = 3; i <= 15; i++)
                m = MAX(m, cabsf(dv->data[i + 16 * (j + 16 * k)]));
    g_assert_cmpfloat(m, <, 1e-3); /* values ~100: float rounding only */
    /* Beyond it the run has nothing (zero outside): the difference is -truth there. */
    g_assert_cmpfloat(fabs(crealf(dv->data[1 + 16 * (8 + 16 * 8)]) + crealf(t->data[1 + 16 * (8 + 16 * 8)])), <, 1e-3);
    /* Run #2 (4 mm voxels at -16..12 mm) covers truth voxels 0..14 on every axis. */
    g_assert_cmpfloat(max_diff(d2, 0, 14), <, 1e-3);
    /* The same voxel of every panel is the same place: the values agree. */
    const int64_t ijk[3] = { 6, 9, 7 };
    lm_cfloat v0 = larmor_volume_value_at(truth, ijk);
    lm_cfloat v1 = larmor_volume_value_at(larmor_compare_view_get_volume(cv, 1, NULL), ijk);
    lm_cfloat v2 = larmor_volume_value_at(larmor_compare_view_get_volume(cv, 2, NULL), ijk);
    g_assert_cmpfloat(fabs(crealf(v1 - v0)), <, 1e-3);
    g_assert_cmpfloat(fabs(crealf(v2 - v0)), <, 1e-3);

    gtk_window_destroy(GTK_WINDOW(win));
    g_object_unref(runs[0]);
    g_object_unref(runs[1]);
    g_object_unref(truth);
}

static gboolean truth_changed(gpointer data)
{
    gpointer *d = data;
    LarmorDataset *ds = larmor_window_get_dataset(d[0]);
    return ds && larmor_dataset_get_truth(ds) != d[1] && !larmor_window_is_busy(d[0]);
}

static void test_rescore(void)
{
    LarmorWindow *w = gui_test_open_window(GTK_APPLICATION(app), 1200, 800);
    larmor_window_set_confirm_close(w, FALSE);
    LarmorReconParams p;
    larmor_recon_params_init(&p);
    g_strlcpy(p.variant, larmor_variant_is_available("cpu-simd", NULL) ? "cpu-simd" : "cpu-sp", sizeof p.variant);
    p.iters = 3;
    GError *error = NULL;
    g_assert_true(larmor_window_reconstruct(w, &p, &error));
    g_assert_true(gui_test_wait(gui_test_has_data, w, 300));
    LarmorRun *run = g_list_model_get_item(larmor_window_get_runs(w), 0);
    g_object_unref(run);
    g_assert_true(larmor_run_has_metrics(run));
    double before = larmor_run_get_percent_error(run);
    larmor_run_set_metrics_stale(run, TRUE);

    /* A 64^3 truth over the same FOV: the B32 truth upsampled, times 1.5. */
    LarmorVolume *t32 = larmor_dataset_get_truth(larmor_window_get_dataset(w));
    const lm_volume *tv = larmor_volume_get_data(t32);
    const int64_t d64[3] = { 64, 64, 64 };
    const double v64[3] = { tv->voxel_mm[0] / 2, tv->voxel_mm[1] / 2, tv->voxel_mm[2] / 2 };
    lm_volume *grid = lm_volume_new(d64, v64, NULL), *t64 = NULL;
    lm_error err = { 0 };
    g_assert_cmpint(lm_resample(tv, d64, v64, grid->affine, NULL, LM_OUTSIDE_NEAREST, &t64, &err), ==, LM_OK);
    lm_volume_free(grid);
    for (int64_t i = 0; i < lm_volume_count(t64); i++)
        t64->data[i] *= 1.5f;
    char *dir = gui_test_tmp_dir("align");
    char *path = g_build_filename(dir, "truth64.nii", NULL);
    g_assert_cmpint(lm_nifti_write(path, t64, 1, &err), ==, LM_OK);
    lm_volume_free(t64);
    larmor_window_open_truth(w, path);
    g_assert_true(gui_test_wait(truth_changed, (gpointer[]){ w, t32 }, 60));
    LarmorVolume *truth = larmor_dataset_get_truth(larmor_window_get_dataset(w));
    /* resampled onto the data's 32^3 grid through the affines, never adopted as the matrix */
    g_assert_cmpint(larmor_volume_get_data(truth)->dims[0], ==, 32);
    g_assert_cmpint(larmor_dataset_get_geom(larmor_window_get_dataset(w))->n[0], ==, 32);

    /* Still of the loaded data (another grid of it), re-scored, not stale. */
    g_assert_true(larmor_run_get_current(run));
    g_assert_false(larmor_run_get_metrics_stale(run));
    g_assert_cmpuint(larmor_run_get_metrics_truth(run), ==, larmor_volume_get_serial(truth));
    const lm_volume *img = larmor_volume_get_data(larmor_run_get_image(run));
    lm_volume *ton = NULL;
    g_assert_cmpint(lm_resample(larmor_volume_get_data(truth), img->dims, img->voxel_mm, img->affine, NULL,
                                LM_OUTSIDE_ZERO, &ton, &err), ==, LM_OK);
    lm_metrics m;
    g_assert_cmpint(lm_metrics_compute(img->data, ton->data, lm_volume_count(ton), NULL, 0, &m, &err), ==, LM_OK);
    lm_volume_free(ton);
    g_assert_cmpfloat(larmor_run_get_percent_error(run), ==, m.percent_error);
    g_assert_cmpfloat(larmor_run_get_psnr(run), ==, m.psnr_db);
    g_assert_cmpfloat(fabs(larmor_run_get_percent_error(run) - before), >, 1.0);
    /* Compared on the data's grid. */
    LarmorCompareView *cv = larmor_window_get_compare_view(w);
    g_assert_true(larmor_run_get_compare(run));
    LarmorVolume *shown = larmor_compare_view_get_volume(cv, 1, NULL);
    g_assert_nonnull(shown);
    g_assert_cmpint(larmor_volume_get_data(shown)->dims[0], ==, 32);
    char want[32];
    g_snprintf(want, sizeof want, "%.2f", m.percent_error);
    g_assert_cmpstr(larmor_compare_view_get_metric_text(cv, 0, "error"), ==, want);

    gtk_window_destroy(GTK_WINDOW(w));
    g_remove(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
}

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

/* Runs carry their data set: after other data are loaded an earlier run
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
    /* named after the folder, not "traj" */
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

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = gui_test_app_new();
    g_test_add_func("/compare/shifted", test_shifted);
    g_test_add_func("/compare/rescore", test_rescore);
    g_test_add_func("/compare/data-identity", test_data_identity);
    return gui_test_app_run(app);
}
