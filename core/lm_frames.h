/* Frames of a dynamic (time-resolved) acquisition: which samples belong to
 * which frame. Samples of one frame are contiguous (BART's time dimension
 * 10 is the slowest, and a continuous acquisition is binned in order), so
 * a frame is the half-open sample range [start[t], start[t + 1]) of the
 * trajectory and of every channel of the k-space.
 *
 * A static acquisition has no frames (lm_acq.frames NULL); one frame list
 * describes every way a dynamic one comes about: a cfl with frames in
 * dimension 10, or a continuous acquisition binned by spoke count or by
 * acquisition time. */
#ifndef LM_FRAMES_H
#define LM_FRAMES_H

#include <stdint.h>

#include "lm_types.h"

/* BART's TIME_DIM: cfl traj [3, samples, spokes, 1, ..., frames] and
 * kspace [1, samples, spokes, coils, 1, ..., frames]. */
#define LM_CFL_TIME_DIM 10

typedef struct lm_frames {
    int64_t count;       /* T >= 1 */
    int64_t *start;      /* count + 1 sample offsets, start[0] = 0, start[count] = m */
    double duration_s;   /* one frame's duration in seconds, 0 when unknown */
} lm_frames;

void lm_frames_free(lm_frames *f);
/* Samples of frame t. */
static inline int64_t lm_frames_samples(const lm_frames *f, int64_t t) { return f->start[t + 1] - f->start[t]; }

/* T frames of m / T samples each (m divisible by T: a cfl's dimension 10). */
lm_code lm_frames_equal(int64_t m, int64_t frames, lm_frames **out, lm_error *err);
/* Binning by count: spokes_per_frame spokes (readout samples each) per
 * frame, whole spokes only (a last partial frame is dropped, so every frame
 * sees the same sampling density); at least one whole frame. */
lm_code lm_frames_by_spokes(int64_t m, int64_t readout, int64_t spokes_per_frame, lm_frames **out, lm_error *err);
/* Binning into `frames` frames of floor(spokes / frames) spokes each. */
lm_code lm_frames_by_count(int64_t m, int64_t readout, int64_t frames, lm_frames **out, lm_error *err);
/* Binning by acquisition time: spoke_time[s] (seconds, non-decreasing) of
 * nspokes spokes of readout samples; frames windows of equal duration over
 * [first, last + the mean spacing]. A window with no spoke is refused
 * ("frame t has no samples"). duration_s is set to the window. */
lm_code lm_frames_by_time(const double *spoke_time, int64_t nspokes, int64_t readout, int64_t frames,
                          lm_frames **out, lm_error *err);
/* Checks f against m samples (offsets increasing, every frame non-empty,
 * within m); what names the data in the message. */
lm_code lm_frames_check(const lm_frames *f, int64_t m, const char *what, lm_error *err);

/* A frame whose k-space is zero in every channel holds no samples (BART
 * marks samples not acquired by zeros): refused, naming what and the frame. */
lm_code lm_frames_check_kdata(const lm_frames *f, const lm_kdata *k, const char *what, lm_error *err);

/* Frame t's part of a trajectory (k, weights, times) and of k-space (every
 * channel): new copies. Either out pointer may be NULL. */
lm_code lm_frames_extract(const lm_frames *f, int64_t t, const lm_traj *traj, const lm_kdata *k, lm_traj **traj_out,
                          lm_kdata **k_out, lm_error *err);

#endif
