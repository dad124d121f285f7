/* The dynamic priors as one separable ADMM prior (lm_dyn_prior.h). */
#include "lm_dyn_prior.h"

#include <complex.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_dyn_ops.h"

#define MAX_TERMS 2

/* One term: its coefficients' length, weight and prox. */
typedef struct term {
    int64_t len;
    double weight;
    lm_prox prox;
} term;

typedef struct llr_geom {
    int64_t n[3], frames;
    int block;
} llr_geom;

struct lm_dyn_prior {
    lm_prior prior;
    int nterms;
    term terms[MAX_TERMS];
    llr_geom llr;
};

/* ---- proximal maps ---- */

/* l2,1 over the axes of each frame's gradient (lm_linop_repeat of the
 * gradient lays the coefficients out frame by frame). */
static void frames_l21_apply(const lm_prox *p, lm_backend *be, int64_t n, lm_cfloat *z, const lm_cfloat *v, double t)
{
    const int64_t frames = (int64_t)(intptr_t)p->user, chunk = n / frames;
    for (int64_t f = 0; f < frames; f++)
        be->shrink(be, chunk / p->groups, p->groups, z + f * chunk, v + f * chunk, (float)t);
}

static double frames_l21_value(const lm_prox *p, lm_backend *be, int64_t n, const lm_cfloat *v)
{
    const int64_t frames = (int64_t)(intptr_t)p->user, chunk = n / frames;
    double s = 0;
    for (int64_t f = 0; f < frames; f++)
        s += be->group_norm(be, chunk / p->groups, p->groups, v + f * chunk);
    return s;
}

/* f = ||v||^2: z = v / (1 + 2 t). */
static void sq_apply(const lm_prox *p, lm_backend *be, int64_t n, lm_cfloat *z, const lm_cfloat *v, double t)
{
    (void)p;
    if (z != v)
        be->copy(be, n, z, v);
    be->scale(be, n, z, (float)(1 / (1 + 2 * t)));
}

static double sq_value(const lm_prox *p, lm_backend *be, int64_t n, const lm_cfloat *v)
{
    (void)p;
    return be->dot(be, n, v, v);
}

/* Singular-value thresholding of every block's Casorati matrix on the host
 * (downloaded and uploaded on a GPU back end: the blocks are small and
 * LAPACKE's SVD is the host's). value: 1 to sum the singular values instead
 * of thresholding (z unused). */
static double llr_run(lm_backend *be, const llr_geom *g, lm_cfloat *z, const lm_cfloat *v, double t, int value)
{
    const int64_t nx = g->n[0], ny = g->n[1], nz = g->n[2], N = nx * ny * nz, T = g->frames;
    const int64_t b = g->block, bz = nz > 1 ? b : 1;
    const int host = be->device == LM_DEVICE_CPU;
    lm_cfloat *h = host ? (lm_cfloat *)v : malloc((size_t)(N * T) * sizeof *h);
    if (!h) {
        lm_backend_fail(be, LM_ERR_NOMEM, "locally low rank: out of memory");
        return 0;
    }
    if (!host)
        be->download(be, h, v, (size_t)(N * T) * sizeof *h);
    lm_cfloat *out = value ? NULL : host ? z : h;
    const int64_t nbx = (nx + b - 1) / b, nby = (ny + b - 1) / b, nbz = (nz + bz - 1) / bz;
    double total = 0;
    int failed = 0;
#pragma omp parallel for schedule(dynamic) reduction(+ : total) reduction(| : failed)
    for (int64_t blk = 0; blk < nbx * nby * nbz; blk++) {
        const int64_t x0 = (blk % nbx) * b, y0 = (blk / nbx % nby) * b, z0 = (blk / (nbx * nby)) * bz;
        const int64_t x1 = x0 + b < nx ? x0 + b : nx, y1 = y0 + b < ny ? y0 + b : ny, z1 = z0 + bz < nz ? z0 + bz : nz;
        const int64_t P = (x1 - x0) * (y1 - y0) * (z1 - z0), K = P < T ? P : T;
        /* column-major P x T, then U (P x K), s (K), V^H (K x T), work */
        lm_cfloat *a = malloc((size_t)(P * T + P * K + K * T) * sizeof *a);
        float *s = malloc((size_t)(2 * K) * sizeof *s);
        if (!a || !s) {
            free(a);
            free(s);
            failed |= 1;
            continue;
        }
        lm_cfloat *u = a + P * T, *vt = u + P * K;
        for (int64_t f = 0; f < T; f++) {
            int64_t p = 0;
            for (int64_t k = z0; k < z1; k++)
                for (int64_t j = y0; j < y1; j++)
                    for (int64_t i = x0; i < x1; i++)
                        a[p++ + P * f] = h[f * N + (k * ny + j) * nx + i];
        }
        lapack_int info = LAPACKE_cgesvd(LAPACK_COL_MAJOR, value ? 'N' : 'S', value ? 'N' : 'S', (lapack_int)P,
                                         (lapack_int)T, (lapack_complex_float *)a, (lapack_int)P, s,
                                         (lapack_complex_float *)u, (lapack_int)P, (lapack_complex_float *)vt,
                                         (lapack_int)K, s + K);
        if (info != 0) {
            failed |= 1;
        } else if (value) {
            for (int64_t r = 0; r < K; r++)
                total += s[r];
        } else {
            for (int64_t f = 0; f < T; f++) {
                int64_t p = 0;
                for (int64_t k = z0; k < z1; k++)
                    for (int64_t j = y0; j < y1; j++)
                        for (int64_t i = x0; i < x1; i++, p++) {
                            lm_cfloat acc = 0;
                            for (int64_t r = 0; r < K; r++) {
                                const float sr = s[r] - (float)t;
                                if (sr > 0)
                                    acc += u[p + P * r] * sr * vt[r + K * f];
                            }
                            out[f * N + (k * ny + j) * nx + i] = acc;
                        }
            }
        }
        free(a);
        free(s);
    }
    if (failed)
        lm_backend_fail(be, LM_ERR_NOMEM, "locally low rank: a block's SVD failed (out of memory or no convergence)");
    else if (!value && !host)
        be->upload(be, z, h, (size_t)(N * T) * sizeof *h);
    if (!host)
        free(h);
    return total;
}

