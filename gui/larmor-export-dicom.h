/* Export -> DICOM Series…: images written as DICOM series (docs/dicom.md)
 * into a new folder, optionally joining a template series' patient and
 * study, with the display window the user has for each image as
 * WindowCenter/Width: one image, or every run of a comparison as series
 * of one study (a sub-folder each). The writing runs off the main thread. */
#ifndef LARMOR_EXPORT_DICOM_H
#define LARMOR_EXPORT_DICOM_H

#include <gtk/gtk.h>

#include "larmor-volume.h"
#include "larmor.h"

G_BEGIN_DECLS

/* One image to write: its sub-folder (in a set), SeriesDescription and
 * display window (window <= 0: the image's automatic one for the part). */
typedef struct {
    LarmorVolume *volume;
    const char *name;
    const char *description;
    double window, level;
} LarmorExportDicomImage;

/* Writes images[0..n) into dir (new, or an empty folder): as_set, as n
 * series of one study in a sub-folder each (lm_dicom_write_set), else the
 * one image (n == 1) as a series in dir itself. like_dir (NULL: none) names
 * a template series. note (may be NULL) gets the writer's note (an
 * anonymous patient), to g_free. FALSE with error set on failure. */
gboolean larmor_export_dicom_write_images(const LarmorExportDicomImage *images, int n, gboolean as_set,
                                          const char *dir, const char *like_dir, lm_dicom_part part,
                                          gboolean enhanced, char **note, GError **error);
/* One image with its automatic window (larmor_export_dicom_write_images). */
gboolean larmor_export_dicom_write(LarmorVolume *v, const char *dir, const char *like_dir, lm_dicom_part part,
                                   gboolean enhanced, const char *description, char **note, GError **error);

/* Called on the main thread when a write started below ends: a one-line
 * message, an error or not. */
typedef void (*LarmorExportDicomDone)(GtkWindow *parent, const char *message, gboolean is_error);

/* larmor_export_dicom_write_images in a worker (the images are copied and
 * their volumes referenced); done reports the outcome while parent lives. */
void larmor_export_dicom_write_async(GtkWindow *parent, const LarmorExportDicomImage *images, int n, gboolean as_set,
                                     const char *dir, const char *like_dir, lm_dicom_part part, gboolean enhanced,
                                     LarmorExportDicomDone done);

/* What the dialogs chose: the new folder, the part, the multi-frame form
 * and the template series' folder (NULL: none). */
typedef void (*LarmorExportDicomChosen)(GtkWindow *parent, const char *dir, lm_dicom_part part, gboolean enhanced,
                                        const char *like_dir);

/* Asks for the new folder (suggested name from name_hint; title names what
 * is exported), the part, the multi-frame form and whether to join a
 * template series (then for its folder); chosen gets the answers unless
 * cancelled. */
void larmor_export_dicom_choose(GtkWindow *parent, const char *title, const char *name_hint,
                                LarmorExportDicomChosen chosen);

G_END_DECLS

#endif
