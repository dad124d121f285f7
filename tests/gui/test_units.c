/* GUI pieces that need no display: the window/level mapping and colour
 * maps, the slice pipeline's speed, the L-curve corner, preferences and the
 * CSV export. */
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-colorbar.h"
#include "larmor-colormap.h"
#include "larmor-run.h"
#include "larmor-runs-view.h"
#include "larmor-settings.h"
#include "larmor-slice.h"
#include "larmor-sweep-view.h"

static void test_window_level(void)
{
    /* Window 2 about level 1: [0, 2] spread over 256 entries. */
    g_assert_cmpint(larmor_colormap_index(0.0f, 2, 1, 1), ==, 0);
    g_assert_cmpint(larmor_colormap_index(-5.0f, 2, 1, 1), ==, 0);
    g_assert_cmpint(larmor_colormap_index(2.0f, 2, 1, 1), ==, 255);
    g_assert_cmpint(larmor_colormap_index(9.0f, 2, 1, 1), ==, 255);
    g_assert_cmpint(larmor_colormap_index(1.0f, 2, 1, 1), ==, 128); /* round(127.5) */
    g_assert_cmpint(larmor_colormap_index(0.5f, 2, 1, 1), ==, 64);  /* round(63.75) */
    g_assert_cmpint(larmor_colormap_index(NAN, 2, 1, 1), ==, 0);
    /* Gain multiplies before the window: 0.25 x 4 = 1, the level. */
    g_assert_cmpint(larmor_colormap_index(0.25f, 2, 1, 4), ==, 128);
    /* Negative levels (real/imaginary display). */
    g_assert_cmpint(larmor_colormap_index(-1.0f, 2, 0, 1), ==, 0);
    g_assert_cmpint(larmor_colormap_index(0.0f, 2, 0, 1), ==, 128);

    /* The bulk map agrees with the single-value rule everywhere. */
    float v[1001];
    uint32_t out[1001];
    for (int i = 0; i < 1001; i++)
        v[i] = -0.5f + 3.0f * i / 1000.0f;
    for (int cm = 0; cm < LARMOR_N_COLORMAPS; cm++) {
        larmor_colormap_map(v, 1001, 2, 1, 1, cm, out);
        const uint32_t *lut = larmor_colormap_lut(cm);
        for (int i = 0; i < 1001; i++)
            g_assert_cmphex(out[i], ==, lut[larmor_colormap_index(v[i], 2, 1, 1)]);
    }
}

static void test_colormaps(void)
{
    const uint32_t *grey = larmor_colormap_lut(LARMOR_COLORMAP_GREY);
    g_assert_cmphex(grey[0], ==, 0xff000000u);
    g_assert_cmphex(grey[255], ==, 0xffffffffu);
    g_assert_cmphex(grey[128], ==, 0xff808080u);
    const uint32_t *hot = larmor_colormap_lut(LARMOR_COLORMAP_HOT);
    g_assert_cmphex(hot[0], ==, 0xff000000u);
    g_assert_cmphex(hot[85], ==, 0xffff0000u); /* red at a third */
    g_assert_cmphex(hot[255], ==, 0xffffffffu);
    /* Viridis ends: matplotlib's #440154 and #fde725, within 4 levels. */
    const uint32_t *vir = larmor_colormap_lut(LARMOR_COLORMAP_VIRIDIS);
    const uint32_t ends[2][2] = { { vir[0], 0x440154 }, { vir[255], 0xfde725 } };
    for (int e = 0; e < 2; e++)
        for (int sh = 0; sh <= 16; sh += 8) {
            int a = (ends[e][0] >> sh) & 0xff, b = (ends[e][1] >> sh) & 0xff;
            g_assert_cmpint(abs(a - b), <=, 4);
        }
}

/* Luma of a LUT entry (Rec. 601 on the 8-bit values): linear in the
 * channels, so linear interpolation between anchors keeps its order. */
static double luma(uint32_t p)
{
    return 0.299 * larmor_pixel_r(p) + 0.587 * larmor_pixel_g(p) + 0.114 * larmor_pixel_b(p);
}

