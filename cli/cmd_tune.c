/* larmor-cli tune: sweeps gpu-tuned's parameters (threads per block, tile,
 * unroll, points per thread) on this GPU and stores the fastest for its
 * model in the cache folder, where gpu-tuned finds it. */
#include <stdio.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "larmor.h"

static int tune_progress(void *user, double fraction)
{
    lm_progress p = {.stage = LM_STAGE_FHD, .fraction = fraction};
    return cli_progress_cb(user, &p);
}

int cmd_tune(int argc, char **argv)
{
    int show = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--show"))
            show = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            puts("usage: larmor-cli tune [--show]\n"
                 "  sweeps gpu-tuned's launch parameters on GPU 0 and stores the fastest for its model\n"
                 "  (--show prints the parameters in use and where they come from)");
            return 0;
        } else
            return cli_errorf("tune: unknown option '%s'", argv[i]);
    }
    lm_error err = {0};
    char report[2048];
    cli_progress prog;
    if (!show)
        cli_progress_init(&prog, 1);
    lm_ctl ctl = {.progress = tune_progress, .user = &prog};
    lm_code c = larmor_gpu_tune(show, report, sizeof report, show ? NULL : &ctl, &err);
    if (!show)
        cli_progress_done(&prog);
    if (c != LM_OK)
        return cli_error(&err);
    printf("%s\n", report);
    return 0;
}
