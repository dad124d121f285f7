/* Showing images: the slice view's pixels, window/level on screen, the
 * linked crosshair, the radiological convention, the colour bar, draw time
 * (printed only), 0-based slice labels equal to the read-out, window/level
 * per image, and the radiological and colour-bar actions and settings. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-colormap.h"
#include "larmor-compare-view.h"
#include "larmor-help.h"
#include "larmor-ortho-view.h"
#include "larmor-plot.h"
#include "larmor-recon-panel.h"
#include "larmor-run.h"
#include "larmor-runs-view.h"
#include "larmor-settings.h"
#include "larmor-slice-view.h"
#include "larmor-window.h"
#include "lm_io.h"
#include "lm_kernels.h"
#include "lm_metrics.h"
#include "lm_trajgen.h"

static LarmorApplication *app;

/* 8 x 6 x 4 voxels, value (x + 8 y) / 47 + z / 100 (real). */
static LarmorVolume *make_volume(void)
{
    int64_t dims[3] = { 8, 6, 4 };
    double mm[3] = { 1, 1, 1 };
    lm_volume *v = lm_volume_new(dims, mm, NULL);
    for (int z = 0; z < 4; z++)
        for (int y = 0; y < 6; y++)
            for (int x = 0; x < 8; x++)
                v->data[x + 8 * (y + 6 * z)] = (float)((x + 8 * y) / 47.0 + z / 100.0);
    return larmor_volume_new_take(v, "ramp");
}

static double value_of(int x, int y, int z)
{
    return (x + 8 * y) / 47.0 + z / 100.0;
}

static GtkWidget *window_with(GtkWidget *child, int w, int h)
{
    GtkWidget *win = gtk_window_new();
    gtk_window_set_default_size(GTK_WINDOW(win), w, h);
    gtk_window_set_decorated(GTK_WINDOW(win), FALSE);
    gtk_window_set_child(GTK_WINDOW(win), child);
    gui_test_show(GTK_WINDOW(win));
    return win;
}

static guint32 grey_of(int index)
{
    return (guint32)index << 16 | (guint32)index << 8 | (guint32)index;
}

