#include "larmor-recon-task.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "larmor-util.h"
#include "larmor.h"

struct _LarmorReconTask {
    GObject parent_instance;
    LarmorDataset *dataset;
    LarmorVolume *reference;
    LarmorVolume *truth;       /* captured at creation: the window may swap it meanwhile */
    LarmorCoilMaps *maps;      /* likewise (NULL: none, or not used) */
    GBytes *fieldmap;          /* likewise: Hz on the matrix, when the correction is on */
    lm_geom geom;              /* likewise */
    char *dataset_name;
    char *dataset_key;
    LarmorReconParams params;
    double *lambdas;
    int n_lambdas;
    gboolean sweep;

    /* Worker-side state (only the worker touches these while it runs). */
    GCancellable *cancellable;
    int run_index;
    lm_stage stage;
    double stage_t0;
    double run_t0, runs_time;  /* for the sweep's time-left estimate */
    gint64 t_start;

    /* Worker -> main: the latest progress, delivered by at most one pending idle
     * (always dispatched on context, in the thread that iterates it). */
    GMainContext *context;
    GMutex lock;
    LarmorProgressInfo latest;
    gboolean scheduled;
    gint finished;
};

G_DEFINE_FINAL_TYPE(LarmorReconTask, larmor_recon_task, G_TYPE_OBJECT)

enum { SIGNAL_PROGRESS, N_SIGNALS };
static guint signals[N_SIGNALS];

static void larmor_recon_task_finalize(GObject *object)
{
    LarmorReconTask *self = LARMOR_RECON_TASK(object);
    g_clear_object(&self->dataset);
    g_clear_object(&self->reference);
    g_clear_object(&self->truth);
    g_clear_object(&self->maps);
    g_clear_pointer(&self->fieldmap, g_bytes_unref);
    g_clear_object(&self->cancellable);
    g_clear_pointer(&self->context, g_main_context_unref);
    g_free(self->lambdas);
    g_free(self->dataset_name);
    g_free(self->dataset_key);
    g_mutex_clear(&self->lock);
    G_OBJECT_CLASS(larmor_recon_task_parent_class)->finalize(object);
}

static void larmor_recon_task_class_init(LarmorReconTaskClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = larmor_recon_task_finalize;
    /* progress(const LarmorProgressInfo *), on the caller's main context. */
    signals[SIGNAL_PROGRESS] = g_signal_new("progress", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST,
                                            0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_POINTER);
}

static void larmor_recon_task_init(LarmorReconTask *self)
{
    g_mutex_init(&self->lock);
}

LarmorReconTask *larmor_recon_task_new(LarmorDataset *dataset, LarmorVolume *reference,
                                       const LarmorReconParams *params, const double *lambdas,
                                       int n_lambdas)
{
    g_return_val_if_fail(LARMOR_IS_DATASET(dataset), NULL);
    LarmorReconTask *self = g_object_new(LARMOR_TYPE_RECON_TASK, NULL);
    self->dataset = g_object_ref(dataset);
    self->reference = reference ? g_object_ref(reference) : NULL;
    LarmorVolume *truth = larmor_dataset_get_truth(dataset);
    self->truth = truth ? g_object_ref(truth) : NULL;
    LarmorCoilMaps *maps = larmor_dataset_get_maps(dataset);
    if (maps && params->coils == LARMOR_COILS_SENSE && larmor_dataset_get_coils(dataset) > 1)
        self->maps = g_object_ref(maps);
    GBytes *fm = larmor_dataset_get_fieldmap(dataset);
    if (fm && larmor_dataset_has_times(dataset) && params->method == LM_METHOD_CG &&
        params->fieldmap != LARMOR_FIELDMAP_OFF)
        self->fieldmap = g_bytes_ref(fm);
    self->geom = *larmor_dataset_get_geom(dataset);
    self->dataset_name = g_strdup(larmor_dataset_get_name(dataset));
    self->dataset_key = g_strdup(larmor_dataset_get_key(dataset));
    self->params = *params;
    self->sweep = n_lambdas > 0;
    self->n_lambdas = n_lambdas > 0 ? n_lambdas : 1;
    self->lambdas = g_new(double, self->n_lambdas);
    for (int i = 0; i < self->n_lambdas; i++)
        self->lambdas[i] = n_lambdas > 0 ? lambdas[i] : params->lambda;
    return self;
}

gboolean larmor_recon_task_is_sweep(LarmorReconTask *self)
{
    return self->sweep;
}

/* --- progress: worker side --------------------------------------------- */

