/* The variant table, point sets, FLOP accounting, lm_ksum_run's argument
 * checks, progress reporting and cancellation. */
#include <string.h>

#include "ksum_util.h"

static const char *cpu_direct[] = {"cpu-dp", "cpu-sp", "cpu-simd", "cpu-separable"};

static void test_table(void)
{
    size_t n = lm_variant_count();
    CHECK(n >= 5);
    const char *expect[] = {"cpu-dp", "cpu-sp", "cpu-simd", "cpu-nufft"};
    for (size_t i = 0; i < 4 && i < n; i++)
        CHECK_MSG(strcmp(lm_variant_at(i)->name, expect[i]) == 0, "row %zu is %s", i,
                  lm_variant_at(i)->name);
    CHECK(lm_variant_at(n) == NULL);
    for (size_t i = 0; i < n; i++) {
        const lm_variant *v = lm_variant_at(i);
        CHECK(v && v->name && v->description && v->ksum && v->available);
        for (size_t j = 0; j < i; j++)
            CHECK_MSG(strcmp(v->name, lm_variant_at(j)->name) != 0, "duplicate %s", v->name);
        lm_error err;
        CHECK(lm_variant_find(v->name, &err) == v);
    }
    lm_error err;
    const lm_variant *nufft = lm_variant_find("cpu-nufft", &err);
    CHECK(nufft && nufft->approximate && nufft->grid_only && nufft->device == LM_DEVICE_CPU);
    const lm_variant *sep = lm_variant_find("cpu-separable", &err);
    CHECK(sep && !sep->approximate && sep->grid_only);
    const lm_variant *dp = lm_variant_find("cpu-dp", &err);
    CHECK(dp && !dp->approximate && !dp->grid_only);

    lm_error_clear(&err);
    CHECK(lm_variant_find("gpu-warp9", &err) == NULL);
    CHECK(err.code == LM_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "gpu-warp9") && strstr(err.msg, "cpu-dp") &&
                  strstr(err.msg, "cpu-simd"),
              "message: %s", err.msg);
    fprintf(stderr, "unknown variant message: %s\n", err.msg);
    CHECK(lm_variant_find(NULL, &err) == NULL);

    for (size_t i = 0; i < 4; i++)
        CHECK(lm_variant_get_available(cpu_direct[i], &err) != NULL);
    /* Unavailable rows answer with a reason naming the variant. */
    for (size_t i = 0; i < n; i++) {
        const lm_variant *v = lm_variant_at(i);
        lm_error why;
        lm_error_clear(&why);
        if (v->available(&why) != LM_OK) {
            CHECK(lm_variant_get_available(v->name, &err) == NULL);
            CHECK(strstr(err.msg, v->name) != NULL);
            fprintf(stderr, "%s unavailable: %s\n", v->name, err.msg);
        }
    }
    CHECK(lm_ksum_flops_per_pair(0) == 15.0);
    CHECK(lm_ksum_flops_per_pair(1) == 11.0);
}

static void test_points(void)
{
    lm_points p;
    double x[3];
    lm_points_image_grid(&p, (int64_t[3]){4, 6, 1});
    CHECK(p.n == 24 && p.x == NULL && p.g[0] == 4 && p.g[1] == 6 && p.g[2] == 1);
    CHECK(p.c[0] == 2 && p.c[1] == 3 && p.s[0] == 4 && p.s[1] == 6);
    lm_points_get(&p, 0, x); /* first voxel: (-1/2, -1/2, 0) */
    CHECK_NEAR(x[0], -0.5, 0);
    CHECK_NEAR(x[1], -0.5, 0);
    CHECK_NEAR(x[2], 0.0, 0);
    lm_points_get(&p, 2 + 4 * 3, x); /* the centre voxel (2, 3) is at 0 */
    CHECK(x[0] == 0 && x[1] == 0 && x[2] == 0);
    lm_points_get(&p, 23, x);
    CHECK_NEAR(x[0], 0.25, 0);
    CHECK_NEAR(x[1], 2.0 / 6.0, 1e-16);

    lm_points_q_grid(&p, (int64_t[3]){4, 6, 1});
    CHECK(p.n == 8 * 12 && p.g[0] == 8 && p.g[1] == 12 && p.g[2] == 1);
    lm_points_get(&p, 0, x); /* (-1, -1, 0): every difference x_i - x_j */
    CHECK(x[0] == -1 && x[1] == -1 && x[2] == 0);
    lm_points_get(&p, p.n - 1, x);
    CHECK_NEAR(x[0], 0.75, 0);
    CHECK_NEAR(x[1], 5.0 / 6.0, 1e-16);
    lm_points_q_grid(&p, (int64_t[3]){4, 4, 4});
    CHECK(p.n == 512 && p.c[2] == 4 && p.s[2] == 4);

    float ex[2] = {0.1f, 0.2f}, ey[2] = {0.3f, 0.4f}, ez[2] = {0.5f, -0.5f};
    lm_points e = {.n = 2, .x = ex, .y = ey, .z = ez};
    lm_points_get(&e, 1, x);
    CHECK(x[0] == (double)0.2f && x[1] == (double)0.4f && x[2] == -0.5);
}

