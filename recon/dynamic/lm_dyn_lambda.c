/* Automatic temporal weight by k-space cross-validation (lm_dyn_lambda.h). */
#include "lm_dyn_lambda.h"

#include <complex.h>
#include <math.h>

typedef struct fold {
    int64_t folds;   /* groups */
    int held;        /* keep the held-out group (1) or the rest (0) */
} fold;

/* Group of readout r of frame t: staggered, so that every frame holds out
 * a different set of its spokes' angles. */
static int keep_readout(void *user, int64_t t, int64_t r)
{
    const fold *f = user;
    const int in_group = (r + t) % f->folds == 0;
    return f->held ? in_group : !in_group;
}

static double kdata_power(const lm_dyn_model *m)
{
    double s = 0;
    for (int64_t t = 0; t < lm_dyn_model_frames(m); t++) {
        const lm_kdata *k = lm_dyn_model_kdata(m, t);
        for (int64_t i = 0; i < k->m * k->ncoils; i++)
            s += (double)crealf(k->d[i]) * crealf(k->d[i]) + (double)cimagf(k->d[i]) * cimagf(k->d[i]);
    }
    return s;
}

/* The held-out relative prediction error of a reconstruction from fit at
 * lattice point j (lambda = 10^(j / LM_DYN_CV_STEPS)). */
static lm_code trial(lm_dyn_model *fit, lm_dyn_model *held, double held_power, const lm_dyn_opts *o, int j,
                     double *lambda, double *score, lm_error *err)
{
    lm_dyn_opts to = *o;
    to.lambda_auto = 0;
    to.watch = NULL;
    to.lambda_t = *lambda = pow(10.0, (double)j / LM_DYN_CV_STEPS);
    lm_dyn_result r = {0};
    lm_code rc = lm_dyn_solve(fit, &to, &r, err);
    double resid = 0;
    if (rc == LM_OK)
        rc = lm_dyn_residual(held, r.x, &resid, err);
    lm_dyn_result_clear(&r);
    *score = held_power > 0 ? resid / held_power : 0;
    return rc;
}

/* The vertex of the parabola through (-1, a), (0, b), (1, c), within a
 * half step of 0 (b is the least of the three). */
static double vertex(double a, double b, double c)
{
    const double curv = a - 2 * b + c;
    if (!(curv > 0))
        return 0;
    const double v = 0.5 * (a - c) / curv;
    return v < -0.5 ? -0.5 : v > 0.5 ? 0.5 : v;
}

lm_code lm_dyn_lambda_cv(const lm_dyn_model *m, const lm_dyn_opts *o, lm_dyn_cv_report *rep, lm_error *err)
{
    *rep = (lm_dyn_cv_report){0};
    /* fewer readouts than groups: one readout per frame held out */
    int64_t folds = LM_DYN_CV_FOLDS;
    for (int64_t t = 0; t < lm_dyn_model_frames(m); t++)
        if (lm_dyn_model_readouts(m, t) < folds)
            folds = lm_dyn_model_readouts(m, t);
    if (folds < 2)
        return lm_fail(err, LM_ERR_INVALID,
                       "dynamic reconstruction: --lambda auto needs at least 2 readouts in every frame");
    fold fit_sel = {.folds = folds, .held = 0}, held_sel = {.folds = folds, .held = 1};
    lm_dyn_model *fit = NULL, *held = NULL;
    lm_code rc = lm_dyn_model_subset(m, keep_readout, &fit_sel, &fit, err);
    if (rc == LM_OK)
        rc = lm_dyn_model_subset(m, keep_readout, &held_sel, &held, err);
    if (rc != LM_OK) {
        lm_dyn_model_free(fit);
        return rc;
    }
    const double power = kdata_power(held);
    const int jlo = (int)floor(log10(LM_DYN_CV_LO) * LM_DYN_CV_STEPS + 0.5);
    const int jhi = (int)floor(log10(LM_DYN_CV_HI) * LM_DYN_CV_STEPS + 0.5);
    const int j0 = (int)floor(log10(LM_DYN_CV_START) * LM_DYN_CV_STEPS + 0.5);
    /* score[j - jlo] on the lattice, NAN until tried */
    double score[64];
    for (int i = 0; i < 64; i++)
        score[i] = NAN;
    int best = j0;
    /* walk downhill from the start, one lattice step at a time, until both
     * neighbours of the best are scored (or the range ends) */
    for (int j = j0; rc == LM_OK && rep->trials < LM_DYN_CV_MAX_TRIALS;) {
        if (isnan(score[j - jlo])) {
            double lam;
            rc = trial(fit, held, power, o, j, &lam, &score[j - jlo], err);
            if (rc != LM_OK)
                break;
            rep->lambdas[rep->trials] = lam;
            rep->scores[rep->trials] = score[j - jlo];
            rep->trials++;
            if (score[j - jlo] < score[best - jlo] || isnan(score[best - jlo]))
                best = j;
        }
        if (best > jlo && isnan(score[best - 1 - jlo]))
            j = best - 1;
        else if (best < jhi && isnan(score[best + 1 - jlo]))
            j = best + 1;
        else
            break;
    }
    if (rc == LM_OK) {
        double v = 0;
        if (best > jlo && best < jhi && !isnan(score[best - 1 - jlo]) && !isnan(score[best + 1 - jlo]))
            v = vertex(score[best - 1 - jlo], score[best - jlo], score[best + 1 - jlo]);
        rep->lambda = pow(10.0, ((double)best + v) / LM_DYN_CV_STEPS);
        rep->score = score[best - jlo];
    }
    lm_dyn_model_free(held);
    lm_dyn_model_free(fit);
    return rc;
}
