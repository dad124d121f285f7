/* lm_mrd_write then lm_mrd_read gives back exactly what was written:
 * geometry, trajectory (cycles/FOV, bit for bit), readout length, every
 * channel's data; the units override; overwriting is atomic. */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "lm_config.h"
#include "lm_io_ismrmrd.h"
#include "lm_test.h"
#include "lm_tuning.h"
#include "mrd_test_util.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* spokes x readout samples, cut to m; 2D (full spokes) or 3D. */
static lm_traj *make_traj(int ndim, int64_t n, int64_t spokes, int64_t readout, int64_t m)
{
    lm_error e;
    lm_traj *t = lm_traj_new(m, ndim, &e);
    if (!t)
        return NULL;
    for (int64_t i = 0; i < m; i++) {
        int64_t s = i / readout, j = i % readout;
        double r = ((double)j - (double)readout / 2) * (double)n / (double)readout;
        double phi = 2.399963229728653 * (double)s, theta = 0.7 + 0.31 * (double)s;
        t->k[3 * i + 0] = (float)(r * cos(phi) * (ndim == 3 ? sin(theta) : 1.0));
        t->k[3 * i + 1] = (float)(r * sin(phi) * (ndim == 3 ? sin(theta) : 1.0));
        t->k[3 * i + 2] = ndim == 3 ? (float)(r * cos(theta) * 0.5) : 0.0f;
    }
    t->readout = readout;
    return t;
}

static lm_kdata *make_data(int64_t m, int64_t nc)
{
    lm_error e;
    lm_kdata *k = lm_kdata_new(m, nc, &e);
    if (k)
        for (int64_t i = 0; i < m * nc; i++)
            {
                float *z = (float *)&k->d[i];
                z[0] = frand();
                z[1] = frand();
            }
    return k;
}

static void check_same(const char *label, const lm_mrd *r, const lm_geom *g, const lm_traj *t,
                       const lm_kdata *k)
{
    fprintf(stderr, "checking %s\n", label);
    CHECK(r->cartesian == 0);
    for (int a = 0; a < 3; a++) {
        CHECK(r->geom.n[a] == g->n[a]);
        CHECK(r->geom.fov_mm[a] == g->fov_mm[a]);
    }
    CHECK(r->traj && r->kdata);
    if (!r->traj || !r->kdata)
        return;
    CHECK(r->traj->m == t->m);
    CHECK(r->traj->ndim == t->ndim);
    CHECK_MSG(r->traj->readout == t->readout, "readout %lld, wrote %lld", (long long)r->traj->readout,
              (long long)t->readout);
    CHECK(r->kdata->m == k->m);
    CHECK(r->kdata->ncoils == k->ncoils);
    if (r->traj->m == t->m)
        CHECK(memcmp(r->traj->k, t->k, (size_t)t->m * 3 * sizeof(float)) == 0);
    if (r->kdata->m == k->m && r->kdata->ncoils == k->ncoils)
        CHECK(memcmp(r->kdata->d, k->d, (size_t)(k->m * k->ncoils) * sizeof(lm_cfloat)) == 0);
}

