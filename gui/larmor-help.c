#include "larmor-help.h"

#include <string.h>

#include "larmor-util.h"

char *larmor_help_guide_text(void)
{
    larmor_resources_ensure();
    GBytes *b = g_resources_lookup_data(LARMOR_RESOURCE_PATH LARMOR_HELP_RESOURCE, 0, NULL);
    if (!b)
        return NULL;
    gsize n;
    const char *d = g_bytes_get_data(b, &n);
    char *t = g_strndup(d, n);
    g_bytes_unref(b);
    return t;
}

static void ensure_tags(GtkTextBuffer *buf)
{
    GtkTextTagTable *tt = gtk_text_buffer_get_tag_table(buf);
    if (gtk_text_tag_table_lookup(tt, "h1"))
        return;
    gtk_text_buffer_create_tag(buf, "h1", "weight", PANGO_WEIGHT_BOLD, "scale", 1.6, "pixels-above-lines", 6,
                               "pixels-below-lines", 6, NULL);
    gtk_text_buffer_create_tag(buf, "h2", "weight", PANGO_WEIGHT_BOLD, "scale", 1.3, "pixels-above-lines", 12,
                               "pixels-below-lines", 4, NULL);
    gtk_text_buffer_create_tag(buf, "h3", "weight", PANGO_WEIGHT_BOLD, "scale", 1.1, "pixels-above-lines", 8,
                               "pixels-below-lines", 2, NULL);
    gtk_text_buffer_create_tag(buf, "code", "family", "Monospace", NULL);
    gtk_text_buffer_create_tag(buf, "bold", "weight", PANGO_WEIGHT_BOLD, NULL);
    gtk_text_buffer_create_tag(buf, "bullet", "left-margin", 24, "indent", -12, NULL);
}

/* Inline spans: `code` and **bold**; everything else as it is. */
static void insert_inline(GtkTextBuffer *buf, GtkTextIter *it, const char *s, const char *line_tag)
{
    while (*s) {
        const char *tick = strchr(s, '`'), *star = strstr(s, "**");
        const char *next = tick && (!star || tick < star) ? tick : star;
        if (!next) {
            gtk_text_buffer_insert_with_tags_by_name(buf, it, s, -1, line_tag, NULL);
            return;
        }
        gboolean code = next == tick;
        const char *open_end = next + (code ? 1 : 2);
        const char *close = code ? strchr(open_end, '`') : strstr(open_end, "**");
        if (!close) {
            gtk_text_buffer_insert_with_tags_by_name(buf, it, s, -1, line_tag, NULL);
            return;
        }
        gtk_text_buffer_insert_with_tags_by_name(buf, it, s, (int)(next - s), line_tag, NULL);
        gtk_text_buffer_insert_with_tags_by_name(buf, it, open_end, (int)(close - open_end), code ? "code" : "bold",
                                                 line_tag, NULL);
        s = close + (code ? 1 : 2);
    }
}

/* A paragraph or a bullet item being gathered: Markdown lines reflow, so
 * they are joined with spaces and the text view wraps them. */
typedef struct {
    GString *text;
    gboolean bullet;
} Para;

static void flush(GtkTextBuffer *buf, GtkTextIter *it, Para *p)
{
    if (p->text->len == 0)
        return;
    if (p->bullet)
        gtk_text_buffer_insert_with_tags_by_name(buf, it, "• ", -1, "bullet", NULL);
    insert_inline(buf, it, p->text->str, p->bullet ? "bullet" : NULL);
    gtk_text_buffer_insert(buf, it, "\n", 1);
    g_string_truncate(p->text, 0);
    p->bullet = FALSE;
}

void larmor_help_render_markdown(GtkTextBuffer *buf, const char *markdown)
{
    ensure_tags(buf);
    gtk_text_buffer_set_text(buf, "", 0);
    GtkTextIter it;
    gtk_text_buffer_get_end_iter(buf, &it);
    char **lines = g_strsplit(markdown ? markdown : "", "\n", -1);
    gboolean fence = FALSE;
    Para p = { g_string_new(NULL), FALSE };
    for (char **l = lines; *l; l++) {
        const char *s = *l;
        if (g_str_has_prefix(s, "```")) {
            flush(buf, &it, &p);
            fence = !fence;
            continue;
        }
        if (fence) {
            gtk_text_buffer_insert_with_tags_by_name(buf, &it, s, -1, "code", NULL);
            gtk_text_buffer_insert(buf, &it, "\n", 1);
            continue;
        }
        int level = 0;
        while (s[level] == '#')
            level++;
        const char *t = s;
        while (*t == ' ')
            t++;
        if (level >= 1 && level <= 3 && s[level] == ' ') {
            static const char *h[4] = { NULL, "h1", "h2", "h3" };
            flush(buf, &it, &p);
            insert_inline(buf, &it, s + level + 1, h[level]);
            gtk_text_buffer_insert(buf, &it, "\n", 1);
        } else if ((s[0] == '*' || s[0] == '-') && s[1] == ' ') {
            flush(buf, &it, &p);
            p.bullet = TRUE;
            g_string_append(p.text, s + 2);
        } else if (*t == '\0') {
            flush(buf, &it, &p);
            gtk_text_buffer_insert(buf, &it, "\n", 1);
        } else {
            if (p.text->len)
                g_string_append_c(p.text, ' ');
            g_string_append(p.text, t);
        }
    }
    flush(buf, &it, &p);
    g_string_free(p.text, TRUE);
    g_strfreev(lines);
}

GtkWindow *larmor_help_window_new(GtkWindow *parent)
{
    GtkWindow *win = GTK_WINDOW(gtk_window_new());
    gtk_window_set_title(win, "Larmor User Guide");
    gtk_window_set_default_size(win, 760, 820);
    if (parent) {
        gtk_window_set_transient_for(win, parent);
        gtk_window_set_destroy_with_parent(win, TRUE);
    }
    GtkWidget *view = gtk_text_view_new();
    gtk_text_view_set_editable(GTK_TEXT_VIEW(view), FALSE);
    gtk_text_view_set_cursor_visible(GTK_TEXT_VIEW(view), FALSE);
    gtk_text_view_set_wrap_mode(GTK_TEXT_VIEW(view), GTK_WRAP_WORD_CHAR);
    gtk_text_view_set_left_margin(GTK_TEXT_VIEW(view), 18);
    gtk_text_view_set_right_margin(GTK_TEXT_VIEW(view), 18);
    gtk_text_view_set_top_margin(GTK_TEXT_VIEW(view), 12);
    gtk_text_view_set_bottom_margin(GTK_TEXT_VIEW(view), 12);
    char *md = larmor_help_guide_text();
    larmor_help_render_markdown(gtk_text_view_get_buffer(GTK_TEXT_VIEW(view)),
                                md ? md : "The user guide is missing from this build.");
    g_free(md);
    GtkWidget *scroll = gtk_scrolled_window_new();
    gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scroll), view);
    gtk_window_set_child(win, scroll);
    g_object_set_data(G_OBJECT(win), "larmor-help-view", view);
    return win;
}

GtkTextView *larmor_help_window_get_view(GtkWindow *help)
{
    return g_object_get_data(G_OBJECT(help), "larmor-help-view");
}
