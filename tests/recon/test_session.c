/* Reconstruction sessions (lm_recon_session.h) on B32: a session's cold
 * solve is lm_recon_run's image; after lambda moves (a few warm-started
 * preview solves, then one to convergence) the image equals a fresh
 * lm_recon_run at the final lambda; E^H d and Q are made once over every
 * solve; the quadratic priors, root-sum-of-squares channels and tv (ADMM)
 * go through it; bad calls fail with a message. */
#include <string.h>

#include "lm_metrics.h"
#include "lm_recon_session.h"
#include "lm_test.h"
#include "lm_trajgen.h"

/* Converged: CG's relative residual below TOL. SAME is float32 CG's
 * attainable agreement here, not a loose guess: two solves of one system
 * from different starts (zero, or the previous lambda's image) stop
 * 1.0e-3 .. 1.6e-3 apart (identity at lambda 0.1), and neither restarting
 * CG from the true residual, nor a tolerance of 1e-9 or 1000 more
 * iterations, nor the exact Q (cpu-simd instead of cpu-nufft) narrows it:
 * the normal operator's float rounding (~1e-6 of ||A x||) times the
 * system's condition number (~1e3). Cold solves from zero agree to 6e-5 because they share their
 * rounding path. The image's error against the truth is 48 %. */
#define TOL 1e-6
#define MAX_ITERS 1000
#define SAME 5e-3

typedef struct cancel_at {
    int iter;
} cancel_at;

static int cancel_progress(void *user, const lm_progress *p)
{
    const cancel_at *c = user;
    return p->stage == LM_STAGE_CG && p->iter == c->iter;
}

/* A fresh lm_recon_run at o with lambda and reg changed. */
static lm_volume *fresh(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_recon_opts *o, double lambda,
                        lm_reg_kind reg, int iters, double tol)
{
    lm_recon_opts f = *o;
    f.lambda = lambda;
    f.reg = reg;
    f.iters = iters;
    f.tol = tol;
    lm_recon_result r;
    lm_error err = {0};
    CHECK_OK(lm_recon_run(g, t, k, &f, &r, &err), &err);
    lm_volume *img = r.image;
    r.image = NULL;
    lm_recon_result_clear(&r);
    return img;
}

/* The slider moves 0.01 -> 0.03 -> 0.06 (previews: 5 warm iterations
 * each) -> final (to convergence, warm); the last image against a fresh
 * run at final. */
static void live_sequence(lm_recon_session *s, const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                          const lm_recon_opts *o, lm_reg_kind reg, double final, const char *what)
{
    lm_error err = {0};
    const int64_t nv = lm_recon_session_voxels(s);
    lm_volume *img = lm_recon_session_new_image(s, &err);
    CHECK(img != NULL && nv == lm_geom_voxels(g));
    if (!img)
        return;
    lm_session_solve_opts p;
    lm_session_solve_opts_init(&p, s);
    p.reg = reg;
    lm_session_report rep;
    const double preview[2] = {0.03, 0.06};
    for (int i = 0; i < 2; i++) {
        p.lambda = preview[i];
        p.iters = 5;
        p.tol = 0;
        p.warm_start = 1;
        CHECK_OK(lm_recon_session_solve(s, &p, img->data, &rep, &err), &err);
        CHECK(rep.iters_done == 5);
    }
    p.lambda = final;
    p.iters = MAX_ITERS;
    p.tol = TOL;
    CHECK_OK(lm_recon_session_solve(s, &p, img->data, &rep, &err), &err);
    CHECK(rep.warm == 1 && rep.fhd_count == 1 && rep.q_count == 1);
    const int warm_iters = rep.iters_done;
    lm_volume *ref = fresh(g, t, k, o, final, reg, MAX_ITERS, TOL);
    if (ref) {
        const double d = lm_rel_error_c(img->data, ref->data, nv);
        fprintf(stderr, "%s: live lambda -> %g: %d warm iterations; relative difference to a fresh run %.2e\n",
                what, final, warm_iters, d);
        CHECK_MSG(d < SAME, "%s: live result differs from a fresh solve by %.3g", what, d);
    }
    /* The same solve from cold takes more iterations than the warm one and
     * is the fresh run's image (the GUI's final solve when the slider stops). */
    p.warm_start = 0;
    CHECK_OK(lm_recon_session_solve(s, &p, img->data, &rep, &err), &err);
    CHECK_MSG(rep.warm == 0 && rep.iters_done > warm_iters, "%s: cold %d vs warm %d iterations", what,
              rep.iters_done, warm_iters);
    if (ref)
        CHECK_MSG(lm_rel_error_c(img->data, ref->data, nv) < 1e-6, "%s: cold session solve %.3g from a fresh run",
                  what, lm_rel_error_c(img->data, ref->data, nv));
    lm_volume_free(ref);
    lm_volume_free(img);
}

