/* Data sets found the same way as larmor-cli finds them (lm_acq_discover),
 * issue 25 defects 2 and 3:
 *  - one member file (times.cfl), the directory, or the truth given alone
 *    on the command line opens the data set with its companions: coil
 *    maps, sample times, field map, truth (before: times were ignored, one
 *    .cfl alone was refused, and a lone truth opened the B32 phantom);
 *  - File > Open Sample Times reloads files' data with their times;
 *  - a truth of another matrix is resampled onto the data's grid and never
 *    becomes the matrix (before: a 16^3 truth switched 8^3 data to 16^3). */
#include <glib/gstdio.h>
#include <string.h>

#include "acq_fixture.h"
#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-open-times.h"
#include "larmor-window.h"
#include "lm_io.h"

static LarmorApplication *app;
static char *dir;

static LarmorWindow *open_one(const char *name)
{
    char *p = name ? g_build_filename(dir, name, NULL) : g_strdup(dir);
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
    char *sub = g_build_filename(dir, "bare", NULL);
    g_mkdir(sub, 0700);
    const char *copy[] = { "traj.cfl", "traj.hdr", "kspace.cfl", "kspace.hdr" };
    for (int i = 0; i < 4; i++) {
        char *a = g_build_filename(dir, copy[i], NULL), *b = g_build_filename(sub, copy[i], NULL), *text = NULL;
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
    char *times = g_build_filename(dir, "times.cfl", NULL);
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
    char *p = g_build_filename(dir, "truth16.nii.gz", NULL);
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

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    dir = gui_test_tmp_dir("acq");
    lm_error err = { 0 };
    if (acq_fixture_write(dir, &err) != LM_OK)
        g_error("%s", err.msg);
    app = gui_test_app_new();
    g_test_add_func("/acq/open-one-member", test_open_member);
    g_test_add_func("/acq/open-sample-times", test_open_times);
    g_test_add_func("/acq/truth-other-grid", test_truth_other_grid);
    return gui_test_app_run(app);
}
