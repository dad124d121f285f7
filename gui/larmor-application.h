/* The GtkApplication: app actions (quit, about, dark style), the style
 * sheet, preferences, and the command line (--problem, --screenshot FILE
 * for the README's picture, made after a real B32 reconstruction). */
#ifndef LARMOR_APPLICATION_H
#define LARMOR_APPLICATION_H

#include <gtk/gtk.h>

#include "larmor-settings.h"

G_BEGIN_DECLS

#define LARMOR_TYPE_APPLICATION (larmor_application_get_type())
G_DECLARE_FINAL_TYPE(LarmorApplication, larmor_application, LARMOR, APPLICATION, GtkApplication)

LarmorApplication *larmor_application_new(void);
/* NULL in screenshot mode (nothing remembered) and before startup. */
LarmorSettings *larmor_application_get_settings(LarmorApplication *self);
/* Non-zero when --screenshot failed. */
int larmor_application_get_exit_status(LarmorApplication *self);

G_END_DECLS

#endif
