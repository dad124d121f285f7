#include "larmor-slice-view.h"

#include <math.h>

#include "larmor-colorbar.h"

/* Height of the caption (view name, slice position) drawn over a cell's
 * top edge: nothing else is drawn there. */
#define LARMOR_SLICE_CAPTION_H 26
#include "larmor-colormap.h"
#include "larmor-slice.h"
#include "larmor-util.h"

typedef enum { DRAG_NONE, DRAG_CURSOR, DRAG_PAN, DRAG_WINDOW, DRAG_ROI, DRAG_LINE } DragMode;

struct _LarmorSliceView {
    GtkWidget parent_instance;

    LarmorVolume *volume;
    LarmorViewState *state;
    gulong state_notify_id, state_view_id, state_roi_id, state_line_id;
    LarmorOrientation orientation;
    double gain;
    char *title;
    char *placeholder;
    gboolean show_labels;
    char *unit;               /* colour bar unit; NULL: by the mode */
    double colorbar_rect[4];  /* where the last snapshot drew it (w 0: none) */
    double overlay_bar_rect[4]; /* the overlay's bar, likewise */

    /* Caches: the plane for (volume, orientation, slice, mode), then its
     * colours for (window, level, gain, colour map). Each snapshot only
     * resamples colours onto device pixels. */
    float *plane;
    uint32_t *rgba;
    int pw, ph;
    const lm_volume *plane_vol;
    int64_t plane_index;
    int plane_mode, plane_orient, plane_flip_u, plane_flip_v;
    guint plane_serial, rgba_serial;
    double rgba_window, rgba_level, rgba_gain;
    int rgba_cmap;

    /* Interaction */
    DragMode drag;
    double drag_x0, drag_y0;
    double drag_window0, drag_level0, drag_pan0[2];
    int64_t roi_anchor[2];     /* plane voxel where a ROI drag began */
    double line_anchor[2];     /* plane point where a line drag began */
    gboolean hover_inside;
    double hover_x, hover_y;

    double last_draw_ms;

    /* Overlay (larmor_slice_view_set_overlay) */
    LarmorVolume *overlay;
    LarmorOverlayStyle overlay_style;
    char *overlay_unit;
};

G_DEFINE_FINAL_TYPE(LarmorSliceView, larmor_slice_view, GTK_TYPE_WIDGET)

enum { SIGNAL_HOVER, N_SIGNALS };
static guint signals[N_SIGNALS];

/* The frame of the volume the state points at (frame 0 of static ones). */
static const lm_volume *shown(LarmorSliceView *self)
{
    return larmor_volume_get_frame_data(self->volume, larmor_view_state_get_frame(self->state));
}

/* Where the slice is drawn, in widget (logical) pixels. */
typedef struct {
    double ox, oy, iw, ih;
    int pw, ph, u, v, n;
    int flip_u, flip_v; /* larmor_view_flips: the convention and the affine */
} Layout;

/* Plane coordinates (voxel i spans [i, i + 1]) <-> widget coordinates.
 * Every mapping between the screen and voxels goes through these four, so
 * clicks, ROIs, lines and the cursor follow a mirrored display. */
static double u_to_x(const Layout *l, double fu)
{
    return l->ox + (l->flip_u ? l->pw - fu : fu) / l->pw * l->iw;
}

static double v_to_y(const Layout *l, double fv)
{
    return l->oy + (l->flip_v ? fv : l->ph - fv) / l->ph * l->ih;
}

static double x_to_u(const Layout *l, double x)
{
    double f = (x - l->ox) / l->iw * l->pw;
    return l->flip_u ? l->pw - f : f;
}

static double y_to_v(const Layout *l, double y)
{
    double f = (y - l->oy) / l->ih * l->ph;
    return l->flip_v ? f : l->ph - f;
}

static gboolean compute_layout(LarmorSliceView *self, Layout *l)
{
    if (!self->volume)
        return FALSE;
    const lm_volume *vol = shown(self);
    larmor_orientation_axes(self->orientation, &l->u, &l->v, &l->n);
    l->pw = (int)vol->dims[l->u];
    l->ph = (int)vol->dims[l->v];
    double W = gtk_widget_get_width(GTK_WIDGET(self)), H = gtk_widget_get_height(GTK_WIDGET(self));
    if (W <= 0 || H <= 0)
        return FALSE;
    /* Physical aspect from the voxel size; a small margin keeps labels clear. */
    double mw = l->pw * vol->voxel_mm[l->u], mh = l->ph * vol->voxel_mm[l->v];
    double margin = self->show_labels ? 18 : 2;
    double fit = MIN((W - 2 * margin) / mw, (H - 2 * margin) / mh);
    if (fit <= 0)
        fit = MIN(W / mw, H / mh);
    double zoom = larmor_view_state_get_zoom(self->state, self->orientation), px, py;
    larmor_view_state_get_pan(self->state, self->orientation, &px, &py);
    l->iw = mw * fit * zoom;
    l->ih = mh * fit * zoom;
    l->ox = (W - l->iw) / 2 + px * l->iw;
    l->oy = (H - l->ih) / 2 + py * l->ih;
    larmor_view_flips(vol->affine, self->orientation, larmor_view_state_get_radiological(self->state), &l->flip_u,
                      &l->flip_v);
    return TRUE;
}

gboolean larmor_slice_view_voxel_to_widget(LarmorSliceView *self, const int64_t ijk[3], double *x,
                                           double *y)
{
    Layout l;
    if (!compute_layout(self, &l))
        return FALSE;
    *x = u_to_x(&l, ijk[l.u] + 0.5);
    *y = v_to_y(&l, ijk[l.v] + 0.5);
    return TRUE;
}

gboolean larmor_slice_view_widget_to_voxel(LarmorSliceView *self, double x, double y,
                                           int64_t ijk[3])
{
    Layout l;
    if (!compute_layout(self, &l))
        return FALSE;
    double fu = x_to_u(&l, x), fv = y_to_v(&l, y);
    larmor_view_state_get_cursor(self->state, ijk);
    if (!(fu >= 0 && fv >= 0 && fu < l.pw && fv < l.ph))
        return FALSE;
    ijk[l.u] = (int64_t)fu;
    ijk[l.v] = (int64_t)fv;
    return TRUE;
}

/* --- caches ------------------------------------------------------------ */

/* The displayed plane: mirrored as the layout shows it, so the resample
 * onto the screen stays one plain nearest-neighbour lookup. */
static void mirror_plane(float *p, int pw, int ph, int flip_u, int flip_v)
{
    if (flip_u)
        for (int r = 0; r < ph; r++)
            for (int a = 0, b = pw - 1; a < b; a++, b--) {
                float t = p[(size_t)r * pw + a];
                p[(size_t)r * pw + a] = p[(size_t)r * pw + b];
                p[(size_t)r * pw + b] = t;
            }
    if (flip_v)
        for (int a = 0, b = ph - 1; a < b; a++, b--)
            for (int c = 0; c < pw; c++) {
                float t = p[(size_t)a * pw + c];
                p[(size_t)a * pw + c] = p[(size_t)b * pw + c];
                p[(size_t)b * pw + c] = t;
            }
}

