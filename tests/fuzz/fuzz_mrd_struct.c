/* Structured ISMRMRD fuzzing: the input describes an MRD file (header
 * choice or raw XML, up to 8 acquisitions with fuzzed header fields, stored
 * lengths that may disagree with them, and fuzzed sample values), which is
 * written with HDF5 (tests/core/mrd_craft.h) and read back. This reaches
 * Larmor's own checks far more often than raw bytes, which HDF5 mostly
 * rejects at the superblock. */
#include "fuzz_common.h"
#include "lm_io_ismrmrd.h"
#include "mrd_craft.h"

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static unsigned take(reader *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}

static float take_float(reader *r)
{
    uint32_t u = 0;
    for (int i = 0; i < 4; i++)
        u = u << 8 | take(r);
    float f;
    memcpy(&f, &u, sizeof f);
    /* Mostly small numbers, sometimes anything (NaN, Inf, huge). */
    if ((u & 0xff) < 0xf0)
        f = (float)((int)(u >> 8) % 2001 - 1000) / 64.0f;
    return f;
}

#define MAXA 8
#define MAXS 40
#define MAXC 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = {data, size};
    unsigned opt = take(&r);
    char xml[4096];
    static const int presets[4][2] = {{16, 1}, {8, 4}, {32, 1}, {4, 2}};
    const int *ps = presets[(opt >> 3) & 3];
    craft_xml(xml, sizeof xml, ps[0], ps[1], 200, (opt & 0x80) ? "cartesian" : "radial");
    if (opt & 0x20) { /* raw XML from the input */
        size_t len = take(&r);
        len = len << 4 | (take(&r) & 15);
        if (len > sizeof xml - 1)
            len = sizeof xml - 1;
        if (len > r.n)
            len = r.n;
        memcpy(xml, r.p, len);
        xml[len] = '\0';
        r.p += len;
        r.n -= len;
    }
    long nacq = (long)(take(&r) % (MAXA + 1));
    if (opt & 4)
        nacq = -1; /* no /dataset/data */

    static float traj[MAXA][MAXS * 4 + 8], dat[MAXA][MAXS * MAXC * 2 + 8];
    craft_acq acq[MAXA];
    static const int tdims[5] = {0, 2, 3, 1, 4};
    for (long i = 0; i < nacq; i++) {
        craft_acq *a = &acq[i];
        memset(a, 0, sizeof *a);
        ismrmrd_init_acquisition_header(&a->head);
        ISMRMRD_AcquisitionHeader *h = &a->head;
        int tdim = tdims[take(&r) % 5];
        int ns = (int)(take(&r) % (MAXS + 1));
        int nc = (int)(take(&r) % (MAXC + 1));
        h->trajectory_dimensions = (uint16_t)tdim;
        h->number_of_samples = (uint16_t)ns;
        h->active_channels = h->available_channels = (uint16_t)nc;
        h->discard_pre = (uint16_t)(take(&r) % 8);
        h->discard_post = (uint16_t)(take(&r) % 8);
        h->center_sample = (uint16_t)(take(&r) % (MAXS + 1));
        unsigned fl = take(&r);
        if (fl & 1)
            ismrmrd_set_flag(&h->flags, ISMRMRD_ACQ_IS_NOISE_MEASUREMENT);
        if (fl & 2)
            ismrmrd_set_flag(&h->flags, ISMRMRD_ACQ_IS_NAVIGATION_DATA);
        if (fl & 4)
            ismrmrd_set_flag(&h->flags, ISMRMRD_ACQ_IS_REVERSE);
        if (fl & 8)
            h->encoding_space_ref = 1;
        if (fl & 16)
            h->idx.slice = 1;
        if (fl & 32)
            h->idx.repetition = 3;
        if (fl & 64)
            h->number_of_samples = (uint16_t)(65535 - ns); /* header lies */
        if (fl & 128)
            h->active_channels = 65535;
        h->idx.kspace_encode_step_1 = (uint16_t)take(&r);
        h->idx.kspace_encode_step_2 = (uint16_t)(take(&r) % 8);
        int dt = (int)(take(&r) % 7) - 3, dd = (int)(take(&r) % 7) - 3;
        size_t tl = (size_t)ns * (size_t)tdim, dl = (size_t)ns * (size_t)nc * 2;
        a->traj_len = (size_t)((long)tl + dt < 0 ? 0 : (long)tl + dt);
        a->data_len = (size_t)((long)dl + dd < 0 ? 0 : (long)dl + dd);
        for (size_t j = 0; j < a->traj_len; j++)
            traj[i][j] = take_float(&r);
        for (size_t j = 0; j < a->data_len; j++)
            dat[i][j] = take_float(&r);
        a->traj = traj[i];
        a->data = dat[i];
    }
    const char *p = fuzz_path("s.h5");
    if (craft_write(p, (opt & 2) ? NULL : xml, opt & 1, acq, nacq) != 0)
        return 0;
    lm_error err;
    lm_error_clear(&err);
    lm_mrd m;
    lm_code rc = lm_mrd_read(p, &m, &err);
    FUZZ_CHECK_MSG(rc, err);
    if (rc == LM_OK) {
        if (m.traj->m != m.kdata->m || m.kdata->ncoils < 1)
            abort();
        for (int64_t i = 0; i < 3 * m.traj->m; i++)
            if (!isfinite(m.traj->k[i]))
                abort(); /* non-finite values are refused */
        (void)crealf(m.kdata->d[m.kdata->m * m.kdata->ncoils - 1]);
    }
    lm_mrd_clear(&m);
    if (opt & 0x40) {
        char *text = NULL;
        rc = lm_mrd_info(p, &text, &err);
        FUZZ_CHECK_MSG(rc, err);
        free(text);
    }
    return 0;
}
