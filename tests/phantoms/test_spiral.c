/* lm_spiral: S128c8f's design (128 matrix, 4 interleaves, 25 ms): samples
 * at most 1/FOV apart, the disc |k| <= n/2 covered, times from 0 to the
 * readout's end at a uniform dwell, gradient and slew within the limits;
 * refusals; lm_traj_times_uniform on spokes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_test.h"
#include "lm_spiral.h"
#include "lm_trajgen.h"

/* Largest distance from any point of the disc |k| <= rad (a 0.37 lattice)
 * to its nearest sample, through 1 x 1 buckets. */
static double coverage_gap(const lm_traj *t, double rad)
{
    const int B = (int)ceil(rad) + 2, W = 2 * B;
    int *head = malloc(sizeof(int) * (size_t)(W * W)), *next = malloc(sizeof(int) * (size_t)t->m);
    for (int i = 0; i < W * W; i++)
        head[i] = -1;
    for (int64_t i = 0; i < t->m; i++) {
        int bx = (int)floor(t->k[3 * i]) + B, by = (int)floor(t->k[3 * i + 1]) + B;
        next[i] = head[by * W + bx];
        head[by * W + bx] = (int)i;
    }
    double worst = 0;
    for (double y = -rad; y <= rad; y += 0.37)
        for (double x = -rad; x <= rad; x += 0.37) {
            if (x * x + y * y > rad * rad)
                continue;
            int bx = (int)floor(x) + B, by = (int)floor(y) + B;
            double best = 1e9;
            for (int dy = -2; dy <= 2; dy++)
                for (int dx = -2; dx <= 2; dx++)
                    for (int i = head[(by + dy) * W + bx + dx]; i >= 0; i = next[i]) {
                        double ex = t->k[3 * i] - x, ey = t->k[3 * i + 1] - y;
                        best = fmin(best, ex * ex + ey * ey);
                    }
            worst = fmax(worst, sqrt(best));
        }
    free(head);
    free(next);
    return worst;
}