static void test_pixels(void)
{
    LarmorVolume *vol = make_volume();
    LarmorSliceView *view = LARMOR_SLICE_VIEW(larmor_slice_view_new(LARMOR_ORIENT_AXIAL));
    larmor_slice_view_set_show_labels(view, FALSE);
    larmor_slice_view_set_volume(view, vol);
    LarmorViewState *st = larmor_slice_view_get_state(view);
    larmor_view_state_set_dims(st, larmor_volume_get_data(vol)->dims);
    const int64_t cur[3] = { 7, 5, 2 }; /* keeps the crosshair off the voxels checked */
    larmor_view_state_set_cursor(st, cur);
    larmor_view_state_set_window_level(st, 1.0, 0.5);
    GtkWidget *win = window_with(GTK_WIDGET(view), 320, 240);

    GuiTestImage img;
    g_assert_true(gui_test_capture(GTK_WIDGET(view), &img));
    int checked = 0;
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 7; x++) {
            int64_t ijk[3] = { x, y, 2 };
            double px, py;
            g_assert_true(larmor_slice_view_voxel_to_widget(view, ijk, &px, &py));
            int idx = larmor_colormap_index((float)value_of(x, y, 2), 1.0, 0.5, 1);
            g_assert_cmphex(gui_test_pixel(&img, px, py), ==, grey_of(idx));
            /* and back from the screen to the same voxel */
            int64_t back[3];
            g_assert_true(larmor_slice_view_widget_to_voxel(view, px, py, back));
            g_assert_cmpint(back[0], ==, x);
            g_assert_cmpint(back[1], ==, y);
            checked++;
        }
    g_assert_cmpint(checked, ==, 35);
    /* Vertical index grows upwards: voxel y = 0 is below y = 4. */
    double x0, y0, x1, y1;
    g_assert_true(larmor_slice_view_voxel_to_widget(view, (int64_t[]){ 0, 0, 2 }, &x0, &y0));
    g_assert_true(larmor_slice_view_voxel_to_widget(view, (int64_t[]){ 0, 4, 2 }, &x1, &y1));
    g_assert_cmpfloat(y0, >, y1);
    gui_test_image_clear(&img);

    /* Zoomed out, the slice shrinks about the centre; outside it is black. */
    larmor_view_state_set_zoom_pan(st, LARMOR_ORIENT_AXIAL, 0.5, 0, 0);
    gtk_test_widget_wait_for_draw(win);
    g_assert_true(gui_test_capture(GTK_WIDGET(view), &img));
    g_assert_cmphex(gui_test_pixel(&img, 20, 20), ==, 0x000000);
    g_assert_true(larmor_slice_view_voxel_to_widget(view, (int64_t[]){ 3, 3, 2 }, &x0, &y0));
    g_assert_cmphex(gui_test_pixel(&img, x0, y0), ==, grey_of(larmor_colormap_index((float)value_of(3, 3, 2), 1, 0.5, 1)));
    g_assert_cmpfloat(fabs(x0 - 160), <, 0.25 * 320);
    gui_test_image_clear(&img);
    larmor_view_state_set_zoom_pan(st, LARMOR_ORIENT_AXIAL, 1, 0, 0);

    /* Window/level: window 0.5 about 0.25 saturates everything above 0.5. */
    larmor_view_state_set_window_level(st, 0.5, 0.25);
    gtk_test_widget_wait_for_draw(win);
    g_assert_true(gui_test_capture(GTK_WIDGET(view), &img));
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 7; x++) {
            int64_t ijk[3] = { x, y, 2 };
            double px, py, v = value_of(x, y, 2);
            larmor_slice_view_voxel_to_widget(view, ijk, &px, &py);
            int idx = v >= 0.5 ? 255 : (int)lround(255 * v / 0.5);
            int got = gui_test_pixel(&img, px, py) & 0xff;
            g_assert_cmpint(abs(got - idx), <=, 1);
        }
    gui_test_image_clear(&img);

    /* Colour map: hot, value 1/3 of the window is pure red. */
    larmor_view_state_set_window_level(st, 1.0, 0.5);
    larmor_view_state_set_colormap(st, LARMOR_COLORMAP_HOT);
    gtk_test_widget_wait_for_draw(win);
    g_assert_true(gui_test_capture(GTK_WIDGET(view), &img));
    int64_t ijk[3] = { 0, 0, 2 };
    double px, py;
    larmor_slice_view_voxel_to_widget(view, ijk, &px, &py);
    g_assert_cmphex(gui_test_pixel(&img, px, py), ==, larmor_colormap_lut(LARMOR_COLORMAP_HOT)[larmor_colormap_index(0.02f, 1, 0.5, 1)] & 0xffffff);
    gui_test_image_clear(&img);

    /* Another slice shows other values: the plane cache follows the cursor. */
    larmor_view_state_set_colormap(st, LARMOR_COLORMAP_GREY);
    larmor_view_state_set_cursor_axis(st, 2, 0);
    gtk_test_widget_wait_for_draw(win);
    g_assert_true(gui_test_capture(GTK_WIDGET(view), &img));
    int64_t c3[3] = { 3, 3, 0 };
    larmor_slice_view_voxel_to_widget(view, c3, &px, &py);
    g_assert_cmphex(gui_test_pixel(&img, px, py), ==, grey_of(larmor_colormap_index((float)value_of(3, 3, 0), 1, 0.5, 1)));
    gui_test_image_clear(&img);

    gtk_window_destroy(GTK_WINDOW(win));
    g_object_unref(vol);
}

static gboolean is_crosshair(guint32 p)
{
    int r = (p >> 16) & 0xff, g = (p >> 8) & 0xff, b = p & 0xff;
    return g > r + 60 && g > b + 40;
}

