/* The window's reconstructions: one run, a λ sweep or an automatic λ in a
 * worker (LarmorReconTask), Live λ on the newest run's kept session,
 * corrected against uncorrected field-map runs, the settings kept between
 * sessions, and the estimate shown before a run. */
#include <math.h>
#include <string.h>

#include "larmor-estimate.h"
#include "larmor-util.h"
#include "larmor-window-private.h"

/* --- reconstruction ---------------------------------------------------- */

/* The speeds measured here so far (the task records each run's). */
static void load_rates(LarmorWindow *self)
{
    lm_error err = { 0 };
    if (lm_estimate_rates_load(NULL, &self->rates, &err) != LM_OK)
        g_message("time estimate: %s", err.msg);
    lm_error_clear(&err);
}

static void on_task_progress(LarmorReconTask *task, const LarmorProgressInfo *info, LarmorWindow *self)
{
    larmor_recon_panel_set_progress(self->recon_panel, info);
}

static void set_status(LarmorWindow *self, const char *status)
{
    g_free(self->last_status);
    self->last_status = g_strdup(status);
}

void larmor_window_save_params(LarmorWindow *self)
{
    if (!self->settings)
        return;
    LarmorReconParams p;
    if (larmor_recon_panel_get_static_params(self->recon_panel, &p, NULL)) {
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

void larmor_window_load_params(LarmorWindow *self)
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

/* Live is offered for any CG run the sidebar could start: it re-solves the
 * newest run that keeps a session when that run has the chosen regulariser,
 * and otherwise its first value starts a new run (which then keeps the
 * session), so it never acts on a run of another regulariser. */
void larmor_window_update_live(LarmorWindow *self)
{
    LarmorRun *r = live_run(self);
    LarmorReconParams want;
    gboolean have = larmor_recon_panel_get_params(self->recon_panel, &want, NULL);
    gboolean fits = r && have && larmor_run_live_fits(r, &want, NULL);
    gboolean cg = have && self->dataset && want.method == LM_METHOD_CG;
    larmor_recon_panel_set_live_available(
        self->recon_panel, fits || cg,
        fits ? NULL
        : cg ? "Live: starts a new run at this λ, then re-solves it as λ moves"
             : "Live λ re-solves CG runs: choose CG");
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
    larmor_window_update_compare(self);
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
    larmor_window_update_live(self);
}

/* A finished run is never changed: the first value moved with Live on forks
 * a live run from the finished run that holds the session and moves the
 * session there; later values update that live run. */
static void on_panel_live_lambda(LarmorReconPanel *panel, double lambda, LarmorWindow *self)
{
    LarmorRun *r = live_run(self);
    LarmorReconParams want;
    if (self->task || !larmor_recon_panel_get_params(panel, &want, NULL))
        return;
    if (!r || !larmor_run_live_fits(r, &want, NULL)) {
        /* No session of this regulariser: a new run at this lambda, whose
         * session the next values re-solve (on_task_done adopts it). */
        GError *error = NULL;
        if (want.method == LM_METHOD_CG && !larmor_window_reconstruct(self, &want, &error)) {
            larmor_window_show_error(self, error);
            g_error_free(error);
        }
        return;
    }
    LarmorLive *live = LARMOR_LIVE(larmor_run_get_live(r));
    if (!larmor_run_get_is_live(r)) {
        LarmorRun *fork = larmor_run_fork_live(r);
        larmor_window_add_run(self, fork);
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
    gboolean catch_up_live = FALSE;
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
            larmor_window_show_error(self, error);
        }
        g_error_free(error);
    } else if (!sweep) {
        LarmorRun *run = runs->pdata[0];
        larmor_window_add_run(self, run);
        adopt_live(self, run);
        catch_up_live = TRUE;
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
            /* The slider (dynamic data: lambda time) takes the lambda the data chose. */
            if (ap->dynamic)
                larmor_dyn_controls_set_lambda(larmor_recon_panel_get_dyn_controls(self->recon_panel),
                                               larmor_run_get_lambda_used(run), ap->lambda_space);
            else
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
            larmor_window_add_run(self, b);
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
    larmor_window_update_actions(self);
    load_rates(self); /* the worker recorded the runs' speeds */
    larmor_window_update_estimate(self);
    larmor_window_save_params(self);
    if (self->fm_compare)
        fm_compare_next(self);
    /* Live's first value started this run; lambda may have moved on since. */
    LarmorRun *lr = catch_up_live ? live_run(self) : NULL;
    LarmorReconParams now;
    if (lr && gtk_toggle_button_get_active(larmor_recon_panel_get_live_toggle(self->recon_panel)) &&
        larmor_recon_panel_get_params(self->recon_panel, &now, NULL) &&
        now.lambda != larmor_run_get_params(lr)->lambda)
        on_panel_live_lambda(self->recon_panel, now.lambda, self);
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
    const lm_frames *frames = larmor_dataset_get_frames(self->dataset);
    if (frames && (!p->dynamic || n > 0)) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_UNSUPPORTED, "%s has %lld frames: reconstruct it with one run of the "
                    "dynamic prior (λ sweeps are for static data)", larmor_dataset_get_name(self->dataset),
                    (long long)frames->count);
        return FALSE;
    }
    if (!frames && p->dynamic) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "%s has no frames: a dynamic prior needs data with frames",
                    larmor_dataset_get_name(self->dataset));
        return FALSE;
    }
    const char *why;
    if (p->method == LM_METHOD_CG && !larmor_variant_is_available(p->variant, &why)) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_UNSUPPORTED, "%s is unavailable: %s", p->variant, why);
        return FALSE;
    }
    if (!p->dynamic && p->method == LM_METHOD_CG && lm_reg_weighted(p->reg) && !self->reference) {
        g_set_error_literal(error, LARMOR_ERROR, LM_ERR_INVALID,
                            "The anatomical regulariser needs a reference image: open one first");
        return FALSE;
    }
    if (!p->dynamic && p->method == LM_METHOD_CG && !larmor_reg_is_available(p->reg, &why)) {
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
    self->task = larmor_recon_task_new(self->dataset, !p->dynamic && lm_reg_weighted(p->reg) ? self->reference : NULL, p,
                                       lambdas, n);
    self->task_cancellable = g_cancellable_new();
    g_signal_connect(self->task, "progress", G_CALLBACK(on_task_progress), self);
    larmor_recon_panel_set_running(self->recon_panel, TRUE);
    set_status(self, "running");
    larmor_window_update_actions(self);
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
            larmor_window_show_error(self, error);
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
    larmor_window_update_compare(self);
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
        larmor_window_show_error(self, error);
        g_error_free(error);
    }
}

