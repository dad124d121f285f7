/* larmor-listen.h without libismrmrd (the MRD protocol's headers come from
 * it): the type exists so the window builds, listening is refused in one
 * line and there is never anything received. */
#include "larmor-listen.h"

struct _LarmorListen {
    GObject parent_instance;
};

G_DEFINE_FINAL_TYPE(LarmorListen, larmor_listen, G_TYPE_OBJECT)

LarmorListen *larmor_listen_new(const char *spec, guint64 keep, GError **error)
{
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "%s: built without libismrmrd, which the MRD "
                "protocol's headers come from", spec);
    return NULL;
}

void larmor_listen_stop(LarmorListen *self) {}
gboolean larmor_listen_is_listening(LarmorListen *self) { return FALSE; }
int larmor_listen_get_port(LarmorListen *self) { return 0; }
const char *larmor_listen_get_host(LarmorListen *self) { return ""; }
guint larmor_listen_get_connections(LarmorListen *self) { return 0; }
guint larmor_listen_get_active(LarmorListen *self) { return 0; }
guint64 larmor_listen_get_received(LarmorListen *self) { return 0; }
guint64 larmor_listen_get_kept(LarmorListen *self) { return 0; }
LarmorVolume *larmor_listen_get_frames(LarmorListen *self) { return NULL; }
gint64 larmor_listen_get_frame_number(LarmorListen *self) { return 0; }
double larmor_listen_get_latency(LarmorListen *self) { return -1; }
const char *larmor_listen_get_note(LarmorListen *self) { return NULL; }
char *larmor_listen_get_status(LarmorListen *self) { return g_strdup("Stopped"); }
gboolean larmor_listen_has_data(LarmorListen *self) { return FALSE; }

void larmor_listen_save_async(LarmorListen *self, const char *path, GAsyncReadyCallback done, gpointer data)
{
    GTask *task = g_task_new(self, NULL, done, data);
    g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "%s", "No received data to save");
    g_object_unref(task);
}

guint64 larmor_listen_save_finish(LarmorListen *self, GAsyncResult *res, GError **error)
{
    gssize n = g_task_propagate_int(G_TASK(res), error);
    return n > 0 ? (guint64)n : 0;
}

static void larmor_listen_class_init(LarmorListenClass *klass)
{
    g_signal_new("changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 0);
}

static void larmor_listen_init(LarmorListen *self) {}
