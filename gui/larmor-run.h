/* One finished reconstruction: its settings, the image, times, throughput,
 * metrics against the truth (NaN without one) and the CG residual history.
 * Made in the worker thread, then only read, except "compare". */
#ifndef LARMOR_RUN_H
#define LARMOR_RUN_H

#include <glib-object.h>

#include "larmor-coil-maps.h"
#include "larmor-volume.h"
#include "larmor.h"

G_BEGIN_DECLS

/* Where the coil sensitivities of multi-coil data come from. */
typedef enum {
    LARMOR_COILS_SENSE = 0, /* the data set's maps (SENSE) */
    LARMOR_COILS_ESTIMATE,  /* maps estimated from the data (SENSE, lm_recon_opts.estimate_sens) */
    LARMOR_COILS_RSS,       /* each channel on its own, root-sum-of-squares */
    LARMOR_N_COILS_SOURCES
} LarmorCoilSource;

/* "sense", "estimate", "rss" (settings); labels for the panel. */
const char *larmor_coil_source_name(LarmorCoilSource c);
gboolean larmor_coil_source_parse(const char *s, LarmorCoilSource *out);
const char *larmor_coil_source_label(LarmorCoilSource c);

/* Off-resonance correction with the data set's field map (lm_recon_opts
 * fieldmap and segments). */
typedef enum {
    LARMOR_FIELDMAP_OFF = 0,    /* fieldmap NULL: the uncorrected reconstruction */
    LARMOR_FIELDMAP_SEGMENTED,  /* time segments, LM_SEGMENTS_AUTO */
    LARMOR_FIELDMAP_EXACT,      /* segments 0: the exact model */
    LARMOR_N_FIELDMAP_MODES
} LarmorFieldmapMode;

/* "off", "segmented", "exact" (settings, sessions); labels for the panel. */
const char *larmor_fieldmap_mode_name(LarmorFieldmapMode m);
gboolean larmor_fieldmap_mode_parse(const char *s, LarmorFieldmapMode *out);
const char *larmor_fieldmap_mode_label(LarmorFieldmapMode m);

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
    LarmorCoilSource coils; /* multi-coil data only */
    int compress;         /* lm_recon_opts.compress_coils: 0 off, -1 auto, K virtual coils */
    gboolean prewhiten;   /* with noise samples (lm_recon_opts.noise) */
    gboolean lambda_auto; /* lm_recon_opts.lambda_auto: lambda chosen from the data (CG; not tv, wavelet) */
    lm_lambda_criterion criterion; /* with lambda_auto (LM_LAMBDA_DEFAULT: the regulariser's own) */
    gboolean prior_influence; /* lm_recon_opts.prior_influence: keep what the prior changed */
    LarmorFieldmapMode fieldmap; /* off-resonance correction with the data's field map */
    gboolean fallback_cpu; /* lm_recon_opts.fallback: a failing GPU variant reruns on the CPU */
    /* Dynamic data (docs/dynamic.md; set by the window for data with frames):
     * lambda is the temporal weight and iters counts ADMM iterations. */
    gboolean dynamic;
    lm_dyn_time dyn_time;  /* LM_DYN_TIME_NONE: each frame alone (frame by frame) */
    gboolean dyn_space_tv; /* spatial TV on every frame too (ttv+tv) */
    double lambda_space;   /* its weight */
} LarmorReconParams;

/* "ttv", "ttv+tv", "llr", "ttik" or "frame by frame": the prior of dynamic params. */
const char *larmor_dyn_reg_name(const LarmorReconParams *p);

void larmor_recon_params_init(LarmorReconParams *p);

#define LARMOR_TYPE_RUN (larmor_run_get_type())
G_DECLARE_FINAL_TYPE(LarmorRun, larmor_run, LARMOR, RUN, GObject)

/* A dynamic run: image (taken) has one frame per frame of the data;
 * res's weights, iterations and times are copied. */
LarmorRun *larmor_run_new_dynamic(const LarmorReconParams *params, const char *dataset_name, LarmorVolume *image,
                                  const lm_dyn_result *res, int coils);
/* The prior as the tables show it: larmor_dyn_reg_name for dynamic runs,
 * else the regulariser's label. */
const char *larmor_run_get_reg_text(LarmorRun *self);
/* Frames of the run's image (1 for a static run). */
int64_t larmor_run_get_frames(LarmorRun *self);

/* Takes res->image and copies the rest; res is left cleared. */
LarmorRun *larmor_run_new(const LarmorReconParams *params, const char *dataset_name,
                          lm_recon_result *res);

void larmor_run_set_index(LarmorRun *self, int index);
int larmor_run_get_index(LarmorRun *self);
/* "#3 ADMM · tv · cpu-simd · λ 0.003", "#4 Grid-lin · uncorrected": for
 * menus, panel titles and the viewer's image list. */
const char *larmor_run_get_label(LarmorRun *self);
const LarmorReconParams *larmor_run_get_params(LarmorRun *self);
const char *larmor_run_get_dataset_name(LarmorRun *self);
/* The variant as shown: its name, or "auto → cpu-nufft" (what auto picked). */
const char *larmor_run_get_variant_text(LarmorRun *self);
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

/* Coils: what the library reports it did. */
int larmor_run_get_coils(LarmorRun *self);          /* channels reconstructed (after compression) */
int larmor_run_get_coils_in(LarmorRun *self);       /* channels in the data */
lm_coil_combine larmor_run_get_combine(LarmorRun *self);
lm_sens_source larmor_run_get_sens_source(LarmorRun *self);
double larmor_run_get_energy_kept(LarmorRun *self); /* with compression, else NaN */
/* "SENSE 8", "SENSE est. 8", "rss 8", "SENSE 4 of 8" (compressed), "—" for one coil. */
char *larmor_run_get_coils_text(LarmorRun *self);
/* One image per channel (lm_recon_result.coil_images), NULL when not kept. */
const lm_sens *larmor_run_get_coil_images(LarmorRun *self);
/* The maps the run used: its own (estimated or compressed, from
 * lm_recon_result.sens) or the data set's given ones (set by the task). */
