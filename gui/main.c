/* larmor: the GTK 4 workbench for non-Cartesian MRI reconstruction. */
#include <locale.h>

#include <stdio.h>
#include <stdlib.h>

#include "larmor-application.h"
#include "larmor.h"

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "");
    lm_error err = {0};
    if (larmor_tuning_init_from_env(&err) != LM_OK) { /* the LARMOR_* knobs (docs/tuning.md) */
        fprintf(stderr, "larmor: %s\n", err.msg);
        return 2;
    }
    /* test-only hooks: a bad value injects nothing */
    (void)larmor_fault_set(getenv("LARMOR_GPU_FAULT"), getenv("LARMOR_IO_FAULT"), NULL);
    /* Before any CUDA call: the workbench's reconstructions use one GPU
     * unless LARMOR_GPU_DEVICES lists several (docs/gpu-design.md). */
    char visible[256];
    if (lm_gpu_visible_narrow(getenv("CUDA_VISIBLE_DEVICES"), getenv("LARMOR_GPU_DEVICES"), 0, visible,
                              sizeof visible))
        setenv("CUDA_VISIBLE_DEVICES", visible, 1);
    LarmorApplication *app = larmor_application_new();
    int status = g_application_run(G_APPLICATION(app), argc, argv);
    if (status == 0)
        status = larmor_application_get_exit_status(app);
    g_object_unref(app);
    return status;
}
