/* The temporal priors' proximal steps against closed forms computed in
 * double (lm_dyn_prior.h):
 *   temporal TV and Tikhonov over two frames, solved by ADMM with E = I
 *     (denoising): per voxel the mean stays and the difference d = v2 - v1
 *     becomes soft(d, lambda) (TV: minimise |e - d|^2 / 2 + lambda |e|) or
 *     d / (1 + 2 lambda) (Tikhonov); 1e-4 relative (ADMM's float iterations);
 *   locally low rank: singular-value thresholding of a Casorati matrix
 *     built as U diag(s) V^H from orthonormal DFT columns gives
 *     U diag(max(s - t, 0)) V^H, and the value is sum(s); 1e-5 relative;
 *   ttv+tv: the separable sum's value is the weighted sum of the parts. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

#include "lm_admm.h"
#include "lm_dyn_ops.h"
#include "lm_dyn_prior.h"
#include "dyn_test.h"
#include "lm_test.h"


static void two_frames(lm_backend *be, lm_dyn_time kind, double lambda)
{
    lm_error err = {0};
    const int64_t n[3] = {6, 5, 1}, N = 30;
    lm_cfloat *v = malloc(sizeof *v * 2 * N), *x = malloc(sizeof *x * 2 * N);
    zc *ref = malloc(sizeof *ref * 2 * N);
    for (int64_t i = 0; i < N; i++) {
        v[i] = (float)sin(0.7 * (double)i) + I * (float)cos(1.3 * (double)i);
        v[N + i] = v[i] + (float)(0.3 * cos(2.1 * (double)i)) * (1 + 0.5f * I) * (i % 4 ? 1.0f : 6.0f);
        const zc m = 0.5 * ((zc)v[i] + v[N + i]), d = (zc)v[N + i] - v[i];
        const zc e = kind == LM_DYN_TIME_TV ? d * fmax(0, 1 - lambda / cabs(d)) : d / (1 + 2 * lambda);
        ref[i] = m - e / 2;
        ref[N + i] = m + e / 2;
    }
    lm_linop *id = NULL;
    lm_dyn_prior *p = NULL;
    CHECK_OK(lm_linop_identity(be, 2 * N, &id, &err), &err);
    lm_dyn_prior_desc pd = {.n = {n[0], n[1], n[2]}, .frames = 2, .time = kind, .lambda_t = lambda};
    CHECK_OK(lm_dyn_prior_new(be, &pd, &p, &err), &err);
    lm_admm_params ap = {.iters = 400, .cg_iters = 6, .lambda = 1, .rho = 1, .adaptive = 1};
    CHECK_OK(lm_admm(id, v, lm_dyn_prior_get(p), x, &ap, NULL, &err), &err);
    const double e = dyn_rel_err(x, ref, 2 * N);
    fprintf(stderr, "%s, lambda %g: %.3g relative to the closed form\n", kind == LM_DYN_TIME_TV ? "ttv" : "ttik",
            lambda, e);
    CHECK(e < 1e-4);
    lm_dyn_prior_free(p);
    lm_linop_free(id);
    free(v);
    free(x);
    free(ref);
}

static void llr(lm_backend *be)
{
    const int64_t n[3] = {8, 8, 1}, P = 64, T = 4;
    const double s[4] = {3, 1.5, 0.5, 0.2}, t = 0.7;
    zc *a = calloc((size_t)(P * T), sizeof *a), *ref = calloc((size_t)(P * T), sizeof *ref);
    /* U: DFT columns 1, 3, 5, 7 of size 64 (orthonormal); V: the 4-point DFT */
    for (int64_t p = 0; p < P; p++)
        for (int64_t f = 0; f < T; f++)
            for (int r = 0; r < 4; r++) {
                const zc u = cexp(2 * M_PI * I * (double)(p * (2 * r + 1)) / (double)P) / 8;
                const zc vh = conj(cexp(2 * M_PI * I * (double)(f * r) / (double)T) / 2);
                a[f * P + p] += u * s[r] * vh;
                ref[f * P + p] += u * fmax(s[r] - t, 0) * vh;
            }
    lm_cfloat *v = malloc(sizeof *v * P * T), *z = malloc(sizeof *z * P * T);
    for (int64_t i = 0; i < P * T; i++)
        v[i] = (lm_cfloat)a[i];
    lm_dyn_llr_prox(be, n, T, 8, z, v, t);
    const double e = dyn_rel_err(z, ref, P * T);
    fprintf(stderr, "llr: SVT %.3g relative to the closed form\n", e);
    CHECK(e < 1e-5);
    CHECK_NEAR(lm_dyn_llr_value(be, n, T, 8, v), 3 + 1.5 + 0.5 + 0.2, 1e-5);
    /* in place, and blocks of 4: each block's own SVT (the value is the sum
     * over the 4 blocks, each no larger than the whole's) */
    lm_dyn_llr_prox(be, n, T, 8, v, v, t);
    CHECK(dyn_rel_err(v, ref, P * T) < 1e-5);
    for (int64_t i = 0; i < P * T; i++)
        v[i] = (lm_cfloat)a[i];
    const double v4 = lm_dyn_llr_value(be, n, T, 4, v);
    CHECK(v4 >= 5.2 - 1e-5 && v4 <= 4 * 5.2);
    free(a);
    free(ref);
    free(v);
    free(z);
}

