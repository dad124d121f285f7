/* Reading ISMRMRD (MRD) HDF5 files and MRD streams' acquisitions.
 * See docs/ismrmrd.md for what Larmor takes from a file and the units it
 * assumes.
 *
 * Reading goes straight through HDF5 (read-only, every size checked) with
 * the MRD layout: libismrmrd 1.8's reader opens files read-write, creates
 * /dataset in any HDF5 file it is given, ignores a failed H5Dread and copies
 * trajectory and data by the sizes the header claims, not the sizes stored
 * (a heap over-read on a malformed file). The summary of `larmor-cli info`
 * is lm_mrd_info.c's, from lm_mrd_summarize. */
#include "lm_config.h"

#include "lm_mrd_private.h"
#include "lm_mrd_stream.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#if !LM_HAVE_ISMRMRD

lm_code lm_mrd_read_units(const char *path, lm_mrd_units units, lm_mrd *out, lm_error *err)
{
    (void)units;
    if (out)
        memset(out, 0, sizeof *out);
    return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: ISMRMRD input unavailable: built without libismrmrd",
                   path ? path : "");
}

lm_code lm_mrd_read(const char *path, lm_mrd *out, lm_error *err)
{
    return lm_mrd_read_units(path, LM_MRD_UNITS_AUTO, out, err);
}

lm_code lm_mrd_read_opts(const char *path, const lm_mrd_opts *opts, lm_mrd *out, lm_error *err)
{
    (void)opts;
    return lm_mrd_read_units(path, LM_MRD_UNITS_AUTO, out, err);
}

#else /* LM_HAVE_ISMRMRD */

#include <ismrmrd/ismrmrd.h>

/* ------------------------------------------------------------------------ */
/* The acquisition layout Larmor reads (a subset of the MRD compound)        */
/* ------------------------------------------------------------------------ */

typedef struct mrd_idx {
    uint16_t e1, e2, average, slice, contrast, phase, repetition, set;
} mrd_idx;

typedef struct mrd_head {
    uint64_t flags;
    uint16_t ns, channels, dpre, dpost, center, encref, tdim;
    mrd_idx idx;
    float geo[4][3]; /* position, read_dir, phase_dir, slice_dir (0 when the file has none) */
    float dwell_us;  /* sample_time_us: the dwell time (0 when the file has none) */
} mrd_head;

typedef struct mrd_acq {
    mrd_head head;
    hvl_t traj;
    hvl_t data;
} mrd_acq;

typedef struct mrd_head_only {
    mrd_head head;
} mrd_head_only;

static const char *const head_fields[] = {"flags", "number_of_samples", "active_channels",
                                          "discard_pre", "discard_post", "center_sample",
                                          "encoding_space_ref", "trajectory_dimensions"};
static const size_t head_offsets[] = {
    offsetof(mrd_head, flags),  offsetof(mrd_head, ns),     offsetof(mrd_head, channels),
    offsetof(mrd_head, dpre),   offsetof(mrd_head, dpost),  offsetof(mrd_head, center),
    offsetof(mrd_head, encref), offsetof(mrd_head, tdim)};
static const char *const idx_fields[] = {"kspace_encode_step_1", "kspace_encode_step_2", "average",
                                         "slice", "contrast", "phase", "repetition", "set"};
/* Optional: read only when the file has all four (float arrays of 3). */
static const char *const geo_fields[] = {"position", "read_dir", "phase_dir", "slice_dir"};

/* Memory types; data_complex: the file stores data as vlen of {real, imag}
 * (old MRD) rather than vlen of float pairs. */
typedef struct mrd_types {
    hid_t idx, head, head_only, acq, traj_vl, data_vl, cplx;
} mrd_types;

static void mrd_types_close(mrd_types *t)
{
    hid_t *all[] = {&t->idx, &t->head, &t->head_only, &t->acq, &t->traj_vl, &t->data_vl, &t->cplx};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (*all[i] >= 0)
            H5Tclose(*all[i]);
        *all[i] = -1;
    }
}

static int mrd_types_make(mrd_types *t, int data_complex, int has_geo, int has_dwell)
{
    t->idx = t->head = t->head_only = t->acq = t->traj_vl = t->data_vl = t->cplx = -1;
    int ok = 1;
    t->idx = H5Tcreate(H5T_COMPOUND, sizeof(mrd_idx));
    for (size_t i = 0; i < 8; i++)
        ok &= H5Tinsert(t->idx, idx_fields[i], i * sizeof(uint16_t), H5T_NATIVE_UINT16) >= 0;
    t->head = H5Tcreate(H5T_COMPOUND, sizeof(mrd_head));
    ok &= H5Tinsert(t->head, head_fields[0], head_offsets[0], H5T_NATIVE_UINT64) >= 0;
    for (size_t i = 1; i < 8; i++)
        ok &= H5Tinsert(t->head, head_fields[i], head_offsets[i], H5T_NATIVE_UINT16) >= 0;
    ok &= H5Tinsert(t->head, "idx", offsetof(mrd_head, idx), t->idx) >= 0;
    if (has_geo) {
        hsize_t three = 3;
        hid_t f3 = H5Tarray_create2(H5T_NATIVE_FLOAT, 1, &three);
        ok &= f3 >= 0;
        for (size_t i = 0; i < 4 && f3 >= 0; i++)
            ok &= H5Tinsert(t->head, geo_fields[i], offsetof(mrd_head, geo) + i * 3 * sizeof(float), f3) >= 0;
        if (f3 >= 0)
            H5Tclose(f3);
    }
    if (has_dwell)
        ok &= H5Tinsert(t->head, "sample_time_us", offsetof(mrd_head, dwell_us), H5T_NATIVE_FLOAT) >= 0;
    t->head_only = H5Tcreate(H5T_COMPOUND, sizeof(mrd_head_only));
    ok &= H5Tinsert(t->head_only, "head", 0, t->head) >= 0;
    t->traj_vl = H5Tvlen_create(H5T_NATIVE_FLOAT);
    if (data_complex) {
        t->cplx = H5Tcreate(H5T_COMPOUND, 2 * sizeof(float));
        ok &= H5Tinsert(t->cplx, "real", 0, H5T_NATIVE_FLOAT) >= 0;
        ok &= H5Tinsert(t->cplx, "imag", sizeof(float), H5T_NATIVE_FLOAT) >= 0;
        t->data_vl = H5Tvlen_create(t->cplx);
    } else {
        t->data_vl = H5Tvlen_create(H5T_NATIVE_FLOAT);
    }
    t->acq = H5Tcreate(H5T_COMPOUND, sizeof(mrd_acq));
    ok &= H5Tinsert(t->acq, "head", offsetof(mrd_acq, head), t->head) >= 0;
    ok &= H5Tinsert(t->acq, "traj", offsetof(mrd_acq, traj), t->traj_vl) >= 0;
    ok &= H5Tinsert(t->acq, "data", offsetof(mrd_acq, data), t->data_vl) >= 0;
    return ok && t->idx >= 0 && t->head >= 0 && t->head_only >= 0 && t->acq >= 0 && t->traj_vl >= 0 &&
           t->data_vl >= 0;
}

/* Checks that the file's member name exists with the class wanted;
 * returns its type (caller closes) or -1 with err set. */
static hid_t member_type(hid_t parent, const char *name, H5T_class_t want, const char *path,
                         const char *where, lm_error *err)
{
    int i = H5Tget_member_index(parent, name);
    if (i < 0) {
        H5Eclear2(H5E_DEFAULT);
        lm_fail(err, LM_ERR_FORMAT, "%s: /dataset/data has no %s%s field (not MRD acquisitions?)", path,
                where, name);
        return -1;
    }
    hid_t t = H5Tget_member_type(parent, (unsigned)i);
    if (t < 0 || H5Tget_class(t) != want) {
        if (t >= 0)
            H5Tclose(t);
        H5Eclear2(H5E_DEFAULT);
        lm_fail(err, LM_ERR_FORMAT, "%s: /dataset/data field %s%s has the wrong type", path, where, name);
        return -1;
    }
    return t;
}

