/* Field maps in the window: the correction drop-down's modes as the
 * library's options, the phantom's field map shown and corrected, a field
 * map file opened, the S128c8f phantom, and an IMPATIENT directory with
 * two coils and sample times. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-phantom-dialog.h"
#include "larmor-recon-panel.h"
#include "larmor-recon-task.h"
#include "larmor-runs-view.h"
#include "larmor-window.h"
#include "lm_io.h"

static LarmorApplication *app;

static gboolean fieldmap_read(gpointer w)
{
    return !larmor_window_is_loading_fieldmap(w);
}

/* A 2D Shepp-Logan on a 32 x 32 spiral with a 100 Hz synthetic field map. */
static void fieldmap_spec(LarmorDatasetSpec *s)
{
    memset(s, 0, sizeof *s);
    s->kind = LARMOR_SOURCE_PHANTOM;
    g_strlcpy(s->phantom, "shepp-logan-2d", sizeof s->phantom);
    s->matrix = 32;
    s->traj_kind = LM_TRAJ_SPIRAL2D;
    s->seed = 1;
    s->coils = 1;
    s->fieldmap_hz = 100;
}

static void test_fieldmap_opts(void)
{
    /* The correction drop-down's three modes as the library's options. */
    LarmorReconParams p;
    gui_test_cpu_params(&p, "cpu-nufft", 5);
    float fm[4] = { 0 };
    lm_recon_opts o;
    p.fieldmap = LARMOR_FIELDMAP_OFF;
    larmor_recon_opts_from_params(&p, fm, &o);
    g_assert_null(o.fieldmap);
    p.fieldmap = LARMOR_FIELDMAP_SEGMENTED;
    larmor_recon_opts_from_params(&p, fm, &o);
    g_assert_true(o.fieldmap == fm);
    g_assert_cmpint(o.segments, ==, LM_SEGMENTS_AUTO);
    p.fieldmap = LARMOR_FIELDMAP_EXACT;
    larmor_recon_opts_from_params(&p, fm, &o);
    g_assert_true(o.fieldmap == fm);
    g_assert_cmpint(o.segments, ==, 0);
    /* Gridding stays uncorrected; no map, no correction. */
    p.method = LM_METHOD_GRID_KB;
    larmor_recon_opts_from_params(&p, fm, &o);
    g_assert_null(o.fieldmap);
    p.method = LM_METHOD_CG;
    larmor_recon_opts_from_params(&p, NULL, &o);
    g_assert_null(o.fieldmap);
    p.lambda_auto = TRUE;
    p.criterion = LM_LAMBDA_GCV;
    p.prior_influence = TRUE;
    larmor_recon_opts_from_params(&p, NULL, &o);
    g_assert_true(o.lambda_auto && o.prior_influence);
    g_assert_cmpint(o.lambda_criterion, ==, LM_LAMBDA_GCV);

    /* The panel's drop-down maps to the modes. */
    LarmorWindow *w = gui_test_open_data(GTK_APPLICATION(app), NULL);
    LarmorReconPanel *panel = larmor_window_get_recon_panel(w);
    GtkDropDown *dd = GTK_DROP_DOWN(larmor_recon_panel_get_control(panel, "fieldmap"));
    for (guint m = 0; m < LARMOR_N_FIELDMAP_MODES; m++) {
        gtk_drop_down_set_selected(dd, m);
        g_assert_true(larmor_recon_panel_get_params(panel, &p, NULL));
        g_assert_cmpint(p.fieldmap, ==, m);
    }
    /* B32 has no field map: the control is greyed with the reason. */
    const char *why = NULL;
    g_assert_false(larmor_recon_panel_fieldmap_available(panel, &why));
    g_assert_nonnull(why);
    g_assert_false(gtk_widget_get_sensitive(GTK_WIDGET(dd)));
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
}

/* max |f| of the data set's map. */
static double fieldmap_max(LarmorDataset *ds)
{
    gsize size;
    const float *f = g_bytes_get_data(larmor_dataset_get_fieldmap(ds), &size);
    double m = 0;
    for (gsize i = 0; i < size / sizeof *f; i++)
        m = MAX(m, fabs(f[i]));
    return m;
}

