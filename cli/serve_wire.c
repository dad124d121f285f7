/* The request's wire format between larmor-cli and its server
 * (serve_wire.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* SCM_RIGHTS */
#endif
#include "serve_wire.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int serve_socket_address(const char *path, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof a->sun_path)
        return -1;
    strcpy(a->sun_path, path);
    return 0;
}

/* Moves all n bytes (retrying short transfers and EINTR); 0, or -1. */
static int transfer_all(int fd, void *p, size_t n, int writing)
{
    char *c = p;
    while (n > 0) {
        const ssize_t k = writing ? write(fd, c, n) : read(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

int serve_write_all(int fd, const void *p, size_t n)
{
    return transfer_all(fd, (void *)p, n, 1);
}

int serve_read_all(int fd, void *p, size_t n)
{
    return transfer_all(fd, p, n, 0);
}

/* The request's first message: the 8-byte header, with room for the three
 * descriptors (SCM_RIGHTS) in ctl; the same shape sent and received. */
void serve_header_message(struct msghdr *m, struct iovec *iov, uint32_t head[2], char *ctl)
{
    memset(m, 0, sizeof *m);
    memset(ctl, 0, SERVE_CTL_BYTES);
    iov->iov_base = head;
    iov->iov_len = 2 * sizeof(uint32_t);
    m->msg_iov = iov;
    m->msg_iovlen = 1;
    m->msg_control = ctl;
    m->msg_controllen = SERVE_CTL_BYTES;
}
