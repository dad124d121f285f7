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

struct _LarmorWindow {
    GtkApplicationWindow parent_instance;

    /* template */
    GtkPaned *paned;
    GtkWidget *sidebar;
    GtkSpinner *load_spinner;
    GtkLabel *data_title;
    GtkLabel *data_source;
    GtkLabel *data_summary;
    GtkLabel *truth_label;
    GtkLabel *maps_label;
    LarmorReconPanel *recon_panel;
    GtkStack *main_stack;
    LarmorOrthoView *ortho_view;
    LarmorCompareView *compare_view;
    LarmorRunsView *runs_view;
    LarmorSweepView *sweep_view;
    LarmorCoilsView *coils_view;
    GtkRevealer *toast_revealer;
    GtkImage *toast_icon;
    GtkLabel *toast_label;
    GtkWidget *toast_close;
    GtkWidget *toast_undo;     /* "Undo" on the bar after a run was deleted */
    GMenu *recent_menu;        /* "Open Recent" in the main menu */
    GtkWidget *grid_box;       /* matrix and FOV of file data */
    GtkEntry *matrix_entry, *fov_entry;
    GtkWidget *grid_apply;
    GtkLabel *estimate_label;

    LarmorSettings *settings;
    LarmorDataset *dataset;
    LarmorVolume *reference;
    LarmorVolume *live_image;  /* the live run's image as the volume list holds it */
    gboolean reference_from_data; /* the phantom's own, replaced with the data */
    char *truth_origin;        /* "analytic phantom…" or the truth's file name */
    char *pending_truth;       /* a truth opened with its data, applied once they load */
    char *truth_path;          /* the truth's file when it was opened from one (sessions) */
    LarmorSession *pending_session; /* views and compare layout, applied once its data load */
    int session_jobs;          /* sessions being read or written */
    char *session_path;        /* the session opened last */
    int session_runs;          /* how many runs it restored */
    char *session_note;        /* what it could not restore (the truth's file) */
    GListStore *runs;          /* LarmorRun, in the order they finished */
    GListStore *volumes;       /* LarmorVolume: truth, reference, run images */
    GQueue compare_order;      /* runs ticked for comparison, oldest first */
    gboolean updating_compare;
    int next_index;

    GCancellable *load_cancellable;
    gboolean loading;
    LarmorReconTask *task;
    GCancellable *task_cancellable;
    char *last_status;
    guint toast_timeout;
    gboolean close_pending;
    gboolean disposed;         /* async callbacks may land after a destroy */
    gboolean confirm_close;    /* ask before closing with runs not exported (default) */
    gboolean close_confirmed;  /* "Quit" was chosen: the next close goes through */
    GtkWindow *close_dialog;   /* the question while it is shown */

    gboolean radiological;     /* display convention, all slice views */
    gboolean show_colorbar;    /* colour bars on the slice views */
    /* The run deleted last, for Undo: where it was in the runs, the
     * volumes and the comparison, and whether the viewer showed it. */
    LarmorRun *undo_run;
    guint undo_pos, undo_vol_pos;
    int undo_compare_pos;
    gboolean undo_shown;
    GtkWindow *help_window;    /* the user guide (F1), while open */
    LarmorVolume *fieldmap_shown; /* the data's field map in the image list */
    char *fieldmap_pending;    /* name of the field-map file being read */
    gboolean fm_compare;       /* corrected against uncorrected: runs still to make */
    LarmorReconParams fm_compare_params; /* the corrected run's settings */
};

enum { PROP_0, PROP_RADIOLOGICAL, PROP_SHOW_COLORBAR, N_PROPS };
static GParamSpec *props[N_PROPS];

G_DEFINE_FINAL_TYPE(LarmorWindow, larmor_window, GTK_TYPE_APPLICATION_WINDOW)

static void update_actions(LarmorWindow *self);
static void finish_pending_session(LarmorWindow *self, const char *problem);

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

static void on_toast_close(GtkButton *b, LarmorWindow *self)
{
    hide_toast(self);
}

/* The bar with an Undo button; it goes after 10 s (Ctrl+Z still works). */
static void show_undo_message(LarmorWindow *self, const char *text)
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

static void show_error(LarmorWindow *self, const GError *error)
{
    larmor_window_show_message(self, error->message, TRUE);
}

/* --- volumes list (truth, reference, run images) ----------------------- */

static void set_reference(LarmorWindow *self, LarmorVolume *v);

static void volumes_remove(LarmorWindow *self, LarmorVolume *v)
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

static void update_compare(LarmorWindow *self)
{
    LarmorRun *sel[LARMOR_COMPARE_MAX_RUNS];
    int n = 0;
    for (guint i = 0; i < g_list_model_get_n_items(G_LIST_MODEL(self->runs)) && n < LARMOR_COMPARE_MAX_RUNS; i++) {
        LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), i);
        if (larmor_run_get_compare(r) && larmor_run_get_current(r) && larmor_run_get_image(r))
            sel[n++] = r;
        g_object_unref(r);
    }
    larmor_compare_view_set_truth(self->compare_view, self->dataset ? larmor_dataset_get_truth(self->dataset) : NULL);
    larmor_compare_view_set_runs(self->compare_view, sel, n);
}

static void on_run_compare(LarmorRun *run, GParamSpec *pspec, LarmorWindow *self)
{
    if (larmor_run_get_compare(run) && !larmor_run_get_current(run)) {
        /* Another data set (or grid): nothing to compare it with here. */
        larmor_run_set_compare(run, FALSE);
        char *t = g_strdup_printf("%s is of %s, not of the data loaded now: load that data again to compare it",
                                  larmor_run_get_label(run), larmor_run_get_dataset_name(run));
        larmor_window_show_message(self, t, TRUE);
        g_free(t);
        return;
    }
    if (larmor_run_get_compare(run)) {
        g_queue_remove(&self->compare_order, run);
        g_queue_push_tail(&self->compare_order, run);
        /* Up to four: ticking a fifth unticks the oldest. */
        while (g_queue_get_length(&self->compare_order) > LARMOR_COMPARE_MAX_RUNS) {
            LarmorRun *old = g_queue_pop_head(&self->compare_order);
            larmor_run_set_compare(old, FALSE);
        }
    } else
        g_queue_remove(&self->compare_order, run);
    if (!self->updating_compare)
        update_compare(self);
}

/* The data part of a data set key ("origin@NXxNYxNZ"): runs of the same
 * data at another matrix or FOV still compare, through world coordinates. */
static gboolean same_origin(const char *a, const char *b)
{
    if (!a || !b)
        return FALSE;
    const char *ea = strrchr(a, '@'), *eb = strrchr(b, '@');
    size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
    return la == lb && strncmp(a, b, la) == 0;
}

static void update_live(LarmorWindow *self);

/* Does the run belong to the data loaded now (on any grid)? */
static gboolean run_is_current(LarmorWindow *self, LarmorRun *run)
{
    return self->dataset && same_origin(larmor_run_get_dataset_key(run), larmor_dataset_get_key(self->dataset));
}

/* Metrics of a run of the loaded data against the truth loaded now:
 * recomputed when that truth is another one than they were computed
 * against (a truth on another grid is first resampled onto the run's,
 * through both affines: the truth sampled at the reconstruction grid, as
 * docs/conventions.md section 3 defines the metrics); marked stale when there is no truth (or
 * no image) to recompute them with. TRUE when they were recomputed. */
static gboolean refresh_metrics(LarmorWindow *self, LarmorRun *run)
{
    LarmorVolume *truth = self->dataset ? larmor_dataset_get_truth(self->dataset) : NULL;
    if (truth && larmor_run_has_metrics(run) && larmor_run_get_metrics_truth(run) == larmor_volume_get_serial(truth))
        return FALSE;
    LarmorVolume *img = larmor_run_get_image(run);
    LarmorVolume *t_on_img = truth && img ? larmor_volume_aligned_to(truth, img) : NULL;
    gboolean done = FALSE;
    if (t_on_img) {
        const lm_volume *t = larmor_volume_get_data(t_on_img);
        lm_metrics m;
        lm_error err = { 0 };
        if (lm_metrics_compute(larmor_volume_get_data(img)->data, t->data, lm_volume_count(t), NULL,
                               lm_recon_scale_match(larmor_run_get_params(run)->method, larmor_run_get_combine(run),
                                                    larmor_run_get_sens_source(run)),
                               &m, &err) == LM_OK) {
            larmor_run_set_metrics_against(run, m.psnr_db, m.percent_error, larmor_volume_get_serial(truth));
            done = TRUE;
        }
        lm_error_clear(&err);
        g_object_unref(t_on_img);
    }
    if (!done && larmor_run_has_metrics(run))
        larmor_run_set_metrics_stale(run, TRUE);
    return done;
}

/* After new data or a new truth: which runs belong to the data, their
 * metrics, and the comparison. Returns how many metrics were recomputed. */
static int refresh_runs(LarmorWindow *self)
{
    int recomputed = 0;
    self->updating_compare = TRUE;
    for (guint i = 0; i < g_list_model_get_n_items(G_LIST_MODEL(self->runs)); i++) {
        LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), i);
        gboolean current = run_is_current(self, r);
        larmor_run_set_current(r, current);
        if (!current) {
            larmor_run_set_compare(r, FALSE);
            if (larmor_run_get_live(r))
                g_signal_handlers_disconnect_by_data(larmor_run_get_live(r), self);
            larmor_run_set_live(r, NULL); /* its session belongs to other data */
        } else
            recomputed += refresh_metrics(self, r);
        g_object_unref(r);
    }
    self->updating_compare = FALSE;
    update_compare(self);
    update_live(self);
    return recomputed;
}

static void add_run(LarmorWindow *self, LarmorRun *run)
{
    larmor_run_set_current(run, run_is_current(self, run));
    larmor_run_set_index(run, ++self->next_index);
    g_signal_connect(run, "notify::compare", G_CALLBACK(on_run_compare), self);
    g_list_store_append(self->runs, run);
    if (larmor_run_get_image(run))
        g_list_store_append(self->volumes, larmor_run_get_image(run));
    /* Viewable and exportable like the other images (and the viewer's overlay). */
    if (larmor_run_get_prior_influence(run))
        g_list_store_append(self->volumes, larmor_run_get_prior_influence(run));
}

/* The data's field map: in the image list, the viewer's overlay and the panel. */
static void sync_fieldmap(LarmorWindow *self)
{
    LarmorVolume *fv = self->dataset ? larmor_dataset_get_fieldmap_volume(self->dataset) : NULL;
    if (fv != self->fieldmap_shown) {
        volumes_remove(self, self->fieldmap_shown);
        if (fv)
            g_list_store_append(self->volumes, fv);
        g_set_object(&self->fieldmap_shown, fv);
    }
    larmor_ortho_view_set_overlay_images(self->ortho_view, fv, NULL);
    larmor_recon_panel_set_fieldmap_info(self->recon_panel, fv != NULL,
                                         self->dataset && larmor_dataset_has_times(self->dataset),
                                         self->dataset ? larmor_dataset_get_fieldmap_origin(self->dataset) : NULL);
}

/* --- data card --------------------------------------------------------- */

static void update_estimate(LarmorWindow *self);
static void show_grid(LarmorWindow *self);

static void show_dataset(LarmorWindow *self)
{
    show_grid(self);
    update_estimate(self);
    if (!self->dataset) {
        gtk_label_set_text(self->data_title, self->loading ? "Loading…" : "No data");
        gtk_label_set_text(self->data_source, "");
        gtk_label_set_text(self->data_summary, "");
        gtk_label_set_text(self->truth_label, "");
        gtk_widget_set_visible(GTK_WIDGET(self->maps_label), FALSE);
        larmor_recon_panel_set_coil_info(self->recon_panel, 1, FALSE, FALSE);
        sync_fieldmap(self);
        return;
    }
    LarmorDataset *ds = self->dataset;
    gtk_label_set_text(self->data_title, larmor_dataset_get_name(ds));
    gtk_label_set_text(self->data_source, larmor_dataset_get_source(ds));
    char *d = larmor_dataset_describe(ds);
    GBytes *fm = larmor_dataset_get_fieldmap(ds);
    if (fm) {
        gsize size;
        const float *f = g_bytes_get_data(fm, &size);
        double lo, hi;
        lm_float_range(f, (int64_t)(size / sizeof *f), &lo, &hi);
        char *t = g_strdup_printf("%s\nField map %.0f to %.0f Hz%s", d, lo, hi,
                                  larmor_dataset_has_times(ds) ? "" : " (no sample times: not usable)");
        g_free(d);
        d = t;
    }
    gtk_label_set_text(self->data_summary, d);
    g_free(d);
    sync_fieldmap(self);
    LarmorVolume *truth = larmor_dataset_get_truth(ds);
    if (truth) {
        const lm_volume *v = larmor_volume_get_data(truth);
        char *t = g_strdup_printf("Truth %lld × %lld × %lld: %s", (long long)v->dims[0], (long long)v->dims[1],
                                  (long long)v->dims[2], self->truth_origin ? self->truth_origin : "loaded");
        gtk_label_set_text(self->truth_label, t);
        g_free(t);
    } else
        gtk_label_set_text(self->truth_label, "No truth: open one (Ctrl+T) to measure PSNR and error");
    int64_t coils = larmor_dataset_get_coils(ds);
    LarmorCoilMaps *maps = larmor_dataset_get_maps(ds);
    gtk_widget_set_visible(GTK_WIDGET(self->maps_label), coils > 1);
    if (coils > 1) {
        char *t = maps ? g_strdup_printf("Coil maps: %s", larmor_coil_maps_get_origin(maps))
                       : g_strdup("No coil maps: open them (menu → Open Coil Maps…) or estimate them");
        gtk_label_set_text(self->maps_label, t);
        g_free(t);
    }
    larmor_recon_panel_set_coil_info(self->recon_panel, (int)coils, maps != NULL, larmor_dataset_has_noise(ds));
    larmor_coils_view_set_data_maps(self->coils_view, maps, (int)coils);
    const lm_geom *g = larmor_dataset_get_geom(ds);
    char *cap = g_strdup_printf("%'" G_GINT64_FORMAT " samples · %.4f per voxel",
                                larmor_dataset_get_traj(ds)->m, larmor_dataset_samples_per_voxel(ds));
    larmor_ortho_view_set_traj(self->ortho_view, larmor_dataset_get_traj(ds), g->n, cap);
    g_free(cap);
    char *title = g_strdup_printf("Larmor — %s", larmor_dataset_get_name(ds));
    gtk_window_set_title(GTK_WINDOW(self), title);
    g_free(title);
}

