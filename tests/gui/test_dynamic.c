/* Dynamic data in the workbench (issue 23): 4D images whose frames can be
 * appended while shown, the time bar (frame slider, play/pause, fps, loop)
 * and [ / ] under real widgets, D128c8 from New Phantom and from the
 * folder larmor-cli phantom writes (cfl frames in dimension 10), a
 * temporally regularised run in the worker (and its cancel), its Auto
 * (lambda_t by cross-validation), the read-out
 * naming the frame, ROI time-intensity curves with their CSV, frame by
 * frame against ttv side by side, and the 4D NIfTI export. */
#include <complex.h>
#include <math.h>

#include "gui-test.h"
#include "larmor-dataset.h"
#include "larmor-compare-view.h"
#include "larmor-dyn-controls.h"
#include "larmor-export-dicom.h"
#include "larmor-ortho-view.h"
#include "larmor-time-bar.h"
#include "larmor-volume.h"

static LarmorApplication *app;

/* A 4 x 4 x 1 volume whose voxels all hold value (frame f: value f + 1). */
static lm_volume *flat_frame(float value)
{
    lm_volume *v = lm_volume_new((int64_t[]){ 4, 4, 1 }, (double[]){ 1, 1, 1 }, NULL);
    g_assert_nonnull(v);
    for (int64_t i = 0; i < 16; i++)
        v->data[i] = value;
    return v;
}

static void on_frames_changed(LarmorVolume *v, int *count)
{
    (*count)++;
}

/* Frames appended while the volume is shown: the signal, the time bar's
 * range and text, the slice view's pixels, playback with and without loop,
 * the keys, and a frame of another grid refused in one line. */
