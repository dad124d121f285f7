/* The workbench's layout and input (issue 25, defects 4, 5, 10-12, 14, 15):
 * real pointer events through XTest on the X server the test runs on, and
 * assertions on widget allocations, not pictures. No timed assertions: a
 * wait ends on a condition, its timeout is only a bound. */
#include <gdk/x11/gdkx.h>
#include <X11/extensions/XTest.h>
#include <math.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-application.h"
#include "larmor-recon-panel.h"
#include "larmor-window.h"

static LarmorApplication *app;

static gboolean has_data(gpointer w)
{
    return larmor_window_get_dataset(w) && !larmor_window_is_busy(w);
}

static LarmorWindow *open_window(int width, int height)
{
    LarmorWindow *w = larmor_window_new(GTK_APPLICATION(app), NULL, "B32");
    gtk_window_set_default_size(GTK_WINDOW(w), width, height);
    gui_test_show(GTK_WINDOW(w));
    g_assert_true(gui_test_wait(has_data, w, 120));
    gui_test_spin(0.2);
    return w;
}

/* --- pointer events through XTest ------------------------------------ */

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

/* --- 4. the wheel scrolls the panel, not the value --------------------- */

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
    app = larmor_application_new();
    g_application_set_flags(G_APPLICATION(app), g_application_get_flags(G_APPLICATION(app)) | G_APPLICATION_NON_UNIQUE);
    GError *error = NULL;
    g_assert_true(g_application_register(G_APPLICATION(app), NULL, &error));
    g_assert_no_error(error);
    g_application_hold(G_APPLICATION(app));
    g_test_add_func("/layout/wheel-scrolls-panel", test_wheel_scrolls_panel);
    int rc = g_test_run();
    g_application_release(G_APPLICATION(app));
    g_object_unref(app);
    return rc;
}
