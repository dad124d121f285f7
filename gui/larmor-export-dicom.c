/* Export -> DICOM Series… (docs/dicom.md): choosers for the new folder and
 * the template, the write in a GTask thread. */
#include "larmor-export-dicom.h"

#include "larmor-util.h"

gboolean larmor_export_dicom_write_images(const LarmorExportDicomImage *images, int n, gboolean as_set,
                                          const char *dir, const char *like_dir, lm_dicom_part part,
                                          gboolean enhanced, char **note, GError **error)
{
    lm_dicom_write_opts o;
    lm_dicom_write_opts_init(&o);
    o.part = part;
    o.enhanced = enhanced;
    o.like_dir = like_dir;
    lm_dicom_set_item *items = g_new0(lm_dicom_set_item, n > 0 ? n : 1);
    /* A dynamic image goes out as a dynamic series: every frame, with its
     * temporal position (the writer takes frames x N values on the grid of
     * frame 0). The images of one export have one frame count. */
    lm_volume *frames4d = g_new0(lm_volume, n > 0 ? n : 1);
    o.frames = n > 0 ? larmor_volume_get_n_frames(images[0].volume) : 1;
    o.frame_s = n > 0 ? larmor_volume_get_frame_s(images[0].volume) : 0;
    for (int i = 0; i < n; i++) {
        if (larmor_volume_get_n_frames(images[i].volume) != o.frames) {
            g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "%s: the images have %lld and %lld frames: export "
                        "them apart", dir, (long long)o.frames, (long long)larmor_volume_get_n_frames(images[i].volume));
            for (int k = 0; k < i; k++)
                g_free(frames4d[k].data);
            g_free(frames4d);
            g_free(items);
            return FALSE;
        }
        double window = images[i].window, level = images[i].level;
        if (!(window > 0)) /* parts and display modes line up */
            larmor_volume_auto_window(images[i].volume, (LarmorMode)part, &window, &level);
        items[i].v = larmor_volume_get_data(images[i].volume);
        if (o.frames > 1) {
            frames4d[i] = *items[i].v;
            int64_t got = 0;
            frames4d[i].data = larmor_volume_dup_frames(images[i].volume, &got);
            items[i].v = &frames4d[i];
        }
        items[i].name = images[i].name;
        items[i].series_description = images[i].description;
        items[i].window[0] = level;
        items[i].window[1] = window;
    }
    lm_error err = { 0 };
    lm_code rc;
    if (as_set) {
        rc = lm_dicom_write_set(dir, items, n, &o, &err);
    } else if (n == 1) {
        o.series_description = items[0].series_description;
        o.window[0] = items[0].window[0];
        o.window[1] = items[0].window[1];
        rc = lm_dicom_write_series(dir, items[0].v, &o, &err);
    } else {
        rc = lm_fail(&err, LM_ERR_INVALID, "%s: %d images make a set of series, not one", dir, n);
    }
    for (int i = 0; i < n; i++)
        g_free(frames4d[i].data);
    g_free(frames4d);
    g_free(items);
    if (rc != LM_OK) {
        larmor_set_error(error, &err);
        return FALSE;
    }
    if (note)
        *note = g_strdup(o.note);
    return TRUE;
}

gboolean larmor_export_dicom_write(LarmorVolume *v, const char *dir, const char *like_dir, lm_dicom_part part,
                                   gboolean enhanced, const char *description, char **note, GError **error)
{
    const LarmorExportDicomImage one = { .volume = v, .description = description };
    return larmor_export_dicom_write_images(&one, 1, FALSE, dir, like_dir, part, enhanced, note, error);
}

typedef struct {
    GWeakRef parent;
    LarmorExportDicomImage *images;
    int n;
    gboolean as_set;
    LarmorExportDicomDone done;
    char *dir, *like;
    lm_dicom_part part;
    gboolean enhanced;
    char *note;
} Job;

static void job_free(Job *j)
{
    g_weak_ref_clear(&j->parent);
    for (int i = 0; i < j->n; i++) {
        g_object_unref(j->images[i].volume);
        g_free((char *)j->images[i].name);
        g_free((char *)j->images[i].description);
    }
    g_free(j->images);
    g_free(j->dir);
    g_free(j->like);
    g_free(j->note);
    g_free(j);
}

static void write_thread(GTask *task, gpointer source, gpointer data, GCancellable *c)
{
    Job *j = data;
    GError *error = NULL;
    if (larmor_export_dicom_write_images(j->images, j->n, j->as_set, j->dir, j->like, j->part, j->enhanced, &j->note,
                                         &error))
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
        const char *note = j->note && *j->note ? j->note : NULL;
        char *msg = !ok ? g_strdup(error->message)
                    : j->as_set ? g_strdup_printf("Wrote %d DICOM series of one study into %s (%s)%s%s", j->n, j->dir,
                                                  lm_dicom_part_name(j->part), note ? "; " : "", note ? note : "")
                                : g_strdup_printf("Wrote the DICOM series %s (%s)%s%s", j->dir,
                                                  lm_dicom_part_name(j->part), note ? "; " : "", note ? note : "");
        j->done(parent, msg, !ok);
        g_free(msg);
        g_object_unref(parent);
    }
    g_clear_error(&error);
}

