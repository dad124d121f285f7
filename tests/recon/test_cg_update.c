/* The back ends' fused CG update (lm_backend.h's cg_update) against its
 * definition in long double: x += a p, r -= a q, then <r, r>, Re <x, r> and
 * Re <x, b> of the new vectors, on the CPU with one and two threads and
 * with a GPU when there is one (skipped without). The vectors are 1e-6
 * relative (float steps); the sums 1e-9 relative (float inputs summed in
 * double: the order is the only difference). And the CPU's sums (dot,
 * cg_update, group_norm) are the same bits with 1, 2, 3 and 7 threads:
 * they add fixed chunks in a fixed order. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_backend.h"
#include "lm_test.h"
#include "solver_common.h"

enum { N = 100003 }; /* odd: no back end's blocks divide it */

static void fill(lm_cfloat *x, int64_t n)
{
    for (int64_t j = 0; j < n; j++)
        x[j] = CMPLXF((float)(2 * tst_uniform() - 1), (float)(2 * tst_uniform() - 1));
}

static void check_backend(lm_backend *be, const char *name)
{
    lm_error err = {0};
    const float a = 0.37f;
    lm_cfloat *h[5], *d[5]; /* x p r q b */
    for (int i = 0; i < 5; i++) {
        h[i] = malloc(sizeof(lm_cfloat) * N);
        fill(h[i], N);
        d[i] = be->alloc(be, N, "cg update test");
        be->upload(be, d[i], h[i], sizeof(lm_cfloat) * N);
    }
    CHECK_OK(be->check(be, &err), &err);
    /* the reference, from the float inputs, in long double */
    long double rr = 0, xr = 0, xb = 0, xx = 0, bb = 0;
    long double complex *xe = malloc(sizeof *xe * N), *re = malloc(sizeof *re * N);
    for (int64_t j = 0; j < N; j++) {
        xe[j] = (long double complex)h[0][j] + (long double)a * (long double complex)h[1][j];
        re[j] = (long double complex)h[2][j] - (long double)a * (long double complex)h[3][j];
        rr += creall(conjl(re[j]) * re[j]);
        xr += creall(conjl(xe[j]) * re[j]);
        xb += creall(conjl(xe[j]) * (long double complex)h[4][j]);
        xx += creall(conjl(xe[j]) * xe[j]);
        bb += (long double)cabsf(h[4][j]) * cabsf(h[4][j]);
    }
    double sums[3] = {NAN, NAN, NAN};
    be->cg_update(be, N, a, d[0], d[1], d[2], d[3], d[4], sums);
    CHECK_OK(be->check(be, &err), &err);
    CHECK_MSG(fabs(sums[0] - (double)rr) <= 1e-9 * fabsl(rr), "%s: <r,r> %.17g, reference %.17Lg", name, sums[0], rr);
    /* relative to Cauchy-Schwarz's bound: the sums of random signs are small */
    CHECK_MSG(fabs(sums[1] - (double)xr) <= 1e-9 * (double)sqrtl(xx * rr), "%s: Re<x,r> %.17g, reference %.17Lg",
              name, sums[1], xr);
    CHECK_MSG(fabs(sums[2] - (double)xb) <= 1e-9 * (double)sqrtl(xx * bb), "%s: Re<x,b> %.17g, reference %.17Lg",
              name, sums[2], xb);
    lm_cfloat *got = malloc(sizeof *got * N);
    for (int v = 0; v < 2; v++) {
        be->download(be, got, d[v == 0 ? 0 : 2], sizeof *got * N);
        const long double complex *ref = v == 0 ? xe : re;
        double worst = 0;
        for (int64_t j = 0; j < N; j++)
            worst = fmax(worst, (double)cabsl((long double complex)got[j] - ref[j]) / (double)(cabsl(ref[j]) + 1));
        CHECK_MSG(worst < 1e-6, "%s: %s off by %g (relative)", name, v == 0 ? "x" : "r", worst);
    }
    CHECK_OK(be->check(be, &err), &err);
    for (int i = 0; i < 5; i++) {
        be->release(be, d[i]);
        free(h[i]);
    }
    free(xe), free(re), free(got);
}

/* The CPU back end's sums on the same vectors with `threads` threads. */
static void cpu_sums(int threads, lm_cfloat *const h[5], double out[5])
{
    lm_error err = {0};
    lm_backend *be = NULL;
    CHECK_OK(lm_backend_cpu_new(threads, &be, &err), &err);
    if (!be)
        return;
    lm_cfloat *x = malloc(sizeof *x * N), *r = malloc(sizeof *r * N);
    memcpy(x, h[0], sizeof *x * N);
    memcpy(r, h[2], sizeof *r * N);
    out[0] = be->dot(be, N, h[1], h[3]);
    be->cg_update(be, N, 0.37f, x, h[1], r, h[3], h[4], out + 1);
    out[4] = be->group_norm(be, N / 3, 3, h[4]);
    free(x), free(r);
    lm_backend_free(be);
}

static void check_reproducible(void)
{
    lm_cfloat *h[5];
    for (int i = 0; i < 5; i++) {
        h[i] = malloc(sizeof(lm_cfloat) * N);
        fill(h[i], N);
    }
    double one[5], other[5];
    cpu_sums(1, h, one);
    const int counts[] = {2, 3, 7};
    for (int k = 0; k < 3; k++) {
        cpu_sums(counts[k], h, other);
        CHECK_MSG(memcmp(one, other, sizeof one) == 0, "cpu sums with %d threads differ from 1 thread's", counts[k]);
    }
    for (int i = 0; i < 5; i++)
        free(h[i]);
}

int main(void)
{
    lm_error err = {0};
    for (int threads = 1; threads <= 2; threads++) {
        lm_backend *be = NULL;
        CHECK_OK(lm_backend_cpu_new(threads, &be, &err), &err);
        if (!be)
            return 1;
        check_backend(be, threads == 1 ? "cpu, 1 thread" : "cpu, 2 threads");
        lm_backend_free(be);
    }
    check_reproducible();
    lm_backend *g = NULL;
    if (lm_backend_gpu_new(&g, &err) == LM_OK) {
        check_backend(g, "gpu");
        lm_backend_free(g);
    } else {
        fprintf(stderr, "cg_update: GPU part skipped: %s\n", err.msg);
    }
    return lm_test_finish("cg_update");
}
