/* Noise samples on disk (lm_load_noise, lm_check_noise): a .cfl shaped like
 * k-space ([1, samples, 1, coils], and extra sample dimensions beyond the
 * coils) reads back bit for bit per channel; NaN, a dead channel, all-zero
 * noise, a NIfTI, a missing and a truncated file are refused naming the
 * file; a channel-count mismatch, a [samples, coils] array read as one
 * channel (with the hint where coils go) and too few samples for the
 * channel count are refused by lm_check_noise with one line. */
#include <complex.h>
#include <string.h>

#include "io_util.h"
#include "lm_io.h"
#include "lm_test.h"

#define NS 40
#define NC 4

static lm_cfloat val(int64_t i, int64_t c)
{
    return CMPLXF(0.01f * (float)(i % 13) - 0.05f + 0.1f * (float)c, 0.02f * (float)((i + 3 * c) % 7) - 0.06f);
}

int main(void)
{
    io_make_dir();
    lm_error err = {0};
    lm_kdata *k = NULL;
    lm_cfloat *buf = malloc(sizeof(lm_cfloat) * NS * NC * 2);
    for (int64_t c = 0; c < NC; c++)
        for (int64_t i = 0; i < NS; i++)
            buf[c * NS + i] = val(i, c);

    /* [1, NS, 1, NC]: channel c's sample i */
    CHECK_OK(lm_cfl_write(P("noise.cfl"), 4, (int64_t[4]){1, NS, 1, NC}, buf, &err), &err);
    CHECK_OK(lm_load_noise(P("noise.cfl"), &k, &err), &err);
    CHECK(k && k->m == NS && k->ncoils == NC && memcmp(k->d, buf, sizeof(lm_cfloat) * NS * NC) == 0);
    CHECK_OK(lm_check_noise(k, NC, "noise.cfl", &err), &err);
    CHECK(lm_check_noise(k, 8, "noise.cfl", &err) == LM_ERR_INVALID &&
          strstr(err.msg, "noise.cfl: noise samples have 4 channels but the k-space has 8") &&
          !strstr(err.msg, "4th dimension"));
    printf("%s\n", err.msg);
    lm_kdata_free(k);
    k = NULL;
    /* by its base name, as BART names files */
    CHECK_OK(lm_load_noise(P("noise"), &k, &err), &err);
    CHECK(k && k->m == NS && k->ncoils == NC);
    lm_kdata_free(k);
    k = NULL;

    /* two noise scans in dimension 4: both are samples of every channel */
    {
        lm_cfloat *two = malloc(sizeof(lm_cfloat) * NS * NC * 2);
        for (int64_t r = 0; r < 2; r++)
            for (int64_t c = 0; c < NC; c++)
                for (int64_t i = 0; i < NS; i++)
                    two[(r * NC + c) * NS + i] = val(i + r * NS, c);
        CHECK_OK(lm_cfl_write(P("two.cfl"), 5, (int64_t[5]){1, NS, 1, NC, 2}, two, &err), &err);
        CHECK_OK(lm_load_noise(P("two.cfl"), &k, &err), &err);
        CHECK(k && k->m == 2 * NS && k->ncoils == NC);
        if (k && k->m == 2 * NS)
            CHECK(k->d[3 * k->m + NS + 5] == val(NS + 5, 3) && k->d[2 * k->m + 7] == val(7, 2));
        lm_kdata_free(k);
        k = NULL;
        free(two);
    }

    /* [NS, NC] as numpy would write it: one channel, and the check says where coils go */
    CHECK_OK(lm_cfl_write(P("flat.cfl"), 2, (int64_t[2]){NS, NC}, buf, &err), &err);
    CHECK_OK(lm_load_noise(P("flat.cfl"), &k, &err), &err);
    CHECK(k && k->ncoils == 1 && k->m == NS * NC);
    CHECK(lm_check_noise(k, NC, P("flat.cfl"), &err) == LM_ERR_INVALID &&
          strstr(err.msg, "flat.cfl: noise samples have 1 channels but the k-space has 4") &&
          strstr(err.msg, "[1, samples, 1, coils]"));
    printf("%s\n", err.msg);
    lm_kdata_free(k);
    k = NULL;

    /* too few samples for the covariance of 4 channels */
    CHECK_OK(lm_cfl_write(P("short.cfl"), 4, (int64_t[4]){1, 5, 1, NC}, buf, &err), &err);
    CHECK_OK(lm_load_noise(P("short.cfl"), &k, &err), &err);
    CHECK(k && lm_check_noise(k, NC, "short.cfl", &err) == LM_ERR_INVALID &&
          strstr(err.msg, "short.cfl: 5 noise samples per channel are too few for 4 channels (at least 8)"));
    printf("%s\n", err.msg);
    lm_kdata_free(k);
    k = NULL;
    CHECK(lm_check_noise(NULL, NC, "none.cfl", &err) == LM_ERR_INVALID && strstr(err.msg, "none.cfl"));

    /* NaN in channel 1 */
    buf[NS + 3] = CMPLXF(0, NAN);
    CHECK_OK(lm_cfl_write(P("nan.cfl"), 4, (int64_t[4]){1, NS, 1, NC}, buf, &err), &err);
    k = (lm_kdata *)1; /* must come back NULL */
    CHECK(lm_load_noise(P("nan.cfl"), &k, &err) == LM_ERR_FORMAT &&
          strstr(err.msg, "nan.cfl") && strstr(err.msg, "NaN") && k == NULL);
    printf("%s\n", err.msg);
    buf[NS + 3] = val(3, 1);

    /* channel 2 dead */
    memset(buf + 2 * NS, 0, sizeof(lm_cfloat) * NS);
    CHECK_OK(lm_cfl_write(P("dead.cfl"), 4, (int64_t[4]){1, NS, 1, NC}, buf, &err), &err);
    CHECK(lm_load_noise(P("dead.cfl"), &k, &err) == LM_ERR_FORMAT &&
          strstr(err.msg, "dead.cfl: noise channel 2 of 4 is zero everywhere") && k == NULL);
    printf("%s\n", err.msg);
    memset(buf, 0, sizeof(lm_cfloat) * NS);
    CHECK_OK(lm_cfl_write(P("zero.cfl"), 2, (int64_t[2]){1, NS}, buf, &err), &err);
    CHECK(lm_load_noise(P("zero.cfl"), &k, &err) == LM_ERR_FORMAT &&
          strstr(err.msg, "zero.cfl: noise samples are zero everywhere"));
    printf("%s\n", err.msg);

    /* not noise at all, missing, truncated */
    CHECK(lm_load_noise(P("image.nii.gz"), &k, &err) != LM_OK && strstr(err.msg, "image.nii.gz") && k == NULL);
    printf("%s\n", err.msg);
    CHECK(lm_load_noise(P("missing.cfl"), &k, &err) == LM_ERR_IO && strstr(err.msg, "missing"));
    printf("%s\n", err.msg);
    CHECK(truncate(P("noise.cfl"), (off_t)(sizeof(lm_cfloat) * NS * NC) - 8) == 0);
    CHECK(lm_load_noise(P("noise.cfl"), &k, &err) != LM_OK && strstr(err.msg, "noise") && k == NULL);
    printf("%s\n", err.msg);

    free(buf);
    io_remove_dir();
    return lm_test_finish("noise_io");
}
