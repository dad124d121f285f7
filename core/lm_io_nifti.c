/* NIfTI-1 (.nii, .nii.gz) through libniftiio: it parses and writes the
 * header (dims, pixdim, qform/sform, units). The voxels themselves are read
 * and written here, through zlib, because libniftiio's data reader silently
 * turns NaN/Inf into 0 and accepts a truncated .nii.gz, and its data writer
 * reports a short write only on stderr and returns nothing. Every written
 * file is re-read before it replaces the destination. The reader checks the
 * 348-byte header itself before libniftiio sees it (precheck_header), so bad
 * headers get Larmor's one-line messages and libniftiio prints nothing.
 * A .nii.gz is written here too, header and voxels as one byte stream
 * compressed on every core (lm_gzip_parallel.h): zlib's single thread took
 * longer than a served reconstruction. */
#include "lm_io.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <zlib.h>

#include <nifti1_io.h>

#include "lm_atomic.h"
#include "lm_trace.h"
#include "lm_gzip_parallel.h"

/* glibc defines CMPLXF for gcc only; clang has the same builtin. */
#ifndef CMPLXF
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#endif

#define LM_NIFTI_MAX_DIM 32767 /* dim[] is int16 in NIfTI-1 */

/* libniftiio prints to stderr from library code; Larmor reports errors itself. */
static void nifti_quiet(void)
{
    nifti_set_debug_level(0);
    nifti_set_allow_upper_fext(1); /* X.NII as x.nii, as Larmor's loader does */
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && strcasecmp(s + ls - lx, suffix) == 0;
}

static int is_gz(const char *path)
{
    return has_suffix(path, ".gz");
}

/* Checks that a .nii holds what was asked: a readable header with the
 * right dims and type, and the full data. */
static lm_code verify_written(const char *tmp, const char *path, const nifti_image *nim,
                              lm_error *err)
{
    int swapped = 0;
    nifti_1_header *h = nifti_read_header(tmp, &swapped, 1);
    int ok = h && h->datatype == nim->datatype;
    for (int i = 0; ok && i < 5; i++)
        ok = h->dim[i] == nim->dim[i];
    free(h);
    if (!ok)
        return lm_fail(err, LM_ERR_IO, "%s: cannot write (libniftiio wrote no valid header)", path);
    int64_t need = (int64_t)nim->iname_offset + (int64_t)(nim->nvox * (size_t)nim->nbyper);
    struct stat st;
    const int64_t have = stat(tmp, &st) == 0 ? (int64_t)st.st_size : -1;
    if (have != need)
        return lm_fail(err, LM_ERR_IO, "%s: cannot write (libniftiio wrote %lld of %lld bytes; "
                       "disk full or file too large?)", path, (long long)have, (long long)need);
    return LM_OK;
}

/* .nii through libniftiio's header writer; the voxels written here,
 * because its own data writer reports a short write only on stderr
 * (unconditionally) and returns nothing. Re-read before it is kept. */
static lm_code write_plain(const char *tmp, const char *path, nifti_image *nim, lm_error *err)
{
    if (nifti_set_filenames(nim, tmp, 0, 1) != 0)
        return lm_fail(err, LM_ERR_INTERNAL, "%s: libniftiio rejects the temporary name %s", path, tmp);
    znzFile fp = nifti_image_write_hdr_img(nim, 2, "wb");
    if (znz_isnull(fp))
        return lm_fail(err, LM_ERR_IO, "%s: cannot write the NIfTI header: %s", path, strerror(errno));
    size_t bytes = nim->nvox * (size_t)nim->nbyper;
    int bad_offset = znztell(fp) != (znz_off_t)nim->iname_offset;
    errno = 0;
    size_t wrote = bad_offset ? 0 : znzwrite(nim->data, 1, bytes, fp);
    int write_errno = errno;
    int closed = znzclose(fp);
    lm_trace("NIfTI: voxels written");
    if (bad_offset)
        return lm_fail(err, LM_ERR_INTERNAL, "%s: libniftiio left the file at an unexpected offset", path);
    if (wrote != bytes || closed != 0)
        return lm_fail(err, LM_ERR_IO, "%s: cannot write: %s", path,
                       write_errno ? strerror(write_errno) : "short write (disk full or file too large?)");
    return verify_written(tmp, path, nim, err);
}

