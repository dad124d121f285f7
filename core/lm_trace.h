/* Milestones of a run for whoever wants to see where its time goes: the
 * library calls lm_trace("what") at the boundaries of its set-up steps
 * (encoding made, Q ready, E^H d done, ...); nothing happens unless a front
 * end installed a sink (larmor-cli does with LARMOR_TRACE set). The library
 * never prints. */
#ifndef LM_TRACE_H
#define LM_TRACE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*lm_trace_fn)(const char *what);

/* Install (or with NULL remove) the sink; set it before any run starts. */
void lm_trace_set(lm_trace_fn fn);
void lm_trace(const char *what);

#ifdef __cplusplus
}
#endif

#endif
