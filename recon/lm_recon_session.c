/* The CG half of the reconstruction (lm_recon_session.h): a session keeps
 * the encoding with Q, E^H d and the anatomical weights; each solve builds
 * only the regulariser's system. lm_recon_run's CG goes through here. */
#include "lm_recon_session.h"

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_admm.h"
#include "lm_cg.h"
#include "lm_encoding.h"
#include "lm_lambda.h"
#include "lm_encoding_cache_impl.h"
#include "lm_recon_impl.h"
#include "lm_register.h"
#include "lm_solver.h"
#include "lm_trace.h"

#define SESSION_MAGIC 0x4c4d5353u /* "LMSS" */

struct lm_recon_session {
    unsigned magic;
    lm_geom g;
    lm_recon_opts o;          /* as made; pointers cleared once used */
    lm_traj *traj_own;        /* copies when the session outlives its inputs */
    lm_sens *sens_own;
    float *fieldmap_own;
    const lm_sens *sens;      /* the maps of the model (SENSE), or NULL */
    lm_encoding *e;
    lm_encoding_cache *ecache; /* e is this cache's (lm_recon_opts.encodings), else the session's */
    int failed;               /* set-up failed: a cached e is dropped */
    lm_linop *normal;         /* the encoding's */
    int rss;                  /* channels solved one by one, combined by root-sum-of-squares */
    int64_t nv, nch;          /* voxels; right-hand sides (channels under rss, else 1) */
    lm_cfloat *b;             /* E^H d on the back end (rss: the channel being solved) */
    lm_cfloat *b_host;        /* rss: E^H d of every channel (nv x nch, host) */
    double *energy;           /* ||d||^2 per right-hand side */
    lm_cfloat *x;             /* the solution on the back end (warm starts) */
    lm_cfloat *x_host;        /* rss and kept: every channel's last solution (host) */
    int keep_x;               /* rss: keep x_host (sessions that live on) */
    int have_x;
    float *weights;           /* either anatomical kind: 3N edge weights, or NULL */
    int fhd_count, q_count, solves;
    lm_recon_result info;     /* lm_recon_session_new: the set-up's report (image: the grid) */
};

/* ---- systems ---------------------------------------------------------------- */

/* One CG system, E^H E + lambda s W^H W (weights fixed for the solve). */
typedef struct prior_ctx {
    lm_linop *normal;
    int64_t n[3];
    double lambda;
    lm_reg_kind kind;
    int iters;
    double tol;
    lm_linop *reg, *sys;
    lm_prior *admm;       /* tv, wavelet (lambda > 0): solved by ADMM on normal instead */
} prior_ctx;

static lm_code prior_build(prior_ctx *p, const float *weights, lm_error *err)
{
    lm_linop_free(p->sys); /* before the regulariser it sums */
    lm_linop_free(p->reg);
    p->sys = p->reg = NULL;
    return lm_system_new(p->normal, p->n, p->lambda, p->kind, weights, &p->reg, &p->sys, err);
}

static void prior_clear(prior_ctx *p)
{
    lm_linop_free(p->sys);
    lm_linop_free(p->reg);
    lm_prior_free(p->admm);
    p->sys = p->reg = NULL;
    p->admm = NULL;
}

static prior_ctx prior_for(const lm_recon_session *s, double lambda, lm_reg_kind kind, int iters, double tol)
{
    return (prior_ctx){.normal = s->normal, .n = {s->g.n[0], s->g.n[1], s->g.n[2]}, .lambda = lambda,
                       .kind = kind, .iters = iters, .tol = tol};
}

/* The system of p, or the ADMM prior for tv and wavelet at lambda > 0
 * (lambda 0: plain CG on E^H E, as for the others). */
static lm_code prior_make(lm_recon_session *s, prior_ctx *p, const float *weights, lm_error *err)
{
    if (p->kind == LM_REG_TV || p->kind == LM_REG_WAVELET)
        return p->lambda > 0 ? lm_prior_new(lm_encoding_backend(s->e), s->g.n, p->kind, &p->admm, err) : LM_OK;
    return prior_build(p, weights, err);
}

/* The 99th percentile of |x|: the image's bright tissue, robust to a few
 * noisy voxels (histogram of 4096 bins up to the maximum). */
static double robust_max(const lm_cfloat *x, int64_t n)
{
    double mx = 0;
    for (int64_t j = 0; j < n; j++)
        mx = fmax(mx, cabsf(x[j]));
    if (!(mx > 0))
        return 0;
    enum { NB = 4096 };
    int64_t *h = calloc(NB, sizeof *h);
    if (!h)
        return mx;
    for (int64_t j = 0; j < n; j++) {
        int b = (int)(cabsf(x[j]) / mx * (NB - 1));
        h[b < 0 ? 0 : b >= NB ? NB - 1 : b]++;
    }
    int64_t want = (int64_t)(0.99 * (double)n), acc = 0;
    int b = 0;
    for (; b < NB - 1 && acc + h[b] < want; b++)
        acc += h[b];
    free(h);
    return (b + 1) * mx / (NB - 1);
}

/* ADMM for the non-quadratic priors (lm_admm.h) on E^H E = N with b = E^H
 * d, lambda made absolute as lm_recon.h documents: lambda d s with d the
 * mean diagonal of N and s = RMS(b) / d the zero-filled image's RMS
 * intensity; rho (relative to d) likewise. */
