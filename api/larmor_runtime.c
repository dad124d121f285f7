/* The process-wide services a front end needs from the layers below its
 * reach (larmor.h): the tuning knobs, test fault hooks, the GPU context's
 * start and end, the GPU autotuner, and what this build can do. Each is a
 * thin call into kernels/ so that cli/ and gui/ include larmor.h only. */
#include <stdio.h>

#include "larmor.h"
#include "lm_gpu.h"
#include "lm_tuning.h"
#include "lm_wavelet.h"

lm_code larmor_tuning_init_from_env(lm_error *err)
{
    return lm_tuning_init_from_env(err);
}

lm_code larmor_fault_set(const char *gpu_spec, const char *io_spec, lm_error *err)
{
    lm_code c = LM_OK, io = LM_OK;
    if (gpu_spec)
        c = lm_gpu_fault_set(gpu_spec, err);
    if (io_spec) /* set even when the GPU's spec was refused */
        io = lm_io_fault_set(io_spec, c == LM_OK ? err : NULL);
    return c != LM_OK ? c : io;
}

void larmor_gpu_prewarm(void)
{
    lm_gpu_prewarm();
}

void larmor_gpu_prewarm_wait(void)
{
    lm_gpu_prewarm_wait();
}

int larmor_gpu_lost(void)
{
    return lm_gpu_lost();
}

lm_code larmor_gpu_tune(int show, char *report, size_t len, const lm_ctl *ctl, lm_error *err)
{
    lm_code c = lm_gpu_available(err);
    if (c != LM_OK)
        return c;
    lm_gpu_info info;
    char line[512], source[1024];
    if ((c = lm_gpu_describe(0, &info, err)) != LM_OK)
        return c;
    lm_gpu_info_string(&info, line, sizeof line);
    lm_gpu_tune_params p;
    c = show ? lm_gpu_tune_get(0, &p, source, sizeof source, err)
             : lm_gpu_tune(0, &p, source, sizeof source, ctl, err);
    if (c != LM_OK)
        return c;
    snprintf(report, len, "%s\ngpu-tuned: %d threads/block, tile %d, unroll %d, %d points/thread (%s)", line,
             p.threads, p.tile, p.unroll, p.vpt, source);
    return LM_OK;
}

lm_code larmor_wavelet_available(lm_error *why)
{
    lm_wavelet *w = NULL;
    const int64_t n[3] = {2, 1, 1};
    lm_code c = lm_wavelet_new(n, LM_WAVELET_DB4, 1, &w, why);
    lm_wavelet_free(w);
    return c;
}
