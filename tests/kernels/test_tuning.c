/* The tuning options (lm_tuning.h): the defaults, the library ignoring the
 * environment until a front end hands it over, each LARMOR_* variable
 * reaching its field, and a bad value refused with the variable's name. */
#include <stdlib.h>
#include <string.h>

#include "lm_nufft.h"
#include "lm_test.h"
#include "lm_tuning.h"

int main(void)
{
    setenv("LARMOR_NUFFT_BLOCKS_PER_THREAD", "0", 1);
    setenv("LARMOR_GPU_DEVICES", "0,0", 1);
    /* the library reads no variable: the defaults until lm_tuning_set */
    const lm_tuning *t = lm_tuning_get();
    CHECK(t->nufft_blocks_per_thread == LM_NUFFT_BLOCKS_PER_THREAD);
    CHECK(t->gpu_devices[0] == 0);
    CHECK(t->gpu_prewarm == 1 && t->gpu_cg_fft == 3 && t->gpu_block_xfuse == 1 && !t->trace);

    setenv("LARMOR_GPU_CG_FFT", "7", 1); /* clamps to 3, as before */
    setenv("LARMOR_GPU_BLOCK_XFUSE", "0", 1);
    setenv("LARMOR_GPU_NUFFT_FFT", "cufft", 1);
    setenv("LARMOR_TRACE", "1", 1);
    lm_error err = {0};
    CHECK_OK(lm_tuning_init_from_env(&err), &err);
    t = lm_tuning_get();
    CHECK(t->nufft_blocks_per_thread == 0);
    CHECK(strcmp(t->gpu_devices, "0,0") == 0);
    CHECK(t->gpu_cg_fft == 3 && t->gpu_block_xfuse == 0 && t->gpu_nufft_cufft == 1 && t->trace == 1);

    /* a bad value names its variable, and the tuning in force stays */
    setenv("LARMOR_GPU_PREWARM", "yes", 1);
    CHECK(lm_tuning_init_from_env(&err) == LM_ERR_INVALID);
    CHECK(strstr(err.msg, "LARMOR_GPU_PREWARM") != NULL);
    CHECK(lm_tuning_get()->nufft_blocks_per_thread == 0);
    setenv("LARMOR_GPU_PREWARM", "0", 1);
    setenv("LARMOR_NUFFT_BLOCKS_PER_THREAD", "-3", 1);
    CHECK(lm_tuning_init_from_env(&err) == LM_ERR_INVALID);
    CHECK(strstr(err.msg, "LARMOR_NUFFT_BLOCKS_PER_THREAD") != NULL);

    lm_tuning d;
    lm_tuning_default(&d);
    lm_tuning_set(&d);
    CHECK(lm_tuning_get()->nufft_blocks_per_thread == LM_NUFFT_BLOCKS_PER_THREAD);
    return lm_test_finish("tuning");
}
