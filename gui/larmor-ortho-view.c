#include "larmor-ortho-view.h"

#include <math.h>
#include <string.h>

#include "larmor-time-bar.h"
#include "larmor-time-curve.h"
#include "larmor-traj-plot.h"
#include "larmor-util.h"
#include "larmor-wrap-box.h"

struct _LarmorOrthoView {
    GtkWidget parent_instance;

    GtkDropDown *volume_dropdown;
    GtkDropDown *mode_dropdown;
    GtkDropDown *cmap_dropdown;
    GtkAdjustment *window_adjustment;
    GtkAdjustment *level_adjustment;
    GtkWidget *auto_button;
    GtkWidget *reset_button;
    GtkWidget *grid;
    GtkWidget *cell0, *cell1, *cell2, *cell3;
    LarmorTrajPlot *traj_plot;
    GtkLabel *traj_caption;
    GtkLabel *status_label;
    LarmorTimeBar *time_bar;
    LarmorTimeCurve *time_curve;
    GtkToggleButton *line_toggle;
    GtkToggleButton *roi_rect_toggle, *roi_ellipse_toggle;

    GtkWidget *toolbar;
    GtkDropDown *overlay_dropdown;
    LarmorVolume *overlay_fieldmap, *overlay_influence;
    LarmorOverlayKind offered[3]; /* the overlay menu's items, in order (no field map: not listed) */
    guint n_offered;

    LarmorViewState *state;
    LarmorSliceView *views[3];
    GtkScale *scales[3];
    LarmorVolume *volume;
};

G_DEFINE_FINAL_TYPE(LarmorOrthoView, larmor_ortho_view, GTK_TYPE_WIDGET)

char *larmor_format_voxel(LarmorVolume *volume, const int64_t ijk[3])
{
    return larmor_format_voxel_frame(volume, ijk, 0);
}

char *larmor_format_voxel_frame(LarmorVolume *volume, const int64_t ijk[3], int64_t t)
{
    if (!volume)
        return g_strdup(" ");
    double mm[3];
    larmor_volume_voxel_to_mm(volume, ijk, mm);
    lm_cfloat v = larmor_volume_value_at_frame(volume, ijk, t);
    char *frame = larmor_format_frame(volume, t);
    char *s = g_strdup_printf("x %3lld  y %3lld  z %3lld%s%s   (%+7.1f, %+7.1f, %+7.1f) mm   |v| %.4g  ∠ %+.1f°   re %.4g  im %.4g",
                              (long long)ijk[0], (long long)ijk[1], (long long)ijk[2], frame ? "  " : "",
                              frame ? frame : "", mm[0], mm[1], mm[2], cabsf(v), cargf(v) * 180 / G_PI, crealf(v),
                              cimagf(v));
    g_free(frame);
    return s;
}

static void show_status(LarmorOrthoView *self, const int64_t ijk[3], gboolean hovering)
{
    char *t = larmor_format_voxel_frame(self->volume, ijk, larmor_view_state_get_frame(self->state));
    if (self->volume && !hovering) {
        char *c = g_strdup_printf("Cursor  %s", t);
        g_free(t);
        t = c;
    }
    larmor_label_set_text(self->status_label, t);
    g_free(t);
}

static void on_hover(LarmorSliceView *view, gboolean inside, int x, int y, int z, LarmorOrthoView *self)
{
    int64_t ijk[3] = { x, y, z };
    if (!inside)
        larmor_view_state_get_cursor(self->state, ijk);
    show_status(self, ijk, inside);
}

static void on_cursor(LarmorViewState *state, GParamSpec *pspec, LarmorOrthoView *self)
{
    int64_t ijk[3];
    larmor_view_state_get_cursor(state, ijk);
    show_status(self, ijk, FALSE);
}

void larmor_ortho_view_auto_window(LarmorOrthoView *self)
{
    if (!self->volume)
        return;
    double w, l;
    larmor_volume_auto_window(self->volume, larmor_view_state_get_mode(self->state), &w, &l);
    gtk_adjustment_set_step_increment(self->window_adjustment, w / 100);
    gtk_adjustment_set_page_increment(self->window_adjustment, w / 10);
    gtk_adjustment_set_step_increment(self->level_adjustment, w / 100);
    gtk_adjustment_set_page_increment(self->level_adjustment, w / 10);
    larmor_view_state_set_window_level(self->state, w, l);
}

