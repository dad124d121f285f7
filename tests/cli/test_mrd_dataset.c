/* lm_mrd_write_dataset and the loaders built on MRD files:
 * - one slice, 3 channels, noise scans longer than one acquisition: the
 *   file read back (lm_mrd_read_opts) gives trajectory, data and noise bit
 *   for bit, and libismrmrd's own reader sees every channel of each
 *   acquisition where the MRD layout puts it (channels x samples, samples
 *   fastest), the noise acquisitions flagged and first;
 * - 3 slices with geometry, repetition 2 and contrast 1, written out of
 *   position order: read back in position order with their own data,
 *   index and position, the stacked affine's voxel sizes, lm_mrd_read's
 *   refusal, an absent repetition refused, info's counts;
 * - lm_load_noise / cli_load_noise on .h5 (and on a file without noise
 *   scans), cli_load_inputs on the multi-slice file (noise, slices,
 *   channels), cli_load_sens against a matrix and a channel count;
 * - the writer's refusals (noise of another channel count, slices in a 3D
 *   matrix, a duplicated slice index, slices of different channel
 *   counts) leave no file behind. */
#include <complex.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "cli_data.h"
#include "lm_config.h"
#include "lm_io.h"
#include "lm_io_ismrmrd.h"
#include "lm_test.h"
#include "mrd_test_util.h"

#if LM_HAVE_ISMRMRD
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>

#define N 16
#define NSP 8                  /* spokes per slice */
#define NS 16                  /* samples per spoke */
#define NC 3
#define NNOISE 5000            /* more than one 4096-sample noise acquisition */

static lm_traj *radial(int rot)
{
    lm_traj *t = lm_traj_new(NSP * NS, 2, NULL);
    t->readout = NS;
    for (int s = 0; s < NSP; s++) {
        double a = M_PI * (s + 0.25 * rot) / NSP;
        for (int i = 0; i < NS; i++) {
            t->k[3 * (s * NS + i)] = (float)((i - NS / 2) * cos(a));
            t->k[3 * (s * NS + i) + 1] = (float)((i - NS / 2) * sin(a));
        }
    }
    return t;
}

static lm_kdata *data_of(int64_t m, int64_t nc, int seed)
{
    lm_kdata *k = lm_kdata_new(m, nc, NULL);
    for (int64_t c = 0; c < nc; c++)
        for (int64_t i = 0; i < m; i++)
            k->d[c * m + i] = CMPLXF((float)((i * 7 + c * 13 + seed) % 31) - 15.0f, 0.5f * (float)(c + 1) + 0.001f * (float)seed);
    return k;
}

static int same_traj(const lm_traj *a, const lm_traj *b)
{
    return a && b && a->m == b->m && a->ndim == b->ndim && a->readout == b->readout &&
           memcmp(a->k, b->k, sizeof(float) * 3 * (size_t)a->m) == 0;
}

static int same_kdata(const lm_kdata *a, const lm_kdata *b)
{
    return a && b && a->m == b->m && a->ncoils == b->ncoils &&
           memcmp(a->d, b->d, sizeof(lm_cfloat) * (size_t)(a->m * a->ncoils)) == 0;
}

/* libismrmrd's reader on acquisition i: sample j of channel c, and the header. */
static int lib_acq(const char *path, uint32_t i, ISMRMRD_Acquisition *acq, uint32_t *count)
{
    ISMRMRD_Dataset d;
    if (ismrmrd_init_dataset(&d, path, "/dataset") != ISMRMRD_NOERROR || ismrmrd_open_dataset(&d, false) != ISMRMRD_NOERROR)
        return -1;
    *count = ismrmrd_get_number_of_acquisitions(&d);
    ismrmrd_init_acquisition(acq);
    int rc = ismrmrd_read_acquisition(&d, i, acq) == ISMRMRD_NOERROR ? 0 : -1;
    ismrmrd_close_dataset(&d);
    free(d.filename);
    free(d.groupname);
    return rc;
}

