/* Loaders that pick the format from the file name (docs/conventions.md section 5:
 * .cfl/.hdr BART, .nii/.nii.gz NIfTI, .h5 ISMRMRD, .bin Parboil), the
 * summary behind `larmor-cli info`, and the data checks every reader uses. */
#include "lm_io.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nifti1_io.h>

#include "lm_dicom.h"
#include "lm_io_ismrmrd.h"

/* glibc defines CMPLXF for gcc only; clang has the same builtin. */
#ifndef CMPLXF
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#endif

#define LM_SUPPORTED "supported: .cfl/.hdr (BART), .nii/.nii.gz (NIfTI), .h5 (ISMRMRD), .bin (Parboil), a DICOM folder or file"

lm_code lm_check_finite(const char *what, const float *v, size_t count, lm_error *err)
{
    for (size_t i = 0; i < count; i++)
        if (!isfinite(v[i]))
            return lm_fail(err, LM_ERR_FORMAT, "%s: value %zu of %zu is %s", what, i, count,
                           isnan(v[i]) ? "NaN" : "infinite");
    return LM_OK;
}

lm_code lm_check_finite_complex(const char *what, const lm_cfloat *v, size_t count, lm_error *err)
{
    const float *f = (const float *)v;
    for (size_t i = 0; i < 2 * count; i++)
        if (!isfinite(f[i]))
            return lm_fail(err, LM_ERR_FORMAT, "%s: element %zu of %zu has a%s %s part", what, i / 2,
                           count, isnan(f[i]) ? " NaN" : "n infinite", i % 2 ? "imaginary" : "real");
    return LM_OK;
}

lm_code lm_check_traj_kdata(const lm_traj *t, const lm_kdata *k, const char *traj_path,
                            const char *k_path, lm_error *err)
{
    if (!t || !k)
        return lm_fail(err, LM_ERR_INVALID, "%s: trajectory or k-space data missing",
                       t ? k_path : traj_path);
    if (t->m != k->m)
        return lm_fail(err, LM_ERR_FORMAT,
                       "%s: holds %lld samples per channel but the trajectory %s has %lld",
                       k_path, (long long)k->m, traj_path, (long long)t->m);
    return LM_OK;
}

typedef enum file_kind { KIND_UNKNOWN, KIND_CFL, KIND_NIFTI, KIND_MRD, KIND_PARBOIL } file_kind;

static int has_suffix(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && strcasecmp(s + ls - lx, suffix) == 0;
}

static file_kind kind_of(const char *path)
{
    if (has_suffix(path, ".cfl") || has_suffix(path, ".hdr"))
        return KIND_CFL;
    if (has_suffix(path, ".nii") || has_suffix(path, ".nii.gz"))
        return KIND_NIFTI;
    if (has_suffix(path, ".h5"))
        return KIND_MRD;
    if (has_suffix(path, ".bin"))
        return KIND_PARBOIL;
    /* BART names its files by the base name: "x" means x.hdr + x.cfl. */
    const char *slash = strrchr(path, '/');
    if (!strchr(slash ? slash + 1 : path, '.')) {
        size_t len = strlen(path);
        char *hdr = malloc(len + 5);
        int found = 0;
        if (hdr) {
            memcpy(hdr, path, len);
            memcpy(hdr + len, ".hdr", 5);
            found = access(hdr, F_OK) == 0;
            free(hdr);
        }
        if (found)
            return KIND_CFL;
    }
    return KIND_UNKNOWN;
}

static lm_code unknown_kind(const char *path, lm_error *err)
{
    return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: unknown file type; " LM_SUPPORTED, path);
}

/* Reads an MRD file and keeps only its trajectory or only its k-space. */
static lm_code mrd_take(const char *path, lm_traj **traj, lm_kdata **kdata, lm_error *err)
{
    lm_mrd m = {0};
    lm_code rc = lm_mrd_read(path, &m, err);
    if (rc)
        return rc;
    if (traj ? !m.traj : !m.kdata)
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: holds no %s", path, traj ? "trajectory" : "k-space data");
    else if (traj)
        *traj = m.traj, m.traj = NULL;
    else
        *kdata = m.kdata, m.kdata = NULL;
    lm_mrd_clear(&m);
    return rc;
}