/* Whether head holds name as an array of 3 floating-point numbers. */
static int geo_member_ok(hid_t head, const char *name)
{
    int i = H5Tget_member_index(head, name);
    if (i < 0) {
        H5Eclear2(H5E_DEFAULT);
        return 0;
    }
    hid_t t = H5Tget_member_type(head, (unsigned)i);
    int ok = 0;
    if (t >= 0 && H5Tget_class(t) == H5T_ARRAY && H5Tget_array_ndims(t) == 1) {
        hsize_t n = 0;
        hid_t b = H5Tget_super(t);
        ok = H5Tget_array_dims2(t, &n) == 1 && n == 3 && b >= 0 && H5Tget_class(b) == H5T_FLOAT;
        if (b >= 0)
            H5Tclose(b);
    }
    if (t >= 0)
        H5Tclose(t);
    H5Eclear2(H5E_DEFAULT);
    return ok;
}

/* Whether head holds name as a floating-point number. */
static int float_member_ok(hid_t head, const char *name)
{
    int i = H5Tget_member_index(head, name);
    if (i < 0) {
        H5Eclear2(H5E_DEFAULT);
        return 0;
    }
    hid_t t = H5Tget_member_type(head, (unsigned)i);
    int ok = t >= 0 && H5Tget_class(t) == H5T_FLOAT;
    if (t >= 0)
        H5Tclose(t);
    H5Eclear2(H5E_DEFAULT);
    return ok;
}

/* Validates the file's acquisition type; *data_complex tells the data
 * layout, *has_geo whether the slice geometry fields are there, *has_dwell
 * whether sample_time_us is. */
static lm_code check_acq_type(hid_t ftype, const char *path, int *data_complex, int *has_geo, int *has_dwell,
                              lm_error *err)
{
    if (H5Tget_class(ftype) != H5T_COMPOUND)
        return lm_fail(err, LM_ERR_FORMAT, "%s: /dataset/data is not a compound dataset (not MRD acquisitions)", path);
    lm_code rc = LM_OK;
    hid_t head = member_type(ftype, "head", H5T_COMPOUND, path, "", err);
    if (head < 0)
        return LM_ERR_FORMAT;
    for (size_t i = 0; i < 8 && rc == LM_OK; i++) {
        hid_t m = member_type(head, head_fields[i], H5T_INTEGER, path, "head.", err);
        if (m < 0)
            rc = LM_ERR_FORMAT;
        else
            H5Tclose(m);
    }
    if (rc == LM_OK) {
        hid_t idx = member_type(head, "idx", H5T_COMPOUND, path, "head.", err);
        if (idx < 0)
            rc = LM_ERR_FORMAT;
        for (size_t i = 0; i < 8 && rc == LM_OK; i++) {
            hid_t m = member_type(idx, idx_fields[i], H5T_INTEGER, path, "head.idx.", err);
            if (m < 0)
                rc = LM_ERR_FORMAT;
            else
                H5Tclose(m);
        }
        if (idx >= 0)
            H5Tclose(idx);
    }
    *has_geo = 1;
    for (size_t i = 0; i < 4; i++)
        *has_geo &= geo_member_ok(head, geo_fields[i]);
    *has_dwell = float_member_ok(head, "sample_time_us");
    H5Tclose(head);
    if (rc != LM_OK)
        return rc;

    hid_t traj = member_type(ftype, "traj", H5T_VLEN, path, "", err);
    if (traj < 0)
        return LM_ERR_FORMAT;
    hid_t base = H5Tget_super(traj);
    int ok = base >= 0 && H5Tget_class(base) == H5T_FLOAT;
    if (base >= 0)
        H5Tclose(base);
    H5Tclose(traj);
    if (!ok) {
        H5Eclear2(H5E_DEFAULT);
        return lm_fail(err, LM_ERR_FORMAT, "%s: /dataset/data trajectories are not floating point", path);
    }

    hid_t data = member_type(ftype, "data", H5T_VLEN, path, "", err);
    if (data < 0)
        return LM_ERR_FORMAT;
    base = H5Tget_super(data);
    ok = 0;
    if (base >= 0 && H5Tget_class(base) == H5T_FLOAT) {
        *data_complex = 0;
        ok = 1;
    } else if (base >= 0 && H5Tget_class(base) == H5T_COMPOUND) {
        int r = H5Tget_member_index(base, "real"), im = H5Tget_member_index(base, "imag");
        if (r >= 0 && im >= 0 && H5Tget_member_class(base, (unsigned)r) == H5T_FLOAT &&
            H5Tget_member_class(base, (unsigned)im) == H5T_FLOAT) {
            *data_complex = 1;
            ok = 1;
        }
    }
    if (base >= 0)
        H5Tclose(base);
    H5Tclose(data);
    if (!ok) {
        H5Eclear2(H5E_DEFAULT);
        return lm_fail(err, LM_ERR_FORMAT,
                       "%s: /dataset/data samples are neither float pairs nor {real, imag} compounds", path);
    }
    return LM_OK;
}

/* Reads /dataset/xml (variable or fixed-length string, one element). */
#define MRD_XML_MAX ((size_t)64 << 20)

