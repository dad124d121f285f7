/* The tuning options (lm_tuning.h): defaults, the environment's overrides
 * for front ends, and the process's current set. */
#include "lm_tuning.h"

#include "lm_io_ismrmrd.h"
#include "lm_nufft.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static lm_tuning g_tuning;
static int g_init;

void lm_tuning_default(lm_tuning *t)
{
    memset(t, 0, sizeof *t);
    t->gpu_prewarm = 1;
    t->gpu_cg_fft = 3;
    t->gpu_block_xfuse = 1;
    t->gpu_nufft_merge = t->gpu_nufft_v4 = t->gpu_nufft_overlap = t->gpu_nufft_repro = 1;
    t->nufft_blocks_per_thread = LM_NUFFT_BLOCKS_PER_THREAD;
}

static lm_code env_int(const char *name, long lo, long hi, int *out, lm_error *err)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return LM_OK;
    char *end = NULL;
    errno = 0;
    const long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return lm_fail(err, LM_ERR_INVALID, "%s=%s: not a whole number in %ld..%ld", name, v, lo, hi);
    *out = (int)x;
    return LM_OK;
}

static lm_code env_bytes(const char *name, long long *out, lm_error *err)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return LM_OK;
    char *end = NULL;
    errno = 0;
    const long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < 0)
        return lm_fail(err, LM_ERR_INVALID, "%s=%s: not a byte count (a whole number, 0 or more)", name, v);
    *out = x;
    return LM_OK;
}

lm_code lm_tuning_from_env(lm_tuning *t, lm_error *err)
{
    lm_tuning_default(t);
    const char *v = getenv("LARMOR_GPU_DEVICES");
    if (v && strlen(v) >= sizeof t->gpu_devices)
        return lm_fail(err, LM_ERR_INVALID, "LARMOR_GPU_DEVICES=%.40s...: too long", v);
    if (v)
        snprintf(t->gpu_devices, sizeof t->gpu_devices, "%s", v);
    v = getenv("LARMOR_GPU_NUFFT_FFT");
    t->gpu_nufft_cufft = v && strcmp(v, "cufft") == 0;
    t->gpu_block_cufft = getenv("LARMOR_GPU_BLOCK_CUFFT") != NULL;
    t->trace = getenv("LARMOR_TRACE") != NULL;
    lm_code rc = env_int("LARMOR_GPU_PREWARM", 0, 1, &t->gpu_prewarm, err);
    if (rc == LM_OK)
        rc = env_int("LARMOR_GPU_CM_TILE", 0, 1 << 20, &t->gpu_cm_tile, err);
    if (rc == LM_OK)
        rc = env_int("LARMOR_GPU_CG_FFT", -1000, 1000, &t->gpu_cg_fft, err);
    if (rc == LM_OK) /* (out-of-range modes clamp, as they always did) */
        t->gpu_cg_fft = t->gpu_cg_fft < 0 ? 0 : t->gpu_cg_fft > 3 ? 3 : t->gpu_cg_fft;
    if (rc == LM_OK)
        rc = env_int("LARMOR_GPU_BLOCK_XFUSE", 0, 1, &t->gpu_block_xfuse, err);
    if (rc == LM_OK)
        rc = env_int("LARMOR_NUFFT_BLOCKS_PER_THREAD", 0, 1 << 16, &t->nufft_blocks_per_thread, err);
    if (rc == LM_OK)
        rc = env_int("LARMOR_GPU_NUFFT_MAXSUB", 32, 1 << 20, &t->gpu_nufft_maxsub, err);
    if (rc == LM_OK)
        rc = env_int("LARMOR_GPU_NUFFT_SMMIN", 1, 1 << 20, &t->gpu_nufft_smmin, err);
    if (rc == LM_OK)
        rc = env_int("LARMOR_GPU_NUFFT_MERGE", 0, 1, &t->gpu_nufft_merge, err);
    if (rc == LM_OK)
        rc = env_int("LARMOR_GPU_NUFFT_V4", 0, 1, &t->gpu_nufft_v4, err);
    if (rc == LM_OK)
        rc = env_int("LARMOR_GPU_NUFFT_OVERLAP", 0, 1, &t->gpu_nufft_overlap, err);
    if (rc == LM_OK)
        rc = env_int("LARMOR_GPU_NUFFT_REPRO", 0, 1, &t->gpu_nufft_repro, err);
    if (rc == LM_OK)
        rc = env_int("LARMOR_GPU_PHASOR_NOSYM", 0, 1 << 30, &t->gpu_phasor_nosym, err);
    if (rc == LM_OK)
        rc = env_bytes("LARMOR_GPU_DYN_BUDGET", &t->gpu_dyn_budget, err);
    v = getenv("LARMOR_MRD_TRAJ_UNITS");
    if (rc == LM_OK && v && *v) {
        lm_mrd_units u;
        if (lm_mrd_units_parse(v, &u, NULL) != LM_OK)
            return lm_fail(err, LM_ERR_INVALID, "LARMOR_MRD_TRAJ_UNITS='%s' unknown (auto, normalized or cycles)", v);
        t->mrd_traj_units = (int)u;
    }
    return rc;
}

void lm_tuning_set(const lm_tuning *t)
{
    pthread_mutex_lock(&g_lock);
    g_tuning = *t;
    g_init = 1;
    pthread_mutex_unlock(&g_lock);
    lm_mrd_units_set_default((lm_mrd_units)t->mrd_traj_units);
}

const lm_tuning *lm_tuning_get(void)
{
    pthread_mutex_lock(&g_lock);
    if (!g_init) {
        lm_tuning_default(&g_tuning);
        g_init = 1;
    }
    pthread_mutex_unlock(&g_lock);
    return &g_tuning;
}

lm_code lm_tuning_init_from_env(lm_error *err)
{
    lm_tuning t;
    lm_code rc = lm_tuning_from_env(&t, err);
    if (rc == LM_OK)
        lm_tuning_set(&t);
    return rc;
}
