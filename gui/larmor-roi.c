#include "larmor-roi.h"

#include <math.h>

void larmor_roi_set(LarmorRoi *roi, LarmorRoiShape shape, LarmorOrientation o, int64_t slice, int64_t ua,
                    int64_t va, int64_t ub, int64_t vb)
{
    roi->shape = shape;
    roi->orientation = o;
    roi->slice = slice;
    roi->u0 = MIN(ua, ub);
    roi->u1 = MAX(ua, ub);
    roi->v0 = MIN(va, vb);
    roi->v1 = MAX(va, vb);
}

gboolean larmor_roi_equal(const LarmorRoi *a, const LarmorRoi *b)
{
    if (a->shape == LARMOR_ROI_NONE || b->shape == LARMOR_ROI_NONE)
        return a->shape == b->shape;
    return a->shape == b->shape && a->orientation == b->orientation && a->slice == b->slice &&
           a->u0 == b->u0 && a->u1 == b->u1 && a->v0 == b->v0 && a->v1 == b->v1;
}

gboolean larmor_roi_contains(const LarmorRoi *roi, int64_t u, int64_t v)
{
    if (roi->shape == LARMOR_ROI_NONE || u < roi->u0 || u > roi->u1 || v < roi->v0 || v > roi->v1)
        return FALSE;
    if (roi->shape == LARMOR_ROI_RECT)
        return TRUE;
    /* Centre and radii of the box [u0, u1 + 1] x [v0, v1 + 1], voxel centres at +1/2. */
    const double cu = (roi->u0 + roi->u1 + 1) / 2.0, cv = (roi->v0 + roi->v1 + 1) / 2.0;
    const double ru = (roi->u1 + 1 - roi->u0) / 2.0, rv = (roi->v1 + 1 - roi->v0) / 2.0;
    const double du = (u + 0.5 - cu) / ru, dv = (v + 0.5 - cv) / rv;
    return du * du + dv * dv <= 1.0;
}

gboolean larmor_roi_stats(const LarmorRoi *roi, const lm_volume *vol, LarmorRoiStats *st)
{
    *st = (LarmorRoiStats){ .mean = NAN, .sd = NAN, .min = NAN, .max = NAN, .area_mm2 = 0 };
    if (!roi || roi->shape == LARMOR_ROI_NONE || !vol)
        return FALSE;
    int u, v, n;
    larmor_orientation_axes(roi->orientation, &u, &v, &n);
    if (roi->slice < 0 || roi->slice >= vol->dims[n])
        return FALSE;
    /* Two passes (mean, then squared deviations): exact for constant regions. */
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    int64_t count = 0, ijk[3];
    ijk[n] = roi->slice;
    const int64_t a0 = MAX(roi->u0, 0), a1 = MIN(roi->u1, vol->dims[u] - 1);
    const int64_t b0 = MAX(roi->v0, 0), b1 = MIN(roi->v1, vol->dims[v] - 1);
    for (int pass = 0; pass < 2; pass++) {
        double mean = count ? sum / (double)count : 0, ss = 0;
        for (int64_t b = b0; b <= b1; b++)
            for (int64_t a = a0; a <= a1; a++) {
                if (!larmor_roi_contains(roi, a, b))
                    continue;
                ijk[u] = a, ijk[v] = b;
                const double m = cabsf(vol->data[ijk[0] + vol->dims[0] * (ijk[1] + vol->dims[1] * ijk[2])]);
                if (pass == 0) {
                    sum += m, count++;
                    lo = MIN(lo, m), hi = MAX(hi, m);
                } else
                    ss += (m - mean) * (m - mean);
            }
        if (pass == 0 && count == 0)
            return FALSE;
        if (pass == 1) {
            st->count = count;
            st->mean = mean;
            st->sd = count > 1 ? sqrt(ss / (double)(count - 1)) : 0;
        }
    }
    st->min = lo;
    st->max = hi;
    st->area_mm2 = (double)st->count * vol->voxel_mm[u] * vol->voxel_mm[v];
    return TRUE;
}

static const char *axis_name(int a)
{
    return a == 0 ? "x" : a == 1 ? "y" : "z";
}

static const char *shape_name(LarmorRoiShape s)
{
    return s == LARMOR_ROI_RECT ? "rectangle" : s == LARMOR_ROI_ELLIPSE ? "ellipse" : "none";
}

