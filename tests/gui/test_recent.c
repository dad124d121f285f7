/* Recent data sets: kept in the settings (newest first, at most 8, a data
 * set opened again moves to the front, entries with a missing file
 * dropped), listed in the main menu's "Open Recent" and recorded when data
 * files are opened; the "unsaved runs" question on closing the window. */
#include <glib/gstdio.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-settings.h"
#include "larmor-recon-panel.h"
#include "larmor-run.h"
#include "larmor-window.h"

static GtkApplication *app;

static char *touch(const char *dir, const char *name)
{
    char *p = g_build_filename(dir, name, NULL);
    g_assert_true(g_file_set_contents(p, "x", 1, NULL));
    return p;
}

static int count_recent(LarmorSettings *s)
{
    char ***r = larmor_settings_get_recent(s);
    int n = 0;
    for (; r[n]; n++)
        g_strfreev(r[n]);
    g_free(r);
    return n;
}

static void test_settings(void)
{
    char *dir = gui_test_tmp_dir("recent");
    char *ini = g_build_filename(dir, "settings.ini", NULL);
    LarmorSettings *s = larmor_settings_new(ini);
    char *files[10][2];
    for (int i = 0; i < 10; i++) {
        char *a = g_strdup_printf("traj%d.cfl", i), *b = g_strdup_printf("kspace%d.cfl", i);
        files[i][0] = touch(dir, a);
        files[i][1] = touch(dir, b);
        g_free(a), g_free(b);
        const char *paths[] = { files[i][0], files[i][1], NULL };
        larmor_settings_add_recent(s, paths);
    }
    /* At most 8, newest first. */
    char ***r = larmor_settings_get_recent(s);
    int n = 0;
    for (; r[n]; n++) {
        g_assert_cmpstr(r[n][0], ==, files[9 - n][0]);
        g_assert_cmpstr(r[n][1], ==, files[9 - n][1]);
        g_assert_null(r[n][2]);
        g_strfreev(r[n]);
    }
    g_free(r);
    g_assert_cmpint(n, ==, LARMOR_RECENT_MAX);
    /* Opened again: to the front, not twice. */
    const char *again[] = { files[5][0], files[5][1], NULL };
    larmor_settings_add_recent(s, again);
    r = larmor_settings_get_recent(s);
    g_assert_cmpstr(r[0][0], ==, files[5][0]);
    g_assert_cmpstr(r[1][0], ==, files[9][0]);
    for (n = 0; r[n]; n++) {
        if (n > 0)
            g_assert_cmpstr(r[n][0], !=, files[5][0]);
        g_strfreev(r[n]);
    }
    g_free(r);
    g_assert_cmpint(n, ==, 8);
    /* Persisted, and a missing file drops its entry. */
    g_assert_true(larmor_settings_save(s, NULL));
    g_object_unref(s);
    g_remove(files[9][1]);
    s = larmor_settings_new(ini);
    g_assert_cmpint(count_recent(s), ==, 7);
    r = larmor_settings_get_recent(s);
    g_assert_cmpstr(r[0][0], ==, files[5][0]);
    g_assert_cmpstr(r[1][0], ==, files[8][0]);
    for (n = 0; r[n]; n++)
        g_strfreev(r[n]);
    g_free(r);

    /* The window's "Open Recent" lists them, with file names in the labels. */
    LarmorWindow *w = larmor_window_new_for_files(app, s, NULL, 0);
    gui_test_show(GTK_WINDOW(w));
    GMenuModel *m = larmor_window_get_recent_menu(w);
    g_assert_cmpint(g_menu_model_get_n_items(m), ==, 7);
    char *label = NULL, *action = NULL;
    g_assert_true(g_menu_model_get_item_attribute(m, 0, G_MENU_ATTRIBUTE_LABEL, "s", &label));
    g_assert_true(g_menu_model_get_item_attribute(m, 0, G_MENU_ATTRIBUTE_ACTION, "s", &action));
    g_assert_nonnull(strstr(label, "traj5.cfl + kspace5.cfl"));
    g_assert_cmpstr(action, ==, "win.open-recent");
    g_free(label), g_free(action);
    /* Opening data files records them at the front of the list and menu. */
    char *t = touch(dir, "new.cfl"), *k = touch(dir, "newk.cfl");
    GFile *gf[2] = { g_file_new_for_path(t), g_file_new_for_path(k) };
    larmor_window_open_files(w, gf, 2);
    g_assert_cmpint(g_menu_model_get_n_items(m), ==, 8);
    g_assert_true(g_menu_model_get_item_attribute(m, 0, G_MENU_ATTRIBUTE_LABEL, "s", &label));
    g_assert_nonnull(strstr(label, "new.cfl + newk.cfl"));
    g_free(label);
    gui_test_spin(0.5); /* the (bad) files' load finishes with a message */
    g_object_unref(gf[0]), g_object_unref(gf[1]);
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.2);
    g_object_unref(s);
    /* Saved to disk too. */
    s = larmor_settings_new(ini);
    g_assert_cmpint(count_recent(s), ==, 8);
    g_object_unref(s);

    g_free(t), g_free(k);
    for (int i = 0; i < 10; i++)
        g_free(files[i][0]), g_free(files[i][1]);
    g_free(ini);
    g_free(dir);
}