lm_code lm_load_traj(const char *path, lm_traj **out, lm_error *err)
{
    switch (kind_of(path)) {
    case KIND_CFL:
        return lm_cfl_read_traj(path, out, err);
    case KIND_NIFTI:
        return lm_fail(err, LM_ERR_INVALID, "%s: a NIfTI file holds an image, not a trajectory", path);
    case KIND_MRD:
        return mrd_take(path, out, NULL, err);
    case KIND_PARBOIL: {
        lm_parboil *p;
        lm_code rc = lm_parboil_read(path, &p, err);
        if (rc)
            return rc;
        lm_traj *t = lm_traj_new(p->num_k, 3, err);
        if (!t) {
            lm_parboil_free(p);
            return err ? err->code : LM_ERR_NOMEM;
        }
        for (int32_t i = 0; i < p->num_k; i++) {
            t->k[3 * i + 0] = p->kx[i];
            t->k[3 * i + 1] = p->ky[i];
            t->k[3 * i + 2] = p->kz[i];
        }
        lm_parboil_free(p);
        *out = t;
        return LM_OK;
    }
    case KIND_UNKNOWN:
        break;
    }
    return unknown_kind(path, err);
}

lm_code lm_load_kdata(const char *path, lm_kdata **out, lm_error *err)
{
    switch (kind_of(path)) {
    case KIND_CFL:
        return lm_cfl_read_kdata(path, out, err);
    case KIND_NIFTI:
        return lm_fail(err, LM_ERR_INVALID, "%s: a NIfTI file holds an image, not k-space data", path);
    case KIND_MRD:
        return mrd_take(path, NULL, out, err);
    case KIND_PARBOIL: {
        lm_parboil *p;
        lm_code rc = lm_parboil_read(path, &p, err);
        if (rc)
            return rc;
        if (!p->d_r) {
            lm_parboil_free(p);
            return lm_fail(err, LM_ERR_INVALID,
                           "%s: an mri-q input holds no k-space data (only mri-fhd inputs carry dR, dI)",
                           path);
        }
        lm_kdata *k = lm_kdata_new(p->num_k, 1, err);
        if (!k) {
            lm_parboil_free(p);
            return err ? err->code : LM_ERR_NOMEM;
        }
        for (int32_t i = 0; i < p->num_k; i++)
            k->d[i] = CMPLXF(p->d_r[i], p->d_i[i]);
        lm_parboil_free(p);
        *out = k;
        return LM_OK;
    }
    case KIND_UNKNOWN:
        break;
    }
    return unknown_kind(path, err);
}

lm_code lm_load_volume(const char *path, lm_volume **out, lm_error *err)
{
    return lm_load_volume_series(path, NULL, out, err);
}

lm_code lm_load_volume_series(const char *path, const char *series_uid, lm_volume **out, lm_error *err)
{
    file_kind kind = kind_of(path);
    if (kind == KIND_UNKNOWN && lm_dicom_is_candidate(path))
        return lm_dicom_read(path, series_uid, out, err);
    switch (kind) {
    case KIND_CFL:
        return lm_cfl_read_volume(path, out, err);
    case KIND_NIFTI:
        return lm_nifti_read(path, out, err);
    case KIND_MRD:
        return lm_fail(err, LM_ERR_INVALID, "%s: an ISMRMRD file holds raw data, not an image", path);
    case KIND_PARBOIL:
        return lm_fail(err, LM_ERR_INVALID, "%s: a Parboil file holds k-space samples, not an image",
                       path);
    case KIND_UNKNOWN:
        break;
    }
    return unknown_kind(path, err);
}

/* ---- lm_file_info ---- */

typedef struct range {
    double lo, hi;
} range;

static void range_init(range *r)
{
    r->lo = INFINITY;
    r->hi = -INFINITY;
}

static void range_add(range *r, double v)
{
    if (v < r->lo)
        r->lo = v;
    if (v > r->hi)
        r->hi = v;
}

static void complex_ranges(FILE *o, const lm_cfloat *d, size_t n)
{
    range re, im, mag;
    range_init(&re);
    range_init(&im);
    range_init(&mag);
    for (size_t i = 0; i < n; i++) {
        range_add(&re, crealf(d[i]));
        range_add(&im, cimagf(d[i]));
        range_add(&mag, cabsf(d[i]));
    }
    fprintf(o, "  real range: [%g, %g]\n  imaginary range: [%g, %g]\n  magnitude range: [%g, %g]\n",
            re.lo, re.hi, im.lo, im.hi, mag.lo, mag.hi);
}

static void float_range(FILE *o, const char *name, const float *v, size_t n)
{
    range r;
    range_init(&r);
    for (size_t i = 0; i < n; i++)
        range_add(&r, v[i]);
    fprintf(o, "  %s range: [%g, %g]\n", name, r.lo, r.hi);
}

static void traj_summary(FILE *o, const lm_traj *t)
{
    double kmax[3];
    lm_traj_extent(t, kmax);
    fprintf(o, "  as trajectory: %lld samples, %dD", (long long)t->m, t->ndim);
    if (t->readout > 0)
        fprintf(o, ", readout %lld (%lld readouts)", (long long)t->readout,
                (long long)(t->m / t->readout));
    fprintf(o, "\n  kmax: %g %g %g cycles/FOV (|k| per axis)\n", kmax[0], kmax[1], kmax[2]);
}

