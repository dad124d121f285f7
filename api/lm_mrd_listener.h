/* An MRD server's listening side, shared by `larmor-cli serve --mrd` and the
 * workbench's File -> Listen for data (docs/mrd-server.md): a TCP socket on
 * "PORT" or "ADDR:PORT" (IPv4, 127.0.0.1 without an address), an accept
 * thread, and one thread per connection running lm_mrd_conn_serve with
 * receive and send timeouts; connections beyond max_connections get ERROR
 * ("busy").
 *
 * Everything the front end hears comes through the callbacks in the
 * configuration, called on the accept thread (log lines, busy refusals) or
 * on a connection's thread (everything else), never on the caller's: a GUI
 * hands them to its main thread itself. Callbacks of one connection come in
 * order; different connections' may interleave. The library prints nothing
 * and never exits. */
#ifndef LM_MRD_LISTENER_H
#define LM_MRD_LISTENER_H

#include "lm_config.h"

#include <stdint.h>

#include "lm_error.h"
#include "lm_mrd_server.h"

#if LM_HAVE_ISMRMRD

typedef struct lm_mrd_listener lm_mrd_listener;

/* How a connection ended (the `ended` callback). */
typedef struct lm_mrd_listener_end {
    unsigned long id;        /* 1, 2, ... in the order accepted */
    const char *peer;        /* "ADDR:PORT" of the client */
    lm_code rc;              /* LM_OK: served to CLOSE; LM_ERR_CANCELLED: the listener stopped */
    const char *error;       /* the one line sent as ERROR (or why the client was lost); NULL when LM_OK */
    lm_mrd_conn_stats stats; /* acquisitions received, images sent, closed by the client */
    double seconds;          /* accepted to ended */
} lm_mrd_listener_end;

typedef struct lm_mrd_listener_cfg {
    lm_mrd_conn_cfg conn;    /* per connection: presets, max_buffer, threads */
    double send_timeout_s;   /* a client that takes no image bytes this long is dropped */
    double idle_timeout_s;   /* a client that sends nothing this long is dropped */
    int max_connections;     /* served at once; more get ERROR */
    /* All optional (NULL: not called); user is passed to each. */
    void *user;
    /* One line without a newline, as `larmor-cli serve` prints it after its
     * "larmor-cli serve: " prefix: a connection ended or refused. */
    void (*log)(void *user, const char *line);
    void (*started)(void *user, unsigned long id, const char *peer);
    /* The HEADER (m->text, once) and each ACQUISITION, as received
     * (lm_mrd_conn_io.received); m is valid during the call only. */
    void (*received)(void *user, unsigned long id, const lm_mrd_msg *m);
    /* Each IMAGE just sent (lm_mrd_conn_io.image_sent). */
    void (*image_sent)(void *user, unsigned long id, const lm_mrd_msg *image);
    /* The connection is over (after its log line). */
    void (*ended)(void *user, const lm_mrd_listener_end *end);
    /* The listener is gone: called once, after every other callback, on
     * the thread that let go of it last (lm_mrd_listener_stop's caller, or
     * the last connection's thread after an ENDING or DETACH stop). What
     * user points to may be freed from here on. Not called when start fails. */
    void (*released)(void *user);
} lm_mrd_listener_cfg;

/* Timeouts 10 s (send) and 300 s (idle), 8 connections, the connection
 * defaults (lm_mrd_conn_cfg_init), no callbacks. */
void lm_mrd_listener_cfg_init(lm_mrd_listener_cfg *c);

/* Parses spec ("PORT" or "ADDR:PORT", port 0..65535, IPv4 address) into
 * host (at least 16 bytes) and port; LM_ERR_INVALID with the line
 * ("SPEC: the port must be 0..65535") otherwise. */
lm_code lm_mrd_listener_parse(const char *spec, char *host, size_t host_len, int *port, lm_error *err);

/* Listens on spec (port 0: one the OS picks) and starts accepting in a
 * thread of its own. cfg is copied (conn.presets is copied too). On
 * failure *out is NULL and err holds "SPEC: why". */
lm_code lm_mrd_listener_start(const char *spec, const lm_mrd_listener_cfg *cfg, lm_mrd_listener **out,
                              lm_error *err);

/* The port and address listened on (the port the OS chose for 0). */
int lm_mrd_listener_port(const lm_mrd_listener *l);
const char *lm_mrd_listener_host(const lm_mrd_listener *l);
/* 1 when the address is 127.0.0.1 (the protocol has no authentication:
 * another address exposes the server to that network). */
int lm_mrd_listener_is_loopback(const lm_mrd_listener *l);
/* Connections being served now. */
int lm_mrd_listener_active(const lm_mrd_listener *l);

enum {
    /* Stop accepting, end the connections (their sockets are shut down, so
     * reads and sends return at once; a reconstruction in progress finishes
     * first) and wait until every callback has returned; then free l. */
    LM_MRD_LISTENER_WAIT = 0,
    /* Stop accepting and return: connections go on to their end and may
     * still call back; l is freed by the last of them (a process about to
     * exit). */
    LM_MRD_LISTENER_DETACH = 1,
    /* As WAIT without the waiting: the connections are ended (sockets shut
     * down) and return on their own, calling back until `released` (a
     * GUI, whose thread must not wait for a reconstruction). */
    LM_MRD_LISTENER_ENDING = 2
};
/* Stops l (NULL: nothing) as how says; l is not to be used after. Not to
 * be called from a callback. */
void lm_mrd_listener_stop(lm_mrd_listener *l, int how);

#endif /* LM_HAVE_ISMRMRD */
#endif
