/* A 2D constant-density Archimedean spiral-out readout with sample times,
 * for off-resonance problems (docs/conventions.md section 4; issue 11). Units: k in
 * cycles/FOV, times in seconds, t = 0 at each interleaf's first sample
 * (k = 0, the echo-time reference of a spiral-out readout).
 *
 * Geometry: interleaf l is k(theta) = b theta exp(i (theta + 2 pi l / L)),
 * 0 <= theta <= 2 pi turns, turns = kmax / L and b = kmax / (2 pi turns),
 * kmax = n/2: L interleaves whose rings are 1/FOV apart (radial Nyquist).
 *
 * Time law (what a gradient system can play, in the spirit of Glover, MRM
 * 42:412, 1999): the speed along the curve is
 *     v(theta) = min(v_max, sqrt(A rho_c(theta))),
 * rho_c the spiral's radius of curvature, so the centripetal acceleration
 * v^2 / rho_c stays below A; A = slew / sqrt(1.25) leaves room for the
 * tangential part (at most A/2 here), so |d^2k/dt^2| <= slew. v_max (the
 * gradient amplitude) is solved for so that the interleaf lasts exactly
 * the readout. Samples are uniform in time, dwell <= 1 / v_max, hence at
 * most 1/FOV apart along the curve; near the centre, where the slew limit
 * slows the trajectory, they are much closer.
 *
 * Physical units only enter through the FOV: the gradient G = v / (gamma
 * FOV) (gamma = 42.577 MHz/T) and the slew likewise. With the defaults
 * (FOV 240 mm, slew 150 T/m/s) a 128 matrix in 25 ms needs at least 3
 * interleaves: the slew limit alone keeps 1 or 2 interleaves at 58 or 29 ms.
 * 4 interleaves, the S128c8f problem's choice, take 12.8 mT/m, 3265 samples
 * each 7.66 us apart, slew-limited below |k| ~ 12 (8: 6.3 mT/m, 1616). */
#ifndef LM_SPIRAL_H
#define LM_SPIRAL_H

#include <stdint.h>

#include "lm_types.h"

#define LM_SPIRAL_GAMMA_HZ_T 42.577478e6 /* proton gamma / 2 pi */
#define LM_SPIRAL_SLEW_DEFAULT 150.0     /* T/m/s */
#define LM_SPIRAL_FOV_DEFAULT 240.0      /* mm */

typedef struct lm_spiral_opts {
    int64_t n;            /* in-plane matrix: kmax = n/2 (2..4096) */
    int64_t interleaves;  /* L >= 1 */
    double readout_s;     /* duration of one interleaf, first to last sample */
    double fov_mm;        /* 0: LM_SPIRAL_FOV_DEFAULT */
    double slew;          /* T/m/s, 0: LM_SPIRAL_SLEW_DEFAULT */
} lm_spiral_opts;

typedef struct lm_spiral_info {
    int64_t samples;      /* per interleaf (readout) */
    double dwell_s;       /* sample spacing in time */
    double vmax;          /* top speed along the curve, cycles/FOV per s */
    double gmax_mt_m;     /* the gradient amplitude that speed needs, mT/m */
    double r_slew;        /* |k| below which the slew limit sets the speed */
    double turns;         /* per interleaf */
} lm_spiral_info;

/* The trajectory (2D, t->t filled, t->readout = samples per interleaf,
 * interleaves one after another). info may be NULL. Fails with one line
 * when the readout is too short for the slew (or too long: more than 1 s or
 * 2^24 samples per interleaf). */
lm_code lm_spiral_make(const lm_spiral_opts *o, lm_traj **out, lm_spiral_info *info, lm_error *err);

/* Sample times for any trajectory of readouts of t->readout samples:
 * uniform over readout_s per readout (dwell readout_s / (readout - 1)),
 * t = 0 at the readout's sample nearest k = 0 (centre-out spokes and
 * spirals start at 0; full spokes and Cartesian lines are negative before
 * their echo). Allocates t->t if needed. */
lm_code lm_traj_times_uniform(lm_traj *t, double readout_s, lm_error *err);

#endif
