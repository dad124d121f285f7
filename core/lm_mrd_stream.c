/* MRD stream messages: every announced length is checked against its cap
 * before anything is allocated, so a peer cannot make the reader allocate
 * or wait for more than the caps allow. */
#include "lm_mrd_stream.h"

#if LM_HAVE_ISMRMRD

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(ISMRMRD_AcquisitionHeader) == 340, "MRD acquisition header is 340 bytes on the wire");
_Static_assert(sizeof(ISMRMRD_ImageHeader) == 198, "MRD image header is 198 bytes on the wire");
_Static_assert(sizeof(ISMRMRD_WaveformHeader) == 40, "MRD waveform header is 40 bytes on the wire");
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "MRD streams are little endian; so must the host be");

void lm_mrd_limits_init(lm_mrd_limits *l)
{
    l->max_text = (uint64_t)16 << 20;
    l->max_acquisition = (uint64_t)256 << 20;
    l->max_image = (uint64_t)1 << 30;
    l->max_waveform = (uint64_t)16 << 20;
}

size_t lm_mrd_pixel_bytes(uint16_t t)
{
    switch (t) {
    case ISMRMRD_USHORT:
    case ISMRMRD_SHORT: return 2;
    case ISMRMRD_UINT:
    case ISMRMRD_INT:
    case ISMRMRD_FLOAT: return 4;
    case ISMRMRD_DOUBLE:
    case ISMRMRD_CXFLOAT: return 8;
    case ISMRMRD_CXDOUBLE: return 16;
    default: return 0;
    }
}

void lm_mrd_msg_clear(lm_mrd_msg *m)
{
    free(m->text);
    free(m->traj);
    free(m->data);
    free(m->pixels);
    memset(m, 0, sizeof *m);
}

int lm_mrd_membuf_read(void *user, void *buf, size_t n)
{
    lm_mrd_membuf *b = user;
    if (n == 0)
        return 0;
    if (b->pos >= b->len)
        return 1;
    if (b->len - b->pos < n) {
        b->pos = b->len;
        return -1;
    }
    memcpy(buf, b->p + b->pos, n);
    b->pos += n;
    return 0;
}

static const char *msg_name(uint16_t id)
{
    switch (id) {
    case LM_MRD_MSG_CONFIG_FILE: return "CONFIG_FILE";
    case LM_MRD_MSG_CONFIG_TEXT: return "CONFIG_TEXT";
    case LM_MRD_MSG_HEADER: return "HEADER";
    case LM_MRD_MSG_CLOSE: return "CLOSE";
    case LM_MRD_MSG_TEXT: return "TEXT";
    case LM_MRD_MSG_ERROR: return "ERROR";
    case LM_MRD_MSG_ACQUISITION: return "ACQUISITION";
    case LM_MRD_MSG_IMAGE: return "IMAGE";
    case LM_MRD_MSG_WAVEFORM: return "WAVEFORM";
    default: return "message";
    }
}

/* n bytes of the body of message id; an end here is a truncation. */
static lm_code body(const lm_mrd_reader *r, uint16_t id, void *buf, size_t n, const char *what, lm_error *err)
{
    if (n == 0)
        return LM_OK;
    if (r->read(r->user, buf, n) != 0)
        return lm_fail(err, LM_ERR_IO, "MRD stream: %s %s truncated (the connection ended part way)",
                       msg_name(id), what);
    return LM_OK;
}

/* A text body of len bytes, NUL-terminated, after its length was checked. */
static lm_code read_text(const lm_mrd_reader *r, uint16_t id, uint64_t len, uint64_t cap, lm_mrd_msg *m,
                         lm_error *err)
{
    if (len > cap)
        return lm_fail(err, LM_ERR_FORMAT, "MRD stream: %s announces %llu bytes, more than the %llu allowed",
                       msg_name(id), (unsigned long long)len, (unsigned long long)cap);
    m->text = malloc((size_t)len + 1);
    if (!m->text)
        return lm_fail(err, LM_ERR_NOMEM, "MRD stream: out of memory for a %s of %llu bytes", msg_name(id),
                       (unsigned long long)len);
    m->text_len = (size_t)len;
    m->text[len] = '\0';
    return body(r, id, m->text, (size_t)len, "text", err);
}

