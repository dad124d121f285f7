/* Dynamic phantoms (docs/dynamic.md, docs/conventions.md section 4): the
 * Shepp-Logan head (2D or 3D) with two more ellipses (ellipsoids) that
 * change over the acquisition, a "heart" that pulsates (its semi-axes scale
 * by 1 + 0.3 sin(2 pi 2 tau), two beats) and a "bowel" that moves (its centre
 * shifts by 0.12 sin(2 pi tau) phantom units along x), tau the fraction
 * of the acquisition elapsed. The k-space of every spoke is the exact
 * transform of the phantom at that spoke's time through the synthetic coil
 * maps (lm_coils_synth.h): no inverse crime, and motion within a frame is
 * in the data as it would be in a scan. The truth of frame f is the phantom
 * at the frame's centre time, sub-voxel averaged.
 *
 *   D128c8  2D 128^2, 8 coils, golden-angle radial (full spokes of 128
 *           samples, 111.25 degrees apart in acquisition order), 21 spokes
 *           per frame, 24 frames, TR 4 ms (84 ms frames)
 *   D64c8   3D 64^3, 8 coils, golden-angle stack of stars: 64 Cartesian kz
 *           partitions, each spoke angle acquired on every partition in turn,
 *           21 spokes per frame, 8 frames, TR 4 ms */
#ifndef LM_DYNAMIC_PHANTOM_H
#define LM_DYNAMIC_PHANTOM_H

#include <stdint.h>

#include "lm_frames.h"
#include "lm_phantom.h"
#include "lm_types.h"

typedef struct lm_dyn_problem_def {
    const char *name;
    int dim;                   /* 2 or 3 */
    int64_t n;                 /* matrix n^dim */
    int64_t coils;
    int64_t readout;           /* samples per spoke */
    int64_t spokes_per_frame;  /* spoke angles per frame */
    int64_t frames;
    double tr_ms;              /* time per spoke (per partition in 3D) */
    double noise;              /* relative sigma (lm_noise_add), 0: none */
} lm_dyn_problem_def;

const lm_dyn_problem_def *lm_dyn_problem_find(const char *name); /* NULL when unknown */
size_t lm_dyn_problem_count(void);
const lm_dyn_problem_def *lm_dyn_problem_at(size_t i);

/* The phantom at acquisition fraction tau in [0, 1]: dim's Shepp-Logan
 * plus the moving and pulsating ellipses. */
void lm_dyn_phantom_at(int dim, double tau, lm_phantom *out);

/* Builds the problem: geometry (FOV 240 mm), trajectory (frames in order),
 * k-space of every coil, maps, the truth (frames x N, frame-major; NULL to
 * skip it) and the frames (duration set). */
lm_code lm_dyn_problem_make(const lm_dyn_problem_def *def, lm_geom *g, lm_traj **traj, lm_kdata **kdata,
                            lm_sens **sens, lm_cfloat **truth, lm_frames **frames, lm_error *err);

/* The frame-averaged truth (frames x N, frame-major): each frame the mean
 * of the phantom at `samples` times spread evenly over the frame (midpoints
 * of equal sub-intervals; samples = spokes per frame gives each spoke's
 * time in 2D). The data move within a frame, so this is the image the
 * frame's samples see on average; the centre-time truth above is the other
 * score. samples >= 1; 1 gives the centre-time truth. */
lm_code lm_dyn_truth_averaged(const lm_dyn_problem_def *def, const lm_geom *g, int64_t samples, lm_cfloat **truth,
                              lm_error *err);

#endif
