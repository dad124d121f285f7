/* The series logic of the DICOM reader on parsed tag records: which series,
 * the slice order and the geometry (docs/dicom.md). Kept apart from dcmtk
 * so that it is fuzzed on records directly (tests/fuzz/fuzz_dicom_series.c). */
#include "lm_dicom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Directions and spacings stored as DS text carry about 10 significant
 * digits; orientations agree when each component does within this. */
#define LM_DICOM_DIR_TOL 1e-4
/* Slice positions off the line through the first and last by more than
 * this fraction of the spacing (or LM_DICOM_POS_MM) mean a missing slice. */
#define LM_DICOM_POS_FRAC 0.05
#define LM_DICOM_POS_MM 1e-3
/* Positions and spacings beyond a kilometre are damaged values, not scanners. */
#define LM_DICOM_MAX_MM 1e6

static const char *file_of(const lm_dicom_rec *r)
{
    return r->file && *r->file ? r->file : "(unnamed)";
}

lm_code lm_dicom_series_choose(const lm_dicom_rec *r, int n, const char *series_uid, const char *where, int **idx,
                               int *count, lm_error *err)
{
    *idx = NULL;
    *count = 0;
    if (n < 1)
        return lm_fail(err, LM_ERR_FORMAT, "%s: holds no DICOM image", where);
    /* The distinct series, in the order first seen. */
    int *first = lm_alloc((size_t)n, sizeof *first, err, where);
    if (!first)
        return LM_ERR_NOMEM;
    int nseries = 0, match = -1;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int s = 0; s < nseries && !seen; s++)
            seen = strcmp(r[first[s]].series_uid, r[i].series_uid) == 0;
        if (!seen)
            first[nseries++] = i;
    }
    for (int s = 0; s < nseries && series_uid; s++)
        if (strcmp(r[first[s]].series_uid, series_uid) == 0)
            match = first[s];
    if (nseries == 1 && !series_uid)
        match = first[0];
    if (match < 0) {
        char list[360];
        size_t len = 0;
        list[0] = '\0';
        for (int s = 0; s < nseries; s++) {
            int w = snprintf(list + len, sizeof list - len, "%s%s", s ? ", " : "",
                             r[first[s]].series_uid[0] ? r[first[s]].series_uid : "(no UID)");
            if (w < 0 || (size_t)w >= sizeof list - len) {
                snprintf(list + sizeof list - 5, 5, "...");
                break;
            }
            len += (size_t)w;
        }
        free(first);
        if (series_uid)
            return lm_fail(err, LM_ERR_INVALID, "%s: no series %s here (it holds %s)", where, series_uid, list);
        return lm_fail(err, LM_ERR_FORMAT, "%s: %d series in one folder (%s); choose one with --series UID", where,
                       nseries, list);
    }
    free(first);
    int *pick = lm_alloc((size_t)n, sizeof *pick, err, where);
    if (!pick)
        return LM_ERR_NOMEM;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(r[i].series_uid, r[match].series_uid) == 0)
            pick[k++] = i;
    *idx = pick;
    *count = k;
    return LM_OK;
}

