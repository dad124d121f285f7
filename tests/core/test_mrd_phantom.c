/* The B32 benchmark problem (docs/conventions.md section 4) written as ISMRMRD and read
 * back: what `larmor-cli phantom --format ismrmrd` produces round-trips
 * exactly (trajectory bit for bit in cycles/FOV, 4,447 samples in spokes of
 * 16, the last one cut short, geometry and data). */
#include <string.h>

#include "lm_config.h"
#include "lm_io_ismrmrd.h"
#include "lm_test.h"
#include "lm_trajgen.h"
#include "mrd_test_util.h"

int main(void)
{
#if !LM_HAVE_ISMRMRD
    LM_TEST_SKIP("built without libismrmrd");
#endif
    unsetenv("LARMOR_MRD_TRAJ_UNITS");
    lm_tmp_make("mrd-b32");
    lm_error err;
    lm_error_clear(&err);
    const lm_problem_def *def = lm_problem_find("B32", &err);
    CHECK(def != NULL);
    if (!def)
        return lm_test_finish("test_mrd_phantom");
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    CHECK_OK(lm_problem_make(def, &g, &t, &k, NULL, &err), &err);
    if (!t || !k)
        return lm_test_finish("test_mrd_phantom");
    CHECK(t->m == 4447 && t->readout == 16);

    const char *p = lm_tmp_path("b32.h5");
    CHECK_OK(lm_mrd_write_named(p, &g, t, k, "radial", &err), &err);
    lm_mrd r;
    CHECK_OK(lm_mrd_read(p, &r, &err), &err);
    if (r.traj && r.kdata) {
        CHECK(r.cartesian == 0);
        for (int a = 0; a < 3; a++) {
            CHECK(r.geom.n[a] == g.n[a]);
            CHECK(r.geom.fov_mm[a] == g.fov_mm[a]);
        }
        CHECK(r.traj->m == t->m && r.traj->ndim == t->ndim && r.traj->readout == t->readout);
        CHECK(r.kdata->m == k->m && r.kdata->ncoils == k->ncoils);
        if (r.traj->m == t->m)
            CHECK(memcmp(r.traj->k, t->k, (size_t)t->m * 3 * sizeof(float)) == 0);
        if (r.kdata->m == k->m && r.kdata->ncoils == k->ncoils)
            CHECK(memcmp(r.kdata->d, k->d, (size_t)(k->m * k->ncoils) * sizeof(lm_cfloat)) == 0);
    }
    lm_mrd_clear(&r);
    char *info = NULL;
    CHECK_OK(lm_mrd_info(p, &info, &err), &err);
    if (info) {
        fprintf(stderr, "%s", info);
        CHECK(strstr(info, "acquisitions: 278 (278 imaging") != NULL);
        free(info);
    }
    lm_traj_free(t);
    lm_kdata_free(k);
    return lm_test_finish("test_mrd_phantom");
}