static lm_code solve_admm(lm_linop *N, const lm_cfloat *b, const prior_ctx *pc, lm_cfloat *x, int warm,
                          const lm_recon_opts *o, lm_run_ctx *c, lm_cg_report *rep, lm_error *err)
{
    lm_backend *be = N->be;
    const double d = N->diag > 0 ? N->diag : 1;
    const double s = sqrt(be->dot(be, N->n_in, b, b) / (double)N->n_in) / d;
    lm_admm_params p = {
        .iters = pc->iters,
        .cg_iters = o->admm_cg_iters > 0 ? o->admm_cg_iters : LM_ADMM_CG_ITERS_DEFAULT,
        .lambda = pc->lambda * d * s,
        .rho = (o->admm_rho > 0 ? o->admm_rho : LM_ADMM_RHO_DEFAULT) * d,
        .adaptive = 1,
        .tol = pc->tol,
        .warm_start = warm,
        .monitor = lm_run_cg_monitor,
        .monitor_user = c,
    };
    lm_admm_report ar = {0};
    lm_code rc = be->check(be, err);
    if (rc == LM_OK && s == 0) {
        be->zero(be, N->n_in, x); /* no data: 0 is the minimiser */
        rc = be->check(be, err);
        rep->iters_done = 0;
        rep->rel_resid = 0;
        if (rc == LM_OK && !(rep->resid_history = lm_calloc(1, sizeof(double), err, "history")))
            rc = LM_ERR_NOMEM;
        return rc;
    }
    if (rc == LM_OK)
        rc = lm_admm(N, b, pc->admm, x, &p, &ar, err);
    rep->iters_done = ar.iters_done;
    rep->rel_resid = ar.rel_resid;
    rep->resid_history = ar.resid_history;
    return rc;
}

/* ---- solving ---------------------------------------------------------------- */

/* CG (or ADMM) on p with the session's b and x for right-hand side ch;
 * rho (host) gets the solution. */
static lm_code solve_one(lm_recon_session *s, prior_ctx *p, int64_t ch, int warm, lm_run_ctx *c,
                         lm_recon_result *res, lm_cfloat *rho, lm_cg_report *rep, int *iterated, lm_error *err)
{
    *iterated = 0;
    lm_backend *be = lm_encoding_backend(s->e);
    const size_t bytes = (size_t)s->nv * sizeof *rho;
    if (s->rss) {
        be->upload(be, s->b, s->b_host + ch * s->nv, bytes);
        if (warm)
            be->upload(be, s->x, s->x_host + ch * s->nv, bytes);
    }
    lm_code rc = be->check(be, err);
    c->d_energy = s->energy[ch];
    c->stage = LM_STAGE_CG;
    c->iters = p->iters;
    if (rc == LM_OK && lm_run_report(c, 0, 0, 1, s->energy[ch]))
        rc = lm_run_cancelled(err, c);
    if (rc != LM_OK)
        return rc;
    free(rep->resid_history);
    rep->resid_history = NULL;
    const double ts = lm_run_now();
    if (p->admm) {
        rc = solve_admm(s->normal, s->b, p, s->x, warm, c->o, c, rep, err);
    } else {
        lm_cg_params cp = {.iters = p->iters, .tol = p->tol, .warm_start = warm, .monitor = lm_run_cg_monitor,
                           .monitor_user = c};
        rc = lm_cg(p->sys ? p->sys : p->normal, s->b, s->x, &cp, rep, err);
    }
    lm_trace("iterations done");
    if (rc == LM_OK || rc == LM_ERR_CANCELLED) {
        /* a cancelled solve's iterate is still a fine warm start */
        *iterated = 1;
        lm_error e2 = {0};
        be->download(be, rho, s->x, bytes);
        lm_code rc2 = be->check(be, &e2);
        if (rc2 != LM_OK) {
            if (err)
                *err = e2;
            rc = rc2;
        }
    }
    if (res)
        res->time_cg_s += lm_run_now() - ts;
    return rc;
}

/* Solves p for every right-hand side: all coils at once (SENSE, or one
 * channel), or each channel on its own combined by root-sum-of-squares;
 * out (host, N) gets the image, coils (may be NULL) the coil images. */
static lm_code solve_all(lm_recon_session *s, prior_ctx *p, int warm, lm_run_ctx *c, lm_recon_result *res,
                         lm_cfloat *out, lm_sens *coils, lm_cg_report *rep, lm_error *err)
{
    const int64_t nv = s->nv;
    lm_code rc = LM_OK;
    warm = warm && s->have_x;
    s->solves++;
    if (!s->rss) {
        c->ncoils = 1;
        c->coil = 0;
        int iterated = 0;
        rc = solve_one(s, p, 0, warm, c, res, out, rep, &iterated, err);
        /* x holds an iterate (or, cancelled before CG, the previous one) */
        s->have_x = iterated || (rc == LM_ERR_CANCELLED && warm);
        for (int64_t ch = 0; rc == LM_OK && coils && ch < coils->ncoils; ch++)
            for (int64_t j = 0; j < nv; j++)
                coils->s[ch * nv + j] = s->sens->s[ch * nv + j] * out[j];
        return rc;
    }
    c->ncoils = (int)s->nch;
    if (s->keep_x && !s->x_host &&
        !(s->x_host = lm_alloc((size_t)(nv * s->nch), sizeof *s->x_host, err, "channel solutions")))
        return LM_ERR_NOMEM;
    warm = warm && s->x_host;
    double *rss = lm_calloc((size_t)nv, sizeof *rss, err, "channel combination");
    lm_cfloat *img = rss ? lm_alloc((size_t)nv, sizeof *img, err, "channel image") : NULL;
    rc = img ? LM_OK : LM_ERR_NOMEM;
    int64_t ch = 0;
    int iterated = 0;
    for (; ch < s->nch && rc == LM_OK; ch++) {
        c->coil = (int)ch;
        rc = solve_one(s, p, ch, warm, c, res, img, rep, &iterated, err);
        if (iterated && s->x_host)
            memcpy(s->x_host + ch * nv, img, (size_t)nv * sizeof *img);
        if (rc == LM_OK)
            lm_rss_add(rss, img, nv);
        if (rc == LM_OK && coils)
            memcpy(coils->s + ch * nv, img, (size_t)nv * sizeof *img);
    }
    /* every channel's iterate is a warm start only if each was reached */
    s->have_x = s->x_host && (rc == LM_OK || (rc == LM_ERR_CANCELLED && (warm || (ch == s->nch && iterated))));
    if (rc == LM_OK)
        for (int64_t j = 0; j < nv; j++)
            out[j] = CMPLXF((float)sqrt(rss[j]), 0.0f);
    free(rss), free(img);
    return rc;
}