static lm_code info_cfl(const char *path, FILE *o, lm_error *err)
{
    int nd;
    int64_t d[LM_CFL_MAX_DIMS];
    lm_cfloat *data;
    lm_code rc = lm_cfl_read(path, &nd, d, &data, err);
    if (rc)
        return rc;
    size_t n = 1;
    fprintf(o, "%s: BART cfl/hdr\n  dimensions:", path);
    for (int i = 0; i < nd; i++) {
        fprintf(o, i ? " x %lld" : " %lld", (long long)d[i]);
        n *= (size_t)d[i];
    }
    fprintf(o, "\n  data type: complex64 (%zu elements)\n", n);
    complex_ranges(o, data, n);
    free(data);
    if (d[0] == 3) {
        lm_traj *t;
        if (lm_cfl_read_traj(path, &t, NULL) == LM_OK) {
            traj_summary(o, t);
            lm_traj_free(t);
        }
    } else if (d[0] == 1 && nd >= 2) {
        int64_t coils = nd > 3 ? d[3] : 1;
        fprintf(o, "  as k-space: %lld samples x %lld channels", (long long)(n / (size_t)coils),
                (long long)coils);
        if (nd >= 3)
            fprintf(o, ", readout %lld", (long long)d[1]);
        fputc('\n', o);
    } else if (nd <= 3) {
        fprintf(o, "  as image: %lld x %lld x %lld voxels\n", (long long)d[0],
                (long long)(nd > 1 ? d[1] : 1), (long long)(nd > 2 ? d[2] : 1));
    }
    return LM_OK;
}

static lm_code info_nifti(const char *path, FILE *o, lm_error *err)
{
    lm_volume *v;
    int64_t frames = 1;
    lm_code rc = lm_nifti_read_frames(path, &v, &frames, err); /* checks everything first */
    if (rc)
        return rc;
    nifti_image *nim = nifti_image_read(path, 0);
    if (!nim) {
        lm_volume_free(v);
        return lm_fail(err, LM_ERR_FORMAT, "%s: header became unreadable", path);
    }
    fprintf(o, "%s: NIfTI-1%s\n", path, has_suffix(path, ".gz") ? " (gzip)" : "");
    fprintf(o, "  dimensions: %lld x %lld x %lld (dim[0] %d)\n", (long long)v->dims[0],
            (long long)v->dims[1], (long long)v->dims[2], nim->dim[0]);
    if (frames > 1)
        fprintf(o, "  volumes: %lld (4th dimension; coil maps hold one per coil)\n", (long long)frames);
    fprintf(o, "  data type: %s", nifti_datatype_to_string(nim->datatype));
    if (nim->scl_slope != 0.0f && (nim->scl_slope != 1.0f || nim->scl_inter != 0.0f))
        fprintf(o, " (scaled: slope %g, intercept %g)", nim->scl_slope, nim->scl_inter);
    fprintf(o, "\n  voxel size: %g x %g x %g mm (pixdim %g %g %g, units %s)\n", v->voxel_mm[0],
            v->voxel_mm[1], v->voxel_mm[2], nim->pixdim[1], nim->pixdim[2], nim->pixdim[3],
            nifti_units_string(nim->xyz_units));
    fprintf(o, "  qform_code: %d (%s), sform_code: %d (%s)\n", nim->qform_code,
            nifti_xform_string(nim->qform_code), nim->sform_code, nifti_xform_string(nim->sform_code));
    mat44 m;
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
            m.m[r][c] = (float)v->affine[r][c];
    int ic, jc, kc;
    nifti_mat44_to_orientation(m, &ic, &jc, &kc);
    fprintf(o, "  orientation: i %s, j %s, k %s\n", nifti_orientation_string(ic),
            nifti_orientation_string(jc), nifti_orientation_string(kc));
    for (int r = 0; r < 3; r++)
        fprintf(o, "  affine row %d: %g %g %g %g\n", r, v->affine[r][0], v->affine[r][1],
                v->affine[r][2], v->affine[r][3]);
    int cplx = nim->datatype == NIFTI_TYPE_COMPLEX64 || nim->datatype == NIFTI_TYPE_COMPLEX128;
    size_t n = (size_t)lm_volume_count(v) * (size_t)frames;
    if (cplx) {
        complex_ranges(o, v->data, n);
    } else {
        range r;
        range_init(&r);
        for (size_t i = 0; i < n; i++)
            range_add(&r, crealf(v->data[i]));
        fprintf(o, "  value range: [%g, %g]\n", r.lo, r.hi);
    }
    nifti_image_free(nim);
    lm_volume_free(v);
    return LM_OK;
}

