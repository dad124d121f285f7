/* The viewer page: axial, coronal and sagittal views of one volume with a
 * linked crosshair (one LarmorViewState), a slider under each, the
 * trajectory in the fourth cell, a toolbar (image, mode, colour map,
 * window/level) and a status line with the position and value under the
 * pointer. */
#ifndef LARMOR_ORTHO_VIEW_H
#define LARMOR_ORTHO_VIEW_H

#include <gtk/gtk.h>

#include "larmor-slice-view.h"
#include "larmor-time-bar.h"
#include "larmor-time-curve.h"
#include "larmor-view-state.h"
#include "larmor-volume.h"
#include "larmor.h"

G_BEGIN_DECLS

#define LARMOR_TYPE_ORTHO_VIEW (larmor_ortho_view_get_type())
G_DECLARE_FINAL_TYPE(LarmorOrthoView, larmor_ortho_view, LARMOR, ORTHO_VIEW, GtkWidget)

GtkWidget *larmor_ortho_view_new(void);
/* The volumes to choose from (a GListModel of LarmorVolume). */
void larmor_ortho_view_set_model(LarmorOrthoView *self, GListModel *volumes);
void larmor_ortho_view_show_volume(LarmorOrthoView *self, LarmorVolume *volume);
LarmorVolume *larmor_ortho_view_get_volume(LarmorOrthoView *self);
LarmorViewState *larmor_ortho_view_get_state(LarmorOrthoView *self);
LarmorSliceView *larmor_ortho_view_get_slice_view(LarmorOrthoView *self, LarmorOrientation o);
void larmor_ortho_view_set_traj(LarmorOrthoView *self, const lm_traj *traj, const int64_t matrix[3],
                                const char *caption);
/* The image part (grid of views) for PNG export. */
GtkWidget *larmor_ortho_view_get_grid(LarmorOrthoView *self);
/* The time controls under the views (hidden for static images). */
LarmorTimeBar *larmor_ortho_view_get_time_bar(LarmorOrthoView *self);
/* The ROI's time-intensity curve beside the views (with a ROI on a dynamic image). */
LarmorTimeCurve *larmor_ortho_view_get_time_curve(LarmorOrthoView *self);
/* The toolbar (a LarmorWrapBox): its children are the controls. */
GtkWidget *larmor_ortho_view_get_toolbar(LarmorOrthoView *self);
/* Window/level from the shown volume. */
void larmor_ortho_view_auto_window(LarmorOrthoView *self);
void larmor_ortho_view_reset(LarmorOrthoView *self);

/* The window/level an image has for a display mode: the live one when it
 * is shown, else the one it was last shown with; FALSE when it has none
 * yet (sessions keep them). Setting applies at once when it is shown. */
gboolean larmor_ortho_view_get_image_window(LarmorOrthoView *self, LarmorVolume *volume, LarmorMode mode,
                                            double *window, double *level);
void larmor_ortho_view_set_image_window(LarmorOrthoView *self, LarmorVolume *volume, LarmorMode mode,
                                        double window, double level);

/* Overlays over the three views, chosen in the toolbar: the data's field
 * map (Hz, diverging blue-white-red centred on 0 over ±max|f|, half
 * opacity) or the shown run's prior influence (its magnitude, hot, 0 to
 * the 99.5th percentile, transparent where it is 0); each with its colour
 * bar. An overlay on another matrix than the image is not drawn. */
typedef enum {
    LARMOR_OVERLAY_NONE = 0,
    LARMOR_OVERLAY_FIELDMAP,
    LARMOR_OVERLAY_INFLUENCE,
} LarmorOverlayKind;
void larmor_ortho_view_set_overlay_images(LarmorOrthoView *self, LarmorVolume *fieldmap, LarmorVolume *influence);
void larmor_ortho_view_set_overlay(LarmorOrthoView *self, LarmorOverlayKind kind);
LarmorOverlayKind larmor_ortho_view_get_overlay(LarmorOrthoView *self);
/* Whether the overlay menu lists kind now. */
gboolean larmor_ortho_view_offers_overlay(LarmorOrthoView *self, LarmorOverlayKind kind);
/* The image the viewer's image menu names (NULL: none). */
LarmorVolume *larmor_ortho_view_get_listed_volume(LarmorOrthoView *self);
/* The style an overlay image gets (for the views and tests). */
void larmor_overlay_style_for(LarmorOverlayKind kind, LarmorVolume *image, LarmorOverlayStyle *style);

/* "x 16 y 16 z 16 · (0.0, 0.0, 0.0) mm · 0.7341 ∠ 2.1°" (shared with compare). */
char *larmor_format_voxel(LarmorVolume *volume, const int64_t ijk[3]);
/* The same at frame t, naming the frame and its time for dynamic images. */
char *larmor_format_voxel_frame(LarmorVolume *volume, const int64_t ijk[3], int64_t t);

G_END_DECLS

#endif
