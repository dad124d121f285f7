/* cpu-simd and cpu-separable against cpu-dp on random problems: image and
 * Q grids (row lengths that are and are not multiples of 16), 2D and 3D,
 * explicit points, real, positive and complex weights; a Cartesian
 * trajectory whose F^H d is N times the image exactly; grid and explicit
 * copies of the same points.
 *
 * Tolerance 5e-6 relative (2-norm): the phase reaches float only after
 * exact reduction in cycles (error <= 4e-7 cycles = 2.5e-6 rad worst, ~1e-6
 * RMS, independent per pair); the polynomial sin/cos are within 6e-7 and
 * unbiased; float partial sums over 1,024 (cpu-simd) or 128 (separable)
 * samples go into double. Measured 2e-7 to 7e-7. A biased polynomial
 * (mean error 5e-8, the plain Chebyshev fit) adds ~b sqrt(M) for positive
 * weights: the M = 20,000 case has its own tolerance to catch that. */
#include "ksum_util.h"

#define TOL 5e-6

static const char *variants[] = {"cpu-simd", "cpu-separable"};

static void compare(const char *what, const ku_problem *p, const lm_points *pts, double tol)
{
    float *rr, *ri;
    lm_error err;
    CHECK_OK(ku_run("cpu-dp", &p->in, pts, &rr, &ri, &err), &err);
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        const lm_variant *v = lm_variant_find(variants[i], &err);
        CHECK(v != NULL);
        if (!v || (v->grid_only && pts->x))
            continue;
        float *re, *im;
        CHECK_OK(ku_run(variants[i], &p->in, pts, &re, &im, &err), &err);
        double e = ku_rel_error(pts->n, re, im, rr, ri);
        fprintf(stderr, "%-14s %s: rel error %.3g\n", variants[i], what, e);
        CHECK_MSG(e <= tol, "%s, %s: rel error %.3g > %.1g", variants[i], what, e, tol);
        free(re);
        free(im);
    }
    free(rr);
    free(ri);
}

static void grid_case(const char *what, const int64_t n[3], int64_t m, int q, int weights,
                      double tol)
{
    ku_problem p;
    ku_problem_make(&p, m, n, weights == 2);
    if (weights == 1)
        for (int64_t i = 0; i < m; i++)
            p.wr[i] = fabsf(p.wr[i]);
    lm_points g;
    if (q)
        lm_points_q_grid(&g, n);
    else
        lm_points_image_grid(&g, n);
    compare(what, &p, &g, tol);
    ku_problem_free(&p);
}

/* Grid and explicit copies: different code paths in cpu-simd, same sum. */
static void test_grid_vs_explicit(void)
{
    int64_t n[3] = {20, 12, 6};
    ku_problem p;
    ku_problem_make(&p, 1000, n, 1);
    lm_points g;
    lm_points_image_grid(&g, n);
    ku_points e;
    ku_points_explicit(&e, &g);
    float *gr, *gi, *er, *ei;
    lm_error err;
    CHECK_OK(ku_run("cpu-simd", &p.in, &g, &gr, &gi, &err), &err);
    CHECK_OK(ku_run("cpu-simd", &p.in, &e.pts, &er, &ei, &err), &err);
    double d = ku_rel_error(g.n, gr, gi, er, ei);
    fprintf(stderr, "cpu-simd grid vs explicit: rel difference %.3g\n", d);
    CHECK_MSG(d <= TOL, "cpu-simd grid vs explicit: %.3g", d);
    /* cpu-separable refuses explicit points */
    const lm_variant *v = lm_variant_find("cpu-separable", &err);
    CHECK(v && lm_ksum_run(v, &p.in, &e.pts, er, ei, NULL, &err) == LM_ERR_UNSUPPORTED);
    free(gr);
    free(gi);
    free(er);
    free(ei);
    ku_points_free(&e);
    ku_problem_free(&p);
}

/* Full Cartesian sampling of an n x n image (k = -n/2 .. n/2-1): with d the
 * image's DFT, F^H d = N rho exactly. Phases land on multiples of 1/n, so
 * the reduced phase hits r = 0, 1/4, 1/2 exactly, coherently. */
