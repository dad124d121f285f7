/* Weight sets (lm_ksum_in.nsets): every available variant with C = 1, 3, 8
 * (and 11, 17: uneven blocks of sets in cpu-simd) against cpu-dp run set by
 * set, per set. Odd sample counts (across cpu-simd's 128-sample chunks) and
 * point counts that do not fill a 16-lane vector; image and Q grids,
 * explicit points, real weights; nsets 0 == 1; cancellation and progress;
 * bad nsets refused.
 *
 * Tolerances (relative 2-norm per set, docs/conventions.md section 3): each variant's
 * own one-set bound, as its tests state: cpu-dp exact (the sets run the
 * one-set arithmetic, bit for bit), cpu-sp 3e-5 (test_ksum_cpu), cpu-simd
 * and cpu-separable 5e-6 (test_ksum_simd), cpu-nufft 1e-4 against cpu-dp
 * (tolerance 1e-6 asked, single precision) and 1e-7 against its own one-set
 * runs (same plan, same arithmetic). GPU rows, where available, 1e-4. */
#include "ksum_util.h"

typedef struct sets_problem {
    lm_ksum_in in;
    float *kx, *ky, *kz, *wr, *wi;
} sets_problem;

/* m samples, C sets of weights uniform in [-1, 1) (complex unless real). */
static void sets_make(sets_problem *p, int64_t m, int64_t C, const int64_t n[3], int complex_w)
{
    memset(p, 0, sizeof *p);
    p->kx = malloc(m * sizeof(float));
    p->ky = malloc(m * sizeof(float));
    p->kz = malloc(m * sizeof(float));
    p->wr = malloc(m * C * sizeof(float));
    p->wi = complex_w ? malloc(m * C * sizeof(float)) : NULL;
    for (int64_t i = 0; i < m; i++) {
        p->kx[i] = (float)ku_uniform(-0.5 * n[0], 0.5 * n[0]);
        p->ky[i] = (float)ku_uniform(-0.5 * n[1], 0.5 * n[1]);
        p->kz[i] = n[2] > 1 ? (float)ku_uniform(-0.5 * n[2], 0.5 * n[2]) : 0.0f;
    }
    for (int64_t i = 0; i < m * C; i++) {
        p->wr[i] = (float)ku_uniform(-1, 1);
        if (complex_w)
            p->wi[i] = (float)ku_uniform(-1, 1);
    }
    p->in = (lm_ksum_in){.m = m, .kx = p->kx, .ky = p->ky, .kz = p->kz, .wr = p->wr, .wi = p->wi, .nsets = C};
}

static void sets_free(sets_problem *p)
{
    free(p->kx);
    free(p->ky);
    free(p->kz);
    free(p->wr);
    free(p->wi);
}

/* One set of p as a one-set problem. */
static lm_ksum_in one_set(const sets_problem *p, int64_t c)
{
    lm_ksum_in one = p->in;
    one.nsets = 1;
    one.wr = p->wr + c * p->in.m;
    one.wi = p->wi ? p->wi + c * p->in.m : NULL;
    return one;
}

static double tol_of(const lm_variant *v)
{
    if (strcmp(v->name, "cpu-dp") == 0)
        return 0.0;
    if (strcmp(v->name, "cpu-sp") == 0)
        return 3e-5;
    if (v->device == LM_DEVICE_GPU || v->approximate)
        return 1e-4;
    return 5e-6;
}

/* Runs variant v with all C sets at once, and compares each set with
 * cpu-dp run on that set alone (and, for NUFFTs, with v on that set). */
static void compare_sets(const char *what, const sets_problem *p, const lm_points *pts,
                         const lm_variant *v)
{
    const int64_t C = lm_ksum_nsets(&p->in), n = pts->n;
    lm_error err;
    const lm_variant *dp = lm_variant_find("cpu-dp", &err);
    float *re = calloc(n * C, sizeof(float)), *im = calloc(n * C, sizeof(float));
    float *rr = calloc(n, sizeof(float)), *ri = calloc(n, sizeof(float));
    float *sr = calloc(n, sizeof(float)), *si = calloc(n, sizeof(float));
    lm_code rc = lm_ksum_run(v, &p->in, pts, re, im, NULL, &err);
    CHECK_MSG(rc == LM_OK, "%s, %s, %lld sets: %s", v->name, what, (long long)C, err.msg);
    double worst = 0, worst_self = 0;
    for (int64_t c = 0; c < C && rc == LM_OK; c++) {
        lm_ksum_in one = one_set(p, c);
        CHECK_OK(lm_ksum_run(dp, &one, pts, rr, ri, NULL, &err), &err);
        double e = ku_rel_error(n, re + c * n, im + c * n, rr, ri);
        worst = e > worst ? e : worst;
        CHECK_MSG(e <= tol_of(v), "%s, %s, set %lld of %lld: rel error %.3g > %.1g", v->name,
                  what, (long long)c, (long long)C, e, tol_of(v));
        if (v->approximate) {
            CHECK_OK(lm_ksum_run(v, &one, pts, sr, si, NULL, &err), &err);
            double d = ku_rel_error(n, re + c * n, im + c * n, sr, si);
            worst_self = d > worst_self ? d : worst_self;
            CHECK_MSG(d <= 1e-7, "%s, %s, set %lld: differs from its one-set run by %.3g",
                      v->name, what, (long long)c, d);
        }
    }
    fprintf(stderr, "%-14s %-22s C = %2lld: worst rel error per set %.3g", v->name, what,
            (long long)C, worst);
    if (v->approximate)
        fprintf(stderr, " (vs own one-set runs %.3g)", worst_self);
    fputc('\n', stderr);
    free(re), free(im), free(rr), free(ri), free(sr), free(si);
}