static void set_truth_volume(LarmorWindow *self, LarmorVolume *old, LarmorVolume *truth)
{
    volumes_remove(self, old);
    if (truth) {
        larmor_volume_set_name(truth, "Truth");
        g_list_store_insert(self->volumes, 0, truth);
    }
}

static void on_dataset_loaded(GObject *source, GAsyncResult *result, gpointer data)
{
    LarmorWindow *self = data;
    if (self->disposed) {
        g_object_unref(self);
        return;
    }
    GError *error = NULL;
    LarmorDataset *ds = larmor_dataset_load_finish(result, &error);
    self->loading = FALSE;
    gtk_spinner_stop(self->load_spinner);
    if (!ds) {
        g_clear_pointer(&self->pending_truth, g_free);
        if (self->pending_session) {
            /* The runs stay, marked as of data not loaded. */
            refresh_runs(self);
            char *t = g_strdup_printf("its data did not load: %s", error->message);
            finish_pending_session(self, t);
            g_free(t);
        } else if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
            show_error(self, error);
        g_error_free(error);
        show_dataset(self);
        update_actions(self);
        g_object_unref(self);
        return;
    }
    LarmorVolume *old_truth = self->dataset ? larmor_dataset_get_truth(self->dataset) : NULL;
    if (old_truth)
        g_object_ref(old_truth);
    g_set_object(&self->dataset, ds);
    g_free(self->truth_origin);
    self->truth_origin = g_strdup("the analytic phantom, sub-voxel averaged");
    g_clear_pointer(&self->truth_path, g_free);
    set_truth_volume(self, old_truth, larmor_dataset_get_truth(ds));
    g_clear_object(&old_truth);
    /* A phantom brings its own anatomical reference; it leaves with the
     * data, while a reference the user opened stays. */
    if (larmor_dataset_get_reference(ds)) {
        set_reference(self, larmor_dataset_get_reference(ds));
        larmor_recon_panel_set_reference_name(self->recon_panel, "phantom, other contrast");
        self->reference_from_data = TRUE;
    } else if (self->reference_from_data) {
        set_reference(self, NULL);
        larmor_recon_panel_set_reference_name(self->recon_panel, NULL);
        self->reference_from_data = FALSE;
    }
    /* Runs of other data stay listed, marked, but leave the comparison;
     * runs of these data (loaded again) get metrics against this truth. */
    show_dataset(self);
    refresh_runs(self);
    LarmorVolume *truth = larmor_dataset_get_truth(ds);
    /* Without a truth, data that bring a field map show it (it is what there is to see). */
    larmor_ortho_view_show_volume(self->ortho_view, truth ? truth : larmor_dataset_get_fieldmap_volume(ds));
    if (!truth)
        larmor_window_set_page(self, "viewer");
    larmor_sweep_view_set_runs(self->sweep_view, NULL);
    if (larmor_dataset_get_maps_note(ds)) {
        char *t = g_strdup_printf("Coil maps not loaded: %s", larmor_dataset_get_maps_note(ds));
        larmor_window_show_message(self, t, TRUE);
        g_free(t);
    }
    g_object_unref(ds);
    update_actions(self);
    if (self->settings && larmor_dataset_get_source(ds) && g_str_has_prefix(larmor_dataset_get_source(ds), "benchmark"))
        larmor_settings_set_string(self->settings, "data", "problem", larmor_dataset_get_name(ds));
    /* A truth given together with the data (command line, drop) now has
     * data to belong to. */
    if (self->pending_truth) {
        char *t = g_steal_pointer(&self->pending_truth);
        larmor_window_open_truth(self, t);
        g_free(t);
    } else
        finish_pending_session(self, NULL);
    g_object_unref(self);
}

void larmor_window_load(LarmorWindow *self, const LarmorDatasetSpec *spec)
{
    if (self->load_cancellable)
        g_cancellable_cancel(self->load_cancellable);
    g_clear_object(&self->load_cancellable);
    self->load_cancellable = g_cancellable_new();
    self->loading = TRUE;
    gtk_spinner_start(self->load_spinner);
    if (!self->dataset)
        show_dataset(self);
    update_actions(self);
    larmor_dataset_load_async(spec, self->load_cancellable, on_dataset_loaded, g_object_ref(self));
}

LarmorDataset *larmor_window_get_dataset(LarmorWindow *self)
{
    return self->dataset;
}

/* --- files ------------------------------------------------------------- */

static char *last_folder(LarmorWindow *self)
{
    return self->settings ? larmor_settings_get_string(self->settings, "files", "last-folder", NULL) : NULL;
}

static void remember_folder(LarmorWindow *self, GFile *file)
{
    if (!self->settings || !file)
        return;
    GFile *parent = g_file_get_parent(file);
    char *path = parent ? g_file_get_path(parent) : NULL;
    if (path)
        larmor_settings_set_string(self->settings, "files", "last-folder", path);
    g_free(path);
    g_clear_object(&parent);
}

static void on_truth_loaded(GObject *source, GAsyncResult *result, gpointer data)
{
    LarmorWindow *self = data;
    if (self->disposed) {
        g_object_unref(self);
        return;
    }
    GError *error = NULL;
    LarmorVolume *v = larmor_volume_load_finish(result, &error);
    char *problem = NULL; /* for a session waiting on its truth */
    if (!v) {
        problem = g_strdup_printf("truth not loaded: %s", error->message);
        show_error(self, error);
        g_error_free(error);
    } else if (!self->dataset) {
        larmor_window_show_message(self, "Load data before its truth", TRUE);
    } else {
        LarmorVolume *old = larmor_dataset_get_truth(self->dataset);
        if (old)
            g_object_ref(old);
        char *name = g_strdup(larmor_volume_get_name(v));
        if (larmor_dataset_set_truth(self->dataset, v, &error)) {
            g_free(self->truth_origin);
            self->truth_origin = g_strdup(name);
            g_free(self->truth_path);
            self->truth_path = g_strdup(g_task_get_task_data(G_TASK(result)));
            /* The truth on the data's grid (resampled when it came on another). */
            LarmorVolume *placed = larmor_dataset_get_truth(self->dataset);
            set_truth_volume(self, old, placed);
            show_dataset(self);
            int n = refresh_runs(self);
            larmor_ortho_view_show_volume(self->ortho_view, placed);
            char *msg = n > 0 ? g_strdup_printf("Truth loaded from %s: PSNR and error of %d run%s recomputed against it",
                                                name, n, n == 1 ? "" : "s")
                              : g_strdup_printf("Truth loaded from %s: new runs get PSNR and error", name);
            /* A truth on another grid drops the field map: say so. */
            const char *fm_note = larmor_dataset_get_fieldmap_note(self->dataset);
            if (fm_note) {
                char *m = g_strdup_printf("%s; %s (open it again for this grid)", msg, fm_note);
                g_free(msg);
                msg = m;
            }
            larmor_window_show_message(self, msg, FALSE);
            g_free(msg);
        } else {
            problem = g_strdup_printf("truth not used: %s", error->message);
            show_error(self, error);
            g_error_free(error);
        }
        g_free(name);
        g_clear_object(&old);
        g_object_unref(v);
    }
    finish_pending_session(self, problem);
    g_free(problem);
    g_object_unref(self);
}

/* The anatomical regulariser's reference, listed after the truth. */
static void set_reference(LarmorWindow *self, LarmorVolume *v)
{
    volumes_remove(self, self->reference);
    g_set_object(&self->reference, v);
    if (v) {
        guint pos = self->dataset && larmor_dataset_get_truth(self->dataset) ? 1 : 0;
        g_list_store_insert(self->volumes, pos, v);
    }
}

static void on_reference_loaded(GObject *source, GAsyncResult *result, gpointer data)
{
    LarmorWindow *self = data;
    if (self->disposed) {
        g_object_unref(self);
        return;
    }
    GError *error = NULL;
    LarmorVolume *v = larmor_volume_load_finish(result, &error);
    if (!v) {
        show_error(self, error);
        g_error_free(error);
    } else {
        char *label = g_strdup_printf("Reference: %s", larmor_volume_get_name(v));
        larmor_recon_panel_set_reference_name(self->recon_panel, larmor_volume_get_name(v));
        larmor_volume_set_name(v, label);
        g_free(label);
        set_reference(self, v);
        self->reference_from_data = FALSE;
        char *msg = g_strdup_printf("%s: used by the anatomical regulariser", larmor_volume_get_name(v));
        larmor_window_show_message(self, msg, FALSE);
        g_free(msg);
        g_object_unref(v);
    }
    g_object_unref(self);
}

static void on_maps_loaded(GObject *source, GAsyncResult *result, gpointer data)
{
    LarmorWindow *self = data;
    if (self->disposed) {
        g_object_unref(self);
        return;
    }
    GError *error = NULL;
    LarmorCoilMaps *maps = larmor_coil_maps_load_finish(result, &error);
    /* Checked again here: the data may have changed while the file loaded. */
    if (maps && !self->dataset)
        g_set_error_literal(&error, LARMOR_ERROR, LM_ERR_INVALID, "Load data before their coil maps");
    else if (maps)
        larmor_dataset_set_maps(self->dataset, maps, &error);
    if (error) {
        show_error(self, error);
        g_error_free(error);
    } else {
        show_dataset(self);
        char *t = g_strdup_printf("%s: %lld coil maps for %s", larmor_coil_maps_get_origin(maps),
                                  (long long)larmor_coil_maps_get_count(maps), larmor_dataset_get_name(self->dataset));
        larmor_window_show_message(self, t, FALSE);
        g_free(t);
    }
    g_clear_object(&maps);
    g_object_unref(self);
}

void larmor_window_open_maps(LarmorWindow *self, const char *path)
{
    if (!self->dataset) {
        larmor_window_show_message(self, "Load data before their coil maps", TRUE);
        return;
    }
    larmor_coil_maps_load_async(path, larmor_dataset_get_geom(self->dataset)->n,
                                larmor_dataset_get_coils(self->dataset), NULL, on_maps_loaded, g_object_ref(self));
}

static gboolean is_volume_file(const char *path)
{
    return g_str_has_suffix(path, ".nii") || g_str_has_suffix(path, ".nii.gz");
}

/* cfl pairs are named by their base: x.cfl and x.hdr are one file. */
static char *cfl_base(const char *path)
{
    if (g_str_has_suffix(path, ".cfl") || g_str_has_suffix(path, ".hdr"))
        return g_strndup(path, strlen(path) - 4);
    return NULL;
}

static gboolean is_maps_base(const char *base)
{
    char *name = g_path_get_basename(base);
    gboolean yes = g_str_equal(name, "sens");
    g_free(name);
    return yes;
}

/* --- recent data sets --------------------------------------------------- */

static char *recent_label(char *const *paths)
{
    /* "traj.cfl + kspace.cfl — /data/run1" */
    GString *s = g_string_new(NULL);
    for (int i = 0; paths[i]; i++) {
        char *b = g_path_get_basename(paths[i]);
        g_string_append_printf(s, "%s%s", i ? " + " : "", b);
        g_free(b);
    }
    char *dir = g_path_get_dirname(paths[0]);
    g_string_append_printf(s, " — %s", dir);
    g_free(dir);
    return g_string_free(s, FALSE);
}

static void fill_recent(LarmorWindow *self)
{
    g_menu_remove_all(self->recent_menu);
    if (!self->settings)
        return;
    char ***recent = larmor_settings_get_recent(self->settings);
    for (int i = 0; recent[i]; i++) {
        char *label = recent_label(recent[i]);
        GMenuItem *item = g_menu_item_new(label, NULL);
        g_menu_item_set_action_and_target_value(item, "win.open-recent", g_variant_new_int32(i));
        g_menu_append_item(self->recent_menu, item);
        g_object_unref(item);
        g_free(label);
        g_strfreev(recent[i]);
    }
    g_free(recent);
}

static void remember_recent(LarmorWindow *self, const char *const *paths)
{
    if (!self->settings)
        return;
    larmor_settings_add_recent(self->settings, paths);
    GError *error = NULL;
    if (!larmor_settings_save(self->settings, &error)) {
        g_message("settings: %s", error->message);
        g_error_free(error);
    }
    fill_recent(self);
}

GMenuModel *larmor_window_get_recent_menu(LarmorWindow *self)
{
    return G_MENU_MODEL(self->recent_menu);
}

static void action_open_recent(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    if (!self->settings)
        return;
    int index = g_variant_get_int32(param);
    char ***recent = larmor_settings_get_recent(self->settings);
    int n = 0;
    while (recent[n])
        n++;
    if (index >= 0 && index < n) {
        int k = (int)g_strv_length(recent[index]);
        GFile **files = g_new0(GFile *, k + 1);
        for (int i = 0; i < k; i++)
            files[i] = g_file_new_for_path(recent[index][i]);
        larmor_window_open_files(self, files, k);
        for (int i = 0; i < k; i++)
            g_object_unref(files[i]);
        g_free(files);
    } else
        larmor_window_show_message(self, "That data set is no longer there", TRUE);
    for (int i = 0; i < n; i++)
        g_strfreev(recent[i]);
    g_free(recent);
    fill_recent(self);
}