int main(void)
{
    lm_error err = {0};
    lm_traj *t = NULL;
    lm_spiral_info info;
    const double R = 0.025, slew_k = LM_SPIRAL_GAMMA_HZ_T * 150.0 * 0.240; /* cycles/FOV per s^2 */
    lm_spiral_opts o = {.n = 128, .interleaves = 4, .readout_s = R};
    CHECK_OK(lm_spiral_make(&o, &t, &info, &err), &err);
    if (!t)
        return lm_test_finish("spiral");
    const int64_t r = t->readout;
    CHECK(t->ndim == 2 && t->t && r == info.samples && t->m == 4 * r);
    /* the numbers lm_spiral.h and BENCHMARKS.md quote */
    CHECK(r == 3265);
    CHECK_NEAR(info.gmax_mt_m, 12.8, 0.05);
    CHECK_NEAR(info.dwell_s * 1e6, 7.66, 0.01);
    CHECK_NEAR(info.gmax_mt_m, info.vmax / (LM_SPIRAL_GAMMA_HZ_T * 0.240) * 1e3, 1e-9);

    double max_step = 0, max_speed = 0, max_acc = 0, max_k = 0, time_err = 0;
    int order_bad = 0;
    for (int64_t l = 0; l < 4; l++) {
        const float *k = t->k + 3 * l * r, *ts = t->t + l * r;
        CHECK(ts[0] == 0.0f && k[0] == 0.0f && k[1] == 0.0f && k[2] == 0.0f);
        CHECK(ts[r - 1] == (float)R);
        for (int64_t j = 0; j < r; j++) {
            time_err = fmax(time_err, fabs(ts[j] - (double)j * info.dwell_s));
            max_k = fmax(max_k, hypot(k[3 * j], k[3 * j + 1]));
            if (j > 0) {
                order_bad += !(ts[j] > ts[j - 1]);
                double step = hypot(k[3 * j] - k[3 * j - 3], k[3 * j + 1] - k[3 * j - 2]);
                max_step = fmax(max_step, step);
                max_speed = fmax(max_speed, step / info.dwell_s);
            }
            if (j > 0 && j + 1 < r) {
                double ax = (double)k[3 * j + 3] - 2.0 * k[3 * j] + k[3 * j - 3];
                double ay = (double)k[3 * j + 4] - 2.0 * k[3 * j + 1] + k[3 * j - 2];
                max_acc = fmax(max_acc, hypot(ax, ay) / (info.dwell_s * info.dwell_s));
            }
        }
        /* the last sample on the rim */
        CHECK_NEAR(hypot(k[3 * (r - 1)], k[3 * (r - 1) + 1]), 64.0, 1e-4);
    }
    printf("spiral 128/4/25 ms: %lld samples per interleaf, dwell %.3f us, %.2f mT/m, slew-limited below |k| %.1f;\n"
           "  largest step %.6f/FOV, speed %.4g (vmax %.4g), acceleration %.4g of %.4g (%.1f %%), time error %.2g s\n",
           (long long)r, info.dwell_s * 1e6, info.gmax_mt_m, info.r_slew, max_step, max_speed, info.vmax, max_acc,
           slew_k, 100 * max_acc / slew_k, time_err);
    CHECK(order_bad == 0);
    /* float times: j dwell rounded to float (2^-24 of 25 ms is 1.5e-9 s) */
    CHECK(time_err <= 3e-9);
    /* at most 1/FOV apart along the curve (chords, float k: 4e-6), yet not
     * needlessly dense: the amplitude-limited part runs at (1 - 1e-4)/FOV */
    CHECK(max_step <= 1.0 + 1e-5);
    CHECK(max_step >= 0.999);
    CHECK(max_speed <= info.vmax * (1 + 1e-5));
    CHECK(max_k <= 64.0 + 1e-4);
    /* the slew limit: |d^2 k / dt^2| <= slew (2 % for the finite
     * difference at the kink); the design uses most of it near the centre */
    CHECK(max_acc <= 1.02 * slew_k);
    CHECK(max_acc >= 0.8 * slew_k);
    /* coverage: the interleaves' rings are 1/FOV apart and samples 1/FOV
     * apart along them, so no point of the disc is farther than
     * ~sqrt(2)/2 from a sample */
    double gap = coverage_gap(t, 63.5);
    printf("  coverage: farthest point of |k| <= 63.5 from a sample: %.3f/FOV\n", gap);
    CHECK(gap <= 0.75);
    lm_traj_free(t);

    /* refusals: one line naming the problem */
    t = NULL;
    o.interleaves = 1;
    CHECK(lm_spiral_make(&o, &t, NULL, &err) == LM_ERR_INVALID && !t && strstr(err.msg, "slew") &&
          !strchr(err.msg, '\n'));
    o.interleaves = 4;
    o.readout_s = NAN;
    CHECK(lm_spiral_make(&o, &t, NULL, &err) == LM_ERR_INVALID && strstr(err.msg, "readout"));
    o.readout_s = -1e-3;
    CHECK(lm_spiral_make(&o, &t, NULL, &err) == LM_ERR_INVALID);
    o.readout_s = R;
    o.n = 1;
    CHECK(lm_spiral_make(&o, &t, NULL, &err) == LM_ERR_INVALID && strstr(err.msg, "matrix"));
    o.n = 128;
    o.interleaves = 0;
    CHECK(lm_spiral_make(&o, &t, NULL, &err) == LM_ERR_INVALID && strstr(err.msg, "interleaves"));
    CHECK(lm_spiral_make(NULL, &t, NULL, &err) == LM_ERR_INVALID);

    /* a tiny one (the synthesis tests' 8 x 8): one interleaf of 10 ms */
    lm_spiral_opts small = {.n = 8, .interleaves = 1, .readout_s = 0.010};
    CHECK_OK(lm_spiral_make(&small, &t, &info, &err), &err);
    if (t) {
        CHECK(t->m == info.samples && t->t[t->m - 1] == 0.010f);
        CHECK_NEAR(hypot(t->k[3 * (t->m - 1)], t->k[3 * (t->m - 1) + 1]), 4.0, 1e-5);
        lm_traj_free(t);
        t = NULL;
    }

    /* lm_traj_times_uniform: full 2D spokes of 32 samples echo at their
     * k = 0 sample (j = 16): t = (j - 16) R / 31 */
    int64_t n2[3] = {32, 32, 1};
    CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL2D, n2, 0, 0, &t, &err), &err);
    if (t) {
        CHECK_OK(lm_traj_times_uniform(t, 0.005, &err), &err);
        int bad = 0;
        for (int64_t i = 0; t->t && i < t->m; i++) {
            int64_t j = i % t->readout;
            bad += fabs(t->t[i] - (double)(j - 16) * 0.005 / 31) > 1e-9;
        }
        CHECK(t->readout == 32 && bad == 0);
        CHECK(lm_traj_times_uniform(t, NAN, &err) == LM_ERR_INVALID);
        CHECK(lm_traj_times_uniform(t, 2.0, &err) == LM_ERR_INVALID && strstr(err.msg, "readout"));
        lm_traj_free(t);
        t = NULL;
    }
    /* centre-out 3D spokes start at 0 */
    int64_t n3[3] = {16, 16, 16};
    CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL3D, n3, 0, 0, &t, &err), &err);
    if (t) {
        CHECK_OK(lm_traj_times_uniform(t, 0.002, &err), &err);
        CHECK(t->t && t->t[0] == 0.0f && fabs(t->t[t->readout - 1] - 0.002) < 1e-9 && t->t[t->readout] == 0.0f);
        lm_traj_free(t);
    }
    return lm_test_finish("spiral");
}
