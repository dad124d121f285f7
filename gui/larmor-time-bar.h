/* The time controls of a dynamic image under its slice views: play/pause,
 * a frame slider, the frame and its time, frames per second and loop.
 * The frame lives in a LarmorViewState ("frame"), so every view linked to
 * it (the viewer's three, the compare panels) shows the same frame. It
 * follows the image's frames as they are appended ("frames-changed"), and
 * hides itself for images of one frame. Playback is a main-loop timeout
 * at the chosen rate; at the last frame it wraps with Loop on, else stops. */
#ifndef LARMOR_TIME_BAR_H
#define LARMOR_TIME_BAR_H

#include <gtk/gtk.h>

#include "larmor-view-state.h"
#include "larmor-volume.h"

G_BEGIN_DECLS

#define LARMOR_TYPE_TIME_BAR (larmor_time_bar_get_type())
G_DECLARE_FINAL_TYPE(LarmorTimeBar, larmor_time_bar, LARMOR, TIME_BAR, GtkWidget)

#define LARMOR_TIME_BAR_FPS_DEFAULT 12.0

GtkWidget *larmor_time_bar_new(LarmorViewState *state);
/* The image whose frames it steps through (NULL or one frame: hidden). */
void larmor_time_bar_set_volume(LarmorTimeBar *self, LarmorVolume *volume);
void larmor_time_bar_set_playing(LarmorTimeBar *self, gboolean playing);
gboolean larmor_time_bar_get_playing(LarmorTimeBar *self);
void larmor_time_bar_set_fps(LarmorTimeBar *self, double fps);
double larmor_time_bar_get_fps(LarmorTimeBar *self);
void larmor_time_bar_set_loop(LarmorTimeBar *self, gboolean loop);
gboolean larmor_time_bar_get_loop(LarmorTimeBar *self);
/* One playback tick (what the timeout does; tests call it): the next
 * frame, wrapping with loop, else stopping at the last. */
void larmor_time_bar_tick(LarmorTimeBar *self);
/* "frame 2 (0–23) · 210 ms" as the bar shows it: 0-based, the frame's
 * centre time (g_free). */
char *larmor_time_bar_get_text(LarmorTimeBar *self);
/* "t 3 (0–23) · 252 ms" for a read-out: frame t of volume (NULL for a
 * static one; g_free). */
char *larmor_format_frame(LarmorVolume *volume, int64_t t);

G_END_DECLS

#endif
