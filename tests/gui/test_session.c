/* Sessions: a save/open round trip restores identical runs (images
 * bit-identical, the same metrics, residual history, times and Q-from-cache
 * flag), the data set (reloaded when other data are loaded), the compare
 * layout, the viewer's slice position and each image's window/level; a
 * second save leaves one generation of images; a session whose data file
 * is gone still lists its runs and says what is missing in one line; a
 * file that is not a session changes nothing; k-space picked before the
 * trajectory is saved as what it is, and the reference, prior influence,
 * ROI, noise region and line come back. No timed assertions. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-session.h"
#include "larmor-window.h"
#include "lm_io.h"
#include "lm_kernels.h"

static LarmorApplication *app;

static LarmorWindow *open_window(void)
{
    LarmorWindow *w = gui_test_open_window(GTK_APPLICATION(app), 1200, 800);
    larmor_window_set_confirm_close(w, FALSE);
    return w;
}

static void reconstruct(LarmorWindow *w, lm_method method, int iters)
{
    LarmorReconParams p;
    gui_test_cpu_params(&p, "cpu-simd", iters);
    p.method = method;
    p.lambda = 1e-3;
    gui_test_reconstruct(w, &p);
}

/* Equal, NaN equal to NaN. */
static void same_double(double a, double b)
{
    if (isnan(a))
        g_assert_true(isnan(b));
    else
        g_assert_cmpfloat(a, ==, b);
}

static void same_run(LarmorRun *a, LarmorRun *b)
{
    g_assert_cmpint(larmor_run_get_index(a), ==, larmor_run_get_index(b));
    g_assert_cmpstr(larmor_run_get_label(a), ==, larmor_run_get_label(b));
    g_assert_cmpstr(larmor_run_get_dataset_key(a), ==, larmor_run_get_dataset_key(b));
    const LarmorReconParams *pa = larmor_run_get_params(a), *pb = larmor_run_get_params(b);
    g_assert_cmpint(pa->method, ==, pb->method);
    g_assert_cmpstr(pa->variant, ==, pb->variant);
    g_assert_cmpfloat(pa->lambda, ==, pb->lambda);
    g_assert_cmpint(pa->reg, ==, pb->reg);
    g_assert_cmpint(pa->iters, ==, pb->iters);
    g_assert_cmpfloat(pa->tol, ==, pb->tol);
    g_assert_cmpint(pa->recompute_q, ==, pb->recompute_q);
    g_assert_cmpint(larmor_run_get_q_from_cache(a), ==, larmor_run_get_q_from_cache(b));
    g_assert_cmpint(larmor_run_get_iters_done(a), ==, larmor_run_get_iters_done(b));
    same_double(larmor_run_get_psnr(a), larmor_run_get_psnr(b));
    same_double(larmor_run_get_percent_error(a), larmor_run_get_percent_error(b));
    same_double(larmor_run_get_time_total(a), larmor_run_get_time_total(b));
    same_double(larmor_run_get_time_q(a), larmor_run_get_time_q(b));
    same_double(larmor_run_get_gpairs(a), larmor_run_get_gpairs(b));
    same_double(larmor_run_get_gflops(a), larmor_run_get_gflops(b));
    int na, nb;
    const double *ra = larmor_run_get_residuals(a, &na), *rb = larmor_run_get_residuals(b, &nb);
    g_assert_cmpint(na, ==, nb);
    for (int i = 0; i < na; i++)
        g_assert_cmpfloat(ra[i], ==, rb[i]);
    /* The image, bit for bit, on the same grid. */
    const lm_volume *va = larmor_volume_get_data(larmor_run_get_image(a));
    const lm_volume *vb = larmor_volume_get_data(larmor_run_get_image(b));
    for (int k = 0; k < 3; k++) {
        g_assert_cmpint(va->dims[k], ==, vb->dims[k]);
        g_assert_cmpfloat(va->voxel_mm[k], ==, vb->voxel_mm[k]);
    }
    g_assert_cmpmem(va->affine, sizeof va->affine, vb->affine, sizeof vb->affine);
    g_assert_cmpmem(va->data, sizeof(lm_cfloat) * lm_volume_count(va), vb->data, sizeof(lm_cfloat) * lm_volume_count(vb));
}

static int count_nii(const char *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    g_assert_nonnull(d);
    int n = 0;
    const char *name;
    while ((name = g_dir_read_name(d)))
        n += g_str_has_suffix(name, ".nii");
    g_dir_close(d);
    return n;
}

