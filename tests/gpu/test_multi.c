/* gpu-multi against gpu-tuned. gpu-multi shares the sum over the devices
 * of LARMOR_GPU_DEVICES (default: every GPU) in one of two ways:
 *   - the points (the paper's split) when each device's share fills the
 *     GPU: the same kernel and parameters per point, so the result is
 *     bitwise identical to gpu-tuned;
 *   - the samples when a share of points is too small: every device sums
 *     its own tiles over all points and the host adds the partial sums;
 *     only the order of the float sum differs: within 1e-5 relative of
 *     gpu-tuned (normwise) and 1e-4 of the double reference.
 * Both ways run here with two workers on device 0 (LARMOR_GPU_DEVICES=0,0)
 * and, where the machine has them, over every GPU. Also the tuner: lm_gpu_tune
 * sweeps, stores tune-<model>.txt under $XDG_CACHE_HOME/larmor (meson sets
 * it to the build folder) and gpu-tuned then reads its parameters from
 * there; results stay correct with the tuned parameters. */
#include "gpu_util.h"

static int stop_now(void *user, double f)
{
    (void)user, (void)f;
    return 1;
}

/* gpu-multi against gpu-tuned on pts; returns how it split (0 points, 1 samples). */
static int compare_with_tuned(const lm_ksum_in *in, const lm_points *p, const char *label)
{
    const int64_t n = p->n;
    const int by_samples = lm_gpu_multi_by_samples(in, p);
    CHECK_MSG(by_samples == 0 || by_samples == 1, "%s: lm_gpu_multi_by_samples gave %d", label, by_samples);
    float *a = malloc((size_t)n * 2 * sizeof(float)), *b = malloc((size_t)n * 2 * sizeof(float));
    double *ad = calloc((size_t)n * 2, sizeof(double));
    gu_poison(a, 2 * n);
    gu_poison(b, 2 * n);
    lm_error err;
    lm_error_clear(&err);
    CHECK_OK(lm_ksum_gpu_tuned(in, p, a, a + n, NULL, &err), &err);
    CHECK_OK(lm_ksum_gpu_multi(in, p, b, b + n, NULL, &err), &err);
    CHECK(gu_count_unwritten(b, 2 * n) == 0);
    int64_t differ = 0;
    for (int64_t j = 0; j < 2 * n; j++) {
        differ += a[j] != b[j];
        ad[j] = a[j];
    }
    const double rel = gu_rel_error(b, b + n, ad, ad + n, n);
    fprintf(stderr, "%s: %lld points split by %s, %lld values differ from gpu-tuned, rel %.2e\n", label,
            (long long)n, by_samples ? "samples" : "points", (long long)differ, rel);
    if (by_samples)
        CHECK_MSG(rel <= 1e-5, "%s: gpu-multi (samples split) %.2e from gpu-tuned", label, rel);
    else
        CHECK_MSG(differ == 0, "%s: gpu-multi (points split) differs from gpu-tuned in %lld values", label,
                  (long long)differ);
    free(a);
    free(b);
    free(ad);
    return by_samples;
}

