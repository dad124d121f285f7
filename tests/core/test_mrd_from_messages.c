/* A stream's acquisitions become the same data as the file holding them:
 * lm_mrd_from_messages on the messages of a multi-slice radial file
 * (shuffled acquisitions) and of a Cartesian file with noise scans equals
 * lm_mrd_read_opts on the file bit for bit (trajectory, k-space, noise,
 * slice order and geometry); lm_acq_from_mrd makes the same acquisition as
 * lm_acq_load; inconsistent acquisitions are refused with the file's
 * message. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_config.h"
#include "lm_acq.h"
#include "lm_io_ismrmrd.h"
#include "lm_test.h"
#include "mrd_test_util.h"

#if LM_HAVE_ISMRMRD
#include "lm_mrd_stream.h"
#include "mrd_craft.h"
#include "mrd_slices_craft.h"

/* The messages a client would send for acqs (they borrow the arrays). */
static const lm_mrd_msg **as_messages(const craft_acq *acqs, int n, lm_mrd_msg *store)
{
    const lm_mrd_msg **p = calloc((size_t)n, sizeof *p);
    for (int i = 0; i < n; i++) {
        memset(&store[i], 0, sizeof store[i]);
        store[i].id = LM_MRD_MSG_ACQUISITION;
        store[i].acq = acqs[i].head;
        store[i].traj = (float *)acqs[i].traj;
        store[i].data = (float *)acqs[i].data;
        p[i] = &store[i];
    }
    return p;
}

static int same_traj(const lm_traj *a, const lm_traj *b)
{
    return a && b && a->m == b->m && a->ndim == b->ndim && a->readout == b->readout &&
           !memcmp(a->k, b->k, (size_t)a->m * 3 * sizeof *a->k);
}

static int same_kdata(const lm_kdata *a, const lm_kdata *b)
{
    if (!a || !b)
        return a == b;
    return a->m == b->m && a->ncoils == b->ncoils && !memcmp(a->d, b->d, (size_t)a->m * a->ncoils * sizeof *a->d);
}

static void test_slices(void)
{
    static sl_file F;
    char xml[4096];
    craft_xml(xml, sizeof xml, SL_N, 1, 240, "radial");
    sl_make(&F, sl_z);
    const char *path = lm_tmp_path("multi.h5");
    CHECK(craft_write(path, xml, 0, F.acq, F.nacq) == 0);
    lm_mrd file, mem;
    lm_error e = {0};
    CHECK_OK(lm_mrd_read_opts(path, NULL, &file, &e), &e);
    static lm_mrd_msg store[SL_NACQ];
    const lm_mrd_msg **msgs = as_messages(F.acq, F.nacq, store);
    CHECK_OK(lm_mrd_from_messages("stream", xml, strlen(xml), msgs, (size_t)F.nacq, NULL, &mem, &e), &e);
    CHECK(file.nslices == SL_NSL && mem.nslices == SL_NSL);
    for (int s = 0; s < SL_NSL && mem.nslices == SL_NSL; s++) {
        CHECK(mem.slices[s].index == file.slices[s].index);
        CHECK(!memcmp(mem.slices[s].position, file.slices[s].position, sizeof mem.slices[s].position));
        CHECK(same_traj(mem.slices[s].traj, file.slices[s].traj));
        CHECK(same_kdata(mem.slices[s].kdata, file.slices[s].kdata));
    }
    CHECK(mem.geom.n[0] == file.geom.n[0] && mem.geom.fov_mm[0] == file.geom.fov_mm[0]);
    lm_mrd_clear(&mem);
    /* one slice's acquisitions alone: one volume, as a file of them */
    craft_acq one[SL_NSP];
    int n = 0;
    for (int i = 0; i < F.nacq; i++)
        if (F.acq[i].head.idx.slice == 2)
            one[n++] = F.acq[i];
    const lm_mrd_msg **m1 = as_messages(one, n, store);
    CHECK_OK(lm_mrd_from_messages("stream", xml, strlen(xml), m1, (size_t)n, NULL, &mem, &e), &e);
    CHECK(mem.nslices == 1 && mem.traj && mem.kdata);
    int z = -1;
    for (int s = 0; s < file.nslices; s++)
        if (file.slices[s].index == 2)
            z = s;
    CHECK(z >= 0 && same_traj(mem.traj, file.slices[z].traj) && same_kdata(mem.kdata, file.slices[z].kdata));
    lm_mrd_clear(&mem);
    /* a channel count that changes: the file reader's own message */
    F.acq[5].head.active_channels = 2;
    static float wide[SL_NS * 4];
    F.acq[5].data = wide;
    F.acq[5].data_len = SL_NS * 4;
    store[5].acq = F.acq[5].head;
    const lm_mrd_msg **m2 = as_messages(F.acq, F.nacq, store);
    CHECK(lm_mrd_from_messages("stream", xml, strlen(xml), m2, (size_t)F.nacq, NULL, &mem, &e) == LM_ERR_FORMAT);
    CHECK_MSG(strstr(e.msg, "stream: acquisition 5 has 2 channels"), "%s", e.msg);
    free(m2);
    free(m1);
    free(msgs);
    lm_mrd_clear(&file);
}

