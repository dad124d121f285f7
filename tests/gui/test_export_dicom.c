/* Export -> DICOM Series…: the writer behind it (a volume written, read back
 * with its affine and values within 1e-4 of max; the display window of the
 * part; a non-empty folder refused with the error; a template series
 * joined, so no anonymous-patient note), and the window's action (a message
 * when the Runs page has no run to export); a DICOM file chosen in an Open
 * dialog stands for its folder. From the compare page every compared run
 * becomes a series of one study (one StudyInstanceUID and
 * FrameOfReferenceUID, SeriesNumbers one after another), a sub-folder each
 * named after the run, with the window/level of its panel; from the viewer
 * the image with the viewer's window (read back with pydicom). */
#include <math.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-dicom-path.h"
#include "larmor-export-dicom.h"
#include "larmor-window.h"
#include "lm_config.h"
#include "lm_io.h"

static GtkApplication *app;

static LarmorVolume *sample(void)
{
    const int64_t dims[3] = {20, 16, 5};
    const double vox[3] = {1.5, 1.5, 3};
    lm_volume *v = lm_volume_new(dims, vox, NULL);
    g_assert_nonnull(v);
    v->affine[0][1] = 0.3; /* oblique in plane: rotate the first two columns */
    v->affine[1][0] = -0.3;
    v->affine[0][0] = v->affine[1][1] = sqrt(1.5 * 1.5 - 0.09);
    for (int64_t n = 0; n < lm_volume_count(v); n++)
        v->data[n] = (float)(50 + 40 * sin(0.1 * (double)n)) + I * (float)(10 * cos(0.07 * (double)n));
    return larmor_volume_new_take(v, "sample");
}

static void test_write(void)
{
    LarmorVolume *v = sample();
    char *tmp = g_dir_make_tmp("larmor-dicom-XXXXXX", NULL);
    char *a = g_build_filename(tmp, "a", NULL), *b = g_build_filename(tmp, "b", NULL);
    GError *error = NULL;
    char *note = NULL;
    g_assert_true(larmor_export_dicom_write(v, a, NULL, LM_DICOM_MAGNITUDE, FALSE, "Larmor test", &note, &error));
    g_assert_no_error(error);
    g_assert_nonnull(strstr(note, "anonymous patient"));
    g_free(note);
    lm_volume *r = NULL;
    lm_error err = { 0 };
    g_assert_cmpint(lm_load_volume(a, &r, &err), ==, LM_OK);
    const lm_volume *s = larmor_volume_get_data(v);
    double mx = 0, e = 0;
    for (int64_t n = 0; n < lm_volume_count(s); n++) {
        mx = fmax(mx, cabsf(s->data[n]));
        e = fmax(e, fabs(cabsf(s->data[n]) - crealf(r->data[n])));
    }
    g_assert_cmpfloat(e, <=, 1e-4 * mx);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            g_assert_cmpfloat(fabs(r->affine[i][j] - s->affine[i][j]), <, 1e-6);
    lm_volume_free(r);

    /* The folder now holds a series: refused, with the folder named. */
    g_assert_false(larmor_export_dicom_write(v, a, NULL, LM_DICOM_PHASE, FALSE, "Larmor test", NULL, &error));
    g_assert_nonnull(error);
    g_assert_nonnull(strstr(error->message, "not empty"));
    g_clear_error(&error);

    /* Joining the first as template: its patient and study, no note. */
    g_assert_true(larmor_export_dicom_write(v, b, a, LM_DICOM_PHASE, TRUE, "Larmor test", &note, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(note, ==, "");
    g_free(note);
    g_assert_cmpint(lm_load_volume(b, &r, &err), ==, LM_OK);
    for (int64_t n = 0; n < lm_volume_count(s); n++)
        g_assert_cmpfloat(fabs(cargf(s->data[n]) - crealf(r->data[n])), <=, 1e-4 * M_PI);
    lm_volume_free(r);

    /* A DICOM file chosen in an Open dialog stands for its series' folder. */
    char *slice = g_build_filename(a, "MR00003.dcm", NULL);
    char *p = larmor_dicom_series_path(g_strdup(slice));
    g_assert_cmpstr(p, ==, a);
    g_free(p);
    p = larmor_dicom_series_path(g_strdup("/no/such/truth.nii.gz"));
    g_assert_cmpstr(p, ==, "/no/such/truth.nii.gz");
    g_free(p);
    g_assert_null(larmor_dicom_series_path(NULL));
    g_free(slice);

    char *cmd = g_strdup_printf("rm -rf '%s'", tmp);
    g_assert_cmpint(system(cmd), ==, 0);
    g_free(cmd);
    g_free(a);
    g_free(b);
    g_free(tmp);
    g_object_unref(v);
}

static void test_action(void)
{
    LarmorWindow *w = larmor_window_new(app, NULL, NULL);
    larmor_window_set_confirm_close(w, FALSE);
    gui_test_show(GTK_WINDOW(w));
    /* The Runs page with no run: nothing to export. */
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.page", "s", "runs"));
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.export-dicom", NULL));
    g_assert_cmpstr(larmor_window_get_message(w), ==, "Nothing to export: show or select an image first");
    gtk_window_destroy(GTK_WINDOW(w));
}

/* The export's message came: it names the folder, written or not. */
static gboolean export_reported(gpointer data)
{
    gpointer *wd = data;
    const char *m = larmor_window_get_message(wd[0]);
    return m && strstr(m, wd[1]);
}

/* Per series folder of dir (sorted): "StudyInstanceUID FrameOfReferenceUID
 * SeriesNumber WindowCenter WindowWidth" of its first file, read by pydicom. */
static char *tags_of(const char *dir)
{
    const char *py = "import os, sys, pydicom\n"
                     "for s in sorted(os.listdir(sys.argv[1])):\n"
                     "    p = os.path.join(sys.argv[1], s)\n"
                     "    f = os.path.join(p, sorted(os.listdir(p))[0]) if os.path.isdir(p) else p\n"
                     "    d = pydicom.dcmread(f, stop_before_pixels=True)\n"
                     "    print(s, d.StudyInstanceUID, d.FrameOfReferenceUID, d.SeriesNumber, d.WindowCenter,"
                     " d.WindowWidth)\n";
    char *out = NULL, *errs = NULL;
    int status = 0;
    const char *argv[] = { "/usr/bin/python3", "-c", py, dir, NULL };
    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &errs, &status, NULL));
    g_assert_cmpint(status, ==, 0);
    g_free(errs);
    return out;
}