/* ---- building ----------------------------------------------------------------- */

static lm_code copy_inputs(lm_recon_session *s, const lm_traj *t, const lm_sens *sens, const float *fieldmap,
                           lm_error *err)
{
    lm_traj *tc = lm_traj_new(t->m, t->ndim, err);
    if (!tc)
        return LM_ERR_NOMEM;
    s->traj_own = tc;
    memcpy(tc->k, t->k, (size_t)t->m * 3 * sizeof *tc->k);
    tc->readout = t->readout;
    if (t->w && !(tc->w = lm_alloc((size_t)t->m, sizeof *tc->w, err, "trajectory weights")))
        return LM_ERR_NOMEM;
    if (t->w)
        memcpy(tc->w, t->w, (size_t)t->m * sizeof *tc->w);
    if (t->t && !(tc->t = lm_alloc((size_t)t->m, sizeof *tc->t, err, "sample times")))
        return LM_ERR_NOMEM;
    if (t->t)
        memcpy(tc->t, t->t, (size_t)t->m * sizeof *tc->t);
    if (sens && !(s->sens_own = lm_sens_copy(sens, err)))
        return LM_ERR_NOMEM;
    if (fieldmap && !(s->fieldmap_own = lm_alloc((size_t)s->nv, sizeof *s->fieldmap_own, err, "field map")))
        return LM_ERR_NOMEM;
    if (fieldmap)
        memcpy(s->fieldmap_own, fieldmap, (size_t)s->nv * sizeof *fieldmap);
    return LM_OK;
}

static void session_destroy(lm_recon_session *s)
{
    if (!s)
        return;
    if (s->e) {
        lm_backend *be = lm_encoding_backend(s->e);
        if (s->b)
            be->release(be, s->b);
        if (s->x)
            be->release(be, s->x);
    }
    if (s->ecache) /* normal is the encoding's */
        lm_encoding_cache_release(s->ecache, s->e, s->failed);
    else
        lm_encoding_free(s->e);
    free(s->b_host), free(s->x_host), free(s->energy), free(s->weights);
    lm_traj_free(s->traj_own);
    lm_sens_free(s->sens_own);
    free(s->fieldmap_own);
    lm_recon_result_clear(&s->info);
    s->magic = 0;
    free(s);
}

/* E^H d of every right-hand side, once. */
static lm_code compute_fhd(lm_recon_session *s, const lm_kdata *k, lm_run_ctx *c, lm_ctl *ctl,
                           lm_recon_result *res, lm_error *err)
{
    lm_backend *be = lm_encoding_backend(s->e);
    const int64_t nv = s->nv, m = k->m;
    s->b = be->alloc(be, nv, "E^H d");
    s->x = be->alloc(be, nv, "CG solution");
    s->energy = lm_calloc((size_t)s->nch, sizeof *s->energy, err, "channel energies");
    lm_code rc = s->energy ? be->check(be, err) : LM_ERR_NOMEM;
    if (rc == LM_OK && s->rss &&
        !(s->b_host = lm_alloc((size_t)(nv * s->nch), sizeof *s->b_host, err, "E^H d of the channels")))
        rc = LM_ERR_NOMEM;
    c->stage = LM_STAGE_FHD;
    c->ncoils = (int)s->nch;
    /* the channels' energies (the progress reports' scale) outside E^H d's time */
    for (int64_t ch = 0; ch < s->nch && rc == LM_OK; ch++)
        for (int64_t j = 0; j < (s->rss ? 1 : k->ncoils); j++)
            s->energy[ch] += lm_channel_energy(k->d + (s->rss ? ch : j) * m, m);
    const double ts = lm_run_now();
    for (int64_t ch = 0; ch < s->nch && rc == LM_OK; ch++) {
        const lm_kdata one = s->rss ? (lm_kdata){.m = m, .ncoils = 1, .d = k->d + ch * m} : *k;
        c->coil = (int)ch;
        rc = lm_encoding_adjoint(s->e, &one, s->b, ctl, err);
        if (rc == LM_OK && s->rss)
            be->download(be, s->b_host + ch * nv, s->b, (size_t)nv * sizeof *s->b);
        if (rc == LM_OK)
            rc = be->check(be, err);
    }
    res->time_fhd_s += lm_run_now() - ts;
    if (rc == LM_OK)
        s->fhd_count++;
    return rc;
}

