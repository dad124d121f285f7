/* The frames' FFT(Q) of a dynamic model on the GPU, resident and streamed
 * (lm_dyn_budget.h, docs/gpu-design.md "Streamed FFT(Q)"): a 3D stack of
 * stars, 32^3, 6 frames, 4 coils, temporal TV, solved once with every
 * FFT(Q) resident, once with LARMOR_GPU_DYN_BUDGET's tuning at 1 byte
 * (streamed through two slots) and resident again (the first run also
 * makes the process's lasting device caches, so the peaks compare the
 * second and third). The images must be bit-identical (the same bytes of
 * FFT(Q) reach the same kernels; the spreader's sums are reproducible by
 * default), the streamed run must have streamed (uploads into the slots)
 * and its pool peak must be lower by at least T - 3 frames' FFT(Q).
 * Prints the peaks and solve times. */
#include <stdlib.h>
#include <string.h>

#include "dyn_problem.h"
#include "gpu_util.h"
#include "lm_dyn_budget.h"
#include "lm_dyn_recon.h"
#include "lm_dynamic_phantom.h"

typedef struct run {
    lm_dyn_result r;
    int streamed;
    long long uploads;
    int64_t peak;
} run;

static lm_code solve(const lm_dyn_model_desc *d, long long budget, run *out, lm_error *err)
{
    lm_tuning tu = *lm_tuning_get();
    tu.gpu_dyn_budget = budget;
    lm_tuning_set(&tu);
    lm_gpu_mem_usage u0 = {0}, u1 = {0};
    lm_code rc = lm_gpu_mem_usage_get(&u0, err);
    lm_gpu_mem_peak_reset();
    lm_dyn_model *m = NULL;
    if (rc == LM_OK)
        rc = lm_dyn_model_new(d, &m, err);
    lm_dyn_opts o;
    lm_dyn_opts_init(&o);
    o.time = LM_DYN_TIME_TV;
    o.lambda_t = 0.03;
    o.iters = 6;
    if (rc == LM_OK)
        rc = lm_dyn_solve(m, &o, &out->r, err);
    if (rc == LM_OK) {
        out->streamed = lm_dyn_model_q_streamed(m);
        out->uploads = lm_dyn_model_q_uploads(m);
        rc = lm_gpu_mem_usage_get(&u1, err);
        out->peak = u1.pool_peak - u0.pool_used;
    }
    lm_dyn_model_free(m);
    tu.gpu_dyn_budget = 0;
    lm_tuning_set(&tu);
    return rc;
}

int main(void)
{
    gpu_require();
    lm_error err = {0};
    const lm_dyn_problem_def def = {.name = "S32", .dim = 3, .n = 32, .coils = 4, .readout = 32,
                                    .spokes_per_frame = 13, .frames = 6, .tr_ms = 4.0};
    dyn_problem P;
    CHECK_OK(dyn_problem_make(&def, &P, &err), &err);
    if (!P.t)
        return lm_test_finish("gpu-dyn-stream");
    lm_dyn_model_desc d = {.geom = &P.g, .traj = P.t, .kdata = P.k, .sens = P.s, .frames = P.f, .variant = "gpu-nufft"};
    run first = {0}, res = {0}, str = {0};
    CHECK_OK(solve(&d, 0, &first, &err), &err);
    CHECK_OK(solve(&d, 1, &str, &err), &err);
    CHECK_OK(solve(&d, 0, &res, &err), &err);
    const int64_t q = lm_dyn_q_bytes(P.g.n), T = P.f->count, n = T * lm_geom_voxels(&P.g);
    printf("resident: streamed %d, pool peak %.1f MB, solve %.3f s; streamed: streamed %d (%lld uploads), pool "
           "peak %.1f MB, solve %.3f s; FFT(Q) %.1f MB a frame\n",
           res.streamed, (double)res.peak / 1e6, res.r.time_solve_s, str.streamed, str.uploads,
           (double)str.peak / 1e6, str.r.time_solve_s, (double)q / 1e6);
    CHECK(!res.streamed && res.uploads == 0);
    CHECK(str.streamed && str.uploads >= T);
    CHECK_MSG(res.peak - str.peak >= (T - 3) * q, "peaks %lld and %lld bytes", (long long)res.peak,
              (long long)str.peak);
    if (first.r.x && res.r.x)
        CHECK(memcmp(first.r.x, res.r.x, (size_t)n * sizeof *res.r.x) == 0);
    if (res.r.x && str.r.x) {
        const int same = memcmp(res.r.x, str.r.x, (size_t)n * sizeof *res.r.x) == 0;
        int64_t at = -1;
        for (int64_t i = 0; i < n && at < 0; i++)
            if (memcmp(&res.r.x[i], &str.r.x[i], sizeof *res.r.x))
                at = i;
        printf("images bit-identical: %s (first difference at %lld)\n", same ? "yes" : "no", (long long)at);
        CHECK(same);
    }
    lm_dyn_result_clear(&first.r);
    lm_dyn_result_clear(&res.r);
    lm_dyn_result_clear(&str.r);
    dyn_problem_free(&P);
    return lm_test_finish("gpu-dyn-stream");
}
