/* The GPUs a process lets CUDA see. The driver initialises every visible
 * device inside the first CUDA call (0.25-0.33 s more per command with a
 * second H200 visible), so a front end whose command uses one GPU narrows
 * CUDA_VISIBLE_DEVICES to that one before its first CUDA call. The library
 * never touches the environment: this only computes the value. */
#ifndef LM_DEVICE_VISIBILITY_H
#define LM_DEVICE_VISIBILITY_H

#include <stddef.h>

/* The CUDA_VISIBLE_DEVICES a command should run under.
 *   user_visible  the process's CUDA_VISIBLE_DEVICES (NULL: unset)
 *   gpu_devices   LARMOR_GPU_DEVICES (NULL or "": unset)
 *   several       non-zero when the command may use several GPUs (gpu-multi,
 *                 a server, the variant listing)
 * Returns 1 and writes the value to out when the environment should change:
 * the first entry of the user's list ("0" when unset), so that device 0 of
 * the process stays the device it would have used. Returns 0 (out empty)
 * when it should stay as it is: several GPUs wanted, an explicit
 * LARMOR_GPU_DEVICES list (whose indices are into the visible devices, and
 * which is how a coil split across GPUs is asked for), a list of one entry
 * already, or an empty list (no GPU visible). */
int lm_gpu_visible_narrow(const char *user_visible, const char *gpu_devices, int several, char *out, size_t len);

#endif
