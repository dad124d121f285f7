/* The MRD stream message reader: messages are read from the input until it
 * ends or one is refused (one line); each message read is written back and
 * must read back to the same bytes. Small caps (64 KiB) keep inputs that
 * announce large bodies cheap, as a server's caps would. */
#include "fuzz_common.h"
#include "lm_mrd_stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lm_mrd_limits lim;
    lm_mrd_limits_init(&lim);
    lim.max_text = lim.max_acquisition = lim.max_image = lim.max_waveform = 1 << 16;
    lm_mrd_membuf mb = {data, size, 0};
    lm_mrd_reader r = {lm_mrd_membuf_read, &mb};
    for (int k = 0; k < 64; k++) {
        lm_mrd_msg m;
        lm_error err;
        lm_error_clear(&err);
        int closed = 0;
        lm_code rc = lm_mrd_msg_read(&r, &lim, &m, &closed, &err);
        FUZZ_CHECK_MSG(rc, err);
        if (rc != LM_OK)
            break;
        if (m.id != LM_MRD_MSG_WAVEFORM) {
            char *b = NULL;
            size_t n = 0;
            if (lm_mrd_msg_write(&m, &b, &n, &err) != LM_OK)
                abort(); /* what was read can be written */
            lm_mrd_membuf mb2 = {(const unsigned char *)b, n, 0};
            lm_mrd_reader r2 = {lm_mrd_membuf_read, &mb2};
            lm_mrd_msg back;
            if (lm_mrd_msg_read(&r2, &lim, &back, NULL, &err) != LM_OK || mb2.pos != n || back.id != m.id ||
                back.text_len != m.text_len || (m.text_len && memcmp(back.text, m.text, m.text_len)) ||
                back.pixel_bytes != m.pixel_bytes)
                abort();
            lm_mrd_msg_clear(&back);
            free(b);
        }
        lm_mrd_msg_clear(&m);
    }
    return 0;
}
