/* The encoding of a dynamic acquisition (docs/dynamic.md): frame t has its
 * own samples (lm_frames.h) and its own encoding E_t = F_t S
 * (lm_encoding.h: its trajectory, its Q and Toeplitz normal operator, the
 * shared coil maps), and the whole system is block diagonal over frames:
 *
 *   E = diag(E_1, ..., E_T),   E^H E = diag(E_1^H E_1, ..., E_T^H E_T)
 *
 * built from the encodings' own operators (lm_encoding_op,
 * lm_encoding_normal_op) with lm_linop_blockdiag. The unknown is T frames
 * of N voxels, frame-major, on the encodings' back end (one back end for
 * all frames: the variant's device). */
#ifndef LM_DYN_MODEL_H
#define LM_DYN_MODEL_H

#include "lm_frames.h"
#include "lm_linop.h"
#include "lm_types.h"

/* A frame's encoding (lm_encoding.h, inside the library): named here so
 * that the header reaches no further than the operators. */
typedef struct lm_encoding lm_encoding;

typedef struct lm_dyn_model lm_dyn_model;

typedef struct lm_dyn_model_desc {
    const lm_geom *geom;
    const lm_traj *traj;     /* every frame's samples, in frame order */
    const lm_kdata *kdata;   /* may be NULL (operators only) */
    const lm_sens *sens;     /* NULL: one coil, or for multi-coil data maps estimated from
                                every frame's samples together (the time-averaged data) */
    const lm_frames *frames;
    const char *variant;     /* kernel variant (NULL: "auto") */
    int use_cache;
    int threads;
} lm_dyn_model_desc;

/* Splits the data into frames and makes each frame's encoding; refuses a
 * frame without samples and maps of another matrix or channel count. */
lm_code lm_dyn_model_new(const lm_dyn_model_desc *d, lm_dyn_model **out, lm_error *err);
void lm_dyn_model_free(lm_dyn_model *m);

int64_t lm_dyn_model_frames(const lm_dyn_model *m);
/* The coil maps in use (given or estimated; NULL: one coil), and whether
 * they were estimated. */
const lm_sens *lm_dyn_model_sens(const lm_dyn_model *m);
int lm_dyn_model_sens_estimated(const lm_dyn_model *m);
int64_t lm_dyn_model_voxels(const lm_dyn_model *m); /* per frame */
const lm_geom *lm_dyn_model_geom(const lm_dyn_model *m);
lm_backend *lm_dyn_model_backend(const lm_dyn_model *m);
lm_encoding *lm_dyn_model_encoding(const lm_dyn_model *m, int64_t t);
/* Frame t's samples and k-space (borrowed). */
const lm_traj *lm_dyn_model_traj(const lm_dyn_model *m, int64_t t);
const lm_kdata *lm_dyn_model_kdata(const lm_dyn_model *m, int64_t t);

/* A model over some of every frame's readouts (whole readouts: spokes,
 * interleaves; a frame without a readout length is cut into equal runs):
 * those r of frame t for which keep(user, t, r) is non-zero. Same geometry,
 * coil maps (borrowed from m: free the subset first) and kernel variant.
 * Refuses a frame that keeps nothing. For cross-validation
 * (lm_dyn_lambda.h). */
typedef int (*lm_dyn_keep_fn)(void *user, int64_t frame, int64_t readout);
/* The readouts of frame t as lm_dyn_model_subset counts them. */
int64_t lm_dyn_model_readouts(const lm_dyn_model *m, int64_t t);
lm_code lm_dyn_model_subset(const lm_dyn_model *m, lm_dyn_keep_fn keep, void *user, lm_dyn_model **out,
                            lm_error *err);

/* E and E^H E as operators (borrowed: freed with m); the normal operator
 * makes every frame's Q on first use (on a GPU when it is made: the frames
 * then share one Toeplitz scratch, and their FFT(Q) stay resident or
 * stream, lm_dyn_budget.h). */
lm_code lm_dyn_model_op(lm_dyn_model *m, lm_linop **out, lm_error *err);
lm_code lm_dyn_model_normal(lm_dyn_model *m, lm_linop **out, lm_error *err);
/* GPU: whether the frames' FFT(Q) stream through two device slots instead
 * of staying resident (lm_dyn_budget.h; decided by lm_dyn_model_normal),
 * and the uploads into the slots so far. 0 on the CPU. */
int lm_dyn_model_q_streamed(const lm_dyn_model *m);
long long lm_dyn_model_q_uploads(const lm_dyn_model *m);
/* b = E^H d (T N values on the back end): every frame's adjoint. */
lm_code lm_dyn_model_adjoint(lm_dyn_model *m, lm_cfloat *b, lm_error *err);
/* The same, made once and kept by the model (borrowed): every solve on a
 * model starts from it (cross-validation trials, live re-solves). */
lm_code lm_dyn_model_ehd(lm_dyn_model *m, const lm_cfloat **out, lm_error *err);
/* The mean over frames of the encodings' mean diagonals (lm_encoding_diag). */
double lm_dyn_model_diag(const lm_dyn_model *m);

#endif