static void test_run_checks(void)
{
    int64_t n3[3] = {4, 4, 4};
    ku_problem p;
    ku_problem_make(&p, 10, n3, 1);
    lm_points g;
    lm_points_image_grid(&g, n3);
    float re[64], im[64];
    lm_error err;
    const lm_variant *v = lm_variant_find("cpu-dp", &err);
    CHECK_OK(lm_ksum_run(v, &p.in, &g, re, im, NULL, &err), &err);

    lm_ksum_in bad = p.in;
    bad.m = 0;
    CHECK(lm_ksum_run(v, &bad, &g, re, im, NULL, &err) == LM_ERR_INVALID);
    bad = p.in;
    bad.ky = NULL;
    CHECK(lm_ksum_run(v, &bad, &g, re, im, NULL, &err) == LM_ERR_INVALID);
    float saved = p.kx[3];
    p.kx[3] = NAN;
    CHECK(lm_ksum_run(v, &p.in, &g, re, im, NULL, &err) == LM_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "kx[3]") != NULL, "message: %s", err.msg);
    p.kx[3] = INFINITY;
    CHECK(lm_ksum_run(v, &p.in, &g, re, im, NULL, &err) == LM_ERR_INVALID);
    p.kx[3] = saved;
    saved = p.wi[2];
    p.wi[2] = NAN;
    CHECK(lm_ksum_run(v, &p.in, &g, re, im, NULL, &err) == LM_ERR_INVALID);
    p.wi[2] = saved;

    CHECK(lm_ksum_run(v, &p.in, &g, NULL, im, NULL, &err) == LM_ERR_INVALID);
    CHECK(lm_ksum_run(v, &p.in, &g, re, NULL, NULL, &err) == LM_ERR_INVALID);
    CHECK(lm_ksum_run(NULL, &p.in, &g, re, im, NULL, &err) == LM_ERR_INVALID);
    CHECK(lm_ksum_run(v, NULL, &g, re, im, NULL, &err) == LM_ERR_INVALID);

    lm_points badg = g;
    badg.n = 0;
    CHECK(lm_ksum_run(v, &p.in, &badg, re, im, NULL, &err) == LM_ERR_INVALID);
    badg = g;
    badg.n = 63; /* does not match 4 x 4 x 4 */
    CHECK(lm_ksum_run(v, &p.in, &badg, re, im, NULL, &err) == LM_ERR_INVALID);
    badg = g;
    badg.s[1] = 0;
    CHECK(lm_ksum_run(v, &p.in, &badg, re, im, NULL, &err) == LM_ERR_INVALID);

    /* grid-only variants refuse explicit points; NaN positions refused */
    ku_points e;
    ku_points_explicit(&e, &g);
    const lm_variant *sep = lm_variant_find("cpu-separable", &err);
    CHECK(lm_ksum_run(sep, &p.in, &e.pts, re, im, NULL, &err) == LM_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "cpu-separable") != NULL, "message: %s", err.msg);
    const lm_variant *nufft = lm_variant_find("cpu-nufft", &err);
    CHECK(lm_ksum_run(nufft, &p.in, &e.pts, re, im, NULL, &err) == LM_ERR_UNSUPPORTED);
    e.y[5] = NAN;
    CHECK(lm_ksum_run(v, &p.in, &e.pts, re, im, NULL, &err) == LM_ERR_INVALID);
    e.pts.z = NULL;
    CHECK(lm_ksum_run(v, &p.in, &e.pts, re, im, NULL, &err) == LM_ERR_INVALID);
    ku_points_free(&e);

    /* unavailable variants are refused with their reason */
    for (size_t i = 0; i < lm_variant_count(); i++) {
        const lm_variant *u = lm_variant_at(i);
        lm_error why;
        if (u->available(&why) != LM_OK) {
            lm_code c = lm_ksum_run(u, &p.in, &g, re, im, NULL, &err);
            CHECK(c != LM_OK);
            CHECK(strstr(err.msg, u->name) != NULL);
            break;
        }
    }
    ku_problem_free(&p);
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

