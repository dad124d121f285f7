/* Whether a larmor-cli command may use several GPUs, and the
 * CUDA_VISIBLE_DEVICES it runs under (docs/gpu-design.md, start-up). */
#ifndef CLI_GPU_VISIBLE_H
#define CLI_GPU_VISIBLE_H

#include <stddef.h>

/* argv[0] is the command (recon, serve, ...). Several GPUs: serve (its
 * commands may need any), variants (it describes the machine), any named
 * gpu-multi variant, and bench without --variants (its default runs every
 * available variant, gpu-multi among them). */
int cli_gpu_wants_several(int argc, char **argv);
/* lm_gpu_visible_narrow for this command line: 1 and the value in out when
 * CUDA_VISIBLE_DEVICES should be set to it. */
int cli_gpu_visible_for(int argc, char **argv, const char *user_visible, const char *gpu_devices, char *out,
                        size_t len);

#endif
