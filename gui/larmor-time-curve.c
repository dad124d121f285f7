#include "larmor-time-curve.h"

#include <math.h>

#include "larmor-file-chooser.h"
#include "larmor-plot.h"
#include "larmor-util.h"

struct _LarmorTimeCurve {
    GtkWidget parent_instance;
    LarmorViewState *state;
    LarmorVolume *volume;
    gulong frames_id;
    GtkWidget *title, *export_button;
    LarmorPlot *plot;
    int64_t frames;
    double *mean, *sd;
};

G_DEFINE_FINAL_TYPE(LarmorTimeCurve, larmor_time_curve, GTK_TYPE_WIDGET)

/* Frame t's centre time in seconds (NaN when the duration is unknown). */
static double frame_time(LarmorTimeCurve *self, int64_t t)
{
    const double s = self->volume ? larmor_volume_get_frame_s(self->volume) : 0;
    return s > 0 ? s * ((double)t + 0.5) : NAN;
}

static void mark_frame(LarmorTimeCurve *self)
{
    if (self->frames < 1)
        return;
    const int64_t t = CLAMP((int64_t)larmor_view_state_get_frame(self->state), 0, self->frames - 1);
    const double x = isfinite(frame_time(self, t)) ? frame_time(self, t) : (double)t;
    char *text = g_strdup_printf("frame %lld", (long long)t);
    larmor_plot_set_highlight(self->plot, x, self->mean[t], text);
    g_free(text);
}

/* Measures the ROI in every frame and redraws; hidden without a curve. */
static void refresh(LarmorTimeCurve *self)
{
    g_clear_pointer(&self->mean, g_free);
    g_clear_pointer(&self->sd, g_free);
    self->frames = 0;
    larmor_plot_clear(self->plot);
    LarmorRoi roi;
    larmor_view_state_get_roi(self->state, &roi);
    int64_t n = 0, *idx = NULL;
    if (self->volume && larmor_volume_get_n_frames(self->volume) > 1)
        idx = larmor_roi_indices(&roi, larmor_volume_get_data(self->volume)->dims, &n);
    if (idx) {
        int64_t T;
        lm_cfloat *x = larmor_volume_dup_frames(self->volume, &T);
        self->mean = g_new(double, T);
        self->sd = g_new(double, T);
        lm_error err = { 0 };
        if (lm_frame_stats(x, T, lm_volume_count(larmor_volume_get_data(self->volume)), idx, n, self->mean, self->sd,
                           &err) == LM_OK)
            self->frames = T;
        g_free(x);
        g_free(idx);
    }
    gtk_widget_set_visible(GTK_WIDGET(self), self->frames > 0);
    if (self->frames < 1)
        return;
    double *tx = g_new(double, self->frames);
    const gboolean timed = isfinite(frame_time(self, 0));
    for (int64_t t = 0; t < self->frames; t++)
        tx[t] = timed ? frame_time(self, t) : (double)t;
    larmor_plot_add_series(self->plot, "ROI mean", tx, self->mean, (int)self->frames,
                           LARMOR_PLOT_LINES | LARMOR_PLOT_MARKERS, 0);
    larmor_plot_set_axes(self->plot, timed ? "time (s)" : "frame", FALSE, "mean |ρ| in the ROI", FALSE);
    g_free(tx);
    char *d = larmor_roi_describe(&roi);
    char *t = g_strdup_printf("Time-intensity curve · %s · %lld voxels", d, (long long)n);
    gtk_label_set_text(GTK_LABEL(self->title), t);
    g_free(t);
    g_free(d);
    mark_frame(self);
}

int64_t larmor_time_curve_get_frames(LarmorTimeCurve *self)
{
    return self->frames;
}

gboolean larmor_time_curve_get_point(LarmorTimeCurve *self, int64_t t, double *mean, double *sd)
{
    if (t < 0 || t >= self->frames)
        return FALSE;
    *mean = self->mean[t];
    *sd = self->sd[t];
    return TRUE;
}

char *larmor_time_curve_to_csv(LarmorTimeCurve *self)
{
    if (self->frames < 1)
        return NULL;
    GString *s = g_string_new("frame,time_s,mean,sd\n");
    char num[3][G_ASCII_DTOSTR_BUF_SIZE];
    for (int64_t t = 0; t < self->frames; t++) {
        const double ts = frame_time(self, t);
        /* Locale-independent numbers: a CSV read elsewhere needs the point. */
        g_string_append_printf(s, "%lld,%s,%s,%s\n", (long long)t,
                               isfinite(ts) ? g_ascii_formatd(num[0], sizeof num[0], "%.6g", ts) : "",
                               g_ascii_formatd(num[1], sizeof num[1], "%.9g", self->mean[t]),
                               g_ascii_formatd(num[2], sizeof num[2], "%.9g", self->sd[t]));
    }
    return g_string_free(s, FALSE);
}

