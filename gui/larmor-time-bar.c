#include "larmor-time-bar.h"

#include "larmor-util.h"

struct _LarmorTimeBar {
    GtkWidget parent_instance;
    LarmorViewState *state;
    LarmorVolume *volume;
    gulong frames_id;
    GtkWidget *play, *scale, *label, *fps, *loop;
    guint timer;
};

G_DEFINE_FINAL_TYPE(LarmorTimeBar, larmor_time_bar, GTK_TYPE_WIDGET)

static int64_t n_frames(LarmorTimeBar *self)
{
    return self->volume ? larmor_volume_get_n_frames(self->volume) : 1;
}

/* The state's frame within this image's frames. */
static int64_t current(LarmorTimeBar *self)
{
    return CLAMP((int64_t)larmor_view_state_get_frame(self->state), 0, n_frames(self) - 1);
}

char *larmor_format_frame(LarmorVolume *volume, int64_t t)
{
    if (!volume || larmor_volume_get_n_frames(volume) < 2)
        return NULL;
    const int64_t n = larmor_volume_get_n_frames(volume);
    t = CLAMP(t, 0, n - 1);
    const double s = larmor_volume_get_frame_s(volume);
    /* The frame's centre time from the start of the acquisition. */
    return s > 0 ? g_strdup_printf("t %lld (0–%lld) · %.0f ms", (long long)t, (long long)(n - 1), 1e3 * s * (t + 0.5))
                 : g_strdup_printf("t %lld (0–%lld)", (long long)t, (long long)(n - 1));
}

char *larmor_time_bar_get_text(LarmorTimeBar *self)
{
    const int64_t t = current(self), n = n_frames(self);
    const double s = self->volume ? larmor_volume_get_frame_s(self->volume) : 0;
    /* 0-based, as every index on screen (slices, voxels, the read-out). */
    return s > 0 ? g_strdup_printf("frame %lld (0–%lld) · %.0f ms", (long long)t, (long long)(n - 1), 1e3 * s * (t + 0.5))
                 : g_strdup_printf("frame %lld (0–%lld)", (long long)t, (long long)(n - 1));
}

static void refresh(LarmorTimeBar *self)
{
    const int64_t n = n_frames(self);
    gtk_widget_set_visible(GTK_WIDGET(self), n > 1);
    GtkAdjustment *adj = gtk_range_get_adjustment(GTK_RANGE(self->scale));
    gtk_adjustment_set_upper(adj, (double)MAX(n - 1, 1));
    gtk_adjustment_set_value(adj, (double)current(self));
    char *t = larmor_time_bar_get_text(self);
    larmor_label_set_text(GTK_LABEL(self->label), t);
    g_free(t);
    if (n < 2)
        larmor_time_bar_set_playing(self, FALSE);
}

static void on_scale(GtkRange *range, LarmorTimeBar *self)
{
    larmor_view_state_set_frame(self->state, (int)gtk_range_get_value(range));
}

void larmor_time_bar_tick(LarmorTimeBar *self)
{
    const int64_t n = n_frames(self), t = current(self);
    if (t + 1 < n)
        larmor_view_state_set_frame(self->state, (int)(t + 1));
    else if (gtk_toggle_button_get_active(GTK_TOGGLE_BUTTON(self->loop)))
        larmor_view_state_set_frame(self->state, 0);
    else
        larmor_time_bar_set_playing(self, FALSE);
}

static gboolean on_timer(gpointer data)
{
    larmor_time_bar_tick(data);
    return G_SOURCE_CONTINUE;
}

static void restart_timer(LarmorTimeBar *self)
{
    g_clear_handle_id(&self->timer, g_source_remove);
    if (gtk_toggle_button_get_active(GTK_TOGGLE_BUTTON(self->play)))
        self->timer = g_timeout_add((guint)(1000.0 / larmor_time_bar_get_fps(self) + 0.5), on_timer, self);
}

static void on_play(GtkToggleButton *b, LarmorTimeBar *self)
{
    const gboolean on = gtk_toggle_button_get_active(b);
    gtk_button_set_icon_name(GTK_BUTTON(b), on ? "media-playback-pause-symbolic" : "media-playback-start-symbolic");
    gtk_widget_set_tooltip_text(GTK_WIDGET(b), on ? "Pause" : "Play the frames");
    /* Playing from the last frame without loop starts again from the first. */
    if (on && current(self) == n_frames(self) - 1)
        larmor_view_state_set_frame(self->state, 0);
    restart_timer(self);
}

void larmor_time_bar_set_playing(LarmorTimeBar *self, gboolean playing)
{
    gtk_toggle_button_set_active(GTK_TOGGLE_BUTTON(self->play), playing && n_frames(self) > 1);
}

gboolean larmor_time_bar_get_playing(LarmorTimeBar *self)
{
    return gtk_toggle_button_get_active(GTK_TOGGLE_BUTTON(self->play));
}