static void test_round_trip(void)
{
    char *dir = gui_test_tmp_dir("session");
    char *path = g_build_filename(dir, "study.larmor", NULL);
    char *data_dir = larmor_session_data_dir(path);

    LarmorWindow *a = open_window();
    reconstruct(a, LM_METHOD_CG, 3);
    reconstruct(a, LM_METHOD_GRID_LINEAR, 0);
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(a)), ==, 2);
    g_assert_cmpint(larmor_window_count_unexported(a), ==, 2);
    /* Views: run #1 in the viewer at a given voxel with its own window. */
    LarmorOrthoView *ov = larmor_window_get_ortho_view(a);
    LarmorVolume *img1 = larmor_run_get_image(gui_test_run_at(a, 0));
    larmor_ortho_view_show_volume(ov, img1);
    larmor_view_state_set_window_level(larmor_ortho_view_get_state(ov), 0.7, 0.3);
    const int64_t cur[3] = { 5, 6, 7 };
    larmor_view_state_set_cursor(larmor_ortho_view_get_state(ov), cur);
    larmor_compare_view_set_orientation(larmor_window_get_compare_view(a), LARMOR_ORIENT_CORONAL);

    larmor_window_save_session(a, path);
    g_assert_true(gui_test_wait(gui_test_idle, a, 60));
    g_assert_nonnull(larmor_window_get_message(a));
    g_assert_true(g_str_has_prefix(larmor_window_get_message(a), "Session saved to "));
    g_assert_cmpint(larmor_window_count_unexported(a), ==, 0);
    g_assert_true(g_file_test(path, G_FILE_TEST_IS_REGULAR));
    g_assert_cmpint(count_nii(data_dir), ==, 2);
    /* Saved again: the new images replace the old (one generation). */
    larmor_window_save_session(a, path);
    g_assert_true(gui_test_wait(gui_test_idle, a, 60));
    g_assert_cmpint(count_nii(data_dir), ==, 2);

    /* Another window with other data: opening reloads B32. */
    LarmorWindow *b = open_window();
    LarmorDatasetSpec other = { .kind = LARMOR_SOURCE_PHANTOM, .matrix = 16, .traj_kind = LM_TRAJ_RADIAL3D,
                                .samples = 1500, .seed = 2 };
    g_strlcpy(other.phantom, "shepp-logan", sizeof other.phantom);
    larmor_window_load(b, &other);
    g_assert_true(gui_test_wait(gui_test_idle, b, 60));
    g_assert_cmpstr(larmor_dataset_get_key(larmor_window_get_dataset(b)), !=,
                    larmor_dataset_get_key(larmor_window_get_dataset(a)));
    larmor_window_open_session(b, path);
    g_assert_true(gui_test_wait(gui_test_idle, b, 120));
    g_assert_cmpstr(larmor_dataset_get_key(larmor_window_get_dataset(b)), ==,
                    larmor_dataset_get_key(larmor_window_get_dataset(a)));
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(b)), ==, 2);
    for (guint i = 0; i < 2; i++) {
        same_run(gui_test_run_at(a, i), gui_test_run_at(b, i));
        g_assert_true(larmor_run_get_current(gui_test_run_at(b, i)));
        g_assert_true(larmor_run_get_compare(gui_test_run_at(b, i)));
        g_assert_false(larmor_run_get_metrics_stale(gui_test_run_at(b, i)));
    }
    /* Exactly that: the viewer's shown image ("run-1") is no image file. */
    g_assert_cmpstr(larmor_window_get_message(b), ==, "study.larmor: 2 runs restored");
    /* Compare table and layout as saved. */
    LarmorCompareView *cvb = larmor_window_get_compare_view(b);
    g_assert_cmpstr(larmor_compare_view_get_metric_text(cvb, 0, "error"), ==,
                    larmor_compare_view_get_metric_text(larmor_window_get_compare_view(a), 0, "error"));
    g_assert_cmpint(larmor_compare_view_get_orientation(cvb), ==, LARMOR_ORIENT_CORONAL);
    /* The viewer: the same image, voxel and window. */
    LarmorOrthoView *ovb = larmor_window_get_ortho_view(b);
    g_assert_true(larmor_ortho_view_get_volume(ovb) == larmor_run_get_image(gui_test_run_at(b, 0)));
    int64_t got[3];
    larmor_view_state_get_cursor(larmor_ortho_view_get_state(ovb), got);
    g_assert_cmpint(got[0], ==, 5);
    g_assert_cmpint(got[1], ==, 6);
    g_assert_cmpint(got[2], ==, 7);
    g_assert_cmpfloat(larmor_view_state_get_window(larmor_ortho_view_get_state(ovb)), ==, 0.7);
    g_assert_cmpfloat(larmor_view_state_get_level(larmor_ortho_view_get_state(ovb)), ==, 0.3);
    /* Runs continue numbering after the session's. */
    reconstruct(b, LM_METHOD_GRID_LINEAR, 0);
    g_assert_cmpint(larmor_run_get_index(gui_test_run_at(b, 2)), ==, 3);

    /* The data file gone: the runs are listed (not current), one line says what is missing. */
    char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    GKeyFile *kf = g_key_file_new();
    g_assert_true(g_key_file_load_from_data(kf, text, -1, G_KEY_FILE_NONE, NULL));
    g_key_file_remove_group(kf, "data", NULL);
    g_key_file_set_string(kf, "data", "kind", "files");
    g_key_file_set_string(kf, "data", "trajectory-file", "/nonexistent/larmor/traj");
    g_key_file_set_string(kf, "data", "kspace-file", "/nonexistent/larmor/kspace");
    /* The runs were of those files, not of B32. */
    g_key_file_set_string(kf, "run-1", "dataset-key", "files|/nonexistent/larmor/traj|/nonexistent/larmor/kspace@32x32x32");
    g_key_file_set_string(kf, "run-2", "dataset-key", "files|/nonexistent/larmor/traj|/nonexistent/larmor/kspace@32x32x32");
    char *moved = g_build_filename(dir, "moved.larmor", NULL);
    char *moved_dir = larmor_session_data_dir(moved);
    g_assert_cmpint(g_rename(data_dir, moved_dir), ==, 0);
    g_free(text);
    text = g_key_file_to_data(kf, NULL, NULL);
    g_assert_true(g_file_set_contents(moved, text, -1, NULL));
    larmor_window_open_session(b, moved);
    g_assert_true(gui_test_wait(gui_test_idle, b, 60));
    const char *msg = larmor_window_get_message(b);
    g_assert_nonnull(msg);
    g_assert_nonnull(strstr(msg, "moved.larmor: 2 runs restored; data not found: /nonexistent/larmor/traj"));
    g_assert_null(strchr(msg, '\n'));
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(b)), ==, 2);
    for (guint i = 0; i < 2; i++) {
        LarmorRun *r = gui_test_run_at(b, i);
        g_assert_false(larmor_run_get_current(r));
        g_assert_false(larmor_run_get_compare(r));
        g_assert_cmpfloat(larmor_run_get_percent_error(r), ==, larmor_run_get_percent_error(gui_test_run_at(a, i)));
        const lm_volume *va = larmor_volume_get_data(larmor_run_get_image(gui_test_run_at(a, i)));
        g_assert_cmpmem(va->data, sizeof(lm_cfloat) * lm_volume_count(va),
                        larmor_volume_get_data(larmor_run_get_image(r))->data, sizeof(lm_cfloat) * lm_volume_count(va));
    }
    /* Still usable: B32 stays loaded and reconstructs. */
    reconstruct(b, LM_METHOD_GRID_LINEAR, 0);

    /* Not a session: a one-line error, the runs unchanged. */
    char *bad = g_build_filename(dir, "bad.larmor", NULL);
    g_assert_true(g_file_set_contents(bad, "[session]\nformat=1\nruns=1\n[run-1]\nmethod=warp-drive\n", -1, NULL));
    larmor_window_open_session(b, bad);
    g_assert_true(gui_test_wait(gui_test_idle, b, 60));
    g_assert_nonnull(strstr(larmor_window_get_message(b), "bad.larmor"));
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(b)), ==, 3);
    g_assert_true(g_file_set_contents(bad, "not a key file", -1, NULL));
    larmor_window_open_session(b, bad);
    g_assert_true(gui_test_wait(gui_test_idle, b, 60));
    g_assert_nonnull(strstr(larmor_window_get_message(b), "bad.larmor"));
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(b)), ==, 3);

    g_key_file_unref(kf);
    g_free(text);
    gtk_window_destroy(GTK_WINDOW(a));
    gtk_window_destroy(GTK_WINDOW(b));
    gui_test_remove_tree(dir);
    g_free(bad);
    g_free(moved);
    g_free(moved_dir);
    g_free(data_dir);
    g_free(path);
    g_free(dir);
}

