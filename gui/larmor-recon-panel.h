/* The sidebar's reconstruction settings: method, kernel variant (every
 * variant of the table; unavailable ones insensitive with the reason as
 * tooltip), regulariser and reference, lambda on a log scale with an entry,
 * the anatomical prior's edge threshold, iterations, tolerance, "Recompute
 * Q" (one run without the Q cache); the coil sensitivity source (maps, estimated
 * maps or root-sum-of-squares), coil compression and prewhitening; the progress of the running task; the sweep range.
 * Buttons activate the window's actions (win.reconstruct, win.cancel,
 * win.sweep, win.open-reference). Signal "changed": method, variant,
 * iterations or coil settings changed (what a run would cost). */
#ifndef LARMOR_RECON_PANEL_H
#define LARMOR_RECON_PANEL_H

#include <gtk/gtk.h>

#include "larmor-recon-task.h"
#include "larmor-run.h"

G_BEGIN_DECLS

#define LARMOR_TYPE_RECON_PANEL (larmor_recon_panel_get_type())
G_DECLARE_FINAL_TYPE(LarmorReconPanel, larmor_recon_panel, LARMOR, RECON_PANEL, GtkWidget)

/* FALSE with a message naming the field when an entry does not parse. */
gboolean larmor_recon_panel_get_params(LarmorReconPanel *self, LarmorReconParams *p, GError **error);
void larmor_recon_panel_set_params(LarmorReconPanel *self, const LarmorReconParams *p);
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

/* Availability of a variant, checked once (GPU probing costs). */
gboolean larmor_variant_is_available(const char *name, const char **why);
/* What the variant list shows for a name: the name, or for "auto"
 * "Auto (fastest: cpu-nufft here)". Free with g_free. */
char *larmor_variant_label(const char *name);

G_END_DECLS

#endif
