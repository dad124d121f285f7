/* The number of time segments auto chooses meets its bound against the
 * exact model (lm_timeseg.h): on the 32x32 spiral (fm_common.h) with the
 * field map scaled to span 0.4, 1 and 2 times its range (about 1.5, 3.8
 * and 7.6 cycles over the 25 ms readout), in double precision:
 *   - the segmented model sum_l b_l(t) exp(-i 2 pi f tau_l), with auto's
 *     b and tau, gives E x within LM_SEGMENTS_TOL x LM_TIMESEG_AUTO_SHARE
 *     x 2 of the exact E x (the rms bound, with room for the spiral's
 *     weighting of the times), and E^H E x within LM_SEGMENTS_TOL;
 *   - one segment fewer does not meet the rms bound (auto is the least L);
 *   - L grows with the field's range (the bound follows the phase span).
 * Then the library's encoding (float, cpu-nufft, block Toeplitz) with auto
 * L against the same double references, within LM_SEGMENTS_TOL. */
#include <complex.h>
#include <stdio.h>
#include <string.h>

#include "fm_common.h"
#include "lm_encoding.h"
#include "lm_test.h"
#include "lm_timeseg.h"

/* d = (1/N) phi sum_l b_l(t) sum_v x c_l(f) exp(-i 2 pi k.x), double */
static void seg_forward(const lm_geom *g, const lm_traj *t, const float *f, const lm_timeseg *s,
                        const double complex *x, double complex *d)
{
    const int64_t nv = lm_geom_voxels(g), m = t->m;
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < m; j++) {
        const float *k = t->k + 3 * j;
        double complex acc = 0;
        for (int l = 0; l < s->L; l++) {
            double complex al = 0;
            for (int64_t v = 0; v < nv; v++) {
                const double px = lm_voxel_pos(v % g->n[0], g->n[0]), py = lm_voxel_pos(v / g->n[0], g->n[1]);
                const double a = -2 * M_PI * (k[0] * px + k[1] * py + (double)f[v] * s->tau[l]);
                al += x[v] * CMPLX(cos(a), sin(a));
            }
            acc += (double complex)s->b[l * m + j] * al;
        }
        d[j] = acc * lm_geom_phi(g, k[0], k[1], k[2]) / (double)nv;
    }
}

/* ||a - b|| / ||b||, both double */
static double rel_dd(const double complex *a, const double complex *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num += creal((a[i] - b[i]) * conj(a[i] - b[i]));
        den += creal(b[i] * conj(b[i]));
    }
    return sqrt(num / den);
}

