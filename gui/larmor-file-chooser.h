/* Choosing a file: the one dialog every "Open …", "Save …" and "Export …"
 * of the window goes through. GTK 4.8 (Debian 12) has no GtkFileDialog
 * (4.10), so this wraps GtkFileChooserNative: portal or native dialog,
 * filters, the folder used last (settings [files] last-folder), an optional
 * check box, and a callback with what was chosen. */
#ifndef LARMOR_FILE_CHOOSER_H
#define LARMOR_FILE_CHOOSER_H

#include <gtk/gtk.h>

#include "larmor-settings.h"

G_BEGIN_DECLS

typedef struct {
    const char *title;        /* "Open Truth" */
    const char *accept;       /* the button: "_Open", "_Save", "_Export" */
    gboolean save;            /* a file to write (else files to read) */
    gboolean multiple;        /* several files at once (reading only) */
    const char *current_name; /* suggested name when saving, or NULL */
    const char *check;        /* a check box's label (its state reaches the callback), or NULL */
    /* Pairs of a filter's name and its patterns separated by spaces
     * ("ISMRMRD (.h5)", "*.h5"), ended by NULL; the first is selected. */
    const char *const *filters;
} LarmorFileRequest;

/* files[0 .. n-1] (n is 1 unless multiple; never 0), checked: the check box. */
typedef void (*LarmorFileChosen)(GtkWindow *parent, GFile *const *files, int n, gboolean checked, gpointer data);

/* Shows the dialog, modal on parent; done runs only when files were
 * chosen, destroy (may be NULL) frees data either way. settings may be
 * NULL (no folder remembered). */
void larmor_choose_file(GtkWindow *parent, LarmorSettings *settings, const LarmorFileRequest *req,
                        LarmorFileChosen done, gpointer data, GDestroyNotify destroy);
/* The folder of file becomes the one the next dialog starts in (also for
 * files dropped or given on the command line). */
void larmor_remember_folder(LarmorSettings *settings, GFile *file);

G_END_DECLS

#endif
