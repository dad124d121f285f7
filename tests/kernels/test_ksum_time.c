/* The off-resonance term: out(x_j) = sum_m w_m exp(+i 2 pi (k_m . x_j + f_j t_m))
 * for every CPU variant with time_term, against a long-double sum written
 * here, on grid and explicit points, 2D and 3D, one weight set and three.
 *
 * Tolerances (relative 2-norm error against the long-double sum):
 *   cpu-dp    per element: half an ulp of float on output (2^-24 |ref|,
 *             rounded up to 1e-7) + 1e-12 sum|w| (the double phase and sums);
 *   cpu-sp    3e-5: the paper's float loop rounds its unreduced argument
 *             2 pi (k.x + f t), here up to ~20 cycles (125 rad, ulp 7.6e-6
 *             rad), as in test_ksum_cpu;
 *   cpu-simd  5e-6: the phase reaches float after exact reduction in
 *             cycles; on a grid the lane's f - fc (fc the vector's midrange
 *             field map) times t joins in float, ~1e-7 cycles for the
 *             |f - fc| t here (as in test_ksum_simd).
 * t = 0 (any f) and f = 0 (any t) give the result without the term to
 * 1e-7 (float rounding of outputs; the code paths differ in FMA
 * contraction only). Variants without the term refuse it clearly; times
 * without a field map (or the reverse) are refused. */
#include <string.h>

#include "ksum_util.h"

static const char *const variants[] = {"cpu-dp", "cpu-sp", "cpu-simd"};
#define NV (sizeof variants / sizeof variants[0])

static double tol_of(const char *v)
{
    return !strcmp(v, "cpu-sp") ? 3e-5 : !strcmp(v, "cpu-simd") ? 5e-6 : 1e-7;
}

typedef struct tcase {
    ku_problem p;
    float *wr, *wi; /* nsets x m */
    float *t;
    float *f;
    lm_ksum_in in;
    lm_points pts;
    ku_points ex;    /* explicit points, when used */
    int64_t nsets;
} tcase;

/* Field map: smooth (a few ripples over the FOV) plus rough (random per
 * point) parts, in Hz; times over a readout of tmax seconds with jitter. */
static void make_case(tcase *c, int64_t m, const int64_t n[3], int64_t nsets, int explicit_pts, double fmax,
                      double rough, double tmax)
{
    memset(c, 0, sizeof *c);
    c->nsets = nsets;
    ku_problem_make(&c->p, m, n, 1);
    c->wr = malloc((size_t)(m * nsets) * sizeof(float));
    c->wi = malloc((size_t)(m * nsets) * sizeof(float));
    for (int64_t i = 0; i < m * nsets; i++) {
        c->wr[i] = (float)ku_uniform(-1, 1);
        c->wi[i] = (float)ku_uniform(-1, 1);
    }
    c->t = malloc((size_t)m * sizeof(float));
    for (int64_t i = 0; i < m; i++)
        c->t[i] = (float)(tmax * ((double)(i % 64) / 64.0 + ku_uniform(0, 1.0 / 64.0)));
    if (explicit_pts) {
        ku_points_random(&c->ex, n[0] * n[1] * n[2], n[2] > 1 ? 3 : 2);
        c->pts = c->ex.pts;
    } else {
        lm_points_image_grid(&c->pts, n);
    }
    c->f = malloc((size_t)c->pts.n * sizeof(float));
    for (int64_t j = 0; j < c->pts.n; j++) {
        double x[3];
        lm_points_get(&c->pts, j, x);
        double s = sin(2 * M_PI * (0.7 * x[0] + 0.3 * x[1])) * 0.6 + 0.4 * x[2] * 2;
        c->f[j] = (float)(fmax * s + rough * ku_uniform(-1, 1));
    }
    c->pts.f = c->f;
    c->in = c->p.in;
    c->in.wr = c->wr;
    c->in.wi = c->wi;
    c->in.nsets = nsets;
    c->in.t = c->t;
}

static void free_case(tcase *c)
{
    ku_problem_free(&c->p);
    free(c->wr);
    free(c->wi);
    free(c->t);
    free(c->f);
    if (c->ex.x)
        ku_points_free(&c->ex);
}

