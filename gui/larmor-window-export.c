/* The window's exports: the image shown (or the run selected) as NIfTI or
 * DICOM in a worker (every compared run as DICOM series of one study from
 * the compare page), the page as PNG, the runs table as CSV (atomic). */
#include "larmor-export-dicom.h"
#include "larmor-util.h"
#include "larmor-window-private.h"
#include "larmor.h"

/* The image to export: the selected run on the Runs page, else the one
 * shown in the viewer. */
static LarmorVolume *export_volume(LarmorWindow *self)
{
    if (g_strcmp0(larmor_window_get_page(self), "runs") == 0) {
        LarmorRun *r = larmor_window_selected_run(self);
        return r ? larmor_run_get_image(r) : NULL;
    }
    return larmor_ortho_view_get_volume(self->ortho_view);
}

typedef struct {
    LarmorVolume *volume;
    char *path;
    gboolean as_complex;
} NiftiJob;

static void nifti_job_free(NiftiJob *j)
{
    g_object_unref(j->volume);
    g_free(j->path);
    g_free(j);
}

static void nifti_thread(GTask *task, gpointer source, gpointer data, GCancellable *c)
{
    NiftiJob *j = data;
    lm_error err = { 0 };
    lm_code rc;
    if (larmor_volume_get_n_frames(j->volume) > 1) {
        /* A dynamic image: 4D (x, y, z, t), pixdim[4] the frame duration. */
        int64_t frames;
        lm_cfloat *x = larmor_volume_dup_frames(j->volume, &frames);
        rc = lm_nifti_write_series(j->path, larmor_volume_get_data(j->volume), frames, x, j->as_complex,
                                   larmor_volume_get_frame_s(j->volume), &err);
        g_free(x);
    } else
        rc = lm_nifti_write(j->path, larmor_volume_get_data(j->volume), j->as_complex, &err);
    if (rc != LM_OK) {
        GError *error = NULL;
        larmor_set_error(&error, &err);
        g_task_return_error(task, error);
    } else
        g_task_return_boolean(task, TRUE);
}

static void on_nifti_written(GObject *source, GAsyncResult *result, gpointer data)
{
    LarmorWindow *self = data;
    if (self->disposed) {
        g_object_unref(self);
        return;
    }
    GError *error = NULL;
    NiftiJob *j = g_task_get_task_data(G_TASK(result));
    if (!g_task_propagate_boolean(G_TASK(result), &error)) {
        larmor_window_show_error(self, error);
        g_error_free(error);
    } else {
        for (guint i = 0; i < g_list_model_get_n_items(G_LIST_MODEL(self->runs)); i++) {
            LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), i);
            if (larmor_run_get_image(r) == j->volume)
                larmor_run_set_exported(r, TRUE);
            g_object_unref(r);
        }
        char *t = g_strdup_printf("Wrote %s (%s)", j->path, j->as_complex ? "complex" : "magnitude");
        larmor_window_show_message(self, t, FALSE);
        g_free(t);
    }
    g_object_unref(self);
}

void larmor_window_export_nifti(LarmorWindow *self, const char *path, gboolean as_complex)
{
    LarmorVolume *v = export_volume(self);
    if (!v) {
        larmor_window_show_message(self, "Nothing to export: show or select an image first", TRUE);
        return;
    }
    NiftiJob *j = g_new0(NiftiJob, 1);
    j->volume = g_object_ref(v);
    j->path = g_str_has_suffix(path, ".nii") || g_str_has_suffix(path, ".nii.gz") ? g_strdup(path)
                                                                                   : g_strconcat(path, ".nii.gz", NULL);
    j->as_complex = as_complex;
    /* Compressing 128^3 takes a moment: off the main thread. */
    GTask *task = g_task_new(NULL, NULL, on_nifti_written, g_object_ref(self));
    g_task_set_task_data(task, j, (GDestroyNotify)nifti_job_free);
    g_task_run_in_thread(task, nifti_thread);
    g_object_unref(task);
}

static void on_nifti_chosen(GtkWindow *parent, GFile *const *files, int n, gboolean as_complex, gpointer data)
{
    char *p = g_file_get_path(files[0]);
    if (p)
        larmor_window_export_nifti(LARMOR_WINDOW(parent), p, as_complex);
    g_free(p);
}

/* "run12-admm-tv-l0.003-cpu-nufft.nii.gz" for a run's image, else the
 * image's name as a slug ("truth.nii.gz"). */
char *larmor_window_get_export_name(LarmorWindow *self)
{
    LarmorVolume *v = export_volume(self);
    char *stem = NULL;
    for (guint i = 0; v && !stem && i < g_list_model_get_n_items(G_LIST_MODEL(self->runs)); i++) {
        LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), i);
        if (larmor_run_get_image(r) == v)
            stem = larmor_run_get_file_stem(r);
        g_object_unref(r);
    }
    if (!stem)
        stem = larmor_name_slug(v ? larmor_volume_get_name(v) : NULL);
    char *file = g_strconcat(stem, ".nii.gz", NULL);
    g_free(stem);
    return file;
}