static void test_linked_crosshair(void)
{
    LarmorVolume *vol = make_volume();
    LarmorViewState *st = larmor_view_state_new();
    larmor_view_state_set_dims(st, larmor_volume_get_data(vol)->dims);
    larmor_view_state_set_window_level(st, 1.0, 0.5);
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 0);
    gtk_box_set_homogeneous(GTK_BOX(box), TRUE);
    LarmorSliceView *views[3];
    for (int o = 0; o < 3; o++) {
        views[o] = LARMOR_SLICE_VIEW(larmor_slice_view_new(o));
        larmor_slice_view_set_show_labels(views[o], FALSE);
        larmor_slice_view_set_volume(views[o], vol);
        larmor_slice_view_set_state(views[o], st);
        gtk_box_append(GTK_BOX(box), GTK_WIDGET(views[o]));
    }
    GtkWidget *win = window_with(box, 900, 300);

    /* "Click" in the axial view at voxel (2, 1): the cursor moves there... */
    double px, py;
    g_assert_true(larmor_slice_view_voxel_to_widget(views[0], (int64_t[]){ 2, 1, 3 }, &px, &py));
    int64_t hit[3];
    g_assert_true(larmor_slice_view_widget_to_voxel(views[0], px, py, hit));
    larmor_view_state_set_cursor(st, (int64_t[]){ hit[0], hit[1], 3 });
    int64_t cur[3];
    larmor_view_state_get_cursor(st, cur);
    g_assert_cmpint(cur[0], ==, 2);
    g_assert_cmpint(cur[1], ==, 1);
    gtk_test_widget_wait_for_draw(win);

    /* ...and every view draws its crosshair through the same voxel: the
     * lines pass through the cursor's projection in each view and not
     * through a neighbouring column. */
    for (int o = 0; o < 3; o++) {
        GuiTestImage img;
        g_assert_true(gui_test_capture(GTK_WIDGET(views[o]), &img));
        int u, v, n;
        larmor_orientation_axes(o, &u, &v, &n);
        const int64_t *dims = larmor_volume_get_data(vol)->dims;
        /* A voxel on the cursor's column but two rows away (outside the gap). */
        int64_t on[3] = { cur[0], cur[1], cur[2] };
        on[v] = cur[v] >= 2 ? cur[v] - 2 : cur[v] + 2;
        double cx, cy, ox, oy;
        larmor_slice_view_voxel_to_widget(views[o], cur, &cx, &cy);
        larmor_slice_view_voxel_to_widget(views[o], on, &ox, &oy);
        g_assert_true(is_crosshair(gui_test_pixel(&img, floor(cx), oy)));
        /* The neighbouring column carries no line. */
        int64_t off[3] = { on[0], on[1], on[2] };
        off[u] = cur[u] + 1 < dims[u] ? cur[u] + 1 : cur[u] - 1;
        double fx, fy;
        larmor_slice_view_voxel_to_widget(views[o], off, &fx, &fy);
        g_assert_false(is_crosshair(gui_test_pixel(&img, fx, fy)));
        /* Horizontal line: same row as the cursor, two columns away. */
        int64_t row[3] = { cur[0], cur[1], cur[2] };
        row[u] = cur[u] >= 2 ? cur[u] - 2 : cur[u] + 2;
        double rx, ry;
        larmor_slice_view_voxel_to_widget(views[o], row, &rx, &ry);
        g_assert_true(is_crosshair(gui_test_pixel(&img, rx, floor(cy))));
        gui_test_image_clear(&img);
    }

    /* The keys' actions: Up moves the axial slice, Home/End go to the ends,
     * plus zooms, r resets. */
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(views[0]), "slice.move", "i", -1));
    larmor_view_state_get_cursor(st, cur);
    g_assert_cmpint(cur[2], ==, 2);
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(views[0]), "slice.move", "i", 99));
    larmor_view_state_get_cursor(st, cur);
    g_assert_cmpint(cur[2], ==, 3); /* clamped */
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(views[1]), "slice.first", NULL));
    larmor_view_state_get_cursor(st, cur);
    g_assert_cmpint(cur[1], ==, 0); /* coronal moves y */
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(views[2]), "slice.last", NULL));
    larmor_view_state_get_cursor(st, cur);
    g_assert_cmpint(cur[0], ==, 7); /* sagittal moves x */
    larmor_view_state_set_cursor(st, (int64_t[]){ 2, 1, 3 });
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(views[0]), "slice.zoom", "d", 2.0));
    g_assert_cmpfloat_with_epsilon(larmor_view_state_get_zoom(st, LARMOR_ORIENT_AXIAL), 2.0, 1e-9);
    g_assert_cmpfloat(larmor_view_state_get_zoom(st, LARMOR_ORIENT_CORONAL), ==, 1.0);
    larmor_view_state_set_window_level(st, 0.1, 0.9);
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(views[0]), "slice.reset", NULL));
    g_assert_cmpfloat(larmor_view_state_get_zoom(st, LARMOR_ORIENT_AXIAL), ==, 1.0);
    double aw, al;
    larmor_volume_auto_window(vol, LARMOR_MODE_MAGNITUDE, &aw, &al);
    g_assert_cmpfloat(larmor_view_state_get_window(st), ==, aw);
    g_assert_cmpfloat(larmor_view_state_get_level(st), ==, al);

    /* Moving the slice in one view moves the crosshair in the others. */
    larmor_view_state_set_cursor_axis(st, 2, 1); /* axial slice z = 1 */
    gtk_test_widget_wait_for_draw(win);
    GuiTestImage img;
    g_assert_true(gui_test_capture(GTK_WIDGET(views[1]), &img)); /* coronal: x-z */
    double cx, cy, ox, oy;
    larmor_view_state_get_cursor(st, cur);
    larmor_slice_view_voxel_to_widget(views[1], cur, &cx, &cy);
    larmor_slice_view_voxel_to_widget(views[1], (int64_t[]){ cur[0] + 3, cur[1], cur[2] }, &ox, &oy);
    g_assert_true(is_crosshair(gui_test_pixel(&img, ox, floor(cy))));
    gui_test_image_clear(&img);

    gtk_window_destroy(GTK_WINDOW(win));
    g_object_unref(st);
    g_object_unref(vol);
}

static void assert_labels(LarmorSliceView *view, const char *l, const char *r, const char *t, const char *b)
{
    char *e[4];
    g_assert_true(larmor_slice_view_edge_labels(view, e));
    g_assert_cmpstr(e[0], ==, l);
    g_assert_cmpstr(e[1], ==, r);
    g_assert_cmpstr(e[2], ==, t);
    g_assert_cmpstr(e[3], ==, b);
    for (int i = 0; i < 4; i++)
        g_free(e[i]);
}

