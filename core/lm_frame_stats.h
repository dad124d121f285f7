/* Statistics of a region over the frames of a dynamic image: the
 * time-intensity curve of a region of interest (perfusion, cine). The
 * region is a list of voxel indices into one frame; each frame's mean and
 * sample SD (n - 1) of the magnitude are accumulated in double precision
 * (Welford's update, so a bright region of many voxels loses nothing to
 * cancellation). */
#ifndef LM_FRAME_STATS_H
#define LM_FRAME_STATS_H

#include <stdint.h>

#include "lm_error.h"
#include "lm_types.h"

/* x: frames x nvox values, frame-major. idx: n voxel indices (each in
 * [0, nvox)). mean and sd: frames values each (sd 0 for one voxel).
 * Refuses an empty region or an index outside the frame. */
lm_code lm_frame_stats(const lm_cfloat *x, int64_t frames, int64_t nvox, const int64_t *idx, int64_t n,
                       double *mean, double *sd, lm_error *err);

#endif
