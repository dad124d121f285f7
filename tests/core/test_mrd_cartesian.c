/* A file written by ismrmrd_generate_cartesian_shepp_logan (ismrmrd-tools)
 * is read as Cartesian: trajectory from the encoding counters, every coil,
 * the noise-calibration scan skipped, and the 2x readout oversampling of
 * the encoded matrix removed: reconSpace's matrix and FOV. The same phantom
 * written with its k-space coordinates (-k, normalised to [-0.5, 0.5))
 * reads as non-Cartesian on the encoded matrix, with the trajectory the
 * counters give. Skips without the tool. */
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

    /* reconSpace: the encoded 2n x n x 1 over 600 x 300 x 6 mm loses its
     * readout oversampling: n x n x 1 over 300 x 300 x 6 mm. */
    CHECK(c.cartesian == 1);
    CHECK_MSG(c.geom.n[0] == n && c.geom.n[1] == n && c.geom.n[2] == 1, "matrix %lld x %lld x %lld",
              (long long)c.geom.n[0], (long long)c.geom.n[1], (long long)c.geom.n[2]);
    CHECK(c.geom.fov_mm[0] == 300 && c.geom.fov_mm[1] == 300 && c.geom.fov_mm[2] == 6);
    CHECK(c.readout_oversampling == 2);
    CHECK(c.recon_geom.n[0] == n && c.recon_geom.fov_mm[0] == 300);
    CHECK(c.missing_lines == 0);
    CHECK(c.kdata->ncoils == coils);
    /* n lines of n samples: the noise scan is not among them. */
    CHECK_MSG(c.traj->m == (int64_t)n * n, "m = %lld", (long long)c.traj->m);
    CHECK(c.traj->ndim == 2);
    CHECK(c.traj->readout == n);
    /* Centred: kx = -n/2 .. n/2-1, ky = line - encoding centre. */
    CHECK(c.traj->k[0] == -n / 2 && c.traj->k[1] == -n / 2 && c.traj->k[2] == 0);
    double kmax[3];
    lm_traj_extent(c.traj, kmax);
    CHECK(kmax[0] == n / 2 && kmax[1] == n / 2 && kmax[2] == 0);
    int64_t last = c.traj->m - 1;
    CHECK(c.traj->k[3 * last] == n / 2 - 1 && c.traj->k[3 * last + 1] == n / 2 - 1);

    /* The stored normalised trajectory is read as non-Cartesian on the
     * encoded matrix: kx = sample - center_sample over 2n samples, ky the
     * line, the ky of every readout as in the Cartesian file. */
    CHECK(k.cartesian == 0);
    CHECK(k.geom.n[0] == 2 * n && k.geom.fov_mm[0] == 600 && k.readout_oversampling == 0);
    CHECK(k.traj->m == 2 * c.traj->m && k.traj->ndim == 2 && k.kdata->ncoils == coils);
    if (k.traj->m == 2 * c.traj->m) {
        int same = 1;
        for (int64_t r = 0; r < n; r++)
            for (int64_t i = 0; i < 2 * n; i++) {
                const float *q = k.traj->k + 3 * (r * 2 * n + i);
                same &= q[0] == (float)(i - n) && q[1] == c.traj->k[3 * (r * n) + 1];
            }
        CHECK(same);
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
        CHECK(strstr(info, "readout oversampling: removed") != NULL);
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
