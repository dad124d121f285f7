/* gzip output compressed on every core: the bytes are cut into blocks,
 * each block is deflated by libdeflate in its own thread as a complete gzip
 * member (header, deflate stream, CRC-32, length), and the members are
 * written in order. RFC 1952 allows a file of several members, read as the
 * concatenation of their data: zlib's gzread (libniftiio, FSL, ITK),
 * Python's gzip (nibabel) and gunzip all read it whole. */
#ifndef LM_GZIP_PARALLEL_H
#define LM_GZIP_PARALLEL_H

#include <stddef.h>
#include <stdio.h>

#include "lm_error.h"

/* libdeflate's level: 1 is the fastest and on magnitude images within a few
 * per cent of level 6's size (BENCHMARKS.md, compressed output) */
#define LM_GZIP_LEVEL 1

/* Writes the n bytes of parts[0..nparts-1] (in order, as one stream) to f
 * as gzip members of at most block bytes each (0: a size chosen for the
 * thread count), at libdeflate level (1..12). what names the file in
 * errors. *written (may be NULL) gets the compressed bytes written. */
lm_code lm_gzip_parallel_write(FILE *f, const void *const *parts, const size_t *sizes, int nparts, int level,
                               size_t block, size_t *written, const char *what, lm_error *err);

#endif
