/* Gridding baselines on analytic objects: a sum of off-centre Gaussian
 * blobs, whose k-space is known in closed form (the continuous Fourier
 * transform, FOV volume 1), sampled on trajectories made here:
 *   - fully sampled Cartesian k-space: both methods must return the blobs in
 *     the truth's units (no scale matching);
 *   - 3D centre-out radial and 2D full-diameter radial: after least-squares
 *     scale matching (as docs/conventions.md section 3 scores gridding) the error is small, KB
 *     beats linear, and the unmatched scale is near 1.
 * Off-centre blobs check the sign and centring conventions (a flipped sign
 * mirrors the image and the error would be ~140 %). */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lm_grid.h"
#include "lm_test.h"

typedef struct blob {
    double amp, sigma, x[3];
} blob;

static const blob blobs[] = {
    {1.0, 0.100, {0.05, -0.03, 0.02}},
    {0.6, 0.060, {-0.15, 0.12, -0.10}},
    {0.8, 0.050, {0.10, 0.18, 0.12}},
    {0.5, 0.035, {-0.05, -0.20, 0.15}},
};
#define NBLOBS (sizeof blobs / sizeof blobs[0])

/* rho(x), and D(k) = int rho(x) exp(-i 2 pi k.x) dx, in dim dimensions */
static double rho(const double x[3], int dim)
{
    double v = 0;
    for (size_t b = 0; b < NBLOBS; b++) {
        double r2 = 0;
        for (int a = 0; a < dim; a++)
            r2 += (x[a] - blobs[b].x[a]) * (x[a] - blobs[b].x[a]);
        v += blobs[b].amp * exp(-r2 / (2 * blobs[b].sigma * blobs[b].sigma));
    }
    return v;
}

static double complex kspace(const double k[3], int dim)
{
    double complex v = 0;
    for (size_t b = 0; b < NBLOBS; b++) {
        double s = blobs[b].sigma, k2 = 0, kx = 0;
        for (int a = 0; a < dim; a++) {
            k2 += k[a] * k[a];
            kx += k[a] * blobs[b].x[a];
        }
        v += blobs[b].amp * pow(2 * M_PI * s * s, dim / 2.0) * exp(-2 * M_PI * M_PI * s * s * k2) *
             cexp(-2 * M_PI * I * kx);
    }
    return v;
}

typedef struct result {
    double err_raw, err_matched, scale; /* percent, percent, |alpha| */
} result;

/* Grids the trajectory's analytic data with method f and scores it. */
static result score(lm_code (*f)(const lm_geom *, const lm_traj *, const lm_cfloat *, lm_cfloat *,
                                 const lm_ctl *, lm_error *),
                    const lm_geom *g, const lm_traj *t)
{
    int dim = g->n[2] == 1 ? 2 : 3;
    int64_t nv = lm_geom_voxels(g);
    lm_cfloat *d = malloc(t->m * sizeof *d), *img = malloc(nv * sizeof *img);
    double complex *truth = malloc(nv * sizeof *truth);
    for (int64_t i = 0; i < t->m; i++) {
        double k[3] = {t->k[3 * i], t->k[3 * i + 1], t->k[3 * i + 2]};
        d[i] = (lm_cfloat)kspace(k, dim);
    }
    for (int64_t j = 0; j < nv; j++) {
        int64_t ix = j % g->n[0], iy = (j / g->n[0]) % g->n[1], iz = j / (g->n[0] * g->n[1]);
        double x[3] = {lm_voxel_pos(ix, g->n[0]), lm_voxel_pos(iy, g->n[1]), lm_voxel_pos(iz, g->n[2])};
        truth[j] = rho(x, dim);
    }
    lm_error err = {0};
    result r = {INFINITY, INFINITY, 0};
    CHECK_OK(f(g, t, d, img, NULL, &err), &err);
    if (err.code == LM_OK) {
        double complex num = 0;
        double den = 0, e0 = 0, t2 = 0;
        for (int64_t j = 0; j < nv; j++) {
            num += conj(img[j]) * truth[j];
            den += cabs(img[j]) * cabs(img[j]);
            e0 += cabs(img[j] - truth[j]) * cabs(img[j] - truth[j]);
            t2 += cabs(truth[j]) * cabs(truth[j]);
        }
        double complex alpha = num / den;
        double e1 = 0;
        for (int64_t j = 0; j < nv; j++)
            e1 += cabs(alpha * img[j] - truth[j]) * cabs(alpha * img[j] - truth[j]);
        r.err_raw = 100 * sqrt(e0 / t2);
        r.err_matched = 100 * sqrt(e1 / t2);
        r.scale = cabs(alpha);
    }
    free(d);
    free(img);
    free(truth);
    return r;
}

