/* larmor-cli serve: one long-lived process that runs other larmor-cli
 * commands, so that a script's many commands share one warm GPU context
 * (the CUDA driver's start and teardown cost about 0.33 s per process on
 * the H100 test machine, more than a B128 reconstruction) and the memory
 * pools the library keeps.
 *
 *   larmor-cli serve [--socket PATH] [--idle-exit SECONDS]
 *   LARMOR_SERVER=PATH larmor-cli recon ...      (any command but serve)
 *
 * The client connects to the UNIX socket and hands over its standard
 * input, output and error (SCM_RIGHTS), its working folder and its
 * arguments; the server runs the command with those descriptors in place
 * and in that folder, then sends back the exit status. Commands run one at
 * a time, in the server's environment (XDG_CACHE_HOME, LARMOR_* as it was
 * started with). Only the server's own user may connect (SO_PEERCRED). A
 * client that goes away (Ctrl-C) cancels its command at the next progress
 * report, as the GUI's Cancel does, so the server is free again.
 *
 * The server keeps reconstructions' encodings (Q and its Toeplitz
 * operator, the NUFFT plan, the trajectory on the device) between
 * commands in an LRU of --cache-mb megabytes (lm_encoding_cache.h): a
 * command with the trajectory, matrix, variant and segmentation of an
 * earlier one starts at E^H d. Each command's log line gives the cache's
 * state. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* SCM_RIGHTS, SO_PEERCRED, accept4 */
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli_serve.h"
#include "cli_util.h"
#include "commands.h"
#include "larmor.h"
#include "serve_mrd.h"
#include "serve_wire.h"

#define SERVE_MAX_ARGS 4096

static volatile sig_atomic_t g_stop;
static lm_encoding_cache *g_encodings; /* while serving */

/* What a served B128 gpu-nufft encoding holds is about 0.4 GB: the default
 * keeps a handful of trajectories. */
#define SERVE_CACHE_MB_DEFAULT 2048

struct lm_encoding_cache *cli_serve_encodings(void)
{
    return g_encodings;
}

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
    cli_cancel_set(1); /* the command in progress stops too */
}

/* The default socket: $XDG_RUNTIME_DIR/larmor.sock, else /tmp/larmor-UID.sock. */
static void default_socket(char *buf, size_t len)
{
    const char *rt = getenv("XDG_RUNTIME_DIR");
    if (rt && *rt)
        snprintf(buf, len, "%s/larmor.sock", rt);
    else
        snprintf(buf, len, "/tmp/larmor-%u.sock", (unsigned)getuid());
}

/* ---- the server --------------------------------------------------------- */

/* Receives the header and the three descriptors; -1 on a malformed request,
 * -2 when the peer closed without sending one (another server's probe). */
static int receive_request(int c, int fds[3], char **req, uint32_t *len)
{
    uint32_t head[2];
    char ctl[SERVE_CTL_BYTES];
    struct iovec iov;
    struct msghdr m;
    serve_header_message(&m, &iov, head, ctl);
    fds[0] = fds[1] = fds[2] = -1;
    ssize_t r;
    do
        r = recvmsg(c, &m, MSG_CMSG_CLOEXEC);
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return -2;
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
        if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS && h->cmsg_len == CMSG_LEN(3 * sizeof(int)))
            memcpy(fds, CMSG_DATA(h), 3 * sizeof(int));
    if (r != (ssize_t)sizeof head || head[0] != SERVE_MAGIC || head[1] < 2 || head[1] > SERVE_MAX_REQUEST ||
        fds[0] < 0 || fds[1] < 0 || fds[2] < 0 || (m.msg_flags & MSG_CTRUNC))
        return -1;
    *req = malloc(head[1]);
    if (!*req || serve_read_all(c, *req, head[1]) || (*req)[head[1] - 1] != '\0')
        return -1;
    *len = head[1];
    return 0;
}

/* Splits the request into the working folder and argv (pointers into req). */
static int parse_request(char *req, uint32_t len, const char **cwd, char **argv, int *argc)
{
    char *p = req, *end = req + len;
    *cwd = p;
    p += strlen(p) + 1;
    *argc = 0;
    while (p < end && *argc < SERVE_MAX_ARGS) {
        argv[(*argc)++] = p;
        p += strlen(p) + 1;
    }
    argv[*argc] = NULL;
    return *argc > 0 && p == end ? 0 : -1;
}

