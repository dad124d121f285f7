/* Coil maps on disk: .cfl [nx, ny, nz, coils] and complex 4D NIfTI round
 * trips (bit for bit), a real 4D NIfTI, ecalib's 5th "maps" dimension, and each bad input
 * (NaN, all zero, extra dimensions, truncation, wrong matrix or coil count)
 * refused with one line naming the file. */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "io_util.h"
#include "lm_io.h"
#include "lm_test.h"

static lm_sens *make_maps(int64_t nx, int64_t ny, int64_t nz, int64_t nc)
{
    const int64_t n[3] = {nx, ny, nz};
    lm_sens *s = lm_sens_new(n, nc, NULL);
    for (int64_t i = 0; i < nx * ny * nz * nc; i++)
        s->s[i] = CMPLXF(0.25f * (float)(i % 17) - 1.0f, 0.5f * (float)(i % 5));
    return s;
}

int main(void)
{
    io_make_dir();
    lm_error err = {0};
    lm_sens *s = make_maps(6, 5, 4, 3), *back = NULL;
    const size_t bytes = (size_t)(6 * 5 * 4 * 3) * sizeof(lm_cfloat);
    const char *names[3] = {"maps.cfl", "maps.nii", "maps.nii.gz"};
    const double fov[3] = {240, 200, 160};
    for (int i = 0; i < 3; i++) {
        CHECK_OK(lm_save_sens(P(names[i]), s, fov, &err), &err);
        CHECK_OK(lm_load_sens(P(names[i]), &back, &err), &err);
        CHECK_MSG(back && back->ncoils == 3 && back->n[0] == 6 && back->n[1] == 5 && back->n[2] == 4 &&
                      memcmp(back->s, s->s, bytes) == 0,
                  "%s round trip", names[i]);
        lm_sens_free(back);
        back = NULL;
    }
    CHECK_OK(lm_check_sens(s, (int64_t[3]){6, 5, 4}, 3, "maps.cfl", &err), &err);
    CHECK(lm_check_sens(s, (int64_t[3]){6, 5, 1}, 3, "maps.cfl", &err) == LM_ERR_INVALID &&
          strstr(err.msg, "maps.cfl: coil maps are 6x5x4 but the matrix is 6x5x1"));
    printf("%s\n", err.msg);
    CHECK(lm_check_sens(s, (int64_t[3]){6, 5, 4}, 8, "maps.cfl", &err) == LM_ERR_INVALID &&
          strstr(err.msg, "3 coil maps but the k-space has 8 channels"));
    printf("%s\n", err.msg);

    /* ecalib -m 2: [nx, ny, nz, coils, 2]: the first set */
    {
        const int64_t d5[5] = {6, 5, 4, 3, 2};
        lm_cfloat *two = malloc(2 * bytes);
        memcpy(two, s->s, bytes);
        memset((char *)two + bytes, 0x3f, bytes);
        CHECK_OK(lm_cfl_write(P("ecal.cfl"), 5, d5, two, &err), &err);
        CHECK_OK(lm_load_sens(P("ecal.cfl"), &back, &err), &err);
        CHECK(back && back->ncoils == 3 && memcmp(back->s, s->s, bytes) == 0);
        lm_sens_free(back);
        back = NULL;
        const int64_t d6[6] = {6, 5, 4, 1, 1, 2};
        CHECK_OK(lm_cfl_write(P("six.cfl"), 6, d6, two, &err), &err);
        CHECK(lm_load_sens(P("six.cfl"), &back, &err) == LM_ERR_FORMAT && strstr(err.msg, "six.cfl"));
        printf("%s\n", err.msg);
        free(two);
    }
    /* a real (float32) 4D NIfTI: the magnitudes, imaginary parts 0 */
    {
        const int64_t one[3] = {1, 1, 1};
        lm_volume *geo = lm_volume_new(one, (double[3]){2, 2, 2}, &err);
        for (int a = 0; a < 3; a++)
            geo->dims[a] = s->n[a];
        lm_volume_set_centered_affine(geo);
        CHECK_OK(lm_nifti_write_frames(P("real.nii.gz"), geo, 3, s->s, 0, &err), &err);
        lm_volume_free(geo);
        CHECK_OK(lm_load_sens(P("real.nii.gz"), &back, &err), &err);
        CHECK(back && back->ncoils == 3 && back->n[0] == 6 && back->n[2] == 4);
        if (back && back->ncoils == 3) {
            int ok = 1;
            for (int64_t i = 0; i < 6 * 5 * 4 * 3; i++)
                ok &= fabsf(crealf(back->s[i]) - cabsf(s->s[i])) <= 1e-6f * (1 + cabsf(s->s[i])) &&
                      cimagf(back->s[i]) == 0;
            CHECK_MSG(ok, "real NIfTI maps read as magnitudes");
        }
        lm_sens_free(back);
        back = NULL;
    }
    /* NaN and zero */
    s->s[7] = CMPLXF(NAN, 0);
    CHECK_OK(lm_cfl_write(P("nan.cfl"), 4, (int64_t[4]){6, 5, 4, 3}, s->s, &err), &err);
    CHECK(lm_load_sens(P("nan.cfl"), &back, &err) != LM_OK && strstr(err.msg, "nan.cfl") && back == NULL);
    printf("%s\n", err.msg);
    memset(s->s, 0, bytes);
    CHECK_OK(lm_save_sens(P("zero.nii.gz"), s, NULL, &err), &err);
    CHECK(lm_load_sens(P("zero.nii.gz"), &back, &err) == LM_ERR_FORMAT && strstr(err.msg, "zero everywhere"));
    printf("%s\n", err.msg);
    /* missing and truncated */
    CHECK(lm_load_sens(P("none.cfl"), &back, &err) == LM_ERR_IO && strstr(err.msg, "none"));
    printf("%s\n", err.msg);
    CHECK(truncate(P("maps.cfl"), (off_t)bytes - 8) == 0);
    CHECK(lm_load_sens(P("maps.cfl"), &back, &err) != LM_OK && strstr(err.msg, "maps"));
    printf("%s\n", err.msg);
    lm_sens_free(s);
    io_remove_dir();
    return lm_test_finish("sens_io");
}
