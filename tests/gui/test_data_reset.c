/* Issue 25, defect 8: nothing of the data loaded before stays on screen as
 * if it belonged to the data loaded now. Each test loads one data set,
 * leaves a state behind, loads another and checks it is gone: the error
 * message of the old data; the viewer's image menu naming an old run over
 * "No image"; the overlay menu offering (and ticking) "Field map (Hz)" for
 * data without one; "Estimate maps" carried over to data that ship maps;
 * the status line under Reconstruct naming an old run's PSNR. */
#include <glib/gstdio.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-recon-panel.h"
#include "larmor-window.h"
#include "lm_io.h"

static LarmorApplication *app;

static gboolean has_data(gpointer w)
{
    return larmor_window_get_dataset(w) && !larmor_window_is_busy(w);
}

static LarmorWindow *open_window(void)
{
    LarmorWindow *w = LARMOR_WINDOW(larmor_window_new_for_files(GTK_APPLICATION(app), NULL, NULL, 0));
    larmor_window_set_confirm_close(w, FALSE);
    gtk_window_set_default_size(GTK_WINDOW(w), 1400, 900);
    gui_test_show(GTK_WINDOW(w));
    return w;
}

static void load(LarmorWindow *w, const LarmorDatasetSpec *spec)
{
    LarmorDataset *before = larmor_window_get_dataset(w);
    larmor_window_load(w, spec);
    g_assert_true(gui_test_wait(has_data, w, 120));
    g_assert_true(larmor_window_get_dataset(w) != before);
}

/* A 2D phantom on a 32 x 32 spiral: coils > 1 ship their true maps,
 * fieldmap_hz > 0 a synthetic field map. */
static void phantom(LarmorDatasetSpec *s, int coils, double fieldmap_hz, guint64 seed)
{
    memset(s, 0, sizeof *s);
    s->kind = LARMOR_SOURCE_PHANTOM;
    g_strlcpy(s->phantom, "shepp-logan-2d", sizeof s->phantom);
    s->matrix = 32;
    s->traj_kind = LM_TRAJ_SPIRAL2D;
    s->seed = seed;
    s->coils = coils;
    s->fieldmap_hz = fieldmap_hz;
}

static void test_error_message(void)
{
    LarmorWindow *w = open_window();
    LarmorDatasetSpec s;
    phantom(&s, 1, 0, 1);
    load(w, &s);
    larmor_window_show_message(w, "an error about the old data", TRUE);
    g_assert_cmpstr(larmor_window_get_message(w), ==, "an error about the old data");
    phantom(&s, 1, 0, 2);
    load(w, &s);
    g_assert_cmpstr(larmor_window_get_message(w), !=, "an error about the old data");
    gtk_window_destroy(GTK_WINDOW(w));
}

static void test_viewer_menu(void)
{
    LarmorWindow *w = open_window();
    LarmorDatasetSpec s;
    phantom(&s, 1, 0, 1);
    load(w, &s);
    LarmorReconParams p;
    larmor_recon_params_init(&p);
    p.method = LM_METHOD_GRID_LINEAR;
    GError *error = NULL;
    g_assert_true(larmor_window_reconstruct(w, &p, &error));
    g_assert_true(gui_test_wait(has_data, w, 120));
    LarmorOrthoView *ov = larmor_window_get_ortho_view(w);
    LarmorRun *run = g_list_model_get_item(larmor_window_get_runs(w), 0);
    g_assert_true(larmor_ortho_view_get_volume(ov) == larmor_run_get_image(run));
    g_assert_true(larmor_ortho_view_get_listed_volume(ov) == larmor_run_get_image(run));
    LarmorReconPanel *panel = larmor_window_get_recon_panel(w);
    g_assert_nonnull(strstr(larmor_recon_panel_get_status(panel), "#1"));
    /* The same data as files: no truth, so the viewer has nothing to show,
     * and its menu must not name the old run (still listed, of other data). */
    char *dir = g_dir_make_tmp("larmor-reset-XXXXXX", NULL);
    char *tp = g_build_filename(dir, "traj", NULL), *kp = g_build_filename(dir, "kspace", NULL);
    LarmorDataset *ds = larmor_window_get_dataset(w);
    lm_error err = { 0 };
    g_assert_cmpint(lm_cfl_write_traj(tp, larmor_dataset_get_traj(ds), &err), ==, LM_OK);
    g_assert_cmpint(lm_cfl_write_kdata(kp, larmor_dataset_get_kdata(ds), larmor_dataset_get_traj(ds)->readout, &err),
                    ==, LM_OK);
    char *tc = g_strconcat(tp, ".cfl", NULL), *kc = g_strconcat(kp, ".cfl", NULL);
    GFile *files[2] = { g_file_new_for_path(tc), g_file_new_for_path(kc) };
    larmor_window_open_files(w, files, 2);
    g_assert_true(gui_test_wait(has_data, w, 120));
    g_assert_false(larmor_run_get_current(run));
    g_assert_null(larmor_ortho_view_get_volume(ov));
    g_assert_null(larmor_ortho_view_get_listed_volume(ov));
    /* nor the status line its run's "#1 done ... PSNR" (the hand drive saw
     * the old data's PSNR under Reconstruct) */
    g_assert_cmpstr(larmor_recon_panel_get_status(panel), ==, "");
    g_object_unref(run);
    for (int i = 0; i < 2; i++)
        g_object_unref(files[i]);
    const char *names[] = { "traj.cfl", "traj.hdr", "kspace.cfl", "kspace.hdr" };
    for (int i = 0; i < 4; i++) {
        char *f = g_build_filename(dir, names[i], NULL);
        g_unlink(f);
        g_free(f);
    }
    g_rmdir(dir);
    g_free(tc), g_free(kc), g_free(tp), g_free(kp), g_free(dir);
    gtk_window_destroy(GTK_WINDOW(w));
}