/* The long-double sum of every set at every point; sum|w| of each set in wsum. */
static void reference(const tcase *c, long double *rr, long double *ri, double *wsum)
{
    const long double two_pi = 6.283185307179586476925286766559005768L;
    const int64_t m = c->in.m, n = c->pts.n;
    for (int64_t s = 0; s < c->nsets; s++) {
        wsum[s] = 0;
        for (int64_t i = 0; i < m; i++)
            wsum[s] += hypot(c->wr[s * m + i], c->wi[s * m + i]);
    }
    for (int64_t j = 0; j < n; j++) {
        double x[3];
        lm_points_get(&c->pts, j, x);
        for (int64_t s = 0; s < c->nsets; s++)
            rr[s * n + j] = ri[s * n + j] = 0;
        for (int64_t i = 0; i < m; i++) {
            long double ph = (long double)c->p.kx[i] * x[0] + (long double)c->p.ky[i] * x[1] +
                             (long double)c->p.kz[i] * x[2] + (long double)c->f[j] * c->t[i];
            ph -= rintl(ph);
            long double co = cosl(two_pi * ph), sn = sinl(two_pi * ph);
            for (int64_t s = 0; s < c->nsets; s++) {
                long double a = c->wr[s * m + i], b = c->wi[s * m + i];
                rr[s * n + j] += a * co - b * sn;
                ri[s * n + j] += a * sn + b * co;
            }
        }
    }
}

static lm_code run(const char *name, const lm_ksum_in *in, const lm_points *pts, int64_t nsets, float **re,
                   float **im, lm_error *err)
{
    *re = calloc((size_t)(pts->n * nsets), sizeof(float));
    *im = calloc((size_t)(pts->n * nsets), sizeof(float));
    const lm_variant *v = lm_variant_get_available(name, err);
    if (!v)
        return err->code;
    return lm_ksum_run(v, in, pts, *re, *im, NULL, err);
}

static void check_case(const char *what, tcase *c)
{
    const int64_t n = c->pts.n, ns = c->nsets, tot = n * ns;
    long double *rr = malloc((size_t)tot * sizeof(long double)), *ri = malloc((size_t)tot * sizeof(long double));
    float *fr = malloc((size_t)tot * sizeof(float)), *fi = malloc((size_t)tot * sizeof(float));
    double wsum[8];
    reference(c, rr, ri, wsum);
    for (int64_t i = 0; i < tot; i++) {
        fr[i] = (float)rr[i];
        fi[i] = (float)ri[i];
    }
    for (size_t k = 0; k < NV; k++) {
        float *re, *im;
        lm_error err;
        lm_error_clear(&err);
        lm_code rc = run(variants[k], &c->in, &c->pts, ns, &re, &im, &err);
        CHECK_MSG(rc == LM_OK, "%s, %s: %s", variants[k], what, err.msg);
        if (rc == LM_OK) {
            for (int64_t s = 0; s < ns; s++) {
                double e = ku_rel_error(n, re + s * n, im + s * n, fr + s * n, fi + s * n);
                fprintf(stderr, "%-8s %-28s set %lld/%lld: rel error %.3g (tol %.1g)\n", variants[k], what,
                        (long long)s, (long long)ns, e, tol_of(variants[k]));
                CHECK_MSG(e <= tol_of(variants[k]), "%s, %s, set %lld: rel error %.3g > %.1g", variants[k], what,
                          (long long)s, e, tol_of(variants[k]));
            }
            if (!strcmp(variants[k], "cpu-dp")) {
                int bad = 0;
                for (int64_t i = 0; i < tot && bad < 5; i++) {
                    const int64_t s = i / n;
                    const double er = fabs(re[i] - (double)rr[i]), ei = fabs(im[i] - (double)ri[i]);
                    const double tr = 1e-7 * fabsl(rr[i]) + 1e-12 * wsum[s];
                    const double ti = 1e-7 * fabsl(ri[i]) + 1e-12 * wsum[s];
                    if (er > tr || ei > ti) {
                        bad++;
                        CHECK_MSG(0, "cpu-dp, %s, element %lld: (%.9g, %.9g) vs (%.9Lg, %.9Lg)", what,
                                  (long long)i, re[i], im[i], rr[i], ri[i]);
                    }
                }
            }
        }
        free(re);
        free(im);
    }
    free(rr);
    free(ri);
    free(fr);
    free(fi);
}

