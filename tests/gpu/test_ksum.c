/* Every GPU variant against a double-precision reference (computed here on
 * the CPU, and by the GPU's own double kernel gpu-dp), on fresh random
 * inputs: explicit and grid points, real and complex weights, 2D and 3D,
 * unusual grid origins and spacings, sizes that leave partial tiles.
 * Outputs are poisoned (NaN) before each run and must all be written.
 *
 * Tolerance (relative l2 error): 1e-4 for every variant (the project's
 * budget); gpu-dp 1e-6. Measured values are printed. Also: m = 0 gives
 * zeros, progress reaches 1, a cancel at the first report returns
 * LM_ERR_CANCELLED, gpu-phasor is deterministic and its symmetric Q path
 * equals the direct one. */
#include "gpu_util.h"

typedef struct kcase {
    const char *name;
    int expl;       /* explicit points: n = g[0] */
    int64_t g[3], c[3], s[3];
    int complex_w;
    int64_t m;
    double kmax[3];
} kcase;

static const kcase cases[] = {
    {"explicit 3D complex", 1, {3001, 0, 0}, {0}, {0}, 1, 2049, {32, 32, 32}},
    {"explicit 3D real", 1, {1000, 0, 0}, {0}, {0}, 0, 777, {16, 16, 16}},
    {"explicit 2D complex", 2, {2000, 0, 0}, {0}, {0}, 1, 1500, {40, 40, 0}},
    {"image grid 3D complex", 0, {12, 10, 9}, {6, 5, 4}, {12, 10, 9}, 1, 3001, {6, 5, 4.5}},
    {"Q grid 3D real", 0, {16, 12, 10}, {8, 6, 5}, {8, 6, 5}, 0, 2500, {4, 3, 2.5}},
    {"Q grid 3D complex", 0, {16, 12, 10}, {8, 6, 5}, {8, 6, 5}, 1, 2500, {4, 3, 2.5}},
    {"odd grid 3D complex", 0, {7, 9, 5}, {3, 1, 6}, {9, 5, 4}, 1, 1234, {20, 20, 20}},
    {"image grid 2D complex", 0, {32, 24, 1}, {16, 12, 0}, {32, 24, 1}, 1, 2000, {16, 12, 0}},
    {"Q grid 2D real", 0, {40, 28, 1}, {20, 14, 0}, {20, 14, 1}, 0, 3000, {10, 7, 0}},
    {"2D grid offset z", 0, {16, 16, 1}, {8, 8, 1}, {16, 16, 4}, 1, 1000, {8, 8, 8}},
    {"tiny grid, one sample", 0, {2, 2, 2}, {1, 1, 1}, {2, 2, 2}, 1, 1, {1, 1, 1}},
    {"image grid 16^3, m 40000", 0, {16, 16, 16}, {8, 8, 8}, {16, 16, 16}, 1, 40000, {8, 8, 8}},
    {"Q grid 24^3 real, m 20000", 0, {24, 24, 24}, {12, 12, 12}, {12, 12, 12}, 0, 20000, {6, 6, 6}},
};
#define NCASES (sizeof cases / sizeof cases[0])

static double tol_for(const char *name)
{
    return strcmp(name, "gpu-dp") == 0 ? 1e-6 : 1e-4;
}

typedef struct prog {
    int calls;
    double last;
    int monotone;
    int cancel_at;
} prog;

static int on_progress(void *user, double f)
{
    prog *p = user;
    if (f < p->last)
        p->monotone = 0;
    p->last = f;
    p->calls++;
    return p->cancel_at > 0 && p->calls >= p->cancel_at;
}

static lm_variant dp_row = {"gpu-dp", "double-precision GPU reference", LM_DEVICE_GPU, 0, 0, lm_gpu_available,
                            lm_ksum_gpu_dp, 0, 0};

