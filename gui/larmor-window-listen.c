/* The window's side of File -> Listen for data… (larmor-listen.h): the
 * dialog, win.listen / win.stop-listening / win.save-received, the
 * sidebar's status line, and the received frames in the viewer as a cine
 * that follows the newest frame. */
#include "larmor-listen.h"

#include <string.h>

#include "larmor-file-chooser.h"
#include "larmor-time-bar.h"
#include "larmor-util.h"
#include "larmor-window-private.h"

/* ---- listening ------------------------------------------------------------ */

static void update_status(LarmorWindow *self)
{
    LarmorListen *l = self->listen;
    gtk_widget_set_visible(self->listen_box, l != NULL);
    if (!l)
        return;
    char *s = larmor_listen_get_status(l);
    gtk_label_set_text(self->listen_label, s);
    g_free(s);
    const char *note = larmor_listen_get_note(l);
    gtk_label_set_text(self->listen_note, note ? note : "");
    gtk_widget_set_visible(GTK_WIDGET(self->listen_note), note != NULL);
    gtk_widget_set_visible(self->listen_stop, larmor_listen_is_listening(l));
}

/* New frames: the first of a stream joins the images and is shown; later
 * ones are appended to it (the time bar follows), and the views move to
 * the newest frame unless the user stepped back or is playing. */
static void on_listen_changed(LarmorListen *l, LarmorWindow *self)
{
    LarmorVolume *frames = larmor_listen_get_frames(l);
    LarmorViewState *st = larmor_ortho_view_get_state(self->ortho_view);
    LarmorTimeBar *bar = larmor_ortho_view_get_time_bar(self->ortho_view);
    if (frames && frames != self->listen_shown) {
        g_list_store_append(self->volumes, frames);
        larmor_ortho_view_show_volume(self->ortho_view, frames);
        g_set_object(&self->listen_shown, frames);
        self->listen_frames_seen = 1;
        larmor_view_state_set_frame(st, 0);
    } else if (frames) {
        const int64_t n = larmor_volume_get_n_frames(frames);
        const gboolean at_end = larmor_view_state_get_frame(st) >= self->listen_frames_seen - 1;
        if (n != self->listen_frames_seen && at_end && !larmor_time_bar_get_playing(bar) &&
            larmor_ortho_view_get_volume(self->ortho_view) == frames)
            larmor_view_state_set_frame(st, (int)(n - 1));
        self->listen_frames_seen = n;
    }
    update_status(self);
    larmor_window_update_actions(self);
}

gboolean larmor_window_listen(LarmorWindow *self, const char *spec, GError **error)
{
    if (self->listen && larmor_listen_is_listening(self->listen)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_BUSY, "Already listening on %s:%d: stop first",
                    larmor_listen_get_host(self->listen), larmor_listen_get_port(self->listen));
        return FALSE;
    }
    LarmorListen *l = larmor_listen_new(spec, LARMOR_LISTEN_KEEP_DEFAULT, error);
    if (!l)
        return FALSE;
    if (self->listen) {
        g_signal_handlers_disconnect_by_data(self->listen, self);
        g_object_unref(self->listen);
    }
    self->listen = l;
    g_clear_object(&self->listen_shown);
    g_signal_connect(l, "changed", G_CALLBACK(on_listen_changed), self);
    update_status(self);
    larmor_window_update_actions(self);
    return TRUE;
}

void larmor_window_stop_listening(LarmorWindow *self)
{
    if (!self->listen)
        return;
    larmor_listen_stop(self->listen); /* its last "changed" updates the line */
    update_status(self);
    larmor_window_update_actions(self);
}

LarmorListen *larmor_window_get_listen(LarmorWindow *self)
{
    return self->listen;
}

const char *larmor_window_get_listen_status(LarmorWindow *self)
{
    return gtk_widget_get_visible(self->listen_box) ? gtk_label_get_text(self->listen_label) : NULL;
}

/* ---- saving ----------------------------------------------------------------- */

typedef struct {
    LarmorWindow *self;
    char *path;
    gboolean load;
} SaveDone;