/* ttv+tv: G = [D_t; D_s] and f = lt |.|_1 + ls |.|_2,1 over the blocks. */
static void sum_value(lm_backend *be)
{
    lm_error err = {0};
    const int64_t n[3] = {4, 4, 1}, N = 16, T = 3;
    lm_dyn_prior *p = NULL, *pt = NULL, *ps = NULL;
    lm_dyn_prior_desc d = {.n = {n[0], n[1], n[2]}, .frames = T, .time = LM_DYN_TIME_TV, .lambda_t = 0.3,
                           .space_tv = 1, .lambda_s = 2.0};
    CHECK_OK(lm_dyn_prior_new(be, &d, &p, &err), &err);
    lm_dyn_prior_desc dt = d, ds = d;
    dt.space_tv = 0;
    ds.time = LM_DYN_TIME_NONE;
    CHECK_OK(lm_dyn_prior_new(be, &dt, &pt, &err), &err);
    CHECK_OK(lm_dyn_prior_new(be, &ds, &ps, &err), &err);
    if (!p || !pt || !ps)
        return;
    const lm_prior *a = lm_dyn_prior_get(p), *b = lm_dyn_prior_get(pt), *c = lm_dyn_prior_get(ps);
    CHECK(a->G->n_out == b->G->n_out + c->G->n_out);
    lm_cfloat *x = malloc(sizeof *x * N * T), *ga = malloc(sizeof *ga * a->G->n_out);
    lm_cfloat *gb = malloc(sizeof *gb * b->G->n_out), *gc = malloc(sizeof *gc * c->G->n_out);
    for (int64_t i = 0; i < N * T; i++)
        x[i] = (float)((i * 7) % 11) + I * (float)(i % 3);
    lm_linop_apply(a->G, x, ga, &err);
    lm_linop_apply(b->G, x, gb, &err);
    lm_linop_apply(c->G, x, gc, &err);
    const double fa = a->prox.value(&a->prox, be, a->G->n_out, ga);
    const double fb = b->prox.value(&b->prox, be, b->G->n_out, gb), fc = c->prox.value(&c->prox, be, c->G->n_out, gc);
    CHECK_NEAR(fa, fb + fc, 1e-6 * fa);
    /* the x-update's G^H G is the parts' sum */
    lm_cfloat *ha = malloc(sizeof *ha * N * T), *hb = malloc(sizeof *hb * N * T), *hc = malloc(sizeof *hc * N * T);
    lm_linop_apply(a->GhG, x, ha, &err);
    lm_linop_apply(b->GhG, x, hb, &err);
    lm_linop_apply(c->GhG, x, hc, &err);
    double worst = 0;
    for (int64_t i = 0; i < N * T; i++)
        worst = fmax(worst, cabsf(ha[i] - hb[i] - hc[i]));
    CHECK(worst < 1e-5);
    free(x), free(ga), free(gb), free(gc), free(ha), free(hb), free(hc);
    lm_dyn_prior_free(p);
    lm_dyn_prior_free(pt);
    lm_dyn_prior_free(ps);
}

int main(void)
{
    lm_error err = {0};
    lm_backend *be = NULL;
    CHECK_OK(lm_backend_cpu_new(2, &be, &err), &err);
    if (!be)
        return lm_test_finish("test_dyn_prox");
    two_frames(be, LM_DYN_TIME_TV, 0.25);
    two_frames(be, LM_DYN_TIME_TIKHONOV, 0.8);
    llr(be);
    sum_value(be);
    lm_backend_free(be);
    return lm_test_finish("test_dyn_prox");
}