/* The pilot reconstruction: gradient prior, a few iterations; the
 * registration's fixed image and the first edges of LM_REG_ANATOMICAL. */
static lm_code pilot_solve(lm_recon_session *s, lm_run_ctx *c, lm_recon_result *res, lm_volume **out,
                           lm_error *err)
{
    prior_ctx pilot = prior_for(s, LM_PILOT_LAMBDA, LM_REG_GRADIENT, LM_PILOT_ITERS, c->o->tol);
    const double t0 = lm_run_now(), t_cg = res->time_cg_s;
    lm_volume *pv = lm_volume_copy(res->image, err);
    lm_cg_report rep = {0};
    lm_code rc = pv ? prior_build(&pilot, NULL, err) : LM_ERR_NOMEM;
    if (rc == LM_OK)
        rc = solve_all(s, &pilot, 0, c, res, pv->data, NULL, &rep, err);
    free(rep.resid_history);
    prior_clear(&pilot);
    /* counted once, as the reference's placement */
    res->time_cg_s = t_cg;
    res->time_register_s += lm_run_now() - t0;
    if (rc != LM_OK) {
        lm_volume_free(pv);
        return rc;
    }
    *out = pv;
    return LM_OK;
}

/* A reference whose file stored no geometry (BART cfl) covers the
 * reconstruction's field of view, as in BART: on its very grid when the
 * matrices agree, else with voxels scaled to span the same extent about the
 * same centre. The view shares the reference's data. */
static lm_volume ref_view(const lm_volume *ref, const lm_volume *image)
{
    lm_volume v = *ref;
    if (!ref->no_geometry)
        return v;
    double s[3];
    for (int a = 0; a < 3; a++) {
        s[a] = (double)image->dims[a] / (double)ref->dims[a];
        v.voxel_mm[a] = image->voxel_mm[a] * s[a];
    }
    /* image index = s (i - n_ref/2) + n_image/2 */
    for (int r = 0; r < 4; r++) {
        double off = image->affine[r][3];
        for (int a = 0; a < 3; a++) {
            v.affine[r][a] = image->affine[r][a] * s[a];
            off += image->affine[r][a] * ((double)(image->dims[a] / 2) - s[a] * (double)(ref->dims[a] / 2));
        }
        v.affine[r][3] = off;
    }
    v.no_geometry = 0;
    return v;
}

/* The reference on the reconstruction grid, aligned: the transform given,
 * or one registered to the pilot, or none (the affines alone). A
 * registration that ends where the reference barely covers the image, or
 * shares next to no information with it, failed: refused, never used. */
static lm_code place_reference(const lm_geom *g, const lm_volume *pv, lm_run_ctx *c, lm_recon_result *res,
                               lm_volume **ref_grid, lm_error *err)
{
    const lm_recon_opts *o = c->o;
    const double t0 = lm_run_now();
    const lm_volume ref = ref_view(o->ref, res->image);
    lm_code rc = LM_OK;
    lm_rigid t = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    if (o->ref_transform_given)
        t = o->ref_transform;
    lm_register_centre(res->image, t.centre_mm);
    if (!o->ref_transform_given && o->ref_register) {
        lm_register_report rr = {0};
        rc = lm_register_rigid(pv, &ref, NULL, &t, &rr, err);
        if (rc != LM_OK && err) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            rc = lm_fail(err, rc, "anatomical reference: %s", msg);
        }
        if (rc == LM_OK && (rr.covered < LM_REF_MIN_COVERED || rr.mi_end < LM_REF_MIN_MI))
            rc = lm_fail(err, LM_ERR_INVALID, "anatomical reference: registration failed (it ends with the reference "
                         "covering %.0f %% of the image and %.3f nats of mutual information); reconstruct with "
                         "--no-register, or give the reference as NIfTI with its affine", 100 * rr.covered,
                         rr.mi_end);
        res->ref_registered = rc == LM_OK;
        res->ref_mi_start = rr.mi_start;
        res->ref_mi_end = rr.mi_end;
        res->ref_evals = rr.evals;
    }
    if (rc == LM_OK) {
        double m[4][4];
        lm_rigid_matrix(&t, m);
        res->ref_transform = t;
        rc = lm_resample(&ref, g->n, res->image->voxel_mm, res->image->affine, m, LM_OUTSIDE_NEAREST, ref_grid,
                         err);
    }
    res->ref_used = rc == LM_OK;
    res->time_register_s += lm_run_now() - t0;
    return rc;
}

/* The anatomical priors' edge weights: the reference placed (registered to
 * a pilot by default) and, for LM_REG_ANATOMICAL, the pilot's own edges. */