void larmor_window_open_files(LarmorWindow *self, GFile *const *files, int n)
{
    GPtrArray *data = g_ptr_array_new_with_free_func(g_free);
    char *truth = NULL, *sens = NULL;
    for (int i = 0; i < n; i++) {
        char *path = g_file_get_path(files[i]);
        if (!path)
            continue;
        remember_folder(self, files[i]);
        char *base = cfl_base(path);
        if (is_volume_file(path)) {
            if (!truth)
                truth = g_strdup(path);
        } else if (base && is_maps_base(base)) {
            /* sens.cfl picked with the data: their coil maps. */
            g_free(sens);
            sens = g_strdup(base);
        } else if (base) {
            gboolean seen = FALSE;
            for (guint k = 0; k < data->len; k++)
                seen |= g_strcmp0(data->pdata[k], base) == 0;
            if (!seen)
                g_ptr_array_add(data, g_strdup(base));
        } else
            g_ptr_array_add(data, g_strdup(path));
        g_free(base);
        g_free(path);
    }
    if (data->len > 0) {
        LarmorDatasetSpec spec = { .kind = LARMOR_SOURCE_FILES };
        /* One path alone (a data directory or any file of a data set) is
         * found by discovery (lm_acq_discover), companions included. */
        spec.traj_path = data->pdata[0];
        spec.kdata_path = data->len > 1 ? data->pdata[1] : NULL;
        spec.sens_path = sens;
        {
            /* Remembered as the files it came from (.cfl for BART bases). */
            GPtrArray *rec = g_ptr_array_new_with_free_func(g_free);
            for (guint k = 0; k < MIN(data->len, 2u); k++) {
                const char *d = data->pdata[k];
                char *cfl = g_strconcat(d, ".cfl", NULL);
                g_ptr_array_add(rec, g_file_test(cfl, G_FILE_TEST_IS_REGULAR) ? g_strdup(cfl) : g_strdup(d));
                g_free(cfl);
            }
            if (sens)
                g_ptr_array_add(rec, g_strconcat(sens, ".cfl", NULL));
            g_ptr_array_add(rec, NULL);
            larmor_window_load(self, &spec);
            remember_recent(self, (const char *const *)rec->pdata);
            g_ptr_array_unref(rec);
        }
    }
    if (truth) {
        if (self->loading) {
            /* With data, or while data load: the truth follows the data. */
            g_free(self->pending_truth);
            self->pending_truth = g_strdup(truth);
        } else if (!self->dataset)
            larmor_window_show_message(self, "Load the data first (trajectory and k-space), then its truth", TRUE);
        else
            larmor_window_open_truth(self, truth);
    }
    if (sens && data->len == 0) {
        /* Maps alone: for the data loaded now. */
        if (self->dataset && !self->loading)
            larmor_window_open_maps(self, sens);
        else
            larmor_window_show_message(self, "Load the data first (trajectory and k-space), then their coil maps", TRUE);
    }
    if (data->len == 0 && !truth && !sens && n > 0)
        larmor_window_show_message(self, "Not a file Larmor reads (.cfl/.hdr, .h5, .bin, .nii, .nii.gz)", TRUE);
    g_free(truth);
    g_free(sens);
    g_ptr_array_unref(data);
}

typedef void (*ChooserDone)(LarmorWindow *self, GtkFileChooser *chooser);

static void on_chooser_response(GtkNativeDialog *native, int response, LarmorWindow *self)
{
    ChooserDone done = g_object_get_data(G_OBJECT(native), "done");
    if (response == GTK_RESPONSE_ACCEPT)
        done(self, GTK_FILE_CHOOSER(native));
    gtk_native_dialog_destroy(native);
    g_object_unref(native);
}

static GtkFileChooser *chooser_new(LarmorWindow *self, const char *title, GtkFileChooserAction action,
                                   const char *accept, ChooserDone done)
{
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    GtkFileChooserNative *native = gtk_file_chooser_native_new(title, GTK_WINDOW(self), action, accept, "_Cancel");
    gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(native), TRUE);
    char *folder = last_folder(self);
    if (folder) {
        GFile *f = g_file_new_for_path(folder);
        gtk_file_chooser_set_current_folder(GTK_FILE_CHOOSER(native), f, NULL);
        g_object_unref(f);
        g_free(folder);
    }
    g_object_set_data(G_OBJECT(native), "done", done);
    g_signal_connect(native, "response", G_CALLBACK(on_chooser_response), self);
    G_GNUC_END_IGNORE_DEPRECATIONS
    return GTK_FILE_CHOOSER(native);
}

static void add_filter(GtkFileChooser *c, const char *name, const char *const *patterns)
{
    GtkFileFilter *f = gtk_file_filter_new();
    gtk_file_filter_set_name(f, name);
    for (int i = 0; patterns[i]; i++)
        gtk_file_filter_add_pattern(f, patterns[i]);
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    gtk_file_chooser_add_filter(c, f);
    G_GNUC_END_IGNORE_DEPRECATIONS
    g_object_unref(f);
}

static void show_chooser(GtkFileChooser *c)
{
    gtk_native_dialog_show(GTK_NATIVE_DIALOG(c));
}

static void open_done(LarmorWindow *self, GtkFileChooser *c)
{
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    GListModel *files = gtk_file_chooser_get_files(c);
    G_GNUC_END_IGNORE_DEPRECATIONS
    guint n = g_list_model_get_n_items(files);
    GFile **arr = g_new0(GFile *, n + 1);
    for (guint i = 0; i < n; i++)
        arr[i] = g_list_model_get_item(files, i);
    larmor_window_open_files(self, arr, (int)n);
    for (guint i = 0; i < n; i++)
        g_object_unref(arr[i]);
    g_free(arr);
    g_object_unref(files);
}

static void action_open(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    GtkFileChooser *c = chooser_new(self, "Open Trajectory and k-Space", GTK_FILE_CHOOSER_ACTION_OPEN, "_Open", open_done);
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    gtk_file_chooser_set_select_multiple(c, TRUE);
    G_GNUC_END_IGNORE_DEPRECATIONS
    add_filter(c, "MRI data (.cfl, .h5, .bin)", (const char *const[]){ "*.cfl", "*.hdr", "*.h5", "*.bin", NULL });
    add_filter(c, "BART (.cfl + .hdr)", (const char *const[]){ "*.cfl", "*.hdr", NULL });
    add_filter(c, "ISMRMRD (.h5)", (const char *const[]){ "*.h5", NULL });
    add_filter(c, "Parboil mri-fhd (.bin)", (const char *const[]){ "*.bin", NULL });
    add_filter(c, "All files", (const char *const[]){ "*", NULL });
    show_chooser(c);
}

static char *chooser_path(GtkFileChooser *c, LarmorWindow *self)
{
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    GFile *f = gtk_file_chooser_get_file(c);
    G_GNUC_END_IGNORE_DEPRECATIONS
    if (!f)
        return NULL;
    remember_folder(self, f);
    char *p = g_file_get_path(f);
    g_object_unref(f);
    return p;
}

void larmor_window_open_truth(LarmorWindow *self, const char *path)
{
    larmor_volume_load_async(path, NULL, on_truth_loaded, g_object_ref(self));
}

void larmor_window_open_reference(LarmorWindow *self, const char *path)
{
    larmor_volume_load_async(path, NULL, on_reference_loaded, g_object_ref(self));
}

static void truth_done(LarmorWindow *self, GtkFileChooser *c)
{
    char *p = chooser_path(c, self);
    if (p)
        larmor_window_open_truth(self, p);
    g_free(p);
}

static void reference_done(LarmorWindow *self, GtkFileChooser *c)
{
    char *p = chooser_path(c, self);
    if (p)
        larmor_window_open_reference(self, p);
    g_free(p);
}

static void action_open_truth(GtkWidget *w, const char *name, GVariant *param)
{
    GtkFileChooser *c = chooser_new(LARMOR_WINDOW(w), "Open Truth", GTK_FILE_CHOOSER_ACTION_OPEN, "_Open", truth_done);
    add_filter(c, "Images (.nii, .nii.gz, .cfl)", (const char *const[]){ "*.nii", "*.nii.gz", "*.cfl", NULL });
    show_chooser(c);
}

static void maps_done(LarmorWindow *self, GtkFileChooser *c)
{
    char *p = chooser_path(c, self);
    if (p)
        larmor_window_open_maps(self, p);
    g_free(p);
}

/* --- field maps -------------------------------------------------------- */

static void on_fieldmap_loaded(GObject *source, GAsyncResult *result, gpointer data)
{
    LarmorWindow *self = data;
    if (self->disposed) {
        g_object_unref(self);
        return;
    }
    GError *error = NULL;
    gboolean resampled = FALSE;
    GBytes *fm = larmor_fieldmap_load_finish(result, &resampled, &error);
    char *name = g_steal_pointer(&self->fieldmap_pending);
    /* Checked again (size): the data or their grid may have changed meanwhile. */
    if (fm && !self->dataset)
        g_set_error_literal(&error, LARMOR_ERROR, LM_ERR_INVALID, "Load data before their field map");
    else if (fm)
        larmor_dataset_set_fieldmap(self->dataset, fm, name, &error);
    if (error) {
        show_error(self, error);
        g_error_free(error);
    } else {
        show_dataset(self);
        larmor_ortho_view_set_overlay(self->ortho_view, LARMOR_OVERLAY_FIELDMAP);
        gsize size;
        const float *f = g_bytes_get_data(fm, &size);
        double lo, hi;
        lm_float_range(f, (int64_t)(size / sizeof *f), &lo, &hi);
        char *t = g_strdup_printf("%s: field map %.0f to %.0f Hz%s%s", name, lo, hi,
                                  resampled ? ", resampled onto the matrix" : "",
                                  larmor_dataset_has_times(self->dataset)
                                      ? ""
                                      : "; the trajectory has no sample times, so it cannot correct these data");
        larmor_window_show_message(self, t, !larmor_dataset_has_times(self->dataset));
        g_free(t);
    }
    g_clear_pointer(&fm, g_bytes_unref);
    g_free(name);
    update_actions(self);
    g_object_unref(self);
}

void larmor_window_open_fieldmap(LarmorWindow *self, const char *path)
{
    if (!self->dataset || self->loading) {
        larmor_window_show_message(self, "Load data before their field map", TRUE);
        return;
    }
    g_free(self->fieldmap_pending);
    self->fieldmap_pending = g_path_get_basename(path);
    larmor_fieldmap_load_async(self->dataset, path, NULL, on_fieldmap_loaded, g_object_ref(self));
}

gboolean larmor_window_is_loading_fieldmap(LarmorWindow *self)
{
    return self->fieldmap_pending != NULL;
}

static void fieldmap_done(LarmorWindow *self, GtkFileChooser *c)
{
    char *p = chooser_path(c, self);
    if (p)
        larmor_window_open_fieldmap(self, p);
    g_free(p);
}

static void action_open_fieldmap(GtkWidget *w, const char *name, GVariant *param)
{
    GtkFileChooser *c = chooser_new(LARMOR_WINDOW(w), "Open Field Map", GTK_FILE_CHOOSER_ACTION_OPEN, "_Open",
                                    fieldmap_done);
    add_filter(c, "Field maps in Hz (.nii, .nii.gz, .cfl)", (const char *const[]){ "*.nii", "*.nii.gz", "*.cfl", "*.hdr", NULL });
    show_chooser(c);
}

static void times_done(LarmorWindow *self, GtkFileChooser *c)
{
    char *p = chooser_path(c, self);
    if (p)
        larmor_window_open_times(self, p);
    g_free(p);
}

static void action_open_times(GtkWidget *w, const char *name, GVariant *param)
{
    GtkFileChooser *c = chooser_new(LARMOR_WINDOW(w), "Open Sample Times", GTK_FILE_CHOOSER_ACTION_OPEN, "_Open",
                                    times_done);
    add_filter(c, "Sample times in s [1, samples, spokes] (.cfl)", (const char *const[]){ "*.cfl", "*.hdr", NULL });
    show_chooser(c);
}

static void action_open_maps(GtkWidget *w, const char *name, GVariant *param)
{
    GtkFileChooser *c = chooser_new(LARMOR_WINDOW(w), "Open Coil Maps", GTK_FILE_CHOOSER_ACTION_OPEN, "_Open", maps_done);
    add_filter(c, "Coil maps [nx, ny, nz, coils] (.cfl)", (const char *const[]){ "*.cfl", "*.hdr", NULL });
    show_chooser(c);
}

static void action_open_reference(GtkWidget *w, const char *name, GVariant *param)
{
    GtkFileChooser *c = chooser_new(LARMOR_WINDOW(w), "Open Anatomical Reference", GTK_FILE_CHOOSER_ACTION_OPEN,
                                    "_Open", reference_done);
    add_filter(c, "Images (.nii, .nii.gz, .cfl)", (const char *const[]){ "*.nii", "*.nii.gz", "*.cfl", NULL });
    show_chooser(c);
}

static gboolean on_drop(GtkDropTarget *target, const GValue *value, double x, double y, LarmorWindow *self)
{
    if (!G_VALUE_HOLDS(value, GDK_TYPE_FILE_LIST))
        return FALSE;
    GSList *list = gdk_file_list_get_files(g_value_get_boxed(value));
    guint n = g_slist_length(list);
    GFile **arr = g_new0(GFile *, n + 1);
    guint i = 0;
    for (GSList *l = list; l; l = l->next)
        arr[i++] = l->data;
    larmor_window_open_files(self, arr, (int)n);
    g_free(arr);
    g_slist_free(list);
    return TRUE;
}

