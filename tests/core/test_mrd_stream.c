/* The MRD stream codec: every message written and read back equal; byte
 * layouts checked against the protocol's offsets; announced lengths over
 * the caps (a 4 GB one included) refused before any body is read; unknown
 * ids and truncations refused with one line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_mrd_stream.h"
#include "lm_test.h"

#if LM_HAVE_ISMRMRD

/* Writes m, reads it back from the bytes (all consumed). */
static int roundtrip(const lm_mrd_msg *m, lm_mrd_msg *back, char **bytes, size_t *n)
{
    lm_error err = {0};
    if (lm_mrd_msg_write(m, bytes, n, &err) != LM_OK) {
        fprintf(stderr, "write: %s\n", err.msg);
        return 0;
    }
    lm_mrd_membuf mb = {(const unsigned char *)*bytes, *n, 0};
    lm_mrd_reader r = {lm_mrd_membuf_read, &mb};
    int closed = -1;
    if (lm_mrd_msg_read(&r, NULL, back, &closed, &err) != LM_OK) {
        fprintf(stderr, "read: %s\n", err.msg);
        return 0;
    }
    return mb.pos == *n && closed == 0;
}

/* Reads from raw bytes; returns the code and the message in err. */
static lm_code read_raw(const void *p, size_t n, const lm_mrd_limits *lim, lm_error *err, int *closed)
{
    lm_mrd_membuf mb = {p, n, 0};
    lm_mrd_reader r = {lm_mrd_membuf_read, &mb};
    lm_mrd_msg m;
    lm_code c = lm_mrd_msg_read(&r, lim, &m, closed, err);
    lm_mrd_msg_clear(&m);
    return c;
}

static void test_text_messages(void)
{
    const uint16_t ids[] = {LM_MRD_MSG_CONFIG_TEXT, LM_MRD_MSG_HEADER, LM_MRD_MSG_TEXT, LM_MRD_MSG_ERROR};
    const size_t lenbytes[] = {4, 4, 4, 8};
    for (size_t i = 0; i < 4; i++) {
        char txt[] = "--method cg --lambda 0.01";
        lm_mrd_msg m = {.id = ids[i], .text = txt, .text_len = strlen(txt)};
        lm_mrd_msg b;
        char *bytes;
        size_t n;
        CHECK(roundtrip(&m, &b, &bytes, &n));
        CHECK(n == 2 + lenbytes[i] + strlen(txt));
        uint16_t id;
        memcpy(&id, bytes, 2);
        CHECK(id == ids[i]);
        CHECK(b.id == ids[i] && b.text_len == strlen(txt) && strcmp(b.text, txt) == 0);
        free(bytes);
        lm_mrd_msg_clear(&b);
    }
    /* CONFIG_FILE: 1024 bytes, the name up to its NUL */
    char name[] = "default";
    lm_mrd_msg m = {.id = LM_MRD_MSG_CONFIG_FILE, .text = name, .text_len = strlen(name)};
    lm_mrd_msg b;
    char *bytes;
    size_t n;
    CHECK(roundtrip(&m, &b, &bytes, &n));
    CHECK(n == 2 + 1024);
    CHECK(strcmp(b.text, "default") == 0);
    free(bytes);
    lm_mrd_msg_clear(&b);
    /* CLOSE: the id alone */
    lm_mrd_msg cl = {.id = LM_MRD_MSG_CLOSE};
    CHECK(roundtrip(&cl, &b, &bytes, &n));
    CHECK(n == 2 && b.id == LM_MRD_MSG_CLOSE);
    free(bytes);
    lm_mrd_msg_clear(&b);
}

static void test_acquisition(void)
{
    lm_mrd_msg m = {.id = LM_MRD_MSG_ACQUISITION};
    ismrmrd_init_acquisition_header(&m.acq);
    m.acq.number_of_samples = 5;
    m.acq.active_channels = 3;
    m.acq.available_channels = 3;
    m.acq.trajectory_dimensions = 2;
    m.acq.idx.slice = 7;
    m.acq.position[1] = 12.5f;
    float traj[10], data[30];
    for (int i = 0; i < 10; i++)
        traj[i] = 0.1f * (float)i - 0.4f;
    for (int i = 0; i < 30; i++)
        data[i] = (float)i * 0.5f - 3.0f;
    m.traj = traj;
    m.data = data;
    lm_mrd_msg b;
    char *bytes;
    size_t n;
    CHECK(roundtrip(&m, &b, &bytes, &n));
    CHECK(n == 2 + 340 + 10 * 4 + 30 * 4);
    /* the MRD acquisition header's byte offsets (2-byte packing):
     * number_of_samples 34, active_channels 38, trajectory_dimensions 176,
     * idx.slice 248 (idx at 242: e1, e2, average, slice) */
    uint16_t v;
    memcpy(&v, bytes + 2 + 34, 2);
    CHECK(v == 5);
    memcpy(&v, bytes + 2 + 38, 2);
    CHECK(v == 3);
    memcpy(&v, bytes + 2 + 176, 2);
    CHECK(v == 2);
    memcpy(&v, bytes + 2 + 248, 2);
    CHECK(v == 7);
    CHECK(memcmp(&b.acq, &m.acq, sizeof m.acq) == 0);
    CHECK(b.traj && memcmp(b.traj, traj, sizeof traj) == 0);
    CHECK(b.data && memcmp(b.data, data, sizeof data) == 0);
    /* truncated at every byte: an error naming the truncation, never a crash */
    int bad = 0;
    for (size_t cut = 1; cut < n; cut++) {
        lm_error err = {0};
        int closed = 0;
        if (read_raw(bytes, cut, NULL, &err, &closed) == LM_OK || closed || !strstr(err.msg, "ended part way"))
            bad++;
    }
    CHECK_MSG(bad == 0, "%d truncations not refused", bad);
    free(bytes);
    lm_mrd_msg_clear(&b);
}

