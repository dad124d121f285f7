#include "larmor-window-size.h"

void larmor_window_size_fit(GdkDisplay *display, int *width, int *height)
{
    GListModel *monitors = display ? gdk_display_get_monitors(display) : NULL;
    int mw = 0, mh = 0;
    for (guint i = 0; monitors && i < g_list_model_get_n_items(monitors); i++) {
        GdkMonitor *m = g_list_model_get_item(monitors, i);
        GdkRectangle r;
        gdk_monitor_get_geometry(m, &r);
        mw = MAX(mw, r.width);
        mh = MAX(mh, r.height);
        g_object_unref(m);
    }
    if (mw > 0 && mh > 0) {
        *width = MIN(*width, mw);
        *height = MIN(*height, mh);
    }
}
