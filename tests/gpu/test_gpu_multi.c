/* gpu-multi against gpu-tuned: the same kernel and parameters with the
 * points split over the visible GPUs, so the results are identical (checked
 * bitwise; on one GPU the split is trivial). Also the tuner: lm_gpu_tune
 * sweeps, stores tune-<model>.txt under $XDG_CACHE_HOME/larmor (meson sets
 * it to the build folder) and gpu-tuned then reads its parameters from
 * there; results stay correct with the tuned parameters. */
#include "gpu_util.h"

static int stop_now(void *user, double f)
{
    (void)user, (void)f;
    return 1;
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
    const lm_points *sets[2] = {&gp, &ep};
    for (int s = 0; s < 2; s++) {
        const lm_points *p = sets[s];
        const int64_t n = p->n;
        float *a = malloc((size_t)n * 2 * sizeof(float)), *b = malloc((size_t)n * 2 * sizeof(float));
        gu_poison(a, 2 * n);
        gu_poison(b, 2 * n);
        lm_error err;
        lm_error_clear(&err);
        CHECK_OK(lm_ksum_gpu_tuned(&smp.in, p, a, a + n, NULL, &err), &err);
        CHECK_OK(lm_ksum_gpu_multi(&smp.in, p, b, b + n, NULL, &err), &err);
        CHECK(gu_count_unwritten(b, 2 * n) == 0);
        int64_t differ = 0;
        for (int64_t j = 0; j < 2 * n; j++)
            differ += a[j] != b[j];
        CHECK_MSG(differ == 0, "%s points: gpu-multi differs from gpu-tuned in %lld values",
                  s ? "explicit" : "grid", (long long)differ);
        free(a);
        free(b);
    }
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
    return lm_test_finish("gpu_multi");
}
