/* The dynamic model's operators (lm_dyn_model.h, lm_dyn_ops.h) against
 * double-precision direct sums: the block-diagonal E = diag(E_t) (each
 * frame its own trajectory through the shared coil maps) and its normal
 * operator diag(E_t^H E_t) (one Toeplitz Q per frame), to 1e-5 relative;
 * the temporal difference's adjoint (<D x, y> = <x, D^H y>). */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

#include "lm_coils_synth.h"
#include "lm_dyn_model.h"
#include "lm_dyn_ops.h"
#include "dyn_test.h"
#include "lm_test.h"
#include "lm_trajgen.h"

/* (E_t x)_c(m) = (1/N) phi(k_m) sum_n s_c(x_n) x(x_n) exp(-i 2 pi k_m . x_n) */
static void direct_forward(const lm_geom *g, const lm_traj *t, int64_t a, int64_t m, const lm_sens *s,
                           const zc *x, zc *y)
{
    const int64_t N = lm_geom_voxels(g);
    for (int64_t c = 0; c < s->ncoils; c++)
        for (int64_t i = 0; i < m; i++) {
            const float *k = t->k + 3 * (a + i);
            zc acc = 0;
            for (int64_t v = 0; v < N; v++) {
                const double px = lm_voxel_pos(v % g->n[0], g->n[0]), py = lm_voxel_pos(v / g->n[0], g->n[1]);
                acc += (zc)s->s[c * N + v] * x[v] * cexp(-2 * M_PI * I * (k[0] * px + k[1] * py));
            }
            y[c * m + i] = acc * lm_geom_phi(g, k[0], k[1], k[2]) / (double)N;
        }
}

/* E_t^H y: the conjugate transpose of the sum above. */
static void direct_adjoint(const lm_geom *g, const lm_traj *t, int64_t a, int64_t m, const lm_sens *s,
                           const zc *y, zc *x)
{
    const int64_t N = lm_geom_voxels(g);
    for (int64_t v = 0; v < N; v++) {
        const double px = lm_voxel_pos(v % g->n[0], g->n[0]), py = lm_voxel_pos(v / g->n[0], g->n[1]);
        zc acc = 0;
        for (int64_t c = 0; c < s->ncoils; c++) {
            zc sc = 0;
            for (int64_t i = 0; i < m; i++) {
                const float *k = t->k + 3 * (a + i);
                sc += y[c * m + i] * lm_geom_phi(g, k[0], k[1], k[2]) * cexp(2 * M_PI * I * (k[0] * px + k[1] * py));
            }
            acc += conj((zc)s->s[c * N + v]) * sc;
        }
        x[v] = acc / (double)N;
    }
}


