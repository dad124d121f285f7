/* Bad ISMRMRD inputs: each is refused with one line that names the file and
 * the problem, nothing is allocated from an unchecked size, and the input
 * file is never modified. Files are made here with HDF5 directly
 * (mrd_craft.h), so no python is needed. The MSG lines in the log are the
 * record behind docs/bad-inputs.md. */
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "lm_config.h"
#include "lm_io_ismrmrd.h"
#include "lm_test.h"
#include "lm_tuning.h"
#include "mrd_test_util.h"

#if LM_HAVE_ISMRMRD
#include "mrd_craft.h"

#define NS 16
#define NC 2
static float traj2[NS * 2], traj3[NS * 3], traj7[NS * 7], data[NS * NC * 2];
static char xml[4096];

static craft_acq good_acq(int tdim, int e1)
{
    craft_acq a;
    memset(&a, 0, sizeof a);
    ismrmrd_init_acquisition_header(&a.head);
    a.head.number_of_samples = NS;
    a.head.active_channels = a.head.available_channels = NC;
    a.head.trajectory_dimensions = (uint16_t)tdim;
    a.head.center_sample = NS / 2;
    a.head.idx.kspace_encode_step_1 = (uint16_t)e1;
    a.traj = tdim == 3 ? traj3 : traj2;
    a.traj_len = (size_t)NS * (size_t)tdim;
    a.data = data;
    a.data_len = NS * NC * 2;
    return a;
}

/* Writes name with the acquisitions given, expects code and a message
 * holding needle. */
static void expect_bad(const char *label, const char *name, const char *hdr, craft_acq *acq, long n,
                       lm_code code, const char *needle)
{
    const char *p = lm_tmp_path(name);
    CHECK_MSG(craft_write(p, hdr, 0, acq, n) == 0, "%s: cannot craft %s", label, name);
    lm_mrd r;
    lm_error e;
    lm_error_clear(&e);
    lm_code c = lm_mrd_read(p, &r, &e);
    CHECK_MSG(c == code, "%s: got %s, want %s (%s)", label, lm_code_name(c), lm_code_name(code), e.msg);
    CHECK_MSG(lm_msg_ok(label, &e, p, needle), "%s: message '%s' lacks '%s'", label, e.msg, needle);
    CHECK(r.traj == NULL && r.kdata == NULL);
    lm_mrd_clear(&r);
}

static void expect_bad_path(const char *label, const char *p, lm_code code, const char *needle)
{
    lm_mrd r;
    lm_error e;
    lm_error_clear(&e);
    lm_code c = lm_mrd_read(p, &r, &e);
    CHECK_MSG(c == code, "%s: got %s, want %s (%s)", label, lm_code_name(c), lm_code_name(code), e.msg);
    CHECK_MSG(lm_msg_ok(label, &e, p, needle), "%s: message '%s' lacks '%s'", label, e.msg, needle);
    lm_mrd_clear(&r);
    char *info = (char *)1;
    CHECK(lm_mrd_info(p, &info, &e) == code && info == NULL);
}
#endif

