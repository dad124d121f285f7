/* Discovery: a data set's files from its directory or any one member, by
 * the names larmor-cli phantom and convert write. One rule for the CLI and
 * the GUI, so both find the same companions. */
#include "lm_acq.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lm_io_impatient.h"

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s/%s", dir, name);
    return s;
}

static char *dup_str(const char *s)
{
    char *d = s ? malloc(strlen(s) + 1) : NULL;
    if (d)
        strcpy(d, s);
    return d;
}

/* The first of names that exists in dir, or NULL. A .cfl counts when its
 * .hdr is there too. */
static char *first_present(const char *dir, const char *const *names)
{
    for (; *names; names++) {
        char *p = join(dir, *names);
        if (!p)
            return NULL;
        int ok = is_file(p);
        if (ok && ends_with(p, ".cfl")) {
            p[strlen(p) - 3] = 'h';
            p[strlen(p) - 2] = 'd';
            p[strlen(p) - 1] = 'r';
            ok = is_file(p);
            strcpy(p + strlen(p) - 4, ".cfl");
        }
        if (ok)
            return p;
        free(p);
    }
    return NULL;
}

/* data.h5, else the directory's only .h5. */
static char *find_h5(const char *dir)
{
    static const char *const data_h5[] = {"data.h5", NULL};
    char *p = first_present(dir, data_h5);
    if (p)
        return p;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    struct dirent *e;
    int count = 0;
    while ((e = readdir(d))) {
        if (!ends_with(e->d_name, ".h5"))
            continue;
        if (count++ == 0)
            p = join(dir, e->d_name);
    }
    closedir(d);
    if (count != 1) {
        free(p);
        return NULL;
    }
    return p;
}

static void keep_or_set(char **slot, char *found)
{
    if (*slot)
        free(found);
    else
        *slot = found;
}

static void companions(const char *dir, lm_acq_paths *o)
{
    static const char *const sens[] = {"sens.cfl", "sens.nii.gz", "sens.nii", NULL};
    static const char *const fm[] = {"fieldmap.nii.gz", "fieldmap.nii", "fieldmap.cfl", NULL};
    static const char *const times[] = {"times.cfl", NULL};
    static const char *const truth[] = {"truth.nii.gz", "truth.nii", NULL};
    static const char *const ref[] = {"ref.nii.gz", "ref.nii", NULL};
    keep_or_set(&o->sens, first_present(dir, sens));
    keep_or_set(&o->fieldmap, first_present(dir, fm));
    keep_or_set(&o->times, first_present(dir, times));
    keep_or_set(&o->truth, first_present(dir, truth));
    keep_or_set(&o->ref, first_present(dir, ref));
}

static lm_code from_dir(const char *dir, const char *asked, lm_acq_paths *o, lm_error *err)
{
    static const char *const traj[] = {"traj.cfl", NULL};
    static const char *const kspace[] = {"kspace.cfl", NULL};
    if (lm_is_impatient_dir(dir)) {
        o->traj = dup_str(dir);
        o->kspace = dup_str(dir);
    } else if ((o->traj = first_present(dir, traj))) {
        if (!(o->kspace = first_present(dir, kspace))) {
            lm_acq_paths_clear(o);
            return lm_fail(err, LM_ERR_INVALID, "%s: traj.cfl without kspace.cfl beside it", asked);
        }
    } else if ((o->traj = find_h5(dir))) {
        o->kspace = dup_str(o->traj);
    } else {
        return lm_fail(err, LM_ERR_INVALID, "%s: no data set there (traj.cfl + kspace.cfl, one .h5 or an "
                       "IMPATIENT directory)", asked);
    }
    if (!o->traj || !o->kspace) {
        lm_acq_paths_clear(o);
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", asked);
    }
    companions(dir, o);
    return LM_OK;
}

