/* Export -> DICOM Series…: an image written as a DICOM series
 * (docs/dicom.md) into a new folder, optionally joining a template series'
 * patient and study, with the display window of its part as
 * WindowCenter/Width. The writing runs off the main thread. */
#ifndef LARMOR_EXPORT_DICOM_H
#define LARMOR_EXPORT_DICOM_H

#include <gtk/gtk.h>

#include "larmor-volume.h"
#include "larmor.h"

G_BEGIN_DECLS

/* Writes v into dir (new, or an empty folder) as part; like_dir (NULL: none)
 * names a template series. note (may be NULL) gets the writer's note (an
 * anonymous patient), to g_free. FALSE with error set on failure. */
gboolean larmor_export_dicom_write(LarmorVolume *v, const char *dir, const char *like_dir, lm_dicom_part part,
                                   gboolean enhanced, const char *description, char **note, GError **error);

/* Called on the main thread when an export started below ends: a one-line
 * message, an error or not. */
typedef void (*LarmorExportDicomDone)(GtkWindow *parent, const char *message, gboolean is_error);

/* Asks for the new folder (suggested name from name_hint), the part, the
 * multi-frame form and whether to join a template series (then for its
 * folder), and writes v there; done reports the outcome while parent lives. */
void larmor_export_dicom_start(GtkWindow *parent, LarmorVolume *v, const char *name_hint, LarmorExportDicomDone done);

G_END_DECLS

#endif
