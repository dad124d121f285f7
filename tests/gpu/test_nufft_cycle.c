/* The GPU NUFFT's plan life cycle (lm_gpu_nufft_plan.h): make_plan,
 * set_points, execute (twice, and again after new points), destroy, against
 * the CPU plan (lm_nufft.h) on the same points (1e-4 relative: two
 * NUFFTs of ~1e-6); the arguments each step refuses. */
#include <complex.h>
#include <string.h>

#include "gpu_util.h"
#include "lm_gpu_nufft_plan.h"
#include "lm_metrics.h"
#include "lm_nufft.h"

static void cpu_ref(int type, const int64_t n[3], int64_t m, const float *k, const lm_cfloat *in, lm_cfloat *out)
{
    lm_error err = {0};
    lm_nufft_plan *p = NULL;
    const int64_t c[3] = {n[0] / 2, n[1] / 2, n[2] / 2};
    CHECK_OK(lm_nufft_make_plan(type, 3, n, type == 1 ? 1 : -1, 1e-6, NULL, &p, &err), &err);
    CHECK_OK(lm_nufft_set_points(p, m, k, k + m, k + 2 * m, c, n, &err), &err);
    CHECK_OK(lm_nufft_execute_c(p, in, out, NULL, &err), &err);
    lm_nufft_destroy(p);
}

static double run(int type, const int64_t n[3], int64_t m, const float *k, lm_gpu_nufft_plan *p)
{
    lm_error err = {0};
    const int64_t nv = n[0] * n[1] * n[2], nin = type == 1 ? m : nv, nout = type == 1 ? nv : m;
    lm_cfloat *in = malloc((size_t)nin * sizeof *in), *out = malloc((size_t)nout * sizeof *out);
    lm_cfloat *ref = malloc((size_t)nout * sizeof *ref);
    for (int64_t i = 0; i < nin; i++)
        in[i] = (float)(gu_uniform() - 0.5) + I * (float)(gu_uniform() - 0.5);
    void *din = NULL, *dout = NULL;
    CHECK_OK(lm_gpu_mem_alloc(&din, (size_t)nin * sizeof *in, "in", &err), &err);
    CHECK_OK(lm_gpu_mem_alloc(&dout, (size_t)nout * sizeof *out, "out", &err), &err);
    CHECK_OK(lm_gpu_mem_upload(din, in, (size_t)nin * sizeof *in, &err), &err);
    CHECK_OK(lm_gpu_nufft_execute(p, din, dout, &err), &err);
    CHECK_OK(lm_gpu_nufft_execute(p, din, dout, &err), &err); /* a plan runs many times */
    CHECK_OK(lm_gpu_mem_download(out, dout, (size_t)nout * sizeof *out, &err), &err);
    cpu_ref(type, n, m, k, in, ref);
    const double e = lm_rel_error_c(out, ref, nout);
    lm_gpu_mem_free(din), lm_gpu_mem_free(dout);
    free(in), free(out), free(ref);
    return e;
}

int main(void)
{
    lm_error err = {0};
    const int64_t n[3] = {32, 16, 8}, odd[3] = {32, 24, 16};
    lm_gpu_nufft_plan *p = NULL;
    /* what make_plan refuses, on any machine */
    CHECK(lm_gpu_nufft_make_plan(3, 3, n, 1, 1e-6, &p, &err) == LM_ERR_INVALID && !p);
    CHECK(lm_gpu_nufft_make_plan(1, 3, n, -1, 1e-6, &p, &err) == LM_ERR_UNSUPPORTED && strstr(err.msg, "sign"));
    CHECK(lm_gpu_nufft_make_plan(2, 3, n, -1, 1e-9, &p, &err) == LM_ERR_UNSUPPORTED && strstr(err.msg, "tolerance"));
    CHECK(lm_gpu_nufft_make_plan(2, 2, n, -1, 1e-6, &p, &err) == LM_ERR_INVALID);
    CHECK(lm_gpu_nufft_make_plan(2, 3, odd, -1, 1e-6, &p, &err) == LM_ERR_UNSUPPORTED && strstr(err.msg, "power"));
    gpu_require();
    gu_seed(5);
    const int64_t m = 3000;
    float *k = malloc((size_t)(3 * m) * sizeof *k);
    lm_gpu_nufft_plan *plans[2] = {NULL, NULL};
    for (int type = 1; type <= 2; type++) {
        CHECK_OK(lm_gpu_nufft_make_plan(type, 3, n, type == 1 ? 1 : -1, 1e-6, &plans[type - 1], &err), &err);
        lm_cfloat z = 0;
        if (plans[type - 1])
            CHECK(lm_gpu_nufft_execute(plans[type - 1], &z, &z, &err) == LM_ERR_INVALID); /* no points yet */
    }
    for (int round = 0; round < 2 && plans[0] && plans[1]; round++) { /* new points for the same plans */
        for (int64_t j = 0; j < m; j++)
            for (int a = 0; a < 3; a++)
                k[a * m + j] = (float)((gu_uniform() - 0.5) * (double)n[a]);
        for (int type = 1; type <= 2; type++) {
            CHECK_OK(lm_gpu_nufft_set_points(plans[type - 1], m, k, k + m, k + 2 * m, &err), &err);
            const double e = run(type, n, m, k, plans[type - 1]);
            printf("round %d, type %d against the CPU plan: %.2e\n", round, type, e);
            CHECK(e < 1e-4);
        }
    }
    lm_gpu_nufft_destroy(plans[0]);
    lm_gpu_nufft_destroy(plans[1]);
    free(k);
    return lm_test_finish("gpu-nufft_cycle");
}