static void test_volume_frames(void)
{
    LarmorVolume *vol = larmor_volume_new_take(flat_frame(1), "cine");
    larmor_volume_set_frame_s(vol, 0.05);
    g_assert_cmpint(larmor_volume_get_n_frames(vol), ==, 1);
    GtkWidget *win = gtk_window_new();
    gtk_window_set_default_size(GTK_WINDOW(win), 600, 400);
    LarmorOrthoView *ov = LARMOR_ORTHO_VIEW(larmor_ortho_view_new());
    gtk_window_set_child(GTK_WINDOW(win), GTK_WIDGET(ov));
    larmor_ortho_view_show_volume(ov, vol);
    larmor_ortho_view_auto_window(ov);
    gui_test_show(GTK_WINDOW(win));
    LarmorTimeBar *bar = larmor_ortho_view_get_time_bar(ov);
    LarmorViewState *state = larmor_ortho_view_get_state(ov);
    g_assert_false(gtk_widget_get_visible(GTK_WIDGET(bar))); /* one frame: no time controls */

    int changed = 0;
    g_signal_connect(vol, "frames-changed", G_CALLBACK(on_frames_changed), &changed);
    GError *error = NULL;
    g_assert_true(larmor_volume_append_frame(vol, flat_frame(2), &error));
    g_assert_true(larmor_volume_append_frame(vol, flat_frame(3), &error));
    g_assert_no_error(error);
    g_assert_cmpint(changed, ==, 2);
    g_assert_cmpint(larmor_volume_get_n_frames(vol), ==, 3);
    g_assert_true(gtk_widget_get_visible(GTK_WIDGET(bar)));
    char *t = larmor_time_bar_get_text(bar);
    g_assert_cmpstr(t, ==, "frame 0 (0–2) · 25 ms");
    g_free(t);
    /* Another grid: refused, nothing appended. */
    lm_volume *bad = lm_volume_new((int64_t[]){ 5, 4, 1 }, (double[]){ 1, 1, 1 }, NULL);
    g_assert_false(larmor_volume_append_frame(vol, bad, &error));
    g_assert_error(error, LARMOR_ERROR, LM_ERR_INVALID);
    g_assert_nonnull(strstr(error->message, "not on the image's grid"));
    g_clear_error(&error);
    g_assert_cmpint(larmor_volume_get_n_frames(vol), ==, 3);

    /* The axial view shows the state's frame: the centre pixel brightens
     * with the frame (the automatic window spans all frames: 1 .. 3). */
    larmor_ortho_view_auto_window(ov);
    LarmorSliceView *axial = larmor_ortho_view_get_slice_view(ov, LARMOR_ORIENT_AXIAL);
    double x, y;
    g_assert_true(larmor_slice_view_voxel_to_widget(axial, (int64_t[]){ 2, 2, 0 }, &x, &y));
    guint32 px[3];
    for (int f = 0; f < 3; f++) {
        larmor_view_state_set_frame(state, f);
        gui_test_spin(0.1);
        GuiTestImage img;
        g_assert_true(gui_test_capture(GTK_WIDGET(axial), &img));
        px[f] = gui_test_pixel(&img, x, y) & 0xff;
        gui_test_image_clear(&img);
    }
    g_assert_cmpuint(px[0], <, px[1]);
    g_assert_cmpuint(px[1], <, px[2]);

    /* The read-out names the frame and its centre time. */
    char *r = larmor_format_voxel_frame(vol, (int64_t[]){ 1, 1, 0 }, 2);
    g_assert_nonnull(strstr(r, "t 2 (0–2) · 125 ms"));
    g_assert_nonnull(strstr(r, "|v| 3"));
    g_free(r);

    /* Keys [ and ] step the frame, clamped at both ends. */
    gtk_widget_grab_focus(GTK_WIDGET(axial));
    larmor_view_state_set_frame(state, 0);
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(axial), "slice.frame", "i", -1));
    g_assert_cmpint(larmor_view_state_get_frame(state), ==, 0);
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(axial), "slice.frame", "i", 1));
    g_assert_cmpint(larmor_view_state_get_frame(state), ==, 1);
    gtk_widget_activate_action(GTK_WIDGET(axial), "slice.frame", "i", 1);
    gtk_widget_activate_action(GTK_WIDGET(axial), "slice.frame", "i", 1);
    g_assert_cmpint(larmor_view_state_get_frame(state), ==, 2);

    /* Playback: ticks advance; with loop the last wraps to the first;
     * without, it stops there. */
    larmor_time_bar_set_loop(bar, TRUE);
    larmor_time_bar_set_playing(bar, TRUE);
    g_assert_true(larmor_time_bar_get_playing(bar));
    g_assert_cmpint(larmor_view_state_get_frame(state), ==, 0); /* play at the end starts over */
    larmor_time_bar_tick(bar);
    larmor_time_bar_tick(bar);
    g_assert_cmpint(larmor_view_state_get_frame(state), ==, 2);
    larmor_time_bar_tick(bar);
    g_assert_cmpint(larmor_view_state_get_frame(state), ==, 0);
    larmor_time_bar_set_loop(bar, FALSE);
    larmor_time_bar_tick(bar);
    larmor_time_bar_tick(bar);
    larmor_time_bar_tick(bar);
    g_assert_cmpint(larmor_view_state_get_frame(state), ==, 2);
    g_assert_false(larmor_time_bar_get_playing(bar));
    /* The timer plays by itself at the chosen rate (no timing asserted:
     * only that frames move while playing). */
    larmor_time_bar_set_fps(bar, 60);
    g_assert_cmpfloat(larmor_time_bar_get_fps(bar), ==, 60);
    larmor_time_bar_set_loop(bar, TRUE);
    larmor_time_bar_set_playing(bar, TRUE);
    g_assert_true(gui_test_wait((GuiTestCond)larmor_view_state_get_frame, state, 30));
    larmor_time_bar_set_playing(bar, FALSE);

    /* A frame appended while playing extends the slider's range. */
    g_assert_true(larmor_volume_append_frame(vol, flat_frame(4), NULL));
    larmor_view_state_set_frame(state, 3);
    t = larmor_time_bar_get_text(bar);
    g_assert_cmpstr(t, ==, "frame 3 (0–3) · 175 ms");
    g_free(t);

    gtk_window_destroy(GTK_WINDOW(win));
    g_object_unref(vol);
}

static gboolean has_runs(gpointer w)
{
    return !larmor_window_is_busy(w) && g_list_model_get_n_items(larmor_window_get_runs(w)) > 0;
}

/* The dynamic parameters the panel gives for prior and lambda_t. */
static void dyn_params(LarmorWindow *w, LarmorDynPrior prior, double lambda_t, int iters, LarmorReconParams *p)
{
    LarmorDynControls *dc = larmor_recon_panel_get_dyn_controls(larmor_window_get_recon_panel(w));
    larmor_dyn_controls_set_prior(dc, prior);
    larmor_dyn_controls_set_lambda(dc, lambda_t, 0.01);
    larmor_dyn_controls_set_iters(dc, iters);
    g_assert_true(larmor_window_get_params(w, p));
    g_assert_true(p->dynamic);
}

/* The run's frames equal lm_dyn_solve's on the same data and settings
 * (the worker adds nothing of its own): relative 1e-5 per frame. */
