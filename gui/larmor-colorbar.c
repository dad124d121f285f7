#include "larmor-colorbar.h"

#include <math.h>
#include <pango/pangocairo.h>
#include <stdio.h>
#include <string.h>

static int is_rad(const char *unit)
{
    return unit && strcmp(unit, "rad") == 0;
}

/* Ticks at multiples of step inside [lo, hi] (with a hair of tolerance so
 * that ends that are multiples count). */
static int ticks_at(double lo, double hi, double step, double *ticks, int max)
{
    double eps = step * 1e-9;
    double first = ceil((lo - eps) / step), last = floor((hi + eps) / step);
    if (!(last - first + 1 <= max) || last < first)
        return (int)fmin(last - first + 1, 1e9);
    int n = 0;
    for (double k = first; k <= last; k++) {
        double t = k * step;
        ticks[n++] = fabs(t) < eps ? 0.0 : t; /* no "-0" */
    }
    return n;
}

int larmor_colorbar_ticks(double lo, double hi, const char *unit, double ticks[LARMOR_COLORBAR_MAX_TICKS],
                          double *step)
{
    *step = 0;
    if (!isfinite(lo) || !isfinite(hi))
        return 0;
    if (!(hi > lo)) {
        ticks[0] = lo;
        return 1;
    }
    double range = hi - lo;
    if (is_rad(unit) && range >= M_PI / 2 && range <= 8 * M_PI) {
        /* pi/2 while that gives at most 5, else pi. */
        for (double s = M_PI / 2; s <= 2 * M_PI; s *= 2) {
            int n = ticks_at(lo, hi, s, ticks, LARMOR_COLORBAR_MAX_TICKS);
            if (n >= 2 && n <= 5) {
                *step = s;
                return ticks_at(lo, hi, s, ticks, LARMOR_COLORBAR_MAX_TICKS);
            }
        }
    }
    /* Of the steps 1, 2, 5 x 10^k the largest one that gives 3-5 ticks;
     * failing that, the one closest to 4 ticks. */
    int e0 = (int)floor(log10(range));
    double best = 0;
    int best_n = 0;
    for (int e = e0 + 1; e >= e0 - 2; e--) {
        static const double mant[3] = { 5, 2, 1 };
        for (int m = 0; m < 3; m++) {
            double s = mant[m] * pow(10, e);
            double tmp[LARMOR_COLORBAR_MAX_TICKS];
            int n = ticks_at(lo, hi, s, tmp, LARMOR_COLORBAR_MAX_TICKS);
            if (n >= 3 && n <= 5) {
                *step = s;
                return ticks_at(lo, hi, s, ticks, LARMOR_COLORBAR_MAX_TICKS);
            }
            if (n >= 1 && n <= LARMOR_COLORBAR_MAX_TICKS && (best_n == 0 || abs(n - 4) < abs(best_n - 4))) {
                best = s;
                best_n = n;
            }
        }
    }
    if (best_n == 0) { /* cannot happen for finite lo < hi; be safe */
        ticks[0] = lo;
        return 1;
    }
    *step = best;
    return ticks_at(lo, hi, best, ticks, LARMOR_COLORBAR_MAX_TICKS);
}

void larmor_colorbar_label(double v, double step, const char *unit, char *buf, size_t n)
{
    if (is_rad(unit) && step > 0 && fabs(fmod(step, M_PI / 2)) < 1e-9) {
        long q = lrint(v / (M_PI / 2)); /* v in halves of pi */
        const char *sign = q < 0 ? "-" : "";
        long a = labs(q);
        if (a == 0)
            snprintf(buf, n, "0");
        else if (a % 2 == 0)
            snprintf(buf, n, a == 2 ? "%sπ" : "%s%ldπ", sign, a / 2);
        else
            snprintf(buf, n, a == 1 ? "%sπ/2" : "%s%ldπ/2", sign, a);
        return;
    }
    double big = fabs(v) > fabs(step) ? fabs(v) : fabs(step);
    if (v == 0)
        v = 0; /* -0 prints as 0 */
    if (big >= 1e5 || (step > 0 && step < 1e-3))
        snprintf(buf, n, "%.2g", v);
    else {
        int dec = step > 0 ? (int)ceil(-log10(step) - 1e-9) : 3;
        dec = dec < 0 ? 0 : dec > 6 ? 6 : dec;
        /* A step that is not whole in its last decimal needs one more. */
        if (dec < 6 && fabs(step * pow(10, dec) - lrint(step * pow(10, dec))) > 1e-6)
            dec++;
        snprintf(buf, n, "%.*f", dec, v);
    }
}

/* Small text: the default font at 80 %. */
static PangoLayout *small_layout(cairo_t *cr)
{
    PangoLayout *layout = pango_cairo_create_layout(cr);
    PangoFontDescription *fd = pango_font_description_from_string("Sans 8");
    pango_layout_set_font_description(layout, fd);
    pango_font_description_free(fd);
    return layout;
}

enum { PAD = 4, STRIP_W = 10, GAP = 4 };