static lm_code read_acquisition(const lm_mrd_reader *r, const lm_mrd_limits *lim, lm_mrd_msg *m, lm_error *err)
{
    lm_code c = body(r, m->id, &m->acq, sizeof m->acq, "header", err);
    if (c != LM_OK)
        return c;
    const ISMRMRD_AcquisitionHeader *h = &m->acq;
    /* u16 x u16 fields: no overflow in 64 bits */
    const uint64_t nt = (uint64_t)h->number_of_samples * h->trajectory_dimensions;
    const uint64_t nd = (uint64_t)h->number_of_samples * h->active_channels * 2u;
    const uint64_t bytes = 4u * (nt + nd);
    if (bytes > lim->max_acquisition)
        return lm_fail(err, LM_ERR_FORMAT, "MRD stream: ACQUISITION of %u samples x %u channels (trajectory "
                       "dimensions %u) is %llu bytes, more than the %llu allowed", h->number_of_samples,
                       h->active_channels, h->trajectory_dimensions, (unsigned long long)bytes,
                       (unsigned long long)lim->max_acquisition);
    if (nt && !(m->traj = malloc((size_t)nt * sizeof(float))))
        return lm_fail(err, LM_ERR_NOMEM, "MRD stream: out of memory for an ACQUISITION");
    if (nd && !(m->data = malloc((size_t)nd * sizeof(float))))
        return lm_fail(err, LM_ERR_NOMEM, "MRD stream: out of memory for an ACQUISITION");
    c = body(r, m->id, m->traj, (size_t)nt * sizeof(float), "trajectory", err);
    if (c == LM_OK)
        c = body(r, m->id, m->data, (size_t)nd * sizeof(float), "data", err);
    return c;
}

/* matrix x channels x pixel size (0 when the type is unknown). */
static uint64_t image_bytes(const ISMRMRD_ImageHeader *h)
{
    const size_t px = lm_mrd_pixel_bytes(h->data_type);
    /* three u16 factors (< 2^48), then channels (< 2^16) and a size <= 16:
     * saturated where the product could pass 2^64 */
    uint64_t n = (uint64_t)h->matrix_size[0] * h->matrix_size[1] * h->matrix_size[2];
    if (n > (UINT64_MAX / 16) / 65536)
        return UINT64_MAX;
    return n * h->channels * px;
}

static lm_code read_image(const lm_mrd_reader *r, const lm_mrd_limits *lim, lm_mrd_msg *m, lm_error *err)
{
    lm_code c = body(r, m->id, &m->image, sizeof m->image, "header", err);
    if (c != LM_OK)
        return c;
    const ISMRMRD_ImageHeader *h = &m->image;
    if (!lm_mrd_pixel_bytes(h->data_type))
        return lm_fail(err, LM_ERR_FORMAT, "MRD stream: IMAGE with unknown data_type %u", h->data_type);
    const uint64_t bytes = image_bytes(h);
    if (bytes > lim->max_image)
        return lm_fail(err, LM_ERR_FORMAT, "MRD stream: IMAGE of %ux%ux%u x %u channels is %llu bytes, more than "
                       "the %llu allowed", h->matrix_size[0], h->matrix_size[1], h->matrix_size[2], h->channels,
                       (unsigned long long)bytes, (unsigned long long)lim->max_image);
    uint64_t alen;
    c = body(r, m->id, &alen, sizeof alen, "attribute length", err);
    if (c == LM_OK)
        c = read_text(r, m->id, alen, lim->max_text, m, err);
    if (c != LM_OK)
        return c;
    if (bytes && !(m->pixels = malloc((size_t)bytes)))
        return lm_fail(err, LM_ERR_NOMEM, "MRD stream: out of memory for an IMAGE of %llu bytes",
                       (unsigned long long)bytes);
    m->pixel_bytes = (size_t)bytes;
    return body(r, m->id, m->pixels, (size_t)bytes, "pixels", err);
}