static int channel_step(uint32_t a, uint32_t b)
{
    int m = 0;
    for (int sh = 0; sh <= 16; sh += 8) {
        int d = abs((int)((a >> sh) & 0xff) - (int)((b >> sh) & 0xff));
        m = d > m ? d : m;
    }
    return m;
}

static void test_colormaps_signed(void)
{
    /* Diverging: blue at the low end, red at the high end, (near) white in
     * the middle -- index 128 is where 0 lands with the window centred on
     * 0 -- and the luma rises from each end towards the middle. */
    const uint32_t *div = larmor_colormap_lut(LARMOR_COLORMAP_DIVERGING);
    g_assert_cmpint(larmor_pixel_b(div[0]), >, larmor_pixel_r(div[0]) + 40);
    g_assert_cmpint(larmor_pixel_r(div[255]), >, larmor_pixel_b(div[255]) + 40);
    g_assert_cmpint(larmor_colormap_index(0.0f, 2, 0, 1), ==, 128);
    for (int i = 127; i <= 128; i++) {
        g_assert_cmpint(larmor_pixel_r(div[i]), >=, 0xf0);
        g_assert_cmpint(larmor_pixel_g(div[i]), >=, 0xf0);
        g_assert_cmpint(larmor_pixel_b(div[i]), >=, 0xf0);
    }
    /* Rounding to bytes may cost half a level per channel: 0.5 of luma. */
    for (int i = 0; i < 127; i++)
        g_assert_cmpfloat(luma(div[i + 1]), >=, luma(div[i]) - 0.5);
    for (int i = 128; i < 255; i++)
        g_assert_cmpfloat(luma(div[i + 1]), <=, luma(div[i]) + 0.5);
    g_assert_cmpfloat(luma(div[127]) - luma(div[0]), >, 150);
    g_assert_cmpfloat(luma(div[128]) - luma(div[255]), >, 150);
    g_assert_cmpstr(larmor_colormap_name(LARMOR_COLORMAP_DIVERGING), ==, "diverging");

    /* Cyclic: the ends are the same colour and every step, the wrap
     * included, is small (no seam at +-pi); light at the ends, dark in the
     * middle; +x and -x (i and 255 - i) equally light, different hue. */
    const uint32_t *cyc = larmor_colormap_lut(LARMOR_COLORMAP_CYCLIC);
    g_assert_cmphex(cyc[0], ==, cyc[255]);
    for (int i = 0; i < 255; i++)
        g_assert_cmpint(channel_step(cyc[i], cyc[i + 1]), <=, 6);
    g_assert_cmpint(channel_step(cyc[254], cyc[0]), <=, 6);
    g_assert_cmpfloat(luma(cyc[0]) - luma(cyc[128]), >, 150);
    for (int i = 1; i < 128; i++)
        g_assert_cmpfloat(fabs(luma(cyc[i]) - luma(cyc[255 - i])), <=, 4);
    g_assert_cmpint(channel_step(cyc[64], cyc[191]), >, 40);
    g_assert_cmpint(larmor_pixel_b(cyc[64]), >, larmor_pixel_r(cyc[64])); /* negative phase: blue */
    g_assert_cmpint(larmor_pixel_r(cyc[191]), >, larmor_pixel_b(cyc[191])); /* positive: orange */
    g_assert_cmpstr(larmor_colormap_name(LARMOR_COLORMAP_CYCLIC), ==, "cyclic");
}

