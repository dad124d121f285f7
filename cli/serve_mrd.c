/* larmor-cli serve --mrd: listens, accepts, and gives each connection its
 * own thread with socket timeouts; the connection itself (messages,
 * reconstructions, images; backpressure and bounds) is the library's
 * lm_mrd_conn_serve. A send that does not progress for send_timeout_s
 * drops the client; so does silence for idle_timeout_s. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4 */
#endif
#include "serve_mrd.h"

#include "larmor.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <libxml/parser.h>

#include "cli_util.h"

/* $XDG_CONFIG_HOME/larmor/presets, else $HOME/.config/larmor/presets. */
static void default_presets(char *buf, size_t len)
{
    const char *x = getenv("XDG_CONFIG_HOME"), *h = getenv("HOME");
    if (x && *x)
        snprintf(buf, len, "%s/larmor/presets", x);
    else
        snprintf(buf, len, "%s/.config/larmor/presets", h && *h ? h : "/");
}

void mrd_server_opts_init(mrd_server_opts *o)
{
    memset(o, 0, sizeof *o);
    default_presets(o->presets, sizeof o->presets);
    o->send_timeout_s = 10;
    o->idle_timeout_s = 300;
    o->max_buffer = (uint64_t)2 << 30;
    o->max_connections = 8;
}

#if !LM_HAVE_ISMRMRD

int cli_serve_mrd(const char *spec, const mrd_server_opts *o)
{
    (void)o;
    return cli_errorf("serve --mrd %s: built without libismrmrd, which the MRD protocol's headers come from", spec);
}

#else


static volatile sig_atomic_t g_stop;
static atomic_int g_active;
static atomic_ulong g_next_id;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

/* ---- the socket as a bounded reader and a writer -------------------------- */

typedef struct conn {
    int fd;
    unsigned long id;
    char peer[64];
    const mrd_server_opts *so;
    int read_timed_out, timed_out; /* a read, a send timed out */
} conn;

