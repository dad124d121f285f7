/* Prewhitening: noise drawn with a known covariance Psi = B B^H (8
 * channels, seeded), estimated, whitened; checked against double-precision
 * references computed here. */
#include <lapacke.h>
#include <stdio.h>

#include "coils_synth.h"
#include "lm_test.h"

#define NC 8
#define NS 200000 /* samples per channel: entry-wise std of a covariance estimate ~ 1/sqrt(NS) = 0.22 % */

/* Frobenius norm of (A - I) over that of I, A row-major NC x NC */
static double rel_from_identity(const double _Complex *a)
{
    double s = 0;
    for (int i = 0; i < NC; i++)
        for (int j = 0; j < NC; j++) {
            double _Complex d = a[i * NC + j] - (i == j);
            s += creal(d * conj(d));
        }
    return sqrt(s / NC);
}

/* C = (1/ns) sum_m x x^H over the data's coil vectors, in double */
static void sample_cov(const lm_kdata *k, double _Complex *c)
{
    for (int i = 0; i < NC; i++)
        for (int j = 0; j < NC; j++) {
            double _Complex s = 0;
            for (int64_t m = 0; m < k->m; m++)
                s += (double _Complex)k->d[m + i * k->m] * conj((double _Complex)k->d[m + j * k->m]);
            c[i * NC + j] = s / (double)k->m;
        }
}

static void draw(lm_kdata *k, const double _Complex *b, syn_rng *r)
{
    for (int64_t m = 0; m < k->m; m++) {
        double _Complex z[NC];
        for (int c = 0; c < NC; c++)
            z[c] = syn_cnormal(r);
        for (int i = 0; i < NC; i++) {
            double _Complex s = 0;
            for (int c = 0; c < NC; c++)
                s += b[i * NC + c] * z[c];
            k->d[m + i * k->m] = (lm_cfloat)s;
        }
    }
}

