#include "larmor-window.h"

#include <math.h>
#include <string.h>

#include "larmor-coils-view.h"
#include "larmor-estimate.h"
#include "larmor-help.h"
#include "larmor-recon-panel.h"
#include "larmor-recon-task.h"
#include "larmor-runs-view.h"
#include "larmor-sweep-view.h"
#include "larmor-phantom-dialog.h"
#include "larmor-session.h"
#include "larmor-util.h"
#include "larmor-open-times.h"
#include "larmor-window-size.h"
#include "larmor.h"

#include "larmor-window-private.h"

enum { PROP_0, PROP_RADIOLOGICAL, PROP_SHOW_COLORBAR, N_PROPS };
static GParamSpec *props[N_PROPS];

G_DEFINE_FINAL_TYPE(LarmorWindow, larmor_window, GTK_TYPE_APPLICATION_WINDOW)

/* --- messages ---------------------------------------------------------- */

static gboolean hide_toast(gpointer data)
{
    LarmorWindow *self = data;
    self->toast_timeout = 0;
    gtk_revealer_set_reveal_child(self->toast_revealer, FALSE);
    return G_SOURCE_REMOVE;
}

void larmor_window_show_message(LarmorWindow *self, const char *text, gboolean error)
{
    g_clear_handle_id(&self->toast_timeout, g_source_remove);
    gtk_widget_set_visible(self->toast_undo, FALSE);
    gtk_label_set_text(self->toast_label, text);
    gtk_image_set_from_icon_name(self->toast_icon, error ? "dialog-error-symbolic" : "dialog-information-symbolic");
    GtkWidget *box = gtk_revealer_get_child(self->toast_revealer);
    if (error)
        gtk_widget_add_css_class(box, "error");
    else
        gtk_widget_remove_css_class(box, "error");
    gtk_revealer_set_reveal_child(self->toast_revealer, TRUE);
    /* Errors stay until dismissed: they may need reading twice. */
    if (!error)
        self->toast_timeout = g_timeout_add_seconds(5, hide_toast, self);
}

const char *larmor_window_get_message(LarmorWindow *self)
{
    return gtk_revealer_get_reveal_child(self->toast_revealer) ? gtk_label_get_text(self->toast_label) : NULL;
}

void larmor_window_clear_error(LarmorWindow *self)
{
    if (larmor_window_get_message(self) && gtk_widget_has_css_class(gtk_revealer_get_child(self->toast_revealer), "error"))
        hide_toast(self);
}

static void on_toast_close(GtkButton *b, LarmorWindow *self)
{
    hide_toast(self);
}

/* The bar with an Undo button; it goes after 10 s (Ctrl+Z still works). */
void larmor_window_show_undo_message(LarmorWindow *self, const char *text)
{
    larmor_window_show_message(self, text, FALSE);
    gtk_widget_set_visible(self->toast_undo, TRUE);
    g_clear_handle_id(&self->toast_timeout, g_source_remove);
    self->toast_timeout = g_timeout_add_seconds(10, hide_toast, self);
}

gboolean larmor_window_get_message_has_undo(LarmorWindow *self)
{
    return larmor_window_get_message(self) && gtk_widget_get_visible(self->toast_undo);
}

void larmor_window_show_error(LarmorWindow *self, const GError *error)
{
    larmor_window_show_message(self, error->message, TRUE);
}

/* --- choosing files (larmor-file-chooser.h) ---------------------------- */

void larmor_window_choose(LarmorWindow *self, const LarmorFileRequest *req, LarmorFileChosen done, gpointer data)
{
    larmor_choose_file(GTK_WINDOW(self), self->settings, req, done, data, NULL);
}

typedef struct {
    LarmorWindowPathFn fn;
} PathChoice;

static void on_path_chosen(GtkWindow *parent, GFile *const *files, int n, gboolean checked, gpointer data)
{
    PathChoice *c = data;
    char *path = g_file_get_path(files[0]);
    if (path)
        c->fn(LARMOR_WINDOW(parent), path);
    g_free(path);
}

void larmor_window_choose_path(LarmorWindow *self, const LarmorFileRequest *req, LarmorWindowPathFn fn)
{
    PathChoice *c = g_new(PathChoice, 1);
    c->fn = fn;
    larmor_choose_file(GTK_WINDOW(self), self->settings, req, on_path_chosen, c, g_free);
}

/* --- volumes list (truth, reference, run images) ----------------------- */

