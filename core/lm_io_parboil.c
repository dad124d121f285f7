/* Parboil mri-q / mri-fhd inputs and outputs (docs/conventions.md section 6). The two
 * input layouts differ only by the dR, dI arrays at the end, so the file
 * size tells them apart. */
#include "lm_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lm_atomic.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "Parboil I/O assumes a little-endian host, as Parboil's files are little-endian"
#endif

void lm_parboil_free(lm_parboil *p)
{
    if (!p)
        return;
    free(p->kx);
    free(p->ky);
    free(p->kz);
    free(p->x);
    free(p->y);
    free(p->z);
    free(p->phi_r);
    free(p->phi_i);
    free(p->d_r);
    free(p->d_i);
    free(p);
}

static lm_code read_floats(FILE *f, const char *path, const char *name, int32_t n, float **out,
                           lm_error *err)
{
    float *v = lm_alloc((size_t)n, sizeof(float), err, path);
    if (!v)
        return err ? err->code : LM_ERR_NOMEM;
    if (fread(v, sizeof(float), (size_t)n, f) != (size_t)n) {
        free(v);
        return lm_fail(err, LM_ERR_IO, "%s: read of %s failed (file shrank or unreadable)", path,
                       name);
    }
    char what[600];
    snprintf(what, sizeof what, "%s: %s", path, name);
    lm_code rc = lm_check_finite(what, v, (size_t)n, err);
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    return LM_OK;
}

lm_code lm_parboil_read(const char *path, lm_parboil **out, lm_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return lm_fail(err, LM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return lm_fail(err, LM_ERR_IO, "%s: not a regular file", path);
    }
    int32_t hdr[2];
    if (st.st_size < 8 || fread(hdr, sizeof(int32_t), 2, f) != 2) {
        fclose(f);
        return lm_fail(err, LM_ERR_FORMAT, "%s: file holds %lld bytes, too few for numK and numX",
                       path, (long long)st.st_size);
    }
    int32_t num_k = hdr[0], num_x = hdr[1];
    if (num_k <= 0 || num_x <= 0) {
        fclose(f);
        return lm_fail(err, LM_ERR_FORMAT, "%s: numK %d and numX %d must both be positive "
                       "(not a Parboil mri-q/mri-fhd input)", path, num_k, num_x);
    }
    /* 32-bit counts: these sums cannot overflow 64 bits. */
    uint64_t size_q = 8 + 4 * (5 * (uint64_t)num_k + 3 * (uint64_t)num_x);
    uint64_t size_fhd = size_q + 8 * (uint64_t)num_k;
    int fhd;
    if ((uint64_t)st.st_size == size_q)
        fhd = 0;
    else if ((uint64_t)st.st_size == size_fhd)
        fhd = 1;
    else {
        fclose(f);
        return lm_fail(err, LM_ERR_FORMAT,
                       "%s: file holds %lld bytes, but numK %d and numX %d need %llu for an mri-q "
                       "input or %llu for an mri-fhd input",
                       path, (long long)st.st_size, num_k, num_x, (unsigned long long)size_q,
                       (unsigned long long)size_fhd);
    }

    lm_parboil *p = lm_calloc(1, sizeof *p, err, path);
    if (!p) {
        fclose(f);
        return err ? err->code : LM_ERR_NOMEM;
    }
    p->num_k = num_k;
    p->num_x = num_x;
    lm_code rc;
    if ((rc = read_floats(f, path, "kx", num_k, &p->kx, err)) ||
        (rc = read_floats(f, path, "ky", num_k, &p->ky, err)) ||
        (rc = read_floats(f, path, "kz", num_k, &p->kz, err)) ||
        (rc = read_floats(f, path, "x", num_x, &p->x, err)) ||
        (rc = read_floats(f, path, "y", num_x, &p->y, err)) ||
        (rc = read_floats(f, path, "z", num_x, &p->z, err)) ||
        (rc = read_floats(f, path, "phiR", num_k, &p->phi_r, err)) ||
        (rc = read_floats(f, path, "phiI", num_k, &p->phi_i, err)) ||
        (fhd && ((rc = read_floats(f, path, "dR", num_k, &p->d_r, err)) ||
                 (rc = read_floats(f, path, "dI", num_k, &p->d_i, err))))) {
        fclose(f);
        lm_parboil_free(p);
        return rc;
    }
    fclose(f);
    *out = p;
    return LM_OK;
}

lm_code lm_parboil_write_output(const char *path, int64_t n, const float *re, const float *im,
                                lm_error *err)
{
    if (n < 0 || n > (int64_t)UINT32_MAX)
        return lm_fail(err, LM_ERR_INVALID, "%s: %lld outputs do not fit Parboil's uint32 count",
                       path, (long long)n);
    lm_atomic a;
    lm_code rc = lm_atomic_begin(&a, path, 1, err);
    if (rc)
        return rc;
    uint32_t count = (uint32_t)n;
    if (fwrite(&count, sizeof count, 1, a.f) != 1 ||
        fwrite(re, sizeof(float), (size_t)n, a.f) != (size_t)n ||
        fwrite(im, sizeof(float), (size_t)n, a.f) != (size_t)n) {
        rc = lm_fail(err, LM_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        lm_atomic_abort(&a);
        return rc;
    }
    return lm_atomic_commit(&a, err);
}

lm_code lm_parboil_read_output(const char *path, int64_t *n, float **re, float **im, lm_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return lm_fail(err, LM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    uint32_t count;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return lm_fail(err, LM_ERR_IO, "%s: not a regular file", path);
    }
    if (st.st_size < 4 || fread(&count, sizeof count, 1, f) != 1) {
        fclose(f);
        return lm_fail(err, LM_ERR_FORMAT, "%s: file holds %lld bytes, too few for numX", path,
                       (long long)st.st_size);
    }
    uint64_t need = 4 + 8 * (uint64_t)count;
    if ((uint64_t)st.st_size != need) {
        fclose(f);
        return lm_fail(err, LM_ERR_FORMAT,
                       "%s: file holds %lld bytes but numX %u needs %llu for a Parboil output (%s)",
                       path, (long long)st.st_size, count, (unsigned long long)need,
                       (uint64_t)st.st_size < need ? "truncated" : "too long");
    }
    float *r = lm_alloc(count, sizeof(float), err, path);
    float *i = r ? lm_alloc(count, sizeof(float), err, path) : NULL;
    lm_code rc = LM_OK;
    if (!r || !i)
        rc = err ? err->code : LM_ERR_NOMEM;
    else if (fread(r, sizeof(float), count, f) != count || fread(i, sizeof(float), count, f) != count)
        rc = lm_fail(err, LM_ERR_IO, "%s: read failed (file shrank or unreadable)", path);
    else {
        char what[600];
        snprintf(what, sizeof what, "%s: real part", path);
        rc = lm_check_finite(what, r, count, err);
        if (!rc) {
            snprintf(what, sizeof what, "%s: imaginary part", path);
            rc = lm_check_finite(what, i, count, err);
        }
    }
    fclose(f);
    if (rc) {
        free(r);
        free(i);
        return rc;
    }
    *n = count;
    *re = r;
    *im = i;
    return LM_OK;
}