void larmor_ortho_view_reset(LarmorOrthoView *self)
{
    larmor_view_state_reset_zoom(self->state);
    larmor_ortho_view_auto_window(self);
}

/* A 2D image has nothing to show across it: the axial view takes the
 * left column and the trajectory the right one. */
static void set_flat(LarmorOrthoView *self, gboolean flat)
{
    GtkLayoutManager *lm = gtk_widget_get_layout_manager(self->grid);
    GtkGridLayoutChild *axial = GTK_GRID_LAYOUT_CHILD(gtk_layout_manager_get_layout_child(lm, self->cell0));
    GtkGridLayoutChild *traj = GTK_GRID_LAYOUT_CHILD(gtk_layout_manager_get_layout_child(lm, self->cell3));
    gtk_widget_set_visible(self->cell1, !flat);
    gtk_widget_set_visible(self->cell2, !flat);
    gtk_grid_layout_child_set_row_span(axial, flat ? 2 : 1);
    gtk_grid_layout_child_set_row(traj, flat ? 0 : 1);
    gtk_grid_layout_child_set_row_span(traj, flat ? 2 : 1);
}

/* Each image keeps its own window/level per display mode, set from its
 * own histogram the first time it is shown: one image's window never
 * carries over to the next (a run on another scale would look black or
 * white). Kept on the volume itself, so it goes when the image goes. */
typedef struct {
    double window, level;
} SavedWindow;

static const char *saved_key(LarmorMode mode)
{
    static const char *keys[] = { "larmor-wl-magnitude", "larmor-wl-phase", "larmor-wl-real", "larmor-wl-imaginary" };
    return (unsigned)mode < G_N_ELEMENTS(keys) ? keys[mode] : keys[0];
}

static void save_window(LarmorOrthoView *self)
{
    if (!self->volume)
        return;
    SavedWindow *w = g_new(SavedWindow, 1);
    w->window = larmor_view_state_get_window(self->state);
    w->level = larmor_view_state_get_level(self->state);
    g_object_set_data_full(G_OBJECT(self->volume), saved_key(larmor_view_state_get_mode(self->state)), w, g_free);
}

/* The image's own window: the one it was last shown with, else automatic. */
static void restore_window(LarmorOrthoView *self)
{
    if (!self->volume)
        return;
    SavedWindow *w = g_object_get_data(G_OBJECT(self->volume), saved_key(larmor_view_state_get_mode(self->state)));
    if (!w) {
        larmor_ortho_view_auto_window(self);
        return;
    }
    gtk_adjustment_set_step_increment(self->window_adjustment, w->window / 100);
    gtk_adjustment_set_page_increment(self->window_adjustment, w->window / 10);
    gtk_adjustment_set_step_increment(self->level_adjustment, w->window / 100);
    gtk_adjustment_set_page_increment(self->level_adjustment, w->window / 10);
    larmor_view_state_set_window_level(self->state, w->window, w->level);
}

gboolean larmor_ortho_view_get_image_window(LarmorOrthoView *self, LarmorVolume *volume, LarmorMode mode,
                                            double *window, double *level)
{
    if (volume && volume == self->volume && mode == larmor_view_state_get_mode(self->state)) {
        *window = larmor_view_state_get_window(self->state);
        *level = larmor_view_state_get_level(self->state);
        return TRUE;
    }
    SavedWindow *w = volume ? g_object_get_data(G_OBJECT(volume), saved_key(mode)) : NULL;
    if (w) {
        *window = w->window;
        *level = w->level;
    }
    return w != NULL;
}

void larmor_ortho_view_set_image_window(LarmorOrthoView *self, LarmorVolume *volume, LarmorMode mode,
                                        double window, double level)
{
    if (!volume || !(window > 0) || !isfinite(level))
        return;
    SavedWindow *w = g_new(SavedWindow, 1);
    w->window = window;
    w->level = level;
    g_object_set_data_full(G_OBJECT(volume), saved_key(mode), w, g_free);
    if (volume == self->volume && mode == larmor_view_state_get_mode(self->state))
        restore_window(self);
}

static void apply_overlay(LarmorOrthoView *self);

