/* Layout and input with real pointer events through XTest: the mouse
 * wheel scrolls the panel, not the control under the pointer; every
 * control reachable at 1024 x 600 and 1440 x 900 (the sidebar scrolls down
 * to the sweep); a saved size larger than the screen is not restored; the
 * colour-bar menu item and bars apart from the image; buttons that stay in
 * place; why a variant is unavailable; toasts clear of the toolbar. */
#include <X11/extensions/XTest.h>
#include <X11/keysym.h>
#include <gdk/x11/gdkx.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-colormap.h"
#include "larmor-compare-view.h"
#include "larmor-dataset.h"
#include "larmor-dyn-controls.h"
#include "larmor-help.h"
#include "larmor-ortho-view.h"
#include "larmor-plot.h"
#include "larmor-profile.h"
#include "larmor-recon-panel.h"
#include "larmor-runs-view.h"
#include "larmor-settings.h"
#include "larmor-slice-view.h"
#include "larmor-volume.h"
#include "larmor-window.h"
#include "lm_io.h"
#include "lm_kernels.h"
#include "lm_metrics.h"
#include "lm_trajgen.h"

static LarmorApplication *app;

static LarmorWindow *open_window(int width, int height)
{
    LarmorWindow *w = gui_test_open_window(GTK_APPLICATION(app), width, height);
    gui_test_spin(0.2);
    return w;
}

static Display *xdisplay(GtkWidget *w)
{
    return gdk_x11_display_get_xdisplay(gtk_widget_get_display(w));
}

/* The widget's centre in root-window coordinates. */
static void root_centre(GtkWidget *widget, int *rx, int *ry)
{
    GtkNative *native = gtk_widget_get_native(widget);
    graphene_point_t p = GRAPHENE_POINT_INIT(gtk_widget_get_width(widget) / 2.0,
                                             gtk_widget_get_height(widget) / 2.0), q;
    g_assert_true(gtk_widget_compute_point(widget, GTK_WIDGET(native), &p, &q));
    double sx, sy;
    gtk_native_get_surface_transform(native, &sx, &sy);
    Display *d = xdisplay(widget);
    Window child;
    XTranslateCoordinates(d, gdk_x11_surface_get_xid(gtk_native_get_surface(native)), DefaultRootWindow(d),
                          (int)(q.x + sx), (int)(q.y + sy), rx, ry, &child);
}

/* One wheel notch over the widget's centre: X buttons 4 (up) and 5 (down). */
static void wheel(GtkWidget *widget, gboolean down)
{
    Display *d = xdisplay(widget);
    int x, y;
    root_centre(widget, &x, &y);
    XTestFakeMotionEvent(d, -1, x, y, CurrentTime);
    XTestFakeButtonEvent(d, down ? 5 : 4, True, CurrentTime);
    XTestFakeButtonEvent(d, down ? 5 : 4, False, CurrentTime);
    XFlush(d);
}

typedef struct {
    GtkAdjustment *panel, *control;
    double panel0, control0;
} WheelWatch;

static gboolean something_moved(gpointer data)
{
    const WheelWatch *ww = data;
    return gtk_adjustment_get_value(ww->panel) != ww->panel0 || gtk_adjustment_get_value(ww->control) != ww->control0;
}

static gboolean control_moved(gpointer data)
{
    const WheelWatch *ww = data;
    return gtk_adjustment_get_value(ww->control) != ww->control0;
}

/* Puts the control in the middle of the sidebar's visible part. */
static void scroll_into_view(GtkWidget *sidebar, GtkWidget *control)
{
    GtkAdjustment *adj = gtk_scrolled_window_get_vadjustment(GTK_SCROLLED_WINDOW(sidebar));
    graphene_rect_t b;
    g_assert_true(gtk_widget_compute_bounds(control, sidebar, &b));
    double top = b.origin.y + gtk_adjustment_get_value(adj);
    gtk_adjustment_set_value(adj, top + b.size.height / 2 - gtk_adjustment_get_page_size(adj) / 2);
    gtk_test_widget_wait_for_draw(sidebar);
    gui_test_spin(0.2);
}