void larmor_export_dicom_write_async(GtkWindow *parent, const LarmorExportDicomImage *images, int n, gboolean as_set,
                                     const char *dir, const char *like_dir, lm_dicom_part part, gboolean enhanced,
                                     LarmorExportDicomDone done)
{
    Job *j = g_new0(Job, 1);
    g_weak_ref_init(&j->parent, parent);
    j->images = g_new0(LarmorExportDicomImage, n > 0 ? n : 1);
    j->n = n;
    for (int i = 0; i < n; i++) {
        j->images[i] = images[i];
        j->images[i].volume = g_object_ref(images[i].volume);
        j->images[i].name = g_strdup(images[i].name);
        j->images[i].description = g_strdup(images[i].description);
    }
    j->as_set = as_set;
    j->done = done;
    j->dir = g_strdup(dir);
    j->like = g_strdup(like_dir);
    j->part = part;
    j->enhanced = enhanced;
    GTask *task = g_task_new(NULL, NULL, on_written, NULL);
    g_task_set_task_data(task, j, (GDestroyNotify)job_free);
    g_task_run_in_thread(task, write_thread);
    g_object_unref(task);
}

/* The answers of the dialogs, until the last one closes. */
typedef struct {
    GWeakRef parent;
    LarmorExportDicomChosen chosen;
    char *dir;
    lm_dicom_part part;
    gboolean enhanced;
} Choice;

static void choice_free(Choice *c)
{
    g_weak_ref_clear(&c->parent);
    g_free(c->dir);
    g_free(c);
}

static void choice_done(Choice *c, const char *like)
{
    GtkWindow *parent = g_weak_ref_get(&c->parent);
    if (parent) {
        c->chosen(parent, c->dir, c->part, c->enhanced, like);
        g_object_unref(parent);
    }
    choice_free(c);
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
    Choice *c = data;
    char *p = response == GTK_RESPONSE_ACCEPT ? chosen_path(d) : NULL;
    g_object_unref(d);
    if (p)
        choice_done(c, p);
    else
        choice_free(c);
    g_free(p);
}

static void on_folder_response(GtkNativeDialog *d, int response, gpointer data)
{
    Choice *c = data;
    char *p = response == GTK_RESPONSE_ACCEPT ? chosen_path(d) : NULL;
    if (!p) {
        g_object_unref(d);
        choice_free(c);
        return;
    }
    c->dir = p;
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    GtkFileChooser *fc = GTK_FILE_CHOOSER(d);
    const char *part = gtk_file_chooser_get_choice(fc, "part");
    lm_dicom_part_parse(part ? part : "magnitude", &c->part, NULL);
    c->enhanced = g_strcmp0(gtk_file_chooser_get_choice(fc, "enhanced"), "true") == 0;
    gboolean like = g_strcmp0(gtk_file_chooser_get_choice(fc, "template"), "true") == 0;
    G_GNUC_END_IGNORE_DEPRECATIONS
    GtkWindow *parent = g_weak_ref_get(&c->parent);
    g_object_unref(d);
    if (!like || !parent) {
        if (parent)
            g_object_unref(parent);
        choice_done(c, NULL);
        return;
    }
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    GtkFileChooserNative *t = gtk_file_chooser_native_new("Choose the Template Series (Its Patient and Study)", parent,
                                                          GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER, "_Choose", "_Cancel");
    G_GNUC_END_IGNORE_DEPRECATIONS
    g_object_unref(parent);
    gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(t), TRUE);
    g_signal_connect(t, "response", G_CALLBACK(on_template_response), c);
    gtk_native_dialog_show(GTK_NATIVE_DIALOG(t));
}

void larmor_export_dicom_choose(GtkWindow *parent, const char *title, const char *name_hint,
                                LarmorExportDicomChosen chosen)
{
    Choice *c = g_new0(Choice, 1);
    g_weak_ref_init(&c->parent, parent);
    c->chosen = chosen;
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    GtkFileChooserNative *d = gtk_file_chooser_native_new(title, parent, GTK_FILE_CHOOSER_ACTION_SAVE, "_Export",
                                                          "_Cancel");
    GtkFileChooser *fc = GTK_FILE_CHOOSER(d);
    gtk_file_chooser_set_current_name(fc, name_hint && *name_hint ? name_hint : "image-dicom");
    gtk_file_chooser_add_choice(fc, "part", "Part", (const char *[]){ "magnitude", "phase", "real", "imag", NULL },
                                (const char *[]){ "Magnitude", "Phase", "Real", "Imaginary", NULL });
    gtk_file_chooser_set_choice(fc, "part", "magnitude");
    gtk_file_chooser_add_choice(fc, "enhanced", "One multi-frame file (Enhanced MR)", NULL, NULL);
    gtk_file_chooser_add_choice(fc, "template", "Join a template series' patient and study (choose it next)", NULL,
                                NULL);
    G_GNUC_END_IGNORE_DEPRECATIONS
    gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(d), TRUE);
    g_signal_connect(d, "response", G_CALLBACK(on_folder_response), c);
    gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
}