/* t = 0 with a field map, and f = 0 with times, against no term at all. */
static void check_zero_term(const char *what, tcase *c)
{
    const int64_t n = c->pts.n, ns = c->nsets, m = c->in.m;
    float *zt = calloc((size_t)m, sizeof(float)), *zf = calloc((size_t)n, sizeof(float));
    lm_ksum_in plain = c->in, t0 = c->in, f0 = c->in;
    lm_points pplain = c->pts, pt0 = c->pts, pf0 = c->pts;
    plain.t = NULL;
    pplain.f = NULL;
    t0.t = zt;
    pf0.f = zf;
    for (size_t k = 0; k < NV; k++) {
        float *ar, *ai, *br, *bi, *cr, *ci;
        lm_error err;
        CHECK_OK(run(variants[k], &plain, &pplain, ns, &ar, &ai, &err), &err);
        CHECK_OK(run(variants[k], &t0, &pt0, ns, &br, &bi, &err), &err);
        CHECK_OK(run(variants[k], &f0, &pf0, ns, &cr, &ci, &err), &err);
        const double e1 = ku_rel_error(n * ns, br, bi, ar, ai), e2 = ku_rel_error(n * ns, cr, ci, ar, ai);
        CHECK_MSG(e1 <= 1e-7, "%s, %s, t = 0: differs from no term by %.3g", variants[k], what, e1);
        CHECK_MSG(e2 <= 1e-7, "%s, %s, f = 0: differs from no term by %.3g", variants[k], what, e2);
        free(ar);
        free(ai);
        free(br);
        free(bi);
        free(cr);
        free(ci);
    }
    free(zt);
    free(zf);
}

/* One sample k = 0, w = 1: f = 100 Hz, t = 2.5 ms is a quarter cycle, so
 * the sum is exactly i (the sign convention exp(+i 2 pi f t)); f = -200 Hz
 * gives -1. */
static void test_hand_computed(void)
{
    float kx[1] = {0}, ky[1] = {0}, kz[1] = {0}, wr[1] = {1}, t[1] = {2.5e-3f};
    float px[2] = {0.1f, -0.3f}, py[2] = {0, 0.2f}, pz[2] = {0, 0}, f[2] = {100, -200};
    lm_ksum_in in = {.m = 1, .kx = kx, .ky = ky, .kz = kz, .wr = wr, .t = t};
    lm_points pts = {.n = 2, .x = px, .y = py, .z = pz, .f = f};
    for (size_t k = 0; k < NV; k++) {
        float re[2], im[2];
        lm_error err;
        const lm_variant *v = lm_variant_get_available(variants[k], &err);
        CHECK(v != NULL);
        if (!v)
            continue;
        CHECK_OK(lm_ksum_run(v, &in, &pts, re, im, NULL, &err), &err);
        CHECK_MSG(fabs(re[0]) < 2e-6 && fabs(im[0] - 1) < 2e-6, "%s: (%g, %g), want i", variants[k], re[0], im[0]);
        CHECK_MSG(fabs(re[1] + 1) < 2e-6 && fabs(im[1]) < 2e-6, "%s: (%g, %g), want -1", variants[k], re[1], im[1]);
    }
}

