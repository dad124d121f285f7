/* The ISMRMRD XML header scanner on its own (fast: no file). */
#include "fuzz_common.h"
#include "lm_io_ismrmrd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lm_mrd_header h;
    lm_error err;
    lm_error_clear(&err);
    lm_code rc = lm_mrd_header_parse((const char *)data, size, "x.h5", &h, &err);
    FUZZ_CHECK_MSG(rc, err);
    if (rc == LM_OK) {
        for (int a = 0; a < 3; a++)
            if (h.matrix[a] <= 0 || !(h.fov_mm[a] > 0))
                abort(); /* accepted headers are checked */
    }
    return 0;
}
