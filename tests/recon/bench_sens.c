/* Coil-map estimation time and accuracy on a 64^3, 8-coil 3D radial problem
 * (the B64 sample count, 35,574 samples of 32 per spoke): bench_sens [n] [coils]. */
#include <stdio.h>
#include <time.h>

#include "lm_tuning.h"
#include "coils_synth.h"
#include "lm_test.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    lm_error tuning_err = {0};
    if (lm_tuning_init_from_env(&tuning_err) != LM_OK) { /* the LARMOR_* knobs being measured */
        fprintf(stderr, "%s\n", tuning_err.msg);
        return 2;
    }
    int64_t nn = argc > 1 ? atoll(argv[1]) : 64;
    int nc = argc > 2 ? atoi(argv[2]) : 8;
    lm_error err;
    lm_error_clear(&err);
    syn_problem p;
    int64_t n[3] = {nn, nn, nn};
    double t0 = now();
    CHECK_OK(syn_make(&p, n, nc, LM_TRAJ_RADIAL3D, 0, &err), &err);
    if (!p.k)
        return lm_test_finish("bench_sens");
    fprintf(stderr, "problem %lld^3, %d coils, %lld samples: made in %.2f s\n", (long long)nn, nc,
            (long long)p.k->m, now() - t0);
    for (int meth = LM_SENS_ESPIRIT; meth <= LM_SENS_WALSH; meth++) {
        lm_sens_est_opts o;
        lm_sens_est_default_opts(&o);
        o.method = (lm_sens_method)meth;
        lm_sens_est_info info;
        lm_sens *s = NULL;
        t0 = now();
        CHECK_OK(lm_sens_estimate(&p.g, p.t, p.k, &o, NULL, &s, &info, &err), &err);
        double dt = now() - t0;
        if (!s)
            continue;
        double cover, jump;
        double e = syn_map_error(&p, s, 0.85, &cover, &jump);
        printf("%s: %.2f s, map error %.2f %% (interior covered %.1f %%), calib %lld, kernels %lld/%lld\n",
               meth == LM_SENS_ESPIRIT ? "espirit" : "walsh", dt, 100 * e, 100 * cover,
               (long long)info.calib[0], (long long)info.kernels_kept, (long long)info.kernels_total);
        lm_sens_free(s);
    }
    syn_free(&p);
    return lm_test_finish("bench_sens");
}
