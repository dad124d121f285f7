/* The automatic temporal weight of a dynamic reconstruction (--lambda auto;
 * docs/dynamic.md, "Automatic weight"): k-space cross-validation.
 *
 * Every frame's readouts are dealt into LM_DYN_CV_FOLDS groups (fewer when
 * a frame has fewer readouts), staggered from frame to frame; one group is
 * held out. The frames are reconstructed
 * from the rest at trial weights, exactly as the final run will be (same
 * prior, iterations and start), and each trial is scored by how well it
 * predicts the held-out readouts: ||E_B x - d_B||^2 / ||d_B||^2. The weight
 * that predicts best is taken.
 *
 * Why not the discrepancy principle the static priors use: 21 spokes per
 * frame leave most of k-space unmeasured, and the image error lives there
 * (aliasing), where a residual at the measured samples cannot see it. A
 * held-out readout is exactly such an unmeasured place: its prediction
 * error rises with aliasing at small weights and with temporal blurring at
 * large ones. It needs no noise estimate, so the model error of a
 * discretised object counts as what it is. */
#ifndef LM_DYN_LAMBDA_H
#define LM_DYN_LAMBDA_H

#include "lm_dyn_recon.h"

/* One held-out group in LM_DYN_CV_FOLDS: the trials see the rest. The
 * trials' weight is biased up by the readouts they lack (fewer spokes
 * alias more); holding out 1 in 5 chose 0.11 on noise-free D128c8, 8.85 %
 * against the best 7.83 %; 1 in 10 chose 0.053, 8.08 %, and 1 in 21 the
 * same (BENCHMARKS.md, "Dynamic"). */
#define LM_DYN_CV_FOLDS 10
/* Trial weights lie on a lattice of LM_DYN_CV_STEPS per decade; the walk
 * starts at LM_DYN_CV_START and stays within [LM_DYN_CV_LO, LM_DYN_CV_HI]. */
#define LM_DYN_CV_STEPS 2
#define LM_DYN_CV_START 0.01
#define LM_DYN_CV_LO 1e-5
#define LM_DYN_CV_HI 100.0
#define LM_DYN_CV_MAX_TRIALS 12

typedef struct lm_dyn_cv_report {
    double lambda;      /* the chosen relative temporal weight */
    double score;       /* held-out relative prediction error at the best trial */
    int trials;         /* trial solves */
    double lambdas[LM_DYN_CV_MAX_TRIALS], scores[LM_DYN_CV_MAX_TRIALS];
} lm_dyn_cv_report;

/* Chooses o->lambda_t for m (its k-space, o's prior and iterations);
 * o->lambda_auto is ignored. */
lm_code lm_dyn_lambda_cv(const lm_dyn_model *m, const lm_dyn_opts *o, lm_dyn_cv_report *rep, lm_error *err);

#endif
