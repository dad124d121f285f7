/* Small helpers shared by the ISMRMRD and atomic-write tests: a private
 * temporary folder, whole-file read/write, and a message check. */
#ifndef LM_MRD_TEST_UTIL_H
#define LM_MRD_TEST_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lm_error.h"

static char lm_tmp_dir[512];

static inline void lm_tmp_cleanup(void)
{
    if (lm_tmp_dir[0] && !getenv("LM_TEST_KEEP")) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", lm_tmp_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", lm_tmp_dir);
    }
}

/* Makes a private folder (removed at exit unless LM_TEST_KEEP is set). */
static inline const char *lm_tmp_make(const char *tag)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    snprintf(lm_tmp_dir, sizeof lm_tmp_dir, "%s/lm-%s-XXXXXX", base, tag);
    if (!mkdtemp(lm_tmp_dir)) {
        perror("mkdtemp");
        exit(1);
    }
    atexit(lm_tmp_cleanup);
    return lm_tmp_dir;
}

static inline char *lm_tmp_path(const char *name)
{
    static char bufs[8][700];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", lm_tmp_dir, name);
    return b;
}

static inline int lm_write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

static inline unsigned char *lm_read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(sz > 0 ? (size_t)sz : 1);
    if (b && sz > 0 && fread(b, 1, (size_t)sz, f) != (size_t)sz) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *n = sz > 0 ? (size_t)sz : 0;
    return b;
}

/* Files in the temporary folder whose names start with prefix. */
static inline int lm_count_prefix(const char *prefix)
{
    DIR *d = opendir(lm_tmp_dir);
    int n = 0;
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            n++;
    closedir(d);
    return n;
}

/* A failure message must be one line that names the file. Prints it so
 * the test log doubles as the record in docs/bad-inputs.md. */
static inline int lm_msg_ok(const char *label, const lm_error *e, const char *path, const char *needle)
{
    fprintf(stderr, "MSG [%s] (%s): %s\n", label, lm_code_name(e->code), e->msg);
    if (strchr(e->msg, '\n'))
        return 0;
    if (path && !strstr(e->msg, path))
        return 0;
    if (needle && !strstr(e->msg, needle))
        return 0;
    return 1;
}

#endif