/* --- phantom dialog ---------------------------------------------------- */

static void on_phantom_create(LarmorPhantomDialog *d, const LarmorDatasetSpec *spec, LarmorWindow *self)
{
    larmor_window_load(self, spec);
}

static void action_new_phantom(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    GtkWidget *d = larmor_phantom_dialog_new(GTK_WINDOW(self));
    if (self->dataset && g_str_has_prefix(larmor_dataset_get_source(self->dataset), "benchmark")) {
        LarmorDatasetSpec s = { .kind = LARMOR_SOURCE_PROBLEM };
        g_strlcpy(s.problem, larmor_dataset_get_name(self->dataset), sizeof s.problem);
        larmor_phantom_dialog_set_spec(LARMOR_PHANTOM_DIALOG(d), &s);
    }
    g_signal_connect(d, "create", G_CALLBACK(on_phantom_create), self);
    gtk_window_present(GTK_WINDOW(d));
}

/* --- reconstruction ---------------------------------------------------- */

static void on_task_progress(LarmorReconTask *task, const LarmorProgressInfo *info, LarmorWindow *self)
{
    larmor_recon_panel_set_progress(self->recon_panel, info);
}

static void set_status(LarmorWindow *self, const char *status)
{
    g_free(self->last_status);
    self->last_status = g_strdup(status);
}

static void save_params(LarmorWindow *self)
{
    if (!self->settings)
        return;
    LarmorReconParams p;
    if (larmor_recon_panel_get_params(self->recon_panel, &p, NULL)) {
        larmor_settings_set_string(self->settings, "recon", "method", lm_method_name(p.method));
        larmor_settings_set_string(self->settings, "recon", "variant", p.variant);
        larmor_settings_set_double(self->settings, "recon", "lambda", p.lambda);
        larmor_settings_set_string(self->settings, "recon", "reg", lm_reg_name(p.reg));
        larmor_settings_set_int(self->settings, "recon", "iters", p.iters);
        larmor_settings_set_double(self->settings, "recon", "tol", p.tol);
        larmor_settings_set_double(self->settings, "recon", "edge", p.edge);
        larmor_settings_set_string(self->settings, "recon", "coils", larmor_coil_source_name(p.coils));
        larmor_settings_set_int(self->settings, "recon", "compress", p.compress);
        larmor_settings_set_bool(self->settings, "recon", "prewhiten", p.prewhiten);
        larmor_settings_set_bool(self->settings, "recon", "fallback-cpu", p.fallback_cpu);
        larmor_settings_set_string(self->settings, "recon", "lambda-criterion", lm_lambda_criterion_name(p.criterion));
        larmor_settings_set_bool(self->settings, "recon", "prior-influence", p.prior_influence);
        larmor_settings_set_string(self->settings, "recon", "fieldmap", larmor_fieldmap_mode_name(p.fieldmap));
    }
    double from, to;
    int steps;
    if (larmor_recon_panel_get_sweep(self->recon_panel, &from, &to, &steps, NULL)) {
        larmor_settings_set_double(self->settings, "sweep", "from", from);
        larmor_settings_set_double(self->settings, "sweep", "to", to);
        larmor_settings_set_int(self->settings, "sweep", "steps", steps);
    }
    GError *error = NULL;
    if (!larmor_settings_save(self->settings, &error)) {
        g_message("settings: %s", error->message);
        g_error_free(error);
    }
}

static void load_params(LarmorWindow *self)
{
    if (!self->settings)
        return;
    LarmorReconParams p;
    larmor_recon_params_init(&p);
    char *s = larmor_settings_get_string(self->settings, "recon", "method", NULL);
    if (s)
        lm_method_parse(s, &p.method, NULL);
    g_free(s);
    s = larmor_settings_get_string(self->settings, "recon", "variant", NULL);
    /* A remembered variant that is unavailable here falls back to the default. */
    if (s && larmor_variant_is_available(s, NULL))
        g_strlcpy(p.variant, s, sizeof p.variant);
    g_free(s);
    s = larmor_settings_get_string(self->settings, "recon", "reg", NULL);
    if (s)
        lm_reg_parse(s, &p.reg, NULL);
    g_free(s);
    /* The anatomical prior is remembered too: phantoms bring their own
     * reference, and without one a run says to open one. */
    p.lambda = MAX(0, larmor_settings_get_double(self->settings, "recon", "lambda", p.lambda));
    p.iters = CLAMP(larmor_settings_get_int(self->settings, "recon", "iters", p.iters), 1, 1000);
    p.tol = MAX(0, larmor_settings_get_double(self->settings, "recon", "tol", p.tol));
    double edge = larmor_settings_get_double(self->settings, "recon", "edge", p.edge);
    if (isfinite(edge) && edge > 0 && edge <= 1)
        p.edge = edge;
    s = larmor_settings_get_string(self->settings, "recon", "coils", NULL);
    if (s)
        larmor_coil_source_parse(s, &p.coils);
    g_free(s);
    p.compress = CLAMP(larmor_settings_get_int(self->settings, "recon", "compress", 0), -1, 64);
    p.prewhiten = larmor_settings_get_bool(self->settings, "recon", "prewhiten", p.prewhiten);
    p.fallback_cpu = larmor_settings_get_bool(self->settings, "recon", "fallback-cpu", p.fallback_cpu);
    s = larmor_settings_get_string(self->settings, "recon", "lambda-criterion", NULL);
    if (s)
        lm_lambda_criterion_parse(s, &p.criterion, NULL);
    g_free(s);
    p.prior_influence = larmor_settings_get_bool(self->settings, "recon", "prior-influence", p.prior_influence);
    s = larmor_settings_get_string(self->settings, "recon", "fieldmap", NULL);
    if (s)
        larmor_fieldmap_mode_parse(s, &p.fieldmap);
    g_free(s);
    /* A remembered wavelet prior in a build without GSL falls back to the default. */
    if (!larmor_reg_is_available(p.reg, NULL))
        p.reg = LM_REG_IDENTITY;
    larmor_recon_panel_set_params(self->recon_panel, &p);
    larmor_recon_panel_set_sweep(self->recon_panel, larmor_settings_get_double(self->settings, "sweep", "from", 1e-4),
                                 larmor_settings_get_double(self->settings, "sweep", "to", 1),
                                 larmor_settings_get_int(self->settings, "sweep", "steps", 9));
}

static char *done_text(LarmorRun *run)
{
    char *t = larmor_format_seconds(larmor_run_get_time_total(run));
    const char *q = larmor_run_get_params(run)->method != LM_METHOD_CG ? ""
                    : larmor_run_get_q_from_cache(run)               ? " · Q from cache"
                                                                     : " · Q computed";
    char *s;
    if (larmor_run_has_metrics(run))
        s = g_strdup_printf("#%d done in %s%s · PSNR %.2f dB · error %.2f %%", larmor_run_get_index(run), t, q,
                            larmor_run_get_psnr(run), larmor_run_get_percent_error(run));
    else
        s = g_strdup_printf("#%d done in %s%s", larmor_run_get_index(run), t, q);
    g_free(t);
    char *d = larmor_run_get_details(run);
    if (*d) {
        char *u = g_strdup_printf("%s · %s", s, d);
        g_free(s);
        s = u;
    }
    g_free(d);
    return s;
}

/* Per-channel images and a run's own maps cost C volumes each (512 MB for
 * B128c32): only the newest runs keep them. */
#define KEEP_COIL_DATA_RUNS 2

static void keep_coil_data(LarmorWindow *self)
{
    guint n = g_list_model_get_n_items(G_LIST_MODEL(self->runs));
    for (guint i = 0; i + KEEP_COIL_DATA_RUNS < n; i++) {
        LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), i);
        if (larmor_run_get_coil_images(r)) {
            larmor_run_drop_coil_data(r);
            if (larmor_coils_view_get_run(self->coils_view) == r)
                larmor_coils_view_set_run(self->coils_view, NULL);
        }
        g_object_unref(r);
    }
}

/* --- live lambda (LarmorLive, larmor-recon-task.h) -------------------- */

/* The newest run, when it keeps a session and belongs to the data loaded now. */
static LarmorRun *live_run(LarmorWindow *self)
{
    guint n = g_list_model_get_n_items(G_LIST_MODEL(self->runs));
    for (guint i = n; i-- > 0;) {
        LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), i);
        g_object_unref(r); /* the list keeps it */
        if (larmor_run_get_live(r))
            return larmor_run_get_current(r) ? r : NULL;
    }
    return NULL;
}

static void update_live(LarmorWindow *self)
{
    LarmorRun *r = live_run(self);
    LarmorReconParams want;
    char *why = NULL;
    gboolean fits = r && larmor_recon_panel_get_params(self->recon_panel, &want, NULL) &&
                    larmor_run_live_fits(r, &want, &why);
    larmor_recon_panel_set_live_available(self->recon_panel, fits,
                                          why ? why : "Live λ re-solves the newest CG run of the data loaded now: run one first");
    g_free(why);
}

static void on_live_updated(LarmorLive *live, gboolean final, LarmorWindow *self)
{
    LarmorRun *r = live_run(self);
    if (!r || larmor_run_get_live(r) != G_OBJECT(live))
        return;
    if (larmor_live_get_error(live)) {
        set_status(self, larmor_live_get_error(live));
        return;
    }
    /* Volumes are immutable: the new image takes the old one's place. */
    LarmorVolume *img = larmor_run_get_image(r);
    guint pos;
    if (self->live_image && g_list_store_find(self->volumes, self->live_image, &pos))
        g_list_store_splice(self->volumes, pos, 1, (gpointer *)&img, 1);
    else
        g_list_store_append(self->volumes, img);
    larmor_ortho_view_show_volume(self->ortho_view, img); /* the viewer shows what Live computes */
    g_set_object(&self->live_image, img);
    update_compare(self);
    int iters = 0;
    double t = 0;
    larmor_live_get_last(live, &iters, &t, NULL);
    char *m = g_strdup_printf("Live λ %.2g: %s, %d iterations in %.0f ms", larmor_live_get_lambda(live),
                              final ? "full solve" : "preview", iters, 1e3 * t);
    larmor_recon_panel_set_status(self->recon_panel, m, 1);
    g_free(m);
}

/* The newest run with a session takes the live role; older ones drop theirs. */
static void adopt_live(LarmorWindow *self, LarmorRun *run)
{
    GObject *live = larmor_run_get_live(run);
    guint n = g_list_model_get_n_items(G_LIST_MODEL(self->runs));
    for (guint i = 0; live && i < n; i++) {
        LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), i);
        if (r != run && larmor_run_get_live(r)) {
            g_signal_handlers_disconnect_by_data(larmor_run_get_live(r), self);
            larmor_run_set_live(r, NULL);
        }
        g_object_unref(r);
    }
    if (live) {
        g_set_object(&self->live_image, larmor_run_get_image(run));
        g_signal_connect(live, "updated", G_CALLBACK(on_live_updated), self);
    }
    update_live(self);
}

/* A finished run is never changed: the first value moved with Live on forks
 * a live run from the finished run that holds the session and moves the
 * session there; later values update that live run. */
static void on_panel_live_lambda(LarmorReconPanel *panel, double lambda, LarmorWindow *self)
{
    LarmorRun *r = live_run(self);
    LarmorReconParams want;
    if (!r || self->task || !larmor_recon_panel_get_params(panel, &want, NULL) || !larmor_run_live_fits(r, &want, NULL))
        return;
    LarmorLive *live = LARMOR_LIVE(larmor_run_get_live(r));
    if (!larmor_run_get_is_live(r)) {
        LarmorRun *fork = larmor_run_fork_live(r);
        add_run(self, fork);
        larmor_live_move_to(live, fork);
        g_clear_object(&self->live_image);
        larmor_runs_view_select(self->runs_view, fork);
        g_object_unref(fork);
    }
    larmor_live_set_lambda(live, lambda);
}
static void fm_compare_next(LarmorWindow *self);