static void set_volume(LarmorOrthoView *self, LarmorVolume *volume)
{
    if (self->volume == volume)
        return;
    save_window(self);
    g_set_object(&self->volume, volume);
    if (volume) {
        const lm_volume *v = larmor_volume_get_data(volume);
        /* Slider ranges first: the bindings would otherwise clamp the new cursor. */
        for (int o = 0; o < 3; o++) {
            int u, vv, n;
            larmor_orientation_axes(o, &u, &vv, &n);
            GtkAdjustment *adj = gtk_range_get_adjustment(GTK_RANGE(self->scales[o]));
            gtk_adjustment_set_upper(adj, (double)MAX(v->dims[n] - 1, 1));
            gtk_widget_set_visible(GTK_WIDGET(self->scales[o]), v->dims[n] > 1);
        }
        larmor_view_state_set_dims(self->state, v->dims);
    }
    for (int o = 0; o < 3; o++)
        larmor_slice_view_set_volume(self->views[o], volume);
    larmor_time_bar_set_volume(self->time_bar, volume);
    larmor_time_curve_set_volume(self->time_curve, volume);
    set_flat(self, volume && larmor_volume_get_data(volume)->dims[2] == 1);
    restore_window(self);
    if (self->overlay_dropdown)
        apply_overlay(self);
    int64_t ijk[3];
    larmor_view_state_get_cursor(self->state, ijk);
    show_status(self, ijk, FALSE);
}

/* --- overlays ----------------------------------------------------------- */

void larmor_overlay_style_for(LarmorOverlayKind kind, LarmorVolume *image, LarmorOverlayStyle *st)
{
    *st = (LarmorOverlayStyle){ .colormap = LARMOR_COLORMAP_HOT, .lo = 0, .hi = 1, .opacity = 0.85, .ramp = 1,
                                .mode = LARMOR_MODE_MAGNITUDE };
    if (!image)
        return;
    const lm_volume *v = larmor_volume_get_data(image);
    if (kind == LARMOR_OVERLAY_FIELDMAP) {
        /* Signed Hz: symmetric about 0 so that 0 Hz is white. */
        double m = 0;
        for (int64_t i = 0; i < lm_volume_count(v); i++)
            m = MAX(m, fabs(crealf(v->data[i])));
        *st = (LarmorOverlayStyle){ .colormap = LARMOR_COLORMAP_DIVERGING, .lo = -MAX(m, 1e-6), .hi = MAX(m, 1e-6),
                                    .opacity = 0.55, .ramp = 0, .mode = LARMOR_MODE_REAL };
    } else {
        double w, l;
        larmor_volume_auto_window(image, LARMOR_MODE_MAGNITUDE, &w, &l);
        st->hi = l + w / 2 > 0 ? l + w / 2 : 1;
    }
}

static const char *const overlay_labels[] = { "No overlay", "Field map (Hz)", "Prior influence" };

static LarmorOverlayKind selected_overlay(LarmorOrthoView *self)
{
    guint i = gtk_drop_down_get_selected(self->overlay_dropdown);
    return i < self->n_offered ? self->offered[i] : LARMOR_OVERLAY_NONE;
}

/* The menu lists "Field map (Hz)" only while the data have one; the
 * overlay shown stays when it is still listed, else there is none. */
static void offer_overlays(LarmorOrthoView *self, gboolean fieldmap)
{
    LarmorOverlayKind keep = self->n_offered ? selected_overlay(self) : LARMOR_OVERLAY_NONE;
    LarmorOverlayKind want[3];
    guint n = 0;
    want[n++] = LARMOR_OVERLAY_NONE;
    if (fieldmap)
        want[n++] = LARMOR_OVERLAY_FIELDMAP;
    want[n++] = LARMOR_OVERLAY_INFLUENCE;
    if (n == self->n_offered && memcmp(want, self->offered, n * sizeof *want) == 0)
        return;
    memcpy(self->offered, want, sizeof want);
    self->n_offered = n;
    const char *labels[4] = { NULL };
    guint sel = 0;
    for (guint i = 0; i < n; i++) {
        labels[i] = overlay_labels[want[i]];
        if (want[i] == keep)
            sel = i;
    }
    GtkStringList *model = gtk_string_list_new(labels);
    g_signal_handlers_block_by_func(self->overlay_dropdown, apply_overlay, self);
    gtk_drop_down_set_model(self->overlay_dropdown, G_LIST_MODEL(model));
    gtk_drop_down_set_selected(self->overlay_dropdown, sel);
    g_signal_handlers_unblock_by_func(self->overlay_dropdown, apply_overlay, self);
    g_object_unref(model);
}