/* Every available variant that takes these points. */
static void all_variants(const char *what, const sets_problem *p, const lm_points *pts)
{
    for (size_t i = 0; i < lm_variant_count(); i++) {
        const lm_variant *v = lm_variant_at(i);
        lm_error why;
        lm_error_clear(&why);
        if (v->available(&why) != LM_OK || (v->grid_only && pts->x))
            continue;
        compare_sets(what, p, pts, v);
    }
}

static void test_grids(void)
{
    static const int64_t counts[] = {1, 3, 8, 11, 17};
    /* 19 x 7 x 5: rows of 19 fill one vector and 3 lanes of the next. */
    int64_t n3[3] = {19, 7, 5}, n2[3] = {20, 13, 1};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        int64_t C = counts[i];
        sets_problem p;
        sets_make(&p, 301, C, n3, 1);
        lm_points g;
        lm_points_image_grid(&g, n3);
        all_variants("image grid 19x7x5", &p, &g);
        sets_free(&p);
        if (C > 8)
            continue;
        sets_make(&p, 1029, C, n2, 1);
        lm_points_image_grid(&g, n2);
        all_variants("image grid 20x13 (2D)", &p, &g);
        lm_points_q_grid(&g, n2);
        all_variants("Q grid 40x26", &p, &g);
        sets_free(&p);
    }
}

static void test_explicit(void)
{
    static const int64_t counts[] = {1, 3, 8, 11};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        int64_t n3[3] = {16, 16, 16};
        sets_problem p;
        sets_make(&p, 257, counts[i], n3, 1);
        ku_points e;
        ku_points_random(&e, 37, 3); /* one full vector, 5 lanes of the next, 27 of a pair */
        all_variants("37 explicit points", &p, &e.pts);
        ku_points_free(&e);
        /* grid positions given explicitly: cpu-simd's other path, same sums */
        lm_points g;
        lm_points_image_grid(&g, (int64_t[3]){9, 6, 3});
        ku_points_explicit(&e, &g);
        all_variants("9x6x3 as explicit", &p, &e.pts);
        ku_points_free(&e);
        sets_free(&p);
    }
}

/* Real weights (wi NULL) with sets: accepted, the same as complex weights
 * with zero imaginary parts. nsets 0 and 1 give the same as today. */
static void test_real_and_zero(void)
{
    int64_t n3[3] = {12, 10, 4};
    lm_points g;
    lm_points_image_grid(&g, n3);
    sets_problem p;
    sets_make(&p, 200, 3, n3, 0);
    all_variants("real weights", &p, &g);
    sets_free(&p);

    sets_make(&p, 200, 1, n3, 1);
    lm_error err;
    float *a = calloc(4 * g.n, sizeof(float));
    const char *names[] = {"cpu-dp", "cpu-sp", "cpu-simd", "cpu-separable", "cpu-nufft"};
    for (size_t i = 0; i < 5; i++) {
        const lm_variant *v = lm_variant_get_available(names[i], &err);
        CHECK(v != NULL);
        if (!v)
            continue;
        p.in.nsets = 0;
        CHECK_OK(lm_ksum_run(v, &p.in, &g, a, a + g.n, NULL, &err), &err);
        p.in.nsets = 1;
        CHECK_OK(lm_ksum_run(v, &p.in, &g, a + 2 * g.n, a + 3 * g.n, NULL, &err), &err);
        CHECK_MSG(memcmp(a, a + 2 * g.n, 2 * g.n * sizeof(float)) == 0,
                  "%s: nsets 0 and 1 differ", v->name);
    }
    free(a);
    sets_free(&p);
}

