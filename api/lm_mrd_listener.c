/* The MRD server's listening side (lm_mrd_listener.h): socket, accept
 * thread, a detached thread per connection. The listener is reference
 * counted (itself plus one per connection thread) so that a detached stop
 * never frees what a connection still reads; a waiting stop shuts the
 * connections' sockets down and waits for the count of threads to reach 0. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4, pipe2 */
#endif
#include "lm_mrd_listener.h"

#if LM_HAVE_ISMRMRD

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <libxml/parser.h>

typedef struct conn conn;

struct lm_mrd_listener {
    lm_mrd_listener_cfg cfg;
    char *presets;             /* cfg.conn.presets' copy */
    int fd;                    /* listening socket */
    int wake[2];               /* self-pipe: stop wakes the accept thread's poll */
    char host[16];
    int port;
    pthread_t accept_thread;
    pthread_mutex_t lock;      /* refs, active, conns, next_id */
    pthread_cond_t idle;       /* signalled when a connection thread ends */
    int refs;                  /* the owner (until stop) + connection threads */
    int active;                /* connections being served */
    unsigned long next_id;
    conn *conns;               /* being served (to shut down on a waiting stop) */
    volatile int stopping;     /* read by lm_mrd_conn_serve between messages */
};

struct conn {
    lm_mrd_listener *l;
    int fd;
    unsigned long id;
    char peer[64];
    int read_timed_out, timed_out; /* a read, a send timed out */
    conn *next;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void lm_mrd_listener_cfg_init(lm_mrd_listener_cfg *c)
{
    memset(c, 0, sizeof *c);
    lm_mrd_conn_cfg_init(&c->conn);
    c->send_timeout_s = 10;
    c->idle_timeout_s = 300;
    c->max_connections = 8;
}

static void logf_(lm_mrd_listener *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(lm_mrd_listener *l, const char *fmt, ...)
{
    if (!l->cfg.log)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    l->cfg.log(l->cfg.user, line);
}

/* The last reference is gone: released, then freed. */
static void destroy(lm_mrd_listener *l)
{
    if (l->cfg.released)
        l->cfg.released(l->cfg.user);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->idle);
    free(l->presets);
    free(l);
}

/* ---- the socket as a bounded reader and a writer -------------------------- */

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

static lm_code io_write(void *user, const void *buf, size_t n, lm_error *err)
{
    conn *c = user;
    const char *p = buf;
    while (n > 0) {
        const ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            c->timed_out = 1;
        if (k <= 0)
            return lm_fail(err, LM_ERR_IO, "%s", c->timed_out ? "the client took no image data for the send "
                                                                 "timeout: dropped" : "the client went away");
        p += k;
        n -= (size_t)k;
    }
    return LM_OK;
}

static void on_received(void *user, const lm_mrd_msg *m)
{
    conn *c = user;
    c->l->cfg.received(c->l->cfg.user, c->id, m);
}

static void on_image(void *user, const lm_mrd_msg *m)
{
    conn *c = user;
    c->l->cfg.image_sent(c->l->cfg.user, c->id, m);
}

static void set_timeout(int fd, int opt, double s)
{
    struct timeval tv = {(time_t)s, (suseconds_t)((s - (double)(time_t)s) * 1e6)};
    (void)setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

static void conn_unlink(lm_mrd_listener *l, conn *c)
{
    for (conn **p = &l->conns; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            return;
        }
}

static void *serve_connection(void *arg)
{
    conn *c = arg;
    lm_mrd_listener *l = c->l;
    const double t0 = now_s();
    set_timeout(c->fd, SO_RCVTIMEO, l->cfg.idle_timeout_s);
    set_timeout(c->fd, SO_SNDTIMEO, l->cfg.send_timeout_s);
    if (l->cfg.started)
        l->cfg.started(l->cfg.user, c->id, c->peer);
    const lm_mrd_conn_io io = {.reader = {sock_read, c}, .write = io_write, .write_user = c,
                               .image_sent = l->cfg.image_sent ? on_image : NULL, .image_user = c,
                               .received = l->cfg.received ? on_received : NULL, .received_user = c};
    lm_mrd_listener_end e = {.id = c->id, .peer = c->peer};
    lm_error err = {0};
    e.rc = lm_mrd_conn_serve(&l->cfg.conn, &io, &l->stopping, &e.stats, &err);
    /* ended by the stop: between messages, or a read or send cut by its shutdown */
    const int stopped = e.stats.stopped || (e.rc != LM_OK && l->stopping);
    if (stopped)
        e.rc = lm_fail(&err, LM_ERR_CANCELLED, "the server stopped");
    else if (e.rc != LM_OK && c->read_timed_out)
        lm_fail(&err, LM_ERR_IO, "no data for %.0f s: dropped", l->cfg.idle_timeout_s);
    e.seconds = now_s() - t0;
    if (e.rc != LM_OK) {
        e.error = err.msg;
        if (!e.stats.closed)
            lm_mrd_conn_send_error(&io, err.msg);
    }
    if (e.rc != LM_OK && (!e.stats.closed || stopped))
        logf_(l, "MRD connection %lu (%s): error: %s", c->id, c->peer, err.msg);
    else if (e.rc != LM_OK)
        logf_(l, "MRD connection %lu (%s): the client left without CLOSE (%llu acquisitions, %u images)", c->id,
              c->peer, (unsigned long long)e.stats.received, e.stats.images);
    else
        logf_(l, "MRD connection %lu (%s): %llu acquisitions, %u images in %.3f s", c->id, c->peer,
              (unsigned long long)e.stats.received, e.stats.images, e.seconds);
    if (l->cfg.ended)
        l->cfg.ended(l->cfg.user, &e);
    /* the thread's reference goes under the lock, so that a waiting stop
     * knows when no thread touches l any more */
    pthread_mutex_lock(&l->lock);
    conn_unlink(l, c);
    shutdown(c->fd, SHUT_RDWR);
    close(c->fd);
    l->active--;
    const int left = --l->refs;
    pthread_cond_broadcast(&l->idle);
    pthread_mutex_unlock(&l->lock);
    free(c);
    if (!left)
        destroy(l);
    return NULL;
}

/* ---- listening ---------------------------------------------------------- */

lm_code lm_mrd_listener_parse(const char *spec, char *host, size_t host_len, int *port, lm_error *err)
{
    if (!spec || host_len < 16)
        return lm_fail(err, LM_ERR_INVALID, "no address to listen on");
    char h[64] = "127.0.0.1";
    const char *colon = strrchr(spec, ':'), *ps = spec;
    if (colon) {
        const size_t n = (size_t)(colon - spec);
        if (n == 0 || n >= sizeof h)
            return lm_fail(err, LM_ERR_INVALID, "%s: not [ADDR:]PORT", spec);
        memcpy(h, spec, n);
        h[n] = '\0';
        ps = colon + 1;
    }
    char *end;
    errno = 0;
    const long p = strtol(ps, &end, 10);
    if (end == ps || *end || errno || p < 0 || p > 65535)
        return lm_fail(err, LM_ERR_INVALID, "%s: the port must be 0..65535", spec);
    struct in_addr a;
    if (inet_pton(AF_INET, h, &a) != 1)
        return lm_fail(err, LM_ERR_INVALID, "%s: '%s' is not an IPv4 address", spec, h);
    inet_ntop(AF_INET, &a, host, (socklen_t)host_len);
    *port = (int)p;
    return LM_OK;
}

/* A connection accepted: refused when busy, else given its thread. */
static void take(lm_mrd_listener *l, int fd, const struct sockaddr_in *peer, pthread_attr_t *attr)
{
    conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return;
    }
    c->fd = fd;
    c->l = l;
    char ph[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &peer->sin_addr, ph, sizeof ph);
    snprintf(c->peer, sizeof c->peer, "%s:%d", ph, ntohs(peer->sin_port));
    const int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_mutex_lock(&l->lock);
    c->id = ++l->next_id;
    const int busy = l->active >= l->cfg.max_connections;
    if (!busy) {
        l->active++;
        l->refs++;
        c->next = l->conns;
        l->conns = c;
    }
    pthread_mutex_unlock(&l->lock);
    if (busy) {
        set_timeout(fd, SO_SNDTIMEO, 1);
        const lm_mrd_conn_io io = {.write = io_write, .write_user = c};
        lm_mrd_conn_send_error(&io, "the server is busy (all its connections are in use): try again later");
        logf_(l, "MRD connection %lu (%s) refused: busy", c->id, c->peer);
        close(fd);
        free(c);
        return;
    }
    pthread_t t;
    if (pthread_create(&t, attr, serve_connection, c)) {
        pthread_mutex_lock(&l->lock);
        conn_unlink(l, c);
        l->active--;
        l->refs--; /* the owner's reference is still held: never the last */
        pthread_cond_broadcast(&l->idle);
        pthread_mutex_unlock(&l->lock);
        close(fd);
        free(c);
    }
}

static void *accept_loop(void *arg)
{
    lm_mrd_listener *l = arg;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    while (!l->stopping) {
        struct pollfd pf[2] = {{l->fd, POLLIN, 0}, {l->wake[0], POLLIN, 0}};
        const int r = poll(pf, 2, -1);
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0 || l->stopping || !(pf[0].revents & POLLIN))
            continue;
        struct sockaddr_in peer;
        socklen_t pl = sizeof peer;
        const int fd = accept4(l->fd, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC);
        if (fd >= 0)
            take(l, fd, &peer, &attr);
    }
    pthread_attr_destroy(&attr);
    return NULL;
}

