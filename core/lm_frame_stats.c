#include "lm_frame_stats.h"

#include <complex.h>
#include <math.h>

lm_code lm_frame_stats(const lm_cfloat *x, int64_t frames, int64_t nvox, const int64_t *idx, int64_t n,
                       double *mean, double *sd, lm_error *err)
{
    if (!x || !idx || !mean || !sd || frames < 1 || nvox < 1)
        return lm_fail(err, LM_ERR_INVALID, "frame statistics: no image");
    if (n < 1)
        return lm_fail(err, LM_ERR_INVALID, "frame statistics: the region holds no voxel");
    for (int64_t i = 0; i < n; i++)
        if (idx[i] < 0 || idx[i] >= nvox)
            return lm_fail(err, LM_ERR_INVALID, "frame statistics: voxel %lld is outside the frame of %lld voxels",
                           (long long)idx[i], (long long)nvox);
    for (int64_t t = 0; t < frames; t++) {
        const lm_cfloat *f = x + t * nvox;
        double m = 0, s = 0;
        for (int64_t i = 0; i < n; i++) {
            const lm_cfloat v = f[idx[i]];
            const double a = hypot((double)crealf(v), (double)cimagf(v));
            const double d = a - m;
            m += d / (double)(i + 1);
            s += d * (a - m);
        }
        mean[t] = m;
        sd[t] = n > 1 ? sqrt(s / (double)(n - 1)) : 0;
    }
    return LM_OK;
}
