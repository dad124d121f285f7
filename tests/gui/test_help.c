/* Help: the shortcuts window lists every accelerator the window binds, F1
 * opens the guide (one window, not two), the guide's markdown rendering,
 * and the guide window closes with its button, Escape and Ctrl+W. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-compare-view.h"
#include "larmor-dataset.h"
#include "larmor-help.h"
#include "larmor-ortho-view.h"
#include "larmor-profile.h"
#include "larmor-recon-panel.h"
#include "larmor-run.h"
#include "larmor-settings.h"
#include "larmor-slice-view.h"
#include "larmor-volume.h"
#include "larmor-window.h"
#include "lm_io.h"
#include "lm_kernels.h"
#include "lm_trajgen.h"

static LarmorApplication *app;

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

/* Whether the text at the first occurrence of needle carries the tag. */
static gboolean tagged(GtkTextBuffer *buf, const char *needle, const char *tag_name)
{
    GtkTextIter s, e, ms, me;
    gtk_text_buffer_get_bounds(buf, &s, &e);
    if (!gtk_text_iter_forward_search(&s, needle, 0, &ms, &me, NULL))
        g_error("\"%s\" not in the rendered text", needle);
    GtkTextTag *tag = gtk_text_tag_table_lookup(gtk_text_buffer_get_tag_table(buf), tag_name);
    g_assert_nonnull(tag);
    for (GtkTextIter i = ms; gtk_text_iter_compare(&i, &me) < 0; gtk_text_iter_forward_char(&i))
        if (!gtk_text_iter_has_tag(&i, tag))
            return FALSE;
    return TRUE;
}

static void test_markdown(void)
{
    GtkTextBuffer *buf = gtk_text_buffer_new(NULL);
    larmor_help_render_markdown(buf, "# Guide\n"
                                     "Press *Apply*, then **Run now** with `a_b * c` and _this_ in\n"
                                     "my_file_name.nii; see [the docs](https://example.org) and 2 * 3 * 4 \\*x\\*.\n"
                                     "\n"
                                     "#### Small heading\n"
                                     "- item *one*\n"
                                     "  continued\n"
                                     "1. first\n"
                                     "12. twelfth");
    GtkTextIter s, e;
    gtk_text_buffer_get_bounds(buf, &s, &e);
    char *text = gtk_text_buffer_get_text(buf, &s, &e, FALSE);
    g_assert_cmpstr(text, ==, "Guide\n"
                              "Press Apply, then Run now with a_b * c and this in my_file_name.nii; see the docs "
                              "and 2 * 3 * 4 *x*.\n"
                              "\n"
                              "Small heading\n"
                              "• item one continued\n"
                              "1. first\n"
                              "12. twelfth\n");
    g_free(text);
    g_assert_true(tagged(buf, "Guide", "h1"));
    g_assert_true(tagged(buf, "Apply", "em"));
    g_assert_false(tagged(buf, "Press", "em"));
    g_assert_true(tagged(buf, "Run now", "bold"));
    g_assert_true(tagged(buf, "a_b * c", "code"));
    g_assert_false(tagged(buf, "a_b * c", "em"));
    g_assert_true(tagged(buf, "this", "em"));
    g_assert_false(tagged(buf, "file", "em"));
    g_assert_true(tagged(buf, "the docs", "link"));
    g_assert_false(tagged(buf, "3", "em"));
    g_assert_true(tagged(buf, "Small heading", "h3"));
    g_assert_true(tagged(buf, "one", "em"));
    g_assert_true(tagged(buf, "item", "bullet"));
    g_assert_true(tagged(buf, "twelfth", "bullet"));
    g_object_unref(buf);
}

/* The guide window has a header bar with a close button, and Escape and
 * Ctrl+W close it: its shortcut controller binds both keys, and what they
 * trigger closes the window. (Checked through the controller, not with key
 * presses: without a window manager under Xvfb the keyboard focus is not
 * reliably the new window's.) */
static void test_help_window_closes(void)
{
    static const char *keys[2] = { "Escape", "<Control>w" };
    for (int k = 0; k < 2; k++) {
        GtkWindow *help = larmor_help_window_new(NULL);
        GtkWidget *bar = gtk_window_get_titlebar(help);
        g_assert_true(GTK_IS_HEADER_BAR(bar));
        g_assert_true(gtk_header_bar_get_show_title_buttons(GTK_HEADER_BAR(bar)));
        gpointer weak = help;
        g_object_add_weak_pointer(G_OBJECT(help), &weak);
        gui_test_show(help);
        GtkShortcut *found = NULL;
        GListModel *ctrls = gtk_widget_observe_controllers(GTK_WIDGET(help));
        for (guint i = 0; i < g_list_model_get_n_items(ctrls) && !found; i++) {
            GObject *c = g_list_model_get_item(ctrls, i);
            if (GTK_IS_SHORTCUT_CONTROLLER(c))
                for (guint j = 0; j < g_list_model_get_n_items(G_LIST_MODEL(c)) && !found; j++) {
                    GtkShortcut *sc = g_list_model_get_item(G_LIST_MODEL(c), j);
                    char *t = gtk_shortcut_trigger_to_string(gtk_shortcut_get_trigger(sc));
                    if (strstr(t, keys[k]))
                        found = g_object_ref(sc);
                    g_free(t);
                    g_object_unref(sc);
                }
            g_object_unref(c);
        }
        g_object_unref(ctrls);
        g_assert_nonnull(found);
        g_assert_true(gtk_shortcut_action_activate(gtk_shortcut_get_action(found), 0, GTK_WIDGET(help), NULL));
        g_object_unref(found);
        g_assert_true(gui_test_wait_gone(&weak));
    }
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = gui_test_app_new();
    g_test_add_func("/help/shortcuts-and-help", test_shortcuts_and_help);
    g_test_add_func("/help/help-markdown", test_markdown);
    g_test_add_func("/help/help-window-closes", test_help_window_closes);
    return gui_test_app_run(app);
}