static void test_bad_calls(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_recon_opts *o)
{
    lm_error err = {0};
    lm_recon_session *s = NULL;
    lm_recon_opts bad = *o;
    bad.method = LM_METHOD_GRID_KB;
    CHECK(lm_recon_session_new(g, t, k, &bad, &s, &err) == LM_ERR_INVALID && s == NULL);
    CHECK(strstr(err.msg, "session") != NULL);
    bad = *o;
    bad.lambda = NAN;
    CHECK(lm_recon_session_new(g, t, k, &bad, &s, &err) == LM_ERR_INVALID && s == NULL);

    CHECK_OK(lm_recon_session_new(g, t, k, o, &s, &err), &err);
    if (!s)
        return;
    lm_cfloat *out = calloc((size_t)lm_geom_voxels(g), sizeof *out);
    lm_session_solve_opts p;
    lm_session_solve_opts_init(&p, s);
    p.iters = 3;
    /* Cancelled before CG's first step: nothing to warm-start from yet. */
    cancel_at c0 = {0};
    p.progress = cancel_progress;
    p.progress_user = &c0;
    CHECK(lm_recon_session_solve(s, &p, out, NULL, &err) == LM_ERR_CANCELLED);
    p.progress = NULL;
    p.warm_start = 1;
    lm_session_report r0;
    CHECK_OK(lm_recon_session_solve(s, &p, out, &r0, &err), &err);
    CHECK(r0.warm == 0 && r0.iters_done == 3);
    p.warm_start = 0;
    p.lambda = NAN;
    CHECK(lm_recon_session_solve(s, &p, out, NULL, &err) == LM_ERR_INVALID && strstr(err.msg, "lambda"));
    p.lambda = -1;
    CHECK(lm_recon_session_solve(s, &p, out, NULL, &err) == LM_ERR_INVALID);
    p.lambda = 0.01;
    p.iters = -2;
    CHECK(lm_recon_session_solve(s, &p, out, NULL, &err) == LM_ERR_INVALID && strstr(err.msg, "iteration"));
    p.iters = 3;
    p.reg = LM_REG_ANATOMICAL_EDGES; /* made without a reference: no weights */
    CHECK(lm_recon_session_solve(s, &p, out, NULL, &err) == LM_ERR_INVALID && strstr(err.msg, "weights"));
    p.reg = LM_REG_IDENTITY;
    CHECK(lm_recon_session_solve(s, &p, NULL, NULL, &err) == LM_ERR_INVALID);
    /* Cancelled at iteration 2: an error, and the session solves on (warm). */
    cancel_at c = {2};
    p.progress = cancel_progress;
    p.progress_user = &c;
    CHECK(lm_recon_session_solve(s, &p, out, NULL, &err) == LM_ERR_CANCELLED);
    p.progress = NULL;
    lm_session_report rep;
    p.warm_start = 1;
    CHECK_OK(lm_recon_session_solve(s, &p, out, &rep, &err), &err);
    CHECK(rep.warm == 1 && rep.iters_done == 3);
    lm_recon_session_free(&s);
    CHECK(s == NULL);
    CHECK(lm_recon_session_solve(s, &p, out, NULL, &err) == LM_ERR_INVALID && strstr(err.msg, "freed"));
    CHECK(lm_recon_session_voxels(s) == 0 && lm_recon_session_new_image(s, &err) == NULL);
    lm_recon_session_free(&s); /* twice: nothing */
    lm_recon_session_free(NULL);
    free(out);
}

