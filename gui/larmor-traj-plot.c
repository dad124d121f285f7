#include "larmor-traj-plot.h"

#include <math.h>

#include "larmor-colormap.h"

/* More points than this add nothing visible and slow cairo down. */
#define MAX_POINTS 40000

struct _LarmorTrajPlot {
    GtkWidget parent_instance;
    float *k;            /* n x 3 */
    int n;
    int ndim;
    double kmax[3];
    cairo_surface_t *cache;
    int cache_w, cache_h, cache_scale;
};

G_DEFINE_FINAL_TYPE(LarmorTrajPlot, larmor_traj_plot, GTK_TYPE_WIDGET)

GtkWidget *larmor_traj_plot_new(void)
{
    return g_object_new(LARMOR_TYPE_TRAJ_PLOT, NULL);
}

static void drop_cache(LarmorTrajPlot *self)
{
    g_clear_pointer(&self->cache, cairo_surface_destroy);
}

void larmor_traj_plot_set_traj(LarmorTrajPlot *self, const lm_traj *traj, const int64_t matrix[3])
{
    g_clear_pointer(&self->k, g_free);
    self->n = 0;
    if (traj && traj->m > 0) {
        int64_t stride = (traj->m + MAX_POINTS - 1) / MAX_POINTS;
        self->n = (int)((traj->m + stride - 1) / stride);
        self->k = g_new(float, (gsize)self->n * 3);
        for (int i = 0; i < self->n; i++)
            for (int a = 0; a < 3; a++)
                self->k[3 * i + a] = traj->k[3 * (i * stride) + a];
        self->ndim = traj->ndim;
        double ext[3];
        lm_traj_extent(traj, ext);
        for (int a = 0; a < 3; a++) {
            double m = matrix ? matrix[a] / 2.0 : 0;
            self->kmax[a] = MAX(MAX(ext[a], m), 0.5);
        }
    }
    drop_cache(self);
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void draw_panel(LarmorTrajPlot *self, cairo_t *cr, PangoLayout *layout, const GdkRGBA *fg,
                       double x, double y, double size, int a, int b, const char *name)
{
    const uint32_t *lut = larmor_colormap_lut(LARMOR_COLORMAP_VIRIDIS);
    double ka = self->kmax[a], kb = self->kmax[b], kk = MAX(ka, kb);
    double half = size / 2 - 4, cx = x + size / 2, cy = y + size / 2;
    /* The matrix's k-space box and the axes through the centre. */
    cairo_set_source_rgba(cr, fg->red, fg->green, fg->blue, 0.25);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, cx - half * ka / kk + 0.5, cy - half * kb / kk + 0.5, 2 * half * ka / kk - 1,
                    2 * half * kb / kk - 1);
    cairo_move_to(cr, cx - half, floor(cy) + 0.5);
    cairo_line_to(cr, cx + half, floor(cy) + 0.5);
    cairo_move_to(cr, floor(cx) + 0.5, cy - half);
    cairo_line_to(cr, floor(cx) + 0.5, cy + half);
    cairo_stroke(cr);

    double dot = size > 220 ? 1.6 : 1.2;
    for (int i = 0; i < self->n; i++) {
        uint32_t c = lut[(int)((double)i / MAX(self->n - 1, 1) * 255)];
        cairo_set_source_rgba(cr, larmor_pixel_r(c) / 255.0, larmor_pixel_g(c) / 255.0,
                              larmor_pixel_b(c) / 255.0, 0.55);
        double px = cx + self->k[3 * i + a] / kk * half, py = cy - self->k[3 * i + b] / kk * half;
        cairo_rectangle(cr, px - dot / 2, py - dot / 2, dot, dot);
        cairo_fill(cr);
    }
    cairo_set_source_rgba(cr, fg->red, fg->green, fg->blue, 0.85);
    pango_layout_set_markup(layout, name, -1);
    cairo_move_to(cr, x + 4, y + 2);
    pango_cairo_show_layout(cr, layout);
}