static void check_against_library(LarmorDataset *ds, LarmorRun *run)
{
    const LarmorReconParams *p = larmor_run_get_params(run);
    lm_error err = { 0 };
    lm_dyn_model *m = NULL;
    lm_geom geom = *larmor_dataset_get_geom(ds); /* dynamic runs' basis, as the worker's */
    geom.basis = LM_DYN_BASIS_DEFAULT;
    lm_dyn_model_desc md = { .geom = &geom, .traj = larmor_dataset_get_traj(ds),
                             .kdata = larmor_dataset_get_kdata(ds),
                             .sens = larmor_coil_maps_get_sens(larmor_dataset_get_maps(ds)),
                             .frames = larmor_dataset_get_frames(ds), .variant = p->variant, .use_cache = 1 };
    g_assert_cmpint(lm_dyn_model_new(&md, &m, &err), ==, LM_OK);
    lm_dyn_opts o;
    lm_dyn_opts_init(&o);
    o.time = p->dyn_time;
    o.lambda_t = p->lambda;
    o.iters = p->iters;
    lm_dyn_result res = { 0 };
    g_assert_cmpint(lm_dyn_solve(m, &o, &res, &err), ==, LM_OK);
    int64_t T;
    lm_cfloat *x = larmor_volume_dup_frames(larmor_run_get_image(run), &T);
    g_assert_cmpint(T, ==, res.frames);
    for (int64_t t = 0; t < T; t++) {
        double num = 0, den = 0;
        for (int64_t i = 0; i < res.nvox; i++) {
            num += pow(cabs(x[t * res.nvox + i] - res.x[t * res.nvox + i]), 2);
            den += pow(cabs(res.x[t * res.nvox + i]), 2);
        }
        g_assert_cmpfloat(sqrt(num / den), <, 1e-5);
    }
    g_free(x);
    lm_dyn_result_clear(&res);
    lm_dyn_model_free(m);
}

/* Mean and SD (n - 1) of |frame t| in the rectangle [u0, u1] x [v0, v1] of
 * axial slice 0, in long double: the curve's reference. */
static void rect_stats(LarmorVolume *v, int64_t t, int64_t u0, int64_t v0, int64_t u1, int64_t v1, double *mean,
                       double *sd)
{
    const lm_volume *f = larmor_volume_get_frame_data(v, t);
    long double s = 0, ss = 0;
    int64_t n = 0;
    for (int64_t y = v0; y <= v1; y++)
        for (int64_t x = u0; x <= u1; x++, n++)
            s += hypotl(crealf(f->data[x + f->dims[0] * y]), cimagf(f->data[x + f->dims[0] * y]));
    *mean = (double)(s / n);
    for (int64_t y = v0; y <= v1; y++)
        for (int64_t x = u0; x <= u1; x++) {
            long double d = hypotl(crealf(f->data[x + f->dims[0] * y]), cimagf(f->data[x + f->dims[0] * y])) - (long double)*mean;
            ss += d * d;
        }
    *sd = (double)sqrtl(ss / (n - 1));
}

/* A ROI on the moving ellipse: the viewer's curve has a point per frame
 * equal to the reference, its CSV (frame, time_s, mean, sd) is written
 * atomically, and without a ROI there is nothing to write. */