static int sock_read(void *user, void *buf, size_t n)
{
    conn *c = user;
    char *p = buf;
    size_t got = 0;
    while (got < n) {
        const ssize_t k = recv(c->fd, p + got, n - got, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            c->read_timed_out = 1;
        if (k <= 0)
            return got == 0 && k == 0 ? 1 : -1;
        got += (size_t)k;
    }
    return 0;
}

static int sock_write(conn *c, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        const ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            c->timed_out = 1;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static lm_code io_write(void *user, const void *buf, size_t n, lm_error *err)
{
    conn *c = user;
    if (sock_write(c, buf, n))
        return lm_fail(err, LM_ERR_IO, "%s", c->timed_out ? "the client took no image data for the send timeout: "
                                                             "dropped" : "the client went away");
    return LM_OK;
}

static void set_timeout(int fd, int opt, double s)
{
    struct timeval tv = {(time_t)s, (suseconds_t)((s - (double)(time_t)s) * 1e6)};
    (void)setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

static void *serve_connection(void *arg)
{
    conn *c = arg;
    const double t0 = cli_now();
    set_timeout(c->fd, SO_RCVTIMEO, c->so->idle_timeout_s);
    set_timeout(c->fd, SO_SNDTIMEO, c->so->send_timeout_s);
    lm_mrd_conn_cfg cfg;
    lm_mrd_conn_cfg_init(&cfg);
    cfg.presets = c->so->presets;
    cfg.max_buffer = c->so->max_buffer;
    cfg.threads = c->so->threads;
    const lm_mrd_conn_io io = {.reader = {sock_read, c}, .write = io_write, .write_user = c};
    lm_mrd_conn_stats st = {0};
    lm_error err = {0};
    const lm_code rc = lm_mrd_conn_serve(&cfg, &io, (const volatile int *)&g_stop, &st, &err);
    if (rc != LM_OK && c->read_timed_out)
        lm_fail(&err, LM_ERR_IO, "no data for %.0f s: dropped", c->so->idle_timeout_s);
    if (rc != LM_OK && !st.closed) {
        lm_mrd_conn_send_error(&io, err.msg);
        fprintf(stderr, "larmor-cli serve: MRD connection %lu (%s): error: %s\n", c->id, c->peer, err.msg);
    } else if (rc != LM_OK) {
        fprintf(stderr, "larmor-cli serve: MRD connection %lu (%s): the client left without CLOSE (%llu "
                "acquisitions, %u images)\n", c->id, c->peer, (unsigned long long)st.received, st.images);
    } else {
        fprintf(stderr, "larmor-cli serve: MRD connection %lu (%s): %llu acquisitions, %u images in %.3f s\n", c->id,
                c->peer, (unsigned long long)st.received, st.images, cli_now() - t0);
    }
    shutdown(c->fd, SHUT_RDWR);
    close(c->fd);
    free(c);
    atomic_fetch_sub(&g_active, 1);
    return NULL;
}

/* ---- listening ---------------------------------------------------------- */

/* "PORT" or "ADDR:PORT" (IPv4); 0, or -1 with the line printed. */
static int parse_spec(const char *spec, struct sockaddr_in *a)
{
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    char host[64] = "127.0.0.1";
    const char *colon = strrchr(spec, ':'), *port = spec;
    if (colon) {
        const size_t n = (size_t)(colon - spec);
        if (n == 0 || n >= sizeof host)
            return cli_errorf("serve --mrd %s: not [ADDR:]PORT", spec), -1;
        memcpy(host, spec, n);
        host[n] = '\0';
        port = colon + 1;
    }
    char *end;
    errno = 0;
    const long p = strtol(port, &end, 10);
    if (end == port || *end || errno || p < 0 || p > 65535)
        return cli_errorf("serve --mrd %s: the port must be 0..65535", spec), -1;
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
        return cli_errorf("serve --mrd %s: '%s' is not an IPv4 address", spec, host), -1;
    a->sin_port = htons((uint16_t)p);
    return 0;
}

static int write_port_file(const char *path, int port)
{
    char text[32];
    snprintf(text, sizeof text, "%d\n", port);
    lm_error err = {0};
    lm_atomic at = {0};
    if (lm_atomic_begin(&at, path, 1, &err) != LM_OK)
        return cli_error(&err);
    if (fputs(text, at.f) < 0) {
        lm_atomic_abort(&at);
        return cli_errorf("serve --mrd: %s: cannot write", path);
    }
    if (lm_atomic_commit(&at, &err) != LM_OK)
        return cli_error(&err);
    return 0;
}

int cli_serve_mrd(const char *spec, const mrd_server_opts *so)
{
    struct sockaddr_in a;
    if (parse_spec(spec, &a))
        return 1;
    const int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (ls < 0)
        return cli_errorf("serve --mrd %s: %s", spec, strerror(errno));
    const int one = 1;
    (void)setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 16)) {
        const int e = errno;
        close(ls);
        return cli_errorf("serve --mrd %s: %s", spec, strerror(e));
    }
    socklen_t al = sizeof a;
    getsockname(ls, (struct sockaddr *)&a, &al);
    char host[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a.sin_addr, host, sizeof host);
    const int port = ntohs(a.sin_port);
    if (so->port_file && write_port_file(so->port_file, port)) {
        close(ls);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: poll returns */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    xmlInitParser(); /* before the threads that parse headers and configurations */
    larmor_gpu_prewarm();
    fprintf(stderr, "larmor-cli serve: MRD server listening on %s:%d%s\n", host, port,
            a.sin_addr.s_addr == htonl(INADDR_LOOPBACK) ? "" : " (no authentication: keep this port on a private "
                                                              "network)");
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    while (!g_stop) {
        struct pollfd pf = {ls, POLLIN, 0};
        const int r = poll(&pf, 1, 500);
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0 || !(pf.revents & POLLIN))
            continue;
        struct sockaddr_in peer;
        socklen_t pl = sizeof peer;
        const int fd = accept4(ls, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->so = so;
        c->id = atomic_fetch_add(&g_next_id, 1) + 1;
        char ph[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &peer.sin_addr, ph, sizeof ph);
        snprintf(c->peer, sizeof c->peer, "%s:%d", ph, ntohs(peer.sin_port));
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (atomic_fetch_add(&g_active, 1) >= so->max_connections) {
            set_timeout(fd, SO_SNDTIMEO, 1);
            const lm_mrd_conn_io io = {.write = io_write, .write_user = c};
            lm_mrd_conn_send_error(&io, "the server is busy (all its connections are in use): try again later");
            fprintf(stderr, "larmor-cli serve: MRD connection %lu (%s) refused: busy\n", c->id, c->peer);
            close(fd);
            free(c);
            atomic_fetch_sub(&g_active, 1);
            continue;
        }
        pthread_t t;
        if (pthread_create(&t, &attr, serve_connection, c)) {
            close(fd);
            free(c);
            atomic_fetch_sub(&g_active, 1);
        }
    }
    pthread_attr_destroy(&attr);
    close(ls);
    /* connections in progress end with the process */
    larmor_gpu_prewarm_wait();
    fprintf(stderr, "larmor-cli serve: MRD server stopped\n");
    return 0;
}

#endif /* LM_HAVE_ISMRMRD */
