/* The library's MRD connection without sockets: a client's bytes (CONFIG,
 * HEADER, a three-slice radial stream, CLOSE) through a memory reader give
 * one IMAGE per slice, each reported to image_sent, then CLOSE (the header
 * and every acquisition reported to received); each image
 * equals lm_recon_run on that slice's acquisitions (1e-5 relative); the
 * protocol's order is enforced and CONFIG_FILE is refused when the front
 * end gave no preset folder. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_config.h"
#include "lm_test.h"

#if LM_HAVE_ISMRMRD
#include "larmor.h"
#include "mrd_craft.h"
#include "mrd_slices_craft.h"

typedef struct bytes {
    char *p;
    size_t n;
} bytes;

static void append(bytes *b, const lm_mrd_msg *m)
{
    char *w;
    size_t n;
    lm_error err = {0};
    CHECK(lm_mrd_msg_write(m, &w, &n, &err) == LM_OK);
    b->p = realloc(b->p, b->n + n);
    memcpy(b->p + b->n, w, n);
    b->n += n;
    free(w);
}

static lm_code sink(void *user, const void *buf, size_t n, lm_error *err)
{
    (void)err;
    bytes *b = user;
    b->p = realloc(b->p, b->n + n);
    memcpy(b->p + b->n, buf, n);
    b->n += n;
    return LM_OK;
}

static void count_image(void *user, const lm_mrd_msg *im)
{
    CHECK(im->id == LM_MRD_MSG_IMAGE);
    ++*(int *)user;
}

/* received: the HEADER once (counted in [0]), then each ACQUISITION ([1]) */
static int g_received[2];

static void count_received(void *user, const lm_mrd_msg *m)
{
    (void)user;
    if (m->id == LM_MRD_MSG_HEADER)
        CHECK(g_received[1] == 0 && m->text && strstr(m->text, "ismrmrdHeader"));
    g_received[m->id == LM_MRD_MSG_ACQUISITION] += m->id == LM_MRD_MSG_HEADER || m->id == LM_MRD_MSG_ACQUISITION;
}

static lm_code serve(const bytes *in, const char *presets, bytes *out, int *images_seen, lm_error *err)
{
    lm_mrd_membuf mb = {(const unsigned char *)in->p, in->n, 0};
    lm_mrd_conn_cfg cfg;
    lm_mrd_conn_cfg_init(&cfg);
    cfg.presets = presets;
    const lm_mrd_conn_io io = {.reader = {lm_mrd_membuf_read, &mb}, .write = sink, .write_user = out,
                               .image_sent = count_image, .image_user = images_seen,
                               .received = count_received};
    lm_mrd_conn_stats st = {0};
    return lm_mrd_conn_serve(&cfg, &io, NULL, &st, err);
}

static void text(bytes *b, uint16_t id, const char *t)
{
    lm_mrd_msg m = {.id = id, .text = (char *)t, .text_len = strlen(t)};
    append(b, &m);
}

static const char *CONF = "--method cg --iters 5 --lambda 0.01 --variant cpu-nufft";

