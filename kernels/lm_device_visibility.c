/* CUDA_VISIBLE_DEVICES narrowed to the one GPU a command uses
 * (lm_device_visibility.h). Pure string work: no CUDA, no environment. */
#include "lm_device_visibility.h"

#include <stdio.h>
#include <string.h>

int lm_gpu_visible_narrow(const char *user_visible, const char *gpu_devices, int several, char *out, size_t len)
{
    if (len)
        out[0] = 0;
    if (several || (gpu_devices && *gpu_devices) || len < 2)
        return 0;
    if (!user_visible) {
        snprintf(out, len, "0");
        return 1;
    }
    /* CUDA reads the list up to its first invalid entry; entries are
     * indices, GPU-UUIDs or MIG-UUIDs, separated by commas. */
    const char *p = user_visible;
    while (*p == ' ')
        p++;
    size_t n = strcspn(p, ",");
    while (n > 0 && p[n - 1] == ' ')
        n--;
    if (n == 0 || p[n] == 0 || n >= len)
        return 0; /* nothing visible, one entry already, or too long to copy whole */
    memcpy(out, p, n);
    out[n] = 0;
    return 1;
}
