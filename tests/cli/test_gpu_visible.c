/* The CUDA_VISIBLE_DEVICES a larmor-cli command runs under
 * (cli_gpu_visible.h): a command on one GPU sees only the first of the
 * visible devices, the user's own list narrowed to its first entry; a
 * command that may use several (gpu-multi, serve, variants, bench's default
 * list, an explicit LARMOR_GPU_DEVICES) leaves the environment alone. */
#include <string.h>

#include "cli_gpu_visible.h"
#include "lm_device_visibility.h"
#include "lm_test.h"

/* The value for this command line, or "(unchanged)". */
static const char *visible(const char *user, const char *gpu_devices, int argc, char **argv)
{
    static char out[64];
    if (!cli_gpu_visible_for(argc, argv, user, gpu_devices, out, sizeof out))
        return "(unchanged)";
    return out;
}

#define ARGS(...) (int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)), (char *[]){__VA_ARGS__}

static void expect(const char *got, const char *want, const char *what)
{
    CHECK_MSG(strcmp(got, want) == 0, "%s: %s, expected %s", what, got, want);
}

int main(void)
{
    /* one GPU: the first visible one */
    expect(visible(NULL, NULL, ARGS("recon", "--traj", "t", "--variant", "gpu-nufft")), "0", "recon, no list");
    expect(visible("1,0", NULL, ARGS("recon", "--variant", "gpu-nufft")), "1", "recon within the user's 1,0");
    expect(visible(" 3 , 2", NULL, ARGS("recon")), "3", "spaces around the user's entries");
    expect(visible("GPU-8a1b,GPU-77c0", "", ARGS("recon")), "GPU-8a1b", "UUIDs, LARMOR_GPU_DEVICES empty");
    expect(visible("MIG-1f2e,MIG-3d4c", NULL, ARGS("tune")), "MIG-1f2e", "MIG instances");
    expect(visible(NULL, NULL, ARGS("bench", "--problem", "B128", "--variants", "gpu-nufft,gpu-tuned")), "0",
           "bench with a list without gpu-multi");
    expect(visible(NULL, NULL, ARGS("recon", "--variant=gpu-tuned")), "0", "--variant=NAME");
    expect(visible(NULL, NULL, ARGS("demo")), "0", "demo");

    /* nothing to narrow */
    expect(visible("2", NULL, ARGS("recon")), "(unchanged)", "the user's single GPU");
    expect(visible("", NULL, ARGS("recon")), "(unchanged)", "no GPU visible");
    expect(visible(",1", NULL, ARGS("recon")), "(unchanged)", "an empty first entry (CUDA: none visible)");

    /* several GPUs asked for */
    expect(visible(NULL, NULL, ARGS("recon", "--variant", "gpu-multi")), "(unchanged)", "recon gpu-multi");
    expect(visible("1,0", NULL, ARGS("bench", "--variants", "gpu-tuned,gpu-multi")), "(unchanged)",
           "bench listing gpu-multi");
    expect(visible(NULL, NULL, ARGS("bench", "--problem", "B128")), "(unchanged)", "bench's default list");
    expect(visible(NULL, NULL, ARGS("serve", "--socket", "s")), "(unchanged)", "serve");
    expect(visible(NULL, NULL, ARGS("variants")), "(unchanged)", "variants");
    expect(visible(NULL, "0,1", ARGS("recon", "--variant", "gpu-nufft")), "(unchanged)",
           "LARMOR_GPU_DEVICES (a coil split across GPUs)");
    expect(visible("1,0", "0,0", ARGS("recon")), "(unchanged)", "LARMOR_GPU_DEVICES within the user's list");

    /* the library's rule on its own (the workbench: never several) */
    char out[8];
    CHECK(lm_gpu_visible_narrow(NULL, NULL, 0, out, sizeof out) == 1 && strcmp(out, "0") == 0);
    CHECK(lm_gpu_visible_narrow("GPU-0123456789", NULL, 0, out, sizeof out) == 0 && out[0] == 0);
    CHECK(lm_gpu_visible_narrow("4,5", NULL, 1, out, sizeof out) == 0 && out[0] == 0);
    return lm_test_finish("gpu_visible");
}