/* Runs one command with the client's descriptors and folder in place. */
static int run_command(int fds[3], const char *cwd, int argc, char **argv)
{
    int saved[3] = {dup(0), dup(1), dup(2)};
    const int here = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = 1;
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < 3; i++)
        dup2(fds[i], i);
    clearerr(stdin);
    cli_command_fn fn = cli_command_find(argv[0]);
    if (chdir(cwd))
        rc = cli_errorf("serve: the client's folder %s: %s", cwd, strerror(errno));
    else if (!fn)
        rc = cli_errorf("serve: unknown command '%s' (try larmor-cli --help)", argv[0]);
    else if (!strcmp(argv[0], "serve"))
        rc = cli_errorf("serve: a server does not start another");
    else
        rc = fn(argc, argv);
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < 3; i++)
        if (saved[i] >= 0) {
            dup2(saved[i], i);
            close(saved[i]);
        }
    clearerr(stdin);
    if (here >= 0) {
        if (fchdir(here))
            rc = rc ? rc : 1;
        close(here);
    }
    return rc;
}

/* While a command runs: a client that hangs up cancels it. */
struct client_watch {
    int fd;      /* the connection */
    int done_fd; /* readable once the command has ended */
};

static void *watch_client(void *arg)
{
    const struct client_watch *w = arg;
    struct pollfd pf[2] = {{w->fd, POLLIN, 0}, {w->done_fd, POLLIN, 0}};
    for (;;) {
        const int r = poll(pf, 2, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || pf[1].revents)
            return NULL;
        if (pf[0].revents) { /* the client sends nothing more: readable means gone */
            char b;
            const ssize_t n = recv(w->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) || (pf[0].revents & (POLLHUP | POLLERR)))
                cli_cancel_set(1);
            return NULL;
        }
    }
}

static void serve_one(int c)
{
    struct ucred cred;
    socklen_t cl = sizeof cred;
    memset(&cred, 0, sizeof cred);
    int fds[3] = {-1, -1, -1};
    char *req = NULL;
    uint32_t len = 0;
    char **argv = NULL;
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &cl) || cred.uid != geteuid()) {
        fprintf(stderr, "larmor-cli serve: refused a connection (user %d, not %d)\n", (int)cred.uid, (int)geteuid());
        return;
    }
    const int got = receive_request(c, fds, &req, &len);
    if (got) {
        if (got == -1)
            fprintf(stderr, "larmor-cli serve: a malformed request was ignored\n");
        goto done;
    }
    argv = calloc(SERVE_MAX_ARGS + 1, sizeof *argv);
    const char *cwd = NULL;
    int argc = 0;
    if (!argv || parse_request(req, len, &cwd, argv, &argc)) {
        fprintf(stderr, "larmor-cli serve: a malformed request was ignored\n");
        goto done;
    }
    const double t0 = cli_now();
    cli_cancel_set(g_stop);
    int done[2] = {-1, -1}, watching = 0;
    pthread_t watcher;
    struct client_watch w = {c, -1};
    if (pipe2(done, O_CLOEXEC) == 0) {
        w.done_fd = done[0];
        watching = pthread_create(&watcher, NULL, watch_client, &w) == 0;
    }
    const int32_t rc = run_command(fds, cwd, argc, argv);
    if (watching) {
        (void)serve_write_all(done[1], "x", 1);
        pthread_join(watcher, NULL);
    }
    for (int i = 0; i < 2; i++)
        if (done[i] >= 0)
            close(done[i]);
    char cache[160] = "";
    if (g_encodings) {
        lm_encoding_cache_stats cs;
        lm_encoding_cache_get_stats(g_encodings, &cs);
        snprintf(cache, sizeof cache, "; cache: %d entries, %.1f of %.0f MB, %lld hits, %lld misses, %lld evicted",
                 cs.entries, cs.bytes / 1048576.0, cs.cap_bytes / 1048576.0, cs.hits, cs.misses, cs.evictions);
    }
    fprintf(stderr, "larmor-cli serve: %s (%d arguments) exit %d in %.3f s%s%s\n", argv[0], argc - 1, (int)rc,
            cli_now() - t0, cli_cancel_requested() ? " (cancelled: the client went away or the server was stopped)" : "",
            cache);
    cli_cancel_set(0);
    (void)serve_write_all(c, &rc, sizeof rc);
done:
    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(argv);
    free(req);
}