static lm_code read_xml(hid_t fid, const char *path, char **out, size_t *out_len, lm_error *err)
{
    *out = NULL;
    if (H5Lexists(fid, "/dataset", H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return lm_fail(err, LM_ERR_FORMAT, "%s: HDF5 file without /dataset (not an ISMRMRD file)", path);
    }
    if (H5Lexists(fid, "/dataset/xml", H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return lm_fail(err, LM_ERR_FORMAT, "%s: no /dataset/xml header (not an ISMRMRD file?)", path);
    }
    hid_t ds = H5Dopen2(fid, "/dataset/xml", H5P_DEFAULT);
    if (ds < 0)
        return lm_h5_fail(err, LM_ERR_FORMAT, path, "/dataset/xml is not a dataset");
    lm_code rc = LM_OK;
    hid_t ft = H5Dget_type(ds), sp = H5Dget_space(ds), mt = -1;
    hssize_t npts = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    if (ft < 0 || sp < 0) {
        rc = lm_h5_fail(err, LM_ERR_FORMAT, path, "cannot read /dataset/xml");
        goto done;
    }
    if (H5Tget_class(ft) != H5T_STRING) {
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: /dataset/xml is not a string", path);
        goto done;
    }
    if (npts < 1) {
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: /dataset/xml is empty", path);
        goto done;
    }
    /* Read the first element only. */
    hsize_t one = 1;
    if (H5Sget_simple_extent_ndims(sp) > 0) {
        int nd = H5Sget_simple_extent_ndims(sp);
        hsize_t start[H5S_MAX_RANK] = {0}, count[H5S_MAX_RANK];
        for (int d = 0; d < nd && d < H5S_MAX_RANK; d++)
            count[d] = 1;
        if (H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, count, NULL) < 0) {
            rc = lm_h5_fail(err, LM_ERR_FORMAT, path, "cannot read /dataset/xml");
            goto done;
        }
    }
    hid_t ms = H5Screate_simple(1, &one, NULL);
    htri_t var = H5Tis_variable_str(ft);
    if (var > 0) {
        char *s = NULL;
        mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5Tget_cset(ft)); /* h5py writes UTF-8: no ASCII conversion */
        if (H5Dread(ds, mt, ms, sp, H5P_DEFAULT, &s) < 0 || !s) {
            rc = lm_h5_fail(err, LM_ERR_FORMAT, path, "cannot read the XML header /dataset/xml");
        } else {
            size_t n = strnlen(s, MRD_XML_MAX + 1);
            if (n > MRD_XML_MAX)
                rc = lm_fail(err, LM_ERR_FORMAT, "%s: XML header larger than %zu MiB", path, MRD_XML_MAX >> 20);
            else if (!(*out = malloc(n + 1)))
                rc = lm_fail(err, LM_ERR_NOMEM, "%s: no memory for the XML header", path);
            else {
                memcpy(*out, s, n);
                (*out)[n] = '\0';
                *out_len = n;
            }
            H5Dvlen_reclaim(mt, ms, H5P_DEFAULT, &s);
        }
    } else {
        size_t n = H5Tget_size(ft);
        if (n == 0 || n > MRD_XML_MAX) {
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: XML header size %zu is invalid", path, n);
        } else if (!(*out = calloc(n + 1, 1))) {
            rc = lm_fail(err, LM_ERR_NOMEM, "%s: no memory for the XML header", path);
        } else {
            mt = H5Tcopy(H5T_C_S1);
            H5Tset_size(mt, n + 1);
            H5Tset_strpad(mt, H5T_STR_NULLTERM);
            H5Tset_cset(mt, H5Tget_cset(ft));
            if (H5Dread(ds, mt, ms, sp, H5P_DEFAULT, *out) < 0) {
                rc = lm_h5_fail(err, LM_ERR_FORMAT, path, "cannot read the XML header /dataset/xml");
                free(*out);
                *out = NULL;
            } else {
                (*out)[n] = '\0';
                *out_len = strlen(*out);
            }
        }
    }
    H5Sclose(ms);
done:
    if (mt >= 0)
        H5Tclose(mt);
    if (ft >= 0)
        H5Tclose(ft);
    if (sp >= 0)
        H5Sclose(sp);
    H5Dclose(ds);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */
/* ------------------------------------------------------------------------ */

/* Flag bits (1-based, as ismrmrd_is_flag_set) of acquisitions that are not
 * imaging data: skipped. */
static const struct {
    int bit;
    const char *name;
} skip_flags[] = {
    {ISMRMRD_ACQ_IS_NOISE_MEASUREMENT, "noise"},
    {ISMRMRD_ACQ_IS_NAVIGATION_DATA, "navigator"},
    {ISMRMRD_ACQ_IS_PHASECORR_DATA, "phase correction"},
    {ISMRMRD_ACQ_IS_HPFEEDBACK_DATA, "feedback"},
    {ISMRMRD_ACQ_IS_DUMMYSCAN_DATA, "dummy scan"},
    {ISMRMRD_ACQ_IS_RTFEEDBACK_DATA, "feedback"},
    {ISMRMRD_ACQ_IS_SURFACECOILCORRECTIONSCAN_DATA, "surface coil correction"},
    {ISMRMRD_ACQ_IS_PHASE_STABILIZATION_REFERENCE, "phase stabilisation"},
    {ISMRMRD_ACQ_IS_PHASE_STABILIZATION, "phase stabilisation"},
};

static int flag_set(uint64_t flags, int bit)
{
    return bit >= 1 && bit <= 64 && ((flags >> (bit - 1)) & 1u);
}

/* Acquisition count above which a file is taken as corrupt. */
#define MRD_MAX_ACQ ((hsize_t)1 << 24)
#define MRD_BLOCK 256

static int acq_selected(const mrd_head *h, const lm_mrd_sel *sel)
{
    return h->idx.repetition == sel->repetition && h->idx.contrast == sel->contrast;
}

static int acq_skipped(const mrd_head *h, lm_mrd_scan *s)
{
    if (flag_set(h->flags, ISMRMRD_ACQ_IS_NOISE_MEASUREMENT)) {
        if (s)
            s->noise++;
        return 1;
    }
    for (size_t f = 1; f < sizeof skip_flags / sizeof skip_flags[0]; f++)
        if (flag_set(h->flags, skip_flags[f].bit)) {
            if (s)
                s->other_skipped++;
            return 1;
        }
    if (h->encref != 0) {
        if (s)
            s->other_encoding++;
        return 1;
    }
    if (h->ns == 0) {
        if (s)
            s->empty++;
        return 1;
    }
    return 0;
}

typedef struct mrd_file {
    uint64_t file_size;
    hid_t fid, ds, fspace;
    hsize_t nacq;
    int data_complex, has_geo, has_dwell;
    mrd_types types;
    lm_mrd_header hdr;
} mrd_file;

static void mrd_file_close(mrd_file *f)
{
    mrd_types_close(&f->types);
    if (f->fspace >= 0)
        H5Sclose(f->fspace);
    if (f->ds >= 0)
        H5Dclose(f->ds);
    if (f->fid >= 0)
        H5Fclose(f->fid);
    f->fspace = f->ds = f->fid = -1;
}

static lm_code mrd_file_open(const char *path, mrd_file *f, lm_error *err)
{
    memset(f, 0, sizeof *f);
    f->fid = f->ds = f->fspace = -1;
    f->types.idx = f->types.head = f->types.head_only = f->types.acq = -1;
    f->types.traj_vl = f->types.data_vl = f->types.cplx = -1;
    if (!path || !*path)
        return lm_fail(err, LM_ERR_INVALID, "empty ISMRMRD file name");

    struct stat st;
    if (stat(path, &st) != 0)
        return lm_fail(err, LM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return lm_fail(err, LM_ERR_IO, "%s: is a folder, not an ISMRMRD file", path);
    FILE *probe = fopen(path, "rb");
    if (!probe)
        return lm_fail(err, LM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    fclose(probe);
    if (st.st_size == 0)
        return lm_fail(err, LM_ERR_FORMAT, "%s: empty file (not an ISMRMRD HDF5 file)", path);
    f->file_size = (uint64_t)st.st_size;

    htri_t is = H5Fis_hdf5(path);
    if (is <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return lm_fail(err, LM_ERR_FORMAT, "%s: not an HDF5 file (ISMRMRD files are HDF5)", path);
    }
    f->fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f->fid < 0)
        return lm_h5_fail(err, LM_ERR_FORMAT, path, "cannot open as HDF5 (damaged or truncated?)");

    char *xml = NULL;
    size_t xml_len = 0;
    lm_code rc = read_xml(f->fid, path, &xml, &xml_len, err);
    if (rc != LM_OK)
        goto fail;
    rc = lm_mrd_header_parse(xml, xml_len, path, &f->hdr, err);
    free(xml);
    if (rc != LM_OK)
        goto fail;

    if (H5Lexists(f->fid, "/dataset/data", H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: no acquisitions (/dataset/data is missing)", path);
        goto fail;
    }
    f->ds = H5Dopen2(f->fid, "/dataset/data", H5P_DEFAULT);
    if (f->ds < 0) {
        rc = lm_h5_fail(err, LM_ERR_FORMAT, path, "/dataset/data is not a dataset");
        goto fail;
    }
    hid_t ft = H5Dget_type(f->ds);
    if (ft < 0) {
        rc = lm_h5_fail(err, LM_ERR_FORMAT, path, "cannot read the type of /dataset/data");
        goto fail;
    }
    rc = check_acq_type(ft, path, &f->data_complex, &f->has_geo, &f->has_dwell, err);
    H5Tclose(ft);
    if (rc != LM_OK)
        goto fail;
    f->fspace = H5Dget_space(f->ds);
    if (f->fspace < 0 || H5Sget_simple_extent_type(f->fspace) != H5S_SIMPLE ||
        H5Sget_simple_extent_ndims(f->fspace) != 1) {
        H5Eclear2(H5E_DEFAULT);
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: /dataset/data is not a one-dimensional list of acquisitions", path);
        goto fail;
    }
    hsize_t dims[1];
    if (H5Sget_simple_extent_dims(f->fspace, dims, NULL) != 1) {
        rc = lm_h5_fail(err, LM_ERR_FORMAT, path, "cannot read the size of /dataset/data");
        goto fail;
    }
    f->nacq = dims[0];
    if (f->nacq == 0) {
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: no acquisitions (/dataset/data is empty)", path);
        goto fail;
    }
    if (f->nacq > MRD_MAX_ACQ) {
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: %llu acquisitions is absurd (more than %llu)", path,
                     (unsigned long long)f->nacq, (unsigned long long)MRD_MAX_ACQ);
        goto fail;
    }
    if (!mrd_types_make(&f->types, f->data_complex, f->has_geo, f->has_dwell)) {
        rc = lm_h5_fail(err, LM_ERR_INTERNAL, path, "cannot build the HDF5 memory types");
        goto fail;
    }
    return LM_OK;
fail:
    mrd_file_close(f);
    return rc;
}

/* Reads count elements from start with memory type mt into buf. */
static int read_block(mrd_file *f, hid_t mt, hsize_t start, hsize_t count, void *buf)
{
    hid_t ms = H5Screate_simple(1, &count, NULL);
    if (ms < 0)
        return 0;
    int ok = H5Sselect_hyperslab(f->fspace, H5S_SELECT_SET, &start, NULL, &count, NULL) >= 0 &&
             H5Dread(f->ds, mt, ms, f->fspace, H5P_DEFAULT, buf) >= 0;
    H5Sclose(ms);
    return ok;
}

/* Where the acquisitions come from: an HDF5 file, or a stream's messages
 * held in memory. The passes below read both alike, so a file and a
 * stream become the same acquisition by the same checks. */
typedef struct mrd_src {
    const lm_mrd_header *hdr;
    uint64_t nacq;
    uint64_t max_stored; /* bytes the samples can occupy (a file's size) */
    int data_complex;    /* data stored as {real, imag} compounds: len counts complex values */
    int has_dwell;
    /* count headers (acquisitions) from start into out: 1, or 0 on failure */
    int (*heads)(struct mrd_src *src, uint64_t start, uint64_t count, mrd_head_only *out);
    int (*acqs)(struct mrd_src *src, uint64_t start, uint64_t count, mrd_acq *out);
    /* frees what acqs allocated (also after a failed acqs) */
    void (*release)(struct mrd_src *src, uint64_t count, mrd_acq *buf);
    void *ctx;
} mrd_src;

static int file_heads(mrd_src *src, uint64_t start, uint64_t count, mrd_head_only *out)
{
    mrd_file *f = src->ctx;
    return read_block(f, f->types.head_only, start, count, out);
}

static int file_acqs(mrd_src *src, uint64_t start, uint64_t count, mrd_acq *out)
{
    mrd_file *f = src->ctx;
    return read_block(f, f->types.acq, start, count, out);
}

static void file_release(mrd_src *src, uint64_t count, mrd_acq *buf)
{
    mrd_file *f = src->ctx;
    hsize_t cnt = count;
    hid_t ms = H5Screate_simple(1, &cnt, NULL);
    if (ms >= 0) {
        H5Dvlen_reclaim(f->types.acq, ms, H5P_DEFAULT, buf);
        H5Sclose(ms);
    }
}

static void file_source(mrd_file *f, mrd_src *src)
{
    *src = (mrd_src){.hdr = &f->hdr, .nacq = f->nacq, .max_stored = f->file_size, .data_complex = f->data_complex,
                     .has_dwell = f->has_dwell, .heads = file_heads, .acqs = file_acqs, .release = file_release,
                     .ctx = f};
}

/* Pass 0: headers only, to choose the repetition and contrast. With no
 * repetition asked for, the lowest present is read, and the contrast is
 * the one asked for or the lowest present in that repetition. */
static lm_code scan_select(mrd_src *f, const char *path, const lm_mrd_opts *o, lm_mrd_sel *sel, lm_error *err)
{
    memset(sel, 0, sizeof *sel);
    sel->repetition = sel->contrast = -1;
    unsigned char *rep = calloc(65536, 1), *con = calloc(65536, 1);
    uint32_t *con_in = calloc(65536, sizeof *con_in); /* stamp: seen in the repetition wanted */
    mrd_head_only *buf = calloc(MRD_BLOCK, sizeof *buf);
    lm_code rc = LM_OK;
    if (!rep || !con || !con_in || !buf) {
        rc = lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path);
        goto out;
    }
    const int want_rep = o->repetition;
    int cur = -1;
    uint32_t stamp = 1;
    for (hsize_t start = 0; start < f->nacq; start += MRD_BLOCK) {
        hsize_t count = f->nacq - start < MRD_BLOCK ? f->nacq - start : MRD_BLOCK;
        memset(buf, 0, count * sizeof *buf);
        if (!f->heads(f, start, count, buf)) {
            rc = lm_h5_fail(err, LM_ERR_FORMAT, path, "cannot read the acquisition headers");
            goto out;
        }
        for (hsize_t b = 0; b < count; b++) {
            const mrd_head *h = &buf[b].head;
            if (acq_skipped(h, NULL))
                continue;
            int r = h->idx.repetition, c = h->idx.contrast;
            rep[r] = con[c] = 1;
            if (want_rep < 0 && (cur < 0 || r < cur)) {
                cur = r;
                stamp++; /* forget the contrasts of the higher repetition */
            }
            if (r == (want_rep >= 0 ? want_rep : cur))
                con_in[c] = stamp;
        }
    }
    sel->rep_lo = sel->con_lo = -1;
    for (int v = 0; v < 65536; v++) {
        if (rep[v]) {
            if (sel->rep_lo < 0)
                sel->rep_lo = v;
            sel->rep_hi = v;
            sel->nrep++;
        }
        if (con[v]) {
            if (sel->con_lo < 0)
                sel->con_lo = v;
            sel->con_hi = v;
            sel->ncon++;
        }
    }
    if (sel->nrep == 0)
        goto out; /* pass 1 says there is nothing to reconstruct */
    if (want_rep >= 0 && (want_rep > 65535 || !rep[want_rep])) {
        rc = lm_fail(err, LM_ERR_INVALID, "%s: repetition %d is not in the file (it holds %d: %d..%d)", path,
                     want_rep, sel->nrep, sel->rep_lo, sel->rep_hi);
        goto out;
    }
    sel->repetition = want_rep >= 0 ? want_rep : cur;
    if (o->contrast >= 0) {
        if (o->contrast > 65535 || con_in[o->contrast] != stamp) {
            rc = lm_fail(err, LM_ERR_INVALID,
                         "%s: contrast %d is not in repetition %d of the file (it holds contrasts %d..%d)", path,
                         o->contrast, sel->repetition, sel->con_lo, sel->con_hi);
            goto out;
        }
        sel->contrast = o->contrast;
    } else {
        for (int v = 0; v < 65536 && sel->contrast < 0; v++)
            if (con_in[v] == stamp)
                sel->contrast = v;
    }
out:
    free(rep);
    free(con);
    free(con_in);
    free(buf);
    return rc;
}

/* Pass 1: headers only. Counts, checks consistency and sizes. */
static lm_code scan_headers(mrd_src *f, const char *path, const lm_mrd_sel *sel, lm_mrd_scan *s, lm_error *err)
{
    memset(s, 0, sizeof *s);
    s->tdim = -1;
    s->total = f->nacq;
    mrd_head_only *buf = calloc(MRD_BLOCK, sizeof *buf);
    s->slice_m = calloc(65536, sizeof *s->slice_m);
    if (!buf || !s->slice_m) {
        free(buf);
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path);
    }
    lm_code rc = LM_OK;
    int64_t last_len = 0, first = -1;
    int uniform = 1;
    /* Bytes the headers say are stored: at most 2^24 x 65535 x 65535 x 12,
     * no overflow. Vlen data live in HDF5's global heap, never compressed,
     * so they cannot exceed the file's size: checked before allocating. */
    uint64_t stored = 0;
    for (hsize_t start = 0; start < f->nacq && rc == LM_OK; start += MRD_BLOCK) {
        hsize_t count = f->nacq - start < MRD_BLOCK ? f->nacq - start : MRD_BLOCK;
        memset(buf, 0, count * sizeof *buf);
        if (!f->heads(f, start, count, buf)) {
            rc = lm_h5_fail(err, LM_ERR_FORMAT, path, "cannot read the acquisition headers");
            break;
        }
        for (hsize_t b = 0; b < count; b++) {
            const mrd_head *h = &buf[b].head;
            unsigned long long a = (unsigned long long)(start + b);
            if (flag_set(h->flags, ISMRMRD_ACQ_IS_NOISE_MEASUREMENT) && h->ns > 0 && h->channels > 0) {
                /* noise scans are kept for prewhitening, all their samples */
                if (s->noise_channels && h->channels != s->noise_channels) {
                    rc = lm_fail(err, LM_ERR_FORMAT, "%s: noise acquisition %llu has %u channels, an earlier one "
                                 "%lld", path, a, h->channels, (long long)s->noise_channels);
                    break;
                }
                s->noise_channels = h->channels;
                s->noise_m += h->ns;
                stored += (uint64_t)h->ns * (uint64_t)h->channels * 8u;
            }
            if (acq_skipped(h, s))
                continue;
            if (!acq_selected(h, sel)) {
                s->other_sel++;
                continue;
            }
            if (h->tdim != 0 && h->tdim != 2 && h->tdim != 3) {
                rc = lm_fail(err, LM_ERR_UNSUPPORTED,
                             "%s: acquisition %llu has trajectory_dimensions %u (Larmor reads 0, 2 or 3)",
                             path, a, h->tdim);
                break;
            }
            if (h->channels == 0) {
                rc = lm_fail(err, LM_ERR_FORMAT, "%s: acquisition %llu has no active channels", path, a);
                break;
            }
            if ((unsigned)h->dpre + h->dpost >= h->ns) {
                rc = lm_fail(err, LM_ERR_FORMAT,
                             "%s: acquisition %llu discards %u + %u of its %u samples", path, a,
                             h->dpre, h->dpost, h->ns);
                break;
            }
            if (s->tdim < 0) {
                s->tdim = h->tdim;
                s->channels = h->channels;
                s->dpre = h->dpre;
                s->dpost = h->dpost;
                s->ns_min = s->ns_max = h->ns;
                first = (int64_t)a;
                s->lo[0] = s->hi[0] = h->idx.slice;
                s->lo[1] = s->hi[1] = h->idx.contrast;
                s->lo[2] = s->hi[2] = h->idx.phase;
                s->lo[3] = s->hi[3] = h->idx.set;
            } else if (h->tdim != s->tdim) {
                rc = lm_fail(err, LM_ERR_FORMAT,
                             "%s: acquisition %llu has trajectory_dimensions %u, acquisition %lld has %d",
                             path, a, h->tdim, (long long)first, s->tdim);
                break;
            } else if (h->channels != s->channels) {
                rc = lm_fail(err, LM_ERR_FORMAT,
                             "%s: acquisition %llu has %u channels, acquisition %lld has %lld", path, a,
                             h->channels, (long long)first, (long long)s->channels);
                break;
            }
            uint16_t v[4] = {h->idx.slice, h->idx.contrast, h->idx.phase, h->idx.set};
            for (int q = 0; q < 4; q++) {
                if (v[q] < s->lo[q])
                    s->lo[q] = v[q];
                if (v[q] > s->hi[q])
                    s->hi[q] = v[q];
            }
            if (h->idx.e2 > s->e2_max)
                s->e2_max = h->idx.e2;
            if (h->tdim == 0 && flag_set(h->flags, ISMRMRD_ACQ_IS_REVERSE))
                s->reversed = 1;
            if (h->ns < s->ns_min)
                s->ns_min = h->ns;
            if (h->ns > s->ns_max)
                s->ns_max = h->ns;
            int64_t len = (int64_t)h->ns - h->dpre - h->dpost;
            /* A common readout length: every readout but the last has the
             * first's length, the last may be shorter (a cut trajectory). */
            if (s->kept == 0)
                s->readout = len;
            else if (last_len != s->readout)
                uniform = 0;
            last_len = len;
            s->m += len; /* at most 2^24 x 65535 < 2^40: no overflow */
            if (s->slice_m[h->idx.slice] == 0)
                s->nslices++;
            s->slice_m[h->idx.slice] += len;
            stored += (uint64_t)h->ns * ((uint64_t)h->channels * 8u + (uint64_t)h->tdim * 4u);
            s->kept++;
        }
    }
    free(buf);
    if (rc != LM_OK)
        return rc;
    if (s->kept == 0)
        return lm_fail(err, LM_ERR_FORMAT,
                       "%s: no imaging acquisitions (%llu in all: %llu noise, %llu other non-imaging, %llu "
                       "of other encodings, %llu empty)",
                       path, (unsigned long long)s->total, (unsigned long long)s->noise,
                       (unsigned long long)s->other_skipped, (unsigned long long)s->other_encoding,
                       (unsigned long long)s->empty);
    if (!uniform || last_len > s->readout)
        s->readout = 0;
    if (stored > f->max_stored)
        return lm_fail(err, LM_ERR_FORMAT,
                       "%s: acquisition headers claim %llu bytes of samples (%lld x %lld channels) but the "
                       "file holds %llu bytes (truncated or inconsistent headers)",
                       path, (unsigned long long)stored, (long long)s->m, (long long)s->channels,
                       (unsigned long long)f->max_stored);
    /* Slices are the caller's to judge; contrasts are one by selection. */
    static const char *const what[4] = {"slices", "contrasts", "cardiac phases", "sets"};
    for (int q = 2; q < 4; q++)
        if (s->hi[q] != s->lo[q])
            return lm_fail(err, LM_ERR_UNSUPPORTED,
                           "%s: %s %u..%u in one file; Larmor reconstructs one phase and one set", path, what[q],
                           s->lo[q], s->hi[q]);
    if (s->reversed)
        return lm_fail(err, LM_ERR_UNSUPPORTED,
                       "%s: reversed (EPI-style) Cartesian readouts are not supported", path);
    size_t total;
    if (!lm_size_mul((size_t)s->m, (size_t)s->channels, &total) || total > LM_MAX_ELEMENTS ||
        (size_t)s->m > LM_MAX_ELEMENTS / 3)
        return lm_fail(err, LM_ERR_NOMEM, "%s: %lld samples x %lld channels is absurd", path,
                       (long long)s->m, (long long)s->channels);
    return LM_OK;
}