static void check_overlay(LarmorWindow *w, LarmorVolume *expect, double max_hz)
{
    LarmorOrthoView *ov = larmor_window_get_ortho_view(w);
    larmor_ortho_view_set_overlay(ov, LARMOR_OVERLAY_FIELDMAP);
    larmor_window_set_page(w, "viewer");
    gtk_test_widget_wait_for_draw(GTK_WIDGET(w));
    LarmorSliceView *axial = larmor_ortho_view_get_slice_view(ov, LARMOR_ORIENT_AXIAL);
    LarmorOverlayStyle st;
    gboolean drawn = FALSE;
    g_assert_true(larmor_slice_view_get_overlay(axial, &st, &drawn) == expect);
    g_assert_true(drawn);
    /* Diverging, centred on 0 over the map's own range. */
    g_assert_cmpint(st.colormap, ==, LARMOR_COLORMAP_DIVERGING);
    g_assert_cmpfloat_with_epsilon(st.hi, max_hz, 1e-3 * max_hz);
    g_assert_cmpfloat_with_epsilon(st.lo, -max_hz, 1e-3 * max_hz);
    /* On screen: the voxel of the largest positive f (in this slice) is red, blue is low. */
    const lm_volume *fv = larmor_volume_get_data(expect);
    int64_t cur[3], best[3] = { 0, 0, 0 };
    larmor_view_state_get_cursor(larmor_ortho_view_get_state(ov), cur);
    float fbest = -INFINITY;
    for (int64_t y = 0; y < fv->dims[1]; y++)
        for (int64_t x = 0; x < fv->dims[0]; x++) {
            float f = crealf(fv->data[(cur[2] * fv->dims[1] + y) * fv->dims[0] + x]);
            if (f > fbest)
                fbest = f, best[0] = x, best[1] = y, best[2] = cur[2];
        }
    double px, py, px1, py1;
    g_assert_true(larmor_slice_view_voxel_to_widget(axial, best, &px, &py));
    /* A third of a voxel right of its centre: clear of the crosshair. */
    int64_t next[3] = { best[0] + 1, best[1], best[2] };
    g_assert_true(larmor_slice_view_voxel_to_widget(axial, next, &px1, &py1));
    px += (px1 - px) / 3;
    GuiTestImage img;
    g_assert_true(gui_test_capture(GTK_WIDGET(axial), &img));
    const int s = img.w / MAX(gtk_widget_get_width(GTK_WIDGET(axial)), 1);
    guint32 pix = gui_test_pixel(&img, px * MAX(s, 1), py * MAX(s, 1));
    gui_test_image_clear(&img);
    if (fbest > 0.5 * max_hz)
        g_assert_cmpint((int)(pix >> 16 & 0xff), >, (int)(pix & 0xff) + 30);
    gui_test_save_shot(GTK_WIDGET(w), "fieldmap-overlay.png");
}

