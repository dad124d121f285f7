/* Wheel over a slider or spin button in a scrolled panel scrolls the panel:
 * the value changes by the wheel only while the control has the focus. */
#ifndef LARMOR_SCROLL_GUARD_H
#define LARMOR_SCROLL_GUARD_H

#include <gtk/gtk.h>

/* Guards every GtkRange and GtkSpinButton under root (root included);
 * controls added later need their own call. Guarding twice is harmless. */
void larmor_scroll_guard_attach(GtkWidget *root);

#endif
