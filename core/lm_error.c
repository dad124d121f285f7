#include "lm_error.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

lm_code lm_fail(lm_error *err, lm_code code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

void lm_error_clear(lm_error *err)
{
    if (err) {
        err->code = LM_OK;
        err->msg[0] = '\0';
    }
}

const char *lm_code_name(lm_code code)
{
    switch (code) {
    case LM_OK: return "ok";
    case LM_ERR_IO: return "i/o error";
    case LM_ERR_FORMAT: return "bad format";
    case LM_ERR_NOMEM: return "out of memory";
    case LM_ERR_INVALID: return "invalid argument";
    case LM_ERR_UNSUPPORTED: return "unsupported";
    case LM_ERR_CANCELLED: return "cancelled";
    case LM_ERR_GPU: return "gpu error";
    case LM_ERR_INTERNAL: return "internal error";
    }
    return "unknown error";
}

int lm_size_mul(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return 0;
    *out = r;
    return 1;
}

void *lm_alloc(size_t count, size_t elem, lm_error *err, const char *what)
{
    size_t bytes;
    if (count > LM_MAX_ELEMENTS || !lm_size_mul(count, elem, &bytes)) {
        lm_fail(err, LM_ERR_NOMEM, "%s: size %zu x %zu is absurd", what, count, elem);
        return NULL;
    }
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        lm_fail(err, LM_ERR_NOMEM, "%s: cannot allocate %zu bytes", what, bytes);
    return p;
}

void *lm_calloc(size_t count, size_t elem, lm_error *err, const char *what)
{
    size_t bytes;
    if (count > LM_MAX_ELEMENTS || !lm_size_mul(count, elem, &bytes)) {
        lm_fail(err, LM_ERR_NOMEM, "%s: size %zu x %zu is absurd", what, count, elem);
        return NULL;
    }
    void *p = calloc(count ? count : 1, elem ? elem : 1);
    if (!p)
        lm_fail(err, LM_ERR_NOMEM, "%s: cannot allocate %zu bytes", what, bytes);
    return p;
}