static void on_task_done(GObject *source, GAsyncResult *result, gpointer data)
{
    LarmorWindow *self = data;
    LarmorReconTask *task = LARMOR_RECON_TASK(source);
    GError *error = NULL;
    GPtrArray *runs = larmor_recon_task_run_finish(task, result, &error);
    gboolean sweep = larmor_recon_task_is_sweep(task);
    g_signal_handlers_disconnect_by_data(task, self);
    g_clear_object(&self->task);
    g_clear_object(&self->task_cancellable);
    if (self->disposed) {
        g_clear_pointer(&runs, g_ptr_array_unref);
        g_clear_error(&error);
        g_object_unref(self);
        return;
    }

    if (self->close_pending) {
        g_clear_pointer(&runs, g_ptr_array_unref);
        g_clear_error(&error);
        gtk_window_destroy(GTK_WINDOW(self));
        g_object_unref(self);
        return;
    }
    if (!runs)
        self->fm_compare = FALSE;
    if (!runs) {
        if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
            set_status(self, "cancelled");
            larmor_recon_panel_set_status(self->recon_panel, "Cancelled", 0);
        } else {
            set_status(self, error->message);
            larmor_recon_panel_set_status(self->recon_panel, "Failed", 0);
            show_error(self, error);
        }
        g_error_free(error);
    } else if (!sweep) {
        LarmorRun *run = runs->pdata[0];
        add_run(self, run);
        adopt_live(self, run);
        keep_coil_data(self);
        larmor_run_set_compare(run, TRUE);
        larmor_ortho_view_show_volume(self->ortho_view, larmor_run_get_image(run));
        larmor_runs_view_select(self->runs_view, run);
        larmor_coils_view_set_run(self->coils_view, run);
        char *t = done_text(run);
        larmor_recon_panel_set_status(self->recon_panel, t, 1);
        g_free(t);
        t = larmor_run_get_details(run);
        larmor_recon_panel_set_details(self->recon_panel, t);
        g_free(t);
        set_status(self, "done");
        const LarmorReconParams *ap = larmor_run_get_params(run);
        if (ap->lambda_auto) {
            /* The slider takes the lambda the data chose. */
            larmor_recon_panel_set_lambda(self->recon_panel, larmor_run_get_lambda_used(run));
            char *m = g_strdup_printf("#%d: λ = %.3g chosen (%s)", larmor_run_get_index(run),
                                      larmor_run_get_lambda_used(run), larmor_run_get_lambda_note(run));
            larmor_window_show_message(self, m, FALSE);
            g_free(m);
        }
        /* Say so when the library did not do what was asked. */
        const LarmorReconParams *rp = larmor_run_get_params(run);
        if (larmor_run_get_coils(run) > 1 && rp->coils == LARMOR_COILS_ESTIMATE &&
            larmor_run_get_sens_source(run) != LM_SENS_ESTIMATED) {
            char *m = g_strdup_printf("#%d: this build of the library does not estimate coil maps; the run used %s",
                                      larmor_run_get_index(run),
                                      larmor_run_get_combine(run) == LM_COMBINE_RSS ? "root-sum-of-squares"
                                                                                    : "the given maps");
            larmor_window_show_message(self, m, FALSE);
            g_free(m);
        }
    } else {
        int best = larmor_sweep_view_set_runs(self->sweep_view, runs);
        /* The best point joins the runs (with its image when it kept one). */
        if (best >= 0 && larmor_run_get_image(runs->pdata[best])) {
            LarmorRun *b = runs->pdata[best];
            add_run(self, b);
            larmor_run_set_compare(b, TRUE);
        }
        /* The details are the best point's, never an earlier run's. */
        char *d = best >= 0 ? larmor_run_get_details(runs->pdata[best]) : NULL;
        larmor_recon_panel_set_details(self->recon_panel, d);
        g_free(d);
        larmor_window_set_page(self, "sweep");
        char *t = g_strdup_printf("Sweep of %u values done", runs->len);
        larmor_recon_panel_set_status(self->recon_panel, t, 1);
        g_free(t);
        set_status(self, "done");
    }
    g_clear_pointer(&runs, g_ptr_array_unref);
    update_actions(self);
    update_estimate(self);
    save_params(self);
    if (self->fm_compare)
        fm_compare_next(self);
    g_object_unref(self);
}

static gboolean start_task(LarmorWindow *self, const LarmorReconParams *p, const double *lambdas, int n,
                           GError **error)
{
    if (self->task) {
        g_set_error_literal(error, LARMOR_ERROR, LM_ERR_INVALID, "A reconstruction is already running");
        return FALSE;
    }
    if (!self->dataset) {
        g_set_error_literal(error, LARMOR_ERROR, LM_ERR_INVALID,
                            self->loading ? "The data are still loading" : "Load data or make a phantom first");
        return FALSE;
    }
    const char *why;
    if (p->method == LM_METHOD_CG && !larmor_variant_is_available(p->variant, &why)) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_UNSUPPORTED, "%s is unavailable: %s", p->variant, why);
        return FALSE;
    }
    if (p->method == LM_METHOD_CG && lm_reg_weighted(p->reg) && !self->reference) {
        g_set_error_literal(error, LARMOR_ERROR, LM_ERR_INVALID,
                            "The anatomical regulariser needs a reference image: open one first");
        return FALSE;
    }
    if (p->method == LM_METHOD_CG && !larmor_reg_is_available(p->reg, &why)) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_UNSUPPORTED, "%s is unavailable: %s", lm_reg_name(p->reg), why);
        return FALSE;
    }
    if (p->lambda_auto && p->method != LM_METHOD_CG) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "Automatic λ: needs the CG method");
        return FALSE;
    }
    if (larmor_dataset_get_coils(self->dataset) > 1 && p->coils == LARMOR_COILS_SENSE &&
        !larmor_dataset_get_maps(self->dataset)) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID,
                    "Coil maps (SENSE) needs maps for the %lld coils: open them (menu → Open Coil Maps…), or choose "
                    "Estimate maps or Root-sum-of-squares",
                    (long long)larmor_dataset_get_coils(self->dataset));
        return FALSE;
    }
    self->task = larmor_recon_task_new(self->dataset, lm_reg_weighted(p->reg) ? self->reference : NULL, p,
                                       lambdas, n);
    self->task_cancellable = g_cancellable_new();
    g_signal_connect(self->task, "progress", G_CALLBACK(on_task_progress), self);
    larmor_recon_panel_set_running(self->recon_panel, TRUE);
    set_status(self, "running");
    update_actions(self);
    larmor_recon_task_run_async(self->task, self->task_cancellable, on_task_done, g_object_ref(self));
    return TRUE;
}

gboolean larmor_window_reconstruct(LarmorWindow *self, const LarmorReconParams *params, GError **error)
{
    LarmorReconParams p;
    if (params)
        p = *params;
    else if (!larmor_recon_panel_get_params(self->recon_panel, &p, error))
        return FALSE;
    if (!start_task(self, &p, NULL, 0, error))
        return FALSE;
    /* The sidebar always shows what the newest run used. */
    if (params)
        larmor_recon_panel_set_params(self->recon_panel, params);
    /* "Recompute Q" was for this run. */
    larmor_recon_panel_clear_recompute(self->recon_panel);
    return TRUE;
}

gboolean larmor_window_get_params(LarmorWindow *self, LarmorReconParams *params)
{
    return larmor_recon_panel_get_params(self->recon_panel, params, NULL);
}

gboolean larmor_window_auto_lambda(LarmorWindow *self, GError **error)
{
    LarmorReconParams p;
    if (!larmor_recon_panel_get_params(self->recon_panel, &p, error))
        return FALSE;
    p.lambda_auto = TRUE;
    if (!start_task(self, &p, NULL, 0, error))
        return FALSE;
    larmor_recon_panel_clear_recompute(self->recon_panel);
    return TRUE;
}

/* --- field-map correction: corrected against uncorrected --------------- */

/* A run of the data loaded now with these settings, the field-map mode
 * included (lambda compared to 1e-9: an automatic one is on the slider). */
static LarmorRun *find_run(LarmorWindow *self, const LarmorReconParams *p)
{
    for (guint i = g_list_model_get_n_items(G_LIST_MODEL(self->runs)); i-- > 0;) {
        LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), i);
        g_object_unref(r);
        const LarmorReconParams *q = larmor_run_get_params(r);
        if (larmor_run_get_current(r) && larmor_run_get_image(r) && q->method == p->method &&
            g_strcmp0(q->variant, p->variant) == 0 && q->reg == p->reg && q->iters == p->iters &&
            q->tol == p->tol && q->coils == p->coils && q->compress == p->compress && q->fieldmap == p->fieldmap &&
            (!lm_reg_weighted(p->reg) || q->edge == p->edge) &&
            fabs(q->lambda - p->lambda) <= 1e-9 * MAX(fabs(p->lambda), 1e-300))
            return r;
    }
    return NULL;
}

/* Makes the run that is still missing, or, with both, opens Compare on
 * them (uncorrected first) with the differences and adds corrected minus
 * uncorrected to the images. */
static void fm_compare_next(LarmorWindow *self)
{
    LarmorReconParams corr = self->fm_compare_params, unc = corr;
    unc.fieldmap = LARMOR_FIELDMAP_OFF;
    LarmorRun *a = find_run(self, &unc), *b = find_run(self, &corr);
    GError *error = NULL;
    if (!a || !b) {
        if (!start_task(self, b ? &unc : &corr, NULL, 0, &error)) {
            self->fm_compare = FALSE;
            show_error(self, error);
            g_error_free(error);
        }
        return;
    }
    self->fm_compare = FALSE;
    self->updating_compare = TRUE;
    for (guint i = 0; i < g_list_model_get_n_items(G_LIST_MODEL(self->runs)); i++) {
        LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), i);
        larmor_run_set_compare(r, FALSE);
        g_object_unref(r);
    }
    larmor_run_set_compare(a, TRUE);
    larmor_run_set_compare(b, TRUE);
    self->updating_compare = FALSE;
    update_compare(self);
    larmor_compare_view_set_differences(self->compare_view, TRUE);
    char *name = g_strdup_printf("#%d − #%d (field-map correction)", larmor_run_get_index(b), larmor_run_get_index(a));
    LarmorVolume *d = larmor_volume_new_difference(larmor_run_get_image(b), larmor_run_get_image(a), name);
    g_free(name);
    if (d) {
        /* Leaves the image list with either run (pointers compared only). */
        g_object_set_data(G_OBJECT(d), "larmor-from-a", larmor_run_get_image(a));
        g_object_set_data(G_OBJECT(d), "larmor-from-b", larmor_run_get_image(b));
        g_list_store_append(self->volumes, d);
        g_object_unref(d);
    }
    larmor_window_set_page(self, "compare");
    char *m = g_strdup_printf("Comparing #%d (uncorrected) with #%d (%s)", larmor_run_get_index(a),
                              larmor_run_get_index(b), larmor_fieldmap_mode_label(corr.fieldmap));
    larmor_window_show_message(self, m, FALSE);
    g_free(m);
}

gboolean larmor_window_compare_fieldmap(LarmorWindow *self, GError **error)
{
    LarmorReconParams p;
    if (!larmor_recon_panel_get_params(self->recon_panel, &p, error))
        return FALSE;
    const char *why;
    if (self->task) {
        g_set_error_literal(error, LARMOR_ERROR, LM_ERR_INVALID, "A reconstruction is already running");
        return FALSE;
    }
    if (p.method != LM_METHOD_CG) {
        g_set_error_literal(error, LARMOR_ERROR, LM_ERR_INVALID, "Field-map correction needs the CG method");
        return FALSE;
    }
    if (!larmor_recon_panel_fieldmap_available(self->recon_panel, &why)) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "%s", why);
        return FALSE;
    }
    if (p.fieldmap == LARMOR_FIELDMAP_OFF)
        p.fieldmap = LARMOR_FIELDMAP_SEGMENTED;
    p.lambda_auto = FALSE;
    p.recompute_q = FALSE;
    self->fm_compare_params = p;
    self->fm_compare = TRUE;
    fm_compare_next(self); /* says itself when a run cannot start */
    return TRUE;
}

static void action_auto_lambda(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    GError *error = NULL;
    if (!larmor_window_auto_lambda(self, &error)) {
        show_error(self, error);
        g_error_free(error);
    }
}

static void action_compare_fieldmap(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    GError *error = NULL;
    if (!larmor_window_compare_fieldmap(self, &error)) {
        show_error(self, error);
        g_error_free(error);
    }
}

gboolean larmor_window_sweep(LarmorWindow *self, const LarmorReconParams *params, double from, double to,
                             int steps, GError **error)
{
    LarmorReconParams p;
    if (params)
        p = *params;
    else if (!larmor_recon_panel_get_params(self->recon_panel, &p, error))
        return FALSE;
    if (p.method != LM_METHOD_CG) {
        g_set_error_literal(error, LARMOR_ERROR, LM_ERR_INVALID, "The λ sweep needs the CG method");
        return FALSE;
    }
    if (!(from > 0 && to > from && steps >= 2)) {
        g_set_error_literal(error, LARMOR_ERROR, LM_ERR_INVALID, "λ sweep: give 0 < from < to and 2 or more steps");
        return FALSE;
    }
    double *l = g_new(double, steps);
    for (int i = 0; i < steps; i++)
        l[i] = from * pow(to / from, (double)i / (steps - 1));
    gboolean ok = start_task(self, &p, l, steps, error);
    g_free(l);
    if (ok)
        larmor_recon_panel_clear_recompute(self->recon_panel);
    return ok;
}

void larmor_window_cancel(LarmorWindow *self)
{
    if (self->task_cancellable) {
        g_cancellable_cancel(self->task_cancellable);
        larmor_recon_panel_set_status(self->recon_panel, "Cancelling…", 0);
    }
}

gboolean larmor_window_is_busy(LarmorWindow *self)
{
    return self->loading || self->task != NULL || self->session_jobs > 0;
}

const char *larmor_window_get_last_status(LarmorWindow *self)
{
    return self->last_status;
}

GListModel *larmor_window_get_runs(LarmorWindow *self)
{
    return G_LIST_MODEL(self->runs);
}

GListModel *larmor_window_get_images(LarmorWindow *self)
{
    return G_LIST_MODEL(self->volumes);
}

static void action_reconstruct(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    GError *error = NULL;
    if (!larmor_window_reconstruct(self, NULL, &error)) {
        show_error(self, error);
        g_error_free(error);
    }
}

static void action_sweep(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    GError *error = NULL;
    double from, to;
    int steps;
    if (!larmor_recon_panel_get_sweep(self->recon_panel, &from, &to, &steps, &error) ||
        !larmor_window_sweep(self, NULL, from, to, steps, &error)) {
        show_error(self, error);
        g_error_free(error);
    }
}

static void action_cancel(GtkWidget *w, const char *name, GVariant *param)
{
    larmor_window_cancel(LARMOR_WINDOW(w));
}

static void on_use_lambda(LarmorSweepView *v, double lambda, LarmorWindow *self)
{
    LarmorReconParams p;
    if (!larmor_recon_panel_get_params(self->recon_panel, &p, NULL))
        larmor_recon_params_init(&p);
    p.lambda = lambda;
    larmor_recon_panel_set_params(self->recon_panel, &p);
    char *t = g_strdup_printf("λ set to %.2g", lambda);
    larmor_window_show_message(self, t, FALSE);
    g_free(t);
}

/* --- runs -------------------------------------------------------------- */

static LarmorRun *selected_run(LarmorWindow *self)
{
    return larmor_runs_view_get_selected(self->runs_view);
}

