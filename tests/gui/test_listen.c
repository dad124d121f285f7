/* File -> Listen for data…: the dialog (the no-authentication warning for
 * any address but 127.0.0.1, a bad address refused in its error line),
 * listening on 127.0.0.1 port 0, a real-time stream from `larmor-cli send`
 * (2D golden-angle radial, 4 coils, 60 spokes, --realtime 13:4) shown as a
 * cine that follows the newest frame, each frame equal to `larmor-cli
 * recon --realtime`'s offline frame (1e-4 of the maximum), the first to the
 * image send received, the view's pixels changing with the frame, the
 * status line,
 * then Save Received Data: the file holds the acquisitions sent, bit for
 * bit, and opens as the window's data set. The keep limit (counted, not
 * kept, said); stopping with a silent client connected. */
#include "gui-test.h"

#include <complex.h>
#include <math.h>

#include "larmor-listen.h"
#include "larmor-ortho-view.h"
#include "larmor-time-bar.h"

#define W 13
#define S 4
#define SPOKES 60
#define NFRAMES ((SPOKES - W) / S + 1)
static const char *RT_OPTS = "--realtime 13:4 --iters 5 --lambda 0.05";

static LarmorApplication *app;
static char *tmp;

static const char *cli(void)
{
    const char *c = g_getenv("LARMOR_CLI");
    return c ? c : "larmor-cli";
}

/* Runs larmor-cli with args (NULL-ended) to the end; asserts exit 0. */
static void run_cli(const char *first, ...)
{
    GPtrArray *argv = g_ptr_array_new();
    g_ptr_array_add(argv, (gpointer)cli());
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a; a = va_arg(ap, const char *))
        g_ptr_array_add(argv, (gpointer)a);
    va_end(ap);
    g_ptr_array_add(argv, NULL);
    char *err = NULL;
    int status = 0;
    GError *error = NULL;
    g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, &err, &status,
                               &error));
    g_assert_no_error(error);
    if (!g_spawn_check_wait_status(status, NULL))
        g_error("%s %s: %s", cli(), first, err);
    g_free(err);
    g_ptr_array_unref(argv);
}

static void test_dialog(void)
{
    LarmorWindow *w = gui_test_open_data(GTK_APPLICATION(app), NULL);
    g_assert_true(gtk_widget_is_sensitive(GTK_WIDGET(w)));
    g_assert_null(larmor_window_get_listen_status(w));
    GtkWindow *d = larmor_listen_dialog_new(w);
    gui_test_show(d);
    g_assert_false(larmor_listen_dialog_warns(d)); /* 127.0.0.1 by default */
    larmor_listen_dialog_set(d, "0.0.0.0", 9002);
    g_assert_true(larmor_listen_dialog_warns(d));
    gui_test_save_shot(GTK_WIDGET(d), "listen-dialog.png");
    larmor_listen_dialog_set(d, "127.0.0.1", 9002);
    g_assert_false(larmor_listen_dialog_warns(d));
    larmor_listen_dialog_set(d, "scanner", 9002);
    g_assert_false(larmor_listen_dialog_accept(d));
    g_assert_nonnull(larmor_listen_dialog_get_error(d));
    g_assert_nonnull(strstr(larmor_listen_dialog_get_error(d), "is not an IPv4 address"));
    g_assert_null(larmor_window_get_listen(w));
    gtk_window_destroy(d);
    gui_test_close_window(w);
}

typedef struct {
    LarmorListen *l;
    gboolean sent;   /* larmor-cli send ended */
    gboolean ok;
} Stream;

static void on_send_done(GObject *source, GAsyncResult *res, gpointer data)
{
    void **st = data;
    GError *error = NULL;
    *(gboolean *)st[1] = g_subprocess_wait_check_finish(G_SUBPROCESS(source), res, &error);
    if (error)
        printf("# send: %s\n", error->message);
    g_clear_error(&error);
    *(gboolean *)st[0] = TRUE;
    g_free(st);
}

