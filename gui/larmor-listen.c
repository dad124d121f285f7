/* The workbench's MRD listener and what it receives (larmor-listen.h). */
#include "larmor-listen.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "larmor-util.h"
#include "larmor.h"

/* One stream's header and acquisitions, shared with a save in progress
 * (reference counted: a new stream may replace it meanwhile). Only ever
 * appended to, under the listener's lock; a message never changes once in. */
typedef struct {
    gatomicrefcount rc;
    unsigned long conn;
    char *xml;
    GPtrArray *acqs; /* lm_mrd_msg * */
} Stream;

static void msg_free(gpointer p)
{
    lm_mrd_msg_clear(p);
    g_free(p);
}

static Stream *stream_new(unsigned long conn, const char *xml)
{
    Stream *s = g_new0(Stream, 1);
    g_atomic_ref_count_init(&s->rc);
    s->conn = conn;
    s->xml = g_strdup(xml);
    s->acqs = g_ptr_array_new_with_free_func(msg_free);
    return s;
}

static Stream *stream_ref(Stream *s)
{
    g_atomic_ref_count_inc(&s->rc);
    return s;
}

static void stream_unref(Stream *s)
{
    if (s && g_atomic_ref_count_dec(&s->rc)) {
        g_ptr_array_unref(s->acqs);
        g_free(s->xml);
        g_free(s);
    }
}

/* A frame on its way to the main thread. */
typedef struct {
    unsigned long conn;
    lm_volume *vol;
    gint64 number;
    double latency;
} Frame;

static void frame_free(gpointer p)
{
    Frame *f = p;
    lm_volume_free(f->vol);
    g_free(f);
}

struct _LarmorListen {
    GObject parent_instance;
    lm_mrd_listener *l;
    char host[16];
    int port;
    guint64 keep;

    GMutex lock; /* what the connections' threads write */
    guint t_started, t_active;
    guint64 t_received;
    Stream *stream;        /* the newest stream's */
    guint64 stream_bytes;
    gboolean stream_over;  /* past keep: the stream is not kept whole */
    GPtrArray *pending;    /* Frame * */
    char *t_note;
    gboolean queued;       /* an idle source is on its way */

    /* main thread */
    guint started, active;
    guint64 received, kept;
    gboolean over;
    LarmorVolume *frames;
    unsigned long frames_conn;
    guint64 frame_bytes;
    gboolean frames_over;
    gint64 frame_number;
    double latency;
    char *note;
};

G_DEFINE_FINAL_TYPE(LarmorListen, larmor_listen, G_TYPE_OBJECT)

enum { SIGNAL_CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];

/* ---- main thread -------------------------------------------------------- */

static void take_frame(LarmorListen *self, Frame *f)
{
    const guint64 b = (guint64)lm_volume_count(f->vol) * sizeof(lm_cfloat);
    self->frame_number = f->number;
    self->latency = f->latency;
    const gboolean same = self->frames && self->frames_conn == f->conn;
    if (same && self->frame_bytes + b > self->keep) {
        self->frames_over = TRUE; /* the status line says so */
        return;
    }
    lm_volume *v = f->vol;
    f->vol = NULL;
    if (same && larmor_volume_append_frame(self->frames, v, NULL)) {
        self->frame_bytes += b;
        return;
    }
    if (same)
        return; /* another grid within a stream: append_frame freed it */
    char *name = g_strdup_printf("Received frames (connection %lu)", f->conn);
    g_clear_object(&self->frames);
    self->frames = larmor_volume_new_take(v, name);
    g_free(name);
    self->frames_conn = f->conn;
    self->frame_bytes = b;
    self->frames_over = FALSE;
}

static gboolean dispatch(gpointer data)
{
    LarmorListen *self = data;
    g_mutex_lock(&self->lock);
    self->queued = FALSE;
    GPtrArray *frames = self->pending;
    self->pending = g_ptr_array_new_with_free_func(frame_free);
    self->started = self->t_started;
    self->active = self->t_active;
    self->received = self->t_received;
    self->kept = self->stream ? self->stream->acqs->len : 0;
    self->over = self->stream_over;
    if (self->t_note) {
        g_free(self->note);
        self->note = g_steal_pointer(&self->t_note);
    }
    g_mutex_unlock(&self->lock);
    for (guint i = 0; i < frames->len; i++)
        take_frame(self, frames->pdata[i]);
    g_ptr_array_unref(frames);
    g_signal_emit(self, signals[SIGNAL_CHANGED], 0);
    return G_SOURCE_REMOVE;
}