gboolean larmor_ortho_view_offers_overlay(LarmorOrthoView *self, LarmorOverlayKind kind)
{
    for (guint i = 0; i < self->n_offered; i++)
        if (self->offered[i] == kind)
            return TRUE;
    return FALSE;
}

static void apply_overlay(LarmorOrthoView *self)
{
    LarmorOverlayKind kind = selected_overlay(self);
    /* The prior influence is the shown image's own unless one was given. */
    LarmorVolume *influence = self->overlay_influence;
    if (!influence && self->volume)
        influence = g_object_get_data(G_OBJECT(self->volume), LARMOR_PRIOR_INFLUENCE_KEY);
    LarmorVolume *img = kind == LARMOR_OVERLAY_FIELDMAP ? self->overlay_fieldmap
                        : kind == LARMOR_OVERLAY_INFLUENCE ? influence
                                                           : NULL;
    LarmorOverlayStyle st;
    larmor_overlay_style_for(kind, img, &st);
    for (int o = 0; o < 3; o++)
        larmor_slice_view_set_overlay(self->views[o], img, &st, kind == LARMOR_OVERLAY_FIELDMAP ? "Hz" : "|Δ|");
    const char *tip = kind == LARMOR_OVERLAY_FIELDMAP && !img ? "These data have no field map (menu → Open Field Map…)"
                      : kind == LARMOR_OVERLAY_INFLUENCE && !img
                          ? "The image shown has no prior influence: tick “Prior influence” and reconstruct"
                          : "Overlay: the data's field map (Hz) or what the prior changed in the image shown";
    gtk_widget_set_tooltip_text(GTK_WIDGET(self->overlay_dropdown), tip);
}

void larmor_ortho_view_set_overlay_images(LarmorOrthoView *self, LarmorVolume *fieldmap, LarmorVolume *influence)
{
    g_set_object(&self->overlay_fieldmap, fieldmap);
    g_set_object(&self->overlay_influence, influence);
    offer_overlays(self, fieldmap != NULL);
    apply_overlay(self);
}

void larmor_ortho_view_set_overlay(LarmorOrthoView *self, LarmorOverlayKind kind)
{
    guint sel = 0; /* not listed: none */
    for (guint i = 0; i < self->n_offered; i++)
        if (self->offered[i] == kind)
            sel = i;
    gtk_drop_down_set_selected(self->overlay_dropdown, sel);
    apply_overlay(self);
}

LarmorOverlayKind larmor_ortho_view_get_overlay(LarmorOrthoView *self)
{
    return selected_overlay(self);
}

LarmorVolume *larmor_ortho_view_get_listed_volume(LarmorOrthoView *self)
{
    gpointer item = gtk_drop_down_get_selected_item(self->volume_dropdown);
    return item ? LARMOR_VOLUME(item) : NULL;
}

static void on_volume_selected(GtkDropDown *dd, GParamSpec *pspec, LarmorOrthoView *self)
{
    gpointer item = gtk_drop_down_get_selected_item(dd);
    set_volume(self, item ? LARMOR_VOLUME(item) : NULL);
}

static void on_mode(GtkDropDown *dd, GParamSpec *pspec, LarmorOrthoView *self)
{
    /* A new mode means a new value range: the image's own for that mode. */
    save_window(self);
    larmor_view_state_set_mode(self->state, gtk_drop_down_get_selected(dd));
    restore_window(self);
}

static void on_auto(GtkButton *b, LarmorOrthoView *self)
{
    larmor_ortho_view_auto_window(self);
}

static void on_reset(GtkButton *b, LarmorOrthoView *self)
{
    larmor_ortho_view_reset(self);
}

GtkWidget *larmor_ortho_view_new(void)
{
    return g_object_new(LARMOR_TYPE_ORTHO_VIEW, NULL);
}

void larmor_ortho_view_set_model(LarmorOrthoView *self, GListModel *volumes)
{
    gtk_drop_down_set_model(self->volume_dropdown, volumes);
}

