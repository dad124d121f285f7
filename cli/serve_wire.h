/* How a larmor-cli client hands a command to `larmor-cli serve`: an 8-byte
 * header (magic, length) carrying the client's three standard descriptors
 * (SCM_RIGHTS), then the working folder and the arguments, each
 * NUL-terminated; the answer is the exit status, 4 bytes. libc only. */
#ifndef SERVE_WIRE_H
#define SERVE_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>

#define SERVE_MAGIC 0x314d4c53u   /* "SLM1" */
#define SERVE_MAX_REQUEST (1 << 20) /* a working folder and arguments, bytes */
#define SERVE_CTL_BYTES CMSG_SPACE(3 * sizeof(int))

/* 0, or -1 when the path does not fit a socket address. */
int serve_socket_address(const char *path, struct sockaddr_un *a);
/* All n bytes written or read (short transfers and EINTR retried); 0 or -1. */
int serve_write_all(int fd, const void *p, size_t n);
int serve_read_all(int fd, void *p, size_t n);
/* The header message, with room for the descriptors in ctl
 * (SERVE_CTL_BYTES); the same shape sent and received. */
void serve_header_message(struct msghdr *m, struct iovec *iov, uint32_t head[2], char *ctl);

#endif