static lm_code make_weights(lm_recon_session *s, lm_run_ctx *c, lm_recon_result *res, lm_error *err)
{
    const lm_recon_opts *o = c->o;
    const lm_geom *g = &s->g;
    lm_volume *ref_grid = NULL, *pilot = NULL;
    lm_code rc = LM_OK;
    /* The pilot: the registration's image, and the data's own edges for
     * LM_REG_ANATOMICAL. */
    const int data_edges = o->reg == LM_REG_ANATOMICAL;
    if ((!o->ref_transform_given && o->ref_register) || data_edges)
        rc = pilot_solve(s, c, res, &pilot, err);
    if (rc == LM_OK)
        rc = place_reference(g, pilot, c, res, &ref_grid, err);
    if (rc == LM_OK)
        rc = lm_reg_anatomical_weights(ref_grid, g->n, o->edge_frac > 0 ? o->edge_frac : LM_EDGE_FRAC_DEFAULT,
                                       &s->weights, err);
    /* Joint edges: the reference's, times the half-quadratic weight of
     * the Lorentzian at the pilot's (smoothed) differences, so an edge
     * the data show and the reference lacks is let through
     * (docs/priors.md). In place: the weights are per difference. */
    const double kappa =
        rc == LM_OK && data_edges ? (o->data_edge > 0 ? o->data_edge : LM_DATA_EDGE) * robust_max(pilot->data, s->nv)
                                  : 0;
    if (rc == LM_OK && data_edges && kappa > 0)
        rc = lm_reg_robust_weights(g->n, s->weights, LM_ROBUST_LORENTZIAN, kappa,
                                   o->data_edge_sigma > 0 ? o->data_edge_sigma : LM_DATA_EDGE_SIGMA, pilot->data,
                                   s->weights, o->threads, err);
    lm_volume_free(ref_grid);
    lm_volume_free(pilot);
    return rc;
}

/* The session for prepared coils: encoding, Q, E^H d, weights (when asked). */
static lm_code session_build(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_sens *sens,
                             const lm_recon_opts *o, int own, int weighted, lm_run_ctx *c, lm_ctl *ctl,
                             lm_recon_result *res, lm_recon_session **out, lm_error *err)
{
    *out = NULL;
    lm_recon_session *s = lm_calloc(1, sizeof *s, err, "reconstruction session");
    if (!s)
        return LM_ERR_NOMEM;
    s->magic = SESSION_MAGIC;
    s->g = *g;
    s->o = *o;
    s->rss = k->ncoils > 1 && !sens;
    s->nv = lm_geom_voxels(g);
    s->nch = s->rss ? k->ncoils : 1;
    s->keep_x = own;
    s->sens = s->rss ? NULL : sens;
    const lm_traj *tu = t;
    const float *fm = o->fieldmap;
    lm_code rc = LM_OK;
    if (own) {
        rc = copy_inputs(s, t, s->sens, o->fieldmap, err);
        tu = s->traj_own;
        fm = s->fieldmap_own;
        if (s->sens)
            s->sens = s->sens_own;
    }
    if (rc != LM_OK) {
        session_destroy(s);
        return rc;
    }
    lm_encoding_desc d = {.geom = g, .traj = tu, .sens = s->sens, .variant = o->variant, .fieldmap = fm,
                          .segments = o->segments, .use_cache = o->use_cache, .threads = o->threads};
    double t_prep = lm_run_now();
    if (o->encodings && !s->sens) {
        rc = lm_encoding_cache_get(o->encodings, &d, &s->e, &res->encoding_cached, err);
        s->ecache = rc == LM_OK ? o->encodings : NULL;
    } else {
        rc = lm_encoding_new(&d, &s->e, err);
    }
    res->time_prep_s += lm_run_now() - t_prep;
    lm_trace("encoding made");
    if (rc != LM_OK) {
        session_destroy(s);
        return rc;
    }
    res->segments = lm_encoding_segments(s->e, &res->segment_error);
    const lm_variant *vx = lm_encoding_exact_variant(s->e);
    if (vx && vx != lm_encoding_variant(s->e)) {
        const size_t len = strlen(res->note);
        snprintf(res->note + len, sizeof res->note - len, "%sexact off-resonance sums by %s (%s is a NUFFT)",
                 len ? "; " : "", vx->name, lm_encoding_variant(s->e)->name);
    }
    res->combine = s->rss ? LM_COMBINE_RSS : LM_COMBINE_SENSE;
    res->fhd_pairs = (double)t->m * (double)s->nv * (double)k->ncoils;

    c->stage = LM_STAGE_Q;
    if (lm_run_report(c, 0, 0, 0, 0))
        rc = lm_run_cancelled(err, c);
    double ts = lm_run_now();
    if (rc == LM_OK)
        rc = lm_encoding_prepare_normal(s->e, ctl, &res->q_from_cache, err);
    if (rc == LM_OK && res->encoding_cached)
        res->q_from_cache = 1; /* kept in memory with its encoding */
    res->time_q_s = lm_run_now() - ts;
    lm_trace("Q ready");
    if (rc == LM_OK && lm_encoding_gpu_workers(s->e) > 1) {
        const size_t len = strlen(res->note);
        snprintf(res->note + len, sizeof res->note - len, "%sE^H E's coils split across %d GPU workers",
                 len ? "; " : "", lm_encoding_gpu_workers(s->e));
    }
    if (rc == LM_OK && lm_run_report(c, 1, 0, 0, 0))
        rc = lm_run_cancelled(err, c);
    if (rc == LM_OK)
        rc = lm_encoding_normal_op(s->e, &s->normal, err);
    if (rc == LM_OK)
        s->q_count++;
    lm_trace("normal operator made");
    if (rc == LM_OK)
        rc = compute_fhd(s, k, c, ctl, res, err);
    lm_trace("E^H d done");
    if (rc == LM_OK && weighted)
        rc = make_weights(s, c, res, err);
    if (rc != LM_OK) {
        s->failed = rc != LM_ERR_CANCELLED && rc != LM_ERR_INVALID; /* the encoding itself may be broken */
        session_destroy(s);
        return rc;
    }
    /* nothing borrowed is used past here: the reference went into the weights */
    s->o.ref = NULL, s->o.sens = NULL, s->o.noise = NULL, s->o.fieldmap = NULL;
    s->o.progress = NULL, s->o.progress_user = NULL;
    *out = s;
    return LM_OK;
}

