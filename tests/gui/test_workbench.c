/* Issue 13's display and help items on the real window: the radiological
 * convention and colour bars as window actions that every view follows
 * and the settings keep; Undo of a deleted run (the same run object back
 * at its place, image and metrics intact); the keyboard shortcuts window
 * listing the accelerators the window and the slice views install; F1's
 * user guide from the GResource. No timed assertions. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-compare-view.h"
#include "larmor-help.h"
#include "larmor-ortho-view.h"
#include "larmor-recon-panel.h"
#include "larmor-run.h"
#include "larmor-settings.h"
#include "larmor-slice-view.h"
#include "larmor-window.h"

static LarmorApplication *app;

static void test_display_actions(void)
{
    char *dir = gui_test_tmp_dir("display");
    char *ini = g_build_filename(dir, "settings.ini", NULL);
    LarmorSettings *s = larmor_settings_new(ini);
    LarmorWindow *w = larmor_window_new(GTK_APPLICATION(app), s, "B32");
    gui_test_show(GTK_WINDOW(w));
    g_assert_true(gui_test_wait(gui_test_has_data, w, 120));
    LarmorViewState *ost = larmor_ortho_view_get_state(larmor_window_get_ortho_view(w));
    LarmorViewState *cst = larmor_compare_view_get_state(larmor_window_get_compare_view(w));
    g_assert_false(larmor_view_state_get_radiological(ost));
    g_assert_true(larmor_view_state_get_show_colorbar(ost));
    /* Phase takes the cyclic map through the viewer's map dropdown (bound
     * both ways to the state) and gives the user's map back after. */
    larmor_view_state_set_colormap(ost, LARMOR_COLORMAP_VIRIDIS);
    larmor_view_state_set_mode(ost, LARMOR_MODE_PHASE);
    gui_test_spin(0.05);
    g_assert_cmpint(larmor_view_state_get_colormap(ost), ==, LARMOR_COLORMAP_CYCLIC);
    larmor_view_state_set_mode(ost, LARMOR_MODE_MAGNITUDE);
    gui_test_spin(0.05);
    g_assert_cmpint(larmor_view_state_get_colormap(ost), ==, LARMOR_COLORMAP_VIRIDIS);

    /* Stateful actions (menu check items): toggled, every view follows. */
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.radiological", NULL));
    g_assert_true(larmor_window_get_radiological(w));
    g_assert_true(larmor_view_state_get_radiological(ost));
    g_assert_true(larmor_view_state_get_radiological(cst));
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.show-colorbar", NULL));
    g_assert_false(larmor_view_state_get_show_colorbar(ost));
    g_assert_false(larmor_view_state_get_show_colorbar(cst));
    g_assert_true(larmor_settings_get_bool(s, "view", "radiological", FALSE));
    g_assert_false(larmor_settings_get_bool(s, "view", "colorbar", TRUE));
    gui_test_close_window(w);
    GError *error = NULL;
    g_assert_true(larmor_settings_save(s, &error));
    g_assert_no_error(error);
    g_object_unref(s);

    /* Kept: a new window with the same settings file starts that way. */
    s = larmor_settings_new(ini);
    w = larmor_window_new(GTK_APPLICATION(app), s, "B32");
    gui_test_show(GTK_WINDOW(w));
    g_assert_true(gui_test_wait(gui_test_has_data, w, 120));
    ost = larmor_ortho_view_get_state(larmor_window_get_ortho_view(w));
    g_assert_true(larmor_view_state_get_radiological(ost));
    g_assert_false(larmor_view_state_get_show_colorbar(ost));
    /* The viewer's axial view has R on the screen's left. */
    LarmorSliceView *axial = larmor_ortho_view_get_slice_view(larmor_window_get_ortho_view(w), LARMOR_ORIENT_AXIAL);
    char *e[4];
    g_assert_true(larmor_slice_view_edge_labels(axial, e));
    g_assert_cmpstr(e[0], ==, "R");
    g_assert_cmpstr(e[1], ==, "L");
    for (int i = 0; i < 4; i++)
        g_free(e[i]);
    gui_test_close_window(w);
    g_object_unref(s);
    g_remove(ini);
    g_rmdir(dir);
    g_free(ini);
    g_free(dir);
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

