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
    gtk_text_buffer_create_tag(buf, "em", "style", PANGO_STYLE_ITALIC, NULL);
    gtk_text_buffer_create_tag(buf, "link", "underline", PANGO_UNDERLINE_SINGLE, NULL);
    gtk_text_buffer_create_tag(buf, "bullet", "left-margin", 24, "indent", -12, NULL);
}

/* Text with the tags in force (at most four, NULL-terminated). */
static void insert_tagged(GtkTextBuffer *buf, GtkTextIter *it, const char *s, gsize n, const char *const *tags)
{
    if (n == 0)
        return;
    GtkTextMark *m = gtk_text_buffer_create_mark(buf, NULL, it, TRUE);
    gtk_text_buffer_insert(buf, it, s, (int)n);
    GtkTextIter start;
    gtk_text_buffer_get_iter_at_mark(buf, &start, m);
    for (int k = 0; tags[k]; k++)
        gtk_text_buffer_apply_tag_by_name(buf, tags[k], &start, it);
    gtk_text_buffer_delete_mark(buf, m);
}

static gboolean is_word(char c)
{
    return g_ascii_isalnum(c) || (c & 0x80);
}

/* The closing delimiter d (length dn) of a span opened just before s, or
 * NULL: not after a space, and for '_' not inside a word (file_name). */
static const char *find_close(const char *s, const char *end, const char *d, gsize dn)
{
    for (const char *q = s + 1; q + dn <= end; q++) {
        if (*q == '\\') {
            q++;
            continue;
        }
        if (strncmp(q, d, dn) != 0 || q[-1] == ' ')
            continue;
        if (d[0] == '_' && q + dn < end && is_word(q[dn]))
            continue;
        if (dn == 1 && q + 1 < end && q[1] == d[0]) {
            q++; /* "**" inside an emphasis is not its end */
            continue;
        }
        return q;
    }
    return NULL;
}

/* Inline Markdown: `code`, **bold**, *emphasis* and _emphasis_, [text](url)
 * (the text), backslash escapes; the rest as it is. tags: those in force. */
static void insert_inline_n(GtkTextBuffer *buf, GtkTextIter *it, const char *s, gsize n, const char *const *tags)
{
    const char *end = s + n, *run = s;
    int nt = 0;
    while (tags[nt])
        nt++;
    const char *inner[6];
    for (int k = 0; k < nt && k < 4; k++)
        inner[k] = tags[k];
    for (const char *p = s; p < end;) {
        const char *span = NULL, *close = NULL, *tag = NULL;
        gsize dn = 0;
        if (*p == '\\' && p + 1 < end && strchr("\\`*_[]()#", p[1])) {
            insert_tagged(buf, it, run, (gsize)(p - run), tags);
            run = p + 1;
            p += 2;
            continue;
        }
        if (*p == '`') {
            const char *q = memchr(p + 1, '`', (gsize)(end - p - 1));
            if (q) {
                span = p + 1, close = q, tag = "code", dn = 1;
                insert_tagged(buf, it, run, (gsize)(p - run), tags);
                inner[nt] = tag, inner[nt + 1] = NULL;
                insert_tagged(buf, it, span, (gsize)(close - span), inner); /* verbatim */
                p = run = close + 1;
                continue;
            }
        } else if (*p == '*' && p + 1 < end && p[1] == '*' && p + 2 < end && p[2] != ' ') {
            dn = 2, tag = "bold", close = find_close(p + 1, end, "**", 2);
        } else if ((*p == '*' || *p == '_') && p + 1 < end && p[1] != ' ' && p[1] != *p &&
                   (*p == '*' || p == s || !is_word(p[-1]))) {
            dn = 1, tag = "em", close = find_close(p, end, *p == '*' ? "*" : "_", 1);
        } else if (*p == '[') {
            const char *rb = memchr(p, ']', (gsize)(end - p));
            const char *rp = rb && rb + 1 < end && rb[1] == '(' ? memchr(rb, ')', (gsize)(end - rb)) : NULL;
            if (rp) {
                insert_tagged(buf, it, run, (gsize)(p - run), tags);
                inner[nt] = "link", inner[nt + 1] = NULL;
                insert_inline_n(buf, it, p + 1, (gsize)(rb - p - 1), inner);
                p = run = rp + 1;
                continue;
            }
        }
        if (!close || nt >= 4) {
            p++;
            continue;
        }
        span = p + dn;
        insert_tagged(buf, it, run, (gsize)(p - run), tags);
        inner[nt] = tag, inner[nt + 1] = NULL;
        insert_inline_n(buf, it, span, (gsize)(close - span), inner);
        p = run = close + dn;
    }
    insert_tagged(buf, it, run, (gsize)(end - run), tags);
}

static void insert_inline(GtkTextBuffer *buf, GtkTextIter *it, const char *s, const char *line_tag)
{
    const char *tags[2] = { line_tag, NULL };
    insert_inline_n(buf, it, s, strlen(s), tags);
}

/* A paragraph or a bullet item being gathered: Markdown lines reflow, so
 * they are joined with spaces and the text view wraps them. */
typedef struct {
    GString *text;
    gboolean bullet;
    char marker[16]; /* "• ", or "3. " of a numbered list */
} Para;

static void flush(GtkTextBuffer *buf, GtkTextIter *it, Para *p)
{
    if (p->text->len == 0)
        return;
    if (p->bullet)
        gtk_text_buffer_insert_with_tags_by_name(buf, it, p->marker, -1, "bullet", NULL);
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
    Para p = { g_string_new(NULL), FALSE, "" };
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
        int digits = 0;
        while (g_ascii_isdigit(t[digits]))
            digits++;
        if (level >= 1 && level <= 6 && s[level] == ' ') {
            static const char *h[4] = { NULL, "h1", "h2", "h3" };
            flush(buf, &it, &p);
            insert_inline(buf, &it, s + level + 1, h[MIN(level, 3)]);
            gtk_text_buffer_insert(buf, &it, "\n", 1);
        } else if ((t[0] == '*' || t[0] == '-' || t[0] == '+') && t[1] == ' ') {
            flush(buf, &it, &p);
            p.bullet = TRUE;
            g_strlcpy(p.marker, "• ", sizeof p.marker);
            g_string_append(p.text, t + 2);
        } else if (digits > 0 && digits < 6 && t[digits] == '.' && t[digits + 1] == ' ') {
            flush(buf, &it, &p);
            p.bullet = TRUE;
            g_snprintf(p.marker, sizeof p.marker, "%.*s. ", digits, t);
            g_string_append(p.text, t + digits + 2);
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
    /* A header bar of its own (title and close button, also without a
     * window manager's frame), and Escape or Ctrl+W close it. */
    GtkWidget *header = gtk_header_bar_new();
    gtk_header_bar_set_show_title_buttons(GTK_HEADER_BAR(header), TRUE);
    gtk_window_set_titlebar(win, header);
    GtkEventController *keys = gtk_shortcut_controller_new();
    gtk_shortcut_controller_set_scope(GTK_SHORTCUT_CONTROLLER(keys), GTK_SHORTCUT_SCOPE_GLOBAL);
    gtk_shortcut_controller_add_shortcut(
        GTK_SHORTCUT_CONTROLLER(keys),
        gtk_shortcut_new(gtk_alternative_trigger_new(gtk_keyval_trigger_new(GDK_KEY_Escape, 0),
                                                     gtk_keyval_trigger_new(GDK_KEY_w, GDK_CONTROL_MASK)),
                         gtk_named_action_new("window.close")));
    gtk_widget_add_controller(GTK_WIDGET(win), keys);
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
