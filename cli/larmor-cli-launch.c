/* larmor-cli: forwards a command to a running `larmor-cli serve`
 * (LARMOR_SERVER) or runs the full program, larmor-cli-full, beside it.
 * This launcher links libc only: a forwarded command would otherwise load
 * and relocate the library's ~90 shared objects (cuFFT and the CUDA
 * runtime among them) only to send its arguments over a socket. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_base.h"
#include "cli_serve.h"

/* Commands the launcher never forwards: the server itself, and what
 * larmor-cli answers at once. */
static int forwarded(const char *cmd)
{
    static const char *const local[] = {"serve", "--help", "-h", "help", "--version"};
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++)
        if (!strcmp(cmd, local[i]))
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    const char *server = getenv("LARMOR_SERVER");
    if (argc >= 2 && server && *server && forwarded(argv[1])) {
        cli_trace("main");
        const int rc = cli_serve_forward(server, argc - 1, argv + 1); /* no library, no CUDA in this process */
        cli_trace("command done");
        return rc;
    }
    /* larmor-cli-full in this executable's folder (the build tree and the
     * installed bindir alike) */
    char self[PATH_MAX], full[PATH_MAX + 32];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return cli_errorf("cannot find its own path: %s", strerror(errno));
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = 0;
    snprintf(full, sizeof full, "%s/larmor-cli-full", self);
    execv(full, argv);
    return cli_errorf("cannot run %s: %s", full, strerror(errno));
}
