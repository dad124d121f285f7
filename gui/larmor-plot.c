#include "larmor-plot.h"

#include <math.h>

typedef struct {
    char *label;
    double *x, *y;
    char **point_labels;
    int n;
    LarmorPlotStyle style;
    int color;
} Series;

struct _LarmorPlot {
    GtkWidget parent_instance;
    GPtrArray *series;
    char *xlabel, *ylabel, *title, *placeholder;
    gboolean xlog, ylog;
    gboolean have_highlight;
    double hx, hy;
    char *htext;
};

G_DEFINE_FINAL_TYPE(LarmorPlot, larmor_plot, GTK_TYPE_WIDGET)

void larmor_palette_color(int index, GdkRGBA *out)
{
    /* Tableau 10: distinguishable, and readable on dark and light backgrounds. */
    static const char *hex[] = { "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
                                 "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#bab0ac" };
    gdk_rgba_parse(out, hex[((index % 10) + 10) % 10]);
}

static void series_free(gpointer p)
{
    Series *s = p;
    g_free(s->label);
    g_free(s->x);
    g_free(s->y);
    g_strfreev(s->point_labels);
    g_free(s);
}

GtkWidget *larmor_plot_new(void)
{
    return g_object_new(LARMOR_TYPE_PLOT, NULL);
}