static lm_code info_parboil_output(const char *path, FILE *o, lm_error *err)
{
    int64_t n;
    float *re, *im;
    lm_code rc = lm_parboil_read_output(path, &n, &re, &im, err);
    if (rc)
        return rc;
    fprintf(o, "%s: Parboil output\n  numX: %lld\n", path, (long long)n);
    float_range(o, "real", re, (size_t)n);
    float_range(o, "imaginary", im, (size_t)n);
    range mag;
    range_init(&mag);
    for (int64_t i = 0; i < n; i++)
        range_add(&mag, hypot(re[i], im[i]));
    fprintf(o, "  magnitude range: [%g, %g]\n", mag.lo, mag.hi);
    free(re);
    free(im);
    return LM_OK;
}

static lm_code info_parboil(const char *path, FILE *o, lm_error *err)
{
    lm_parboil *p;
    lm_error e2;
    lm_code rc = lm_parboil_read(path, &p, &e2);
    if (rc) {
        /* A .bin may also be an output file; say what the input reader found otherwise. */
        lm_error e3;
        if (info_parboil_output(path, o, &e3) == LM_OK)
            return LM_OK;
        if (err)
            *err = e2;
        return rc;
    }
    fprintf(o, "%s: Parboil %s input\n  numK: %d samples\n  numX: %d voxels\n", path,
            p->d_r ? "mri-fhd" : "mri-q", p->num_k, p->num_x);
    float_range(o, "kx", p->kx, (size_t)p->num_k);
    float_range(o, "ky", p->ky, (size_t)p->num_k);
    float_range(o, "kz", p->kz, (size_t)p->num_k);
    float_range(o, "x", p->x, (size_t)p->num_x);
    float_range(o, "y", p->y, (size_t)p->num_x);
    float_range(o, "z", p->z, (size_t)p->num_x);
    range phi, d;
    range_init(&phi);
    range_init(&d);
    for (int32_t i = 0; i < p->num_k; i++) {
        range_add(&phi, hypot(p->phi_r[i], p->phi_i[i]));
        if (p->d_r)
            range_add(&d, hypot(p->d_r[i], p->d_i[i]));
    }
    fprintf(o, "  |phi| range: [%g, %g]\n", phi.lo, phi.hi);
    if (p->d_r)
        fprintf(o, "  |d| range: [%g, %g]\n", d.lo, d.hi);
    lm_parboil_free(p);
    return LM_OK;
}

static lm_code info_dicom(const char *path, FILE *o, lm_error *err)
{
    lm_volume *v;
    lm_code rc = lm_dicom_read(path, NULL, &v, err);
    if (rc)
        return rc;
    fprintf(o, "%s: DICOM series\n  dimensions: %lld x %lld x %lld (columns, rows, slices)\n", path,
            (long long)v->dims[0], (long long)v->dims[1], (long long)v->dims[2]);
    fprintf(o, "  voxel size: %g x %g x %g mm\n", v->voxel_mm[0], v->voxel_mm[1], v->voxel_mm[2]);
    for (int r = 0; r < 3; r++)
        fprintf(o, "  affine row %d: %g %g %g %g (RAS)\n", r, v->affine[r][0], v->affine[r][1], v->affine[r][2],
                v->affine[r][3]);
    range rv;
    range_init(&rv);
    for (int64_t i = 0; i < lm_volume_count(v); i++)
        range_add(&rv, crealf(v->data[i]));
    fprintf(o, "  value range: [%g, %g] (rescaled)\n", rv.lo, rv.hi);
    lm_volume_free(v);
    return LM_OK;
}

lm_code lm_file_info(const char *path, char **text, lm_error *err)
{
    file_kind kind = kind_of(path);
    if (kind == KIND_MRD)
        return lm_mrd_info(path, text, err);
    const int dicom = kind == KIND_UNKNOWN && lm_dicom_is_candidate(path);
    if (kind == KIND_UNKNOWN && !dicom && !has_suffix(path, ".out"))
        return unknown_kind(path, err);

    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    if (!o)
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory for the summary", path);
    lm_code rc;
    switch (kind) {
    case KIND_CFL: rc = info_cfl(path, o, err); break;
    case KIND_NIFTI: rc = info_nifti(path, o, err); break;
    case KIND_PARBOIL: rc = info_parboil(path, o, err); break;
    default: rc = dicom ? info_dicom(path, o, err) : info_parboil_output(path, o, err); break; /* .out */
    }
    if (fclose(o) != 0 && !rc)
        rc = lm_fail(err, LM_ERR_NOMEM, "%s: out of memory for the summary", path);
    if (rc) {
        free(buf);
        return rc;
    }
    *text = buf;
    return LM_OK;
}
