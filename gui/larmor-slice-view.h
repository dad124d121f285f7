/* One slice of a volume (axial, coronal or sagittal) with the crosshair of
 * a shared LarmorViewState. Mouse: left click/drag moves the cursor; scroll
 * moves the slice, Ctrl+scroll zooms about the pointer; middle drag (or
 * Ctrl+left) pans; right drag (or Shift+left) sets window (horizontal) and
 * level (vertical). Keys: arrows and Page Up/Down move the slice, Home/End,
 * plus/minus zoom, r resets zoom, pan and window/level, [ and ] step the
 * frame of a dynamic image (the state's "frame"). With the state's
 * ROI tool on (rectangle or ellipse), a left drag draws the shared region
 * of interest instead of moving the cursor; it is outlined on the slice it
 * lies on, with mean, SD, min, max of the magnitude, voxel count and area
 * in mm² of this view's volume. */
#ifndef LARMOR_SLICE_VIEW_H
#define LARMOR_SLICE_VIEW_H

#include <gtk/gtk.h>

#include "larmor-overlay.h"
#include "larmor-view-state.h"
#include "larmor-volume.h"

G_BEGIN_DECLS

#define LARMOR_TYPE_SLICE_VIEW (larmor_slice_view_get_type())
G_DECLARE_FINAL_TYPE(LarmorSliceView, larmor_slice_view, LARMOR, SLICE_VIEW, GtkWidget)

GtkWidget *larmor_slice_view_new(LarmorOrientation orientation);

void larmor_slice_view_set_volume(LarmorSliceView *self, LarmorVolume *volume);
LarmorVolume *larmor_slice_view_get_volume(LarmorSliceView *self);
void larmor_slice_view_set_state(LarmorSliceView *self, LarmorViewState *state);
LarmorViewState *larmor_slice_view_get_state(LarmorSliceView *self);
void larmor_slice_view_set_orientation(LarmorSliceView *self, LarmorOrientation orientation);
LarmorOrientation larmor_slice_view_get_orientation(LarmorSliceView *self);
/* Values are multiplied by gain before window/level (difference images). */
void larmor_slice_view_set_gain(LarmorSliceView *self, double gain);
/* Text in the top-left corner; NULL shows the orientation's name. */
void larmor_slice_view_set_title(LarmorSliceView *self, const char *title);
void larmor_slice_view_set_placeholder(LarmorSliceView *self, const char *text);
void larmor_slice_view_set_show_labels(LarmorSliceView *self, gboolean show);

/* An image over this one (same matrix; another is not drawn), blended as
 * style says, with its own colour bar at the right edge labelled in unit;
 * NULL removes it. */
void larmor_slice_view_set_overlay(LarmorSliceView *self, LarmorVolume *overlay, const LarmorOverlayStyle *style,
                                   const char *unit);
/* The overlay and its style (NULL: none); drawn: it is on this view's grid. */
LarmorVolume *larmor_slice_view_get_overlay(LarmorSliceView *self, LarmorOverlayStyle *style, gboolean *drawn);

/* Resets zoom and pan of this orientation and window/level to the volume's
 * automatic range (the `r` key). */
void larmor_slice_view_reset(LarmorSliceView *self);

/* Geometry, widget coordinates (for tests and the compare view). */
gboolean larmor_slice_view_voxel_to_widget(LarmorSliceView *self, const int64_t ijk[3], double *x,
                                           double *y);
gboolean larmor_slice_view_widget_to_voxel(LarmorSliceView *self, double x, double y,
                                           int64_t ijk[3]);
/* The slice label drawn in the top-right corner, "z 2 (0–3)" (NULL without
 * a volume): 0-based, as the cursor read-out. */
char *larmor_slice_view_get_slice_text(LarmorSliceView *self);
/* Statistics of this view's volume in the shared ROI, when the ROI lies on
 * the slice shown (FALSE otherwise). */
gboolean larmor_slice_view_get_roi_stats(LarmorSliceView *self, LarmorRoiStats *st);
/* "mean 1  SD 0  min 1  max 1  12 voxels  12 mm²"; free with g_free. */
char *larmor_roi_stats_text(const LarmorRoiStats *st);
/* A drag with the ROI tool from (x0, y0) to (x1, y1), widget coordinates
 * (what the gesture does; tests call it). */
void larmor_slice_view_draw_roi(LarmorSliceView *self, double x0, double y0, double x1, double y1);
/* With the state's tool LARMOR_ROI_LINE a left drag draws the shared
 * profile line (larmor_view_state_set_line); this is that drag from
 * (x0, y0) to (x1, y1) (tests call it). */
void larmor_slice_view_draw_line(LarmorSliceView *self, double x0, double y0, double x1, double y1);
/* Widget coordinates of a plane point (voxel centres at integers). */
gboolean larmor_slice_view_plane_to_widget(LarmorSliceView *self, double pu, double pv, double *x, double *y);
/* The letters at the left, right, top and bottom edges ("L", "R", "A",
 * "P", ...): where those edges point in the patient, from the volume's
 * affine (dominant axis for oblique ones) and the state's convention.
 * Free each with g_free; FALSE (all NULL) without a volume or size. */
gboolean larmor_slice_view_edge_labels(LarmorSliceView *self, char *labels[4]);
/* The colour bar (bottom right, hidden by the state's "show-colorbar" or
 * in views under 160 x 120): its values run over the window, divided by
 * the gain, in the unit -- set_unit's, else "rad" for phase and "a.u.". */
void larmor_slice_view_set_unit(LarmorSliceView *self, const char *unit);
const char *larmor_slice_view_get_unit(LarmorSliceView *self);
/* lo and hi it shows; TRUE when the last snapshot drew it. */
gboolean larmor_slice_view_get_colorbar_range(LarmorSliceView *self, double *lo, double *hi);
/* x, y, w, h of the bar in the last snapshot; FALSE when none was drawn. */
gboolean larmor_slice_view_get_colorbar_rect(LarmorSliceView *self, double rect[4]);
/* The same for the overlay's colour bar. */
gboolean larmor_slice_view_get_overlay_colorbar_rect(LarmorSliceView *self, double rect[4]);
/* Time spent turning the slice into pixels in the last snapshot. */
double larmor_slice_view_get_last_draw_ms(LarmorSliceView *self);

G_END_DECLS

#endif