void larmor_time_bar_set_fps(LarmorTimeBar *self, double fps)
{
    gtk_spin_button_set_value(GTK_SPIN_BUTTON(self->fps), fps);
}

double larmor_time_bar_get_fps(LarmorTimeBar *self)
{
    return MAX(gtk_spin_button_get_value(GTK_SPIN_BUTTON(self->fps)), 1);
}

void larmor_time_bar_set_loop(LarmorTimeBar *self, gboolean loop)
{
    gtk_toggle_button_set_active(GTK_TOGGLE_BUTTON(self->loop), loop);
}

gboolean larmor_time_bar_get_loop(LarmorTimeBar *self)
{
    return gtk_toggle_button_get_active(GTK_TOGGLE_BUTTON(self->loop));
}

void larmor_time_bar_set_volume(LarmorTimeBar *self, LarmorVolume *volume)
{
    if (self->volume == volume)
        return;
    larmor_volume_watch_frames(&self->volume, &self->frames_id, volume, G_CALLBACK(refresh), self);
    refresh(self);
}

static void larmor_time_bar_dispose(GObject *object)
{
    LarmorTimeBar *self = LARMOR_TIME_BAR(object);
    g_clear_handle_id(&self->timer, g_source_remove);
    larmor_volume_watch_frames(&self->volume, &self->frames_id, NULL, NULL, NULL);
    if (self->state)
        g_signal_handlers_disconnect_by_data(self->state, self);
    g_clear_object(&self->state);
    for (GtkWidget *c; (c = gtk_widget_get_first_child(GTK_WIDGET(object)));)
        gtk_widget_unparent(c);
    G_OBJECT_CLASS(larmor_time_bar_parent_class)->dispose(object);
}

static void larmor_time_bar_class_init(LarmorTimeBarClass *klass)
{
    G_OBJECT_CLASS(klass)->dispose = larmor_time_bar_dispose;
    gtk_widget_class_set_layout_manager_type(GTK_WIDGET_CLASS(klass), GTK_TYPE_BOX_LAYOUT);
    gtk_widget_class_set_css_name(GTK_WIDGET_CLASS(klass), "timebar");
}

static void larmor_time_bar_init(LarmorTimeBar *self)
{
    gtk_box_layout_set_spacing(GTK_BOX_LAYOUT(gtk_widget_get_layout_manager(GTK_WIDGET(self))), 6);
    self->play = gtk_toggle_button_new();
    gtk_button_set_icon_name(GTK_BUTTON(self->play), "media-playback-start-symbolic");
    gtk_widget_set_tooltip_text(self->play, "Play the frames");
    self->scale = gtk_scale_new_with_range(GTK_ORIENTATION_HORIZONTAL, 0, 1, 1);
    gtk_scale_set_draw_value(GTK_SCALE(self->scale), FALSE);
    gtk_range_set_round_digits(GTK_RANGE(self->scale), 0);
    gtk_widget_set_hexpand(self->scale, TRUE);
    gtk_widget_set_tooltip_text(self->scale, "Frame ([ and ] in a view)");
    self->label = gtk_label_new(" ");
    gtk_label_set_width_chars(GTK_LABEL(self->label), 22);
    gtk_label_set_xalign(GTK_LABEL(self->label), 0);
    self->fps = gtk_spin_button_new_with_range(1, 60, 1);
    gtk_spin_button_set_value(GTK_SPIN_BUTTON(self->fps), LARMOR_TIME_BAR_FPS_DEFAULT);
    gtk_widget_set_tooltip_text(self->fps, "Frames per second");
    GtkWidget *fps_label = gtk_label_new("fps");
    self->loop = gtk_toggle_button_new_with_label("Loop");
    gtk_toggle_button_set_active(GTK_TOGGLE_BUTTON(self->loop), TRUE);
    gtk_widget_set_tooltip_text(self->loop, "Start again after the last frame");
    GtkWidget *parts[] = { self->play, self->scale, self->label, self->fps, fps_label, self->loop };
    for (guint i = 0; i < G_N_ELEMENTS(parts); i++)
        gtk_widget_set_parent(parts[i], GTK_WIDGET(self));
    g_signal_connect(self->play, "toggled", G_CALLBACK(on_play), self);
    g_signal_connect(self->scale, "value-changed", G_CALLBACK(on_scale), self);
    g_signal_connect_swapped(self->fps, "value-changed", G_CALLBACK(restart_timer), self);
}

GtkWidget *larmor_time_bar_new(LarmorViewState *state)
{
    g_return_val_if_fail(LARMOR_IS_VIEW_STATE(state), NULL);
    LarmorTimeBar *self = g_object_new(LARMOR_TYPE_TIME_BAR, NULL);
    self->state = g_object_ref(state);
    g_signal_connect_swapped(state, "notify::frame", G_CALLBACK(refresh), self);
    refresh(self);
    return GTK_WIDGET(self);
}
