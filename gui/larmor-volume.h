/* A complex volume shown by the viewers: owns one lm_volume, with a display
 * name and cached display statistics. Immutable once made, so worker
 * threads and views may share it by reference.
 *
 * A dynamic image is one volume with frames: frame 0 is the volume itself
 * (what every 3D consumer sees), frames 1.. follow on the same grid. Frames
 * are only ever added, at the end (larmor_volume_append_frame, main thread:
 * a series growing while it is shown, as streamed real-time frames do), and
 * each frame's data never change once added, so a worker holding a frame's
 * pointer keeps reading valid data. */
#ifndef LARMOR_VOLUME_H
#define LARMOR_VOLUME_H

#include <glib-object.h>

#include "larmor-slice.h"
#include "larmor.h"

G_BEGIN_DECLS

#define LARMOR_TYPE_VOLUME (larmor_volume_get_type())
G_DECLARE_FINAL_TYPE(LarmorVolume, larmor_volume, LARMOR, VOLUME, GObject)

/* Takes ownership of vol. */
LarmorVolume *larmor_volume_new_take(lm_volume *vol, const char *name);
const lm_volume *larmor_volume_get_data(LarmorVolume *self);
const char *larmor_volume_get_name(LarmorVolume *self);
void larmor_volume_set_name(LarmorVolume *self, const char *name);
gboolean larmor_volume_same_grid(LarmorVolume *a, LarmorVolume *b);
/* Unique (never 0) per volume made in this process: what metrics were
 * computed against. */
guint larmor_volume_get_serial(LarmorVolume *self);

/* Default window and level for a display mode, from the image's own
 * histogram: magnitude [p1, p99.5] of |v| (robust percentiles: a few hot
 * voxels or a large background do not set it), phase [-pi, pi], real and
 * imaginary symmetric about 0 up to the largest |part|. */
void larmor_volume_auto_window(LarmorVolume *self, LarmorMode mode, double *window, double *level);

/* Same dims and affines (within 1e-3 mm): the same voxels in the scanner. */
gboolean larmor_volume_same_world_grid(LarmorVolume *a, LarmorVolume *b);
/* self on ref's grid through both NIfTI affines (lm_resample: trilinear,
 * 0 outside self): a new reference to self when already on it, else the
 * resampled copy, cached on self for the last ref. NULL on failure. */
LarmorVolume *larmor_volume_aligned_to(LarmorVolume *self, LarmorVolume *ref);

/* a - b on the same grid (NULL if the grids differ). */
LarmorVolume *larmor_volume_new_difference(LarmorVolume *a, LarmorVolume *b, const char *name);

/* Value at a voxel, clamped to the volume. */
lm_cfloat larmor_volume_value_at(LarmorVolume *self, const int64_t ijk[3]);
/* Scanner coordinates (mm) of a voxel through the affine. */
void larmor_volume_voxel_to_mm(LarmorVolume *self, const int64_t ijk[3], double mm[3]);

/* A dynamic image of frames x N values (frame-major, lm_dyn_result.x) on
 * geom's grid (dims, voxel size, affine); frame_s: one frame's duration in
 * seconds (0: unknown). Copies x. NULL with the error on failure. */
LarmorVolume *larmor_volume_new_frames(const lm_volume *geom, const lm_cfloat *x, int64_t frames, double frame_s,
                                       const char *name, GError **error);
/* Frames: 1 for a static volume. */
int64_t larmor_volume_get_n_frames(LarmorVolume *self);
/* Frame t (clamped to the frames there are); frame 0 is get_data's. */
const lm_volume *larmor_volume_get_frame_data(LarmorVolume *self, int64_t t);
double larmor_volume_get_frame_s(LarmorVolume *self);
void larmor_volume_set_frame_s(LarmorVolume *self, double frame_s);
/* Adds frame (taken; on the volume's grid, else FALSE with the error and
 * frame freed) after the last and emits "frames-changed" (main thread). */
gboolean larmor_volume_append_frame(LarmorVolume *self, lm_volume *frame, GError **error);
/* What a widget following a volume's frames does: *slot takes a reference
 * to volume (NULL: none) and *handler moves from the old volume's
 * "frames-changed" to the new one's (on_changed(data), swapped). */
void larmor_volume_watch_frames(LarmorVolume **slot, gulong *handler, LarmorVolume *volume, GCallback on_changed,
                                gpointer data);
/* Every frame's values, frame-major, in one new buffer (g_free). */
lm_cfloat *larmor_volume_dup_frames(LarmorVolume *self, int64_t *frames);
/* Value at a voxel of frame t, clamped to the volume and the frames. */
lm_cfloat larmor_volume_value_at_frame(LarmorVolume *self, const int64_t ijk[3], int64_t t);

/* Object data on a run's image: its prior influence image (a LarmorVolume,
 * lm_recon_result.prior_influence), for the viewer's overlay. */
#define LARMOR_PRIOR_INFLUENCE_KEY "larmor-prior-influence"

G_END_DECLS

#endif