static void action_show_run(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    LarmorRun *r = selected_run(self);
    if (r && larmor_run_get_image(r)) {
        larmor_ortho_view_show_volume(self->ortho_view, larmor_run_get_image(r));
        larmor_window_set_page(self, "viewer");
    }
}

static void on_run_selected(LarmorRunsView *v, LarmorRun *run, LarmorWindow *self)
{
    larmor_coils_view_set_run(self->coils_view, run);
    char *d = run ? larmor_run_get_details(run) : NULL;
    larmor_recon_panel_set_details(self->recon_panel, d);
    g_free(d);
}

static void on_run_activated(LarmorRunsView *v, LarmorRun *run, LarmorWindow *self)
{
    if (larmor_run_get_image(run)) {
        larmor_ortho_view_show_volume(self->ortho_view, larmor_run_get_image(run));
        larmor_window_set_page(self, "viewer");
    }
}

static void forget_undo(LarmorWindow *self)
{
    g_clear_object(&self->undo_run);
}

static void action_remove_run(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    LarmorRun *r = selected_run(self);
    guint pos;
    if (!r || !g_list_store_find(self->runs, r, &pos))
        return;
    g_object_ref(r);
    /* Kept whole (image, metrics, coils) for Undo until the next delete. */
    forget_undo(self);
    self->undo_run = g_object_ref(r);
    self->undo_pos = pos;
    LarmorVolume *img = larmor_run_get_image(r);
    self->undo_vol_pos = G_MAXUINT;
    if (img)
        g_list_store_find(self->volumes, img, &self->undo_vol_pos);
    self->undo_compare_pos = g_queue_index(&self->compare_order, r);
    self->undo_shown = img && larmor_ortho_view_get_volume(self->ortho_view) == img;
    g_signal_handlers_disconnect_by_data(r, self);
    if (larmor_run_get_live(r)) {
        g_signal_handlers_disconnect_by_data(larmor_run_get_live(r), self);
        larmor_run_set_live(r, NULL);
    }
    g_queue_remove(&self->compare_order, r);
    if (larmor_ortho_view_get_volume(self->ortho_view) == larmor_run_get_image(r))
        larmor_ortho_view_show_volume(self->ortho_view,
                                      self->dataset ? larmor_dataset_get_truth(self->dataset) : NULL);
    volumes_remove(self, larmor_run_get_image(r));
    volumes_remove(self, larmor_run_get_prior_influence(r));
    g_list_store_remove(self->runs, pos);
    update_live(self);
    if (larmor_coils_view_get_run(self->coils_view) == r)
        larmor_coils_view_set_run(self->coils_view, larmor_runs_view_get_selected(self->runs_view));
    update_compare(self);
    char *t = g_strdup_printf("Run #%d deleted", larmor_run_get_index(r));
    show_undo_message(self, t);
    g_free(t);
    g_object_unref(r);
    update_actions(self);
}

/* Undo of the last delete: the same run object back at its place in the
 * runs, the volumes and the comparison, shown again if it was. */
static void action_undo(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    LarmorRun *r = self->undo_run;
    if (!r)
        return;
    self->undo_run = NULL; /* its reference is ours now */
    gboolean current = run_is_current(self, r);
    larmor_run_set_current(r, current);
    if (!current)
        larmor_run_set_compare(r, FALSE);
    g_signal_connect(r, "notify::compare", G_CALLBACK(on_run_compare), self);
    guint n = g_list_model_get_n_items(G_LIST_MODEL(self->runs));
    g_list_store_insert(self->runs, MIN(self->undo_pos, n), r);
    LarmorVolume *img = larmor_run_get_image(r);
    if (img) {
        guint nv = g_list_model_get_n_items(G_LIST_MODEL(self->volumes));
        g_list_store_insert(self->volumes, MIN(self->undo_vol_pos, nv), img);
    }
    self->updating_compare = TRUE;
    if (current && larmor_run_get_compare(r)) {
        g_queue_push_nth(&self->compare_order, r, self->undo_compare_pos);
        while (g_queue_get_length(&self->compare_order) > LARMOR_COMPARE_MAX_RUNS)
            larmor_run_set_compare(g_queue_pop_head(&self->compare_order), FALSE);
    }
    if (current)
        refresh_metrics(self, r);
    self->updating_compare = FALSE;
    if (self->undo_shown && img)
        larmor_ortho_view_show_volume(self->ortho_view, img);
    larmor_runs_view_select(self->runs_view, r);
    update_compare(self);
    char *t = g_strdup_printf("Run #%d restored", larmor_run_get_index(r));
    larmor_window_show_message(self, t, FALSE);
    g_free(t);
    g_object_unref(r);
    update_actions(self);
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
    return selected_run(self) == run;
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

/* --- export ------------------------------------------------------------ */

/* The image to export: the selected run on the Runs page, else the one
 * shown in the viewer. */
static LarmorVolume *export_volume(LarmorWindow *self)
{
    if (g_strcmp0(larmor_window_get_page(self), "runs") == 0) {
        LarmorRun *r = selected_run(self);
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
    if (lm_nifti_write(j->path, larmor_volume_get_data(j->volume), j->as_complex, &err) != LM_OK) {
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
        show_error(self, error);
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

static void nifti_done(LarmorWindow *self, GtkFileChooser *c)
{
    char *p = chooser_path(c, self);
    if (!p)
        return;
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    gboolean as_complex = g_strcmp0(gtk_file_chooser_get_choice(c, "complex"), "true") == 0;
    G_GNUC_END_IGNORE_DEPRECATIONS
    larmor_window_export_nifti(self, p, as_complex);
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
    LarmorVolume *v = export_volume(self);
    if (!v) {
        larmor_window_show_message(self, "Nothing to export: show or select an image first", TRUE);
        return;
    }
    GtkFileChooser *c = chooser_new(self, "Export Image as NIfTI", GTK_FILE_CHOOSER_ACTION_SAVE, "_Export", nifti_done);
    char *file = larmor_window_get_export_name(self);
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    gtk_file_chooser_set_current_name(c, file);
    gtk_file_chooser_add_choice(c, "complex", "Store complex values (otherwise magnitude)", NULL, NULL);
    G_GNUC_END_IGNORE_DEPRECATIONS
    g_free(file);
    add_filter(c, "NIfTI (.nii, .nii.gz)", (const char *const[]){ "*.nii", "*.nii.gz", NULL });
    show_chooser(c);
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

static void png_done(LarmorWindow *self, GtkFileChooser *c)
{
    char *p = chooser_path(c, self);
    GError *error = NULL;
    if (p && !larmor_window_export_png(self, p, &error)) {
        show_error(self, error);
        g_error_free(error);
    }
    g_free(p);
}

static void action_export_png(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    GtkFileChooser *c = chooser_new(self, "Export View as PNG", GTK_FILE_CHOOSER_ACTION_SAVE, "_Export", png_done);
    char *file = g_strdup_printf("larmor-%s.png", larmor_window_get_page(self));
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    gtk_file_chooser_set_current_name(c, file);
    G_GNUC_END_IGNORE_DEPRECATIONS
    g_free(file);
    add_filter(c, "PNG images", (const char *const[]){ "*.png", NULL });
    show_chooser(c);
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

static void csv_done(LarmorWindow *self, GtkFileChooser *c)
{
    char *p = chooser_path(c, self);
    GError *error = NULL;
    if (p && !larmor_window_export_csv(self, p, &error)) {
        show_error(self, error);
        g_error_free(error);
    }
    g_free(p);
}

static void action_export_csv(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    GtkFileChooser *c = chooser_new(self, "Export Metrics as CSV", GTK_FILE_CHOOSER_ACTION_SAVE, "_Export", csv_done);
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    gtk_file_chooser_set_current_name(c, "larmor-runs.csv");
    G_GNUC_END_IGNORE_DEPRECATIONS
    add_filter(c, "CSV (.csv)", (const char *const[]){ "*.csv", NULL });
    show_chooser(c);
}

/* --- grid and estimate ------------------------------------------------- */

/* "64", "64x64x32" or "64×64×32": three positive numbers (one repeated). */
static gboolean parse_triple(const char *text, double out[3])
{
    char *t = g_strdup(text ? text : "");
    char *norm = g_strdelimit(t, "×X", 'x');
    /* "×" is two bytes in UTF-8: g_strdelimit replaced each byte. */
    char **parts = g_strsplit(norm, "x", -1);
    int n = 0;
    gboolean ok = TRUE;
    for (int i = 0; parts[i] && ok; i++) {
        char *p = g_strstrip(parts[i]);
        if (!*p)
            continue;
        char *end = NULL;
        double v = g_ascii_strtod(p, &end);
        ok = end && *end == 0 && isfinite(v) && v > 0 && n < 3;
        if (ok)
            out[n++] = v;
    }
    g_strfreev(parts);
    g_free(t);
    if (!ok || (n != 1 && n != 3))
        return FALSE;
    if (n == 1)
        out[1] = out[2] = out[0];
    return TRUE;
}

static void show_grid(LarmorWindow *self)
{
    const LarmorDatasetSpec *spec = self->dataset ? larmor_dataset_get_spec(self->dataset) : NULL;
    gboolean files = spec && spec->kind == LARMOR_SOURCE_FILES;
    gtk_widget_set_visible(self->grid_box, files);
    if (!files)
        return;
    const lm_geom *g = larmor_dataset_get_geom(self->dataset);
    char *m = g_strdup_printf("%lldx%lldx%lld", (long long)g->n[0], (long long)g->n[1], (long long)g->n[2]);
    char *f = g_strdup_printf("%.4gx%.4gx%.4g", g->fov_mm[0], g->fov_mm[1], g->fov_mm[2]);
    gtk_editable_set_text(GTK_EDITABLE(self->matrix_entry), m);
    gtk_editable_set_text(GTK_EDITABLE(self->fov_entry), f);
    g_free(m);
    g_free(f);
}

gboolean larmor_window_set_grid(LarmorWindow *self, const int64_t n[3], const double fov_mm[3], GError **error)
{
    const LarmorDatasetSpec *cur = self->dataset ? larmor_dataset_get_spec(self->dataset) : NULL;
    if (!cur || cur->kind != LARMOR_SOURCE_FILES || self->loading || self->task) {
        g_set_error_literal(error, LARMOR_ERROR, LM_ERR_INVALID,
                            !cur || cur->kind != LARMOR_SOURCE_FILES ? "Matrix and FOV: only for data loaded from files"
                                                                     : "Matrix and FOV: wait until nothing is running");
        return FALSE;
    }
    for (int a = 0; a < 3; a++)
        if (n[a] < 1 || n[a] > 1024 || !(fov_mm[a] > 0 && fov_mm[a] < 1e5)) {
            g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID,
                        "Matrix %lldx%lldx%lld, FOV %gx%gx%g mm: give 1 to 1024 voxels and a positive FOV per axis",
                        (long long)n[0], (long long)n[1], (long long)n[2], fov_mm[0], fov_mm[1], fov_mm[2]);
            return FALSE;
        }
    LarmorDatasetSpec *spec = larmor_dataset_spec_copy(cur);
    /* FOV relative to the file's: the spec keeps asking for it when reloaded. */
    for (int a = 0; a < 3; a++) {
        spec->grid[a] = n[a];
        spec->fov_mm[a] = fov_mm[a];
    }
    larmor_window_load(self, spec);
    larmor_dataset_spec_free(spec);
    return TRUE;
}

static void on_grid_apply(GtkWidget *b, LarmorWindow *self)
{
    double n[3], fov[3];
    GError *error = NULL;
    if (!parse_triple(gtk_editable_get_text(GTK_EDITABLE(self->matrix_entry)), n))
        g_set_error(&error, LARMOR_ERROR, LM_ERR_INVALID, "Matrix “%s”: give NX×NY×NZ or one number",
                    gtk_editable_get_text(GTK_EDITABLE(self->matrix_entry)));
    else if (!parse_triple(gtk_editable_get_text(GTK_EDITABLE(self->fov_entry)), fov))
        g_set_error(&error, LARMOR_ERROR, LM_ERR_INVALID, "FOV “%s”: give X×Y×Z in mm or one number",
                    gtk_editable_get_text(GTK_EDITABLE(self->fov_entry)));
    else {
        const int64_t ni[3] = { (int64_t)llround(n[0]), (int64_t)llround(n[1]), (int64_t)llround(n[2]) };
        larmor_window_set_grid(self, ni, fov, &error);
    }
    if (error) {
        show_error(self, error);
        g_error_free(error);
    }
}

/* Memory and time of the run the sidebar would start, before it starts. */
static void update_estimate(LarmorWindow *self)
{
    LarmorReconParams p;
    if (!self->dataset || !larmor_recon_panel_get_params(self->recon_panel, &p, NULL)) {
        gtk_widget_set_visible(GTK_WIDGET(self->estimate_label), FALSE);
        return;
    }
    int coils = (int)larmor_dataset_get_coils(self->dataset);
    if (p.compress > 0)
        coils = MIN(coils, p.compress);
    /* The newest run of this variant here gives the throughput. */
    double measured = NAN;
    for (guint i = g_list_model_get_n_items(G_LIST_MODEL(self->runs)); i > 0 && isnan(measured); i--) {
        LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), i - 1);
        if (larmor_run_get_params(r)->method == LM_METHOD_CG && g_strcmp0(larmor_run_get_params(r)->variant, p.variant) == 0 &&
            isfinite(larmor_run_get_gpairs(r)))
            measured = larmor_run_get_gpairs(r);
        g_object_unref(r);
    }
    LarmorEstimate e;
    larmor_estimate_compute(larmor_dataset_get_geom(self->dataset)->n, larmor_dataset_get_traj(self->dataset)->m, coils,
                            &p, measured, &e);
    char *t = larmor_estimate_text(&e, &p);
    gtk_label_set_text(self->estimate_label, t);
    gtk_widget_set_visible(GTK_WIDGET(self->estimate_label), TRUE);
    g_free(t);
}

const char *larmor_window_get_estimate_text(LarmorWindow *self)
{
    return gtk_widget_get_visible(GTK_WIDGET(self->estimate_label)) ? gtk_label_get_text(self->estimate_label) : NULL;
}

/* --- sessions ---------------------------------------------------------- */

static const char *const mode_keys[] = { "window-magnitude", "window-phase", "window-real", "window-imaginary" };

static char *run_group(LarmorRun *r)
{
    return g_strdup_printf("run-%d", larmor_run_get_index(r));
}

/* Window/level of an image for every display mode it has one for. */
static void save_windows(LarmorWindow *self, GKeyFile *kf, const char *group, LarmorVolume *v)
{
    for (int m = 0; m < (int)G_N_ELEMENTS(mode_keys); m++) {
        double wl[2];
        if (v && larmor_ortho_view_get_image_window(self->ortho_view, v, m, &wl[0], &wl[1]))
            larmor_session_set_doubles(kf, group, mode_keys[m], wl, 2);
    }
}

static void restore_windows(LarmorWindow *self, GKeyFile *kf, const char *group, LarmorVolume *v)
{
    for (int m = 0; m < (int)G_N_ELEMENTS(mode_keys); m++) {
        double wl[2];
        if (v && larmor_session_get_doubles(kf, group, mode_keys[m], wl, 2))
            larmor_ortho_view_set_image_window(self->ortho_view, v, m, wl[0], wl[1]);
    }
}

static void save_cursor(GKeyFile *kf, const char *group, LarmorViewState *st)
{
    int64_t ijk[3];
    larmor_view_state_get_cursor(st, ijk);
    double c[3] = { (double)ijk[0], (double)ijk[1], (double)ijk[2] };
    larmor_session_set_doubles(kf, group, "cursor", c, 3);
}

static void restore_cursor(GKeyFile *kf, const char *group, LarmorViewState *st)
{
    double c[3];
    if (larmor_session_get_doubles(kf, group, "cursor", c, 3)) {
        const int64_t ijk[3] = { (int64_t)c[0], (int64_t)c[1], (int64_t)c[2] };
        larmor_view_state_set_cursor(st, ijk);
    }
}

/* The ROI, the noise region and the profile line of linked views. */
static void save_regions(GKeyFile *kf, const char *group, LarmorViewState *st)
{
    LarmorRoi roi;
    LarmorLine line;
    larmor_view_state_get_roi(st, &roi);
    larmor_session_set_roi(kf, group, "roi", &roi);
    larmor_view_state_get_noise_roi(st, &roi);
    larmor_session_set_roi(kf, group, "noise-roi", &roi);
    larmor_view_state_get_line(st, &line);
    larmor_session_set_line(kf, group, "line", &line);
}

static void restore_regions(GKeyFile *kf, const char *group, LarmorViewState *st)
{
    LarmorRoi roi;
    LarmorLine line;
    if (larmor_session_get_roi(kf, group, "noise-roi", &roi))
        larmor_view_state_set_noise_roi(st, &roi);
    if (larmor_session_get_roi(kf, group, "roi", &roi))
        larmor_view_state_set_roi(st, &roi);
    if (larmor_session_get_line(kf, group, "line", &line))
        larmor_view_state_set_line(st, &line);
}

/* A run's prior influence image goes in group "run-N-prior". */
static void save_prior_influence(LarmorSession *s, const char *run_group, LarmorRun *r)
{
    if (!larmor_run_get_prior_influence(r))
        return;
    char *g = g_strconcat(run_group, "-prior", NULL);
    larmor_session_add_image(s, g, larmor_run_get_prior_influence(r));
    g_free(g);
}

/* Everything a session holds, captured on the main thread (images are
 * shared: volumes never change once made). */
static LarmorSession *capture_session(LarmorWindow *self)
{
    LarmorSession *s = larmor_session_new();
    GKeyFile *kf = larmor_session_get_keyfile(s);
    g_key_file_set_string(kf, "session", "application", "larmor");
    LarmorVolume *truth = self->dataset ? larmor_dataset_get_truth(self->dataset) : NULL;
    if (self->dataset) {
        larmor_session_set_spec(kf, "data", larmor_dataset_get_spec(self->dataset));
        g_key_file_set_string(kf, "data", "name", larmor_dataset_get_name(self->dataset));
        g_key_file_set_string(kf, "data", "key", larmor_dataset_get_key(self->dataset));
        if (self->truth_path)
            g_key_file_set_string(kf, "data", "truth-file", self->truth_path);
    }
    GListModel *runs = G_LIST_MODEL(self->runs);
    GString *order = g_string_new(NULL);
    for (guint i = 0; i < g_list_model_get_n_items(runs); i++) {
        LarmorRun *r = g_list_model_get_item(runs, i);
        char *g = run_group(r);
        larmor_run_save_to_keyfile(r, kf, g);
        if (larmor_run_get_image(r)) {
            larmor_session_add_image(s, g, larmor_run_get_image(r));
            save_windows(self, kf, g, larmor_run_get_image(r));
        }
        save_prior_influence(s, g, r);
        g_string_append_printf(order, "%s%d", order->len ? ";" : "", larmor_run_get_index(r));
        g_free(g);
        g_object_unref(r);
    }
    g_key_file_set_string(kf, "session", "runs", order->str);
    g_string_truncate(order, 0);
    for (GList *l = self->compare_order.head; l; l = l->next)
        g_string_append_printf(order, "%s%d", order->len ? ";" : "", larmor_run_get_index(l->data));
    g_key_file_set_string(kf, "compare", "runs", order->str);
    g_string_free(order, TRUE);
    g_key_file_set_boolean(kf, "compare", "differences", larmor_compare_view_get_differences(self->compare_view));
    g_key_file_set_integer(kf, "compare", "orientation", larmor_compare_view_get_orientation(self->compare_view));
    g_key_file_set_boolean(kf, "compare", "linked", larmor_compare_view_get_linked(self->compare_view));
    LarmorViewState *cst = larmor_compare_view_get_state(self->compare_view);
    save_cursor(kf, "compare", cst);
    double wl[2] = { larmor_view_state_get_window(cst), larmor_view_state_get_level(cst) };
    larmor_session_set_doubles(kf, "compare", "window", wl, 2);
    LarmorViewState *ost = larmor_ortho_view_get_state(self->ortho_view);
    save_cursor(kf, "viewer", ost);
    g_key_file_set_integer(kf, "viewer", "colormap", larmor_view_state_get_user_colormap(ost));
    LarmorVolume *shown = larmor_ortho_view_get_volume(self->ortho_view);
    char *shown_name = NULL;
    if (shown && shown == truth)
        shown_name = g_strdup("truth");
    for (guint i = 0; !shown_name && shown && i < g_list_model_get_n_items(runs); i++) {
        LarmorRun *r = g_list_model_get_item(runs, i);
        if (larmor_run_get_image(r) == shown)
            shown_name = run_group(r);
        g_object_unref(r);
    }
    g_key_file_set_string(kf, "viewer", "image", shown_name ? shown_name : "");
    g_free(shown_name);
    save_windows(self, kf, "truth", truth);
    /* A reference the user opened (a phantom's own comes back with its data). */
    if (self->reference && !self->reference_from_data) {
        larmor_session_add_image(s, "reference", self->reference);
        g_key_file_set_string(kf, "reference", "name", larmor_volume_get_name(self->reference));
    }
    save_regions(kf, "viewer", ost);
    save_regions(kf, "compare", cst);
    return s;
}

typedef struct {
    LarmorWindow *self;
    char *path;
    GPtrArray *runs;   /* the runs saved: marked exported once written */
} SaveJob;

static void on_session_written(GObject *source, GAsyncResult *result, gpointer data)
{
    SaveJob *j = data;
    LarmorWindow *self = j->self;
    GError *error = NULL;
    gboolean ok = larmor_session_write_finish(result, &error);
    self->session_jobs--;
    if (!self->disposed && !ok)
        show_error(self, error);
    else if (!self->disposed) {
        /* Saved runs are safe to close on. */
        for (guint i = 0; i < j->runs->len; i++)
            larmor_run_set_exported(j->runs->pdata[i], TRUE);
        char *t = g_strdup_printf("Session saved to %s", j->path);
        larmor_window_show_message(self, t, FALSE);
        g_free(t);
        update_actions(self);
    }
    g_clear_error(&error);
    g_ptr_array_unref(j->runs);
    g_free(j->path);
    g_free(j);
    g_object_unref(self);
}

void larmor_window_save_session(LarmorWindow *self, const char *path)
{
    SaveJob *j = g_new0(SaveJob, 1);
    j->self = g_object_ref(self);
    j->path = g_str_has_suffix(path, ".larmor") ? g_strdup(path) : g_strconcat(path, ".larmor", NULL);
    j->runs = g_ptr_array_new_with_free_func(g_object_unref);
    for (guint i = 0; i < g_list_model_get_n_items(G_LIST_MODEL(self->runs)); i++)
        g_ptr_array_add(j->runs, g_list_model_get_item(G_LIST_MODEL(self->runs), i));
    self->session_jobs++;
    update_actions(self);
    larmor_session_write_async(capture_session(self), j->path, on_session_written, j);
}

/* Every run goes (a session replaces them). */
static void clear_runs(LarmorWindow *self)
{
    self->updating_compare = TRUE;
    LarmorVolume *shown = larmor_ortho_view_get_volume(self->ortho_view);
    while (g_list_model_get_n_items(G_LIST_MODEL(self->runs)) > 0) {
        LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), 0);
        g_signal_handlers_disconnect_by_data(r, self);
        if (shown && shown == larmor_run_get_image(r)) {
            larmor_ortho_view_show_volume(self->ortho_view, self->dataset ? larmor_dataset_get_truth(self->dataset) : NULL);
            shown = NULL;
        }
        volumes_remove(self, larmor_run_get_image(r));
        volumes_remove(self, larmor_run_get_prior_influence(r));
        g_list_store_remove(self->runs, 0);
        g_object_unref(r);
    }
    g_queue_clear(&self->compare_order);
    forget_undo(self); /* another set of runs: nothing to restore into */
    larmor_coils_view_set_run(self->coils_view, NULL);
    self->updating_compare = FALSE;
    update_compare(self);
}

static LarmorRun *run_by_index(LarmorWindow *self, int index)
{
    for (guint i = 0; i < g_list_model_get_n_items(G_LIST_MODEL(self->runs)); i++) {
        LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), i);
        g_object_unref(r); /* the list keeps it */
        if (larmor_run_get_index(r) == index)
            return r;
    }
    return NULL;
}