int main(void)
{
    lm_error err;
    lm_error_clear(&err);
    syn_rng rng = {0x9e3779b97f4a7c15ULL};
    /* B: full complex mixing with distinct channel gains (0.5 .. 4), so Psi
     * has strong correlations and a condition number ~ 100 */
    double _Complex b[NC * NC], psi[NC * NC];
    for (int i = 0; i < NC; i++)
        for (int j = 0; j < NC; j++)
            b[i * NC + j] = (i == j ? 0.5 + 0.5 * i : 0.0) + 0.3 * syn_cnormal(&rng);
    for (int i = 0; i < NC; i++)
        for (int j = 0; j < NC; j++) {
            double _Complex s = 0;
            for (int c = 0; c < NC; c++)
                s += b[i * NC + c] * conj(b[j * NC + c]);
            psi[i * NC + j] = s;
        }
    lm_kdata *noise = lm_kdata_new(NS, NC, &err), *noise2 = lm_kdata_new(NS, NC, &err);
    if (!noise || !noise2)
        return 1;
    draw(noise, b, &rng);
    draw(noise2, b, &rng);

    lm_cmat *cov = NULL, *w = NULL;
    CHECK_OK(lm_noise_covariance(noise, &cov, &err), &err);
    if (!cov)
        return lm_test_finish("test_prewhiten");
    /* estimate against the true Psi: relative Frobenius error */
    double num = 0, den = 0;
    for (int i = 0; i < NC * NC; i++) {
        num += pow(cabs(cov->a[i] - psi[i]), 2);
        den += pow(cabs(psi[i]), 2);
    }
    fprintf(stderr, "covariance estimate vs truth: %.3f %% (Frobenius, %d samples)\n", 100 * sqrt(num / den), NS);
    CHECK(sqrt(num / den) < 0.02);
    /* against a direct double-precision sum */
    double _Complex ref[NC * NC];
    sample_cov(noise, ref);
    double dmax = 0;
    for (int i = 0; i < NC * NC; i++)
        dmax = fmax(dmax, cabs(cov->a[i] - ref[i]) / cabs(ref[0]));
    CHECK_MSG(dmax < 1e-12, "covariance differs from the reference sum by %.2e", dmax);

    CHECK_OK(lm_prewhiten_make(cov, &w, &err), &err);
    if (w) {
        /* W lower triangular with a positive real diagonal, and W Psi W^H = I */
        double up = 0;
        for (int i = 0; i < NC; i++)
            for (int j = i + 1; j < NC; j++)
                up = fmax(up, cabs(w->a[i * NC + j]));
        CHECK(up == 0);
        for (int i = 0; i < NC; i++)
            CHECK(creal(w->a[i * NC + i]) > 0 && fabs(cimag(w->a[i * NC + i])) < 1e-12);
        double _Complex wp[NC * NC], wpw[NC * NC];
        for (int i = 0; i < NC; i++)
            for (int j = 0; j < NC; j++) {
                double _Complex s = 0;
                for (int c = 0; c < NC; c++)
                    s += w->a[i * NC + c] * cov->a[c * NC + j];
                wp[i * NC + j] = s;
            }
        for (int i = 0; i < NC; i++)
            for (int j = 0; j < NC; j++) {
                double _Complex s = 0;
                for (int c = 0; c < NC; c++)
                    s += wp[i * NC + c] * conj(w->a[j * NC + c]);
                wpw[i * NC + j] = s;
            }
        CHECK_MSG(rel_from_identity(wpw) < 1e-10, "W Psi W^H off identity by %.2e", rel_from_identity(wpw));

        /* the same noise, whitened: identity up to float rounding */
        CHECK_OK(lm_prewhiten_apply(w, noise, &err), &err);
        double _Complex c1[NC * NC], c2[NC * NC];
        sample_cov(noise, c1);
        double e1 = rel_from_identity(c1);
        /* an independent draw: identity up to the estimation error */
        CHECK_OK(lm_prewhiten_apply(w, noise2, &err), &err);
        sample_cov(noise2, c2);
        double e2 = rel_from_identity(c2);
        fprintf(stderr, "whitened covariance vs identity: same noise %.2e, independent noise %.3f %% (Frobenius relative)\n",
                e1, 100 * e2);
        CHECK(e1 < 1e-5);
        CHECK(e2 < 0.02);
    }

    /* a known signal: with W from the true Psi = L L^H, data L a whiten to a */
    lm_cmat *truth = lm_cmat_new(NC, &err), *wt = NULL;
    if (truth) {
        memcpy(truth->a, psi, sizeof psi);
        CHECK_OK(lm_prewhiten_make(truth, &wt, &err), &err);
    }
    if (wt) {
        double _Complex l[NC * NC];
        memcpy(l, psi, sizeof psi);
        CHECK(LAPACKE_zpotrf(LAPACK_ROW_MAJOR, 'L', NC, l, NC) == 0);
        lm_kdata *sig = lm_kdata_new(64, NC, &err);
        double _Complex a[64][NC];
        for (int m = 0; m < 64; m++)
            for (int c = 0; c < NC; c++)
                a[m][c] = cexp(I * 0.1 * m * (c + 1)) * (1 + 0.1 * c);
        for (int m = 0; m < 64; m++)
            for (int i = 0; i < NC; i++) {
                double _Complex s = 0;
                for (int c = 0; c <= i; c++)
                    s += l[i * NC + c] * a[m][c];
                sig->d[m + i * 64] = (lm_cfloat)s;
            }
        CHECK_OK(lm_prewhiten_apply(wt, sig, &err), &err);
        double worst = 0;
        for (int m = 0; m < 64; m++)
            for (int c = 0; c < NC; c++)
                worst = fmax(worst, cabs((double _Complex)sig->d[m + c * 64] - a[m][c]) / cabs(a[m][c]));
        fprintf(stderr, "known signal L a whitened back to a: worst relative error %.2e\n", worst);
        CHECK(worst < 1e-4);
        lm_kdata_free(sig);
    }
    lm_cmat_free(truth);
    lm_cmat_free(wt);
    lm_cmat_free(cov);
    lm_cmat_free(w);
    lm_kdata_free(noise);
    lm_kdata_free(noise2);
    return lm_test_finish("test_prewhiten");
}