static void render(LarmorTrajPlot *self, cairo_t *cr, double W, double H)
{
    GdkRGBA fg;
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    gtk_style_context_get_color(gtk_widget_get_style_context(GTK_WIDGET(self)), &fg);
    G_GNUC_END_IGNORE_DEPRECATIONS
    PangoLayout *layout = gtk_widget_create_pango_layout(GTK_WIDGET(self), NULL);
    if (self->n == 0) {
        int tw, th;
        pango_layout_set_text(layout, "No trajectory", -1);
        pango_layout_get_pixel_size(layout, &tw, &th);
        cairo_set_source_rgba(cr, fg.red, fg.green, fg.blue, 0.5);
        cairo_move_to(cr, (W - tw) / 2, (H - th) / 2);
        pango_cairo_show_layout(cr, layout);
        g_object_unref(layout);
        return;
    }
    static const int pairs[3][2] = { { 0, 1 }, { 0, 2 }, { 1, 2 } };
    static const char *names[3] = { "k<sub>x</sub>–k<sub>y</sub>", "k<sub>x</sub>–k<sub>z</sub>",
                                    "k<sub>y</sub>–k<sub>z</sub>" };
    int panels = self->ndim == 2 ? 1 : 3;
    /* Row of three when wide, column when tall, 2x2 otherwise. */
    int cols = panels == 1 ? 1 : W >= 2.2 * H ? 3 : H >= 2.2 * W ? 1 : 2;
    int rows = (panels + cols - 1) / cols;
    double size = MIN(W / cols, H / rows);
    double x0 = (W - size * cols) / 2, y0 = (H - size * rows) / 2;
    for (int p = 0; p < panels; p++)
        draw_panel(self, cr, layout, &fg, x0 + (p % cols) * size, y0 + (p / cols) * size, size,
                   pairs[p][0], pairs[p][1], names[p]);
    g_object_unref(layout);
}

static void larmor_traj_plot_snapshot(GtkWidget *widget, GtkSnapshot *snapshot)
{
    LarmorTrajPlot *self = LARMOR_TRAJ_PLOT(widget);
    int W = gtk_widget_get_width(widget), H = gtk_widget_get_height(widget);
    int s = gtk_widget_get_scale_factor(widget);
    if (W <= 0 || H <= 0)
        return;
    if (!self->cache || self->cache_w != W || self->cache_h != H || self->cache_scale != s) {
        drop_cache(self);
        self->cache = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, W * s, H * s);
        cairo_surface_set_device_scale(self->cache, s, s);
        cairo_t *cr = cairo_create(self->cache);
        render(self, cr, W, H);
        cairo_destroy(cr);
        self->cache_w = W, self->cache_h = H, self->cache_scale = s;
    }
    cairo_t *cr = gtk_snapshot_append_cairo(snapshot, &GRAPHENE_RECT_INIT(0, 0, (float)W, (float)H));
    cairo_set_source_surface(cr, self->cache, 0, 0);
    cairo_paint(cr);
    cairo_destroy(cr);
}

static void larmor_traj_plot_size_allocate(GtkWidget *widget, int w, int h, int baseline)
{
    drop_cache(LARMOR_TRAJ_PLOT(widget));
}

static void larmor_traj_plot_measure(GtkWidget *widget, GtkOrientation orientation, int for_size,
                                     int *min, int *nat, int *min_base, int *nat_base)
{
    *min = 90;
    *nat = 270;
}

static void larmor_traj_plot_finalize(GObject *object)
{
    LarmorTrajPlot *self = LARMOR_TRAJ_PLOT(object);
    g_free(self->k);
    drop_cache(self);
    G_OBJECT_CLASS(larmor_traj_plot_parent_class)->finalize(object);
}

static void larmor_traj_plot_class_init(LarmorTrajPlotClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = larmor_traj_plot_finalize;
    GTK_WIDGET_CLASS(klass)->snapshot = larmor_traj_plot_snapshot;
    GTK_WIDGET_CLASS(klass)->measure = larmor_traj_plot_measure;
    GTK_WIDGET_CLASS(klass)->size_allocate = larmor_traj_plot_size_allocate;
    gtk_widget_class_set_css_name(GTK_WIDGET_CLASS(klass), "trajplot");
}

static void larmor_traj_plot_init(LarmorTrajPlot *self)
{
}