/* Under the lock: one idle source at a time carries everything new. */
static void queue_locked(LarmorListen *self)
{
    if (self->queued)
        return;
    self->queued = TRUE;
    g_idle_add_full(G_PRIORITY_DEFAULT, dispatch, g_object_ref(self), g_object_unref);
}

/* ---- the connections' threads ------------------------------------------- */

static void on_log(void *user, const char *line)
{
    LarmorListen *self = user;
    g_mutex_lock(&self->lock);
    g_free(self->t_note);
    self->t_note = g_strdup(line);
    queue_locked(self);
    g_mutex_unlock(&self->lock);
}

static void on_started(void *user, unsigned long id, const char *peer)
{
    LarmorListen *self = user;
    g_mutex_lock(&self->lock);
    self->t_started++;
    self->t_active++;
    queue_locked(self);
    g_mutex_unlock(&self->lock);
}

static void on_ended(void *user, const lm_mrd_listener_end *e)
{
    LarmorListen *self = user;
    g_mutex_lock(&self->lock);
    self->t_active--;
    queue_locked(self);
    g_mutex_unlock(&self->lock);
}

static guint64 acq_bytes(const lm_mrd_msg *m)
{
    return sizeof m->acq + 4u * (guint64)m->acq.number_of_samples *
                               (m->acq.trajectory_dimensions + 2u * m->acq.active_channels);
}

/* A copy of an acquisition message (the caller's is valid during the call only). */
static lm_mrd_msg *acq_copy(const lm_mrd_msg *m)
{
    lm_mrd_msg *c = g_try_new0(lm_mrd_msg, 1);
    if (!c)
        return NULL;
    c->id = m->id;
    c->acq = m->acq;
    const size_t nt = (size_t)m->acq.number_of_samples * m->acq.trajectory_dimensions;
    const size_t nd = 2 * (size_t)m->acq.number_of_samples * m->acq.active_channels;
    /* malloc, not g_malloc: lm_mrd_msg_clear frees them with free() */
    c->traj = m->traj && nt ? malloc(nt * sizeof(float)) : NULL;
    c->data = nd ? malloc(nd * sizeof(float)) : NULL;
    if ((m->traj && nt && !c->traj) || (nd && !c->data)) {
        msg_free(c);
        return NULL;
    }
    if (c->traj)
        memcpy(c->traj, m->traj, nt * sizeof(float));
    if (c->data)
        memcpy(c->data, m->data, nd * sizeof(float));
    return c;
}

static void on_received(void *user, unsigned long id, const lm_mrd_msg *m)
{
    LarmorListen *self = user;
    g_mutex_lock(&self->lock);
    if (m->id == LM_MRD_MSG_HEADER) { /* a new stream: the one kept from now on */
        stream_unref(self->stream);
        self->stream = stream_new(id, m->text);
        self->stream_bytes = strlen(m->text);
        self->stream_over = FALSE;
    } else if (m->id == LM_MRD_MSG_ACQUISITION) {
        self->t_received++;
        Stream *s = self->stream;
        if (s && s->conn == id && !self->stream_over) {
            const guint64 b = acq_bytes(m);
            lm_mrd_msg *c = self->stream_bytes + b <= self->keep ? acq_copy(m) : NULL;
            if (c) {
                g_ptr_array_add(s->acqs, c);
                self->stream_bytes += b;
            } else {
                self->stream_over = TRUE; /* the status line says so */
            }
        }
    }
    queue_locked(self);
    g_mutex_unlock(&self->lock);
}

/* "<name>NAME</name><value>V</value>" of an image's attribute XML. */
static double meta_value(const char *xml, const char *name, double none)
{
    if (!xml)
        return none;
    char *key = g_strdup_printf("<name>%s</name><value>", name);
    const char *p = strstr(xml, key);
    double v = p ? g_ascii_strtod(p + strlen(key), NULL) : none;
    g_free(key);
    return v;
}