static gboolean deliver_progress(gpointer data)
{
    LarmorReconTask *self = data;
    g_mutex_lock(&self->lock);
    LarmorProgressInfo info = self->latest;
    self->scheduled = FALSE;
    g_mutex_unlock(&self->lock);
    if (!g_atomic_int_get(&self->finished))
        g_signal_emit(self, signals[SIGNAL_PROGRESS], 0, &info);
    return G_SOURCE_REMOVE;
}

static void post_progress(LarmorReconTask *self, const LarmorProgressInfo *info)
{
    g_mutex_lock(&self->lock);
    self->latest = *info;
    gboolean schedule = !self->scheduled;
    self->scheduled = TRUE;
    g_mutex_unlock(&self->lock);
    if (!schedule)
        return;
    /* Always through a source on the caller's context, never
     * g_main_context_invoke_full: when the main thread is not iterating at
     * that moment (between g_main_context_iteration calls, a modal wait) the
     * worker can acquire the default context and invoke would run
     * deliver_progress, and so GTK, right here in the worker thread. */
    GSource *source = g_idle_source_new();
    g_source_set_priority(source, G_PRIORITY_DEFAULT);
    g_source_set_callback(source, deliver_progress, g_object_ref(self), g_object_unref);
    g_source_set_name(source, "[larmor] recon progress");
    g_source_attach(source, self->context);
    g_source_unref(source);
}

static int on_progress(void *user, const lm_progress *p)
{
    LarmorReconTask *self = user;
    if (g_cancellable_is_cancelled(self->cancellable))
        return 1;
    if (p->stage != self->stage) {
        self->stage = p->stage;
        self->stage_t0 = p->elapsed_s;
    }

    LarmorProgressInfo info = { 0 };
    info.stage = p->stage;
    info.iter = p->iter;
    info.iters = p->iters;
    info.rel_resid = p->rel_resid;
    info.sweep_index = self->run_index;
    info.sweep_count = self->n_lambdas;
    info.elapsed_s = (g_get_monotonic_time() - self->t_start) / 1e6;
    double f = CLAMP(p->fraction, 0, 1), overall, left = NAN;
    double in_stage = p->elapsed_s - self->stage_t0;
    const char *what;
    char detail[96] = "";
    switch (p->stage) {
    case LM_STAGE_Q:
        overall = 0.35 * f;
        what = "Computing Q";
        g_snprintf(detail, sizeof detail, " · %.0f %%", 100 * f);
        break;
    case LM_STAGE_FHD:
        overall = 0.35 + 0.15 * f;
        what = "Computing Fᴴd";
        g_snprintf(detail, sizeof detail, " · %.0f %%", 100 * f);
        break;
    case LM_STAGE_CG:
        f = p->iters > 0 ? (double)p->iter / p->iters : f;
        overall = 0.5 + 0.5 * f;
        what = !self->params.dynamic ? "CG" : self->params.dyn_time || self->params.dyn_space_tv ? "ADMM" : "CG per frame";
        g_snprintf(detail, sizeof detail, " iteration %d of %d · residual %.2e", p->iter, p->iters,
                   p->rel_resid);
        break;
    case LM_STAGE_GRID:
        overall = f;
        what = "Gridding";
        g_snprintf(detail, sizeof detail, " · %.0f %%", 100 * f);
        break;
    case LM_STAGE_DONE:
        overall = 1;
        what = "Finishing";
        break;
    case LM_STAGE_COILS:
        overall = 0.1 * f;
        what = "Preparing coils";
        g_snprintf(detail, sizeof detail, " (whitening, compression, coil maps) · %.0f %%", 100 * f);
        break;
    default:
        overall = 0;
        what = "Preparing";
        break;
    }
    if (f > 0.02 && f < 1 && in_stage > 0.2)
        left = in_stage / f * (1 - f);
    if (self->sweep) {
        info.fraction = (self->run_index + overall) / self->n_lambdas;
        if (self->run_index > 0)
            left = (isnan(left) ? 0 : left) +
                   self->runs_time / self->run_index * (self->n_lambdas - self->run_index - 1);
        g_snprintf(info.text, sizeof info.text, "λ %d of %d (%.2g) · %s%s", self->run_index + 1,
                   self->n_lambdas, self->lambdas[self->run_index], what, detail);
    } else {
        info.fraction = overall;
        g_snprintf(info.text, sizeof info.text, "%s%s", what, detail);
    }
    info.time_left_s = left;
    post_progress(self, &info);
    return 0;
}

/* --- live lambda -------------------------------------------------------- */

