/* The window's runs: which belong to the data loaded now, their metrics
 * against its truth, the comparison (up to four, oldest unticked first),
 * showing and selecting one, and deleting one with Undo. */
#include <string.h>

#include "larmor-util.h"
#include "larmor-window-private.h"
#include "larmor.h"

/* --- the comparison, and which runs belong to the data ------------------ */

void larmor_window_update_compare(LarmorWindow *self)
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

void larmor_window_on_run_compare(LarmorRun *run, GParamSpec *pspec, LarmorWindow *self)
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
        larmor_window_update_compare(self);
}

/* The data part of a data set key ("origin@NXxNYxNZ"): runs of the same
 * data at another matrix or FOV still compare, through world coordinates. */
gboolean larmor_window_same_data(const char *a, const char *b)
{
    if (!a || !b)
        return FALSE;
    const char *ea = strrchr(a, '@'), *eb = strrchr(b, '@');
    size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
    return la == lb && strncmp(a, b, la) == 0;
}


/* Does the run belong to the data loaded now (on any grid)? */
gboolean larmor_window_run_is_current(LarmorWindow *self, LarmorRun *run)
{
    return self->dataset && larmor_window_same_data(larmor_run_get_dataset_key(run), larmor_dataset_get_key(self->dataset));
}

/* Metrics of a run of the loaded data against the truth loaded now:
 * recomputed when that truth is another one than they were computed
 * against (a truth on another grid is first resampled onto the run's,
 * through both affines: the truth sampled at the reconstruction grid, as
 * docs/conventions.md section 3 defines the metrics); marked stale when there is no truth (or
 * no image) to recompute them with. TRUE when they were recomputed. */
gboolean larmor_window_refresh_metrics(LarmorWindow *self, LarmorRun *run)
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
int larmor_window_refresh_runs(LarmorWindow *self)
{
    int recomputed = 0;
    self->updating_compare = TRUE;
    for (guint i = 0; i < g_list_model_get_n_items(G_LIST_MODEL(self->runs)); i++) {
        LarmorRun *r = g_list_model_get_item(G_LIST_MODEL(self->runs), i);
        gboolean current = larmor_window_run_is_current(self, r);
        larmor_run_set_current(r, current);
        if (!current) {
            larmor_run_set_compare(r, FALSE);
            if (larmor_run_get_live(r))
                g_signal_handlers_disconnect_by_data(larmor_run_get_live(r), self);
            larmor_run_set_live(r, NULL); /* its session belongs to other data */
        } else
            recomputed += larmor_window_refresh_metrics(self, r);
        g_object_unref(r);
    }
    self->updating_compare = FALSE;
    larmor_window_update_compare(self);
    larmor_window_update_live(self);
    return recomputed;
}

void larmor_window_add_run(LarmorWindow *self, LarmorRun *run)
{
    larmor_run_set_current(run, larmor_window_run_is_current(self, run));
    larmor_run_set_index(run, ++self->next_index);
    g_signal_connect(run, "notify::compare", G_CALLBACK(larmor_window_on_run_compare), self);
    g_list_store_append(self->runs, run);
    if (larmor_run_get_image(run))
        g_list_store_append(self->volumes, larmor_run_get_image(run));
    /* Viewable and exportable like the other images (and the viewer's overlay). */
    if (larmor_run_get_prior_influence(run))
        g_list_store_append(self->volumes, larmor_run_get_prior_influence(run));
}

/* --- selecting, deleting and Undo ---------------------------------------- */

LarmorRun *larmor_window_selected_run(LarmorWindow *self)
{
    return larmor_runs_view_get_selected(self->runs_view);
}

static void action_show_run(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    LarmorRun *r = larmor_window_selected_run(self);
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

void larmor_window_forget_undo(LarmorWindow *self)
{
    g_clear_object(&self->undo_run);
}

static void action_remove_run(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    LarmorRun *r = larmor_window_selected_run(self);
    guint pos;
    if (!r || !g_list_store_find(self->runs, r, &pos))
        return;
    g_object_ref(r);
    /* Kept whole (image, metrics, coils) for Undo until the next delete. */
    larmor_window_forget_undo(self);
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
    larmor_window_volumes_remove(self, larmor_run_get_image(r));
    larmor_window_volumes_remove(self, larmor_run_get_prior_influence(r));
    g_list_store_remove(self->runs, pos);
    larmor_window_update_live(self);
    if (larmor_coils_view_get_run(self->coils_view) == r)
        larmor_coils_view_set_run(self->coils_view, larmor_runs_view_get_selected(self->runs_view));
    larmor_window_update_compare(self);
    char *t = g_strdup_printf("Run #%d deleted", larmor_run_get_index(r));
    larmor_window_show_undo_message(self, t);
    g_free(t);
    g_object_unref(r);
    larmor_window_update_actions(self);
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
    gboolean current = larmor_window_run_is_current(self, r);
    larmor_run_set_current(r, current);
    if (!current)
        larmor_run_set_compare(r, FALSE);
    g_signal_connect(r, "notify::compare", G_CALLBACK(larmor_window_on_run_compare), self);
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
        larmor_window_refresh_metrics(self, r);
    self->updating_compare = FALSE;
    if (self->undo_shown && img)
        larmor_ortho_view_show_volume(self->ortho_view, img);
    larmor_runs_view_select(self->runs_view, r);
    larmor_window_update_compare(self);
    char *t = g_strdup_printf("Run #%d restored", larmor_run_get_index(r));
    larmor_window_show_message(self, t, FALSE);
    g_free(t);
    g_object_unref(r);
    larmor_window_update_actions(self);
}


void larmor_window_runs_class_init(GtkWidgetClass *wc)
{
    gtk_widget_class_install_action(wc, "win.show-run", NULL, action_show_run);
    gtk_widget_class_install_action(wc, "win.remove-run", NULL, action_remove_run);
    gtk_widget_class_install_action(wc, "win.undo", NULL, action_undo);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_z, GDK_CONTROL_MASK, "win.undo", NULL);
}

void larmor_window_runs_init(LarmorWindow *self)
{
    g_signal_connect(self->runs_view, "run-activated", G_CALLBACK(on_run_activated), self);
    g_signal_connect(self->runs_view, "run-selected", G_CALLBACK(on_run_selected), self);
}