static double dot3(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static int finite_n(const double *v, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

typedef struct along {
    double d;
    int i;
} along;

static int along_cmp(const void *a, const void *b)
{
    const along *x = a, *y = b;
    if (x->d != y->d)
        return x->d < y->d ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Checks what every slice must carry and agree on with the first. */
static lm_code check_slice(const lm_dicom_rec *r0, const lm_dicom_rec *r, const char *where, lm_error *err)
{
    const char *missing = !r->has_ipp ? "ImagePositionPatient" : !r->has_iop ? "ImageOrientationPatient"
                          : !r->has_spacing ? "PixelSpacing" : NULL;
    if (missing)
        return lm_fail(err, LM_ERR_FORMAT, "%s: %s has no %s", where, file_of(r), missing);
    int bad = !finite_n(r->ipp, 3) || !finite_n(r->iop, 6) || !finite_n(r->spacing, 2) || !(r->spacing[0] >= 1e-6) ||
              !(r->spacing[1] >= 1e-6) || !(fabs(r->thickness) <= LM_DICOM_MAX_MM) ||
              !(r->spacing[0] <= LM_DICOM_MAX_MM) || !(r->spacing[1] <= LM_DICOM_MAX_MM);
    for (int a = 0; a < 3; a++)
        bad |= !(fabs(r->ipp[a]) <= LM_DICOM_MAX_MM);
    if (bad)
        return lm_fail(err, LM_ERR_FORMAT, "%s: %s has a geometry value that is not a finite (positive) number "
                       "of mm (spacing 1e-6 to 1e6)", where, file_of(r));
    if (r->rows < 1 || r->cols < 1)
        return lm_fail(err, LM_ERR_FORMAT, "%s: %s has %d rows x %d columns", where, file_of(r), r->rows, r->cols);
    if (r->rows != r0->rows || r->cols != r0->cols)
        return lm_fail(err, LM_ERR_FORMAT, "%s: %s is %dx%d but %s is %dx%d (one series, one matrix)", where,
                       file_of(r), r->cols, r->rows, file_of(r0), r0->cols, r0->rows);
    for (int a = 0; a < 6; a++)
        if (fabs(r->iop[a] - r0->iop[a]) > LM_DICOM_DIR_TOL)
            return lm_fail(err, LM_ERR_FORMAT, "%s: mixed orientations: %s has ImageOrientationPatient "
                           "%g\\%g\\%g\\%g\\%g\\%g but %s has %g\\%g\\%g\\%g\\%g\\%g", where, file_of(r), r->iop[0],
                           r->iop[1], r->iop[2], r->iop[3], r->iop[4], r->iop[5], file_of(r0), r0->iop[0], r0->iop[1],
                           r0->iop[2], r0->iop[3], r0->iop[4], r0->iop[5]);
    for (int a = 0; a < 2; a++)
        if (fabs(r->spacing[a] - r0->spacing[a]) > LM_DICOM_DIR_TOL * r0->spacing[a])
            return lm_fail(err, LM_ERR_FORMAT, "%s: %s has PixelSpacing %g\\%g but %s has %g\\%g", where, file_of(r),
                           r->spacing[0], r->spacing[1], file_of(r0), r0->spacing[0], r0->spacing[1]);
    return LM_OK;
}

lm_code lm_dicom_series_geometry(const lm_dicom_rec *r, int *idx, int count, const char *where,
                                 double affine[4][4], double voxel_mm[3], lm_error *err)
{
    if (count < 1)
        return lm_fail(err, LM_ERR_FORMAT, "%s: holds no DICOM image", where);
    const lm_dicom_rec *r0 = &r[idx[0]];
    for (int k = 0; k < count; k++) {
        lm_code rc = check_slice(r0, &r[idx[k]], where, err);
        if (rc)
            return rc;
    }
    /* Unit row and column directions, at right angles. */
    double row[3], col[3], nrm[3];
    memcpy(row, r0->iop, sizeof row);
    memcpy(col, r0->iop + 3, sizeof col);
    double lr = sqrt(dot3(row, row)), lc = sqrt(dot3(col, col));
    if (fabs(lr - 1) > 0.01 || fabs(lc - 1) > 0.01 || fabs(dot3(row, col)) > 0.01)
        return lm_fail(err, LM_ERR_FORMAT, "%s: %s: ImageOrientationPatient %g\\%g\\%g\\%g\\%g\\%g is not two unit "
                       "vectors at right angles", where, file_of(r0), row[0], row[1], row[2], col[0], col[1], col[2]);
    for (int a = 0; a < 3; a++)
        row[a] /= lr, col[a] /= lc;
    nrm[0] = row[1] * col[2] - row[2] * col[1];
    nrm[1] = row[2] * col[0] - row[0] * col[2];
    nrm[2] = row[0] * col[1] - row[1] * col[0];

    along *s = lm_alloc((size_t)count, sizeof *s, err, where);
    if (!s)
        return LM_ERR_NOMEM;
    for (int k = 0; k < count; k++)
        s[k] = (along){dot3(r[idx[k]].ipp, nrm), idx[k]};
    qsort(s, (size_t)count, sizeof *s, along_cmp);
    for (int k = 0; k < count; k++)
        idx[k] = s[k].i;

    double step[3];
    lm_code rc = LM_OK;
    if (count == 1) {
        double t = r0->thickness >= LM_DICOM_POS_MM ? r0->thickness : 1.0; /* absent or absurd: 1 mm */
        for (int a = 0; a < 3; a++)
            step[a] = nrm[a] * t;
    } else {
        const double *p0 = r[idx[0]].ipp, *p1 = r[idx[count - 1]].ipp;
        for (int a = 0; a < 3; a++)
            step[a] = (p1[a] - p0[a]) / (count - 1);
        const double gap = (s[count - 1].d - s[0].d) / (count - 1);
        const double tol = fmax(LM_DICOM_POS_MM, LM_DICOM_POS_FRAC * gap);
        /* The gap furthest from the mean names the missing slice. */
        int worst = 1;
        for (int k = 1; k < count; k++) {
            if (s[k].d - s[k - 1].d < LM_DICOM_POS_MM) {
                worst = -k;
                break;
            }
            if (fabs(s[k].d - s[k - 1].d - gap) > fabs(s[worst].d - s[worst - 1].d - gap))
                worst = k;
        }
        if (worst < 0)
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: %s and %s are at the same position %.4g mm along the normal "
                         "(one slice per position)", where, file_of(&r[idx[-worst - 1]]), file_of(&r[idx[-worst]]),
                         s[-worst].d);
        else if (fabs(s[worst].d - s[worst - 1].d - gap) > tol)
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: uneven slice spacing: %.4g mm between %s and %s where the series "
                         "averages %.4g mm (a missing slice?)", where, s[worst].d - s[worst - 1].d,
                         file_of(&r[idx[worst - 1]]), file_of(&r[idx[worst]]), gap);
        /* On the line through the first and last: no in-plane jumps. */
        for (int k = 1; k < count && rc == LM_OK; k++) {
            double off = 0;
            for (int x = 0; x < 3; x++) {
                double e = r[idx[k]].ipp[x] - (p0[x] + k * step[x]);
                off += e * e;
            }
            if (sqrt(off) > tol)
                rc = lm_fail(err, LM_ERR_FORMAT, "%s: %s is %.4g mm off the line of the slice positions", where,
                             file_of(&r[idx[k]]), sqrt(off));
        }
        if (rc == LM_OK && !(gap > LM_DICOM_POS_MM))
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: slices %.4g mm apart", where, gap);
    }
    free(s);
    if (rc)
        return rc;
    /* LPS -> RAS: x and y change sign. Index (column, row, slice). */
    static const double f[3] = {-1, -1, 1};
    memset(affine, 0, 16 * sizeof(double));
    for (int a = 0; a < 3; a++) {
        affine[a][0] = f[a] * row[a] * r0->spacing[1] + 0.0; /* + 0.0: no -0 in printed affines */
        affine[a][1] = f[a] * col[a] * r0->spacing[0] + 0.0;
        affine[a][2] = f[a] * step[a] + 0.0;
        affine[a][3] = f[a] * r[idx[0]].ipp[a] + 0.0;
    }
    affine[3][3] = 1;
    voxel_mm[0] = r0->spacing[1];
    voxel_mm[1] = r0->spacing[0];
    voxel_mm[2] = sqrt(dot3(step, step));
    return LM_OK;
}
