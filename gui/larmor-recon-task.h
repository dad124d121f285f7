/* One reconstruction, or a lambda sweep, in a worker thread
 * (g_task_run_in_thread) around lm_recon_run. Progress reaches the main
 * context through an idle source attached to it (not
 * g_main_context_invoke_full, which may run the callback in the worker when
 * nobody is iterating the context), coalesced so a fast solver cannot flood
 * it, and is re-emitted there as the "progress" signal.
 * Cancelling the GCancellable makes the progress callback return non-zero:
 * the library stops within one iteration and frees its buffers, and the
 * task finishes with G_IO_ERROR_CANCELLED. */
#ifndef LARMOR_RECON_TASK_H
#define LARMOR_RECON_TASK_H

#include <gio/gio.h>

#include "larmor-dataset.h"
#include "larmor-run.h"

G_BEGIN_DECLS

typedef struct {
    double fraction;        /* overall, 0..1 */
    lm_stage stage;
    int iter, iters;        /* CG */
    double rel_resid;
    double elapsed_s;       /* whole task */
    double time_left_s;     /* estimate, NaN when unknown */
    int sweep_index, sweep_count;
    char text[160];         /* "CG iteration 12 of 60 · residual 3.1e-04" */
} LarmorProgressInfo;

/* The library's options for these settings (the coils, reference and
 * progress are the task's): fieldmap (Hz on the matrix, may be NULL) is
 * used when the field-map mode is not off (segments LM_SEGMENTS_AUTO, or 0
 * for the exact model), CG only; lambda_auto and prior_influence CG only. */
void larmor_recon_opts_from_params(const LarmorReconParams *p, const float *fieldmap, lm_recon_opts *o);

#define LARMOR_TYPE_RECON_TASK (larmor_recon_task_get_type())
G_DECLARE_FINAL_TYPE(LarmorReconTask, larmor_recon_task, LARMOR, RECON_TASK, GObject)

/* reference: for the anatomical regulariser (may be NULL otherwise).
 * lambdas/n_lambdas: a sweep (n_lambdas 0 runs params->lambda once). */
LarmorReconTask *larmor_recon_task_new(LarmorDataset *dataset, LarmorVolume *reference,
                                       const LarmorReconParams *params, const double *lambdas,
                                       int n_lambdas);
void larmor_recon_task_run_async(LarmorReconTask *self, GCancellable *cancellable,
                                 GAsyncReadyCallback callback, gpointer user_data);
/* The runs (one per lambda), or NULL with the error (G_IO_ERROR_CANCELLED
 * when cancelled). In a sweep with a truth only the best run keeps its image. */
GPtrArray *larmor_recon_task_run_finish(LarmorReconTask *self, GAsyncResult *result, GError **error);
gboolean larmor_recon_task_is_sweep(LarmorReconTask *self);

/* Live lambda (docs/session.md): a single CG run keeps its reconstruction
 * session (lm_recon_session.h: encoding, Q and E^H d on the variant's
 * device) in a LarmorLive attached to the run (larmor_run_get_live) when
 * it holds less than LARMOR_LIVE_MAX_BYTES. larmor_live_set_lambda re-solves
 * in a worker, coalesced: only the newest value is solved; each new value
 * gets a preview (LARMOR_LIVE_PREVIEW_ITERS iterations warm-started from the
 * last image), and once the value has rested LARMOR_LIVE_REST_MS a final
 * solve from zero with the run's iterations and tolerance: the image a fresh
 * run at that lambda gives. Each result replaces the image and metrics
 * of the live run holding the session (larmor_run_update_live: a finished
 * run refuses, so the window first moves the session to a live run forked
 * from it) on the main thread, then "updated" (gboolean final) is emitted. The worker holds a reference: dropping the
 * LarmorLive while a solve runs frees the session after it. */
#define LARMOR_LIVE_MAX_BYTES (4.0 * 1024 * 1024 * 1024)
#define LARMOR_LIVE_PREVIEW_ITERS 8
#define LARMOR_LIVE_REST_MS 250

#define LARMOR_TYPE_LIVE (larmor_live_get_type())
G_DECLARE_FINAL_TYPE(LarmorLive, larmor_live, LARMOR, LIVE, GObject)

void larmor_live_set_lambda(LarmorLive *self, double lambda);
/* Solve the final image now, without waiting for the value to rest (tests). */
void larmor_live_settle(LarmorLive *self);
/* A solve runs or one is due. */
gboolean larmor_live_is_busy(LarmorLive *self);
/* The last live solve: lambda, iterations, time (s), whether final; the
 * error of a failed one (NULL if none). */
double larmor_live_get_lambda(LarmorLive *self);
gboolean larmor_live_get_last(LarmorLive *self, int *iters, double *time_s, gboolean *final);
const char *larmor_live_get_error(LarmorLive *self);
/* The session moves to another run (a live run forked from its own:
 * larmor_run_fork_live), which holds it from now on; its results go there. */
void larmor_live_move_to(LarmorLive *self, LarmorRun *to);
LarmorRun *larmor_live_get_run(LarmorLive *self);

G_END_DECLS

#endif