static void check_time_curve(LarmorWindow *w, LarmorRun *run)
{
    LarmorOrthoView *ov = larmor_window_get_ortho_view(w);
    LarmorTimeCurve *curve = larmor_ortho_view_get_time_curve(ov);
    LarmorViewState *state = larmor_ortho_view_get_state(ov);
    larmor_view_state_clear_roi(state);
    g_assert_cmpint(larmor_time_curve_get_frames(curve), ==, 0);
    g_assert_false(gtk_widget_get_visible(GTK_WIDGET(curve)));
    char *dir = gui_test_tmp_dir("dyn-curve");
    char *csv = g_build_filename(dir, "curve.csv", NULL);
    GError *error = NULL;
    g_assert_false(larmor_time_curve_save_csv(curve, csv, &error));
    g_assert_nonnull(strstr(error->message, "no curve"));
    g_clear_error(&error);
    g_assert_false(g_file_test(csv, G_FILE_TEST_EXISTS));

    LarmorRoi roi;
    larmor_roi_set(&roi, LARMOR_ROI_RECT, LARMOR_ORIENT_AXIAL, 0, 40, 56, 47, 71);
    larmor_view_state_set_roi(state, &roi);
    g_assert_cmpint(larmor_time_curve_get_frames(curve), ==, 24);
    g_assert_true(gtk_widget_get_visible(GTK_WIDGET(curve)));
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t t = 0; t < 24; t++) {
        double m, sd, rm, rsd;
        g_assert_true(larmor_time_curve_get_point(curve, t, &m, &sd));
        rect_stats(larmor_run_get_image(run), t, 40, 56, 47, 71, &rm, &rsd);
        g_assert_cmpfloat(fabs(m - rm), <=, 1e-12 * rm);
        g_assert_cmpfloat(fabs(sd - rsd), <=, 1e-10 * rsd);
        lo = MIN(lo, m), hi = MAX(hi, m);
    }
    g_assert_cmpfloat(hi, >, 1.05 * lo); /* the region's intensity changes over the frames */
    larmor_view_state_set_frame(state, 9);
    gui_test_save_shot(GTK_WIDGET(w), "dynamic-viewer.png");

    g_assert_true(larmor_time_curve_save_csv(curve, csv, &error));
    g_assert_no_error(error);
    char *text = NULL;
    g_assert_true(g_file_get_contents(csv, &text, NULL, NULL));
    char **lines = g_strsplit(text, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 26); /* header, 24 frames, the empty tail */
    g_assert_cmpstr(lines[0], ==, "frame,time_s,mean,sd");
    g_assert_true(g_str_has_prefix(lines[1], "0,0.042,"));
    g_assert_true(g_str_has_prefix(lines[24], "23,1.974,"));
    double m0, sd0;
    larmor_time_curve_get_point(curve, 0, &m0, &sd0);
    char **f = g_strsplit(lines[1], ",", -1);
    g_assert_cmpfloat(fabs(g_ascii_strtod(f[2], NULL) - m0), <=, 1e-8 * m0);
    g_strfreev(f);
    g_strfreev(lines);
    g_free(text);
    /* Nothing else in the folder: no temporary left beside it. */
    GDir *d = g_dir_open(dir, 0, NULL);
    int files = 0;
    while (g_dir_read_name(d))
        files++;
    g_dir_close(d);
    g_assert_cmpint(files, ==, 1);
    larmor_view_state_clear_roi(state);
    gui_test_remove_tree(dir);
    g_free(dir);
    g_free(csv);
}

static gboolean message_shown(gpointer w)
{
    return larmor_window_get_message(w) != NULL;
}

/* Export of the shown dynamic run: NIfTI 4D with pixdim[4] 84 ms, the
 * same values; DICOM as a dynamic series of 24 files. */
static void check_export(LarmorWindow *w, LarmorRun *run)
{
    char *dir = gui_test_tmp_dir("dyn-export");
    char *path = g_build_filename(dir, "cine.nii.gz", NULL);
    larmor_ortho_view_show_volume(larmor_window_get_ortho_view(w), larmor_run_get_image(run));
    larmor_window_set_page(w, "viewer");
    char *name = larmor_window_get_export_name(w);
    g_assert_nonnull(strstr(name, "-ttv-l0.03-")); /* named for its prior, not the static regulariser */
    g_free(name);
    larmor_window_export_nifti(w, path, TRUE);
    g_assert_true(gui_test_wait(message_shown, w, 120));
    g_assert_nonnull(strstr(larmor_window_get_message(w), "Wrote"));
    lm_error err = { 0 };
    lm_volume *v = NULL;
    int64_t frames = 0;
    double frame_s = 0;
    g_assert_cmpint(lm_nifti_read_frames(path, &v, &frames, &err), ==, LM_OK);
    g_assert_cmpint(lm_nifti_frame_seconds(path, &frame_s, &err), ==, LM_OK);
    g_assert_cmpint(frames, ==, 24);
    g_assert_cmpfloat_with_epsilon(frame_s, 0.084, 1e-6);
    int64_t T;
    lm_cfloat *x = larmor_volume_dup_frames(larmor_run_get_image(run), &T);
    const int64_t n = lm_volume_count(v);
    g_assert_true(memcmp(x, v->data, (size_t)(n * T) * sizeof *x) == 0); /* complex64: the same bits */
    g_free(x);
    lm_volume_free(v);

    /* DICOM: a dynamic series, one classic file per slice per frame. */
    char *ddir = g_build_filename(dir, "dicom", NULL);
    GError *error = NULL;
    g_assert_true(larmor_export_dicom_write(larmor_run_get_image(run), ddir, NULL, LM_DICOM_MAGNITUDE, FALSE, "cine",
                                            NULL, &error));
    g_assert_no_error(error);
    GDir *dd = g_dir_open(ddir, 0, NULL);
    g_assert_nonnull(dd);
    int files = 0;
    while (g_dir_read_name(dd))
        files++;
    g_dir_close(dd);
    g_assert_cmpint(files, ==, 24); /* D128c8: one slice, 24 frames */
    g_free(ddir);
    gui_test_remove_tree(dir);
    g_free(dir);
    g_free(path);
}

/* Frame by frame against ttv on Compare: the truth and both runs side by
 * side, one time bar moving every panel's frame (linked or not). */
