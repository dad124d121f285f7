/* Field maps and sample times (lm_io_fieldmap.h, docs/fieldmap.md). */
#include "lm_io_fieldmap.h"

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_dicom.h"
#include "lm_io.h"
#include "lm_resample.h"

/* A time further than this from the echo reference is not in seconds. */
#define LM_TIMES_MAX_S 1.0

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

void lm_geom_affine(const lm_geom *g, double affine[4][4])
{
    memset(affine, 0, 16 * sizeof(double));
    for (int a = 0; a < 3; a++) {
        double vox = g->fov_mm[a] > 0 ? g->fov_mm[a] / (double)g->n[a] : 1.0;
        affine[a][a] = vox;
        affine[a][3] = -(double)(g->n[a] / 2) * vox;
    }
    affine[3][3] = 1;
}

void lm_float_range(const float *v, int64_t n, double *lo, double *hi)
{
    double a = INFINITY, b = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        if (v[i] < a)
            a = v[i];
        if (v[i] > b)
            b = v[i];
    }
    *lo = a;
    *hi = b;
}

lm_code lm_check_fieldmap(const float *f, int64_t n, const char *path, lm_error *err)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(f[i]))
            return lm_fail(err, LM_ERR_FORMAT, "%s: field map value %lld of %lld is %s", path, (long long)i,
                           (long long)n, isnan(f[i]) ? "NaN" : "infinite");
    return LM_OK;
}

static lm_code real_part(const char *path, const lm_cfloat *src, int64_t n, float **out, lm_error *err)
{
    /* NaN/Inf anywhere (imaginary part too) means a damaged file */
    lm_code rc = lm_check_finite_complex(path, src, (size_t)n, err);
    if (rc != LM_OK)
        return rc;
    float *f = lm_alloc((size_t)n, sizeof *f, err, "field map");
    if (!f)
        return LM_ERR_NOMEM;
    for (int64_t i = 0; i < n; i++)
        f[i] = crealf(src[i]);
    *out = f;
    return LM_OK;
}

static lm_code fieldmap_nifti(const char *path, const char *series_uid, const lm_geom *g,
                              const double dst_affine[4][4], float **out, int *resampled, lm_error *err)
{
    lm_volume *v = NULL, *r = NULL;
    /* NIfTI or a DICOM series: both carry an affine */
    lm_code rc = lm_load_volume_series(path, series_uid, &v, err);
    if (rc != LM_OK)
        return rc;
    rc = lm_check_finite_complex(path, v->data, (size_t)lm_volume_count(v), err);
    if (rc == LM_OK && v->dims[0] == g->n[0] && v->dims[1] == g->n[1] && v->dims[2] == g->n[2]) {
        rc = real_part(path, v->data, lm_volume_count(v), out, err);
    } else if (rc == LM_OK) {
        double aff[4][4], vox[3];
        if (dst_affine)
            memcpy(aff, dst_affine, sizeof aff);
        else
            lm_geom_affine(g, aff);
        for (int a = 0; a < 3; a++)
            vox[a] = g->fov_mm[a] > 0 ? g->fov_mm[a] / (double)g->n[a] : 1.0;
        rc = lm_resample(v, g->n, vox, aff, NULL, LM_OUTSIDE_NEAREST, &r, err);
        if (rc != LM_OK) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
            rc = lm_fail(err, rc, "%s: cannot resample the field map onto the matrix: %s", path, msg);
        } else {
            rc = real_part(path, r->data, lm_volume_count(r), out, err);
            if (rc == LM_OK && resampled)
                *resampled = 1;
        }
    }
    lm_volume_free(v);
    lm_volume_free(r);
    return rc;
}

static lm_code fieldmap_cfl(const char *path, const lm_geom *g, float **out, lm_error *err)
{
    int nd = 0;
    int64_t d[LM_CFL_MAX_DIMS];
    lm_cfloat *data = NULL;
    lm_code rc = lm_cfl_read(path, &nd, d, &data, err);
    if (rc != LM_OK)
        return rc;
    for (int a = nd; a < 3; a++)
        d[a] = 1;
    int ok = d[0] == g->n[0] && d[1] == g->n[1] && d[2] == g->n[2];
    for (int a = 3; a < nd; a++)
        ok &= d[a] == 1;
    if (!ok)
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: field map is %lldx%lldx%lld%s but the matrix is %lldx%lldx%lld "
                     "(a .cfl field map is not resampled; give a NIfTI to resample)", path, (long long)d[0],
                     (long long)d[1], (long long)d[2], nd > 3 ? "x..." : "", (long long)g->n[0],
                     (long long)g->n[1], (long long)g->n[2]);
    else
        rc = real_part(path, data, lm_geom_voxels(g), out, err);
    free(data);
    return rc;
}

lm_code lm_load_fieldmap(const char *path, const lm_geom *g, const double dst_affine[4][4], float **out,
                         int *resampled, lm_error *err)
{
    return lm_load_fieldmap_series(path, NULL, g, dst_affine, out, resampled, err);
}