static void test_image(void)
{
    lm_mrd_msg m = {.id = LM_MRD_MSG_IMAGE};
    ismrmrd_init_image_header(&m.image);
    m.image.data_type = ISMRMRD_FLOAT;
    m.image.matrix_size[0] = 4;
    m.image.matrix_size[1] = 3;
    m.image.matrix_size[2] = 1;
    m.image.channels = 1;
    m.image.image_index = 9;
    float px[12];
    for (int i = 0; i < 12; i++)
        px[i] = (float)i;
    m.pixels = px;
    m.pixel_bytes = sizeof px;
    char attr[] = "<ismrmrdMeta/>";
    m.text = attr;
    m.text_len = strlen(attr);
    lm_mrd_msg b;
    char *bytes;
    size_t n;
    CHECK(roundtrip(&m, &b, &bytes, &n));
    CHECK(n == 2 + 198 + 8 + strlen(attr) + sizeof px);
    uint64_t alen;
    memcpy(&alen, bytes + 2 + 198, 8);
    CHECK(alen == strlen(attr));
    CHECK(b.image.image_index == 9 && b.pixel_bytes == sizeof px && memcmp(b.pixels, px, sizeof px) == 0);
    CHECK(strcmp(b.text, attr) == 0);
    free(bytes);
    lm_mrd_msg_clear(&b);
    /* pixels that do not match the header are not written */
    m.pixel_bytes = 8;
    lm_error err = {0};
    CHECK(lm_mrd_msg_write(&m, &bytes, &n, &err) == LM_ERR_INVALID);
}

static void test_refusals(void)
{
    lm_error err = {0};
    int closed = 0;
    /* an empty stream is a clean end */
    CHECK(read_raw("", 0, NULL, &err, &closed) == LM_ERR_IO && closed == 1);
    /* unknown id */
    unsigned char unk[2] = {0x39, 0x05}; /* 1337 */
    CHECK(read_raw(unk, 2, NULL, &err, &closed) == LM_ERR_FORMAT && strstr(err.msg, "unknown message id 1337"));
    /* a 4 GB HEADER: refused from its length alone (no body follows) */
    unsigned char big[6] = {3, 0, 0xff, 0xff, 0xff, 0xff};
    CHECK(read_raw(big, sizeof big, NULL, &err, &closed) == LM_ERR_FORMAT && strstr(err.msg, "4294967295 bytes"));
    /* a 2^63-byte ERROR */
    unsigned char e8[10] = {8, 0, 0, 0, 0, 0, 0, 0, 0, 0x80};
    CHECK(read_raw(e8, sizeof e8, NULL, &err, &closed) == LM_ERR_FORMAT);
    /* an acquisition of 65535 samples x 65535 channels: over the cap at the header */
    unsigned char acq[2 + 340] = {0xf0, 0x03};
    ISMRMRD_AcquisitionHeader h;
    ismrmrd_init_acquisition_header(&h);
    h.number_of_samples = 65535;
    h.active_channels = 65535;
    memcpy(acq + 2, &h, sizeof h);
    CHECK(read_raw(acq, sizeof acq, NULL, &err, &closed) == LM_ERR_FORMAT && strstr(err.msg, "more than"));
    /* the caps are the caller's: a 100-byte text cap refuses 101 */
    lm_mrd_limits lim;
    lm_mrd_limits_init(&lim);
    lim.max_text = 100;
    unsigned char t101[6 + 101] = {2, 0, 101, 0, 0, 0};
    CHECK(read_raw(t101, sizeof t101, &lim, &err, &closed) == LM_ERR_FORMAT);
    unsigned char t100[6 + 100] = {2, 0, 100, 0, 0, 0};
    CHECK(read_raw(t100, sizeof t100, &lim, &err, &closed) == LM_OK);
    /* an image of an unknown data type */
    unsigned char img[2 + 198] = {0xfe, 0x03};
    ISMRMRD_ImageHeader ih;
    ismrmrd_init_image_header(&ih);
    ih.data_type = 99;
    memcpy(img + 2, &ih, sizeof ih);
    CHECK(read_raw(img, sizeof img, NULL, &err, &closed) == LM_ERR_FORMAT && strstr(err.msg, "data_type 99"));
    /* a waveform's samples are skipped: the next message follows */
    unsigned char wf[2 + 40 + 2 * 3 * 4 + 2] = {0x02, 0x04};
    ISMRMRD_WaveformHeader wh;
    memset(&wh, 0, sizeof wh);
    wh.channels = 2;
    wh.number_of_samples = 3;
    memcpy(wf + 2, &wh, sizeof wh);
    wf[sizeof wf - 2] = LM_MRD_MSG_CLOSE;
    lm_mrd_membuf mb = {wf, sizeof wf, 0};
    lm_mrd_reader r = {lm_mrd_membuf_read, &mb};
    lm_mrd_msg m;
    CHECK(lm_mrd_msg_read(&r, NULL, &m, &closed, &err) == LM_OK && m.id == LM_MRD_MSG_WAVEFORM);
    lm_mrd_msg_clear(&m);
    CHECK(lm_mrd_msg_read(&r, NULL, &m, &closed, &err) == LM_OK && m.id == LM_MRD_MSG_CLOSE);
    lm_mrd_msg_clear(&m);
}

int main(void)
{
    test_text_messages();
    test_acquisition();
    test_image();
    test_refusals();
    return lm_test_finish("core-mrd_stream");
}

#else
int main(void)
{
    LM_TEST_SKIP("built without libismrmrd");
}
#endif