int main(void)
{
#if !LM_HAVE_ISMRMRD
    LM_TEST_SKIP("built without libismrmrd");
#else
    unsetenv("LARMOR_MRD_TRAJ_UNITS");
    lm_tmp_make("mrd-bad");
    for (int i = 0; i < NS; i++) {
        traj2[2 * i] = (float)(i - NS / 2);
        traj2[2 * i + 1] = 0.5f * (float)(i - NS / 2);
        for (int a = 0; a < 3; a++)
            traj3[3 * i + a] = (float)(i - NS / 2) * (a == 2 ? 0.25f : 1.0f);
    }
    for (int i = 0; i < NS * NC * 2; i++)
        data[i] = (float)i;
    craft_xml(xml, sizeof xml, 32, 1, 220, "radial");
    craft_acq acq[8];

    /* A good crafted file first, to be sure the crafting itself is right. */
    acq[0] = good_acq(2, 0);
    acq[1] = good_acq(2, 1);
    char *okp = strdup(lm_tmp_path("ok.h5"));
    CHECK(craft_write(okp, xml, 0, acq, 2) == 0);
    lm_mrd r;
    lm_error e;
    CHECK_OK(lm_mrd_read(okp, &r, &e), &e);
    CHECK(r.traj && r.traj->m == 2 * NS && r.kdata->ncoils == NC && r.traj->readout == NS);
    if (r.traj)
        CHECK(r.traj->k[0] == traj2[0] && r.traj->k[1] == traj2[1]);
    if (r.kdata)
        CHECK(crealf(r.kdata->d[1]) == data[2] && cimagf(r.kdata->d[1]) == data[3]);
    lm_mrd_clear(&r);

    /* Fixed-length XML string: accepted. */
    char *fixp = strdup(lm_tmp_path("fixedxml.h5"));
    CHECK(craft_write(fixp, xml, 1, acq, 2) == 0);
    CHECK_OK(lm_mrd_read(fixp, &r, &e), &e);
    lm_mrd_clear(&r);

    /* Reading never modifies the file (libismrmrd 1.8's reader adds
     * /dataset to any HDF5 file it opens), and works on a read-only file. */
    size_t n0, n1;
    unsigned char *before = lm_read_bytes(okp, &n0);
    chmod(okp, 0444);
    CHECK_OK(lm_mrd_read(okp, &r, &e), &e);
    lm_mrd_clear(&r);
    unsigned char *after = lm_read_bytes(okp, &n1);
    CHECK(before && after && n0 == n1 && memcmp(before, after, n0) == 0);
    free(after);

    /* Files that are not ISMRMRD at all. */
    expect_bad_path("missing file", lm_tmp_path("nope.h5"), LM_ERR_IO, "No such file");
    expect_bad_path("folder", lm_tmp_dir, LM_ERR_IO, "folder");
    lm_write_bytes(lm_tmp_path("empty.h5"), "", 0);
    expect_bad_path("empty file", lm_tmp_path("empty.h5"), LM_ERR_FORMAT, "empty file");
    lm_write_bytes(lm_tmp_path("text.h5"), "hello, not HDF5\n", 16);
    expect_bad_path("text file", lm_tmp_path("text.h5"), LM_ERR_FORMAT, "not an HDF5 file");
    /* Truncated: the first half of a good file. */
    lm_write_bytes(lm_tmp_path("half.h5"), before, n0 / 2);
    expect_bad_path("truncated to half", lm_tmp_path("half.h5"), LM_ERR_FORMAT, NULL);
    lm_write_bytes(lm_tmp_path("head.h5"), before, 700);
    expect_bad_path("truncated to 700 bytes", lm_tmp_path("head.h5"), LM_ERR_FORMAT, NULL);
    /* Garbage in the middle of the file. */
    unsigned char *junk = malloc(n0);
    memcpy(junk, before, n0);
    for (size_t i = n0 / 3; i < n0 / 3 + 512 && i < n0; i++)
        junk[i] = (unsigned char)(i * 7);
    lm_write_bytes(lm_tmp_path("junk.h5"), junk, n0);
    {
        lm_error_clear(&e);
        lm_code c = lm_mrd_read(lm_tmp_path("junk.h5"), &r, &e);
        fprintf(stderr, "MSG [512 bytes overwritten] (%s): %s\n", lm_code_name(c), e.msg);
        CHECK(c == LM_OK || !strchr(e.msg, '\n'));
        lm_mrd_clear(&r);
    }
    free(junk);
    free(before);

    /* HDF5, but not MRD. */
    {
        const char *p = lm_tmp_path("plain.h5");
        hid_t f = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        H5Fclose(f);
        expect_bad_path("HDF5 without /dataset", p, LM_ERR_FORMAT, "without /dataset");
    }
    expect_bad("no /dataset/xml", "noxml.h5", NULL, acq, 2, LM_ERR_FORMAT, "no /dataset/xml");
    expect_bad("no /dataset/data", "nodata.h5", xml, acq, -1, LM_ERR_FORMAT, "/dataset/data is missing");
    expect_bad("zero acquisitions", "zero.h5", xml, acq, 0, LM_ERR_FORMAT, "empty");
    expect_bad("XML not an MRD header", "html.h5", "<html></html>", acq, 2, LM_ERR_FORMAT, "ismrmrdHeader");
    {
        char cut[200];
        snprintf(cut, sizeof cut, "%.150s", xml);
        expect_bad("XML truncated", "cutxml.h5", cut, acq, 2, LM_ERR_FORMAT, "XML header");
    }

    /* Acquisitions that disagree with themselves or each other. */
    acq[0] = good_acq(2, 0);
    acq[0].data_len -= 2;
    expect_bad("data shorter than header", "shortdata.h5", xml, acq, 1, LM_ERR_FORMAT, "stores 62 data values");
    acq[0] = good_acq(2, 0);
    acq[0].data_len = 0;
    expect_bad("no data stored", "nodatastored.h5", xml, acq, 1, LM_ERR_FORMAT, "stores 0 data values");
    acq[0] = good_acq(2, 0);
    acq[0].traj_len = 5;
    expect_bad("trajectory shorter than header", "shorttraj.h5", xml, acq, 1, LM_ERR_FORMAT,
               "stores 5 trajectory values");
    acq[0] = good_acq(2, 0);
    acq[0].head.number_of_samples = 65535;
    expect_bad("header claims 65535 samples", "bigns.h5", xml, acq, 1, LM_ERR_FORMAT, "but the file holds");
    acq[0] = good_acq(2, 0);
    acq[0].head.active_channels = 65535;
    expect_bad("header claims 65535 channels", "bignc.h5", xml, acq, 1, LM_ERR_FORMAT, "but the file holds");
    acq[0] = good_acq(2, 0);
    acq[0].head.number_of_samples = NS + 4; /* a little more than stored: caught reading */
    expect_bad("header claims 4 samples more", "moreNS.h5", xml, acq, 1, LM_ERR_FORMAT, "its header says 20 samples");
    acq[0] = good_acq(2, 0);
    acq[1] = good_acq(2, 1);
    acq[1].head.active_channels = 1;
    acq[1].data_len = NS * 2;
    expect_bad("channel count changes", "chan.h5", xml, acq, 2, LM_ERR_FORMAT, "has 1 channels, acquisition 0 has 2");
    acq[0] = good_acq(2, 0);
    acq[0].head.active_channels = 0;
    acq[0].data_len = 0;
    expect_bad("no channels", "nochan.h5", xml, acq, 1, LM_ERR_FORMAT, "no active channels");
    acq[0] = good_acq(2, 0);
    acq[1] = good_acq(3, 1);
    expect_bad("trajectory dimensions change", "mixdim.h5", xml, acq, 2, LM_ERR_FORMAT, "trajectory_dimensions 3");
    acq[0] = good_acq(2, 0);
    acq[0].head.trajectory_dimensions = 1;
    acq[0].traj_len = NS;
    expect_bad("1-D trajectory", "dim1.h5", xml, acq, 1, LM_ERR_UNSUPPORTED, "trajectory_dimensions 1");
    acq[0] = good_acq(2, 0);
    acq[0].head.trajectory_dimensions = 7;
    acq[0].traj = traj7;
    acq[0].traj_len = NS * 7;
    expect_bad("7-D trajectory", "dim7.h5", xml, acq, 1, LM_ERR_UNSUPPORTED, "trajectory_dimensions 7");
    acq[0] = good_acq(2, 0);
    acq[0].head.discard_pre = 10;
    acq[0].head.discard_post = 6;
    expect_bad("discards every sample", "discard.h5", xml, acq, 1, LM_ERR_FORMAT, "discards 10 + 6 of its 16");

    /* Non-finite numbers. */
    float nan_traj[NS * 2], nan_data[NS * NC * 2];
    memcpy(nan_traj, traj2, sizeof nan_traj);
    memcpy(nan_data, data, sizeof nan_data);
    nan_traj[7] = NAN;
    nan_data[NS * 2 + 9] = INFINITY;
    acq[0] = good_acq(2, 0);
    acq[0].traj = nan_traj;
    expect_bad("NaN in trajectory", "nantraj.h5", xml, acq, 1, LM_ERR_FORMAT, "sample 3: trajectory is not a finite");
    acq[0] = good_acq(2, 0);
    acq[0].data = nan_data;
    expect_bad("Inf in data", "infdata.h5", xml, acq, 1, LM_ERR_FORMAT, "sample 4 channel 1 is not a finite");
    /* A NaN in a discarded sample or a noise scan does not matter. */
    acq[0] = good_acq(2, 0);
    acq[0].data = nan_data;
    acq[0].head.flags = 1ull << (ISMRMRD_ACQ_IS_NOISE_MEASUREMENT - 1);
    acq[1] = good_acq(2, 1);
    CHECK(craft_write(lm_tmp_path("nannoise.h5"), xml, 0, acq, 2) == 0);
    CHECK_OK(lm_mrd_read(lm_tmp_path("nannoise.h5"), &r, &e), &e);
    CHECK(r.traj && r.traj->m == NS);
    lm_mrd_clear(&r);

    /* Nothing to reconstruct. */
    acq[0] = good_acq(2, 0);
    acq[0].head.flags = 1ull << (ISMRMRD_ACQ_IS_NOISE_MEASUREMENT - 1);
    expect_bad("only noise scans", "onlynoise.h5", xml, acq, 1, LM_ERR_FORMAT, "no imaging acquisitions");
    acq[0] = good_acq(2, 0);
    acq[0].head.number_of_samples = 0;
    acq[0].traj_len = acq[0].data_len = 0;
    expect_bad("only empty acquisitions", "onlyempty.h5", xml, acq, 1, LM_ERR_FORMAT, "1 empty");

    /* What Larmor does not reconstruct. */
    acq[0] = good_acq(2, 0);
    acq[1] = good_acq(2, 1);
    acq[1].head.idx.slice = 3;
    /* lm_mrd_read keeps its one-volume contract: multi-slice files are
     * lm_mrd_read_opts's (test_mrd_slices.c) */
    expect_bad("two slices", "slices.h5", xml, acq, 2, LM_ERR_UNSUPPORTED,
               "holds 2 slices (idx.slice 0..3): reconstruct them with larmor-cli recon");
    acq[1] = good_acq(2, 1);
    acq[1].head.idx.phase = 2;
    expect_bad("two cardiac phases", "phases.h5", xml, acq, 2, LM_ERR_UNSUPPORTED, "cardiac phases 0..2");
    acq[1] = good_acq(2, 1);
    acq[1].head.idx.set = 1;
    expect_bad("two sets", "sets.h5", xml, acq, 2, LM_ERR_UNSUPPORTED, "sets 0..1");
    acq[1] = good_acq(2, 1);
    acq[1].head.idx.kspace_encode_step_2 = 0;
    acq[1].head.idx.slice = 1;
    {
        char xmlz[4096];
        craft_xml(xmlz, sizeof xmlz, 32, 4, 220, "radial");
        expect_bad("two slices of a 3D encoding", "slab.h5", xmlz, acq, 2, LM_ERR_UNSUPPORTED, "multi-slab");
    }
    /* Another contrast is skipped now (the first is read), not refused. */
    acq[1] = good_acq(2, 1);
    acq[1].head.idx.contrast = 1;
    CHECK(craft_write(lm_tmp_path("contrasts.h5"), xml, 0, acq, 2) == 0);
    CHECK_OK(lm_mrd_read(lm_tmp_path("contrasts.h5"), &r, &e), &e);
    CHECK(r.traj && r.traj->m == NS && r.contrast == 0 && r.ncontrasts == 2);
    lm_mrd_clear(&r);
    acq[0] = good_acq(0, 0);
    acq[0].head.flags = 1ull << (ISMRMRD_ACQ_IS_REVERSE - 1);
    expect_bad("reversed Cartesian readout", "reverse.h5", xml, acq, 1, LM_ERR_UNSUPPORTED, "reversed");
    acq[0] = good_acq(0, 0);
    acq[0].head.idx.kspace_encode_step_2 = 2;
    expect_bad("partition index in a 2D matrix", "e2.h5", xml, acq, 1, LM_ERR_FORMAT, "z = 1");
    acq[0] = good_acq(3, 0);
    expect_bad("3-D trajectory in a 2D matrix", "kz2d.h5", xml, acq, 1, LM_ERR_FORMAT, "3-D trajectory");

    /* Acquisitions of another encoding space are skipped, not mixed in. */
    acq[0] = good_acq(2, 0);
    acq[1] = good_acq(2, 1);
    acq[1].head.encoding_space_ref = 1;
    acq[1].head.active_channels = 1; /* would clash if it were read */
    acq[1].data_len = NS * 2;
    CHECK(craft_write(lm_tmp_path("enc1.h5"), xml, 0, acq, 2) == 0);
    CHECK_OK(lm_mrd_read(lm_tmp_path("enc1.h5"), &r, &e), &e);
    CHECK(r.traj && r.traj->m == NS);
    lm_mrd_clear(&r);

    /* A Cartesian 3D file: kz from kspace_encode_step_2 about the centre. */
    char xml3[4096];
    craft_xml(xml3, sizeof xml3, 8, 4, 200, "cartesian");
    for (int i = 0; i < 4; i++) {
        acq[i] = good_acq(0, 3);
        acq[i].head.idx.kspace_encode_step_2 = (uint16_t)i;
    }
    CHECK(craft_write(lm_tmp_path("cart3d.h5"), xml3, 0, acq, 4) == 0);
    CHECK_OK(lm_mrd_read(lm_tmp_path("cart3d.h5"), &r, &e), &e);
    if (r.traj) {
        CHECK(r.cartesian == 1 && r.traj->ndim == 3 && r.traj->m == 4 * NS);
        /* centre_sample NS/2, no encodingLimits: centres n/2 = 4 and 2. */
        CHECK(r.traj->k[0] == -NS / 2 && r.traj->k[1] == 3 - 4 && r.traj->k[2] == 0 - 2);
        CHECK(r.traj->k[3 * (3 * NS) + 2] == 3 - 2);
    }
    lm_mrd_clear(&r);

    /* A units override in the environment is checked where a front end
     * reads it (lm_tuning_init_from_env), naming the variable. */
    setenv("LARMOR_MRD_TRAJ_UNITS", "furlongs", 1);
    lm_error te;
    lm_error_clear(&te);
    CHECK(lm_tuning_init_from_env(&te) == LM_ERR_INVALID);
    CHECK(lm_msg_ok("bad LARMOR_MRD_TRAJ_UNITS", &te, NULL, "LARMOR_MRD_TRAJ_UNITS='furlongs'"));
    unsetenv("LARMOR_MRD_TRAJ_UNITS");
    chmod(okp, 0644);
    free(okp);
    free(fixp);
    return lm_test_finish("test_mrd_bad");
#endif
}
