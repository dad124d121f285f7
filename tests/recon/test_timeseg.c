/* Time-segmentation interpolators (lm_timeseg.h) on the spiral problem's
 * times and field map: the reported errors (root mean square and worst)
 * against an independent double evaluation over every voxel's field and
 * every sample time, their decrease with L, auto meeting LM_SEGMENTS_TOL
 * with the smallest L, the min-max kind, a constant field (exact with one
 * segment) and bad input. */
#include <complex.h>
#include <stdio.h>
#include <string.h>

#include "fm_common.h"
#include "lm_encoding.h"
#include "lm_test.h"
#include "lm_timeseg.h"

/* worst |exp(-i 2 pi f t) - sum_l b_l(t) exp(-i 2 pi f tau_l)| over every
 * (voxel, sample) pair, in double */
static double true_error(const lm_timeseg *s, const lm_traj *t, const float *f, int64_t nv)
{
    double worst = 0;
#pragma omp parallel for reduction(max : worst) schedule(static)
    for (int64_t v = 0; v < nv; v++)
        for (int64_t j = 0; j < FM_READOUT; j++) { /* every interleave has these times */
            double complex a = 0;
            for (int l = 0; l < s->L; l++) {
                const double ph = -2 * M_PI * f[v] * s->tau[l];
                a += (double complex)s->b[l * t->m + j] * CMPLX(cos(ph), sin(ph));
            }
            const double ph = -2 * M_PI * f[v] * (double)t->t[j];
            const double e = cabs(CMPLX(cos(ph), sin(ph)) - a);
            worst = e > worst ? e : worst;
        }
    return worst;
}

/* root mean square of the same over every (voxel, sample) pair, in double */
static double true_rms(const lm_timeseg *s, const lm_traj *t, const float *f, int64_t nv)
{
    double ss = 0;
#pragma omp parallel for reduction(+ : ss) schedule(static)
    for (int64_t v = 0; v < nv; v++)
        for (int64_t j = 0; j < FM_READOUT; j++) {
            double complex a = 0;
            for (int l = 0; l < s->L; l++) {
                const double ph = -2 * M_PI * f[v] * s->tau[l];
                a += (double complex)s->b[l * t->m + j] * CMPLX(cos(ph), sin(ph));
            }
            const double ph = -2 * M_PI * f[v] * (double)t->t[j];
            const double complex e = CMPLX(cos(ph), sin(ph)) - a;
            ss += creal(e * conj(e));
        }
    return sqrt(ss / (double)(nv * FM_READOUT));
}