/* The k-space centre along encode steps 1 and 2 for Cartesian data. */
static double enc_center(const lm_mrd_header *h, int step)
{
    if (h->has_center[step])
        return (double)h->center[step];
    return (double)(h->matrix[step + 1] / 2);
}

/* Where pass 2 puts one slice's samples (one target for single-volume data). */
typedef struct mrd_target {
    float *k;          /* m x 3 */
    lm_kdata *kd;
    int64_t m, pos;
    int have_geo;
    float geo[4][3];   /* from the slice's first acquisition */
    float *t;          /* sample times (s), when the file has dwell times */
    int no_dwell;      /* an acquisition without a dwell time: t unusable */
} mrd_target;

/* Pass 2: trajectories and data. Each target's k gets the trajectory as
 * stored (tdim values per sample scaled later); for tdim 0 the trajectory
 * is derived from the counters. slice_of maps idx.slice to a target (NULL:
 * everything to target 0). */
static lm_code read_samples(mrd_src *f, const char *path, const lm_mrd_scan *s, const lm_mrd_sel *sel,
                            mrd_target *tg, const int32_t *slice_of, int tdim_eff, lm_kdata *noise,
                            lm_error *err)
{
    mrd_acq *buf = calloc(MRD_BLOCK, sizeof *buf);
    if (!buf)
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path);
    lm_code rc = LM_OK;
    int64_t total = 0, npos = 0;
    const int64_t nc = s->channels;
    const lm_mrd_header *hdr = f->hdr;
    double c1 = enc_center(hdr, 0), c2 = enc_center(hdr, 1);
    for (hsize_t start = 0; start < f->nacq && rc == LM_OK; start += MRD_BLOCK) {
        hsize_t count = f->nacq - start < MRD_BLOCK ? f->nacq - start : MRD_BLOCK;
        memset(buf, 0, count * sizeof *buf);
        if (!f->acqs(f, start, count, buf)) {
            rc = lm_h5_fail(err, LM_ERR_FORMAT, path, "cannot read the acquisitions");
            f->release(f, count, buf); /* whatever was read */
            break;
        }
        for (hsize_t b = 0; b < count && rc == LM_OK; b++) {
            const mrd_acq *q = &buf[b];
            const mrd_head *h = &q->head;
            unsigned long long a = (unsigned long long)(start + b);
            if (noise && flag_set(h->flags, ISMRMRD_ACQ_IS_NOISE_MEASUREMENT) && h->ns > 0 && h->channels > 0) {
                const size_t want = (size_t)h->ns * h->channels * (f->data_complex ? 1 : 2);
                if (h->channels != noise->ncoils || npos + h->ns > noise->m || q->data.len != want || !q->data.p) {
                    rc = lm_fail(err, LM_ERR_FORMAT, "%s: noise acquisition %llu stores %zu values, its header "
                                 "says %u samples x %u channels", path, a, q->data.len, h->ns, h->channels);
                    break;
                }
                const float *dv = q->data.p;
                for (int64_t c = 0; c < noise->ncoils; c++)
                    for (int64_t j = 0; j < h->ns; j++) {
                        const float *p = dv + 2 * ((size_t)c * h->ns + (size_t)j);
                        float *dst = (float *)&noise->d[(size_t)c * (size_t)noise->m + (size_t)(npos + j)];
                        dst[0] = p[0];
                        dst[1] = p[1];
                    }
                npos += h->ns;
                continue;
            }
            if (acq_skipped(h, NULL) || !acq_selected(h, sel))
                continue;
            /* The headers must still agree with pass 1. */
            int64_t len = (int64_t)h->ns - h->dpre - h->dpost;
            int32_t ti = slice_of ? slice_of[h->idx.slice] : 0;
            mrd_target *T = ti >= 0 ? &tg[ti] : NULL;
            if (!T || h->tdim != s->tdim || h->channels != nc || len <= 0 || T->pos + len > T->m) {
                rc = lm_fail(err, LM_ERR_FORMAT, "%s: acquisition %llu changed while reading", path, a);
                break;
            }
            size_t want_traj = (size_t)h->ns * h->tdim;
            size_t want_data = (size_t)h->ns * h->channels * (f->data_complex ? 1 : 2);
            if (h->tdim && q->traj.len != want_traj) {
                rc = lm_fail(err, LM_ERR_FORMAT,
                             "%s: acquisition %llu stores %zu trajectory values, its header says %u "
                             "samples x %u dimensions",
                             path, a, q->traj.len, h->ns, h->tdim);
                break;
            }
            if (q->data.len != want_data) {
                rc = lm_fail(err, LM_ERR_FORMAT,
                             "%s: acquisition %llu stores %zu data values, its header says %u samples x "
                             "%u channels%s",
                             path, a, q->data.len, h->ns, h->channels,
                             f->data_complex ? "" : " x 2 (re, im)");
                break;
            }
            if ((want_traj && h->tdim && !q->traj.p) || (want_data && !q->data.p)) {
                rc = lm_fail(err, LM_ERR_FORMAT, "%s: acquisition %llu has no stored samples", path, a);
                break;
            }
            const float *tr = q->traj.p;
            const float *dv = q->data.p; /* {real, imag} compound is two floats too */
            if (!T->have_geo) {
                memcpy(T->geo, h->geo, sizeof T->geo);
                T->have_geo = 1;
            }
            const int64_t pos = T->pos, m = T->m;
            lm_kdata *kd = T->kd;
            for (int64_t j = 0; j < len && rc == LM_OK; j++) {
                int64_t smp = h->dpre + j; /* index in the stored readout */
                float *kk = T->k + 3 * (pos + j);
                if (h->tdim) {
                    for (int d = 0; d < h->tdim; d++) {
                        float v = tr[smp * h->tdim + d];
                        if (!isfinite(v)) {
                            rc = lm_fail(err, LM_ERR_FORMAT,
                                         "%s: acquisition %llu sample %lld: trajectory is not a finite number",
                                         path, a, (long long)smp);
                            break;
                        }
                        kk[d] = v;
                    }
                    if (h->tdim == 2)
                        kk[2] = tdim_eff == 3 ? (float)((double)h->idx.e2 - c2) : 0.0f;
                } else {
                    kk[0] = (float)((double)smp - (double)h->center);
                    kk[1] = (float)((double)h->idx.e1 - c1);
                    kk[2] = tdim_eff == 3 ? (float)((double)h->idx.e2 - c2) : 0.0f;
                }
                /* t = 0 at center_sample (the echo: k-space centre), both
                 * counted in the stored readout (docs/fieldmap.md) */
                if (T->t && h->dwell_us > 0 && isfinite(h->dwell_us))
                    T->t[pos + j] = (float)(((double)smp - (double)h->center) * (double)h->dwell_us * 1e-6);
                else if (T->t)
                    T->no_dwell = 1;
                for (int64_t c = 0; c < nc && rc == LM_OK; c++) {
                    const float *p = dv + 2 * ((size_t)c * h->ns + (size_t)smp);
                    if (!isfinite(p[0]) || !isfinite(p[1])) {
                        rc = lm_fail(err, LM_ERR_FORMAT,
                                     "%s: acquisition %llu sample %lld channel %lld is not a finite number",
                                     path, a, (long long)smp, (long long)c);
                        break;
                    }
                    /* complex float is laid out as float[2] (C11 6.2.5) */
                    float *dst = (float *)&kd->d[(size_t)c * (size_t)m + (size_t)(pos + j)];
                    dst[0] = p[0];
                    dst[1] = p[1];
                }
            }
            T->pos += len;
            total += len;
        }
        f->release(f, count, buf);
    }
    free(buf);
    if (rc == LM_OK && total != s->m)
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: acquisitions changed while reading", path);
    return rc;
}