/* .nii.gz: libniftiio's header (348 bytes, then the 4-byte extender of no
 * extensions) and the voxels, as parallel gzip members into f. The header
 * is read back, and the file's length must be what was written (every
 * write was checked; inflating it all again would cost as much as
 * compressing it on two cores). */
static lm_code write_gz(FILE *f, const char *tmp, const char *path, nifti_image *nim, lm_error *err)
{
    nifti_set_iname_offset(nim);
    const size_t head_len = (size_t)nim->iname_offset;
    if (head_len < sizeof(nifti_1_header) + 4)
        return lm_fail(err, LM_ERR_INTERNAL, "%s: libniftiio put the voxels at byte %zu", path, head_len);
    unsigned char *head = lm_calloc(head_len, 1, err, path);
    if (!head)
        return LM_ERR_NOMEM;
    const nifti_1_header h = nifti_convert_nim2nhdr(nim);
    memcpy(head, &h, sizeof h); /* the extender after it stays 0: no extensions */
    const void *parts[2] = {head, nim->data};
    const size_t sizes[2] = {head_len, nim->nvox * (size_t)nim->nbyper};
    size_t wrote = 0;
    lm_code rc = lm_gzip_parallel_write(f, parts, sizes, 2, LM_GZIP_LEVEL, 0, &wrote, path, err);
    free(head);
    if (rc == LM_OK && fflush(f) != 0)
        rc = lm_fail(err, LM_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    struct stat st = {0};
    if (rc == LM_OK && (stat(tmp, &st) != 0 || (size_t)st.st_size != wrote))
        rc = lm_fail(err, LM_ERR_IO, "%s: cannot write (%lld of %zu compressed bytes on disk; disk full?)", path,
                     (long long)st.st_size, wrote);
    int swapped = 0;
    nifti_1_header *back = rc == LM_OK ? nifti_read_header(tmp, &swapped, 1) : NULL;
    int ok = back && back->datatype == nim->datatype && back->vox_offset == (float)head_len;
    for (int i = 0; ok && i < 5; i++)
        ok = back->dim[i] == nim->dim[i];
    free(back);
    if (rc == LM_OK && !ok)
        rc = lm_fail(err, LM_ERR_IO, "%s: cannot write (the header does not read back)", path);
    return rc;
}

lm_code lm_nifti_write(const char *path, const lm_volume *v, int as_complex, lm_error *err)
{
    return lm_nifti_write_frames(path, v, 1, v ? v->data : NULL, as_complex, err);
}

lm_code lm_nifti_write_frames(const char *path, const lm_volume *v, int64_t frames, const lm_cfloat *data,
                              int as_complex, lm_error *err)
{
    return lm_nifti_write_series(path, v, frames, data, as_complex, 0, err);
}

lm_code lm_nifti_write_series(const char *path, const lm_volume *v, int64_t frames, const lm_cfloat *data,
                              int as_complex, double frame_s, lm_error *err)
{
    if (!v || !data)
        return lm_fail(err, LM_ERR_INVALID, "%s: empty volume", path);
    if (frames < 1 || frames > LM_NIFTI_MAX_DIM)
        return lm_fail(err, LM_ERR_INVALID, "%s: %lld volumes do not fit NIfTI-1", path, (long long)frames);
    if (!has_suffix(path, ".nii") && !has_suffix(path, ".nii.gz"))
        return lm_fail(err, LM_ERR_INVALID, "%s: a NIfTI file name must end in .nii or .nii.gz", path);
    for (int a = 0; a < 3; a++)
        if (v->dims[a] < 1 || v->dims[a] > LM_NIFTI_MAX_DIM)
            return lm_fail(err, LM_ERR_INVALID,
                           "%s: volume %lld x %lld x %lld does not fit NIfTI-1 (1 to %d per axis)", path,
                           (long long)v->dims[0], (long long)v->dims[1], (long long)v->dims[2],
                           LM_NIFTI_MAX_DIM);
    nifti_quiet();

    size_t count = (size_t)lm_volume_count(v) * (size_t)frames;
    float *mag = NULL;
    if (as_complex <= 0) {
        mag = lm_alloc(count, sizeof(float), err, path);
        if (!mag)
            return err ? err->code : LM_ERR_NOMEM;
        if (as_complex == LM_NIFTI_REAL)
            for (size_t i = 0; i < count; i++)
                mag[i] = crealf(data[i]);
        else
            lm_magnitude(data, mag, (int64_t)count);
    }
    int dims[8] = {frames > 1 ? 4 : 3, (int)v->dims[0], (int)v->dims[1], (int)v->dims[2], (int)frames, 1, 1, 1};
    nifti_image *nim = nifti_make_new_nim(dims, as_complex > 0 ? NIFTI_TYPE_COMPLEX64 : NIFTI_TYPE_FLOAT32, 0);
    if (!nim) {
        free(mag);
        return lm_fail(err, LM_ERR_NOMEM, "%s: libniftiio cannot make an image header", path);
    }
    /* Borrowed: detached again before nifti_image_free. */
    nim->data = as_complex > 0 ? (void *)data : (void *)mag;

    nim->dx = nim->pixdim[1] = (float)v->voxel_mm[0];
    nim->dy = nim->pixdim[2] = (float)v->voxel_mm[1];
    nim->dz = nim->pixdim[3] = (float)v->voxel_mm[2];
    nim->xyz_units = NIFTI_UNITS_MM;
    nim->time_units = NIFTI_UNITS_UNKNOWN;
    if (frames > 1 && frame_s > 0) { /* a time series: pixdim[4] the frame duration */
        nim->dt = nim->pixdim[4] = (float)frame_s;
        nim->time_units = NIFTI_UNITS_SEC;
    }
    nim->scl_slope = 1.0f;
    nim->scl_inter = 0.0f;
    snprintf(nim->descrip, sizeof nim->descrip, "Larmor %s", as_complex > 0 ? "complex" : as_complex ? "real" : "magnitude");

    mat44 s;
    memset(&s, 0, sizeof s);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
            s.m[r][c] = (float)v->affine[r][c];
    s.m[3][0] = s.m[3][1] = s.m[3][2] = 0.0f;
    s.m[3][3] = 1.0f;
    nim->sform_code = NIFTI_XFORM_SCANNER_ANAT;
    nim->sto_xyz = s;
    nim->sto_ijk = nifti_mat44_inverse(s);

    /* The qform holds the rotation part only (a shear cannot be stored);
     * nifti_mat44_to_quatern orthogonalises the 3x3 block itself. */
    float qb, qc, qd, qx, qy, qz, qdx, qdy, qdz, qfac;
    nifti_mat44_to_quatern(s, &qb, &qc, &qd, &qx, &qy, &qz, &qdx, &qdy, &qdz, &qfac);
    nim->qform_code = NIFTI_XFORM_SCANNER_ANAT;
    nim->quatern_b = qb;
    nim->quatern_c = qc;
    nim->quatern_d = qd;
    nim->qoffset_x = qx;
    nim->qoffset_y = qy;
    nim->qoffset_z = qz;
    nim->qfac = nim->pixdim[0] = qfac;
    nim->qto_xyz = nifti_quatern_to_mat44(qb, qc, qd, qx, qy, qz, nim->dx, nim->dy, nim->dz, qfac);
    nim->qto_ijk = nifti_mat44_inverse(nim->qto_xyz);

    lm_atomic a = {0};
    lm_code rc;
    nim->nifti_type = NIFTI_FTYPE_NIFTI1_1;
    lm_trace("NIfTI: voxels ready");
    if (is_gz(path)) {
        rc = lm_atomic_begin(&a, path, 1, err);
        if (rc == LM_OK)
            rc = write_gz(a.f, a.tmp_path, path, nim, err);
    } else {
        rc = lm_atomic_begin(&a, path, 0, err);
        if (rc == LM_OK)
            rc = write_plain(a.tmp_path, path, nim, err);
    }
    lm_trace("NIfTI: temporary file written");
    if (rc == LM_OK)
        rc = lm_atomic_commit(&a, err);
    lm_atomic_abort(&a);
    lm_trace("NIfTI: renamed");
    nim->data = NULL;
    nifti_image_free(nim);
    free(mag);
    return rc;
}

/* Unit of the spatial fields, as a factor to mm. */
static double unit_to_mm(int xyz_units)
{
    switch (xyz_units) {
    case NIFTI_UNITS_METER: return 1000.0;
    case NIFTI_UNITS_MICRON: return 0.001;
    default: return 1.0; /* mm, or unknown: NIfTI tools assume mm */
    }
}

static lm_code convert_data(int datatype, const void *p, lm_cfloat *out, size_t n)
{
    switch (datatype) {
#define REAL_CASE(code, type)                                \
    case code:                                               \
        for (size_t i = 0; i < n; i++)                       \
            out[i] = (float)((const type *)p)[i];            \
        return LM_OK;
    REAL_CASE(NIFTI_TYPE_UINT8, uint8_t)
    REAL_CASE(NIFTI_TYPE_INT8, int8_t)
    REAL_CASE(NIFTI_TYPE_INT16, int16_t)
    REAL_CASE(NIFTI_TYPE_UINT16, uint16_t)
    REAL_CASE(NIFTI_TYPE_INT32, int32_t)
    REAL_CASE(NIFTI_TYPE_UINT32, uint32_t)
    REAL_CASE(NIFTI_TYPE_FLOAT32, float)
    REAL_CASE(NIFTI_TYPE_FLOAT64, double)
#undef REAL_CASE
    case NIFTI_TYPE_COMPLEX64:
        memcpy(out, p, n * sizeof(lm_cfloat));
        return LM_OK;
    case NIFTI_TYPE_COMPLEX128:
        for (size_t i = 0; i < n; i++) {
            const double *d = (const double *)p + 2 * i;
            out[i] = CMPLXF((float)d[0], (float)d[1]);
        }
        return LM_OK;
    default:
        return LM_ERR_UNSUPPORTED;
    }
}

/* Reads the voxels ourselves: libniftiio's reader silently replaces NaN and
 * infinite floats by 0, and a damaged gzip stream must be an error. */
static lm_code read_voxels(const char *path, const nifti_image *nim, void *buf, size_t bytes,
                           lm_error *err)
{
    if (nim->iname_offset < 0)
        return lm_fail(err, LM_ERR_FORMAT, "%s: invalid vox_offset", path);
    gzFile g = gzopen(path, "rb"); /* reads plain files too, transparently */
    if (!g)
        return lm_fail(err, LM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    int ok = gzseek(g, (z_off_t)nim->iname_offset, SEEK_SET) == (z_off_t)nim->iname_offset;
    size_t got = 0;
    while (ok && got < bytes) {
        size_t chunk = bytes - got < ((size_t)1 << 30) ? bytes - got : ((size_t)1 << 30);
        int n = gzread(g, (char *)buf + got, (unsigned)chunk);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    int errnum = Z_OK;
    const char *zmsg = gzerror(g, &errnum);
    if (errnum == Z_OK || errnum == Z_STREAM_END || !zmsg)
        zmsg = "";
    size_t lp = strlen(path); /* zlib prefixes its message with the path */
    if (strncmp(zmsg, path, lp) == 0 && strncmp(zmsg + lp, ": ", 2) == 0)
        zmsg += lp + 2;
    char why[128];
    snprintf(why, sizeof why, "%s", zmsg);
    gzclose_r(g);
    if (!ok || got < bytes)
        return lm_fail(err, LM_ERR_FORMAT,
                       "%s: image data truncated or unreadable (%zu of %zu voxel bytes%s%s)", path,
                       got, bytes, why[0] ? ": " : "", why);
    return LM_OK;
}

static int datatype_supported(int dt)
{
    switch (dt) {
    case NIFTI_TYPE_UINT8: case NIFTI_TYPE_INT8: case NIFTI_TYPE_INT16: case NIFTI_TYPE_UINT16:
    case NIFTI_TYPE_INT32: case NIFTI_TYPE_UINT32: case NIFTI_TYPE_FLOAT32:
    case NIFTI_TYPE_FLOAT64: case NIFTI_TYPE_COMPLEX64: case NIFTI_TYPE_COMPLEX128:
        return 1;
    default:
        return 0;
    }
}

static uint32_t bswap32(uint32_t x)
{
    return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}

static int32_t hdr_i32(const unsigned char *h, size_t off, int swap)
{
    uint32_t x;
    memcpy(&x, h + off, 4);
    return (int32_t)(swap ? bswap32(x) : x);
}

static int16_t hdr_i16(const unsigned char *h, size_t off, int swap)
{
    uint16_t x;
    memcpy(&x, h + off, 2);
    return (int16_t)(swap ? (uint16_t)((x >> 8) | (x << 8)) : x);
}

static float hdr_f32(const unsigned char *h, size_t off, int swap)
{
    uint32_t x = (uint32_t)hdr_i32(h, off, swap);
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* Reads and checks the 348-byte header before libniftiio sees the file:
 * libniftiio accepts any sizeof_hdr, a negative dim and (for a .nii name) a
 * header without the NIfTI magic, and explains its refusals on stderr. */
static lm_code precheck_header(const char *path, int64_t file_size, lm_error *err)
{
    enum { HDR = 348, OFF_DIM = 40, OFF_DATATYPE = 70, OFF_VOX_OFFSET = 108, OFF_MAGIC = 344 };
    unsigned char h[HDR];
    errno = 0;
    gzFile g = gzopen(path, "rb"); /* reads plain files too, transparently */
    if (!g)
        return lm_fail(err, LM_ERR_IO, "%s: cannot open: %s", path,
                       errno ? strerror(errno) : "out of memory");
    int n = gzread(g, h, HDR);
    gzclose_r(g);
    if (n < 0)
        return lm_fail(err, LM_ERR_FORMAT,
                       "%s: not a readable NIfTI-1 file (damaged gzip stream before the header's "
                       "end)", path);
    if (n < HDR)
        return lm_fail(err, LM_ERR_FORMAT,
                       "%s: not a readable NIfTI-1 file (header missing, short or invalid: "
                       "%d of %d header bytes)", path, n, HDR);

    int32_t size = hdr_i32(h, 0, 0);
    int swap = size == (int32_t)bswap32(HDR);
    if (size != HDR && !swap) {
        if (size == 540 || size == (int32_t)bswap32(540))
            return lm_fail(err, LM_ERR_UNSUPPORTED,
                           "%s: a NIfTI-2 file (sizeof_hdr 540); Larmor reads NIfTI-1 only", path);
        return lm_fail(err, LM_ERR_FORMAT,
                       "%s: not a readable NIfTI-1 file (sizeof_hdr is %ld, must be 348)", path,
                       (long)size);
    }
    if (memcmp(h + OFF_MAGIC, "n+1", 4) != 0)
        return lm_fail(err, LM_ERR_UNSUPPORTED,
                       "%s: not a single-file NIfTI-1 image (magic 'n+1' missing); .hdr/.img pairs "
                       "and ANALYZE 7.5 files are not read", path);
    int ndim = hdr_i16(h, OFF_DIM, swap);
    if (ndim < 1 || ndim > 7)
        return lm_fail(err, LM_ERR_FORMAT, "%s: dim[0] is %d (must be 1 to 7)", path, ndim);
    for (int i = 1; i <= ndim; i++) {
        int d = hdr_i16(h, OFF_DIM + 2 * (size_t)i, swap);
        if (d < 1)
            return lm_fail(err, LM_ERR_FORMAT, "%s: dim[%d] is %d (must be at least 1)", path, i, d);
    }
    int dt = hdr_i16(h, OFF_DATATYPE, swap);
    if (!datatype_supported(dt)) {
        const char *name = nifti_datatype_to_string(dt);
        char what[64];
        if (name && strcmp(name, "DT_UNKNOWN") != 0)
            snprintf(what, sizeof what, "%s", name);
        else
            snprintf(what, sizeof what, "code %d", dt);
        return lm_fail(err, LM_ERR_UNSUPPORTED,
                       "%s: datatype %s is not supported (uint8/int8/int16/uint16/int32/uint32, "
                       "float32/float64, complex64/complex128 are)", path, what);
    }
    /* The voxels start at vox_offset, so it lies within the (uncompressed)
     * file; bounding it also bounds what libniftiio allocates for the
     * header extensions in front of it. */
    double off = hdr_f32(h, OFF_VOX_OFFSET, swap);
    double most = is_gz(path) ? 1032.0 * (double)file_size : (double)file_size;
    if (most > (double)INT32_MAX)
        most = (double)INT32_MAX;
    if (!(off >= HDR && off <= most))
        return lm_fail(err, LM_ERR_FORMAT, "%s: vox_offset is %g (must be 348 to %.0f for this file)",
                       path, off, most);
    return LM_OK;
}

lm_code lm_nifti_read(const char *path, lm_volume **out, lm_error *err)
{
    return lm_nifti_read_frames(path, out, NULL, err);
}

lm_code lm_nifti_read_frames(const char *path, lm_volume **out, int64_t *frames, lm_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return lm_fail(err, LM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return lm_fail(err, LM_ERR_IO, "%s: not a regular file", path);
    nifti_quiet();
    lm_code rc = precheck_header(path, (int64_t)st.st_size, err);
    if (rc)
        return rc;
    nifti_image *nim = nifti_image_read(path, 0);
    if (!nim)
        return lm_fail(err, LM_ERR_FORMAT,
                       "%s: not a readable NIfTI-1 file (header missing, short or invalid)", path);
    lm_volume *v = NULL;
    void *raw = NULL;
    int64_t d[8];
    for (int i = 1; i <= 7; i++)
        d[i] = i <= nim->dim[0] ? nim->dim[i] : 1;
    for (int i = 1; i <= 7; i++)
        if (d[i] < 1) {
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: dim[%d] is %lld (must be at least 1)", path, i,
                         (long long)d[i]);
            goto out;
        }
    for (int i = frames ? 5 : 4; i <= 7; i++)
        if (d[i] > 1) {
            rc = lm_fail(err, LM_ERR_UNSUPPORTED,
                         "%s: holds a %dD image (dim[%d] is %lld); Larmor reads %s images only",
                         path, nim->dim[0], i, (long long)d[i], frames ? "2D, 3D and 4D" : "2D and 3D");
            goto out;
        }
    size_t count = 1;
    for (int i = 1; i <= (frames ? 4 : 3); i++)
        if (!lm_size_mul(count, (size_t)d[i], &count) || count > LM_MAX_ELEMENTS) {
            rc = lm_fail(err, LM_ERR_NOMEM, "%s: dimensions %lld x %lld x %lld are an absurd size",
                         path, (long long)d[1], (long long)d[2], (long long)d[3]);
            goto out;
        }
    if (nim->nifti_type != NIFTI_FTYPE_NIFTI1_1) {
        rc = lm_fail(err, LM_ERR_UNSUPPORTED,
                     "%s: not a single-file NIfTI-1 image (magic 'n+1'); .hdr/.img pairs are not read",
                     path);
        goto out;
    }
    if (!datatype_supported(nim->datatype)) {
        rc = lm_fail(err, LM_ERR_UNSUPPORTED,
                     "%s: datatype %s is not supported (uint8/int8/int16/uint16/int32/uint32, "
                     "float32/float64, complex64/complex128 are)",
                     path, nifti_datatype_to_string(nim->datatype));
        goto out;
    }
    size_t need = (size_t)nim->iname_offset + count * (size_t)nim->nbyper;
    if (!is_gz(path) && (size_t)st.st_size < need) {
        rc = lm_fail(err, LM_ERR_FORMAT,
                     "%s: file holds %lld bytes but its header's %lld x %lld x %lld %s voxels need %zu "
                     "(truncated)",
                     path, (long long)st.st_size, (long long)d[1], (long long)d[2], (long long)d[3],
                     nifti_datatype_to_string(nim->datatype), need);
        goto out;
    }
    /* deflate compresses at most 1032:1: a small .nii.gz cannot hold a big
     * image, so refuse before allocating what its header asks for. */
    if (is_gz(path) && need / 1032 > (size_t)st.st_size) {
        rc = lm_fail(err, LM_ERR_FORMAT,
                     "%s: compressed file of %lld bytes cannot hold the %zu bytes its header's "
                     "%lld x %lld x %lld %s voxels need (truncated or corrupt)",
                     path, (long long)st.st_size, need, (long long)d[1], (long long)d[2],
                     (long long)d[3], nifti_datatype_to_string(nim->datatype));
        goto out;
    }
    raw = lm_alloc(count, (size_t)nim->nbyper, err, path);
    if (!raw) {
        rc = err ? err->code : LM_ERR_NOMEM;
        goto out;
    }
    rc = read_voxels(path, nim, raw, count * (size_t)nim->nbyper, err);
    if (rc)
        goto out;
    if (nim->byteorder != nifti_short_order() && nim->swapsize > 1)
        nifti_swap_Nbytes(count * (size_t)nim->nbyper / (size_t)nim->swapsize, nim->swapsize, raw);

    const int64_t one[3] = {1, 1, 1};
    v = lm_volume_new(one, NULL, err);
    if (!v) {
        rc = err ? err->code : LM_ERR_NOMEM;
        goto out;
    }
    free(v->data);
    v->data = lm_alloc(count, sizeof(lm_cfloat), err, path);
    if (!v->data) {
        rc = err ? err->code : LM_ERR_NOMEM;
        goto out;
    }
    convert_data(nim->datatype, raw, v->data, count);

    /* scl_slope == 0 means "no scaling" (NIfTI-1). For complex data the
     * slope scales both parts and the intercept shifts the real part. */
    float slope = nim->scl_slope, inter = nim->scl_inter;
    if (slope != 0.0f && isfinite(slope) && isfinite(inter) && (slope != 1.0f || inter != 0.0f))
        for (size_t i = 0; i < count; i++)
            v->data[i] = v->data[i] * slope + inter;

    rc = lm_check_finite_complex(path, v->data, count, err);
    if (rc)
        goto out;

    double unit = unit_to_mm(nim->xyz_units);
    for (int a = 0; a < 3; a++) {
        v->dims[a] = d[a + 1];
        double mm = fabs((double)nim->pixdim[a + 1]) * unit;
        v->voxel_mm[a] = isfinite(mm) && mm > 0 ? mm : 1.0;
    }
    const mat44 *xf = nim->sform_code > 0 ? &nim->sto_xyz : nim->qform_code > 0 ? &nim->qto_xyz : NULL;
    int finite = xf != NULL;
    for (int r = 0; finite && r < 3; r++)
        for (int c = 0; c < 4; c++)
            finite = finite && isfinite(xf->m[r][c]);
    if (finite) {
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 4; c++)
                v->affine[r][c] = (double)xf->m[r][c] * (r < 3 ? unit : 1.0);
        v->affine[3][0] = v->affine[3][1] = v->affine[3][2] = 0.0;
        v->affine[3][3] = 1.0;
    } else {
        lm_volume_set_centered_affine(v);
    }
    if (frames)
        *frames = d[4];
    *out = v;
    v = NULL;
out:
    free(raw);
    lm_volume_free(v);
    nifti_image_free(nim);
    return rc;
}

lm_code lm_nifti_frame_seconds(const char *path, double *frame_s, lm_error *err)
{
    *frame_s = 0;
    nifti_quiet();
    nifti_image *nim = nifti_image_read(path, 0);
    if (!nim)
        return lm_fail(err, LM_ERR_FORMAT, "%s: not a readable NIfTI-1 file", path);
    if (nim->dim[0] >= 4 && nim->dim[4] > 1 && nim->pixdim[4] > 0) {
        double scale = nim->time_units == NIFTI_UNITS_MSEC ? 1e-3 : nim->time_units == NIFTI_UNITS_USEC ? 1e-6 : 1;
        *frame_s = nim->pixdim[4] * scale;
    }
    nifti_image_free(nim);
    return LM_OK;
}