int main(void)
{
    lm_error err = {0};
    lm_geom g;
    lm_geom_init(&g, 32, 32, 1, 240);
    const int64_t nv = lm_geom_voxels(&g);
    lm_traj *t = fm_spiral(32);
    const int64_t m = t->m;
    float *f0 = fm_fieldmap(&g), *f = malloc((size_t)nv * sizeof *f);
    double complex *x = malloc((size_t)nv * sizeof *x), *dx = malloc((size_t)m * sizeof *dx),
                   *ds = malloc((size_t)m * sizeof *ds), *nx = malloc((size_t)nv * sizeof *nx),
                   *ns = malloc((size_t)nv * sizeof *ns);
    lm_cfloat *xf = malloc((size_t)nv * sizeof *xf), *yf = malloc((size_t)nv * sizeof *yf),
              *df = malloc((size_t)m * sizeof *df);
    for (int64_t v = 0; v < nv; v++) {
        x[v] = CMPLX(fm_uniform() - 0.5, fm_uniform() - 0.5);
        xf[v] = (lm_cfloat)x[v];
    }
    const double scales[3] = {0.4, 1.0, 2.0};
    const double bound = LM_SEGMENTS_TOL * LM_TIMESEG_AUTO_SHARE;
    int prev_l = 0;
    for (int si = 0; si < 3; si++) {
        for (int64_t v = 0; v < nv; v++)
            f[v] = (float)(scales[si] * f0[v]);
        lm_timeseg *s = NULL, *s1 = NULL;
        CHECK_OK(lm_timeseg_make(t->t, m, f, nv, LM_SEGMENTS_AUTO, LM_TIMESEG_HIST, LM_SEGMENTS_TOL, &s, &err), &err);
        if (!s)
            continue;
        const double cycles = (s->fmax - s->fmin) * FM_T_READ;
        /* exact and segmented models in double, E x and E^H E x */
        fm_forward(&g, t, f, NULL, 1, x, dx);
        seg_forward(&g, t, f, s, x, ds);
        const double ex = rel_dd(ds, dx, m);
        fm_adjoint(&g, t, f, NULL, 1, dx, nx);
        /* E_s^H E_s x: the adjoint of the segmented model is sum_l C_l^H F^H B_l^H;
         * through the exact adjoint's pieces: conj(b_l) d, then conj(c_l) */
        memset(ns, 0, (size_t)nv * sizeof *ns);
        double complex *dl = malloc((size_t)m * sizeof *dl), *xl = malloc((size_t)nv * sizeof *xl);
        float *fz = calloc((size_t)nv, sizeof *fz);
        for (int l = 0; l < s->L; l++) {
            for (int64_t j = 0; j < m; j++)
                dl[j] = conj((double complex)s->b[l * m + j]) * ds[j];
            fm_adjoint(&g, t, fz, NULL, 1, dl, xl); /* F^H without the field term */
            for (int64_t v = 0; v < nv; v++)
                ns[v] += cexp(I * 2 * M_PI * (double)f[v] * s->tau[l]) * xl[v];
        }
        free(dl), free(xl), free(fz);
        const double en = rel_dd(ns, nx, nv);
        printf("field x%.1f (%.1f .. %.1f Hz, %.2f cycles): auto L = %d, rms %.2e, worst %.2e; double model: "
               "E x %.2e, E^H E x %.2e\n",
               scales[si], s->fmin, s->fmax, cycles, s->L, s->error, s->worst, ex, en);
        CHECK(s->error < bound);
        CHECK_MSG(ex < 2 * bound, "E x of the segmented model: %.3e", ex);
        CHECK_MSG(en < LM_SEGMENTS_TOL, "E^H E x of the segmented model: %.3e", en);
        /* the least L: one fewer misses the bound */
        if (s->L > 1) {
            CHECK_OK(lm_timeseg_make(t->t, m, f, nv, s->L - 1, LM_TIMESEG_HIST, LM_SEGMENTS_TOL, &s1, &err), &err);
            if (s1)
                CHECK_MSG(s1->error >= bound, "L = %d already meets the bound (%.3e)", s1->L, s1->error);
            lm_timeseg_free(s1);
        }
        /* more phase across the readout needs more segments */
        CHECK(s->L > prev_l);
        prev_l = s->L;

        /* the library's float operator with the same auto choice */
        lm_encoding_desc d = {.geom = &g, .traj = t, .variant = "cpu-nufft", .fieldmap = f,
                              .segments = LM_SEGMENTS_AUTO, .use_cache = 0, .threads = 2};
        lm_encoding *e = NULL;
        CHECK_OK(lm_encoding_new(&d, &e, &err), &err);
        if (e) {
            CHECK(lm_encoding_segments(e, NULL) == s->L);
            lm_kdata kd = {.m = m, .ncoils = 1, .d = df};
            CHECK_OK(lm_encoding_forward(e, xf, &kd, &err), &err);
            CHECK_OK(lm_encoding_normal(e, xf, yf, &err), &err);
            const double fx = fm_rel(df, dx, m), fn = fm_rel(yf, nx, nv);
            printf("  encoding (float, cpu-nufft): E x %.2e, E^H E x %.2e\n", fx, fn);
            CHECK_MSG(fx < LM_SEGMENTS_TOL, "E x %.3e", fx);
            CHECK_MSG(fn < LM_SEGMENTS_TOL, "E^H E x %.3e", fn);
        }
        lm_encoding_free(e);
        lm_timeseg_free(s);
    }
    free(x), free(dx), free(ds), free(nx), free(ns), free(xf), free(yf), free(df), free(f), free(f0);
    lm_traj_free(t);
    return lm_test_finish("timeseg_bound");
}