static int lambda_monitor(void *user, int iter, double rel_resid, double cost, double elapsed_s)
{
    (void)cost, (void)elapsed_s;
    return lm_run_report(user, 0, iter, rel_resid, 0);
}

/* The non-quadratic priors' trial solve for the lambda search: ADMM at
 * lambda, warm-started from the trial before (the residual moves smoothly
 * with lambda), reporting ||E x - d||^2 = x^H N x - 2 Re x^H b + ||d||^2.
 * Trials run at most LAMBDA_ADMM_ITERS outer iterations: the residual
 * settles long before the image does (measured, docs/lambda.md). */
#define LAMBDA_ADMM_ITERS 10
/* tv and wavelet: lambda's scale (lm_recon.h) puts the best values near
 * 0.001-0.03 on the benchmark problems; the search starts there. */
#define LAMBDA_ADMM_LO 1e-6
#define LAMBDA_ADMM_HI 10.0
#define LAMBDA_ADMM_START 0.01
/* At the error-optimal lambda the TV and wavelet images fit the data a
 * little below the noise level (B32 with 5 % noise: 0.80 M sigma^2; B64c8n
 * about 0.9), and the residual moves slowly with lambda (B64c8n: +20 % per
 * decade), so the target is 0.9 M sigma^2 and the search stops within 1 %
 * (docs/lambda.md has the measurements). */
#define LAMBDA_ADMM_TAU 0.9
#define LAMBDA_ADMM_RESID_TOL 0.01

typedef struct admm_trial {
    lm_recon_session *s;
    const lm_recon_opts *o;
    lm_run_ctx *c;
    double d_energy;
    lm_cfloat *tmp; /* N x */
    int warm;
} admm_trial;

static lm_code admm_trial_solve(void *user, double lambda, int want_dof, lm_lambda_eval *ev, lm_error *err)
{
    (void)want_dof; /* no trace of the influence matrix: not a linear solver */
    admm_trial *a = user;
    lm_recon_session *s = a->s;
    lm_backend *be = lm_encoding_backend(s->e);
    const int iters = a->o->iters < LAMBDA_ADMM_ITERS ? a->o->iters : LAMBDA_ADMM_ITERS;
    prior_ctx pc = prior_for(s, lambda, a->o->reg, iters > 0 ? iters : 1, a->o->tol);
    lm_cg_report rep = {0};
    lm_code rc = prior_make(s, &pc, NULL, err);
    if (rc == LM_OK)
        rc = solve_admm(s->normal, s->b, &pc, s->x, a->warm, a->o, a->c, &rep, err);
    prior_clear(&pc);
    free(rep.resid_history);
    if (rc == LM_OK)
        rc = lm_linop_apply(s->normal, s->x, a->tmp, err);
    if (rc != LM_OK)
        return rc;
    a->warm = 1;
    const double xnx = be->dot(be, s->nv, s->x, a->tmp), xb = be->dot(be, s->nv, s->x, s->b);
    ev->resid = fmax(xnx - 2 * xb + a->d_energy, 0);
    ev->penalty = 0; /* the discrepancy principle needs the residual only */
    ev->dof = NAN;
    ev->iters = rep.iters_done;
    return be->check(be, err);
}

/* lambda_auto: the search of lm_lambda.h on this encoding (root-sum-of-
 * squares: on the channel with the most energy, the same lambda for all). */
static lm_code choose_lambda(lm_recon_session *s, const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                             const lm_recon_opts *o, lm_run_ctx *c, lm_recon_result *res, lm_error *err)
{
    lm_kdata one = *k;
    int64_t one_ch = 0;
    if (s->rss) {
        double best = -1;
        for (int64_t ch = 0; ch < k->ncoils; ch++) {
            const double en = lm_channel_energy(k->d + ch * k->m, k->m);
            if (en > best)
                best = en, one_ch = ch, one = (lm_kdata){.m = k->m, .ncoils = 1, .d = k->d + ch * k->m};
        }
    }
    const int admm = o->reg == LM_REG_TV || o->reg == LM_REG_WAVELET;
    lm_backend *be = lm_encoding_backend(s->e);
    lm_linop *rop = NULL;
    lm_code rc = o->reg == LM_REG_IDENTITY || admm ? LM_OK : lm_linop_reg(be, g->n, o->reg, s->weights, &rop, err);
    lm_lambda_auto_result a = {0};
    lm_lambda_auto_desc d = {.enc = s->e, .reg_op = rop, .reg = o->reg, .criterion = o->lambda_criterion,
                             .geom = g, .traj = t, .k = &one, .whitened = res->noise_cov != NULL, .iters = o->iters,
                             .tol = o->tol, .monitor = lambda_monitor, .monitor_user = c};
    admm_trial at = {.s = s, .o = o, .c = c, .d_energy = s->energy[one_ch]};
    if (rc == LM_OK && admm) {
        /* the session's b (rss: that channel's) and x are the trials' */
        if (s->rss)
            be->upload(be, s->b, s->b_host + one_ch * s->nv, (size_t)s->nv * sizeof *s->b_host);
        at.tmp = be->alloc(be, s->nv, "lambda trial");
        rc = be->check(be, err);
        d.solve = admm_trial_solve, d.solve_user = &at;
        d.lo = LAMBDA_ADMM_LO, d.hi = LAMBDA_ADMM_HI, d.start = LAMBDA_ADMM_START, d.tau = LAMBDA_ADMM_TAU;
        d.resid_tol = LAMBDA_ADMM_RESID_TOL;
    }
    c->stage = LM_STAGE_CG;
    if (rc == LM_OK)
        rc = lm_lambda_auto(&d, &a, err);
    if (at.tmp)
        be->release(be, at.tmp);
    lm_linop_free(rop);
    res->time_lambda_s = a.time_s;
    res->lambda_solves = a.r.solves;
    res->lambda_iters = a.r.iters;
    if (rc == LM_OK) {
        res->lambda_used = a.r.lambda;
        res->lambda_sigma = a.sigma;
        snprintf(res->lambda_criterion, sizeof res->lambda_criterion, "%s", lm_lambda_criterion_name(a.r.criterion));
        snprintf(res->lambda_note, sizeof res->lambda_note, "%s", a.note);
    }
    return rc;
}