/* send has ended and the listener's owner has heard the connection's end. */
static gboolean stream_over(gpointer data)
{
    Stream *s = data;
    return s->sent && larmor_listen_get_connections(s->l) == 1 && larmor_listen_get_active(s->l) == 0;
}

static gboolean message_has(gpointer data)
{
    void **p = data;
    const char *m = larmor_window_get_message(p[0]);
    return m && strstr(m, p[1]);
}

static gboolean data_from(gpointer data)
{
    void **p = data;
    LarmorDataset *ds = larmor_window_get_dataset(p[0]);
    return ds && ds != p[1] && !larmor_window_is_busy(p[0]);
}

/* The real-time case of tests/python/test_mrd_server.py, alone in a folder
 * (made once). */
static const char *rt_file(void)
{
    static char *h5;
    if (h5)
        return h5;
    char *gen = g_build_filename(tmp, "rt", NULL), *alone = g_build_filename(tmp, "alone", NULL);
    run_cli("phantom", "--matrix", "32", "--phantom", "shepp-logan-2d", "--traj", "radial2d", "--readout", "32",
            "--samples", "1920", "--coils", "4", "--format", "ismrmrd", "--out", gen, NULL);
    g_assert_cmpint(g_mkdir(alone, 0700), ==, 0);
    char *src = g_build_filename(gen, "data.h5", NULL), *bytes;
    gsize nb;
    h5 = g_build_filename(alone, "rt.h5", NULL);
    g_assert_true(g_file_get_contents(src, &bytes, &nb, NULL));
    g_assert_true(g_file_set_contents(h5, bytes, (gssize)nb, NULL));
    g_free(bytes);
    g_free(src);
    g_free(gen);
    g_free(alone);
    return h5;
}

/* Starts larmor-cli send of the real-time file to port; *done once it ended (ok: exit 0). */
static GSubprocess *send_rt(int port, gboolean *done, gboolean *ok)
{
    char *to = g_strdup_printf("127.0.0.1:%d", port), *out = g_build_filename(tmp, "sent.nii.gz", NULL);
    GError *error = NULL;
    GSubprocess *p = g_subprocess_new(G_SUBPROCESS_FLAGS_NONE, &error, cli(), "send", rt_file(), "--to", to,
                                      "--config", RT_OPTS, "--out", out, NULL);
    g_assert_no_error(error);
    *done = *ok = FALSE;
    void **st = g_new(void *, 2);
    st[0] = done;
    st[1] = ok;
    g_subprocess_wait_check_async(p, NULL, on_send_done, st);
    g_free(to);
    g_free(out);
    return p;
}

