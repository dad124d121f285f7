/* Atomic file replacement. The temporary file lives in the destination's
 * folder (so rename() is atomic and never crosses file systems) and keeps
 * the destination's extension (so libraries that pick a format from the
 * name, like libniftiio's .nii.gz, behave as for the real name). */
#include "lm_atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Longest stem kept in the temporary name, so that ".stem.tmp-XXXXXX.ext"
 * stays within NAME_MAX (255) for any sensible extension. */
#define LM_ATOMIC_MAX_STEM 160

/* The extension to keep: the last one, or the last two when the last is a
 * compression suffix (x.nii.gz -> ".nii.gz"). A leading dot is not one. */
static const char *file_extension(const char *base)
{
    const char *last = strrchr(base, '.');
    if (!last || last == base)
        return base + strlen(base);
    static const char *const compressed[] = {".gz", ".bz2", ".xz", ".zst"};
    for (size_t i = 0; i < sizeof compressed / sizeof compressed[0]; i++) {
        if (strcmp(last, compressed[i]) == 0) {
            for (const char *p = last - 1; p > base; p--)
                if (*p == '.')
                    return p;
            break;
        }
    }
    return last;
}

/* The process umask without changing it (umask() would race with other
 * threads): Linux reports it in /proc/self/status. */
static mode_t current_umask(void)
{
    mode_t mask = 022;
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return mask;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "Umask:", 6) == 0) {
            mask = (mode_t)strtoul(line + 6, NULL, 8) & 0777;
            break;
        }
    }
    fclose(f);
    return mask;
}

static void release(lm_atomic *a)
{
    free(a->tmp_path);
    free(a->final_path);
    a->f = NULL;
    a->tmp_path = NULL;
    a->final_path = NULL;
}

lm_code lm_atomic_begin(lm_atomic *a, const char *path, int open_stream, lm_error *err)
{
    a->f = NULL;
    a->tmp_path = NULL;
    a->final_path = NULL;
    if (!path || !*path)
        return lm_fail(err, LM_ERR_INVALID, "empty output file name");

    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dir_len = (size_t)(base - path);
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: names a folder, not a file", path);

    const char *ext = file_extension(base);
    size_t stem_len = (size_t)(ext - base);
    if (stem_len > LM_ATOMIC_MAX_STEM)
        stem_len = LM_ATOMIC_MAX_STEM;
    size_t ext_len = strlen(ext);
    static const char tag[] = ".tmp-XXXXXX";
    size_t len = dir_len + 1 + stem_len + (sizeof tag - 1) + ext_len + 1;

    a->final_path = strdup(path);
    a->tmp_path = malloc(len);
    if (!a->final_path || !a->tmp_path) {
        release(a);
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory for the temporary name", path);
    }
    char *p = a->tmp_path;
    memcpy(p, path, dir_len);
    p += dir_len;
    *p++ = '.'; /* hidden, so file browsers and globs skip half-written files */
    memcpy(p, base, stem_len);
    p += stem_len;
    memcpy(p, tag, sizeof tag - 1);
    p += sizeof tag - 1;
    memcpy(p, ext, ext_len + 1);

    int fd = mkostemps(a->tmp_path, (int)ext_len, O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        release(a);
        return lm_fail(err, LM_ERR_IO, "%s: cannot create a temporary file in its folder: %s",
                       path, strerror(e));
    }

    /* mkstemps makes the file 0600; give the result the permissions a plain
     * fopen would (or keep the ones of the file being replaced). */
    struct stat st;
    mode_t mode = stat(path, &st) == 0 ? (st.st_mode & 07777) : (0666 & ~current_umask());
    (void)fchmod(fd, mode); /* not fatal: the file is then only 0600 */

    if (!open_stream) {
        close(fd);
        return LM_OK;
    }
    a->f = fdopen(fd, "wb");
    if (!a->f) {
        int e = errno;
        close(fd);
        unlink(a->tmp_path);
        release(a);
        return lm_fail(err, LM_ERR_IO, "%s: cannot open the temporary file: %s", path, strerror(e));
    }
    return LM_OK;
}

/* Test hook (lm_io_fault_set): "stop-before-rename" stops the process
 * (SIGSTOP) once the temporary is complete and closed but not yet renamed,
 * so a test can kill the writer at exactly that point instead of racing
 * it. Set once by a front end or a test, read at each commit. */
static volatile int g_stop_before_rename;

lm_code lm_io_fault_set(const char *spec, lm_error *err)
{
    if (!spec || !*spec || strcmp(spec, "none") == 0)
        g_stop_before_rename = 0;
    else if (strcmp(spec, "stop-before-rename") == 0)
        g_stop_before_rename = 1;
    else
        return lm_fail(err, LM_ERR_INVALID, "I/O fault '%s' unknown (stop-before-rename or none)", spec);
    return LM_OK;
}

static void io_fault_point(void)
{
    if (g_stop_before_rename)
        raise(SIGSTOP);
}

lm_code lm_atomic_commit(lm_atomic *a, lm_error *err)
{
    if (!a->tmp_path)
        return lm_fail(err, LM_ERR_INTERNAL, "atomic commit without a pending file");
    const char *path = a->final_path;
    int e = 0;
    if (a->f) {
        errno = 0;
        /* No fsync: the rename alone is atomic against a crash of the
         * process; syncing made a served B128 command's 16 MiB write wait
         * for the disk (docs/bad-inputs.md, writing). */
        if (fflush(a->f) != 0 || ferror(a->f))
            e = errno ? errno : EIO;
        if (fclose(a->f) != 0 && !e)
            e = errno ? errno : EIO;
        a->f = NULL;
    }
    if (!e)
        io_fault_point();
    if (!e && rename(a->tmp_path, path) != 0)
        e = errno;
    if (e) {
        lm_code c = lm_fail(err, LM_ERR_IO, "%s: cannot write: %s", path, strerror(e));
        unlink(a->tmp_path);
        release(a);
        return c;
    }
    release(a);
    return LM_OK;
}

void lm_atomic_abort(lm_atomic *a)
{
    if (!a)
        return;
    if (a->f)
        fclose(a->f);
    if (a->tmp_path)
        unlink(a->tmp_path);
    release(a);
}