static void check_compare(LarmorWindow *w, LarmorRun *ttv, LarmorRun *fbf)
{
    larmor_window_set_page(w, "compare");
    LarmorCompareView *cv = larmor_window_get_compare_view(w);
    gui_test_spin(0.2);
    LarmorSliceView *panels[3] = { NULL, NULL, NULL };
    for (int i = 0; i < 3; i++) {
        panels[i] = larmor_compare_view_get_panel(cv, i);
        g_assert_nonnull(panels[i]);
        g_assert_cmpint(larmor_volume_get_n_frames(larmor_slice_view_get_volume(panels[i])), ==, 24);
    }
    LarmorTimeBar *bar = larmor_compare_view_get_time_bar(cv);
    g_assert_true(gtk_widget_get_visible(GTK_WIDGET(bar)));
    for (int linked = 1; linked >= 0; linked--) {
        larmor_compare_view_set_linked(cv, linked);
        for (int i = 0; i < 3; i++)
            panels[i] = larmor_compare_view_get_panel(cv, i);
        int frame = linked ? 7 : 11;
        larmor_view_state_set_frame(larmor_compare_view_get_state(cv), frame);
        for (int i = 0; i < 3; i++)
            g_assert_cmpint(larmor_view_state_get_frame(larmor_slice_view_get_state(panels[i])), ==, frame);
        larmor_time_bar_tick(bar);
        for (int i = 0; i < 3; i++)
            g_assert_cmpint(larmor_view_state_get_frame(larmor_slice_view_get_state(panels[i])), ==, frame + 1);
    }
    larmor_compare_view_set_linked(cv, TRUE);
    /* The ROI table measures the frame shown. */
    LarmorRoi roi;
    larmor_roi_set(&roi, LARMOR_ROI_RECT, LARMOR_ORIENT_AXIAL, 0, 40, 56, 47, 71);
    larmor_view_state_set_roi(larmor_compare_view_get_state(cv), &roi);
    for (int frame = 3; frame <= 4; frame++) {
        larmor_view_state_set_frame(larmor_compare_view_get_state(cv), frame);
        LarmorRoiStats st;
        const char *name;
        g_assert_true(larmor_compare_view_get_roi_stats(cv, 1, &st, &name));
        double rm, rsd;
        rect_stats(larmor_run_get_image(ttv), frame, 40, 56, 47, 71, &rm, &rsd);
        g_assert_cmpfloat(fabs(st.mean - rm), <=, 1e-6 * rm);
    }
    gui_test_save_shot(GTK_WIDGET(w), "dynamic-compare.png");
    larmor_view_state_clear_roi(larmor_compare_view_get_state(cv));
    /* The temporal prior is well below frame by frame (both against all 24 frames of the truth). */
    g_assert_cmpfloat(larmor_run_get_percent_error(ttv), <, 0.85 * larmor_run_get_percent_error(fbf));
    larmor_window_set_page(w, "viewer");
}

/* A session keeps a dynamic run: its frames bit for bit (NIfTI 4D), the
 * frame duration and its prior; the data (D128c8) are made again. */
static void check_session(LarmorWindow *w, LarmorRun *run)
{
    char *dir = gui_test_tmp_dir("dyn-session");
    char *path = g_build_filename(dir, "cine.larmor", NULL);
    larmor_window_save_session(w, path);
    g_assert_true(gui_test_wait(gui_test_idle, w, 120));
    LarmorWindow *b = gui_test_open_data(GTK_APPLICATION(app), NULL);
    larmor_window_open_session(b, path);
    g_assert_true(gui_test_wait(gui_test_idle, b, 300));
    g_assert_nonnull(larmor_dataset_get_frames(larmor_window_get_dataset(b)));
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(b)), ==, 1);
    LarmorRun *r = gui_test_run_at(b, 0);
    const LarmorReconParams *p = larmor_run_get_params(r), *q = larmor_run_get_params(run);
    g_assert_true(p->dynamic);
    g_assert_cmpint(p->dyn_time, ==, q->dyn_time);
    g_assert_cmpint(p->dyn_space_tv, ==, q->dyn_space_tv);
    g_assert_cmpfloat(p->lambda, ==, q->lambda);
    g_assert_cmpstr(larmor_run_get_label(r), ==, larmor_run_get_label(run));
    g_assert_cmpint(larmor_run_get_frames(r), ==, 24);
    g_assert_cmpfloat_with_epsilon(larmor_volume_get_frame_s(larmor_run_get_image(r)), 0.084, 1e-6);
    int64_t ta, tb;
    lm_cfloat *xa = larmor_volume_dup_frames(larmor_run_get_image(run), &ta);
    lm_cfloat *xb = larmor_volume_dup_frames(larmor_run_get_image(r), &tb);
    g_assert_cmpint(ta, ==, tb);
    g_assert_true(memcmp(xa, xb, (size_t)(ta * 128 * 128) * sizeof *xa) == 0);
    g_free(xa);
    g_free(xb);
    gui_test_close_window(b);
    gui_test_remove_tree(dir);
    g_free(dir);
    g_free(path);
}