static void test_stream(void)
{
    const char *h5 = rt_file();
    LarmorWindow *w = gui_test_open_data(GTK_APPLICATION(app), NULL);
    GtkWindow *d = larmor_listen_dialog_new(w);
    larmor_listen_dialog_set(d, "127.0.0.1", 0);
    g_assert_true(larmor_listen_dialog_accept(d)); /* closes the dialog */
    LarmorListen *l = larmor_window_get_listen(w);
    g_assert_nonnull(l);
    const int port = larmor_listen_get_port(l);
    g_assert_cmpint(port, >, 0);
    char *where = g_strdup_printf("Listening on 127.0.0.1:%d", port);
    g_assert_nonnull(larmor_window_get_listen_status(w));
    g_assert_nonnull(strstr(larmor_window_get_listen_status(w), where));
    GError *error = NULL;
    g_assert_false(larmor_window_listen(w, "127.0.0.1:0", &error)); /* one listener per window */
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_BUSY);
    g_clear_error(&error);

    char *out = g_build_filename(tmp, "sent.nii.gz", NULL);
    Stream st = {l, FALSE, FALSE};
    GSubprocess *p = send_rt(port, &st.sent, &st.ok);
    g_assert_true(gui_test_wait(stream_over, &st, 600));
    g_assert_true(st.ok);
    g_object_unref(p);

    /* the frames as a cine in the viewer, at the newest frame */
    LarmorVolume *frames = larmor_listen_get_frames(l);
    g_assert_nonnull(frames);
    g_assert_cmpint(larmor_volume_get_n_frames(frames), ==, NFRAMES);
    g_assert_true(larmor_ortho_view_get_volume(larmor_window_get_ortho_view(w)) == frames);
    g_assert_cmpint(larmor_view_state_get_frame(larmor_ortho_view_get_state(larmor_window_get_ortho_view(w))), ==,
                    NFRAMES - 1);
    g_assert_true(gtk_widget_get_visible(GTK_WIDGET(larmor_ortho_view_get_time_bar(larmor_window_get_ortho_view(w)))));
    g_assert_cmpint(larmor_listen_get_frame_number(l), ==, NFRAMES);
    g_assert_cmpfloat(larmor_listen_get_latency(l), >=, 0);
    g_assert_cmpuint(larmor_listen_get_received(l), ==, SPOKES);
    g_assert_cmpuint(larmor_listen_get_kept(l), ==, SPOKES);
    char *fr = g_strdup_printf("%d frames · last latency", NFRAMES);
    g_assert_nonnull(strstr(larmor_window_get_listen_status(w), fr));
    g_assert_nonnull(strstr(larmor_window_get_listen_status(w), "1 connection · 60 acquisitions"));
    g_free(fr);

    /* each frame shown equals the offline frame of the same options */
    char *off = g_build_filename(tmp, "offline.cfl", NULL);
    run_cli("recon", "--traj", h5, "--realtime", "13:4", "--iters", "5", "--lambda", "0.05", "--quiet", "--out", off,
            NULL);
    int nd = 0;
    int64_t dims[LM_CFL_MAX_DIMS];
    lm_cfloat *want = NULL;
    lm_error err = {0};
    g_assert_cmpint(lm_cfl_read(off, &nd, dims, &want, &err), ==, LM_OK);
    const int64_t n = 32 * 32;
    int64_t total = 1;
    for (int i = 0; i < nd; i++)
        total *= dims[i];
    g_assert_cmpint(total, ==, n * NFRAMES);
    double scale = 0, diff = 0, moved = 0;
    for (int64_t t = 0; t < NFRAMES; t++) {
        const lm_volume *v = larmor_volume_get_frame_data(frames, t);
        g_assert_cmpint(lm_volume_count(v), ==, n);
        for (int64_t i = 0; i < n; i++) {
            scale = fmax(scale, cabsf(want[t * n + i]));
            diff = fmax(diff, fabs(cabsf(v->data[i]) - cabsf(want[t * n + i])));
            if (t == NFRAMES - 1)
                moved = fmax(moved, fabs(cabsf(v->data[i]) - cabsf(larmor_volume_get_frame_data(frames, 0)->data[i])));
        }
    }
    g_assert_cmpfloat(scale, >, 0);
    g_assert_cmpfloat(diff, <=, 1e-4 * scale);
    g_assert_cmpfloat(moved, >, 0); /* golden-angle windows differ: the frames are not one image */
    free(want);

    /* the image the protocol delivered to the client: send writes frame 1 (repetition 0) */
    lm_volume *sent = NULL;
    g_assert_cmpint(lm_nifti_read(out, &sent, &err), ==, LM_OK);
    g_assert_cmpint(lm_volume_count(sent), ==, n);
    const lm_volume *f0 = larmor_volume_get_frame_data(frames, 0);
    for (int64_t i = 0; i < n; i++)
        g_assert_cmpfloat(fabs(cabsf(sent->data[i]) - cabsf(f0->data[i])), <=, 1e-6 * scale);
    lm_volume_free(sent);

    /* the view draws the frame the time bar is at: the first and the last differ on screen */
    LarmorOrthoView *ov = larmor_window_get_ortho_view(w);
    GtkWidget *axial = GTK_WIDGET(larmor_ortho_view_get_slice_view(ov, LARMOR_ORIENT_AXIAL));
    GuiTestImage last, first;
    gtk_test_widget_wait_for_draw(axial);
    g_assert_true(gui_test_capture(axial, &last));
    larmor_view_state_set_frame(larmor_ortho_view_get_state(ov), 0);
    gtk_test_widget_wait_for_draw(axial);
    g_assert_true(gui_test_capture(axial, &first));
    g_assert_cmpint(first.w, ==, last.w);
    g_assert_cmpint(first.h, ==, last.h);
    size_t differ = 0;
    for (size_t i = 0; i < (size_t)first.w * first.h; i++)
        differ += (first.px[i] & 0xffffffu) != (last.px[i] & 0xffffffu);
    g_assert_cmpuint(differ, >, 0);
    gui_test_image_clear(&first);
    gui_test_image_clear(&last);
    gui_test_save_shot(GTK_WIDGET(w), "listen.png");

    /* stopping keeps what was received */
    larmor_window_stop_listening(w);
    g_assert_false(larmor_listen_is_listening(l));
    g_assert_nonnull(strstr(larmor_window_get_listen_status(w), "Stopped · 1 connection · 60 acquisitions"));
    g_assert_true(larmor_listen_has_data(l));

    /* saved: the acquisitions sent, bit for bit */
    char *saved = g_build_filename(tmp, "received.h5", NULL);
    larmor_window_save_received(w, saved, FALSE);
    void *m1[2] = {w, "received.h5: 60 received acquisitions saved"};
    g_assert_true(gui_test_wait(message_has, m1, 120));
    lm_mrd a, b;
    g_assert_cmpint(lm_mrd_read(h5, &a, &err), ==, LM_OK);
    g_assert_cmpint(lm_mrd_read(saved, &b, &err), ==, LM_OK);
    g_assert_cmpint(a.kdata->m, ==, b.kdata->m);
    g_assert_cmpint(a.kdata->ncoils, ==, b.kdata->ncoils);
    g_assert_cmpint(a.traj->m, ==, b.traj->m);
    g_assert_cmpint(memcmp(a.kdata->d, b.kdata->d, (size_t)(a.kdata->m * a.kdata->ncoils) * sizeof(lm_cfloat)), ==, 0);
    g_assert_cmpint(memcmp(a.traj->k, b.traj->k, (size_t)a.traj->m * 3 * sizeof(float)), ==, 0);
    lm_mrd_clear(&a);
    lm_mrd_clear(&b);

    /* and as the data set: an offline reconstruction of the stream */
    char *loaded = g_build_filename(tmp, "again.h5", NULL);
    LarmorDataset *before = g_object_ref(larmor_window_get_dataset(w)); /* kept: its address is not reused */
    void *m2[2] = {w, before};
    larmor_window_save_received(w, loaded, TRUE);
    g_assert_true(gui_test_wait(data_from, m2, 120));
    g_object_unref(before);
    const lm_kdata *k = larmor_dataset_get_kdata(larmor_window_get_dataset(w));
    g_assert_cmpint(k->m, ==, SPOKES * 32);
    g_assert_cmpint(k->ncoils, ==, 4);
    g_assert_true(g_file_test(loaded, G_FILE_TEST_EXISTS));

    gui_test_close_window(w);
    g_free(loaded);
    g_free(saved);
    g_free(off);
    g_free(out);
    g_free(where);
}