static gboolean has_volume(LarmorWindow *w, LarmorVolume *v)
{
    guint pos;
    return g_list_store_find(G_LIST_STORE(larmor_window_get_volumes(w)), v, &pos);
}

static LarmorVolume *reference_of(LarmorWindow *w)
{
    LarmorVolume *ref = NULL;
    for (guint i = 0; i < g_list_model_get_n_items(larmor_window_get_volumes(w)); i++) {
        LarmorVolume *v = g_list_model_get_item(larmor_window_get_volumes(w), i);
        if (g_str_has_prefix(larmor_volume_get_name(v), "Reference: "))
            ref = v;
        g_object_unref(v); /* the list keeps it */
    }
    return ref;
}

static gboolean has_reference(gpointer w)
{
    return reference_of(w) != NULL;
}

/* K-space picked before the trajectory is saved as what it
 * is; the anatomical reference the user opened, a run's prior influence
 * image, the ROI, the noise region and the profile line come back. */
static void test_extras(void)
{
    char *dir = gui_test_tmp_dir("session");
    char *path = g_build_filename(dir, "extras.larmor", NULL);
    LarmorWindow *a = open_window();
    LarmorDataset *b32 = g_object_ref(larmor_window_get_dataset(a)); /* its truth is the reference file */
    char *tp = g_build_filename(dir, "traj", NULL), *kp = g_build_filename(dir, "kspace", NULL);
    char *refp = g_build_filename(dir, "t1.nii", NULL);
    lm_error err = { 0 };
    g_assert_cmpint(lm_cfl_write_traj(tp, larmor_dataset_get_traj(b32), &err), ==, LM_OK);
    g_assert_cmpint(lm_cfl_write_kdata(kp, larmor_dataset_get_kdata(b32), larmor_dataset_get_traj(b32)->readout, &err),
                    ==, LM_OK);
    g_assert_cmpint(lm_nifti_write(refp, larmor_volume_get_data(larmor_dataset_get_truth(b32)), 1, &err), ==, LM_OK);
    char *tc = g_strconcat(tp, ".cfl", NULL), *kc = g_strconcat(kp, ".cfl", NULL);
    /* k-space first */
    GFile *files[2] = { g_file_new_for_path(kc), g_file_new_for_path(tc) };
    larmor_window_open_files(a, files, 2);
    g_assert_true(gui_test_wait(gui_test_has_data, a, 60));
    g_assert_true(larmor_window_get_dataset(a) != b32);
    larmor_window_open_reference(a, refp);
    g_assert_true(gui_test_wait(has_reference, a, 60));

    LarmorReconParams p;
    larmor_recon_params_init(&p);
    g_strlcpy(p.variant, "cpu-nufft", sizeof p.variant);
    p.iters = 4;
    p.lambda = 1e-2;
    p.prior_influence = TRUE;
    GError *error = NULL;
    g_assert_true(larmor_window_reconstruct(a, &p, &error));
    g_assert_no_error(error);
    g_assert_true(gui_test_wait(gui_test_idle, a, 300));
    LarmorRun *ra = gui_test_run_at(a, 0);
    LarmorVolume *pia = larmor_run_get_prior_influence(ra);
    g_assert_nonnull(pia);

    LarmorViewState *ost = larmor_ortho_view_get_state(larmor_window_get_ortho_view(a));
    LarmorRoi roi, noise, got;
    larmor_roi_set(&roi, LARMOR_ROI_ELLIPSE, LARMOR_ORIENT_CORONAL, 14, 3, 4, 20, 22);
    larmor_roi_set(&noise, LARMOR_ROI_RECT, LARMOR_ORIENT_CORONAL, 14, 0, 0, 3, 3);
    larmor_view_state_set_noise_roi(ost, &noise);
    larmor_view_state_set_roi(ost, &roi);
    LarmorLine line, gline;
    larmor_line_set(&line, LARMOR_ORIENT_AXIAL, 16, 2.5, 3, 28, 29.25);
    larmor_view_state_set_line(ost, &line);

    larmor_window_save_session(a, path);
    g_assert_true(gui_test_wait(gui_test_idle, a, 60));
    GKeyFile *kf = g_key_file_new();
    g_assert_true(g_key_file_load_from_file(kf, path, G_KEY_FILE_NONE, NULL));
    char *t = g_key_file_get_string(kf, "data", "trajectory-file", NULL);
    char *k = g_key_file_get_string(kf, "data", "kspace-file", NULL);
    g_assert_cmpstr(t, ==, tp);
    g_assert_cmpstr(k, ==, kp);
    g_free(t);
    g_free(k);
    g_key_file_unref(kf);

    LarmorWindow *b = open_window();
    larmor_window_open_session(b, path);
    g_assert_true(gui_test_wait(gui_test_idle, b, 120));
    g_assert_cmpstr(larmor_window_get_message(b), ==, "extras.larmor: 1 run restored");
    g_assert_cmpstr(larmor_dataset_get_key(larmor_window_get_dataset(b)), ==,
                    larmor_dataset_get_key(larmor_window_get_dataset(a)));
    /* the prior influence image, bit for bit, listed with the images */
    LarmorVolume *pib = larmor_run_get_prior_influence(gui_test_run_at(b, 0));
    g_assert_nonnull(pib);
    g_assert_true(has_volume(b, pib));
    const lm_volume *va = larmor_volume_get_data(pia), *vb = larmor_volume_get_data(pib);
    g_assert_cmpmem(va->data, sizeof(lm_cfloat) * lm_volume_count(va), vb->data, sizeof(lm_cfloat) * lm_volume_count(vb));
    /* the reference: the file's values, in the image list */
    LarmorVolume *ref = reference_of(b);
    g_assert_nonnull(ref);
    g_assert_cmpstr(larmor_volume_get_name(ref), ==, "Reference: t1.nii");
    const lm_volume *tv = larmor_volume_get_data(larmor_dataset_get_truth(b32));
    g_assert_cmpmem(larmor_volume_get_data(ref)->data, sizeof(lm_cfloat) * lm_volume_count(tv), tv->data,
                    sizeof(lm_cfloat) * lm_volume_count(tv));
    /* regions and line */
    LarmorViewState *bst = larmor_ortho_view_get_state(larmor_window_get_ortho_view(b));
    larmor_view_state_get_roi(bst, &got);
    g_assert_true(larmor_roi_equal(&got, &roi));
    larmor_view_state_get_noise_roi(bst, &got);
    g_assert_true(larmor_roi_equal(&got, &noise));
    larmor_view_state_get_line(bst, &gline);
    g_assert_true(larmor_line_equal(&gline, &line));

    g_object_unref(files[0]);
    g_object_unref(files[1]);
    g_object_unref(b32);
    gtk_window_destroy(GTK_WINDOW(a));
    gtk_window_destroy(GTK_WINDOW(b));
    gui_test_remove_tree(dir);
    g_free(tc);
    g_free(kc);
    g_free(tp);
    g_free(kp);
    g_free(refp);
    g_free(path);
    g_free(dir);
}

