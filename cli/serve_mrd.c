/* The MRD streaming server. Each connection has its own thread, which reads
 * a message, acts on it and only then reads the next: while it
 * reconstructs or sends an image it takes nothing more from the socket, so
 * a client that sends fast is held back by TCP itself (backpressure).
 * What a connection holds is bounded: its acquisitions (max_buffer bytes),
 * one image being sent, and a send that does not progress for
 * send_timeout_s drops the client. Reconstructions of all connections take
 * one lock in turn, so connections share the GPU (or the CPU's threads)
 * one reconstruction at a time.
 *
 * Within a connection (docs/mrd-server.md): CONFIG_FILE or CONFIG_TEXT,
 * then HEADER, then ACQUISITIONs; a slice is reconstructed when its
 * last acquisition (ISMRMRD_ACQ_LAST_IN_SLICE) arrives, a repetition at
 * ISMRMRD_ACQ_LAST_IN_REPETITION, whatever is left at
 * ISMRMRD_ACQ_LAST_IN_MEASUREMENT or CLOSE; each becomes an IMAGE; CLOSE
 * is answered with CLOSE. Any failure sends ERROR (one line) and closes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4 */
#endif
#include "serve_mrd.h"

#include "larmor.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <libxml/parser.h>

#include "cli_util.h"
#include "serve_mrd_config.h"

void mrd_server_opts_init(mrd_server_opts *o)
{
    memset(o, 0, sizeof *o);
    mrd_config_default_presets(o->presets, sizeof o->presets);
    o->send_timeout_s = 10;
    o->idle_timeout_s = 300;
    o->max_buffer = (uint64_t)2 << 30;
    o->max_connections = 8;
}

#if !LM_HAVE_ISMRMRD

int cli_serve_mrd(const char *spec, const mrd_server_opts *o)
{
    (void)o;
    return cli_errorf("serve --mrd %s: built without libismrmrd, which the MRD protocol's headers come from", spec);
}

#else


static volatile sig_atomic_t g_stop;
static pthread_mutex_t g_recon_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_active;
static atomic_ulong g_next_id;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

/* ---- the socket as a bounded reader and a writer -------------------------- */

typedef struct conn {
    int fd;
    unsigned long id;
    char peer[64];
    const mrd_server_opts *so;
    int timed_out; /* a read or a send timed out */
} conn;