static gboolean live_idle(gpointer live)
{
    return !larmor_live_is_busy(live);
}

/* Live lambda_t on the ttv run: the finished run stays as it was, a live
 * run forked from it takes the re-solves, and its final image is a fresh
 * lm_dyn_solve's at the new weight. */
static void check_live(LarmorWindow *w, LarmorRun *run)
{
    LarmorDynControls *dc = larmor_recon_panel_get_dyn_controls(larmor_window_get_recon_panel(w));
    GtkToggleButton *toggle = larmor_dyn_controls_get_live_toggle(dc);
    /* Another prior than the run's does not fit its model (Live would start a new run of it). */
    LarmorReconParams want;
    larmor_dyn_controls_set_prior(dc, LARMOR_DYN_LLR);
    g_assert_true(larmor_window_get_params(w, &want));
    g_assert_false(larmor_run_live_fits(run, &want, NULL));
    larmor_dyn_controls_set_prior(dc, LARMOR_DYN_TTV);
    g_assert_true(larmor_window_get_params(w, &want));
    g_assert_true(larmor_run_live_fits(run, &want, NULL));
    gui_test_spin(0.1);
    g_assert_true(gtk_widget_get_sensitive(GTK_WIDGET(toggle)));
    GObject *live = larmor_run_get_live(run);
    g_assert_nonnull(live);
    LarmorVolume *first = larmor_run_get_image(run);
    const double perr0 = larmor_run_get_percent_error(run);
    const guint n0 = g_list_model_get_n_items(larmor_window_get_runs(w));
    gtk_toggle_button_set_active(toggle, TRUE);
    g_assert_true(gui_test_wait(live_idle, live, 300));
    larmor_dyn_controls_set_lambda(dc, 0.003, 0.01); /* (a few iterations in, 0.03 and above give the same image) */
    g_assert_true(gui_test_wait(live_idle, live, 300));
    g_assert_null(larmor_live_get_error(LARMOR_LIVE(live)));
    gboolean final = FALSE;
    g_assert_true(larmor_live_get_last(LARMOR_LIVE(live), NULL, NULL, &final));
    g_assert_true(final);
    /* the finished run is as it was */
    g_assert_true(larmor_run_get_image(run) == first);
    g_assert_cmpfloat(larmor_run_get_params(run)->lambda, ==, 0.03);
    g_assert_cmpfloat(larmor_run_get_percent_error(run), ==, perr0);
    /* the live run holds the result: 24 frames at lambda_t 0.003 */
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(w)), ==, n0 + 1);
    LarmorRun *lr = gui_test_last_run(w);
    g_assert_true(larmor_run_get_is_live(lr));
    g_assert_cmpfloat(larmor_run_get_params(lr)->lambda, ==, 0.003);
    g_assert_true(larmor_run_get_params(lr)->dynamic);
    g_assert_nonnull(strstr(larmor_run_get_label(lr), "live from #"));
    g_assert_cmpint(larmor_run_get_frames(lr), ==, 24);
    g_assert_true(larmor_run_get_image(lr) != first);
    g_assert_true(isfinite(larmor_run_get_percent_error(lr)));
    g_assert_cmpfloat(larmor_run_get_percent_error(lr), !=, perr0);
    check_against_library(larmor_window_get_dataset(w), lr);
    gtk_toggle_button_set_active(toggle, FALSE);
}

/* D128c8 from New Phantom: the data card, the panel's dynamic controls,
 * a ttv run in the worker giving 24 frames scored against the 24-frame
 * truth, the viewer's time bar on it, a cancel. */
