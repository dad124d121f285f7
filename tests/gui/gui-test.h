/* The fixture every GTK test shares (docs/conventions.md section 8): skip
 * without a display, run the main loop until something happens, the test
 * application and its B32 window, runs and CPU parameters, temporary
 * folders, screenshots, and a widget's pixels read back through its
 * native's renderer. */
#ifndef LARMOR_GUI_TEST_H
#define LARMOR_GUI_TEST_H

#include <glib/gstdio.h>
#include <gtk/gtk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "larmor-application.h"
#include "larmor-recon-panel.h"
#include "larmor-run.h"
#include "larmor-util.h"
#include "larmor-window.h"

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

/* The application the window tests open their windows in: not unique
 * (parallel tests must not find each other on the session bus), its other
 * flags kept (the open path needs G_APPLICATION_HANDLES_OPEN), registered
 * and held so that it outlives its windows. */
static inline LarmorApplication *gui_test_app_new(void)
{
    LarmorApplication *app = larmor_application_new();
    g_application_set_flags(G_APPLICATION(app), g_application_get_flags(G_APPLICATION(app)) | G_APPLICATION_NON_UNIQUE);
    GError *error = NULL;
    g_assert_true(g_application_register(G_APPLICATION(app), NULL, &error));
    g_assert_no_error(error);
    g_application_hold(G_APPLICATION(app));
    return app;
}

/* Runs the registered tests, then lets the application go. */
static inline int gui_test_app_run(LarmorApplication *app)
{
    int rc = g_test_run();
    g_application_release(G_APPLICATION(app));
    g_object_unref(app);
    return rc;
}

/* gui_test_wait conditions on a LarmorWindow: nothing running; data
 * loaded and nothing running. */
static inline gboolean gui_test_idle(gpointer w)
{
    return !larmor_window_is_busy(w);
}

static inline gboolean gui_test_has_data(gpointer w)
{
    return larmor_window_get_dataset(w) && !larmor_window_is_busy(w);
}

/* A window on the B32 phantom, shown at width x height, its data loaded. */
static inline LarmorWindow *gui_test_open_window(GtkApplication *app, int width, int height)
{
    LarmorWindow *w = larmor_window_new(app, NULL, "B32");
    gtk_window_set_default_size(GTK_WINDOW(w), width, height);
    gui_test_show(GTK_WINDOW(w));
    g_assert_true(gui_test_wait(gui_test_has_data, w, 120));
    return w;
}

/* A run of an image (taken) with default parameters, as the runs table
 * lists it at index. */
static inline LarmorRun *gui_test_run_new(lm_volume *img, const char *name, int index)
{
    LarmorReconParams p;
    larmor_recon_params_init(&p);
    lm_recon_result res;
    memset(&res, 0, sizeof res);
    res.image = img;
    LarmorRun *r = larmor_run_new(&p, name, &res);
    larmor_run_set_index(r, index);
    return r;
}

/* A 1400 x 900 window on B32 that closes without asking, then the data set
 * spec when given, loaded. */
static inline LarmorWindow *gui_test_open_data(GtkApplication *app, const LarmorDatasetSpec *spec)
{
    LarmorWindow *w = gui_test_open_window(app, 1400, 900);
    larmor_window_set_confirm_close(w, FALSE);
    if (spec) {
        larmor_window_load(w, spec);
        g_assert_true(gui_test_wait(gui_test_has_data, w, 120));
    }
    return w;
}

/* Run i of the window's list, and the newest run (the list keeps them). */
static inline LarmorRun *gui_test_run_at(LarmorWindow *w, guint i)
{
    LarmorRun *r = g_list_model_get_item(larmor_window_get_runs(w), i);
    g_object_unref(r);
    return r;
}

static inline LarmorRun *gui_test_last_run(LarmorWindow *w)
{
    guint n = g_list_model_get_n_items(larmor_window_get_runs(w));
    g_assert_cmpuint(n, >, 0);
    return gui_test_run_at(w, n - 1);
}

/* Closes a window without the unsaved-runs question (tests/gui/test_recent.c
 * asks it) and waits until it is gone. */
static inline void gui_test_close_window(LarmorWindow *w)
{
    larmor_window_set_confirm_close(w, FALSE);
    g_object_add_weak_pointer(G_OBJECT(w), (gpointer *)&w);
    gtk_window_close(GTK_WINDOW(w));
    g_assert_true(gui_test_wait_gone((gpointer *)&w));
}

/* Starts a reconstruction, waits until it has finished as "done", and
 * gives its run (the newest). */
static inline LarmorRun *gui_test_reconstruct(LarmorWindow *w, const LarmorReconParams *p)
{
    GError *error = NULL;
    g_assert_true(larmor_window_reconstruct(w, p, &error));
    g_assert_no_error(error);
    g_assert_true(gui_test_wait(gui_test_idle, w, 300));
    g_assert_cmpstr(larmor_window_get_last_status(w), ==, "done");
    return gui_test_last_run(w);
}

/* CG parameters on the CPU: variant where this machine has it, else cpu-sp. */
static inline void gui_test_cpu_params(LarmorReconParams *p, const char *variant, int iters)
{
    larmor_recon_params_init(p);
    p->method = LM_METHOD_CG;
    g_strlcpy(p->variant, larmor_variant_is_available(variant, NULL) ? variant : "cpu-sp", sizeof p->variant);
    p->iters = iters;
}

/* A new temporary folder larmor-WHAT-XXXXXX, and removing one with all it holds. */
static inline char *gui_test_tmp_dir(const char *what)
{
    char *tmpl = g_strdup_printf("larmor-%s-XXXXXX", what);
    char *dir = g_dir_make_tmp(tmpl, NULL);
    g_assert_nonnull(dir);
    g_free(tmpl);
    return dir;
}

static inline void gui_test_remove_tree(const char *path)
{
    if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
        GDir *d = g_dir_open(path, 0, NULL);
        const char *name;
        while (d && (name = g_dir_read_name(d))) {
            char *p = g_build_filename(path, name, NULL);
            gui_test_remove_tree(p);
            g_free(p);
        }
        if (d)
            g_dir_close(d);
        g_rmdir(path);
    } else {
        g_remove(path);
    }
}

/* With $LARMOR_TEST_SHOTS set, the widget as PNG in that folder (for
 * looking at, not checked). */
static inline void gui_test_save_shot(GtkWidget *widget, const char *name)
{
    const char *dir = g_getenv("LARMOR_TEST_SHOTS");
    if (!dir)
        return;
    gui_test_spin(0.3);
    char *p = g_build_filename(dir, name, NULL);
    GError *error = NULL;
    if (!larmor_widget_save_png(widget, p, &error)) {
        printf("# %s: %s\n", p, error->message);
        g_error_free(error);
    }
    g_free(p);
}

#endif
