#include "lm_cartesian.h"

#include <fftw3.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "lm_fftw.h"

static int64_t wrap(int64_t i, int64_t n) { return ((i % n) + n) % n; }

lm_code lm_cartesian_check(const lm_geom *g, const lm_traj *t, lm_error *err)
{
    for (int64_t j = 0; j < t->m; j++)
        for (int a = 0; a < 3; a++) {
            double k = t->k[3 * j + a], r = rint(k);
            int64_t n = g->n[a];
            if (fabs(k - r) > 1e-3 || (n > 1 ? (r < -(double)(n / 2) || r >= (double)(n - n / 2)) : r != 0))
                return lm_fail(err, LM_ERR_INVALID,
                               "fft reconstruction needs Cartesian samples on the %lldx%lldx%lld grid; "
                               "sample %lld at (%g, %g, %g) is not (use cg or gridding)",
                               (long long)g->n[0], (long long)g->n[1], (long long)g->n[2], (long long)j,
                               t->k[3 * j], t->k[3 * j + 1], t->k[3 * j + 2]);
        }
    return LM_OK;
}

lm_code lm_cartesian_fft(const lm_geom *g, const lm_traj *t, const lm_cfloat *d, lm_cfloat *img,
                         const lm_ctl *ctl, lm_error *err)
{
    lm_code rc = lm_cartesian_check(g, t, err);
    if (rc != LM_OK)
        return rc;
    const int64_t n0 = g->n[0], n1 = g->n[1], n2 = g->n[2], nv = n0 * n1 * n2;
    float *count = lm_calloc((size_t)nv, sizeof *count, err, "fft reconstruction");
    /* <complex.h> comes first, so fftwf_complex is float _Complex: lm_cfloat. */
    lm_cfloat *buf = count ? (lm_cfloat *)fftwf_alloc_complex((size_t)nv) : NULL;
    if (!buf) {
        free(count);
        return count ? lm_fail(err, LM_ERR_NOMEM, "fft reconstruction: cannot allocate %lld values",
                               (long long)nv)
                     : LM_ERR_NOMEM;
    }
    memset(buf, 0, (size_t)nv * sizeof *buf);
    /* k = u - n (u >= n/2) sits at FFT index u: an ifftshift of the k grid. */
    for (int64_t j = 0; j < t->m; j++) {
        int64_t u0 = wrap((int64_t)rint(t->k[3 * j]), n0), u1 = wrap((int64_t)rint(t->k[3 * j + 1]), n1),
                u2 = wrap((int64_t)rint(t->k[3 * j + 2]), n2);
        int64_t idx = u0 + n0 * (u1 + n1 * u2);
        buf[idx] += d[j];
        count[idx] += 1.0f;
    }
    for (int64_t i = 0; i < nv; i++)
        if (count[i] > 1)
            buf[i] /= count[i];
    free(count);
    if (lm_ctl_report(ctl, 0.5)) {
        fftwf_free(buf);
        return lm_fail(err, LM_ERR_CANCELLED, "fft reconstruction: cancelled");
    }
    if (lm_fftw_setup())
        fftwf_plan_with_nthreads(ctl && ctl->threads > 0 ? ctl->threads : omp_get_max_threads());
    /* FFTW wants the slowest axis first; x is fastest here. */
    int dims[3] = {(int)n2, (int)n1, (int)n0};
    fftwf_plan p = fftwf_plan_dft(3, dims, buf, buf, FFTW_BACKWARD, FFTW_ESTIMATE);
    if (!p) {
        fftwf_free(buf);
        return lm_fail(err, LM_ERR_INTERNAL, "fft reconstruction: FFTW could not plan %lldx%lldx%lld",
                       (long long)n0, (long long)n1, (long long)n2);
    }
    fftwf_execute(p);
    fftwf_destroy_plan(p);
    /* Voxel i sits at x = (i - n/2)/n: an fftshift of the output. */
    for (int64_t z = 0; z < n2; z++)
        for (int64_t y = 0; y < n1; y++)
            for (int64_t x = 0; x < n0; x++) {
                int64_t s = wrap(x - n0 / 2, n0) + n0 * (wrap(y - n1 / 2, n1) + n1 * wrap(z - n2 / 2, n2));
                img[x + n0 * (y + n1 * z)] = buf[s];
            }
    fftwf_free(buf);
    (void)lm_ctl_report(ctl, 1.0);
    return LM_OK;
}