static void single_slice(void)
{
    lm_error e = {0};
    lm_mrd m = {0};
    lm_geom_init(&m.geom, N, N, 1, 240);
    m.traj = radial(0);
    m.kdata = data_of(NSP * NS, NC, 1);
    m.noise = data_of(NNOISE, NC, 2);
    m.nslices = 1;
    const char *path = lm_tmp_path("one.h5");
    CHECK_OK(lm_mrd_write_dataset(path, &m, "radial", &e), &e);

    lm_mrd r = {0};
    CHECK_OK(lm_mrd_read_opts(path, NULL, &r, &e), &e);
    CHECK(r.nslices == 1 && !r.slices && r.geom.n[0] == N && r.geom.n[2] == 1 && r.geom.fov_mm[1] == 240);
    CHECK(same_traj(r.traj, m.traj));
    CHECK(same_kdata(r.kdata, m.kdata));
    CHECK(same_kdata(r.noise, m.noise));
    lm_mrd_clear(&r);
    /* the old API reads it the same */
    CHECK_OK(lm_mrd_read(path, &r, &e), &e);
    CHECK(same_kdata(r.kdata, m.kdata) && same_kdata(r.noise, m.noise));
    lm_mrd_clear(&r);

    /* libismrmrd: 2 noise acquisitions (4096 + 904), then 8 spokes */
    ISMRMRD_Acquisition a;
    uint32_t count = 0;
    CHECK(lib_acq(path, 1, &a, &count) == 0);
    CHECK(count == 2 + NSP);
    CHECK(a.head.number_of_samples == NNOISE - 4096 && a.head.active_channels == NC &&
          a.head.trajectory_dimensions == 0 && ismrmrd_is_flag_set(a.head.flags, ISMRMRD_ACQ_IS_NOISE_MEASUREMENT));
    if (a.data && a.head.number_of_samples == NNOISE - 4096)
        CHECK(a.data[2 * (NNOISE - 4096) + 100] == m.noise->d[2 * NNOISE + 4096 + 100]);
    ismrmrd_cleanup_acquisition(&a);
    CHECK(lib_acq(path, 2 + 3, &a, &count) == 0);
    CHECK(a.head.number_of_samples == NS && a.head.active_channels == NC && a.head.trajectory_dimensions == 2 &&
          !ismrmrd_is_flag_set(a.head.flags, ISMRMRD_ACQ_IS_NOISE_MEASUREMENT));
    if (a.data && a.traj && a.head.number_of_samples == NS) {
        int ok = 1;
        for (int c = 0; c < NC; c++)
            for (int i = 0; i < NS; i++)
                ok &= a.data[c * NS + i] == m.kdata->d[c * NSP * NS + 3 * NS + i];
        CHECK_MSG(ok, "every channel of spoke 3 where MRD puts it");
        CHECK(a.traj[2 * 5 + 1] == m.traj->k[3 * (3 * NS + 5) + 1]);
    }
    ismrmrd_cleanup_acquisition(&a);

    /* noise from the file */
    lm_kdata *k = NULL;
    CHECK_OK(lm_load_noise(path, &k, &e), &e);
    CHECK(same_kdata(k, m.noise));
    lm_kdata_free(k);
    k = NULL;
    CHECK_OK(cli_load_noise(path, NC, &k, &e), &e);
    CHECK(k != NULL);
    lm_kdata_free(k);
    k = NULL;
    CHECK(cli_load_noise(path, 8, &k, &e) == LM_ERR_INVALID && k == NULL &&
          strstr(e.msg, "one.h5: noise samples have 3 channels but the k-space has 8") && !strstr(e.msg, "4th"));
    printf("%s\n", e.msg);
    char *info = NULL;
    CHECK_OK(lm_mrd_info(path, &info, &e), &e);
    CHECK(info && strstr(info, "channels: 3") && strstr(info, "noise scans: 5000 samples per channel") &&
          strstr(info, "slices: 1") && strstr(info, "repetitions: 1"));
    free(info);

    /* lm_mrd_write writes no noise scans: none to load */
    CHECK_OK(lm_mrd_write(lm_tmp_path("plain.h5"), &m.geom, m.traj, m.kdata, &e), &e);
    CHECK(lm_load_noise(lm_tmp_path("plain.h5"), &k, &e) == LM_ERR_FORMAT && k == NULL &&
          strstr(e.msg, "plain.h5: the ISMRMRD file holds no noise scans"));
    printf("%s\n", e.msg);

    /* refusals, before any file is made */
    lm_kdata *n4 = data_of(100, 4, 3), *keep = m.noise;
    m.noise = n4;
    CHECK(lm_mrd_write_dataset(lm_tmp_path("bad1.h5"), &m, NULL, &e) == LM_ERR_INVALID &&
          strstr(e.msg, "bad1.h5: noise samples have 4 channels but the k-space has 3"));
    printf("%s\n", e.msg);
    CHECK(access(lm_tmp_path("bad1.h5"), F_OK) != 0);
    m.noise = keep;
    lm_kdata_free(n4);
    lm_mrd_clear(&m);
}