double larmor_colorbar_width(cairo_t *cr, double lo, double hi, const char *unit)
{
    double ticks[LARMOR_COLORBAR_MAX_TICKS], step;
    int n = larmor_colorbar_ticks(lo, hi, unit, ticks, &step);
    PangoLayout *layout = small_layout(cr);
    int wmax = 0, tw, th;
    char buf[64];
    for (int i = 0; i < n; i++) {
        larmor_colorbar_label(ticks[i], step, unit, buf, sizeof buf);
        pango_layout_set_text(layout, buf, -1);
        pango_layout_get_pixel_size(layout, &tw, &th);
        wmax = tw > wmax ? tw : wmax;
    }
    double w = PAD + STRIP_W + GAP + wmax + PAD;
    if (unit && *unit) {
        pango_layout_set_text(layout, unit, -1);
        pango_layout_get_pixel_size(layout, &tw, &th);
        if (PAD + tw + PAD > w)
            w = PAD + tw + PAD;
    }
    g_object_unref(layout);
    return w;
}

static void rounded_rect(cairo_t *cr, double x, double y, double w, double h, double r)
{
    cairo_new_sub_path(cr);
    cairo_arc(cr, x + w - r, y + r, r, -M_PI / 2, 0);
    cairo_arc(cr, x + w - r, y + h - r, r, 0, M_PI / 2);
    cairo_arc(cr, x + r, y + h - r, r, M_PI / 2, M_PI);
    cairo_arc(cr, x + r, y + r, r, M_PI, 3 * M_PI / 2);
    cairo_close_path(cr);
}

void larmor_colorbar_draw(cairo_t *cr, double x, double y, double w, double h, LarmorColormap cm, double lo,
                          double hi, const char *unit)
{
    if (!isfinite(lo) || !isfinite(hi) || !(w >= 2 * PAD + STRIP_W) || !(h >= 40))
        return;
    cairo_save(cr);
    PangoLayout *layout = small_layout(cr);
    int tw, th;
    pango_layout_set_text(layout, "0", -1);
    pango_layout_get_pixel_size(layout, &tw, &th);

    cairo_set_source_rgba(cr, 0, 0, 0, 0.55);
    rounded_rect(cr, x, y, w, h, 4);
    cairo_fill(cr);

    double top = y + PAD + th / 2.0, bottom = y + h - PAD - th / 2.0;
    if (unit && *unit) {
        pango_layout_set_text(layout, unit, -1);
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_move_to(cr, x + PAD, y + PAD);
        pango_cairo_show_layout(cr, layout);
        top += th + 2;
    }
    top = ceil(top); /* whole pixels: the strip's first and last rows are pure LUT colours */
    bottom = floor(bottom);
    double sh = bottom - top;
    if (sh < 8) {
        g_object_unref(layout);
        cairo_restore(cr);
        return;
    }

    /* The LUT as a 1 x 256 image, top row = last entry, scaled with the
     * nearest filter so that every colour on screen is a LUT entry. */
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 256);
    const uint32_t *lut = larmor_colormap_lut(cm);
    unsigned char *data = cairo_image_surface_get_data(s);
    int stride = cairo_image_surface_get_stride(s);
    cairo_surface_flush(s);
    for (int r = 0; r < 256; r++)
        *(uint32_t *)(data + (size_t)r * stride) = lut[255 - r];
    cairo_surface_mark_dirty(s);
    cairo_save(cr);
    cairo_rectangle(cr, x + PAD, top, STRIP_W, sh);
    cairo_clip(cr);
    cairo_translate(cr, x + PAD, top);
    cairo_scale(cr, STRIP_W, sh / 256.0);
    cairo_set_source_surface(cr, s, 0, 0);
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
    cairo_paint(cr);
    cairo_restore(cr);
    cairo_surface_destroy(s);
    cairo_set_source_rgba(cr, 1, 1, 1, 0.8);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, x + PAD - 0.5, top - 0.5, STRIP_W + 1, sh + 1);
    cairo_stroke(cr);

    double ticks[LARMOR_COLORBAR_MAX_TICKS], step;
    int n = larmor_colorbar_ticks(lo, hi, unit, ticks, &step);
    char buf[64];
    cairo_set_source_rgb(cr, 1, 1, 1);
    for (int i = 0; i < n; i++) {
        double ty = hi > lo ? bottom - (ticks[i] - lo) / (hi - lo) * sh : bottom;
        cairo_move_to(cr, x + PAD + STRIP_W - 3, round(ty) + 0.5);
        cairo_line_to(cr, x + PAD + STRIP_W + 2, round(ty) + 0.5);
        cairo_stroke(cr);
        larmor_colorbar_label(ticks[i], step, unit, buf, sizeof buf);
        pango_layout_set_text(layout, buf, -1);
        pango_layout_get_pixel_size(layout, &tw, &th);
        cairo_move_to(cr, x + PAD + STRIP_W + GAP, ty - th / 2.0);
        pango_cairo_show_layout(cr, layout);
    }
    g_object_unref(layout);
    cairo_restore(cr);
}