/* Radiological convention: the axial and coronal views mirror left-right,
 * and every screen -> voxel mapping (read-out, ROI, line) follows: the
 * place where voxel x showed now maps to voxel 7 - x. Labels come from the
 * affine: a volume stored right-to-left (LAS) is shown the same way as
 * the RAS one. */
static void test_radiological(void)
{
    LarmorVolume *vol = make_volume();
    LarmorSliceView *view = LARMOR_SLICE_VIEW(larmor_slice_view_new(LARMOR_ORIENT_AXIAL));
    larmor_slice_view_set_show_labels(view, FALSE);
    larmor_slice_view_set_volume(view, vol);
    LarmorViewState *st = larmor_slice_view_get_state(view);
    larmor_view_state_set_show_colorbar(st, FALSE);
    larmor_view_state_set_dims(st, larmor_volume_get_data(vol)->dims);
    const int64_t cur[3] = { 7, 5, 2 };
    larmor_view_state_set_cursor(st, cur);
    larmor_view_state_set_window_level(st, 1.0, 0.5);
    GtkWidget *win = window_with(GTK_WIDGET(view), 320, 240);

    assert_labels(view, "L", "R", "A", "P");
    const int64_t v12[3] = { 1, 2, 2 };
    double xn, yn, xr, yr;
    g_assert_true(larmor_slice_view_voxel_to_widget(view, v12, &xn, &yn));
    int64_t ijk[3];
    g_assert_true(larmor_slice_view_widget_to_voxel(view, xn, yn, ijk));
    g_assert_cmpint(ijk[0], ==, 1);

    larmor_view_state_set_radiological(st, TRUE);
    gui_test_spin(0.1);
    assert_labels(view, "R", "L", "A", "P");
    g_assert_true(larmor_slice_view_voxel_to_widget(view, v12, &xr, &yr));
    g_assert_cmpfloat(fabs(yr - yn), <, 1e-9);
    g_assert_cmpfloat(fabs(xr - xn), >, 10);
    /* The same screen place is the mirrored voxel, for a read-out ... */
    g_assert_true(larmor_slice_view_widget_to_voxel(view, xn, yn, ijk));
    g_assert_cmpint(ijk[0], ==, 6);
    g_assert_cmpint(ijk[1], ==, 2);
    /* ... on screen ... */
    GuiTestImage img;
    g_assert_true(gui_test_capture(GTK_WIDGET(view), &img));
    g_assert_cmphex(gui_test_pixel(&img, xn, yn), ==, grey_of(larmor_colormap_index((float)value_of(6, 2, 2), 1, 0.5, 1)));
    g_assert_cmphex(gui_test_pixel(&img, xr, yr), ==, grey_of(larmor_colormap_index((float)value_of(1, 2, 2), 1, 0.5, 1)));
    gui_test_image_clear(&img);
    /* ... for a ROI dragged from voxel 1's old place to voxel 3's ... */
    const int64_t v32[3] = { 3, 3, 2 };
    double x3, y3;
    larmor_view_state_set_radiological(st, FALSE);
    g_assert_true(larmor_slice_view_voxel_to_widget(view, v32, &x3, &y3));
    larmor_view_state_set_radiological(st, TRUE);
    larmor_view_state_set_roi_tool(st, LARMOR_ROI_RECT);
    larmor_slice_view_draw_roi(view, xn, yn, x3, y3);
    LarmorRoi roi;
    larmor_view_state_get_roi(st, &roi);
    g_assert_cmpint(roi.u0, ==, 4); /* 7 - 3 */
    g_assert_cmpint(roi.u1, ==, 6); /* 7 - 1 */
    g_assert_cmpint(roi.v0, ==, 2);
    g_assert_cmpint(roi.v1, ==, 3);
    LarmorRoiStats rs;
    g_assert_true(larmor_slice_view_get_roi_stats(view, &rs));
    g_assert_cmpfloat(rs.min, ==, (float)value_of(4, 2, 2));
    /* ... and for a profile line, whose start is the mirrored voxel centre. */
    larmor_view_state_set_roi_tool(st, LARMOR_ROI_LINE);
    larmor_slice_view_draw_line(view, xn, yn, x3, y3);
    LarmorLine line;
    larmor_view_state_get_line(st, &line);
    g_assert_cmpfloat(fabs(line.u0 - 6), <, 1e-6);
    g_assert_cmpfloat(fabs(line.u1 - 4), <, 1e-6);
    larmor_view_state_set_roi_tool(st, LARMOR_ROI_NONE);

    /* Coronal mirrors too; sagittal has no left-right axis on screen. */
    larmor_slice_view_set_orientation(view, LARMOR_ORIENT_CORONAL);
    assert_labels(view, "R", "L", "S", "I");
    larmor_slice_view_set_orientation(view, LARMOR_ORIENT_SAGITTAL);
    assert_labels(view, "P", "A", "S", "I");
    larmor_view_state_set_radiological(st, FALSE);
    assert_labels(view, "P", "A", "S", "I");

    /* The same data stored right to left and posterior to anterior
     * flipped (x and y columns negated): shown with R right, A up all the
     * same, so voxel 6 sits where voxel 1 of the RAS volume did. */
    lm_volume *las = lm_volume_copy(larmor_volume_get_data(vol), NULL);
    for (int r = 0; r < 3; r++) {
        las->affine[r][0] = -las->affine[r][0];
        las->affine[r][1] = -las->affine[r][1];
    }
    LarmorVolume *lvol = larmor_volume_new_take(las, "las");
    larmor_slice_view_set_orientation(view, LARMOR_ORIENT_AXIAL);
    larmor_slice_view_set_volume(view, lvol);
    assert_labels(view, "L", "R", "A", "P");
    gui_test_spin(0.1);
    g_assert_true(larmor_slice_view_widget_to_voxel(view, xn, yn, ijk));
    g_assert_cmpint(ijk[0], ==, 6);
    g_assert_cmpint(ijk[1], ==, 3); /* 5 - 2 */
    g_assert_true(gui_test_capture(GTK_WIDGET(view), &img));
    g_assert_cmphex(gui_test_pixel(&img, xn, yn), ==, grey_of(larmor_colormap_index((float)value_of(6, 3, 2), 1, 0.5, 1)));
    gui_test_image_clear(&img);

    gtk_window_destroy(GTK_WINDOW(win));
    g_object_unref(lvol);
    g_object_unref(vol);
}