static void targets_free(mrd_target *tg, lm_traj **tr, lm_kdata **kd, int n)
{
    for (int i = 0; i < n; i++) {
        lm_traj_free(tr[i]);
        lm_kdata_free(kd[i]);
    }
    free(tg);
    free(tr);
    free(kd);
}

/* The acquisitions of src (path names them in messages) as one lm_mrd.
 * allow_slices: return multi-slice 2D data in out->slices (else such data
 * are refused when out is given). */
static lm_code mrd_load_src(mrd_src *src, const char *path, const lm_mrd_opts *o, int allow_slices, lm_mrd *out,
                            lm_mrd_summary *sum, lm_error *err)
{
    lm_code rc;
    lm_mrd_scan s;
    memset(&s, 0, sizeof s);
    lm_mrd_sel sel;
    int32_t *slice_of = NULL;
    mrd_target *tg = NULL;
    lm_traj **trs = NULL;
    lm_kdata **kds = NULL;
    lm_kdata *nk = NULL;
    int nt = 0;
    rc = scan_select(src, path, o, &sel, err);
    if (rc == LM_OK)
        rc = scan_headers(src, path, &sel, &s, err);
    if (rc != LM_OK)
        goto done;
    const lm_mrd_header *h = src->hdr;
    if (sum) {
        sum->scan = s;
        sum->scan.slice_m = NULL;
        sum->sel = sel;
        sum->hdr = *h;
    }
    if (s.nslices > 1 && h->matrix[2] > 1) {
        rc = lm_fail(err, LM_ERR_UNSUPPORTED,
                     "%s: slices %u..%u of a 3D encoding (z = %lld): multi-slab data are not supported", path,
                     s.lo[0], s.hi[0], (long long)h->matrix[2]);
        goto done;
    }
    if (s.nslices > 1 && out && !allow_slices) {
        rc = lm_fail(err, LM_ERR_UNSUPPORTED,
                     "%s: holds %d slices (idx.slice %u..%u): reconstruct them with larmor-cli recon", path,
                     s.nslices, s.lo[0], s.hi[0]);
        goto done;
    }

    /* Dimensionality. */
    int ndim;
    if (s.tdim == 3)
        ndim = 3;
    else if (h->matrix[2] > 1)
        ndim = 3; /* Cartesian 3D, or a 2D trajectory per kz partition (stack of stars/spirals) */
    else {
        ndim = 2;
        if (s.e2_max > 0) {
            rc = lm_fail(err, LM_ERR_FORMAT,
                         "%s: kspace_encode_step_2 reaches %u but the encoded matrix has z = 1", path,
                         s.e2_max);
            goto done;
        }
    }

    if (s.noise_channels && s.noise_channels != s.channels) {
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: noise scans have %lld channels but the imaging data %lld", path,
                     (long long)s.noise_channels, (long long)s.channels);
        goto done;
    }

    /* One target per slice, in idx.slice order. */
    nt = s.nslices;
    slice_of = malloc(65536 * sizeof *slice_of);
    tg = calloc((size_t)nt, sizeof *tg);
    trs = calloc((size_t)nt, sizeof *trs);
    kds = calloc((size_t)nt, sizeof *kds);
    if (!slice_of || !tg || !trs || !kds) {
        rc = lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    for (int v = 0, i = 0; v < 65536; v++) {
        slice_of[v] = -1;
        if (s.slice_m[v] > 0 && i < nt) {
            slice_of[v] = i;
            tg[i].m = s.slice_m[v];
            i++;
        }
    }
    for (int i = 0; i < nt && rc == LM_OK; i++) {
        trs[i] = lm_traj_new(tg[i].m, ndim, err);
        kds[i] = trs[i] ? lm_kdata_new(tg[i].m, s.channels, err) : NULL;
        if (!trs[i] || !kds[i])
            rc = err ? err->code : LM_ERR_NOMEM;
        else {
            tg[i].k = trs[i]->k;
            tg[i].kd = kds[i];
            if (src->has_dwell) {
                rc = lm_traj_alloc_times(trs[i], err);
                tg[i].t = trs[i]->t;
            }
        }
    }
    if (rc == LM_OK && s.noise_m > 0 && out && !(nk = lm_kdata_new(s.noise_m, s.noise_channels, err)))
        rc = err ? err->code : LM_ERR_NOMEM;
    if (rc != LM_OK) {
        if (err) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            lm_fail(err, rc, "%s: %s", path, msg);
        }
        goto done;
    }
    rc = read_samples(src, path, &s, &sel, tg, nt > 1 ? slice_of : NULL, ndim, nk, err);
    if (rc != LM_OK)
        goto done;
    /* Times only when every acquisition gave its dwell time. */
    double tlo = INFINITY, thi = -INFINITY;
    for (int i = 0; i < nt; i++) {
        if (trs[i]->t && tg[i].no_dwell) {
            free(trs[i]->t);
            trs[i]->t = NULL;
        }
        for (int64_t j = 0; trs[i]->t && j < trs[i]->m; j++) {
            tlo = fmin(tlo, trs[i]->t[j]);
            thi = fmax(thi, trs[i]->t[j]);
        }
    }

    /* Units of a stored trajectory. */
    double kmax = 0;
    lm_mrd_units used = LM_MRD_UNITS_CYCLES;
    const char *why = "derived from the encoding counters";
    if (s.tdim > 0) {
        for (int ti = 0; ti < nt; ti++)
            for (int64_t i = 0; i < tg[ti].m; i++)
                for (int d = 0; d < s.tdim; d++) {
                    double v = fabs(tg[ti].k[3 * i + d]);
                    if (v > kmax)
                        kmax = v;
                }
        if (o->units != LM_MRD_UNITS_AUTO) {
            used = o->units;
            why = "as asked";
        } else if (h->larmor_units >= 0) {
            used = (lm_mrd_units)h->larmor_units;
            why = "as tagged by Larmor in the header";
        } else if (kmax <= 0.5) {
            used = LM_MRD_UNITS_NORMALIZED;
            why = "max |k| <= 0.5: taken as normalised to the matrix";
        } else {
            used = LM_MRD_UNITS_CYCLES;
            why = "max |k| > 0.5: taken as cycles/FOV";
        }
        for (int ti = 0; ti < nt; ti++) {
            lm_traj *t = trs[ti];
            if (used == LM_MRD_UNITS_NORMALIZED)
                for (int64_t i = 0; i < t->m; i++)
                    for (int d = 0; d < s.tdim; d++)
                        t->k[3 * i + d] *= (float)h->matrix[d];
            if (s.tdim == 3 && h->matrix[2] == 1) {
                for (int64_t i = 0; i < t->m; i++)
                    if (t->k[3 * i + 2] != 0) {
                        rc = lm_fail(err, LM_ERR_FORMAT,
                                     "%s: 3-D trajectory (kz = %g at sample %lld) but the encoded matrix has z = 1",
                                     path, (double)t->k[3 * i + 2], (long long)i);
                        goto done;
                    }
                t->ndim = 2;
            }
        }
    }
    for (int ti = 0; ti < nt; ti++) {
        if (h->larmor_readout >= 0 && h->larmor_readout <= trs[ti]->m)
            trs[ti]->readout = h->larmor_readout;
        else
            trs[ti]->readout = s.readout <= trs[ti]->m ? s.readout : 0;
    }
    /* Cartesian readouts oversampled against reconSpace (same voxel size,
     * a smaller matrix along x): reduced to reconSpace's matrix and FOV. */
    int os_applied = 0;
    int64_t nx = h->matrix[0];
    double fovx = h->fov_mm[0];
    const int64_t rx = h->recon_matrix[0];
    if (s.tdim == 0 && rx > 1 && rx < h->matrix[0] && h->recon_fov_mm[0] > 0 &&
        fabs(h->recon_fov_mm[0] / (double)rx - h->fov_mm[0] / (double)h->matrix[0]) <=
            1e-3 * h->fov_mm[0] / (double)h->matrix[0]) {
        os_applied = 1;
        for (int ti = 0; ti < nt && rc == LM_OK && os_applied; ti++) {
            int applied = 0;
            rc = lm_mrd_remove_oversampling(&trs[ti], &kds[ti], h->matrix[0], rx, &applied, err);
            os_applied = applied; /* slices alike: the first decides (a later one refused is an error) */
            if (rc == LM_OK && !applied && ti > 0)
                rc = lm_fail(err, LM_ERR_FORMAT, "%s: slice %d's readouts differ from the first slice's", path, ti);
        }
        if (rc != LM_OK)
            goto done;
        if (os_applied) {
            nx = rx;
            fovx = h->recon_fov_mm[0];
        }
    }
    if (sum) {
        sum->oversampling_removed = os_applied;
        sum->units_used = used;
        sum->units_why = why;
        sum->kmax_stored = kmax;
        sum->ndim = nt ? trs[0]->ndim : ndim;
        sum->has_times = nt && trs[0]->t != NULL;
        sum->t_lo = tlo;
        sum->t_hi = thi;
        sum->file_has_dwell = src->has_dwell;
    }
    if (out) {
        lm_geom_init(&out->geom, nx, h->matrix[1], h->matrix[2], fovx);
        for (int a = 1; a < 3; a++)
            out->geom.fov_mm[a] = h->fov_mm[a];
        out->readout_oversampling = os_applied ? (int)lrint((double)h->matrix[0] / (double)rx) : 0;
        if (s.tdim == 0)
            out->missing_lines = lm_mrd_missing_lines(trs[0], &out->geom);
        out->noise = nk;
        nk = NULL;
        out->cartesian = s.tdim == 0;
        out->nslices = nt;
        out->repetition = sel.repetition;
        out->contrast = sel.contrast;
        out->nrepetitions = sel.nrep;
        out->ncontrasts = sel.ncon;
        out->prov = h->prov;
        out->parallel = h->parallel;
        if (h->recon_matrix[0] > 0 && h->recon_matrix[1] > 0 && h->recon_matrix[2] > 0) {
            int same = 1;
            for (int a = 0; a < 3; a++)
                same &= h->recon_matrix[a] == h->matrix[a] && h->recon_fov_mm[a] == h->fov_mm[a];
            if (!same) {
                lm_geom_init(&out->recon_geom, h->recon_matrix[0], h->recon_matrix[1], h->recon_matrix[2],
                             h->recon_fov_mm[0]);
                for (int a = 0; a < 3; a++)
                    out->recon_geom.fov_mm[a] = h->recon_fov_mm[a];
            }
        }
        if (nt == 1) {
            out->traj = trs[0];
            out->kdata = kds[0];
            trs[0] = NULL;
            kds[0] = NULL;
        } else {
            out->slices = calloc((size_t)nt, sizeof *out->slices);
            if (!out->slices) {
                rc = lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path);
                lm_mrd_clear(out);
                goto done;
            }
            for (int v = 0; v < 65536; v++) {
                int i = slice_of[v];
                if (i < 0)
                    continue;
                lm_mrd_slice *sl = &out->slices[i];
                sl->traj = trs[i];
                sl->kdata = kds[i];
                trs[i] = NULL;
                kds[i] = NULL;
                sl->index = v;
                for (int a = 0; a < 3; a++) {
                    sl->position[a] = tg[i].geo[0][a];
                    sl->read_dir[a] = tg[i].geo[1][a];
                    sl->phase_dir[a] = tg[i].geo[2][a];
                    sl->slice_dir[a] = tg[i].geo[3][a];
                }
            }
            lm_mrd_sort_slices(out);
        }
    }