struct _LarmorLive {
    GObject parent_instance;
    lm_recon_session *session; /* used by one worker at a time (busy) */
    LarmorRun *run;            /* weak: the run owns this object */
    LarmorVolume *truth;       /* for metrics, or NULL */
    int scale_match;           /* how the run is scored (lm_recon_scale_match) */
    int iters;                 /* the run's: the final solve is a fresh run's */
    double tol;
    gboolean busy, pending, final_due;
    double want;               /* the newest value asked for */
    guint rest_id;
    double lambda;             /* of the last result */
    gboolean have_last, last_final;
    int last_iters;
    double last_time;
    char *error;
    /* Dynamic runs: the model (every frame's Q and E^H d) and the solve's
     * options; the solve's lambda_t is the one that moves. */
    lm_dyn_model *dyn;
    lm_dyn_opts dyn_opts;
    lm_volume dyn_grid;        /* the frames' grid (no data) */
    double frame_s;
};

G_DEFINE_FINAL_TYPE(LarmorLive, larmor_live, G_TYPE_OBJECT)

enum { LIVE_UPDATED, LIVE_N_SIGNALS };
static guint live_signals[LIVE_N_SIGNALS];

typedef struct {
    double lambda, tol;
    int iters;
    gboolean warm, final;
} LiveJob;

typedef struct {
    LiveJob job;
    LarmorVolume *frames;      /* a dynamic run's new image */
    lm_volume *img;
    lm_session_report rep;
    double psnr, perr;
    lm_code code;
    char msg[256];
} LiveOut;

static void live_out_free(gpointer data)
{
    LiveOut *o = data;
    lm_volume_free(o->img);
    g_clear_object(&o->frames);
    g_free(o);
}

static void larmor_live_dispose(GObject *object)
{
    LarmorLive *self = LARMOR_LIVE(object);
    g_clear_handle_id(&self->rest_id, g_source_remove);
    if (self->run) {
        g_object_remove_weak_pointer(G_OBJECT(self->run), (gpointer *)&self->run);
        self->run = NULL;
    }
    G_OBJECT_CLASS(larmor_live_parent_class)->dispose(object);
}

static void larmor_live_finalize(GObject *object)
{
    LarmorLive *self = LARMOR_LIVE(object);
    lm_recon_session_free(&self->session);
    lm_dyn_model_free(self->dyn);
    g_clear_object(&self->truth);
    g_free(self->error);
    G_OBJECT_CLASS(larmor_live_parent_class)->finalize(object);
}

static void larmor_live_class_init(LarmorLiveClass *klass)
{
    G_OBJECT_CLASS(klass)->dispose = larmor_live_dispose;
    G_OBJECT_CLASS(klass)->finalize = larmor_live_finalize;
    /* updated(gboolean final): the run's image was replaced (or the solve failed: larmor_live_get_error). */
    live_signals[LIVE_UPDATED] = g_signal_new("updated", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL,
                                              NULL, NULL, G_TYPE_NONE, 1, G_TYPE_BOOLEAN);
}

static void larmor_live_init(LarmorLive *self)
{
    self->lambda = NAN;
}

/* Takes the session; run and truth as the task's. */
static LarmorLive *live_new(lm_recon_session *session, LarmorRun *run, LarmorVolume *truth, int iters, double tol)
{
    LarmorLive *self = g_object_new(LARMOR_TYPE_LIVE, NULL);
    self->session = session;
    self->run = run;
    g_object_add_weak_pointer(G_OBJECT(run), (gpointer *)&self->run);
    self->truth = truth ? g_object_ref(truth) : NULL;
    self->iters = iters;
    self->tol = tol;
    self->lambda = larmor_run_get_params(run)->lambda;
    self->scale_match = lm_recon_scale_match(larmor_run_get_params(run)->method, larmor_run_get_combine(run),
                                             larmor_run_get_sens_source(run));
    return self;
}

/* Takes the model of a dynamic run; o its solve's options. */
static LarmorLive *live_new_dynamic(lm_dyn_model *m, const lm_dyn_opts *o, const lm_volume *grid, double frame_s,
                                    LarmorRun *run, LarmorVolume *truth)
{
    LarmorLive *self = live_new(NULL, run, truth, o->iters, 0);
    self->dyn = m;
    self->dyn_opts = *o;
    self->dyn_opts.monitor = NULL; /* the task that ran it is gone */
    self->dyn_opts.monitor_user = NULL;
    self->dyn_grid = *grid;
    self->dyn_grid.data = NULL;
    self->frame_s = frame_s;
    return self;
}

/* A dynamic run's live solve: lm_dyn_solve at the new temporal weight
 * (ADMM has no warm start: the preview is 2 iterations, the final one the
 * run's), scored against every frame of the truth. */