/* The colour bar: shown by default in the bottom right with the window's
 * range and the LUT's colours; hidden by the state's switch; phase
 * switches to the cyclic map with -pi..pi in rad, and back. */
static void test_colorbar(void)
{
    LarmorVolume *vol = make_volume();
    LarmorSliceView *view = LARMOR_SLICE_VIEW(larmor_slice_view_new(LARMOR_ORIENT_AXIAL));
    larmor_slice_view_set_volume(view, vol);
    LarmorViewState *st = larmor_slice_view_get_state(view);
    larmor_view_state_set_dims(st, larmor_volume_get_data(vol)->dims);
    larmor_view_state_set_window_level(st, 1.0, 0.5);
    larmor_view_state_set_colormap(st, LARMOR_COLORMAP_HOT);
    GtkWidget *win = window_with(GTK_WIDGET(view), 400, 300);

    GuiTestImage img;
    double r[4], lo, hi;
    g_assert_true(gui_test_capture(GTK_WIDGET(view), &img));
    g_assert_true(larmor_slice_view_get_colorbar_rect(view, r));
    g_assert_true(larmor_slice_view_get_colorbar_range(view, &lo, &hi));
    g_assert_cmpfloat(lo, ==, 0);
    g_assert_cmpfloat(hi, ==, 1);
    g_assert_cmpstr(larmor_slice_view_get_unit(view), ==, "a.u.");
    g_assert_cmpfloat(r[0] + r[2], <=, 400);
    g_assert_cmpfloat(r[1] + r[3], <=, 300);
    g_assert_cmpfloat(r[0], >, 200);
    /* Down the strip (4 px in, 10 wide) the hot map, white to black: every
     * pixel a LUT entry, their indices falling from near 255 to near 0. */
    const uint32_t *hot = larmor_colormap_lut(LARMOR_COLORMAP_HOT);
    int first = -1, last = -1, prev = 256, found = 0;
    for (int y = (int)r[1]; y < (int)(r[1] + r[3]); y++) {
        guint32 p = gui_test_pixel(&img, r[0] + 9, y);
        int k = -1;
        for (int i = 255; i >= 0 && k < 0; i--)
            if ((hot[i] & 0xffffff) == p)
                k = i;
        if (k < 0 || (found && k > prev))
            continue; /* backdrop, frame, a label */
        first = found ? first : k;
        last = k;
        prev = k;
        found++;
    }
    g_assert_cmpint(found, >, 40);
    g_assert_cmpint(first, >=, 240);
    g_assert_cmpint(last, <=, 15);
    guint32 with_bar = gui_test_pixel(&img, r[0] + 9, r[1] + r[3] / 2);
    gui_test_image_clear(&img);

    /* Difference images: values times the gain, so the bar divides. */
    larmor_slice_view_set_gain(view, 4);
    g_assert_true(larmor_slice_view_get_colorbar_range(view, &lo, &hi));
    g_assert_cmpfloat(hi, ==, 0.25);
    larmor_slice_view_set_gain(view, 1);

    larmor_view_state_set_show_colorbar(st, FALSE);
    gui_test_spin(0.1);
    g_assert_true(gui_test_capture(GTK_WIDGET(view), &img));
    double dummy[4];
    g_assert_false(larmor_slice_view_get_colorbar_rect(view, dummy));
    g_assert_cmphex(gui_test_pixel(&img, r[0] + 9, r[1] + r[3] / 2), !=, with_bar);
    gui_test_image_clear(&img);
    larmor_view_state_set_show_colorbar(st, TRUE);

    /* Phase: cyclic map, -pi .. pi in rad; back to hot after. */
    larmor_view_state_set_mode(st, LARMOR_MODE_PHASE);
    larmor_view_state_set_window_level(st, 2 * G_PI, 0);
    g_assert_cmpint(larmor_view_state_get_colormap(st), ==, LARMOR_COLORMAP_CYCLIC);
    g_assert_cmpint(larmor_view_state_get_user_colormap(st), ==, LARMOR_COLORMAP_HOT);
    gui_test_spin(0.1);
    g_assert_true(gui_test_capture(GTK_WIDGET(view), &img));
    gui_test_image_clear(&img);
    g_assert_true(larmor_slice_view_get_colorbar_range(view, &lo, &hi));
    g_assert_cmpfloat(fabs(lo + G_PI), <, 1e-12);
    g_assert_cmpfloat(fabs(hi - G_PI), <, 1e-12);
    g_assert_cmpstr(larmor_slice_view_get_unit(view), ==, "rad");
    larmor_view_state_set_mode(st, LARMOR_MODE_MAGNITUDE);
    g_assert_cmpint(larmor_view_state_get_colormap(st), ==, LARMOR_COLORMAP_HOT);
    /* A map the user picks in phase stays. */
    larmor_view_state_set_mode(st, LARMOR_MODE_PHASE);
    larmor_view_state_set_colormap(st, LARMOR_COLORMAP_GREY);
    larmor_view_state_set_mode(st, LARMOR_MODE_REAL);
    g_assert_cmpint(larmor_view_state_get_colormap(st), ==, LARMOR_COLORMAP_GREY);
    larmor_slice_view_set_unit(view, "Hz");
    g_assert_cmpstr(larmor_slice_view_get_unit(view), ==, "Hz");

    gtk_window_destroy(GTK_WINDOW(win));
    g_object_unref(vol);
}

