/* ROI statistics over frames (lm_frame_stats.h) against a two-pass
 * long-double reference, a hand-computed case, and its refusals. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

#include "lm_frame_stats.h"
#include "lm_test.h"

/* Mean and SD (n - 1) of |x| at idx, two passes in long double. */
static void reference(const lm_cfloat *f, const int64_t *idx, int64_t n, double *mean, double *sd)
{
    long double m = 0, s = 0;
    for (int64_t i = 0; i < n; i++)
        m += hypotl(crealf(f[idx[i]]), cimagf(f[idx[i]]));
    m /= n;
    for (int64_t i = 0; i < n; i++) {
        long double d = hypotl(crealf(f[idx[i]]), cimagf(f[idx[i]])) - m;
        s += d * d;
    }
    *mean = (double)m;
    *sd = n > 1 ? (double)sqrtl(s / (n - 1)) : 0;
}

int main(void)
{
    lm_error err = {0};
    /* Hand-computed: frame 0 |3+4i| = 5 and |0| at voxels 0 and 2: mean 2.5,
     * SD sqrt(12.5); frame 1 voxels 2, 0 both 1: mean 1, SD 0. */
    lm_cfloat x[6] = {3 + 4 * I, 9, 0, 1, 9, -I};
    int64_t idx[2] = {0, 2};
    double mean[2], sd[2];
    CHECK_OK(lm_frame_stats(x, 2, 3, idx, 2, mean, sd, &err), &err);
    CHECK_NEAR(mean[0], 2.5, 1e-15);
    CHECK_NEAR(sd[0], sqrt(12.5), 1e-14);
    CHECK_NEAR(mean[1], 1, 1e-15);
    CHECK_NEAR(sd[1], 0, 1e-15);

    /* A bright region with a small spread over 24 frames (where a one-pass
     * sum of squares in float would cancel): relative 1e-12 of the reference. */
    const int64_t T = 24, N = 4096, n = 1500;
    lm_cfloat *big = malloc((size_t)(T * N) * sizeof *big);
    int64_t *ri = malloc((size_t)n * sizeof *ri);
    double *bm = malloc((size_t)T * sizeof *bm), *bs = malloc((size_t)T * sizeof *bs);
    uint64_t s = 12345;
    for (int64_t i = 0; i < T * N; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        float r = (float)((s >> 11) * 0x1.0p-53);
        big[i] = (1e4f + r) * cexpf(I * 6.0f * r) * (1 + 0.01f * (float)(i / N));
    }
    for (int64_t i = 0; i < n; i++)
        ri[i] = (i * 2654435761LL) % N;
    CHECK_OK(lm_frame_stats(big, T, N, ri, n, bm, bs, &err), &err);
    for (int64_t t = 0; t < T; t++) {
        double rm, rs;
        reference(big + t * N, ri, n, &rm, &rs);
        CHECK_NEAR(bm[t] / rm, 1, 1e-12);
        CHECK_NEAR(bs[t] / rs, 1, 1e-9);
    }

    /* Refusals: no voxel, an index outside the frame, no image. */
    CHECK(lm_frame_stats(x, 2, 3, idx, 0, mean, sd, &err) == LM_ERR_INVALID);
    int64_t bad[1] = {3};
    CHECK(lm_frame_stats(x, 2, 3, bad, 1, mean, sd, &err) == LM_ERR_INVALID);
    CHECK(lm_frame_stats(NULL, 2, 3, idx, 2, mean, sd, &err) == LM_ERR_INVALID);
    free(big);
    free(ri);
    free(bm);
    free(bs);
    return lm_test_finish("frame_stats");
}
