/* One MRD streaming connection, served: the state machine a front end runs
 * on a connection it accepted (docs/mrd-server.md). CONFIG_FILE or
 * CONFIG_TEXT, then HEADER, then ACQUISITIONs; a slice is reconstructed
 * when its last acquisition (ISMRMRD_ACQ_LAST_IN_SLICE) arrives, a
 * repetition at ISMRMRD_ACQ_LAST_IN_REPETITION, whatever is left at
 * ISMRMRD_ACQ_LAST_IN_MEASUREMENT or CLOSE; each becomes an IMAGE; CLOSE is
 * answered with CLOSE.
 *
 * The front end owns the transport (sockets, timeouts, threads): it passes
 * a reader and a writer. The connection reads a message, acts on it and
 * only then reads the next, so a client that sends fast is held back by
 * the transport itself (backpressure); what it holds is bounded by
 * max_buffer bytes of acquisitions and one image being sent.
 *
 * Connections may run at once, one per thread. CPU reconstructions run
 * side by side, each with cfg->threads threads; reconstructions on a GPU
 * variant take one process-wide lock in turn (the GPU context and its
 * memory are shared). The thread count is fixed by the configuration, not
 * by the load, so that an image never depends on the other connections. The library prints nothing and never exits. */
#ifndef LM_MRD_SERVER_H
#define LM_MRD_SERVER_H

#include "lm_config.h"

#include <stddef.h>
#include <stdint.h>

#include "lm_error.h"
#include "lm_mrd_stream.h"

#if LM_HAVE_ISMRMRD

typedef struct lm_mrd_conn_cfg {
    const char *presets;   /* the folder CONFIG_FILE names are looked up in */
    uint64_t max_buffer;   /* bytes of acquisitions held at once */
    int threads;           /* CPU threads per reconstruction (0: the process's default, all
                              cores); a server expecting N connections at once gives cores/N */
} lm_mrd_conn_cfg;

/* Sets max_buffer 2 GiB, threads 0, presets NULL (CONFIG_FILE refused). */
void lm_mrd_conn_cfg_init(lm_mrd_conn_cfg *c);

typedef struct lm_mrd_conn_io {
    lm_mrd_reader reader;
    /* Writes n bytes to the client: LM_OK, or the failure in err. */
    lm_code (*write)(void *user, const void *buf, size_t n, lm_error *err);
    void *write_user;
    /* Optional: called with each image just sent (the workbench shows it). */
    void (*image_sent)(void *user, const lm_mrd_msg *image);
    void *image_user;
    /* Optional: called with the HEADER once it parsed (m->text) and with
     * each ACQUISITION as it arrives, before it is acted on (the workbench
     * keeps the stream as a data set); m is valid during the call only. */
    void (*received)(void *user, const lm_mrd_msg *m);
    void *received_user;
} lm_mrd_conn_io;

typedef struct lm_mrd_conn_stats {
    uint64_t received;  /* acquisitions */
    unsigned images;    /* sent */
    int closed;         /* the client closed the stream (no ERROR can reach it) */
    int stopped;        /* ended by *stop, between messages (LM_OK, no CLOSE) */
} lm_mrd_conn_stats;

/* Serves one connection until the client's CLOSE (answered, LM_OK), the
 * stream's end, a failure, or *stop turning non-zero between messages
 * (may be NULL). On failure err holds the one line; the caller sends it
 * (lm_mrd_conn_send_error) unless stats->closed. */
lm_code lm_mrd_conn_serve(const lm_mrd_conn_cfg *cfg, const lm_mrd_conn_io *io, const volatile int *stop,
                          lm_mrd_conn_stats *stats, lm_error *err);

/* Sends ERROR with one line (Gadgetron's: uint64 length, text); a failure
 * to send is ignored (the client is going away). */
void lm_mrd_conn_send_error(const lm_mrd_conn_io *io, const char *line);

/* Reconstructions running now in this process (all connections). */
int lm_mrd_conn_running(void);

#endif /* LM_HAVE_ISMRMRD */
#endif
