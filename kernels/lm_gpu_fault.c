/* A GPU that fails (lm_gpu.h, "faults"): the lost state after an
 * unrecoverable driver error, and the test-only fault injection that lets
 * the tests and the CLI (LARMOR_GPU_FAULT, read by the front end) exercise out-of-memory and a
 * lost device at plan time or in the middle of CG. Plain C in every build:
 * the CUDA code calls lm_gpu_fault_check at its sites; without CUDA nothing
 * calls it and only the parsing runs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_gpu.h"

/* The CG fault fires at this application of E^H E: a few iterations in. */
#define LM_GFAULT_CG_APPLY 3

typedef enum { FAULT_NONE = 0, FAULT_NOMEM, FAULT_LOST } fault_kind;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static fault_kind g_kind;      /* armed fault */
static lm_gfault_site g_site;  /* where it fires (ALLOC: plan time, APPLY: CG) */
static int g_applies;          /* E^H E applications seen while armed for APPLY */
static char g_spec[32];
/* Read without the lock on the fast path; written under it. */
static int g_armed, g_lost;
static char g_lost_msg[400];

static lm_code parse(const char *spec, fault_kind *kind, lm_gfault_site *site, lm_error *err)
{
    *kind = FAULT_NONE;
    *site = LM_GFAULT_SITE_ALLOC;
    if (!spec || !*spec || strcmp(spec, "none") == 0)
        return LM_OK;
    static const struct { const char *name; fault_kind k; lm_gfault_site s; } all[] = {
        {"nomem:plan", FAULT_NOMEM, LM_GFAULT_SITE_ALLOC}, {"nomem:cg", FAULT_NOMEM, LM_GFAULT_SITE_APPLY},
        {"lost:plan", FAULT_LOST, LM_GFAULT_SITE_ALLOC},   {"lost:cg", FAULT_LOST, LM_GFAULT_SITE_APPLY},
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(spec, all[i].name) == 0) {
            *kind = all[i].k;
            *site = all[i].s;
            return LM_OK;
        }
    return lm_fail(err, LM_ERR_INVALID, "GPU fault '%s' is unknown (nomem:plan, nomem:cg, lost:plan, lost:cg, none)",
                   spec);
}

/* Caller holds g_lock. */
static void arm(fault_kind kind, lm_gfault_site site, const char *spec)
{
    g_kind = kind;
    g_site = site;
    g_applies = 0;
    snprintf(g_spec, sizeof g_spec, "%s", spec ? spec : "");
    __atomic_store_n(&g_armed, kind != FAULT_NONE, __ATOMIC_RELEASE);
}

lm_code lm_gpu_fault_set(const char *spec, lm_error *err)
{
    fault_kind kind;
    lm_gfault_site site;
    lm_code rc = parse(spec, &kind, &site, err);
    if (rc != LM_OK)
        return rc;
    pthread_mutex_lock(&g_lock);
    arm(kind, site, spec);
    g_lost_msg[0] = '\0';
    __atomic_store_n(&g_lost, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_lock);
    return LM_OK;
}

void lm_gpu_mark_lost(const char *msg)
{
    pthread_mutex_lock(&g_lock);
    if (!g_lost)
        snprintf(g_lost_msg, sizeof g_lost_msg, "%s", msg && *msg ? msg : "driver error");
    __atomic_store_n(&g_lost, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_lock);
}

int lm_gpu_lost(void)
{
    return __atomic_load_n(&g_lost, __ATOMIC_ACQUIRE);
}

lm_code lm_gpu_fault_check(lm_gfault_site site, const char *who, lm_error *err)
{
    if (!__atomic_load_n(&g_armed, __ATOMIC_ACQUIRE) && !__atomic_load_n(&g_lost, __ATOMIC_ACQUIRE))
        return LM_OK;
    if (!who)
        who = "gpu";
    lm_code rc = LM_OK;
    char lost[sizeof g_lost_msg + 64] = "";
    pthread_mutex_lock(&g_lock);
    if (g_lost) {
        rc = lm_fail(err, LM_ERR_GPU, "%s: the GPU is unusable after an earlier driver error (%.300s); restart the "
                     "program to use it again", who, g_lost_msg);
    } else if (g_kind != FAULT_NONE && site == g_site && site != LM_GFAULT_SITE_ENTRY &&
               (site == LM_GFAULT_SITE_ALLOC || ++g_applies >= LM_GFAULT_CG_APPLY)) {
        if (g_kind == FAULT_NOMEM) {
            rc = lm_fail(err, LM_ERR_NOMEM, "%s: out of GPU memory (injected: LARMOR_GPU_FAULT=%s)", who, g_spec);
        } else {
            snprintf(lost, sizeof lost, "%s: GPU lost (injected: LARMOR_GPU_FAULT=%s)", who, g_spec);
            rc = lm_fail(err, LM_ERR_GPU, "%s", lost);
        }
        arm(FAULT_NONE, LM_GFAULT_SITE_ALLOC, NULL); /* once; a lost GPU stays lost below */
    }
    pthread_mutex_unlock(&g_lock);
    if (lost[0])
        lm_gpu_mark_lost(lost);
    return rc;
}