/* A 256 x 256 slice drawn into a 768 x 768 view: the slice -> pixels part
 * of the snapshot, and the whole render of the widget to a texture. The
 * times are printed only; what is asserted is that every render worked. */
static void test_draw_time(void)
{
    int64_t dims[3] = { 256, 256, 16 };
    double mm[3] = { 1, 1, 1 };
    lm_volume *v = lm_volume_new(dims, mm, NULL);
    for (int64_t i = 0; i < lm_volume_count(v); i++)
        v->data[i] = (float)((i * 2654435761u) % 1000) / 1000.0f + I * 0.05f;
    LarmorVolume *vol = larmor_volume_new_take(v, "noise");
    LarmorSliceView *view = LARMOR_SLICE_VIEW(larmor_slice_view_new(LARMOR_ORIENT_AXIAL));
    larmor_slice_view_set_volume(view, vol);
    LarmorViewState *st = larmor_slice_view_get_state(view);
    larmor_view_state_set_dims(st, dims);
    larmor_view_state_set_colormap(st, LARMOR_COLORMAP_VIRIDIS);
    GtkWidget *win = window_with(GTK_WIDGET(view), 768, 768);

    GskRenderer *renderer = gtk_native_get_renderer(gtk_widget_get_native(GTK_WIDGET(view)));
    graphene_rect_t bounds = GRAPHENE_RECT_INIT(0, 0, gtk_widget_get_width(GTK_WIDGET(view)),
                                                gtk_widget_get_height(GTK_WIDGET(view)));
    const int reps = 30;
    double convert = 0, worst = 0, total = 0;
    for (int r = 0; r < reps; r++) {
        /* A new slice and a new window each time: nothing cached. */
        larmor_view_state_set_cursor_axis(st, 2, r % 16);
        larmor_view_state_set_window_level(st, 0.8 + r * 0.01, 0.5);
        /* What GTK does for this widget in a frame: its snapshot, then the
         * renderer turning the nodes into pixels. */
        gint64 t0 = g_get_monotonic_time();
        GtkSnapshot *snap = gtk_snapshot_new();
        GTK_WIDGET_GET_CLASS(view)->snapshot(GTK_WIDGET(view), snap);
        GskRenderNode *node = gtk_snapshot_free_to_node(snap);
        g_assert_nonnull(node);
        GdkTexture *tex = gsk_renderer_render_texture(renderer, node, &bounds);
        double ms = (g_get_monotonic_time() - t0) / 1000.0;
        g_assert_nonnull(tex);
        g_assert_cmpint(gdk_texture_get_width(tex), ==, (int)bounds.size.width);
        g_object_unref(tex);
        gsk_render_node_unref(node);
        total += ms;
        worst = MAX(worst, ms);
        convert += larmor_slice_view_get_last_draw_ms(view);
    }
    printf("# 256x256 slice in a %dx%d view: slice->pixels %.3f ms; snapshot + render (%s) %.3f ms mean, %.3f ms worst\n",
           gtk_widget_get_width(GTK_WIDGET(view)), gtk_widget_get_height(GTK_WIDGET(view)), convert / reps,
           g_getenv("GSK_RENDERER") ? g_getenv("GSK_RENDERER") : "default", total / reps, worst);
    /* Information only: a wall time depends on the machine and its load. */
    gtk_window_destroy(GTK_WINDOW(win));
    g_object_unref(vol);
}