static void check_wheel(LarmorWindow *w, GtkWidget *control, GtkAdjustment *control_adj)
{
    GtkWidget *sidebar = larmor_window_get_sidebar(w);
    GtkAdjustment *adj = gtk_scrolled_window_get_vadjustment(GTK_SCROLLED_WINDOW(sidebar));
    g_assert_cmpfloat(gtk_adjustment_get_upper(adj), >, gtk_adjustment_get_page_size(adj));
    scroll_into_view(sidebar, control);
    g_assert_true(gtk_widget_get_mapped(control));
    /* Scroll towards the side with room left. */
    gboolean down = gtk_adjustment_get_value(adj) <= gtk_adjustment_get_lower(adj);
    gtk_root_set_focus(GTK_ROOT(w), NULL);
    WheelWatch ww = { adj, control_adj, gtk_adjustment_get_value(adj), gtk_adjustment_get_value(control_adj) };
    wheel(control, down);
    g_assert_true(gui_test_wait(something_moved, &ww, 30));
    gui_test_spin(0.2); /* a value change would have arrived with the same event */
    g_assert_cmpfloat(gtk_adjustment_get_value(control_adj), ==, ww.control0);
    g_assert_cmpfloat(gtk_adjustment_get_value(adj), !=, ww.panel0);

    /* With the focus, the wheel changes the value as usual. */
    scroll_into_view(sidebar, control);
    gtk_widget_grab_focus(control);
    gui_test_spin(0.1);
    ww.control0 = gtk_adjustment_get_value(control_adj);
    wheel(control, gtk_adjustment_get_value(control_adj) > gtk_adjustment_get_lower(control_adj));
    g_assert_true(gui_test_wait(control_moved, &ww, 30));
    gtk_root_set_focus(GTK_ROOT(w), NULL);
}

static void test_wheel_scrolls_panel(void)
{
    LarmorWindow *w = open_window(1024, 600);
    LarmorReconPanel *panel = larmor_window_get_recon_panel(w);
    GtkWidget *scale = larmor_recon_panel_get_control(panel, "lambda-scale");
    check_wheel(w, scale, gtk_range_get_adjustment(GTK_RANGE(scale)));
    GtkWidget *spin = larmor_recon_panel_get_control(panel, "iters");
    check_wheel(w, spin, gtk_spin_button_get_adjustment(GTK_SPIN_BUTTON(spin)));
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
}

/* Each control of the toolbar lies wholly inside the window, at no less
 * than its minimum width. */
static void check_toolbar(LarmorWindow *w, GtkWidget *toolbar, const char *what)
{
    int ww = gtk_widget_get_width(GTK_WIDGET(w)), wh = gtk_widget_get_height(GTK_WIDGET(w));
    for (GtkWidget *c = gtk_widget_get_first_child(toolbar); c; c = gtk_widget_get_next_sibling(c)) {
        if (!gtk_widget_get_visible(c))
            continue;
        graphene_rect_t b;
        g_assert_true(gtk_widget_compute_bounds(c, GTK_WIDGET(w), &b));
        int min;
        gtk_widget_measure(c, GTK_ORIENTATION_HORIZONTAL, -1, &min, NULL, NULL, NULL);
        if (b.origin.x < 0 || b.origin.x + b.size.width > ww + 0.5 || b.origin.y < 0 ||
            b.origin.y + b.size.height > wh + 0.5 || b.size.width + 0.5 < min)
            g_error("%s: %s control %s at x %.0f..%.0f, y %.0f..%.0f (min width %d) in a %d x %d window", what,
                    gtk_widget_get_name(toolbar), G_OBJECT_TYPE_NAME(c), b.origin.x, b.origin.x + b.size.width,
                    b.origin.y, b.origin.y + b.size.height, min, ww, wh);
    }
}

/* The window keeps the size it was given (so it fits a screen of that
 * size) and both toolbars show every control. */
static void check_fits(LarmorWindow *w, int width, int height, const char *what)
{

    gtk_test_widget_wait_for_draw(GTK_WIDGET(w));
    gui_test_spin(0.3);
    g_assert_cmpint(gtk_widget_get_width(GTK_WIDGET(w)), <=, width);
    g_assert_cmpint(gtk_widget_get_height(GTK_WIDGET(w)), <=, height);
    const char *page = larmor_window_get_page(w);
    larmor_window_set_page(w, "viewer");
    gtk_test_widget_wait_for_draw(GTK_WIDGET(w));
    gui_test_spin(0.3);
    check_toolbar(w, larmor_ortho_view_get_toolbar(larmor_window_get_ortho_view(w)), what);
    larmor_window_set_page(w, "compare");
    gtk_test_widget_wait_for_draw(GTK_WIDGET(w));
    gui_test_spin(0.3);
    check_toolbar(w, larmor_compare_view_get_toolbar(larmor_window_get_compare_view(w)), what);
    g_assert_cmpint(gtk_widget_get_width(GTK_WIDGET(w)), <=, width);
    g_assert_cmpint(gtk_widget_get_height(GTK_WIDGET(w)), <=, height);
    larmor_window_set_page(w, page);
}

