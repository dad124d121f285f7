/* On-disk Q cache (lm_qcache.h).
 *
 * File: $XDG_CACHE_HOME/larmor/larmor-q-<key, 16 hex>-<nx>x<ny>x<nz>.bin
 *   bytes  0..7   magic "LMQCACHE"
 *          8..11  format version (1)          12..15 header size (96)
 *         16..23  key                         24..47 n[3] (int64)
 *         48..55  m (samples)                 56..59 basis, 60..63 zero
 *         64..71  value count (complex)       72..79 checksum of the data
 *         80..87  checksum of bytes 0..79     88..95 zero
 *   then count complex64 values (interleaved float re, im).
 * Integers little-endian; the data is the host's float layout (every
 * supported host is little-endian IEEE). Any mismatch (magic, version,
 * key, sizes, either checksum, file length) makes the entry stale: load
 * reports LM_ERR_IO and the caller recomputes and overwrites it. */
#include "lm_qcache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lm_atomic.h"

#define QC_VERSION 1u
#define QC_HEADER 96

static const uint64_t fnv_offset = 1469598103934665603ull;
static const uint64_t fnv_prime = 1099511628211ull;

static uint64_t fnv_bytes(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= fnv_prime;
    }
    return h;
}

/* FNV-1a over 64-bit words: the data is large (128 MiB at 128^3) and only
 * needs to catch damage, so eight bytes per step. */
static uint64_t fnv_words(const void *data, size_t len)
{
    uint64_t h = fnv_offset;
    const unsigned char *p = data;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h ^= w;
        h *= fnv_prime;
    }
    return fnv_bytes(h, p + i, len - i);
}

static void put_u32(unsigned char *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *b)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | b[i];
    return v;
}

static uint64_t get_u64(const unsigned char *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | b[i];
    return v;
}

uint64_t lm_qcache_key(const lm_geom *g, const lm_traj *t, const char *cls)
{
    return lm_qcache_key_sets(g, t, cls, 0, 1);
}

uint64_t lm_qcache_key_sets(const lm_geom *g, const lm_traj *t, const char *cls, uint64_t extra, int64_t nsets)
{
    unsigned char b[8];
    uint64_t h = fnv_bytes(fnv_offset, "larmor-q-1", 10);
    if (cls && cls[0])
        h = fnv_bytes(h, cls, strlen(cls) + 1);
    if (extra || nsets != 1) { /* time segments: Q_ll' depends on b_l(t_m) too */
        put_u64(b, extra);
        h = fnv_bytes(h, "segments", 8);
        h = fnv_bytes(h, b, 8);
        put_u64(b, (uint64_t)nsets);
        h = fnv_bytes(h, b, 8);
    }
    for (int a = 0; a < 3; a++) {
        put_u64(b, (uint64_t)g->n[a]);
        h = fnv_bytes(h, b, 8);
    }
    put_u32(b, (uint32_t)g->basis);
    h = fnv_bytes(h, b, 4);
    put_u64(b, (uint64_t)t->m);
    h = fnv_bytes(h, b, 8);
    /* The samples themselves, bit for bit (3 floats per sample). */
    const float *k = t->k;
    for (int64_t i = 0; i < 3 * t->m; i++) {
        uint32_t u;
        memcpy(&u, &k[i], 4);
        put_u32(b, u);
        h = fnv_bytes(h, b, 4);
    }
    return h;
}

/* mkdir -p, 0700 for folders we create (XDG base directory spec). */
static lm_code make_dirs(char *path, lm_error *err)
{
    for (char *p = path + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(path, 0700) != 0 && errno != EEXIST) {
                lm_code rc = lm_fail(err, LM_ERR_IO, "%s: cannot create the Q cache folder: %s", path,
                                     strerror(errno));
                *p = c;
                return rc;
            }
            *p = c;
            if (c == '\0')
                break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return lm_fail(err, LM_ERR_IO, "%s: the Q cache location is not a folder", path);
    return LM_OK;
}

lm_code lm_qcache_dir(char **dir, lm_error *err)
{
    *dir = NULL;
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    char *path = NULL;
    int len;
    /* The spec says relative XDG paths are invalid and to be ignored. */
    if (xdg && xdg[0] == '/')
        len = asprintf(&path, "%s/larmor", xdg);
    else if (home && home[0] == '/')
        len = asprintf(&path, "%s/.cache/larmor", home);
    else
        return lm_fail(err, LM_ERR_IO, "Q cache: neither XDG_CACHE_HOME nor HOME is set");
    if (len < 0 || !path)
        return lm_fail(err, LM_ERR_NOMEM, "Q cache: cannot allocate the folder name");
    lm_code rc = make_dirs(path, err);
    if (rc != LM_OK) {
        free(path);
        return rc;
    }
    *dir = path;
    return LM_OK;
}

static lm_code entry_path(const lm_geom *g, uint64_t key, char **path, lm_error *err)
{
    char *dir = NULL;
    lm_code rc = lm_qcache_dir(&dir, err);
    if (rc != LM_OK)
        return rc;
    int len = asprintf(path, "%s/larmor-q-%016llx-%lldx%lldx%lld.bin", dir, (unsigned long long)key,
                       (long long)g->n[0], (long long)g->n[1], (long long)g->n[2]);
    free(dir);
    if (len < 0) {
        *path = NULL;
        return lm_fail(err, LM_ERR_NOMEM, "Q cache: cannot allocate the file name");
    }
    return LM_OK;
}

