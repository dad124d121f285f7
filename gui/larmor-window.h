/* The workbench window: data (phantom, files, truth, reference), the
 * reconstruction settings and progress in the sidebar, and five pages:
 * Viewer, Compare, Runs, lambda Sweep, Coils. Owns the list of runs and the
 * running task. Actions (win.*) are listed in larmor-window.c; their
 * shortcuts are set by the application and shown in the shortcuts window. */
#ifndef LARMOR_WINDOW_H
#define LARMOR_WINDOW_H

#include <gtk/gtk.h>

#include "larmor-coils-view.h"
#include "larmor-compare-view.h"
#include "larmor-dataset.h"
#include "larmor-ortho-view.h"
#include "larmor-recon-panel.h"
#include "larmor-run.h"
#include "larmor-settings.h"

G_BEGIN_DECLS

#define LARMOR_TYPE_WINDOW (larmor_window_get_type())
G_DECLARE_FINAL_TYPE(LarmorWindow, larmor_window, LARMOR, WINDOW, GtkApplicationWindow)

/* settings may be NULL (then nothing is remembered). The window starts
 * loading `problem` (NULL: the last one used, else B32). */
LarmorWindow *larmor_window_new(GtkApplication *app, LarmorSettings *settings, const char *problem);
/* A window that opens files (command line, file manager) instead of the
 * default problem: data files load, a NIfTI with them becomes their truth. */
LarmorWindow *larmor_window_new_for_files(GtkApplication *app, LarmorSettings *settings, GFile *const *files,
                                          int n);

/* Data */
void larmor_window_load(LarmorWindow *self, const LarmorDatasetSpec *spec);
/* Files from the open dialog or a drop: .h5 / .bin alone, a .cfl pair,
 * .nii as the truth. */
void larmor_window_open_files(LarmorWindow *self, GFile *const *files, int n);
/* The main menu's "Open Recent" items (win.open-recent, target: index),
 * newest first, from the settings (larmor_settings_get_recent). */
GMenuModel *larmor_window_get_recent_menu(LarmorWindow *self);

/* Closing the window with runs not exported (larmor_run_get_exported)
 * asks first: a modal question with Cancel (LARMOR_CLOSE_CANCEL) and Quit
 * (LARMOR_CLOSE_QUIT); on by default. The dialog while shown, else NULL. */
enum { LARMOR_CLOSE_CANCEL = 1, LARMOR_CLOSE_QUIT = 2 };
int larmor_window_count_unexported(LarmorWindow *self);
void larmor_window_set_confirm_close(LarmorWindow *self, gboolean confirm);
GtkWindow *larmor_window_get_close_dialog(LarmorWindow *self);
LarmorDataset *larmor_window_get_dataset(LarmorWindow *self);
/* Data from files: reload them on this matrix and FOV (the data card's
 * Matrix / FOV entries); FALSE with a one-line error when not possible
 * (other data, busy, absurd sizes). A load that fails says why in one line
 * and the data loaded stay. */
gboolean larmor_window_set_grid(LarmorWindow *self, const int64_t n[3], const double fov_mm[3], GError **error);
/* The memory and time estimate shown under the settings (NULL without data). */
const char *larmor_window_get_estimate_text(LarmorWindow *self);
/* Loaded in a worker; the result (or the error) shows in the window. */
void larmor_window_open_truth(LarmorWindow *self, const char *path);
void larmor_window_open_reference(LarmorWindow *self, const char *path);
/* Coil maps (.cfl [nx, ny, nz, coils]) for the data loaded now, read in a
 * worker and checked against the matrix and channel count (one-line error
 * otherwise; the data keep the maps they had). */
void larmor_window_open_maps(LarmorWindow *self, const char *path);
/* A field map in Hz (.nii/.nii.gz resampled onto the data's grid through
 * its affine, .cfl on the matrix), read in a worker (one-line error); it
 * becomes the data's (larmor_dataset_set_fieldmap) and the viewer's overlay.
 * is_loading: the read has not finished. */
void larmor_window_open_fieldmap(LarmorWindow *self, const char *path);
gboolean larmor_window_is_loading_fieldmap(LarmorWindow *self);

/* Sessions (larmor-session.h): every run (settings, results, image), the
 * data set's spec or files, views and the compare layout, written in a
 * worker (".larmor" added when missing); saved runs count as exported.
 * Opening replaces the runs, reloads the data when they are not the ones
 * loaded, and says in one line what it restored and what is missing.
 * Both are asynchronous: larmor_window_is_busy until done. */
void larmor_window_save_session(LarmorWindow *self, const char *path);
void larmor_window_open_session(LarmorWindow *self, const char *path);

/* Export: the image shown in the viewer (the selected run on the Runs
 * page) as NIfTI, written in a worker with a message when done; the
 * current page as PNG (the three views, or the whole comparison); the runs
 * table as CSV (atomic). */