/* Accelerators of a GtkShortcutsShortcut: space-separated, "<Alt>1...5"
 * a range; each parsed as (keyval, modifiers). */
static void add_accels(GArray *set, const char *accel)
{
    char **parts = g_strsplit(accel, " ", -1);
    for (char **p = parts; *p; p++) {
        const char *dots = strstr(*p, "...");
        guint key, lo_key, hi_key;
        GdkModifierType mods;
        if (dots) {
            char *lo = g_strndup(*p, (gsize)(dots - *p));
            char *prefix = g_strndup(*p, (gsize)(strrchr(lo, '>') ? strrchr(lo, '>') + 1 - lo : 0));
            char *hi = g_strconcat(prefix, dots + 3, NULL);
            g_assert_true(gtk_accelerator_parse(lo, &lo_key, &mods));
            g_assert_true(gtk_accelerator_parse(hi, &hi_key, NULL));
            for (key = lo_key; key <= hi_key; key++) {
                guint pair[2] = { key, mods };
                g_array_append_vals(set, pair, 1);
            }
            g_free(lo), g_free(prefix), g_free(hi);
        } else if (**p) {
            g_assert_true(gtk_accelerator_parse(*p, &key, &mods));
            guint pair[2] = { gdk_keyval_to_lower(key), mods };
            g_array_append_vals(set, pair, 1);
        }
    }
    g_strfreev(parts);
}

static gboolean listed(GArray *set, guint key, GdkModifierType mods)
{
    for (guint i = 0; i < set->len; i++) {
        guint *pair = &g_array_index(set, guint, 2 * i);
        if (pair[0] == gdk_keyval_to_lower(key) && pair[1] == (guint)mods)
            return TRUE;
    }
    return FALSE;
}

/* Every key binding of widget's class whose action starts with prefix is
 * listed in the shortcuts window; returns how many were checked. */
static int check_bindings(GtkWidget *widget, const char *prefix, GArray *set)
{
    int checked = 0;
    GListModel *ctrls = gtk_widget_observe_controllers(widget);
    for (guint i = 0; i < g_list_model_get_n_items(ctrls); i++) {
        GObject *c = g_list_model_get_item(ctrls, i);
        if (GTK_IS_SHORTCUT_CONTROLLER(c))
            for (guint j = 0; j < g_list_model_get_n_items(G_LIST_MODEL(c)); j++) {
                GtkShortcut *sc = g_list_model_get_item(G_LIST_MODEL(c), j);
                GtkShortcutAction *a = gtk_shortcut_get_action(sc);
                GtkShortcutTrigger *t = gtk_shortcut_get_trigger(sc);
                if (GTK_IS_NAMED_ACTION(a) && GTK_IS_KEYVAL_TRIGGER(t) &&
                    g_str_has_prefix(gtk_named_action_get_action_name(GTK_NAMED_ACTION(a)), prefix)) {
                    guint key = gtk_keyval_trigger_get_keyval(GTK_KEYVAL_TRIGGER(t));
                    GdkModifierType mods = gtk_keyval_trigger_get_modifiers(GTK_KEYVAL_TRIGGER(t));
                    char *name = gtk_accelerator_name(key, mods);
                    if (!listed(set, key, mods))
                        g_error("%s (%s) is not in the shortcuts window",
                                name, gtk_named_action_get_action_name(GTK_NAMED_ACTION(a)));
                    g_free(name);
                    checked++;
                }
                g_object_unref(sc);
            }
        g_object_unref(c);
    }
    g_object_unref(ctrls);
    return checked;
}