done:
    if (tg)
        targets_free(tg, trs, kds, nt);
    lm_kdata_free(nk);
    free(slice_of);
    free(s.slice_m);
    return rc;
}

/* Locked: the caller holds lm_h5_quiet. */
static lm_code mrd_load(const char *path, const lm_mrd_opts *o, int allow_slices, lm_mrd *out, lm_mrd_summary *sum,
                        lm_error *err)
{
    mrd_file f;
    lm_code rc = mrd_file_open(path, &f, err);
    if (rc != LM_OK)
        return rc;
    mrd_src src;
    file_source(&f, &src);
    rc = mrd_load_src(&src, path, o, allow_slices, out, sum, err);
    mrd_file_close(&f);
    return rc;
}

/* ---- a stream's acquisitions -------------------------------------------- */

typedef struct mem_acqs {
    const lm_mrd_msg *const *msgs;
} mem_acqs;

static void head_from_wire(const ISMRMRD_AcquisitionHeader *a, mrd_head *h)
{
    memset(h, 0, sizeof *h);
    h->flags = a->flags;
    h->ns = a->number_of_samples;
    h->channels = a->active_channels;
    h->dpre = a->discard_pre;
    h->dpost = a->discard_post;
    h->center = a->center_sample;
    h->encref = a->encoding_space_ref;
    h->tdim = a->trajectory_dimensions;
    h->idx = (mrd_idx){a->idx.kspace_encode_step_1, a->idx.kspace_encode_step_2, a->idx.average, a->idx.slice,
                       a->idx.contrast, a->idx.phase, a->idx.repetition, a->idx.set};
    for (int i = 0; i < 3; i++) {
        h->geo[0][i] = a->position[i];
        h->geo[1][i] = a->read_dir[i];
        h->geo[2][i] = a->phase_dir[i];
        h->geo[3][i] = a->slice_dir[i];
    }
    h->dwell_us = a->sample_time_us;
}