lm_code lm_load_fieldmap_series(const char *path, const char *series_uid, const lm_geom *g,
                                const double dst_affine[4][4], float **out, int *resampled, lm_error *err)
{
    *out = NULL;
    if (resampled)
        *resampled = 0;
    if (ends_with(path, ".nii") || ends_with(path, ".nii.gz"))
        return fieldmap_nifti(path, NULL, g, dst_affine, out, resampled, err);
    if (!ends_with(path, ".cfl") && !ends_with(path, ".hdr") && lm_dicom_is_candidate(path))
        return fieldmap_nifti(path, series_uid, g, dst_affine, out, resampled, err);
    if (ends_with(path, ".cfl") || ends_with(path, ".hdr") || lm_cfl_is_base(path))
        return fieldmap_cfl(path, g, out, err);
    return lm_fail(err, LM_ERR_FORMAT, "%s: a field map must be .nii, .nii.gz, .cfl or a DICOM series", path);
}

lm_code lm_check_times(const float *times, int64_t m, int64_t readout, const char *path, lm_error *err)
{
    if (readout <= 0 || readout > m)
        readout = m;
    for (int64_t i = 0; i < m; i++) {
        if (!isfinite(times[i]))
            return lm_fail(err, LM_ERR_FORMAT, "%s: sample time %lld of %lld is %s", path, (long long)i,
                           (long long)m, isnan(times[i]) ? "NaN" : "infinite");
        if (fabs(times[i]) > LM_TIMES_MAX_S)
            return lm_fail(err, LM_ERR_FORMAT, "%s: sample time %lld is %g s, more than %g s from the echo: "
                           "times must be in seconds", path, (long long)i, (double)times[i], LM_TIMES_MAX_S);
        if (i % readout && times[i] < times[i - 1])
            return lm_fail(err, LM_ERR_FORMAT, "%s: sample times decrease within readout %lld (sample %lld: %g s "
                           "after %g s)", path, (long long)(i / readout), (long long)(i % readout),
                           (double)times[i], (double)times[i - 1]);
    }
    return LM_OK;
}

lm_code lm_load_times(const char *path, lm_traj *t, lm_error *err)
{
    int nd = 0;
    int64_t d[LM_CFL_MAX_DIMS];
    lm_cfloat *data = NULL;
    if (!(ends_with(path, ".cfl") || ends_with(path, ".hdr") || lm_cfl_is_base(path)))
        return lm_fail(err, LM_ERR_FORMAT, "%s: sample times must be a .cfl [1, samples, spokes]", path);
    lm_code rc = lm_cfl_read(path, &nd, d, &data, err);
    if (rc != LM_OK)
        return rc;
    int64_t count = 1;
    for (int a = 0; a < nd; a++)
        count *= d[a]; /* lm_cfl_read checked the product */
    float *v = NULL;
    if (count != t->m)
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: holds %lld sample times but the trajectory has %lld samples", path,
                     (long long)count, (long long)t->m);
    else if (nd >= 2 && d[0] != 1)
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: sample times are [1, samples, spokes], this file is %lld x %lld...",
                     path, (long long)d[0], (long long)d[1]);
    if (rc == LM_OK)
        rc = real_part(path, data, count, &v, err);
    if (rc == LM_OK)
        rc = lm_check_times(v, count, t->readout > 0 ? t->readout : (nd >= 2 ? d[1] : count), path, err);
    free(data);
    if (rc != LM_OK) {
        free(v);
        return rc;
    }
    free(t->t);
    t->t = v;
    return LM_OK;
}

lm_code lm_fieldmap_info(const char *path, char **text, lm_error *err)
{
    lm_volume *v = NULL;
    lm_code rc;
    if (ends_with(path, ".nii") || ends_with(path, ".nii.gz"))
        rc = lm_nifti_read(path, &v, err);
    else
        rc = lm_cfl_read_volume(path, &v, err);
    if (rc != LM_OK)
        return rc;
    const int64_t n = lm_volume_count(v);
    float *f = NULL;
    rc = real_part(path, v->data, n, &f, err);
    if (rc == LM_OK) {
        double lo, hi;
        lm_float_range(f, n, &lo, &hi);
        if (asprintf(text, "%s: field map %lldx%lldx%lld, voxels %g x %g x %g mm, [%g, %g] Hz\n", path,
                     (long long)v->dims[0], (long long)v->dims[1], (long long)v->dims[2], v->voxel_mm[0],
                     v->voxel_mm[1], v->voxel_mm[2], lo, hi) < 0)
            rc = lm_fail(err, LM_ERR_NOMEM, "%s: out of memory for the summary", path);
    }
    free(f);
    lm_volume_free(v);
    return rc;
}

lm_code lm_times_info(const char *path, char **text, lm_error *err)
{
    int nd = 0;
    int64_t d[LM_CFL_MAX_DIMS];
    lm_cfloat *data = NULL;
    lm_code rc = lm_cfl_read(path, &nd, d, &data, err);
    if (rc != LM_OK)
        return rc;
    int64_t count = 1;
    for (int a = 0; a < nd; a++)
        count *= d[a];
    const int64_t readout = nd >= 2 && d[0] == 1 ? d[1] : count;
    float *v = NULL;
    rc = real_part(path, data, count, &v, err);
    if (rc == LM_OK)
        rc = lm_check_times(v, count, readout, path, err);
    if (rc == LM_OK) {
        double lo, hi;
        lm_float_range(v, count, &lo, &hi);
        if (asprintf(text, "%s: %lld sample times, %lld readouts of %lld, [%g, %g] s\n", path, (long long)count,
                     (long long)((count + readout - 1) / readout), (long long)readout, lo, hi) < 0)
            rc = lm_fail(err, LM_ERR_NOMEM, "%s: out of memory for the summary", path);
    }
    free(v);
    free(data);
    return rc;
}
