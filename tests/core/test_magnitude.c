/* lm_magnitude (lm_types.h) against the magnitude in long double: exactly
 * the float nearest to sqrt(re^2 + im^2) for ordinary values, and right at
 * the float range's edges (squares past FLT_MAX, subnormals), for zeros,
 * infinities and NaN. */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "lm_test.h"
#include "lm_types.h"
#include "solver_common.h"

static float reference(lm_cfloat z)
{
    const long double a = crealf(z), b = cimagf(z);
    if (isinf(a) || isinf(b))
        return INFINITY;
    if (isnan(a) || isnan(b))
        return NAN;
    return (float)sqrtl(a * a + b * b);
}

int main(void)
{
    enum { N = 100001 };
    lm_cfloat *z = malloc(sizeof *z * N);
    float *m = malloc(sizeof *m * N);
    const float edge[] = {0.0f, -0.0f, 1e-45f, FLT_MIN, 1e-30f, 1.0f, 3e19f, 1e30f, FLT_MAX, -FLT_MAX, INFINITY,
                          -INFINITY, NAN};
    const int ne = (int)(sizeof edge / sizeof edge[0]);
    int64_t n = 0;
    for (int i = 0; i < ne; i++)
        for (int j = 0; j < ne; j++)
            z[n++] = CMPLXF(edge[i], edge[j]);
    while (n < N) { /* magnitudes over 20 decades */
        const float s = powf(10.0f, (float)(20 * tst_uniform() - 10));
        z[n++] = CMPLXF(s * (float)(2 * tst_uniform() - 1), s * (float)(2 * tst_uniform() - 1));
    }
    lm_magnitude(z, m, N);
    int64_t wrong = 0, first = -1;
    for (int64_t i = 0; i < N; i++) {
        const float r = reference(z[i]);
        const int ok = isnan(r) ? isnan(m[i]) : m[i] == r;
        if (!ok && first < 0)
            first = i;
        wrong += !ok;
    }
    CHECK_MSG(wrong == 0, "%lld of %d magnitudes wrong; the first |%g%+gi| = %.9g, expected %.9g", (long long)wrong,
              N, first >= 0 ? crealf(z[first]) : 0.0, first >= 0 ? cimagf(z[first]) : 0.0,
              first >= 0 ? m[first] : 0.0, first >= 0 ? reference(z[first]) : 0.0);
    free(z), free(m);
    return lm_test_finish("magnitude");
}