static void test_fieldmap(void)
{
    LarmorDatasetSpec spec;
    fieldmap_spec(&spec);
    LarmorWindow *w = gui_test_open_data(GTK_APPLICATION(app), &spec);
    LarmorDataset *ds = larmor_window_get_dataset(w);
    g_assert_nonnull(larmor_dataset_get_fieldmap(ds));
    g_assert_true(larmor_dataset_has_times(ds));
    double max_hz = fieldmap_max(ds);
    /* lm_fieldmap_synth scales the map so that its largest |f| is the one asked for. */
    g_assert_cmpfloat_with_epsilon(max_hz, 100, 1e-3);
    check_overlay(w, larmor_dataset_get_fieldmap_volume(ds), max_hz);
    LarmorReconPanel *panel = larmor_window_get_recon_panel(w);
    g_assert_true(larmor_recon_panel_fieldmap_available(panel, NULL));

    /* Time-segmented: the run reports its segments and their error. */
    LarmorReconParams p;
    gui_test_cpu_params(&p, "cpu-nufft", 8);
    p.fieldmap = LARMOR_FIELDMAP_SEGMENTED;
    GError *error = NULL;
    gui_test_reconstruct(w, &p);
    LarmorRun *corr = gui_test_last_run(w);
    g_assert_cmpint(larmor_run_get_params(corr)->fieldmap, ==, LARMOR_FIELDMAP_SEGMENTED);
    g_assert_cmpint(larmor_run_get_segments(corr), >, 0);
    g_assert_true(isfinite(larmor_run_get_segment_error(corr)));
    g_assert_nonnull(strstr(larmor_recon_panel_get_details(panel), "time segments"));
    printf("# %s\n", larmor_recon_panel_get_details(panel));

    /* Corrected against uncorrected: the uncorrected run is made, both are compared. */
    larmor_recon_panel_set_params(panel, &p);
    g_assert_true(larmor_window_compare_fieldmap(w, &error));
    g_assert_no_error(error);
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(w)), ==, 2);
    LarmorRun *unc = gui_test_last_run(w);
    g_assert_cmpint(larmor_run_get_params(unc)->fieldmap, ==, LARMOR_FIELDMAP_OFF);
    g_assert_cmpint(larmor_run_get_segments(unc), ==, -1);
    /* Sessions keep the mode, segments and error (exact doubles). */
    GKeyFile *kf = g_key_file_new();
    larmor_run_save_to_keyfile(corr, kf, "run-1");
    LarmorRun *back = larmor_run_new_from_keyfile(kf, "run-1", NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpint(larmor_run_get_params(back)->fieldmap, ==, LARMOR_FIELDMAP_SEGMENTED);
    g_assert_cmpint(larmor_run_get_segments(back), ==, larmor_run_get_segments(corr));
    g_assert_cmpfloat(larmor_run_get_segment_error(back), ==, larmor_run_get_segment_error(corr));
    g_assert_cmpstr(larmor_run_get_label(back), ==, larmor_run_get_label(corr));
    g_object_unref(back);
    g_key_file_unref(kf);
    g_assert_true(larmor_run_get_compare(unc) && larmor_run_get_compare(corr));
    g_assert_cmpstr(larmor_window_get_page(w), ==, "compare");
    LarmorCompareView *cv = larmor_window_get_compare_view(w);
    g_assert_true(larmor_compare_view_get_differences(cv));
    gui_test_save_shot(GTK_WIDGET(w), "fieldmap-compare.png");
    /* With the truth the correction lowers the error. */
    printf("# error: uncorrected %.2f %%, corrected %.2f %%\n", larmor_run_get_percent_error(unc),
           larmor_run_get_percent_error(corr));
    g_assert_cmpfloat(larmor_run_get_percent_error(corr), <, larmor_run_get_percent_error(unc));
    /* Corrected minus uncorrected is among the images. */
    GListModel *imgs = larmor_window_get_images(w);
    gboolean diff = FALSE;
    for (guint i = 0; i < g_list_model_get_n_items(imgs); i++) {
        LarmorVolume *v = g_list_model_get_item(imgs, i);
        diff |= strstr(larmor_volume_get_name(v), "field-map correction") != NULL;
        g_object_unref(v);
    }
    g_assert_true(diff);
    /* Labels and the CSV say which is which. */
    g_assert_nonnull(strstr(larmor_run_get_label(corr), "FM "));
    g_assert_null(strstr(larmor_run_get_label(unc), "FM "));
    g_assert_nonnull(strstr(larmor_run_get_label(unc), "uncorrected"));
    /* Compare's table tells them apart. */
    const char *r0 = larmor_compare_view_get_metric_text(cv, 0, "run"), *r1 = larmor_compare_view_get_metric_text(cv, 1, "run");
    g_assert_nonnull(r0);
    g_assert_nonnull(r1);
    g_assert_cmpstr(strchr(r0, ' '), !=, strchr(r1, ' '));
    g_assert_true(strstr(r0, "uncorrected") || strstr(r1, "uncorrected"));
    char *csv = larmor_runs_to_csv(larmor_window_get_runs(w));
    g_assert_nonnull(strstr(csv, ",fieldmap,segments,segment_error\n"));
    char *want = g_strdup_printf(",segmented,%d,", larmor_run_get_segments(corr));
    g_assert_nonnull(strstr(csv, want));
    g_assert_nonnull(strstr(csv, ",off,-1,"));
    g_free(want);
    g_free(csv);
    /* Asked again, both runs exist: no new run. */
    g_assert_true(larmor_window_compare_fieldmap(w, &error));
    g_assert_no_error(error);
    g_assert_true(gui_test_wait(gui_test_idle, w, 60));
    g_assert_cmpuint(g_list_model_get_n_items(larmor_window_get_runs(w)), ==, 2);
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
}