int main(void)
{
    gpu_require();
    fprintf(stderr, "%d GPU(s) visible\n", lm_gpu_device_count());
    gu_seed(9);
    double km[3] = {32, 32, 32};
    gu_samples smp;
    gu_samples_make(&smp, 5000, km, 1);
    lm_points gp, ep;
    gu_grid(&gp, 24, 20, 18, 12, 10, 9, 24, 20, 18);
    float *pb = gu_points(&ep, 33333, 0);
    /* every GPU (one: the split is trivial) */
    gpu_tune_devices(NULL);
    compare_with_tuned(&smp.in, &gp, "grid, every GPU");
    compare_with_tuned(&smp.in, &ep, "explicit, every GPU");
    /* two workers on device 0: small shares split the samples ... */
    gpu_tune_devices("0,0"); /* as LARMOR_GPU_DEVICES=0,0 would set it */
    CHECK_MSG(compare_with_tuned(&smp.in, &gp, "grid, 0,0") == 1, "a small grid should split the samples");
    compare_with_tuned(&smp.in, &ep, "explicit, 0,0");
    {   /* ... with the double reference too (the partial sums added on the host) */
        const int64_t n = gp.n;
        double *rr = malloc((size_t)n * 2 * sizeof(double));
        float *o = malloc((size_t)n * 2 * sizeof(float));
        gu_reference(&smp.in, &gp, rr, rr + n);
        lm_error err;
        lm_error_clear(&err);
        CHECK_OK(lm_ksum_gpu_multi(&smp.in, &gp, o, o + n, NULL, &err), &err);
        const double e = gu_rel_error(o, o + n, rr, rr + n, n);
        fprintf(stderr, "gpu-multi, samples split over 0,0: rel error %.2e against the double reference\n", e);
        CHECK(e <= 1e-4);
        free(o);
        free(rr);
    }
    {   /* ... and a grid large enough for every share to fill the GPU splits the points */
        int64_t nz = 16;
        lm_points big;
        gu_grid(&big, 128, 128, nz, 64, 64, nz / 2, 128, 128, nz);
        while (lm_gpu_multi_by_samples(&smp.in, &big) == 1 && nz < 2048) {
            nz *= 2;
            gu_grid(&big, 128, 128, nz, 64, 64, nz / 2, 128, 128, nz);
        }
        CHECK_MSG(compare_with_tuned(&smp.in, &big, "large grid, 0,0") == 0,
                  "a 128x128x%lld grid still splits the samples", (long long)nz);
    }
    gpu_tune_devices(NULL);
    /* cancel forwarded to the workers */
    {
        float *o = malloc((size_t)gp.n * 2 * sizeof(float));
        lm_ctl ctl = {stop_now, NULL, 0};
        lm_error err;
        lm_error_clear(&err);
        CHECK(lm_ksum_gpu_multi(&smp.in, &gp, o, o + gp.n, &ctl, &err) == LM_ERR_CANCELLED);
        free(o);
    }

    /* the tuner */
    lm_gpu_tune_params before, best, after;
    char src[1024], path[1024];
    lm_error err;
    lm_error_clear(&err);
    CHECK_OK(lm_gpu_tune_get(0, &before, src, sizeof src, &err), &err);
    fprintf(stderr, "before: threads %d tile %d unroll %d vpt %d (%s)\n", before.threads, before.tile, before.unroll,
            before.vpt, src);
    lm_error_clear(&err);
    CHECK_OK(lm_gpu_tune(0, &best, path, sizeof path, NULL, &err), &err);
    fprintf(stderr, "tuned:  threads %d tile %d unroll %d vpt %d -> %s\n", best.threads, best.tile, best.unroll,
            best.vpt, path);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "%s not written", path);
    if (f) {
        char text[2048];
        size_t nr = fread(text, 1, sizeof text - 1, f);
        text[nr] = '\0';
        fclose(f);
        lm_gpu_tune_params fp;
        lm_error_clear(&err);
        CHECK_OK(lm_gpu_tune_parse(text, &fp, &err), &err);
        CHECK(fp.threads == best.threads && fp.tile == best.tile && fp.unroll == best.unroll && fp.vpt == best.vpt);
    }
    lm_error_clear(&err);
    CHECK_OK(lm_gpu_tune_get(0, &after, src, sizeof src, &err), &err);
    CHECK(!strcmp(src, path));
    CHECK(after.threads == best.threads && after.vpt == best.vpt);
    /* still right with the tuned parameters */
    {
        const int64_t n = gp.n;
        double *rr = malloc((size_t)n * 2 * sizeof(double));
        gu_reference(&smp.in, &gp, rr, rr + n);
        float *o = malloc((size_t)n * 2 * sizeof(float));
        gu_poison(o, 2 * n);
        lm_error_clear(&err);
        CHECK_OK(lm_ksum_gpu_tuned(&smp.in, &gp, o, o + n, NULL, &err), &err);
        double e = gu_rel_error(o, o + n, rr, rr + n, n);
        fprintf(stderr, "gpu-tuned (tuned parameters) rel error %.2e\n", e);
        CHECK(e <= 1e-4);
        lm_error_clear(&err);
        CHECK_OK(lm_ksum_gpu_multi(&smp.in, &gp, o, o + n, NULL, &err), &err);
        e = gu_rel_error(o, o + n, rr, rr + n, n);
        CHECK(e <= 1e-4);
        free(o);
        free(rr);
    }
    free(pb);
    gu_samples_free(&smp);
    return lm_test_finish("gpu-multi");
}
