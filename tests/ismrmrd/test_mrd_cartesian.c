/* A file written by ismrmrd_generate_cartesian_shepp_logan (ismrmrd-tools)
 * is read as Cartesian: trajectory from the encoding counters, encoded
 * matrix (readout oversampled 2x) and FOV from the header, every coil, the
 * noise-calibration scan skipped. The same phantom written with its
 * k-space coordinates (-k, normalised to [-0.5, 0.5)) reads as
 * non-Cartesian with the very same trajectory. Skips without the tool. */
#include <string.h>
#include <unistd.h>

#include "lm_config.h"
#include "lm_io_ismrmrd.h"
#include "lm_test.h"
#include "mrd_test_util.h"

static const char *tool = "ismrmrd_generate_cartesian_shepp_logan";

static int have_tool(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
    return system(cmd) == 0;
}

static int generate(const char *args, const char *out)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cd '%s' && %s %s -o '%s' >gen.log 2>&1", lm_tmp_dir, tool, args, out);
    return system(cmd);
}

int main(void)
{
#if !LM_HAVE_ISMRMRD
    LM_TEST_SKIP("built without libismrmrd");
#endif
    if (!have_tool())
        LM_TEST_SKIP("%s not installed (apt-get install ismrmrd-tools)", tool);
    unsetenv("LARMOR_MRD_TRAJ_UNITS");
    lm_tmp_make("mrd-cart");
    const int n = 32, coils = 4;
    char args[128];
    snprintf(args, sizeof args, "-m %d -c %d -n 0 -C", n, coils);
    CHECK(generate(args, "cart.h5") == 0);
    snprintf(args, sizeof args, "-m %d -c %d -n 0 -k", n, coils);
    CHECK(generate(args, "cartk.h5") == 0);

    lm_error err;
    lm_error_clear(&err);
    lm_mrd c, k;
    memset(&c, 0, sizeof c);
    memset(&k, 0, sizeof k);
    CHECK_OK(lm_mrd_read(lm_tmp_path("cart.h5"), &c, &err), &err);
    CHECK_OK(lm_mrd_read(lm_tmp_path("cartk.h5"), &k, &err), &err);
    if (!c.traj || !k.traj)
        return lm_test_finish("test_mrd_cartesian");

    /* Encoded space: readout oversampled 2x, so 2n x n x 1, FOV 600 x 300 x 6. */
    CHECK(c.cartesian == 1);
    CHECK(c.geom.n[0] == 2 * n && c.geom.n[1] == n && c.geom.n[2] == 1);
    CHECK(c.geom.fov_mm[0] == 600 && c.geom.fov_mm[1] == 300 && c.geom.fov_mm[2] == 6);
    CHECK(c.kdata->ncoils == coils);
    /* n lines of 2n samples: the noise scan is not among them. */
    CHECK_MSG(c.traj->m == (int64_t)n * 2 * n, "m = %lld", (long long)c.traj->m);
    CHECK(c.traj->ndim == 2);
    CHECK(c.traj->readout == 2 * n);
    /* Centred: kx = sample - center_sample, ky = line - encoding centre. */
    CHECK(c.traj->k[0] == -n && c.traj->k[1] == -n / 2 && c.traj->k[2] == 0);
    double kmax[3];
    lm_traj_extent(c.traj, kmax);
    CHECK(kmax[0] == n && kmax[1] == n / 2 && kmax[2] == 0);
    int64_t last = c.traj->m - 1;
    CHECK(c.traj->k[3 * last] == n - 1 && c.traj->k[3 * last + 1] == n / 2 - 1);

    /* The stored normalised trajectory gives the same k, bit for bit, and
     * without noise the same data. */
    CHECK(k.cartesian == 0);
    CHECK(k.traj->m == c.traj->m && k.traj->ndim == 2 && k.kdata->ncoils == coils);
    if (k.traj->m == c.traj->m) {
        CHECK(memcmp(k.traj->k, c.traj->k, (size_t)c.traj->m * 3 * sizeof(float)) == 0);
        CHECK(memcmp(k.kdata->d, c.kdata->d, (size_t)(c.traj->m * coils) * sizeof(lm_cfloat)) == 0);
    }
    /* Non-zero signal in every coil. */
    for (int ch = 0; ch < coils; ch++) {
        double e = 0;
        for (int64_t i = 0; i < c.kdata->m; i++)
            e += cabsf(c.kdata->d[ch * c.kdata->m + i]);
        CHECK_MSG(e > 0, "coil %d is empty", ch);
    }

    char *info = NULL;
    CHECK_OK(lm_mrd_info(lm_tmp_path("cart.h5"), &info, &err), &err);
    if (info) {
        fprintf(stderr, "%s", info);
        CHECK(strstr(info, "1 noise") != NULL);
        CHECK(strstr(info, "Cartesian, derived from the encoding counters") != NULL);
        CHECK(strstr(info, "channels: 4") != NULL);
        CHECK(strstr(info, "64 x 32 x 1") != NULL);
        free(info);
    }
    CHECK_OK(lm_mrd_info(lm_tmp_path("cartk.h5"), &info, &err), &err);
    if (info) {
        fprintf(stderr, "%s", info);
        CHECK(strstr(info, "normalized") != NULL);
        free(info);
    }
    lm_mrd_clear(&c);
    lm_mrd_clear(&k);
    return lm_test_finish("test_mrd_cartesian");
}
