/* Metrics on hand-computed values (docs/conventions.md section 3). */
#include "lm_metrics.h"
#include "lm_recon.h"
#include "lm_test.h"

int main(void)
{
    lm_error err = {0};
    lm_metrics m;

    /* truth (1, 2, 3, 4), image truth + (1, 0, -1, 0): MSE = 0.5,
     * RMS(truth) = sqrt(7.5), max = 4. */
    lm_cfloat truth[4] = {1, 2, 3, 4};
    lm_cfloat img[4] = {2, 2, 2, 4};
    CHECK_OK(lm_metrics_compute(img, truth, 4, NULL, 0, &m, &err), &err);
    CHECK(m.count == 4);
    CHECK_NEAR(m.rmse, sqrt(0.5), 1e-12);
    CHECK_NEAR(m.percent_error, 100 * sqrt(0.5) / sqrt(7.5), 1e-10);
    CHECK_NEAR(m.psnr_db, 20 * log10(4 / sqrt(0.5)), 1e-10);
    CHECK_NEAR(m.scale_re, 1, 0);
    CHECK_NEAR(m.scale_im, 0, 0);

    /* Complex differences: image i * truth, no scale matching: |I - I0|^2
     * = 2 |I0|^2, so percent error = 100 sqrt(2). */
    lm_cfloat rot[4];
    for (int j = 0; j < 4; j++)
        rot[j] = I * truth[j];
    CHECK_OK(lm_metrics_compute(rot, truth, 4, NULL, 0, &m, &err), &err);
    CHECK_NEAR(m.percent_error, 100 * sqrt(2), 1e-9);

    /* Scale matching undoes a complex factor exactly: alpha = 1/(2i) = -i/2. */
    lm_cfloat sc[4];
    for (int j = 0; j < 4; j++)
        sc[j] = 2 * I * truth[j];
    CHECK_OK(lm_metrics_compute(sc, truth, 4, NULL, 1, &m, &err), &err);
    CHECK_NEAR(m.scale_re, 0, 1e-12);
    CHECK_NEAR(m.scale_im, -0.5, 1e-12);
    CHECK_NEAR(m.percent_error, 0, 1e-9);

    /* Hand-computed LS scale: I = (1, 1), I0 = (1, 3): alpha = 4/2 = 2,
     * residual (1, -1): MSE 1, RMS(I0) = sqrt(5), max 3. */
    lm_cfloat i2[2] = {1, 1}, t2[2] = {1, 3};
    CHECK_OK(lm_metrics_compute(i2, t2, 2, NULL, 1, &m, &err), &err);
    CHECK_NEAR(m.scale_re, 2, 1e-12);
    CHECK_NEAR(m.rmse, 1, 1e-12);
    CHECK_NEAR(m.percent_error, 100 / sqrt(5), 1e-10);
    CHECK_NEAR(m.psnr_db, 20 * log10(3.0), 1e-10);

    /* Mask: only voxels 1 and 3 compared (image equals truth there except
     * voxel 3 off by 2): MSE = 2, RMS(I0) = sqrt(10), max = 4. */
    uint8_t mask[4] = {0, 1, 0, 1};
    lm_cfloat im3[4] = {100, 2, -50, 6};
    CHECK_OK(lm_metrics_compute(im3, truth, 4, mask, 0, &m, &err), &err);
    CHECK(m.count == 2);
    CHECK_NEAR(m.rmse, sqrt(2), 1e-12);
    CHECK_NEAR(m.percent_error, 100 * sqrt(2) / sqrt(10), 1e-10);
    CHECK_NEAR(m.psnr_db, 20 * log10(4 / sqrt(2)), 1e-10);

    /* Identical images: zero error, +inf PSNR. */
    CHECK_OK(lm_metrics_compute(truth, truth, 4, NULL, 0, &m, &err), &err);
    CHECK(m.percent_error == 0);
    CHECK(isinf(m.psnr_db) && m.psnr_db > 0);
    CHECK_OK(lm_metrics_compute(truth, truth, 4, NULL, 1, &m, &err), &err);
    CHECK(isinf(m.psnr_db) && m.psnr_db > 0);
    CHECK_NEAR(m.scale_re, 1, 1e-12);

    /* Errors: empty mask, no voxels. */
    uint8_t none[4] = {0};
    CHECK(lm_metrics_compute(img, truth, 4, none, 0, &m, &err) == LM_ERR_INVALID);
    CHECK(lm_metrics_compute(img, truth, 0, NULL, 0, &m, &err) == LM_ERR_INVALID);

    /* Relative error between variants. */
    float ar[3] = {1, 2, 2}, ai[3] = {0, 0, 1}, br[3] = {1, 2, 2}, bi[3] = {0, 0, 0};
    CHECK_NEAR(lm_rel_error(ar, ai, br, bi, 3), 1.0 / 3.0, 1e-12);
    CHECK_NEAR(lm_rel_error(ar, NULL, br, NULL, 3), 0, 0);
    lm_cfloat ca[2] = {3 + 4 * I, 0}, cb[2] = {0, 5};
    CHECK_NEAR(lm_rel_error_c(ca, cb, 2), sqrt(50) / 5, 1e-12);
    CHECK(lm_rel_error_c(cb, cb, 2) == 0);
    lm_cfloat z[2] = {0, 0};
    CHECK(isinf(lm_rel_error_c(cb, z, 2)));
    CHECK(lm_rel_error_c(z, z, 2) == 0);

    /* One scoring rule: gridding is complex scale-matched; rss and estimated
     * maps are scored as magnitudes, scale-matched; CG with one coil or the
     * given maps, and Cartesian FFT, are not matched. */
    const int both = LM_METRICS_SCALE | LM_METRICS_MAGNITUDE;
    CHECK(lm_recon_scale_match(LM_METHOD_GRID_LINEAR, LM_COMBINE_SENSE, LM_SENS_NONE) == LM_METRICS_SCALE);
    CHECK(lm_recon_scale_match(LM_METHOD_GRID_KB, LM_COMBINE_SENSE, LM_SENS_NONE) == LM_METRICS_SCALE);
    CHECK(lm_recon_scale_match(LM_METHOD_CG, LM_COMBINE_RSS, LM_SENS_NONE) == both);
    CHECK(lm_recon_scale_match(LM_METHOD_CG, LM_COMBINE_SENSE, LM_SENS_ESTIMATED) == both);
    CHECK(!lm_recon_scale_match(LM_METHOD_CG, LM_COMBINE_SENSE, LM_SENS_GIVEN));
    CHECK(!lm_recon_scale_match(LM_METHOD_CG, LM_COMBINE_SENSE, LM_SENS_NONE));
    CHECK(!lm_recon_scale_match(LM_METHOD_FFT, LM_COMBINE_SENSE, LM_SENS_NONE));

    /* A gridded image: the truth times a complex scale (0.3 e^{i 1.1}) plus a
     * small error. Scored by the rule, the figures are those of the matched
     * image, computed here in long double with the least-squares alpha;
     * unmatched they are far off. */
    enum { NV = 64 };
    lm_cfloat t64[NV], i64[NV];
    const long double complex c = 0.3L * cexpl(1.1L * I);
    for (int j = 0; j < NV; j++) {
        t64[j] = (float)(1 + j % 7) + (float)(j % 3) * I;
        i64[j] = (lm_cfloat)(c * t64[j] + 0.01L * ((j * 37) % 11 - 5) * (1 + I));
    }
    long double complex num = 0;
    long double den = 0;
    for (int j = 0; j < NV; j++) {
        num += conjl(i64[j]) * t64[j];
        den += cabsl(i64[j]) * cabsl(i64[j]);
    }
    const long double complex alpha = num / den;
    long double se = 0, e0 = 0, peak = 0;
    for (int j = 0; j < NV; j++) {
        const long double d = cabsl(alpha * i64[j] - t64[j]);
        se += d * d;
        e0 += cabsl(t64[j]) * cabsl(t64[j]);
        if (cabsl(t64[j]) > peak)
            peak = cabsl(t64[j]);
    }
    const double ref_perr = (double)(100 * sqrtl(se / e0));
    const double ref_psnr = (double)(20 * log10l(peak / sqrtl(se / NV)));
    const int rule = lm_recon_scale_match(LM_METHOD_GRID_KB, LM_COMBINE_SENSE, LM_SENS_NONE);
    CHECK_OK(lm_metrics_compute(i64, t64, NV, NULL, rule, &m, &err), &err);
    CHECK_NEAR(m.percent_error, ref_perr, 1e-6 * ref_perr);
    CHECK_NEAR(m.psnr_db, ref_psnr, 1e-6);
    CHECK_NEAR(m.scale_re, (double)creall(alpha), 1e-9);
    CHECK_NEAR(m.scale_im, (double)cimagl(alpha), 1e-9);
    CHECK(ref_perr < 10);
    CHECK_OK(lm_metrics_compute(i64, t64, NV, NULL, 0, &m, &err), &err);
    CHECK(m.percent_error > 50); /* what the unmatched score said */

    /* An estimated-maps image: the truth times 0.3 and a phase that varies
     * over space (the maps' phase), plus a small error. The rule scores
     * magnitudes: the long-double reference is the real least-squares alpha
     * on |I| against |I0|. No global complex alpha removes that phase, so
     * complex matching alone leaves a large error (what the workbench showed
     * while `metrics --scale-match` on the magnitude export said otherwise). */
    long double mnum = 0, mden = 0;
    for (int j = 0; j < NV; j++) {
        t64[j] = (float)(1 + j % 7);
        i64[j] = (lm_cfloat)(0.3L * t64[j] * cexpl(0.2L * j * I) + 0.004L * ((j * 37) % 11 - 5));
        mnum += cabsl(i64[j]) * cabsl(t64[j]);
        mden += cabsl(i64[j]) * cabsl(i64[j]);
    }
    const long double malpha = mnum / mden;
    long double mse = 0, me0 = 0, mpeak = 0;
    for (int j = 0; j < NV; j++) {
        const long double d = malpha * cabsl(i64[j]) - cabsl(t64[j]);
        mse += d * d;
        me0 += cabsl(t64[j]) * cabsl(t64[j]);
        if (cabsl(t64[j]) > mpeak)
            mpeak = cabsl(t64[j]);
    }
    const double mref_perr = (double)(100 * sqrtl(mse / me0));
    const double mref_psnr = (double)(20 * log10l(mpeak / sqrtl(mse / NV)));
    const int est = lm_recon_scale_match(LM_METHOD_CG, LM_COMBINE_SENSE, LM_SENS_ESTIMATED);
    CHECK_OK(lm_metrics_compute(i64, t64, NV, NULL, est, &m, &err), &err);
    CHECK_NEAR(m.percent_error, mref_perr, 1e-6 * mref_perr);
    CHECK_NEAR(m.psnr_db, mref_psnr, 1e-6);
    CHECK_NEAR(m.scale_re, (double)malpha, 1e-9);
    CHECK(m.scale_im == 0);
    CHECK(mref_perr < 10);
    CHECK_OK(lm_metrics_compute(i64, t64, NV, NULL, LM_METRICS_SCALE, &m, &err), &err);
    CHECK(m.percent_error > 50); /* complex matching alone */
    return lm_test_finish("metrics");
}