static void live_dyn_solve(LarmorLive *self, LiveOut *o)
{
    lm_error err = { 0 };
    lm_dyn_opts opts = self->dyn_opts;
    opts.lambda_t = o->job.lambda;
    opts.iters = o->job.final ? self->iters : MIN(self->iters, 2);
    lm_dyn_result res = { 0 };
    GError *error = NULL;
    o->code = lm_dyn_solve(self->dyn, &opts, &res, &err);
    if (o->code == LM_OK) {
        o->frames = larmor_volume_new_frames(&self->dyn_grid, res.x, res.frames, self->frame_s, "run", &error);
        o->rep.iters_done = res.iters_done;
        o->rep.time_s = res.time_solve_s;
        if (!o->frames) {
            o->code = LM_ERR_NOMEM;
            g_strlcpy(o->msg, error->message, sizeof o->msg);
            g_error_free(error);
        }
    } else
        g_strlcpy(o->msg, err.msg, sizeof o->msg);
    if (o->frames && self->truth && larmor_volume_get_n_frames(self->truth) == res.frames) {
        int64_t t;
        lm_cfloat *truth = larmor_volume_dup_frames(self->truth, &t);
        lm_metrics m;
        if (lm_metrics_compute(res.x, truth, res.frames * res.nvox, NULL, 0, &m, &err) == LM_OK)
            o->psnr = m.psnr_db, o->perr = m.percent_error;
        g_free(truth);
    }
    lm_dyn_result_clear(&res);
}

static void live_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
    LarmorLive *self = source;
    LiveOut *o = g_new0(LiveOut, 1);
    o->job = *(const LiveJob *)data;
    o->psnr = o->perr = NAN;
    if (self->dyn) {
        live_dyn_solve(self, o);
        g_task_return_pointer(task, o, live_out_free);
        return;
    }
    lm_error err = { 0 };
    o->img = lm_recon_session_new_image(self->session, &err);
    lm_session_solve_opts p;
    lm_session_solve_opts_init(&p, self->session);
    p.lambda = o->job.lambda;
    p.iters = o->job.iters;
    p.tol = o->job.tol;
    p.warm_start = o->job.warm;
    o->code = o->img ? lm_recon_session_solve(self->session, &p, o->img->data, &o->rep, &err) : LM_ERR_NOMEM;
    const lm_volume *truth = self->truth ? larmor_volume_get_data(self->truth) : NULL;
    if (o->code == LM_OK && truth && lm_volume_count(truth) == lm_volume_count(o->img)) {
        lm_metrics m;
        if (lm_metrics_compute(o->img->data, truth->data, lm_volume_count(truth), NULL, self->scale_match, &m,
                               &err) == LM_OK)
            o->psnr = m.psnr_db, o->perr = m.percent_error;
    }
    if (o->code != LM_OK)
        g_strlcpy(o->msg, err.msg, sizeof o->msg);
    g_task_return_pointer(task, o, live_out_free);
}

static void live_kick(LarmorLive *self);

static void live_done(GObject *source, GAsyncResult *result, gpointer data)
{
    LarmorLive *self = LARMOR_LIVE(source);
    LiveOut *o = g_task_propagate_pointer(G_TASK(result), NULL);
    self->busy = FALSE;
    g_clear_pointer(&self->error, g_free);
    if (o && o->code == LM_OK && self->run) {
        LarmorVolume *img = o->frames ? g_object_ref(o->frames) : larmor_volume_new_take(o->img, "run");
        o->img = NULL;
        larmor_run_update_live(self->run, img, o->job.lambda, o->rep.iters_done, o->rep.time_s, o->psnr, o->perr,
                               self->truth ? larmor_volume_get_serial(self->truth) : 0);
        g_object_unref(img);
        self->lambda = o->job.lambda;
        self->have_last = TRUE;
        self->last_final = o->job.final;
        self->last_iters = o->rep.iters_done;
        self->last_time = o->rep.time_s;
    } else if (o && o->code != LM_OK) {
        self->error = g_strdup(o->msg);
    }
    gboolean final = o && o->job.final;
    if (o)
        live_out_free(o);
    g_signal_emit(self, live_signals[LIVE_UPDATED], 0, final);
    live_kick(self);
}

static void live_start(LarmorLive *self, const LiveJob *job)
{
    self->busy = TRUE;
    GTask *task = g_task_new(self, NULL, live_done, NULL);
    g_task_set_source_tag(task, live_start);
    g_task_set_task_data(task, g_memdup2(job, sizeof *job), g_free);
    g_task_run_in_thread(task, live_thread);
    g_object_unref(task);
}

