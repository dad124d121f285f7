/* Helpers for the GTK tests (docs/conventions.md section 8): skip without a display,
 * run the main loop until something happens, render a widget through its
 * native's renderer and read pixels back. */
#ifndef LARMOR_GUI_TEST_H
#define LARMOR_GUI_TEST_H

#include <gtk/gtk.h>
#include <stdio.h>
#include <stdlib.h>

#include "larmor-util.h"

/* Exit 77 (meson: skipped) when no display can be opened. */
static inline void gui_test_init(int *argc, char ***argv)
{
    if (!g_getenv("DISPLAY") && !g_getenv("WAYLAND_DISPLAY")) {
        fprintf(stderr, "SKIP: no display (run under xvfb-run)\n");
        exit(77);
    }
    gtk_test_init(argc, argv, NULL);
    larmor_resources_ensure();
}

typedef gboolean (*GuiTestCond)(gpointer data);

static gboolean gui_test_timeout_cb(gpointer data)
{
    *(gboolean *)data = TRUE;
    return G_SOURCE_REMOVE;
}

/* Iterates the default main context until cond(data) or timeout_s. */
static inline gboolean gui_test_wait(GuiTestCond cond, gpointer data, double timeout_s)
{
    gboolean timed_out = FALSE;
    guint id = g_timeout_add((guint)(timeout_s * 1000), gui_test_timeout_cb, &timed_out);
    while (!cond(data) && !timed_out)
        g_main_context_iteration(NULL, TRUE);
    if (!timed_out)
        g_source_remove(id);
    return cond(data);
}

static gboolean gui_test_false(gpointer data)
{
    return FALSE;
}

static gboolean gui_test_is_gone(gpointer data)
{
    return *(gpointer *)data == NULL;
}

/* Iterates until a weak pointer is cleared (a window closed once its worker
 * has stopped); a minute, not a wall-time bound: a loaded machine may take
 * seconds to stop a run. */
static inline gboolean gui_test_wait_gone(gpointer *weak)
{
    return gui_test_wait(gui_test_is_gone, weak, 60);
}

/* Lets layout and drawing settle for a while. */
static inline void gui_test_spin(double seconds)
{
    gui_test_wait(gui_test_false, NULL, seconds);
}

/* Presents a window and waits until it has drawn. */
static inline void gui_test_show(GtkWindow *w)
{
    gtk_window_present(w);
    gtk_test_widget_wait_for_draw(GTK_WIDGET(w));
    gui_test_spin(0.2);
}

/* The widget's pixels as 0xAARRGGBB (GDK_MEMORY_DEFAULT), row-major. */
typedef struct {
    int w, h;
    guint32 *px;
} GuiTestImage;

static inline gboolean gui_test_capture(GtkWidget *widget, GuiTestImage *img)
{
    img->w = img->h = 0;
    img->px = NULL;
    GdkTexture *tex = larmor_widget_render(widget);
    if (!tex)
        return FALSE;
    img->w = gdk_texture_get_width(tex);
    img->h = gdk_texture_get_height(tex);
    img->px = g_new(guint32, (gsize)img->w * img->h);
    gdk_texture_download(tex, (guchar *)img->px, (gsize)img->w * 4);
    g_object_unref(tex);
    return TRUE;
}

static inline guint32 gui_test_pixel(const GuiTestImage *img, double x, double y)
{
    int ix = CLAMP((int)x, 0, img->w - 1), iy = CLAMP((int)y, 0, img->h - 1);
    return img->px[(size_t)iy * img->w + ix] & 0xffffffu;
}

static inline void gui_test_image_clear(GuiTestImage *img)
{
    g_clear_pointer(&img->px, g_free);
}

#endif
