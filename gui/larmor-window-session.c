/* The window's sessions (larmor-session.h): every run, the data's spec,
 * views and the compare layout captured on the main thread and written in
 * a worker; opened in a worker, the runs replaced, the data loaded again
 * when they are not the ones loaded, then the views applied. */
#include <string.h>

#include "larmor-util.h"
#include "larmor-window-private.h"

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
        larmor_window_show_error(self, error);
    else if (!self->disposed) {
        /* Saved runs are safe to close on. */
        for (guint i = 0; i < j->runs->len; i++)
            larmor_run_set_exported(j->runs->pdata[i], TRUE);
        char *t = g_strdup_printf("Session saved to %s", j->path);
        larmor_window_show_message(self, t, FALSE);
        g_free(t);
        larmor_window_update_actions(self);
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
    larmor_window_update_actions(self);
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
        larmor_window_volumes_remove(self, larmor_run_get_image(r));
        larmor_window_volumes_remove(self, larmor_run_get_prior_influence(r));
        g_list_store_remove(self->runs, 0);
        g_object_unref(r);
    }
    g_queue_clear(&self->compare_order);
    larmor_window_forget_undo(self); /* another set of runs: nothing to restore into */
    larmor_coils_view_set_run(self->coils_view, NULL);
    self->updating_compare = FALSE;
    larmor_window_update_compare(self);
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
        larmor_window_set_reference(self, ref);
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

void larmor_window_finish_pending_session(LarmorWindow *self, const char *problem)
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
            larmor_window_show_error(self, error);
        g_clear_error(&error);
        if (s)
            larmor_session_free(s);
        larmor_window_update_actions(self);
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
        larmor_window_update_actions(self);
        g_object_unref(self);
        return;
    }
    clear_runs(self);
    self->next_index = 0;
    for (guint i = 0; i < runs->len; i++) {
        LarmorRun *r = runs->pdata[i];
        int index = larmor_run_get_index(r);
        larmor_run_set_current(r, larmor_window_run_is_current(self, r));
        larmor_run_set_exported(r, TRUE); /* they are in the session */
        g_signal_connect(r, "notify::compare", G_CALLBACK(larmor_window_on_run_compare), self);
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
        larmor_window_refresh_runs(self);
        larmor_window_finish_pending_session(self, NULL);
    } else if (!larmor_session_get_spec(kf, "data", &spec, &error)) {
        larmor_window_refresh_runs(self);
        larmor_window_finish_pending_session(self, error->message);
        g_clear_error(&error);
    } else {
        const char *missing = missing_data_file(&spec);
        gboolean same = self->dataset && !self->loading && g_strcmp0(key, larmor_dataset_get_key(self->dataset)) == 0;
        if (missing) {
            /* The runs stay, marked as of data not loaded. */
            larmor_window_refresh_runs(self);
            char *t = g_strdup_printf("data not found: %s", missing);
            larmor_window_finish_pending_session(self, t);
            g_free(t);
        } else if (same && !truth) {
            larmor_window_refresh_runs(self);
            larmor_window_finish_pending_session(self, NULL);
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
                larmor_window_refresh_runs(self);
                larmor_window_finish_pending_session(self, NULL);
            } else
                larmor_window_load(self, &spec);
        }
        g_free(spec.traj_path);
        g_free(spec.kdata_path);
        g_free(spec.sens_path);
    }
    g_free(key);
    g_free(truth);
    larmor_window_update_actions(self);
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
    larmor_window_update_actions(self);
    larmor_session_read_async(path, on_session_read, g_object_ref(self));
}

static const char *const session_filters[] = { "Larmor sessions (.larmor)", "*.larmor", NULL };

static void action_save_session(GtkWidget *w, const char *name, GVariant *param)
{
    static const LarmorFileRequest req = { .title = "Save Session", .accept = "_Save", .save = TRUE,
                                           .current_name = "session.larmor", .filters = session_filters };
    larmor_window_choose_path(LARMOR_WINDOW(w), &req, larmor_window_save_session);
}

static void action_open_session(GtkWidget *w, const char *name, GVariant *param)
{
    static const LarmorFileRequest req = { .title = "Open Session", .accept = "_Open", .filters = session_filters };
    larmor_window_choose_path(LARMOR_WINDOW(w), &req, larmor_window_open_session);
}

void larmor_window_session_class_init(GtkWidgetClass *wc)
{
    gtk_widget_class_install_action(wc, "win.save-session", NULL, action_save_session);
    gtk_widget_class_install_action(wc, "win.open-session", NULL, action_open_session);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_s, GDK_CONTROL_MASK, "win.save-session", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_o, GDK_CONTROL_MASK | GDK_SHIFT_MASK, "win.open-session", NULL);
}
