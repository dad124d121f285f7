/* Preferences: the settings of the last run come back in a new window,
 * and every setting of the panel (the anatomical regulariser and its edge
 * included) and the colour map after a restart. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-colormap.h"
#include "larmor-plot.h"
#include "larmor-recon-panel.h"
#include "larmor-recon-task.h"
#include "larmor-runs-view.h"
#include "larmor-slice-view.h"
#include "larmor-sweep-view.h"
#include "larmor-window.h"
#include "lm_io.h"
#include "lm_kernels.h"
#include "lm_metrics.h"
#include "lm_trajgen.h"

static LarmorApplication *app;

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

/* Every setting of the panel comes back after a restart, the anatomical
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

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = gui_test_app_new();
    g_test_add_func("/preferences/preferences", test_preferences);
    g_test_add_func("/preferences/settings-persist", test_settings_persist);
    return gui_test_app_run(app);
}