static void test_d128c8_problem(void)
{
    LarmorDatasetSpec spec = { .kind = LARMOR_SOURCE_PROBLEM };
    g_strlcpy(spec.problem, "D128c8", sizeof spec.problem);
    LarmorWindow *w = gui_test_open_data(GTK_APPLICATION(app), &spec);
    LarmorDataset *ds = larmor_window_get_dataset(w);
    g_assert_nonnull(larmor_dataset_get_frames(ds));
    g_assert_cmpint(larmor_dataset_get_frames(ds)->count, ==, 24);
    char *d = larmor_dataset_describe(ds);
    g_assert_nonnull(strstr(d, "24 frames of "));
    g_assert_nonnull(strstr(d, "688 samples, 84.0 ms each")); /* 2688, with the locale's grouping */
    g_free(d);
    g_assert_cmpint(larmor_volume_get_n_frames(larmor_dataset_get_truth(ds)), ==, 24);
    LarmorDynControls *dc = larmor_recon_panel_get_dyn_controls(larmor_window_get_recon_panel(w));
    g_assert_true(gtk_widget_get_visible(GTK_WIDGET(dc)));

    /* A static run of dynamic data is refused in one line. */
    LarmorReconParams st;
    gui_test_cpu_params(&st, "cpu-nufft", 3);
    GError *error = NULL;
    g_assert_false(larmor_window_reconstruct(w, &st, &error));
    g_assert_nonnull(strstr(error->message, "24 frames"));
    g_clear_error(&error);

    LarmorReconParams p, st0, st1;
    LarmorReconPanel *panel = larmor_window_get_recon_panel(w);
    g_assert_true(larmor_recon_panel_get_static_params(panel, &st0, NULL));
    /* 8 ADMM iterations of LM_DYN_CG_ITERS_DEFAULT (2) CG steps, against
     * 8 CG steps frame by frame below: a few, for the test's time */
    dyn_params(w, LARMOR_DYN_TTV, 0.03, 8, &p);
    /* The settings file keeps the static controls: dynamic weights and
     * iterations do not replace them. */
    g_assert_true(larmor_recon_panel_get_static_params(panel, &st1, NULL));
    g_assert_false(st1.dynamic);
    g_assert_cmpint(st1.iters, ==, st0.iters);
    g_assert_cmpfloat(st1.lambda, ==, st0.lambda);
    g_assert_cmpint(p.iters, ==, 8);
    g_assert_cmpint(p.dyn_time, ==, LM_DYN_TIME_TV);
    g_assert_false(p.dyn_space_tv);
    LarmorRun *run = gui_test_reconstruct(w, &p);
    g_assert_cmpint(larmor_run_get_frames(run), ==, 24);
    g_assert_true(larmor_run_get_params(run)->dynamic);
    g_assert_nonnull(strstr(larmor_run_get_label(run), "dynamic · ttv"));
    /* Error over all frames against the truth: what larmor-cli recon gives
     * for the same data and settings (22.41 % there; the data are the same). */
    g_assert_true(isfinite(larmor_run_get_percent_error(run)));
    g_assert_cmpfloat(larmor_run_get_percent_error(run), <, 40);
    LarmorOrthoView *ov = larmor_window_get_ortho_view(w);
    g_assert_true(larmor_ortho_view_get_volume(ov) == larmor_run_get_image(run));
    g_assert_true(gtk_widget_get_visible(GTK_WIDGET(larmor_ortho_view_get_time_bar(ov))));
    larmor_view_state_set_frame(larmor_ortho_view_get_state(ov), 5);
    char *r = larmor_format_voxel_frame(larmor_run_get_image(run), (int64_t[]){ 64, 64, 0 }, 5);
    g_assert_nonnull(strstr(r, "t 5 (0–23) · 462 ms"));
    g_free(r);
    check_against_library(larmor_window_get_dataset(w), run);
    check_time_curve(w, run);
    check_export(w, run);
    check_session(w, run);
    check_live(w, run);

    /* Frame by frame (lambda_t 0: every frame its own CG) beside it. */
    dyn_params(w, LARMOR_DYN_FRAME_BY_FRAME, 0.03, 8, &p);
    g_assert_cmpint(p.dyn_time, ==, LM_DYN_TIME_NONE);
    g_assert_cmpfloat(p.lambda, ==, 0);
    LarmorRun *fbf = gui_test_reconstruct(w, &p);
    g_assert_nonnull(strstr(larmor_run_get_label(fbf), "frame by frame"));
    check_compare(w, run, fbf);

    /* Auto: lambda_t by cross-validation; the run and the panel's lambda
     * time take the weight chosen, and the image is lm_dyn_solve's at it. */
    dyn_params(w, LARMOR_DYN_TTV, 0.5, 8, &p);
    g_assert_true(larmor_window_auto_lambda(w, &error));
    g_assert_no_error(error);
    g_assert_true(gui_test_wait(has_runs, w, 300));
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(w)), ==, 4);
    LarmorRun *ar = gui_test_last_run(w);
    const double chosen = larmor_run_get_lambda_used(ar);
    g_assert_true(larmor_run_get_params(ar)->lambda_auto);
    g_assert_cmpfloat(chosen, >=, 1e-5);
    g_assert_cmpfloat(chosen, <=, 100);
    g_assert_cmpfloat(chosen, !=, 0.5);
    g_assert_cmpfloat(larmor_run_get_params(ar)->lambda, ==, chosen);
    g_assert_cmpstr(larmor_run_get_lambda_criterion(ar), ==, "cross-validation");
    char *details = larmor_run_get_details(ar);
    g_assert_nonnull(strstr(details, "(cross-validation)"));
    g_free(details);
    g_assert_cmpfloat(fabs(larmor_dyn_controls_get_lambda_t(dc) - chosen), <=, 0.5e-4); /* the spin's 4 digits */
    g_assert_nonnull(strstr(larmor_window_get_message(w), "chosen (cross-validation: held-out"));
    check_against_library(larmor_window_get_dataset(w), ar);

    /* Cancel: many ADMM iterations, cancelled; no run is added. */
    dyn_params(w, LARMOR_DYN_LLR, 0.03, 100000, &p);
    g_assert_true(larmor_window_reconstruct(w, &p, &error));
    g_assert_no_error(error);
    gui_test_spin(0.5);
    larmor_window_cancel(w);
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    g_assert_cmpstr(larmor_window_get_last_status(w), ==, "cancelled");
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(w)), ==, 4);
    gui_test_close_window(w);
}