/* A listener that keeps 64 KiB: the 60 acquisitions (about 95 KiB) are
 * counted but not kept whole, so there is nothing to save, and frames
 * stop being added at the limit; the status line says so. */
static void test_limit(void)
{
    GError *error = NULL;
    LarmorListen *l = larmor_listen_new("127.0.0.1:0", 64 << 10, &error);
    g_assert_no_error(error);
    Stream st = {l, FALSE, FALSE};
    GSubprocess *p = send_rt(larmor_listen_get_port(l), &st.sent, &st.ok);
    g_assert_true(gui_test_wait(stream_over, &st, 600));
    g_assert_true(st.ok); /* the client is served all the same */
    g_object_unref(p);
    g_assert_cmpuint(larmor_listen_get_received(l), ==, SPOKES);
    g_assert_cmpuint(larmor_listen_get_kept(l), <, SPOKES);
    g_assert_false(larmor_listen_has_data(l));
    /* 8 KiB frames: 8 fit */
    g_assert_nonnull(larmor_listen_get_frames(l));
    g_assert_cmpint(larmor_volume_get_n_frames(larmor_listen_get_frames(l)), ==, 8);
    g_assert_cmpint(larmor_listen_get_frame_number(l), ==, NFRAMES); /* the counter goes on */
    char *status = larmor_listen_get_status(l);
    g_assert_nonnull(strstr(status, "past 64.0")); /* g_format_size: a no-break space before the unit */
    g_assert_nonnull(strstr(status, "KiB kept: the stream's data and later frames are not kept"));
    g_free(status);
    larmor_listen_stop(l);
    g_object_unref(l);
}

