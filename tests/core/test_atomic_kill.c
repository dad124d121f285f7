/* Atomic writes survive SIGKILL: a child process replaces an existing file
 * through lm_atomic (its FILE* directly, lm_cfl_write, lm_mrd_write) and is
 * killed at the last moment before the commit: lm_io_fault_set(
 * "stop-before-rename") stops it once the temporary is complete and synced,
 * so the kill lands there every time (no race with the writer). The old
 * file must be intact, byte for byte, and no partial destination may
 * appear. A killed writer leaves its hidden temporary
 * (".name.tmp-XXXXXX.ext") behind: nothing can remove it after SIGKILL;
 * it is reported and removed here. */
#include <complex.h>
#include <dirent.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lm_atomic.h"
#include "lm_config.h"
#include "lm_io.h"
#include "lm_io_ismrmrd.h"
#include "lm_test.h"
#include "mrd_test_util.h"

typedef void (*writer_fn)(const char *dest);

static void write_stream(const char *dest)
{
    lm_atomic a;
    lm_error e;
    if (lm_atomic_begin(&a, dest, 1, &e) != LM_OK)
        _exit(3);
    static char chunk[1 << 20];
    memset(chunk, 'N', sizeof chunk);
    for (int i = 0; i < 8; i++)
        if (fwrite(chunk, 1, sizeof chunk, a.f) != sizeof chunk)
            _exit(4);
    if (lm_atomic_commit(&a, &e) != LM_OK)
        _exit(5);
}

static void write_cfl(const char *dest)
{
    int64_t dims[1] = {(int64_t)1 << 21}; /* 16 MiB of complex64 */
    lm_cfloat *d = calloc((size_t)dims[0], sizeof *d);
    lm_error e;
    if (!d)
        _exit(3);
    for (int64_t i = 0; i < dims[0]; i += 4096)
        d[i] = 1.0f;
    if (lm_cfl_write(dest, 1, dims, d, &e) != LM_OK)
        _exit(5);
}

#if LM_HAVE_ISMRMRD
static void write_mrd(const char *dest)
{
    lm_error e;
    int64_t m = (int64_t)1 << 18; /* 8 MiB of k-space */
    lm_traj *t = lm_traj_new(m, 3, &e);
    lm_kdata *k = lm_kdata_new(m, 4, &e);
    if (!t || !k)
        _exit(3);
    for (int64_t i = 0; i < 3 * m; i++)
        t->k[i] = (float)(i % 64) - 32.0f;
    t->readout = 64;
    lm_geom g;
    lm_geom_init(&g, 64, 64, 64, 240);
    if (lm_mrd_write(dest, &g, t, k, &e) != LM_OK)
        _exit(5);
}
#endif

/* Largest file whose name starts with prefix, or -1. */
static long long largest(const char *prefix)
{
    DIR *d = opendir(lm_tmp_dir);
    long long best = -1;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        struct stat st;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", lm_tmp_dir, e->d_name);
        if (stat(p, &st) == 0 && st.st_size > best)
            best = st.st_size;
    }
    if (d)
        closedir(d);
    return best;
}

static void remove_prefix(const char *prefix)
{
    DIR *d = opendir(lm_tmp_dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            char p[1024];
            snprintf(p, sizeof p, "%s/%s", lm_tmp_dir, e->d_name);
            unlink(p);
        }
    if (d)
        closedir(d);
}

