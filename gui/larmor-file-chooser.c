#include "larmor-file-chooser.h"

typedef struct {
    GtkWindow *parent;
    LarmorSettings *settings;
    LarmorFileChosen done;
    gpointer data;
    GDestroyNotify destroy;
    gboolean check;
} Chooser;

void larmor_remember_folder(LarmorSettings *settings, GFile *file)
{
    if (!settings || !file)
        return;
    GFile *parent = g_file_get_parent(file);
    char *path = parent ? g_file_get_path(parent) : NULL;
    if (path)
        larmor_settings_set_string(settings, "files", "last-folder", path);
    g_free(path);
    g_clear_object(&parent);
}

static void chooser_free(Chooser *c)
{
    g_object_unref(c->parent);
    g_clear_object(&c->settings);
    if (c->destroy)
        c->destroy(c->data);
    g_free(c);
}

static void on_response(GtkNativeDialog *native, int response, Chooser *c)
{
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    GtkFileChooser *fc = GTK_FILE_CHOOSER(native);
    GListModel *files = response == GTK_RESPONSE_ACCEPT ? gtk_file_chooser_get_files(fc) : NULL;
    gboolean checked = c->check && g_strcmp0(gtk_file_chooser_get_choice(fc, "check"), "true") == 0;
    G_GNUC_END_IGNORE_DEPRECATIONS
    guint n = files ? g_list_model_get_n_items(files) : 0;
    if (n > 0) {
        GFile **arr = g_new0(GFile *, n + 1);
        for (guint i = 0; i < n; i++)
            arr[i] = g_list_model_get_item(files, i);
        larmor_remember_folder(c->settings, arr[0]);
        c->done(c->parent, arr, (int)n, checked, c->data);
        for (guint i = 0; i < n; i++)
            g_object_unref(arr[i]);
        g_free(arr);
    }
    g_clear_object(&files);
    gtk_native_dialog_destroy(native);
    g_object_unref(native);
    chooser_free(c);
}

void larmor_choose_file(GtkWindow *parent, LarmorSettings *settings, const LarmorFileRequest *req,
                        LarmorFileChosen done, gpointer data, GDestroyNotify destroy)
{
    Chooser *c = g_new0(Chooser, 1);
    c->parent = g_object_ref(parent);
    c->settings = settings ? g_object_ref(settings) : NULL;
    c->done = done;
    c->data = data;
    c->destroy = destroy;
    c->check = req->check != NULL;
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    GtkFileChooserNative *native =
        gtk_file_chooser_native_new(req->title, parent, req->save ? GTK_FILE_CHOOSER_ACTION_SAVE : GTK_FILE_CHOOSER_ACTION_OPEN,
                                    req->accept, "_Cancel");
    GtkFileChooser *fc = GTK_FILE_CHOOSER(native);
    gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(native), TRUE);
    char *folder = settings ? larmor_settings_get_string(settings, "files", "last-folder", NULL) : NULL;
    if (folder) {
        GFile *f = g_file_new_for_path(folder);
        gtk_file_chooser_set_current_folder(fc, f, NULL);
        g_object_unref(f);
        g_free(folder);
    }
    if (req->multiple && !req->save)
        gtk_file_chooser_set_select_multiple(fc, TRUE);
    if (req->save && req->current_name)
        gtk_file_chooser_set_current_name(fc, req->current_name);
    if (req->check)
        gtk_file_chooser_add_choice(fc, "check", req->check, NULL, NULL);
    for (int i = 0; req->filters && req->filters[i] && req->filters[i + 1]; i += 2) {
        GtkFileFilter *f = gtk_file_filter_new();
        gtk_file_filter_set_name(f, req->filters[i]);
        char **patterns = g_strsplit(req->filters[i + 1], " ", -1);
        for (int k = 0; patterns[k]; k++)
            if (*patterns[k])
                gtk_file_filter_add_pattern(f, patterns[k]);
        g_strfreev(patterns);
        gtk_file_chooser_add_filter(fc, f);
        g_object_unref(f);
    }
    G_GNUC_END_IGNORE_DEPRECATIONS
    g_signal_connect(native, "response", G_CALLBACK(on_response), c);
    gtk_native_dialog_show(GTK_NATIVE_DIALOG(native));
}
