/* The frame-averaged dynamic truth (lm_dyn_truth_averaged): one sample per
 * frame is the centre-time truth exactly, S samples are the mean of the
 * phantom rendered at the S sub-interval midpoints (double reference), the
 * moving frames differ from their centre time, bad input fails cleanly. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_dynamic_phantom.h"
#include "lm_test.h"
#include "lm_trajgen.h"

#define S 3

int main(void)
{
    lm_error err = {0};
    lm_dyn_problem_def def = *lm_dyn_problem_find("D128c8");
    def.n = 32; /* small: the test is about timing, not resolution */
    def.frames = 4;
    lm_geom g;
    lm_geom_init(&g, def.n, def.n, 1, LM_PROBLEM_FOV_MM);
    const int64_t N = lm_geom_voxels(&g);

    lm_cfloat *one = NULL, *avg = NULL;
    CHECK_OK(lm_dyn_truth_averaged(&def, &g, 1, &one, &err), &err);
    CHECK_OK(lm_dyn_truth_averaged(&def, &g, S, &avg, &err), &err);

    double worst = 0, moved = 0, norm = 0;
    double *ref = malloc(sizeof *ref * (size_t)(2 * N));
    for (int64_t fr = 0; fr < def.frames; fr++) {
        lm_phantom ph;
        lm_volume *v = NULL;
        lm_dyn_phantom_at(def.dim, ((double)fr + 0.5) / (double)def.frames, &ph);
        CHECK_OK(lm_phantom_truth(&ph, &g, LM_PROBLEM_TRUTH_SUB, &v, &err), &err);
        CHECK(memcmp(one + fr * N, v->data, sizeof *one * (size_t)N) == 0);
        lm_volume_free(v);
        memset(ref, 0, sizeof *ref * (size_t)(2 * N));
        for (int j = 0; j < S; j++) {
            lm_dyn_phantom_at(def.dim, ((double)fr + (j + 0.5) / S) / (double)def.frames, &ph);
            CHECK_OK(lm_phantom_truth(&ph, &g, LM_PROBLEM_TRUTH_SUB, &v, &err), &err);
            for (int64_t i = 0; i < N; i++) {
                ref[2 * i] += crealf(v->data[i]) / S;
                ref[2 * i + 1] += cimagf(v->data[i]) / S;
            }
            lm_volume_free(v);
        }
        for (int64_t i = 0; i < N; i++) {
            const lm_cfloat a = avg[fr * N + i];
            worst = fmax(worst, cabs((double)crealf(a) - ref[2 * i] + I * ((double)cimagf(a) - ref[2 * i + 1])));
            const lm_cfloat d = a - one[fr * N + i];
            moved += (double)(crealf(d) * crealf(d) + cimagf(d) * cimagf(d));
            norm += (double)(crealf(a) * crealf(a) + cimagf(a) * cimagf(a));
        }
    }
    /* float rounding of values <= 2: 1e-6 absolute */
    CHECK_MSG(worst < 1e-6, "averaged truth off the double mean by %g", worst);
    /* frames of 1/4 of the acquisition: the bowel moves and the heart beats
     * within each, so the average is not the centre image */
    CHECK_MSG(sqrt(moved / norm) > 1e-3, "averaged truth equals the centre truth (%g)", sqrt(moved / norm));

    lm_cfloat *bad = NULL;
    CHECK(lm_dyn_truth_averaged(&def, &g, 0, &bad, &err) == LM_ERR_INVALID && !bad && err.msg[0]);
    free(ref);
    free(one);
    free(avg);
    return lm_test_finish("dyn_truth");
}