/* The newest value first (a preview), then the final solve once it rests. */
static void live_kick(LarmorLive *self)
{
    if (self->busy || !self->run)
        return;
    if (self->pending) {
        self->pending = FALSE;
        live_start(self, &(LiveJob){ .lambda = self->want, .iters = LARMOR_LIVE_PREVIEW_ITERS, .warm = TRUE });
    } else if (self->final_due) {
        self->final_due = FALSE;
        live_start(self, &(LiveJob){ .lambda = self->want, .iters = self->iters, .tol = self->tol, .final = TRUE });
    }
}

static gboolean live_rested(gpointer data)
{
    LarmorLive *self = data;
    self->rest_id = 0;
    self->final_due = TRUE;
    live_kick(self);
    return G_SOURCE_REMOVE;
}

void larmor_live_set_lambda(LarmorLive *self, double lambda)
{
    g_return_if_fail(LARMOR_IS_LIVE(self));
    if (!(lambda >= 0) || !isfinite(lambda))
        return;
    self->want = lambda;
    self->pending = TRUE;
    self->final_due = FALSE;
    g_clear_handle_id(&self->rest_id, g_source_remove);
    self->rest_id = g_timeout_add(LARMOR_LIVE_REST_MS, live_rested, self);
    live_kick(self);
}

void larmor_live_settle(LarmorLive *self)
{
    g_return_if_fail(LARMOR_IS_LIVE(self));
    if (!self->rest_id)
        return;
    g_clear_handle_id(&self->rest_id, g_source_remove);
    live_rested(self);
}

gboolean larmor_live_is_busy(LarmorLive *self)
{
    return self->busy || self->pending || self->final_due || self->rest_id;
}

double larmor_live_get_lambda(LarmorLive *self)
{
    return self->lambda;
}

gboolean larmor_live_get_last(LarmorLive *self, int *iters, double *time_s, gboolean *final)
{
    if (iters)
        *iters = self->last_iters;
    if (time_s)
        *time_s = self->last_time;
    if (final)
        *final = self->last_final;
    return self->have_last;
}

void larmor_live_move_to(LarmorLive *self, LarmorRun *to)
{
    LarmorRun *from = self->run;
    if (from == to)
        return;
    larmor_run_set_live(to, G_OBJECT(self)); /* reffed before the old owner lets go */
    if (from) {
        g_object_remove_weak_pointer(G_OBJECT(from), (gpointer *)&self->run);
        larmor_run_set_live(from, NULL);
    }
    self->run = to;
    g_object_add_weak_pointer(G_OBJECT(to), (gpointer *)&self->run);
}

LarmorRun *larmor_live_get_run(LarmorLive *self)
{
    return self->run;
}

const char *larmor_live_get_error(LarmorLive *self)
{
    return self->error;
}

/* --- the worker -------------------------------------------------------- */

void larmor_recon_opts_from_params(const LarmorReconParams *p, const float *fieldmap, lm_recon_opts *o)
{
    lm_recon_opts_init(o);
    o->method = p->method;
    o->variant = p->variant;
    o->lambda = p->lambda;
    o->reg = p->reg;
    o->iters = p->iters;
    o->tol = p->tol;
    /* "Recompute Q" bypasses the cache for this task (every point of a sweep). */
    o->use_cache = p->recompute_q ? 0 : 1;
    o->lcurve_norms = 1; /* the Runs page's L-curve */
    o->edge_frac = p->edge;
    /* lambda from the data (docs/lambda.md): the run reports the choice. */
    o->lambda_auto = p->lambda_auto && p->method == LM_METHOD_CG;
    o->lambda_criterion = p->criterion;
    o->prior_influence = p->prior_influence && p->method == LM_METHOD_CG;
    o->fallback = p->fallback_cpu ? LM_FALLBACK_CPU : LM_FALLBACK_NONE;
    if (fieldmap && p->method == LM_METHOD_CG && p->fieldmap != LARMOR_FIELDMAP_OFF) {
        o->fieldmap = fieldmap;
        o->segments = p->fieldmap == LARMOR_FIELDMAP_EXACT ? 0 : LM_SEGMENTS_AUTO;
    }
}

/* This machine's speeds for the time estimate (lm_estimate.h): the run
 * updates its variant's in the rates file (atomic; a damaged file starts
 * again). Runs of every window and task share the file. */