static void ensure_pixels(LarmorSliceView *self, const Layout *l)
{
    const lm_volume *vol = shown(self);
    int64_t cur[3];
    larmor_view_state_get_cursor(self->state, cur);
    int mode = larmor_view_state_get_mode(self->state);
    if (self->plane_vol != vol || self->plane_index != cur[l->n] || self->plane_mode != mode ||
        self->plane_orient != (int)self->orientation || self->pw != l->pw || self->ph != l->ph ||
        self->plane_flip_u != l->flip_u || self->plane_flip_v != l->flip_v) {
        if (self->pw * self->ph != l->pw * l->ph || !self->plane) {
            g_free(self->plane);
            g_free(self->rgba);
            self->plane = g_new(float, (gsize)l->pw * l->ph);
            self->rgba = g_new(uint32_t, (gsize)l->pw * l->ph);
        }
        self->pw = l->pw;
        self->ph = l->ph;
        larmor_slice_extract(vol, self->orientation, cur[l->n], mode, self->plane);
        mirror_plane(self->plane, l->pw, l->ph, l->flip_u, l->flip_v);
        self->plane_flip_u = l->flip_u;
        self->plane_flip_v = l->flip_v;
        self->plane_vol = vol;
        self->plane_index = cur[l->n];
        self->plane_mode = mode;
        self->plane_orient = self->orientation;
        self->plane_serial++;
    }
    double w = larmor_view_state_get_window(self->state), lv = larmor_view_state_get_level(self->state);
    int cm = larmor_view_state_get_colormap(self->state);
    if (self->rgba_serial != self->plane_serial || self->rgba_window != w || self->rgba_level != lv ||
        self->rgba_gain != self->gain || self->rgba_cmap != cm) {
        larmor_colormap_map(self->plane, (size_t)self->pw * self->ph, w, lv, self->gain, cm, self->rgba);
        self->rgba_serial = self->plane_serial;
        self->rgba_window = w;
        self->rgba_level = lv;
        self->rgba_gain = self->gain;
        self->rgba_cmap = cm;
    }
}