/* One convention: the slice label and the cursor read-out say the same
 * (0-based) index. */
static void test_slice_labels(void)
{
    int64_t dims[3] = { 8, 6, 4 };
    double mm[3] = { 1, 1, 1 };
    lm_volume *v = lm_volume_new(dims, mm, NULL);
    LarmorVolume *vol = larmor_volume_new_take(v, "v");
    LarmorSliceView *view = LARMOR_SLICE_VIEW(larmor_slice_view_new(LARMOR_ORIENT_AXIAL));
    g_object_ref_sink(view);
    larmor_slice_view_set_volume(view, vol);
    LarmorViewState *st = larmor_slice_view_get_state(view);
    larmor_view_state_set_dims(st, dims);
    larmor_view_state_set_cursor(st, (int64_t[]){ 1, 2, 0 });
    char *label = larmor_slice_view_get_slice_text(view);
    g_assert_cmpstr(label, ==, "z 0 (0–3)");
    g_free(label);
    larmor_view_state_set_cursor_axis(st, 2, 3);
    label = larmor_slice_view_get_slice_text(view);
    g_assert_cmpstr(label, ==, "z 3 (0–3)");
    char *readout = larmor_format_voxel(vol, (int64_t[]){ 1, 2, 3 });
    g_assert_nonnull(strstr(readout, "z   3"));
    g_free(readout);
    g_free(label);
    g_object_unref(view);
    g_object_unref(vol);
}

/* Window/level per image: each from its own histogram (1st and 99.5th
 * magnitude percentiles), kept per image when switching. */
static LarmorVolume *ramp(double scale, const char *name)
{
    int64_t dims[3] = { 20, 10, 5 }; /* 1000 voxels: values 0 .. 999 x scale */
    double mm[3] = { 1, 1, 1 };
    lm_volume *v = lm_volume_new(dims, mm, NULL);
    for (int64_t i = 0; i < 1000; i++)
        v->data[i] = (float)(i * scale);
    return larmor_volume_new_take(v, name);
}

static void test_window_per_image(void)
{
    LarmorVolume *a = ramp(1, "a"), *b = ramp(1000, "b");
    double w, l;
    larmor_volume_auto_window(a, LARMOR_MODE_MAGNITUDE, &w, &l);
    /* p1 = 10, p99.5 = 995, within a histogram bin. */
    g_assert_cmpfloat(fabs((l - w / 2) - 10), <, 1.0);
    g_assert_cmpfloat(fabs((l + w / 2) - 995), <, 1.0);

    LarmorOrthoView *ov = LARMOR_ORTHO_VIEW(larmor_ortho_view_new());
    GtkWidget *win = gtk_window_new();
    gtk_window_set_default_size(GTK_WINDOW(win), 900, 600);
    gtk_window_set_child(GTK_WINDOW(win), GTK_WIDGET(ov));
    gui_test_show(GTK_WINDOW(win));
    LarmorViewState *st = larmor_ortho_view_get_state(ov);
    larmor_ortho_view_show_volume(ov, a);
    double wa, la, wb, lb;
    larmor_volume_auto_window(a, LARMOR_MODE_MAGNITUDE, &wa, &la);
    larmor_volume_auto_window(b, LARMOR_MODE_MAGNITUDE, &wb, &lb);
    g_assert_cmpfloat(larmor_view_state_get_window(st), ==, wa);
    /* Same grid, 1000 times the values: b gets its own window. */
    larmor_ortho_view_show_volume(ov, b);
    g_assert_cmpfloat(larmor_view_state_get_window(st), ==, wb);
    g_assert_cmpfloat(larmor_view_state_get_level(st), ==, lb);
    /* A window set by hand on b stays with b; a gets its own back. */
    larmor_view_state_set_window_level(st, 5000, 2500);
    larmor_ortho_view_show_volume(ov, a);
    g_assert_cmpfloat(larmor_view_state_get_window(st), ==, wa);
    g_assert_cmpfloat(larmor_view_state_get_level(st), ==, la);
    larmor_ortho_view_show_volume(ov, b);
    g_assert_cmpfloat(larmor_view_state_get_window(st), ==, 5000);
    g_assert_cmpfloat(larmor_view_state_get_level(st), ==, 2500);
    gtk_window_destroy(GTK_WINDOW(win));
    g_object_unref(a);
    g_object_unref(b);
}