static lm_traj *cartesian(const int64_t n[3])
{
    lm_error err = {0};
    int dim = n[2] == 1 ? 2 : 3;
    lm_traj *t = lm_traj_new(n[0] * n[1] * n[2], dim, &err);
    int64_t i = 0;
    for (int64_t z = 0; z < n[2]; z++)
        for (int64_t y = 0; y < n[1]; y++)
            for (int64_t x = 0; x < n[0]; x++, i++) {
                t->k[3 * i] = (float)(x - n[0] / 2);
                t->k[3 * i + 1] = (float)(y - n[1] / 2);
                t->k[3 * i + 2] = dim == 3 ? (float)(z - n[2] / 2) : 0.0f;
            }
    return t;
}

/* 3D centre-out spokes, directions by 2D golden means; readout samples
 * 1/(2 FOV) apart (2x readout oversampling: with 1/FOV spacing the radial
 * point spread function has an aliasing shell 1 FOV from every point, which
 * reaches into the FOV's corners and would dominate the comparison). */
static lm_traj *radial3d(int64_t n, int64_t spokes)
{
    lm_error err = {0};
    int64_t per = n;
    lm_traj *t = lm_traj_new(spokes * per, 3, &err);
    for (int64_t s = 0, i = 0; s < spokes; s++) {
        double cz = 2 * fmod(s * 0.4656, 1.0) - 1, az = 2 * M_PI * fmod(s * 0.6823, 1.0),
               sz = sqrt(1 - cz * cz);
        for (int64_t r = 0; r < per; r++, i++) {
            t->k[3 * i] = (float)(0.5 * r * sz * cos(az));
            t->k[3 * i + 1] = (float)(0.5 * r * sz * sin(az));
            t->k[3 * i + 2] = (float)(0.5 * r * cz);
        }
    }
    return t;
}

/* 2D full-diameter spokes, golden angle, readout 1/(2 FOV) apart. */
static lm_traj *radial2d(int64_t n, int64_t spokes)
{
    lm_error err = {0};
    lm_traj *t = lm_traj_new(spokes * 2 * n, 2, &err);
    for (int64_t s = 0, i = 0; s < spokes; s++) {
        double a = s * M_PI * 0.6180339887498949;
        for (int64_t r = 0; r < 2 * n; r++, i++) {
            double kr = 0.5 * (double)r - (double)n / 2;
            t->k[3 * i] = (float)(kr * cos(a));
            t->k[3 * i + 1] = (float)(kr * sin(a));
            t->k[3 * i + 2] = 0.0f;
        }
    }
    return t;
}