char *larmor_roi_describe(const LarmorRoi *roi)
{
    if (!roi || roi->shape == LARMOR_ROI_NONE)
        return g_strdup("No ROI");
    int u, v, n;
    larmor_orientation_axes(roi->orientation, &u, &v, &n);
    return g_strdup_printf("%s, %s %s %lld: %s %lld–%lld, %s %lld–%lld",
                           roi->shape == LARMOR_ROI_RECT ? "Rectangle" : "Ellipse",
                           larmor_orientation_name(roi->orientation), axis_name(n), (long long)roi->slice,
                           axis_name(u), (long long)roi->u0, (long long)roi->u1, axis_name(v),
                           (long long)roi->v0, (long long)roi->v1);
}

static void csv_text(GString *s, const char *t)
{
    g_string_append_c(s, '"');
    for (const char *c = t ? t : ""; *c; c++) {
        if (*c == '"')
            g_string_append_c(s, '"');
        g_string_append_c(s, *c);
    }
    g_string_append_c(s, '"');
}

static void csv_num(GString *s, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    if (isfinite(v))
        g_string_append(s, g_ascii_formatd(buf, sizeof buf, "%.9g", v));
}

double larmor_roi_snr(const LarmorRoiStats *signal, const LarmorRoiStats *noise)
{
    if (!signal || !noise || signal->count < 1 || noise->count < 2 || !(noise->sd > 0))
        return NAN;
    return signal->mean / (noise->sd / LARMOR_RAYLEIGH_SD);
}

char *larmor_roi_to_csv(const LarmorRoi *roi, const char *const *names, const LarmorRoiStats *stats,
                        const LarmorRoiStats *noise, int n)
{
    GString *s = g_string_new("image,shape,orientation,slice_axis,slice,u_axis,u0,u1,v_axis,v0,v1,"
                              "voxels,area_mm2,mean,sd,min,max,noise_sd,snr\n");
    int u, v, nn;
    larmor_orientation_axes(roi->orientation, &u, &v, &nn);
    for (int i = 0; i < n; i++) {
        csv_text(s, names[i]);
        g_string_append_printf(s, ",%s,%s,%s,%lld,%s,%lld,%lld,%s,%lld,%lld,%lld,", shape_name(roi->shape),
                               larmor_orientation_name(roi->orientation), axis_name(nn), (long long)roi->slice,
                               axis_name(u), (long long)roi->u0, (long long)roi->u1, axis_name(v),
                               (long long)roi->v0, (long long)roi->v1, (long long)stats[i].count);
        const double rest[] = { stats[i].area_mm2, stats[i].mean, stats[i].sd, stats[i].min, stats[i].max,
                                noise ? noise[i].sd : NAN, noise ? larmor_roi_snr(&stats[i], &noise[i]) : NAN };
        for (int k = 0; k < 7; k++) {
            if (k)
                g_string_append_c(s, ',');
            csv_num(s, rest[k]);
        }
        g_string_append_c(s, '\n');
    }
    return g_string_free(s, FALSE);
}

int64_t *larmor_roi_indices(const LarmorRoi *roi, const int64_t dims[3], int64_t *count)
{
    *count = 0;
    if (!roi || roi->shape == LARMOR_ROI_NONE)
        return NULL;
    int u, v, n;
    larmor_orientation_axes(roi->orientation, &u, &v, &n);
    if (roi->slice < 0 || roi->slice >= dims[n])
        return NULL;
    const int64_t a0 = MAX(roi->u0, 0), a1 = MIN(roi->u1, dims[u] - 1);
    const int64_t b0 = MAX(roi->v0, 0), b1 = MIN(roi->v1, dims[v] - 1);
    if (a1 < a0 || b1 < b0)
        return NULL;
    int64_t *idx = g_new(int64_t, (gsize)((a1 - a0 + 1) * (b1 - b0 + 1))), ijk[3];
    ijk[n] = roi->slice;
    for (int64_t b = b0; b <= b1; b++)
        for (int64_t a = a0; a <= a1; a++)
            if (larmor_roi_contains(roi, a, b)) {
                ijk[u] = a, ijk[v] = b;
                idx[(*count)++] = ijk[0] + dims[0] * (ijk[1] + dims[1] * ijk[2]);
            }
    if (*count == 0)
        g_clear_pointer(&idx, g_free);
    return idx;
}