/* lm_recon_run's solve on a built session: lambda (given or chosen), the
 * solve, and the prior's influence (the same solve without the prior). */
static lm_code run_solves(lm_recon_session *s, const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                          const lm_recon_opts *o, lm_run_ctx *c, lm_recon_result *res, lm_error *err)
{
    const int64_t nv = s->nv;
    lm_cg_report rep = {0};
    lm_code rc = LM_OK;
    res->lambda_used = o->lambda;
    snprintf(res->lambda_criterion, sizeof res->lambda_criterion, "given");
    if (o->lambda_auto)
        rc = choose_lambda(s, g, t, k, o, c, res, err);
    if (rc != LM_OK)
        return rc;
    prior_ctx pc = prior_for(s, res->lambda_used, o->reg, o->iters, o->tol);
    rc = prior_make(s, &pc, s->weights, err);
    if (rc == LM_OK && o->keep_coil_images && k->ncoils > 1 && !(res->coil_images = lm_sens_new(g->n, k->ncoils, err)))
        rc = LM_ERR_NOMEM;
    if (rc == LM_OK)
        rc = solve_all(s, &pc, 0, c, res, res->image->data, res->coil_images, &rep, err);
    if (rc == LM_OK) {
        res->iters_done = rep.iters_done;
        res->resid_history = rep.resid_history;
        rep.resid_history = NULL;
    }
    if (rc == LM_OK && !s->rss && o->lcurve_norms) {
        /* Not worth failing a finished run over: the numbers stay NaN. */
        lm_error e2 = {0};
        if (lm_recon_norms(s->e, g->n, k, o->reg, s->weights, res->image->data, &res->resid_norm, &res->prior_norm,
                           &e2) != LM_OK)
            res->resid_norm = res->prior_norm = NAN;
        lm_error_clear(&e2);
    }
    free(rep.resid_history);
    prior_clear(&pc);
    if (rc == LM_OK && o->prior_influence) {
        /* The same solve without the prior: identity at the same lambda
         * (lambda 0 when the prior is the identity itself, or tv/wavelet,
         * whose lambda has another scale). A copy of the solution is kept
         * as the session's warm start. */
        const int plain = o->reg == LM_REG_IDENTITY || o->reg == LM_REG_TV || o->reg == LM_REG_WAVELET;
        prior_ctx base = prior_for(s, plain ? 0 : res->lambda_used, LM_REG_IDENTITY, o->iters, o->tol);
        lm_volume *inf = lm_volume_copy(res->image, err);
        lm_cg_report r2 = {0};
        rc = inf ? prior_build(&base, NULL, err) : LM_ERR_NOMEM;
        if (rc == LM_OK)
            rc = solve_all(s, &base, 0, c, res, inf->data, NULL, &r2, err);
        if (rc == LM_OK) {
            for (int64_t j = 0; j < nv; j++)
                inf->data[j] = res->image->data[j] - inf->data[j];
            res->prior_influence = inf;
        } else
            lm_volume_free(inf);
        free(r2.resid_history);
        prior_clear(&base);
        /* the warm start is the run's image, not the prior-less one */
        s->have_x = 0;
    }
    return rc;
}

lm_code lm_session_recon_cg(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_sens *sens,
                            const lm_recon_opts *o, int solve, lm_run_ctx *c, lm_ctl *ctl, lm_recon_result *res,
                            lm_recon_session **keep, lm_error *err)
{
    lm_recon_session *s = NULL;
    /* lm_recon_run makes the weights only when the prior is used; a session
     * for later solves whenever there is a reference. */
    const int weighted = lm_reg_weighted(o->reg) && o->ref && o->ref->data &&
                         (o->lambda > 0 || o->lambda_auto || keep);
    lm_code rc = session_build(g, t, k, sens, o, keep != NULL, weighted, c, ctl, res, &s, err);
    if (rc == LM_OK && solve)
        rc = run_solves(s, g, t, k, o, c, res, err);
    lm_trace("solved");
    if (rc == LM_OK && keep) {
        *keep = s;
        return LM_OK;
    }
    session_destroy(s);
    lm_trace("session freed");
    return rc;
}

/* ---- the public calls ---------------------------------------------------------- */

