/* Loading data: a data set found from any one of its files as the CLI
 * finds it, File > Open Sample Times, a truth of another grid, files as a
 * user has them (a BART pair in either order, a NIfTI truth), and files
 * opened through the application's open path. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "gui-test.h"
#include "acq_fixture.h"
#include "larmor-application.h"
#include "larmor-colormap.h"
#include "larmor-open-times.h"
#include "larmor-plot.h"
#include "larmor-recon-panel.h"
#include "larmor-recon-task.h"
#include "larmor-runs-view.h"
#include "larmor-slice-view.h"
#include "larmor-sweep-view.h"
#include "larmor-window.h"
#include "lm_io.h"
#include "lm_kernels.h"
#include "lm_metrics.h"
#include "lm_trajgen.h"

static LarmorApplication *app;

static char *acq_dir;

static LarmorWindow *open_one(const char *name)
{
    char *p = name ? g_build_filename(acq_dir, name, NULL) : g_strdup(acq_dir);
    GFile *f = g_file_new_for_path(p);
    LarmorWindow *w = larmor_window_new_for_files(GTK_APPLICATION(app), NULL, &f, 1);
    gui_test_show(GTK_WINDOW(w));
    g_assert_true(gui_test_wait(gui_test_has_data, w, 60));
    g_object_unref(f);
    g_free(p);
    return w;
}

static void check_companions(LarmorDataset *ds)
{
    g_assert_nonnull(strstr(larmor_dataset_get_source(ds), "traj.cfl"));
    g_assert_cmpint(larmor_dataset_get_coils(ds), ==, NC);
    g_assert_true(larmor_dataset_has_times(ds));
    g_assert_nonnull(larmor_dataset_get_maps(ds));
    g_assert_cmpint(larmor_coil_maps_get_count(larmor_dataset_get_maps(ds)), ==, NC);
    g_assert_nonnull(larmor_dataset_get_fieldmap(ds));
    g_assert_nonnull(larmor_dataset_get_truth(ds));
    g_assert_nonnull(larmor_dataset_get_reference(ds));
    g_assert_cmpint(larmor_dataset_get_geom(ds)->n[0], ==, N);
}

static void test_open_member(void)
{
    const char *names[] = { "times.cfl", "truth.nii.gz", "kspace.hdr", NULL };
    for (int i = 0; i < 4; i++) {
        LarmorWindow *w = open_one(names[i]);
        check_companions(larmor_window_get_dataset(w));
        gtk_window_destroy(GTK_WINDOW(w));
    }
}

static void test_open_times(void)
{
    /* The same data without times beside them, then File > Open Sample Times. */
    char *sub = g_build_filename(acq_dir, "bare", NULL);
    g_mkdir(sub, 0700);
    const char *copy[] = { "traj.cfl", "traj.hdr", "kspace.cfl", "kspace.hdr" };
    for (int i = 0; i < 4; i++) {
        char *a = g_build_filename(acq_dir, copy[i], NULL), *b = g_build_filename(sub, copy[i], NULL), *text = NULL;
        gsize len = 0;
        g_assert_true(g_file_get_contents(a, &text, &len, NULL));
        g_assert_true(g_file_set_contents(b, text, (gssize)len, NULL));
        g_free(text);
        g_free(a);
        g_free(b);
    }
    char *t = g_build_filename(sub, "traj.cfl", NULL);
    GFile *f = g_file_new_for_path(t);
    LarmorWindow *w = larmor_window_new_for_files(GTK_APPLICATION(app), NULL, &f, 1);
    gui_test_show(GTK_WINDOW(w));
    g_assert_true(gui_test_wait(gui_test_has_data, w, 60));
    g_assert_false(larmor_dataset_has_times(larmor_window_get_dataset(w)));
    char *times = g_build_filename(acq_dir, "times.cfl", NULL);
    larmor_window_open_times(w, times);
    g_assert_true(gui_test_wait(gui_test_has_data, w, 60));
    g_assert_true(larmor_dataset_has_times(larmor_window_get_dataset(w)));
    gtk_window_destroy(GTK_WINDOW(w));
    g_object_unref(f);
    g_free(times);
    g_free(t);
    g_free(sub);
}

static gboolean truth16_in(gpointer w)
{
    LarmorDataset *ds = larmor_window_get_dataset(w);
    LarmorVolume *t = ds ? larmor_dataset_get_truth(ds) : NULL;
    /* truth16 is 2 everywhere; the truth found beside the data is not. */
    return !larmor_window_is_busy(w) && t && crealf(larmor_volume_get_data(t)->data[0]) == 2.0f &&
           crealf(larmor_volume_get_data(t)->data[7]) == 2.0f;
}

