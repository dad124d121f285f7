/* Shared by the libFuzzer targets: Larmor's readers take paths, so each
 * input is written to a file in a private folder (in /dev/shm when there is
 * one, to keep the disk out of the loop) and read from there. */
#ifndef LM_FUZZ_COMMON_H
#define LM_FUZZ_COMMON_H

#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fuzz_dir[256];

static void fuzz_cleanup(void)
{
    if (fuzz_dir[0]) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", fuzz_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", fuzz_dir);
    }
}

/* Path of name in the private folder (made on first use). */
static inline const char *fuzz_path(const char *name)
{
    static char buf[4][512];
    static int next;
    if (!fuzz_dir[0]) {
        struct stat st;
        const char *base = getenv("LM_FUZZ_TMP");
        if (!base || !*base)
            base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
        snprintf(fuzz_dir, sizeof fuzz_dir, "%s/lm-fuzz-XXXXXX", base);
        if (!mkdtemp(fuzz_dir))
            abort();
        atexit(fuzz_cleanup);
    }
    char *b = buf[next++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", fuzz_dir, name);
    return b;
}

static inline void fuzz_write(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    if (fclose(f) != 0)
        abort();
}

/* Every failure must come with a one-line message. */
#define FUZZ_CHECK_MSG(rc, err)                                                   \
    do {                                                                          \
        if ((rc) != LM_OK && (!(err).msg[0] || strchr((err).msg, '\n')))          \
            abort();                                                              \
    } while (0)

#endif
