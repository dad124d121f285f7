/* Open dialogs pick files, and a DICOM series is a folder of them: a DICOM
 * file chosen as a reference, truth or field map stands for every file of
 * its folder (docs/dicom.md). */
#ifndef LARMOR_DICOM_PATH_H
#define LARMOR_DICOM_PATH_H

#include <glib.h>

G_BEGIN_DECLS

/* Takes path (may be NULL): the folder holding it when it is a DICOM file
 * (preamble "DICM"), else path itself. Free with g_free. */
char *larmor_dicom_series_path(char *path);

/* The Open dialogs' filter for DICOM files (pattern "*": they often have no extension). */
#define LARMOR_DICOM_FILTER_NAME "DICOM series (any file of it)"

G_END_DECLS

#endif
