/* Real-time frames by a sliding window (lm_sliding.h), on a 2D 48^2
 * golden-angle radial acquisition with 4 coils:
 * - a cold frame run to convergence equals the static CG reconstruction
 *   (lm_recon_run, Toeplitz Q) of the same window and lambda, to 1e-4 of
 *   its maximum: the same minimiser reached through the NUFFT pair (both
 *   operators are within about 1e-5 of the exact one; the system's
 *   condition, about 1/lambda, amplifies that: 6e-5 at lambda 0.1, 4e-4 at
 *   0.01);
 * - a warm-started frame is nearer its window's minimiser after a few
 *   iterations than a cold start after as many;
 * - lm_sliding_run makes (acquisitions - window) / step + 1 frames, frame f
 *   from acquisitions [f step, f step + window), equal to the frames made
 *   one by one;
 * - maps estimated from the first window when none are given;
 * - bad WINDOW:STEP, a window longer than the data, partial acquisitions:
 *   one-line errors. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_encoding.h"
#include "lm_frames.h"
#include "lm_recon.h"
#include "lm_sliding.h"
#include "lm_test.h"
#include "solver_common.h"

enum { NX = 48, NS = 48, NC = 4, NACQ = 40 };

static lm_error err;

static lm_traj *golden_traj(void)
{
    lm_traj *t = lm_traj_new((int64_t)NACQ * NS, 2, &err);
    for (int s = 0; s < NACQ; s++) {
        const double a = s * 111.246117975 * M_PI / 180.0; /* the golden angle */
        for (int i = 0; i < NS; i++) {
            const double r = i - NS / 2;
            float *k = t->k + 3 * ((int64_t)s * NS + i);
            k[0] = (float)(r * cos(a));
            k[1] = (float)(r * sin(a));
            k[2] = 0;
        }
    }
    t->readout = NS;
    return t;
}

static lm_sens *smooth_maps(void)
{
    const int64_t n[3] = {NX, NX, 1};
    lm_sens *s = lm_sens_new(n, NC, &err);
    for (int c = 0; c < NC; c++) {
        const double cx = NX / 2 + 0.45 * NX * cos(c * M_PI / 2), cy = NX / 2 + 0.45 * NX * sin(c * M_PI / 2);
        for (int y = 0; y < NX; y++)
            for (int x = 0; x < NX; x++) {
                const double d2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
                s->s[(int64_t)c * NX * NX + y * NX + x] =
                    (lm_cfloat)(exp(-d2 / (2.0 * 0.4 * NX * 0.4 * NX)) * cexp(I * (0.3 * c + 0.02 * x)));
            }
    }
    return s;
}

static double rel_diff(const lm_cfloat *a, const lm_cfloat *b, int64_t n)
{
    double num = 0, mx = 0;
    for (int64_t j = 0; j < n; j++) {
        num = fmax(num, cabs((double complex)a[j] - (double complex)b[j]));
        mx = fmax(mx, cabs((double complex)b[j]));
    }
    return num / mx;
}

static double rel_l2(const lm_cfloat *a, const lm_cfloat *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t j = 0; j < n; j++) {
        num += pow(cabs((double complex)a[j] - (double complex)b[j]), 2);
        den += pow(cabs((double complex)b[j]), 2);
    }
    return sqrt(num / den);
}

/* Window f's samples as new copies. */
static void window(const lm_traj *t, const lm_kdata *k, int f, int w, int step, lm_traj **tw, lm_kdata **kw)
{
    int64_t range[2] = {(int64_t)f * step * NS, ((int64_t)f * step + w) * NS};
    const lm_frames one = {.count = 1, .start = range};
    CHECK_OK(lm_frames_extract(&one, 0, t, k, tw, kw, &err), &err);
}