static void test_cartesian(void)
{
    lm_geom g;
    lm_geom_init(&g, 32, 32, 32, 240);
    lm_traj *t = cartesian(g.n);
    result lin = score(lm_grid_linear, &g, t), kb = score(lm_grid_kb, &g, t);
    fprintf(stderr, "Cartesian 32^3: linear %.3f %% (matched %.3f %%, |alpha| %.4f), kb %.3f %% (matched %.3f %%, "
            "|alpha| %.4f)\n", lin.err_raw, lin.err_matched, lin.scale, kb.err_raw, kb.err_matched, kb.scale);
    /* Linear gridding of Cartesian data with Pipe-Menon weights (exactly 1
     * here) is the exact inverse DFT: what remains is the blobs' spectrum
     * beyond |k| = 16 (~0.05 %). */
    CHECK(lin.err_raw < 0.1);
    /* KB: the shape is as good; the scale is off by ~1.5 % per axis because
     * on a lattice at Nyquist spacing the kernel's transform at the fine
     * grid's half frequency aliases coherently into C C^T (irregular
     * trajectories average this out: see the radial scales below). */
    CHECK(kb.err_matched < 0.5);
    CHECK(kb.err_raw < 6.0);
    CHECK(kb.scale > 0.9 && kb.scale < 1.1);
    lm_traj_free(t);

    lm_geom_init(&g, 48, 40, 1, 240);
    t = cartesian(g.n);
    lin = score(lm_grid_linear, &g, t);
    kb = score(lm_grid_kb, &g, t);
    fprintf(stderr, "Cartesian 48x40: linear %.3f %%, kb %.3f %% (matched %.3f %%)\n", lin.err_raw, kb.err_raw,
            kb.err_matched);
    CHECK(lin.err_raw < 0.1);
    CHECK(kb.err_matched < 0.5);
    CHECK(kb.err_raw < 6.0);
    lm_traj_free(t);
}

static void test_radial(void)
{
    lm_geom g;
    lm_geom_init(&g, 32, 32, 32, 240);
    lm_traj *t = radial3d(32, 2000);
    result lin = score(lm_grid_linear, &g, t), kb = score(lm_grid_kb, &g, t);
    fprintf(stderr, "radial 3D 32^3, %lld samples: linear %.2f %% matched (raw %.2f %%, |alpha| %.3f), "
            "kb %.2f %% matched (raw %.2f %%, |alpha| %.3f)\n", (long long)t->m, lin.err_matched,
            lin.err_raw, lin.scale, kb.err_matched, kb.err_raw, kb.scale);
    /* measured: linear ~6.9 %, kb ~4.0 % (kb tends to ~1.7 % with more
     * spokes, linear stays near 6.6 %: its sinc^2 apodisation is left in) */
    CHECK(kb.err_matched < 6.0);
    CHECK(lin.err_matched < 12.0);
    CHECK(kb.err_matched < lin.err_matched);
    CHECK(kb.scale > 0.9 && kb.scale < 1.1);
    CHECK(lin.scale > 0.8 && lin.scale < 1.25);
    lm_traj_free(t);

    lm_geom_init(&g, 64, 64, 1, 240);
    t = radial2d(64, 110);
    lin = score(lm_grid_linear, &g, t);
    kb = score(lm_grid_kb, &g, t);
    fprintf(stderr, "radial 2D 64^2, %lld samples: linear %.2f %% matched (raw %.2f %%, |alpha| %.3f), "
            "kb %.2f %% matched (raw %.2f %%, |alpha| %.3f)\n", (long long)t->m, lin.err_matched,
            lin.err_raw, lin.scale, kb.err_matched, kb.err_raw, kb.scale);
    CHECK(kb.err_matched < 6.0);
    CHECK(lin.err_matched < 12.0);
    CHECK(kb.err_matched < lin.err_matched);
    CHECK(kb.scale > 0.9 && kb.scale < 1.1);
    lm_traj_free(t);
}

static int cancel_now(void *user, double f)
{
    (void)user;
    return f > 0.1;
}

static void test_errors(void)
{
    lm_geom g;
    lm_geom_init(&g, 16, 16, 16, 240);
    lm_traj *t = radial3d(16, 200);
    lm_cfloat *d = calloc(t->m, sizeof *d), *img = malloc(4096 * sizeof *img);
    lm_error err = {0};
    lm_ctl ctl = {cancel_now, NULL, 0};
    CHECK(lm_grid_kb(&g, t, d, img, &ctl, &err) == LM_ERR_CANCELLED);
    CHECK(lm_grid_linear(&g, t, NULL, img, NULL, &err) == LM_ERR_INVALID);
    t->k[5] = NAN;
    CHECK(lm_grid_linear(&g, t, d, img, NULL, &err) != LM_OK);
    free(d);
    free(img);
    lm_traj_free(t);
}

int main(void)
{
    test_cartesian();
    test_radial();
    test_errors();
    return lm_test_finish("test_grid");
}
