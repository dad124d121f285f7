/* The encoding cache's use inside the library (lm_encoding_cache.h): the
 * reconstruction session takes an encoding from it and hands it back. */
#ifndef LM_ENCODING_CACHE_IMPL_H
#define LM_ENCODING_CACHE_IMPL_H

#include "lm_encoding.h"
#include "lm_encoding_cache.h"

/* An encoding for d: the one kept from before (*hit 1: its normal
 * operator, plans and device copies as the last user left them), or a new
 * one made from the cache's own copies of d's arrays (*hit 0; the caller
 * prepares it as any encoding: lm_encoding_prepare_normal). The encoding
 * is the cache's: hand it back with lm_encoding_cache_release, never
 * lm_encoding_free. d->sens must be NULL (LM_ERR_INVALID otherwise). */
lm_code lm_encoding_cache_get(lm_encoding_cache *c, const lm_encoding_desc *d, lm_encoding **e, int *hit,
                              lm_error *err);
/* discard: the caller's set-up of e failed; the entry goes (when no one
 * else uses it). */
void lm_encoding_cache_release(lm_encoding_cache *c, lm_encoding *e, int discard);

#endif