lm_code lm_mrd_listener_start(const char *spec, const lm_mrd_listener_cfg *cfg, lm_mrd_listener **out,
                              lm_error *err)
{
    *out = NULL;
    char host[16];
    int port;
    if (lm_mrd_listener_parse(spec, host, sizeof host, &port, err) != LM_OK)
        return err->code;
    if (cfg->max_connections < 1 || !(cfg->send_timeout_s > 0) || !(cfg->idle_timeout_s > 0))
        return lm_fail(err, LM_ERR_INVALID, "%s: max_connections and the timeouts must be positive", spec);
    lm_mrd_listener *l = calloc(1, sizeof *l);
    if (!l)
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", spec);
    l->cfg = *cfg;
    l->fd = l->wake[0] = l->wake[1] = -1;
    if (cfg->conn.presets && !(l->presets = strdup(cfg->conn.presets))) {
        free(l);
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", spec);
    }
    l->cfg.conn.presets = l->presets;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &a.sin_addr);
    lm_code rc = LM_OK;
    const int one = 1;
    if (pipe2(l->wake, O_CLOEXEC) || (l->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        rc = lm_fail(err, LM_ERR_IO, "%s: %s", spec, strerror(errno));
    if (rc == LM_OK) {
        (void)setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(l->fd, (struct sockaddr *)&a, sizeof a) || listen(l->fd, 16))
            rc = lm_fail(err, LM_ERR_IO, "%s: %s", spec, strerror(errno));
    }
    if (rc == LM_OK) {
        socklen_t al = sizeof a;
        getsockname(l->fd, (struct sockaddr *)&a, &al);
        inet_ntop(AF_INET, &a.sin_addr, l->host, sizeof l->host);
        l->port = ntohs(a.sin_port);
        xmlInitParser(); /* before the threads that parse headers and configurations */
        pthread_mutex_init(&l->lock, NULL);
        pthread_cond_init(&l->idle, NULL);
        l->refs = 1;
        if (pthread_create(&l->accept_thread, NULL, accept_loop, l)) {
            pthread_mutex_destroy(&l->lock);
            pthread_cond_destroy(&l->idle);
            rc = lm_fail(err, LM_ERR_IO, "%s: cannot start the accepting thread", spec);
        }
    }
    if (rc != LM_OK) {
        for (int i = 0; i < 2; i++)
            if (l->wake[i] >= 0)
                close(l->wake[i]);
        if (l->fd >= 0)
            close(l->fd);
        free(l->presets);
        free(l);
        return rc;
    }
    *out = l;
    return LM_OK;
}