static void record_speed(const lm_geom *g, int64_t m, const lm_recon_opts *o, const lm_recon_result *res)
{
    lm_estimate_size sz;
    lm_estimate_size_init(&sz, g, m, res->coils, o);
    if (res->fell_back && res->fallback_variant)
        sz.variant = res->fallback_variant;
    if (res->segments > 0 && o->fieldmap)
        sz.segments = res->segments;
    lm_estimate_rates rates;
    lm_error err = { 0 };
    lm_estimate_rates_load(NULL, &rates, NULL);
    if (lm_estimate_record(&rates, &sz, res, &err) != LM_OK || lm_estimate_rates_save(NULL, &rates, &err) != LM_OK)
        g_message("time estimate: %s", err.msg);
    lm_error_clear(&err);
}

/* --- dynamic data --------------------------------------------------------- */

/* ADMM's monitor (each frame's CG without a prior) as the task's progress;
 * non-zero cancels. */
static int dyn_monitor(void *user, int iter, double rel_resid, double cost, double elapsed_s)
{
    LarmorReconTask *self = user;
    return on_progress(self, &(lm_progress){ .stage = LM_STAGE_CG, .iter = iter, .iters = self->params.iters,
                                             .rel_resid = rel_resid, .cost = cost, .elapsed_s = elapsed_s });
}

/* The frames of dynamic data solved together (lm_dyn_solve): one run whose
 * image has a frame per frame, scored against every frame of the truth. */
static void run_dynamic(LarmorReconTask *self, GTask *task, GCancellable *cancellable)
{
    const lm_frames *frames = larmor_dataset_get_frames(self->dataset);
    const LarmorReconParams *p = &self->params;
    lm_error err = { 0 };
    lm_dyn_model *m = NULL;
    lm_dyn_result res = { 0 };
    LarmorVolume *image = NULL;
    GError *error = NULL;
    const lm_sens *sens = self->maps ? larmor_coil_maps_get_sens(self->maps) : NULL;
    const lm_kdata *kdata = larmor_dataset_get_kdata(self->dataset);
    on_progress(self, &(lm_progress){ .stage = LM_STAGE_Q });
    lm_geom geom = self->geom; /* frames in the dynamic runs' basis (lm_dyn_recon.h) */
    geom.basis = LM_DYN_BASIS_DEFAULT;
    lm_dyn_model_desc md = { .geom = &geom, .traj = larmor_dataset_get_traj(self->dataset), .kdata = kdata,
                             .sens = sens, .frames = frames, .variant = p->variant, .use_cache = !p->recompute_q };
    lm_dyn_opts o;
    lm_dyn_opts_init(&o);
    o.time = p->dyn_time;
    o.lambda_t = p->dyn_time == LM_DYN_TIME_NONE ? 0 : p->lambda;
    o.space_tv = p->dyn_space_tv;
    o.lambda_s = p->dyn_space_tv ? p->lambda_space : 0;
    o.iters = p->iters;
    o.lambda_auto = p->lambda_auto; /* cross-validation (lm_dyn_lambda.h) */
    o.monitor = dyn_monitor;
    o.monitor_user = self;
    lm_code code = lm_dyn_model_new(&md, &m, &err);
    if (code == LM_OK && g_cancellable_is_cancelled(cancellable))
        code = lm_fail(&err, LM_ERR_CANCELLED, "cancelled");
    if (code == LM_OK)
        code = lm_dyn_solve(m, &o, &res, &err);
    if (code == LM_OK && g_cancellable_is_cancelled(cancellable))
        code = lm_fail(&err, LM_ERR_CANCELLED, "cancelled");
    double vox[3], aff[4][4];
    for (int a = 0; a < 3; a++)
        vox[a] = self->geom.fov_mm[a] / (double)self->geom.n[a];
    lm_geom_affine(&self->geom, aff);
    lm_volume grid = { .dims = { self->geom.n[0], self->geom.n[1], self->geom.n[2] },
                       .voxel_mm = { vox[0], vox[1], vox[2] } };
    memcpy(grid.affine, aff, sizeof aff);
    if (code == LM_OK)
        image = larmor_volume_new_frames(&grid, res.x, res.frames, frames->duration_s, "run", &error);
    if (code != LM_OK || !image) {
        lm_dyn_model_free(m);
        lm_dyn_result_clear(&res);
        if (code == LM_ERR_CANCELLED)
            g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "Reconstruction cancelled");
        else {
            if (!error)
                larmor_set_error(&error, &err);
            g_task_return_error(task, error);
        }
        return;
    }
    LarmorRun *run = larmor_run_new_dynamic(p, self->dataset_name, image, &res, (int)kdata->ncoils);
    larmor_run_set_dataset_key(run, self->dataset_key);
    if (sens)
        larmor_run_set_maps(run, self->maps);
    if (self->truth && larmor_volume_get_n_frames(self->truth) == res.frames &&
        larmor_volume_same_grid(self->truth, image)) {
        int64_t t;
        lm_cfloat *truth = larmor_volume_dup_frames(self->truth, &t);
        lm_metrics met;
        if (lm_metrics_compute(res.x, truth, res.frames * res.nvox, NULL, 0, &met, &err) == LM_OK)
            larmor_run_set_metrics_against(run, met.psnr_db, met.percent_error, larmor_volume_get_serial(self->truth));
        g_free(truth);
    }
    lm_dyn_result_clear(&res);
    /* The model stays with a run of a temporal prior for live lambda_t (its Q's and E^H d). */
    if (o.time != LM_DYN_TIME_NONE) {
        o.lambda_auto = 0; /* Live re-solves at the weight the slider gives */
        LarmorLive *live = live_new_dynamic(m, &o, &grid, frames->duration_s, run, self->truth);
        larmor_run_set_live(run, G_OBJECT(live));
        g_object_unref(live);
    } else
        lm_dyn_model_free(m);
    GPtrArray *runs = g_ptr_array_new_with_free_func(g_object_unref);
    g_ptr_array_add(runs, run);
    g_task_return_pointer(task, runs, (GDestroyNotify)g_ptr_array_unref);
}

