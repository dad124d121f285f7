/* The client side of larmor-cli serve (cli_serve.h): libc only, so that the
 * launcher (larmor-cli-launch.c) forwards a command without loading the
 * library's dependencies. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* SCM_RIGHTS */
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli_base.h"
#include "cli_serve.h"
#include "serve_wire.h"

int cli_serve_forward(const char *path, int argc, char **argv)
{
    struct sockaddr_un a;
    if (serve_socket_address(path, &a))
        return cli_errorf("LARMOR_SERVER=%s: the path is too long for a socket", path);
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return cli_errorf("LARMOR_SERVER=%s: %s", path, strerror(errno));
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        const int e = errno;
        close(fd);
        return cli_errorf("LARMOR_SERVER=%s: cannot connect: %s (start one with: larmor-cli serve --socket %s)", path,
                          strerror(e), path);
    }
    /* request: magic, length, then the working folder and the arguments,
     * each NUL-terminated */
    char *cwd = getcwd(NULL, 0);
    size_t len = (cwd ? strlen(cwd) : 0) + 1;
    for (int i = 0; i < argc; i++)
        len += strlen(argv[i]) + 1;
    if (!cwd || len > SERVE_MAX_REQUEST) {
        free(cwd);
        close(fd);
        return cli_errorf("LARMOR_SERVER=%s: %s", path, cwd ? "the arguments are too long" : "no working folder");
    }
    char *req = malloc(len), *p = req;
    if (!req) {
        free(cwd);
        close(fd);
        return cli_errorf("LARMOR_SERVER=%s: out of memory", path);
    }
    p = stpcpy(p, cwd) + 1;
    for (int i = 0; i < argc; i++)
        p = stpcpy(p, argv[i]) + 1;
    free(cwd);
    uint32_t head[2] = {SERVE_MAGIC, (uint32_t)len};
    int fds[3] = {0, 1, 2};
    char ctl[SERVE_CTL_BYTES];
    struct iovec iov;
    struct msghdr m;
    serve_header_message(&m, &iov, head, ctl);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(c), fds, sizeof fds);
    fflush(stdout);
    fflush(stderr);
    int32_t rc = 1;
    if (sendmsg(fd, &m, MSG_NOSIGNAL) != (ssize_t)sizeof head || serve_write_all(fd, req, len)) {
        free(req);
        close(fd);
        return cli_errorf("LARMOR_SERVER=%s: the request could not be sent: %s", path, strerror(errno));
    }
    free(req);
    if (serve_read_all(fd, &rc, sizeof rc)) {
        close(fd);
        return cli_errorf("LARMOR_SERVER=%s: the server ended the command without an answer", path);
    }
    close(fd);
    return rc;
}
