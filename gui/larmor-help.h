/* The user guide (docs/user-guide.md, compiled into the GResource) in a
 * window of its own: F1 / "User Guide" in the main menu. The Markdown is
 * shown as formatted text in a GtkTextView -- headings, bullets and
 * numbered items, `code`, **bold**, *emphasis* and links' text -- with no
 * browser or web view behind it. A header bar, Escape and Ctrl+W close it. */
#ifndef LARMOR_HELP_H
#define LARMOR_HELP_H

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define LARMOR_HELP_RESOURCE "/docs/user-guide.md"

/* The guide's Markdown from the resource (NULL if missing); g_free it. */
char *larmor_help_guide_text(void);

/* Fills buf with the Markdown shown as text with tags (its own tag table
 * entries "h1", "h2", "h3", "code", "bold", "em", "link", "bullet" are
 * created once). */
void larmor_help_render_markdown(GtkTextBuffer *buf, const char *markdown);

/* A new window showing the guide, transient for parent (may be NULL). */
GtkWindow *larmor_help_window_new(GtkWindow *parent);

/* The text view inside a window made by larmor_help_window_new. */
GtkTextView *larmor_help_window_get_view(GtkWindow *help);

G_END_DECLS

#endif
