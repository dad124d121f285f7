/* Small helpers shared by the GUI classes: library errors as GErrors, the
 * GResource, number formatting, widget rendering for PNG export and tests. */
#ifndef LARMOR_UTIL_H
#define LARMOR_UTIL_H

#include <gtk/gtk.h>

#include "larmor.h"

G_BEGIN_DECLS

#define LARMOR_APP_ID "io.github.larmor.Larmor"
#define LARMOR_RESOURCE_PATH "/io/github/larmor/Larmor"

/* Errors from the library keep their lm_code as the GError code. */
#define LARMOR_ERROR (larmor_error_quark())
GQuark larmor_error_quark(void);
void larmor_set_error(GError **error, const lm_error *err);

/* Registers the compiled GResource once (templates need it at class_init). */
void larmor_resources_ensure(void);

/* "1.00e-03"-style for lambda; "12.3 s" / "850 ms" for times; "—" for NaN. */
char *larmor_format_lambda(double lambda);
char *larmor_format_seconds(double s);
char *larmor_format_number(const char *fmt, double v);
/* A slice position, 0-based like every voxel index Larmor shows (the
 * cursor read-out, NIfTI, FSLeyes): "z 12 (0–31)". */
char *larmor_format_slice(int axis, long long index, long long count);

/* Renders a realised widget through its native's renderer, as on screen. */
GdkTexture *larmor_widget_render(GtkWidget *widget);
gboolean larmor_widget_save_png(GtkWidget *widget, const char *path, GError **error);

/* Sets a GtkLabel's text only when it changed (avoids relayout per frame). */
void larmor_label_set_text(GtkLabel *label, const char *text);

/* Binds a rectangle and an ellipse toggle to a LarmorViewState's
 * "roi-tool" both ways: at most one is active; none means no tool. */
void larmor_bind_roi_tool(GObject *state, GtkToggleButton *rect, GtkToggleButton *ellipse);
/* The same for the line-profile tool (LARMOR_ROI_LINE): one of the three. */
void larmor_bind_line_tool(GObject *state, GtkToggleButton *line);

G_END_DECLS

#endif
