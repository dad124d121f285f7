#include "cli_util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <signal.h>
#include <unistd.h>

int cli_error(const lm_error *err)
{
    fprintf(stderr, "larmor-cli: %s\n", err && err->msg[0] ? err->msg : "unknown error");
    return 1;
}

int cli_parse_double(const char *opt, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return cli_errorf("%s: '%s' is not a number", opt, s), 0;
    *out = v;
    return 1;
}

int cli_parse_doubles(const char *opt, const char *s, double *out, int count)
{
    const char *p = s;
    for (int i = 0; i < count; i++) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (errno || end == p || !isfinite(v) || (i + 1 < count ? *end != ',' : *end != 0))
            return cli_errorf("%s: '%s' is not %d comma-separated numbers", opt, s, count), 0;
        out[i] = v;
        p = end + 1;
    }
    return count;
}

int cli_parse_int(const char *opt, const char *s, long long min, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end)
        return cli_errorf("%s: '%s' is not an integer", opt, s), 0;
    if (v < min || v > max)
        return cli_errorf("%s: %lld is out of range %lld..%lld", opt, v, min, max), 0;
    *out = v;
    return 1;
}

int cli_parse_matrix(const char *s, int64_t n[3])
{
    long long a = 0, b = 0, c = 0;
    char tail;
    int k = sscanf(s, "%lldx%lldx%lld%c", &a, &b, &c, &tail);
    if (k == 1 && strchr(s, 'x') == NULL) {
        n[0] = n[1] = n[2] = a;
    } else if (k == 2) {
        n[0] = a, n[1] = b, n[2] = 1;
    } else if (k == 3) {
        n[0] = a, n[1] = b, n[2] = c;
    } else {
        return cli_errorf("--matrix: '%s' is not N or NxN or NxNxN", s), 0;
    }
    for (int i = 0; i < 3; i++)
        if (n[i] < 1 || n[i] > 4096)
            return cli_errorf("--matrix: '%s' is out of range (1..4096 per axis)", s), 0;
    return 1;
}

void cli_progress_init(cli_progress *p, int allow)
{
    p->enabled = allow && isatty(STDERR_FILENO);
    p->last_len = 0;
    p->cancel = 0;
}

static volatile sig_atomic_t g_cancel;

void cli_cancel_set(int on)
{
    g_cancel = on ? 1 : 0;
}

int cli_cancel_requested(void)
{
    return g_cancel != 0;
}

int cli_progress_cb(void *user, const lm_progress *pr)
{
    cli_progress *p = user;
    if (cli_cancel_requested())
        return 1;
    if (!p || !p->enabled)
        return 0;
    char line[160];
    int width = 30, fill = (int)(pr->fraction * width + 0.5);
    if (fill < 0)
        fill = 0;
    if (fill > width)
        fill = width;
    char bar[64];
    memset(bar, '#', (size_t)fill);
    memset(bar + fill, ' ', (size_t)(width - fill));
    bar[width] = '\0';
    int len;
    if (pr->stage == LM_STAGE_CG)
        len = snprintf(line, sizeof line, "\r[%s] CG %d/%d  residual %.2e  %.1f s", bar, pr->iter,
                       pr->iters, pr->rel_resid, pr->elapsed_s);
    else
        len = snprintf(line, sizeof line, "\r[%s] %-6s %3.0f%%  %.1f s", bar, lm_stage_name(pr->stage),
                       100.0 * pr->fraction, pr->elapsed_s);
    fputs(line, stderr);
    for (int i = len; i < p->last_len; i++)
        fputc(' ', stderr);
    p->last_len = len;
    fflush(stderr);
    return p->cancel;
}

void cli_progress_done(cli_progress *p)
{
    if (p->enabled && p->last_len) {
        fputc('\r', stderr);
        for (int i = 0; i < p->last_len; i++)
            fputc(' ', stderr);
        fputc('\r', stderr);
        fflush(stderr);
    }
    p->last_len = 0;
}

void cli_json_num(FILE *f, const char *key, double v, int comma)
{
    if (isfinite(v))
        fprintf(f, "\"%s\": %.10g%s", key, v, comma ? ", " : "");
    else
        fprintf(f, "\"%s\": null%s", key, comma ? ", " : "");
}

void cli_json_str(FILE *f, const char *key, const char *v, int comma)
{
    fprintf(f, "\"%s\": \"", key);
    for (const char *c = v ? v : ""; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if ((unsigned char)*c < 0x20)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    }
    fprintf(f, "\"%s", comma ? ", " : "");
}

void cli_json_int(FILE *f, const char *key, long long v, int comma)
{
    fprintf(f, "\"%s\": %lld%s", key, v, comma ? ", " : "");
}

void cli_json_bool(FILE *f, const char *key, int v, int comma)
{
    fprintf(f, "\"%s\": %s%s", key, v ? "true" : "false", comma ? ", " : "");
}

int cli_mkdirs(const char *dir, lm_error *err)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
        return lm_fail(err, LM_ERR_INVALID, "%s: path too long", dir), 0;
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) && errno != EEXIST)
                return lm_fail(err, LM_ERR_IO, "%s: cannot create folder: %s", buf, strerror(errno)), 0;
            *p = '/';
        }
    }
    if (mkdir(buf, 0755) && errno != EEXIST)
        return lm_fail(err, LM_ERR_IO, "%s: cannot create folder: %s", buf, strerror(errno)), 0;
    struct stat st;
    if (stat(buf, &st) || !S_ISDIR(st.st_mode))
        return lm_fail(err, LM_ERR_IO, "%s: not a folder", buf), 0;
    return 1;
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