static void test_colorbar_ticks(void)
{
    double t[LARMOR_COLORBAR_MAX_TICKS], step;
    char buf[32];
    /* Every range gets 3-5 ticks at 1, 2 or 5 x 10^k inside it. */
    const double ranges[][2] = { { 0, 1 }, { 0, 1.37 }, { -250, 250 }, { 0.013, 0.0189 }, { 3, 1003 },
                                 { -1e-4, 7e-4 }, { 12.5, 13 }, { 0, 99 }, { -1, 1e6 } };
    for (size_t r = 0; r < G_N_ELEMENTS(ranges); r++) {
        double lo = ranges[r][0], hi = ranges[r][1];
        int n = larmor_colorbar_ticks(lo, hi, NULL, t, &step);
        g_assert_cmpint(n, >=, 3);
        g_assert_cmpint(n, <=, 5);
        double m = step / pow(10, floor(log10(step)));
        g_assert_true(fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 || fabs(m - 5) < 1e-9);
        for (int i = 0; i < n; i++) {
            g_assert_cmpfloat(t[i], >=, lo - 1e-12 * fabs(hi - lo));
            g_assert_cmpfloat(t[i], <=, hi + 1e-12 * fabs(hi - lo));
            if (i)
                g_assert_cmpfloat(fabs(t[i] - t[i - 1] - step), <, 1e-9 * step);
        }
    }
    g_assert_cmpint(larmor_colorbar_ticks(0, 1, NULL, t, &step), ==, 3); /* 0, 0.5, 1 */
    g_assert_cmpfloat(step, ==, 0.5);
    larmor_colorbar_label(t[1], step, NULL, buf, sizeof buf);
    g_assert_cmpstr(buf, ==, "0.5");
    g_assert_cmpint(larmor_colorbar_ticks(-250, 250, "Hz", t, &step), ==, 3); /* -200, 0, 200 */
    larmor_colorbar_label(t[0], step, "Hz", buf, sizeof buf);
    g_assert_cmpstr(buf, ==, "-200");
    larmor_colorbar_label(t[1], step, "Hz", buf, sizeof buf);
    g_assert_cmpstr(buf, ==, "0"); /* not "-0" */
    larmor_colorbar_label(2.5e-4, 1e-4, NULL, buf, sizeof buf);
    g_assert_cmpstr(buf, ==, "0.00025");
    /* Phase: -pi .. pi in halves of pi, labelled with pi. */
    g_assert_cmpint(larmor_colorbar_ticks(-M_PI, M_PI, "rad", t, &step), ==, 5);
    const char *want[5] = { "-π", "-π/2", "0", "π/2", "π" };
    for (int i = 0; i < 5; i++) {
        larmor_colorbar_label(t[i], step, "rad", buf, sizeof buf);
        g_assert_cmpstr(buf, ==, want[i]);
    }
    g_assert_cmpint(larmor_colorbar_ticks(0, NAN, NULL, t, &step), ==, 0);
    g_assert_cmpint(larmor_colorbar_ticks(2, 2, NULL, t, &step), ==, 1);
}

/* Drawn into an image: the strip shows the LUT, the last entry at the top. */
static void test_colorbar_draw(void)
{
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 80, 200);
    cairo_t *cr = cairo_create(s);
    cairo_set_source_rgb(cr, 0, 1, 0);
    cairo_paint(cr);
    double w = larmor_colorbar_width(cr, -M_PI, M_PI, "rad");
    g_assert_cmpfloat(w, >, 20);
    g_assert_cmpfloat(w, <, 80);
    larmor_colorbar_draw(cr, 0, 0, w, 200, LARMOR_COLORMAP_HOT, 0, 1, "a.u.");
    cairo_destroy(cr);
    cairo_surface_flush(s);
    const uint8_t *d = cairo_image_surface_get_data(s);
    int stride = cairo_image_surface_get_stride(s);
    const uint32_t *hot = larmor_colormap_lut(LARMOR_COLORMAP_HOT);
    /* Find the strip's top and bottom rows in column 9 (inside the strip). */
    int top = -1, bottom = -1;
    for (int y = 0; y < 200; y++) {
        uint32_t p = *(const uint32_t *)(d + (size_t)y * stride + 9 * 4);
        if (p == hot[255] && top < 0)
            top = y;
        if (p == hot[0])
            bottom = y;
    }
    g_assert_cmpint(top, >=, 0);
    g_assert_cmpint(bottom, >, top + 100);
    /* Outside the box the background is untouched. */
    g_assert_cmphex(*(const uint32_t *)(d + 100 * stride + 79 * 4), ==, 0xff00ff00u);
    cairo_surface_destroy(s);
}

/* Voxel axes -> patient directions from the affine, and which screen axes
 * a view mirrors: RAS, LPS-like storage, a 30-degree oblique (dominant
 * axis) and a permuted one (voxel x along the head's axis). */
