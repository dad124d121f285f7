/* Shared plumbing of the larmor-cli commands: errors, progress bar, JSON. */
#ifndef LM_CLI_UTIL_H
#define LM_CLI_UTIL_H

#include <stdio.h>

#include "cli_base.h"
#include "larmor.h"

/* Prints "larmor-cli: <msg>" as one line on stderr; returns 1 (the exit code). */
int cli_error(const lm_error *err);

/* Strict number parsing; an error names the option. */
int cli_parse_double(const char *opt, const char *s, double *out);
int cli_parse_int(const char *opt, const char *s, long long min, long long max, long long *out);
/* "a,b,c": exactly count comma-separated finite numbers (count 1 takes
 * one); returns the count read, 0 after printing an error. */
int cli_parse_doubles(const char *opt, const char *s, double *out, int count);
/* "64" or "64x64x1" */
int cli_parse_matrix(const char *s, int64_t n[3]);

/* Progress bar on stderr when it is a terminal (and not --json quiet). */
typedef struct cli_progress {
    int enabled;
    int last_len;
    int cancel;
} cli_progress;
void cli_progress_init(cli_progress *p, int allow);
int cli_progress_cb(void *user, const lm_progress *pr);
void cli_progress_done(cli_progress *p);

/* A request to stop the command in progress (larmor-cli serve sets it when
 * the client goes away or the server is told to stop): the progress
 * callback then cancels the run, as the GUI's Cancel does. Signal-safe. */
void cli_cancel_set(int on);
int cli_cancel_requested(void);

/* JSON writer helpers: numbers print as null when not finite. */
void cli_json_num(FILE *f, const char *key, double v, int comma);
void cli_json_str(FILE *f, const char *key, const char *v, int comma);
void cli_json_int(FILE *f, const char *key, long long v, int comma);
void cli_json_bool(FILE *f, const char *key, int v, int comma);

/* mkdir -p */
int cli_mkdirs(const char *dir, lm_error *err);
double cli_now(void);

#endif