static void action_export_nifti(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    if (!export_volume(self)) {
        larmor_window_show_message(self, "Nothing to export: show or select an image first", TRUE);
        return;
    }
    static const char *const filters[] = { "NIfTI (.nii, .nii.gz)", "*.nii *.nii.gz", NULL };
    char *file = larmor_window_get_export_name(self);
    LarmorFileRequest req = { .title = "Export Image as NIfTI", .accept = "_Export", .save = TRUE,
                              .current_name = file, .check = "Store complex values (otherwise magnitude)",
                              .filters = filters };
    larmor_window_choose(self, &req, on_nifti_chosen, NULL);
    g_free(file);
}

/* What the PNG shows: the three views, the whole comparison, or the page. */
static GtkWidget *png_widget(LarmorWindow *self)
{
    const char *page = larmor_window_get_page(self);
    if (g_strcmp0(page, "viewer") == 0)
        return larmor_ortho_view_get_grid(self->ortho_view);
    if (g_strcmp0(page, "compare") == 0)
        return larmor_compare_view_get_panels_widget(self->compare_view);
    if (g_strcmp0(page, "sweep") == 0)
        return GTK_WIDGET(larmor_sweep_view_get_plot(self->sweep_view));
    return gtk_stack_get_visible_child(self->main_stack);
}

gboolean larmor_window_export_png(LarmorWindow *self, const char *path, GError **error)
{
    char *p = g_str_has_suffix(path, ".png") ? g_strdup(path) : g_strconcat(path, ".png", NULL);
    gboolean ok = larmor_widget_save_png(png_widget(self), p, error);
    if (ok) {
        char *t = g_strdup_printf("Wrote %s", p);
        larmor_window_show_message(self, t, FALSE);
        g_free(t);
    }
    g_free(p);
    return ok;
}

static void export_png_path(LarmorWindow *self, const char *path)
{
    GError *error = NULL;
    if (!larmor_window_export_png(self, path, &error)) {
        larmor_window_show_error(self, error);
        g_error_free(error);
    }
}

static void action_export_png(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    static const char *const filters[] = { "PNG images", "*.png", NULL };
    char *file = g_strdup_printf("larmor-%s.png", larmor_window_get_page(self));
    LarmorFileRequest req = { .title = "Export View as PNG", .accept = "_Export", .save = TRUE, .current_name = file,
                              .filters = filters };
    larmor_window_choose_path(self, &req, export_png_path);
    g_free(file);
}

gboolean larmor_window_export_csv(LarmorWindow *self, const char *path, GError **error)
{
    char *csv = larmor_runs_to_csv(G_LIST_MODEL(self->runs));
    /* g_file_set_contents: temporary file, fsync, rename (atomic). */
    gboolean ok = g_file_set_contents(path, csv, -1, error);
    if (ok) {
        for (guint i = 0; i < g_list_model_get_n_items(G_LIST_MODEL(self->runs)); i++) {
            LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), i);
            larmor_run_set_exported(r, TRUE);
            g_object_unref(r);
        }
        char *t = g_strdup_printf("Wrote %s", path);
        larmor_window_show_message(self, t, FALSE);
        g_free(t);
    }
    g_free(csv);
    return ok;
}

static void export_csv_path(LarmorWindow *self, const char *path)
{
    GError *error = NULL;
    if (!larmor_window_export_csv(self, path, &error)) {
        larmor_window_show_error(self, error);
        g_error_free(error);
    }
}

static void action_export_csv(GtkWidget *w, const char *name, GVariant *param)
{
    static const char *const filters[] = { "CSV (.csv)", "*.csv", NULL };
    static const LarmorFileRequest req = { .title = "Export Metrics as CSV", .accept = "_Export", .save = TRUE,
                                           .current_name = "larmor-runs.csv", .filters = filters };
    larmor_window_choose_path(LARMOR_WINDOW(w), &req, export_csv_path);
}

static void on_dicom_exported(GtkWindow *w, const char *message, gboolean is_error)
{
    larmor_window_show_message(LARMOR_WINDOW(w), message, is_error);
}

/* The window the user has for image v in part: the compare panel's state
 * (panel may be NULL) when it shows that part, else the viewer's for that
 * image and part; window 0 (the automatic one) when neither has one. */
static void shown_window(LarmorWindow *self, LarmorVolume *v, LarmorViewState *panel, lm_dicom_part part,
                         LarmorExportDicomImage *img)
{
    img->window = img->level = 0;
    if (panel && larmor_view_state_get_mode(panel) == (LarmorMode)part) { /* parts and modes line up */
        img->window = larmor_view_state_get_window(panel);
        img->level = larmor_view_state_get_level(panel);
    } else if (!larmor_ortho_view_get_image_window(self->ortho_view, v, (LarmorMode)part, &img->window,
                                                   &img->level)) {
        img->window = 0;
    }
}