static void test_orientation(void)
{
    double a[4][4] = { { 1, 0, 0, 0 }, { 0, 1, 0, 0 }, { 0, 0, 1, 0 }, { 0, 0, 0, 1 } };
    int w, sg, fu, fv;
    larmor_axis_direction(a, 0, &w, &sg);
    g_assert_cmpstr(larmor_direction_letter(w, sg), ==, "R");
    larmor_view_flips(a, LARMOR_ORIENT_AXIAL, 0, &fu, &fv);
    g_assert_true(!fu && !fv);
    larmor_view_flips(a, LARMOR_ORIENT_AXIAL, 1, &fu, &fv);
    g_assert_true(fu && !fv);
    larmor_view_flips(a, LARMOR_ORIENT_CORONAL, 1, &fu, &fv);
    g_assert_true(fu && !fv);
    larmor_view_flips(a, LARMOR_ORIENT_SAGITTAL, 1, &fu, &fv); /* no left-right axis on screen */
    g_assert_true(!fu && !fv);
    /* x towards L, y towards P: neurological mirrors both so R is right, A up. */
    a[0][0] = -1.5, a[1][1] = -1.5;
    larmor_axis_direction(a, 1, &w, &sg);
    g_assert_cmpstr(larmor_direction_letter(w, sg), ==, "P");
    larmor_view_flips(a, LARMOR_ORIENT_AXIAL, 0, &fu, &fv);
    g_assert_true(fu && fv);
    larmor_view_flips(a, LARMOR_ORIENT_AXIAL, 1, &fu, &fv);
    g_assert_true(!fu && fv);
    /* 30 degrees about z: x still mostly R (cos 30 > sin 30), y mostly A. */
    double c = cos(M_PI / 6), sn = sin(M_PI / 6);
    double ob[4][4] = { { c, -sn, 0, 0 }, { sn, c, 0, 0 }, { 0, 0, 1, 0 }, { 0, 0, 0, 1 } };
    larmor_axis_direction(ob, 0, &w, &sg);
    g_assert_cmpstr(larmor_direction_letter(w, sg), ==, "R");
    larmor_axis_direction(ob, 1, &w, &sg);
    g_assert_cmpstr(larmor_direction_letter(w, sg), ==, "A");
    /* 60 degrees: voxel x now mostly A, voxel y mostly L. */
    double ob2[4][4] = { { sn, -c, 0, 0 }, { c, sn, 0, 0 }, { 0, 0, 1, 0 }, { 0, 0, 0, 1 } };
    larmor_axis_direction(ob2, 0, &w, &sg);
    g_assert_cmpstr(larmor_direction_letter(w, sg), ==, "A");
    larmor_axis_direction(ob2, 1, &w, &sg);
    g_assert_cmpstr(larmor_direction_letter(w, sg), ==, "L");
    /* Axial view of it: horizontal (voxel x) is A-P, kept; vertical
     * (voxel y) is left-right, kept too. */
    larmor_view_flips(ob2, LARMOR_ORIENT_AXIAL, 1, &fu, &fv);
    g_assert_true(!fu && !fv);
    /* A degenerate (zero) column counts as the identity's. */
    double z[4][4] = { { 0 } };
    larmor_axis_direction(z, 2, &w, &sg);
    g_assert_cmpstr(larmor_direction_letter(w, sg), ==, "S");
}