static void test_truth_other_grid(void)
{
    LarmorWindow *w = open_one("traj.cfl");
    LarmorDataset *ds = larmor_window_get_dataset(w);
    const char *key = g_strdup(larmor_dataset_get_key(ds));
    /* A 16^3 truth over the same FOV: resampled to 8^3, the matrix kept. */
    lm_volume *v = lm_volume_new((int64_t[3]){ 2 * N, 2 * N, 2 * N }, (double[3]){ 15, 15, 15 }, NULL);
    lm_geom g16;
    lm_geom_init(&g16, 2 * N, 2 * N, 2 * N, 240);
    lm_geom_affine(&g16, v->affine);
    for (int64_t i = 0; i < lm_volume_count(v); i++)
        v->data[i] = 2.0f;
    char *p = g_build_filename(acq_dir, "truth16.nii.gz", NULL);
    g_assert_cmpint(lm_nifti_write(p, v, 0, NULL), ==, LM_OK);
    lm_volume_free(v);
    larmor_window_open_truth(w, p);
    if (!gui_test_wait(truth16_in, w, 60))
        g_error("truth not taken: %s; truth %s", larmor_window_get_message(w), larmor_dataset_get_truth(larmor_window_get_dataset(w)) ? larmor_volume_get_name(larmor_dataset_get_truth(larmor_window_get_dataset(w))) : "none");
    ds = larmor_window_get_dataset(w);
    g_assert_cmpint(larmor_dataset_get_geom(ds)->n[0], ==, N);
    g_assert_cmpstr(larmor_dataset_get_key(ds), ==, key);
    const lm_volume *t = larmor_volume_get_data(larmor_dataset_get_truth(ds));
    g_assert_cmpint(t->dims[0], ==, N);
    g_assert_cmpfloat_with_epsilon(crealf(t->data[N * N * N / 2 + N / 2 + N * N / 2]), 2.0f, 1e-5);
    gtk_window_destroy(GTK_WINDOW(w));
    g_free(p);
    g_free((char *)key);
}

static gboolean has_truth(gpointer w)
{
    return larmor_window_get_dataset(w) && larmor_dataset_get_truth(larmor_window_get_dataset(w)) &&
           g_strcmp0(larmor_volume_get_name(larmor_dataset_get_truth(larmor_window_get_dataset(w))), "Truth") == 0 &&
           larmor_window_get_message(w);
}

static gboolean message_changed(gpointer data)
{
    gpointer *d = data;
    const char *m = larmor_window_get_message(d[0]);
    return m && g_strcmp0(m, d[1]) != 0;
}

/* Files as a user has them: a BART pair (given in either order, as a drop
 * would) and a NIfTI truth. */
