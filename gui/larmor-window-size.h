/* The window's size as saved and restored: never larger than the largest
 * monitor, so a size grown once (or saved on a bigger screen) does not put
 * the window's edges and buttons off this screen. */
#ifndef LARMOR_WINDOW_SIZE_H
#define LARMOR_WINDOW_SIZE_H

#include <gtk/gtk.h>

/* Bounds *width and *height by the largest monitor of display (unchanged
 * when it has none). */
void larmor_window_size_fit(GdkDisplay *display, int *width, int *height);

#endif
