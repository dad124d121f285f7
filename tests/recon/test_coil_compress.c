/* Coil compression on a synthetic 2D 8-coil radial data set: energy kept
 * against a double-precision eigen-decomposition done here and against the
 * trace identity on the compressed data; auto keeps >= 99 %; compressed data
 * equal the k-space of the compressed maps times the object. */
#include <lapacke.h>
#include <stdio.h>

#include "coils_synth.h"
#include "lm_test.h"

static double kenergy(const lm_kdata *k)
{
    double s = 0;
    for (int64_t i = 0; i < k->m * k->ncoils; i++)
        s += crealf(k->d[i] * conjf(k->d[i]));
    return s;
}

int main(void)
{
    lm_error err;
    lm_error_clear(&err);
    syn_problem p;
    int64_t n[3] = {48, 40, 1};
    CHECK_OK(syn_make(&p, n, 8, LM_TRAJ_RADIAL2D, 0, &err), &err);
    if (!p.k)
        return lm_test_finish("test_coil_compress");
    int64_t m = p.k->m, nc = p.k->ncoils;

    /* reference: eigenvalues of D^H D in double (zheev) */
    double _Complex g[64];
    double ev[8];
    for (int i = 0; i < nc; i++)
        for (int j = 0; j < nc; j++) {
            double _Complex s = 0;
            for (int64_t q = 0; q < m; q++)
                s += conj((double _Complex)p.k->d[q + i * m]) * p.k->d[q + j * m];
            g[i * nc + j] = s;
        }
    CHECK(LAPACKE_zheev(LAPACK_ROW_MAJOR, 'N', 'L', (lapack_int)nc, g, (lapack_int)nc, ev) == 0);
    double total = 0;
    for (int i = 0; i < nc; i++)
        total += ev[i];

    for (int64_t kk = 1; kk <= nc; kk++) {
        lm_coil_compress *cc = NULL;
        CHECK_OK(lm_coil_compress_plan(p.k, kk, 0, &cc, &err), &err);
        if (!cc)
            continue;
        double ref = 0;
        for (int i = 0; i < kk; i++)
            ref += ev[nc - 1 - i];
        ref /= total;
        CHECK_NEAR(cc->energy, ref, 1e-9);
        for (int i = 0; i < nc; i++)
            CHECK_NEAR(cc->sv[i], sqrt(fmax(ev[nc - 1 - i], 0)), 1e-9 * sqrt(total));
        /* rows of A orthonormal */
        double orth = 0;
        for (int a = 0; a < kk; a++)
            for (int b = 0; b < kk; b++) {
                double _Complex s = 0;
                for (int c = 0; c < nc; c++)
                    s += cc->a[a * nc + c] * conj(cc->a[b * nc + c]);
                orth = fmax(orth, cabs(s - (a == b)));
            }
        CHECK(orth < 1e-12);
        lm_kdata *kc = NULL;
        CHECK_OK(lm_coil_compress_apply_kdata(cc, p.k, &kc, &err), &err);
        if (kc) {
            double frac = kenergy(kc) / kenergy(p.k);
            CHECK_NEAR(frac, cc->energy, 1e-5); /* trace identity, float data */
            if (kk == 3 || kk == nc)
                fprintf(stderr, "K = %lld: energy %.6f (reference %.6f, compressed data %.6f)\n",
                        (long long)kk, cc->energy, ref, frac);
        }
        lm_kdata_free(kc);
        lm_coil_compress_free(cc);
    }

    /* auto: smallest K with >= 99 % */
    lm_coil_compress *cc = NULL;
    CHECK_OK(lm_coil_compress_plan(p.k, 0, 0, &cc, &err), &err);
    if (cc) {
        double prev = 0;
        for (int i = 0; i < cc->nvirt - 1; i++)
            prev += ev[nc - 1 - i];
        fprintf(stderr, "auto: K = %lld keeps %.4f (K - 1 keeps %.4f)\n", (long long)cc->nvirt, cc->energy, prev / total);
        CHECK(cc->energy >= 0.99);
        CHECK(prev / total < 0.99);
        CHECK(cc->nvirt < nc);

        /* consistency: compressed data = F(compressed maps x rho) */
        lm_kdata *kc = NULL, *kref = NULL;
        lm_sens *sc = NULL;
        CHECK_OK(lm_coil_compress_apply_kdata(cc, p.k, &kc, &err), &err);
        CHECK_OK(lm_coil_compress_apply_sens(cc, p.s, &sc, &err), &err);
        if (sc)
            CHECK_OK(syn_kspace(&p.g, p.t, sc, p.rho, &kref, &err), &err);
        if (kc && kref) {
            double num = 0, den = 0;
            for (int64_t i = 0; i < kc->m * kc->ncoils; i++) {
                num += pow(cabsf(kc->d[i] - kref->d[i]), 2);
                den += pow(cabsf(kref->d[i]), 2);
            }
            fprintf(stderr, "compressed data vs k-space of compressed maps: %.2e relative l2\n", sqrt(num / den));
            CHECK(sqrt(num / den) < 1e-5);
        }
        lm_kdata_free(kc);
        lm_kdata_free(kref);
        lm_sens_free(sc);
    }
    lm_coil_compress_free(cc);
    syn_free(&p);
    return lm_test_finish("test_coil_compress");
}