/* A session file given on the command line (or dropped on the window) opens
 * as a session: the hand drive's `larmor study.larmor` was read as data and
 * refused ("no data set there"). */
static void test_open_as_file(void)
{
    char *dir = gui_test_tmp_dir("session-file");
    char *path = g_build_filename(dir, "study.larmor", NULL);
    LarmorWindow *a = open_window();
    reconstruct(a, LM_METHOD_CG, 2);
    larmor_window_save_session(a, path);
    g_assert_true(gui_test_wait(gui_test_idle, a, 60));

    LarmorWindow *b = open_window();
    GFile *f = g_file_new_for_path(path);
    larmor_window_open_files(b, &f, 1);
    g_assert_true(gui_test_wait(gui_test_idle, b, 120));
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(b)), ==, 1);
    same_run(gui_test_run_at(a, 0), gui_test_run_at(b, 0));
    g_assert_cmpstr(larmor_window_get_message(b), ==, "study.larmor: 1 run restored");
    g_object_unref(f);
    gtk_window_destroy(GTK_WINDOW(b));
    gtk_window_destroy(GTK_WINDOW(a));
    g_free(path);
    g_free(dir);
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = gui_test_app_new();
    g_test_add_func("/session/round-trip", test_round_trip);
    g_test_add_func("/session/extras", test_extras);
    g_test_add_func("/session/open-as-file", test_open_as_file);
    return g_test_run();
}
