/* One MRD streaming connection's state machine (lm_mrd_server.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf */
#endif
#include "lm_mrd_server.h"

#if LM_HAVE_ISMRMRD

#include <complex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lm_acq.h"
#include "lm_kernels.h"
#include "lm_mrd_config.h"
#include "lm_recon.h"
#include "lm_sliding.h"

static pthread_mutex_t g_gpu_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_running;

void lm_mrd_conn_cfg_init(lm_mrd_conn_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->max_buffer = (uint64_t)2 << 30;
}

int lm_mrd_conn_running(void)
{
    return atomic_load(&g_running);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static lm_code send_msg(const lm_mrd_conn_io *io, const lm_mrd_msg *m, lm_error *err)
{
    char *b;
    size_t n;
    if (lm_mrd_msg_write(m, &b, &n, err) != LM_OK)
        return err->code;
    const lm_code rc = io->write(io->write_user, b, n, err);
    free(b);
    return rc;
}

void lm_mrd_conn_send_error(const lm_mrd_conn_io *io, const char *line)
{
    lm_mrd_msg m = {.id = LM_MRD_MSG_ERROR, .text = (char *)line, .text_len = strlen(line)};
    lm_error e = {0};
    (void)send_msg(io, &m, &e);
}

/* lm_recon_run shared with the other connections: a GPU variant takes the
 * GPU lock (one context, one device memory); on the CPU reconstructions run
 * side by side. The thread count is fixed (threads, else the process's
 * default), never derived from how many run at once: results change with
 * it (3e-3 relative on a 16^3 radial CG), and a connection's image should
 * not depend on what else the server was doing. */
static lm_code run_shared(const lm_geom *g, const lm_acq *a, lm_recon_opts *o, int threads, lm_recon_result *res,
                          lm_error *err)
{
    const lm_variant *v = lm_variant_resolve(o->variant, NULL);
    const int gpu = v && v->device == LM_DEVICE_GPU;
    if (gpu)
        pthread_mutex_lock(&g_gpu_lock);
    atomic_fetch_add(&g_running, 1);
    if (threads > 0)
        o->threads = threads;
    const lm_code rc = lm_recon_run(g, a->traj, a->kdata, o, res, err);
    atomic_fetch_sub(&g_running, 1);
    if (gpu)
        pthread_mutex_unlock(&g_gpu_lock);
    return rc;
}

/* ---- one connection ----------------------------------------------------- */

enum { WANT_CONFIG, WANT_HEADER, WANT_DATA };

typedef struct session {
    const lm_mrd_conn_cfg *cfg;
    const lm_mrd_conn_io *io;
    lm_mrd_job_opts opts;
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
    /* --realtime WINDOW:STEP: the last WINDOW imaging acquisitions, oldest first */
    lm_mrd_msg **ring;
    int nring;
    uint64_t rt_seen;     /* imaging acquisitions received */
    lm_sliding *rt;       /* made at the first frame (maps from its window) */
    const char *rt_variant;
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
    for (int i = 0; i < s->nring; i++) {
        lm_mrd_msg_clear(s->ring[i]);
        free(s->ring[i]);
    }
    free(s->ring);
    lm_sliding_free(s->rt);
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

/* The grid larmor-cli recon would take for these acquisitions: the
 * header's, or --matrix over the header's FOV; --dirac's basis. */
static lm_geom unit_geom(const session *s, const lm_acq *a)
{
    lm_geom g = a->geom;
    if (s->opts.matrix[0]) {
        lm_geom_init(&g, s->opts.matrix[0], s->opts.matrix[1], s->opts.matrix[2], 0);
        g.basis = a->geom.basis;
        for (int k = 0; k < 3; k++)
            g.fov_mm[k] = a->geom.fov_mm[k];
    }
    if (s->opts.dirac)
        g.basis = LM_BASIS_DIRAC;
    return g;
}

/* Sends one image of dims voxels (x fastest) with the geometry of the
 * acquisition first and the attribute XML meta (taken: freed here). */
static lm_code send_image(session *s, const lm_cfloat *data, const int64_t dims[3], const double fov_mm[3],
                          const ISMRMRD_AcquisitionHeader *first, int repetition, char *meta, lm_error *err)
{
    lm_code rc = LM_OK;
    const size_t nvox = (size_t)(dims[0] * dims[1] * dims[2]);
    lm_mrd_msg out = {.id = LM_MRD_MSG_IMAGE};
    ISMRMRD_ImageHeader *h = &out.image;
    ismrmrd_init_image_header(h);
    const int cx = s->opts.as_complex;
    h->data_type = cx ? ISMRMRD_CXFLOAT : ISMRMRD_FLOAT;
    h->image_type = cx ? ISMRMRD_IMTYPE_COMPLEX : ISMRMRD_IMTYPE_MAGNITUDE;
    h->measurement_uid = first->measurement_uid;
    for (int k = 0; k < 3; k++) {
        h->matrix_size[k] = (uint16_t)dims[k];
        h->field_of_view[k] = (float)fov_mm[k];
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
    h->repetition = (uint16_t)repetition;
    h->set = first->idx.set;
    h->acquisition_time_stamp = first->acquisition_time_stamp;
    h->image_index = (uint16_t)(s->images + 1);
    h->image_series_index = 1;
    out.pixel_bytes = nvox * (cx ? 8 : 4);
    float *px = malloc(out.pixel_bytes);
    out.text = meta;
    out.text_len = strlen(meta);
    if (!px) {
        lm_mrd_msg_clear(&out);
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    }
    if (cx)
        memcpy(px, data, nvox * sizeof *data);
    else
        lm_magnitude(data, px, (int64_t)nvox);
    out.pixels = px;
    if (send_msg(s->io, &out, err) == LM_OK) {
        s->images++;
        if (s->io->image_sent)
            s->io->image_sent(s->io->image_user, &out);
    } else {
        rc = err->code;
    }
    lm_mrd_msg_clear(&out);
    return rc;
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
    const lm_geom g = unit_geom(s, a);
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
    rc = run_shared(&g, a, &o, s->cfg->threads, &res, err);
    if (rc != LM_OK)
        goto done;
    const lm_variant *v = res.fell_back ? lm_variant_find(res.fallback_variant, NULL) : lm_variant_resolve(o.variant, NULL);
    char *meta = image_meta(&o, &res, v ? v->name : "", now_s() - s->last_in);
    rc = meta ? send_image(s, res.image->data, res.image->dims, g.fov_mm, first, first->idx.repetition, meta, err)
              : lm_fail(err, LM_ERR_NOMEM, "out of memory");
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

/* ---- real time (--realtime WINDOW:STEP) ------------------------------------ */

static char *rt_meta(const session *s, uint64_t frame, const lm_sliding_report *rep, int coils, double latency)
{
    char *x = NULL;
    if (asprintf(&x,
                 "<?xml version=\"1.0\"?><ismrmrdMeta>"
                 "<meta><name>method</name><value>cg</value></meta>"
                 "<meta><name>variant</name><value>%s</value></meta>"
                 "<meta><name>lambda</name><value>%.9g</value></meta>"
                 "<meta><name>reg</name><value>identity</value></meta>"
                 "<meta><name>iters</name><value>%d</value></meta>"
                 "<meta><name>coils</name><value>%d</value></meta>"
                 "<meta><name>frame</name><value>%llu</value></meta>"
                 "<meta><name>window</name><value>%d</value></meta>"
                 "<meta><name>step</name><value>%d</value></meta>"
                 "<meta><name>time_frame_s</name><value>%.6f</value></meta>"
                 "<meta><name>latency_s</name><value>%.6f</value></meta>"
                 "</ismrmrdMeta>",
                 s->rt_variant, s->opts.recon.lambda, rep->iters, coils, (unsigned long long)frame, s->opts.rt_window,
                 s->opts.rt_step, rep->time_s, latency) < 0)
        return NULL;
    return x;
}

/* The frame of the ring's acquisitions (the last WINDOW), sent at once:
 * read as a file's acquisitions are (lm_mrd_from_messages), reconstructed
 * by lm_sliding_frame from the frame before. */
static lm_code rt_frame(session *s, lm_error *err)
{
    const lm_mrd_msg **all = malloc((size_t)s->nring * sizeof *all);
    if (!all)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    for (int i = 0; i < s->nring; i++)
        all[i] = s->ring[i];
    lm_mrd_opts mo;
    lm_mrd_opts_init(&mo);
    mo.units = lm_mrd_units_default();
    lm_mrd m;
    lm_acq *a = NULL;
    lm_code rc = lm_mrd_from_messages("MRD stream", s->xml, s->xml_len, all, (size_t)s->nring, &mo, &m, err);
    free(all);
    if (rc == LM_OK) {
        rc = lm_acq_from_mrd(&m, &a, err);
        lm_mrd_clear(&m);
    }
    if (rc == LM_OK && (a->nslices > 1 || !a->traj))
        rc = lm_fail(err, LM_ERR_INVALID, "--realtime: a window holds several slices; real time takes one slice");
    const lm_geom g = rc == LM_OK ? unit_geom(s, a) : (lm_geom){0};
    if (rc == LM_OK && !s->rt) {
        s->rt_variant = lm_sliding_variant(s->opts.recon.variant);
        lm_sliding_opts so = {.variant = s->rt_variant, .iters = s->opts.iters_given ? s->opts.recon.iters : 0,
                              .lambda = s->opts.recon.lambda, .threads = s->cfg->threads,
                              .compress = s->opts.recon.compress_coils};
        rc = lm_sliding_new(&g, NULL, &so, &s->rt, err);
    }
    lm_cfloat *img = rc == LM_OK ? lm_alloc((size_t)lm_geom_voxels(&g), sizeof *img, err, "real-time frame") : NULL;
    if (rc == LM_OK && !img)
        rc = LM_ERR_NOMEM;
    lm_sliding_report rep = {0};
    if (rc == LM_OK) {
        const lm_variant *v = lm_variant_find(s->rt_variant, NULL);
        const int gpu = v && v->device == LM_DEVICE_GPU;
        if (gpu)
            pthread_mutex_lock(&g_gpu_lock);
        atomic_fetch_add(&g_running, 1);
        rc = lm_sliding_frame(s->rt, a->traj, a->kdata, img, &rep, err);
        atomic_fetch_sub(&g_running, 1);
        if (gpu)
            pthread_mutex_unlock(&g_gpu_lock);
    }
    if (rc == LM_OK) {
        const uint64_t frame = (s->rt_seen - (uint64_t)s->opts.rt_window) / (uint64_t)s->opts.rt_step + 1;
        char *meta = rt_meta(s, frame, &rep, (int)a->kdata->ncoils, now_s() - s->last_in);
        rc = meta ? send_image(s, img, g.n, g.fov_mm, &s->ring[s->nring - 1]->acq, (int)(frame - 1), meta, err)
                  : lm_fail(err, LM_ERR_NOMEM, "out of memory");
    }
    free(img);
    lm_acq_free(a);
    return rc;
}

/* Keeps own in the ring of the last WINDOW acquisitions (the oldest goes)
 * and makes a frame after every STEP-th once WINDOW have arrived. */
static lm_code rt_acquisition(session *s, lm_mrd_msg *own, lm_error *err)
{
    const int w = s->opts.rt_window;
    if (!s->ring && !(s->ring = calloc((size_t)w, sizeof *s->ring))) {
        lm_mrd_msg_clear(own);
        free(own);
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    }
    if (s->nring == w) {
        s->held -= msg_bytes(s->ring[0]);
        lm_mrd_msg_clear(s->ring[0]);
        free(s->ring[0]);
        memmove(s->ring, s->ring + 1, (size_t)(w - 1) * sizeof *s->ring);
        s->nring--;
    }
    s->ring[s->nring++] = own;
    s->held += msg_bytes(own);
    s->rt_seen++;
    if (s->rt_seen < (uint64_t)w || (s->rt_seen - (uint64_t)w) % (uint64_t)s->opts.rt_step)
        return LM_OK;
    return rt_frame(s, err);
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
    s->last_in = now_s();
    const int is_noise = flag(msg, ISMRMRD_ACQ_IS_NOISE_MEASUREMENT);
    if (!is_noise && h->number_of_samples > 0 && h->encoding_space_ref == 0) {
        if (s->channels && h->active_channels != s->channels)
            return lm_fail(err, LM_ERR_FORMAT, "acquisition %llu has %u channels, the ones before %d: the channel "
                           "count may not change within a stream", (unsigned long long)s->received - 1,
                           h->active_channels, s->channels);
        s->channels = h->active_channels;
    }
    const uint64_t b = msg_bytes(msg);
    if (s->held + b > s->cfg->max_buffer)
        return lm_fail(err, LM_ERR_NOMEM, "the acquisitions held exceed this server's %llu MiB per connection "
                       "(--mrd-max-buffer)", (unsigned long long)(s->cfg->max_buffer >> 20));
    lm_mrd_msg *own = malloc(sizeof *own);
    if (!own)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    *own = *msg;
    memset(msg, 0, sizeof *msg); /* the buffers move into own (h points into msg: not used after this) */
    if (!is_noise && s->opts.rt_window)
        return rt_acquisition(s, own, err);
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
        if (m->id == LM_MRD_MSG_CONFIG_TEXT)
            return lm_mrd_config_apply(&s->opts, m->text, err);
        if (!s->cfg->presets)
            return lm_fail(err, LM_ERR_INVALID, "CONFIG_FILE '%.80s': this server has no preset folder", m->text);
        return lm_mrd_config_preset(&s->opts, s->cfg->presets, m->text, err);
    case LM_MRD_MSG_HEADER: {
        if (s->state == WANT_CONFIG)
            return lm_fail(err, LM_ERR_FORMAT, "HEADER before CONFIG: send CONFIG_FILE or CONFIG_TEXT first");
        if (s->state != WANT_HEADER)
            return lm_fail(err, LM_ERR_FORMAT, "a second HEADER");
        lm_mrd_header hdr;
        if (lm_mrd_header_parse(m->text, m->text_len, "MRD stream header", &hdr, err) != LM_OK)
            return err->code;
        if (s->io->received)
            s->io->received(s->io->received_user, m);
        s->xml = m->text;
        s->xml_len = m->text_len;
        m->text = NULL;
        s->state = WANT_DATA;
        return LM_OK;
    }
    case LM_MRD_MSG_ACQUISITION:
        if (s->state != WANT_DATA)
            return lm_fail(err, LM_ERR_FORMAT, "ACQUISITION before %s", s->state == WANT_CONFIG ? "CONFIG" : "HEADER");
        if (s->io->received)
            s->io->received(s->io->received_user, m);
        return on_acquisition(s, m, err);
    case LM_MRD_MSG_WAVEFORM:
    case LM_MRD_MSG_TEXT:
        return LM_OK; /* physiology and notes: not used */
    case LM_MRD_MSG_CLOSE: {
        lm_code rc = s->npending ? flush(s, -1, -1, err) : LM_OK;
        if (rc != LM_OK)
            return rc;
        lm_mrd_msg cl = {.id = LM_MRD_MSG_CLOSE};
        if (send_msg(s->io, &cl, err) != LM_OK)
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

lm_code lm_mrd_conn_serve(const lm_mrd_conn_cfg *cfg, const lm_mrd_conn_io *io, const volatile int *stop,
                          lm_mrd_conn_stats *stats, lm_error *err)
{
    session s;
    memset(&s, 0, sizeof s);
    s.cfg = cfg;
    s.io = io;
    lm_mrd_job_opts_init(&s.opts);
    lm_mrd_limits lim;
    lm_mrd_limits_init(&lim);
    lm_code rc = LM_OK;
    int done = 0, closed = 0;
    while (!done && !(stop && *stop)) {
        lm_mrd_msg m;
        rc = lm_mrd_msg_read(&io->reader, &lim, &m, &closed, err);
        if (rc != LM_OK)
            break;
        rc = on_message(&s, &m, &done, err);
        lm_mrd_msg_clear(&m);
        if (rc != LM_OK)
            break;
    }
    stats->received = s.received;
    stats->images = s.images;
    stats->closed = closed;
    stats->stopped = rc == LM_OK && !done;
    session_clear(&s);
    return rc;
}

#else
typedef int lm_mrd_server_unavailable; /* ISO C wants a non-empty unit */
#endif /* LM_HAVE_ISMRMRD */
