/* Helpers shared by the I/O tests: a scratch folder under /tmp removed at
 * the end, file bytes in and out, and a check that a call fails with the
 * expected code and a one-line message naming the file. */
#ifndef LM_IO_TEST_UTIL_H
#define LM_IO_TEST_UTIL_H

#include <complex.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lm_error.h"
#include "lm_test.h"

/* glibc defines CMPLXF for gcc only; clang has the same builtin. */
#ifndef CMPLXF
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#endif

static char io_dir[64];

static inline void io_make_dir(void)
{
    snprintf(io_dir, sizeof io_dir, "/tmp/larmor-io-XXXXXX");
    if (!mkdtemp(io_dir)) {
        perror("mkdtemp");
        exit(1);
    }
}

static inline int io_rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    chmod(p, 0700); /* a test may leave a folder read-only */
    return remove(p);
}

static inline void io_remove_dir(void)
{
    if (io_dir[0]) {
        chmod(io_dir, 0700);
        nftw(io_dir, io_rm_one, 16, FTW_DEPTH | FTW_PHYS);
    }
}

/* Path of name inside the scratch folder (a few rotating buffers, so a
 * call may use several at once). */
static inline const char *P(const char *name)
{
    static char bufs[8][512];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", io_dir, name);
    return b;
}

static inline void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "cannot write fixture %s\n", path);
        exit(1);
    }
}

static inline void write_text(const char *path, const char *text)
{
    write_bytes(path, text, strlen(text));
}

/* Whole file, NUL-terminated; *n gets its length. NULL if unreadable. */
static inline char *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    if (fread(b, 1, (size_t)len, f) != (size_t)len) {
        free(b);
        fclose(f);
        return NULL;
    }
    b[len] = '\0';
    fclose(f);
    if (n)
        *n = (size_t)len;
    return b;
}

static inline int files_equal(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    char *x = read_bytes(a, &na), *y = read_bytes(b, &nb);
    int eq = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return eq;
}

static inline int file_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* Number of entries in the scratch folder whose name contains ".tmp-"
 * (nftw rather than opendir: dirent.h's DT_* clash with nifti1.h's). */
static int io_stray_count;

static inline int io_count_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    if (ftw->level == 1 && strstr(p + ftw->base, ".tmp-"))
        io_stray_count++;
    return 0;
}

static inline int stray_temps(void)
{
    io_stray_count = 0;
    nftw(io_dir, io_count_one, 16, FTW_PHYS);
    return io_stray_count;
}

/* The call must fail with code, and its message must be one line that
 * contains each of the given pieces (the file name among them). */
#define EXPECT_FAIL(expr, errp, want_code, ...)                                        \
    do {                                                                               \
        lm_error_clear(errp);                                                          \
        lm_code c_ = (expr);                                                           \
        const char *pieces_[] = {__VA_ARGS__};                                         \
        CHECK_MSG(c_ == (want_code), "%s returned %s (%s), expected %s", #expr,        \
                  lm_code_name(c_), (errp)->msg, lm_code_name(want_code));             \
        CHECK_MSG(strchr((errp)->msg, '\n') == NULL, "message is not one line: %s",    \
                  (errp)->msg);                                                        \
        for (size_t i_ = 0; i_ < sizeof pieces_ / sizeof pieces_[0]; i_++)             \
            CHECK_MSG(strstr((errp)->msg, pieces_[i_]) != NULL,                        \
                      "message '%s' lacks '%s'", (errp)->msg, pieces_[i_]);            \
        fprintf(stderr, "  expected error: %s\n", (errp)->msg);                        \
    } while (0)

/* Deterministic pseudo-random floats in [-1, 1). */
static inline float io_rand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffffff) / 8388608.0f - 1.0f;
}

#endif