static void fill_header(unsigned char *h, const lm_geom *g, const lm_traj *t, uint64_t key,
                        int64_t count, uint64_t data_sum)
{
    memset(h, 0, QC_HEADER);
    memcpy(h, "LMQCACHE", 8);
    put_u32(h + 8, QC_VERSION);
    put_u32(h + 12, QC_HEADER);
    put_u64(h + 16, key);
    for (int a = 0; a < 3; a++)
        put_u64(h + 24 + 8 * a, (uint64_t)g->n[a]);
    put_u64(h + 48, (uint64_t)t->m);
    put_u32(h + 56, (uint32_t)g->basis);
    put_u64(h + 64, (uint64_t)count);
    put_u64(h + 72, data_sum);
    put_u64(h + 80, fnv_bytes(fnv_offset, h, 80));
}

static lm_code check_args(const lm_geom *g, const lm_traj *t, int64_t nsets, lm_error *err)
{
    if (!g || !t || !t->k || t->m <= 0)
        return lm_fail(err, LM_ERR_INVALID, "Q cache: missing geometry or trajectory");
    if (nsets < 1 || nsets > 65536)
        return lm_fail(err, LM_ERR_INVALID, "Q cache: %lld blocks is out of range", (long long)nsets);
    for (int a = 0; a < 3; a++)
        if (g->n[a] <= 0 || g->n[a] > 4096)
            return lm_fail(err, LM_ERR_INVALID, "Q cache: matrix out of range");
    return LM_OK;
}

lm_code lm_qcache_load(const lm_geom *g, const lm_traj *t, const char *cls, lm_cfloat **q, lm_error *err)
{
    return lm_qcache_load_sets(g, t, cls, 0, 1, q, err);
}

lm_code lm_qcache_load_sets(const lm_geom *g, const lm_traj *t, const char *cls, uint64_t extra, int64_t nsets,
                            lm_cfloat **q, lm_error *err)
{
    *q = NULL;
    lm_code rc = check_args(g, t, nsets, err);
    if (rc != LM_OK)
        return rc;
    const uint64_t key = lm_qcache_key_sets(g, t, cls, extra, nsets);
    const int64_t count = lm_q_count(g->n) * nsets;
    char *path = NULL;
    rc = entry_path(g, key, &path, err);
    if (rc != LM_OK)
        return rc;

    FILE *f = fopen(path, "rb");
    if (!f) {
        rc = lm_fail(err, LM_ERR_IO, "%s: no cached Q: %s", path, strerror(errno));
        free(path);
        return rc;
    }
    unsigned char h[QC_HEADER], want[QC_HEADER];
    lm_cfloat *data = NULL;
    const char *why = NULL;
    if (fread(h, 1, QC_HEADER, f) != QC_HEADER) {
        why = "truncated header";
    } else {
        /* Compare everything but the data checksum (and the header sum
         * that covers it) against what this request expects. */
        fill_header(want, g, t, key, count, get_u64(h + 72));
        if (memcmp(h, "LMQCACHE", 8) != 0)
            why = "not a Q cache file";
        else if (get_u32(h + 8) != QC_VERSION)
            why = "other format version";
        else if (memcmp(h, want, QC_HEADER) != 0)
            why = "stale or damaged header";
    }
    if (!why) {
        data = lm_alloc((size_t)count, sizeof *data, err, "cached Q");
        if (!data) {
            fclose(f);
            free(path);
            return LM_ERR_NOMEM;
        }
        if (fread(data, sizeof *data, (size_t)count, f) != (size_t)count)
            why = "truncated data";
        else if (fgetc(f) != EOF)
            why = "trailing bytes";
        else if (fnv_words(data, (size_t)count * sizeof *data) != get_u64(h + 72))
            why = "checksum mismatch";
    }
    fclose(f);
    if (why) {
        rc = lm_fail(err, LM_ERR_IO, "%s: cached Q ignored: %s", path, why);
        free(data);
        free(path);
        return rc;
    }
    free(path);
    *q = data;
    return LM_OK;
}

lm_code lm_qcache_store(const lm_geom *g, const lm_traj *t, const char *cls, const lm_cfloat *q,
                         lm_error *err)
{
    return lm_qcache_store_sets(g, t, cls, 0, 1, q, err);
}

lm_code lm_qcache_store_sets(const lm_geom *g, const lm_traj *t, const char *cls, uint64_t extra, int64_t nsets,
                             const lm_cfloat *q, lm_error *err)
{
    lm_code rc = check_args(g, t, nsets, err);
    if (rc != LM_OK)
        return rc;
    if (!q)
        return lm_fail(err, LM_ERR_INVALID, "Q cache: nothing to store");
    const uint64_t key = lm_qcache_key_sets(g, t, cls, extra, nsets);
    const int64_t count = lm_q_count(g->n) * nsets;
    char *path = NULL;
    rc = entry_path(g, key, &path, err);
    if (rc != LM_OK)
        return rc;

    unsigned char h[QC_HEADER];
    fill_header(h, g, t, key, count, fnv_words(q, (size_t)count * sizeof *q));
    lm_atomic a;
    rc = lm_atomic_begin(&a, path, 1, err);
    if (rc != LM_OK) {
        free(path);
        return rc;
    }
    if (fwrite(h, 1, QC_HEADER, a.f) != QC_HEADER ||
        fwrite(q, sizeof *q, (size_t)count, a.f) != (size_t)count) {
        rc = lm_fail(err, LM_ERR_IO, "%s: cannot write the Q cache: %s", path, strerror(errno));
        lm_atomic_abort(&a);
        free(path);
        return rc;
    }
    rc = lm_atomic_commit(&a, err);
    free(path);
    return rc;
}
