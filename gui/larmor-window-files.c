/* The window's data: loading a data set (benchmark, phantom, files, drops,
 * the command line, Open Recent), its truth, anatomical reference, coil
 * maps, field map and sample times, the data card, and the matrix and FOV
 * of file data. */
#include <math.h>
#include <string.h>

#include "larmor-dicom-path.h"
#include "larmor-open-times.h"
#include "larmor-phantom-dialog.h"
#include "larmor-util.h"
#include "larmor-window-private.h"
#include "larmor.h"

/* The data's field map: in the image list, the viewer's overlay and the panel. */
static void sync_fieldmap(LarmorWindow *self)
{
    LarmorVolume *fv = self->dataset ? larmor_dataset_get_fieldmap_volume(self->dataset) : NULL;
    if (fv != self->fieldmap_shown) {
        larmor_window_volumes_remove(self, self->fieldmap_shown);
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

static void show_grid(LarmorWindow *self);

void larmor_window_show_dataset(LarmorWindow *self)
{
    show_grid(self);
    larmor_window_update_estimate(self);
    if (!self->dataset) {
        gtk_label_set_text(self->data_title, self->loading ? "Loading…" : "No data");
        gtk_label_set_text(self->data_source, "");
        gtk_label_set_text(self->data_summary, "");
        gtk_label_set_text(self->truth_label, "");
        gtk_widget_set_visible(GTK_WIDGET(self->maps_label), FALSE);
        larmor_recon_panel_set_coil_info(self->recon_panel, 1, FALSE, FALSE);
        larmor_recon_panel_set_dynamic(self->recon_panel, FALSE);
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
        char frames[40] = "";
        if (larmor_volume_get_n_frames(truth) > 1)
            g_snprintf(frames, sizeof frames, " × %lld frames", (long long)larmor_volume_get_n_frames(truth));
        char *t = g_strdup_printf("Truth %lld × %lld × %lld%s: %s", (long long)v->dims[0], (long long)v->dims[1],
                                  (long long)v->dims[2], frames, self->truth_origin ? self->truth_origin : "loaded");
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
    larmor_recon_panel_set_dynamic(self->recon_panel, larmor_dataset_get_frames(ds) != NULL);
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

void larmor_window_set_truth_volume(LarmorWindow *self, LarmorVolume *old, LarmorVolume *truth)
{
    larmor_window_volumes_remove(self, old);
    if (truth) {
        larmor_volume_set_name(truth, "Truth");
        g_list_store_insert(self->volumes, 0, truth);
    }
}

/* The one place where what belonged to the data loaded before is let go
 * (issue 25, defect 8): their error message; for other data (not the same
 * on another grid) a coil source of "Estimate maps" when these ship maps.
 * The viewer's image menu names nothing when the new data have no image to
 * show (larmor_ortho_view_show_volume), and the overlay menu lists "Field
 * map (Hz)" only for data with one (sync_fieldmap, through
 * larmor_ortho_view_set_overlay_images). */
static void data_changed(LarmorWindow *self, gboolean other_data)
{
    larmor_window_clear_error(self);
    if (other_data) {
        larmor_recon_panel_prefer_data_maps(self->recon_panel);
        /* "#N done ... PSNR" and the run's details were the old data's. */
        larmor_recon_panel_set_status(self->recon_panel, "", 0);
        larmor_recon_panel_set_details(self->recon_panel, NULL);
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
            larmor_window_refresh_runs(self);
            char *t = g_strdup_printf("its data did not load: %s", error->message);
            larmor_window_finish_pending_session(self, t);
            g_free(t);
        } else if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
            larmor_window_show_error(self, error);
        g_error_free(error);
        larmor_window_show_dataset(self);
        larmor_window_update_actions(self);
        g_object_unref(self);
        return;
    }
    LarmorVolume *old_truth = self->dataset ? larmor_dataset_get_truth(self->dataset) : NULL;
    if (old_truth)
        g_object_ref(old_truth);
    gboolean other = !self->dataset ||
                     !larmor_window_same_data(larmor_dataset_get_key(self->dataset), larmor_dataset_get_key(ds));
    g_set_object(&self->dataset, ds);
    g_free(self->truth_origin);
    self->truth_origin = g_strdup("the analytic phantom, sub-voxel averaged");
    g_clear_pointer(&self->truth_path, g_free);
    larmor_window_set_truth_volume(self, old_truth, larmor_dataset_get_truth(ds));
    g_clear_object(&old_truth);
    /* A phantom brings its own anatomical reference; it leaves with the
     * data, while a reference the user opened stays. */
    if (larmor_dataset_get_reference(ds)) {
        larmor_window_set_reference(self, larmor_dataset_get_reference(ds));
        larmor_recon_panel_set_reference_name(self->recon_panel, "phantom, other contrast");
        self->reference_from_data = TRUE;
    } else if (self->reference_from_data) {
        larmor_window_set_reference(self, NULL);
        larmor_recon_panel_set_reference_name(self->recon_panel, NULL);
        self->reference_from_data = FALSE;
    }
    /* Runs of other data stay listed, marked, but leave the comparison;
     * runs of these data (loaded again) get metrics against this truth. */
    larmor_window_show_dataset(self);
    data_changed(self, other);
    larmor_window_refresh_runs(self);
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
    larmor_window_update_actions(self);
    if (self->settings && larmor_dataset_get_source(ds) && g_str_has_prefix(larmor_dataset_get_source(ds), "benchmark"))
        larmor_settings_set_string(self->settings, "data", "problem", larmor_dataset_get_name(ds));
    /* A truth given together with the data (command line, drop) now has
     * data to belong to. */
    if (self->pending_truth) {
        char *t = g_steal_pointer(&self->pending_truth);
        larmor_window_open_truth(self, t);
        g_free(t);
    } else
        larmor_window_finish_pending_session(self, NULL);
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
        larmor_window_show_dataset(self);
    larmor_window_update_actions(self);
    larmor_dataset_load_async(spec, self->load_cancellable, on_dataset_loaded, g_object_ref(self));
}

LarmorDataset *larmor_window_get_dataset(LarmorWindow *self)
{
    return self->dataset;
}

/* --- files ------------------------------------------------------------- */

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
        larmor_window_show_error(self, error);
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
            larmor_window_set_truth_volume(self, old, placed);
            larmor_window_show_dataset(self);
            int n = larmor_window_refresh_runs(self);
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
            larmor_window_show_error(self, error);
            g_error_free(error);
        }
        g_free(name);
        g_clear_object(&old);
        g_object_unref(v);
    }
    larmor_window_finish_pending_session(self, problem);
    g_free(problem);
    g_object_unref(self);
}

