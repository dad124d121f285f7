/* The window's state, shared by its controllers (one file per idea):
 *   larmor-window.c          the window: messages, image list, display, pages, actions' state, closing
 *   larmor-window-files.c    data, truth, reference, coil maps, field map, recent, drops, matrix/FOV
 *   larmor-window-recon.c    reconstruction, sweep, automatic λ, Live, corrected vs uncorrected, estimate
 *   larmor-window-runs.c     the runs: which belong to the data, metrics, comparison, delete and Undo
 *   larmor-window-export.c   NIfTI, PNG and CSV
 *   larmor-window-session.c  sessions saved and opened
 *   larmor-window-listen.c   listening for MRD streams, the received frames and data
 * Not installed: only the window's own files include it. */
#ifndef LARMOR_WINDOW_PRIVATE_H
#define LARMOR_WINDOW_PRIVATE_H

#include "larmor-file-chooser.h"
#include "larmor-listen.h"
#include "larmor-estimate.h"
#include "larmor-recon-task.h"
#include "larmor-runs-view.h"
#include "larmor-session.h"
#include "larmor-sweep-view.h"
#include "larmor-window.h"

G_BEGIN_DECLS

struct _LarmorWindow {
    GtkApplicationWindow parent_instance;

    /* template */
    GtkPaned *paned;
    GtkWidget *sidebar;
    GtkSpinner *load_spinner;
    GtkLabel *data_title;
    GtkLabel *data_source;
    GtkLabel *data_summary;
    GtkLabel *truth_label;
    GtkLabel *maps_label;
    LarmorReconPanel *recon_panel;
    GtkStack *main_stack;
    LarmorOrthoView *ortho_view;
    LarmorCompareView *compare_view;
    LarmorRunsView *runs_view;
    LarmorSweepView *sweep_view;
    LarmorCoilsView *coils_view;
    GtkRevealer *toast_revealer;
    GtkImage *toast_icon;
    GtkLabel *toast_label;
    GtkWidget *toast_close;
    GtkWidget *toast_undo;     /* "Undo" on the bar after a run was deleted */
    GMenu *recent_menu;        /* "Open Recent" in the main menu */
    GtkWidget *grid_box;       /* matrix and FOV of file data */
    GtkEntry *matrix_entry, *fov_entry;
    GtkWidget *grid_apply;
    GtkLabel *estimate_label;

    LarmorSettings *settings;
    LarmorDataset *dataset;
    LarmorVolume *reference;
    LarmorVolume *live_image;  /* the live run's image as the volume list holds it */
    gboolean reference_from_data; /* the phantom's own, replaced with the data */
    char *truth_origin;        /* "analytic phantom…" or the truth's file name */
    char *pending_truth;       /* a truth opened with its data, applied once they load */
    char *truth_path;          /* the truth's file when it was opened from one (sessions) */
    LarmorSession *pending_session; /* views and compare layout, applied once its data load */
    int session_jobs;          /* sessions being read or written */
    char *session_path;        /* the session opened last */
    int session_runs;          /* how many runs it restored */
    char *session_note;        /* what it could not restore (the truth's file) */
    GListStore *runs;          /* LarmorRun, in the order they finished */
    GListStore *volumes;       /* LarmorVolume: truth, reference, run images */
    GQueue compare_order;      /* runs ticked for comparison, oldest first */
    gboolean updating_compare;
    int next_index;

    GCancellable *load_cancellable;
    gboolean loading;
    LarmorReconTask *task;
    GCancellable *task_cancellable;
    char *last_status;
    guint toast_timeout;
    gboolean close_pending;
    gboolean disposed;         /* async callbacks may land after a destroy */
    gboolean confirm_close;    /* ask before closing with runs not exported (default) */
    gboolean close_confirmed;  /* "Quit" was chosen: the next close goes through */
    GtkWindow *close_dialog;   /* the question while it is shown */

