/* Error codes with a message, FINUFFT-style: every library function returns
 * an lm_code and, on failure, fills an lm_error that a front end prints as
 * one line. Nothing below the front ends exits, aborts or prints. */
#ifndef LM_ERROR_H
#define LM_ERROR_H

#include <stddef.h>

typedef enum lm_code {
    LM_OK = 0,
    LM_ERR_IO,          /* missing, unreadable or unwritable file */
    LM_ERR_FORMAT,      /* malformed, truncated or inconsistent content */
    LM_ERR_NOMEM,       /* allocation failed or size absurd */
    LM_ERR_INVALID,     /* bad argument or option */
    LM_ERR_UNSUPPORTED, /* valid but not handled (e.g. variant unavailable) */
    LM_ERR_CANCELLED,   /* a monitor asked to stop */
    LM_ERR_GPU,         /* CUDA driver/runtime failure */
    LM_ERR_INTERNAL
} lm_code;

typedef struct lm_error {
    lm_code code;
    char msg[512];
} lm_error;

/* Sets err (may be NULL) and returns code, so callers write
 *   return lm_fail(err, LM_ERR_FORMAT, "%s: truncated", path); */
lm_code lm_fail(lm_error *err, lm_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void lm_error_clear(lm_error *err);
const char *lm_code_name(lm_code code);

/* Overflow-checked size arithmetic for sizes read from files: returns 0 on
 * overflow. lm_alloc/lm_calloc also refuse counts above LM_MAX_ELEMENTS. */
#define LM_MAX_ELEMENTS ((size_t)1 << 36) /* 64 Gi elements: absurd beyond */
int lm_size_mul(size_t a, size_t b, size_t *out);
/* malloc that reports failure through err; size in bytes (checked). */
void *lm_alloc(size_t count, size_t elem, lm_error *err, const char *what);
void *lm_calloc(size_t count, size_t elem, lm_error *err, const char *what);

#endif