static LarmorWindow *window_with_run(void)
{
    LarmorWindow *w = larmor_window_new(app, NULL, "B32");
    gui_test_show(GTK_WINDOW(w));
    g_assert_true(gui_test_wait(gui_test_has_data, w, 120));
    LarmorReconParams p;
    larmor_recon_params_init(&p); /* the default variant: auto */
    p.method = LM_METHOD_CG;
    p.iters = 2;
    GError *error = NULL;
    g_assert_true(larmor_window_reconstruct(w, &p, &error));
    g_assert_no_error(error);
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(w)), ==, 1);
    return w;
}

static gboolean dialog_shown(gpointer w)
{
    GtkWindow *d = larmor_window_get_close_dialog(w);
    return d && gtk_widget_get_mapped(GTK_WIDGET(d));
}

static void collect_text(GtkWidget *root, GString *out)
{
    for (GtkWidget *c = gtk_widget_get_first_child(root); c; c = gtk_widget_get_next_sibling(c)) {
        if (GTK_IS_LABEL(c))
            g_string_append_printf(out, "%s\n", gtk_label_get_text(GTK_LABEL(c)));
        collect_text(c, out);
    }
}

/* Closing with a run not exported asks; Cancel keeps the window, Quit
 * closes it; with every run exported (CSV) it closes without asking. */
static void test_unsaved(void)
{
    LarmorWindow *w = window_with_run();
    g_assert_cmpint(larmor_window_count_unexported(w), ==, 1);
    g_object_add_weak_pointer(G_OBJECT(w), (gpointer *)&w);

    gtk_window_close(GTK_WINDOW(w));
    g_assert_true(gui_test_wait(dialog_shown, w, 60));
    g_assert_nonnull(w);
    GtkWindow *d = larmor_window_get_close_dialog(w);
    g_assert_true(gtk_window_get_modal(d));
    g_assert_true(gtk_window_get_transient_for(d) == GTK_WINDOW(w));
    GString *text = g_string_new(NULL);
    collect_text(GTK_WIDGET(d), text);
    g_assert_nonnull(strstr(text->str, "1 run not exported"));
    g_assert_nonnull(strstr(text->str, "Quit"));
    g_assert_nonnull(strstr(text->str, "Cancel"));
    g_string_free(text, TRUE);
    /* A second close while asking does not stack another question. */
    gtk_window_close(GTK_WINDOW(w));
    g_assert_true(larmor_window_get_close_dialog(w) == d);

    /* Cancel: the window stays, with its run. */
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    gtk_dialog_response(GTK_DIALOG(d), LARMOR_CLOSE_CANCEL);
    G_GNUC_END_IGNORE_DEPRECATIONS
    gui_test_spin(0.2);
    g_assert_nonnull(w);
    g_assert_null(larmor_window_get_close_dialog(w));
    g_assert_true(gtk_widget_get_visible(GTK_WIDGET(w)));
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(w)), ==, 1);

    /* Quit: the window goes. */
    gtk_window_close(GTK_WINDOW(w));
    g_assert_true(gui_test_wait(dialog_shown, w, 60));
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    gtk_dialog_response(GTK_DIALOG(larmor_window_get_close_dialog(w)), LARMOR_CLOSE_QUIT);
    G_GNUC_END_IGNORE_DEPRECATIONS
    g_assert_true(gui_test_wait_gone((gpointer *)&w));

    /* Exported (the runs' CSV): no question. */
    w = window_with_run();
    g_object_add_weak_pointer(G_OBJECT(w), (gpointer *)&w);
    char *dir = gui_test_tmp_dir("unsaved");
    char *csv = g_build_filename(dir, "runs.csv", NULL);
    GError *error = NULL;
    g_assert_true(larmor_window_export_csv(w, csv, &error));
    g_assert_no_error(error);
    g_assert_cmpint(larmor_window_count_unexported(w), ==, 0);
    gtk_window_close(GTK_WINDOW(w));
    g_assert_true(gui_test_wait_gone((gpointer *)&w));
    g_remove(csv);
    g_rmdir(dir);
    g_free(csv);
    g_free(dir);
}

static void on_activate(GApplication *a, gpointer data)
{
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = gtk_application_new("io.github.larmor.Larmor.TestRecent", G_APPLICATION_NON_UNIQUE);
    g_signal_connect(app, "activate", G_CALLBACK(on_activate), NULL);
    g_assert_true(g_application_register(G_APPLICATION(app), NULL, NULL));
    g_test_add_func("/recent/settings-and-menu", test_settings);
    g_test_add_func("/recent/unsaved-runs", test_unsaved);
    int rc = g_test_run();
    g_object_unref(app);
    return rc;
}