static void invalidate(LarmorSliceView *self)
{
    self->plane_vol = NULL;
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

/* --- drawing ----------------------------------------------------------- */

static void append_text(GtkSnapshot *snapshot, GtkWidget *widget, const char *text, double x,
                        double y, double xalign, double yalign, const GdkRGBA *color)
{
    PangoLayout *layout = gtk_widget_create_pango_layout(widget, text);
    int tw, th;
    pango_layout_get_pixel_size(layout, &tw, &th);
    x -= xalign * tw;
    y -= yalign * th;
    /* A dark halo keeps labels readable over bright tissue. */
    static const GdkRGBA shadow = { 0, 0, 0, 0.85f };
    gtk_snapshot_save(snapshot);
    gtk_snapshot_translate(snapshot, &GRAPHENE_POINT_INIT((float)x + 1, (float)y + 1));
    gtk_snapshot_append_layout(snapshot, layout, &shadow);
    gtk_snapshot_restore(snapshot);
    gtk_snapshot_save(snapshot);
    gtk_snapshot_translate(snapshot, &GRAPHENE_POINT_INIT((float)x, (float)y));
    gtk_snapshot_append_layout(snapshot, layout, color);
    gtk_snapshot_restore(snapshot);
    g_object_unref(layout);
}

static void draw_crosshair(LarmorSliceView *self, GtkSnapshot *snapshot, const Layout *l)
{
    int64_t cur[3];
    larmor_view_state_get_cursor(self->state, cur);
    double cx = u_to_x(l, cur[l->u] + 0.5);
    double cy = v_to_y(l, cur[l->v] + 0.5);
    static const GdkRGBA green = { 0.20f, 0.90f, 0.35f, 0.80f };
    const double gap = 6, x0 = l->ox, x1 = l->ox + l->iw, y0 = l->oy, y1 = l->oy + l->ih;
    /* Lines snapped to device pixels so they stay one pixel wide and sharp. */
    double sx = floor(cx) , sy = floor(cy);
    if (cx - gap > x0)
        gtk_snapshot_append_color(snapshot, &green, &GRAPHENE_RECT_INIT((float)x0, (float)sy, (float)(cx - gap - x0), 1));
    if (x1 > cx + gap)
        gtk_snapshot_append_color(snapshot, &green, &GRAPHENE_RECT_INIT((float)(cx + gap), (float)sy, (float)(x1 - cx - gap), 1));
    if (cy - gap > y0)
        gtk_snapshot_append_color(snapshot, &green, &GRAPHENE_RECT_INIT((float)sx, (float)y0, 1, (float)(cy - gap - y0)));
    if (y1 > cy + gap)
        gtk_snapshot_append_color(snapshot, &green, &GRAPHENE_RECT_INIT((float)sx, (float)(cy + gap), 1, (float)(y1 - cy - gap)));
}

/* The shared ROI when it lies on the slice shown here. */
static gboolean roi_here(LarmorSliceView *self, LarmorRoi *roi)
{
    if (!self->state || !self->volume)
        return FALSE;
    larmor_view_state_get_roi(self->state, roi);
    if (roi->shape == LARMOR_ROI_NONE || roi->orientation != self->orientation)
        return FALSE;
    int u, v, n;
    larmor_orientation_axes(self->orientation, &u, &v, &n);
    int64_t cur[3];
    larmor_view_state_get_cursor(self->state, cur);
    return roi->slice == cur[n];
}

gboolean larmor_slice_view_get_roi_stats(LarmorSliceView *self, LarmorRoiStats *st)
{
    LarmorRoi roi;
    if (!roi_here(self, &roi)) {
        *st = (LarmorRoiStats){ .mean = NAN, .sd = NAN, .min = NAN, .max = NAN };
        return FALSE;
    }
    return larmor_roi_stats(&roi, shown(self), st);
}

char *larmor_roi_stats_text(const LarmorRoiStats *st)
{
    return g_strdup_printf("mean %.4g  SD %.4g  min %.4g  max %.4g  %lld voxels  %.4g mm²", st->mean, st->sd,
                           st->min, st->max, (long long)st->count, st->area_mm2);
}

/* The ROI's outline; stats_y >= 0 also writes its statistics there. */
static void outline_roi(LarmorSliceView *self, GtkSnapshot *snapshot, const Layout *l, const LarmorRoi *r,
                        const GdkRGBA *colour, double stats_y);

static void draw_roi(LarmorSliceView *self, GtkSnapshot *snapshot, const Layout *l, double H)
{
    LarmorRoi roi;
    static const GdkRGBA yellow = { 1.0f, 0.85f, 0.10f, 0.95f };
    static const GdkRGBA cyan = { 0.25f, 0.85f, 1.0f, 0.95f };
    if (roi_here(self, &roi))
        outline_roi(self, snapshot, l, &roi, &yellow, H - 4);
    /* The noise ROI (SNR), when on this slice: outlined in its own colour. */
    LarmorRoi noise;
    larmor_view_state_get_noise_roi(self->state, &noise);
    int u, v, n;
    larmor_orientation_axes(self->orientation, &u, &v, &n);
    int64_t cur[3];
    larmor_view_state_get_cursor(self->state, cur);
    if (noise.shape != LARMOR_ROI_NONE && noise.orientation == self->orientation && noise.slice == cur[n])
        outline_roi(self, snapshot, l, &noise, &cyan, -1);
}

/* Plane point (voxel centres at integers) <-> widget coordinates. */
static void plane_to_widget(const Layout *l, double pu, double pv, double *x, double *y)
{
    *x = u_to_x(l, pu + 0.5);
    *y = v_to_y(l, pv + 0.5);
}

static gboolean line_here(LarmorSliceView *self, LarmorLine *line)
{
    if (!self->state || !self->volume)
        return FALSE;
    larmor_view_state_get_line(self->state, line);
    if (!line->set || line->orientation != self->orientation)
        return FALSE;
    int u, v, n;
    larmor_orientation_axes(self->orientation, &u, &v, &n);
    int64_t cur[3];
    larmor_view_state_get_cursor(self->state, cur);
    return line->slice == cur[n];
}

static void draw_line(LarmorSliceView *self, GtkSnapshot *snapshot, const Layout *l)
{
    LarmorLine line;
    if (!line_here(self, &line))
        return;
    static const GdkRGBA magenta = { 1.0f, 0.35f, 0.85f, 0.95f };
    double x0, y0, x1, y1;
    plane_to_widget(l, line.u0, line.v0, &x0, &y0);
    plane_to_widget(l, line.u1, line.v1, &x1, &y1);
    cairo_t *cr = gtk_snapshot_append_cairo(snapshot, &GRAPHENE_RECT_INIT((float)(MIN(x0, x1) - 4), (float)(MIN(y0, y1) - 4),
                                                                          (float)(fabs(x1 - x0) + 8), (float)(fabs(y1 - y0) + 8)));
    gdk_cairo_set_source_rgba(cr, &magenta);
    cairo_set_line_width(cr, 1.5);
    cairo_move_to(cr, x0, y0);
    cairo_line_to(cr, x1, y1);
    cairo_stroke(cr);
    cairo_arc(cr, x0, y0, 2.5, 0, 2 * G_PI); /* the start: distance 0 of the profile */
    cairo_fill(cr);
    cairo_destroy(cr);
}

static void outline_roi(LarmorSliceView *self, GtkSnapshot *snapshot, const Layout *l, const LarmorRoi *r,
                        const GdkRGBA *colour, double stats_y)
{
    const LarmorRoi roi = *r;
    const GdkRGBA yellow = *colour;
    /* Box edges in widget coordinates (either axis may be mirrored). */
    const double xa = u_to_x(l, (double)roi.u0), xb = u_to_x(l, (double)roi.u1 + 1);
    const double ya = v_to_y(l, (double)roi.v0), yb = v_to_y(l, (double)roi.v1 + 1);
    const double x0 = MIN(xa, xb), x1 = MAX(xa, xb), y0 = MIN(ya, yb), y1 = MAX(ya, yb);
    if (roi.shape == LARMOR_ROI_RECT) {
        const float bw[4] = { 1.5f, 1.5f, 1.5f, 1.5f };
        const GdkRGBA bc[4] = { yellow, yellow, yellow, yellow };
        GskRoundedRect rr;
        gsk_rounded_rect_init_from_rect(&rr, &GRAPHENE_RECT_INIT((float)x0, (float)y0, (float)(x1 - x0),
                                                                 (float)(y1 - y0)), 0);
        gtk_snapshot_append_border(snapshot, &rr, bw, bc);
    } else {
        cairo_t *cr = gtk_snapshot_append_cairo(snapshot, &GRAPHENE_RECT_INIT((float)x0 - 2, (float)y0 - 2,
                                                                              (float)(x1 - x0) + 4, (float)(y1 - y0) + 4));
        cairo_save(cr);
        cairo_translate(cr, (x0 + x1) / 2, (y0 + y1) / 2);
        cairo_scale(cr, MAX((x1 - x0) / 2, 0.5), MAX((y1 - y0) / 2, 0.5));
        cairo_arc(cr, 0, 0, 1, 0, 2 * G_PI);
        cairo_restore(cr);
        gdk_cairo_set_source_rgba(cr, &yellow);
        cairo_set_line_width(cr, 1.5);
        cairo_stroke(cr);
        cairo_destroy(cr);
    }
    LarmorRoiStats st;
    if (stats_y >= 0 && larmor_roi_stats(&roi, shown(self), &st)) {
        char *t = larmor_roi_stats_text(&st);
        append_text(snapshot, GTK_WIDGET(self), t, 6, stats_y, 0, 1, &yellow);
        g_free(t);
    }
}

gboolean larmor_slice_view_edge_labels(LarmorSliceView *self, char *labels[4])
{
    Layout l;
    for (int i = 0; i < 4; i++)
        labels[i] = NULL;
    if (!compute_layout(self, &l))
        return FALSE;
    const lm_volume *vol = shown(self);
    int wu, su, wv, sv;
    larmor_axis_direction(vol->affine, l.u, &wu, &su);
    larmor_axis_direction(vol->affine, l.v, &wv, &sv);
    /* +u points right unless mirrored; +v points up unless mirrored. */
    int right = l.flip_u ? -su : su, up = l.flip_v ? -sv : sv;
    labels[0] = g_strdup(larmor_direction_letter(wu, -right));
    labels[1] = g_strdup(larmor_direction_letter(wu, right));
    labels[2] = g_strdup(larmor_direction_letter(wv, up));
    labels[3] = g_strdup(larmor_direction_letter(wv, -up));
    return TRUE;
}

const char *larmor_slice_view_get_unit(LarmorSliceView *self)
{
    if (self->unit)
        return self->unit;
    return larmor_view_state_get_mode(self->state) == LARMOR_MODE_PHASE ? "rad" : "a.u.";
}

gboolean larmor_slice_view_get_colorbar_range(LarmorSliceView *self, double *lo, double *hi)
{
    double g = self->gain > 0 ? self->gain : 1;
    double w = larmor_view_state_get_window(self->state), lv = larmor_view_state_get_level(self->state);
    *lo = (lv - w / 2) / g;
    *hi = (lv + w / 2) / g;
    return self->volume && larmor_view_state_get_show_colorbar(self->state) && self->colorbar_rect[2] > 0;
}

/* Bottom-right, clear of the edge labels' middle; none in small views. */
static void draw_colorbar(LarmorSliceView *self, GtkSnapshot *snapshot, double W, double H)
{
    self->colorbar_rect[2] = 0;
    if (!larmor_view_state_get_show_colorbar(self->state) || W < 160 || H < 120)
        return;
    double lo, hi;
    larmor_slice_view_get_colorbar_range(self, &lo, &hi);
    const char *unit = larmor_slice_view_get_unit(self);
    double bh = MIN(0.4 * H, 180), by = H - 6 - bh;
    cairo_t *cr = gtk_snapshot_append_cairo(snapshot, &GRAPHENE_RECT_INIT((float)(W - 120), (float)by, 120, (float)bh));
    double bw = larmor_colorbar_width(cr, lo, hi, unit), bx = W - 6 - bw;
    larmor_colorbar_draw(cr, bx, by, bw, bh, larmor_view_state_get_colormap(self->state), lo, hi, unit);
    cairo_destroy(cr);
    self->colorbar_rect[0] = bx;
    self->colorbar_rect[1] = by;
    self->colorbar_rect[2] = bw;
    self->colorbar_rect[3] = bh;
}

gboolean larmor_slice_view_get_overlay_colorbar_rect(LarmorSliceView *self, double rect[4])
{
    for (int i = 0; i < 4; i++)
        rect[i] = self->overlay_bar_rect[i];
    return rect[2] > 0;
}

gboolean larmor_slice_view_get_colorbar_rect(LarmorSliceView *self, double rect[4])
{
    for (int i = 0; i < 4; i++)
        rect[i] = self->colorbar_rect[i];
    return rect[2] > 0;
}

void larmor_slice_view_set_unit(LarmorSliceView *self, const char *unit)
{
    g_free(self->unit);
    self->unit = g_strdup(unit);
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void draw_labels(LarmorSliceView *self, GtkSnapshot *snapshot, const Layout *l, double W,
                        double H)
{
    static const GdkRGBA fg = { 0.92f, 0.92f, 0.92f, 1 };
    static const GdkRGBA dim = { 0.95f, 0.75f, 0.30f, 0.9f };
    GtkWidget *w = GTK_WIDGET(self);
    int64_t cur[3];
    larmor_view_state_get_cursor(self->state, cur);
    const lm_volume *vol = shown(self);
    const char *head = self->title ? self->title : larmor_orientation_name(self->orientation);
    if (head[0])
        append_text(snapshot, w, head, 6, 4, 0, 0, &fg);
    /* 0-based, as the cursor read-out under the views. */
    char *slice = larmor_format_slice(l->n, (long long)cur[l->n], (long long)vol->dims[l->n]);
    append_text(snapshot, w, slice, W - 6, 4, 1, 0, &fg);
    g_free(slice);
    char *edge[4];
    larmor_slice_view_edge_labels(self, edge);
    append_text(snapshot, w, edge[0], MAX(l->ox - 3, 2), l->oy + l->ih / 2, l->ox - 3 > 10 ? 1 : 0, 0.5, &dim);
    append_text(snapshot, w, edge[1], MIN(l->ox + l->iw + 3, W - 2), l->oy + l->ih / 2, l->ox + l->iw + 3 < W - 10 ? 0 : 1, 0.5, &dim);
    append_text(snapshot, w, edge[2], l->ox + l->iw / 2, MAX(l->oy - 1, 18), 0.5, l->oy - 1 > 18 ? 1 : 0, &dim);
    append_text(snapshot, w, edge[3], l->ox + l->iw / 2, MIN(l->oy + l->ih + 1, H - 2), 0.5, l->oy + l->ih + 1 < H - 18 ? 0 : 1, &dim);
    for (int i = 0; i < 4; i++)
        g_free(edge[i]);
}

/* --- overlay ------------------------------------------------------------ */

static gboolean overlay_fits(LarmorSliceView *self)
{
    if (!self->overlay || !self->volume)
        return FALSE;
    const lm_volume *a = larmor_volume_get_data(self->overlay), *b = shown(self);
    return a->dims[0] == b->dims[0] && a->dims[1] == b->dims[1] && a->dims[2] == b->dims[2];
}

void larmor_slice_view_set_overlay(LarmorSliceView *self, LarmorVolume *overlay, const LarmorOverlayStyle *style,
                                   const char *unit)
{
    g_set_object(&self->overlay, overlay);
    if (style)
        self->overlay_style = *style;
    g_free(self->overlay_unit);
    self->overlay_unit = g_strdup(unit);
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

LarmorVolume *larmor_slice_view_get_overlay(LarmorSliceView *self, LarmorOverlayStyle *style, gboolean *drawn)
{
    if (style)
        *style = self->overlay_style;
    if (drawn)
        *drawn = overlay_fits(self);
    return self->overlay;
}

/* The overlay's plane over the image (device pixels X0, Y0, dw x dh, as
 * the image), then its colour bar at the right edge. */
static void draw_overlay(LarmorSliceView *self, GtkSnapshot *snapshot, const Layout *l, int s, int X0, int Y0,
                         int dw, int dh, double W, double H)
{
    if (!overlay_fits(self) || dw <= 0 || dh <= 0)
        return;
    int64_t cur[3];
    larmor_view_state_get_cursor(self->state, cur);
    const gsize np = (gsize)l->pw * l->ph;
    float *plane = g_new(float, np);
    uint32_t *rgba = g_new(uint32_t, np);
    larmor_slice_extract(larmor_volume_get_data(self->overlay), self->orientation, cur[l->n],
                         self->overlay_style.mode, plane);
    larmor_overlay_map(plane, np, &self->overlay_style, rgba);
    uint32_t *buf = g_new(uint32_t, (gsize)dw * dh);
    larmor_slice_resample(rgba, l->pw, l->ph, l->ox * s, l->oy * s, l->iw * s, l->ih * s, buf, X0, Y0, dw, dh, dw);
    g_free(plane);
    g_free(rgba);
    GBytes *bytes = g_bytes_new_take(buf, (gsize)dw * dh * 4);
    GdkTexture *tex = gdk_memory_texture_new(dw, dh, GDK_MEMORY_DEFAULT, bytes, (gsize)dw * 4);
    g_bytes_unref(bytes);
    gtk_snapshot_append_texture(snapshot, tex,
                                &GRAPHENE_RECT_INIT((float)X0 / s, (float)Y0 / s, (float)dw / s, (float)dh / s));
    g_object_unref(tex);
    /* The overlay's own colour bar in the top-right corner, below the
     * cell's slice-position caption (LARMOR_SLICE_CAPTION_H), and at most
     * as tall as the image's in the bottom-right (0.4 H), so the right
     * edge's orientation letter at H/2 stays between them. */
    const double by = LARMOR_SLICE_CAPTION_H, bh = MIN(0.4 * H - by + 6, 180), bw = 64;
    if (larmor_view_state_get_show_colorbar(self->state) && W > 3 * bw && bh > 48) {
        const graphene_rect_t box = GRAPHENE_RECT_INIT((float)(W - bw - 6), (float)by, (float)bw, (float)bh);
        cairo_t *cr = gtk_snapshot_append_cairo(snapshot, &box);
        double w = MIN(bw, larmor_colorbar_width(cr, self->overlay_style.lo, self->overlay_style.hi, self->overlay_unit));
        larmor_colorbar_draw(cr, W - w - 6, by, w, bh, self->overlay_style.colormap, self->overlay_style.lo,
                             self->overlay_style.hi, self->overlay_unit);
        cairo_destroy(cr);
        self->overlay_bar_rect[0] = W - w - 6;
        self->overlay_bar_rect[1] = by;
        self->overlay_bar_rect[2] = w;
        self->overlay_bar_rect[3] = bh;
    }
}

static void larmor_slice_view_snapshot(GtkWidget *widget, GtkSnapshot *snapshot)
{
    LarmorSliceView *self = LARMOR_SLICE_VIEW(widget);
    self->overlay_bar_rect[2] = 0;
    const double W = gtk_widget_get_width(widget), H = gtk_widget_get_height(widget);
    static const GdkRGBA black = { 0, 0, 0, 1 };

    Layout l;
    if (!compute_layout(self, &l)) {
        gtk_snapshot_append_color(snapshot, &black, &GRAPHENE_RECT_INIT(0, 0, (float)W, (float)H));
        if (self->placeholder) {
            static const GdkRGBA grey = { 0.6f, 0.6f, 0.6f, 1 };
            append_text(snapshot, widget, self->placeholder, W / 2, H / 2, 0.5, 0.5, &grey);
        }
        return;
    }

    gint64 t0 = g_get_monotonic_time();
    ensure_pixels(self, &l);
    const int s = gtk_widget_get_scale_factor(widget);
    const double OX = l.ox * s, OY = l.oy * s, IW = l.iw * s, IH = l.ih * s;
    const int X0 = (int)MAX(0, floor(OX)), Y0 = (int)MAX(0, floor(OY));
    const int X1 = (int)MIN(W * s, ceil(OX + IW)), Y1 = (int)MIN(H * s, ceil(OY + IH));
    /* Black only around the image: filling under it too would cost a
     * full-widget blend per frame for nothing. */
    const float fx0 = (float)X0 / s, fy0 = (float)Y0 / s, fx1 = (float)X1 / s, fy1 = (float)Y1 / s;
    if (X1 <= X0 || Y1 <= Y0)
        gtk_snapshot_append_color(snapshot, &black, &GRAPHENE_RECT_INIT(0, 0, (float)W, (float)H));
    else {
        gtk_snapshot_append_color(snapshot, &black, &GRAPHENE_RECT_INIT(0, 0, (float)W, fy0));
        gtk_snapshot_append_color(snapshot, &black, &GRAPHENE_RECT_INIT(0, fy1, (float)W, (float)H - fy1));
        gtk_snapshot_append_color(snapshot, &black, &GRAPHENE_RECT_INIT(0, fy0, fx0, fy1 - fy0));
        gtk_snapshot_append_color(snapshot, &black, &GRAPHENE_RECT_INIT(fx1, fy0, (float)W - fx1, fy1 - fy0));
    }
    gtk_snapshot_push_clip(snapshot, &GRAPHENE_RECT_INIT(0, 0, (float)W, (float)H));
    if (X1 > X0 && Y1 > Y0) {
        const int dw = X1 - X0, dh = Y1 - Y0;
        uint32_t *buf = g_new(uint32_t, (gsize)dw * dh);
        larmor_slice_resample(self->rgba, self->pw, self->ph, OX, OY, IW, IH, buf, X0, Y0, dw, dh, dw);
        GBytes *bytes = g_bytes_new_take(buf, (gsize)dw * dh * 4);
        GdkTexture *tex = gdk_memory_texture_new(dw, dh, GDK_MEMORY_DEFAULT, bytes, (gsize)dw * 4);
        g_bytes_unref(bytes);
        /* One texture pixel per device pixel: no filtering, sharp voxels. */
        gtk_snapshot_append_texture(snapshot, tex,
                                    &GRAPHENE_RECT_INIT((float)X0 / s, (float)Y0 / s,
                                                        (float)dw / s, (float)dh / s));
        g_object_unref(tex);
        draw_overlay(self, snapshot, &l, s, X0, Y0, dw, dh, W, H);
    }
    self->last_draw_ms = (g_get_monotonic_time() - t0) / 1000.0;

    draw_crosshair(self, snapshot, &l);
    draw_roi(self, snapshot, &l, H);
    draw_line(self, snapshot, &l);
    if (self->show_labels)
        draw_labels(self, snapshot, &l, W, H);
    draw_colorbar(self, snapshot, W, H);
    gtk_snapshot_pop(snapshot);

    if (gtk_widget_has_focus(widget)) {
        /* Which view the keys go to. */
        static const GdkRGBA accent = { 0.21f, 0.52f, 0.89f, 0.9f };
        const float bw[4] = { 2, 2, 2, 2 };
        const GdkRGBA bc[4] = { accent, accent, accent, accent };
        GskRoundedRect rr;
        gsk_rounded_rect_init_from_rect(&rr, &GRAPHENE_RECT_INIT(0, 0, (float)W, (float)H), 0);
        gtk_snapshot_append_border(snapshot, &rr, bw, bc);
    }
}

/* --- interaction ------------------------------------------------------- */

static void emit_hover(LarmorSliceView *self)
{
    int64_t ijk[3] = { 0, 0, 0 };
    gboolean inside = self->hover_inside &&
                      larmor_slice_view_widget_to_voxel(self, self->hover_x, self->hover_y, ijk);
    g_signal_emit(self, signals[SIGNAL_HOVER], 0, inside, (int)ijk[0], (int)ijk[1], (int)ijk[2]);
}

static void move_slice(LarmorSliceView *self, int64_t delta)
{
    int u, v, n;
    larmor_orientation_axes(self->orientation, &u, &v, &n);
    int64_t cur[3];
    larmor_view_state_get_cursor(self->state, cur);
    larmor_view_state_set_cursor_axis(self->state, n, cur[n] + delta);
    emit_hover(self);
}

static void zoom_about(LarmorSliceView *self, double factor, double mx, double my)
{
    Layout l;
    if (!compute_layout(self, &l))
        return;
    double W = gtk_widget_get_width(GTK_WIDGET(self)), H = gtk_widget_get_height(GTK_WIDGET(self));
    double zoom = larmor_view_state_get_zoom(self->state, self->orientation);
    double nz = CLAMP(zoom * factor, 0.25, 64.0);
    /* Keep the image point under the pointer where it is. */
    double ax = (mx - l.ox) / l.iw, ay = (my - l.oy) / l.ih;
    double niw = l.iw * nz / zoom, nih = l.ih * nz / zoom;
    double nox = mx - ax * niw, noy = my - ay * nih;
    larmor_view_state_set_zoom_pan(self->state, self->orientation, nz, (nox - (W - niw) / 2) / niw,
                                   (noy - (H - nih) / 2) / nih);
}

static void set_cursor_from(LarmorSliceView *self, double x, double y)
{
    Layout l;
    if (!compute_layout(self, &l))
        return;
    int64_t cur[3];
    larmor_view_state_get_cursor(self->state, cur);
    int64_t i = (int64_t)floor(x_to_u(&l, x)), j = (int64_t)floor(y_to_v(&l, y));
    cur[l.u] = CLAMP(i, 0, l.pw - 1);
    cur[l.v] = CLAMP(j, 0, l.ph - 1);
    larmor_view_state_set_cursor(self->state, cur);
}

/* The plane voxel under (x, y), clamped to the slice. */
static gboolean plane_voxel(LarmorSliceView *self, double x, double y, int64_t *pu, int64_t *pv)
{
    Layout l;
    if (!compute_layout(self, &l))
        return FALSE;
    int64_t i = (int64_t)floor(x_to_u(&l, x)), j = (int64_t)floor(y_to_v(&l, y));
    *pu = CLAMP(i, 0, l.pw - 1);
    *pv = CLAMP(j, 0, l.ph - 1);
    return TRUE;
}

static void roi_to(LarmorSliceView *self, double x, double y)
{
    int64_t u, v, cur[3];
    if (!plane_voxel(self, x, y, &u, &v))
        return;
    int a, b, n;
    larmor_orientation_axes(self->orientation, &a, &b, &n);
    larmor_view_state_get_cursor(self->state, cur);
    LarmorRoi roi;
    larmor_roi_set(&roi, larmor_view_state_get_roi_tool(self->state), self->orientation, cur[n],
                   self->roi_anchor[0], self->roi_anchor[1], u, v);
    larmor_view_state_set_roi(self->state, &roi);
}

void larmor_slice_view_draw_roi(LarmorSliceView *self, double x0, double y0, double x1, double y1)
{
    LarmorRoiShape tool = larmor_view_state_get_roi_tool(self->state);
    if (!self->volume || tool == LARMOR_ROI_NONE || tool == LARMOR_ROI_LINE)
        return;
    if (!plane_voxel(self, x0, y0, &self->roi_anchor[0], &self->roi_anchor[1]))
        return;
    roi_to(self, x1, y1);
}

/* The plane point under (x, y), voxel centres at integers, clamped to the slice. */
static gboolean plane_point(LarmorSliceView *self, double x, double y, double *pu, double *pv)
{
    Layout l;
    if (!compute_layout(self, &l))
        return FALSE;
    *pu = CLAMP(x_to_u(&l, x) - 0.5, 0, l.pw - 1);
    *pv = CLAMP(y_to_v(&l, y) - 0.5, 0, l.ph - 1);
    return TRUE;
}

static void line_to(LarmorSliceView *self, double x, double y)
{
    double u, v;
    int64_t cur[3];
    if (!plane_point(self, x, y, &u, &v))
        return;
    int a, b, n;
    larmor_orientation_axes(self->orientation, &a, &b, &n);
    larmor_view_state_get_cursor(self->state, cur);
    LarmorLine line;
    larmor_line_set(&line, self->orientation, cur[n], self->line_anchor[0], self->line_anchor[1], u, v);
    larmor_view_state_set_line(self->state, &line);
}

void larmor_slice_view_draw_line(LarmorSliceView *self, double x0, double y0, double x1, double y1)
{
    if (!self->volume || !plane_point(self, x0, y0, &self->line_anchor[0], &self->line_anchor[1]))
        return;
    line_to(self, x1, y1);
}

gboolean larmor_slice_view_plane_to_widget(LarmorSliceView *self, double pu, double pv, double *x, double *y)
{
    Layout l;
    if (!compute_layout(self, &l))
        return FALSE;
    plane_to_widget(&l, pu, pv, x, y);
    return TRUE;
}

static void drag_begin(GtkGestureDrag *gesture, double x, double y, LarmorSliceView *self)
{
    guint button = gtk_gesture_single_get_current_button(GTK_GESTURE_SINGLE(gesture));
    GdkModifierType mods = gtk_event_controller_get_current_event_state(GTK_EVENT_CONTROLLER(gesture));
    gtk_widget_grab_focus(GTK_WIDGET(self));
    if (!self->volume) {
        self->drag = DRAG_NONE;
        return;
    }
    if (button == GDK_BUTTON_MIDDLE || (button == GDK_BUTTON_PRIMARY && (mods & GDK_CONTROL_MASK)))
        self->drag = DRAG_PAN;
    else if (button == GDK_BUTTON_SECONDARY || (button == GDK_BUTTON_PRIMARY && (mods & GDK_SHIFT_MASK)))
        self->drag = DRAG_WINDOW;
    else if (button == GDK_BUTTON_PRIMARY && larmor_view_state_get_roi_tool(self->state) == LARMOR_ROI_LINE &&
             plane_point(self, x, y, &self->line_anchor[0], &self->line_anchor[1]))
        self->drag = DRAG_LINE;
    else if (button == GDK_BUTTON_PRIMARY && larmor_view_state_get_roi_tool(self->state) != LARMOR_ROI_NONE &&
             plane_voxel(self, x, y, &self->roi_anchor[0], &self->roi_anchor[1]))
        self->drag = DRAG_ROI;
    else
        self->drag = DRAG_CURSOR;
    self->drag_x0 = x;
    self->drag_y0 = y;
    self->drag_window0 = larmor_view_state_get_window(self->state);
    self->drag_level0 = larmor_view_state_get_level(self->state);
    larmor_view_state_get_pan(self->state, self->orientation, &self->drag_pan0[0], &self->drag_pan0[1]);
    gtk_gesture_set_state(GTK_GESTURE(gesture), GTK_EVENT_SEQUENCE_CLAIMED);
    if (self->drag == DRAG_CURSOR)
        set_cursor_from(self, x, y);
    else if (self->drag == DRAG_ROI)
        roi_to(self, x, y);
    else if (self->drag == DRAG_LINE)
        line_to(self, x, y);
}

static void drag_update(GtkGestureDrag *gesture, double dx, double dy, LarmorSliceView *self)
{
    Layout l;
    switch (self->drag) {
    case DRAG_CURSOR:
        set_cursor_from(self, self->drag_x0 + dx, self->drag_y0 + dy);
        break;
    case DRAG_ROI:
        roi_to(self, self->drag_x0 + dx, self->drag_y0 + dy);
        break;
    case DRAG_LINE:
        line_to(self, self->drag_x0 + dx, self->drag_y0 + dy);
        break;
    case DRAG_PAN:
        if (compute_layout(self, &l))
            larmor_view_state_set_zoom_pan(self->state, self->orientation,
                                           larmor_view_state_get_zoom(self->state, self->orientation),
                                           self->drag_pan0[0] + dx / l.iw, self->drag_pan0[1] + dy / l.ih);
        break;
    case DRAG_WINDOW:
        /* Multiplicative window: the same drag works whatever the data's scale.
         * Dragging up lowers the level, i.e. brightens. */
        larmor_view_state_set_window_level(self->state, self->drag_window0 * exp(dx / 150.0),
                                           self->drag_level0 + dy * self->drag_window0 / 300.0);
        break;
    default: break;
    }
    self->hover_x = self->drag_x0 + dx;
    self->hover_y = self->drag_y0 + dy;
    emit_hover(self);
}

static void drag_end(GtkGestureDrag *gesture, double dx, double dy, LarmorSliceView *self)
{
    self->drag = DRAG_NONE;
}

static gboolean on_scroll(GtkEventControllerScroll *c, double dx, double dy, LarmorSliceView *self)
{
    if (!self->volume)
        return FALSE;
    GdkModifierType mods = gtk_event_controller_get_current_event_state(GTK_EVENT_CONTROLLER(c));
    if (mods & GDK_CONTROL_MASK)
        zoom_about(self, pow(1.15, -dy), self->hover_x, self->hover_y);
    else if (dy != 0)
        move_slice(self, dy < 0 ? 1 : -1);
    return TRUE;
}

static void on_motion(GtkEventControllerMotion *c, double x, double y, LarmorSliceView *self)
{
    self->hover_inside = TRUE;
    self->hover_x = x;
    self->hover_y = y;
    emit_hover(self);
}

static void on_leave(GtkEventControllerMotion *c, LarmorSliceView *self)
{
    self->hover_inside = FALSE;
    emit_hover(self);
}

/* Actions, so keys, menus and tests all go through one path. */
static void action_move(GtkWidget *widget, const char *name, GVariant *param)
{
    LarmorSliceView *self = LARMOR_SLICE_VIEW(widget);
    if (self->volume)
        move_slice(self, g_variant_get_int32(param));
}

/* [ and ]: the previous or next frame of a dynamic image (linked views follow). */
static void action_frame(GtkWidget *widget, const char *name, GVariant *param)
{
    LarmorSliceView *self = LARMOR_SLICE_VIEW(widget);
    if (!self->volume || !self->state)
        return;
    const int64_t n = larmor_volume_get_n_frames(self->volume);
    const int64_t t = CLAMP((int64_t)larmor_view_state_get_frame(self->state), 0, n - 1) + g_variant_get_int32(param);
    larmor_view_state_set_frame(self->state, (int)CLAMP(t, 0, n - 1));
}

static void action_end(GtkWidget *widget, const char *name, GVariant *param)
{
    LarmorSliceView *self = LARMOR_SLICE_VIEW(widget);
    if (!self->volume)
        return;
    int u, v, n;
    larmor_orientation_axes(self->orientation, &u, &v, &n);
    gboolean last = g_strcmp0(name, "slice.last") == 0;
    larmor_view_state_set_cursor_axis(self->state, n, last ? shown(self)->dims[n] - 1 : 0);
    emit_hover(self);
}

static void action_zoom(GtkWidget *widget, const char *name, GVariant *param)
{
    zoom_about(LARMOR_SLICE_VIEW(widget), g_variant_get_double(param), gtk_widget_get_width(widget) / 2.0,
               gtk_widget_get_height(widget) / 2.0);
}

static void action_reset(GtkWidget *widget, const char *name, GVariant *param)
{
    larmor_slice_view_reset(LARMOR_SLICE_VIEW(widget));
}

void larmor_slice_view_reset(LarmorSliceView *self)
{
    larmor_view_state_set_zoom_pan(self->state, self->orientation, 1, 0, 0);
    if (self->volume) {
        double w, l;
        larmor_volume_auto_window(self->volume, larmor_view_state_get_mode(self->state), &w, &l);
        larmor_view_state_set_window_level(self->state, w / MAX(self->gain, 1e-12),
                                           l / MAX(self->gain, 1e-12));
    }
}

/* --- object ------------------------------------------------------------ */

static void on_state_notify(LarmorViewState *state, GParamSpec *pspec, LarmorSliceView *self)
{
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void on_state_view_changed(LarmorViewState *state, int orientation, LarmorSliceView *self)
{
    if (orientation == (int)self->orientation)
        gtk_widget_queue_draw(GTK_WIDGET(self));
}

void larmor_slice_view_set_state(LarmorSliceView *self, LarmorViewState *state)
{
    g_return_if_fail(LARMOR_IS_VIEW_STATE(state));
    if (self->state == state)
        return;
    if (self->state) {
        g_clear_signal_handler(&self->state_notify_id, self->state);
        g_clear_signal_handler(&self->state_view_id, self->state);
        g_clear_signal_handler(&self->state_roi_id, self->state);
        g_clear_signal_handler(&self->state_line_id, self->state);
        g_object_unref(self->state);
    }
    self->state = g_object_ref(state);
    self->state_notify_id = g_signal_connect(state, "notify", G_CALLBACK(on_state_notify), self);
    self->state_view_id = g_signal_connect(state, "view-changed", G_CALLBACK(on_state_view_changed), self);
    self->state_roi_id = g_signal_connect_swapped(state, "roi-changed", G_CALLBACK(gtk_widget_queue_draw), self);
    self->state_line_id = g_signal_connect_swapped(state, "line-changed", G_CALLBACK(gtk_widget_queue_draw), self);
    invalidate(self);
}

LarmorViewState *larmor_slice_view_get_state(LarmorSliceView *self)
{
    return self->state;
}

void larmor_slice_view_set_volume(LarmorSliceView *self, LarmorVolume *volume)
{
    if (self->volume == volume)
        return;
    g_set_object(&self->volume, volume);
    invalidate(self);
}

LarmorVolume *larmor_slice_view_get_volume(LarmorSliceView *self)
{
    return self->volume;
}

void larmor_slice_view_set_orientation(LarmorSliceView *self, LarmorOrientation orientation)
{
    if (self->orientation == orientation)
        return;
    self->orientation = orientation;
    invalidate(self);
}

LarmorOrientation larmor_slice_view_get_orientation(LarmorSliceView *self)
{
    return self->orientation;
}

void larmor_slice_view_set_gain(LarmorSliceView *self, double gain)
{
    if (gain == self->gain)
        return;
    self->gain = gain;
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

void larmor_slice_view_set_title(LarmorSliceView *self, const char *title)
{
    g_free(self->title);
    self->title = g_strdup(title);
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

void larmor_slice_view_set_placeholder(LarmorSliceView *self, const char *text)
{
    g_free(self->placeholder);
    self->placeholder = g_strdup(text);
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

void larmor_slice_view_set_show_labels(LarmorSliceView *self, gboolean show)
{
    self->show_labels = show;
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

char *larmor_slice_view_get_slice_text(LarmorSliceView *self)
{
    if (!self->volume)
        return NULL;
    int u, v, n;
    larmor_orientation_axes(self->orientation, &u, &v, &n);
    int64_t cur[3];
    larmor_view_state_get_cursor(self->state, cur);
    return larmor_format_slice(n, (long long)cur[n], (long long)shown(self)->dims[n]);
}

double larmor_slice_view_get_last_draw_ms(LarmorSliceView *self)
{
    return self->last_draw_ms;
}

static void larmor_slice_view_measure(GtkWidget *widget, GtkOrientation orientation, int for_size,
                                      int *min, int *nat, int *min_base, int *nat_base)
{
    *min = 64;
    *nat = 256;
}

static void larmor_slice_view_dispose(GObject *object)
{
    LarmorSliceView *self = LARMOR_SLICE_VIEW(object);
    if (self->state) {
        g_clear_signal_handler(&self->state_notify_id, self->state);
        g_clear_signal_handler(&self->state_view_id, self->state);
        g_clear_signal_handler(&self->state_roi_id, self->state);
        g_clear_signal_handler(&self->state_line_id, self->state);
    }
    g_clear_object(&self->state);
    g_clear_object(&self->volume);
    g_clear_object(&self->overlay);
    G_OBJECT_CLASS(larmor_slice_view_parent_class)->dispose(object);
}

static void larmor_slice_view_finalize(GObject *object)
{
    LarmorSliceView *self = LARMOR_SLICE_VIEW(object);
    g_free(self->plane);
    g_free(self->rgba);
    g_free(self->title);
    g_free(self->placeholder);
    g_free(self->unit);
    g_free(self->overlay_unit);
    G_OBJECT_CLASS(larmor_slice_view_parent_class)->finalize(object);
}

static void larmor_slice_view_class_init(LarmorSliceViewClass *klass)
{
    GObjectClass *oc = G_OBJECT_CLASS(klass);
    GtkWidgetClass *wc = GTK_WIDGET_CLASS(klass);
    oc->dispose = larmor_slice_view_dispose;
    oc->finalize = larmor_slice_view_finalize;
    wc->snapshot = larmor_slice_view_snapshot;
    wc->measure = larmor_slice_view_measure;
    gtk_widget_class_set_css_name(wc, "sliceview");

    /* hover(inside, x, y, z): the voxel under the pointer. */
    signals[SIGNAL_HOVER] = g_signal_new("hover", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
                                         NULL, NULL, NULL, G_TYPE_NONE, 4, G_TYPE_BOOLEAN,
                                         G_TYPE_INT, G_TYPE_INT, G_TYPE_INT);

    gtk_widget_class_install_action(wc, "slice.move", "i", action_move);
    gtk_widget_class_install_action(wc, "slice.frame", "i", action_frame);
    gtk_widget_class_install_action(wc, "slice.first", NULL, action_end);
    gtk_widget_class_install_action(wc, "slice.last", NULL, action_end);
    gtk_widget_class_install_action(wc, "slice.zoom", "d", action_zoom);
    gtk_widget_class_install_action(wc, "slice.reset", NULL, action_reset);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_Up, 0, "slice.move", "i", 1);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_Right, 0, "slice.move", "i", 1);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_Down, 0, "slice.move", "i", -1);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_Left, 0, "slice.move", "i", -1);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_Page_Up, 0, "slice.move", "i", 5);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_Page_Down, 0, "slice.move", "i", -5);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_Home, 0, "slice.first", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_End, 0, "slice.last", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_plus, 0, "slice.zoom", "d", 1.25);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_equal, 0, "slice.zoom", "d", 1.25);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_KP_Add, 0, "slice.zoom", "d", 1.25);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_minus, 0, "slice.zoom", "d", 0.8);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_KP_Subtract, 0, "slice.zoom", "d", 0.8);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_r, 0, "slice.reset", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_bracketleft, 0, "slice.frame", "i", -1);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_bracketright, 0, "slice.frame", "i", 1);
}

