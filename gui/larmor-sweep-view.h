/* The lambda sweep page: percent error against lambda (with a truth) or
 * the L-curve ||W rho|| against ||F rho - d||, with the best point marked
 * (least error; largest curvature of the L-curve on log-log axes). */
#ifndef LARMOR_SWEEP_VIEW_H
#define LARMOR_SWEEP_VIEW_H

#include <gtk/gtk.h>

#include "larmor-plot.h"
#include "larmor-run.h"

G_BEGIN_DECLS

#define LARMOR_TYPE_SWEEP_VIEW (larmor_sweep_view_get_type())
G_DECLARE_FINAL_TYPE(LarmorSweepView, larmor_sweep_view, LARMOR, SWEEP_VIEW, GtkWidget)

GtkWidget *larmor_sweep_view_new(void);
/* Takes a reference to the array; returns the index of the best run (-1). */
int larmor_sweep_view_set_runs(LarmorSweepView *self, GPtrArray *runs);
LarmorRun *larmor_sweep_view_get_best(LarmorSweepView *self);
LarmorPlot *larmor_sweep_view_get_plot(LarmorSweepView *self);

/* Index of the L-curve corner: largest Menger curvature of consecutive
 * points in log-log coordinates; -1 with fewer than three usable points. */
int larmor_lcurve_corner(const double *residual, const double *reg, int n);

G_END_DECLS

#endif