static int visible_files(void)
{
    DIR *d = opendir(lm_tmp_dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    if (d)
        closedir(d);
    return n;
}

/* dests: the files the writer replaces (already holding old content);
 * tmp_prefix: how its temporaries start; min_bytes: the least a complete
 * temporary holds. */
static void kill_before_rename(const char *label, writer_fn fn, const char *dest, const char *const *dests,
                               int ndest, const char *tmp_prefix, long long min_bytes)
{
    fprintf(stderr, "%s\n", label);
    unsigned char *old[4];
    size_t oldn[4];
    for (int i = 0; i < ndest; i++) {
        old[i] = lm_read_bytes(dests[i], &oldn[i]);
        CHECK(old[i] != NULL);
    }
    int visible = visible_files();

    pid_t pid = fork();
    if (pid == 0) {
        CHECK(lm_io_fault_set("stop-before-rename", NULL) == LM_OK); /* as larmor-cli does from LARMOR_IO_FAULT */
        fn(dest);
        _exit(0);
    }
    CHECK(pid > 0);
    if (pid <= 0)
        return;
    int status = 0;
    CHECK(waitpid(pid, &status, WUNTRACED) == pid);
    const int stopped = WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP;
    CHECK_MSG(stopped, "%s: the writer ended (status %d) instead of stopping before its rename", label, status);
    if (stopped) {
        long long sz = largest(tmp_prefix);
        fprintf(stderr, "  stopped before the rename with the temporary at %lld bytes; killed\n", sz);
        CHECK_MSG(sz >= min_bytes, "%s: temporary %lld bytes, expected at least %lld", label, sz, min_bytes);
        kill(pid, SIGKILL);
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "%s: not killed", label);
    }

    for (int i = 0; i < ndest; i++) {
        size_t n;
        unsigned char *now_b = lm_read_bytes(dests[i], &n);
        CHECK_MSG(now_b && n == oldn[i] && memcmp(now_b, old[i], n) == 0, "%s: %s changed", label, dests[i]);
        free(now_b);
        free(old[i]);
    }
    CHECK_MSG(visible_files() == visible, "%s: a visible file appeared", label);
    long long left = largest(tmp_prefix);
    if (left >= 0)
        fprintf(stderr, "  hidden temporary left by the killed writer: %lld bytes (removed)\n", left);
    remove_prefix(tmp_prefix);
}

int main(void)
{
    {
        lm_error fe;
        lm_error_clear(&fe);
        CHECK(lm_io_fault_set("stop-sometime", &fe) == LM_ERR_INVALID && strstr(fe.msg, "stop-sometime"));
        CHECK(lm_io_fault_set("none", &fe) == LM_OK);
    }
    lm_tmp_make("atomic-kill");
    lm_error err;
    lm_error_clear(&err);

    /* 1. lm_atomic's FILE* directly. */
    char *txt = strdup(lm_tmp_path("data.bin"));
    CHECK(lm_write_bytes(txt, "old content\n", 12) == 0);
    const char *d1[] = {txt};
    kill_before_rename("lm_atomic stream", write_stream, txt, d1, 1, ".data", 8 << 20);

    /* 2. lm_cfl_write: both .hdr and .cfl stay old. */
    char *base = strdup(lm_tmp_path("big"));
    int64_t dims[2] = {4, 3};
    lm_cfloat small[12];
    for (int i = 0; i < 12; i++)
        small[i] = (float)i + 0.5f * (float)I;
    CHECK_OK(lm_cfl_write(base, 2, dims, small, &err), &err);
    char *hdr = strdup(lm_tmp_path("big.hdr")), *cfl = strdup(lm_tmp_path("big.cfl"));
    const char *d2[] = {hdr, cfl};
    kill_before_rename("lm_cfl_write", write_cfl, base, d2, 2, ".big", 16 << 20);
    int nd = 0;
    int64_t rd[LM_CFL_MAX_DIMS];
    lm_cfloat *back = NULL;
    CHECK_OK(lm_cfl_read(base, &nd, rd, &back, &err), &err);
    CHECK(nd == 2 && rd[0] == 4 && rd[1] == 3 && back && memcmp(back, small, sizeof small) == 0);
    free(back);

#if LM_HAVE_ISMRMRD
    /* 3. lm_mrd_write: the old dataset still reads. */
    char *h5 = strdup(lm_tmp_path("scan.h5"));
    lm_traj *t = lm_traj_new(8, 2, &err);
    lm_kdata *k = lm_kdata_new(8, 1, &err);
    lm_geom g;
    lm_geom_init(&g, 8, 8, 1, 100);
    CHECK_OK(lm_mrd_write(h5, &g, t, k, &err), &err);
    const char *d3[] = {h5};
    kill_before_rename("lm_mrd_write", write_mrd, h5, d3, 1, ".scan", 4 << 20);
    lm_mrd r;
    CHECK_OK(lm_mrd_read(h5, &r, &err), &err);
    CHECK(r.traj && r.traj->m == 8);
    lm_mrd_clear(&r);
    lm_traj_free(t);
    lm_kdata_free(k);
    free(h5);
#endif
    free(txt);
    free(base);
    free(hdr);
    free(cfl);
    return lm_test_finish("test_atomic_kill");
}