static void test_open_files(void)
{
    char *dir = gui_test_tmp_dir("gui");
    char *tp = g_build_filename(dir, "traj.cfl", NULL), *kp = g_build_filename(dir, "ksp.hdr", NULL);
    char *np = g_build_filename(dir, "truth.nii.gz", NULL);
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *v = NULL;
    lm_error err = { 0 };
    g_assert_cmpint(lm_problem_make(lm_problem_find("B32", NULL), &g, &t, &k, &v, &err), ==, LM_OK);
    g_assert_cmpint(lm_cfl_write_traj(tp, t, &err), ==, LM_OK);
    g_assert_cmpint(lm_cfl_write_kdata(kp, k, t->readout, &err), ==, LM_OK);
    g_assert_cmpint(lm_nifti_write(np, v, 0, &err), ==, LM_OK);

    LarmorWindow *w = gui_test_open_window(GTK_APPLICATION(app), 1400, 900);
    GFile *f[2] = { g_file_new_for_path(kp), g_file_new_for_path(tp) };
    larmor_window_open_files(w, f, 2);
    g_assert_true(gui_test_wait(gui_test_idle, w, 60));
    LarmorDataset *ds = larmor_window_get_dataset(w);
    char *folder = g_path_get_basename(dir); /* "traj.cfl" names no data: its folder does */
    g_assert_cmpstr(larmor_dataset_get_name(ds), ==, folder);
    g_free(folder);
    g_assert_cmpint(larmor_dataset_get_geom(ds)->n[0], ==, 32);
    g_assert_cmpint(larmor_dataset_get_traj(ds)->m, ==, t->m);
    /* truth.nii.gz beside the pair is found with it, as larmor-cli finds it */
    g_assert_nonnull(larmor_dataset_get_truth(ds));

    GFile *nf = g_file_new_for_path(np);
    larmor_window_open_files(w, &nf, 1);
    g_assert_true(gui_test_wait(has_truth, w, 60));
    LarmorReconParams p;
    gui_test_cpu_params(&p, "cpu-simd", 5);
    GError *error = NULL;
    g_assert_true(larmor_window_reconstruct(w, &p, &error));
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    LarmorRun *run = gui_test_run_at(w, 0);
    g_assert_true(larmor_run_has_metrics(run));
    lm_metrics m;
    g_assert_cmpint(lm_metrics_compute(larmor_volume_get_data(larmor_run_get_image(run))->data, v->data,
                                       lm_volume_count(v), NULL, 0, &m, &err), ==, LM_OK);
    g_assert_cmpfloat(larmor_run_get_psnr(run), ==, m.psnr_db);

    /* The truth as anatomical reference: the regulariser runs with it. */
    char *tn = g_strdup(larmor_window_get_message(w));
    larmor_window_open_reference(w, np);
    g_assert_true(gui_test_wait(message_changed, (gpointer[]){ w, tn }, 30));
    g_free(tn);
    g_assert_nonnull(strstr(larmor_window_get_message(w), "Reference"));
    p.reg = LM_REG_ANATOMICAL;
    p.lambda = 0.05;
    gui_test_reconstruct(w, &p);
    g_assert_true(larmor_run_has_metrics(gui_test_run_at(w, 1)));

    /* Exports: NIfTI magnitude and complex, PNG of the view, CSV. */
    char *out = g_build_filename(dir, "out.nii.gz", NULL), *outc = g_build_filename(dir, "outc.nii", NULL);
    char *png = g_build_filename(dir, "view.png", NULL), *csv = g_build_filename(dir, "runs.csv", NULL);
    const lm_volume *shown = larmor_volume_get_data(larmor_ortho_view_get_volume(larmor_window_get_ortho_view(w)));
    for (int c = 0; c < 2; c++) {
        char *before = g_strdup(larmor_window_get_message(w));
        larmor_window_export_nifti(w, c ? outc : out, c);
        g_assert_true(gui_test_wait(message_changed, (gpointer[]){ w, before }, 30));
        g_free(before);
        g_assert_true(g_str_has_prefix(larmor_window_get_message(w), "Wrote"));
        lm_volume *back = NULL;
        g_assert_cmpint(lm_nifti_read(c ? outc : out, &back, &err), ==, LM_OK);
        g_assert_cmpint(back->dims[0], ==, 32);
        for (int64_t i = 0; i < lm_volume_count(back); i += 97) {
            lm_cfloat want = c ? shown->data[i] : cabsf(shown->data[i]);
            g_assert_cmpfloat_with_epsilon(cabsf(back->data[i] - want), 0, 1e-5);
        }
        lm_volume_free(back);
    }
    gtk_test_widget_wait_for_draw(GTK_WIDGET(w));
    g_assert_true(larmor_window_export_png(w, png, &error));
    g_assert_no_error(error);
    GdkTexture *tex = gdk_texture_new_from_filename(png, &error);
    g_assert_no_error(error);
    g_assert_cmpint(gdk_texture_get_width(tex), >, 200);
    g_object_unref(tex);
    g_assert_true(larmor_window_export_csv(w, csv, &error));
    char *text = NULL;
    g_assert_true(g_file_get_contents(csv, &text, NULL, NULL));
    char **lines = g_strsplit(text, "\n", -1);
    g_assert_cmpint(g_strv_length(lines), ==, 4); /* header, two runs, final newline */
    g_strfreev(lines);
    g_free(text);

    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
    g_object_unref(f[0]);
    g_object_unref(f[1]);
    g_object_unref(nf);
    const char *outs[] = { out, outc, png, csv };
    for (guint i = 0; i < G_N_ELEMENTS(outs); i++)
        g_remove(outs[i]);
    g_free(out);
    g_free(outc);
    g_free(png);
    g_free(csv);
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_volume_free(v);
    const char *names[] = { "traj.cfl", "traj.hdr", "ksp.cfl", "ksp.hdr", "truth.nii.gz" };
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        char *pth = g_build_filename(dir, names[i], NULL);
        g_remove(pth);
        g_free(pth);
    }
    g_rmdir(dir);
    g_free(dir);
    g_free(tp);
    g_free(kp);
    g_free(np);
}

