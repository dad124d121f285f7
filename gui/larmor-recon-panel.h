/* The sidebar's reconstruction settings: method, kernel variant (every
 * variant of the table; unavailable ones insensitive with the reason as
 * tooltip), regulariser (the CLI's six names) and reference, the field-map
 * correction (off, time-segmented, exact) with "compare with uncorrected"
 * (win.compare-fieldmap), lambda on a log scale (each regulariser's own
 * range and value) with an entry and "Auto" (win.auto-lambda) with its
 * criterion menu, "Prior influence", the run's details line,
 * the anatomical prior's edge threshold, iterations, tolerance, "Recompute
 * Q" (one run without the Q cache); the coil sensitivity source (maps, estimated
 * maps or root-sum-of-squares), coil compression and prewhitening; the progress of the running task; the sweep range.
 * Buttons activate the window's actions (win.reconstruct, win.cancel,
 * win.sweep, win.open-reference). Signal "changed": method, variant,
 * iterations or coil settings changed (what a run would cost). */
#ifndef LARMOR_RECON_PANEL_H
#define LARMOR_RECON_PANEL_H

#include <gtk/gtk.h>

#include "larmor-dyn-controls.h"
#include "larmor-recon-task.h"
#include "larmor-run.h"

G_BEGIN_DECLS

#define LARMOR_TYPE_RECON_PANEL (larmor_recon_panel_get_type())
G_DECLARE_FINAL_TYPE(LarmorReconPanel, larmor_recon_panel, LARMOR, RECON_PANEL, GtkWidget)

/* FALSE with a message naming the field when an entry does not parse. */
gboolean larmor_recon_panel_get_params(LarmorReconPanel *self, LarmorReconParams *p, GError **error);
void larmor_recon_panel_set_params(LarmorReconPanel *self, const LarmorReconParams *p);
/* Data with frames: the dynamic controls show, and get_params fills the
 * dynamic fields from them (larmor-dyn-controls.h). */
void larmor_recon_panel_set_dynamic(LarmorReconPanel *self, gboolean dynamic);
/* The static controls' settings alone (what the settings file keeps:
 * dynamic data's weights and iterations do not replace them). */
gboolean larmor_recon_panel_get_static_params(LarmorReconPanel *self, LarmorReconParams *p, GError **error);
LarmorDynControls *larmor_recon_panel_get_dyn_controls(LarmorReconPanel *self);
gboolean larmor_recon_panel_get_sweep(LarmorReconPanel *self, double *from, double *to, int *steps,
                                      GError **error);
void larmor_recon_panel_set_sweep(LarmorReconPanel *self, double from, double to, int steps);
void larmor_recon_panel_set_reference_name(LarmorReconPanel *self, const char *name);
/* "Recompute Q" holds for one run: the window clears it once that run starts. */
void larmor_recon_panel_clear_recompute(LarmorReconPanel *self);
/* The last control of the panel (the sweep's button), for layout checks. */
GtkWidget *larmor_recon_panel_get_sweep_button(LarmorReconPanel *self);

void larmor_recon_panel_set_running(LarmorReconPanel *self, gboolean running);
void larmor_recon_panel_set_progress(LarmorReconPanel *self, const LarmorProgressInfo *info);
/* Final line after a run: "Done: PSNR 27.1 dB in 3.2 s", "Cancelled". */
void larmor_recon_panel_set_status(LarmorReconPanel *self, const char *text, double fraction);

/* The data loaded now: channel count, whether it has coil maps and noise
 * samples. Sets what the coil controls offer ("Coil maps (SENSE)" greyed
 * with the reason when there are no maps; prewhitening insensitive without
 * noise samples); the choice itself is kept. */
void larmor_recon_panel_set_coil_info(LarmorReconPanel *self, int ncoils, gboolean has_maps, gboolean has_noise);
/* New data that ship coil maps: a coil source of "Estimate maps" left
 * from other data becomes "Coil maps (SENSE)" (their maps). */
void larmor_recon_panel_prefer_data_maps(LarmorReconPanel *self);
/* The line under the coil choice ("SENSE with the 8 coils' maps", or why not). */
const char *larmor_recon_panel_get_coils_note(LarmorReconPanel *self);
gboolean larmor_recon_panel_coil_source_available(LarmorReconPanel *self, LarmorCoilSource c, const char **why);
/* "coils", "compress", "prewhiten": the controls, for tests. */
GtkWidget *larmor_recon_panel_get_coils_widget(LarmorReconPanel *self, const char *name);

/* Live lambda: the "Live" toggle beside lambda (insensitive, with why as
 * tooltip, unless the newest run keeps a session; turning it off too). While
 * on, signal "live-lambda" (double) reports every new lambda. */
void larmor_recon_panel_set_live_available(LarmorReconPanel *self, gboolean available, const char *why);
GtkToggleButton *larmor_recon_panel_get_live_toggle(LarmorReconPanel *self);
/* The regulariser list: identity, gradient, tv, wavelet, anatomical,
 * anatomical-edges (lm_reg_name, as larmor-cli recon --reg); list position
 * <-> kind. */
#define LARMOR_N_REGS 6
lm_reg_kind larmor_reg_at(guint pos);
guint larmor_reg_position(lm_reg_kind r);
/* wavelet needs the library built with GSL (probed once); the others always. */
gboolean larmor_reg_is_available(lm_reg_kind r, const char **why);
/* The slider's range (decades) and the default lambda of a regulariser:
 * tv and wavelet weigh on another scale (docs/priors.md, BENCHMARKS.md). */
void larmor_reg_lambda_range(lm_reg_kind r, double *lo_log10, double *hi_log10, double *def);

/* CG with a prior the automatic lambda accepts (the window's action follows). */
gboolean larmor_recon_panel_auto_lambda_available(LarmorReconPanel *self);
/* The lambda shown (the slider and entry). */
double larmor_recon_panel_get_lambda(LarmorReconPanel *self);
void larmor_recon_panel_set_lambda(LarmorReconPanel *self, double lambda);
/* The data's field map: whether there is one, whether the trajectory has
 * sample times, and where the map came from. The correction drop-down is
 * greyed with the reason when it cannot run; the choice is kept. */
void larmor_recon_panel_set_fieldmap_info(LarmorReconPanel *self, gboolean has_fieldmap, gboolean has_times,
                                          const char *origin);
gboolean larmor_recon_panel_fieldmap_available(LarmorReconPanel *self, const char **why);
/* The line under the progress: what the run reported beyond the settings
 * (larmor_run_get_details); empty hides it. */
void larmor_recon_panel_set_details(LarmorReconPanel *self, const char *text);
/* The status line under Reconstruct ("#3 done in ... PSNR ..."). */
const char *larmor_recon_panel_get_status(LarmorReconPanel *self);
const char *larmor_recon_panel_get_details(LarmorReconPanel *self);
/* Controls by name, for tests: "reg", "fieldmap", "auto-lambda", "criterion",
 * "prior-influence", "lambda-scale", "method", and the coil controls. */
GtkWidget *larmor_recon_panel_get_control(LarmorReconPanel *self, const char *name);

/* Availability of a variant, checked once (GPU probing costs). */
gboolean larmor_variant_is_available(const char *name, const char **why);
/* What the variant list shows for a name: the name, or for "auto"
 * "Auto (fastest: cpu-nufft here)". Free with g_free. */
char *larmor_variant_label(const char *name);

G_END_DECLS

#endif