static void test_display_actions(void)
{
    char *dir = gui_test_tmp_dir("display");
    char *ini = g_build_filename(dir, "settings.ini", NULL);
    LarmorSettings *s = larmor_settings_new(ini);
    LarmorWindow *w = larmor_window_new(GTK_APPLICATION(app), s, "B32");
    gui_test_show(GTK_WINDOW(w));
    g_assert_true(gui_test_wait(gui_test_has_data, w, 120));
    LarmorViewState *ost = larmor_ortho_view_get_state(larmor_window_get_ortho_view(w));
    LarmorViewState *cst = larmor_compare_view_get_state(larmor_window_get_compare_view(w));
    g_assert_false(larmor_view_state_get_radiological(ost));
    g_assert_true(larmor_view_state_get_show_colorbar(ost));
    /* Phase takes the cyclic map through the viewer's map dropdown (bound
     * both ways to the state) and gives the user's map back after. */
    larmor_view_state_set_colormap(ost, LARMOR_COLORMAP_VIRIDIS);
    larmor_view_state_set_mode(ost, LARMOR_MODE_PHASE);
    gui_test_spin(0.05);
    g_assert_cmpint(larmor_view_state_get_colormap(ost), ==, LARMOR_COLORMAP_CYCLIC);
    larmor_view_state_set_mode(ost, LARMOR_MODE_MAGNITUDE);
    gui_test_spin(0.05);
    g_assert_cmpint(larmor_view_state_get_colormap(ost), ==, LARMOR_COLORMAP_VIRIDIS);

    /* Stateful actions (menu check items): toggled, every view follows. */
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.radiological", NULL));
    g_assert_true(larmor_window_get_radiological(w));
    g_assert_true(larmor_view_state_get_radiological(ost));
    g_assert_true(larmor_view_state_get_radiological(cst));
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(w), "win.show-colorbar", NULL));
    g_assert_false(larmor_view_state_get_show_colorbar(ost));
    g_assert_false(larmor_view_state_get_show_colorbar(cst));
    g_assert_true(larmor_settings_get_bool(s, "view", "radiological", FALSE));
    g_assert_false(larmor_settings_get_bool(s, "view", "colorbar", TRUE));
    gui_test_close_window(w);
    GError *error = NULL;
    g_assert_true(larmor_settings_save(s, &error));
    g_assert_no_error(error);
    g_object_unref(s);

    /* Kept: a new window with the same settings file starts that way. */
    s = larmor_settings_new(ini);
    w = larmor_window_new(GTK_APPLICATION(app), s, "B32");
    gui_test_show(GTK_WINDOW(w));
    g_assert_true(gui_test_wait(gui_test_has_data, w, 120));
    ost = larmor_ortho_view_get_state(larmor_window_get_ortho_view(w));
    g_assert_true(larmor_view_state_get_radiological(ost));
    g_assert_false(larmor_view_state_get_show_colorbar(ost));
    /* The viewer's axial view has R on the screen's left. */
    LarmorSliceView *axial = larmor_ortho_view_get_slice_view(larmor_window_get_ortho_view(w), LARMOR_ORIENT_AXIAL);
    char *e[4];
    g_assert_true(larmor_slice_view_edge_labels(axial, e));
    g_assert_cmpstr(e[0], ==, "R");
    g_assert_cmpstr(e[1], ==, "L");
    for (int i = 0; i < 4; i++)
        g_free(e[i]);
    gui_test_close_window(w);
    g_object_unref(s);
    g_remove(ini);
    g_rmdir(dir);
    g_free(ini);
    g_free(dir);
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    app = gui_test_app_new();
    g_test_add_func("/slice-view/pixels", test_pixels);
    g_test_add_func("/slice-view/linked-crosshair", test_linked_crosshair);
    g_test_add_func("/slice-view/radiological", test_radiological);
    g_test_add_func("/slice-view/colorbar", test_colorbar);
    g_test_add_func("/slice-view/draw-time", test_draw_time);
    g_test_add_func("/slice-view/slice-labels", test_slice_labels);
    g_test_add_func("/slice-view/window-per-image", test_window_per_image);
    g_test_add_func("/slice-view/display-actions", test_display_actions);
    return gui_test_app_run(app);
}