static void on_saved(GObject *source, GAsyncResult *res, gpointer data)
{
    SaveDone *d = data;
    LarmorWindow *self = d->self;
    GError *error = NULL;
    guint64 n = larmor_listen_save_finish(LARMOR_LISTEN(source), res, &error);
    self->listen_saves--;
    if (!self->disposed) {
        if (error) {
            larmor_window_show_error(self, error);
        } else {
            char *base = g_path_get_basename(d->path);
            char *msg = g_strdup_printf("%s: %" G_GUINT64_FORMAT " received acquisitions saved", base, n);
            larmor_window_show_message(self, msg, FALSE);
            g_free(msg);
            g_free(base);
            if (d->load) { /* the stream as the data set: reconstructed offline like any file */
                GFile *f = g_file_new_for_path(d->path);
                larmor_window_open_files(self, &f, 1);
                g_object_unref(f);
            }
        }
        larmor_window_update_actions(self);
    }
    g_clear_error(&error);
    g_object_unref(self);
    g_free(d->path);
    g_free(d);
}

void larmor_window_save_received(LarmorWindow *self, const char *path, gboolean load)
{
    if (!self->listen)
        return;
    SaveDone *d = g_new0(SaveDone, 1);
    d->self = g_object_ref(self);
    d->path = g_str_has_suffix(path, ".h5") ? g_strdup(path) : g_strconcat(path, ".h5", NULL);
    d->load = load;
    self->listen_saves++;
    larmor_window_update_actions(self);
    larmor_listen_save_async(self->listen, d->path, on_saved, d);
}

static void on_save_chosen(GtkWindow *parent, GFile *const *files, int n, gboolean checked, gpointer data)
{
    char *path = g_file_get_path(files[0]);
    if (path)
        larmor_window_save_received(LARMOR_WINDOW(parent), path, checked);
    g_free(path);
}

static const char *const h5_filters[] = {"ISMRMRD (.h5)", "*.h5", NULL};

static void action_save_received(GtkWidget *w, const char *name, GVariant *param)
{
    const LarmorFileRequest req = {.title = "Save Received Data", .accept = "_Save", .save = TRUE,
                                   .current_name = "received.h5", .check = "Open as the data set",
                                   .filters = h5_filters};
    larmor_window_choose(LARMOR_WINDOW(w), &req, on_save_chosen, NULL);
}

static void action_stop_listening(GtkWidget *w, const char *name, GVariant *param)
{
    larmor_window_stop_listening(LARMOR_WINDOW(w));
}

/* ---- the dialog ---------------------------------------------------------------- */

#define DLG_WINDOW "larmor-listen-window"

static GtkWidget *dlg_part(GtkWindow *d, const char *key)
{
    return g_object_get_data(G_OBJECT(d), key);
}

static void on_address_changed(GtkEditable *e, GtkWindow *d)
{
    char *a = g_strstrip(g_strdup(gtk_editable_get_text(e)));
    gtk_widget_set_visible(dlg_part(d, "warning"), a[0] && strcmp(a, "127.0.0.1") != 0);
    g_free(a);
}