/* Waveform samples are read in pieces and dropped. */
static lm_code read_waveform(const lm_mrd_reader *r, const lm_mrd_limits *lim, lm_mrd_msg *m, lm_error *err)
{
    lm_code c = body(r, m->id, &m->waveform, sizeof m->waveform, "header", err);
    if (c != LM_OK)
        return c;
    uint64_t left = 4u * (uint64_t)m->waveform.channels * m->waveform.number_of_samples;
    if (left > lim->max_waveform)
        return lm_fail(err, LM_ERR_FORMAT, "MRD stream: WAVEFORM of %llu bytes, more than the %llu allowed",
                       (unsigned long long)left, (unsigned long long)lim->max_waveform);
    char scratch[4096];
    while (left > 0 && c == LM_OK) {
        const size_t n = left < sizeof scratch ? (size_t)left : sizeof scratch;
        c = body(r, m->id, scratch, n, "samples", err);
        left -= n;
    }
    return c;
}

lm_code lm_mrd_msg_read(const lm_mrd_reader *r, const lm_mrd_limits *lim, lm_mrd_msg *out, int *closed,
                        lm_error *err)
{
    memset(out, 0, sizeof *out);
    if (closed)
        *closed = 0;
    lm_mrd_limits def;
    if (!lim) {
        lm_mrd_limits_init(&def);
        lim = &def;
    }
    uint16_t id;
    const int got = r->read(r->user, &id, sizeof id);
    if (got != 0) {
        if (got == 1 && closed)
            *closed = 1;
        return lm_fail(err, LM_ERR_IO, got == 1 ? "MRD stream: the connection ended" :
                       "MRD stream: the connection ended part way through a message id");
    }
    out->id = id;
    lm_code c;
    uint32_t len32;
    uint64_t len64;
    switch (id) {
    case LM_MRD_MSG_CONFIG_FILE: {
        char name[LM_MRD_CONFIG_FILE_BYTES];
        c = body(r, id, name, sizeof name, "name", err);
        if (c == LM_OK) {
            const size_t n = strnlen(name, sizeof name);
            out->text = malloc(n + 1);
            if (!out->text)
                c = lm_fail(err, LM_ERR_NOMEM, "MRD stream: out of memory");
            else {
                memcpy(out->text, name, n);
                out->text[n] = '\0';
                out->text_len = n;
            }
        }
        break;
    }
    case LM_MRD_MSG_CONFIG_TEXT:
    case LM_MRD_MSG_HEADER:
    case LM_MRD_MSG_TEXT:
        c = body(r, id, &len32, sizeof len32, "length", err);
        if (c == LM_OK)
            c = read_text(r, id, len32, lim->max_text, out, err);
        break;
    case LM_MRD_MSG_ERROR:
        c = body(r, id, &len64, sizeof len64, "length", err);
        if (c == LM_OK)
            c = read_text(r, id, len64, lim->max_text, out, err);
        break;
    case LM_MRD_MSG_CLOSE:
        c = LM_OK;
        break;
    case LM_MRD_MSG_ACQUISITION:
        c = read_acquisition(r, lim, out, err);
        break;
    case LM_MRD_MSG_IMAGE:
        c = read_image(r, lim, out, err);
        break;
    case LM_MRD_MSG_WAVEFORM:
        c = read_waveform(r, lim, out, err);
        break;
    default:
        c = lm_fail(err, LM_ERR_FORMAT, "MRD stream: unknown message id %u", id);
        break;
    }
    if (c != LM_OK)
        lm_mrd_msg_clear(out);
    return c;
}

/* Appends n bytes at *at (space reserved by the caller). */
static void put(char **at, const void *p, size_t n)
{
    if (n)
        memcpy(*at, p, n);
    *at += n;
}

