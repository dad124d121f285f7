#include "larmor-util.h"

#include <math.h>

#include "larmor-resources.h"
#include "larmor-roi.h"

G_DEFINE_QUARK(larmor-error-quark, larmor_error)

void larmor_set_error(GError **error, const lm_error *err)
{
    g_set_error_literal(error, LARMOR_ERROR, err ? (int)err->code : LM_ERR_INTERNAL,
                        err && err->msg[0] ? err->msg : "unknown error");
}

void larmor_resources_ensure(void)
{
    static gsize done;
    if (g_once_init_enter(&done)) {
        larmor_register_resource();
        g_once_init_leave(&done, 1);
    }
}

char *larmor_format_lambda(double lambda)
{
    if (isnan(lambda))
        return g_strdup("—");
    if (lambda == 0)
        return g_strdup("0");
    return g_strdup_printf("%.2g", lambda);
}

char *larmor_format_seconds(double s)
{
    if (isnan(s) || s < 0)
        return g_strdup("—");
    if (s < 1)
        return g_strdup_printf("%.0f ms", s * 1e3);
    if (s < 120)
        return g_strdup_printf("%.2f s", s);
    return g_strdup_printf("%d min %02d s", (int)(s / 60), (int)fmod(s, 60));
}

char *larmor_format_number(const char *fmt, double v)
{
    if (isnan(v))
        return g_strdup("—");
    if (isinf(v))
        return g_strdup(v > 0 ? "∞" : "−∞");
    return g_strdup_printf(fmt, v);
}

char *larmor_format_slice(int axis, long long index, long long count)
{
    static const char names[3] = { 'x', 'y', 'z' };
    return g_strdup_printf("%c %lld (0–%lld)", axis >= 0 && axis < 3 ? names[axis] : '?', index,
                           count > 0 ? count - 1 : 0);
}

GdkTexture *larmor_widget_render(GtkWidget *widget)
{
    GtkNative *native = gtk_widget_get_native(widget);
    if (!native || !gtk_widget_get_realized(widget))
        return NULL;
    GskRenderer *renderer = gtk_native_get_renderer(native);
    int w = gtk_widget_get_width(widget), h = gtk_widget_get_height(widget);
    if (!renderer || w <= 0 || h <= 0)
        return NULL;

    GdkPaintable *paintable = gtk_widget_paintable_new(widget);
    GtkSnapshot *snapshot = gtk_snapshot_new();
    /* Paint the window background first: the widget alone may be transparent. */
    GtkStyleContext *ctx = gtk_widget_get_style_context(GTK_WIDGET(native));
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    GdkRGBA bg;
    if (!gtk_style_context_lookup_color(ctx, "window_bg_color", &bg))
        bg = (GdkRGBA){ 0.14f, 0.14f, 0.14f, 1.0f };
    G_GNUC_END_IGNORE_DEPRECATIONS
    gtk_snapshot_append_color(snapshot, &bg, &GRAPHENE_RECT_INIT(0, 0, w, h));
    gdk_paintable_snapshot(paintable, snapshot, w, h);
    GskRenderNode *node = gtk_snapshot_free_to_node(snapshot);
    GdkTexture *tex = NULL;
    if (node) {
        tex = gsk_renderer_render_texture(renderer, node, &GRAPHENE_RECT_INIT(0, 0, w, h));
        gsk_render_node_unref(node);
    }
    g_object_unref(paintable);
    return tex;
}

gboolean larmor_widget_save_png(GtkWidget *widget, const char *path, GError **error)
{
    GdkTexture *tex = larmor_widget_render(widget);
    if (!tex) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "%s: nothing to render (widget not shown)",
                    path);
        return FALSE;
    }
    /* Atomic: render to bytes, then g_file_set_contents (temp file + rename). */
    GBytes *png = gdk_texture_save_to_png_bytes(tex);
    gsize len;
    const char *data = g_bytes_get_data(png, &len);
    gboolean ok = g_file_set_contents(path, data, (gssize)len, error);
    g_bytes_unref(png);
    g_object_unref(tex);
    return ok;
}

void larmor_label_set_text(GtkLabel *label, const char *text)
{
    if (g_strcmp0(gtk_label_get_text(label), text) != 0)
        gtk_label_set_text(label, text);
}

/* roi-tool (int) -> active: this toggle's shape is the tool. */
static gboolean roi_tool_to_active(GBinding *b, const GValue *from, GValue *to, gpointer shape)
{
    g_value_set_boolean(to, g_value_get_int(from) == GPOINTER_TO_INT(shape));
    return TRUE;
}

/* active -> roi-tool: on picks this shape; off clears it only when it was
 * this shape (the other toggle turning on already replaced it). */
static gboolean roi_active_to_tool(GBinding *b, const GValue *from, GValue *to, gpointer shape)
{
    GObject *state = g_binding_dup_source(b);
    int tool = 0;
    if (state) {
        g_object_get(state, "roi-tool", &tool, NULL);
        g_object_unref(state);
    }
    if (g_value_get_boolean(from))
        g_value_set_int(to, GPOINTER_TO_INT(shape));
    else if (tool == GPOINTER_TO_INT(shape))
        g_value_set_int(to, 0);
    else
        return FALSE;
    return TRUE;
}

void larmor_bind_roi_tool(GObject *state, GtkToggleButton *rect, GtkToggleButton *ellipse)
{
    GtkToggleButton *t[2] = { rect, ellipse };
    for (int i = 0; i < 2; i++)
        g_object_bind_property_full(state, "roi-tool", t[i], "active", G_BINDING_BIDIRECTIONAL | G_BINDING_SYNC_CREATE,
                                    roi_tool_to_active, roi_active_to_tool, GINT_TO_POINTER(i + 1), NULL);
}

void larmor_bind_line_tool(GObject *state, GtkToggleButton *line)
{
    g_object_bind_property_full(state, "roi-tool", line, "active", G_BINDING_BIDIRECTIONAL | G_BINDING_SYNC_CREATE,
                                roi_tool_to_active, roi_active_to_tool, GINT_TO_POINTER(LARMOR_ROI_LINE), NULL);
}
