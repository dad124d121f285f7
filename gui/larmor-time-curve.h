/* The time-intensity curve of a region of interest in a dynamic image
 * (perfusion, cine): the ROI's mean magnitude in every frame against time
 * (the frame's centre, frame 0 at half a frame; the frame index when the
 * duration is unknown), measured by the library (lm_frame_stats), with the
 * shared view state's frame marked. It follows the state's ROI and the
 * image's appended frames, and writes its CSV (frame, time_s, mean, sd)
 * atomically. */
#ifndef LARMOR_TIME_CURVE_H
#define LARMOR_TIME_CURVE_H

#include <gtk/gtk.h>

#include "larmor-view-state.h"
#include "larmor-volume.h"

G_BEGIN_DECLS

#define LARMOR_TYPE_TIME_CURVE (larmor_time_curve_get_type())
G_DECLARE_FINAL_TYPE(LarmorTimeCurve, larmor_time_curve, LARMOR, TIME_CURVE, GtkWidget)

GtkWidget *larmor_time_curve_new(LarmorViewState *state);
void larmor_time_curve_set_volume(LarmorTimeCurve *self, LarmorVolume *volume);
/* Frames measured (0: no curve: a static image, no ROI, or a ROI off the image). */
int64_t larmor_time_curve_get_frames(LarmorTimeCurve *self);
/* Frame t's mean and SD (n - 1) of the magnitude in the ROI. */
gboolean larmor_time_curve_get_point(LarmorTimeCurve *self, int64_t t, double *mean, double *sd);
/* The CSV text: a header, then one line per frame (g_free); NULL without a curve. */
char *larmor_time_curve_to_csv(LarmorTimeCurve *self);
/* Writes it atomically (temporary file, rename). */
gboolean larmor_time_curve_save_csv(LarmorTimeCurve *self, const char *path, GError **error);

G_END_DECLS

#endif
