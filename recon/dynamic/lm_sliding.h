/* Real-time reconstruction by a sliding window: frame f is the SENSE
 * reconstruction of the acquisitions [f STEP, f STEP + WINDOW) of a
 * continuous 2D acquisition (golden-angle radial streamed spoke by spoke),
 *
 *   (E_f^H E_f + lambda d I) x_f = E_f^H d_f,
 *
 * by CG warm-started from x_{f-1} (neighbouring windows share most of their
 * spokes, so a few iterations reach what a cold start needs many for).
 * Golden-angle windows never repeat: a Toeplitz kernel Q per window would
 * cost more than it saves, so E_f^H E_f is applied as the NUFFT pair
 * (E_f then E_f^H, cpu-nufft or gpu-nufft) on a plan made per window.
 * Coil maps are estimated once, from the first window (the time-averaged
 * data of WINDOW spokes), unless given; with compress the channels are
 * first reduced to virtual coils planned on that window (every
 * application costs one NUFFT pair per coil).
 *
 * The same calls serve a stream (api/lm_mrd_server.c: a frame as soon as
 * its STEP-th acquisition arrives) and a file (lm_sliding_run: every frame
 * of a recorded acquisition), so a streamed frame equals the offline one. */
#ifndef LM_SLIDING_H
#define LM_SLIDING_H

#include "lm_types.h"

typedef struct lm_sliding_opts {
    const char *variant;   /* any variant, through lm_sliding_variant */
    int iters;             /* CG iterations per frame (0: LM_SLIDING_ITERS_DEFAULT) */
    double lambda;         /* Tikhonov weight, relative (lm_recon.h) */
    int threads;           /* CPU threads, 0: all cores */
    int compress;          /* virtual coils (SVD of the first window's data, lm_coils.h):
                              0 none, K, or -1 the fewest keeping 99 % of the energy */
} lm_sliding_opts;

#define LM_SLIDING_ITERS_DEFAULT 8

typedef struct lm_sliding lm_sliding;

typedef struct lm_sliding_report {
    int iters;             /* CG iterations run */
    double rel_resid;      /* ||E^H d - A x|| / ||E^H d|| after them */
    double time_s;         /* the frame's reconstruction, seconds */
} lm_sliding_report;

/* g: the image grid (2D or 3D); sens: coil maps on g (borrowed, must
 * outlive s) or NULL to estimate them from the first frame's data. */
lm_code lm_sliding_new(const lm_geom *g, const lm_sens *sens, const lm_sliding_opts *o, lm_sliding **out,
                       lm_error *err);
/* The next frame from the window's samples (t, k: every coil): image gets N
 * values (host). The first frame starts from 0, each later one from the
 * frame before. */
lm_code lm_sliding_frame(lm_sliding *s, const lm_traj *t, const lm_kdata *k, lm_cfloat *image,
                         lm_sliding_report *rep, lm_error *err);
/* The coil maps in use (NULL before the first frame of a multi-coil
 * reconstruction without given maps, or with one coil). */
const lm_sens *lm_sliding_sens(const lm_sliding *s);
void lm_sliding_free(lm_sliding *s);

/* Frames of a whole recorded acquisition: readout samples per acquisition,
 * nacq = t->m / readout acquisitions, frames f = 0 .. (nacq - window) /
 * step, frame f from acquisitions [f step, f step + window). images gets
 * frames x N values (malloc'd, the caller frees). */
lm_code lm_sliding_run(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_sens *sens, int64_t readout,
                       int window, int step, const lm_sliding_opts *o, lm_cfloat **images, int64_t *frames,
                       lm_error *err);
/* Checks WINDOW:STEP (1 <= step, 1 <= window, step <= window is not
 * required: frames may leave acquisitions out). */
lm_code lm_sliding_check(int window, int step, lm_error *err);
/* Parses "WINDOW:STEP" (acquisitions, 1 to 100000 each); one line in err. */
lm_code lm_sliding_parse(const char *text, int *window, int *step, lm_error *err);
/* The NUFFT variant frames use for a requested one: itself when it is a
 * NUFFT, else its device's (gpu-nufft for a GPU variant); cpu-nufft for
 * NULL or auto. Golden-angle windows never repeat, so no direct sum or Q. */
const char *lm_sliding_variant(const char *requested);

#endif
