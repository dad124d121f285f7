/* Bad input to the multi-coil functions: each fails with the right code and
 * a one-line message naming the item and the problem, and leaves no output. */
#include <stdio.h>

#include "coils_synth.h"
#include "lm_test.h"

static int cancel_at_half(void *user, double f)
{
    (void)user;
    return f > 0.5;
}

static void expect(lm_code got, lm_code want, const lm_error *err, const char *what)
{
    CHECK_MSG(got == want, "%s: code %d, expected %d (%s)", what, (int)got, (int)want, err->msg);
    CHECK_MSG(err->msg[0] && !strchr(err->msg, '\n'), "%s: message '%s'", what, err->msg);
    fprintf(stderr, "%-34s -> %s\n", what, err->msg);
}

int main(void)
{
    lm_error err;
    syn_problem p;
    int64_t n[3] = {32, 32, 1};
    lm_error_clear(&err);
    CHECK_OK(syn_make(&p, n, 4, LM_TRAJ_RADIAL2D, 0, &err), &err);
    if (!p.k)
        return lm_test_finish("test_coils_errors");
    int64_t m = p.k->m;
    lm_sens *s = NULL;
    lm_coil_compress *cc = NULL;
    lm_cmat *cov = NULL, *w = NULL;

    /* a monitor that cancels half-way */
    lm_ctl ctl = {cancel_at_half, NULL, 0};
    for (int meth = LM_SENS_ESPIRIT; meth <= LM_SENS_WALSH; meth++) {
        lm_sens_est_opts oc;
        lm_sens_est_default_opts(&oc);
        oc.method = (lm_sens_method)meth;
        lm_error_clear(&err);
        expect(lm_sens_estimate(&p.g, p.t, p.k, &oc, &ctl, &s, NULL, &err), LM_ERR_CANCELLED, &err,
               meth == LM_SENS_ESPIRIT ? "ESPIRiT cancelled half-way" : "Walsh cancelled half-way");
        CHECK(!s);
    }

    /* NaN data */
    lm_kdata *bad = lm_kdata_new(m, 4, &err);
    memcpy(bad->d, p.k->d, (size_t)(m * 4) * sizeof(lm_cfloat));
    bad->d[m + 17] = NAN;
    lm_error_clear(&err);
    expect(lm_sens_estimate(&p.g, p.t, bad, NULL, NULL, &s, NULL, &err), LM_ERR_FORMAT, &err, "maps from NaN data");
    CHECK(!s);
    lm_error_clear(&err);
    expect(lm_coil_compress_plan(bad, 2, 0, &cc, &err), LM_ERR_FORMAT, &err, "compression of NaN data");
    CHECK(!cc);

    /* zero data: no energy */
    memset(bad->d, 0, (size_t)(m * 4) * sizeof(lm_cfloat));
    lm_sens_est_opts o;
    lm_sens_est_default_opts(&o);
    o.method = LM_SENS_ESPIRIT;
    lm_error_clear(&err);
    expect(lm_sens_estimate(&p.g, p.t, bad, &o, NULL, &s, NULL, &err), LM_ERR_INVALID, &err, "ESPIRiT maps from zero data");
    o.method = LM_SENS_WALSH;
    lm_error_clear(&err);
    expect(lm_sens_estimate(&p.g, p.t, bad, &o, NULL, &s, NULL, &err), LM_ERR_INVALID, &err, "Walsh maps from zero data");
    o.method = LM_SENS_AUTO;
    lm_error_clear(&err);
    expect(lm_sens_estimate(&p.g, p.t, bad, &o, NULL, &s, NULL, &err), LM_ERR_INVALID, &err, "auto maps from zero data");
    CHECK(!s);
    lm_error_clear(&err);
    expect(lm_coil_compress_plan(bad, 2, 0, &cc, &err), LM_ERR_INVALID, &err, "compression of zero data");

    /* too few samples in the centre: a trajectory only in the periphery */
    lm_traj *t = lm_traj_new(m, 2, &err);
    for (int64_t i = 0; i < m; i++) {
        double a = 2 * SYN_PI * (double)i / (double)m;
        t->k[3 * i] = (float)(14 * cos(a));
        t->k[3 * i + 1] = (float)(14 * sin(a));
        t->k[3 * i + 2] = 0;
    }
    lm_error_clear(&err);
    expect(lm_sens_estimate(&p.g, t, p.k, NULL, NULL, &s, NULL, &err), LM_ERR_INVALID, &err, "maps with an empty centre");
    CHECK(!s);
    lm_traj_free(t);
    /* calibration larger than the matrix */
    o.calib = 40;
    lm_error_clear(&err);
    expect(lm_sens_estimate(&p.g, p.t, p.k, &o, NULL, &s, NULL, &err), LM_ERR_INVALID, &err, "calibration larger than matrix");

    /* more compressed coils than coils, and fewer than one */
    lm_error_clear(&err);
    expect(lm_coil_compress_plan(p.k, 5, 0, &cc, &err), LM_ERR_INVALID, &err, "5 virtual coils from 4");
    lm_error_clear(&err);
    expect(lm_coil_compress_plan(p.k, -1, 0, &cc, &err), LM_ERR_INVALID, &err, "-1 virtual coils");
    lm_error_clear(&err);
    expect(lm_coil_compress_plan(p.k, 0, 1.5, &cc, &err), LM_ERR_INVALID, &err, "energy fraction 1.5");
    CHECK(!cc);

    /* non-positive-definite covariance, NaN covariance, non-Hermitian */
    lm_cmat *c = lm_cmat_new(3, &err);
    double _Complex a[9] = {1, 2, 0, 2, 1, 0, 0, 0, 1}; /* eigenvalues 3, -1, 1 */
    memcpy(c->a, a, sizeof a);
    lm_error_clear(&err);
    expect(lm_prewhiten_make(c, &w, &err), LM_ERR_INVALID, &err, "indefinite covariance");
    double _Complex sing[9] = {1, 1, 0, 1, 1, 0, 0, 0, 1}; /* singular */
    memcpy(c->a, sing, sizeof sing);
    lm_error_clear(&err);
    expect(lm_prewhiten_make(c, &w, &err), LM_ERR_INVALID, &err, "singular covariance");
    c->a[4] = NAN;
    lm_error_clear(&err);
    expect(lm_prewhiten_make(c, &w, &err), LM_ERR_INVALID, &err, "NaN covariance");
    memcpy(c->a, sing, sizeof sing);
    c->a[1] = I;
    lm_error_clear(&err);
    expect(lm_prewhiten_make(c, &w, &err), LM_ERR_INVALID, &err, "non-Hermitian covariance");
    CHECK(!w);
    lm_cmat_free(c);

    /* noise with another channel count than the data */
    lm_kdata *noise = lm_kdata_new(1000, 3, &err);
    syn_rng r = {12345};
    for (int64_t i = 0; i < 3000; i++)
        noise->d[i] = (lm_cfloat)syn_cnormal(&r);
    CHECK_OK(lm_noise_covariance(noise, &cov, &err), &err);
    CHECK_OK(lm_prewhiten_make(cov, &w, &err), &err);
    lm_error_clear(&err);
    if (w)
        expect(lm_prewhiten_apply(w, p.k, &err), LM_ERR_INVALID, &err, "3-channel noise, 4-channel data");
    /* noise with a dead channel, too few noise samples, NaN noise */
    lm_cmat_free(cov);
    cov = NULL;
    memset(noise->d + 1000, 0, 1000 * sizeof(lm_cfloat));
    lm_error_clear(&err);
    expect(lm_noise_covariance(noise, &cov, &err), LM_ERR_INVALID, &err, "noise with a dead channel");
    noise->m = 5;
    lm_error_clear(&err);
    expect(lm_noise_covariance(noise, &cov, &err), LM_ERR_INVALID, &err, "5 noise samples, 3 channels");
    noise->m = 1000;
    noise->d[5] = NAN;
    lm_error_clear(&err);
    expect(lm_noise_covariance(noise, &cov, &err), LM_ERR_FORMAT, &err, "NaN noise");
    CHECK(!cov);

    lm_cmat_free(w);
    lm_kdata_free(noise);
    lm_kdata_free(bad);
    syn_free(&p);
    return lm_test_finish("test_coils_errors");
}