static void test_phantom_dialog(void)
{
    /* S128c8f is listed and built as the 2D spiral with its field map; a
     * custom phantom's field map comes back from the dialog. */
    GtkWidget *d = larmor_phantom_dialog_new(NULL);
    LarmorDatasetSpec want = { .kind = LARMOR_SOURCE_PROBLEM };
    g_strlcpy(want.problem, "S128c8f", sizeof want.problem);
    larmor_phantom_dialog_set_spec(LARMOR_PHANTOM_DIALOG(d), &want);
    LarmorDatasetSpec *s = larmor_phantom_dialog_get_spec(LARMOR_PHANTOM_DIALOG(d));
    g_assert_cmpint(s->kind, ==, LARMOR_SOURCE_PROBLEM);
    g_assert_cmpstr(s->problem, ==, "S128c8f");
    g_assert_cmpstr(s->phantom, ==, "shepp-logan-2d");
    g_assert_cmpint(s->traj_kind, ==, LM_TRAJ_SPIRAL2D);
    larmor_dataset_spec_free(s);
    LarmorDatasetSpec c;
    fieldmap_spec(&c);
    c.fieldmap_hz = 80;
    larmor_phantom_dialog_set_spec(LARMOR_PHANTOM_DIALOG(d), &c);
    s = larmor_phantom_dialog_get_spec(LARMOR_PHANTOM_DIALOG(d));
    g_assert_cmpint(s->kind, ==, LARMOR_SOURCE_PHANTOM);
    g_assert_cmpfloat(s->fieldmap_hz, ==, 80);
    larmor_dataset_spec_free(s);
    gtk_window_destroy(GTK_WINDOW(d));
}

static void test_fieldmap_file(void)
{
    /* Half the phantom's map written as NIfTI and opened again
     * (File > Open Field Map): the data take it, the overlay its range. */
    LarmorDatasetSpec spec;
    fieldmap_spec(&spec);
    LarmorWindow *w = gui_test_open_data(GTK_APPLICATION(app), &spec);
    LarmorDataset *ds = larmor_window_get_dataset(w);
    LarmorVolume *fv = larmor_dataset_get_fieldmap_volume(ds);
    char *dir = gui_test_tmp_dir("fm");
    char *path = g_build_filename(dir, "fieldmap.nii", NULL);
    lm_volume *half = lm_volume_copy(larmor_volume_get_data(fv), NULL);
    for (int64_t i = 0; i < lm_volume_count(half); i++)
        half->data[i] *= 0.5f;
    lm_error err = { 0 };
    g_assert_cmpint(lm_nifti_write(path, half, 0 /* real */, &err), ==, LM_OK);
    lm_volume_free(half);
    larmor_window_open_fieldmap(w, path);
    g_assert_true(gui_test_wait(fieldmap_read, w, 60));
    ds = larmor_window_get_dataset(w);
    g_assert_cmpstr(larmor_dataset_get_fieldmap_origin(ds), ==, "fieldmap.nii");
    g_assert_cmpfloat_with_epsilon(fieldmap_max(ds), 50, 1e-3);
    check_overlay(w, larmor_dataset_get_fieldmap_volume(ds), fieldmap_max(ds));
    g_assert_cmpint(larmor_ortho_view_get_overlay(larmor_window_get_ortho_view(w)), ==, LARMOR_OVERLAY_FIELDMAP);

    /* Bad file: one line, the data keep their map. */
    char *bad = g_build_filename(dir, "nothing.nii", NULL);
    larmor_window_open_fieldmap(w, bad);
    g_assert_true(gui_test_wait(fieldmap_read, w, 60));
    g_assert_nonnull(larmor_window_get_message(w));
    g_assert_cmpfloat_with_epsilon(fieldmap_max(ds), 50, 1e-3);

    g_unlink(path);
    g_rmdir(dir);
    g_free(bad);
    g_free(path);
    g_free(dir);
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
}

/* IMPATIENT text form (version 1.0) as datawrite.m writes it (coils -1:
 * no coil_number), as tests/core/test_impatient.c does. */
static void write_dat(const char *dir, const char *name, const int64_t n[3], int coils, const float *v, int64_t count)
{
    char *path = g_strdup_printf("%s/%s.dat", dir, name);
    FILE *f = fopen(path, "wb");
    g_assert_nonnull(f);
    fprintf(f, "version = 1.000000\nxDimension = %lld\nyDimension = %lld\nzDimension = %lld\n", (long long)n[0],
            (long long)n[1], (long long)n[2]);
    if (coils > 0)
        fprintf(f, "coil_number = %d\n", coils);
    fprintf(f, "slice_number = 1\nfile_size = %lld\n", (long long)count);
    int nc = coils > 0 ? coils : 1;
    int64_t per = count / nc;
    for (int c = 0; c < nc; c++) {
        fprintf(f, "// Coil No. %d\nBinary_Size = %lld\nBinary:\n", c + 1, (long long)per);
        fwrite(v + c * per, sizeof(float), (size_t)per, f);
    }
    fprintf(f, "EOF\n");
    fclose(f);
    g_free(path);
}