void lm_dyn_llr_prox(lm_backend *be, const int64_t n[3], int64_t frames, int block, lm_cfloat *z, const lm_cfloat *v,
                     double t)
{
    const llr_geom g = {.n = {n[0], n[1], n[2]}, .frames = frames, .block = block > 0 ? block : LM_DYN_LLR_BLOCK_DEFAULT};
    llr_run(be, &g, z, v, t, 0);
}

double lm_dyn_llr_value(lm_backend *be, const int64_t n[3], int64_t frames, int block, const lm_cfloat *v)
{
    const llr_geom g = {.n = {n[0], n[1], n[2]}, .frames = frames, .block = block > 0 ? block : LM_DYN_LLR_BLOCK_DEFAULT};
    return llr_run(be, &g, NULL, v, 0, 1);
}

static void llr_apply(const lm_prox *p, lm_backend *be, int64_t n, lm_cfloat *z, const lm_cfloat *v, double t)
{
    (void)n;
    llr_run(be, p->user, z, v, t, 0);
}

static double llr_value(const lm_prox *p, lm_backend *be, int64_t n, const lm_cfloat *v)
{
    (void)n;
    return llr_run(be, p->user, NULL, v, 0, 1);
}

/* The separable sum: each term's prox on its block with its weight. */
static void sum_apply(const lm_prox *p, lm_backend *be, int64_t n, lm_cfloat *z, const lm_cfloat *v, double t)
{
    (void)n;
    const lm_dyn_prior *dp = p->user;
    int64_t off = 0;
    for (int i = 0; i < dp->nterms; i++) {
        const term *tm = &dp->terms[i];
        tm->prox.apply(&tm->prox, be, tm->len, z + off, v + off, t * tm->weight);
        off += tm->len;
    }
}

static double sum_value(const lm_prox *p, lm_backend *be, int64_t n, const lm_cfloat *v)
{
    (void)n;
    const lm_dyn_prior *dp = p->user;
    int64_t off = 0;
    double f = 0;
    for (int i = 0; i < dp->nterms; i++) {
        const term *tm = &dp->terms[i];
        f += tm->weight * tm->prox.value(&tm->prox, be, tm->len, v + off);
        off += tm->len;
    }
    return f;
}

/* ---- the prior ---- */

void lm_dyn_prior_free(lm_dyn_prior *p)
{
    if (!p)
        return;
    lm_linop_free(p->prior.G);
    lm_linop_free(p->prior.GhG);
    free(p);
}

const lm_prior *lm_dyn_prior_get(const lm_dyn_prior *p) { return &p->prior; }