/* Views and the compare layout of a session, once its runs are listed and
 * its data loaded (or found missing). */
static void apply_session(LarmorWindow *self, LarmorSession *s)
{
    GKeyFile *kf = larmor_session_get_keyfile(s);
    char *list = g_key_file_get_string(kf, "compare", "runs", NULL);
    char **idx = g_strsplit(list ? list : "", ";", -1);
    for (int i = 0; idx[i]; i++) {
        LarmorRun *r = *idx[i] ? run_by_index(self, atoi(idx[i])) : NULL;
        /* Runs of data not loaded cannot be compared (they stay listed). */
        if (r && larmor_run_get_current(r) && larmor_run_get_image(r))
            larmor_run_set_compare(r, TRUE);
    }
    g_strfreev(idx);
    g_free(list);
    larmor_compare_view_set_orientation(self->compare_view, g_key_file_get_integer(kf, "compare", "orientation", NULL));
    larmor_compare_view_set_linked(self->compare_view, g_key_file_get_boolean(kf, "compare", "linked", NULL) ||
                                                           !g_key_file_has_key(kf, "compare", "linked", NULL));
    larmor_compare_view_set_differences(self->compare_view, g_key_file_get_boolean(kf, "compare", "differences", NULL));
    LarmorViewState *cst = larmor_compare_view_get_state(self->compare_view);
    restore_cursor(kf, "compare", cst);
    double wl[2];
    if (larmor_session_get_doubles(kf, "compare", "window", wl, 2) && wl[0] > 0)
        larmor_view_state_set_window_level(cst, wl[0], wl[1]);

    LarmorVolume *truth = self->dataset ? larmor_dataset_get_truth(self->dataset) : NULL;
    restore_windows(self, kf, "truth", truth);
    for (guint i = 0; i < g_list_model_get_n_items(G_LIST_MODEL(self->runs)); i++) {
        LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), i);
        char *g = run_group(r);
        restore_windows(self, kf, g, larmor_run_get_image(r));
        g_free(g);
        g_object_unref(r);
    }
    char *shown = g_key_file_get_string(kf, "viewer", "image", NULL);
    LarmorVolume *v = NULL;
    if (g_strcmp0(shown, "truth") == 0)
        v = truth;
    else if (shown && g_str_has_prefix(shown, "run-")) {
        LarmorRun *r = run_by_index(self, atoi(shown + 4));
        v = r ? larmor_run_get_image(r) : NULL;
    }
    g_free(shown);
    if (v)
        larmor_ortho_view_show_volume(self->ortho_view, v);
    LarmorViewState *ost = larmor_ortho_view_get_state(self->ortho_view);
    restore_cursor(kf, "viewer", ost);
    restore_regions(kf, "viewer", ost);
    restore_regions(kf, "compare", cst);
    LarmorVolume *ref = larmor_session_get_image(s, "reference");
    if (ref) {
        char *name = g_key_file_get_string(kf, "reference", "name", NULL);
        if (name)
            larmor_volume_set_name(ref, name);
        larmor_recon_panel_set_reference_name(self->recon_panel,
                                              name && g_str_has_prefix(name, "Reference: ") ? name + 11 : name);
        set_reference(self, ref);
        self->reference_from_data = FALSE;
        g_free(name);
    }
    GError *e = NULL;
    int cmap = g_key_file_get_integer(kf, "viewer", "colormap", &e);
    if (!e)
        larmor_view_state_set_colormap(ost, cmap);
    g_clear_error(&e);
}