static void test_progress_cancel(void)
{
    /* Enough work for many units in every variant. */
    int64_t n3[3] = {32, 32, 8};
    ku_problem p;
    ku_problem_make(&p, 3000, n3, 1);
    lm_points g;
    lm_points_image_grid(&g, n3);
    float *re = malloc(g.n * sizeof(float)), *im = malloc(g.n * sizeof(float));
    for (size_t i = 0; i < sizeof cpu_direct / sizeof cpu_direct[0]; i++) {
        lm_error err;
        const lm_variant *v = lm_variant_find(cpu_direct[i], &err);
        /* cancel at once */
        progress_log l = {0, 0, 1, 1};
        lm_ctl ctl = {on_progress, &l, 0};
        lm_error_clear(&err);
        lm_code c = lm_ksum_run(v, &p.in, &g, re, im, &ctl, &err);
        CHECK_MSG(c == LM_ERR_CANCELLED, "%s: cancel gave %s", v->name, lm_code_name(c));
        CHECK(err.code == LM_ERR_CANCELLED && strstr(err.msg, v->name) != NULL);
        /* a full run reports increasing fractions ending at 1 */
        progress_log full = {0, 0, 1, 0};
        ctl.user = &full;
        ctl.threads = 1;
        CHECK_OK(lm_ksum_run(v, &p.in, &g, re, im, &ctl, &err), &err);
        CHECK(full.calls >= 2 && full.monotonic && full.last == 1.0);
    }
    /* cancel mid-way: cpu-sp takes long enough for several reports */
    {
        lm_error err;
        const lm_variant *v = lm_variant_find("cpu-sp", &err);
        progress_log l = {0, 0, 1, 3};
        lm_ctl ctl = {on_progress, &l, 0};
        lm_code c = lm_ksum_run(v, &p.in, &g, re, im, &ctl, &err);
        CHECK_MSG(c == LM_ERR_CANCELLED, "cpu-sp mid-way cancel gave %s", lm_code_name(c));
        CHECK(l.last < 1.0);
        fprintf(stderr, "cpu-sp cancelled after %d reports at %.2f\n", l.calls, l.last);
    }
    free(re);
    free(im);
    ku_problem_free(&p);
}

/* Thread count does not change the result of the scalar reference. */
static void test_threads(void)
{
    int64_t n3[3] = {16, 16, 4};
    ku_problem p;
    ku_problem_make(&p, 500, n3, 1);
    lm_points g;
    lm_points_image_grid(&g, n3);
    float *a = malloc(g.n * 4 * sizeof(float));
    float *ar = a, *ai = a + g.n, *br = a + 2 * g.n, *bi = a + 3 * g.n;
    for (size_t i = 0; i < sizeof cpu_direct / sizeof cpu_direct[0]; i++) {
        lm_error err;
        const lm_variant *v = lm_variant_find(cpu_direct[i], &err);
        lm_ctl one = {NULL, NULL, 1}, two = {NULL, NULL, 2};
        CHECK_OK(lm_ksum_run(v, &p.in, &g, ar, ai, &one, &err), &err);
        CHECK_OK(lm_ksum_run(v, &p.in, &g, br, bi, &two, &err), &err);
        /* re and im are adjacent in a, so one comparison covers both */
        CHECK_MSG(memcmp(ar, br, 2 * g.n * sizeof(float)) == 0, "%s: 1 and 2 threads differ",
                  v->name);
    }
    free(a);
    ku_problem_free(&p);
}

int main(void)
{
    ku_seed("test_variants");
    test_table();
    test_points();
    test_run_checks();
    test_progress_cancel();
    test_threads();
    return lm_test_finish("test_variants");
}