LarmorCoilMaps *larmor_run_get_maps(LarmorRun *self);
void larmor_run_set_maps(LarmorRun *self, LarmorCoilMaps *maps);
/* ncov x ncov noise covariance (row-major), NULL when the run had none. */
const lm_cfloat *larmor_run_get_noise_cov(LarmorRun *self, int *ncov);
/* Frees the per-channel images and the run's own maps (memory: C volumes each). */
void larmor_run_drop_coil_data(LarmorRun *self);

/* Live lambda (larmor-recon-task.h, LarmorLive): a CG run may hold the
 * live re-solver of its kept reconstruction session (a GObject, reffed;
 * NULL drops it and frees the session once no solve uses it). */
void larmor_run_set_live(LarmorRun *self, GObject *live);
GObject *larmor_run_get_live(LarmorRun *self);
/* A finished run is immutable: live lambda works on a live run forked from
 * it (same data, method, variant, regulariser, coils; no image until the
 * first re-solve; "· live from #3" in its label). Full reference. */
LarmorRun *larmor_run_fork_live(LarmorRun *src);
int larmor_run_get_live_from(LarmorRun *self);
/* A live re-solve's result replaces a live run's image (a new volume:
 * volumes are immutable), lambda, iterations and metrics (NaN: none) and
 * notifies "image". A finished run refuses (FALSE) and stays as it was.
 * Main thread. */
gboolean larmor_run_update_live(LarmorRun *self, LarmorVolume *image, double lambda, int iters_done, double solve_s,
                                double psnr_db, double percent_error, guint truth_serial);
/* Whether the panel's settings (want) may drive this run's session: CG with
 * the same regulariser (its lambda scale); else FALSE and why (g_free). */
gboolean larmor_run_live_fits(LarmorRun *self, const LarmorReconParams *want, char **why);
gboolean larmor_run_get_is_live(LarmorRun *self);

gboolean larmor_run_get_compare(LarmorRun *self);
/* Exported: its image was written (NIfTI) or the runs table was exported
 * (CSV) with it in it. Closing a window with runs not exported asks first. */
gboolean larmor_run_get_exported(LarmorRun *self);
void larmor_run_set_exported(LarmorRun *self, gboolean exported);
void larmor_run_set_compare(LarmorRun *self, gboolean compare);

/* What the library reported beyond the image: the lambda it solved with
 * (lambda_used; for lambda_auto the criterion, e.g. "discrepancy", and its
 * note "discrepancy, sigma 0.051 from outer k-space"), the field-map model
 * (segments: time segments, 0 exact, -1 no field map; their interpolation
 * error) and the prior influence image (NULL unless asked for). */
double larmor_run_get_lambda_used(LarmorRun *self);
const char *larmor_run_get_lambda_criterion(LarmorRun *self);
const char *larmor_run_get_lambda_note(LarmorRun *self);
double larmor_run_get_lambda_sigma(LarmorRun *self);
int larmor_run_get_segments(LarmorRun *self);
double larmor_run_get_segment_error(LarmorRun *self);
LarmorVolume *larmor_run_get_prior_influence(LarmorRun *self);
/* Sessions: the prior influence image read back with the run. */
void larmor_run_set_prior_influence(LarmorRun *self, LarmorVolume *influence);
/* One line for the run's details: "λ = 0.012 (discrepancy, σ 0.051) · field
 * map: 6 time segments, interpolation error 1.2e-03", or "" when there is
 * nothing beyond the settings. Free with g_free. */
char *larmor_run_get_details(LarmorRun *self);

/* Sessions: every setting and result of the run (not its image, nor the
 * per-channel data) in one GKeyFile group; doubles exactly (%.17g). The
 * image is written by the caller. */
void larmor_run_save_to_keyfile(LarmorRun *self, GKeyFile *kf, const char *group);
/* The run of larmor_run_save_to_keyfile with image (may be NULL); a
 * one-line error naming the group when a value is missing or absurd. */
LarmorRun *larmor_run_new_from_keyfile(GKeyFile *kf, const char *group, LarmorVolume *image, GError **error);

/* What solved it: "CG", or "ADMM" for the non-smooth priors (tv,
 * wavelet); for other methods larmor_method_short. */
const char *larmor_run_get_solver(LarmorRun *self);
/* Off-resonance: "FM 9 seg", "FM exact", "uncorrected" (the data had a
 * field map the run did not correct for) or "" (g_free). */
char *larmor_run_get_fieldmap_text(LarmorRun *self);
void larmor_run_set_uncorrected(LarmorRun *self, gboolean uncorrected);
gboolean larmor_run_get_uncorrected(LarmorRun *self);

/* A file name stem for the run's image: "run12-admm-tv-l0.003-cpu-nufft",
 * "run13-grid-lin" (g_free). */
char *larmor_run_get_file_stem(LarmorRun *self);
/* Lower-case letters, digits and dots, every other run of characters one
 * '-': "#3 Truth (B32)" -> "3-truth-b32"; "image" when nothing is left. */
char *larmor_name_slug(const char *text);

/* Display names: "CG (Toeplitz)", "Identity"... */
const char *larmor_method_label(lm_method m);
/* Short names for tables and labels: "CG", "Grid-lin", "Grid-KB", "FFT". */
const char *larmor_method_short(lm_method m);
const char *larmor_reg_label(lm_reg_kind r);

G_END_DECLS

#endif