static int mem_heads(mrd_src *src, uint64_t start, uint64_t count, mrd_head_only *out)
{
    const mem_acqs *m = src->ctx;
    for (uint64_t i = 0; i < count; i++)
        head_from_wire(&m->msgs[start + i]->acq, &out[i].head);
    return 1;
}

static int mem_acqs_read(mrd_src *src, uint64_t start, uint64_t count, mrd_acq *out)
{
    const mem_acqs *m = src->ctx;
    for (uint64_t i = 0; i < count; i++) {
        const lm_mrd_msg *q = m->msgs[start + i];
        head_from_wire(&q->acq, &out[i].head);
        /* the codec read exactly what the header announces */
        out[i].traj.len = q->traj ? (size_t)q->acq.number_of_samples * q->acq.trajectory_dimensions : 0;
        out[i].traj.p = q->traj;
        out[i].data.len = q->data ? (size_t)q->acq.number_of_samples * q->acq.active_channels * 2 : 0;
        out[i].data.p = q->data;
    }
    return 1;
}

static void mem_release(mrd_src *src, uint64_t count, mrd_acq *buf)
{
    (void)src;
    (void)count;
    (void)buf; /* the messages stay the caller's */
}

lm_code lm_mrd_from_messages(const char *what, const char *xml, size_t xml_len, const lm_mrd_msg *const *acqs,
                             size_t n, const lm_mrd_opts *opts, lm_mrd *out, lm_error *err)
{
    if (!out)
        return lm_fail(err, LM_ERR_INVALID, "%s: no output for the MRD acquisitions", what);
    memset(out, 0, sizeof *out);
    lm_mrd_opts def;
    lm_mrd_opts_init(&def);
    if (!opts)
        opts = &def;
    if (n == 0)
        return lm_fail(err, LM_ERR_FORMAT, "%s: no acquisitions", what);
    if (n > MRD_MAX_ACQ)
        return lm_fail(err, LM_ERR_FORMAT, "%s: %zu acquisitions is absurd (more than %llu)", what, n,
                       (unsigned long long)MRD_MAX_ACQ);
    for (size_t i = 0; i < n; i++)
        if (!acqs[i] || acqs[i]->id != LM_MRD_MSG_ACQUISITION)
            return lm_fail(err, LM_ERR_INVALID, "%s: item %zu is not an acquisition", what, i);
    lm_mrd_header hdr;
    lm_code rc = lm_mrd_header_parse(xml, xml_len, what, &hdr, err);
    if (rc != LM_OK)
        return rc;
    mem_acqs m = {acqs};
    mrd_src src = {.hdr = &hdr, .nacq = n, .max_stored = UINT64_MAX, .data_complex = 0, .has_dwell = 1,
                   .heads = mem_heads, .acqs = mem_acqs_read, .release = mem_release, .ctx = &m};
    /* no HDF5 here, and the passes are reentrant: no lock */
    return mrd_load_src(&src, what, opts, 1, out, NULL, err);
}