GtkWindow *larmor_listen_dialog_new(LarmorWindow *self)
{
    GtkWindow *d = GTK_WINDOW(gtk_window_new());
    gtk_window_set_title(d, "Listen for Data");
    gtk_window_set_transient_for(d, GTK_WINDOW(self));
    gtk_window_set_modal(d, TRUE);
    gtk_window_set_destroy_with_parent(d, TRUE);
    gtk_window_set_resizable(d, FALSE);
    g_object_set_data(G_OBJECT(d), DLG_WINDOW, self);

    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 10);
    gtk_widget_set_margin_start(box, 16);
    gtk_widget_set_margin_end(box, 16);
    gtk_widget_set_margin_top(box, 14);
    gtk_widget_set_margin_bottom(box, 14);
    GtkWidget *intro = gtk_label_new("Receive an MRD stream (ISMRMRD protocol) from a scanner or "
                                     "larmor-cli send; frames are shown as they arrive.");
    gtk_label_set_wrap(GTK_LABEL(intro), TRUE);
    gtk_label_set_max_width_chars(GTK_LABEL(intro), 48);
    gtk_label_set_xalign(GTK_LABEL(intro), 0);
    gtk_box_append(GTK_BOX(box), intro);

    GtkWidget *grid = gtk_grid_new();
    gtk_grid_set_row_spacing(GTK_GRID(grid), 6);
    gtk_grid_set_column_spacing(GTK_GRID(grid), 8);
    GtkWidget *al = gtk_label_new_with_mnemonic("_Address");
    gtk_label_set_xalign(GTK_LABEL(al), 0);
    GtkWidget *addr = gtk_entry_new();
    gtk_editable_set_text(GTK_EDITABLE(addr), "127.0.0.1");
    gtk_widget_set_hexpand(addr, TRUE);
    gtk_label_set_mnemonic_widget(GTK_LABEL(al), addr);
    GtkWidget *pl = gtk_label_new_with_mnemonic("_Port");
    gtk_label_set_xalign(GTK_LABEL(pl), 0);
    GtkWidget *port = gtk_spin_button_new_with_range(0, 65535, 1);
    gtk_spin_button_set_value(GTK_SPIN_BUTTON(port), LARMOR_LISTEN_PORT_DEFAULT);
    gtk_widget_set_tooltip_text(port, "0: any free port (the one chosen is shown while listening)");
    gtk_label_set_mnemonic_widget(GTK_LABEL(pl), port);
    gtk_grid_attach(GTK_GRID(grid), al, 0, 0, 1, 1);
    gtk_grid_attach(GTK_GRID(grid), addr, 1, 0, 1, 1);
    gtk_grid_attach(GTK_GRID(grid), pl, 0, 1, 1, 1);
    gtk_grid_attach(GTK_GRID(grid), port, 1, 1, 1, 1);
    gtk_box_append(GTK_BOX(box), grid);

    GtkWidget *warn = gtk_label_new("The MRD protocol has no authentication: anyone who can reach this "
                                    "address and port can send data and receive the images. Use another "
                                    "address than 127.0.0.1 only on the scanner's private network.");
    gtk_label_set_wrap(GTK_LABEL(warn), TRUE);
    gtk_label_set_max_width_chars(GTK_LABEL(warn), 48);
    gtk_label_set_xalign(GTK_LABEL(warn), 0);
    gtk_widget_add_css_class(warn, "listen-warning");
    gtk_widget_set_visible(warn, FALSE);
    gtk_box_append(GTK_BOX(box), warn);
    GtkWidget *errl = gtk_label_new(NULL);
    gtk_label_set_wrap(GTK_LABEL(errl), TRUE);
    gtk_label_set_xalign(GTK_LABEL(errl), 0);
    gtk_widget_add_css_class(errl, "listen-error");
    gtk_widget_set_visible(errl, FALSE);
    gtk_box_append(GTK_BOX(box), errl);

    GtkWidget *buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
    gtk_widget_set_halign(buttons, GTK_ALIGN_END);
    GtkWidget *cancel = gtk_button_new_with_mnemonic("_Cancel");
    GtkWidget *ok = gtk_button_new_with_mnemonic("_Listen");
    gtk_widget_add_css_class(ok, "suggested-action");
    gtk_box_append(GTK_BOX(buttons), cancel);
    gtk_box_append(GTK_BOX(buttons), ok);
    gtk_box_append(GTK_BOX(box), buttons);
    gtk_window_set_child(d, box);
    gtk_window_set_default_widget(d, ok);
    gtk_entry_set_activates_default(GTK_ENTRY(addr), TRUE);

    g_object_set_data(G_OBJECT(d), "address", addr);
    g_object_set_data(G_OBJECT(d), "port", port);
    g_object_set_data(G_OBJECT(d), "warning", warn);
    g_object_set_data(G_OBJECT(d), "error", errl);
    g_signal_connect(addr, "changed", G_CALLBACK(on_address_changed), d);
    g_signal_connect_swapped(cancel, "clicked", G_CALLBACK(gtk_window_destroy), d);
    g_signal_connect_swapped(ok, "clicked", G_CALLBACK(larmor_listen_dialog_accept), d);
    return d;
}

void larmor_listen_dialog_set(GtkWindow *d, const char *address, int port)
{
    gtk_editable_set_text(GTK_EDITABLE(dlg_part(d, "address")), address);
    gtk_spin_button_set_value(GTK_SPIN_BUTTON(dlg_part(d, "port")), port);
}

gboolean larmor_listen_dialog_warns(GtkWindow *d)
{
    return gtk_widget_get_visible(dlg_part(d, "warning"));
}

const char *larmor_listen_dialog_get_error(GtkWindow *d)
{
    GtkWidget *e = dlg_part(d, "error");
    return gtk_widget_get_visible(e) ? gtk_label_get_text(GTK_LABEL(e)) : NULL;
}