void larmor_window_volumes_remove(LarmorWindow *self, LarmorVolume *v)
{
    guint pos;
    if (v && g_list_store_find(self->volumes, v, &pos))
        g_list_store_remove(self->volumes, pos);
    /* Differences made from it (corrected - uncorrected) go with it. */
    for (guint i = g_list_model_get_n_items(G_LIST_MODEL(self->volumes)); v && i-- > 0;) {
        GObject *o = g_list_model_get_item(G_LIST_MODEL(self->volumes), i);
        gboolean from = g_object_get_data(o, "larmor-from-a") == v || g_object_get_data(o, "larmor-from-b") == v;
        g_object_unref(o);
        if (from)
            g_list_store_remove(self->volumes, i);
    }
}

/* --- display and help -------------------------------------------------- */

static void apply_display(LarmorWindow *self)
{
    LarmorViewState *ost = larmor_ortho_view_get_state(self->ortho_view);
    larmor_view_state_set_radiological(ost, self->radiological);
    larmor_view_state_set_show_colorbar(ost, self->show_colorbar);
    larmor_compare_view_set_display(self->compare_view, self->radiological, self->show_colorbar);
    larmor_coils_view_set_display(self->coils_view, self->radiological, self->show_colorbar);
}

void larmor_window_set_radiological(LarmorWindow *self, gboolean radiological)
{
    radiological = !!radiological;
    if (radiological == self->radiological)
        return;
    self->radiological = radiological;
    apply_display(self);
    if (self->settings)
        larmor_settings_set_bool(self->settings, "view", "radiological", radiological);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_RADIOLOGICAL]);
}

gboolean larmor_window_get_radiological(LarmorWindow *self)
{
    return self->radiological;
}

void larmor_window_set_show_colorbar(LarmorWindow *self, gboolean show)
{
    show = !!show;
    if (show == self->show_colorbar)
        return;
    self->show_colorbar = show;
    apply_display(self);
    if (self->settings)
        larmor_settings_set_bool(self->settings, "view", "colorbar", show);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_SHOW_COLORBAR]);
}

gboolean larmor_window_get_show_colorbar(LarmorWindow *self)
{
    return self->show_colorbar;
}

static void on_help_destroy(GtkWindow *help, LarmorWindow *self)
{
    if (self->help_window == help)
        self->help_window = NULL;
}

static void action_help(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    if (!self->help_window) {
        self->help_window = larmor_help_window_new(GTK_WINDOW(self));
        g_signal_connect_object(self->help_window, "destroy", G_CALLBACK(on_help_destroy), self, 0);
    }
    gtk_window_present(self->help_window);
}

gboolean larmor_window_select_run(LarmorWindow *self, LarmorRun *run)
{
    larmor_runs_view_select(self->runs_view, run);
    return larmor_window_selected_run(self) == run;
}

GListModel *larmor_window_get_volumes(LarmorWindow *self)
{
    return G_LIST_MODEL(self->volumes);
}

GtkWindow *larmor_window_get_help_window(LarmorWindow *self)
{
    return self->help_window;
}

