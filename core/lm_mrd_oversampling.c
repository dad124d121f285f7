/* Removing the readout oversampling of Cartesian MRD data: each readout is
 * taken to the image domain along x, cropped to the reconSpace field of
 * view (centred) and taken back, as scanners' reconstructions do. Done on
 * the k-space so every method that follows (FFT, SENSE, gridding) works on
 * the reconSpace matrix. The transform is scaled to be unitary
 * (1/sqrt(n n_r)), so the noise per sample keeps the variance the noise
 * scans measure; the FFT image is then the crop of the oversampled one
 * times sqrt(n_r / n). */
#include "lm_mrd_private.h"

#include <complex.h>
#include <fftw3.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_fftw.h"

static int64_t wrap(int64_t i, int64_t n) { return ((i % n) + n) % n; }

/* Whether t holds whole readouts of n samples at kx = -n/2 .. n/2-1 in
 * order, one after another. */
static int full_readouts(const lm_traj *t, int64_t n)
{
    if (t->m % n != 0)
        return 0;
    for (int64_t r = 0; r < t->m / n; r++) {
        const float *k = t->k + 3 * r * n;
        for (int64_t i = 0; i < n; i++)
            if (k[3 * i] != (float)(i - n / 2) || k[3 * i + 1] != k[1] || k[3 * i + 2] != k[2])
                return 0;
    }
    return 1;
}

lm_code lm_mrd_remove_oversampling(lm_traj **tp, lm_kdata **kp, int64_t n, int64_t nr, int *applied,
                                   lm_error *err)
{
    *applied = 0;
    lm_traj *t = *tp;
    lm_kdata *kd = *kp;
    if (nr < 2 || nr >= n || !full_readouts(t, n))
        return LM_OK;
    const int64_t nread = t->m / n, mr = nread * nr;
    lm_traj *t2 = lm_traj_new(mr, t->ndim, err);
    lm_kdata *k2 = t2 ? lm_kdata_new(mr, kd->ncoils, err) : NULL;
    lm_cfloat *a = fftwf_alloc_complex((size_t)n), *c = fftwf_alloc_complex((size_t)nr);
    lm_code rc = LM_OK;
    if (!t2 || !k2 || !a || !c || (t->t && lm_traj_alloc_times(t2, err) != LM_OK)) {
        rc = !t2 || !k2 ? (err ? err->code : LM_ERR_NOMEM)
                        : lm_fail(err, LM_ERR_NOMEM, "removing the readout oversampling: out of memory");
        goto done;
    }
    lm_fftw_setup();
    /* Plans are made under FFTW's planner lock (lm_fftw_setup); ESTIMATE
     * does not touch the arrays. */
    fftwf_plan back = fftwf_plan_dft_1d((int)n, a, a, FFTW_BACKWARD, FFTW_ESTIMATE);
    fftwf_plan fwd = fftwf_plan_dft_1d((int)nr, c, c, FFTW_FORWARD, FFTW_ESTIMATE);
    if (!back || !fwd) {
        if (back)
            fftwf_destroy_plan(back);
        if (fwd)
            fftwf_destroy_plan(fwd);
        rc = lm_fail(err, LM_ERR_INTERNAL, "removing the readout oversampling: FFTW could not plan %lld points",
                     (long long)n);
        goto done;
    }
    const float scale = (float)(1.0 / sqrt((double)n * (double)nr));
    for (int64_t r = 0; r < nread; r++) {
        const float *k = t->k + 3 * r * n;
        for (int64_t i = 0; i < nr; i++) {
            float *q = t2->k + 3 * (r * nr + i);
            q[0] = (float)(i - nr / 2);
            q[1] = k[1];
            q[2] = k[2];
            if (t->t) {
                /* times are linear in kx: the same instant for the same k */
                const double dt = (double)t->t[r * n + 1] - (double)t->t[r * n];
                t2->t[r * nr + i] = (float)((double)t->t[r * n + n / 2] + (double)(i - nr / 2) * dt * (double)n /
                                                                             (double)nr);
            }
        }
        for (int64_t ch = 0; ch < kd->ncoils; ch++) {
            const lm_cfloat *d = kd->d + (size_t)ch * (size_t)t->m + (size_t)(r * n);
            for (int64_t i = 0; i < n; i++)
                a[wrap(i - n / 2, n)] = d[i];
            fftwf_execute_dft(back, a, a);
            for (int64_t x = -nr / 2; x < nr - nr / 2; x++)
                c[wrap(x, nr)] = a[wrap(x, n)];
            fftwf_execute_dft(fwd, c, c);
            lm_cfloat *o = k2->d + (size_t)ch * (size_t)mr + (size_t)(r * nr);
            for (int64_t i = 0; i < nr; i++)
                o[i] = scale * c[wrap(i - nr / 2, nr)];
        }
    }
    fftwf_destroy_plan(back);
    fftwf_destroy_plan(fwd);
    t2->readout = nr;
    lm_traj_free(t);
    lm_kdata_free(kd);
    *tp = t2;
    *kp = k2;
    t2 = NULL;
    k2 = NULL;
    *applied = 1;
done:
    fftwf_free(a);
    fftwf_free(c);
    lm_traj_free(t2);
    lm_kdata_free(k2);
    return rc;
}

int64_t lm_mrd_missing_lines(const lm_traj *t, const lm_geom *g)
{
    const int64_t n1 = g->n[1], n2 = g->n[2];
    unsigned char *seen = calloc((size_t)(n1 * n2), 1);
    if (!seen)
        return 0;
    int64_t have = 0;
    for (int64_t j = 0; j < t->m; j++) {
        int64_t u1 = (int64_t)lrintf(t->k[3 * j + 1]) + n1 / 2, u2 = (int64_t)lrintf(t->k[3 * j + 2]) + n2 / 2;
        if (u1 < 0 || u1 >= n1 || u2 < 0 || u2 >= n2 || seen[u1 + n1 * u2])
            continue;
        seen[u1 + n1 * u2] = 1;
        have++;
    }
    free(seen);
    return n1 * n2 - have;
}
