/* The coils page: for one run of multi-coil data, each channel's image,
 * each sensitivity map (magnitude or phase; the run's own maps when it
 * estimated or compressed them, else the data set's), the coil-combined
 * image and the noise covariance (|cov| with a colour bar) when the run
 * measured one. Thumbnails of one axial slice (the current slice of the
 * viewer's linked views) with the coil number on each; a click shows that
 * one large in a slice view with its own window/level. */
#ifndef LARMOR_COILS_VIEW_H
#define LARMOR_COILS_VIEW_H

#include <gtk/gtk.h>

#include "larmor-coil-maps.h"
#include "larmor-run.h"
#include "larmor-slice-view.h"
#include "larmor-view-state.h"

G_BEGIN_DECLS

typedef enum {
    LARMOR_COILS_IMAGES = 0, /* per-channel images */
    LARMOR_COILS_MAPS,       /* sensitivity maps */
    LARMOR_COILS_COMBINED,   /* the run's image (one thumbnail) */
} LarmorCoilsKind;

#define LARMOR_TYPE_COILS_VIEW (larmor_coils_view_get_type())
G_DECLARE_FINAL_TYPE(LarmorCoilsView, larmor_coils_view, LARMOR, COILS_VIEW, GtkWidget)

GtkWidget *larmor_coils_view_new(void);
/* The viewer's state: its cursor's z is the slice shown here. */
void larmor_coils_view_set_linked_state(LarmorCoilsView *self, LarmorViewState *state);
/* The data set's maps (NULL: none) and channel count: shown when the run
 * has no maps of its own. */
void larmor_coils_view_set_data_maps(LarmorCoilsView *self, LarmorCoilMaps *maps, int ncoils);
void larmor_coils_view_set_run(LarmorCoilsView *self, LarmorRun *run);
LarmorRun *larmor_coils_view_get_run(LarmorCoilsView *self);

/* Maps in magnitude or phase (LARMOR_MODE_MAGNITUDE / _PHASE). */
void larmor_coils_view_set_map_mode(LarmorCoilsView *self, LarmorMode mode);
LarmorMode larmor_coils_view_get_map_mode(LarmorCoilsView *self);
int larmor_coils_view_get_slice(LarmorCoilsView *self);

/* Thumbnails of a kind, and the i-th one's picture (for tests). */
int larmor_coils_view_get_count(LarmorCoilsView *self, LarmorCoilsKind kind);
GtkWidget *larmor_coils_view_get_thumbnail(LarmorCoilsView *self, LarmorCoilsKind kind, int i);
/* What a thumbnail's label says ("3"; "Σ" for the combined image). */
const char *larmor_coils_view_get_thumbnail_label(LarmorCoilsView *self, LarmorCoilsKind kind, int i);
/* Shows one large (as a click on its thumbnail does). */
void larmor_coils_view_show_large(LarmorCoilsView *self, LarmorCoilsKind kind, int i);
LarmorSliceView *larmor_coils_view_get_large_view(LarmorCoilsView *self);
/* The noise covariance picture, visible only when the run has one. */
GtkWidget *larmor_coils_view_get_noise_widget(LarmorCoilsView *self);
/* The line under a section's heading: where the maps come from, why
 * there are no coil images ... */
const char *larmor_coils_view_get_note(LarmorCoilsView *self, LarmorCoilsKind kind);

/* The large view's display convention and colour bar (the window's). */
void larmor_coils_view_set_display(LarmorCoilsView *self, gboolean radiological, gboolean show_colorbar);

G_END_DECLS

#endif
