/* Parallel gzip members (lm_gzip_parallel.h). */
#include "lm_gzip_parallel.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>
#ifdef _OPENMP /* the fuzz build compiles core/ without it: one thread */
#include <omp.h>
#else
static int omp_get_max_threads(void) { return 1; }
#endif

/* Blocks of 256 KiB and up lose under 1 % of the size against one stream;
 * two per thread even out blocks that compress at different speeds. */
#define BLOCK_MIN ((size_t)256 << 10)
#define BLOCK_MAX ((size_t)4 << 20)

typedef struct gz_block {
    size_t start, len;  /* in the concatenated input */
    void *out;
    size_t out_len;     /* 0: failed */
} gz_block;

/* The block's bytes: a pointer into one part, or copied into scratch when
 * the block spans parts. */
static const void *block_bytes(const void *const *parts, const size_t *sizes, int nparts, size_t start, size_t len,
                               unsigned char *scratch)
{
    size_t base = 0;
    int p = 0;
    while (p < nparts && start >= base + sizes[p])
        base += sizes[p++];
    if (p < nparts && start + len <= base + sizes[p])
        return (const unsigned char *)parts[p] + (start - base);
    size_t done = 0;
    for (; p < nparts && done < len; p++) {
        const size_t off = start + done - base, take = sizes[p] - off < len - done ? sizes[p] - off : len - done;
        memcpy(scratch + done, (const unsigned char *)parts[p] + off, take);
        done += take;
        base += sizes[p];
    }
    return scratch;
}

lm_code lm_gzip_parallel_write(FILE *f, const void *const *parts, const size_t *sizes, int nparts, int level,
                               size_t block, size_t *written, const char *what, lm_error *err)
{
    if (written)
        *written = 0;
    if (!f || nparts < 0 || (nparts > 0 && (!parts || !sizes)) || level < 1 || level > 12)
        return lm_fail(err, LM_ERR_INVALID, "%s: gzip: bad arguments", what);
    size_t total = 0;
    for (int p = 0; p < nparts; p++)
        total += sizes[p];
    const int threads = omp_get_max_threads() > 0 ? omp_get_max_threads() : 1;
    if (block == 0) {
        block = total / (2 * (size_t)threads);
        block = block < BLOCK_MIN ? BLOCK_MIN : block > BLOCK_MAX ? BLOCK_MAX : block;
    }
    const size_t nb = total ? (total + block - 1) / block : 1; /* an empty stream is one empty member */
    gz_block *b = calloc(nb, sizeof *b);
    if (!b)
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory for the gzip blocks", what);
    for (size_t i = 0; i < nb; i++) {
        b[i].start = i * block;
        b[i].len = i + 1 < nb ? block : total - i * block;
    }
    int failed = 0;
#pragma omp parallel if (nb > 1) reduction(| : failed)
    {
        struct libdeflate_compressor *c = libdeflate_alloc_compressor(level);
        unsigned char *scratch = c ? malloc(block) : NULL;
        if (!scratch)
            failed = 1;
#pragma omp for schedule(dynamic, 1)
        for (size_t i = 0; i < nb; i++) {
            if (!scratch)
                continue;
            const void *in = block_bytes(parts, sizes, nparts, b[i].start, b[i].len, scratch);
            const size_t bound = libdeflate_gzip_compress_bound(c, b[i].len);
            if (!(b[i].out = malloc(bound))) {
                failed = 1;
                continue;
            }
            b[i].out_len = libdeflate_gzip_compress(c, in, b[i].len, b[i].out, bound);
            if (b[i].out_len == 0) /* cannot happen within the bound */
                failed = 1;
        }
        free(scratch);
        if (c)
            libdeflate_free_compressor(c);
    }
    lm_code rc = LM_OK;
    if (failed)
        rc = lm_fail(err, LM_ERR_NOMEM, "%s: out of memory while compressing", what);
    size_t out = 0;
    for (size_t i = 0; i < nb && rc == LM_OK; i++) {
        errno = 0;
        if (fwrite(b[i].out, 1, b[i].out_len, f) != b[i].out_len)
            rc = lm_fail(err, LM_ERR_IO, "%s: cannot write: %s", what,
                         errno ? strerror(errno) : "short write (disk full or file too large?)");
        out += b[i].out_len;
    }
    for (size_t i = 0; i < nb; i++)
        free(b[i].out);
    free(b);
    if (rc == LM_OK && written)
        *written = out;
    return rc;
}