static void larmor_window_get_property(GObject *object, guint id, GValue *value, GParamSpec *pspec)
{
    LarmorWindow *self = LARMOR_WINDOW(object);
    switch (id) {
    case PROP_RADIOLOGICAL: g_value_set_boolean(value, self->radiological); break;
    case PROP_SHOW_COLORBAR: g_value_set_boolean(value, self->show_colorbar); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
}

static void larmor_window_set_property(GObject *object, guint id, const GValue *value, GParamSpec *pspec)
{
    LarmorWindow *self = LARMOR_WINDOW(object);
    switch (id) {
    case PROP_RADIOLOGICAL: larmor_window_set_radiological(self, g_value_get_boolean(value)); break;
    case PROP_SHOW_COLORBAR: larmor_window_set_show_colorbar(self, g_value_get_boolean(value)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
}

/* --- pages ------------------------------------------------------------- */

void larmor_window_set_page(LarmorWindow *self, const char *name)
{
    gtk_stack_set_visible_child_name(self->main_stack, name);
}

const char *larmor_window_get_page(LarmorWindow *self)
{
    return gtk_stack_get_visible_child_name(self->main_stack);
}

static void action_page(GtkWidget *w, const char *name, GVariant *param)
{
    larmor_window_set_page(LARMOR_WINDOW(w), g_variant_get_string(param, NULL));
}

LarmorOrthoView *larmor_window_get_ortho_view(LarmorWindow *self)
{
    return self->ortho_view;
}

LarmorCoilsView *larmor_window_get_coils_view(LarmorWindow *self)
{
    return self->coils_view;
}

LarmorCompareView *larmor_window_get_compare_view(LarmorWindow *self)
{
    return self->compare_view;
}

GtkWidget *larmor_window_get_sweep_view(LarmorWindow *self)
{
    return GTK_WIDGET(self->sweep_view);
}

GtkWidget *larmor_window_get_sidebar(LarmorWindow *self)
{
    return self->sidebar;
}

LarmorReconPanel *larmor_window_get_recon_panel(LarmorWindow *self)
{
    return self->recon_panel;
}

/* --- state ------------------------------------------------------------- */

void larmor_window_update_actions(LarmorWindow *self)
{
    GtkWidget *w = GTK_WIDGET(self);
    gboolean running = self->task != NULL;
    gboolean ready = self->dataset && !self->loading && !running;
    gtk_widget_action_set_enabled(w, "win.reconstruct", ready);
    gtk_widget_action_set_enabled(w, "win.sweep", ready);
    gtk_widget_action_set_enabled(w, "win.cancel", running);
    gtk_widget_action_set_enabled(w, "win.open", !running);
    gtk_widget_action_set_enabled(w, "win.new-phantom", !running);
    gtk_widget_action_set_enabled(w, "win.open-truth", !running && self->dataset);
    gtk_widget_action_set_enabled(w, "win.open-maps", !running && !self->loading && self->dataset);
    gtk_widget_action_set_enabled(w, "win.open-fieldmap", !running && !self->loading && self->dataset);
    gtk_widget_action_set_enabled(w, "win.open-times", !running && !self->loading && self->dataset);
    gtk_widget_action_set_enabled(w, "win.auto-lambda",
                                  ready && larmor_recon_panel_auto_lambda_available(self->recon_panel));
    gtk_widget_action_set_enabled(w, "win.compare-fieldmap",
                                  ready && larmor_recon_panel_fieldmap_available(self->recon_panel, NULL));
    gboolean any = g_list_model_get_n_items(G_LIST_MODEL(self->runs)) > 0;
    gtk_widget_action_set_enabled(w, "win.export-csv", any);
    gtk_widget_action_set_enabled(w, "win.show-run", any);
    gtk_widget_action_set_enabled(w, "win.remove-run", any && !running);
    gtk_widget_action_set_enabled(w, "win.undo", self->undo_run != NULL && !running);
    gtk_widget_action_set_enabled(w, "win.save-session", self->dataset || any);
    gtk_widget_action_set_enabled(w, "win.open-session", !running && self->session_jobs == 0);
    larmor_window_listen_update_actions(self);
}

int larmor_window_count_unexported(LarmorWindow *self)
{
    int n = 0;
    for (guint i = 0; i < g_list_model_get_n_items(G_LIST_MODEL(self->runs)); i++) {
        LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), i);
        n += !larmor_run_get_exported(r);
        g_object_unref(r);
    }
    return n;
}

void larmor_window_set_confirm_close(LarmorWindow *self, gboolean confirm)
{
    self->confirm_close = confirm;
}

GtkWindow *larmor_window_get_close_dialog(LarmorWindow *self)
{
    return self->close_dialog;
}

static gboolean close_when_idle(gpointer data)
{
    LarmorWindow *self = data;
    if (!self->disposed)
        gtk_window_close(GTK_WINDOW(self));
    g_object_unref(self);
    return G_SOURCE_REMOVE;
}

static void on_close_dialog_response(GtkDialog *dialog, int response, LarmorWindow *self)
{
    self->close_dialog = NULL;
    gtk_window_destroy(GTK_WINDOW(dialog));
    if (response == LARMOR_CLOSE_QUIT) {
        /* After the dialog's response emission: it still refers to its parent. */
        self->close_confirmed = TRUE;
        g_idle_add(close_when_idle, g_object_ref(self));
    }
}

/* "N runs were not exported": Quit / Cancel. TRUE when the close must wait. */
static gboolean ask_before_close(LarmorWindow *self)
{
    if (!self->confirm_close || self->close_confirmed)
        return FALSE;
    if (self->close_dialog) { /* already asking */
        gtk_window_present(self->close_dialog);
        return TRUE;
    }
    int n = larmor_window_count_unexported(self);
    if (n == 0)
        return FALSE;
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    GtkWidget *d = gtk_message_dialog_new(GTK_WINDOW(self), GTK_DIALOG_MODAL | GTK_DIALOG_DESTROY_WITH_PARENT,
                                          GTK_MESSAGE_QUESTION, GTK_BUTTONS_NONE,
                                          n == 1 ? "Quit with %d run not exported?" : "Quit with %d runs not exported?", n);
    gtk_message_dialog_format_secondary_text(GTK_MESSAGE_DIALOG(d),
                                             "Their images and figures are lost on quitting. Export them with "
                                             "Save Session…, Export Image as NIfTI… or Export Metrics as CSV… first to keep them.");
    gtk_dialog_add_button(GTK_DIALOG(d), "_Cancel", LARMOR_CLOSE_CANCEL);
    GtkWidget *quit = gtk_dialog_add_button(GTK_DIALOG(d), "_Quit", LARMOR_CLOSE_QUIT);
    gtk_widget_add_css_class(quit, "destructive-action");
    gtk_dialog_set_default_response(GTK_DIALOG(d), LARMOR_CLOSE_CANCEL);
    G_GNUC_END_IGNORE_DEPRECATIONS
    g_signal_connect(d, "response", G_CALLBACK(on_close_dialog_response), self);
    self->close_dialog = GTK_WINDOW(d);
    gtk_window_present(GTK_WINDOW(d));
    return TRUE;
}

static gboolean on_close_request(GtkWindow *window, gpointer data)
{
    LarmorWindow *self = LARMOR_WINDOW(window);
    if (ask_before_close(self))
        return TRUE;
    if (self->settings) {
        int w, h;
        gtk_window_get_default_size(window, &w, &h);
        larmor_window_size_fit(gtk_widget_get_display(GTK_WIDGET(window)), &w, &h);
        larmor_settings_set_int(self->settings, "window", "width", w);
        larmor_settings_set_int(self->settings, "window", "height", h);
        larmor_settings_set_bool(self->settings, "window", "maximized", gtk_window_is_maximized(window));
        larmor_settings_set_int(self->settings, "window", "sidebar", gtk_paned_get_position(self->paned));
        larmor_settings_set_int(self->settings, "view", "colormap",
                                larmor_view_state_get_user_colormap(larmor_ortho_view_get_state(self->ortho_view)));
        larmor_window_save_params(self);
    }
    if (self->task) {
        /* Let the worker stop and free its buffers before the window goes. */
        self->close_pending = TRUE;
        g_cancellable_cancel(self->task_cancellable);
        gtk_widget_set_visible(GTK_WIDGET(self), FALSE);
        return TRUE;
    }
    return FALSE;
}

static void larmor_window_dispose(GObject *object)
{
    LarmorWindow *self = LARMOR_WINDOW(object);
    self->disposed = TRUE;
    g_clear_handle_id(&self->toast_timeout, g_source_remove);
    g_clear_object(&self->undo_run);
    if (self->help_window) {
        GtkWindow *h = self->help_window;
        self->help_window = NULL;
        gtk_window_destroy(h);
    }
    if (self->load_cancellable)
        g_cancellable_cancel(self->load_cancellable);
    if (self->task_cancellable)
        g_cancellable_cancel(self->task_cancellable);
    if (self->task)
        g_signal_handlers_disconnect_by_data(self->task, self);
    if (self->runs) {
        for (guint i = 0; i < g_list_model_get_n_items(G_LIST_MODEL(self->runs)); i++) {
            LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), i);
            g_signal_handlers_disconnect_by_data(r, self);
            if (larmor_run_get_live(r))
                g_signal_handlers_disconnect_by_data(larmor_run_get_live(r), self);
            g_object_unref(r);
        }
    }
    g_clear_object(&self->live_image);
    larmor_window_listen_dispose(self);
    g_queue_clear(&self->compare_order);
    gtk_widget_dispose_template(GTK_WIDGET(object), LARMOR_TYPE_WINDOW);
    g_clear_object(&self->load_cancellable);
    g_clear_object(&self->task_cancellable);
    g_clear_object(&self->task);
    g_clear_object(&self->dataset);
    g_clear_object(&self->reference);
    g_clear_object(&self->runs);
    g_clear_object(&self->volumes);
    g_clear_object(&self->settings);
    g_clear_pointer(&self->last_status, g_free);
    g_clear_pointer(&self->truth_origin, g_free);
    g_clear_pointer(&self->pending_truth, g_free);
    g_clear_pointer(&self->truth_path, g_free);
    g_clear_pointer(&self->pending_session, larmor_session_free);
    g_clear_pointer(&self->session_path, g_free);
    g_clear_pointer(&self->session_note, g_free);
    g_clear_object(&self->fieldmap_shown);
    g_clear_pointer(&self->fieldmap_pending, g_free);
    G_OBJECT_CLASS(larmor_window_parent_class)->dispose(object);
}