/* Writes D128c8 as larmor-cli phantom --problem D128c8 --out dir does. */
static void write_d128c8(const char *dir)
{
    lm_error err = { 0 };
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_sens *sens = NULL;
    lm_cfloat *truth = NULL;
    lm_frames *f = NULL;
    g_assert_cmpint(lm_dyn_problem_make(lm_dyn_problem_find("D128c8"), &g, &t, &k, &sens, &truth, &f, &err), ==, LM_OK);
    char *p = g_build_filename(dir, "traj", NULL);
    g_assert_cmpint(lm_cfl_write_traj_frames(p, t, f->count, &err), ==, LM_OK);
    g_free(p);
    p = g_build_filename(dir, "kspace", NULL);
    g_assert_cmpint(lm_cfl_write_kdata_frames(p, k, t->readout, f->count, &err), ==, LM_OK);
    g_free(p);
    p = g_build_filename(dir, "sens", NULL);
    const int64_t sd[4] = { sens->n[0], sens->n[1], sens->n[2], sens->ncoils };
    g_assert_cmpint(lm_cfl_write(p, 4, sd, sens->s, &err), ==, LM_OK);
    g_free(p);
    double vox[3] = { g.fov_mm[0] / g.n[0], g.fov_mm[1] / g.n[1], g.fov_mm[2] / g.n[2] };
    lm_volume *v = lm_volume_new(g.n, vox, &err);
    p = g_build_filename(dir, "truth.nii.gz", NULL);
    g_assert_cmpint(lm_nifti_write_series(p, v, f->count, truth, 0, f->duration_s, &err), ==, LM_OK);
    g_free(p);
    lm_volume_free(v);
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_sens_free(sens);
    free(truth);
    lm_frames_free(f);
}

/* The folder larmor-cli phantom writes: frames from dimension 10, the
 * maps and the 4D truth beside them (its pixdim[4] gives 84 ms). */
static void test_d128c8_files(void)
{
    char *dir = gui_test_tmp_dir("dyn-files");
    write_d128c8(dir);
    LarmorDatasetSpec spec = { .kind = LARMOR_SOURCE_FILES };
    spec.kdata_path = g_build_filename(dir, "kspace.cfl", NULL);
    LarmorWindow *w = gui_test_open_data(GTK_APPLICATION(app), &spec);
    g_free(spec.kdata_path);
    LarmorDataset *ds = larmor_window_get_dataset(w);
    const lm_frames *f = larmor_dataset_get_frames(ds);
    g_assert_nonnull(f);
    g_assert_cmpint(f->count, ==, 24);
    g_assert_cmpfloat_with_epsilon(f->duration_s, 0.084, 1e-6);
    g_assert_nonnull(larmor_dataset_get_maps(ds));
    LarmorVolume *truth = larmor_dataset_get_truth(ds);
    g_assert_nonnull(truth);
    g_assert_cmpint(larmor_volume_get_n_frames(truth), ==, 24);
    g_assert_true(gtk_widget_get_visible(
        GTK_WIDGET(larmor_recon_panel_get_dyn_controls(larmor_window_get_recon_panel(w)))));
    gui_test_close_window(w);
    gui_test_remove_tree(dir);
    g_free(dir);
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = gui_test_app_new();
    g_test_add_func("/dynamic/volume-frames", test_volume_frames);
    g_test_add_func("/dynamic/d128c8-problem", test_d128c8_problem);
    g_test_add_func("/dynamic/d128c8-files", test_d128c8_files);
    (void)has_runs;
    return gui_test_app_run(app);
}