void larmor_plot_clear(LarmorPlot *self)
{
    g_ptr_array_set_size(self->series, 0);
    self->have_highlight = FALSE;
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

void larmor_plot_add_series(LarmorPlot *self, const char *label, const double *x, const double *y,
                            int n, LarmorPlotStyle style, int color_index)
{
    Series *s = g_new0(Series, 1);
    s->label = g_strdup(label);
    s->n = MAX(n, 0);
    s->x = g_memdup2(x, sizeof(double) * (gsize)s->n);
    s->y = g_memdup2(y, sizeof(double) * (gsize)s->n);
    s->style = style ? style : LARMOR_PLOT_LINES;
    s->color = color_index;
    g_ptr_array_add(self->series, s);
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

void larmor_plot_set_point_labels(LarmorPlot *self, const char *const *labels, int n)
{
    if (self->series->len == 0)
        return;
    Series *s = g_ptr_array_index(self->series, self->series->len - 1);
    g_strfreev(s->point_labels);
    s->point_labels = g_new0(char *, (gsize)s->n + 1);
    for (int i = 0; i < s->n && i < n; i++)
        s->point_labels[i] = g_strdup(labels[i] ? labels[i] : "");
    for (int i = n; i < s->n; i++)
        s->point_labels[i] = g_strdup("");
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

void larmor_plot_set_axes(LarmorPlot *self, const char *xlabel, gboolean xlog, const char *ylabel,
                          gboolean ylog)
{
    g_free(self->xlabel);
    g_free(self->ylabel);
    self->xlabel = g_strdup(xlabel);
    self->ylabel = g_strdup(ylabel);
    self->xlog = xlog;
    self->ylog = ylog;
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

void larmor_plot_set_title(LarmorPlot *self, const char *title)
{
    g_free(self->title);
    self->title = g_strdup(title);
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

void larmor_plot_set_highlight(LarmorPlot *self, double x, double y, const char *text)
{
    self->have_highlight = TRUE;
    self->hx = x;
    self->hy = y;
    g_free(self->htext);
    self->htext = g_strdup(text);
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

void larmor_plot_clear_highlight(LarmorPlot *self)
{
    self->have_highlight = FALSE;
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

void larmor_plot_set_placeholder(LarmorPlot *self, const char *text)
{
    g_free(self->placeholder);
    self->placeholder = g_strdup(text);
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

int larmor_plot_get_series_count(LarmorPlot *self)
{
    return (int)self->series->len;
}

/* --- drawing ----------------------------------------------------------- */

static gboolean usable(double v, gboolean log)
{
    return isfinite(v) && (!log || v > 0);
}

static double tr(double v, gboolean log)
{
    return log ? log10(v) : v;
}

typedef struct {
    double x0, x1, y0, y1;           /* data range (transformed) */
    double px, py, pw, ph;           /* plot area in pixels */
    gboolean xlog, ylog;
} Frame;

static double fx(const Frame *f, double x)
{
    return f->px + (tr(x, f->xlog) - f->x0) / (f->x1 - f->x0) * f->pw;
}

static double fy(const Frame *f, double y)
{
    return f->py + f->ph - (tr(y, f->ylog) - f->y0) / (f->y1 - f->y0) * f->ph;
}

static double nice_step(double span, int target)
{
    double raw = span / target, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
}

static void text_at(cairo_t *cr, PangoLayout *layout, const char *text, double x, double y,
                    double xalign, double yalign)
{
    int tw, th;
    pango_layout_set_markup(layout, text, -1);
    pango_layout_get_pixel_size(layout, &tw, &th);
    cairo_move_to(cr, x - xalign * tw, y - yalign * th);
    pango_cairo_show_layout(cr, layout);
    /* show_layout leaves the move_to's current point: an arc or line_to
     * after it would draw a segment from the text. */
    cairo_new_path(cr);
}

/* 1e-3 as "10<sup>−3</sup>" on log axes; %g otherwise. */
static char *tick_label(double v, gboolean log)
{
    if (log) {
        int e = (int)lrint(v);
        if (fabs(v - e) < 1e-6) {
            if (e == 0) return g_strdup("1");
            if (e == 1) return g_strdup("10");
            return g_strdup_printf("10<sup>%s%d</sup>", e < 0 ? "−" : "", abs(e));
        }
        return g_strdup_printf("%.3g", pow(10, v));
    }
    if (fabs(v) < 1e-12)
        v = 0;
    return g_strdup_printf("%.4g", v);
}

static void draw(LarmorPlot *self, cairo_t *cr, double W, double H)
{
    GdkRGBA fg;
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    gtk_style_context_get_color(gtk_widget_get_style_context(GTK_WIDGET(self)), &fg);
    G_GNUC_END_IGNORE_DEPRECATIONS
    PangoLayout *layout = gtk_widget_create_pango_layout(GTK_WIDGET(self), NULL);
    PangoFontDescription *small = pango_font_description_copy(
        pango_context_get_font_description(pango_layout_get_context(layout)));
    pango_font_description_set_size(small, (int)(pango_font_description_get_size(small) * 0.85));
    pango_layout_set_font_description(layout, small);

    Frame f = { .xlog = self->xlog, .ylog = self->ylog };
    gboolean any = FALSE;
    f.x0 = f.y0 = INFINITY;
    f.x1 = f.y1 = -INFINITY;
    for (guint s = 0; s < self->series->len; s++) {
        Series *se = g_ptr_array_index(self->series, s);
        for (int i = 0; i < se->n; i++) {
            if (!usable(se->x[i], f.xlog) || !usable(se->y[i], f.ylog))
                continue;
            double x = tr(se->x[i], f.xlog), y = tr(se->y[i], f.ylog);
            f.x0 = MIN(f.x0, x), f.x1 = MAX(f.x1, x);
            f.y0 = MIN(f.y0, y), f.y1 = MAX(f.y1, y);
            any = TRUE;
        }
    }

    double top = self->title ? 26 : 10;
    f.px = 62;
    f.py = top;
    f.pw = W - f.px - 14;
    f.ph = H - top - 44;
    if (self->title) {
        cairo_set_source_rgba(cr, fg.red, fg.green, fg.blue, 0.9);
        char *t = g_markup_printf_escaped("<b>%s</b>", self->title);
        text_at(cr, layout, t, f.px, 5, 0, 0);
        g_free(t);
    }
    if (!any || f.pw < 40 || f.ph < 30) {
        cairo_set_source_rgba(cr, fg.red, fg.green, fg.blue, 0.55);
        char *t = g_markup_escape_text(self->placeholder ? self->placeholder : "No data", -1);
        text_at(cr, layout, t, W / 2, H / 2, 0.5, 0.5);
        g_free(t);
        goto out;
    }
    /* Pad the range; log axes snap to whole decades when they span several. */
    if (f.x1 - f.x0 < 1e-12) f.x0 -= 0.5, f.x1 += 0.5;
    if (f.y1 - f.y0 < 1e-12) f.y0 -= f.ylog ? 0.5 : MAX(fabs(f.y0) * 0.1, 0.5), f.y1 += f.ylog ? 0.5 : MAX(fabs(f.y1) * 0.1, 0.5);
    if (f.ylog && f.y1 - f.y0 > 1.5) {
        f.y0 = floor(f.y0);
        f.y1 = ceil(f.y1);
    } else {
        double pad = (f.y1 - f.y0) * 0.08;
        f.y0 -= pad, f.y1 += pad;
    }
    if (!f.xlog) {
        double pad = (f.x1 - f.x0) * 0.03;
        f.x0 -= pad, f.x1 += pad;
    } else {
        double pad = (f.x1 - f.x0) * 0.05;
        f.x0 -= pad, f.x1 += pad;
    }

    /* Grid and ticks */
    cairo_set_line_width(cr, 1);
    for (int axis = 0; axis < 2; axis++) {
        double lo = axis ? f.y0 : f.x0, hi = axis ? f.y1 : f.x1;
        gboolean log = axis ? f.ylog : f.xlog;
        /* as many ticks as their labels leave room for: one per ~45 px
         * across, ~28 px up (a narrow plot would run its labels together) */
        const int want = CLAMP((int)((axis ? f.ph : f.pw) / (axis ? 28.0 : 45.0)), 2, axis ? 5 : 6);
        double step = log && hi - lo > 2 ? MAX(1, round(nice_step(hi - lo, want))) : nice_step(hi - lo, want);
        for (double t = ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
            double p = axis ? f.py + f.ph - (t - lo) / (hi - lo) * f.ph : f.px + (t - lo) / (hi - lo) * f.pw;
            cairo_set_source_rgba(cr, fg.red, fg.green, fg.blue, 0.12);
            if (axis) {
                cairo_move_to(cr, f.px, floor(p) + 0.5);
                cairo_line_to(cr, f.px + f.pw, floor(p) + 0.5);
            } else {
                cairo_move_to(cr, floor(p) + 0.5, f.py);
                cairo_line_to(cr, floor(p) + 0.5, f.py + f.ph);
            }
            cairo_stroke(cr);
            cairo_set_source_rgba(cr, fg.red, fg.green, fg.blue, 0.75);
            char *lab = tick_label(t, log);
            if (axis)
                text_at(cr, layout, lab, f.px - 5, p, 1, 0.5);
            else
                text_at(cr, layout, lab, p, f.py + f.ph + 4, 0.5, 0);
            g_free(lab);
        }
    }
    cairo_set_source_rgba(cr, fg.red, fg.green, fg.blue, 0.45);
    cairo_rectangle(cr, f.px + 0.5, f.py + 0.5, f.pw - 1, f.ph - 1);
    cairo_stroke(cr);

    cairo_set_source_rgba(cr, fg.red, fg.green, fg.blue, 0.85);
    if (self->xlabel) {
        char *t = g_markup_escape_text(self->xlabel, -1);
        text_at(cr, layout, t, f.px + f.pw / 2, H - 3, 0.5, 1);
        g_free(t);
    }
    if (self->ylabel) {
        char *t = g_markup_escape_text(self->ylabel, -1);
        cairo_save(cr);
        cairo_translate(cr, 3, f.py + f.ph / 2);
        cairo_rotate(cr, -G_PI / 2);
        text_at(cr, layout, t, 0, 0, 0.5, 0);
        cairo_restore(cr);
        g_free(t);
    }

    /* Series */
    cairo_save(cr);
    cairo_rectangle(cr, f.px, f.py, f.pw, f.ph);
    cairo_clip(cr);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    for (guint s = 0; s < self->series->len; s++) {
        Series *se = g_ptr_array_index(self->series, s);
        GdkRGBA c;
        larmor_palette_color(se->color, &c);
        gdk_cairo_set_source_rgba(cr, &c);
        /* Each series starts a path of its own: nothing joins it to the
         * previous series, its labels or the axis text. */
        cairo_new_path(cr);
        if (se->style & LARMOR_PLOT_LINES) {
            cairo_set_line_width(cr, 2);
            gboolean pen = FALSE;
            for (int i = 0; i < se->n; i++) {
                if (!usable(se->x[i], f.xlog) || !usable(se->y[i], f.ylog)) {
                    pen = FALSE;
                    continue;
                }
                if (pen)
                    cairo_line_to(cr, fx(&f, se->x[i]), fy(&f, se->y[i]));
                else
                    cairo_move_to(cr, fx(&f, se->x[i]), fy(&f, se->y[i]));
                pen = TRUE;
            }
            cairo_stroke(cr);
        }
        if (se->style & LARMOR_PLOT_MARKERS) {
            gdk_cairo_set_source_rgba(cr, &c);
            for (int i = 0; i < se->n; i++) {
                if (!usable(se->x[i], f.xlog) || !usable(se->y[i], f.ylog))
                    continue;
                cairo_new_sub_path(cr);
                cairo_arc(cr, fx(&f, se->x[i]), fy(&f, se->y[i]), 3.5, 0, 2 * G_PI);
                cairo_fill(cr);
            }
        }
        if (se->point_labels) {
            cairo_set_source_rgba(cr, fg.red, fg.green, fg.blue, 0.7);
            for (int i = 0; i < se->n; i++) {
                if (!usable(se->x[i], f.xlog) || !usable(se->y[i], f.ylog) || !se->point_labels[i][0])
                    continue;
                char *t = g_markup_escape_text(se->point_labels[i], -1);
                text_at(cr, layout, t, fx(&f, se->x[i]) + 6, fy(&f, se->y[i]) - 2, 0, 1);
                g_free(t);
            }
        }
    }
    if (self->have_highlight && usable(self->hx, f.xlog) && usable(self->hy, f.ylog)) {
        double x = fx(&f, self->hx), y = fy(&f, self->hy);
        cairo_set_source_rgba(cr, 1.0, 0.84, 0.2, 1);
        cairo_set_line_width(cr, 2.5);
        cairo_new_path(cr);
        cairo_arc(cr, x, y, 8, 0, 2 * G_PI);
        cairo_stroke(cr);
        if (self->htext) {
            char *t = g_markup_printf_escaped("<b>%s</b>", self->htext);
            gboolean right = x < f.px + f.pw * 0.6;
            text_at(cr, layout, t, right ? x + 12 : x - 12, y + 10, right ? 0 : 1, 0);
            g_free(t);
        }
    }
    cairo_restore(cr);

    /* Legend, top right inside the frame */
    double ly = f.py + 8;
    for (guint s = 0; s < self->series->len; s++) {
        Series *se = g_ptr_array_index(self->series, s);
        if (!se->label || !se->label[0])
            continue;
        int tw, th;
        char *t = g_markup_escape_text(se->label, -1);
        pango_layout_set_markup(layout, t, -1);
        pango_layout_get_pixel_size(layout, &tw, &th);
        double lx = f.px + f.pw - tw - 30;
        GdkRGBA c;
        larmor_palette_color(se->color, &c);
        gdk_cairo_set_source_rgba(cr, &c);
        cairo_rectangle(cr, lx, ly + th / 2.0 - 1.5, 16, 3);
        cairo_fill(cr);
        cairo_set_source_rgba(cr, fg.red, fg.green, fg.blue, 0.9);
        text_at(cr, layout, t, lx + 22, ly, 0, 0);
        g_free(t);
        ly += th + 2;
    }
out:
    pango_font_description_free(small);
    g_object_unref(layout);
}

static void larmor_plot_snapshot(GtkWidget *widget, GtkSnapshot *snapshot)
{
    double W = gtk_widget_get_width(widget), H = gtk_widget_get_height(widget);
    if (W <= 0 || H <= 0)
        return;
    cairo_t *cr = gtk_snapshot_append_cairo(snapshot, &GRAPHENE_RECT_INIT(0, 0, (float)W, (float)H));
    draw(LARMOR_PLOT(widget), cr, W, H);
    cairo_destroy(cr);
}

static void larmor_plot_measure(GtkWidget *widget, GtkOrientation orientation, int for_size,
                                int *min, int *nat, int *min_base, int *nat_base)
{
    *min = orientation == GTK_ORIENTATION_HORIZONTAL ? 160 : 120;
    *nat = orientation == GTK_ORIENTATION_HORIZONTAL ? 400 : 240;
}

static void larmor_plot_finalize(GObject *object)
{
    LarmorPlot *self = LARMOR_PLOT(object);
    g_ptr_array_unref(self->series);
    g_free(self->xlabel);
    g_free(self->ylabel);
    g_free(self->title);
    g_free(self->placeholder);
    g_free(self->htext);
    G_OBJECT_CLASS(larmor_plot_parent_class)->finalize(object);
}

static void larmor_plot_class_init(LarmorPlotClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = larmor_plot_finalize;
    GTK_WIDGET_CLASS(klass)->snapshot = larmor_plot_snapshot;
    GTK_WIDGET_CLASS(klass)->measure = larmor_plot_measure;
    gtk_widget_class_set_css_name(GTK_WIDGET_CLASS(klass), "plot");
}

static void larmor_plot_init(LarmorPlot *self)
{
    self->series = g_ptr_array_new_with_free_func(series_free);
    gtk_widget_set_hexpand(GTK_WIDGET(self), TRUE);
    gtk_widget_set_vexpand(GTK_WIDGET(self), TRUE);
}
