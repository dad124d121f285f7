/* NIfTI-1 reader (through libniftiio): .nii, or .nii.gz when the input
 * starts with the gzip magic. */
#include "fuzz_common.h"
#include "lm_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    const char *p = fuzz_path(gz ? "x.nii.gz" : "x.nii");
    fuzz_write(p, data, size);
    lm_error err;
    lm_error_clear(&err);
    lm_volume *v = NULL;
    lm_code rc = lm_nifti_read(p, &v, &err);
    FUZZ_CHECK_MSG(rc, err);
    if (rc == LM_OK)
        (void)v->data[lm_volume_count(v) - 1];
    lm_volume_free(v);
    unlink(p);
    return 0;
}