void lm_recon_session_free(lm_recon_session **s)
{
    if (!s)
        return;
    session_destroy(*s);
    *s = NULL;
}

static lm_code check_session(const lm_recon_session *s, lm_error *err)
{
    if (!s || s->magic != SESSION_MAGIC)
        return lm_fail(err, LM_ERR_INVALID, "reconstruction session: none (freed, or never made)");
    return LM_OK;
}

void lm_session_solve_opts_init(lm_session_solve_opts *p, const lm_recon_session *s)
{
    memset(p, 0, sizeof *p);
    p->lambda = 0.01;
    p->reg = LM_REG_IDENTITY;
    p->iters = 60;
    if (s && s->magic == SESSION_MAGIC) {
        p->lambda = s->o.lambda;
        p->reg = s->o.reg;
        p->iters = s->o.iters;
        p->tol = s->o.tol;
    }
}

lm_code lm_recon_session_solve(lm_recon_session *s, const lm_session_solve_opts *p, lm_cfloat *out,
                               lm_session_report *rep, lm_error *err)
{
    if (rep)
        memset(rep, 0, sizeof *rep);
    lm_code rc = check_session(s, err);
    if (rc != LM_OK)
        return rc;
    if (!p || !out)
        return lm_fail(err, LM_ERR_INVALID, "reconstruction session: missing settings or output image");
    if (!(p->lambda >= 0) || !isfinite(p->lambda))
        return lm_fail(err, LM_ERR_INVALID, "reconstruction session: lambda %g must be finite and >= 0", p->lambda);
    if (p->iters < 0 || p->iters > 100000)
        return lm_fail(err, LM_ERR_INVALID, "reconstruction session: iteration count %d is out of range (0..100000)",
                       p->iters);
    if (!(p->tol >= 0) || !isfinite(p->tol))
        return lm_fail(err, LM_ERR_INVALID, "reconstruction session: tolerance %g must be finite and >= 0", p->tol);
    if (p->reg != LM_REG_IDENTITY && p->reg != LM_REG_GRADIENT && !lm_reg_weighted(p->reg) && p->reg != LM_REG_TV &&
        p->reg != LM_REG_WAVELET)
        return lm_fail(err, LM_ERR_INVALID, "reconstruction session: unknown regulariser %d", (int)p->reg);
    const float *w = p->weights ? p->weights : s->weights;
    if (lm_reg_weighted(p->reg) && p->lambda > 0 && !w)
        return lm_fail(err, LM_ERR_INVALID, "reconstruction session: the %s prior needs edge weights, and the "
                       "session was made without a reference", lm_reg_name(p->reg));

    lm_recon_opts lo = s->o;
    lo.progress = p->progress;
    lo.progress_user = p->progress_user;
    lo.tol = p->tol;
    lm_run_ctx c = {.o = &lo, .t0 = lm_run_now(), .ncoils = (int)s->nch, .iters = p->iters};
    prior_ctx pc = prior_for(s, p->lambda, p->reg, p->iters, p->tol);
    const int warm = p->warm_start && s->have_x;
    lm_cg_report cr = {0};
    rc = prior_make(s, &pc, lm_reg_weighted(p->reg) ? w : NULL, err);
    if (rc == LM_OK)
        rc = solve_all(s, &pc, warm, &c, NULL, out, NULL, &cr, err);
    prior_clear(&pc);
    free(cr.resid_history);
    if (rep) {
        rep->iters_done = cr.iters_done;
        rep->rel_resid = cr.rel_resid;
        rep->warm = warm;
        rep->time_s = lm_run_now() - c.t0;
        rep->fhd_count = s->fhd_count;
        rep->q_count = s->q_count;
        rep->solves = s->solves;
    }
    return rc;
}

int64_t lm_recon_session_voxels(const lm_recon_session *s)
{
    return s && s->magic == SESSION_MAGIC ? s->nv : 0;
}

lm_volume *lm_recon_session_new_image(const lm_recon_session *s, lm_error *err)
{
    if (check_session(s, err) != LM_OK)
        return NULL;
    if (s->info.image) {
        lm_volume *v = lm_volume_copy(s->info.image, err);
        if (v)
            memset(v->data, 0, (size_t)s->nv * sizeof *v->data);
        return v;
    }
    double vox[3];
    for (int a = 0; a < 3; a++)
        vox[a] = s->g.fov_mm[a] > 0 ? s->g.fov_mm[a] / (double)s->g.n[a] : 1.0;
    return lm_volume_new(s->g.n, vox, err);
}

double lm_recon_session_bytes(const lm_recon_session *s)
{
    if (!s || s->magic != SESSION_MAGIC)
        return 0;
    const double c = (double)sizeof(lm_cfloat), nv = (double)s->nv;
    /* Q on the 2x grid, b and x, the per-channel copies, maps, weights */
    double b = 8 * nv * c + 2 * nv * c + (s->b_host ? s->nch * nv * c : 0) + (s->x_host ? s->nch * nv * c : 0);
    if (s->sens)
        b += (double)s->sens->ncoils * nv * c;
    if (s->weights)
        b += 3 * nv * sizeof(float);
    return b;
}

const lm_recon_opts *lm_recon_session_opts(const lm_recon_session *s)
{
    return s && s->magic == SESSION_MAGIC ? &s->o : NULL;
}

void lm_session_take_info(lm_recon_session *s, lm_recon_result *res)
{
    s->info = *res;
    memset(res, 0, sizeof *res);
}