int main(void)
{
    lm_error err = {0};
    lm_geom g;
    lm_geom_init(&g, 32, 32, 1, 240);
    const int64_t nv = lm_geom_voxels(&g);
    lm_traj *t = fm_spiral(32);
    float *f = fm_fieldmap(&g);

    /* b repeats per interleave: the times are deduplicated */
    lm_timeseg *s = NULL;
    CHECK_OK(lm_timeseg_make(t->t, t->m, f, nv, 4, LM_TIMESEG_HIST, LM_SEGMENTS_TOL, &s, &err), &err);
    if (s) {
        CHECK(s->times == FM_READOUT);
        CHECK(s->L == 4);
        CHECK(s->tau[0] == 0.0 && fabs(s->tau[3] - FM_T_READ) < 1e-9);
        CHECK(memcmp(s->b, s->b + FM_READOUT, FM_READOUT * sizeof *s->b) == 0);
        printf("field %.1f .. %.1f Hz, %lld distinct times\n", s->fmin, s->fmax, (long long)s->times);
    }
    /* the Q cache's key: the same for the same inputs, another when one
     * sample's time moves (b changes there); the distinct times found in
     * any order, -0 counted as 0 */
    {
        lm_timeseg *s2 = NULL, *s3 = NULL;
        float *tt = malloc((size_t)t->m * sizeof *tt);
        memcpy(tt, t->t, (size_t)t->m * sizeof *tt);
        CHECK_OK(lm_timeseg_make(tt, t->m, f, nv, 4, LM_TIMESEG_HIST, LM_SEGMENTS_TOL, &s2, &err), &err);
        tt[t->m / 2 + 1] += 1e-6f;
        CHECK_OK(lm_timeseg_make(tt, t->m, f, nv, 4, LM_TIMESEG_HIST, LM_SEGMENTS_TOL, &s3, &err), &err);
        if (s && s2 && s3) {
            CHECK(s2->hash == s->hash);
            CHECK(s3->hash != s->hash);
            CHECK(s3->times == FM_READOUT + 1);
        }
        lm_timeseg_free(s2), lm_timeseg_free(s3);
        s2 = NULL;
        const float few[8] = {3e-3f, 0.0f, 1e-3f, -0.0f, 3e-3f, 2e-3f, 1e-3f, 0.0f};
        CHECK_OK(lm_timeseg_make(few, 8, f, nv, 2, LM_TIMESEG_HIST, LM_SEGMENTS_TOL, &s2, &err), &err);
        if (s2) {
            CHECK(s2->times == 4);
            CHECK(s2->tau[0] == 0.0 && fabs(s2->tau[1] - 3e-3) < 1e-9);
            CHECK(memcmp(&s2->b[1], &s2->b[3], sizeof *s2->b) == 0 && memcmp(&s2->b[0], &s2->b[4], sizeof *s2->b) == 0);
        }
        lm_timeseg_free(s2);
        free(tt);
    }
    lm_timeseg_free(s);

    for (int kind = 0; kind < 2; kind++) {
        double prev = INFINITY, prev_rms = INFINITY, first = 0;
        int auto_l = 0;
        for (int L = 1; L <= 12; L++) {
            s = NULL;
            CHECK_OK(lm_timeseg_make(t->t, t->m, f, nv, L, (lm_timeseg_kind)kind, LM_SEGMENTS_TOL, &s, &err), &err);
            if (!s)
                continue;
            const double te = true_error(s, t, f, nv), tr = true_rms(s, t, f, nv);
            printf("%s L=%2d rms %.3e worst %.3e (over every voxel and time %.3e, %.3e)\n",
                   kind ? "minmax" : "hist  ", L, s->error, s->worst, tr, te);
            /* the worst error is measured at bin edges and means: the
             * voxels in between may differ a little, not by more than 1.5x */
            CHECK_MSG(te <= 1.5 * s->worst + 1e-6, "L=%d true %.3e reported %.3e", L, te, s->worst);
            /* the rms over bin means weighted by their voxels is the rms
             * over the voxels, to within the bins' width (10 %) */
            CHECK_MSG(fabs(tr - s->error) <= 0.1 * tr + 1e-6, "L=%d true rms %.3e reported %.3e", L, tr, s->error);
            CHECK(s->error <= s->worst);
            if (L == 1)
                first = s->error;
            /* once the fit means something (worst error < 1; below that the
             * max norm of a least-squares fit need not fall), it falls by
             * at least 2x per segment here, down to float rounding of b;
             * the rms by 3x once below 0.1 */
            CHECK_MSG(prev >= 1 || s->worst < 0.5 * prev || s->worst < 1e-5, "L=%d error %.3e after %.3e", L,
                      s->worst, prev);
            CHECK_MSG(prev_rms >= 0.1 || s->error < prev_rms / 3 || s->error < 1e-5, "L=%d rms %.3e after %.3e", L,
                      s->error, prev_rms);
            if (!auto_l && s->error < LM_SEGMENTS_TOL * LM_TIMESEG_AUTO_SHARE)
                auto_l = L;
            prev = s->worst;
            prev_rms = s->error;
            lm_timeseg_free(s);
        }
        CHECK(first > 0.5);         /* one segment cannot follow 150 Hz x 25 ms (3.75 cycles) */
        CHECK(prev < 1e-4);         /* twelve can, in the worst case too */
        s = NULL;
        CHECK_OK(lm_timeseg_make(t->t, t->m, f, nv, LM_SEGMENTS_AUTO, (lm_timeseg_kind)kind, LM_SEGMENTS_TOL, &s, &err),
                 &err);
        if (s) {
            printf("%s auto: L=%d error %.3e\n", kind ? "minmax" : "hist", s->L, s->error);
            CHECK(s->error < LM_SEGMENTS_TOL * LM_TIMESEG_AUTO_SHARE);
            CHECK(s->L == auto_l); /* the smallest L that meets it */
            CHECK(true_rms(s, t, f, nv) < 1.1 * LM_SEGMENTS_TOL * LM_TIMESEG_AUTO_SHARE);
        }
        lm_timeseg_free(s);
    }

    /* a constant field: one segment is exact */
    float *f0 = malloc((size_t)nv * sizeof *f0);
    for (int64_t v = 0; v < nv; v++)
        f0[v] = 80.0f;
    s = NULL;
    CHECK_OK(lm_timeseg_make(t->t, t->m, f0, nv, LM_SEGMENTS_AUTO, LM_TIMESEG_HIST, LM_SEGMENTS_TOL, &s, &err), &err);
    if (s) {
        CHECK(s->L == 1);
        CHECK(s->error < 1e-6);
    }
    lm_timeseg_free(s);

    /* bad input is refused with a message */
    f0[7] = NAN;
    s = NULL;
    CHECK(lm_timeseg_make(t->t, t->m, f0, nv, 2, LM_TIMESEG_HIST, LM_SEGMENTS_TOL, &s, &err) == LM_ERR_INVALID);
    CHECK(!s && strstr(err.msg, "voxel 7"));
    CHECK(lm_timeseg_make(t->t, t->m, f, nv, 0, LM_TIMESEG_HIST, LM_SEGMENTS_TOL, &s, &err) == LM_ERR_INVALID);
    CHECK(lm_timeseg_make(t->t, t->m, f, nv, LM_TIMESEG_MAX_L + 1, LM_TIMESEG_HIST, LM_SEGMENTS_TOL, &s, &err) ==
          LM_ERR_INVALID);
    free(f0);
    free(f);
    lm_traj_free(t);
    return lm_test_finish("timeseg");
}
