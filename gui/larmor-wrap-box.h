/* A row of controls that wraps onto further rows when it is narrower than
 * their natural widths: a toolbar that never sets its page's minimum width
 * beyond its widest control, and never hides one off the edge. */
#ifndef LARMOR_WRAP_BOX_H
#define LARMOR_WRAP_BOX_H

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define LARMOR_TYPE_WRAP_BOX (larmor_wrap_box_get_type())
G_DECLARE_FINAL_TYPE(LarmorWrapBox, larmor_wrap_box, LARMOR, WRAP_BOX, GtkWidget)

GtkWidget *larmor_wrap_box_new(int spacing);

G_END_DECLS

#endif
