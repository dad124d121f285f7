/* Export -> DICOM Series…: the writer behind it (a volume written, read back
 * with its affine and values within 1e-4 of max; the display window of the
 * part; a non-empty folder refused with the error; a template series
 * joined, so no anonymous-patient note), and the window's action (a message
 * when the Runs page has no run to export); a DICOM file chosen in an Open
 * dialog stands for its folder. */
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
    int rc = g_test_run();
    g_application_release(G_APPLICATION(app));
    g_object_unref(app);
    return rc;
}
