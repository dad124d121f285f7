#include "larmor-slice.h"

#include <math.h>
#include <stdlib.h>

const char *larmor_orientation_name(LarmorOrientation o)
{
    switch (o) {
    case LARMOR_ORIENT_CORONAL: return "Coronal";
    case LARMOR_ORIENT_SAGITTAL: return "Sagittal";
    default: return "Axial";
    }
}

const char *larmor_mode_name(LarmorMode m)
{
    switch (m) {
    case LARMOR_MODE_PHASE: return "Phase";
    case LARMOR_MODE_REAL: return "Real";
    case LARMOR_MODE_IMAGINARY: return "Imaginary";
    default: return "Magnitude";
    }
}

void larmor_orientation_axes(LarmorOrientation o, int *u, int *v, int *normal)
{
    switch (o) {
    case LARMOR_ORIENT_CORONAL: *u = 0, *v = 2, *normal = 1; break;
    case LARMOR_ORIENT_SAGITTAL: *u = 1, *v = 2, *normal = 0; break;
    default: *u = 0, *v = 1, *normal = 2; break;
    }
}

void larmor_axis_direction(const double affine[4][4], int axis, int *world, int *sign)
{
    int best = -1;
    double m = 0;
    for (int r = 0; r < 3; r++)
        if (fabs(affine[r][axis]) > m) {
            m = fabs(affine[r][axis]);
            best = r;
        }
    if (best < 0 || !isfinite(m)) {
        *world = axis;
        *sign = 1;
        return;
    }
    *world = best;
    *sign = affine[best][axis] > 0 ? 1 : -1;
}

const char *larmor_direction_letter(int world, int sign)
{
    static const char *pos[3] = { "R", "A", "S" }, *neg[3] = { "L", "P", "I" };
    world = world < 0 || world > 2 ? 0 : world;
    return sign > 0 ? pos[world] : neg[world];
}

void larmor_view_flips(const double affine[4][4], LarmorOrientation o, int radiological, int *flip_u,
                       int *flip_v)
{
    int u, v, n, wu, su, wv, sv;
    larmor_orientation_axes(o, &u, &v, &n);
    larmor_axis_direction(affine, u, &wu, &su);
    larmor_axis_direction(affine, v, &wv, &sv);
    /* Right on the screen's right: +u must point to R (neurological) or L. */
    *flip_u = wu == 0 ? (radiological ? su > 0 : su < 0) : 0;
    *flip_v = wv == 0 ? 0 : sv < 0;
}

void larmor_slice_extract(const lm_volume *vol, LarmorOrientation o, int64_t index, LarmorMode mode,
                          float *out)
{
    int u, v, nrm;
    larmor_orientation_axes(o, &u, &v, &nrm);
    const int64_t stride[3] = { 1, vol->dims[0], vol->dims[0] * vol->dims[1] };
    if (index < 0)
        index = 0;
    if (index >= vol->dims[nrm])
        index = vol->dims[nrm] - 1;
    const int64_t pw = vol->dims[u], ph = vol->dims[v];
    const lm_cfloat *base = vol->data + index * stride[nrm];
    const int64_t su = stride[u], sv = stride[v];
    for (int64_t j = 0; j < ph; j++) {
        const lm_cfloat *row = base + j * sv;
        float *o_row = out + j * pw;
        /* The mode switch hoisted out of the inner loop keeps each loop tight. */
        switch (mode) {
        case LARMOR_MODE_PHASE:
            for (int64_t i = 0; i < pw; i++) o_row[i] = cargf(row[i * su]);
            break;
        case LARMOR_MODE_REAL:
            for (int64_t i = 0; i < pw; i++) o_row[i] = crealf(row[i * su]);
            break;
        case LARMOR_MODE_IMAGINARY:
            for (int64_t i = 0; i < pw; i++) o_row[i] = cimagf(row[i * su]);
            break;
        default:
            for (int64_t i = 0; i < pw; i++) {
                float re = crealf(row[i * su]), im = cimagf(row[i * su]);
                o_row[i] = sqrtf(re * re + im * im);
            }
            break;
        }
    }
}

void larmor_slice_resample(const uint32_t *src, int pw, int ph, double ox, double oy, double iw,
                           double ih, uint32_t *dst, int dx, int dy, int dst_w, int dst_h,
                           int dst_stride)
{
    /* Column lookup once per call: the inner loop is a gather of 32-bit pixels. */
    int cols_stack[2048];
    int *cols = dst_w <= 2048 ? cols_stack : malloc((size_t)dst_w * sizeof *cols);
    if (!cols)
        return;
    for (int c = 0; c < dst_w; c++) {
        int i = (int)floor((dx + c + 0.5 - ox) / iw * pw);
        cols[c] = i < 0 ? 0 : i >= pw ? pw - 1 : i;
    }
    for (int r = 0; r < dst_h; r++) {
        int j = (int)floor((dy + r + 0.5 - oy) / ih * ph);
        j = j < 0 ? 0 : j >= ph ? ph - 1 : j;
        const uint32_t *s = src + (size_t)(ph - 1 - j) * pw; /* vertical index grows upwards */
        uint32_t *d = dst + (size_t)r * dst_stride;
        for (int c = 0; c < dst_w; c++)
            d[c] = s[cols[c]];
    }
    if (cols != cols_stack)
        free(cols);
}