int main(void)
{
    gpu_require();
    size_t nrows = 0;
    const lm_variant *rows = lm_gpu_variants(&nrows);
    const lm_variant *vars[32];
    size_t nv = 0;
    for (size_t i = 0; i < nrows && nv < 31; i++)
        vars[nv++] = &rows[i];
    vars[nv++] = &dp_row;

    double worst[32] = {0};
    for (size_t ci = 0; ci < NCASES; ci++) {
        const kcase *k = &cases[ci];
        gu_seed(1000 + ci);
        gu_samples smp;
        gu_samples_make(&smp, k->m, k->kmax, k->complex_w);
        lm_points p;
        float *pb = NULL;
        if (k->expl)
            pb = gu_points(&p, k->g[0], k->expl == 2);
        else
            gu_grid(&p, k->g[0], k->g[1], k->g[2], k->c[0], k->c[1], k->c[2], k->s[0], k->s[1], k->s[2]);
        const int64_t n = p.n;
        double *rr = malloc((size_t)n * 2 * sizeof(double)), *ri = rr + n;
        gu_reference(&smp.in, &p, rr, ri);
        float *or = malloc((size_t)n * 2 * sizeof(float)), *oi = or + n;
        for (size_t v = 0; v < nv; v++) {
            const lm_variant *var = vars[v];
            gu_poison(or, 2 * n);
            lm_error err;
            lm_error_clear(&err);
            lm_code c = lm_ksum_run(var, &smp.in, &p, or, oi, NULL, &err);
            if (var->grid_only && p.x) {
                CHECK_MSG(c == LM_ERR_UNSUPPORTED, "%s on %s: %s", var->name, k->name, err.msg);
                continue;
            }
            CHECK_MSG(c == LM_OK, "%s on %s: %s", var->name, k->name, err.msg);
            if (c != LM_OK)
                continue;
            int64_t bad = gu_count_unwritten(or, 2 * n);
            CHECK_MSG(bad == 0, "%s on %s: %lld outputs not written", var->name, k->name, (long long)bad);
            double e = gu_rel_error(or, oi, rr, ri, n);
            CHECK_MSG(e <= tol_for(var->name), "%s on %s: rel error %.3g > %.1g", var->name, k->name, e,
                      tol_for(var->name));
            if (!(e <= worst[v]))
                worst[v] = e;
            fprintf(stderr, "  %-28s %-13s rel error %.2e\n", k->name, var->name, e);
        }
        /* gpu-phasor: deterministic, and (real weights on a symmetric grid)
         * the mirrored path equals the direct one */
        if (!p.x) {
            float *o2 = malloc((size_t)n * 2 * sizeof(float));
            lm_error err;
            lm_error_clear(&err);
            CHECK_OK(lm_ksum_gpu_phasor(&smp.in, &p, or, oi, NULL, &err), &err);
            CHECK_OK(lm_ksum_gpu_phasor(&smp.in, &p, o2, o2 + n, NULL, &err), &err);
            CHECK_MSG(!memcmp(or, o2, (size_t)n * 2 * sizeof(float)), "gpu-phasor on %s: not deterministic", k->name);
            if (!k->complex_w) {
                lm_tuning t = *lm_tuning_get(); /* as LARMOR_GPU_PHASOR_NOSYM=1 sets it */
                t.gpu_phasor_nosym = 1;
                lm_tuning_set(&t);
                CHECK_OK(lm_ksum_gpu_phasor(&smp.in, &p, o2, o2 + n, NULL, &err), &err);
                t.gpu_phasor_nosym = 0;
                lm_tuning_set(&t);
                double e1 = gu_rel_error(or, oi, rr, ri, n), e2 = gu_rel_error(o2, o2 + n, rr, ri, n);
                fprintf(stderr, "  %-28s gpu-phasor symmetric %.2e, direct %.2e\n", k->name, e1, e2);
                CHECK(e2 <= 1e-4);
            }
            free(o2);
        }
        free(or);
        free(rr);
        free(pb);
        gu_samples_free(&smp);
    }
    for (size_t v = 0; v < nv; v++)
        fprintf(stderr, "%-13s worst rel error %.2e (tolerance %.0e)\n", vars[v]->name, worst[v],
                tol_for(vars[v]->name));

    /* m = 0 (direct call; lm_ksum_run refuses it): all zeros */
    {
        lm_points p;
        gu_grid(&p, 4, 4, 4, 2, 2, 2, 4, 4, 4);
        float or[64], oi[64], dummy = 0;
        lm_ksum_in in = {.m = 0, .kx = &dummy, .ky = &dummy, .kz = &dummy, .wr = &dummy, .wi = NULL, .nsets = 1};
        for (size_t v = 0; v < nv; v++) {
            gu_poison(or, 64);
            gu_poison(oi, 64);
            lm_error err;
            lm_error_clear(&err);
            CHECK_OK(vars[v]->ksum(&in, &p, or, oi, NULL, &err), &err);
            int zeros = 1;
            for (int j = 0; j < 64; j++)
                zeros &= or[j] == 0 && oi[j] == 0;
            CHECK_MSG(zeros, "%s with m = 0: not all zero", vars[v]->name);
        }
    }

    /* progress and cancellation */
    {
        gu_seed(77);
        double km[3] = {8, 8, 8};
        gu_samples smp;
        gu_samples_make(&smp, 20000, km, 1);
        lm_points p;
        gu_grid(&p, 16, 16, 16, 8, 8, 8, 16, 16, 16);
        float *o = malloc((size_t)p.n * 2 * sizeof(float));
        for (size_t v = 0; v < nv; v++) {
            prog pr = {0, 0, 1, 0};
            lm_ctl ctl = {on_progress, &pr, 0};
            lm_error err;
            lm_error_clear(&err);
            CHECK_OK(lm_ksum_run(vars[v], &smp.in, &p, o, o + p.n, &ctl, &err), &err);
            CHECK_MSG(pr.calls >= 1 && pr.last == 1.0 && pr.monotone, "%s: progress %d calls, last %g, monotone %d",
                      vars[v]->name, pr.calls, pr.last, pr.monotone);
            prog pc = {0, 0, 1, 1};
            lm_ctl cc = {on_progress, &pc, 0};
            lm_error_clear(&err);
            lm_code c = lm_ksum_run(vars[v], &smp.in, &p, o, o + p.n, &cc, &err);
            CHECK_MSG(c == LM_ERR_CANCELLED, "%s: cancel at first report gave %s (%s)", vars[v]->name,
                      lm_code_name(c), err.msg);
        }
        /* a call after a cancel works */
        lm_error err;
        lm_error_clear(&err);
        CHECK_OK(lm_ksum_gpu_phasor(&smp.in, &p, o, o + p.n, NULL, &err), &err);
        free(o);
        gu_samples_free(&smp);
    }
    lm_gpu_release();
    return lm_test_finish("gpu-ksum");
}
