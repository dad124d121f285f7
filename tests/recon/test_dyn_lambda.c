/* The automatic temporal weight (lm_dyn_lambda.h) and the subsets it is
 * built on (lm_dyn_model_subset):
 *  - a subset and its complement partition every frame's samples, readout
 *    by readout, with the k-space of those readouts unchanged;
 *  - a frame that keeps nothing is refused, and so is --lambda auto on
 *    frames of a single readout;
 *  - on a small noisy dynamic problem, the weight cross-validation chooses
 *    reconstructs within 10 % of the least error over the weights it tried
 *    (each solved on all the data and scored against the truth), and its
 *    held-out scores are not flat (the choice is informed). */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_dyn_lambda.h"
#include "dyn_problem.h"
#include "lm_dynamic_phantom.h"
#include "lm_metrics.h"
#include "lm_test.h"
#include "lm_trajgen.h"

typedef struct sel {
    int64_t period;
    int held;
} sel;

static int keep(void *user, int64_t t, int64_t r)
{
    const sel *s = user;
    const int in = (r + t) % s->period == 0;
    return s->held ? in : !in;
}

static int keep_none(void *user, int64_t t, int64_t r) { return t != 1; }

/* Frames of the subset together with those of its complement hold exactly
 * the model's samples, readout by readout. */
static void check_partition(const lm_dyn_model *m, const lm_dyn_model *a, const lm_dyn_model *b, int64_t period)
{
    for (int64_t t = 0; t < lm_dyn_model_frames(m); t++) {
        const lm_traj *tm = lm_dyn_model_traj(m, t), *ta = lm_dyn_model_traj(a, t), *tb = lm_dyn_model_traj(b, t);
        const lm_kdata *km = lm_dyn_model_kdata(m, t), *ka = lm_dyn_model_kdata(a, t), *kb = lm_dyn_model_kdata(b, t);
        const int64_t R = tm->readout;
        CHECK(ta->m + tb->m == tm->m);
        CHECK(ta->readout == R && tb->readout == R);
        int64_t ia = 0, ib = 0, bad = 0;
        for (int64_t r = 0; r < tm->m / R; r++) {
            const int held = (r + t) % period == 0;
            const lm_traj *to = held ? tb : ta;
            const lm_kdata *ko = held ? kb : ka;
            int64_t *i = held ? &ib : &ia;
            bad += memcmp(to->k + 3 * *i, tm->k + 3 * r * R, (size_t)R * 3 * sizeof *tm->k) != 0;
            for (int64_t c = 0; c < km->ncoils; c++)
                bad += memcmp(ko->d + c * ko->m + *i, km->d + c * km->m + r * R, (size_t)R * sizeof *km->d) != 0;
            *i += R;
        }
        CHECK(bad == 0);
        CHECK(ia == ta->m && ib == tb->m);
    }
}