lm_code lm_mrd_msg_write(const lm_mrd_msg *m, char **buf, size_t *len, lm_error *err)
{
    *buf = NULL;
    *len = 0;
    const uint16_t id = m->id;
    size_t n = sizeof id, tl = m->text ? m->text_len : 0;
    size_t nt = 0, nd = 0;
    switch (id) {
    case LM_MRD_MSG_CONFIG_FILE:
        if (tl >= LM_MRD_CONFIG_FILE_BYTES)
            return lm_fail(err, LM_ERR_INVALID, "MRD stream: a CONFIG_FILE name of %zu bytes (at most %d)", tl,
                           LM_MRD_CONFIG_FILE_BYTES - 1);
        n += LM_MRD_CONFIG_FILE_BYTES;
        break;
    case LM_MRD_MSG_CONFIG_TEXT:
    case LM_MRD_MSG_HEADER:
    case LM_MRD_MSG_TEXT:
        if (tl > UINT32_MAX)
            return lm_fail(err, LM_ERR_INVALID, "MRD stream: %s text of %zu bytes is too long", msg_name(id), tl);
        n += 4 + tl;
        break;
    case LM_MRD_MSG_ERROR:
        n += 8 + tl;
        break;
    case LM_MRD_MSG_CLOSE:
        break;
    case LM_MRD_MSG_ACQUISITION:
        nt = (size_t)m->acq.number_of_samples * m->acq.trajectory_dimensions * sizeof(float);
        nd = (size_t)m->acq.number_of_samples * m->acq.active_channels * 2 * sizeof(float);
        if ((nt && !m->traj) || (nd && !m->data))
            return lm_fail(err, LM_ERR_INVALID, "MRD stream: an ACQUISITION without its samples");
        n += sizeof m->acq + nt + nd;
        break;
    case LM_MRD_MSG_IMAGE:
        if (!lm_mrd_pixel_bytes(m->image.data_type) || image_bytes(&m->image) != m->pixel_bytes ||
            (m->pixel_bytes && !m->pixels))
            return lm_fail(err, LM_ERR_INVALID, "MRD stream: an IMAGE whose pixels do not match its header");
        n += sizeof m->image + 8 + tl + m->pixel_bytes;
        break;
    default:
        return lm_fail(err, LM_ERR_INVALID, "MRD stream: message id %u is not written", id);
    }
    char *b = malloc(n), *at = b;
    if (!b)
        return lm_fail(err, LM_ERR_NOMEM, "MRD stream: out of memory for a %s of %zu bytes", msg_name(id), n);
    put(&at, &id, sizeof id);
    const uint32_t l32 = (uint32_t)tl;
    const uint64_t l64 = tl;
    switch (id) {
    case LM_MRD_MSG_CONFIG_FILE:
        memset(at, 0, LM_MRD_CONFIG_FILE_BYTES);
        put(&at, m->text, tl);
        at += LM_MRD_CONFIG_FILE_BYTES - tl;
        break;
    case LM_MRD_MSG_CONFIG_TEXT:
    case LM_MRD_MSG_HEADER:
    case LM_MRD_MSG_TEXT:
        put(&at, &l32, sizeof l32);
        put(&at, m->text, tl);
        break;
    case LM_MRD_MSG_ERROR:
        put(&at, &l64, sizeof l64);
        put(&at, m->text, tl);
        break;
    case LM_MRD_MSG_ACQUISITION:
        put(&at, &m->acq, sizeof m->acq);
        put(&at, m->traj, nt);
        put(&at, m->data, nd);
        break;
    case LM_MRD_MSG_IMAGE:
        put(&at, &m->image, sizeof m->image);
        put(&at, &l64, sizeof l64);
        put(&at, m->text, tl);
        put(&at, m->pixels, m->pixel_bytes);
        break;
    default:
        break;
    }
    *buf = b;
    *len = n;
    return LM_OK;
}

#else
typedef int lm_mrd_stream_unavailable; /* ISO C wants a non-empty unit */
#endif /* LM_HAVE_ISMRMRD */
