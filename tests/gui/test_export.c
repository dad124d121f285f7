/* Run labels and exports say what a run is. File data are
 * named after their folder when the files are "traj" and "kspace"; a TV
 * run reads "ADMM" in the Method column and names its regulariser in its
 * label; a gridding run's CSV row has no regulariser or lambda; the
 * export's default file name is a clean slug of the run. */
#include <glib/gstdio.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-ortho-view.h"
#include "larmor-recon-panel.h"
#include "larmor-runs-view.h"
#include "larmor-window.h"
#include "lm_io.h"

static LarmorApplication *app;

static LarmorRun *reconstruct(LarmorWindow *w, lm_method method, lm_reg_kind reg)
{
    LarmorReconParams p;
    larmor_recon_params_init(&p);
    p.method = method;
    p.reg = reg;
    g_strlcpy(p.variant, "cpu-nufft", sizeof p.variant);
    p.iters = 3;
    p.lambda = 0.003;
    return gui_test_reconstruct(w, &p);
}

static void test_labels(void)
{
    LarmorWindow *w = gui_test_open_window(GTK_APPLICATION(app), 1200, 800);
    larmor_window_set_confirm_close(w, FALSE);

    /* B32 as files in a folder named for the data. */
    char *tmp = gui_test_tmp_dir("labels");
    char *dir = g_build_filename(tmp, "knee-b32", NULL);
    g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
    char *tp = g_build_filename(dir, "traj", NULL), *kp = g_build_filename(dir, "kspace", NULL);
    LarmorDataset *b32 = larmor_window_get_dataset(w);
    lm_error err = { 0 };
    g_assert_cmpint(lm_cfl_write_traj(tp, larmor_dataset_get_traj(b32), &err), ==, LM_OK);
    g_assert_cmpint(lm_cfl_write_kdata(kp, larmor_dataset_get_kdata(b32), larmor_dataset_get_traj(b32)->readout, &err),
                    ==, LM_OK);
    char *tc = g_strconcat(tp, ".cfl", NULL), *kc = g_strconcat(kp, ".cfl", NULL);
    GFile *files[2] = { g_file_new_for_path(tc), g_file_new_for_path(kc) };
    larmor_window_open_files(w, files, 2);
    g_assert_true(gui_test_wait(gui_test_has_data, w, 60));
    g_assert_true(larmor_window_get_dataset(w) != b32);
    g_assert_cmpstr(larmor_dataset_get_name(larmor_window_get_dataset(w)), ==, "knee-b32");

    /* TV: solved by ADMM, the label names the regulariser. */
    LarmorRun *tv = reconstruct(w, LM_METHOD_CG, LM_REG_TV);
    g_assert_cmpstr(larmor_run_get_dataset_name(tv), ==, "knee-b32");
    char *t = larmor_runs_cell_text(tv, "Method");
    g_assert_cmpstr(t, ==, "ADMM");
    g_free(t);
    g_assert_nonnull(strstr(larmor_run_get_label(tv), "ADMM · tv · cpu-nufft"));
    LarmorRun *id = reconstruct(w, LM_METHOD_CG, LM_REG_IDENTITY);
    t = larmor_runs_cell_text(id, "Method");
    g_assert_cmpstr(t, ==, "CG");
    g_free(t);
    g_assert_nonnull(strstr(larmor_run_get_label(id), "CG · identity"));

    /* Gridding: no regulariser, lambda or kernel in its CSV row. */
    LarmorRun *grid = reconstruct(w, LM_METHOD_GRID_KB, LM_REG_TV);
    char *csv = larmor_runs_to_csv(larmor_window_get_runs(w));
    char **lines = g_strsplit(csv, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), >=, 4);
    g_assert_true(g_str_has_prefix(lines[0], "index,dataset,method,variant,reg,lambda,"));
    g_assert_true(g_str_has_prefix(lines[1], "1,\"knee-b32\",cg,cpu-nufft,tv,0.003,"));
    g_assert_true(g_str_has_prefix(lines[3], "3,\"knee-b32\",grid-kb,,,,"));
    g_assert_null(strstr(lines[3], "tv"));
    g_strfreev(lines);
    g_free(csv);

    /* A run keeping its prior influence, then a sweep: the details are the
     * sweep's best point's, not "prior influence kept". */
    LarmorReconParams p;
    larmor_recon_params_init(&p);
    g_strlcpy(p.variant, "cpu-nufft", sizeof p.variant);
    p.iters = 3;
    p.prior_influence = TRUE;
    GError *error = NULL;
    g_assert_true(larmor_window_reconstruct(w, &p, &error));
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    LarmorReconPanel *panel = larmor_window_get_recon_panel(w);
    g_assert_nonnull(strstr(larmor_recon_panel_get_details(panel), "prior influence kept"));
    p.prior_influence = FALSE;
    g_assert_true(larmor_window_sweep(w, &p, 1e-3, 1e-1, 3, &error));
    g_assert_no_error(error);
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    const char *details = larmor_recon_panel_get_details(panel);
    g_assert_true(details == NULL || strstr(details, "prior influence") == NULL);

    /* Export names: of the run shown in the viewer. */
    LarmorOrthoView *ov = larmor_window_get_ortho_view(w);
    larmor_window_set_page(w, "viewer");
    larmor_ortho_view_show_volume(ov, larmor_run_get_image(tv));
    char *name = larmor_window_get_export_name(w);
    g_assert_cmpstr(name, ==, "run1-admm-tv-l0.003-cpu-nufft.nii.gz");
    g_free(name);
    larmor_ortho_view_show_volume(ov, larmor_run_get_image(grid));
    name = larmor_window_get_export_name(w);
    g_assert_cmpstr(name, ==, "run3-grid-kb.nii.gz");
    g_free(name);

    g_object_unref(files[0]);
    g_object_unref(files[1]);
    gtk_window_destroy(GTK_WINDOW(w));
    g_remove(tc);
    g_remove(kc);
    char *th = g_strconcat(tp, ".hdr", NULL), *kh = g_strconcat(kp, ".hdr", NULL);
    g_remove(th);
    g_remove(kh);
    g_rmdir(dir);
    g_rmdir(tmp);
    g_free(th);
    g_free(kh);
    g_free(tc);
    g_free(kc);
    g_free(tp);
    g_free(kp);
    g_free(dir);
    g_free(tmp);
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = gui_test_app_new();
    g_test_add_func("/export/runs-and-exports", test_labels);
    return gui_test_app_run(app);
}