static gboolean one_open(gpointer data)
{
    return larmor_listen_get_active(data) == 1;
}

static gboolean stopped_heard(gpointer data)
{
    const char *note = larmor_listen_get_note(data);
    return larmor_listen_get_active(data) == 0 && note && strstr(note, "the server stopped");
}

/* Stopping with a client connected and silent: the stop ends it (its
 * blocked read returns), the window hears the end, nothing is left running. */
static void test_stop_open(void)
{
    LarmorWindow *w = gui_test_open_data(GTK_APPLICATION(app), NULL);
    GError *error = NULL;
    g_assert_true(larmor_window_listen(w, "127.0.0.1:0", &error));
    LarmorListen *l = larmor_window_get_listen(w);
    GSocketClient *sc = g_socket_client_new();
    GSocketConnection *c = g_socket_client_connect_to_host(sc, "127.0.0.1", larmor_listen_get_port(l), NULL, &error);
    g_assert_no_error(error);
    char *b;
    size_t n;
    lm_error err = {0};
    lm_mrd_msg m = {.id = LM_MRD_MSG_CONFIG_TEXT, .text = (char *)"", .text_len = 0};
    g_assert_cmpint(lm_mrd_msg_write(&m, &b, &n, &err), ==, LM_OK);
    g_assert_true(g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(c)), b, n, NULL, NULL, &error));
    free(b);
    g_assert_true(gui_test_wait(one_open, l, 120));
    larmor_window_stop_listening(w); /* returns at once; the connection's end follows */
    g_assert_false(larmor_listen_is_listening(l));
    g_assert_true(gui_test_wait(stopped_heard, l, 120));
    g_assert_nonnull(strstr(larmor_listen_get_note(l), "MRD connection 1 (127.0.0.1:"));
    g_assert_nonnull(strstr(larmor_listen_get_note(l), "error: the server stopped"));
    g_assert_nonnull(strstr(larmor_window_get_listen_status(w), "Stopped · 1 connection · 0 acquisitions"));
    g_assert_false(larmor_listen_has_data(l));
    /* listening again in the same window, on another port */
    g_assert_true(larmor_window_listen(w, "127.0.0.1:0", &error));
    g_assert_true(larmor_window_get_listen(w) != l);
    g_object_unref(c);
    g_object_unref(sc);
    gui_test_close_window(w); /* stops the second listener */
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = gui_test_app_new();
    tmp = gui_test_tmp_dir("listen");
    g_test_add_func("/listen/dialog", test_dialog);
    g_test_add_func("/listen/stream", test_stream);
    g_test_add_func("/listen/limit", test_limit);
    g_test_add_func("/listen/stop", test_stop_open);
    int rc = gui_test_app_run(app);
    gui_test_remove_tree(tmp);
    g_free(tmp);
    return rc;
}
