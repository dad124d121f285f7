/* Times building a benchmark problem (default B128): trajectory, exact
 * k-space (every coil of a multi-coil problem), coil maps and the
 * sub-voxel averaged truth, each separately. Run through
 * `meson test --benchmark --suite phantoms` or directly with a name. */
#include <stdio.h>
#include <time.h>

#include "lm_tuning.h"
#include "lm_test.h"
#include "lm_coils_synth.h"
#include "lm_trajgen.h"

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
    lm_error err = {0};
    const lm_problem_def *def = lm_problem_find(argc > 1 ? argv[1] : "B128", &err);
    if (!def) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    lm_geom g;
    lm_geom_init(&g, def->n, def->n, def->n, LM_PROBLEM_FOV_MM);
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *v = NULL;
    double t0 = now();
    CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL3D, g.n, def->m, def->readout, &t, &err), &err);
    double t1 = now();
    const int64_t coils = def->coils > 1 ? def->coils : 1;
    if (t && (k = lm_kdata_new(t->m, coils, &err))) {
        if (coils > 1)
            CHECK_OK(lm_coils_synth_kspace(lm_phantom_shepp_logan_3d(), 3, coils, t, k, &err), &err);
        else
            CHECK_OK(lm_phantom_kspace(lm_phantom_shepp_logan_3d(), t, k->d, &err), &err);
    }
    if (k && def->noise > 0)
        CHECK_OK(lm_noise_add(k, def->noise, LM_PROBLEM_NOISE_SEED, &err), &err);
    double t2 = now();
    lm_sens *s = NULL;
    if (coils > 1)
        CHECK_OK(lm_coils_synth_sens(3, coils, g.n, &s, &err), &err);
    lm_sens_free(s);
    double t2s = now();
    CHECK_OK(lm_phantom_truth(lm_phantom_shepp_logan_3d(), &g, LM_PROBLEM_TRUTH_SUB, &v, &err), &err);
    double t3 = now();
    lm_volume_free(v);
    lm_traj_free(t);
    lm_kdata_free(k);
    v = NULL;
    t = NULL;
    k = NULL;
    double t4 = now();
    CHECK_OK(lm_problem_make(def, NULL, &t, &k, &v, &err), &err);
    double t5 = now();
    printf("{\"problem\": \"%s\", \"coils\": %lld, \"time_traj_s\": %.4f, \"time_kspace_s\": %.4f, "
           "\"time_sens_s\": %.4f, \"time_truth_s\": %.4f, \"time_make_s\": %.4f}\n",
           def->name, (long long)coils, t1 - t0, t2 - t1, t2s - t2, t3 - t2s, t5 - t4);
    lm_volume_free(v);
    lm_traj_free(t);
    lm_kdata_free(k);
    return lm_test_finish("bench_problem");
}
