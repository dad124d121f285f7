/* larmor-cli's errors and trace milestones (cli_base.h). */
#include "cli_base.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int cli_errorf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("larmor-cli: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

void cli_trace(const char *what)
{
    static int on = -1;
    if (on < 0)
        on = getenv("LARMOR_TRACE") != NULL;
    if (!on)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    fprintf(stderr, "larmor-trace %.6f %s\n", (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec, what);
}
