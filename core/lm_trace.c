#include "lm_trace.h"

static lm_trace_fn g_sink;

void lm_trace_set(lm_trace_fn fn)
{
    __atomic_store_n(&g_sink, fn, __ATOMIC_RELEASE);
}

void lm_trace(const char *what)
{
    lm_trace_fn fn = __atomic_load_n(&g_sink, __ATOMIC_ACQUIRE);
    if (fn)
        fn(what);
}