static void run_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
    LarmorReconTask *self = source;
    GPtrArray *runs = g_ptr_array_new_with_free_func(g_object_unref);
    const lm_traj *traj = larmor_dataset_get_traj(self->dataset);
    const lm_kdata *kdata = larmor_dataset_get_kdata(self->dataset);
    const lm_volume *truth = self->truth ? larmor_volume_get_data(self->truth) : NULL;
    if (truth && (truth->dims[0] != self->geom.n[0] || truth->dims[1] != self->geom.n[1] ||
                  truth->dims[2] != self->geom.n[2]))
        truth = NULL;
    if (self->params.dynamic && larmor_dataset_get_frames(self->dataset)) {
        g_ptr_array_unref(runs);
        run_dynamic(self, task, cancellable);
        return;
    }

    for (int i = 0; i < self->n_lambdas; i++) {
        lm_recon_opts o;
        larmor_recon_opts_from_params(&self->params, self->fieldmap ? g_bytes_get_data(self->fieldmap, NULL) : NULL,
                                      &o);
        o.lambda = self->lambdas[i];
        o.ref = self->reference ? larmor_volume_get_data(self->reference) : NULL;
        /* No automatic lambda or prior influence per sweep point. */
        o.lambda_auto &= !self->sweep;
        o.prior_influence &= !self->sweep;
        /* Coils: SENSE with the data set's maps, SENSE with maps the library
         * estimates, or root-sum-of-squares; per-channel images for the coils
         * page (not for sweeps: C volumes per point). */
        if (kdata->ncoils > 1) {
            switch (self->params.coils) {
            case LARMOR_COILS_SENSE:
                o.sens = self->maps ? larmor_coil_maps_get_sens(self->maps) : NULL;
                o.combine = o.sens ? LM_COMBINE_SENSE : LM_COMBINE_AUTO;
                break;
            case LARMOR_COILS_ESTIMATE:
                o.combine = LM_COMBINE_AUTO;
                o.estimate_sens = 1;
                break;
            default:
                o.combine = LM_COMBINE_RSS;
                break;
            }
            o.compress_coils = self->params.compress;
            o.keep_coil_images = !self->sweep;
            if (self->params.prewhiten)
                o.noise = larmor_dataset_get_noise(self->dataset);
        }
        o.progress = on_progress;
        o.progress_user = self;
        self->run_index = i;
        self->stage = LM_STAGE_LOAD;
        self->stage_t0 = 0;
        self->run_t0 = (g_get_monotonic_time() - self->t_start) / 1e6;

        lm_recon_result res;
        memset(&res, 0, sizeof res);
        lm_error err = { 0 };
        /* A single CG run keeps its session for live lambda. */
        lm_recon_session *session = NULL;
        lm_code code = o.method == LM_METHOD_CG && !self->sweep
                           ? lm_recon_run_session(&self->geom, traj, kdata, &o, &res, &session, &err)
                           : lm_recon_run(&self->geom, traj, kdata, &o, &res, &err);
        if (code == LM_OK && g_cancellable_is_cancelled(cancellable)) {
            lm_recon_result_clear(&res);
            code = LM_ERR_CANCELLED;
        }
        if (session && (code != LM_OK || lm_recon_session_bytes(session) > LARMOR_LIVE_MAX_BYTES))
            lm_recon_session_free(&session);
        if (code != LM_OK) {
            g_ptr_array_unref(runs);
            if (code == LM_ERR_CANCELLED)
                g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "Reconstruction cancelled");
            else {
                GError *error = NULL;
                larmor_set_error(&error, &err);
                g_task_return_error(task, error);
            }
            return;
        }
        record_speed(&self->geom, traj->m, &o, &res);
        LarmorReconParams p = self->params;
        p.lambda = o.lambda_auto ? res.lambda_used : self->lambdas[i];
        p.lambda_auto = o.lambda_auto;
        p.prior_influence = o.prior_influence;
        if (!self->fieldmap)
            p.fieldmap = LARMOR_FIELDMAP_OFF;
        gboolean given = o.sens && !res.sens && res.combine != LM_COMBINE_RSS;
        const double resid_norm = res.resid_norm, prior_norm = res.prior_norm; /* res is taken by the run */
        LarmorRun *run = larmor_run_new(&p, self->dataset_name, &res);
        if (given && self->maps)
            larmor_run_set_maps(run, self->maps);
        larmor_run_set_dataset_key(run, self->dataset_key);
        larmor_run_set_lcurve(run, resid_norm, prior_norm);
        if (!self->fieldmap && larmor_dataset_get_fieldmap(self->dataset) && larmor_dataset_has_times(self->dataset))
            larmor_run_set_uncorrected(run, TRUE);
        if (session) {
            LarmorLive *live = live_new(session, run, truth ? self->truth : NULL, o.iters, o.tol);
            larmor_run_set_live(run, G_OBJECT(live));
            g_object_unref(live);
        }
        LarmorVolume *img = larmor_run_get_image(run);
        if (truth && img) {
            lm_metrics m;
            if (lm_metrics_compute(larmor_volume_get_data(img)->data, truth->data,
                                   lm_volume_count(truth), NULL,
                                   lm_recon_scale_match(o.method, larmor_run_get_combine(run),
                                                        larmor_run_get_sens_source(run)),
                                   &m, &err) == LM_OK)
                larmor_run_set_metrics_against(run, m.psnr_db, m.percent_error,
                                               larmor_volume_get_serial(self->truth));
        }
        g_ptr_array_add(runs, run);
        self->runs_time = (g_get_monotonic_time() - self->t_start) / 1e6;
    }

    if (self->sweep && truth) {
        /* Keep only the best image: a sweep on 128^3 would otherwise hold
         * 16 MB per point. */
        guint best = 0;
        for (guint i = 1; i < runs->len; i++)
            if (larmor_run_get_percent_error(runs->pdata[i]) < larmor_run_get_percent_error(runs->pdata[best]))
                best = i;
        for (guint i = 0; i < runs->len; i++)
            if (i != best)
                larmor_run_drop_image(runs->pdata[i]);
    }
    g_task_return_pointer(task, runs, (GDestroyNotify)g_ptr_array_unref);
}