/* A server's commands allocate and free buffers of the same sizes again
 * and again (inputs, the image, its magnitude: megabytes each). glibc
 * maps each such buffer anew and unmaps it on free, so every command paid
 * for faulting in fresh pages (a magnitude pass over 8 MiB: 28 ms into
 * fresh pages, 0.9 ms into warm ones, on the sandboxed development
 * machine); from the heap, and not trimmed, they are reused warm. The heap
 * keeps at most 256 MiB free. */
static void keep_heap(void)
{
    mallopt(M_MMAP_THRESHOLD, 32 << 20); /* glibc's largest */
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

int cmd_serve(int argc, char **argv)
{
    static const struct option opts[] = {{"socket", required_argument, 0, 's'},
                                         {"idle-exit", required_argument, 0, 'i'},
                                         {"cache-mb", required_argument, 0, 'c'},
                                         {"help", no_argument, 0, 'h'},
                                         {"mrd", required_argument, 0, 'm'},
                                         {"mrd-presets", required_argument, 0, 'P'},
                                         {"mrd-port-file", required_argument, 0, 'F'},
                                         {"mrd-send-timeout", required_argument, 0, 'S'},
                                         {"mrd-idle-timeout", required_argument, 0, 'I'},
                                         {"mrd-max-buffer", required_argument, 0, 'B'},
                                         {"mrd-max-connections", required_argument, 0, 'C'},
                                         {"mrd-threads", required_argument, 0, 'T'},
                                         {0, 0, 0, 0}};
    const char *mrd = NULL;
    mrd_server_opts mo;
    mrd_server_opts_init(&mo);
    long long iv;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 64];
    default_socket(path, sizeof path);
    double idle = 0, cache_mb = SERVE_CACHE_MB_DEFAULT;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            snprintf(path, sizeof path, "%s", optarg);
            break;
        case 'i':
            if (!cli_parse_double("--idle-exit", optarg, &idle) || idle < 0)
                return cli_errorf("serve: --idle-exit wants seconds >= 0 (0: never)");
            break;
        case 'm': mrd = optarg; break;
        case 'P': snprintf(mo.presets, sizeof mo.presets, "%s", optarg); break;
        case 'F': mo.port_file = optarg; break;
        case 'S':
            if (!cli_parse_double("--mrd-send-timeout", optarg, &mo.send_timeout_s) || mo.send_timeout_s <= 0)
                return cli_errorf("serve: --mrd-send-timeout wants seconds > 0");
            break;
        case 'I':
            if (!cli_parse_double("--mrd-idle-timeout", optarg, &mo.idle_timeout_s) || mo.idle_timeout_s <= 0)
                return cli_errorf("serve: --mrd-idle-timeout wants seconds > 0");
            break;
        case 'B':
            if (!cli_parse_int("--mrd-max-buffer", optarg, 1, 1 << 20, &iv))
                return 1;
            mo.max_buffer = (uint64_t)iv << 20;
            break;
        case 'C':
            if (!cli_parse_int("--mrd-max-connections", optarg, 1, 1024, &iv))
                return 1;
            mo.max_connections = (int)iv;
            break;
        case 'T':
            if (!cli_parse_int("--mrd-threads", optarg, 0, 4096, &iv))
                return 1;
            mo.threads = (int)iv;
            break;
        case 'c':
            if (!cli_parse_double("--cache-mb", optarg, &cache_mb) || !(cache_mb >= 0))
                return cli_errorf("serve: --cache-mb wants megabytes >= 0 (0: keep nothing)");
            break;
        case 'h':
            puts("usage: larmor-cli serve [--socket PATH] [--idle-exit SECONDS] [--cache-mb 2048]\n"
                 "  Runs larmor-cli commands sent by clients (LARMOR_SERVER=PATH larmor-cli COMMAND ...) in one\n"
                 "  process: the GPU context, plans and memory pools stay warm between commands. Commands run one\n"
                 "  at a time in the server's environment. The default socket is $XDG_RUNTIME_DIR/larmor.sock\n"
                 "  (else /tmp/larmor-UID.sock); --idle-exit ends the server after that long without a command.\n"
                 "  A client that goes away (Ctrl-C) cancels its command; SIGINT or SIGTERM cancel the command in\n"
                 "  progress and end the server. After a GPU driver error the server ends (exit status 3).\n"
                 "       larmor-cli serve --mrd [ADDR:]PORT [--mrd-presets DIR] [--mrd-port-file F]\n"
                 "        [--mrd-send-timeout 10] [--mrd-idle-timeout 300] [--mrd-max-buffer MIB] [--mrd-max-connections 8]\n"
                 "        [--mrd-threads N]\n"
                 "  An MRD streaming server (ISMRMRD/Gadgetron protocol, docs/mrd-server.md) on 127.0.0.1:PORT, or\n"
                 "  on ADDR: the protocol has no authentication, so another interface belongs on a private network.\n"
                 "  Port 0: one the OS picks (--mrd-port-file writes it). CONFIG_FILE names a preset NAME.conf of\n"
                 "  --mrd-presets (default $XDG_CONFIG_HOME/larmor/presets); --mrd-max-buffer caps the acquisitions\n"
                 "  one connection holds (MiB, default 2048); a client that reads no image for --mrd-send-timeout\n"
                 "  seconds, or sends nothing for --mrd-idle-timeout, is dropped. Connections reconstruct at once\n"
                 "  on the CPU, each with --mrd-threads threads (default 0: all cores; give cores / connections\n"
                 "  expected at once), and in turn on a GPU.\n"
                 "  Reconstructions without coil maps keep their encoding (Q, NUFFT plan, trajectory on the GPU)\n"
                 "  for later commands with the same trajectory, matrix, variant and segmentation: least recently\n"
                 "  used first out beyond --cache-mb megabytes of host and GPU memory (0: keep nothing).");
            return 0;
        default:
            return 2;
        }
    }
    if (optind < argc)
        return cli_errorf("serve: unexpected argument '%s'", argv[optind]);
    keep_heap();
    if (mrd)
        return cli_serve_mrd(mrd, &mo);
    struct sockaddr_un a;
    if (serve_socket_address(path, &a))
        return cli_errorf("serve: %s: the path is too long for a socket", path);
    const int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (ls < 0)
        return cli_errorf("serve: %s", strerror(errno));
    /* a socket file left by a server that died is replaced; a live one is not */
    if (connect(ls, (struct sockaddr *)&a, sizeof a) == 0) {
        close(ls);
        return cli_errorf("serve: %s: another server is listening there", path);
    }
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            close(ls);
            return cli_errorf("serve: %s: exists and is not a socket", path);
        }
        unlink(path);
    }
    const mode_t um = umask(077); /* the socket is its user's alone */
    const int b = bind(ls, (struct sockaddr *)&a, sizeof a);
    umask(um);
    if (b || listen(ls, 16)) {
        const int e = errno;
        close(ls);
        return cli_errorf("serve: %s: %s", path, strerror(e));
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: poll returns */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client gone mid-command must not end the server */
    larmor_gpu_prewarm();         /* the GPU context made now, not in the first command */
    lm_error cerr = {0};
    if (cache_mb > 0 && lm_encoding_cache_new(cache_mb * 1048576.0, &g_encodings, &cerr) != LM_OK) {
        close(ls);
        unlink(path);
        return cli_error(&cerr);
    }
    fprintf(stderr, "larmor-cli serve: listening on %s (export LARMOR_SERVER=%s)\n", path, path);
    double last = cli_now();
    int status = 0;
    while (!g_stop) {
        struct pollfd pf = {ls, POLLIN, 0};
        const int timeout_ms = idle > 0 ? 500 : -1;
        const int r = poll(&pf, 1, timeout_ms);
        if (r < 0 && errno != EINTR)
            break;
        if (r > 0 && (pf.revents & POLLIN)) {
            const int cfd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
            if (cfd >= 0) {
                serve_one(cfd);
                close(cfd);
                last = cli_now();
            }
            if (larmor_gpu_lost()) { /* the context is gone until the process ends: a new server gets a new one */
                fprintf(stderr, "larmor-cli serve: the GPU failed (driver error); ending so that a new server "
                                "starts with a working context\n");
                status = 3;
                break;
            }
        }
        if (idle > 0 && cli_now() - last > idle) {
            fprintf(stderr, "larmor-cli serve: idle for %.0f s, ending\n", idle);
            break;
        }
    }
    close(ls);
    unlink(path);
    larmor_gpu_prewarm_wait();
    lm_encoding_cache_free(g_encodings);
    g_encodings = NULL;
    larmor_gpu_prewarm_wait();
    fprintf(stderr, "larmor-cli serve: stopped\n");
    return status;
}
