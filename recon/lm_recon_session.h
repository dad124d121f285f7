/* A reconstruction session: what lm_recon_run builds for one data set and
 * options before it solves (the coils prepared, the encoding operator with
 * its Q on the variant's device, E^H d on the same device, the anatomical
 * prior's edge weights), kept so that later solves at another lambda or
 * regulariser cost only the solve (docs/session.md). A solve builds the
 * small system E^H E + lambda d W^H W (or the ADMM prior) on the kept
 * normal operator and may warm-start from the previous solution: it
 * converges to the same image as a fresh lm_recon_run with those settings.
 *
 * lm_recon_run itself builds a session and solves once (one code path).
 * CG only (lm_method LM_METHOD_CG); a session is used by one thread at a
 * time. */
#ifndef LM_RECON_SESSION_H
#define LM_RECON_SESSION_H

#include "lm_recon.h"

typedef struct lm_recon_session lm_recon_session;

/* Validates like lm_recon_run, prepares the coils, makes the encoding, Q
 * and E^H d, and for either anatomical regulariser with o->ref the edge
 * weights (pilot and registration as lm_recon_run). o->progress gets the
 * stages COILS, Q, FHD (and CG for the pilot); o's pointers (ref, sens,
 * noise, fieldmap, the trajectory) are copied or used only here: the
 * session owns what it keeps. lambda_auto and prior_influence are
 * lm_recon_run's; the session ignores them. */
lm_code lm_recon_session_new(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_recon_opts *o,
                             lm_recon_session **out, lm_error *err);

/* lm_recon_run, handing over the session it solved with (CG only; *keep
 * is NULL for other methods and on failure). The session owns copies of
 * the trajectory, coil maps and field map, so res and the inputs may go. */
lm_code lm_recon_run_session(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_recon_opts *o,
                             lm_recon_result *res, lm_recon_session **keep, lm_error *err);

/* Frees the session and sets *s to NULL (so a later solve with it fails
 * with a message instead of touching freed memory). NULL or *s NULL: nothing. */
void lm_recon_session_free(lm_recon_session **s);

/* One solve's settings. */
typedef struct lm_session_solve_opts {
    double lambda;              /* >= 0, relative as lm_recon_opts.lambda */
    lm_reg_kind reg;
    const float *weights;       /* either anatomical kind: 3N edge weights (lm_reg_anatomical_weights);
                                   NULL: the session's own (made from lm_recon_opts.ref) */
    int iters;                  /* CG iterations, or ADMM outer iterations for tv and wavelet */
    double tol;                 /* stop when ||r|| / ||b|| < tol (ADMM: both residuals); 0: all */
    int warm_start;             /* start from the previous solve's solution (when there is one) */
    lm_progress_fn progress;    /* stage CG, as lm_recon_run; may cancel */
    void *progress_user;
} lm_session_solve_opts;

/* The session's options: lambda, reg, iters and tol as it was made with,
 * cold start, no progress. */
void lm_session_solve_opts_init(lm_session_solve_opts *p, const lm_recon_session *s);

typedef struct lm_session_report {
    int iters_done;             /* CG (ADMM outer) iterations; rss: the last channel's */
    double rel_resid;
    int warm;                   /* started from the previous solution */
    double time_s;              /* this solve (system, CG, download) */
    int fhd_count, q_count;     /* E^H d and Q computations over the session's life (1 and 1) */
    int solves;                 /* solves so far, this one included (lm_recon_run's pilot counts) */
} lm_session_report;

/* Solves at p's settings into out (host, lm_recon_session_voxels values; the
 * image as lm_recon_result.image: complex, or root-sum-of-squares over the
 * channels). rep may be NULL. A cancelled solve (LM_ERR_CANCELLED) keeps its
 * iterate as the next warm start. */
lm_code lm_recon_session_solve(lm_recon_session *s, const lm_session_solve_opts *p, lm_cfloat *out,
                               lm_session_report *rep, lm_error *err);

int64_t lm_recon_session_voxels(const lm_recon_session *s);
/* A zero image with the session's grid (voxel size, affine), for out. */
lm_volume *lm_recon_session_new_image(const lm_recon_session *s, lm_error *err);
/* Bytes the session holds (host and device), for callers that keep several. */
double lm_recon_session_bytes(const lm_recon_session *s);
/* The options it was made with (pointers cleared). */
const lm_recon_opts *lm_recon_session_opts(const lm_recon_session *s);

#endif