void larmor_window_export_nifti(LarmorWindow *self, const char *path, gboolean as_complex);
gboolean larmor_window_export_png(LarmorWindow *self, const char *path, GError **error);
gboolean larmor_window_export_csv(LarmorWindow *self, const char *path, GError **error);
/* Export -> DICOM Series (docs/dicom.md), in a worker with a message when
 * done: on the compare page every compared run as series of one study, a
 * sub-folder each named after the run (larmor_run_get_file_stem), else the
 * image NIfTI export would write; WindowCenter/Width are the window the
 * user has for each image in part (its compare panel's, else the
 * viewer's), else the automatic one. like_dir: a template series or NULL. */
void larmor_window_export_dicom(LarmorWindow *self, const char *dir, lm_dicom_part part, gboolean enhanced,
                                const char *like_dir);

/* Reconstruction: params NULL takes the sidebar's settings. FALSE with an
 * error when it cannot start (busy, no data, bad settings). */
gboolean larmor_window_reconstruct(LarmorWindow *self, const LarmorReconParams *params, GError **error);
gboolean larmor_window_sweep(LarmorWindow *self, const LarmorReconParams *params, double from, double to,
                             int steps, GError **error);
void larmor_window_cancel(LarmorWindow *self);
/* The panel's settings with lambda chosen from the data (lambda_auto, the
 * panel's criterion); when it finishes the slider shows the chosen lambda.
 * FALSE with the reason (tv and wavelet, not CG, busy). */
gboolean larmor_window_auto_lambda(LarmorWindow *self, GError **error);
/* Corrected (the panel's field-map mode, or time-segmented when it is off)
 * against uncorrected with the panel's other settings: the runs missing
 * among the current ones are made one after the other, then Compare shows
 * both (uncorrected first) with the differences, and corrected minus
 * uncorrected joins the images. */
gboolean larmor_window_compare_fieldmap(LarmorWindow *self, GError **error);
/* The sidebar's settings (FALSE when an entry does not parse). */
gboolean larmor_window_get_params(LarmorWindow *self, LarmorReconParams *params);
/* Loading or reconstructing. */
gboolean larmor_window_is_busy(LarmorWindow *self);
/* Outcome of the last task: "done", "cancelled" or the error message. */
const char *larmor_window_get_last_status(LarmorWindow *self);
GListModel *larmor_window_get_runs(LarmorWindow *self);
/* The viewer's images (LarmorVolume): truth, reference, run images, prior
 * influences, the data's field map. */
GListModel *larmor_window_get_images(LarmorWindow *self);

void larmor_window_set_page(LarmorWindow *self, const char *name);
const char *larmor_window_get_page(LarmorWindow *self);
LarmorOrthoView *larmor_window_get_ortho_view(LarmorWindow *self);
LarmorCompareView *larmor_window_get_compare_view(LarmorWindow *self);
LarmorCoilsView *larmor_window_get_coils_view(LarmorWindow *self);
GtkWidget *larmor_window_get_sweep_view(LarmorWindow *self);
/* The sidebar's scrolled window and the reconstruction panel in it. */
GtkWidget *larmor_window_get_sidebar(LarmorWindow *self);
LarmorReconPanel *larmor_window_get_recon_panel(LarmorWindow *self);
/* The message bar's text (NULL when hidden). */
const char *larmor_window_get_message(LarmorWindow *self);
/* Whether the bar shown now offers Undo (after a run was deleted). */
gboolean larmor_window_get_message_has_undo(LarmorWindow *self);
/* Display convention (properties "radiological", "show-colorbar", the
 * stateful actions win.radiological and win.show-colorbar): every slice
 * view of the window follows; kept in the settings ([view]). */
void larmor_window_set_radiological(LarmorWindow *self, gboolean radiological);
gboolean larmor_window_get_radiological(LarmorWindow *self);
void larmor_window_set_show_colorbar(LarmorWindow *self, gboolean show);
gboolean larmor_window_get_show_colorbar(LarmorWindow *self);
/* Selects run on the Runs page (what win.remove-run acts on); TRUE if it is. */
gboolean larmor_window_select_run(LarmorWindow *self, LarmorRun *run);
/* The images the viewer offers (truth, reference, run images). */
GListModel *larmor_window_get_volumes(LarmorWindow *self);
/* The file name Export Image as NIfTI suggests for the image it would export (g_free). */
char *larmor_window_get_export_name(LarmorWindow *self);
/* The user guide's window (win.help, F1) while it is open, else NULL. */
GtkWindow *larmor_window_get_help_window(LarmorWindow *self);
void larmor_window_show_message(LarmorWindow *self, const char *text, gboolean error);

G_END_DECLS

#endif
