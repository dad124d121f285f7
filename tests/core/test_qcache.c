/* Q cache: store then load gives identical bytes; keys separate
 * trajectories, matrices and bases; damaged or truncated entries are
 * rejected and lm_compute_q recomputes and rewrites them. */
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lm_qcache.h"
#include "lm_metrics.h"
#include "lm_recon.h"
#include "lm_sums.h"
#include "lm_test.h"
#include "solver_common.h"

static char cache_root[256];

static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            remove_tree(sub);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static char *entry_path(const lm_geom *g, const lm_traj *t, const char *cls)
{
    char *dir = NULL, *path = NULL;
    lm_error err = {0};
    CHECK_OK(lm_qcache_dir(&dir, &err), &err);
    if (asprintf(&path, "%s/larmor-q-%016llx-%lldx%lldx%lld.bin", dir,
                 (unsigned long long)lm_qcache_key(g, t, cls), (long long)g->n[0], (long long)g->n[1],
                 (long long)g->n[2]) < 0)
        path = NULL;
    free(dir);
    return path;
}

static void flip_byte(const char *path, long offset)
{
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (!f)
        return;
    fseek(f, offset, SEEK_SET);
    int c = fgetc(f);
    fseek(f, offset, SEEK_SET);
    fputc(c ^ 0x5a, f);
    fclose(f);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(cache_root, sizeof cache_root, "%s/larmor-qcache-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(cache_root))
        LM_TEST_SKIP("cannot make a temporary folder");
    char xdg[300];
    snprintf(xdg, sizeof xdg, "%s/xdg", cache_root); /* does not exist yet: created */
    setenv("XDG_CACHE_HOME", xdg, 1);

    lm_error err = {0};
    char *dir = NULL;
    CHECK_OK(lm_qcache_dir(&dir, &err), &err);
    CHECK(dir && strcmp(dir + strlen(xdg), "/larmor") == 0);
    struct stat st;
    CHECK(dir && stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
    free(dir);

    lm_geom g;
    lm_geom_init(&g, 8, 6, 1, 200);
    lm_traj *t = tst_random_traj(&g, 80);
    lm_cfloat *q = tst_q_direct(&g, t), *back = NULL;
    const size_t bytes = (size_t)lm_q_count(g.n) * sizeof(lm_cfloat);

    /* Absent: LM_ERR_IO. */
    CHECK(lm_qcache_load(&g, t, "exact-single", &back, &err) == LM_ERR_IO && back == NULL);
    CHECK_OK(lm_qcache_store(&g, t, "exact-single", q, &err), &err);
    CHECK_OK(lm_qcache_load(&g, t, "exact-single", &back, &err), &err);
    CHECK(back && memcmp(back, q, bytes) == 0);
    free(back);
    back = NULL;

    /* Keys: trajectory (one sample nudged), matrix, basis. */
    uint64_t key = lm_qcache_key(&g, t, "exact-single");
    CHECK(key == lm_qcache_key(&g, t, "exact-single"));
    lm_traj *t2 = tst_random_traj(&g, 80);
    memcpy(t2->k, t->k, 3 * 80 * sizeof(float));
    t2->k[3 * 40 + 1] = nextafterf(t2->k[3 * 40 + 1], 100.0f);
    CHECK(lm_qcache_key(&g, t2, "exact-single") != key);
    CHECK(lm_qcache_load(&g, t2, "exact-single", &back, &err) == LM_ERR_IO);
    lm_geom g2 = g;
    g2.n[1] = 7;
    CHECK(lm_qcache_key(&g2, t, "exact-single") != key);
    g2 = g;
    g2.basis = LM_BASIS_DIRAC;
    CHECK(lm_qcache_key(&g2, t, "exact-single") != key);
    CHECK(lm_qcache_load(&g2, t, "exact-single", &back, &err) == LM_ERR_IO);
    lm_traj_free(t2);

    /* Damage: a data byte, a header byte, a truncation; each is ignored. */
    char *path = entry_path(&g, t, "exact-single");
    CHECK(path && stat(path, &st) == 0 && (size_t)st.st_size == 96 + bytes);
    flip_byte(path, 96 + 1000);
    CHECK(lm_qcache_load(&g, t, "exact-single", &back, &err) == LM_ERR_IO && back == NULL);
    CHECK(strstr(err.msg, "checksum") != NULL);
    fprintf(stderr, "damaged entry: %s\n", err.msg);
    CHECK_OK(lm_qcache_store(&g, t, "exact-single", q, &err), &err);
    flip_byte(path, 30);
    CHECK(lm_qcache_load(&g, t, "exact-single", &back, &err) == LM_ERR_IO);
    CHECK_OK(lm_qcache_store(&g, t, "exact-single", q, &err), &err);
    CHECK(truncate(path, 96 + (off_t)bytes - 8) == 0);
    CHECK(lm_qcache_load(&g, t, "exact-single", &back, &err) == LM_ERR_IO);
    CHECK(strstr(err.msg, "truncated") != NULL);

    /* lm_compute_q on the truncated entry: recomputes (cpu-sp, against the
     * direct double sum), then the rewritten entry is a hit. */
    lm_cfloat *qc = NULL;
    int from_cache = -1;
    CHECK_OK(lm_compute_q(&g, t, "cpu-sp", 1, NULL, &qc, &from_cache, &err), &err);
    CHECK(from_cache == 0);
    if (qc) {
        double rel = lm_rel_error_c(qc, q, lm_q_count(g.n));
        CHECK_MSG(rel < 1e-5, "cpu-dp Q vs direct: %g", rel);
        free(qc);
    }
    CHECK(stat(path, &st) == 0 && (size_t)st.st_size == 96 + bytes);
    CHECK_OK(lm_compute_q(&g, t, "cpu-simd", 1, NULL, &qc, &from_cache, &err), &err);
    CHECK(from_cache == 1);
    free(qc);
    /* Accuracy classes: the reference cpu-dp never takes the single-precision
     * entry, a NUFFT keeps its own; each is a hit the second time. */
    const char *cls[2] = {"cpu-dp", "cpu-nufft"};
    for (int i = 0; i < 2; i++) {
        CHECK_OK(lm_compute_q(&g, t, cls[i], 1, NULL, &qc, &from_cache, &err), &err);
        CHECK_MSG(from_cache == 0, "%s took another class's Q", cls[i]);
        free(qc);
        CHECK_OK(lm_compute_q(&g, t, cls[i], 1, NULL, &qc, &from_cache, &err), &err);
        CHECK_MSG(from_cache == 1, "%s did not find its own Q", cls[i]);
        free(qc);
    }
    CHECK(lm_qcache_key(&g, t, "exact-double") != key && lm_qcache_key(&g, t, "cpu-nufft") != key);
    /* use_cache = 0 never reads it. */
    CHECK_OK(lm_compute_q(&g, t, "cpu-dp", 0, NULL, &qc, &from_cache, &err), &err);
    CHECK(from_cache == 0);
    free(qc);

    /* No XDG_CACHE_HOME (or a relative one): $HOME/.cache/larmor. */
    setenv("XDG_CACHE_HOME", "relative/path", 1);
    char home[300];
    snprintf(home, sizeof home, "%s/home", cache_root);
    mkdir(home, 0700);
    setenv("HOME", home, 1);
    CHECK_OK(lm_qcache_dir(&dir, &err), &err);
    CHECK(dir && strcmp(dir + strlen(home), "/.cache/larmor") == 0);
    free(dir);

    free(path);
    free(q);
    lm_traj_free(t);
    remove_tree(cache_root);
    return lm_test_finish("qcache");
}
