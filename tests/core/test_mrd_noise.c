/* ISMRMRD noise scans: acquisitions flagged as noise measurements come back
 * as lm_mrd.noise (every sample of every channel, in file order) for
 * prewhitening, the imaging data are unchanged, `info` counts them, and
 * noise scans whose channel count differs from the data's (or from each
 * other's) are refused with one line. */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "lm_config.h"
#include "lm_io_ismrmrd.h"
#include "lm_test.h"
#include "mrd_test_util.h"

#if LM_HAVE_ISMRMRD
#include "mrd_craft.h"

#define NS 16
#define NC 3
static float traj2[NS * 2], data[NS * NC * 2], noise1[NS * NC * 2], noise2[8 * NC * 2], noise4[NS * 4 * 2];
static char xml[4096];

static craft_acq acq_of(int nc, int ns, const float *d, int noise, int e1)
{
    craft_acq a;
    memset(&a, 0, sizeof a);
    ismrmrd_init_acquisition_header(&a.head);
    a.head.number_of_samples = (uint16_t)ns;
    a.head.active_channels = a.head.available_channels = (uint16_t)nc;
    a.head.trajectory_dimensions = noise ? 0 : 2;
    a.head.center_sample = (uint16_t)(ns / 2);
    a.head.idx.kspace_encode_step_1 = (uint16_t)e1;
    if (noise)
        a.head.flags = 1ull << (ISMRMRD_ACQ_IS_NOISE_MEASUREMENT - 1);
    a.traj = noise ? NULL : traj2;
    a.traj_len = noise ? 0 : (size_t)ns * 2;
    a.data = d;
    a.data_len = (size_t)ns * (size_t)nc * 2;
    return a;
}

int main(void)
{
    lm_tmp_make("mrd-noise");
    for (int i = 0; i < NS; i++) {
        traj2[2 * i] = (float)(i - NS / 2) / NS;
        traj2[2 * i + 1] = 0.1f;
    }
    for (int i = 0; i < NS * NC * 2; i++) {
        data[i] = (float)(i % 7) - 3.0f;
        noise1[i] = 0.01f * (float)i;
    }
    for (int i = 0; i < 8 * NC * 2; i++)
        noise2[i] = -0.5f * (float)i;
    craft_xml(xml, sizeof xml, NS, 1, 240, "radial");

    craft_acq acq[4] = {acq_of(NC, NS, noise1, 1, 0), acq_of(NC, 8, noise2, 1, 0), acq_of(NC, NS, data, 0, 0),
                        acq_of(NC, NS, data, 0, 1)};
    const char *path = lm_tmp_path("noise.h5");
    CHECK(craft_write(path, xml, 0, acq, 4) == 0);
    lm_mrd r = {0};
    lm_error e = {0};
    CHECK_OK(lm_mrd_read(path, &r, &e), &e);
    CHECK(r.kdata && r.kdata->m == 2 * NS && r.kdata->ncoils == NC);
    CHECK(r.noise && r.noise->m == NS + 8 && r.noise->ncoils == NC);
    if (r.noise) {
        /* channel c, sample j of the first scan, then the second's */
        const int c = 2, j = 5;
        CHECK(r.noise->d[(size_t)c * r.noise->m + j] == noise1[2 * (c * NS + j)] + I * noise1[2 * (c * NS + j) + 1]);
        CHECK(r.noise->d[(size_t)c * r.noise->m + NS + 3] == noise2[2 * (c * 8 + 3)] + I * noise2[2 * (c * 8 + 3) + 1]);
    }
    if (r.kdata)
        CHECK(r.kdata->d[(size_t)1 * r.kdata->m + 4] == data[2 * (1 * NS + 4)] + I * data[2 * (1 * NS + 4) + 1]);
    lm_mrd_clear(&r);
    char *info = NULL;
    CHECK_OK(lm_mrd_info(path, &info, &e), &e);
    CHECK(info && strstr(info, "noise scans: 24 samples per channel"));
    free(info);

    /* no noise scans: no noise */
    CHECK(craft_write(lm_tmp_path("plain.h5"), xml, 0, acq + 2, 2) == 0);
    CHECK_OK(lm_mrd_read(lm_tmp_path("plain.h5"), &r, &e), &e);
    CHECK(r.kdata && !r.noise);
    lm_mrd_clear(&r);

    /* noise with 4 channels, data with 3 */
    acq[1] = acq_of(4, NS, noise4, 1, 0);
    CHECK(craft_write(lm_tmp_path("mixed.h5"), xml, 0, acq + 1, 3) == 0);
    lm_error_clear(&e);
    CHECK(lm_mrd_read(lm_tmp_path("mixed.h5"), &r, &e) == LM_ERR_FORMAT &&
          strstr(e.msg, "noise scans have 4 channels but the imaging data 3") && strstr(e.msg, "mixed.h5"));
    printf("%s\n", e.msg);
    /* two noise scans that disagree */
    CHECK(craft_write(lm_tmp_path("noise34.h5"), xml, 0, acq, 4) == 0);
    lm_error_clear(&e);
    CHECK(lm_mrd_read(lm_tmp_path("noise34.h5"), &r, &e) == LM_ERR_FORMAT && strstr(e.msg, "noise acquisition 1"));
    printf("%s\n", e.msg);
    return lm_test_finish("mrd-noise");
}
#else
int main(void)
{
    LM_TEST_SKIP("built without ISMRMRD");
}
#endif