static const double slice_z[3] = {5.0, -5.0, 0.0}; /* written in this order, idx 0, 1, 2 */

static void make_slices(lm_mrd *m, int64_t nz)
{
    memset(m, 0, sizeof *m);
    lm_geom_init(&m->geom, N, N, nz, 240);
    m->geom.fov_mm[2] = 5;
    m->nslices = 3;
    m->slices = calloc(3, sizeof *m->slices);
    for (int s = 0; s < 3; s++) {
        lm_mrd_slice *sl = &m->slices[s];
        sl->traj = radial(s);
        sl->kdata = data_of(NSP * NS, NC, 10 + s);
        sl->index = s;
        sl->position[0] = 1;
        sl->position[1] = -2;
        sl->position[2] = slice_z[s];
        sl->read_dir[0] = sl->phase_dir[1] = sl->slice_dir[2] = 1;
    }
    m->noise = data_of(300, NC, 4);
    m->repetition = 2;
    m->contrast = 1;
}

static void multi_slice(void)
{
    lm_error e = {0};
    lm_mrd m;
    make_slices(&m, 1);
    const char *path = lm_tmp_path("slices.h5");
    CHECK_OK(lm_mrd_write_dataset(path, &m, "radial", &e), &e);

    lm_mrd r = {0};
    CHECK_OK(lm_mrd_read_opts(path, NULL, &r, &e), &e);
    CHECK(r.nslices == 3 && r.slices && !r.traj && !r.kdata);
    CHECK(r.repetition == 2 && r.contrast == 1 && r.nrepetitions == 1 && r.ncontrasts == 1);
    CHECK(same_kdata(r.noise, m.noise));
    if (r.nslices == 3 && r.slices) {
        static const int want[3] = {1, 2, 0}; /* by position: -5, 0, 5 mm */
        for (int k = 0; k < 3; k++) {
            const lm_mrd_slice *s = &r.slices[k], *w = &m.slices[want[k]];
            CHECK_MSG(s->index == want[k], "slice %d has index %d", k, s->index);
            CHECK_MSG(same_traj(s->traj, w->traj) && same_kdata(s->kdata, w->kdata), "slice %d data", k);
            CHECK(s->position[0] == 1 && s->position[1] == -2 && s->position[2] == w->position[2]);
            CHECK(s->read_dir[0] == 1 && s->phase_dir[1] == 1 && s->slice_dir[2] == 1);
        }
        double aff[4][4], vox[3];
        CHECK_OK(lm_mrd_slices_affine(&r, aff, vox, &e), &e);
        CHECK_NEAR(vox[0], 15.0, 1e-9);
        CHECK_NEAR(vox[1], 15.0, 1e-9);
        CHECK_NEAR(vox[2], 5.0, 1e-6);
        CHECK_NEAR(aff[2][3], -5.0, 1e-6); /* slice 0 of the stack is the one at -5 mm */
    }
    lm_mrd_clear(&r);

    /* the single-slice API refuses; an absent repetition is refused */
    CHECK(lm_mrd_read(path, &r, &e) == LM_ERR_UNSUPPORTED && strstr(e.msg, "slices.h5: holds 3 slices"));
    printf("%s\n", e.msg);
    lm_mrd_opts o;
    lm_mrd_opts_init(&o);
    o.repetition = 0;
    CHECK(lm_mrd_read_opts(path, &o, &r, &e) == LM_ERR_INVALID && strstr(e.msg, "slices.h5"));
    printf("%s\n", e.msg);
    char *info = NULL;
    CHECK_OK(lm_mrd_info(path, &info, &e), &e);
    CHECK(info && strstr(info, "slices: 3") && strstr(info, "repetitions: 1 (2..2), reading 2") &&
          strstr(info, "contrasts: 1 (1..1), reading 1") && strstr(info, "channels: 3") &&
          strstr(info, "noise scans: 300 samples per channel"));
    free(info);

    /* the acquisition object (lm_acq) and the CLI's loaders */
    lm_acq *in = NULL;
    lm_acq_paths ap = {.traj = (char *)path};
    CHECK_OK(lm_acq_load(&ap, NULL, &in, &e), &e);
    CHECK(in->nslices == 3 && !in->kdata && in->noise && in->noise->ncoils == NC && in->is_mrd && in->repetition == 2);
    CHECK(lm_acq_channels(in) == NC);
    const lm_geom g = in->mrd.geom;
    lm_acq_free(in);
    lm_sens *s = lm_sens_new((int64_t[3]){N, N, 1}, NC, NULL);
    for (int64_t i = 0; i < N * N * NC; i++)
        s->s[i] = CMPLXF(1.0f, 0.001f * (float)i);
    CHECK_OK(lm_save_sens(lm_tmp_path("maps.cfl"), s, NULL, &e), &e);
    lm_sens_free(s);
    s = NULL;
    CHECK_OK(cli_load_sens(lm_tmp_path("maps.cfl"), &g, NC, &s, &e), &e);
    CHECK(s && s->ncoils == NC && s->n[2] == 1);
    lm_sens_free(s);
    s = NULL;
    CHECK(cli_load_sens(lm_tmp_path("maps.cfl"), &g, 8, &s, &e) == LM_ERR_INVALID && !s &&
          strstr(e.msg, "maps.cfl: 3 coil maps but the k-space has 8 channels"));
    printf("%s\n", e.msg);
    lm_geom g3 = g;
    g3.n[2] = 16;
    CHECK(cli_load_sens(lm_tmp_path("maps.cfl"), &g3, NC, &s, &e) == LM_ERR_INVALID && !s &&
          strstr(e.msg, "maps.cfl: coil maps are 16x16x1 but the matrix is 16x16x16"));
    printf("%s\n", e.msg);
    CHECK(cli_load_sens(lm_tmp_path("nomaps.cfl"), &g, NC, &s, &e) == LM_ERR_IO && !s && strstr(e.msg, "nomaps"));
    /* channels of plain inputs, and of nothing */
    ap.traj = (char *)lm_tmp_path("one.h5");
    CHECK_OK(lm_acq_load(&ap, NULL, &in, &e), &e);
    CHECK(in->nslices == 1 && in->kdata && lm_acq_channels(in) == NC && in->noise);
    lm_acq_free(in);

    /* refusals */
    lm_mrd_clear(&m);
    make_slices(&m, 4);
    CHECK(lm_mrd_write_dataset(lm_tmp_path("bad2.h5"), &m, NULL, &e) == LM_ERR_INVALID &&
          strstr(e.msg, "bad2.h5: 3 slices need a 2D matrix"));
    printf("%s\n", e.msg);
    lm_mrd_clear(&m);
    make_slices(&m, 1);
    m.slices[2].index = 0;
    CHECK(lm_mrd_write_dataset(lm_tmp_path("bad3.h5"), &m, NULL, &e) == LM_ERR_INVALID &&
          strstr(e.msg, "bad3.h5: two slices with index 0"));
    printf("%s\n", e.msg);
    m.slices[2].index = 2;
    lm_kdata_free(m.slices[1].kdata);
    m.slices[1].kdata = data_of(NSP * NS, 2, 5);
    CHECK(lm_mrd_write_dataset(lm_tmp_path("bad4.h5"), &m, NULL, &e) == LM_ERR_INVALID &&
          strstr(e.msg, "bad4.h5: slice 1 has 2 channels"));
    printf("%s\n", e.msg);
    for (int i = 2; i <= 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "bad%d.h5", i);
        CHECK_MSG(access(lm_tmp_path(name), F_OK) != 0, "%s left behind", name);
    }
    lm_mrd_clear(&m);
}

int main(void)
{
    lm_tmp_make("mrd-dataset");
    single_slice();
    multi_slice();
    return lm_test_finish("mrd-dataset");
}
#else
int main(void)
{
    LM_TEST_SKIP("built without ISMRMRD");
}
#endif