lm_code lm_acq_discover(const char *path, lm_acq_paths *out, lm_error *err)
{
    memset(out, 0, sizeof *out);
    if (!path || !*path)
        return lm_fail(err, LM_ERR_INVALID, "no data set given");
    if (is_dir(path))
        return from_dir(path, path, out, err);
    /* A .cfl may be named by its base or its .hdr. */
    char *probe = malloc(strlen(path) + 5);
    if (!probe)
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path);
    strcpy(probe, path);
    if (!is_file(probe) && !ends_with(probe, ".cfl") && !ends_with(probe, ".hdr"))
        strcat(probe, ".cfl");
    int exists = is_file(probe);
    free(probe);
    if (!exists)
        return lm_fail(err, LM_ERR_IO, "%s: no such file or directory", path);
    const char *slash = strrchr(path, '/');
    char *dir = slash ? malloc((size_t)(slash - path) + 1) : dup_str(".");
    if (!dir)
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path);
    if (slash) {
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = 0;
        if (!*dir)
            strcpy(dir, "/");
    }
    lm_code c = LM_OK;
    if (ends_with(path, ".h5") || ends_with(path, ".bin")) {
        /* The file is the data; its companions lie beside it. */
        out->traj = dup_str(path);
        out->kspace = dup_str(path);
        companions(dir, out);
        if (!out->traj || !out->kspace) {
            lm_acq_paths_clear(out);
            c = lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path);
        }
    } else {
        c = from_dir(dir, path, out, err);
    }
    free(dir);
    return c;
}

void lm_acq_discover_companions(const char *path, lm_acq_paths *out)
{
    if (!path)
        return;
    if (is_dir(path)) {
        companions(path, out);
        return;
    }
    const char *slash = strrchr(path, '/');
    if (!slash) {
        companions(".", out);
        return;
    }
    char *dir = malloc((size_t)(slash - path) + 2);
    if (!dir)
        return;
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = 0;
    if (!*dir)
        strcpy(dir, "/");
    companions(dir, out);
    free(dir);
}

void lm_acq_paths_clear(lm_acq_paths *p)
{
    free(p->traj);
    free(p->kspace);
    free(p->sens);
    free(p->fieldmap);
    free(p->fieldmap_series);
    free(p->times);
    free(p->truth);
    free(p->ref);
    memset(p, 0, sizeof *p);
}

lm_code lm_acq_paths_set(char **slot, const char *path, lm_error *err)
{
    char *c = NULL;
    if (path && !(c = dup_str(path)))
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path);
    free(*slot);
    *slot = c;
    return LM_OK;
}

lm_code lm_acq_paths_copy(lm_acq_paths *dst, const lm_acq_paths *src, lm_error *err)
{
    memset(dst, 0, sizeof *dst);
    if (lm_acq_paths_set(&dst->traj, src->traj, err) || lm_acq_paths_set(&dst->kspace, src->kspace, err) ||
        lm_acq_paths_set(&dst->sens, src->sens, err) || lm_acq_paths_set(&dst->fieldmap, src->fieldmap, err) ||
        lm_acq_paths_set(&dst->fieldmap_series, src->fieldmap_series, err) ||
        lm_acq_paths_set(&dst->times, src->times, err) || lm_acq_paths_set(&dst->truth, src->truth, err) ||
        lm_acq_paths_set(&dst->ref, src->ref, err)) {
        lm_acq_paths_clear(dst);
        return LM_ERR_NOMEM;
    }
    return LM_OK;
}

static void append_base(char *buf, size_t size, const char *path)
{
    if (!path)
        return;
    const char *b = strrchr(path, '/');
    b = b && b[1] ? b + 1 : path;
    size_t l = strlen(buf);
    snprintf(buf + l, size - l, "%s%s", l ? ", " : "", b);
}

char *lm_acq_paths_describe(const lm_acq_paths *p)
{
    const size_t size = 1024;
    char *buf = calloc(size, 1);
    if (!buf)
        return NULL;
    append_base(buf, size, p->traj);
    if (p->kspace && (!p->traj || strcmp(p->kspace, p->traj)))
        append_base(buf, size, p->kspace);
    append_base(buf, size, p->sens);
    append_base(buf, size, p->fieldmap);
    append_base(buf, size, p->times);
    append_base(buf, size, p->truth);
    append_base(buf, size, p->ref);
    return buf;
}