void larmor_ortho_view_show_volume(LarmorOrthoView *self, LarmorVolume *volume)
{
    GListModel *m = gtk_drop_down_get_model(self->volume_dropdown);
    for (guint i = 0; m && i < g_list_model_get_n_items(m); i++) {
        gpointer item = g_list_model_get_item(m, i);
        g_object_unref(item);
        if (item == volume) {
            gtk_drop_down_set_selected(self->volume_dropdown, i);
            set_volume(self, volume);
            return;
        }
    }
    /* Not listed (or none): the menu names nothing rather than an old image. */
    gtk_drop_down_set_selected(self->volume_dropdown, GTK_INVALID_LIST_POSITION);
    set_volume(self, volume);
}

LarmorVolume *larmor_ortho_view_get_volume(LarmorOrthoView *self)
{
    return self->volume;
}

LarmorViewState *larmor_ortho_view_get_state(LarmorOrthoView *self)
{
    return self->state;
}

LarmorSliceView *larmor_ortho_view_get_slice_view(LarmorOrthoView *self, LarmorOrientation o)
{
    return self->views[o];
}

GtkWidget *larmor_ortho_view_get_grid(LarmorOrthoView *self)
{
    return self->grid;
}

LarmorTimeBar *larmor_ortho_view_get_time_bar(LarmorOrthoView *self)
{
    return self->time_bar;
}

LarmorTimeCurve *larmor_ortho_view_get_time_curve(LarmorOrthoView *self)
{
    return self->time_curve;
}

GtkWidget *larmor_ortho_view_get_toolbar(LarmorOrthoView *self)
{
    return self->toolbar;
}

void larmor_ortho_view_set_traj(LarmorOrthoView *self, const lm_traj *traj, const int64_t matrix[3],
                                const char *caption)
{
    larmor_traj_plot_set_traj(self->traj_plot, traj, matrix);
    gtk_label_set_text(self->traj_caption, caption ? caption : "");
}

static void larmor_ortho_view_dispose(GObject *object)
{
    LarmorOrthoView *self = LARMOR_ORTHO_VIEW(object);
    if (self->state)
        g_signal_handlers_disconnect_by_data(self->state, self);
    gtk_widget_dispose_template(GTK_WIDGET(object), LARMOR_TYPE_ORTHO_VIEW);
    /* The template's unnamed top box is not cleared by dispose_template in 4.8. */
    for (GtkWidget *c; (c = gtk_widget_get_first_child(GTK_WIDGET(object)));)
        gtk_widget_unparent(c);
    g_clear_object(&self->volume);
    g_clear_object(&self->state);
    g_clear_object(&self->overlay_fieldmap);
    g_clear_object(&self->overlay_influence);
    G_OBJECT_CLASS(larmor_ortho_view_parent_class)->dispose(object);
}

static void larmor_ortho_view_class_init(LarmorOrthoViewClass *klass)
{
    GtkWidgetClass *wc = GTK_WIDGET_CLASS(klass);
    G_OBJECT_CLASS(klass)->dispose = larmor_ortho_view_dispose;
    g_type_ensure(LARMOR_TYPE_TRAJ_PLOT);
    larmor_resources_ensure();
    g_type_ensure(LARMOR_TYPE_WRAP_BOX); /* the toolbar */
    gtk_widget_class_set_template_from_resource(wc, LARMOR_RESOURCE_PATH "/ui/larmor-ortho-view.ui");
    gtk_widget_class_set_layout_manager_type(wc, GTK_TYPE_BIN_LAYOUT);
#define CHILD(name) gtk_widget_class_bind_template_child(wc, LarmorOrthoView, name)
    CHILD(toolbar);
    CHILD(volume_dropdown);
    CHILD(mode_dropdown);
    CHILD(cmap_dropdown);
    CHILD(window_adjustment);
    CHILD(level_adjustment);
    CHILD(auto_button);
    CHILD(reset_button);
    CHILD(grid);
    CHILD(cell0);
    CHILD(cell1);
    CHILD(cell2);
    CHILD(cell3);
    CHILD(traj_plot);
    CHILD(traj_caption);
    CHILD(status_label);
    CHILD(roi_rect_toggle);
    CHILD(roi_ellipse_toggle);
    CHILD(line_toggle);
#undef CHILD
}