static void on_image(void *user, unsigned long id, const lm_mrd_msg *m)
{
    LarmorListen *self = user;
    const ISMRMRD_ImageHeader *h = &m->image;
    if (h->channels != 1 || (h->data_type != ISMRMRD_FLOAT && h->data_type != ISMRMRD_CXFLOAT))
        return;
    const int64_t dims[3] = {h->matrix_size[0], h->matrix_size[1], h->matrix_size[2] ? h->matrix_size[2] : 1};
    double vox[3];
    for (int a = 0; a < 3; a++)
        vox[a] = h->field_of_view[a] > 0 ? h->field_of_view[a] / (double)dims[a] : 1.0;
    lm_error err = {0};
    lm_volume *v = lm_volume_new(dims, vox, &err);
    if (!v)
        return;
    const int64_t n = lm_volume_count(v);
    const float *p = m->pixels;
    for (int64_t i = 0; i < n; i++)
        v->data[i] = h->data_type == ISMRMRD_CXFLOAT ? p[2 * i] + I * p[2 * i + 1] : p[i];
    Frame *f = g_new0(Frame, 1);
    f->conn = id;
    f->vol = v;
    f->number = (gint64)meta_value(m->text, "frame", h->image_index);
    f->latency = meta_value(m->text, "latency_s", -1);
    g_mutex_lock(&self->lock);
    g_ptr_array_add(self->pending, f);
    queue_locked(self);
    g_mutex_unlock(&self->lock);
}

static gboolean release_idle(gpointer data)
{
    g_object_unref(data); /* the listener's reference, on the main thread */
    return G_SOURCE_REMOVE;
}

/* The listener is gone (after every other callback): its reference goes
 * after the idle sources queued before. */
static void on_released(void *user)
{
    g_idle_add_full(G_PRIORITY_DEFAULT, release_idle, user, NULL);
}

/* ---- the object ----------------------------------------------------------- */

LarmorListen *larmor_listen_new(const char *spec, guint64 keep, GError **error)
{
    LarmorListen *self = g_object_new(LARMOR_TYPE_LISTEN, NULL);
    self->keep = keep ? keep : LARMOR_LISTEN_KEEP_DEFAULT;
    lm_mrd_listener_cfg cfg;
    lm_mrd_listener_cfg_init(&cfg);
    cfg.user = self;
    cfg.log = on_log;
    cfg.started = on_started;
    cfg.ended = on_ended;
    cfg.received = on_received;
    cfg.image_sent = on_image;
    cfg.released = on_released;
    lm_error err = {0};
    /* the listener's own reference: its threads may call back after a stop,
     * until `released` */
    g_object_ref(self);
    if (lm_mrd_listener_start(spec, &cfg, &self->l, &err) != LM_OK) {
        larmor_set_error(error, &err);
        g_object_unref(self);
        g_object_unref(self);
        return NULL;
    }
    g_strlcpy(self->host, lm_mrd_listener_host(self->l), sizeof self->host);
    self->port = lm_mrd_listener_port(self->l);
    return self;
}

void larmor_listen_stop(LarmorListen *self)
{
    if (!self->l)
        return;
    /* never waits for a reconstruction: the connections end on their own and
     * their last callbacks arrive as ever */
    lm_mrd_listener_stop(self->l, LM_MRD_LISTENER_ENDING);
    self->l = NULL;
    dispatch(self); /* "Stopped" and what has arrived, now */
}

gboolean larmor_listen_is_listening(LarmorListen *self)
{
    return self->l != NULL;
}

int larmor_listen_get_port(LarmorListen *self)
{
    return self->port;
}

const char *larmor_listen_get_host(LarmorListen *self)
{
    return self->host;
}

guint larmor_listen_get_connections(LarmorListen *self)
{
    return self->started;
}

guint larmor_listen_get_active(LarmorListen *self)
{
    return self->active;
}

guint64 larmor_listen_get_received(LarmorListen *self)
{
    return self->received;
}

guint64 larmor_listen_get_kept(LarmorListen *self)
{
    return self->kept;
}

LarmorVolume *larmor_listen_get_frames(LarmorListen *self)
{
    return self->frames;
}

gint64 larmor_listen_get_frame_number(LarmorListen *self)
{
    return self->frame_number;
}

double larmor_listen_get_latency(LarmorListen *self)
{
    return self->latency;
}

const char *larmor_listen_get_note(LarmorListen *self)
{
    return self->note;
}

gboolean larmor_listen_has_data(LarmorListen *self)
{
    return self->kept > 0 && !self->over;
}

