/* Files written by h5py straight from the MRD spec (make_mrd_fixture.py, run
 * here at test time) read as the script says they should: normalised 2D
 * radial with discards and a noise scan and a navigator to skip, the MRD 1.0
 * complex-compound data layout, 3D radial in cycles/FOV with a fixed-length
 * XML string, and a stack of stars. Skips without python3 + h5py. */
#include <string.h>

#include "lm_config.h"
#include "lm_io_ismrmrd.h"
#include "lm_test.h"
#include "mrd_test_util.h"

#ifndef LM_MRD_FIXTURE_SCRIPT
#define LM_MRD_FIXTURE_SCRIPT "tests/core/make_mrd_fixture.py"
#endif

/* A python with h5py and numpy: $LM_PYTHON, the system one (Debian's
 * python3-h5py lives there even when another python3 comes first on PATH),
 * then python3 on PATH. */
static const char *find_python(void)
{
    static const char *cands[] = {NULL, "/usr/bin/python3", "python3"};
    cands[0] = getenv("LM_PYTHON");
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        if (!cands[i] || !*cands[i])
            continue;
        char cmd[512];
        snprintf(cmd, sizeof cmd, "'%s' -c 'import h5py, numpy' >/dev/null 2>&1", cands[i]);
        if (system(cmd) == 0)
            return cands[i];
    }
    return NULL;
}

static void check_file(const char *name, int want_ndim)
{
    char base[600], path[700];
    snprintf(base, sizeof base, "%s/%s", lm_tmp_dir, name);
    snprintf(path, sizeof path, "%s.h5", base);
    fprintf(stderr, "checking %s\n", name);

    int64_t mx, my, mz, nc, m, readout;
    int ndim;
    double fx, fy, fz;
    char p[700];
    snprintf(p, sizeof p, "%s.expect", base);
    FILE *f = fopen(p, "r");
    CHECK(f != NULL);
    if (!f)
        return;
    int got = fscanf(f, "%ld %ld %ld %lf %lf %lf %ld %ld %ld %d", &mx, &my, &mz, &fx, &fy, &fz, &nc, &m,
                     &readout, &ndim);
    fclose(f);
    CHECK(got == 10);
    if (got != 10)
        return;
    size_t nt, nd;
    snprintf(p, sizeof p, "%s.traj.f32", base);
    float *traj = (float *)lm_read_bytes(p, &nt);
    snprintf(p, sizeof p, "%s.data.f32", base);
    float *data = (float *)lm_read_bytes(p, &nd);
    CHECK(traj && nt == (size_t)m * 3 * sizeof(float));
    CHECK(data && nd == (size_t)(m * nc) * 2 * sizeof(float));

    lm_error err;
    lm_error_clear(&err);
    lm_mrd r;
    CHECK_OK(lm_mrd_read(path, &r, &err), &err);
    if (r.traj && r.kdata && traj && data) {
        CHECK(r.cartesian == 0);
        CHECK(r.geom.n[0] == mx && r.geom.n[1] == my && r.geom.n[2] == mz);
        CHECK_NEAR(r.geom.fov_mm[0], fx, 1e-6);
        CHECK_NEAR(r.geom.fov_mm[1], fy, 1e-6);
        CHECK_NEAR(r.geom.fov_mm[2], fz, 1e-6);
        CHECK_MSG(r.traj->m == m, "m %lld, want %lld", (long long)r.traj->m, (long long)m);
        CHECK(r.traj->ndim == want_ndim && ndim == want_ndim);
        CHECK_MSG(r.traj->readout == readout, "readout %lld, want %lld", (long long)r.traj->readout,
                  (long long)readout);
        CHECK(r.kdata->ncoils == nc);
        if (r.traj->m == m) {
            int bad = 0;
            for (int64_t i = 0; i < 3 * m && bad < 5; i++)
                if (r.traj->k[i] != traj[i]) {
                    fprintf(stderr, "  k[%lld] = %.9g, want %.9g\n", (long long)i, r.traj->k[i], traj[i]);
                    bad++;
                }
            CHECK(bad == 0);
            if (r.kdata->ncoils == nc)
                CHECK(memcmp(r.kdata->d, data, nd) == 0);
        }
    }
    lm_mrd_clear(&r);
    free(traj);
    free(data);
}

int main(void)
{
#if !LM_HAVE_ISMRMRD
    LM_TEST_SKIP("built without libismrmrd");
#endif
    unsetenv("LARMOR_MRD_TRAJ_UNITS");
    const char *py = find_python();
    if (!py)
        LM_TEST_SKIP("no python3 with h5py and numpy (apt-get install python3-h5py)");
    lm_tmp_make("mrd-h5py");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", py, LM_MRD_FIXTURE_SCRIPT, lm_tmp_dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "fixture script failed: %s\n", cmd);
        return 1;
    }
    check_file("spec", 2);
    check_file("spec_cplx", 2);
    check_file("spec3d", 3);
    check_file("stars", 3);

    /* The summary names the skipped scans. */
    lm_error err;
    char *info = NULL;
    CHECK_OK(lm_mrd_info(lm_tmp_path("spec.h5"), &info, &err), &err);
    if (info) {
        fprintf(stderr, "%s", info);
        CHECK(strstr(info, "acquisitions: 14 (12 imaging, 1 noise, 1 other non-imaging skipped)") != NULL);
        CHECK(strstr(info, "discarding 2 before, 1 after") != NULL);
        CHECK(strstr(info, "units normalized") != NULL);
        free(info);
    }
    /* Forcing cycles/FOV on a normalised file keeps the stored values. */
    lm_mrd r;
    CHECK_OK(lm_mrd_read_units(lm_tmp_path("spec.h5"), LM_MRD_UNITS_CYCLES, &r, &err), &err);
    if (r.traj) {
        double kmax[3];
        lm_traj_extent(r.traj, kmax);
        CHECK(kmax[0] <= 0.5 && kmax[1] <= 0.5);
    }
    lm_mrd_clear(&r);
    return lm_test_finish("test_mrd_h5py");
}
