/* A small x-y plot drawn with cairo: lines and/or markers per series,
 * linear or log axes, one highlighted point (the best lambda) and a legend.
 * Used for CG convergence (residual vs iteration) and the lambda sweep. */
#ifndef LARMOR_PLOT_H
#define LARMOR_PLOT_H

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define LARMOR_TYPE_PLOT (larmor_plot_get_type())
G_DECLARE_FINAL_TYPE(LarmorPlot, larmor_plot, LARMOR, PLOT, GtkWidget)

typedef enum {
    LARMOR_PLOT_LINES = 1 << 0,
    LARMOR_PLOT_MARKERS = 1 << 1,
} LarmorPlotStyle;

GtkWidget *larmor_plot_new(void);
void larmor_plot_clear(LarmorPlot *self);
/* Copies the data; points with non-finite (or, on log axes, non-positive)
 * coordinates are skipped. color_index picks from the shared palette. */
void larmor_plot_add_series(LarmorPlot *self, const char *label, const double *x, const double *y,
                            int n, LarmorPlotStyle style, int color_index);
/* Optional text per point of the last series (drawn next to markers). */
void larmor_plot_set_point_labels(LarmorPlot *self, const char *const *labels, int n);
void larmor_plot_set_axes(LarmorPlot *self, const char *xlabel, gboolean xlog, const char *ylabel,
                          gboolean ylog);
void larmor_plot_set_title(LarmorPlot *self, const char *title);
void larmor_plot_set_highlight(LarmorPlot *self, double x, double y, const char *text);
void larmor_plot_clear_highlight(LarmorPlot *self);
void larmor_plot_set_placeholder(LarmorPlot *self, const char *text);
int larmor_plot_get_series_count(LarmorPlot *self);

/* The shared palette (also used for run colour swatches). */
void larmor_palette_color(int index, GdkRGBA *out);

G_END_DECLS

#endif