/* The anatomical regulariser's reference, listed after the truth. */
void larmor_window_set_reference(LarmorWindow *self, LarmorVolume *v)
{
    larmor_window_volumes_remove(self, self->reference);
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
        larmor_window_show_error(self, error);
        g_error_free(error);
    } else {
        char *label = g_strdup_printf("Reference: %s", larmor_volume_get_name(v));
        larmor_recon_panel_set_reference_name(self->recon_panel, larmor_volume_get_name(v));
        larmor_volume_set_name(v, label);
        g_free(label);
        larmor_window_set_reference(self, v);
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
        larmor_window_show_error(self, error);
        g_error_free(error);
    } else {
        larmor_window_show_dataset(self);
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

gboolean larmor_window_is_volume_file(const char *path)
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

void larmor_window_fill_recent(LarmorWindow *self)
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
    larmor_window_fill_recent(self);
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
    larmor_window_fill_recent(self);
}

void larmor_window_open_files(LarmorWindow *self, GFile *const *files, int n)
{
    /* A saved session (`larmor study.larmor`, or dropped on the window)
     * opens as a session, with its data, runs and views. */
    for (int i = 0; i < n; i++) {
        char *path = g_file_get_path(files[i]);
        if (path && g_str_has_suffix(path, ".larmor")) {
            larmor_window_open_session(self, path);
            g_free(path);
            return;
        }
        g_free(path);
    }
    GPtrArray *data = g_ptr_array_new_with_free_func(g_free);
    char *truth = NULL, *sens = NULL;
    for (int i = 0; i < n; i++) {
        char *path = g_file_get_path(files[i]);
        if (!path)
            continue;
        larmor_remember_folder(self->settings, files[i]);
        char *base = cfl_base(path);
        if (larmor_window_is_volume_file(path)) {
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

void larmor_window_open_truth(LarmorWindow *self, const char *path)
{
    larmor_volume_load_async(path, NULL, on_truth_loaded, g_object_ref(self));
}

void larmor_window_open_reference(LarmorWindow *self, const char *path)
{
    larmor_volume_load_async(path, NULL, on_reference_loaded, g_object_ref(self));
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
        larmor_window_show_error(self, error);
        g_error_free(error);
    } else {
        larmor_window_show_dataset(self);
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
    larmor_window_update_actions(self);
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

/* --- matrix and FOV of file data ---------------------------------------- */

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
        larmor_window_show_error(self, error);
        g_error_free(error);
    }
}


/* --- the Open dialogs --------------------------------------------------- */

static void on_data_chosen(GtkWindow *parent, GFile *const *files, int n, gboolean checked, gpointer data)
{
    larmor_window_open_files(LARMOR_WINDOW(parent), files, n);
}

static void action_open(GtkWidget *w, const char *name, GVariant *param)
{
    static const char *const filters[] = {
        "MRI data (.cfl, .h5, .bin)", "*.cfl *.hdr *.h5 *.bin", "BART (.cfl + .hdr)", "*.cfl *.hdr",
        "ISMRMRD (.h5)", "*.h5", "Parboil mri-fhd (.bin)", "*.bin", "All files", "*", NULL,
    };
    static const LarmorFileRequest req = {
        .title = "Open Trajectory and k-Space", .accept = "_Open", .multiple = TRUE, .filters = filters,
    };
    larmor_window_choose(LARMOR_WINDOW(w), &req, on_data_chosen, NULL);
}

static const char *const image_filters[] = { "Images (.nii, .nii.gz, .cfl)", "*.nii *.nii.gz *.cfl",
                                             LARMOR_DICOM_FILTER_NAME, "*", NULL };
static const char *const fieldmap_filters[] = { "Field maps in Hz (.nii, .nii.gz, .cfl)", "*.nii *.nii.gz *.cfl *.hdr",
                                                LARMOR_DICOM_FILTER_NAME, "*", NULL };
static const char *const maps_filters[] = { "Coil maps [nx, ny, nz, coils] (.cfl)", "*.cfl *.hdr", NULL };
static const char *const times_filters[] = { "Sample times in s [1, samples, spokes] (.cfl)", "*.cfl *.hdr", NULL };

/* A DICOM file chosen as a volume stands for its series' folder. */
static void open_truth_series(LarmorWindow *self, const char *path)
{
    char *p = larmor_dicom_series_path(g_strdup(path));
    larmor_window_open_truth(self, p);
    g_free(p);
}

static void open_reference_series(LarmorWindow *self, const char *path)
{
    char *p = larmor_dicom_series_path(g_strdup(path));
    larmor_window_open_reference(self, p);
    g_free(p);
}

static void open_fieldmap_series(LarmorWindow *self, const char *path)
{
    char *p = larmor_dicom_series_path(g_strdup(path));
    larmor_window_open_fieldmap(self, p);
    g_free(p);
}

/* One file for the data loaded now: the action's name picks the dialog
 * and what is done with the file. */
static const struct {
    const char *action;
    LarmorFileRequest req;
    LarmorWindowPathFn open;
} companions[] = {
    { "open-truth", { .title = "Open Truth", .accept = "_Open", .filters = image_filters }, open_truth_series },
    { "open-reference", { .title = "Open Anatomical Reference", .accept = "_Open", .filters = image_filters },
      open_reference_series },
    { "open-maps", { .title = "Open Coil Maps", .accept = "_Open", .filters = maps_filters }, larmor_window_open_maps },
    { "open-fieldmap", { .title = "Open Field Map", .accept = "_Open", .filters = fieldmap_filters },
      open_fieldmap_series },
    { "open-times", { .title = "Open Sample Times", .accept = "_Open", .filters = times_filters },
      larmor_window_open_times },
};

static void action_open_companion(GtkWidget *w, const char *name, GVariant *param)
{
    for (size_t i = 0; i < G_N_ELEMENTS(companions); i++)
        if (g_str_equal(name + strlen("win."), companions[i].action))
            larmor_window_choose_path(LARMOR_WINDOW(w), &companions[i].req, companions[i].open);
}

void larmor_window_files_class_init(GtkWidgetClass *wc)
{
    gtk_widget_class_install_action(wc, "win.open", NULL, action_open);
    gtk_widget_class_install_action(wc, "win.open-recent", "i", action_open_recent);
    gtk_widget_class_install_action(wc, "win.new-phantom", NULL, action_new_phantom);
    for (size_t i = 0; i < G_N_ELEMENTS(companions); i++) {
        char *action = g_strconcat("win.", companions[i].action, NULL);
        gtk_widget_class_install_action(wc, action, NULL, action_open_companion);
        g_free(action);
    }
    gtk_widget_class_add_binding_action(wc, GDK_KEY_o, GDK_CONTROL_MASK, "win.open", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_t, GDK_CONTROL_MASK, "win.open-truth", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_n, GDK_CONTROL_MASK, "win.new-phantom", NULL);
}

void larmor_window_files_init(LarmorWindow *self)
{
    g_signal_connect(self->grid_apply, "clicked", G_CALLBACK(on_grid_apply), self);
    g_signal_connect(self->matrix_entry, "activate", G_CALLBACK(on_grid_apply), self);
    g_signal_connect(self->fov_entry, "activate", G_CALLBACK(on_grid_apply), self);
    GtkDropTarget *drop = gtk_drop_target_new(GDK_TYPE_FILE_LIST, GDK_ACTION_COPY);
    g_signal_connect(drop, "drop", G_CALLBACK(on_drop), self);
    gtk_widget_add_controller(GTK_WIDGET(self), GTK_EVENT_CONTROLLER(drop));
}