int lm_mrd_listener_port(const lm_mrd_listener *l)
{
    return l->port;
}

const char *lm_mrd_listener_host(const lm_mrd_listener *l)
{
    return l->host;
}

int lm_mrd_listener_is_loopback(const lm_mrd_listener *l)
{
    return strcmp(l->host, "127.0.0.1") == 0;
}

int lm_mrd_listener_active(const lm_mrd_listener *l)
{
    lm_mrd_listener *m = (lm_mrd_listener *)l; /* the lock, not the state, changes */
    pthread_mutex_lock(&m->lock);
    const int n = m->active;
    pthread_mutex_unlock(&m->lock);
    return n;
}

void lm_mrd_listener_stop(lm_mrd_listener *l, int how)
{
    if (!l)
        return;
    l->stopping = 1;
    const char b = 1;
    while (write(l->wake[1], &b, 1) < 0 && errno == EINTR)
        ;
    pthread_join(l->accept_thread, NULL); /* no connection is added after this */
    close(l->fd);
    close(l->wake[0]);
    close(l->wake[1]);
    if (how != LM_MRD_LISTENER_DETACH) {
        pthread_mutex_lock(&l->lock);
        for (conn *c = l->conns; c; c = c->next)
            shutdown(c->fd, SHUT_RDWR); /* blocked reads and sends return */
        while (how == LM_MRD_LISTENER_WAIT && l->refs > 1)
            pthread_cond_wait(&l->idle, &l->lock);
        pthread_mutex_unlock(&l->lock);
    }
    pthread_mutex_lock(&l->lock);
    const int left = --l->refs;
    pthread_mutex_unlock(&l->lock);
    if (!left)
        destroy(l);
}

#else
typedef int lm_mrd_listener_unavailable; /* ISO C wants a non-empty unit */
#endif /* LM_HAVE_ISMRMRD */
