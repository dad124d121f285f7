/* Sessions (File > Save Session / Open Session): a manifest FILE.larmor
 * (GKeyFile text: the data set's spec or paths, every run's settings and
 * results, views, compare layout) and the run images as complex64 NIfTI in
 * the folder FILE.larmor.d beside it. Plain C, no widgets: the window
 * fills and reads the key file; this module writes and reads the files,
 * in a worker thread when asked.
 *
 * Writes are atomic as a whole: images go under new names (a generation
 * prefix) next to the old ones, then the manifest is replaced (temporary
 * file, rename), and only then are the images the old manifest named
 * removed. A crash at any point leaves a manifest whose images exist. */
#ifndef LARMOR_SESSION_H
#define LARMOR_SESSION_H

#include <gio/gio.h>

#include "larmor-dataset.h"
#include "larmor-profile.h"
#include "larmor-roi.h"
#include "larmor-volume.h"

G_BEGIN_DECLS

#define LARMOR_SESSION_FORMAT 1

typedef struct _LarmorSession LarmorSession;

LarmorSession *larmor_session_new(void);
void larmor_session_free(LarmorSession *s);
/* The manifest; the caller fills it before writing and reads it after. */
GKeyFile *larmor_session_get_keyfile(LarmorSession *s);
/* An image to store for a group (key "image" gets its file name when
 * written); the volume is shared, not copied (volumes are immutable). */
void larmor_session_add_image(LarmorSession *s, const char *group, LarmorVolume *v);
/* After reading: the image of a group, or NULL (none, or its file is
 * missing: see larmor_session_get_missing). */
LarmorVolume *larmor_session_get_image(LarmorSession *s, const char *group);
/* After reading: images named by the manifest that could not be read,
 * one per line ("" when none). */
const char *larmor_session_get_missing(LarmorSession *s);

/* "study.larmor" -> "study.larmor.d". */
char *larmor_session_data_dir(const char *path);

/* Blocking (workers and tests). */
gboolean larmor_session_write(LarmorSession *s, const char *path, GError **error);
LarmorSession *larmor_session_read(const char *path, GError **error);

/* In a worker; write takes ownership of s. */
void larmor_session_write_async(LarmorSession *s, const char *path, GAsyncReadyCallback cb, gpointer data);
gboolean larmor_session_write_finish(GAsyncResult *result, GError **error);
void larmor_session_read_async(const char *path, GAsyncReadyCallback cb, gpointer data);
LarmorSession *larmor_session_read_finish(GAsyncResult *result, GError **error);

/* The data set's spec in a group (kind, problem, phantom parameters or
 * absolute file paths). */
void larmor_session_set_spec(GKeyFile *kf, const char *group, const LarmorDatasetSpec *spec);
/* Fills spec (paths newly allocated: larmor_dataset_spec_free semantics
 * for the strings); FALSE with a one-line error when absent or bad. */
gboolean larmor_session_get_spec(GKeyFile *kf, const char *group, LarmorDatasetSpec *spec, GError **error);

/* Doubles exactly (%.17g, NaN as "nan") and lists of them ("a;b;c"). */
void larmor_session_set_doubles(GKeyFile *kf, const char *group, const char *key, const double *v, int n);
/* Exactly n values, else FALSE. */
gboolean larmor_session_get_doubles(GKeyFile *kf, const char *group, const char *key, double *v, int n);

/* A region of interest (rectangle or ellipse; none removes the key) and a
 * profile line (unset removes it) as one list of numbers; get is FALSE
 * when the key is absent or its values are not a region (line) at all. */
void larmor_session_set_roi(GKeyFile *kf, const char *group, const char *key, const LarmorRoi *roi);
gboolean larmor_session_get_roi(GKeyFile *kf, const char *group, const char *key, LarmorRoi *roi);
void larmor_session_set_line(GKeyFile *kf, const char *group, const char *key, const LarmorLine *line);
gboolean larmor_session_get_line(GKeyFile *kf, const char *group, const char *key, LarmorLine *line);

G_END_DECLS

#endif
