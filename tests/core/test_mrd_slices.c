/* Multi-slice 2D ISMRMRD and repetition/contrast selection: a crafted file
 * of 3 slices (different data, centres 5 mm apart along z, acquisitions
 * shuffled) reads back as 3 slices in position order with each slice's own
 * samples and geometry; lm_mrd_slices_affine places them (third column 5
 * mm along z, origin); uneven spacing, duplicated positions and tilted
 * slices are refused with one line; lm_mrd_read refuses the file; a
 * repetition and a contrast are picked (others skipped and counted);
 * info says all of it. */
#include <math.h>
#include <string.h>

#include "lm_config.h"
#include "lm_io_ismrmrd.h"
#include "lm_test.h"
#include "mrd_test_util.h"

#if LM_HAVE_ISMRMRD
#include "mrd_slices_craft.h"

static sl_file F;
static char xml[4096];

/* Every sample of sl is obj's signal at its trajectory point; m samples. */
static int slice_data_ok(const lm_traj *t, const lm_kdata *k, int obj, int64_t m)
{
    if (!t || !k || t->m != m || k->m != m || k->ncoils != 1 || t->ndim != 2)
        return 0;
    for (int64_t i = 0; i < m; i++) {
        float want[2];
        sl_signal(obj, t->k[3 * i], t->k[3 * i + 1], want);
        const float *got = (const float *)&k->d[i];
        if (got[0] != want[0] || got[1] != want[1] || t->k[3 * i + 2] != 0)
            return 0;
    }
    return 1;
}

static lm_code affine_of(const char *path, const double z[SL_NSL], double aff[4][4], double vox[3], lm_error *e)
{
    sl_make(&F, z);
    CHECK(craft_write(path, xml, 0, F.acq, F.nacq) == 0);
    lm_mrd m;
    lm_code rc = lm_mrd_read_opts(path, NULL, &m, e);
    if (rc == LM_OK)
        rc = lm_mrd_slices_affine(&m, aff, vox, e);
    lm_mrd_clear(&m);
    return rc;
}