static void action_compare_fieldmap(GtkWidget *w, const char *name, GVariant *param)
{
    LarmorWindow *self = LARMOR_WINDOW(w);
    GError *error = NULL;
    if (!larmor_window_compare_fieldmap(self, &error)) {
        larmor_window_show_error(self, error);
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
        larmor_window_show_error(self, error);
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
        larmor_window_show_error(self, error);
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

/* --- the estimate --------------------------------------------------------- */

/* Memory and time of the run the sidebar would start, before it starts. */
void larmor_window_update_estimate(LarmorWindow *self)
{
    LarmorReconParams p;
    if (!self->dataset || !larmor_recon_panel_get_params(self->recon_panel, &p, NULL)) {
        gtk_widget_set_visible(GTK_WIDGET(self->estimate_label), FALSE);
        return;
    }
    int coils = (int)larmor_dataset_get_coils(self->dataset);
    if (p.compress > 0)
        coils = MIN(coils, p.compress);
    LarmorEstimate e;
    larmor_estimate_compute(larmor_dataset_get_geom(self->dataset)->n, larmor_dataset_get_traj(self->dataset)->m, coils,
                            &p, larmor_dataset_get_fieldmap(self->dataset) && larmor_dataset_has_times(self->dataset),
                            &self->rates, &e);
    char *t = larmor_estimate_text(&e, &p);
    gtk_label_set_text(self->estimate_label, t);
    gtk_widget_set_visible(GTK_WIDGET(self->estimate_label), TRUE);
    g_free(t);
}

const char *larmor_window_get_estimate_text(LarmorWindow *self)
{
    return gtk_widget_get_visible(GTK_WIDGET(self->estimate_label)) ? gtk_label_get_text(self->estimate_label) : NULL;
}


void larmor_window_recon_class_init(GtkWidgetClass *wc)
{
    gtk_widget_class_install_action(wc, "win.auto-lambda", NULL, action_auto_lambda);
    gtk_widget_class_install_action(wc, "win.compare-fieldmap", NULL, action_compare_fieldmap);
    gtk_widget_class_install_action(wc, "win.reconstruct", NULL, action_reconstruct);
    gtk_widget_class_install_action(wc, "win.sweep", NULL, action_sweep);
    gtk_widget_class_install_action(wc, "win.cancel", NULL, action_cancel);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_r, GDK_CONTROL_MASK, "win.reconstruct", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_F5, 0, "win.reconstruct", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_l, GDK_CONTROL_MASK, "win.sweep", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_Escape, 0, "win.cancel", NULL);
}

void larmor_window_recon_init(LarmorWindow *self)
{
    load_rates(self);
    g_signal_connect(self->sweep_view, "use-lambda", G_CALLBACK(on_use_lambda), self);
    g_signal_connect_swapped(self->recon_panel, "changed", G_CALLBACK(larmor_window_update_estimate), self);
    g_signal_connect(self->recon_panel, "live-lambda", G_CALLBACK(on_panel_live_lambda), self);
    g_signal_connect_swapped(self->recon_panel, "changed", G_CALLBACK(larmor_window_update_live), self);
}
