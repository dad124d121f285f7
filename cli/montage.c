#include "montage.h"

#if LM_HAVE_CAIRO
#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "larmor.h"

static double value(const lm_volume *v, int64_t x, int64_t y, int64_t z)
{
    return cabsf(v->data[x + v->dims[0] * (y + v->dims[1] * z)]);
}

/* One slice, nearest-neighbour scaled to size x size pixels, y up. */
static void draw_slice(unsigned char *px, int stride, int ox, int oy, int size, const lm_volume *v,
                       int plane, double vmax)
{
    int64_t nx = v->dims[0], ny = v->dims[1], nz = v->dims[2];
    int64_t w = plane == 2 ? ny : nx, h = plane == 0 ? ny : nz;
    for (int py = 0; py < size; py++)
        for (int pxl = 0; pxl < size; pxl++) {
            int64_t a = (int64_t)pxl * w / size, b = (int64_t)(size - 1 - py) * h / size;
            double val;
            if (plane == 0)
                val = value(v, a, b, nz / 2);
            else if (plane == 1)
                val = value(v, a, ny / 2, b);
            else
                val = value(v, nx / 2, a, b);
            double g = vmax > 0 ? val / vmax : 0;
            unsigned char c = (unsigned char)(255.0 * (g < 0 ? 0 : g > 1 ? 1 : g) + 0.5);
            uint32_t *p = (uint32_t *)(px + (size_t)(oy + py) * (size_t)stride) + ox + pxl;
            *p = 0xff000000u | ((uint32_t)c << 16) | ((uint32_t)c << 8) | c;
        }
}

lm_code cli_write_montage(const char *path, const lm_volume *const *vols, const char *const *labels,
                          int count, double vmax, lm_error *err)
{
    const int size = 192, label_w = 120, pad = 4, title_h = 22;
    int planes = vols[0]->dims[2] > 1 ? 3 : 1;
    int width = label_w + planes * (size + pad), height = title_h + count * (size + pad);
    if (vmax <= 0)
        for (int64_t i = 0; i < lm_volume_count(vols[0]); i++)
            vmax = fmax(vmax, cabsf(vols[0]->data[i]));
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height);
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS)
        return lm_fail(err, LM_ERR_NOMEM, "%s: cannot create a %dx%d image", path, width, height);
    cairo_t *cr = cairo_create(s);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.12);
    cairo_paint(cr);
    cairo_surface_flush(s);
    unsigned char *px = cairo_image_surface_get_data(s);
    int stride = cairo_image_surface_get_stride(s);
    for (int r = 0; r < count; r++)
        for (int p = 0; p < planes; p++)
            draw_slice(px, stride, label_w + p * (size + pad), title_h + r * (size + pad), size, vols[r],
                       planes == 1 ? 0 : p, vmax);
    cairo_surface_mark_dirty(s);
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, 13);
    static const char *plane_names[] = {"axial", "coronal", "sagittal"};
    for (int p = 0; p < planes; p++) {
        cairo_move_to(cr, label_w + p * (size + pad) + 4, 16);
        cairo_show_text(cr, plane_names[p]);
    }
    for (int r = 0; r < count; r++) {
        cairo_move_to(cr, 6, title_h + r * (size + pad) + size / 2.0);
        cairo_show_text(cr, labels[r]);
    }
    cairo_destroy(cr);
    lm_atomic a;
    lm_code c = lm_atomic_begin(&a, path, 0, err);
    if (c == LM_OK) {
        if (cairo_surface_write_to_png(s, a.tmp_path) != CAIRO_STATUS_SUCCESS) {
            lm_atomic_abort(&a);
            c = lm_fail(err, LM_ERR_IO, "%s: cannot write the PNG", path);
        } else {
            c = lm_atomic_commit(&a, err);
        }
    }
    cairo_surface_destroy(s);
    return c;
}
#else
lm_code cli_write_montage(const char *path, const lm_volume *const *vols, const char *const *labels,
                          int count, double vmax, lm_error *err)
{
    return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: built without cairo, no PNG montage", path);
}
#endif
