/* larmor-cli serve --mrd [ADDR:]PORT: the MRD streaming server that
 * Gadgetron's external node and MRD clients talk to (docs/mrd-server.md). */
#ifndef LM_SERVE_MRD_H
#define LM_SERVE_MRD_H

#include <stdint.h>

typedef struct mrd_server_opts {
    char presets[4096];      /* the preset folder CONFIG_FILE names are looked up in */
    double send_timeout_s;   /* a client that takes no image bytes this long is dropped */
    double idle_timeout_s;   /* a client that sends nothing this long is dropped */
    uint64_t max_buffer;     /* bytes of acquisitions one connection may hold */
    int max_connections;     /* connections served at once; more get ERROR */
    int threads;             /* CPU threads per reconstruction (0: all cores) */
    const char *port_file;   /* written with the port listened on (NULL: none) */
} mrd_server_opts;

void mrd_server_opts_init(mrd_server_opts *o);

/* Listens on spec ("PORT", or "ADDR:PORT"; port 0: one the OS picks) until
 * SIGINT or SIGTERM; returns the exit status (1 with a one-line error when
 * it cannot listen). */
int cli_serve_mrd(const char *spec, const mrd_server_opts *o);

#endif
