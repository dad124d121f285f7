/* larmor-cli serve --mrd: the library's listener (lm_mrd_listener.h:
 * sockets, a thread per connection, timeouts, lm_mrd_conn_serve) with the
 * command's part around it: signals, the port file and the lines printed. */
#include "serve_mrd.h"

#include "larmor.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void log_line(void *user, const char *line)
{
    (void)user;
    fprintf(stderr, "larmor-cli serve: %s\n", line);
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
    lm_mrd_listener_cfg cfg;
    lm_mrd_listener_cfg_init(&cfg);
    cfg.conn.presets = so->presets;
    cfg.conn.max_buffer = so->max_buffer;
    cfg.conn.threads = so->threads;
    cfg.send_timeout_s = so->send_timeout_s;
    cfg.idle_timeout_s = so->idle_timeout_s;
    cfg.max_connections = so->max_connections;
    cfg.log = log_line;
    /* SIGINT and SIGTERM blocked in every thread the listener starts (they
     * inherit the mask): only sigsuspend below takes them. */
    sigset_t stop_set, old;
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGINT);
    sigaddset(&stop_set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_set, &old);
    lm_mrd_listener *l = NULL;
    lm_error err = {0};
    if (lm_mrd_listener_start(spec, &cfg, &l, &err) != LM_OK) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return cli_errorf("serve --mrd %s", err.msg);
    }
    const int port = lm_mrd_listener_port(l);
    if (so->port_file && write_port_file(so->port_file, port)) {
        lm_mrd_listener_stop(l, LM_MRD_LISTENER_WAIT);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    larmor_gpu_prewarm();
    fprintf(stderr, "larmor-cli serve: MRD server listening on %s:%d%s\n", lm_mrd_listener_host(l), port,
            lm_mrd_listener_is_loopback(l) ? "" : " (no authentication: keep this port on a private network)");
    sigset_t wait_set = old;
    sigdelset(&wait_set, SIGINT);
    sigdelset(&wait_set, SIGTERM);
    while (!g_stop)
        sigsuspend(&wait_set);
    /* connections in progress end with the process */
    lm_mrd_listener_stop(l, LM_MRD_LISTENER_DETACH);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    larmor_gpu_prewarm_wait();
    fprintf(stderr, "larmor-cli serve: MRD server stopped\n");
    return 0;
}

#endif /* LM_HAVE_ISMRMRD */