static void test_impatient(void)
{
    /* An 8 x 8 x 2 IMPATIENT directory with two coils, sample times and a
     * field map (rad/s in fm.dat): opened as data, it brings maps, times
     * and the map in Hz. */
    enum { NX = 8, NY = 8, NZ = 2, N = NX * NY * NZ, M = 40, C = 2 };
    static float kx[M], ky[M], kz[M], t[M], kr[M * C], ki[M * C], ix[N], iy[N], iz[N], sr[N * C], si[N * C], fm[N];
    const int64_t n[3] = { NX, NY, NZ };
    for (int j = 0; j < M; j++) {
        kx[j] = (float)(3.0 * sin(0.7 * j));
        ky[j] = (float)(3.0 * cos(1.3 * j));
        kz[j] = (float)(j < M / 2 ? -1 : 0);
        t[j] = (float)(j % 10) * 1e-4f;
    }
    for (int i = 0; i < M * C; i++) {
        kr[i] = (float)cos(0.3 * i);
        ki[i] = (float)sin(0.2 * i);
    }
    double fmax = 0;
    int v = 0;
    for (int y = 1; y <= NY; y++)
        for (int x = 1; x <= NX; x++)
            for (int z = 1; z <= NZ; z++, v++) {
                ix[v] = (float)((x - NX / 2.0 - 1) / NX);
                iy[v] = (float)((y - NY / 2.0 - 1) / NY);
                iz[v] = (float)((z - NZ / 2.0 - 1) / NZ);
                fm[v] = (float)(2 * G_PI * (2.0 * v - 60)); /* rad/s: -60 .. 194 Hz */
                fmax = MAX(fmax, fabs(2.0 * v - 60));
            }
    for (int i = 0; i < N * C; i++) {
        sr[i] = 0.5f + 0.1f * (float)(i % 7);
        si[i] = 0.05f * (float)(i % 5);
    }
    char *dir = gui_test_tmp_dir("impatient");
    const struct { const char *name; int coils; const float *v; int64_t count; } files[] = {
        { "kx", -1, kx, M }, { "ky", -1, ky, M }, { "kz", -1, kz, M }, { "t", -1, t, M },
        { "kdata_r", C, kr, M * C }, { "kdata_i", C, ki, M * C }, { "ix", -1, ix, N }, { "iy", -1, iy, N },
        { "iz", -1, iz, N }, { "sensi_r", C, sr, N * C }, { "sensi_i", C, si, N * C }, { "fm", -1, fm, N },
    };
    for (guint i = 0; i < G_N_ELEMENTS(files); i++)
        write_dat(dir, files[i].name, n, files[i].coils, files[i].v, files[i].count);

    LarmorWindow *w = gui_test_open_data(GTK_APPLICATION(app), NULL);
    GFile *f = g_file_new_for_path(dir);
    larmor_window_open_files(w, &f, 1);
    g_object_unref(f);
    g_assert_true(gui_test_wait(gui_test_has_data, w, 60));
    LarmorDataset *ds = larmor_window_get_dataset(w);
    g_assert_cmpint(larmor_dataset_get_coils(ds), ==, C);
    g_assert_nonnull(larmor_dataset_get_maps(ds));
    g_assert_true(larmor_dataset_has_times(ds));
    g_assert_nonnull(larmor_dataset_get_fieldmap(ds));
    g_assert_cmpfloat_with_epsilon(fieldmap_max(ds), fmax, 1e-3 * fmax);
    g_assert_true(larmor_recon_panel_fieldmap_available(larmor_window_get_recon_panel(w), NULL));
    /* No truth: the viewer shows the map itself. */
    g_assert_true(larmor_ortho_view_get_volume(larmor_window_get_ortho_view(w)) ==
                  larmor_dataset_get_fieldmap_volume(ds));
    check_overlay(w, larmor_dataset_get_fieldmap_volume(ds), fieldmap_max(ds));
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
    for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
        char *p = g_strdup_printf("%s/%s.dat", dir, files[i].name);
        g_unlink(p);
        g_free(p);
    }
    g_rmdir(dir);
    g_free(dir);
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = gui_test_app_new();
    g_test_add_func("/fieldmap/fieldmap-opts", test_fieldmap_opts);
    g_test_add_func("/fieldmap/fieldmap", test_fieldmap);
    g_test_add_func("/fieldmap/fieldmap-file", test_fieldmap_file);
    g_test_add_func("/fieldmap/phantom-dialog", test_phantom_dialog);
    g_test_add_func("/fieldmap/impatient", test_impatient);
    return gui_test_app_run(app);
}