gboolean larmor_time_curve_save_csv(LarmorTimeCurve *self, const char *path, GError **error)
{
    char *csv = larmor_time_curve_to_csv(self);
    if (!csv) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "%s: no curve to write: draw a ROI on a dynamic image", path);
        return FALSE;
    }
    /* g_file_set_contents: temporary file, fsync, rename (atomic). */
    gboolean ok = g_file_set_contents(path, csv, -1, error);
    g_free(csv);
    return ok;
}

static void on_export_chosen(GtkWindow *parent, GFile *const *files, int n, gboolean checked, gpointer data)
{
    LarmorTimeCurve *self = data;
    char *path = g_file_get_path(files[0]);
    GError *error = NULL;
    if (!larmor_time_curve_save_csv(self, path, &error)) {
        larmor_label_set_text(GTK_LABEL(self->title), error->message); /* one line where the curve is */
        g_error_free(error);
    }
    g_free(path);
}

static void on_export(LarmorTimeCurve *self)
{
    GtkRoot *root = gtk_widget_get_root(GTK_WIDGET(self));
    static const char *const filters[] = { "CSV (.csv)", "*.csv", NULL };
    const LarmorFileRequest req = { .title = "Export Time Curve CSV", .accept = "_Export", .save = TRUE,
                                    .current_name = "time-curve.csv", .filters = filters };
    larmor_choose_file(GTK_IS_WINDOW(root) ? GTK_WINDOW(root) : NULL, NULL, &req, on_export_chosen,
                       g_object_ref(self), g_object_unref);
}

void larmor_time_curve_set_volume(LarmorTimeCurve *self, LarmorVolume *volume)
{
    if (self->volume == volume)
        return;
    larmor_volume_watch_frames(&self->volume, &self->frames_id, volume, G_CALLBACK(refresh), self);
    refresh(self);
}

static void larmor_time_curve_dispose(GObject *object)
{
    LarmorTimeCurve *self = LARMOR_TIME_CURVE(object);
    larmor_volume_watch_frames(&self->volume, &self->frames_id, NULL, NULL, NULL);
    if (self->state)
        g_signal_handlers_disconnect_by_data(self->state, self);
    g_clear_object(&self->state);
    g_clear_pointer(&self->mean, g_free);
    g_clear_pointer(&self->sd, g_free);
    for (GtkWidget *c; (c = gtk_widget_get_first_child(GTK_WIDGET(object)));)
        gtk_widget_unparent(c);
    G_OBJECT_CLASS(larmor_time_curve_parent_class)->dispose(object);
}

static void larmor_time_curve_class_init(LarmorTimeCurveClass *klass)
{
    G_OBJECT_CLASS(klass)->dispose = larmor_time_curve_dispose;
    gtk_widget_class_set_layout_manager_type(GTK_WIDGET_CLASS(klass), GTK_TYPE_BOX_LAYOUT);
}

static void larmor_time_curve_init(LarmorTimeCurve *self)
{
    GtkBoxLayout *box = GTK_BOX_LAYOUT(gtk_widget_get_layout_manager(GTK_WIDGET(self)));
    gtk_orientable_set_orientation(GTK_ORIENTABLE(box), GTK_ORIENTATION_VERTICAL);
    gtk_box_layout_set_spacing(box, 4);
    GtkWidget *head = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
    self->title = gtk_label_new("Time-intensity curve");
    gtk_label_set_xalign(GTK_LABEL(self->title), 0);
    gtk_label_set_ellipsize(GTK_LABEL(self->title), PANGO_ELLIPSIZE_END);
    gtk_widget_set_hexpand(self->title, TRUE);
    gtk_widget_add_css_class(self->title, "caption");
    self->export_button = gtk_button_new_with_label("Export CSV…");
    gtk_widget_set_tooltip_text(self->export_button, "The curve as CSV: frame, time_s, mean, sd");
    gtk_box_append(GTK_BOX(head), self->title);
    gtk_box_append(GTK_BOX(head), self->export_button);
    gtk_widget_set_parent(head, GTK_WIDGET(self));
    self->plot = LARMOR_PLOT(larmor_plot_new());
    gtk_widget_set_vexpand(GTK_WIDGET(self->plot), TRUE);
    gtk_widget_set_size_request(GTK_WIDGET(self->plot), -1, 80);
    gtk_widget_set_parent(GTK_WIDGET(self->plot), GTK_WIDGET(self));
    g_signal_connect_swapped(self->export_button, "clicked", G_CALLBACK(on_export), self);
}

GtkWidget *larmor_time_curve_new(LarmorViewState *state)
{
    g_return_val_if_fail(LARMOR_IS_VIEW_STATE(state), NULL);
    LarmorTimeCurve *self = g_object_new(LARMOR_TYPE_TIME_CURVE, NULL);
    self->state = g_object_ref(state);
    g_signal_connect_swapped(state, "roi-changed", G_CALLBACK(refresh), self);
    g_signal_connect_swapped(state, "notify::frame", G_CALLBACK(mark_frame), self);
    refresh(self);
    return GTK_WIDGET(self);
}
