/* A capture-phase scroll controller on each guarded control sees the wheel
 * before the control's own (bubble-phase) handler. Unless the control holds
 * the focus, it moves the nearest scrolled window instead and stops the
 * event, so a panel can be scrolled with the pointer resting on a slider. */
#include "larmor-scroll-guard.h"

#include <math.h>

static const char guard_key[] = "larmor-scroll-guard";

static gboolean holds_focus(GtkWidget *w)
{
    GtkRoot *root = gtk_widget_get_root(w);
    GtkWidget *focus = root ? gtk_root_get_focus(root) : NULL;
    return focus && (focus == w || gtk_widget_is_ancestor(focus, w));
}

static gboolean on_scroll(GtkEventControllerScroll *c, double dx, double dy, gpointer data)
{
    GtkWidget *w = gtk_event_controller_get_widget(GTK_EVENT_CONTROLLER(c));
    if (holds_focus(w))
        return GDK_EVENT_PROPAGATE;
    GtkWidget *sw = gtk_widget_get_ancestor(w, GTK_TYPE_SCROLLED_WINDOW);
    if (!sw)
        return GDK_EVENT_PROPAGATE;
    /* Steps as GtkScrolledWindow takes them: a notch moves page^(2/3),
     * a touchpad's deltas are pixels. */
    gboolean notches = gtk_event_controller_scroll_get_unit(c) == GDK_SCROLL_UNIT_WHEEL;
    GtkAdjustment *adj[2] = { gtk_scrolled_window_get_hadjustment(GTK_SCROLLED_WINDOW(sw)),
                              gtk_scrolled_window_get_vadjustment(GTK_SCROLLED_WINDOW(sw)) };
    double d[2] = { dx, dy };
    for (int i = 0; i < 2; i++) {
        if (!adj[i] || d[i] == 0)
            continue;
        double page = gtk_adjustment_get_page_size(adj[i]);
        double step = notches ? pow(page, 2.0 / 3.0) : 1.0;
        gtk_adjustment_set_value(adj[i], gtk_adjustment_get_value(adj[i]) + d[i] * step);
    }
    return GDK_EVENT_STOP;
}

static void guard(GtkWidget *w)
{
    if (g_object_get_data(G_OBJECT(w), guard_key))
        return;
    GtkEventController *c = gtk_event_controller_scroll_new(GTK_EVENT_CONTROLLER_SCROLL_BOTH_AXES);
    gtk_event_controller_set_propagation_phase(c, GTK_PHASE_CAPTURE);
    gtk_event_controller_set_name(c, guard_key);
    g_signal_connect(c, "scroll", G_CALLBACK(on_scroll), NULL);
    gtk_widget_add_controller(w, c);
    g_object_set_data(G_OBJECT(w), guard_key, c);
}

void larmor_scroll_guard_attach(GtkWidget *root)
{
    if (GTK_IS_RANGE(root) || GTK_IS_SPIN_BUTTON(root)) {
        guard(root);
        return; /* their parts are not controls of their own */
    }
    for (GtkWidget *c = gtk_widget_get_first_child(root); c; c = gtk_widget_get_next_sibling(c))
        larmor_scroll_guard_attach(c);
}