/* `larmor FILE...`: the application's open path (what the command line
 * and the file manager use) opens data and their truth in a window; the
 * .desktop file passes files (%F) and names the types. */
static gboolean window_with_truth(gpointer data)
{
    GList *l = gtk_application_get_windows(GTK_APPLICATION(app));
    for (; l; l = l->next) {
        if (!LARMOR_IS_WINDOW(l->data))
            continue;
        LarmorDataset *ds = larmor_window_get_dataset(l->data);
        if (ds && g_str_has_prefix(larmor_dataset_get_name(ds), "larmor-open-") && larmor_dataset_get_truth(ds) &&
            !larmor_window_is_busy(l->data)) {
            *(LarmorWindow **)((gpointer *)data)[0] = l->data;
            return TRUE;
        }
    }
    return FALSE;
}

static void test_open_path(void)
{
    g_assert_true(g_application_get_flags(G_APPLICATION(app)) & G_APPLICATION_HANDLES_OPEN);
    char *dir = gui_test_tmp_dir("open");
    char *tp = g_build_filename(dir, "traj.cfl", NULL), *kp = g_build_filename(dir, "ksp.cfl", NULL);
    char *np = g_build_filename(dir, "truth.nii.gz", NULL);
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *v = NULL;
    lm_error err = { 0 };
    g_assert_cmpint(lm_problem_make(lm_problem_find("B32", NULL), &g, &t, &k, &v, &err), ==, LM_OK);
    g_assert_cmpint(lm_cfl_write_traj(tp, t, &err), ==, LM_OK);
    g_assert_cmpint(lm_cfl_write_kdata(kp, k, t->readout, &err), ==, LM_OK);
    g_assert_cmpint(lm_nifti_write(np, v, 0, &err), ==, LM_OK);

    GFile *files[3] = { g_file_new_for_path(tp), g_file_new_for_path(kp), g_file_new_for_path(np) };
    g_application_open(G_APPLICATION(app), files, 3, "");
    LarmorWindow *w = NULL;
    g_assert_true(gui_test_wait(window_with_truth, (gpointer[]){ &w }, 120));
    LarmorDataset *ds = larmor_window_get_dataset(w);
    g_assert_cmpint(larmor_dataset_get_traj(ds)->m, ==, t->m);
    const lm_volume *tv = larmor_volume_get_data(larmor_dataset_get_truth(ds));
    g_assert_cmpint(tv->dims[0], ==, 32);
    g_assert_cmpfloat(cabsf(tv->data[lm_volume_count(tv) / 2] - v->data[lm_volume_count(v) / 2]), <, 1e-5);
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);

    /* The .desktop file: files passed, types named. */
    const char *desktop = g_getenv("LARMOR_DESKTOP_FILE");
    g_assert_nonnull(desktop);
    GKeyFile *kf = g_key_file_new();
    GError *error = NULL;
    g_assert_true(g_key_file_load_from_file(kf, desktop, G_KEY_FILE_NONE, &error));
    char *exec = g_key_file_get_string(kf, "Desktop Entry", "Exec", NULL);
    g_assert_nonnull(strstr(exec, "%F"));
    char **types = g_key_file_get_string_list(kf, "Desktop Entry", "MimeType", NULL, NULL);
    g_assert_nonnull(types);
    g_assert_true(g_strv_contains((const char *const *)types, "application/x-hdf"));
    g_assert_true(g_strv_contains((const char *const *)types, "application/x-nifti"));
    g_strfreev(types);
    g_free(exec);
    g_key_file_unref(kf);

    for (int i = 0; i < 3; i++)
        g_object_unref(files[i]);
    const char *names[] = { "traj.cfl", "traj.hdr", "ksp.cfl", "ksp.hdr", "truth.nii.gz" };
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        char *pth = g_build_filename(dir, names[i], NULL);
        g_remove(pth);
        g_free(pth);
    }
    g_rmdir(dir);
    g_free(dir);
    g_free(tp);
    g_free(kp);
    g_free(np);
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_volume_free(v);
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    acq_dir = gui_test_tmp_dir("acq");
    lm_error err = { 0 };
    if (acq_fixture_write(acq_dir, &err) != LM_OK)
        g_error("%s", err.msg);
    app = gui_test_app_new();
    g_test_add_func("/data/open-one-member", test_open_member);
    g_test_add_func("/data/open-sample-times", test_open_times);
    g_test_add_func("/data/truth-other-grid", test_truth_other_grid);
    g_test_add_func("/data/open-files", test_open_files);
    g_test_add_func("/data/open-path", test_open_path);
    return gui_test_app_run(app);
}