int main(void)
{
    lm_error err = {0};
    const int64_t n = 16, T = 3, spokes = 5, r = 16, C = 2;
    lm_geom g;
    lm_geom_init(&g, n, n, 1, 240);
    const int64_t N = lm_geom_voxels(&g), nn[3] = {n, n, 1};
    lm_traj *t = NULL;
    lm_sens *s = NULL;
    lm_frames *f = NULL;
    CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL2D, nn, T * spokes * r, r, &t, &err), &err);
    CHECK_OK(lm_coils_synth_sens(2, C, nn, &s, &err), &err);
    CHECK_OK(lm_frames_equal(t->m, T, &f, &err), &err);
    lm_dyn_model *m = NULL;
    lm_dyn_model_desc d = {.geom = &g, .traj = t, .sens = s, .frames = f, .variant = "auto", .use_cache = 0};
    CHECK_OK(lm_dyn_model_new(&d, &m, &err), &err);
    if (!m)
        return lm_test_finish("test_dyn_operator");
    lm_linop *E = NULL, *EhE = NULL;
    CHECK_OK(lm_dyn_model_op(m, &E, &err), &err);
    CHECK_OK(lm_dyn_model_normal(m, &EhE, &err), &err);
    const int64_t mt = spokes * r;
    CHECK(E && E->n_in == T * N && E->n_out == T * mt * C);
    lm_cfloat *x = calloc((size_t)(T * N), sizeof *x), *y = calloc((size_t)(T * mt * C), sizeof *y);
    lm_cfloat *xn = calloc((size_t)(T * N), sizeof *xn);
    zc *xd = calloc((size_t)(T * N), sizeof *xd), *yd = calloc((size_t)(T * mt * C), sizeof *yd);
    zc *xnd = calloc((size_t)(T * N), sizeof *xnd);
    for (int64_t i = 0; i < T * N; i++) { /* a smooth object, different per frame */
        const double px = (double)(i % n) / n - 0.5, py = (double)(i / n % n) / n - 0.5, tf = (double)(i / N);
        xd[i] = exp(-(px * px + py * py) * (6 + tf)) + 0.3 * I * sin(3 * px + tf);
        x[i] = (lm_cfloat)xd[i];
    }
    CHECK_OK(lm_linop_apply(E, x, y, &err), &err);
    CHECK_OK(lm_linop_apply(EhE, x, xn, &err), &err);
    for (int64_t fr = 0; fr < T; fr++) {
        direct_forward(&g, t, f->start[fr], mt, s, xd + fr * N, yd + fr * mt * C);
        direct_adjoint(&g, t, f->start[fr], mt, s, yd + fr * mt * C, xnd + fr * N);
    }
    const double ef = dyn_rel_err(y, yd, T * mt * C), en = dyn_rel_err(xn, xnd, T * N);
    fprintf(stderr, "E: %.3g, E^H E: %.3g relative to the double direct sums\n", ef, en);
    CHECK(ef < 1e-5);
    CHECK(en < 1e-5);
    /* each frame's block is its own: frame 1 of E x depends on x_1 only */
    for (int64_t i = 0; i < N; i++)
        x[i] = 0;
    CHECK_OK(lm_linop_apply(E, x, y, &err), &err);
    CHECK(dyn_rel_err(y + mt * C, yd + mt * C, mt * C) < 1e-5);
    double zero = 0;
    for (int64_t i = 0; i < mt * C; i++)
        zero += cabsf(y[i]);
    CHECK(zero == 0);

    /* the temporal difference and its adjoint */
    lm_linop *D = NULL;
    CHECK_OK(lm_linop_tdiff(lm_dyn_model_backend(m), N, T, &D, &err), &err);
    if (D) {
        lm_cfloat *dx = calloc((size_t)((T - 1) * N), sizeof *dx), *w = calloc((size_t)((T - 1) * N), sizeof *w);
        lm_cfloat *dhw = calloc((size_t)(T * N), sizeof *dhw);
        for (int64_t i = 0; i < T * N; i++)
            x[i] = (lm_cfloat)xd[i];
        for (int64_t i = 0; i < (T - 1) * N; i++)
            w[i] = (float)cos(0.1 * (double)i) + I * (float)sin(0.37 * (double)i);
        CHECK_OK(lm_linop_apply(D, x, dx, &err), &err);
        CHECK_OK(lm_linop_adjoint(D, w, dhw, &err), &err);
        zc a = 0, b = 0;
        for (int64_t i = 0; i < (T - 1) * N; i++)
            a += conj((zc)w[i]) * dx[i];
        for (int64_t i = 0; i < T * N; i++)
            b += conj((zc)dhw[i]) * x[i];
        CHECK(cabs(a - b) <= 1e-5 * cabs(a));
        CHECK_NEAR(crealf(dx[N + 3]), crealf(x[2 * N + 3] - x[N + 3]), 1e-6);
        free(dx);
        free(w);
        free(dhw);
        lm_linop_free(D);
    }
    free(x);
    free(y);
    free(xn);
    free(xd);
    free(yd);
    free(xnd);
    lm_dyn_model_free(m);
    lm_traj_free(t);
    lm_sens_free(s);
    lm_frames_free(f);
    return lm_test_finish("test_dyn_operator");
}
