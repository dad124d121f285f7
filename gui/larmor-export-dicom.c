/* Export -> DICOM Series… (docs/dicom.md): choosers for the new folder and
 * the template, the write in a GTask thread. */
#include "larmor-export-dicom.h"

#include "larmor-util.h"

gboolean larmor_export_dicom_write(LarmorVolume *v, const char *dir, const char *like_dir, lm_dicom_part part,
                                   gboolean enhanced, const char *description, char **note, GError **error)
{
    if (larmor_volume_get_n_frames(v) > 1) {
        /* lm_dicom_write_series takes one volume: no temporal positions yet. */
        g_set_error(error, LARMOR_ERROR, LM_ERR_UNSUPPORTED, "%s: %lld frames: this library's DICOM writer takes one "
                    "volume (no temporal positions); export the frames as NIfTI 4D instead", dir,
                    (long long)larmor_volume_get_n_frames(v));
        return FALSE;
    }
    double window = 0, level = 0;
    larmor_volume_auto_window(v, (LarmorMode)part, &window, &level); /* parts and display modes line up */
    lm_dicom_write_opts o;
    lm_dicom_write_opts_init(&o);
    o.part = part;
    o.enhanced = enhanced;
    o.series_description = description;
    o.like_dir = like_dir;
    o.window[0] = level;
    o.window[1] = window;
    lm_error err = { 0 };
    if (lm_dicom_write_series(dir, larmor_volume_get_data(v), &o, &err) != LM_OK) {
        larmor_set_error(error, &err);
        return FALSE;
    }
    if (note)
        *note = g_strdup(o.note);
    return TRUE;
}

typedef struct {
    GWeakRef parent;
    LarmorVolume *volume;
    LarmorExportDicomDone done;
    char *dir, *like, *description;
    lm_dicom_part part;
    gboolean enhanced;
    char *note;
} Job;

static void job_free(Job *j)
{
    g_weak_ref_clear(&j->parent);
    g_object_unref(j->volume);
    g_free(j->dir);
    g_free(j->like);
    g_free(j->description);
    g_free(j->note);
    g_free(j);
}

static void write_thread(GTask *task, gpointer source, gpointer data, GCancellable *c)
{
    Job *j = data;
    GError *error = NULL;
    if (larmor_export_dicom_write(j->volume, j->dir, j->like, j->part, j->enhanced, j->description, &j->note, &error))
        g_task_return_boolean(task, TRUE);
    else
        g_task_return_error(task, error);
}

static void on_written(GObject *source, GAsyncResult *result, gpointer data)
{
    Job *j = g_task_get_task_data(G_TASK(result));
    GError *error = NULL;
    gboolean ok = g_task_propagate_boolean(G_TASK(result), &error);
    GtkWindow *parent = g_weak_ref_get(&j->parent);
    if (parent) {
        char *msg = ok ? g_strdup_printf("Wrote the DICOM series %s (%s)%s%s", j->dir, lm_dicom_part_name(j->part),
                                         j->note && *j->note ? "; " : "", j->note ? j->note : "")
                       : g_strdup(error->message);
        j->done(parent, msg, !ok);
        g_free(msg);
        g_object_unref(parent);
    }
    g_clear_error(&error);
}

static void run_job(Job *j)
{
    GTask *task = g_task_new(NULL, NULL, on_written, NULL);
    g_task_set_task_data(task, j, (GDestroyNotify)job_free);
    g_task_run_in_thread(task, write_thread);
    g_object_unref(task);
}

static char *chosen_path(GtkNativeDialog *d)
{
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    GFile *f = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(d));
    G_GNUC_END_IGNORE_DEPRECATIONS
    char *p = f ? g_file_get_path(f) : NULL;
    if (f)
        g_object_unref(f);
    return p;
}

static void on_template_response(GtkNativeDialog *d, int response, gpointer data)
{
    Job *j = data;
    char *p = response == GTK_RESPONSE_ACCEPT ? chosen_path(d) : NULL;
    g_object_unref(d);
    if (!p) {
        job_free(j);
        return;
    }
    j->like = p;
    run_job(j);
}

static void on_folder_response(GtkNativeDialog *d, int response, gpointer data)
{
    Job *j = data;
    char *p = response == GTK_RESPONSE_ACCEPT ? chosen_path(d) : NULL;
    if (!p) {
        g_object_unref(d);
        job_free(j);
        return;
    }
    j->dir = p;
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    GtkFileChooser *c = GTK_FILE_CHOOSER(d);
    const char *part = gtk_file_chooser_get_choice(c, "part");
    lm_dicom_part_parse(part ? part : "magnitude", &j->part, NULL);
    j->enhanced = g_strcmp0(gtk_file_chooser_get_choice(c, "enhanced"), "true") == 0;
    gboolean like = g_strcmp0(gtk_file_chooser_get_choice(c, "template"), "true") == 0;
    G_GNUC_END_IGNORE_DEPRECATIONS
    GtkWindow *parent = g_weak_ref_get(&j->parent);
    g_object_unref(d);
    if (!like || !parent) {
        if (parent)
            g_object_unref(parent);
        run_job(j);
        return;
    }
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    GtkFileChooserNative *t = gtk_file_chooser_native_new("Choose the Template Series (Its Patient and Study)", parent,
                                                          GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER, "_Choose", "_Cancel");
    G_GNUC_END_IGNORE_DEPRECATIONS
    g_object_unref(parent);
    gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(t), TRUE);
    g_signal_connect(t, "response", G_CALLBACK(on_template_response), j);
    gtk_native_dialog_show(GTK_NATIVE_DIALOG(t));
}

void larmor_export_dicom_start(GtkWindow *parent, LarmorVolume *v, const char *name_hint, LarmorExportDicomDone done)
{
    Job *j = g_new0(Job, 1);
    g_weak_ref_init(&j->parent, parent);
    j->volume = g_object_ref(v);
    j->done = done;
    char *stem = g_strdup(name_hint && *name_hint ? name_hint : "image");
    char *dot = strstr(stem, ".nii");
    if (dot)
        *dot = '\0';
    j->description = g_strconcat("Larmor ", stem, NULL);
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    GtkFileChooserNative *d = gtk_file_chooser_native_new("Export Image as DICOM Series (a New Folder)", parent,
                                                          GTK_FILE_CHOOSER_ACTION_SAVE, "_Export", "_Cancel");
    GtkFileChooser *c = GTK_FILE_CHOOSER(d);
    char *name = g_strconcat(stem, "-dicom", NULL);
    gtk_file_chooser_set_current_name(c, name);
    gtk_file_chooser_add_choice(c, "part", "Part", (const char *[]){ "magnitude", "phase", "real", "imag", NULL },
                                (const char *[]){ "Magnitude", "Phase", "Real", "Imaginary", NULL });
    gtk_file_chooser_set_choice(c, "part", "magnitude");
    gtk_file_chooser_add_choice(c, "enhanced", "One multi-frame file (Enhanced MR)", NULL, NULL);
    gtk_file_chooser_add_choice(c, "template", "Join a template series' patient and study (choose it next)", NULL,
                                NULL);
    G_GNUC_END_IGNORE_DEPRECATIONS
    g_free(name);
    g_free(stem);
    gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(d), TRUE);
    g_signal_connect(d, "response", G_CALLBACK(on_folder_response), j);
    gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
}