static void larmor_window_class_init(LarmorWindowClass *klass)
{
    GtkWidgetClass *wc = GTK_WIDGET_CLASS(klass);
    G_OBJECT_CLASS(klass)->dispose = larmor_window_dispose;
    G_OBJECT_CLASS(klass)->get_property = larmor_window_get_property;
    G_OBJECT_CLASS(klass)->set_property = larmor_window_set_property;
    const GParamFlags pf = G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;
    props[PROP_RADIOLOGICAL] = g_param_spec_boolean("radiological", NULL, NULL, FALSE, pf);
    props[PROP_SHOW_COLORBAR] = g_param_spec_boolean("show-colorbar", NULL, NULL, TRUE, pf);
    g_object_class_install_properties(G_OBJECT_CLASS(klass), N_PROPS, props);
    g_type_ensure(LARMOR_TYPE_RECON_PANEL);
    g_type_ensure(LARMOR_TYPE_ORTHO_VIEW);
    g_type_ensure(LARMOR_TYPE_COMPARE_VIEW);
    g_type_ensure(LARMOR_TYPE_RUNS_VIEW);
    g_type_ensure(LARMOR_TYPE_SWEEP_VIEW);
    g_type_ensure(LARMOR_TYPE_COILS_VIEW);
    larmor_resources_ensure();
    gtk_widget_class_set_template_from_resource(wc, LARMOR_RESOURCE_PATH "/ui/larmor-window.ui");
#define CHILD(name) gtk_widget_class_bind_template_child(wc, LarmorWindow, name)
    CHILD(paned);
    CHILD(sidebar);
    CHILD(load_spinner);
    CHILD(data_title);
    CHILD(data_source);
    CHILD(data_summary);
    CHILD(truth_label);
    CHILD(maps_label);
    CHILD(recon_panel);
    CHILD(main_stack);
    CHILD(ortho_view);
    CHILD(compare_view);
    CHILD(runs_view);
    CHILD(sweep_view);
    CHILD(coils_view);
    CHILD(toast_revealer);
    CHILD(toast_icon);
    CHILD(toast_label);
    CHILD(toast_close);
    CHILD(toast_undo);
    CHILD(recent_menu);
    CHILD(grid_box);
    CHILD(matrix_entry);
    CHILD(fov_entry);
    CHILD(grid_apply);
    CHILD(estimate_label);
#undef CHILD

    /* Actions per class, GNOME Text Editor style; each controller installs
     * its own, with their shortcuts. */
    gtk_widget_class_install_action(wc, "win.help", NULL, action_help);
    gtk_widget_class_install_property_action(wc, "win.radiological", "radiological");
    gtk_widget_class_install_property_action(wc, "win.show-colorbar", "show-colorbar");
    gtk_widget_class_install_action(wc, "win.page", "s", action_page);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_F1, 0, "win.help", NULL);
    larmor_window_files_class_init(wc);
    larmor_window_recon_class_init(wc);
    larmor_window_runs_class_init(wc);
    larmor_window_export_class_init(wc);
    larmor_window_session_class_init(wc);
    larmor_window_listen_class_init(wc);
    static const char *pages[] = { "viewer", "compare", "runs", "sweep", "coils" };
    for (int i = 0; i < 5; i++)
        gtk_widget_class_add_binding_action(wc, GDK_KEY_1 + i, GDK_ALT_MASK, "win.page", "s", pages[i]);
}

