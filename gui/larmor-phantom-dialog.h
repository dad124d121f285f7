/* New phantom: a named benchmark problem, or phantom, matrix, trajectory
 * kind, samples, readout, noise level, seed and receive coils (with
 * synthetic maps kept as the data's true maps) and a synthetic field map
 * (Hz; custom phantoms; S128c8f has its own). Emits "create" with the
 * LarmorDatasetSpec; the window builds it in a worker thread. */
#ifndef LARMOR_PHANTOM_DIALOG_H
#define LARMOR_PHANTOM_DIALOG_H

#include <gtk/gtk.h>

#include "larmor-dataset.h"

G_BEGIN_DECLS

#define LARMOR_TYPE_PHANTOM_DIALOG (larmor_phantom_dialog_get_type())
G_DECLARE_FINAL_TYPE(LarmorPhantomDialog, larmor_phantom_dialog, LARMOR, PHANTOM_DIALOG, GtkWindow)

GtkWidget *larmor_phantom_dialog_new(GtkWindow *parent);
/* The spec as the fields stand (caller frees with larmor_dataset_spec_free). */
LarmorDatasetSpec *larmor_phantom_dialog_get_spec(LarmorPhantomDialog *self);
void larmor_phantom_dialog_set_spec(LarmorPhantomDialog *self, const LarmorDatasetSpec *spec);

G_END_DECLS

#endif