static void test_shortcuts_and_help(void)
{
    LarmorWindow *w = larmor_window_new(GTK_APPLICATION(app), NULL, "B32");
    gui_test_show(GTK_WINDOW(w));

    /* The shortcuts window: Ctrl+? (GtkApplication's accel for it). */
    char **accels = gtk_application_get_accels_for_action(GTK_APPLICATION(app), "win.show-help-overlay");
    g_assert_true(g_strv_contains((const char *const *)accels, "<Control>question"));
    g_strfreev(accels);
    GtkShortcutsWindow *overlay = gtk_application_window_get_help_overlay(GTK_APPLICATION_WINDOW(w));
    g_assert_nonnull(overlay);
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.show-help-overlay", NULL));
    gui_test_spin(0.2);
    g_assert_true(gtk_widget_get_visible(GTK_WIDGET(overlay)));
    gtk_widget_set_visible(GTK_WIDGET(overlay), FALSE);

    /* What it lists is what the window and the slice views install. */
    GArray *set = g_array_new(FALSE, FALSE, 2 * sizeof(guint));
    GtkBuilder *b = gtk_builder_new_from_resource(LARMOR_RESOURCE_PATH "/gtk/help-overlay.ui");
    GSList *objs = gtk_builder_get_objects(b);
    for (GSList *o = objs; o; o = o->next)
        if (GTK_IS_SHORTCUTS_SHORTCUT(o->data)) {
            char *acc = NULL;
            g_object_get(o->data, "accelerator", &acc, NULL);
            if (acc)
                add_accels(set, acc);
            g_free(acc);
        }
    g_slist_free(objs);
    g_object_unref(b);
    g_assert_cmpint(check_bindings(GTK_WIDGET(w), "win.", set), >=, 18);
    GtkWidget *sv = larmor_slice_view_new(LARMOR_ORIENT_AXIAL);
    g_object_ref_sink(sv);
    g_assert_cmpint(check_bindings(sv, "slice.", set), >=, 10);
    g_object_unref(sv);
    const char *app_actions[] = { "app.quit", "window.close", "win.show-help-overlay" };
    for (guint i = 0; i < G_N_ELEMENTS(app_actions); i++) {
        accels = gtk_application_get_accels_for_action(GTK_APPLICATION(app), app_actions[i]);
        g_assert_nonnull(accels[0]);
        for (char **a = accels; *a; a++) {
            guint key;
            GdkModifierType mods;
            g_assert_true(gtk_accelerator_parse(*a, &key, &mods));
            g_assert_true(listed(set, key, mods));
        }
        g_strfreev(accels);
    }
    g_array_unref(set);

    /* F1: the guide in a text view, from the resource. */
    char *md = larmor_help_guide_text();
    g_assert_nonnull(md);
    g_assert_nonnull(strstr(md, "# Larmor user guide"));
    g_assert_null(larmor_window_get_help_window(w));
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.help", NULL));
    GtkWindow *help = larmor_window_get_help_window(w);
    g_assert_nonnull(help);
    gtk_test_widget_wait_for_draw(GTK_WIDGET(help));
    g_assert_true(gtk_widget_get_visible(GTK_WIDGET(help)));
    GtkTextBuffer *buf = gtk_text_view_get_buffer(larmor_help_window_get_view(help));
    GtkTextIter s, e;
    gtk_text_buffer_get_bounds(buf, &s, &e);
    char *text = gtk_text_buffer_get_text(buf, &s, &e, FALSE);
    /* Headings without their '#', code without its backticks. */
    g_assert_true(g_str_has_prefix(text, "Larmor user guide\n"));
    g_assert_nonnull(strstr(text, "Sessions"));
    g_assert_nonnull(strstr(text, "larmor-cli recon"));
    g_assert_null(strstr(text, "`"));
    g_assert_null(strstr(text, "## "));
    g_free(text);
    g_free(md);
    /* Again: the same window, not a second one. */
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.help", NULL));
    g_assert_true(larmor_window_get_help_window(w) == help);
    gtk_window_destroy(help);
    g_assert_null(larmor_window_get_help_window(w));
    gui_test_close_window(w);
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = gui_test_app_new();
    g_test_add_func("/workbench/display-actions", test_display_actions);
    g_test_add_func("/workbench/undo-delete", test_undo_delete);
    g_test_add_func("/workbench/shortcuts-and-help", test_shortcuts_and_help);
    return gui_test_app_run(app);
}