#define NX 8
#define NL 8
#define NC 2

static void test_cartesian_noise(void)
{
    char xml[4096];
    craft_xml(xml, sizeof xml, NX, 1, 200, "cartesian");
    static float data[NL][NX * NC * 2], noise[32 * NC * 2];
    craft_acq acq[NL + 1];
    memset(acq, 0, sizeof acq);
    for (int i = 0; i < 32 * NC * 2; i++)
        noise[i] = (float)sin(0.7 * i);
    ismrmrd_init_acquisition_header(&acq[0].head);
    acq[0].head.flags = 1ull << (ISMRMRD_ACQ_IS_NOISE_MEASUREMENT - 1);
    acq[0].head.number_of_samples = 32;
    acq[0].head.active_channels = acq[0].head.available_channels = NC;
    acq[0].data = noise;
    acq[0].data_len = 32 * NC * 2;
    for (int l = 0; l < NL; l++) {
        craft_acq *a = &acq[l + 1];
        ismrmrd_init_acquisition_header(&a->head);
        a->head.number_of_samples = NX;
        a->head.active_channels = a->head.available_channels = NC;
        a->head.center_sample = NX / 2;
        a->head.idx.kspace_encode_step_1 = (uint16_t)((l * 3) % NL); /* out of order */
        for (int i = 0; i < NX * NC * 2; i++)
            data[l][i] = (float)cos(0.1 * i + l);
        a->data = data[l];
        a->data_len = NX * NC * 2;
    }
    const char *path = lm_tmp_path("cart.h5");
    CHECK(craft_write(path, xml, 0, acq, NL + 1) == 0);
    lm_mrd file, mem;
    lm_error e = {0};
    CHECK_OK(lm_mrd_read_opts(path, NULL, &file, &e), &e);
    static lm_mrd_msg store[NL + 1];
    const lm_mrd_msg **msgs = as_messages(acq, NL + 1, store);
    CHECK_OK(lm_mrd_from_messages("stream", xml, strlen(xml), msgs, NL + 1, NULL, &mem, &e), &e);
    CHECK(file.cartesian && mem.cartesian && mem.nslices == 1);
    CHECK(same_traj(mem.traj, file.traj) && same_kdata(mem.kdata, file.kdata));
    CHECK(mem.noise && same_kdata(mem.noise, file.noise) && mem.noise->m == 32);
    CHECK(mem.missing_lines == file.missing_lines && mem.missing_lines == 0);
    /* the acquisition object: the same from both */
    lm_acq *a = NULL, *b = NULL;
    CHECK_OK(lm_acq_from_mrd(&mem, &a, &e), &e);
    lm_acq_paths p = {0};
    p.traj = (char *)path;
    CHECK_OK(lm_acq_load(&p, NULL, &b, &e), &e);
    if (a && b) {
        CHECK(a->cartesian && b->cartesian && a->is_mrd && a->fov_known);
        CHECK(same_traj(a->traj, b->traj) && same_kdata(a->kdata, b->kdata) && same_kdata(a->noise, b->noise));
        CHECK(a->geom.n[0] == b->geom.n[0] && a->geom.n[1] == b->geom.n[1] && a->accel == b->accel);
    }
    CHECK(mem.traj == NULL && mem.kdata == NULL); /* moved into a */
    lm_acq_free(a);
    lm_acq_free(b);
    free(msgs);
    lm_mrd_clear(&file);
    /* no imaging acquisitions: one line */
    CHECK(lm_mrd_from_messages("stream", xml, strlen(xml), NULL, 0, NULL, &mem,
                               &e) == LM_ERR_FORMAT);
}

int main(void)
{
    lm_tmp_make("core-mrd_from_messages");
    test_slices();
    test_cartesian_noise();
    return lm_test_finish("core-mrd_from_messages");
}

#else
int main(void)
{
    LM_TEST_SKIP("built without libismrmrd");
}
#endif