char *larmor_listen_get_status(LarmorListen *self)
{
    GString *s = g_string_new(NULL);
    if (self->l)
        g_string_append_printf(s, "Listening on %s:%d", self->host, self->port);
    else
        g_string_append(s, "Stopped");
    g_string_append_printf(s, " · %u connection%s", self->started, self->started == 1 ? "" : "s");
    if (self->active)
        g_string_append_printf(s, " (%u open)", self->active);
    g_string_append_printf(s, " · %" G_GUINT64_FORMAT " acquisitions", self->received);
    /* frames counted as the time bar counts them (the protocol's frame
     * number starts at 1, the bar at 0: one count for both) */
    if (self->frames) {
        const int64_t n = larmor_volume_get_n_frames(self->frames);
        g_string_append_printf(s, " · %" G_GINT64_FORMAT " frame%s", (gint64)n, n == 1 ? "" : "s");
    }
    if (self->frames && self->latency >= 0)
        g_string_append_printf(s, " · last latency %.0f ms", 1e3 * self->latency);
    if (self->over || self->frames_over) {
        char *lim = g_format_size_full(self->keep, G_FORMAT_SIZE_IEC_UNITS);
        g_string_append_printf(s, " · past %s kept: %s", lim,
                               self->over && self->frames_over ? "the stream's data and later frames are not kept"
                               : self->over                    ? "the stream's data are not kept (not to be saved)"
                                                               : "later frames are not shown");
        g_free(lim);
    }
    return g_string_free(s, FALSE);
}

/* ---- saving --------------------------------------------------------------- */

typedef struct {
    Stream *stream;
    lm_mrd_msg **acqs;
    guint n;
    char *path;
} SaveJob;

static void save_job_free(gpointer p)
{
    SaveJob *j = p;
    stream_unref(j->stream);
    g_free(j->acqs);
    g_free(j->path);
    g_free(j);
}

static void save_in_thread(GTask *task, gpointer source, gpointer data, GCancellable *c)
{
    SaveJob *j = data;
    lm_error err = {0};
    if (lm_mrd_write_stream(j->path, j->stream->xml, (const lm_mrd_msg *const *)j->acqs, j->n, &err) != LM_OK) {
        GError *e = NULL;
        larmor_set_error(&e, &err);
        g_task_return_error(task, e);
        return;
    }
    g_task_return_int(task, j->n);
}

void larmor_listen_save_async(LarmorListen *self, const char *path, GAsyncReadyCallback done, gpointer data)
{
    GTask *task = g_task_new(self, NULL, done, data);
    SaveJob *j = g_new0(SaveJob, 1);
    j->path = g_strdup(path);
    g_mutex_lock(&self->lock);
    if (self->stream && self->stream->acqs->len && !self->stream_over) {
        /* the messages as they are now: later ones may be appended meanwhile */
        j->stream = stream_ref(self->stream);
        j->n = j->stream->acqs->len;
        j->acqs = g_memdup2(j->stream->acqs->pdata, j->n * sizeof(gpointer));
    }
    g_mutex_unlock(&self->lock);
    if (!j->stream) {
        save_job_free(j);
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_FAILED, "%s",
                                "No received data to save: no stream arrived whole");
        g_object_unref(task);
        return;
    }
    g_task_set_task_data(task, j, save_job_free);
    g_task_run_in_thread(task, save_in_thread);
    g_object_unref(task);
}

guint64 larmor_listen_save_finish(LarmorListen *self, GAsyncResult *res, GError **error)
{
    gssize n = g_task_propagate_int(G_TASK(res), error);
    return n > 0 ? (guint64)n : 0;
}

static void larmor_listen_dispose(GObject *object)
{
    LarmorListen *self = LARMOR_LISTEN(object);
    g_warn_if_fail(self->l == NULL); /* a listener holds a reference until released */
    g_clear_object(&self->frames);
    G_OBJECT_CLASS(larmor_listen_parent_class)->dispose(object);
}

static void larmor_listen_finalize(GObject *object)
{
    LarmorListen *self = LARMOR_LISTEN(object);
    stream_unref(self->stream);
    g_ptr_array_unref(self->pending);
    g_free(self->t_note);
    g_free(self->note);
    g_mutex_clear(&self->lock);
    G_OBJECT_CLASS(larmor_listen_parent_class)->finalize(object);
}

static void larmor_listen_class_init(LarmorListenClass *klass)
{
    G_OBJECT_CLASS(klass)->dispose = larmor_listen_dispose;
    G_OBJECT_CLASS(klass)->finalize = larmor_listen_finalize;
    /* Counts, frames or the note changed (main thread). */
    signals[SIGNAL_CHANGED] = g_signal_new("changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                           NULL, G_TYPE_NONE, 0);
}

static void larmor_listen_init(LarmorListen *self)
{
    g_mutex_init(&self->lock);
    self->pending = g_ptr_array_new_with_free_func(frame_free);
    self->latency = -1;
}