static void test_stream(void)
{
    static sl_file F;
    char xml[4096];
    craft_xml(xml, sizeof xml, SL_N, 1, 240, "radial");
    sl_make(&F, sl_z);
    bytes in = {0}, out = {0};
    text(&in, LM_MRD_MSG_CONFIG_TEXT, CONF);
    text(&in, LM_MRD_MSG_HEADER, xml);
    for (int i = 0; i < SL_NACQ; i++) {
        lm_mrd_msg m = {.id = LM_MRD_MSG_ACQUISITION, .acq = F.acq[i].head, .traj = (float *)F.acq[i].traj,
                        .data = (float *)F.acq[i].data};
        append(&in, &m);
    }
    lm_mrd_msg cl = {.id = LM_MRD_MSG_CLOSE};
    append(&in, &cl);
    int seen = 0;
    lm_error err = {0};
    CHECK(serve(&in, NULL, &out, &seen, &err) == LM_OK);
    CHECK(seen == SL_NSL);
    CHECK(g_received[0] == 1 && g_received[1] == SL_NACQ);
    /* what came back: SL_NSL images, then CLOSE */
    lm_mrd_membuf mb = {(const unsigned char *)out.p, out.n, 0};
    lm_mrd_reader r = {lm_mrd_membuf_read, &mb};
    for (int k = 0; k < SL_NSL; k++) {
        lm_mrd_msg im;
        CHECK(lm_mrd_msg_read(&r, NULL, &im, NULL, &err) == LM_OK);
        CHECK(im.id == LM_MRD_MSG_IMAGE);
        CHECK(im.image.matrix_size[0] == SL_N && im.image.matrix_size[1] == SL_N);
        CHECK(im.text && strstr(im.text, "<name>method</name><value>cg</value>"));
        /* the same slice offline: lm_mrd_from_messages + lm_recon_run as larmor-cli recon */
        const lm_mrd_msg *sl[SL_NACQ];
        lm_mrd_msg store[SL_NACQ];
        size_t n = 0;
        for (int i = 0; i < SL_NACQ; i++)
            if (F.acq[i].head.idx.slice == im.image.slice) {
                memset(&store[n], 0, sizeof store[n]);
                store[n].id = LM_MRD_MSG_ACQUISITION;
                store[n].acq = F.acq[i].head;
                store[n].traj = (float *)F.acq[i].traj;
                store[n].data = (float *)F.acq[i].data;
                sl[n] = &store[n];
                n++;
            }
        lm_mrd_opts mo;
        lm_mrd_opts_init(&mo);
        mo.units = lm_mrd_units_default();
        lm_mrd m;
        lm_acq *a = NULL;
        CHECK(lm_mrd_from_messages("t", xml, strlen(xml), sl, n, &mo, &m, &err) == LM_OK);
        CHECK(lm_acq_from_mrd(&m, &a, &err) == LM_OK);
        lm_mrd_clear(&m);
        lm_mrd_job_opts jo;
        lm_mrd_job_opts_init(&jo);
        CHECK(lm_mrd_config_apply(&jo, CONF, &err) == LM_OK);
        lm_recon_result res = {0};
        CHECK(lm_recon_run(&a->geom, a->traj, a->kdata, &jo.recon, &res, &err) == LM_OK);
        const float *px = im.pixels;
        double diff = 0, scale = 0;
        for (int i = 0; i < SL_N * SL_N; i++) {
            const double w = cabsf(res.image->data[i]);
            diff = fmax(diff, fabs(px[i] - w));
            scale = fmax(scale, w);
        }
        CHECK(scale > 0 && diff <= 1e-5 * scale);
        lm_recon_result_clear(&res);
        lm_acq_free(a);
        lm_mrd_msg_clear(&im);
    }
    lm_mrd_msg last;
    CHECK(lm_mrd_msg_read(&r, NULL, &last, NULL, &err) == LM_OK && last.id == LM_MRD_MSG_CLOSE);
    lm_mrd_msg_clear(&last);
    CHECK(mb.pos == mb.len);
    free(in.p);
    free(out.p);
}

static void test_order_and_presets(void)
{
    bytes in = {0}, out = {0};
    int seen = 0;
    lm_error err = {0};
    text(&in, LM_MRD_MSG_HEADER, "<ismrmrdHeader/>");
    CHECK(serve(&in, NULL, &out, &seen, &err) == LM_ERR_FORMAT && strstr(err.msg, "HEADER before CONFIG"));
    CHECK(out.n == 0 && seen == 0); /* the front end sends the ERROR */
    free(in.p);
    in = (bytes){0};
    lm_mrd_msg cf = {.id = LM_MRD_MSG_CONFIG_FILE, .text = (char *)"fast", .text_len = 4};
    append(&in, &cf);
    err = (lm_error){0};
    CHECK(serve(&in, NULL, &out, &seen, &err) == LM_ERR_INVALID && strstr(err.msg, "no preset folder"));
    free(in.p);
}

int main(void)
{
    test_stream();
    test_order_and_presets();
    return lm_test_finish("api-mrd_server");
}
#else
int main(void)
{
    LM_TEST_SKIP("built without libismrmrd");
}
#endif
