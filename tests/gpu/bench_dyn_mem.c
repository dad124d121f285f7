/* bench_dyn_mem N FRAMES COILS [ITERS]: a 3D dynamic stack of stars (N^3,
 * 21 spokes a frame, temporal TV at 0.03) on gpu-nufft; prints the set-up
 * and solve times, whether the frames' FFT(Q) streamed, and the memory
 * pool's peak over the run (LARMOR_GPU_DYN_BUDGET applies). For
 * BENCHMARKS.md's dynamic memory figures. */
#include <stdio.h>
#include <stdlib.h>

#include "dyn_problem.h"
#include "gpu_util.h"
#include "lm_dyn_recon.h"
#include "lm_dynamic_phantom.h"
#include "lm_metrics.h"

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_dyn_mem N FRAMES COILS [ITERS]\n");
        return 2;
    }
    gpu_require();
    lm_error err = {0};
    if (lm_tuning_init_from_env(&err) != LM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const lm_dyn_problem_def def = {.name = "bench", .dim = 3, .n = atoll(argv[1]), .coils = atoll(argv[3]),
                                    .readout = atoll(argv[1]), .spokes_per_frame = 21, .frames = atoll(argv[2]),
                                    .tr_ms = 4.0};
    dyn_problem P;
    lm_code rc = dyn_problem_make(&def, &P, &err);
    P.g.basis = LM_DYN_BASIS_DEFAULT;
    lm_gpu_mem_usage u0 = {0}, u1 = {0};
    (void)lm_gpu_mem_usage_get(&u0, NULL);
    lm_gpu_mem_peak_reset();
    lm_dyn_model_desc d = {.geom = &P.g, .traj = P.t, .kdata = P.k, .sens = P.s, .frames = P.f, .variant = "gpu-nufft"};
    lm_dyn_model *m = NULL;
    if (rc == LM_OK)
        rc = lm_dyn_model_new(&d, &m, &err);
    lm_dyn_opts o;
    lm_dyn_opts_init(&o);
    o.lambda_t = 0.03;
    o.iters = argc > 4 ? atoi(argv[4]) : 25;
    lm_dyn_result r = {0};
    if (rc == LM_OK)
        rc = lm_dyn_solve(m, &o, &r, &err);
    if (rc == LM_OK) {
        (void)lm_gpu_mem_usage_get(&u1, NULL);
        const int64_t n = P.f->count * lm_geom_voxels(&P.g);
        printf("%lld^3 x %lld frames x %lld coils, %d iterations: set-up %.3f s, solve %.3f s, error %.2f %%; "
               "FFT(Q) %s; pool peak %.1f MB over %.1f MB before (device %.1f GB free of %.1f)\n",
               (long long)def.n, (long long)def.frames, (long long)def.coils, o.iters, r.time_prep_s,
               r.time_solve_s, 100 * lm_rel_error_c(r.x, P.truth, n),
               lm_dyn_model_q_streamed(m) ? "streamed" : "resident", (double)(u1.pool_peak - u0.pool_used) / 1e6,
               (double)u0.pool_used / 1e6, (double)u1.dev_free / 1e9, (double)u1.dev_total / 1e9);
    } else {
        fprintf(stderr, "bench_dyn_mem: %s\n", err.msg);
    }
    lm_dyn_result_clear(&r);
    lm_dyn_model_free(m);
    dyn_problem_free(&P);
    return rc == LM_OK ? 0 : 1;
}
