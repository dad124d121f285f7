/* Parboil mri-q / mri-fhd input and output readers, and the .bin loader. */
#include "fuzz_common.h"
#include "lm_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = fuzz_path("x.bin");
    fuzz_write(p, data, size);
    lm_error err;
    lm_error_clear(&err);

    lm_parboil *pb = NULL;
    lm_code rc = lm_parboil_read(p, &pb, &err);
    FUZZ_CHECK_MSG(rc, err);
    if (rc == LM_OK) {
        if (pb->num_k > 0)
            (void)(pb->kx[pb->num_k - 1] + pb->kz[pb->num_k - 1] + pb->phi_i[pb->num_k - 1]);
        if (pb->num_x > 0)
            (void)(pb->x[pb->num_x - 1] + pb->z[pb->num_x - 1]);
        if (pb->d_r && pb->num_k > 0)
            (void)(pb->d_r[pb->num_k - 1] + pb->d_i[pb->num_k - 1]);
    }
    lm_parboil_free(pb);

    int64_t n = 0;
    float *re = NULL, *im = NULL;
    rc = lm_parboil_read_output(p, &n, &re, &im, &err);
    FUZZ_CHECK_MSG(rc, err);
    if (rc == LM_OK && n > 0)
        (void)(re[n - 1] + im[n - 1]);
    free(re);
    free(im);

    lm_traj *t = NULL;
    rc = lm_load_traj(p, &t, &err);
    FUZZ_CHECK_MSG(rc, err);
    lm_traj_free(t);
    return 0;
}