static void test_cartesian(void)
{
    const int64_t n = 16, N = n * n;
    int64_t n3[3] = {n, n, 1};
    lm_points g;
    lm_points_image_grid(&g, n3);
    double *rho = malloc(N * sizeof(double));
    for (int64_t j = 0; j < N; j++)
        rho[j] = ku_uniform(-1, 1);
    float *kx = malloc(N * sizeof(float)), *ky = malloc(N * sizeof(float));
    float *kz = calloc(N, sizeof(float));
    float *wr = malloc(N * sizeof(float)), *wi = malloc(N * sizeof(float));
    for (int64_t m = 0; m < N; m++) {
        kx[m] = (float)(m % n - n / 2);
        ky[m] = (float)(m / n - n / 2);
        double sr = 0, si = 0;
        for (int64_t j = 0; j < N; j++) {
            double x[3];
            lm_points_get(&g, j, x);
            double a = -2 * M_PI * (kx[m] * x[0] + ky[m] * x[1]);
            sr += rho[j] * cos(a);
            si += rho[j] * sin(a);
        }
        wr[m] = (float)sr;
        wi[m] = (float)si;
    }
    lm_ksum_in in = {.m = N, .kx = kx, .ky = ky, .kz = kz, .wr = wr, .wi = wi, .nsets = 1};
    float *tr = malloc(N * sizeof(float)), *ti = calloc(N, sizeof(float));
    for (int64_t j = 0; j < N; j++)
        tr[j] = (float)(N * rho[j]);
    const char *all[] = {"cpu-dp", "cpu-sp", "cpu-simd", "cpu-separable"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        float *re, *im;
        lm_error err;
        CHECK_OK(ku_run(all[i], &in, &g, &re, &im, &err), &err);
        double e = ku_rel_error(N, re, im, tr, ti);
        fprintf(stderr, "%-14s Cartesian 16^2, F^H DFT(rho) = N rho: rel error %.3g\n", all[i], e);
        /* The weights are rounded to float: ~1e-7 relative for every variant. */
        CHECK_MSG(e <= TOL, "%s: Cartesian rel error %.3g", all[i], e);
        free(re);
        free(im);
    }
    free(rho);
    free(kx);
    free(ky);
    free(kz);
    free(wr);
    free(wi);
    free(tr);
    free(ti);
}

int main(void)
{
    ku_seed("test_ksum_simd");
    /* weights: 0 real in [-1,1), 1 positive real (Q's |phi|^2), 2 complex */
    grid_case("3D 16^3 image grid, complex w", (int64_t[3]){16, 16, 16}, 2000, 0, 2, TOL);
    grid_case("3D 32x8x4 image grid, real w", (int64_t[3]){32, 8, 4}, 3000, 0, 0, TOL);
    grid_case("3D 10x6x5 image grid (short rows), complex w", (int64_t[3]){10, 6, 5}, 2000, 0, 2,
              TOL);
    grid_case("3D 40x3x2 image grid (row 40 = 16+16+8), complex w", (int64_t[3]){40, 3, 2}, 2000,
              0, 2, TOL);
    grid_case("3D 72x4x2 image grid (two segments), positive w", (int64_t[3]){72, 4, 2}, 2000, 0,
              1, TOL);
    grid_case("2D 48x48 image grid, complex w", (int64_t[3]){48, 48, 1}, 2000, 0, 2, TOL);
    grid_case("2D Q grid (n = 20: 40x40), positive w", (int64_t[3]){20, 20, 1}, 2000, 1, 1, TOL);
    grid_case("3D Q grid (n = 8: 16^3), positive w", (int64_t[3]){8, 8, 8}, 3000, 1, 1, TOL);
    /* The bias detector: positive weights, many samples, few points. The
     * unbiased polynomials give ~3.5e-7 here, the plain fit 3.2e-6. */
    grid_case("3D 16^3 image grid, positive w, M = 20000", (int64_t[3]){16, 16, 16}, 20000, 0, 1,
              1.5e-6);
    {
        int64_t n[3] = {32, 32, 32};
        ku_problem p;
        ku_problem_make(&p, 2000, n, 1);
        ku_points e;
        ku_points_random(&e, 3001, 3); /* not a multiple of 32: padded block */
        compare("explicit 3D points, complex w", &p, &e.pts, TOL);
        ku_points_free(&e);
        for (int64_t m = 0; m < p.in.m; m++)
            p.wr[m] = fabsf(p.wr[m]);
        p.in.wi = NULL;
        ku_points_random(&e, 500, 2);
        compare("explicit 2D points, positive w", &p, &e.pts, TOL);
        ku_points_free(&e);
        ku_problem_free(&p);
    }
    {
        /* General grids: offset centres, spacings that are not the size,
         * positions beyond [-1/2, 1/2); a slab of z planes 40..42 of 64^3. */
        int64_t n[3] = {32, 32, 32};
        ku_problem p;
        ku_problem_make(&p, 700, n, 1);
        lm_points o = {.n = 17 * 5 * 3, .g = {17, 5, 3}, .c = {-3, 7, 1}, .s = {10, 13, 3}};
        compare("grid 17x5x3, c (-3, 7, 1), s (10, 13, 3)", &p, &o, TOL);
        lm_points slab;
        lm_points_image_grid(&slab, (int64_t[3]){64, 64, 64});
        slab.g[2] = 3;
        slab.c[2] = 32 - 40;
        slab.n = 64 * 64 * 3;
        compare("slab z = 40..42 of 64^3", &p, &slab, TOL);
        ku_problem_free(&p);
    }
    test_grid_vs_explicit();
    test_cartesian();
    return lm_test_finish("test_ksum_simd");
}
