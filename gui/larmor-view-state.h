/* What linked slice views share: the cursor (a voxel) and frame, window/level,
 * display mode, colour map, and zoom/pan per orientation. Views that share
 * one state show the same place the same way (the ortho viewer's three
 * views, the compare view's panels). Properties notify only on change. */
#ifndef LARMOR_VIEW_STATE_H
#define LARMOR_VIEW_STATE_H

#include <glib-object.h>

#include "larmor-colormap.h"
#include "larmor-profile.h"
#include "larmor-roi.h"
#include "larmor-slice.h"

G_BEGIN_DECLS

#define LARMOR_TYPE_VIEW_STATE (larmor_view_state_get_type())
G_DECLARE_FINAL_TYPE(LarmorViewState, larmor_view_state, LARMOR, VIEW_STATE, GObject)

LarmorViewState *larmor_view_state_new(void);

/* Volume size the cursor is clamped to; a new size recentres the cursor. */
void larmor_view_state_set_dims(LarmorViewState *self, const int64_t dims[3]);
void larmor_view_state_get_dims(LarmorViewState *self, int64_t dims[3]);

void larmor_view_state_get_cursor(LarmorViewState *self, int64_t ijk[3]);
void larmor_view_state_set_cursor(LarmorViewState *self, const int64_t ijk[3]);
void larmor_view_state_set_cursor_axis(LarmorViewState *self, int axis, int64_t value);

double larmor_view_state_get_window(LarmorViewState *self);
double larmor_view_state_get_level(LarmorViewState *self);
void larmor_view_state_set_window_level(LarmorViewState *self, double window, double level);

LarmorMode larmor_view_state_get_mode(LarmorViewState *self);
void larmor_view_state_set_mode(LarmorViewState *self, LarmorMode mode);
LarmorColormap larmor_view_state_get_colormap(LarmorViewState *self);
/* Setting the mode to phase switches the map to cyclic (the phase wraps at
 * +-pi, the map too); leaving phase restores the map of before unless
 * larmor_view_state_set_colormap was called meanwhile (the user's pick). */
void larmor_view_state_set_colormap(LarmorViewState *self, LarmorColormap cm);
/* The map the user chose: the one of before phase while phase shows its
 * automatic cyclic map (what settings and sessions keep). */
LarmorColormap larmor_view_state_get_user_colormap(LarmorViewState *self);

/* Property "radiological": patient's left on the screen's right in axial
 * and coronal views (FALSE: neurological, right on the right). */
gboolean larmor_view_state_get_radiological(LarmorViewState *self);
void larmor_view_state_set_radiological(LarmorViewState *self, gboolean radiological);
/* Property "show-colorbar" (default TRUE): slice views draw a colour bar. */
gboolean larmor_view_state_get_show_colorbar(LarmorViewState *self);
void larmor_view_state_set_show_colorbar(LarmorViewState *self, gboolean show);

/* Property "frame": the frame of dynamic images the linked views show
 * (0-based; views clamp it to their image's frames, static images ignore
 * it), so linked views play a cine in step. */
int larmor_view_state_get_frame(LarmorViewState *self);
void larmor_view_state_set_frame(LarmorViewState *self, int frame);

/* Zoom 1 fits the slice to its view; pan in fractions of the drawn image. */
double larmor_view_state_get_zoom(LarmorViewState *self, LarmorOrientation o);
void larmor_view_state_get_pan(LarmorViewState *self, LarmorOrientation o, double *px, double *py);
void larmor_view_state_set_zoom_pan(LarmorViewState *self, LarmorOrientation o, double zoom,
                                    double px, double py);
void larmor_view_state_reset_zoom(LarmorViewState *self);

/* The region of interest the linked views share ("roi-changed" on
 * change), and the drawing tool (property "roi-tool"): NONE means a left
 * drag moves the cursor, RECT or ELLIPSE that it draws a ROI. */
void larmor_view_state_get_roi(LarmorViewState *self, LarmorRoi *roi);
void larmor_view_state_set_roi(LarmorViewState *self, const LarmorRoi *roi);
void larmor_view_state_clear_roi(LarmorViewState *self);
/* The noise region for SNR (larmor_roi_snr): a ROI set aside with
 * larmor_view_state_set_noise_roi ("roi-changed" too). */
void larmor_view_state_get_noise_roi(LarmorViewState *self, LarmorRoi *roi);
void larmor_view_state_set_noise_roi(LarmorViewState *self, const LarmorRoi *roi);
/* The line of the line-profile tool (tool LARMOR_ROI_LINE), "line-changed". */
void larmor_view_state_get_line(LarmorViewState *self, LarmorLine *line);
void larmor_view_state_set_line(LarmorViewState *self, const LarmorLine *line);
LarmorRoiShape larmor_view_state_get_roi_tool(LarmorViewState *self);
void larmor_view_state_set_roi_tool(LarmorViewState *self, LarmorRoiShape tool);

G_END_DECLS

#endif