int main(void)
{
#if !LM_HAVE_ISMRMRD
    LM_TEST_SKIP("built without libismrmrd");
#endif
    lm_tmp_make("mrd-rt");
    lm_error err;
    lm_error_clear(&err);
    unsetenv("LARMOR_MRD_TRAJ_UNITS");

    /* 2D radial, 3 channels, the last spoke cut short. */
    lm_geom g2;
    lm_geom_init(&g2, 32, 32, 1, 220.0);
    g2.fov_mm[2] = 5.0;
    lm_traj *t2 = make_traj(2, 32, 20, 24, 20 * 24 - 5);
    lm_kdata *k2 = make_data(t2->m, 3);
    const char *p2 = lm_tmp_path("rt2d.h5");
    CHECK_OK(lm_mrd_write(p2, &g2, t2, k2, &err), &err);
    lm_mrd r;
    memset(&r, 0, sizeof r);
    CHECK_OK(lm_mrd_read(p2, &r, &err), &err);
    check_same("2D radial", &r, &g2, t2, k2);
    lm_mrd_clear(&r);
    CHECK(r.traj == NULL && r.kdata == NULL);

    /* 3D, anisotropic FOV, readout unknown (written in chunks). */
    lm_geom g3;
    lm_geom_init(&g3, 16, 16, 8, 200.0);
    g3.fov_mm[2] = 100.0;
    lm_traj *t3 = make_traj(3, 16, 50, 100, 5000);
    t3->readout = 0;
    lm_kdata *k3 = make_data(t3->m, 2);
    const char *p3 = lm_tmp_path("rt3d.h5");
    CHECK_OK(lm_mrd_write_named(p3, &g3, t3, k3, "radial", &err), &err);
    CHECK_OK(lm_mrd_read(p3, &r, &err), &err);
    check_same("3D radial", &r, &g3, t3, k3);
    lm_mrd_clear(&r);

    /* Info. */
    char *info = NULL;
    CHECK_OK(lm_mrd_info(p3, &info, &err), &err);
    if (info) {
        fprintf(stderr, "%s", info);
        CHECK(strstr(info, "channels: 2") != NULL);
        CHECK(strstr(info, "non-Cartesian") != NULL);
        CHECK(strstr(info, "16 x 16 x 8") != NULL);
        CHECK(strstr(info, "header trajectory: radial") != NULL);
        CHECK(strstr(info, "as tagged by Larmor") != NULL);
        free(info);
    }

    /* A trajectory whose |k| <= 0.5 in cycles/FOV: Larmor's tag keeps it
     * exact; forcing "normalized" multiplies by the matrix. */
    lm_traj *ts = make_traj(2, 32, 4, 8, 32);
    for (int64_t i = 0; i < 3 * ts->m; i++)
        ts->k[i] *= 0.4f / 16.0f;
    lm_kdata *ks = make_data(ts->m, 1);
    const char *ps = lm_tmp_path("small.h5");
    CHECK_OK(lm_mrd_write(ps, &g2, ts, ks, &err), &err);
    CHECK_OK(lm_mrd_read(ps, &r, &err), &err);
    check_same("small k, tagged", &r, &g2, ts, ks);
    lm_mrd_clear(&r);
    CHECK_OK(lm_mrd_read_units(ps, LM_MRD_UNITS_NORMALIZED, &r, &err), &err);
    if (r.traj)
        CHECK(r.traj->k[3] == ts->k[3] * 32.0f && r.traj->k[4] == ts->k[4] * 32.0f);
    lm_mrd_clear(&r);
    /* The library never reads the environment: the variable alone changes
     * nothing; the front end's lm_tuning_init_from_env applies it. */
    setenv("LARMOR_MRD_TRAJ_UNITS", "normalized", 1);
    CHECK_OK(lm_mrd_read(ps, &r, &err), &err);
    if (r.traj)
        CHECK(r.traj->k[3] == ts->k[3]);
    lm_mrd_clear(&r);
    CHECK_OK(lm_tuning_init_from_env(&err), &err);
    CHECK(lm_mrd_units_default() == LM_MRD_UNITS_NORMALIZED);
    CHECK_OK(lm_mrd_read(ps, &r, &err), &err);
    if (r.traj)
        CHECK(r.traj->k[3] == ts->k[3] * 32.0f);
    lm_mrd_clear(&r);
    setenv("LARMOR_MRD_TRAJ_UNITS", "parsecs", 1);
    CHECK(lm_tuning_init_from_env(&err) == LM_ERR_INVALID);
    CHECK(lm_msg_ok("bad units variable", &err, NULL, "LARMOR_MRD_TRAJ_UNITS"));
    unsetenv("LARMOR_MRD_TRAJ_UNITS");
    CHECK_OK(lm_tuning_init_from_env(&err), &err);
    CHECK(lm_mrd_units_default() == LM_MRD_UNITS_AUTO);

    /* Overwrite: new content, and no temporary file left behind. */
    CHECK_OK(lm_mrd_write(p2, &g2, ts, ks, &err), &err);
    CHECK_OK(lm_mrd_read(p2, &r, &err), &err);
    check_same("overwritten", &r, &g2, ts, ks);
    lm_mrd_clear(&r);
    CHECK(lm_count_prefix(".rt2d") == 0);
    CHECK(lm_count_prefix(".") == 2); /* "." and ".." only */

    /* Write errors. */
    lm_kdata *kbad = make_data(t2->m - 1, 1);
    CHECK(lm_mrd_write(lm_tmp_path("x.h5"), &g2, t2, kbad, &err) == LM_ERR_INVALID);
    CHECK(lm_msg_ok("write: traj/kspace length mismatch", &err, "x.h5", "samples"));
    CHECK(lm_mrd_write(lm_tmp_path("no/such/dir/x.h5"), &g2, t2, k2, &err) == LM_ERR_IO);
    CHECK(lm_msg_ok("write: missing folder", &err, "no/such/dir/x.h5", NULL));
    CHECK(lm_mrd_write_named(lm_tmp_path("y.h5"), &g2, t2, k2, "zigzag", &err) == LM_ERR_INVALID);
    CHECK(lm_msg_ok("write: unknown trajectory name", &err, "y.h5", "zigzag"));
    t2->k[7] = NAN;
    CHECK(lm_mrd_write(lm_tmp_path("z.h5"), &g2, t2, k2, &err) == LM_ERR_INVALID);
    CHECK(lm_msg_ok("write: NaN trajectory", &err, "z.h5", "finite"));
    CHECK(access(lm_tmp_path("z.h5"), F_OK) != 0);
    CHECK(lm_count_prefix(".z") == 0);

    lm_traj_free(t2);
    lm_traj_free(t3);
    lm_traj_free(ts);
    lm_kdata_free(k2);
    lm_kdata_free(k3);
    lm_kdata_free(ks);
    lm_kdata_free(kbad);
    return lm_test_finish("test_mrd_roundtrip");
}
