/* Encoding operators kept between reconstructions of a long-lived process
 * (larmor-cli serve): each with its Q and Toeplitz operator, the NUFFT
 * plan and the trajectory on the variant's device, so that a later
 * reconstruction of the same acquisition pays for none of them. An entry
 * is found by what the operator depends on, compared exactly: the
 * trajectory (coordinates, weights, sample times), the geometry (matrix,
 * FOV, basis), the variant, the time segmentation (count, interpolator and
 * field map) and the CPU thread count. Encodings with coil maps are not
 * kept (maps usually change with the data, and comparing them would cost
 * as much as a gigabyte of reading).
 *
 * Least recently used entries go first once the bytes held (host copies
 * and the operator's host or device memory, estimated from the sizes)
 * exceed the cap; the most recent entry stays even when it alone is over
 * the cap, and entries in use are never freed. One thread at a time.
 *
 * A front end makes one and hands it to lm_recon_opts.encodings; the
 * reconstruction takes encodings from it (lm_encoding_cache_impl.h). */
#ifndef LM_ENCODING_CACHE_H
#define LM_ENCODING_CACHE_H

#include "lm_error.h"

typedef struct lm_encoding_cache lm_encoding_cache;

/* cap_bytes > 0. */
lm_code lm_encoding_cache_new(double cap_bytes, lm_encoding_cache **out, lm_error *err);
void lm_encoding_cache_free(lm_encoding_cache *c);

typedef struct lm_encoding_cache_stats {
    int entries;
    double bytes, cap_bytes;
    long long hits, misses, evictions;
} lm_encoding_cache_stats;

void lm_encoding_cache_get_stats(const lm_encoding_cache *c, lm_encoding_cache_stats *s);

#endif