int main(void)
{
    lm_error err = {0};
    const lm_problem_def *def = lm_problem_find("B32", &err);
    if (!def)
        LM_TEST_SKIP("no B32 problem: %s", err.msg);
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *truth = NULL;
    CHECK_OK(lm_problem_make(def, &g, &t, &k, &truth, &err), &err);
    if (!t || !k || !truth)
        return lm_test_finish("session");
    const int64_t nv = lm_geom_voxels(&g);
    lm_recon_opts o;
    lm_recon_opts_init(&o); /* auto variant: cpu-nufft here */

    /* lm_recon_run_session: the run's image, and a session that solves the
     * same system to the same image (one code path). */
    lm_recon_result r;
    lm_recon_session *s = NULL;
    lm_traj *tc = lm_traj_new(t->m, t->ndim, &err);
    if (!tc)
        return lm_test_finish("session");
    memcpy(tc->k, t->k, (size_t)t->m * 3 * sizeof *t->k);
    CHECK_OK(lm_recon_run_session(&g, tc, k, &o, &r, &s, &err), &err);
    /* The run's inputs may go: the session owns its copies (ASan sees a
     * use after free otherwise). */
    memset(tc->k, 0xff, (size_t)t->m * 3 * sizeof *t->k);
    lm_traj_free(tc);
    if (!s || !r.image)
        return lm_test_finish("session");
    lm_cfloat *out = calloc((size_t)nv, sizeof *out);
    lm_session_solve_opts p;
    lm_session_solve_opts_init(&p, s);
    CHECK(p.lambda == o.lambda && p.iters == o.iters && p.reg == o.reg);
    lm_session_report rep;
    CHECK_OK(lm_recon_session_solve(s, &p, out, &rep, &err), &err);
    CHECK(rep.fhd_count == 1 && rep.q_count == 1 && rep.solves == 2 && rep.iters_done == o.iters);
    CHECK_MSG(lm_rel_error_c(out, r.image->data, nv) < 1e-6, "session cold solve %.3g from lm_recon_run",
              lm_rel_error_c(out, r.image->data, nv));
    CHECK(lm_recon_session_bytes(s) > 8.0 * (double)nv);
    lm_recon_result_clear(&r);
    live_sequence(s, &g, t, k, &o, LM_REG_IDENTITY, 0.1, "identity");
    live_sequence(s, &g, t, k, &o, LM_REG_GRADIENT, 0.05, "gradient");
    CHECK_OK(lm_recon_session_solve(s, &p, out, &rep, &err), &err);
    CHECK(rep.fhd_count == 1 && rep.q_count == 1 && rep.solves > 6);
    lm_recon_session_free(&s);

    /* Anatomical edges with the truth as reference: the session registers
     * it once (as lm_recon_run) and keeps the weights. */
    lm_recon_opts oa = o;
    oa.reg = LM_REG_ANATOMICAL_EDGES;
    oa.lambda = 0.05;
    oa.ref = truth;
    CHECK_OK(lm_recon_session_new(&g, t, k, &oa, &s, &err), &err);
    if (s) {
        live_sequence(s, &g, t, k, &oa, LM_REG_ANATOMICAL_EDGES, 0.2, "anatomical-edges");
        lm_recon_session_free(&s);
    }

    /* Two channels by root-sum-of-squares: one E^H d per channel, kept. */
    lm_kdata *k2 = lm_kdata_new(k->m, 2, &err);
    for (int64_t j = 0; k2 && j < k->m; j++) {
        k2->d[j] = k->d[j];
        k2->d[k->m + j] = 2 * k->d[j];
    }
    lm_recon_opts orss = o;
    orss.combine = LM_COMBINE_RSS;
    CHECK_OK(lm_recon_session_new(&g, t, k2, &orss, &s, &err), &err);
    if (s) {
        live_sequence(s, &g, t, k2, &orss, LM_REG_IDENTITY, 0.1, "rss");
        lm_recon_session_free(&s);
    }

    /* tv (ADMM): a cold session solve is lm_recon_run's image. */
    lm_recon_opts otv = o;
    otv.reg = LM_REG_TV;
    otv.lambda = 0.02;
    otv.iters = 10;
    CHECK_OK(lm_recon_session_new(&g, t, k, &otv, &s, &err), &err);
    lm_volume *tv = fresh(&g, t, k, &otv, otv.lambda, LM_REG_TV, otv.iters, 0);
    if (s && tv) {
        lm_session_solve_opts_init(&p, s);
        CHECK(p.reg == LM_REG_TV);
        CHECK_OK(lm_recon_session_solve(s, &p, out, &rep, &err), &err);
        CHECK_MSG(lm_rel_error_c(out, tv->data, nv) < 1e-6, "tv session %.3g from lm_recon_run",
                  lm_rel_error_c(out, tv->data, nv));
        /* and warm-started at another lambda it runs */
        p.lambda = 0.05;
        p.warm_start = 1;
        CHECK_OK(lm_recon_session_solve(s, &p, out, &rep, &err), &err);
        CHECK(rep.warm == 1 && rep.iters_done == otv.iters);
    }
    lm_volume_free(tv);
    lm_recon_session_free(&s);

    test_bad_calls(&g, t, k, &o);

    free(out);
    lm_kdata_free(k2);
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_volume_free(truth);
    return lm_test_finish("session");
}