int main(void)
{
    lm_error err = {0};
    /* 2D 48^2, 4 coils, 12 golden-angle spokes in each of 8 frames, 5 % noise */
    const lm_dyn_problem_def def = {.name = "D48c4", .dim = 2, .n = 48, .coils = 4, .readout = 48,
                                    .spokes_per_frame = 12, .frames = 8, .tr_ms = 4.0};
    dyn_problem P;
    CHECK_OK(dyn_problem_make(&def, &P, &err), &err);
    if (!P.t)
        return lm_test_finish("test_dyn_lambda");
    CHECK_OK(lm_noise_add(P.k, 0.05, 7, &err), &err);
    P.g.basis = LM_DYN_BASIS_DEFAULT;
    lm_dyn_model *m = NULL;
    lm_dyn_model_desc d = {.geom = &P.g, .traj = P.t, .kdata = P.k, .sens = P.s, .frames = P.f, .variant = "cpu-nufft"};
    CHECK_OK(lm_dyn_model_new(&d, &m, &err), &err);
    if (!m)
        return lm_test_finish("test_dyn_lambda");

    /* partition */
    sel fit = {.period = 5, .held = 0}, held = {.period = 5, .held = 1};
    lm_dyn_model *a = NULL, *b = NULL;
    CHECK_OK(lm_dyn_model_subset(m, keep, &fit, &a, &err), &err);
    CHECK_OK(lm_dyn_model_subset(m, keep, &held, &b, &err), &err);
    if (a && b)
        check_partition(m, a, b, 5);
    lm_dyn_model_free(a);
    lm_dyn_model_free(b);
    for (int64_t tt = 0; tt < lm_dyn_model_frames(m); tt++)
        CHECK(lm_dyn_model_readouts(m, tt) == def.spokes_per_frame);

    /* refusals */
    lm_dyn_model *none = NULL;
    CHECK(lm_dyn_model_subset(m, keep_none, NULL, &none, &err) == LM_ERR_INVALID && !none);
    CHECK(strstr(err.msg, "frame 1 keeps no samples") != NULL);
    fprintf(stderr, "expected: %s\n", err.msg);
    {
        lm_frames *f1 = NULL;
        /* 8 frames of one 48-sample readout each */
        CHECK_OK(lm_frames_equal(8 * 48, 8, &f1, &err), &err);
        lm_traj tt = *P.t;
        tt.m = 8 * 48;
        lm_kdata kk = *P.k;
        lm_dyn_model_desc d1 = d;
        d1.traj = &tt;
        d1.frames = f1;
        d1.kdata = NULL;
        lm_dyn_model *m1 = NULL;
        /* the k-space's channels are m samples apart: copy the first 384 of each */
        lm_kdata *k1 = lm_kdata_new(tt.m, P.k->ncoils, &err);
        for (int64_t c = 0; k1 && c < P.k->ncoils; c++)
            memcpy(k1->d + c * tt.m, kk.d + c * P.k->m, (size_t)tt.m * sizeof *k1->d);
        d1.kdata = k1;
        CHECK_OK(lm_dyn_model_new(&d1, &m1, &err), &err);
        lm_dyn_opts o1;
        lm_dyn_opts_init(&o1);
        lm_dyn_cv_report rep1;
        CHECK(m1 && lm_dyn_lambda_cv(m1, &o1, &rep1, &err) == LM_ERR_INVALID);
        CHECK(strstr(err.msg, "at least 2 readouts") != NULL);
        fprintf(stderr, "expected: %s\n", err.msg);
        lm_dyn_model_free(m1);
        lm_kdata_free(k1);
        lm_frames_free(f1);
    }

    /* the choice against the truth */
    lm_dyn_opts o;
    lm_dyn_opts_init(&o);
    lm_dyn_cv_report rep;
    CHECK_OK(lm_dyn_lambda_cv(m, &o, &rep, &err), &err);
    const int64_t n = def.frames * lm_geom_voxels(&P.g);
    double best = INFINITY, smin = INFINITY, smax = 0;
    for (int i = 0; i < rep.trials; i++) {
        lm_dyn_result r = {0};
        o.lambda_t = rep.lambdas[i];
        CHECK_OK(lm_dyn_solve(m, &o, &r, &err), &err);
        const double e = r.x ? lm_rel_error_c(r.x, P.truth, n) : INFINITY;
        fprintf(stderr, "trial lambda %-8.4g held-out %.4g  error %.2f %%\n", rep.lambdas[i], rep.scores[i], 100 * e);
        best = fmin(best, e);
        smin = fmin(smin, rep.scores[i]);
        smax = fmax(smax, rep.scores[i]);
        lm_dyn_result_clear(&r);
    }
    CHECK(rep.trials >= 3);
    CHECK(smax > 1.2 * smin);
    lm_dyn_result r = {0};
    o.lambda_auto = 1;
    CHECK_OK(lm_dyn_solve(m, &o, &r, &err), &err);
    CHECK_NEAR(r.lambda_t, rep.lambda, 1e-12 * rep.lambda);
    CHECK(r.solves == rep.trials + 1);
    const double e = r.x ? lm_rel_error_c(r.x, P.truth, n) : INFINITY;
    fprintf(stderr, "auto lambda %.4g: error %.2f %% (least over the trials %.2f %%)\n", r.lambda_t, 100 * e,
            100 * best);
    CHECK(e <= 1.1 * best);
    lm_dyn_result_clear(&r);

    lm_dyn_model_free(m);
    dyn_problem_free(&P);
    return lm_test_finish("test_dyn_lambda");
}