    gboolean radiological;     /* display convention, all slice views */
    gboolean show_colorbar;    /* colour bars on the slice views */
    /* The run deleted last, for Undo: where it was in the runs, the
     * volumes and the comparison, and whether the viewer showed it. */
    LarmorRun *undo_run;
    guint undo_pos, undo_vol_pos;
    int undo_compare_pos;
    gboolean undo_shown;
    GtkWindow *help_window;    /* the user guide (F1), while open */
    LarmorVolume *fieldmap_shown; /* the data's field map in the image list */
    char *fieldmap_pending;    /* name of the field-map file being read */
    gboolean fm_compare;       /* corrected against uncorrected: runs still to make */
    LarmorReconParams fm_compare_params; /* the corrected run's settings */
    lm_estimate_rates rates;   /* this machine's measured speeds (lm_estimate.h), for the estimate */
    LarmorListen *listen;      /* File -> Listen for data…: the listener and what it received */
    LarmorVolume *listen_shown; /* its frames as the image list holds them */
    int64_t listen_frames_seen;
    int listen_saves;          /* Save Received Data writes in progress */
    GtkWidget *listen_box, *listen_stop; /* the sidebar's status line */
    GtkLabel *listen_label, *listen_note;
};

/* larmor-window.c */
void larmor_window_update_actions(LarmorWindow *self);
void larmor_window_show_error(LarmorWindow *self, const GError *error);
void larmor_window_show_undo_message(LarmorWindow *self, const char *text);
/* Hides the message bar when it shows an error. */
void larmor_window_clear_error(LarmorWindow *self);
void larmor_window_volumes_remove(LarmorWindow *self, LarmorVolume *v);
gboolean larmor_window_is_volume_file(const char *path);
/* The file dialog of req for this window (larmor_choose_file with the
 * window's settings); done gets the window as parent. */
void larmor_window_choose(LarmorWindow *self, const LarmorFileRequest *req, LarmorFileChosen done, gpointer data);
/* A request whose answer is one path for one of the window's functions
 * (larmor_window_open_truth, larmor_window_save_session, …). */
typedef void (*LarmorWindowPathFn)(LarmorWindow *self, const char *path);
void larmor_window_choose_path(LarmorWindow *self, const LarmorFileRequest *req, LarmorWindowPathFn fn);

/* larmor-window-files.c */
void larmor_window_show_dataset(LarmorWindow *self);
void larmor_window_set_reference(LarmorWindow *self, LarmorVolume *v);
void larmor_window_set_truth_volume(LarmorWindow *self, LarmorVolume *old, LarmorVolume *truth);
void larmor_window_fill_recent(LarmorWindow *self);
void larmor_window_files_class_init(GtkWidgetClass *wc);
void larmor_window_files_init(LarmorWindow *self);

/* larmor-window-runs.c */
void larmor_window_update_compare(LarmorWindow *self);
/* Whether two data set keys ("origin@NXxNYxNZ") name the same data, on any grid. */
gboolean larmor_window_same_data(const char *key_a, const char *key_b);
void larmor_window_on_run_compare(LarmorRun *run, GParamSpec *pspec, LarmorWindow *self);
gboolean larmor_window_run_is_current(LarmorWindow *self, LarmorRun *run);
gboolean larmor_window_refresh_metrics(LarmorWindow *self, LarmorRun *run);
int larmor_window_refresh_runs(LarmorWindow *self);
void larmor_window_add_run(LarmorWindow *self, LarmorRun *run);
LarmorRun *larmor_window_selected_run(LarmorWindow *self);
void larmor_window_forget_undo(LarmorWindow *self);
void larmor_window_runs_class_init(GtkWidgetClass *wc);
void larmor_window_runs_init(LarmorWindow *self);

/* larmor-window-recon.c */
void larmor_window_update_estimate(LarmorWindow *self);
void larmor_window_update_live(LarmorWindow *self);
void larmor_window_save_params(LarmorWindow *self);
void larmor_window_load_params(LarmorWindow *self);
void larmor_window_recon_class_init(GtkWidgetClass *wc);
void larmor_window_recon_init(LarmorWindow *self);

/* larmor-window-export.c */
void larmor_window_export_class_init(GtkWidgetClass *wc);

/* larmor-window-session.c */
void larmor_window_finish_pending_session(LarmorWindow *self, const char *problem);
void larmor_window_session_class_init(GtkWidgetClass *wc);

G_END_DECLS

#endif
