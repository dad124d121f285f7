/* The MRD streaming protocol's messages (ISMRMRD's mrd_messages and
 * Gadgetron's control ids), read from and written to bytes; no sockets.
 * Every message starts with a little-endian uint16 id; there is no overall
 * length, so every length a message announces is checked against the caps
 * before a byte of its body is allocated or read (docs/mrd-server.md).
 *
 *   lm_mrd_reader r = {my_read, ctx};
 *   lm_mrd_msg m;   lm_mrd_msg_read(&r, NULL, &m, &closed, &err);
 *                   ... m.id, m.text, m.acq, m.traj, m.data ...
 *                   lm_mrd_msg_clear(&m);
 *   char *b; size_t n;  lm_mrd_msg_write(&m, &b, &n, &err);  (then send b)
 *
 * Headers are libismrmrd's packed structs as they lie on the wire (340 and
 * 198 bytes); the host must be little endian, as MRD's is. */
#ifndef LM_MRD_STREAM_H
#define LM_MRD_STREAM_H

#include "lm_config.h"

#include <stddef.h>
#include <stdint.h>

#include "lm_error.h"
#include "lm_io_ismrmrd.h"

#if LM_HAVE_ISMRMRD
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/waveform.h>

enum {
    LM_MRD_MSG_CONFIG_FILE = 1,  /* char[1024]: a configuration's name */
    LM_MRD_MSG_CONFIG_TEXT = 2,  /* uint32 length, text */
    LM_MRD_MSG_HEADER = 3,       /* uint32 length, the MRD XML header */
    LM_MRD_MSG_CLOSE = 4,        /* nothing */
    LM_MRD_MSG_TEXT = 5,         /* uint32 length, text */
    LM_MRD_MSG_ERROR = 8,        /* Gadgetron: uint64 length, text */
    LM_MRD_MSG_ACQUISITION = 1008,
    LM_MRD_MSG_IMAGE = 1022,
    LM_MRD_MSG_WAVEFORM = 1026
};

#define LM_MRD_CONFIG_FILE_BYTES 1024

/* Reads exactly n bytes into buf: 0; the stream ended before the first
 * byte: 1; an error or an end part way: -1. */
typedef struct lm_mrd_reader {
    int (*read)(void *user, void *buf, size_t n);
    void *user;
} lm_mrd_reader;

/* Caps on what one message may announce (bytes). */
typedef struct lm_mrd_limits {
    uint64_t max_text;        /* CONFIG_TEXT, HEADER, TEXT, ERROR, an image's attributes */
    uint64_t max_acquisition; /* one acquisition's trajectory + data */
    uint64_t max_image;       /* one image's pixels */
    uint64_t max_waveform;    /* one waveform's samples */
} lm_mrd_limits;

/* 16 MiB of text, 256 MiB per acquisition, 1 GiB per image, 16 MiB per waveform. */
void lm_mrd_limits_init(lm_mrd_limits *l);

typedef struct lm_mrd_msg {
    uint16_t id;
    /* CONFIG_FILE (the name up to its first NUL), CONFIG_TEXT, HEADER, TEXT,
     * ERROR, IMAGE (its attribute XML): len bytes plus a NUL (malloc'd). */
    char *text;
    size_t text_len;
    ISMRMRD_AcquisitionHeader acq; /* ACQUISITION */
    float *traj;  /* number_of_samples x trajectory_dimensions (NULL when none) */
    float *data;  /* active_channels x number_of_samples complex (re, im), channel-major */
    ISMRMRD_ImageHeader image;     /* IMAGE */
    void *pixels;                  /* matrix x channels of data_type */
    size_t pixel_bytes;
    ISMRMRD_WaveformHeader waveform; /* WAVEFORM (its samples are read and dropped) */
} lm_mrd_msg;

/* Bytes of one pixel of an MRD data_type (ISMRMRD_USHORT .. ISMRMRD_CXDOUBLE); 0 unknown. */
size_t lm_mrd_pixel_bytes(uint16_t data_type);

/* Reads one message. lim NULL: lm_mrd_limits_init's. *closed (may be NULL)
 * is 1 when the stream ended cleanly before a message began (then
 * LM_ERR_IO). An unknown id, a length over its cap (refused before reading
 * on) or an end part way: LM_ERR_FORMAT / LM_ERR_IO with one line. out is
 * cleared on failure. */
lm_code lm_mrd_msg_read(const lm_mrd_reader *r, const lm_mrd_limits *lim, lm_mrd_msg *out, int *closed,
                        lm_error *err);
void lm_mrd_msg_clear(lm_mrd_msg *m);

/* The message's bytes (malloc'd into *buf, *len). Text messages take
 * m->text / m->text_len; ACQUISITION its header's sizes from m->traj and
 * m->data; IMAGE attributes from m->text and pixel_bytes from m->pixels,
 * which must match the header (matrix x channels x data_type); WAVEFORM
 * is not written. */
lm_code lm_mrd_msg_write(const lm_mrd_msg *m, char **buf, size_t *len, lm_error *err);

/* A stream's acquisitions (n ACQUISITION messages, in arrival order) and
 * its XML header as one lm_mrd, by the same passes and checks as
 * lm_mrd_read_opts reads a file's (noise scans kept for prewhitening,
 * stored trajectories of any type, Cartesian ones from the counters, the
 * repetition and contrast opts picks, multi-slice 2D as slices). what
 * names the source in messages. Thread-safe. */
lm_code lm_mrd_from_messages(const char *what, const char *xml, size_t xml_len, const lm_mrd_msg *const *acqs,
                             size_t n, const lm_mrd_opts *opts, lm_mrd *out, lm_error *err);

/* Writes a received stream as an MRD file: the header XML as received and
 * acqs[0..n) (ACQUISITION messages) as received, headers, trajectories and
 * data unchanged, in their order. Atomic (a temporary file renamed over
 * path when complete). Reading it back gives the acquisitions a server
 * would have read from the stream. */
lm_code lm_mrd_write_stream(const char *path, const char *xml, const lm_mrd_msg *const *acqs, size_t n,
                            lm_error *err);

/* Reader over a memory buffer (tests, fuzzing): user points to this. */
typedef struct lm_mrd_membuf {
    const unsigned char *p;
    size_t len, pos;
} lm_mrd_membuf;
int lm_mrd_membuf_read(void *user, void *buf, size_t n);

#endif /* LM_HAVE_ISMRMRD */
#endif