/* The runs the compare page shows (the order the panels have, after the
 * truth's), as larmor_window_update_compare picks them. */
static int compared_runs(LarmorWindow *self, LarmorRun **runs)
{
    int n = 0;
    for (guint i = 0; i < g_list_model_get_n_items(G_LIST_MODEL(self->runs)) && n < LARMOR_COMPARE_MAX_RUNS; i++) {
        LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), i);
        if (larmor_run_get_compare(r) && larmor_run_get_current(r) && larmor_run_get_image(r))
            runs[n++] = r;
        g_object_unref(r);
    }
    return n;
}

void larmor_window_export_dicom(LarmorWindow *self, const char *dir, lm_dicom_part part, gboolean enhanced,
                                const char *like_dir)
{
    LarmorRun *runs[LARMOR_COMPARE_MAX_RUNS];
    const int nruns = g_strcmp0(larmor_window_get_page(self), "compare") == 0 ? compared_runs(self, runs) : 0;
    if (nruns > 0) {
        /* Every compared run, each with its panel's window; the panels
         * after the truth's are the runs'. */
        int panels = 0;
        while (larmor_compare_view_get_panel(self->compare_view, panels))
            panels++;
        LarmorExportDicomImage img[LARMOR_COMPARE_MAX_RUNS];
        char *stems[LARMOR_COMPARE_MAX_RUNS], *descs[LARMOR_COMPARE_MAX_RUNS];
        for (int i = 0; i < nruns; i++) {
            LarmorVolume *v = larmor_run_get_image(runs[i]);
            LarmorSliceView *view = larmor_compare_view_get_panel(self->compare_view, panels - nruns + i);
            shown_window(self, v, view ? larmor_slice_view_get_state(view) : NULL, part, &img[i]);
            stems[i] = larmor_run_get_file_stem(runs[i]);
            descs[i] = g_strconcat("Larmor ", stems[i], NULL);
            img[i].volume = v;
            img[i].name = stems[i];
            img[i].description = descs[i];
        }
        larmor_export_dicom_write_async(GTK_WINDOW(self), img, nruns, TRUE, dir, like_dir, part, enhanced,
                                        on_dicom_exported);
        for (int i = 0; i < nruns; i++) {
            g_free(stems[i]);
            g_free(descs[i]);
        }
        return;
    }
    LarmorVolume *v = export_volume(self);
    if (!v) {
        larmor_window_show_message(self, "Nothing to export: show or select an image first", TRUE);
        return;
    }
    char *file = larmor_window_get_export_name(self);
    char *dot = strstr(file, ".nii");
    if (dot)
        *dot = '\0';
    char *desc = g_strconcat("Larmor ", file, NULL);
    LarmorExportDicomImage img = { .volume = v, .description = desc };
    shown_window(self, v, NULL, part, &img);
    larmor_export_dicom_write_async(GTK_WINDOW(self), &img, 1, FALSE, dir, like_dir, part, enhanced,
                                    on_dicom_exported);
    g_free(desc);
    g_free(file);
}

static void on_dicom_chosen(GtkWindow *parent, const char *dir, lm_dicom_part part, gboolean enhanced,
                            const char *like_dir)
{
    larmor_window_export_dicom(LARMOR_WINDOW(parent), dir, part, enhanced, like_dir);
}

static void action_export_dicom(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    LarmorRun *runs[LARMOR_COMPARE_MAX_RUNS];
    if (g_strcmp0(larmor_window_get_page(self), "compare") == 0 && compared_runs(self, runs) > 0) {
        larmor_export_dicom_choose(GTK_WINDOW(self), "Export Every Compared Run as DICOM Series (a New Folder)",
                                   "compare-dicom", on_dicom_chosen);
        return;
    }
    if (!export_volume(self)) {
        larmor_window_show_message(self, "Nothing to export: show or select an image first", TRUE);
        return;
    }
    char *file = larmor_window_get_export_name(self);
    char *dot = strstr(file, ".nii");
    if (dot)
        *dot = '\0';
    char *hint = g_strconcat(file, "-dicom", NULL);
    larmor_export_dicom_choose(GTK_WINDOW(self), "Export Image as DICOM Series (a New Folder)", hint,
                               on_dicom_chosen);
    g_free(hint);
    g_free(file);
}

void larmor_window_export_class_init(GtkWidgetClass *wc)
{
    gtk_widget_class_install_action(wc, "win.export-nifti", NULL, action_export_nifti);
    gtk_widget_class_install_action(wc, "win.export-dicom", NULL, action_export_dicom);
    gtk_widget_class_install_action(wc, "win.export-png", NULL, action_export_png);
    gtk_widget_class_install_action(wc, "win.export-csv", NULL, action_export_csv);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_e, GDK_CONTROL_MASK, "win.export-nifti", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_s, GDK_CONTROL_MASK | GDK_SHIFT_MASK, "win.export-png", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_e, GDK_CONTROL_MASK | GDK_SHIFT_MASK, "win.export-csv", NULL);
}
