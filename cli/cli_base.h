/* What every part of larmor-cli uses, the forwarding launcher included:
 * libc only, so the launcher links none of the library's dependencies. */
#ifndef CLI_BASE_H
#define CLI_BASE_H

/* Prints "larmor-cli: <msg>" as one line on stderr; returns 1 (the exit code). */
int cli_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* With LARMOR_TRACE set: "larmor-trace <epoch seconds> <what>" on stderr,
 * so a wrapper that notes its own start and end times sees where a
 * command's wall time goes (process start, reading, GPU, writing). */
void cli_trace(const char *what);

#endif