static void larmor_slice_view_init(LarmorSliceView *self)
{
    GtkWidget *w = GTK_WIDGET(self);
    self->gain = 1;
    self->show_labels = TRUE;
    self->plane_index = -1;
    gtk_widget_set_focusable(w, TRUE);
    gtk_widget_set_hexpand(w, TRUE);
    gtk_widget_set_vexpand(w, TRUE);
    gtk_widget_set_overflow(w, GTK_OVERFLOW_HIDDEN);
    gtk_widget_set_cursor_from_name(w, "crosshair");

    LarmorViewState *state = larmor_view_state_new();
    larmor_slice_view_set_state(self, state);
    g_object_unref(state);

    static const guint buttons[] = { GDK_BUTTON_PRIMARY, GDK_BUTTON_MIDDLE, GDK_BUTTON_SECONDARY };
    for (guint i = 0; i < G_N_ELEMENTS(buttons); i++) {
        GtkGesture *drag = gtk_gesture_drag_new();
        gtk_gesture_single_set_button(GTK_GESTURE_SINGLE(drag), buttons[i]);
        g_signal_connect(drag, "drag-begin", G_CALLBACK(drag_begin), self);
        g_signal_connect(drag, "drag-update", G_CALLBACK(drag_update), self);
        g_signal_connect(drag, "drag-end", G_CALLBACK(drag_end), self);
        gtk_widget_add_controller(w, GTK_EVENT_CONTROLLER(drag));
    }
    GtkEventController *scroll = gtk_event_controller_scroll_new(
        GTK_EVENT_CONTROLLER_SCROLL_VERTICAL | GTK_EVENT_CONTROLLER_SCROLL_DISCRETE);
    g_signal_connect(scroll, "scroll", G_CALLBACK(on_scroll), self);
    gtk_widget_add_controller(w, scroll);
    GtkEventController *motion = gtk_event_controller_motion_new();
    g_signal_connect(motion, "motion", G_CALLBACK(on_motion), self);
    g_signal_connect(motion, "leave", G_CALLBACK(on_leave), self);
    gtk_widget_add_controller(w, motion);
}

GtkWidget *larmor_slice_view_new(LarmorOrientation orientation)
{
    LarmorSliceView *self = g_object_new(LARMOR_TYPE_SLICE_VIEW, NULL);
    self->orientation = orientation;
    return GTK_WIDGET(self);
}