static void on_task_done(GObject *source, GAsyncResult *result, gpointer data)
{
    /* Stop late progress from overwriting the final state, then hand over. */
    LarmorReconTask *self = LARMOR_RECON_TASK(source);
    g_atomic_int_set(&self->finished, 1);
    GTask *outer = data;
    GError *error = NULL;
    GPtrArray *runs = g_task_propagate_pointer(G_TASK(result), &error);
    if (runs)
        g_task_return_pointer(outer, runs, (GDestroyNotify)g_ptr_array_unref);
    else
        g_task_return_error(outer, error);
    g_object_unref(outer);
}

void larmor_recon_task_run_async(LarmorReconTask *self, GCancellable *cancellable,
                                 GAsyncReadyCallback callback, gpointer user_data)
{
    g_return_if_fail(self->context == NULL); /* one run per task object */
    self->context = g_main_context_ref_thread_default();
    self->cancellable = cancellable ? g_object_ref(cancellable) : g_cancellable_new();
    self->t_start = g_get_monotonic_time();
    GTask *outer = g_task_new(self, self->cancellable, callback, user_data);
    g_task_set_source_tag(outer, larmor_recon_task_run_async);
    /* The inner task does the work; the outer one is what the caller sees,
     * completed only after "finished" is set on the main context. No
     * return-on-cancel: the worker always finishes and frees its buffers. */
    GTask *inner = g_task_new(self, NULL, on_task_done, outer);
    g_task_run_in_thread(inner, run_thread);
    g_object_unref(inner);
}

GPtrArray *larmor_recon_task_run_finish(LarmorReconTask *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, self), NULL);
    return g_task_propagate_pointer(G_TASK(result), error);
}