int main(void)
{
    lm_tmp_make("mrd-slices");
    craft_xml(xml, sizeof xml, SL_N, 1, 240, "radial");
    const char *path = lm_tmp_path("slices.h5");
    sl_make(&F, sl_z);
    CHECK(craft_write(path, xml, 0, F.acq, F.nacq) == 0);

    lm_mrd m;
    lm_error e = {0};
    CHECK_OK(lm_mrd_read_opts(path, NULL, &m, &e), &e);
    CHECK(m.nslices == 3 && m.slices && !m.traj && !m.kdata);
    CHECK(m.repetition == 0 && m.contrast == 0 && m.nrepetitions == 1 && m.ncontrasts == 1);
    CHECK(m.geom.n[0] == SL_N && m.geom.n[2] == 1);
    if (m.nslices == 3 && m.slices) {
        /* position order: idx 1 (5 mm), idx 2 (10 mm), idx 0 (15 mm) */
        static const int want_index[3] = {1, 2, 0};
        for (int k = 0; k < 3; k++) {
            const lm_mrd_slice *s = &m.slices[k];
            CHECK_MSG(s->index == want_index[k], "slice %d has index %d", k, s->index);
            CHECK_MSG(slice_data_ok(s->traj, s->kdata, s->index, SL_NSP * SL_NS), "slice %d data", k);
            CHECK(s->traj && s->traj->readout == SL_NS);
            CHECK(s->position[0] == 2.0 && s->position[1] == -3.0 && s->position[2] == sl_z[s->index]);
            CHECK(s->read_dir[0] == 1 && s->phase_dir[1] == 1 && s->slice_dir[2] == 1);
        }
        /* The first spoke of slice idx 1 in the file is acquisition 1 (k = 7:
         * slice 1, spoke 2): its samples come first. */
        const float *k0 = m.slices[0].traj->k;
        CHECK(k0[0] == F.traj[2][0] && k0[1] == F.traj[2][1]);
        double aff[4][4], vox[3];
        CHECK_OK(lm_mrd_slices_affine(&m, aff, vox, &e), &e);
        CHECK(vox[0] == 15 && vox[1] == 15 && fabs(vox[2] - 5) < 1e-9);
        /* third column: 5 mm along z; in-plane: LPS read (1,0,0) is RAS -x */
        CHECK(aff[0][2] == 0 && aff[1][2] == 0 && fabs(aff[2][2] - 5) < 1e-9);
        CHECK(aff[0][0] == -15 && aff[1][0] == 0 && aff[2][0] == 0);
        CHECK(aff[0][1] == 0 && aff[1][1] == -15 && aff[2][1] == 0);
        /* origin: voxel (8, 8, 0) is the first slice's centre (2, -3, 5) LPS */
        CHECK(fabs(aff[0][3] - -(2.0 - 8 * 15)) < 1e-9 && fabs(aff[1][3] - -(-3.0 - 8 * 15)) < 1e-9 &&
              fabs(aff[2][3] - 5) < 1e-9);
        CHECK(aff[3][0] == 0 && aff[3][1] == 0 && aff[3][2] == 0 && aff[3][3] == 1);
    }
    lm_mrd_clear(&m);

    /* lm_mrd_read keeps its one-volume contract. */
    lm_error_clear(&e);
    CHECK(lm_mrd_read(path, &m, &e) == LM_ERR_UNSUPPORTED && !m.traj && !m.slices);
    CHECK(lm_msg_ok("multi-slice via lm_mrd_read", &e, path,
                    "holds 3 slices (idx.slice 0..2): reconstruct them with larmor-cli recon"));
    lm_mrd_clear(&m);

    char *info = NULL;
    CHECK_OK(lm_mrd_info(path, &info, &e), &e);
    CHECK(info && strstr(info, "slices: 3 (idx.slice 0..2), 2D multi-slice"));
    CHECK(info && strstr(info, "repetitions: 1 (0..0), reading 0"));
    if (info)
        fputs(info, stderr);
    free(info);

    /* Geometry refused, one line each. */
    double aff[4][4], vox[3];
    const double uneven[3] = {5, 10, 16}, dup[3] = {5, 10, 10}, almost[3] = {5, 10.03, 15.02};
    lm_error_clear(&e);
    CHECK(affine_of(lm_tmp_path("uneven.h5"), uneven, aff, vox, &e) == LM_ERR_FORMAT);
    CHECK(lm_msg_ok("uneven slice spacing", &e, NULL, "uneven slice spacing: 5 mm between slices 0 and 1, 5.5 mm on average"));
    lm_error_clear(&e);
    CHECK(affine_of(lm_tmp_path("dup.h5"), dup, aff, vox, &e) == LM_ERR_FORMAT);
    CHECK(lm_msg_ok("duplicated slice position", &e, NULL, "duplicated position"));
    /* within 1 %: accepted, the mean spacing */
    CHECK_OK(affine_of(lm_tmp_path("almost.h5"), almost, aff, vox, &e), &e);
    CHECK(fabs(vox[2] - 5.01) < 1e-5 && fabs(aff[2][2] - 5.01) < 1e-5);
    /* a slice tilted from the others */
    sl_make(&F, sl_z);
    for (int i = 0; i < F.nacq; i++)
        if (F.acq[i].head.idx.slice == 2) {
            F.acq[i].head.slice_dir[1] = 0.6f;
            F.acq[i].head.slice_dir[2] = 0.8f;
        }
    CHECK(craft_write(lm_tmp_path("tilt.h5"), xml, 0, F.acq, F.nacq) == 0);
    CHECK_OK(lm_mrd_read_opts(lm_tmp_path("tilt.h5"), NULL, &m, &e), &e);
    lm_error_clear(&e);
    CHECK(lm_mrd_slices_affine(&m, aff, vox, &e) == LM_ERR_FORMAT);
    CHECK(lm_msg_ok("tilted slice", &e, NULL, "is not oriented as slice"));
    lm_mrd_clear(&m);
    /* a slice centre off the axis: idx 2 (10 mm) shifted 3 mm along y */
    sl_make(&F, sl_z);
    for (int i = 0; i < F.nacq; i++)
        if (F.acq[i].head.idx.slice == 2)
            F.acq[i].head.position[1] += 3.0f;
    CHECK(craft_write(lm_tmp_path("shift.h5"), xml, 0, F.acq, F.nacq) == 0);
    CHECK_OK(lm_mrd_read_opts(lm_tmp_path("shift.h5"), NULL, &m, &e), &e);
    lm_error_clear(&e);
    CHECK(lm_mrd_slices_affine(&m, aff, vox, &e) == LM_ERR_FORMAT);
    CHECK(lm_msg_ok("slice centre off the axis", &e, NULL, "slice 2 is shifted 3 mm in-plane from slice 1"));
    lm_mrd_clear(&m);
    /* slices handed over out of position order */
    sl_make(&F, sl_z);
    CHECK_OK(lm_mrd_read_opts(path, NULL, &m, &e), &e);
    if (m.nslices == 3) {
        lm_mrd_slice t = m.slices[0];
        m.slices[0] = m.slices[2];
        m.slices[2] = t;
        lm_error_clear(&e);
        CHECK(lm_mrd_slices_affine(&m, aff, vox, &e) == LM_ERR_FORMAT);
        CHECK(lm_msg_ok("slices out of order", &e, NULL, "slice 2 lies before slice 0 along the slice direction"));
    }
    lm_mrd_clear(&m);
    /* no directions at all */
    sl_make(&F, sl_z);
    for (int i = 0; i < F.nacq; i++)
        F.acq[i].head.read_dir[0] = F.acq[i].head.phase_dir[1] = F.acq[i].head.slice_dir[2] = 0;
    CHECK(craft_write(lm_tmp_path("nodir.h5"), xml, 0, F.acq, F.nacq) == 0);
    CHECK_OK(lm_mrd_read_opts(lm_tmp_path("nodir.h5"), NULL, &m, &e), &e);
    CHECK(m.nslices == 3);
    lm_error_clear(&e);
    CHECK(lm_mrd_slices_affine(&m, aff, vox, &e) == LM_ERR_FORMAT);
    CHECK(lm_msg_ok("no slice directions", &e, NULL, "cannot place the slices"));
    lm_mrd_clear(&m);

    /* Repetitions and contrasts: one slice; repetition r contrast c holds
     * object 10 + 3 r + c; repetition 0 has contrast 0 only, repetition 1
     * contrasts 0 and 1, repetition 2 contrast 1 only. */
    sl_traj(&F);
    static const int rc_pairs[4][2] = {{1, 1}, {0, 0}, {2, 1}, {1, 0}};
    int n = 0;
    for (int q = 0; q < 4; q++)
        for (int p = 0; p < 2; p++, n++) {
            sl_acq(&F, n, 0, p, 10 + 3 * rc_pairs[q][0] + rc_pairs[q][1], 0, 0, 0);
            F.acq[n].head.idx.repetition = (uint16_t)rc_pairs[q][0];
            F.acq[n].head.idx.contrast = (uint16_t)rc_pairs[q][1];
        }
    const char *rp = lm_tmp_path("reps.h5");
    CHECK(craft_write(rp, xml, 0, F.acq, n) == 0);
    lm_mrd_opts o;
    lm_mrd_opts_init(&o);
    CHECK(o.units == LM_MRD_UNITS_AUTO && o.repetition == -1 && o.contrast == -1);
    CHECK_OK(lm_mrd_read_opts(rp, &o, &m, &e), &e);
    CHECK(m.nslices == 1 && !m.slices && m.repetition == 0 && m.contrast == 0 && m.nrepetitions == 3 &&
          m.ncontrasts == 2);
    CHECK(slice_data_ok(m.traj, m.kdata, 10, 2 * SL_NS));
    lm_mrd_clear(&m);
    o.repetition = 1;
    o.contrast = 1;
    CHECK_OK(lm_mrd_read_opts(rp, &o, &m, &e), &e);
    CHECK(m.repetition == 1 && m.contrast == 1 && slice_data_ok(m.traj, m.kdata, 14, 2 * SL_NS));
    lm_mrd_clear(&m);
    /* repetition 2 alone: its only contrast (1) is the first present there */
    o.repetition = 2;
    o.contrast = -1;
    CHECK_OK(lm_mrd_read_opts(rp, &o, &m, &e), &e);
    CHECK(m.repetition == 2 && m.contrast == 1 && slice_data_ok(m.traj, m.kdata, 17, 2 * SL_NS));
    lm_mrd_clear(&m);
    o.repetition = 5;
    lm_error_clear(&e);
    CHECK(lm_mrd_read_opts(rp, &o, &m, &e) == LM_ERR_INVALID && !m.traj);
    CHECK(lm_msg_ok("repetition absent", &e, rp, "repetition 5 is not in the file (it holds 3: 0..2)"));
    o.repetition = 0;
    o.contrast = 1;
    lm_error_clear(&e);
    CHECK(lm_mrd_read_opts(rp, &o, &m, &e) == LM_ERR_INVALID);
    CHECK(lm_msg_ok("contrast absent", &e, rp, "contrast 1 is not in repetition 0"));
    /* lm_mrd_read reads the first repetition and contrast */
    CHECK_OK(lm_mrd_read(rp, &m, &e), &e);
    CHECK(m.repetition == 0 && m.contrast == 0 && slice_data_ok(m.traj, m.kdata, 10, 2 * SL_NS));
    lm_mrd_clear(&m);
    CHECK_OK(lm_mrd_info(rp, &info, &e), &e);
    CHECK(info && strstr(info, "6 of other repetitions/contrasts skipped"));
    CHECK(info && strstr(info, "repetitions: 3 (0..2), reading 0"));
    CHECK(info && strstr(info, "contrasts: 2 (0..1), reading 0"));
    CHECK(info && strstr(info, "slices: 1 (idx.slice 0)"));
    free(info);
    return lm_test_finish("mrd-slices");
}
#else
int main(void)
{
    LM_TEST_SKIP("built without ISMRMRD");
}
#endif