static void check_values(LarmorVolume *want, const char *dir)
{
    lm_volume *r = NULL;
    lm_error err = { 0 };
    g_assert_cmpint(lm_load_volume(dir, &r, &err), ==, LM_OK);
    const lm_volume *s = larmor_volume_get_data(want);
    g_assert_cmpint(lm_volume_count(r), ==, lm_volume_count(s));
    double mx = 0, e = 0;
    for (int64_t n = 0; n < lm_volume_count(s); n++) {
        mx = fmax(mx, cabsf(s->data[n]));
        e = fmax(e, fabs(cabsf(s->data[n]) - crealf(r->data[n])));
    }
    g_assert_cmpfloat(e, <=, 1e-4 * mx);
    lm_volume_free(r);
}

static void test_compare_set(void)
{
    if (system("/usr/bin/python3 -c 'import pydicom' 2>/dev/null") != 0) {
        g_test_skip("pydicom not installed");
        return;
    }
    LarmorWindow *w = gui_test_open_window(app, 1400, 900);
    larmor_window_set_confirm_close(w, FALSE);
    LarmorReconParams p;
    gui_test_cpu_params(&p, "cpu-simd", 2);
    LarmorRun *r1 = gui_test_reconstruct(w, &p);
    p.iters = 5;
    LarmorRun *r2 = gui_test_reconstruct(w, &p);
    g_assert_true(larmor_run_get_compare(r1) && larmor_run_get_compare(r2));
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.page", "s", "compare"));
    LarmorCompareView *cv = larmor_window_get_compare_view(w);
    larmor_compare_view_set_linked(cv, FALSE);
    int panels = 0;
    while (larmor_compare_view_get_panel(cv, panels))
        panels++;
    g_assert_cmpint(panels, >=, 2);
    /* The user's window/level on each run's panel (runs follow the truth). */
    const double win[2] = { 0.61, 0.83 }, lev[2] = { 0.27, 0.35 };
    for (int i = 0; i < 2; i++) {
        LarmorViewState *s = larmor_slice_view_get_state(larmor_compare_view_get_panel(cv, panels - 2 + i));
        g_assert_cmpint(larmor_view_state_get_mode(s), ==, LARMOR_MODE_MAGNITUDE);
        larmor_view_state_set_window_level(s, win[i], lev[i]);
    }
    char *tmp = gui_test_tmp_dir("dicom-set");
    char *dir = g_build_filename(tmp, "cmp", NULL);
    larmor_window_export_dicom(w, dir, LM_DICOM_MAGNITUDE, FALSE, NULL);
    g_assert_true(gui_test_wait(export_reported, (gpointer[]){ w, dir }, 120));
    g_assert_nonnull(strstr(larmor_window_get_message(w), "Wrote 2 DICOM series of one study"));
    /* Nothing beside the folder (the temporary one was renamed). */
    GDir *d = g_dir_open(tmp, 0, NULL);
    g_assert_cmpstr(g_dir_read_name(d), ==, "cmp");
    g_assert_null(g_dir_read_name(d));
    g_dir_close(d);
    LarmorRun *runs[2] = { r1, r2 };
    char *stem[2];
    for (int i = 0; i < 2; i++) {
        stem[i] = larmor_run_get_file_stem(runs[i]);
        char *sub = g_build_filename(dir, stem[i], NULL);
        check_values(larmor_run_get_image(runs[i]), sub);
        g_free(sub);
    }
    char *tags = tags_of(dir);
    char **lines = g_strsplit(g_strstrip(tags), "\n", -1);
    g_assert_cmpint(g_strv_length(lines), ==, 2);
    char **f[2];
    for (int i = 0; i < 2; i++) {
        f[i] = g_strsplit(lines[i], " ", -1);
        g_assert_cmpint(g_strv_length(f[i]), ==, 6);
    }
    g_assert_cmpstr(f[0][1], ==, f[1][1]); /* one study */
    g_assert_cmpstr(f[0][2], ==, f[1][2]); /* one frame of reference */
    for (int i = 0; i < 2; i++) {
        /* sorted names: run i's folder is row j */
        int j = strcmp(stem[i], stem[1 - i]) < 0 ? 0 : 1;
        g_assert_cmpstr(f[j][0], ==, stem[i]);
        g_assert_cmpint(atoi(f[j][3]), ==, 1001 + i); /* in panel order, one after another */
        g_assert_cmpfloat(fabs(g_ascii_strtod(f[j][4], NULL) - lev[i]), <, 1e-9);
        g_assert_cmpfloat(fabs(g_ascii_strtod(f[j][5], NULL) - win[i]), <, 1e-9);
    }
    for (int i = 0; i < 2; i++) {
        g_strfreev(f[i]);
        g_free(stem[i]);
    }
    g_strfreev(lines);
    g_free(tags);

    /* The viewer: the image shown, with the viewer's window for it. */
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.page", "s", "viewer"));
    LarmorOrthoView *ov = larmor_window_get_ortho_view(w);
    LarmorVolume *img = larmor_run_get_image(r2);
    larmor_ortho_view_show_volume(ov, img);
    larmor_ortho_view_set_image_window(ov, img, LARMOR_MODE_MAGNITUDE, 0.47, 0.19);
    char *one = g_build_filename(tmp, "one", NULL);
    larmor_window_export_dicom(w, one, LM_DICOM_MAGNITUDE, FALSE, NULL);
    g_assert_true(gui_test_wait(export_reported, (gpointer[]){ w, one }, 120));
    g_assert_true(g_str_has_prefix(larmor_window_get_message(w), "Wrote the DICOM series"));
    check_values(img, one);
    tags = tags_of(one);
    lines = g_strsplit(g_strstrip(tags), "\n", -1);
    char **g = g_strsplit(lines[0], " ", -1);
    g_assert_cmpint(g_strv_length(g), ==, 6);
    g_assert_cmpfloat(fabs(g_ascii_strtod(g[4], NULL) - 0.19), <, 1e-9);
    g_assert_cmpfloat(fabs(g_ascii_strtod(g[5], NULL) - 0.47), <, 1e-9);
    g_strfreev(g);
    g_strfreev(lines);
    g_free(tags);

    gui_test_remove_tree(tmp);
    g_free(one);
    g_free(dir);
    g_free(tmp);
    gui_test_close_window(w);
}

int main(int argc, char **argv)
{
    if (!LM_HAVE_DICOM) {
        fprintf(stderr, "SKIP: built without DICOM (dcmtk)\n");
        return 77;
    }
    gui_test_init(&argc, &argv);
    app = GTK_APPLICATION(larmor_application_new());
    g_application_set_flags(G_APPLICATION(app), G_APPLICATION_NON_UNIQUE);
    GError *error = NULL;
    g_assert_true(g_application_register(G_APPLICATION(app), NULL, &error));
    g_assert_no_error(error);
    g_application_hold(G_APPLICATION(app));
    g_test_add_func("/export-dicom/write", test_write);
    g_test_add_func("/export-dicom/action", test_action);
    g_test_add_func("/export-dicom/compare-set", test_compare_set);
    int rc = g_test_run();
    g_application_release(G_APPLICATION(app));
    g_object_unref(app);
    return rc;
}