static void larmor_window_init(LarmorWindow *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    self->confirm_close = TRUE;
    self->show_colorbar = TRUE;
    self->runs = g_list_store_new(LARMOR_TYPE_RUN);
    self->volumes = g_list_store_new(LARMOR_TYPE_VOLUME);
    g_queue_init(&self->compare_order);
    larmor_ortho_view_set_model(self->ortho_view, G_LIST_MODEL(self->volumes));
    larmor_runs_view_set_model(self->runs_view, G_LIST_MODEL(self->runs));
    larmor_coils_view_set_linked_state(self->coils_view, larmor_ortho_view_get_state(self->ortho_view));
    g_signal_connect(self->toast_close, "clicked", G_CALLBACK(on_toast_close), self);
    larmor_window_runs_init(self);
    larmor_window_files_init(self);
    larmor_window_listen_init(self);
    larmor_window_recon_init(self);
    g_signal_connect_swapped(self->recon_panel, "changed", G_CALLBACK(larmor_window_update_actions), self);
    g_signal_connect(self, "close-request", G_CALLBACK(on_close_request), NULL);
    larmor_recon_panel_set_status(self->recon_panel, "Ready", 0);
    larmor_window_update_actions(self);
}

static LarmorWindow *window_new(GtkApplication *app, LarmorSettings *settings, const char *problem,
                                gboolean load)
{
    LarmorWindow *self = g_object_new(LARMOR_TYPE_WINDOW, "application", app, NULL);
    self->settings = settings ? g_object_ref(settings) : NULL;
    char *remembered = NULL;
    if (settings) {
        int w = larmor_settings_get_int(settings, "window", "width", 0);
        int h = larmor_settings_get_int(settings, "window", "height", 0);
        larmor_window_size_fit(gtk_widget_get_display(GTK_WIDGET(self)), &w, &h);
        if (w > 400 && h > 300)
            gtk_window_set_default_size(GTK_WINDOW(self), w, h);
        if (larmor_settings_get_bool(settings, "window", "maximized", FALSE))
            gtk_window_maximize(GTK_WINDOW(self));
        int side = larmor_settings_get_int(settings, "window", "sidebar", 0);
        if (side >= 260 && side <= 700)
            gtk_paned_set_position(self->paned, side);
        larmor_view_state_set_colormap(larmor_ortho_view_get_state(self->ortho_view),
                                       larmor_settings_get_int(settings, "view", "colormap", 0));
        self->radiological = larmor_settings_get_bool(settings, "view", "radiological", FALSE);
        self->show_colorbar = larmor_settings_get_bool(settings, "view", "colorbar", TRUE);
        apply_display(self);
        remembered = larmor_settings_get_string(settings, "data", "problem", NULL);
        larmor_window_load_params(self);
        larmor_window_fill_recent(self);
    }
    /* The main menu's check items were made before these were set. */
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_RADIOLOGICAL]);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_SHOW_COLORBAR]);
    if (load) {
        LarmorDatasetSpec spec = { .kind = LARMOR_SOURCE_PROBLEM };
        const char *name = problem ? problem : remembered && lm_problem_find(remembered, NULL) ? remembered : "B32";
        g_strlcpy(spec.problem, name, sizeof spec.problem);
        larmor_window_load(self, &spec);
    } else
        larmor_window_show_dataset(self);
    g_free(remembered);
    return self;
}