gboolean larmor_listen_dialog_accept(GtkWindow *d)
{
    LarmorWindow *self = g_object_get_data(G_OBJECT(d), DLG_WINDOW);
    char *addr = g_strstrip(g_strdup(gtk_editable_get_text(GTK_EDITABLE(dlg_part(d, "address")))));
    GtkSpinButton *port = GTK_SPIN_BUTTON(dlg_part(d, "port"));
    gtk_spin_button_update(port);
    char *spec = g_strdup_printf("%s:%d", addr[0] ? addr : "127.0.0.1", gtk_spin_button_get_value_as_int(port));
    g_free(addr);
    GError *error = NULL;
    gboolean ok = larmor_window_listen(self, spec, &error);
    g_free(spec);
    if (!ok) {
        GtkWidget *e = dlg_part(d, "error");
        gtk_label_set_text(GTK_LABEL(e), error->message);
        gtk_widget_set_visible(e, TRUE);
        g_error_free(error);
        return FALSE;
    }
    gtk_window_destroy(d);
    return TRUE;
}

static void action_listen(GtkWidget *w, const char *name, GVariant *param)
{
    gtk_window_present(larmor_listen_dialog_new(LARMOR_WINDOW(w)));
}

/* ---- the window's hooks ------------------------------------------------------------ */

void larmor_window_listen_update_actions(LarmorWindow *self)
{
    GtkWidget *w = GTK_WIDGET(self);
    const gboolean listening = self->listen && larmor_listen_is_listening(self->listen);
    gtk_widget_action_set_enabled(w, "win.listen", !listening);
    gtk_widget_action_set_enabled(w, "win.stop-listening", listening);
    gtk_widget_action_set_enabled(w, "win.save-received",
                                  self->listen && larmor_listen_has_data(self->listen) && self->listen_saves == 0);
}

void larmor_window_listen_class_init(GtkWidgetClass *wc)
{
    gtk_widget_class_install_action(wc, "win.listen", NULL, action_listen);
    gtk_widget_class_install_action(wc, "win.stop-listening", NULL, action_stop_listening);
    gtk_widget_class_install_action(wc, "win.save-received", NULL, action_save_received);
}

/* The status line at the top of the sidebar, shown once listening started. */
void larmor_window_listen_init(LarmorWindow *self)
{
    GtkWidget *child = gtk_scrolled_window_get_child(GTK_SCROLLED_WINDOW(self->sidebar));
    if (GTK_IS_VIEWPORT(child))
        child = gtk_viewport_get_child(GTK_VIEWPORT(child));
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 4);
    GtkWidget *row = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
    GtkWidget *head = gtk_label_new("MRD stream");
    gtk_label_set_xalign(GTK_LABEL(head), 0);
    gtk_widget_set_hexpand(head, TRUE);
    gtk_widget_add_css_class(head, "heading");
    GtkWidget *stop = gtk_button_new_with_label("Stop");
    gtk_actionable_set_action_name(GTK_ACTIONABLE(stop), "win.stop-listening");
    gtk_widget_set_tooltip_text(stop, "Stop listening (what was received stays)");
    gtk_box_append(GTK_BOX(row), head);
    gtk_box_append(GTK_BOX(row), stop);
    gtk_box_append(GTK_BOX(box), row);
    GtkWidget *label = gtk_label_new(NULL);
    gtk_label_set_xalign(GTK_LABEL(label), 0);
    gtk_label_set_wrap(GTK_LABEL(label), TRUE);
    gtk_label_set_selectable(GTK_LABEL(label), TRUE);
    gtk_box_append(GTK_BOX(box), label);
    GtkWidget *note = gtk_label_new(NULL);
    gtk_label_set_xalign(GTK_LABEL(note), 0);
    gtk_label_set_wrap(GTK_LABEL(note), TRUE);
    gtk_widget_add_css_class(note, "dim-label");
    gtk_box_append(GTK_BOX(box), note);
    gtk_widget_set_visible(box, FALSE);
    if (GTK_IS_BOX(child))
        gtk_box_prepend(GTK_BOX(child), box);
    self->listen_box = box;
    self->listen_label = GTK_LABEL(label);
    self->listen_note = GTK_LABEL(note);
    self->listen_stop = stop;
}

void larmor_window_listen_dispose(LarmorWindow *self)
{
    if (self->listen) {
        g_signal_handlers_disconnect_by_data(self->listen, self);
        larmor_listen_stop(self->listen);
        g_clear_object(&self->listen);
    }
    g_clear_object(&self->listen_shown);
}