static void larmor_ortho_view_init(LarmorOrthoView *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    self->state = larmor_view_state_new();

    gtk_drop_down_set_expression(self->volume_dropdown,
                                 gtk_property_expression_new(LARMOR_TYPE_VOLUME, NULL, "name"));

    GtkWidget *cells[3] = { self->cell0, self->cell1, self->cell2 };
    static const char *props[3] = { "cursor-z", "cursor-y", "cursor-x" }; /* normal axis per orientation */
    for (int o = 0; o < 3; o++) {
        self->views[o] = LARMOR_SLICE_VIEW(larmor_slice_view_new(o));
        larmor_slice_view_set_state(self->views[o], self->state);
        larmor_slice_view_set_placeholder(self->views[o], "No image");
        g_signal_connect(self->views[o], "hover", G_CALLBACK(on_hover), self);
        gtk_box_append(GTK_BOX(cells[o]), GTK_WIDGET(self->views[o]));

        self->scales[o] = GTK_SCALE(gtk_scale_new_with_range(GTK_ORIENTATION_HORIZONTAL, 0, 1, 1));
        gtk_scale_set_draw_value(self->scales[o], FALSE);
        gtk_range_set_round_digits(GTK_RANGE(self->scales[o]), 0);
        gtk_widget_set_tooltip_text(GTK_WIDGET(self->scales[o]), "Slice (scroll or arrow keys in the view)");
        gtk_widget_add_css_class(GTK_WIDGET(self->scales[o]), "slice-slider");
        gtk_box_append(GTK_BOX(cells[o]), GTK_WIDGET(self->scales[o]));
        g_object_bind_property(self->state, props[o], gtk_range_get_adjustment(GTK_RANGE(self->scales[o])),
                               "value", G_BINDING_BIDIRECTIONAL | G_BINDING_SYNC_CREATE);
    }

    g_object_bind_property(self->state, "window", self->window_adjustment, "value",
                           G_BINDING_BIDIRECTIONAL | G_BINDING_SYNC_CREATE);
    g_object_bind_property(self->state, "level", self->level_adjustment, "value",
                           G_BINDING_BIDIRECTIONAL | G_BINDING_SYNC_CREATE);
    g_object_bind_property(self->state, "colormap", self->cmap_dropdown, "selected",
                           G_BINDING_BIDIRECTIONAL | G_BINDING_SYNC_CREATE);
    larmor_bind_roi_tool(G_OBJECT(self->state), self->roi_rect_toggle, self->roi_ellipse_toggle);
    larmor_bind_line_tool(G_OBJECT(self->state), self->line_toggle);
    g_signal_connect(self->mode_dropdown, "notify::selected", G_CALLBACK(on_mode), self);
    g_signal_connect(self->volume_dropdown, "notify::selected-item", G_CALLBACK(on_volume_selected), self);
    g_signal_connect(self->auto_button, "clicked", G_CALLBACK(on_auto), self);
    g_signal_connect(self->reset_button, "clicked", G_CALLBACK(on_reset), self);
    g_signal_connect(self->state, "notify::cursor-x", G_CALLBACK(on_cursor), self);
    g_signal_connect(self->state, "notify::cursor-y", G_CALLBACK(on_cursor), self);
    g_signal_connect(self->state, "notify::cursor-z", G_CALLBACK(on_cursor), self);
    g_signal_connect(self->state, "notify::frame", G_CALLBACK(on_cursor), self);

    /* Time controls of dynamic images, between the views and the status line. */
    self->time_bar = LARMOR_TIME_BAR(larmor_time_bar_new(self->state));
    gtk_widget_insert_before(GTK_WIDGET(self->time_bar), gtk_widget_get_parent(GTK_WIDGET(self->status_label)),
                             GTK_WIDGET(self->status_label));
    /* A ROI's time-intensity curve shares the trajectory's cell (shown with a ROI on a dynamic image). */
    self->time_curve = LARMOR_TIME_CURVE(larmor_time_curve_new(self->state));
    gtk_widget_set_vexpand(GTK_WIDGET(self->time_curve), TRUE);
    gtk_box_append(GTK_BOX(self->cell3), GTK_WIDGET(self->time_curve));

    /* Overlay choice, after the colour map (built here: one more control). */
    self->overlay_dropdown = GTK_DROP_DOWN(gtk_drop_down_new(NULL, NULL));
    offer_overlays(self, FALSE);
    gtk_widget_insert_after(GTK_WIDGET(self->overlay_dropdown), self->toolbar, GTK_WIDGET(self->cmap_dropdown));
    g_signal_connect_swapped(self->overlay_dropdown, "notify::selected", G_CALLBACK(apply_overlay), self);
    apply_overlay(self);
}