static int sock_read(void *user, void *buf, size_t n)
{
    conn *c = user;
    char *p = buf;
    size_t got = 0;
    while (got < n) {
        const ssize_t k = recv(c->fd, p + got, n - got, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            c->timed_out = 1;
        if (k <= 0)
            return got == 0 && k == 0 ? 1 : -1;
        got += (size_t)k;
    }
    return 0;
}

static int sock_write(conn *c, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        const ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            c->timed_out = 1;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int send_msg(conn *c, const lm_mrd_msg *m, lm_error *err)
{
    char *b;
    size_t n;
    if (lm_mrd_msg_write(m, &b, &n, err) != LM_OK)
        return -1;
    const int r = sock_write(c, b, n);
    free(b);
    if (r)
        lm_fail(err, LM_ERR_IO, "%s", c->timed_out ? "the client took no image data for the send timeout: dropped"
                                                     : "the client went away");
    return r;
}

/* ERROR with one line (Gadgetron's: uint64 length, text); failures ignored. */
static void send_error(conn *c, const char *line)
{
    lm_mrd_msg m = {.id = LM_MRD_MSG_ERROR, .text = (char *)line, .text_len = strlen(line)};
    lm_error e = {0};
    (void)send_msg(c, &m, &e);
}

/* ---- one connection ----------------------------------------------------- */

enum { WANT_CONFIG, WANT_HEADER, WANT_DATA };

typedef struct session {
    conn *c;
    mrd_job_opts opts;
    int state;
    char *xml;
    size_t xml_len;
    lm_mrd_msg **noise;   /* noise scans: used by every reconstruction */
    size_t nnoise;
    lm_mrd_msg **pending; /* imaging acquisitions not yet reconstructed, arrival order */
    size_t npending, cap_pending, cap_noise;
    uint64_t held;        /* bytes of acquisitions held */
    uint64_t received;    /* acquisitions received */
    int channels;         /* of the first imaging acquisition (0: none yet) */
    unsigned images;      /* sent */
    double last_in;       /* when the latest acquisition arrived */
} session;

static void session_clear(session *s)
{
    for (size_t i = 0; i < s->nnoise; i++) {
        lm_mrd_msg_clear(s->noise[i]);
        free(s->noise[i]);
    }
    for (size_t i = 0; i < s->npending; i++) {
        lm_mrd_msg_clear(s->pending[i]);
        free(s->pending[i]);
    }
    free(s->noise);
    free(s->pending);
    free(s->xml);
}

static uint64_t msg_bytes(const lm_mrd_msg *m)
{
    return sizeof m->acq + 4u * (uint64_t)m->acq.number_of_samples *
                               (m->acq.trajectory_dimensions + 2u * m->acq.active_channels);
}

static int flag(const lm_mrd_msg *m, int bit)
{
    return (m->acq.flags >> (bit - 1)) & 1u;
}

/* The attribute XML (ismrmrdMeta) of an image. */
static char *image_meta(const lm_recon_opts *o, const lm_recon_result *res, const char *variant, double latency)
{
    char *x = NULL;
    const int is_cg = o->method == LM_METHOD_CG;
    if (asprintf(&x,
                 "<?xml version=\"1.0\"?><ismrmrdMeta>"
                 "<meta><name>method</name><value>%s</value></meta>"
                 "<meta><name>variant</name><value>%s</value></meta>"
                 "<meta><name>lambda</name><value>%.9g</value></meta>"
                 "<meta><name>lambda_auto</name><value>%d</value></meta>"
                 "<meta><name>reg</name><value>%s</value></meta>"
                 "<meta><name>iters</name><value>%d</value></meta>"
                 "<meta><name>coils</name><value>%d</value></meta>"
                 "<meta><name>prewhitened</name><value>%d</value></meta>"
                 "<meta><name>time_q_s</name><value>%.6f</value></meta>"
                 "<meta><name>time_fhd_s</name><value>%.6f</value></meta>"
                 "<meta><name>time_cg_s</name><value>%.6f</value></meta>"
                 "<meta><name>time_total_s</name><value>%.6f</value></meta>"
                 "<meta><name>latency_s</name><value>%.6f</value></meta>"
                 "</ismrmrdMeta>",
                 lm_method_name(o->method), is_cg ? variant : "", is_cg ? res->lambda_used : o->lambda,
                 o->lambda_auto, lm_reg_name(o->reg), res->iters_done, res->coils, res->noise_cov != NULL,
                 res->time_q_s, res->time_fhd_s, res->time_cg_s, res->time_total_s, latency) < 0)
        return NULL;
    return x;
}

/* Reconstructs acquisitions group[0..n) (one slice of one repetition and
 * contrast, or one volume) with the noise scans, as larmor-cli recon
 * reconstructs a file's, and sends the image. */
static lm_code recon_group(session *s, lm_mrd_msg **group, size_t n, lm_error *err)
{
    const size_t total = s->nnoise + n;
    const lm_mrd_msg **all = malloc(total * sizeof *all);
    if (!all)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < s->nnoise; i++)
        all[i] = s->noise[i];
    for (size_t i = 0; i < n; i++)
        all[s->nnoise + i] = group[i];
    const ISMRMRD_AcquisitionHeader *first = &group[0]->acq;
    lm_mrd_opts mo;
    lm_mrd_opts_init(&mo);
    mo.repetition = first->idx.repetition;
    mo.contrast = first->idx.contrast;
    lm_mrd m;
    lm_acq *a = NULL;
    lm_recon_result res = {0};
    mo.units = lm_mrd_units_default(); /* the front end's LARMOR_MRD_TRAJ_UNITS, as for files */
    lm_code rc = lm_mrd_from_messages("MRD stream", s->xml, s->xml_len, all, total, &mo, &m, err);
    free(all);
    if (rc == LM_OK) {
        rc = lm_acq_from_mrd(&m, &a, err);
        lm_mrd_clear(&m);
    }
    if (rc != LM_OK)
        return rc;
    if (a->nslices > 1) { /* one slice was asked for: never more */
        lm_acq_free(a);
        return lm_fail(err, LM_ERR_INTERNAL, "MRD stream: a slice group held %d slices", a->nslices);
    }
    /* The options and geometry larmor-cli recon would take for this file. */
    lm_recon_opts o = s->opts.recon;
    lm_geom g = a->geom;
    if (s->opts.matrix[0]) {
        lm_geom_init(&g, s->opts.matrix[0], s->opts.matrix[1], s->opts.matrix[2], 0);
        g.basis = a->geom.basis;
        for (int k = 0; k < 3; k++)
            g.fov_mm[k] = a->geom.fov_mm[k];
    }
    if (s->opts.dirac)
        g.basis = LM_BASIS_DIRAC;
    if (a->cartesian && !s->opts.method_given && !(a->accel > 1 || a->missing_lines > 0))
        o.method = LM_METHOD_FFT;
    if (o.compress_coils > a->kdata->ncoils) {
        rc = lm_fail(err, LM_ERR_INVALID, "--coils-compress %d: the data have only %lld channels", o.compress_coils,
                     (long long)a->kdata->ncoils);
        goto done;
    }
    if (a->noise && a->kdata->ncoils > 1)
        o.noise = a->noise;
    o.progress = NULL;
    pthread_mutex_lock(&g_recon_lock);
    rc = lm_recon_run(&g, a->traj, a->kdata, &o, &res, err);
    pthread_mutex_unlock(&g_recon_lock);
    if (rc != LM_OK)
        goto done;
    const lm_variant *v = res.fell_back ? lm_variant_find(res.fallback_variant, NULL) : lm_variant_resolve(o.variant, NULL);
    const lm_volume *im = res.image;
    const size_t nvox = (size_t)(im->dims[0] * im->dims[1] * im->dims[2]);
    lm_mrd_msg out = {.id = LM_MRD_MSG_IMAGE};
    ISMRMRD_ImageHeader *h = &out.image;
    ismrmrd_init_image_header(h);
    const int cx = s->opts.as_complex;
    h->data_type = cx ? ISMRMRD_CXFLOAT : ISMRMRD_FLOAT;
    h->image_type = cx ? ISMRMRD_IMTYPE_COMPLEX : ISMRMRD_IMTYPE_MAGNITUDE;
    h->measurement_uid = first->measurement_uid;
    for (int k = 0; k < 3; k++) {
        h->matrix_size[k] = (uint16_t)im->dims[k];
        h->field_of_view[k] = (float)g.fov_mm[k];
        h->position[k] = first->position[k];
        h->read_dir[k] = first->read_dir[k];
        h->phase_dir[k] = first->phase_dir[k];
        h->slice_dir[k] = first->slice_dir[k];
        h->patient_table_position[k] = first->patient_table_position[k];
    }
    h->channels = 1;
    h->average = first->idx.average;
    h->slice = first->idx.slice;
    h->contrast = first->idx.contrast;
    h->phase = first->idx.phase;
    h->repetition = first->idx.repetition;
    h->set = first->idx.set;
    h->acquisition_time_stamp = first->acquisition_time_stamp;
    h->image_index = (uint16_t)(s->images + 1);
    h->image_series_index = 1;
    out.pixel_bytes = nvox * (cx ? 8 : 4);
    float *px = malloc(out.pixel_bytes);
    if (!px) {
        rc = lm_fail(err, LM_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < nvox; i++) {
        if (cx) {
            px[2 * i] = crealf(im->data[i]);
            px[2 * i + 1] = cimagf(im->data[i]);
        } else {
            px[i] = cabsf(im->data[i]);
        }
    }
    out.pixels = px;
    out.text = image_meta(&o, &res, v ? v->name : "", cli_now() - s->last_in);
    out.text_len = out.text ? strlen(out.text) : 0;
    if (!out.text)
        rc = lm_fail(err, LM_ERR_NOMEM, "out of memory");
    else if (send_msg(s->c, &out, err))
        rc = err->code;
    else
        s->images++;
    lm_mrd_msg_clear(&out);
done:
    lm_recon_result_clear(&res);
    lm_acq_free(a);
    return rc;
}

/* Reconstructs the pending acquisitions that match: rep < 0 all, else that
 * repetition (and slice >= 0: that slice alone). Groups (repetition,
 * contrast, slice) go in the order of their first acquisition. */
static lm_code flush(session *s, int rep, int slice, lm_error *err)
{
    lm_code rc = LM_OK;
    lm_mrd_msg **group = malloc((s->npending ? s->npending : 1) * sizeof *group);
    if (!group)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    while (rc == LM_OK) {
        /* the first pending acquisition that matches names the group */
        const lm_mrd_msg *key = NULL;
        for (size_t i = 0; i < s->npending && !key; i++) {
            const ISMRMRD_EncodingCounters *x = &s->pending[i]->acq.idx;
            if ((rep < 0 || x->repetition == rep) && (slice < 0 || x->slice == slice))
                key = s->pending[i];
        }
        if (!key)
            break;
        const ISMRMRD_EncodingCounters k = key->acq.idx;
        size_t n = 0, keep = 0;
        for (size_t i = 0; i < s->npending; i++) {
            const ISMRMRD_EncodingCounters *x = &s->pending[i]->acq.idx;
            if (x->repetition == k.repetition && x->contrast == k.contrast && x->slice == k.slice)
                group[n++] = s->pending[i];
            else
                s->pending[keep++] = s->pending[i];
        }
        s->npending = keep;
        rc = recon_group(s, group, n, err);
        for (size_t i = 0; i < n; i++) {
            s->held -= msg_bytes(group[i]);
            lm_mrd_msg_clear(group[i]);
            free(group[i]);
        }
    }
    free(group);
    return rc;
}

static lm_code keep(lm_mrd_msg ***list, size_t *n, size_t *cap, lm_mrd_msg *m, lm_error *err)
{
    if (*n == *cap) {
        const size_t nc = *cap ? 2 * *cap : 256;
        lm_mrd_msg **p = realloc(*list, nc * sizeof *p);
        if (!p)
            return lm_fail(err, LM_ERR_NOMEM, "out of memory");
        *list = p;
        *cap = nc;
    }
    (*list)[(*n)++] = m;
    return LM_OK;
}

static lm_code on_acquisition(session *s, lm_mrd_msg *msg, lm_error *err)
{
    const ISMRMRD_AcquisitionHeader *h = &msg->acq;
    s->received++;
    s->last_in = cli_now();
    const int is_noise = flag(msg, ISMRMRD_ACQ_IS_NOISE_MEASUREMENT);
    if (!is_noise && h->number_of_samples > 0 && h->encoding_space_ref == 0) {
        if (s->channels && h->active_channels != s->channels)
            return lm_fail(err, LM_ERR_FORMAT, "acquisition %llu has %u channels, the ones before %d: the channel "
                           "count may not change within a stream", (unsigned long long)s->received - 1,
                           h->active_channels, s->channels);
        s->channels = h->active_channels;
    }
    const uint64_t b = msg_bytes(msg);
    if (s->held + b > s->c->so->max_buffer)
        return lm_fail(err, LM_ERR_NOMEM, "the acquisitions held exceed this server's %llu MiB per connection "
                       "(--mrd-max-buffer)", (unsigned long long)(s->c->so->max_buffer >> 20));
    lm_mrd_msg *own = malloc(sizeof *own);
    if (!own)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    *own = *msg;
    memset(msg, 0, sizeof *msg); /* the buffers move into own (h points into msg: not used after this) */
    lm_code rc = is_noise ? keep(&s->noise, &s->nnoise, &s->cap_noise, own, err)
                          : keep(&s->pending, &s->npending, &s->cap_pending, own, err);
    if (rc != LM_OK) {
        lm_mrd_msg_clear(own);
        free(own);
        return rc;
    }
    s->held += b;
    if (is_noise)
        return LM_OK;
    if (flag(own, ISMRMRD_ACQ_LAST_IN_MEASUREMENT))
        return flush(s, -1, -1, err);
    if (flag(own, ISMRMRD_ACQ_LAST_IN_REPETITION))
        return flush(s, own->acq.idx.repetition, -1, err);
    if (flag(own, ISMRMRD_ACQ_LAST_IN_SLICE))
        return flush(s, own->acq.idx.repetition, own->acq.idx.slice, err);
    return LM_OK;
}

/* One message; *done set after CLOSE. */
static lm_code on_message(session *s, lm_mrd_msg *m, int *done, lm_error *err)
{
    switch (m->id) {
    case LM_MRD_MSG_CONFIG_FILE:
    case LM_MRD_MSG_CONFIG_TEXT:
        if (s->state != WANT_CONFIG)
            return lm_fail(err, LM_ERR_FORMAT, "a second configuration (one CONFIG per connection)");
        s->state = WANT_HEADER;
        return m->id == LM_MRD_MSG_CONFIG_FILE ? mrd_config_preset(&s->opts, s->c->so->presets, m->text, err)
                                               : mrd_config_apply(&s->opts, m->text, err);
    case LM_MRD_MSG_HEADER: {
        if (s->state == WANT_CONFIG)
            return lm_fail(err, LM_ERR_FORMAT, "HEADER before CONFIG: send CONFIG_FILE or CONFIG_TEXT first");
        if (s->state != WANT_HEADER)
            return lm_fail(err, LM_ERR_FORMAT, "a second HEADER");
        lm_mrd_header hdr;
        if (lm_mrd_header_parse(m->text, m->text_len, "MRD stream header", &hdr, err) != LM_OK)
            return err->code;
        s->xml = m->text;
        s->xml_len = m->text_len;
        m->text = NULL;
        s->state = WANT_DATA;
        return LM_OK;
    }
    case LM_MRD_MSG_ACQUISITION:
        if (s->state != WANT_DATA)
            return lm_fail(err, LM_ERR_FORMAT, "ACQUISITION before %s", s->state == WANT_CONFIG ? "CONFIG" : "HEADER");
        return on_acquisition(s, m, err);
    case LM_MRD_MSG_WAVEFORM:
    case LM_MRD_MSG_TEXT:
        return LM_OK; /* physiology and notes: not used */
    case LM_MRD_MSG_CLOSE: {
        lm_code rc = s->npending ? flush(s, -1, -1, err) : LM_OK;
        if (rc != LM_OK)
            return rc;
        lm_mrd_msg cl = {.id = LM_MRD_MSG_CLOSE};
        if (send_msg(s->c, &cl, err))
            return err->code;
        *done = 1;
        return LM_OK;
    }
    case LM_MRD_MSG_ERROR:
        return lm_fail(err, LM_ERR_IO, "the client sent ERROR: %.200s", m->text ? m->text : "");
    default:
        return lm_fail(err, LM_ERR_FORMAT, "message id %u is not accepted by this server", m->id);
    }
}

static void set_timeout(int fd, int opt, double s)
{
    struct timeval tv = {(time_t)s, (suseconds_t)((s - (double)(time_t)s) * 1e6)};
    (void)setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

static void *serve_connection(void *arg)
{
    conn *c = arg;
    const double t0 = cli_now();
    set_timeout(c->fd, SO_RCVTIMEO, c->so->idle_timeout_s);
    set_timeout(c->fd, SO_SNDTIMEO, c->so->send_timeout_s);
    session s;
    memset(&s, 0, sizeof s);
    s.c = c;
    mrd_job_opts_init(&s.opts);
    lm_mrd_limits lim;
    lm_mrd_limits_init(&lim);
    lm_mrd_reader r = {sock_read, c};
    lm_error err = {0};
    lm_code rc = LM_OK;
    int done = 0, closed = 0;
    while (!done && !g_stop) {
        lm_mrd_msg m;
        rc = lm_mrd_msg_read(&r, &lim, &m, &closed, &err);
        if (rc != LM_OK) {
            if (c->timed_out)
                lm_fail(&err, LM_ERR_IO, "no data for %.0f s: dropped", c->so->idle_timeout_s);
            break;
        }
        rc = on_message(&s, &m, &done, &err);
        lm_mrd_msg_clear(&m);
        if (rc != LM_OK)
            break;
    }
    if (rc != LM_OK && !closed) {
        send_error(c, err.msg);
        fprintf(stderr, "larmor-cli serve: MRD connection %lu (%s): error: %s\n", c->id, c->peer, err.msg);
    } else if (rc != LM_OK) {
        fprintf(stderr, "larmor-cli serve: MRD connection %lu (%s): the client left without CLOSE (%llu "
                "acquisitions, %u images)\n", c->id, c->peer, (unsigned long long)s.received, s.images);
    } else {
        fprintf(stderr, "larmor-cli serve: MRD connection %lu (%s): %llu acquisitions, %u images in %.3f s\n", c->id,
                c->peer, (unsigned long long)s.received, s.images, cli_now() - t0);
    }
    session_clear(&s);
    shutdown(c->fd, SHUT_RDWR);
    close(c->fd);
    free(c);
    atomic_fetch_sub(&g_active, 1);
    return NULL;
}

/* ---- listening ---------------------------------------------------------- */

/* "PORT" or "ADDR:PORT" (IPv4); 0, or -1 with the line printed. */
static int parse_spec(const char *spec, struct sockaddr_in *a)
{
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    char host[64] = "127.0.0.1";
    const char *colon = strrchr(spec, ':'), *port = spec;
    if (colon) {
        const size_t n = (size_t)(colon - spec);
        if (n == 0 || n >= sizeof host)
            return cli_errorf("serve --mrd %s: not [ADDR:]PORT", spec), -1;
        memcpy(host, spec, n);
        host[n] = '\0';
        port = colon + 1;
    }
    char *end;
    errno = 0;
    const long p = strtol(port, &end, 10);
    if (end == port || *end || errno || p < 0 || p > 65535)
        return cli_errorf("serve --mrd %s: the port must be 0..65535", spec), -1;
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
        return cli_errorf("serve --mrd %s: '%s' is not an IPv4 address", spec, host), -1;
    a->sin_port = htons((uint16_t)p);
    return 0;
}

static int write_port_file(const char *path, int port)
{
    char text[32];
    snprintf(text, sizeof text, "%d\n", port);
    lm_error err = {0};
    lm_atomic at = {0};
    if (lm_atomic_begin(&at, path, 1, &err) != LM_OK)
        return cli_error(&err);
    if (fputs(text, at.f) < 0) {
        lm_atomic_abort(&at);
        return cli_errorf("serve --mrd: %s: cannot write", path);
    }
    if (lm_atomic_commit(&at, &err) != LM_OK)
        return cli_error(&err);
    return 0;
}

int cli_serve_mrd(const char *spec, const mrd_server_opts *so)
{
    struct sockaddr_in a;
    if (parse_spec(spec, &a))
        return 1;
    const int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (ls < 0)
        return cli_errorf("serve --mrd %s: %s", spec, strerror(errno));
    const int one = 1;
    (void)setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 16)) {
        const int e = errno;
        close(ls);
        return cli_errorf("serve --mrd %s: %s", spec, strerror(e));
    }
    socklen_t al = sizeof a;
    getsockname(ls, (struct sockaddr *)&a, &al);
    char host[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a.sin_addr, host, sizeof host);
    const int port = ntohs(a.sin_port);
    if (so->port_file && write_port_file(so->port_file, port)) {
        close(ls);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: poll returns */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    xmlInitParser(); /* before the threads that parse headers and configurations */
    larmor_gpu_prewarm();
    fprintf(stderr, "larmor-cli serve: MRD server listening on %s:%d%s\n", host, port,
            a.sin_addr.s_addr == htonl(INADDR_LOOPBACK) ? "" : " (no authentication: keep this port on a private "
                                                              "network)");
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    while (!g_stop) {
        struct pollfd pf = {ls, POLLIN, 0};
        const int r = poll(&pf, 1, 500);
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0 || !(pf.revents & POLLIN))
            continue;
        struct sockaddr_in peer;
        socklen_t pl = sizeof peer;
        const int fd = accept4(ls, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->so = so;
        c->id = atomic_fetch_add(&g_next_id, 1) + 1;
        char ph[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &peer.sin_addr, ph, sizeof ph);
        snprintf(c->peer, sizeof c->peer, "%s:%d", ph, ntohs(peer.sin_port));
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (atomic_fetch_add(&g_active, 1) >= so->max_connections) {
            set_timeout(fd, SO_SNDTIMEO, 1);
            send_error(c, "the server is busy (all its connections are in use): try again later");
            fprintf(stderr, "larmor-cli serve: MRD connection %lu (%s) refused: busy\n", c->id, c->peer);
            close(fd);
            free(c);
            atomic_fetch_sub(&g_active, 1);
            continue;
        }
        pthread_t t;
        if (pthread_create(&t, &attr, serve_connection, c)) {
            close(fd);
            free(c);
            atomic_fetch_sub(&g_active, 1);
        }
    }
    pthread_attr_destroy(&attr);
    close(ls);
    /* connections in progress end with the process */
    larmor_gpu_prewarm_wait();
    fprintf(stderr, "larmor-cli serve: MRD server stopped\n");
    return 0;
}

#endif /* LM_HAVE_ISMRMRD */