static void test_extract(void)
{
    /* 3 x 4 x 5 volume with value = x + 10 y + 100 z (+ i z on the side). */
    int64_t dims[3] = { 3, 4, 5 };
    double mm[3] = { 1, 1, 1 };
    lm_volume *v = lm_volume_new(dims, mm, NULL);
    for (int z = 0; z < 5; z++)
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 3; x++)
                v->data[x + 3 * (y + 4 * z)] = (float)(x + 10 * y + 100 * z) + I * (float)z;
    float plane[20];
    larmor_slice_extract(v, LARMOR_ORIENT_AXIAL, 2, LARMOR_MODE_REAL, plane);
    g_assert_cmpfloat(plane[1 + 3 * 2], ==, 1 + 20 + 200);
    larmor_slice_extract(v, LARMOR_ORIENT_CORONAL, 3, LARMOR_MODE_REAL, plane);
    g_assert_cmpfloat(plane[2 + 3 * 4], ==, 2 + 30 + 400); /* u = x, v = z */
    larmor_slice_extract(v, LARMOR_ORIENT_SAGITTAL, 1, LARMOR_MODE_IMAGINARY, plane);
    g_assert_cmpfloat(plane[3 + 4 * 2], ==, 2); /* u = y, v = z */
    larmor_slice_extract(v, LARMOR_ORIENT_AXIAL, 99, LARMOR_MODE_MAGNITUDE, plane); /* clamped to z = 4 */
    g_assert_cmpfloat_with_epsilon(plane[0], hypotf(400, 4), 1e-3);
    lm_volume_free(v);

    /* Resample: a 2 x 2 image blown up to 4 x 4, vertical index upwards. */
    const uint32_t src[4] = { 1, 2, 3, 4 }; /* row 0 (bottom): 1 2; row 1 (top): 3 4 */
    uint32_t dst[16];
    larmor_slice_resample(src, 2, 2, 0, 0, 4, 4, dst, 0, 0, 4, 4, 4);
    g_assert_cmpuint(dst[0], ==, 3);
    g_assert_cmpuint(dst[3], ==, 4);
    g_assert_cmpuint(dst[12], ==, 1);
    g_assert_cmpuint(dst[15], ==, 2);
}

/* The slice -> pixels pipeline for a 256 x 256 slice shown at 512 x 512
 * device pixels (zoom 2): extract, window/level + colour map, resample. */
static void test_pipeline_speed(void)
{
    int64_t dims[3] = { 256, 256, 8 };
    double mm[3] = { 1, 1, 1 };
    lm_volume *v = lm_volume_new(dims, mm, NULL);
    for (int64_t i = 0; i < lm_volume_count(v); i++)
        v->data[i] = (float)(i % 977) / 977.0f + I * 0.1f;
    float *plane = g_new(float, 256 * 256);
    uint32_t *rgba = g_new(uint32_t, 256 * 256), *screen = g_new(uint32_t, 512 * 512);
    const int reps = 50;
    gint64 t0 = g_get_monotonic_time();
    for (int r = 0; r < reps; r++) {
        larmor_slice_extract(v, LARMOR_ORIENT_AXIAL, r % 8, LARMOR_MODE_MAGNITUDE, plane);
        larmor_colormap_map(plane, 256 * 256, 1, 0.5, 1, LARMOR_COLORMAP_VIRIDIS, rgba);
        larmor_slice_resample(rgba, 256, 256, 0, 0, 512, 512, screen, 0, 0, 512, 512, 512);
    }
    double ms = (g_get_monotonic_time() - t0) / 1000.0 / reps;
    g_test_message("256x256 slice -> 512x512 pixels: %.3f ms per frame", ms);
    printf("# slice pipeline 256x256 -> 512x512: %.3f ms per frame\n", ms);
    /* Information only (no timed assertion); the result must still be right. */
    g_assert_cmphex(screen[0], ==, rgba[255 * 256]);
    g_free(plane);
    g_free(rgba);
    g_free(screen);
    lm_volume_free(v);
}

static void test_lcurve_corner(void)
{
    /* An L: steep drop in ||W rho|| at small residual, then flat. */
    const double res[7] = { 1.00, 1.01, 1.03, 1.10, 2.0, 4.0, 8.0 };
    const double reg[7] = { 100, 40, 12, 3.0, 2.6, 2.4, 2.3 };
    g_assert_cmpint(larmor_lcurve_corner(res, reg, 7), ==, 3);
    const double two[2] = { 1, 2 };
    g_assert_cmpint(larmor_lcurve_corner(two, two, 2), ==, -1);
    const double bad[4] = { 1, NAN, 3, 4 };
    g_assert_cmpint(larmor_lcurve_corner(bad, bad, 4), ==, -1);
}

