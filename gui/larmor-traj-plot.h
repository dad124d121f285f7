/* The k-space trajectory as three projections (kx-ky, kx-kz, ky-kz), each
 * sample coloured by acquisition order; cairo, cached per size. */
#ifndef LARMOR_TRAJ_PLOT_H
#define LARMOR_TRAJ_PLOT_H

#include <gtk/gtk.h>

#include "larmor.h"

G_BEGIN_DECLS

#define LARMOR_TYPE_TRAJ_PLOT (larmor_traj_plot_get_type())
G_DECLARE_FINAL_TYPE(LarmorTrajPlot, larmor_traj_plot, LARMOR, TRAJ_PLOT, GtkWidget)

GtkWidget *larmor_traj_plot_new(void);
/* Copies (a subsample of) the samples; NULL clears. matrix: the image
 * matrix, whose k-space extent (n/2 per axis) is drawn as a frame. */
void larmor_traj_plot_set_traj(LarmorTrajPlot *self, const lm_traj *traj, const int64_t matrix[3]);

G_END_DECLS

#endif