static void test_refusals(void)
{
    const int64_t n3[3] = {16, 16, 1};
    tcase c;
    make_case(&c, 100, n3, 1, 0, 50, 0, 5e-3);
    float *re = calloc((size_t)c.pts.n, sizeof(float)), *im = calloc((size_t)c.pts.n, sizeof(float));
    lm_error err;
    /* Variants that rely on the sum's structure refuse, saying what to do. */
    static const char *const no_term[] = {"cpu-nufft", "cpu-separable"};
    for (size_t k = 0; k < 2; k++) {
        const lm_variant *v = lm_variant_find(no_term[k], &err);
        CHECK(v != NULL && !v->time_term);
        if (!v)
            continue;
        lm_error_clear(&err);
        lm_code rc = lm_ksum_run(v, &c.in, &c.pts, re, im, NULL, &err);
        CHECK_MSG(rc == LM_ERR_UNSUPPORTED, "%s: %d", no_term[k], (int)rc);
        CHECK_MSG(strstr(err.msg, no_term[k]) && strstr(err.msg, "no off-resonance term") &&
                      strstr(err.msg, "time segmentation"),
                  "message: %s", err.msg);
        /* Called directly, the kernel refuses too. */
        lm_error_clear(&err);
        rc = v->ksum(&c.in, &c.pts, re, im, NULL, &err);
        CHECK_MSG(rc == LM_ERR_UNSUPPORTED && strstr(err.msg, "no off-resonance term"), "%s direct: %s",
                  no_term[k], err.msg);
    }
    /* Every CPU variant with the term says so; times or field map alone are refused. */
    for (size_t k = 0; k < NV; k++) {
        const lm_variant *v = lm_variant_find(variants[k], &err);
        CHECK(v != NULL && v->time_term);
        if (!v)
            continue;
        lm_ksum_in half = c.in;
        lm_points hp = c.pts;
        hp.f = NULL;
        lm_error_clear(&err);
        CHECK(lm_ksum_run(v, &half, &hp, re, im, NULL, &err) == LM_ERR_INVALID);
        CHECK_MSG(strstr(err.msg, "go together") != NULL, "message: %s", err.msg);
        lm_error_clear(&err);
        CHECK(v->ksum(&half, &hp, re, im, NULL, &err) == LM_ERR_INVALID);
        half.t = NULL;
        hp.f = c.f;
        lm_error_clear(&err);
        CHECK(lm_ksum_run(v, &half, &hp, re, im, NULL, &err) == LM_ERR_INVALID);
        CHECK_MSG(strstr(err.msg, "field map") != NULL, "message: %s", err.msg);
        /* Non-finite values are refused. */
        float keep = c.f[3];
        c.f[3] = NAN;
        lm_error_clear(&err);
        CHECK(lm_ksum_run(v, &c.in, &c.pts, re, im, NULL, &err) == LM_ERR_INVALID);
        CHECK_MSG(strstr(err.msg, "field map") != NULL, "message: %s", err.msg);
        c.f[3] = keep;
    }
    free(re);
    free(im);
    free_case(&c);
}

int main(void)
{
    ku_seed("ksum_time");
    test_hand_computed();
    test_refusals();
    static const struct {
        const char *name;
        int64_t n[3];
        int explicit_pts;
    } geo[] = {
        {"grid 2D 40x24", {40, 24, 1}, 0},
        {"grid 3D 20x12x6", {20, 12, 6}, 0},
        {"explicit 2D", {24, 20, 1}, 1},
        {"explicit 3D", {12, 10, 8}, 1},
    };
    for (size_t g = 0; g < sizeof geo / sizeof geo[0]; g++)
        for (int64_t ns = 1; ns <= 3; ns += 2) {
            char what[96];
            tcase c;
            /* Up to ~270 Hz over a 10 ms readout: |f t| to 2.7 cycles, with
             * a rough part of 40 Hz (neighbouring lanes differ). */
            make_case(&c, 700, geo[g].n, ns, geo[g].explicit_pts, 250, 40, 10e-3);
            snprintf(what, sizeof what, "%s", geo[g].name);
            check_case(what, &c);
            check_zero_term(what, &c);
            free_case(&c);
        }
    /* A large smooth off-resonance: 600 Hz over 30 ms, |f t| to 18 cycles. */
    {
        tcase c;
        const int64_t n[3] = {36, 20, 4};
        make_case(&c, 600, n, 1, 0, 600, 0, 30e-3);
        check_case("grid 3D, |f t| to 18 cycles", &c);
        free_case(&c);
        make_case(&c, 600, n, 3, 0, 600, 0, 30e-3);
        check_case("grid 3D, |f t| to 18, 3 sets", &c);
        free_case(&c);
    }
    return lm_test_finish("ksum_time");
}
