/* BART cfl/hdr readers. The input is split in two: the first two bytes
 * give the .hdr length (little-endian, clipped), then the .hdr text, then
 * the .cfl bytes. */
#include "fuzz_common.h"
#include "lm_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t hl = (size_t)data[0] | (size_t)data[1] << 8;
    data += 2;
    size -= 2;
    if (hl > size)
        hl = size;
    fuzz_write(fuzz_path("x.hdr"), data, hl);
    fuzz_write(fuzz_path("x.cfl"), data + hl, size - hl);
    const char *base = fuzz_path("x");
    lm_error err;
    lm_error_clear(&err);

    int ndim = 0;
    int64_t dims[LM_CFL_MAX_DIMS];
    lm_cfloat *d = NULL;
    lm_code rc = lm_cfl_read(base, &ndim, dims, &d, &err);
    FUZZ_CHECK_MSG(rc, err);
    if (rc == LM_OK) {
        int64_t n = 1;
        for (int i = 0; i < ndim; i++)
            n *= dims[i];
        volatile float s = 0;
        for (int64_t i = 0; i < n; i++)
            s += crealf(d[i]); /* touch every element: ASan checks the size */
        (void)s;
    }
    free(d);

    lm_traj *t = NULL;
    rc = lm_cfl_read_traj(fuzz_path("x.cfl"), &t, &err);
    FUZZ_CHECK_MSG(rc, err);
    if (rc == LM_OK && t->m > 0)
        (void)t->k[3 * t->m - 1];
    lm_traj_free(t);

    lm_kdata *k = NULL;
    rc = lm_cfl_read_kdata(fuzz_path("x.hdr"), &k, &err);
    FUZZ_CHECK_MSG(rc, err);
    if (rc == LM_OK && k->m > 0)
        (void)k->d[k->m * k->ncoils - 1];
    lm_kdata_free(k);

    lm_volume *v = NULL;
    rc = lm_cfl_read_volume(base, &v, &err);
    FUZZ_CHECK_MSG(rc, err);
    if (rc == LM_OK)
        (void)v->data[lm_volume_count(v) - 1];
    lm_volume_free(v);

    char *text = NULL;
    rc = lm_file_info(fuzz_path("x.cfl"), &text, &err);
    FUZZ_CHECK_MSG(rc, err);
    free(text);
    return 0;
}