static void fits_at(int width, int height)
{
    LarmorWindow *w = open_window(width, height);
    check_fits(w, width, height, "after loading B32");

    /* Four-coil data and a SENSE run. */
    LarmorDatasetSpec spec = { .kind = LARMOR_SOURCE_PHANTOM, .matrix = 32, .traj_kind = LM_TRAJ_RADIAL3D,
                               .seed = 1, .coils = 4 };
    g_strlcpy(spec.phantom, "shepp-logan", sizeof spec.phantom);
    larmor_window_load(w, &spec);
    g_assert_true(gui_test_wait(gui_test_has_data, w, 120));
    LarmorReconParams p;
    larmor_recon_params_init(&p);
    p.method = LM_METHOD_CG;
    g_strlcpy(p.variant, larmor_variant_is_available("cpu-simd", NULL) ? "cpu-simd" : "cpu-sp", sizeof p.variant);
    p.iters = 4;
    p.coils = LARMOR_COILS_SENSE;
    gui_test_reconstruct(w, &p);
    LarmorRun *run = gui_test_last_run(w);
    larmor_window_select_run(w, run);
    larmor_run_set_compare(run, TRUE);
    check_fits(w, width, height, "after a SENSE run");

    /* A line profile drawn across the first compared run. */
    larmor_window_set_page(w, "compare");
    gtk_test_widget_wait_for_draw(GTK_WIDGET(w));
    LarmorCompareView *cv = larmor_window_get_compare_view(w);
    LarmorSliceView *panel = larmor_compare_view_get_panel(cv, 1);
    g_assert_nonnull(panel);
    larmor_view_state_set_roi_tool(larmor_compare_view_get_state(cv), LARMOR_ROI_LINE);
    double x0, y0, x1, y1;
    g_assert_true(larmor_slice_view_plane_to_widget(panel, 3, 4, &x0, &y0));
    g_assert_true(larmor_slice_view_plane_to_widget(panel, 28, 20, &x1, &y1));
    larmor_slice_view_draw_line(panel, x0, y0, x1, y1);
    g_assert_cmpint(larmor_compare_view_get_profile_rows(cv), >=, 2);
    check_fits(w, width, height, "after drawing a profile");

    /* Dynamic data: the panel's dynamic controls, a ttv run, the viewer's
     * time bar and a ROI's time curve, Compare's time bar. */
    LarmorDatasetSpec dyn = { .kind = LARMOR_SOURCE_PROBLEM };
    g_strlcpy(dyn.problem, "D128c8", sizeof dyn.problem);
    larmor_window_load(w, &dyn);
    g_assert_true(gui_test_wait(gui_test_has_data, w, 120));
    LarmorReconPanel *rp = larmor_window_get_recon_panel(w);
    larmor_dyn_controls_set_iters(larmor_recon_panel_get_dyn_controls(rp), 1);
    g_assert_true(larmor_window_get_params(w, &p));
    gui_test_reconstruct(w, &p);
    larmor_window_set_page(w, "viewer");
    LarmorOrthoView *ov = larmor_window_get_ortho_view(w);
    LarmorRoi roi;
    larmor_roi_set(&roi, LARMOR_ROI_RECT, LARMOR_ORIENT_AXIAL, 0, 40, 56, 47, 71);
    larmor_view_state_set_roi(larmor_ortho_view_get_state(ov), &roi);
    check_fits(w, width, height, "after a dynamic run");
    larmor_window_set_page(w, "viewer");
    gtk_test_widget_wait_for_draw(GTK_WIDGET(w));
    gui_test_spin(0.3);
    g_assert_true(gtk_widget_get_visible(GTK_WIDGET(larmor_ortho_view_get_time_curve(ov))));
    check_toolbar(w, GTK_WIDGET(larmor_ortho_view_get_time_bar(ov)), "viewer time bar");
    larmor_window_set_page(w, "compare");
    gtk_test_widget_wait_for_draw(GTK_WIDGET(w));
    gui_test_spin(0.3);
    check_toolbar(w, GTK_WIDGET(larmor_compare_view_get_time_bar(cv)), "compare time bar");
    larmor_window_set_confirm_close(w, FALSE);
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
}

