/* ISMRMRD reader on raw bytes: mostly exercises HDF5's own parser (which
 * is not instrumented), and Larmor's checks on whatever HDF5 accepts. */
#include "fuzz_common.h"
#include "lm_io_ismrmrd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = fuzz_path("x.h5");
    fuzz_write(p, data, size);
    lm_error err;
    lm_error_clear(&err);
    lm_mrd m;
    lm_code rc = lm_mrd_read(p, &m, &err);
    FUZZ_CHECK_MSG(rc, err);
    if (rc == LM_OK)
        (void)(m.traj->k[3 * m.traj->m - 1] + crealf(m.kdata->d[m.kdata->m * m.kdata->ncoils - 1]));
    lm_mrd_clear(&m);
    return 0;
}
