/* The runs list: every reconstruction with its method, variant, lambda,
 * iterations, times, GFLOPS, PSNR and percent error, sortable by column,
 * with a "Compare" check per row. */
#ifndef LARMOR_RUNS_VIEW_H
#define LARMOR_RUNS_VIEW_H

#include <gtk/gtk.h>

#include "larmor-run.h"

G_BEGIN_DECLS

#define LARMOR_TYPE_RUNS_VIEW (larmor_runs_view_get_type())
G_DECLARE_FINAL_TYPE(LarmorRunsView, larmor_runs_view, LARMOR, RUNS_VIEW, GtkWidget)

GtkWidget *larmor_runs_view_new(void);
/* A GListModel of LarmorRun. */
void larmor_runs_view_set_model(LarmorRunsView *self, GListModel *runs);
LarmorRun *larmor_runs_view_get_selected(LarmorRunsView *self);
void larmor_runs_view_select(LarmorRunsView *self, LarmorRun *run);

/* The table as CSV (the same columns; numbers unformatted). */
char *larmor_runs_to_csv(GListModel *runs);
/* The text a run shows in the column of that title ("Q from", "Data",
 * "Gpairs/s", ...), NULL for no such column; and the column's tooltip. */
char *larmor_runs_cell_text(LarmorRun *run, const char *title);
const char *larmor_runs_column_tooltip(const char *title);

G_END_DECLS

#endif