static void test_fits_small(void)
{
    fits_at(1024, 600);
}

static void test_fits_large(void)
{
    fits_at(1440, 900);
}

/* A saved size larger than the screen is neither restored nor saved. */
static void test_saved_size_fits(void)
{
    GdkRectangle r = { 0 };
    GdkMonitor *m = g_list_model_get_item(gdk_display_get_monitors(gdk_display_get_default()), 0);
    gdk_monitor_get_geometry(m, &r);
    g_object_unref(m);
    g_assert_cmpint(r.width, >, 0);
    char *dir = gui_test_tmp_dir("size");
    char *path = g_build_filename(dir, "settings.ini", NULL);
    LarmorSettings *settings = larmor_settings_new(path);
    larmor_settings_set_int(settings, "window", "width", r.width + 600);
    larmor_settings_set_int(settings, "window", "height", r.height + 400);
    LarmorWindow *w = larmor_window_new(GTK_APPLICATION(app), settings, "B32");
    int dw, dh;
    gtk_window_get_default_size(GTK_WINDOW(w), &dw, &dh);
    g_assert_cmpint(dw, <=, r.width);
    g_assert_cmpint(dh, <=, r.height);
    gui_test_show(GTK_WINDOW(w));
    g_assert_true(gui_test_wait(gui_test_has_data, w, 120));
    /* Grown past the screen (as a wide label once made it), then closed. */
    gtk_window_set_default_size(GTK_WINDOW(w), r.width + 11, r.height + 7);
    larmor_window_set_confirm_close(w, FALSE);
    gpointer weak = w;
    g_object_add_weak_pointer(G_OBJECT(w), &weak);
    gtk_window_close(GTK_WINDOW(w));
    g_assert_true(gui_test_wait_gone(&weak));
    g_assert_cmpint(larmor_settings_get_int(settings, "window", "width", 0), <=, r.width);
    g_assert_cmpint(larmor_settings_get_int(settings, "window", "height", 0), <=, r.height);
    g_object_unref(settings);
    g_unlink(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
}

static GtkWidget *find_type(GtkWidget *w, const char *type)
{
    if (g_strcmp0(G_OBJECT_TYPE_NAME(w), type) == 0)
        return w;
    for (GtkWidget *c = gtk_widget_get_first_child(w); c; c = gtk_widget_get_next_sibling(c)) {
        GtkWidget *f = find_type(c, type);
        if (f)
            return f;
    }
    return NULL;
}

/* The main menu's item with this text (its GtkModelButton), menu open. */
static GtkWidget *find_item(GtkWidget *w, const char *text)
{
    if (g_strcmp0(G_OBJECT_TYPE_NAME(w), "GtkModelButton") == 0) {
        char *t = NULL;
        g_object_get(w, "text", &t, NULL);
        gboolean same = g_strcmp0(t, text) == 0;
        g_free(t);
        if (same)
            return w;
    }
    for (GtkWidget *c = gtk_widget_get_first_child(w); c; c = gtk_widget_get_next_sibling(c)) {
        GtkWidget *f = find_item(c, text);
        if (f)
            return f;
    }
    return NULL;
}

static gboolean item_active(GtkWidget *item)
{
    gboolean active;
    g_object_get(item, "active", &active, NULL);
    return active;
}

static gboolean bar_drawn(LarmorWindow *w)
{
    double rect[4];
    LarmorSliceView *v = larmor_ortho_view_get_slice_view(larmor_window_get_ortho_view(w), LARMOR_ORIENT_AXIAL);
    gtk_test_widget_wait_for_draw(GTK_WIDGET(v));
    gui_test_spin(0.2);
    return larmor_slice_view_get_colorbar_rect(v, rect) && rect[2] > 0;
}

/* The main menu's Colour Bars item shows the state with its check mark,
 * and clicking it hides, then shows the bars. */
static void test_colour_bars_item(void)
{
    LarmorWindow *w = open_window(1024, 600);
    g_assert_true(larmor_window_get_show_colorbar(w));
    g_assert_true(bar_drawn(w));
    GtkWidget *mb = find_type(gtk_window_get_titlebar(GTK_WINDOW(w)), "GtkMenuButton");
    g_assert_nonnull(mb);
    for (int round = 0; round < 2; round++) {
        gboolean before = round == 0;
        gtk_menu_button_popup(GTK_MENU_BUTTON(mb));
        gui_test_spin(0.3);
        GtkWidget *item = find_item(GTK_WIDGET(gtk_menu_button_get_popover(GTK_MENU_BUTTON(mb))), "Colour Bars");
        g_assert_nonnull(item);
        g_assert_cmpint(item_active(item), ==, before);
        g_signal_emit_by_name(item, "clicked");
        gui_test_spin(0.3);
        g_assert_cmpint(larmor_window_get_show_colorbar(w), ==, !before);
        g_assert_cmpint(item_active(item), ==, !before);
        gtk_menu_button_popdown(GTK_MENU_BUTTON(mb));
        g_assert_cmpint(bar_drawn(w), ==, !before);
    }
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
}

static LarmorVolume *ramp_volume(const char *name)
{
    const int64_t dims[3] = { 16, 16, 4 };
    const double mm[3] = { 1, 1, 1 };
    lm_volume *v = lm_volume_new(dims, mm, NULL);
    g_assert_nonnull(v);
    for (int64_t i = 0; i < 16 * 16 * 4; i++)
        v->data[i] = (float)i / 1024.0f;
    return larmor_volume_new_take(v, name);
}

static void test_colour_bars_apart(void)
{
    LarmorSliceView *view = LARMOR_SLICE_VIEW(larmor_slice_view_new(LARMOR_ORIENT_AXIAL));
    LarmorVolume *vol = ramp_volume("image"), *over = ramp_volume("influence");
    larmor_slice_view_set_volume(view, vol);
    LarmorViewState *st = larmor_slice_view_get_state(view);
    larmor_view_state_set_dims(st, larmor_volume_get_data(vol)->dims);
    larmor_view_state_set_window_level(st, 1.0, 0.5);
    LarmorOverlayStyle style = { .colormap = LARMOR_COLORMAP_HOT, .lo = 0, .hi = 1, .opacity = 0.8, .ramp = 1,
                                 .mode = LARMOR_MODE_MAGNITUDE };
    larmor_slice_view_set_overlay(view, over, &style, "a.u.");
    GtkWidget *win = gtk_window_new();
    gtk_window_set_decorated(GTK_WINDOW(win), FALSE);
    gtk_window_set_child(GTK_WINDOW(win), GTK_WIDGET(view));
    static const int sizes[][2] = { { 320, 240 }, { 400, 400 }, { 640, 480 }, { 900, 700 } };
    for (guint k = 0; k < G_N_ELEMENTS(sizes); k++) {
        gtk_window_set_default_size(GTK_WINDOW(win), sizes[k][0], sizes[k][1]);
        gui_test_show(GTK_WINDOW(win));
        gtk_widget_queue_draw(GTK_WIDGET(view));
        gtk_test_widget_wait_for_draw(GTK_WIDGET(view));
        double a[4], b[4];
        g_assert_true(larmor_slice_view_get_colorbar_rect(view, a));
        g_assert_true(larmor_slice_view_get_overlay_colorbar_rect(view, b));
        double W = gtk_widget_get_width(GTK_WIDGET(view)), H = gtk_widget_get_height(GTK_WIDGET(view));
        printf("# %.0f x %.0f: image bar y %.0f..%.0f, overlay bar y %.0f..%.0f\n", W, H, a[1], a[1] + a[3], b[1],
               b[1] + b[3]);
        /* Apart: one lies wholly above or beside the other. */
        gboolean apart = a[1] >= b[1] + b[3] || b[1] >= a[1] + a[3] || a[0] >= b[0] + b[2] || b[0] >= a[0] + a[2];
        g_assert_true(apart);
        /* The overlay's bar starts below the caption line (view name, slice
         * position) drawn from y 4: the drive saw its unit label over
         * "z 30 (0-63)". */
        PangoLayout *pl = gtk_widget_create_pango_layout(GTK_WIDGET(view), "z 30 (0\u201363)");
        int tw, th;
        pango_layout_get_pixel_size(pl, &tw, &th);
        g_object_unref(pl);
        g_assert_cmpfloat(b[1], >=, 4 + th);
        for (int i = 0; i < 2; i++) {
            const double *r = i ? b : a;
            g_assert_cmpfloat(r[0], >=, 0);
            g_assert_cmpfloat(r[1], >=, 0);
            g_assert_cmpfloat(r[0] + r[2], <=, W);
            g_assert_cmpfloat(r[1] + r[3], <=, H);
        }
    }
    /* Colour Bars off hides both. */
    larmor_view_state_set_show_colorbar(st, FALSE);
    gtk_test_widget_wait_for_draw(GTK_WIDGET(view));
    gui_test_spin(0.1);
    double r[4];
    g_assert_false(larmor_slice_view_get_colorbar_rect(view, r));
    g_assert_false(larmor_slice_view_get_overlay_colorbar_rect(view, r));
    gtk_window_destroy(GTK_WINDOW(win));
    g_object_unref(vol);
    g_object_unref(over);
    gui_test_spin(0.1);
}

static gboolean truth_changed(gpointer data)
{
    gpointer *d = data;
    return !larmor_window_is_busy(d[0]) && larmor_dataset_get_truth(larmor_window_get_dataset(d[0])) != d[1];
}

static void button_at(LarmorWindow *w, GtkWidget *button, graphene_rect_t *b)
{
    gtk_test_widget_wait_for_draw(GTK_WIDGET(w));
    gui_test_spin(0.2);
    g_assert_true(gtk_widget_compute_bounds(button, GTK_WIDGET(w), b));
}

static void assert_same_place(const graphene_rect_t *a, const graphene_rect_t *b, const char *after)
{
    if (!graphene_rect_equal(a, b))
        g_error("after %s the Reconstruct button moved from %.0f,%.0f %.0fx%.0f to %.0f,%.0f %.0fx%.0f", after,
                a->origin.x, a->origin.y, a->size.width, a->size.height, b->origin.x, b->origin.y, b->size.width,
                b->size.height);
}

static guint reg_position(GtkDropDown *dd, const char *name)
{
    GListModel *m = gtk_drop_down_get_model(dd);
    for (guint i = 0; i < g_list_model_get_n_items(m); i++) {
        GtkStringObject *o = g_list_model_get_item(m, i);
        gboolean same = g_strcmp0(gtk_string_object_get_string(o), name) == 0;
        g_object_unref(o);
        if (same)
            return i;
    }
    g_error("no regulariser %s", name);
    return 0;
}

static void test_button_stays(void)
{
    LarmorWindow *w = open_window(1024, 600);
    LarmorReconPanel *panel = larmor_window_get_recon_panel(w);
    GtkWidget *button = larmor_recon_panel_get_control(panel, "run");
    GtkDropDown *method = GTK_DROP_DOWN(larmor_recon_panel_get_control(panel, "method"));
    GtkDropDown *reg = GTK_DROP_DOWN(larmor_recon_panel_get_control(panel, "reg"));
    static const char *regs[] = { "identity", "anatomical", "anatomical-edges", "tv" };
    for (guint r = 0; r < G_N_ELEMENTS(regs); r++) {
        gtk_drop_down_set_selected(method, LM_METHOD_CG);
        gtk_drop_down_set_selected(reg, reg_position(reg, regs[r]));
        graphene_rect_t b0, b1;
        button_at(w, button, &b0);
        for (guint m = 0; m < g_list_model_get_n_items(gtk_drop_down_get_model(method)); m++) {
            gtk_drop_down_set_selected(method, m);
            button_at(w, button, &b1);
            assert_same_place(&b0, &b1, "a change of Method");
        }
    }
    gtk_drop_down_set_selected(method, LM_METHOD_CG);
    gtk_drop_down_set_selected(reg, reg_position(reg, "identity"));
    graphene_rect_t b0, b1;
    button_at(w, button, &b0);

    /* A truth with a long file name. */
    LarmorVolume *truth = larmor_dataset_get_truth(larmor_window_get_dataset(w));
    g_assert_nonnull(truth);
    char *dir = gui_test_tmp_dir("button");
    char *np = g_build_filename(dir, "a-rather-long-name-for-the-reference-image-of-this-study.nii", NULL);
    lm_error err = { 0 };
    g_assert_cmpint(lm_nifti_write(np, larmor_volume_get_data(truth), 0, &err), ==, LM_OK);
    larmor_window_open_truth(w, np);
    g_assert_true(gui_test_wait(truth_changed, (gpointer[]){ w, truth }, 60));
    button_at(w, button, &b1);
    assert_same_place(&b0, &b1, "loading a truth");
    g_unlink(np);
    g_rmdir(dir);
    g_free(np);
    g_free(dir);
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
}

static void collect_labels(GtkWidget *w, GPtrArray *out)
{
    if (GTK_IS_LABEL(w))
        g_ptr_array_add(out, w);
    for (GtkWidget *c = gtk_widget_get_first_child(w); c; c = gtk_widget_get_next_sibling(c))
        collect_labels(c, out);
}

static void test_unavailable_variant_reason(void)
{
    LarmorWindow *w = open_window(1024, 600);
    LarmorReconPanel *panel = larmor_window_get_recon_panel(w);
    GtkWidget *method = larmor_recon_panel_get_control(panel, "method");
    /* The kernel drop-down: the next GtkDropDown after Method's in the panel. */
    GtkWidget *dd = NULL;
    for (GtkWidget *c = gtk_widget_get_next_sibling(method); c && !dd; c = gtk_widget_get_next_sibling(c))
        if (GTK_IS_DROP_DOWN(c))
            dd = c;
    g_assert_nonnull(dd);
    g_signal_emit_by_name(dd, "activate");
    gui_test_spin(0.5);
    GPtrArray *labels = g_ptr_array_new();
    collect_labels(GTK_WIDGET(dd), labels);
    int unavailable = 0;
    for (guint i = 0; i < lm_variant_count(); i++) {
        const lm_variant *v = lm_variant_at(i);
        lm_error why = { 0 };
        if (!v->available || v->available(&why) == LM_OK)
            continue;
        char *want = g_strdup_printf("unavailable: %s", why.msg);
        gboolean named = FALSE, reason = FALSE;
        for (guint k = 0; k < labels->len; k++) {
            GtkWidget *l = labels->pdata[k];
            if (g_strcmp0(gtk_label_get_text(GTK_LABEL(l)), v->name) != 0 || !gtk_widget_get_mapped(l))
                continue;
            named = TRUE;
            GtkWidget *note = gtk_widget_get_next_sibling(l);
            reason |= note && GTK_IS_LABEL(note) && gtk_widget_get_mapped(note) &&
                      g_strcmp0(gtk_label_get_text(GTK_LABEL(note)), want) == 0;
        }
        if (named) {
            g_assert_true(reason);
            unavailable++;
        }
        g_free(want);
    }
    printf("# %d unavailable kernels show their reason\n", unavailable);
    g_ptr_array_unref(labels);
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
}

static gboolean revealed(gpointer revealer)
{
    return gtk_revealer_get_child_revealed(GTK_REVEALER(revealer));
}

static void test_toast_clear_of_toolbar(void)
{
    LarmorWindow *w = open_window(1024, 600);
    larmor_window_show_message(w, "A long message of the kind a failed open gives: the file could not be read "
                                  "(/tmp/a-long-path/kspace.cfl)", TRUE);
    gtk_test_widget_wait_for_draw(GTK_WIDGET(w));
    GPtrArray *labels = g_ptr_array_new();
    collect_labels(GTK_WIDGET(w), labels);
    GtkWidget *toast = NULL;
    for (guint k = 0; k < labels->len && !toast; k++)
        if (g_str_has_prefix(gtk_label_get_text(GTK_LABEL(labels->pdata[k])), "A long message"))
            toast = gtk_widget_get_ancestor(labels->pdata[k], GTK_TYPE_REVEALER);
    g_ptr_array_unref(labels);
    g_assert_nonnull(toast);
    /* The revealer's transition, however long a loaded machine takes (a
     * fixed 0.6 s wait failed once under load). */
    g_assert_true(gui_test_wait(revealed, toast, 30));
    gui_test_spin(0.1);
    graphene_rect_t tb, bb;
    g_assert_true(gtk_widget_compute_bounds(toast, GTK_WIDGET(w), &tb));
    g_assert_cmpfloat(tb.size.width, >, 0);
    GtkWidget *toolbar = larmor_ortho_view_get_toolbar(larmor_window_get_ortho_view(w));
    g_assert_true(gtk_widget_compute_bounds(toolbar, GTK_WIDGET(w), &bb));
    printf("# toast %.0f,%.0f %.0fx%.0f; toolbar %.0f,%.0f %.0fx%.0f\n", tb.origin.x, tb.origin.y, tb.size.width,
           tb.size.height, bb.origin.x, bb.origin.y, bb.size.width, bb.size.height);
    g_assert_false(graphene_rect_intersection(&tb, &bb, NULL));
    g_assert_cmpfloat(tb.origin.x, >=, 0);
    g_assert_cmpfloat(tb.origin.x + tb.size.width, <=, gtk_widget_get_width(GTK_WIDGET(w)) + 0.5);
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
}

/* At 1024 x 600 every control is reachable: no page is wider than the
 * room it gets, and the sidebar scrolls down to the sweep. */
static void test_small_window(void)
{
    LarmorWindow *w = gui_test_open_window(GTK_APPLICATION(app), 1024, 600);
    gui_test_spin(0.3);
    g_assert_cmpint(gtk_widget_get_width(GTK_WIDGET(w)), <=, 1024);
    g_assert_cmpint(gtk_widget_get_height(GTK_WIDGET(w)), <=, 600);
    /* Each page fits the width it is given (none is clipped). */
    static const char *pages[] = { "viewer", "compare", "runs", "sweep", "coils" };
    for (guint i = 0; i < G_N_ELEMENTS(pages); i++) {
        larmor_window_set_page(w, pages[i]);
        gui_test_spin(0.3);
        GtkWidget *stack = gtk_widget_get_parent(GTK_WIDGET(larmor_window_get_ortho_view(w)));
        int min, nat;
        gtk_widget_measure(stack, GTK_ORIENTATION_HORIZONTAL, -1, &min, &nat, NULL, NULL);
        g_assert_cmpint(min, <=, gtk_widget_get_width(stack));
        gtk_widget_measure(stack, GTK_ORIENTATION_VERTICAL, gtk_widget_get_width(stack), &min, &nat, NULL, NULL);
        g_assert_cmpint(min, <=, gtk_widget_get_height(stack));
    }
    /* The sidebar scrolls, and the sweep button lies in what it scrolls. */
    GtkWidget *sidebar = larmor_window_get_sidebar(w);
    g_assert_true(GTK_IS_SCROLLED_WINDOW(sidebar));
    GtkWidget *sweep = larmor_recon_panel_get_sweep_button(larmor_window_get_recon_panel(w));
    g_assert_true(gtk_widget_is_ancestor(sweep, sidebar));
    GtkAdjustment *adj = gtk_scrolled_window_get_vadjustment(GTK_SCROLLED_WINDOW(sidebar));
    g_assert_cmpfloat(gtk_adjustment_get_upper(adj), >, gtk_adjustment_get_page_size(adj));
    graphene_rect_t b;
    g_assert_true(gtk_widget_compute_bounds(sweep, sidebar, &b));
    double top = b.origin.y + gtk_adjustment_get_value(adj);
    g_assert_cmpfloat(top + b.size.height, <=, gtk_adjustment_get_upper(adj) + 0.5);
    /* Scrolled to the bottom, the button is inside the visible part. */
    gtk_adjustment_set_value(adj, gtk_adjustment_get_upper(adj) - gtk_adjustment_get_page_size(adj));
    gtk_test_widget_wait_for_draw(GTK_WIDGET(w));
    gui_test_spin(0.2);
    g_assert_true(gtk_widget_compute_bounds(sweep, sidebar, &b));
    g_assert_cmpfloat(b.origin.y, >=, 0);
    g_assert_cmpfloat(b.origin.y + b.size.height, <=, gtk_widget_get_height(sidebar));
    g_assert_true(gtk_widget_get_mapped(sweep));
    g_assert_true(gtk_widget_is_sensitive(sweep));
    gtk_window_destroy(GTK_WINDOW(w));
    gui_test_spin(0.1);
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    if (!GDK_IS_X11_DISPLAY(gdk_display_get_default())) {
        fprintf(stderr, "SKIP: XTest needs the X11 backend\n");
        return 77;
    }
    int ev, err, major, minor;
    if (!XTestQueryExtension(gdk_x11_display_get_xdisplay(gdk_display_get_default()), &ev, &err, &major, &minor)) {
        fprintf(stderr, "SKIP: the X server has no XTest extension\n");
        return 77;
    }
    app = gui_test_app_new();
    g_test_add_func("/layout/wheel-scrolls-panel", test_wheel_scrolls_panel);
    g_test_add_func("/layout/fits-1024x600", test_fits_small);
    g_test_add_func("/layout/fits-1440x900", test_fits_large);
    g_test_add_func("/layout/saved-size-fits", test_saved_size_fits);
    g_test_add_func("/layout/colour-bars-item", test_colour_bars_item);
    g_test_add_func("/layout/colour-bars-apart", test_colour_bars_apart);
    g_test_add_func("/layout/button-stays", test_button_stays);
    g_test_add_func("/layout/unavailable-variant-reason", test_unavailable_variant_reason);
    g_test_add_func("/layout/toast-clear-of-toolbar", test_toast_clear_of_toolbar);
    g_test_add_func("/layout/small-window", test_small_window);
    return gui_test_app_run(app);
}