LarmorWindow *larmor_window_new(GtkApplication *app, LarmorSettings *settings, const char *problem)
{
    return window_new(app, settings, problem, TRUE);
}

LarmorWindow *larmor_window_new_for_files(GtkApplication *app, LarmorSettings *settings, GFile *const *files,
                                          int n)
{
    /* Files that hold no data (a lone NIfTI) still get a window with the
     * default problem, so there is something to use them with. */
    gboolean data = FALSE;
    for (int i = 0; i < n; i++) {
        char *path = g_file_get_path(files[i]);
        data |= path && !larmor_window_is_volume_file(path);
        g_free(path);
    }
    /* A lone file of a data set (its truth.nii.gz, say) opens that data set. */
    char *lone = n == 1 && !data ? g_file_get_path(files[0]) : NULL;
    lm_acq_paths found = { 0 };
    if (lone && lm_acq_discover(lone, &found, NULL) == LM_OK) {
        lm_acq_paths_clear(&found);
        LarmorWindow *self = window_new(app, settings, NULL, FALSE);
        LarmorDatasetSpec spec = { .kind = LARMOR_SOURCE_FILES, .traj_path = lone };
        larmor_window_load(self, &spec);
        g_free(lone);
        return self;
    }
    g_free(lone);
    LarmorWindow *self = window_new(app, settings, NULL, !data);
    larmor_window_open_files(self, files, n);
    return self;
}