lm_code lm_mrd_read_opts(const char *path, const lm_mrd_opts *opts, lm_mrd *out, lm_error *err)
{
    if (!out)
        return lm_fail(err, LM_ERR_INVALID, "%s: no output for the ISMRMRD reader", path ? path : "");
    memset(out, 0, sizeof *out);
    lm_mrd_opts def;
    lm_mrd_opts_init(&def);
    if (!opts)
        opts = &def;
    lm_h5_quiet q;
    lm_h5_quiet_begin(&q);
    lm_code rc = mrd_load(path, opts, 1, out, NULL, err);
    lm_h5_quiet_end(&q);
    return rc;
}

lm_code lm_mrd_read_units(const char *path, lm_mrd_units units, lm_mrd *out, lm_error *err)
{
    if (!out)
        return lm_fail(err, LM_ERR_INVALID, "%s: no output for the ISMRMRD reader", path ? path : "");
    memset(out, 0, sizeof *out);
    lm_mrd_opts o;
    lm_mrd_opts_init(&o);
    o.units = units;
    lm_h5_quiet q;
    lm_h5_quiet_begin(&q);
    lm_code rc = mrd_load(path, &o, 0, out, NULL, err);
    lm_h5_quiet_end(&q);
    return rc;
}

lm_code lm_mrd_read(const char *path, lm_mrd *out, lm_error *err)
{
    return lm_mrd_read_units(path, lm_mrd_units_default(), out, err);
}

lm_code lm_mrd_summarize(const char *path, const lm_mrd_opts *o, lm_mrd_summary *sum, lm_error *err)
{
    memset(sum, 0, sizeof *sum);
    lm_h5_quiet q;
    lm_h5_quiet_begin(&q);
    lm_code rc = mrd_load(path, o, 1, NULL, sum, err);
    lm_h5_quiet_end(&q);
    return rc;
}


#endif /* LM_HAVE_ISMRMRD */