static void test_fieldmap_overlay(void)
{
    LarmorWindow *w = open_window();
    LarmorOrthoView *ov = larmor_window_get_ortho_view(w);
    LarmorDatasetSpec s;
    phantom(&s, 1, 100, 1);
    load(w, &s);
    g_assert_true(larmor_ortho_view_offers_overlay(ov, LARMOR_OVERLAY_FIELDMAP));
    larmor_ortho_view_set_overlay(ov, LARMOR_OVERLAY_FIELDMAP);
    g_assert_cmpint(larmor_ortho_view_get_overlay(ov), ==, LARMOR_OVERLAY_FIELDMAP);
    phantom(&s, 1, 0, 2);
    load(w, &s);
    g_assert_cmpint(larmor_ortho_view_get_overlay(ov), !=, LARMOR_OVERLAY_FIELDMAP);
    g_assert_false(larmor_ortho_view_offers_overlay(ov, LARMOR_OVERLAY_FIELDMAP));
    g_assert_true(larmor_ortho_view_offers_overlay(ov, LARMOR_OVERLAY_INFLUENCE));
    /* Data with a field map offer it again. */
    phantom(&s, 1, 100, 3);
    load(w, &s);
    g_assert_true(larmor_ortho_view_offers_overlay(ov, LARMOR_OVERLAY_FIELDMAP));
    larmor_ortho_view_set_overlay(ov, LARMOR_OVERLAY_FIELDMAP);
    g_assert_cmpint(larmor_ortho_view_get_overlay(ov), ==, LARMOR_OVERLAY_FIELDMAP);
    gtk_window_destroy(GTK_WINDOW(w));
}

static void test_estimate_maps(void)
{
    LarmorWindow *w = open_window();
    LarmorReconPanel *panel = larmor_window_get_recon_panel(w);
    LarmorDatasetSpec s;
    phantom(&s, 4, 0, 1);
    load(w, &s);
    g_assert_nonnull(larmor_dataset_get_maps(larmor_window_get_dataset(w)));
    LarmorReconParams p;
    g_assert_true(larmor_recon_panel_get_params(panel, &p, NULL));
    p.coils = LARMOR_COILS_ESTIMATE;
    larmor_recon_panel_set_params(panel, &p);
    /* Other data that ship their maps: their maps, not estimation. */
    phantom(&s, 4, 0, 2);
    load(w, &s);
    g_assert_nonnull(larmor_dataset_get_maps(larmor_window_get_dataset(w)));
    g_assert_true(larmor_recon_panel_get_params(panel, &p, NULL));
    g_assert_cmpint(p.coils, ==, LARMOR_COILS_SENSE);
    /* A choice made for the data loaded now stays (a truth loading is no new data). */
    p.coils = LARMOR_COILS_ESTIMATE;
    larmor_recon_panel_set_params(panel, &p);
    g_assert_true(larmor_recon_panel_get_params(panel, &p, NULL));
    g_assert_cmpint(p.coils, ==, LARMOR_COILS_ESTIMATE);
    gtk_window_destroy(GTK_WINDOW(w));
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = larmor_application_new();
    g_application_set_flags(G_APPLICATION(app), G_APPLICATION_NON_UNIQUE);
    GError *error = NULL;
    g_assert_true(g_application_register(G_APPLICATION(app), NULL, &error));
    g_assert_no_error(error);
    g_application_hold(G_APPLICATION(app));
    g_test_add_func("/data-reset/error-message", test_error_message);
    g_test_add_func("/data-reset/viewer-menu", test_viewer_menu);
    g_test_add_func("/data-reset/fieldmap-overlay", test_fieldmap_overlay);
    g_test_add_func("/data-reset/estimate-maps", test_estimate_maps);
    int rc = g_test_run();
    g_application_release(G_APPLICATION(app));
    g_object_unref(app);
    return rc;
}