lm_code lm_dyn_prior_new(lm_backend *be, const lm_dyn_prior_desc *d, lm_dyn_prior **out, lm_error *err)
{
    *out = NULL;
    const int64_t N = d->n[0] * d->n[1] * d->n[2], T = d->frames;
    if (N < 1 || T < 1)
        return lm_fail(err, LM_ERR_INVALID, "dynamic prior: %lld voxels, %lld frames", (long long)N, (long long)T);
    if (!(d->lambda_t >= 0) || !(d->lambda_s >= 0) || !isfinite(d->lambda_t) || !isfinite(d->lambda_s))
        return lm_fail(err, LM_ERR_INVALID, "dynamic prior: weights %g and %g must be finite and >= 0", d->lambda_t,
                       d->lambda_s);
    const int want_time = d->time != LM_DYN_TIME_NONE && d->lambda_t > 0;
    if (want_time && d->time != LM_DYN_TIME_LLR && T < 2)
        return lm_fail(err, LM_ERR_INVALID, "dynamic prior: a temporal prior needs at least 2 frames");
    const int want_space = d->space_tv && d->lambda_s > 0;
    if (!want_time && !want_space)
        return lm_fail(err, LM_ERR_INVALID, "dynamic prior: no term with a positive weight");
    lm_dyn_prior *p = calloc(1, sizeof *p);
    if (!p)
        return lm_fail(err, LM_ERR_NOMEM, "dynamic prior: out of memory");
    p->prior.kind = LM_REG_TV;
    lm_linop *G[MAX_TERMS] = {0}, *GhG[MAX_TERMS] = {0};
    lm_code rc = LM_OK;
    if (want_time) {
        term *tm = &p->terms[p->nterms];
        tm->weight = d->lambda_t;
        if (d->time == LM_DYN_TIME_LLR) {
            p->llr = (llr_geom){.n = {d->n[0], d->n[1], d->n[2]}, .frames = T,
                                .block = d->llr_block > 0 ? d->llr_block : LM_DYN_LLR_BLOCK_DEFAULT};
            tm->prox = (lm_prox){.name = "nuclear", .apply = llr_apply, .value = llr_value, .groups = 1,
                                 .user = &p->llr};
            rc = lm_linop_identity(be, N * T, &G[p->nterms], err);
            /* G^H G = I: left NULL (ADMM's identity) when it is the only term */
        } else {
            rc = lm_linop_tdiff(be, N, T, &G[p->nterms], err);
            if (rc == LM_OK)
                rc = lm_linop_gram(G[p->nterms], &GhG[p->nterms], err);
            tm->prox = d->time == LM_DYN_TIME_TV ? lm_prox_l21(1)
                                                 : (lm_prox){.name = "l2^2", .apply = sq_apply, .value = sq_value,
                                                             .groups = 1};
        }
        if (rc == LM_OK)
            tm->len = G[p->nterms]->n_out;
        p->nterms++;
    }
    if (rc == LM_OK && want_space) {
        term *tm = &p->terms[p->nterms];
        tm->weight = d->lambda_s;
        lm_linop *grad = NULL, *reg = NULL;
        rc = lm_linop_grad(be, d->n, &grad, err);
        if (rc == LM_OK)
            rc = lm_linop_repeat(grad, T, &G[p->nterms], err);
        if (rc == LM_OK)
            rc = lm_linop_reg(be, d->n, LM_REG_GRADIENT, NULL, &reg, err);
        if (rc == LM_OK)
            rc = lm_linop_repeat(reg, T, &GhG[p->nterms], err);
        lm_linop_free(grad);
        lm_linop_free(reg);
        tm->prox = (lm_prox){.name = "frames l2,1", .apply = frames_l21_apply, .value = frames_l21_value,
                             .groups = lm_grad_axes(d->n), .user = (void *)(intptr_t)T};
        if (rc == LM_OK)
            tm->len = G[p->nterms]->n_out;
        p->nterms++;
    }
    if (rc == LM_OK && p->nterms == 1) {
        p->prior.G = lm_linop_ref(G[0]);
        p->prior.GhG = GhG[0] ? lm_linop_ref(GhG[0]) : NULL;
    } else if (rc == LM_OK) {
        rc = lm_linop_stack(p->nterms, G, &p->prior.G, err);
        for (int i = 0; i < p->nterms && rc == LM_OK; i++)
            if (!GhG[i])
                rc = lm_linop_identity(be, N * T, &GhG[i], err);
        const double ones[MAX_TERMS] = {1, 1};
        if (rc == LM_OK)
            rc = lm_linop_sum_n(p->nterms, GhG, ones, &p->prior.GhG, err);
    }
    for (int i = 0; i < MAX_TERMS; i++) {
        lm_linop_free(G[i]);
        lm_linop_free(GhG[i]);
    }
    p->prior.prox = (lm_prox){.name = "dynamic", .apply = sum_apply, .value = sum_value, .groups = 1, .user = p};
    if (rc != LM_OK) {
        lm_dyn_prior_free(p);
        return rc;
    }
    *out = p;
    return LM_OK;
}