static void test_settings(void)
{
    char *dir = gui_test_tmp_dir("settings");
    char *path = g_build_filename(dir, "sub", "settings.ini", NULL);
    LarmorSettings *s = larmor_settings_new(path); /* missing file: defaults */
    g_assert_cmpfloat(larmor_settings_get_double(s, "recon", "lambda", 0.5), ==, 0.5);
    larmor_settings_set_double(s, "recon", "lambda", 1e-3);
    larmor_settings_set_string(s, "files", "last-folder", "/data/mri");
    larmor_settings_set_int(s, "recon", "iters", 42);
    larmor_settings_set_bool(s, "view", "dark", FALSE);
    GError *error = NULL;
    g_assert_true(larmor_settings_save(s, &error));
    g_assert_no_error(error);
    g_object_unref(s);

    s = larmor_settings_new(path);
    g_assert_cmpfloat(larmor_settings_get_double(s, "recon", "lambda", 0), ==, 1e-3);
    g_assert_cmpint(larmor_settings_get_int(s, "recon", "iters", 0), ==, 42);
    g_assert_false(larmor_settings_get_bool(s, "view", "dark", TRUE));
    char *f = larmor_settings_get_string(s, "files", "last-folder", NULL);
    g_assert_cmpstr(f, ==, "/data/mri");
    g_free(f);
    g_object_unref(s);

    /* A broken file falls back to defaults without failing. */
    g_assert_true(g_file_set_contents(path, "[recon\nlambda=", -1, NULL));
    s = larmor_settings_new(path);
    g_assert_cmpfloat(larmor_settings_get_double(s, "recon", "lambda", 7), ==, 7);
    g_object_unref(s);

    /* Nothing but settings.ini is left in the folder: the write is a rename. */
    char *sub = g_path_get_dirname(path);
    GDir *d = g_dir_open(sub, 0, NULL);
    int n = 0;
    while (g_dir_read_name(d))
        n++;
    g_dir_close(d);
    g_assert_cmpint(n, ==, 1);
    g_remove(path);
    g_rmdir(sub);
    g_rmdir(dir);
    g_free(sub);
    g_free(path);
    g_free(dir);
}

static void test_csv(void)
{
    GListStore *store = g_list_store_new(LARMOR_TYPE_RUN);
    LarmorReconParams p;
    larmor_recon_params_init(&p);
    p.lambda = 0.001;
    lm_recon_result res;
    memset(&res, 0, sizeof res);
    res.time_total_s = 1.5;
    res.iters_done = 3;
    LarmorRun *r = larmor_run_new(&p, "B32, \"quoted\"", &res);
    larmor_run_set_index(r, 7);
    larmor_run_set_metrics(r, 27.5, 12.25);
    g_list_store_append(store, r);
    char *csv = larmor_runs_to_csv(G_LIST_MODEL(store));
    char **lines = g_strsplit(csv, "\n", -1);
    g_assert_true(g_str_has_prefix(lines[0], "index,dataset,method,variant,reg,lambda,iters"));
    g_assert_true(g_str_has_prefix(lines[1], "7,\"B32, \"\"quoted\"\"\",cg,"));
    /* The default variant, auto, is written with what it picked. */
    g_assert_true(g_str_has_prefix(lines[1], "7,\"B32, \"\"quoted\"\"\",cg,auto -> "));
    g_assert_nonnull(strstr(lines[1], ",0.001,3,"));
    g_assert_nonnull(strstr(lines[1], ",27.5,12.25,"));
    g_strfreev(lines);
    g_free(csv);
    g_object_unref(r);
    g_object_unref(store);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/units/window-level", test_window_level);
    g_test_add_func("/units/colormaps", test_colormaps);
    g_test_add_func("/units/colormaps-signed", test_colormaps_signed);
    g_test_add_func("/units/colorbar-ticks", test_colorbar_ticks);
    g_test_add_func("/units/colorbar-draw", test_colorbar_draw);
    g_test_add_func("/units/orientation", test_orientation);
    g_test_add_func("/units/extract", test_extract);
    g_test_add_func("/units/pipeline-speed", test_pipeline_speed);
    g_test_add_func("/units/lcurve-corner", test_lcurve_corner);
    g_test_add_func("/units/settings", test_settings);
    g_test_add_func("/units/csv", test_csv);
    return g_test_run();
}
