/* Receive-coil sensitivity maps on the image grid: one lm_sens ([nx, ny,
 * nz, coils], x fastest, coil slowest) with where they came from ("true
 * maps of the synthetic coils", a file name, "estimated by run #3").
 * Immutable once made, so the data set, running tasks and finished runs
 * share them by reference; a data set given new maps swaps the object. */
#ifndef LARMOR_COIL_MAPS_H
#define LARMOR_COIL_MAPS_H

#include <gio/gio.h>

#include "larmor.h"

G_BEGIN_DECLS

#define LARMOR_TYPE_COIL_MAPS (larmor_coil_maps_get_type())
G_DECLARE_FINAL_TYPE(LarmorCoilMaps, larmor_coil_maps, LARMOR, COIL_MAPS, GObject)

/* Takes ownership of sens. */
LarmorCoilMaps *larmor_coil_maps_new_take(lm_sens *sens, const char *origin);
const lm_sens *larmor_coil_maps_get_sens(LarmorCoilMaps *self);
/* Where they came from, for the data card and the coils page. */
const char *larmor_coil_maps_get_origin(LarmorCoilMaps *self);
int64_t larmor_coil_maps_get_count(LarmorCoilMaps *self);

/* Checks maps against the matrix n and the k-space's channel count, and
 * that every value is finite. what names them in the one-line message
 * ("sens.cfl: 4 coil maps but the k-space has 8 channels"). */
gboolean larmor_coil_maps_check(const lm_sens *sens, const int64_t n[3], int64_t ncoils, const char *what,
                                GError **error);

/* Reads maps as larmor-cli --sens does (lm_load_sens: a BART .cfl
 * [nx, ny, nz, coils] or a complex 4D NIfTI) and checks them as above. Blocking,
 * for worker threads; the _async form runs it in one. */
LarmorCoilMaps *larmor_coil_maps_load(const char *path, const int64_t n[3], int64_t ncoils, GError **error);
void larmor_coil_maps_load_async(const char *path, const int64_t n[3], int64_t ncoils, GCancellable *cancellable,
                                 GAsyncReadyCallback callback, gpointer user_data);
LarmorCoilMaps *larmor_coil_maps_load_finish(GAsyncResult *result, GError **error);

G_END_DECLS

#endif
