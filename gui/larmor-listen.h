/* File -> Listen for data…: the workbench as an MRD server
 * (docs/mrd-server.md, "Workbench").
 *
 * LarmorListen owns the library's listener (lm_mrd_listener.h). Its
 * callbacks run on the connections' threads: they only store under a lock
 * (the newest stream's header and acquisitions, the frames as volumes, the
 * counts) and queue one idle source on the main context, which turns the
 * frames into a growing LarmorVolume and emits "changed". Nothing here
 * touches a widget off the main thread.
 *
 * What is kept is bounded by `keep` bytes: the newest stream's
 * acquisitions (a new stream's HEADER starts over) and, separately, the
 * frames of the volume shown. Beyond it nothing more is kept and the status
 * line says so; the counts go on. */
#ifndef LARMOR_LISTEN_H
#define LARMOR_LISTEN_H

#include <gio/gio.h>

#include "larmor-volume.h"
#include "larmor-window.h"

G_BEGIN_DECLS

#define LARMOR_LISTEN_PORT_DEFAULT 9002
#define LARMOR_LISTEN_KEEP_DEFAULT ((guint64)4 << 30)

#define LARMOR_TYPE_LISTEN (larmor_listen_get_type())
G_DECLARE_FINAL_TYPE(LarmorListen, larmor_listen, LARMOR, LISTEN, GObject)

/* Listens on spec ("PORT" or "ADDR:PORT"; port 0: one the system picks).
 * NULL with the one-line reason. */
LarmorListen *larmor_listen_new(const char *spec, guint64 keep, GError **error);
/* Stops accepting and ends the connections without waiting for them (a
 * frame being reconstructed finishes first, on its thread): their last
 * counts and frames still arrive. What was received stays. The listener
 * holds a reference to self until its last callback. Main thread. */
void larmor_listen_stop(LarmorListen *self);
gboolean larmor_listen_is_listening(LarmorListen *self);
int larmor_listen_get_port(LarmorListen *self);
const char *larmor_listen_get_host(LarmorListen *self);
/* As the main thread last heard (updated before each "changed"). */
guint larmor_listen_get_connections(LarmorListen *self);    /* accepted so far */
guint larmor_listen_get_active(LarmorListen *self);         /* being served */
guint64 larmor_listen_get_received(LarmorListen *self);     /* acquisitions, every connection */
guint64 larmor_listen_get_kept(LarmorListen *self);         /* acquisitions kept of the newest stream */
/* The newest stream's frames (one volume, a frame per IMAGE), NULL before
 * the first; a new connection's first image starts another volume. */
LarmorVolume *larmor_listen_get_frames(LarmorListen *self);
gint64 larmor_listen_get_frame_number(LarmorListen *self);  /* the last image's "frame" attribute (0: none) */
double larmor_listen_get_latency(LarmorListen *self);       /* its latency_s (negative: none) */
/* The last connection's end as the listener logs it, one line (NULL: none). */
const char *larmor_listen_get_note(LarmorListen *self);
/* "Listening on 127.0.0.1:9002 · 1 connection · 240 acquisitions · frame
 * 57 · latency 12 ms", then "· past 4.0 GiB kept: …" once a limit was
 * reached (g_free). */
char *larmor_listen_get_status(LarmorListen *self);
/* A stream (header and at least one acquisition) is kept whole. */
gboolean larmor_listen_has_data(LarmorListen *self);
/* Writes the kept stream as an MRD .h5 (lm_mrd_write_stream: atomic) in a
 * worker; finish gives the acquisitions written, 0 with the error. */
void larmor_listen_save_async(LarmorListen *self, const char *path, GAsyncReadyCallback done, gpointer data);
guint64 larmor_listen_save_finish(LarmorListen *self, GAsyncResult *res, GError **error);

/* ---- the window's side (larmor-window-listen.c) ---- */

/* Starts listening (win.listen's dialog calls it); FALSE with the reason
 * when already listening or the address cannot be used. */
gboolean larmor_window_listen(LarmorWindow *self, const char *spec, GError **error);
void larmor_window_stop_listening(LarmorWindow *self);
LarmorListen *larmor_window_get_listen(LarmorWindow *self);
/* The sidebar's status line (NULL when hidden). */
const char *larmor_window_get_listen_status(LarmorWindow *self);
/* Save Received Data: written in a worker, a message when done; with load
 * the file then becomes the window's data (an offline reconstruction of
 * the stream). */
void larmor_window_save_received(LarmorWindow *self, const char *path, gboolean load);
/* The dialog of win.listen: address, port, the no-authentication warning
 * (shown for any address but 127.0.0.1), Listen and Cancel. */
GtkWindow *larmor_listen_dialog_new(LarmorWindow *self);
void larmor_listen_dialog_set(GtkWindow *dialog, const char *address, int port);
gboolean larmor_listen_dialog_warns(GtkWindow *dialog);
/* Presses Listen: TRUE when listening (the dialog closes), else its error
 * line shows the reason. */
gboolean larmor_listen_dialog_accept(GtkWindow *dialog);
const char *larmor_listen_dialog_get_error(GtkWindow *dialog);

/* larmor-window.c's hooks */
void larmor_window_listen_class_init(GtkWidgetClass *wc);
void larmor_window_listen_init(LarmorWindow *self);
void larmor_window_listen_dispose(LarmorWindow *self);
void larmor_window_listen_update_actions(LarmorWindow *self);

G_END_DECLS

#endif
