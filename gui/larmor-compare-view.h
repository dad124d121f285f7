/* The compare page: the truth and up to four runs side by side on one
 * grid (runs on another are resampled through the NIfTI affines), at the same
 * slice, cursor, zoom and window/level (linked by default), optional
 * difference images (run - truth) under each, the metrics table and the
 * CG convergence plot; the ROI table (statistics of one region of interest
 * over every panel's image) with its CSV export. */
#ifndef LARMOR_COMPARE_VIEW_H
#define LARMOR_COMPARE_VIEW_H

#include <gtk/gtk.h>

#include "larmor-plot.h"
#include "larmor-run.h"
#include "larmor-slice-view.h"
#include "larmor-time-bar.h"
#include "larmor-volume.h"

G_BEGIN_DECLS

#define LARMOR_COMPARE_MAX_RUNS 4

#define LARMOR_TYPE_COMPARE_VIEW (larmor_compare_view_get_type())
G_DECLARE_FINAL_TYPE(LarmorCompareView, larmor_compare_view, LARMOR, COMPARE_VIEW, GtkWidget)

GtkWidget *larmor_compare_view_new(void);
void larmor_compare_view_set_truth(LarmorCompareView *self, LarmorVolume *truth);
/* At most LARMOR_COMPARE_MAX_RUNS are shown. */
void larmor_compare_view_set_runs(LarmorCompareView *self, LarmorRun *const *runs, int n);
void larmor_compare_view_set_differences(LarmorCompareView *self, gboolean show);
gboolean larmor_compare_view_get_differences(LarmorCompareView *self);
/* Layout (sessions): orientation of the panels, linked views. */
LarmorOrientation larmor_compare_view_get_orientation(LarmorCompareView *self);
void larmor_compare_view_set_orientation(LarmorCompareView *self, LarmorOrientation o);
gboolean larmor_compare_view_get_linked(LarmorCompareView *self);
void larmor_compare_view_set_linked(LarmorCompareView *self, gboolean linked);
LarmorViewState *larmor_compare_view_get_state(LarmorCompareView *self);
/* Radiological convention and colour bars for every panel's state. */
void larmor_compare_view_set_display(LarmorCompareView *self, gboolean radiological, gboolean show_colorbar);
/* Panels in order (truth first when there is one); NULL past the end. */
LarmorSliceView *larmor_compare_view_get_panel(LarmorCompareView *self, int i);
/* The image panel i shows (a run's image resampled onto the first
 * panel's grid when it was on another) and its difference from the truth
 * (NULL without a truth). NULL past the end. */
LarmorVolume *larmor_compare_view_get_volume(LarmorCompareView *self, int i, LarmorVolume **difference);
/* The text of a metrics table cell: row 0.. per run; column by name
 * ("psnr", "error", "time", ...). NULL when absent (tests read this). */
const char *larmor_compare_view_get_metric_text(LarmorCompareView *self, int row, const char *column);
GtkWidget *larmor_compare_view_get_panels_widget(LarmorCompareView *self);
/* The toolbar (a LarmorWrapBox): its children are the controls. */
GtkWidget *larmor_compare_view_get_toolbar(LarmorCompareView *self);
/* The ROI table (the ROI drawn on any panel, on every panel's image): one
 * row per panel, truth first; 0 without a ROI. */
int larmor_compare_view_get_roi_rows(LarmorCompareView *self);
gboolean larmor_compare_view_get_roi_stats(LarmorCompareView *self, int row, LarmorRoiStats *st, const char **name);
/* "Use as Noise ROI": the ROI drawn becomes the noise region (and is
 * cleared for the signal ROI); FALSE without one. Then each row's SNR
 * (larmor_roi_snr) and noise SD; NaN without both regions. */
gboolean larmor_compare_view_use_roi_as_noise(LarmorCompareView *self);
double larmor_compare_view_get_roi_snr(LarmorCompareView *self, int row, double *noise_sd);
/* The line profile (the line drawn on any panel, over every panel's
 * image): rows as the ROI table's; returns the sample count (0 past the
 * end or without a line). */
int larmor_compare_view_get_profile_rows(LarmorCompareView *self);
int larmor_compare_view_get_profile(LarmorCompareView *self, int row, const double **dist_mm,
                                    const double **values, const char **name);
LarmorPlot *larmor_compare_view_get_profile_plot(LarmorCompareView *self);
/* distance, position and one column per panel (larmor_profile_to_csv), atomically. */
gboolean larmor_compare_view_write_profile_csv(LarmorCompareView *self, const char *path, GError **error);
/* Writes the table as CSV (larmor_roi_to_csv), atomically. */
gboolean larmor_compare_view_write_roi_csv(LarmorCompareView *self, const char *path, GError **error);

/* The frame slider and cine controls of dynamic runs: every panel shows
 * the same frame (linked or not). */
LarmorTimeBar *larmor_compare_view_get_time_bar(LarmorCompareView *self);

G_END_DECLS

#endif
