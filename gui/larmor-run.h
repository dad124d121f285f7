/* One finished reconstruction: its settings, the image, times, throughput,
 * metrics against the truth (NaN without one) and the CG residual history.
 * Made in the worker thread, then only read, except "compare". */
#ifndef LARMOR_RUN_H
#define LARMOR_RUN_H

#include <glib-object.h>

#include "larmor-volume.h"
#include "lm_recon.h"

G_BEGIN_DECLS

/* What the user asked for (also the worker's input). */
typedef struct {
    lm_method method;
    char variant[32];
    double lambda;
    lm_reg_kind reg;
    int iters;
    double tol;
    double edge;          /* anatomical edge threshold, fraction of max|ref| */
    gboolean recompute_q; /* bypass the Q cache (lm_recon_opts.use_cache = 0) */
} LarmorReconParams;

void larmor_recon_params_init(LarmorReconParams *p);

#define LARMOR_TYPE_RUN (larmor_run_get_type())
G_DECLARE_FINAL_TYPE(LarmorRun, larmor_run, LARMOR, RUN, GObject)

/* Takes res->image and copies the rest; res is left cleared. */
LarmorRun *larmor_run_new(const LarmorReconParams *params, const char *dataset_name,
                          lm_recon_result *res);

void larmor_run_set_index(LarmorRun *self, int index);
int larmor_run_get_index(LarmorRun *self);
/* "#3 CG · cpu-simd · λ 1e-3": for menus and panel titles. */
const char *larmor_run_get_label(LarmorRun *self);
const LarmorReconParams *larmor_run_get_params(LarmorRun *self);
const char *larmor_run_get_dataset_name(LarmorRun *self);
/* The data set's identity (larmor_dataset_get_key) the run was made from. */
void larmor_run_set_dataset_key(LarmorRun *self, const char *key);
const char *larmor_run_get_dataset_key(LarmorRun *self);
/* "current": made from the data loaded now (set by the window); only such
 * runs are offered for comparison. */
gboolean larmor_run_get_current(LarmorRun *self);
void larmor_run_set_current(LarmorRun *self, gboolean current);
LarmorVolume *larmor_run_get_image(LarmorRun *self);
/* Drops the image (sweep points other than the best keep only numbers). */
void larmor_run_drop_image(LarmorRun *self);

int larmor_run_get_iters_done(LarmorRun *self);
const double *larmor_run_get_residuals(LarmorRun *self, int *n);
double larmor_run_get_time_q(LarmorRun *self);
double larmor_run_get_time_fhd(LarmorRun *self);
double larmor_run_get_time_cg(LarmorRun *self);
double larmor_run_get_time_total(LarmorRun *self);
gboolean larmor_run_get_q_from_cache(LarmorRun *self);
/* F^H d throughput. Gpairs/s: M samples x N voxels pairs per second of
 * F^H d time (1e9), comparable across every kernel (NaN for gridding).
 * GFLOPS: the direct-sum operation count (lm_ksum_flops_per_pair) per
 * second, only meaningful for kernels that evaluate the direct sum: NaN for
 * gridding and for NUFFT and separable kernels. */
double larmor_run_get_gpairs(LarmorRun *self);
double larmor_run_get_gflops(LarmorRun *self);

void larmor_run_set_metrics(LarmorRun *self, double psnr_db, double percent_error);
/* Metrics with the serial of the truth volume they were computed against
 * (larmor_volume_get_serial; 0: unknown). Clears "stale". */
void larmor_run_set_metrics_against(LarmorRun *self, double psnr_db, double percent_error, guint truth_serial);
guint larmor_run_get_metrics_truth(LarmorRun *self);
/* Stale: computed against a truth that is no longer loaded for this data
 * set, and nothing to recompute them with. The numbers stay, marked. */
void larmor_run_set_metrics_stale(LarmorRun *self, gboolean stale);
gboolean larmor_run_get_metrics_stale(LarmorRun *self);
gboolean larmor_run_has_metrics(LarmorRun *self);
double larmor_run_get_psnr(LarmorRun *self);
double larmor_run_get_percent_error(LarmorRun *self);

/* L-curve coordinates ||F rho - d|| and ||W rho|| (NaN when not computed). */
void larmor_run_set_lcurve(LarmorRun *self, double data_norm, double reg_norm);
double larmor_run_get_data_norm(LarmorRun *self);
double larmor_run_get_reg_norm(LarmorRun *self);

gboolean larmor_run_get_compare(LarmorRun *self);
void larmor_run_set_compare(LarmorRun *self, gboolean compare);

/* Display names: "CG (Toeplitz)", "Identity"... */
const char *larmor_method_label(lm_method m);
/* Short names for tables and labels: "CG", "Grid-lin", "Grid-KB", "FFT". */
const char *larmor_method_short(lm_method m);
const char *larmor_reg_label(lm_reg_kind r);

G_END_DECLS

#endif
