/* The GPUs a larmor-cli command lets CUDA see (cli_gpu_visible.h). */
#include "cli_gpu_visible.h"

#include <string.h>

#include "larmor.h"

/* Whether a --variant(s) value or option names gpu-multi. */
static int names_multi(const char *arg)
{
    return strstr(arg, "gpu-multi") != NULL;
}

int cli_gpu_wants_several(int argc, char **argv)
{
    if (argc < 1)
        return 0;
    const char *cmd = argv[0];
    if (!strcmp(cmd, "serve") || !strcmp(cmd, "variants"))
        return 1;
    int variants_given = 0;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--variants", 10))
            variants_given = 1;
        if (names_multi(argv[i]))
            return 1;
    }
    return !strcmp(cmd, "bench") && !variants_given;
}

int cli_gpu_visible_for(int argc, char **argv, const char *user_visible, const char *gpu_devices, char *out,
                        size_t len)
{
    return lm_gpu_visible_narrow(user_visible, gpu_devices, cli_gpu_wants_several(argc, argv), out, len);
}