/* The one-line outcome of opening a session. */
static void session_done(LarmorWindow *self, const char *problem)
{
    GString *t = g_string_new(NULL);
    char *base = g_path_get_basename(self->session_path ? self->session_path : "session");
    int n = self->session_runs;
    g_string_printf(t, "%s: %d run%s restored", base, n, n == 1 ? "" : "s");
    if (problem)
        g_string_append_printf(t, "; %s", problem);
    larmor_window_show_message(self, t->str, problem != NULL);
    g_string_free(t, TRUE);
    g_free(base);
}

static void finish_pending_session(LarmorWindow *self, const char *problem)
{
    LarmorSession *s = g_steal_pointer(&self->pending_session);
    if (!s)
        return;
    apply_session(self, s);
    const char *missing = larmor_session_get_missing(s);
    char *p = problem ? g_strdup(problem)
              : self->session_note ? g_strdup(self->session_note)
              : *missing ? g_strdup_printf("images missing: %s", missing)
                         : NULL;
    g_clear_pointer(&self->session_note, g_free);
    /* One line: the first missing image names the rest's folder. */
    if (p && strchr(p, '\n'))
        *strchr(p, '\n') = 0;
    session_done(self, p);
    g_free(p);
    larmor_session_free(s);
}

/* A data file the spec names that is not there, or NULL. */
static const char *missing_data_file(const LarmorDatasetSpec *spec)
{
    if (spec->kind != LARMOR_SOURCE_FILES)
        return NULL;
    const char *paths[2] = { spec->traj_path, spec->kdata_path };
    for (int i = 0; i < 2; i++) {
        if (!paths[i])
            continue;
        /* BART bases: the .cfl beside them. */
        char *cfl = g_str_has_suffix(paths[i], ".h5") || g_str_has_suffix(paths[i], ".bin") || g_str_has_suffix(paths[i], ".cfl")
                        ? g_strdup(paths[i])
                        : g_strconcat(paths[i], ".cfl", NULL);
        gboolean there = g_file_test(cfl, G_FILE_TEST_EXISTS);
        g_free(cfl);
        if (!there)
            return paths[i];
    }
    return NULL;
}

static void on_session_read(GObject *source, GAsyncResult *result, gpointer data)
{
    LarmorWindow *self = data;
    GError *error = NULL;
    LarmorSession *s = larmor_session_read_finish(result, &error);
    self->session_jobs--;
    if (self->disposed || !s) {
        if (!self->disposed)
            show_error(self, error);
        g_clear_error(&error);
        if (s)
            larmor_session_free(s);
        update_actions(self);
        g_object_unref(self);
        return;
    }
    GKeyFile *kf = larmor_session_get_keyfile(s);
    /* Every run parses, or nothing changes. */
    char *list = g_key_file_get_string(kf, "session", "runs", NULL);
    char **idx = g_strsplit(list ? list : "", ";", -1);
    GPtrArray *runs = g_ptr_array_new_with_free_func(g_object_unref);
    for (int i = 0; idx[i] && !error; i++) {
        if (!*idx[i])
            continue;
        char *g = g_strdup_printf("run-%d", atoi(idx[i]));
        LarmorRun *r = larmor_run_new_from_keyfile(kf, g, larmor_session_get_image(s, g), &error);
        char *pg = g_strconcat(g, "-prior", NULL);
        if (r && larmor_session_get_image(s, pg))
            larmor_run_set_prior_influence(r, larmor_session_get_image(s, pg));
        g_free(pg);
        if (r)
            g_ptr_array_add(runs, r);
        g_free(g);
    }
    g_strfreev(idx);
    g_free(list);
    if (error) {
        char *t = g_strdup_printf("%s: %s", self->session_path, error->message);
        larmor_window_show_message(self, t, TRUE);
        g_free(t);
        g_error_free(error);
        g_ptr_array_unref(runs);
        larmor_session_free(s);
        update_actions(self);
        g_object_unref(self);
        return;
    }
    clear_runs(self);
    self->next_index = 0;
    for (guint i = 0; i < runs->len; i++) {
        LarmorRun *r = runs->pdata[i];
        int index = larmor_run_get_index(r);
        larmor_run_set_current(r, run_is_current(self, r));
        larmor_run_set_exported(r, TRUE); /* they are in the session */
        g_signal_connect(r, "notify::compare", G_CALLBACK(on_run_compare), self);
        g_list_store_append(self->runs, r);
        if (larmor_run_get_image(r))
            g_list_store_append(self->volumes, larmor_run_get_image(r));
        if (larmor_run_get_prior_influence(r))
            g_list_store_append(self->volumes, larmor_run_get_prior_influence(r));
        self->next_index = MAX(self->next_index, index);
    }
    self->session_runs = (int)runs->len;
    g_ptr_array_unref(runs);
    g_clear_pointer(&self->pending_session, larmor_session_free);
    self->pending_session = s;

    LarmorDatasetSpec spec;
    char *key = g_key_file_get_string(kf, "data", "key", NULL);
    char *truth = g_key_file_get_string(kf, "data", "truth-file", NULL);
    if (!g_key_file_has_group(kf, "data")) {
        refresh_runs(self);
        finish_pending_session(self, NULL);
    } else if (!larmor_session_get_spec(kf, "data", &spec, &error)) {
        refresh_runs(self);
        finish_pending_session(self, error->message);
        g_clear_error(&error);
    } else {
        const char *missing = missing_data_file(&spec);
        gboolean same = self->dataset && !self->loading && g_strcmp0(key, larmor_dataset_get_key(self->dataset)) == 0;
        if (missing) {
            /* The runs stay, marked as of data not loaded. */
            refresh_runs(self);
            char *t = g_strdup_printf("data not found: %s", missing);
            finish_pending_session(self, t);
            g_free(t);
        } else if (same && !truth) {
            refresh_runs(self);
            finish_pending_session(self, NULL);
        } else {
            if (truth && g_file_test(truth, G_FILE_TEST_EXISTS)) {
                g_free(self->pending_truth);
                self->pending_truth = g_strdup(truth);
            }
            else if (truth) {
                g_free(self->session_note);
                self->session_note = g_strdup_printf("truth not found: %s", truth);
            }
            if (same && self->pending_truth) {
                larmor_window_open_truth(self, self->pending_truth);
                g_clear_pointer(&self->pending_truth, g_free);
            } else if (same) {
                refresh_runs(self);
                finish_pending_session(self, NULL);
            } else
                larmor_window_load(self, &spec);
        }
        g_free(spec.traj_path);
        g_free(spec.kdata_path);
        g_free(spec.sens_path);
    }
    g_free(key);
    g_free(truth);
    update_actions(self);
    g_object_unref(self);
}

void larmor_window_open_session(LarmorWindow *self, const char *path)
{
    if (self->task) {
        larmor_window_show_message(self, "Wait for the reconstruction to finish (or cancel it) before opening a session", TRUE);
        return;
    }
    g_free(self->session_path);
    self->session_path = g_strdup(path);
    self->session_jobs++;
    update_actions(self);
    larmor_session_read_async(path, on_session_read, g_object_ref(self));
}

static void session_save_done(LarmorWindow *self, GtkFileChooser *c)
{
    char *p = chooser_path(c, self);
    if (p)
        larmor_window_save_session(self, p);
    g_free(p);
}

static void session_open_done(LarmorWindow *self, GtkFileChooser *c)
{
    char *p = chooser_path(c, self);
    if (p)
        larmor_window_open_session(self, p);
    g_free(p);
}

static void action_save_session(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    GtkFileChooser *c = chooser_new(self, "Save Session", GTK_FILE_CHOOSER_ACTION_SAVE, "_Save", session_save_done);
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    gtk_file_chooser_set_current_name(c, "session.larmor");
    G_GNUC_END_IGNORE_DEPRECATIONS
    add_filter(c, "Larmor sessions (.larmor)", (const char *const[]){ "*.larmor", NULL });
    show_chooser(c);
}

static void action_open_session(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    GtkFileChooser *c = chooser_new(self, "Open Session", GTK_FILE_CHOOSER_ACTION_OPEN, "_Open", session_open_done);
    add_filter(c, "Larmor sessions (.larmor)", (const char *const[]){ "*.larmor", NULL });
    show_chooser(c);
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

static void update_actions(LarmorWindow *self)
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
        save_params(self);
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

    /* Actions per class, GNOME Text Editor style; shortcuts next to them. */
    gtk_widget_class_install_action(wc, "win.open", NULL, action_open);
    gtk_widget_class_install_action(wc, "win.open-truth", NULL, action_open_truth);
    gtk_widget_class_install_action(wc, "win.open-recent", "i", action_open_recent);
    gtk_widget_class_install_action(wc, "win.open-reference", NULL, action_open_reference);
    gtk_widget_class_install_action(wc, "win.open-maps", NULL, action_open_maps);
    gtk_widget_class_install_action(wc, "win.open-fieldmap", NULL, action_open_fieldmap);
    gtk_widget_class_install_action(wc, "win.open-times", NULL, action_open_times);
    gtk_widget_class_install_action(wc, "win.auto-lambda", NULL, action_auto_lambda);
    gtk_widget_class_install_action(wc, "win.compare-fieldmap", NULL, action_compare_fieldmap);
    gtk_widget_class_install_action(wc, "win.new-phantom", NULL, action_new_phantom);
    gtk_widget_class_install_action(wc, "win.reconstruct", NULL, action_reconstruct);
    gtk_widget_class_install_action(wc, "win.sweep", NULL, action_sweep);
    gtk_widget_class_install_action(wc, "win.cancel", NULL, action_cancel);
    gtk_widget_class_install_action(wc, "win.show-run", NULL, action_show_run);
    gtk_widget_class_install_action(wc, "win.remove-run", NULL, action_remove_run);
    gtk_widget_class_install_action(wc, "win.undo", NULL, action_undo);
    gtk_widget_class_install_action(wc, "win.help", NULL, action_help);
    gtk_widget_class_install_property_action(wc, "win.radiological", "radiological");
    gtk_widget_class_install_property_action(wc, "win.show-colorbar", "show-colorbar");
    gtk_widget_class_install_action(wc, "win.export-nifti", NULL, action_export_nifti);
    gtk_widget_class_install_action(wc, "win.export-png", NULL, action_export_png);
    gtk_widget_class_install_action(wc, "win.export-csv", NULL, action_export_csv);
    gtk_widget_class_install_action(wc, "win.page", "s", action_page);
    gtk_widget_class_install_action(wc, "win.save-session", NULL, action_save_session);
    gtk_widget_class_install_action(wc, "win.open-session", NULL, action_open_session);

    gtk_widget_class_add_binding_action(wc, GDK_KEY_o, GDK_CONTROL_MASK, "win.open", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_z, GDK_CONTROL_MASK, "win.undo", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_F1, 0, "win.help", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_t, GDK_CONTROL_MASK, "win.open-truth", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_n, GDK_CONTROL_MASK, "win.new-phantom", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_r, GDK_CONTROL_MASK, "win.reconstruct", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_F5, 0, "win.reconstruct", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_l, GDK_CONTROL_MASK, "win.sweep", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_Escape, 0, "win.cancel", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_e, GDK_CONTROL_MASK, "win.export-nifti", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_s, GDK_CONTROL_MASK, "win.save-session", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_o, GDK_CONTROL_MASK | GDK_SHIFT_MASK, "win.open-session", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_s, GDK_CONTROL_MASK | GDK_SHIFT_MASK, "win.export-png", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_e, GDK_CONTROL_MASK | GDK_SHIFT_MASK, "win.export-csv", NULL);
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
    g_signal_connect(self->runs_view, "run-activated", G_CALLBACK(on_run_activated), self);
    g_signal_connect(self->runs_view, "run-selected", G_CALLBACK(on_run_selected), self);
    larmor_coils_view_set_linked_state(self->coils_view, larmor_ortho_view_get_state(self->ortho_view));
    g_signal_connect(self->sweep_view, "use-lambda", G_CALLBACK(on_use_lambda), self);
    g_signal_connect(self->toast_close, "clicked", G_CALLBACK(on_toast_close), self);
    g_signal_connect(self->grid_apply, "clicked", G_CALLBACK(on_grid_apply), self);
    g_signal_connect(self->matrix_entry, "activate", G_CALLBACK(on_grid_apply), self);
    g_signal_connect(self->fov_entry, "activate", G_CALLBACK(on_grid_apply), self);
    g_signal_connect_swapped(self->recon_panel, "changed", G_CALLBACK(update_estimate), self);
    g_signal_connect(self->recon_panel, "live-lambda", G_CALLBACK(on_panel_live_lambda), self);
    g_signal_connect_swapped(self->recon_panel, "changed", G_CALLBACK(update_live), self);
    g_signal_connect_swapped(self->recon_panel, "changed", G_CALLBACK(update_actions), self);
    g_signal_connect(self, "close-request", G_CALLBACK(on_close_request), NULL);

    GtkDropTarget *drop = gtk_drop_target_new(GDK_TYPE_FILE_LIST, GDK_ACTION_COPY);
    g_signal_connect(drop, "drop", G_CALLBACK(on_drop), self);
    gtk_widget_add_controller(GTK_WIDGET(self), GTK_EVENT_CONTROLLER(drop));
    larmor_recon_panel_set_status(self->recon_panel, "Ready", 0);
    update_actions(self);
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
        load_params(self);
        fill_recent(self);
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
        show_dataset(self);
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
        data |= path && !is_volume_file(path);
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