/* Sets are deterministic: one and two threads agree bit for bit. */
static void test_threads(void)
{
    int64_t n3[3] = {20, 9, 3};
    lm_points g;
    lm_points_image_grid(&g, n3);
    sets_problem p;
    sets_make(&p, 300, 5, n3, 1);
    float *a = calloc(4 * 5 * g.n, sizeof(float));
    const char *names[] = {"cpu-dp", "cpu-sp", "cpu-simd"};
    for (size_t i = 0; i < 3; i++) {
        lm_error err;
        const lm_variant *v = lm_variant_find(names[i], &err);
        lm_ctl one = {NULL, NULL, 1}, two = {NULL, NULL, 2};
        CHECK_OK(lm_ksum_run(v, &p.in, &g, a, a + 5 * g.n, &one, &err), &err);
        CHECK_OK(lm_ksum_run(v, &p.in, &g, a + 10 * g.n, a + 15 * g.n, &two, &err), &err);
        CHECK_MSG(memcmp(a, a + 10 * g.n, 10 * g.n * sizeof(float)) == 0,
                  "%s: sets with 1 and 2 threads differ", v->name);
    }
    free(a);
    sets_free(&p);
}

typedef struct progress_log {
    int calls;
    double last;
    int monotonic;
    int cancel_after; /* cancel on this call (1-based), 0 never */
} progress_log;

static int on_progress(void *user, double f)
{
    progress_log *l = user;
    l->calls++;
    if (f < l->last || f < 0 || f > 1)
        l->monotonic = 0;
    l->last = f;
    return l->cancel_after && l->calls >= l->cancel_after;
}

/* Native (cpu-simd) and looped (cpu-separable) sets: cancel at once, and a
 * full run reports increasing fractions ending at 1 across all sets. */
static void test_progress_cancel(void)
{
    int64_t n3[3] = {32, 32, 8};
    lm_points g;
    lm_points_image_grid(&g, n3);
    sets_problem p;
    sets_make(&p, 2000, 4, n3, 1);
    float *re = malloc(4 * g.n * sizeof(float)), *im = malloc(4 * g.n * sizeof(float));
    const char *names[] = {"cpu-dp", "cpu-sp", "cpu-simd", "cpu-separable", "cpu-nufft"};
    for (size_t i = 0; i < 5; i++) {
        lm_error err;
        const lm_variant *v = lm_variant_find(names[i], &err);
        progress_log l = {0, 0, 1, 1};
        lm_ctl ctl = {on_progress, &l, 0};
        lm_error_clear(&err);
        lm_code c = lm_ksum_run(v, &p.in, &g, re, im, &ctl, &err);
        CHECK_MSG(c == LM_ERR_CANCELLED, "%s, 4 sets: cancel gave %s", v->name, lm_code_name(c));
        CHECK(err.code == LM_ERR_CANCELLED);
        progress_log full = {0, 0, 1, 0};
        ctl.user = &full;
        CHECK_OK(lm_ksum_run(v, &p.in, &g, re, im, &ctl, &err), &err);
        CHECK_MSG(full.calls >= 2 && full.monotonic && full.last == 1.0,
                  "%s, 4 sets: %d reports, monotonic %d, last %g", v->name, full.calls,
                  full.monotonic, full.last);
    }
    free(re);
    free(im);
    sets_free(&p);
}

static void test_bad(void)
{
    int64_t n3[3] = {4, 4, 4};
    lm_points g;
    lm_points_image_grid(&g, n3);
    sets_problem p;
    sets_make(&p, 10, 3, n3, 1);
    float re[3 * 64], im[3 * 64];
    lm_error err;
    for (size_t i = 0; i < lm_variant_count(); i++) {
        const lm_variant *v = lm_variant_at(i);
        lm_ksum_in bad = p.in;
        bad.nsets = -1;
        CHECK(lm_ksum_run(v, &bad, &g, re, im, NULL, &err) == LM_ERR_INVALID);
        CHECK_MSG(strstr(err.msg, "weight sets") != NULL, "message: %s", err.msg);
        bad.nsets = LM_KSUM_MAX_SETS + 1;
        CHECK(lm_ksum_run(v, &bad, &g, re, im, NULL, &err) == LM_ERR_INVALID);
        bad.nsets = INT64_MAX;
        CHECK(lm_ksum_run(v, &bad, &g, re, im, NULL, &err) == LM_ERR_INVALID);
    }
    /* too many elements in all: refused before any array is read */
    const lm_variant *dp = lm_variant_find("cpu-dp", &err);
    lm_ksum_in big = p.in;
    big.m = ((int64_t)1 << 22) + 1;
    big.nsets = (int64_t)1 << 14;
    CHECK(lm_ksum_run(dp, &big, &g, re, im, NULL, &err) == LM_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "absurd") != NULL, "message: %s", err.msg);
    /* a bad weight in the last set is found and named */
    p.wi[2 * 10 + 7] = NAN;
    CHECK(lm_ksum_run(dp, &p.in, &g, re, im, NULL, &err) == LM_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "[27]") != NULL, "message: %s", err.msg);
    sets_free(&p);
}

int main(void)
{
    ku_seed("test_ksum_sets");
    test_grids();
    test_explicit();
    test_real_and_zero();
    test_threads();
    test_progress_cancel();
    test_bad();
    return lm_test_finish("test_ksum_sets");
}