int main(void)
{
    lm_geom g;
    lm_geom_init(&g, NX, NX, 1, 240);
    const int64_t nv = lm_geom_voxels(&g);
    lm_traj *t = golden_traj();
    lm_sens *maps = smooth_maps();
    /* the object: two disks, one real and one imaginary */
    lm_cfloat *truth = calloc((size_t)nv, sizeof *truth);
    for (int y = 0; y < NX; y++)
        for (int x = 0; x < NX; x++) {
            const double r1 = hypot(x - 20, y - 24), r2 = hypot(x - 30, y - 26);
            truth[y * NX + x] = (lm_cfloat)((r1 < 12 ? 1.0 : 0.0) + (r2 < 5 ? 0.5 * I : 0.0));
        }
    /* k-space from the model itself (the solvers are compared, not the model) */
    lm_kdata *k = lm_kdata_new(t->m, NC, &err);
    {
        lm_encoding_desc d = {.geom = &g, .traj = t, .sens = maps, .variant = "cpu-nufft", .threads = 2};
        lm_encoding *e = NULL;
        CHECK_OK(lm_encoding_new(&d, &e, &err), &err);
        lm_backend *be = lm_encoding_backend(e);
        lm_cfloat *x = be->alloc(be, nv, "x");
        be->upload(be, x, truth, (size_t)nv * sizeof *x);
        CHECK_OK(lm_encoding_forward(e, x, k, &err), &err);
        be->release(be, x);
        lm_encoding_free(e);
    }
    const double lambda = 0.1;
    const int W = 13, S = 4;

    /* 1. cold and converged = the static CG of the window */
    lm_traj *t0 = NULL;
    lm_kdata *k0 = NULL;
    window(t, k, 2, W, S, &t0, &k0);
    lm_sliding_opts so = {.variant = "cpu-nufft", .iters = 300, .lambda = lambda, .threads = 2};
    lm_sliding *s = NULL;
    CHECK_OK(lm_sliding_new(&g, maps, &so, &s, &err), &err);
    lm_cfloat *cold = malloc(sizeof *cold * nv), *img = malloc(sizeof *img * nv);
    lm_sliding_report rep = {0};
    CHECK_OK(lm_sliding_frame(s, t0, k0, cold, &rep, &err), &err);
    CHECK_MSG(rep.iters > 20 && rep.time_s > 0, "report: %d iterations, %g s", rep.iters, rep.time_s);
    lm_sliding_free(s);
    lm_recon_opts o;
    lm_recon_opts_init(&o);
    o.method = LM_METHOD_CG;
    o.variant = "cpu-nufft";
    o.lambda = lambda;
    o.iters = 300;
    o.sens = maps;
    o.threads = 2;
    o.use_cache = 0;
    lm_recon_result res = {0};
    CHECK_OK(lm_recon_run(&g, t0, k0, &o, &res, &err), &err);
    double dev = rel_diff(cold, res.image->data, nv);
    printf("sliding: converged frame vs static CG: %.3g of the maximum\n", dev);
    CHECK_MSG(dev < 1e-4, "converged frame differs from the static CG by %g of its maximum", dev);

    /* 2. warm start: frame 3 after 4 iterations from frame 2's (itself 4
     * iterations from 0) is nearer frame 3's minimiser than 4 from 0 */
    lm_traj *t1 = NULL;
    lm_kdata *k1 = NULL;
    window(t, k, 3, W, S, &t1, &k1);
    lm_cfloat *ref1 = malloc(sizeof *ref1 * nv);
    CHECK_OK(lm_sliding_new(&g, maps, &so, &s, &err), &err); /* 300 iterations */
    CHECK_OK(lm_sliding_frame(s, t1, k1, ref1, NULL, &err), &err);
    lm_sliding_free(s);
    so.iters = 4;
    CHECK_OK(lm_sliding_new(&g, maps, &so, &s, &err), &err);
    CHECK_OK(lm_sliding_frame(s, t1, k1, img, NULL, &err), &err);
    const double e_cold = rel_l2(img, ref1, nv);
    lm_sliding_free(s);
    CHECK_OK(lm_sliding_new(&g, maps, &so, &s, &err), &err);
    CHECK_OK(lm_sliding_frame(s, t0, k0, img, NULL, &err), &err);
    CHECK_OK(lm_sliding_frame(s, t1, k1, img, NULL, &err), &err);
    const double e_warm = rel_l2(img, ref1, nv);
    lm_sliding_free(s);
    printf("sliding: frame 3 after 4 iterations: %.3g from its minimiser from 0, %.3g from frame 2\n", e_cold,
           e_warm);
    CHECK_MSG(e_warm < 0.7 * e_cold, "warm start %.3g is not nearer the minimiser than cold %.3g", e_warm, e_cold);

    /* 3. whole runs: frame count, frames = frames made one by one */
    so.iters = 6;
    lm_cfloat *frames = NULL;
    int64_t nf = 0;
    CHECK_OK(lm_sliding_run(&g, t, k, maps, NS, W, S, &so, &frames, &nf, &err), &err);
    CHECK_MSG(nf == (NACQ - W) / S + 1, "%lld frames, expected %d", (long long)nf, (NACQ - W) / S + 1);
    CHECK_OK(lm_sliding_new(&g, maps, &so, &s, &err), &err);
    double worst = 0;
    for (int f = 0; f < nf; f++) {
        lm_traj *tf = NULL;
        lm_kdata *kf = NULL;
        window(t, k, f, W, S, &tf, &kf);
        CHECK_OK(lm_sliding_frame(s, tf, kf, img, NULL, &err), &err);
        worst = fmax(worst, rel_diff(frames + f * nv, img, nv));
        lm_traj_free(tf);
        lm_kdata_free(kf);
    }
    lm_sliding_free(s);
    CHECK_MSG(worst == 0, "lm_sliding_run's frames differ from frames made one by one by %g", worst);
    /* every frame resembles the object (scale-free: a CG image of this data) */
    for (int f = 0; f < nf; f++) {
        const double e = rel_l2(frames + f * nv, truth, nv);
        CHECK_MSG(e < 0.35, "frame %d is %.3g from the object", f, e);
    }

    /* 4. maps estimated from the first window */
    CHECK_OK(lm_sliding_new(&g, NULL, &so, &s, &err), &err);
    CHECK(lm_sliding_sens(s) == NULL);
    CHECK_OK(lm_sliding_frame(s, t0, k0, img, NULL, &err), &err);
    CHECK(lm_sliding_sens(s) != NULL && lm_sliding_sens(s)->ncoils == NC);
    lm_sliding_free(s);

    /* 4b. virtual coils: 3 of the 4 channels, planned on the first window;
     * frame 3 stays near its 4-channel minimiser (the energy dropped is small) */
    so.iters = 20;
    so.compress = 3;
    CHECK_OK(lm_sliding_new(&g, NULL, &so, &s, &err), &err);
    CHECK_OK(lm_sliding_frame(s, t0, k0, img, NULL, &err), &err);
    CHECK(lm_sliding_sens(s) && lm_sliding_sens(s)->ncoils == 3);
    CHECK_OK(lm_sliding_frame(s, t1, k1, img, NULL, &err), &err); /* the plan applies to later windows */
    lm_sliding_free(s);
    so.compress = 0;
    {
        /* magnitudes: estimated maps fix the phase only up to a reference */
        double num = 0, den = 0;
        for (int64_t j = 0; j < nv; j++) {
            num += pow(cabsf(img[j]) - cabsf(ref1[j]), 2);
            den += pow(cabsf(ref1[j]), 2);
        }
        printf("sliding: 3 virtual coils: frame 3 %.3g from the 4-coil minimiser (magnitude)\n", sqrt(num / den));
        CHECK_MSG(sqrt(num / den) < 0.25, "3 virtual coils: %.3g from the 4-coil frame", sqrt(num / den));
    }
    lm_error e3 = {0};
    so.compress = 5;
    CHECK_OK(lm_sliding_new(&g, NULL, &so, &s, &err), &err);
    CHECK(lm_sliding_frame(s, t0, k0, img, NULL, &e3) == LM_ERR_INVALID && strstr(e3.msg, "only 4 channels"));
    lm_sliding_free(s);
    so.compress = 0;

    /* 5. bad input */
    lm_error e2 = {0};
    CHECK(lm_sliding_check(0, 8, &e2) == LM_ERR_INVALID && strstr(e2.msg, "WINDOW"));
    CHECK(lm_sliding_check(8, 0, &e2) == LM_ERR_INVALID);
    free(frames);
    frames = NULL;
    CHECK(lm_sliding_run(&g, t, k, maps, NS, NACQ + 1, S, &so, &frames, &nf, &e2) == LM_ERR_INVALID &&
          strstr(e2.msg, "fewer than a window") && !frames);
    CHECK(lm_sliding_run(&g, t, k, maps, NS + 1, W, S, &so, &frames, &nf, &e2) == LM_ERR_INVALID &&
          strstr(e2.msg, "whole acquisitions"));
    const int64_t n2[3] = {NX / 2, NX / 2, 1};
    lm_sens *small = lm_sens_new(n2, NC, &err);
    CHECK(lm_sliding_new(&g, small, &so, &s, &e2) == LM_ERR_INVALID && !s);
    lm_sens_free(small);

    lm_recon_result_clear(&res);
    lm_traj_free(t0), lm_traj_free(t1), lm_traj_free(t);
    lm_kdata_free(k0), lm_kdata_free(k1), lm_kdata_free(k);
    lm_sens_free(maps);
    free(truth), free(cold), free(img), free(ref1);
    return lm_test_finish("sliding");
}
