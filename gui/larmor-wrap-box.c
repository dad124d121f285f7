/* Children are placed left to right at their natural widths; a child that
 * would pass the right edge starts a new row. Horizontally expanding
 * children share what is left of their row. Height-for-width: the height
 * is that of the rows at the width given. */
#include "larmor-wrap-box.h"

struct _LarmorWrapBox {
    GtkWidget parent_instance;
    int spacing; /* between children and between rows, px */
};

G_DEFINE_FINAL_TYPE(LarmorWrapBox, larmor_wrap_box, GTK_TYPE_WIDGET)

enum { PROP_0, PROP_SPACING, N_PROPS };
static GParamSpec *props[N_PROPS];

static int child_width(GtkWidget *c, int *min)
{
    int nat;
    gtk_widget_measure(c, GTK_ORIENTATION_HORIZONTAL, -1, min, &nat, NULL, NULL);
    return nat;
}

/* Lays the children out at width; allocates them when allocate, and
 * returns the height the rows take. */
static int layout(LarmorWrapBox *self, int width, gboolean allocate)
{
    GtkWidget *row_start = gtk_widget_get_first_child(GTK_WIDGET(self));
    int y = 0;
    while (row_start) {
        /* This row: children while their natural widths fit (at least one). */
        GtkWidget *end = row_start;
        int used = 0, height = 0, n = 0, expand = 0;
        for (GtkWidget *c = row_start; c; c = gtk_widget_get_next_sibling(c)) {
            end = gtk_widget_get_next_sibling(c);
            if (!gtk_widget_should_layout(c))
                continue;
            int min, nat = child_width(c, &min);
            int w = MIN(nat, width);
            if (n > 0 && used + self->spacing + w > width) {
                end = c;
                break;
            }
            used += (n > 0 ? self->spacing : 0) + w;
            n++;
            expand += gtk_widget_compute_expand(c, GTK_ORIENTATION_HORIZONTAL);
            int hmin, hnat;
            gtk_widget_measure(c, GTK_ORIENTATION_VERTICAL, w, &hmin, &hnat, NULL, NULL);
            height = MAX(height, hnat);
        }
        if (allocate) {
            int extra = expand > 0 ? MAX(width - used, 0) : 0, x = 0;
            for (GtkWidget *c = row_start; c != end; c = gtk_widget_get_next_sibling(c)) {
                if (!gtk_widget_should_layout(c))
                    continue;
                int min, w = MIN(child_width(c, &min), width);
                if (gtk_widget_compute_expand(c, GTK_ORIENTATION_HORIZONTAL)) {
                    int share = extra / expand--;
                    w += share;
                    extra -= share;
                }
                gtk_widget_size_allocate(c, &(GtkAllocation){ x, y, w, height }, -1);
                x += w + self->spacing;
            }
        }
        if (n > 0)
            y += (y > 0 ? self->spacing : 0) + height;
        row_start = end;
    }
    return y;
}

static GtkSizeRequestMode get_request_mode(GtkWidget *w)
{
    return GTK_SIZE_REQUEST_HEIGHT_FOR_WIDTH;
}

static void measure(GtkWidget *w, GtkOrientation o, int for_size, int *min, int *nat, int *min_base, int *nat_base)
{
    LarmorWrapBox *self = LARMOR_WRAP_BOX(w);
    *min = *nat = 0;
    if (o == GTK_ORIENTATION_HORIZONTAL) {
        /* Minimum: the widest child's minimum; natural: one row. */
        int n = 0;
        for (GtkWidget *c = gtk_widget_get_first_child(w); c; c = gtk_widget_get_next_sibling(c)) {
            if (!gtk_widget_should_layout(c))
                continue;
            int cmin, cnat = child_width(c, &cmin);
            *min = MAX(*min, cmin);
            *nat += (n++ > 0 ? self->spacing : 0) + cnat;
        }
        return;
    }
    if (for_size < 0) {
        int wmin;
        measure(w, GTK_ORIENTATION_HORIZONTAL, -1, &wmin, &for_size, NULL, NULL);
    }
    *min = *nat = layout(self, for_size, FALSE);
}

static void size_allocate(GtkWidget *w, int width, int height, int baseline)
{
    layout(LARMOR_WRAP_BOX(w), width, TRUE);
}

static void dispose(GObject *o)
{
    GtkWidget *c;
    while ((c = gtk_widget_get_first_child(GTK_WIDGET(o))))
        gtk_widget_unparent(c);
    G_OBJECT_CLASS(larmor_wrap_box_parent_class)->dispose(o);
}

static void set_property(GObject *o, guint id, const GValue *v, GParamSpec *ps)
{
    LarmorWrapBox *self = LARMOR_WRAP_BOX(o);
    if (id == PROP_SPACING) {
        self->spacing = g_value_get_int(v);
        gtk_widget_queue_resize(GTK_WIDGET(self));
    } else {
        G_OBJECT_WARN_INVALID_PROPERTY_ID(o, id, ps);
    }
}

static void get_property(GObject *o, guint id, GValue *v, GParamSpec *ps)
{
    if (id == PROP_SPACING)
        g_value_set_int(v, LARMOR_WRAP_BOX(o)->spacing);
    else
        G_OBJECT_WARN_INVALID_PROPERTY_ID(o, id, ps);
}

static void larmor_wrap_box_class_init(LarmorWrapBoxClass *klass)
{
    GObjectClass *oc = G_OBJECT_CLASS(klass);
    GtkWidgetClass *wc = GTK_WIDGET_CLASS(klass);
    oc->dispose = dispose;
    oc->set_property = set_property;
    oc->get_property = get_property;
    wc->get_request_mode = get_request_mode;
    wc->measure = measure;
    wc->size_allocate = size_allocate;
    props[PROP_SPACING] = g_param_spec_int("spacing", NULL, NULL, 0, G_MAXINT, 0,
                                           G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
    g_object_class_install_properties(oc, N_PROPS, props);
    gtk_widget_class_set_css_name(wc, "wrapbox");
}

static void larmor_wrap_box_init(LarmorWrapBox *self)
{
}

GtkWidget *larmor_wrap_box_new(int spacing)
{
    return g_object_new(LARMOR_TYPE_WRAP_BOX, "spacing", spacing, NULL);
}
