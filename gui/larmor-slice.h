/* Slices of a complex volume as the viewer shows them: plane extraction
 * (magnitude, phase, real or imaginary) and the nearest-neighbour resample
 * onto screen pixels. Plain C, no GTK: tested and timed on its own.
 *
 * Orientation (voxel axes x, y, z as stored, x fastest):
 *   axial     horizontal x, vertical y, normal z
 *   coronal   horizontal x, vertical z, normal y
 *   sagittal  horizontal y, vertical z, normal x
 * Planes are stored with row 0 = vertical index 0; on screen the vertical
 * index grows upwards (anterior/superior at the top, as in FSLeyes). */
#ifndef LARMOR_SLICE_H
#define LARMOR_SLICE_H

#include <stdint.h>

#include "larmor.h"

typedef enum {
    LARMOR_ORIENT_AXIAL = 0,
    LARMOR_ORIENT_CORONAL,
    LARMOR_ORIENT_SAGITTAL,
} LarmorOrientation;

typedef enum {
    LARMOR_MODE_MAGNITUDE = 0,
    LARMOR_MODE_PHASE,
    LARMOR_MODE_REAL,
    LARMOR_MODE_IMAGINARY,
} LarmorMode;

const char *larmor_orientation_name(LarmorOrientation o);
const char *larmor_mode_name(LarmorMode m);

/* In-plane horizontal (u) and vertical (v) axes and the normal axis. */
void larmor_orientation_axes(LarmorOrientation o, int *u, int *v, int *normal);

static inline float larmor_mode_value(lm_cfloat c, LarmorMode mode)
{
    switch (mode) {
    case LARMOR_MODE_PHASE: return cargf(c);
    case LARMOR_MODE_REAL: return crealf(c);
    case LARMOR_MODE_IMAGINARY: return cimagf(c);
    default: return cabsf(c);
    }
}

/* Where voxel axis `axis` points in the scanner (NIfTI RAS): the world
 * axis its affine column leans on most (0 x: left -> right, 1 y:
 * posterior -> anterior, 2 z: inferior -> superior; oblique volumes take
 * the dominant one) and the sign (+1 towards R, A or S). A zero column
 * counts as the identity's. */
void larmor_axis_direction(const double affine[4][4], int axis, int *world, int *sign);
/* "R", "L", "A", "P", "S" or "I": the side a direction points to. */
const char *larmor_direction_letter(int world, int sign);

/* How a slice view shows orientation o of a volume with this affine:
 * flip_u mirrors the horizontal axis, flip_v the vertical one (unflipped:
 * index grows rightwards and upwards). The left-right axis, when it is
 * horizontal, shows the patient's right on the screen's right
 * (neurological) or on its left (radiological); a vertical axis shows
 * anterior or superior at the top; other horizontal axes keep their
 * order. */
void larmor_view_flips(const double affine[4][4], LarmorOrientation o, int radiological, int *flip_u,
                       int *flip_v);

/* out: dims[u] x dims[v] floats; index clamped to the volume. */
void larmor_slice_extract(const lm_volume *vol, LarmorOrientation o, int64_t index, LarmorMode mode,
                          float *out);

/* Nearest-neighbour resample of a pw x ph image (row 0 = bottom on screen)
 * drawn at (ox, oy) with size iw x ih device pixels, into the dst_w x dst_h
 * region starting at device pixel (dx, dy). dst rows are dst_stride pixels. */
void larmor_slice_resample(const uint32_t *src, int pw, int ph, double ox, double oy, double iw,
                           double ih, uint32_t *dst, int dx, int dy, int dst_w, int dst_h,
                           int dst_stride);

#endif
