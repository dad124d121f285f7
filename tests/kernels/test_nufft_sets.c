/* lm_nufft_execute_sets: several weight sets through one plan, side by side
 * on two threads (each on a grid of its own). Type 1 with complex and with
 * real weights and type 2, in 2D and 3D: every set against a direct
 * double-precision sum (within the NUFFT's tolerance) and against the same
 * set through lm_nufft_execute (the one-by-one path); progress reaches 1,
 * and a cancel from the progress callback stops it with LM_ERR_CANCELLED. */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lm_nufft.h"
#include "lm_test.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}

typedef struct prog {
    double last;
    int calls, cancel_at;
} prog;

static int on_progress(void *user, double f)
{
    prog *p = user;
    p->last = f;
    return ++p->calls >= p->cancel_at && p->cancel_at > 0;
}

/* ||a - b|| / ||b|| over n split-complex values, b double complex */
static double rel(const float *are, const float *aim, const double complex *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        const double complex e = CMPLX(are[i], aim[i]) - b[i];
        num += creal(e * conj(e));
        den += creal(b[i] * conj(b[i]));
    }
    return sqrt(num / den);
}

static double rel_ff(const float *are, const float *aim, const float *bre, const float *bim, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        const double er = (double)are[i] - bre[i], ei = (double)aim[i] - bim[i];
        num += er * er + ei * ei;
        den += (double)bre[i] * bre[i] + (double)bim[i] * bim[i];
    }
    return sqrt(num / den);
}

static void run_case(int dim, int type, int real_w)
{
    const int64_t g[3] = {dim == 3 ? 12 : 40, dim == 3 ? 10 : 36, dim == 3 ? 8 : 1};
    const int64_t c[3] = {g[0] / 2, g[1] / 2, g[2] / 2}, n = g[0] * g[1] * g[2], m = 700, nsets = 5;
    float *k = malloc((size_t)(3 * m) * sizeof *k);
    for (int64_t j = 0; j < m; j++)
        for (int a = 0; a < 3; a++)
            k[a * m + j] = a < dim ? (float)((urand() - 0.5) * (double)g[a]) : 0.0f;
    const int64_t nin = type == 1 ? m : n, nout = type == 1 ? n : m;
    float *ire = malloc((size_t)(nsets * nin) * sizeof *ire), *iim = malloc((size_t)(nsets * nin) * sizeof *iim);
    for (int64_t i = 0; i < nsets * nin; i++) {
        ire[i] = (float)(2 * urand() - 1);
        iim[i] = real_w ? 0.0f : (float)(2 * urand() - 1);
    }
    float *ore = malloc((size_t)(nsets * nout) * sizeof *ore), *oim = malloc((size_t)(nsets * nout) * sizeof *oim);
    float *sre = malloc((size_t)nout * sizeof *sre), *sim = malloc((size_t)nout * sizeof *sim);
    double complex *ref = malloc((size_t)nout * sizeof *ref);
    lm_nufft_opts o;
    lm_nufft_default_opts(&o);
    o.threads = 2;
    lm_nufft_plan *p = NULL, *q = NULL;
    lm_error err = {0};
    const int sign = type == 1 ? 1 : -1;
    CHECK_OK(lm_nufft_make_plan(type, dim, g, sign, 1e-6, &o, &p, &err), &err);
    CHECK_OK(lm_nufft_make_plan(type, dim, g, sign, 1e-6, &o, &q, &err), &err);
    if (!p || !q)
        goto out;
    CHECK_OK(lm_nufft_set_points(p, m, k, k + m, dim == 3 ? k + 2 * m : NULL, c, g, &err), &err);
    CHECK_OK(lm_nufft_set_points(q, m, k, k + m, dim == 3 ? k + 2 * m : NULL, c, g, &err), &err);
    prog pr = {0};
    lm_ctl ctl = {.progress = on_progress, .user = &pr};
    CHECK_OK(lm_nufft_execute_sets(p, nsets, ire, real_w ? NULL : iim, nin, ore, oim, nout, &ctl, &err), &err);
    CHECK_MSG(pr.last == 1.0, "progress ended at %g", pr.last);
    double worst_ref = 0, worst_one = 0;
    for (int64_t s = 0; s < nsets; s++) {
        /* direct sum in double: type 1 grid <- samples, type 2 samples <- grid */
        for (int64_t o2 = 0; o2 < nout; o2++) {
            double complex acc = 0;
            for (int64_t i2 = 0; i2 < nin; i2++) {
                const int64_t jm = type == 1 ? i2 : o2, jv = type == 1 ? o2 : i2;
                const int64_t iv[3] = {jv % g[0], jv / g[0] % g[1], jv / (g[0] * g[1])};
                double ph = 0;
                for (int a = 0; a < 3; a++)
                    ph += (double)k[a * m + jm] * (double)(iv[a] - c[a]) / (double)g[a];
                acc += CMPLX(ire[s * nin + i2], iim[s * nin + i2]) * cexp(I * sign * 2 * M_PI * ph);
            }
            ref[o2] = acc;
        }
        const double r = rel(ore + s * nout, oim + s * nout, ref, nout);
        worst_ref = r > worst_ref ? r : worst_ref;
        CHECK_OK(lm_nufft_execute(q, ire + s * nin, real_w ? NULL : iim + s * nin, sre, sim, NULL, &err), &err);
        const double r1 = rel_ff(ore + s * nout, oim + s * nout, sre, sim, nout);
        worst_one = r1 > worst_one ? r1 : worst_one;
    }
    printf("%dD type %d %s weights, %lld sets: against the direct sum %.2e, against one by one %.2e\n", dim, type,
           real_w ? "real" : "complex", (long long)nsets, worst_ref, worst_one);
    CHECK(worst_ref < 1e-5);
    CHECK(worst_one < 1e-6);
    /* a cancel from the callback */
    pr = (prog){.cancel_at = 2};
    CHECK(lm_nufft_execute_sets(p, nsets, ire, real_w ? NULL : iim, nin, ore, oim, nout, &ctl, &err) ==
          LM_ERR_CANCELLED);
out:
    lm_nufft_destroy(p);
    lm_nufft_destroy(q);
    free(k), free(ire), free(iim), free(ore), free(oim), free(sre), free(sim), free(ref);
}

int main(void)
{
    for (int dim = 2; dim <= 3; dim++) {
        run_case(dim, 1, 0);
        run_case(dim, 1, 1);
        run_case(dim, 2, 0);
    }
    return lm_test_finish("nufft_sets");
}
