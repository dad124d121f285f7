#include "larmor-compare-view.h"

#include <math.h>

#include "larmor-ortho-view.h"
#include "larmor-plot.h"
#include "larmor-profile.h"
#include "larmor-roi.h"
#include "larmor-util.h"
#include "larmor-wrap-box.h"

typedef struct {
    LarmorVolume *volume;
    LarmorVolume *diff;        /* volume - truth, or NULL */
    LarmorRun *run;            /* NULL for the truth */
    gboolean resampled;        /* volume is the run's image resampled onto the first panel's grid */
    LarmorViewState *state;    /* the shared one, or its own when unlinked */
    LarmorSliceView *view, *diff_view;
} Panel;

struct _LarmorCompareView {
    GtkWidget parent_instance;

    GtkDropDown *orient_dropdown;
    GtkDropDown *mode_dropdown;
    GtkDropDown *cmap_dropdown;
    GtkToggleButton *diff_toggle;
    GtkDropDown *gain_dropdown;
    GtkToggleButton *link_toggle;
    GtkWidget *auto_button;
    GtkAdjustment *slice_adjustment;
    GtkScale *slice_scale;
    GtkWidget *toolbar;
    GtkStack *panels_stack;
    GtkGrid *panels_grid;
    GtkGrid *metrics_grid;
    LarmorPlot *conv_plot;
    GtkLabel *status_label;
    LarmorTimeBar *time_bar;   /* one frame slider for every panel (dynamic runs) */
    GtkToggleButton *roi_rect_toggle, *roi_ellipse_toggle;
    GtkWidget *roi_box, *roi_export_button;
    GtkLabel *roi_title;
    GtkGrid *roi_grid;
    GtkWidget *roi_noise_button, *roi_noise_clear_button;
    GtkToggleButton *line_toggle;
    GtkWidget *profile_box, *profile_export_button;
    GtkLabel *profile_title;
    LarmorPlot *profile_plot;

    LarmorViewState *state;
    /* The ROI table: one row per panel (truth first), as last filled. */
    LarmorRoi roi;
    LarmorRoiStats roi_stats[LARMOR_COMPARE_MAX_RUNS + 1];
    char *roi_names[LARMOR_COMPARE_MAX_RUNS + 1];
    int roi_rows;
    /* The noise region (SNR) and its statistics per row, when set. */
    LarmorRoi noise_roi;
    LarmorRoiStats noise_stats[LARMOR_COMPARE_MAX_RUNS + 1];
    /* The line profile: one row per panel, as last filled. */
    LarmorLine line;
    int profile_n, profile_rows;
    double *profile_dist;
    double *profile_values[LARMOR_COMPARE_MAX_RUNS + 1];
    char *profile_names[LARMOR_COMPARE_MAX_RUNS + 1];
    LarmorVolume *truth;
    GPtrArray *runs;
    Panel panels[LARMOR_COMPARE_MAX_RUNS + 1];
    int n_panels;
    LarmorOrientation orientation;
    GHashTable *cells;         /* "row:column" -> GtkLabel */
    gboolean syncing;
    gboolean cmap_syncing; /* the map dropdown follows the state, not the user */
    int64_t grid_dims[3];
};

G_DEFINE_FINAL_TYPE(LarmorCompareView, larmor_compare_view, GTK_TYPE_WIDGET)

static const double gains[] = { 1, 2, 5, 10 };

static double current_gain(LarmorCompareView *self)
{
    guint i = gtk_drop_down_get_selected(self->gain_dropdown);
    return gains[MIN(i, G_N_ELEMENTS(gains) - 1)];
}

static void each_state(LarmorCompareView *self, void (*fn)(LarmorViewState *, gpointer), gpointer data)
{
    fn(self->state, data);
    for (int i = 0; i < self->n_panels; i++)
        if (self->panels[i].state && self->panels[i].state != self->state)
            fn(self->panels[i].state, data);
}

/* --- status line ------------------------------------------------------- */

static void show_values(LarmorCompareView *self, const int64_t ijk[3], gboolean hovering)
{
    if (self->n_panels == 0) {
        larmor_label_set_text(self->status_label, " ");
        return;
    }
    GString *s = g_string_new(NULL);
    double mm[3];
    larmor_volume_voxel_to_mm(self->panels[0].volume, ijk, mm);
    g_string_append_printf(s, "%s x %lld  y %lld  z %lld  (%+.1f, %+.1f, %+.1f) mm", hovering ? "" : "Cursor ",
                           (long long)ijk[0], (long long)ijk[1], (long long)ijk[2], mm[0], mm[1], mm[2]);
    char *frame = larmor_format_frame(self->panels[0].volume, larmor_view_state_get_frame(self->state));
    if (frame)
        g_string_append_printf(s, "  %s", frame);
    g_free(frame);
    LarmorMode mode = larmor_view_state_get_mode(self->state);
    for (int i = 0; i < self->n_panels; i++) {
        Panel *p = &self->panels[i];
        float v = larmor_mode_value(larmor_volume_value_at_frame(p->volume, ijk, larmor_view_state_get_frame(self->state)),
                                    mode);
        if (p->run)
            g_string_append_printf(s, "   #%d %.4g", larmor_run_get_index(p->run), v);
        else
            g_string_append_printf(s, "   truth %.4g", v);
    }
    larmor_label_set_text(self->status_label, s->str);
    g_string_free(s, TRUE);
}

static void on_hover(LarmorSliceView *view, gboolean inside, int x, int y, int z, LarmorCompareView *self)
{
    int64_t ijk[3] = { x, y, z };
    if (!inside)
        larmor_view_state_get_cursor(larmor_slice_view_get_state(view), ijk);
    show_values(self, ijk, inside);
}

/* --- slice slider ------------------------------------------------------ */

static int normal_axis(LarmorCompareView *self)
{
    int u, v, n;
    larmor_orientation_axes(self->orientation, &u, &v, &n);
    return n;
}

static void sync_slider(LarmorCompareView *self)
{
    int64_t ijk[3], dims[3];
    larmor_view_state_get_cursor(self->state, ijk);
    larmor_view_state_get_dims(self->state, dims);
    int n = normal_axis(self);
    self->syncing = TRUE;
    gtk_adjustment_set_upper(self->slice_adjustment, (double)MAX(dims[n] - 1, 1));
    gtk_adjustment_set_value(self->slice_adjustment, (double)ijk[n]);
    self->syncing = FALSE;
}

static void on_state_cursor(LarmorViewState *state, GParamSpec *pspec, LarmorCompareView *self)
{
    sync_slider(self);
    int64_t ijk[3];
    larmor_view_state_get_cursor(state, ijk);
    show_values(self, ijk, FALSE);
}

typedef struct { int axis; int64_t value; } AxisValue;

static void set_axis(LarmorViewState *s, gpointer data)
{
    AxisValue *av = data;
    larmor_view_state_set_cursor_axis(s, av->axis, av->value);
}

static void on_slider(GtkAdjustment *adj, LarmorCompareView *self)
{
    if (self->syncing)
        return;
    AxisValue av = { normal_axis(self), (int64_t)lround(gtk_adjustment_get_value(adj)) };
    each_state(self, set_axis, &av);
}

/* --- toolbar ----------------------------------------------------------- */

static void set_mode(LarmorViewState *s, gpointer data)
{
    larmor_view_state_set_mode(s, GPOINTER_TO_INT(data));
}

static void set_cmap(LarmorViewState *s, gpointer data)
{
    larmor_view_state_set_colormap(s, GPOINTER_TO_INT(data));
}

typedef struct { double w, l; } WL;

static void set_wl(LarmorViewState *s, gpointer data)
{
    WL *wl = data;
    larmor_view_state_set_window_level(s, wl->w, wl->l);
}

static void auto_window(LarmorCompareView *self)
{
    LarmorVolume *ref = self->truth ? self->truth : self->n_panels ? self->panels[0].volume : NULL;
    if (!ref)
        return;
    WL wl;
    larmor_volume_auto_window(ref, larmor_view_state_get_mode(self->state), &wl.w, &wl.l);
    each_state(self, set_wl, &wl);
}

static void on_mode(GtkDropDown *dd, GParamSpec *pspec, LarmorCompareView *self)
{
    each_state(self, set_mode, GINT_TO_POINTER(gtk_drop_down_get_selected(dd)));
    /* Phase may have switched the map (cyclic) or switched it back: show
     * it without making it the user's pick. */
    self->cmap_syncing = TRUE;
    gtk_drop_down_set_selected(self->cmap_dropdown, larmor_view_state_get_colormap(self->state));
    self->cmap_syncing = FALSE;
    auto_window(self);
}

static void on_cmap(GtkDropDown *dd, GParamSpec *pspec, LarmorCompareView *self)
{
    if (!self->cmap_syncing)
        each_state(self, set_cmap, GINT_TO_POINTER(gtk_drop_down_get_selected(dd)));
}

static void set_radiological(LarmorViewState *s, gpointer data)
{
    larmor_view_state_set_radiological(s, GPOINTER_TO_INT(data));
}

static void set_show_colorbar(LarmorViewState *s, gpointer data)
{
    larmor_view_state_set_show_colorbar(s, GPOINTER_TO_INT(data));
}

void larmor_compare_view_set_display(LarmorCompareView *self, gboolean radiological, gboolean show_colorbar)
{
    each_state(self, set_radiological, GINT_TO_POINTER(!!radiological));
    each_state(self, set_show_colorbar, GINT_TO_POINTER(!!show_colorbar));
}

static void on_auto(GtkButton *b, LarmorCompareView *self)
{
    auto_window(self);
}

static void on_orientation(GtkDropDown *dd, GParamSpec *pspec, LarmorCompareView *self)
{
    self->orientation = gtk_drop_down_get_selected(dd);
    for (int i = 0; i < self->n_panels; i++) {
        larmor_slice_view_set_orientation(self->panels[i].view, self->orientation);
        if (self->panels[i].diff_view)
            larmor_slice_view_set_orientation(self->panels[i].diff_view, self->orientation);
    }
    sync_slider(self);
}

static void rebuild(LarmorCompareView *self);

static void on_gain(GtkDropDown *dd, GParamSpec *pspec, LarmorCompareView *self)
{
    if (gtk_toggle_button_get_active(self->diff_toggle)) {
        rebuild(self);
        return;
    }
    for (int i = 0; i < self->n_panels; i++)
        if (self->panels[i].diff_view) {
            larmor_slice_view_set_gain(self->panels[i].diff_view, current_gain(self));
            char *t = g_strdup_printf("×%g", current_gain(self));
            larmor_slice_view_set_title(self->panels[i].diff_view, t);
            g_free(t);
        }
}

/* --- panels ------------------------------------------------------------ */

static void copy_state(LarmorViewState *from, LarmorViewState *to)
{
    int64_t dims[3], ijk[3];
    larmor_view_state_get_dims(from, dims);
    larmor_view_state_set_dims(to, dims);
    larmor_view_state_get_cursor(from, ijk);
    larmor_view_state_set_cursor(to, ijk);
    larmor_view_state_set_window_level(to, larmor_view_state_get_window(from), larmor_view_state_get_level(from));
    /* The user's map first, then the mode (phase switches to cyclic by
     * itself), then the map shown if it still differs (a pick in phase). */
    larmor_view_state_set_colormap(to, larmor_view_state_get_user_colormap(from));
    larmor_view_state_set_mode(to, larmor_view_state_get_mode(from));
    if (larmor_view_state_get_colormap(to) != larmor_view_state_get_colormap(from))
        larmor_view_state_set_colormap(to, larmor_view_state_get_colormap(from));
    larmor_view_state_set_radiological(to, larmor_view_state_get_radiological(from));
    larmor_view_state_set_show_colorbar(to, larmor_view_state_get_show_colorbar(from));
    for (int o = 0; o < 3; o++) {
        double px, py;
        larmor_view_state_get_pan(from, o, &px, &py);
        larmor_view_state_set_zoom_pan(to, o, larmor_view_state_get_zoom(from, o), px, py);
    }
    LarmorRoi roi;
    larmor_view_state_get_roi(from, &roi);
    larmor_view_state_set_roi(to, &roi);
    larmor_view_state_get_noise_roi(from, &roi);
    larmor_view_state_set_noise_roi(to, &roi);
    LarmorLine line;
    larmor_view_state_get_line(from, &line);
    larmor_view_state_set_line(to, &line);
    larmor_view_state_set_roi_tool(to, larmor_view_state_get_roi_tool(from));
}

/* --- ROI table --------------------------------------------------------- */

static void roi_cell(LarmorCompareView *self, int row, int col, const char *text, gboolean numeric, gboolean header)
{
    GtkWidget *l = gtk_label_new(NULL);
    if (header) {
        char *m = g_markup_printf_escaped("<b>%s</b>", text);
        gtk_label_set_markup(GTK_LABEL(l), m);
        g_free(m);
        gtk_widget_add_css_class(l, "dim-label");
    } else
        gtk_label_set_text(GTK_LABEL(l), text);
    gtk_label_set_xalign(GTK_LABEL(l), numeric ? 1 : 0);
    if (numeric)
        gtk_widget_add_css_class(l, "numeric");
    gtk_grid_attach(self->roi_grid, l, col, row, 1, 1);
}

static void clear_roi_rows(LarmorCompareView *self)
{
    for (int i = 0; i < self->roi_rows; i++)
        g_clear_pointer(&self->roi_names[i], g_free);
    self->roi_rows = 0;
}

/* The same ROI (voxel indices on the same grid) over every panel's image;
 * with a noise ROI, each image's noise SD and SNR. */
static void fill_roi(LarmorCompareView *self)
{
    GtkWidget *child;
    while ((child = gtk_widget_get_first_child(GTK_WIDGET(self->roi_grid))))
        gtk_grid_remove(self->roi_grid, child);
    clear_roi_rows(self);
    larmor_view_state_get_roi(self->state, &self->roi);
    larmor_view_state_get_noise_roi(self->state, &self->noise_roi);
    gboolean noise = self->noise_roi.shape != LARMOR_ROI_NONE;
    gtk_widget_set_visible(self->roi_noise_clear_button, noise);
    gtk_widget_set_sensitive(self->roi_noise_button, self->roi.shape != LARMOR_ROI_NONE);
    gtk_widget_set_sensitive(self->roi_export_button, self->roi.shape != LARMOR_ROI_NONE);
    if ((self->roi.shape == LARMOR_ROI_NONE && !noise) || self->n_panels == 0) {
        gtk_widget_set_visible(self->roi_box, FALSE);
        return;
    }
    GString *t = g_string_new(NULL);
    if (self->roi.shape != LARMOR_ROI_NONE) {
        char *d = larmor_roi_describe(&self->roi);
        g_string_append_printf(t, "ROI: %s", d);
        g_free(d);
    } else
        g_string_append(t, "Draw the signal ROI for SNR");
    if (noise) {
        char *d = larmor_roi_describe(&self->noise_roi);
        g_string_append_printf(t, "\nNoise ROI: %s", d);
        g_free(d);
    }
    gtk_label_set_text(self->roi_title, t->str);
    g_string_free(t, TRUE);
    gtk_widget_set_visible(self->roi_box, TRUE);
    if (self->roi.shape == LARMOR_ROI_NONE)
        return;
    static const char *heads[] = { "Image", "Voxels", "Area mm²", "Mean", "SD", "Min", "Max", "Noise SD", "SNR" };
    const int ncol = noise ? 9 : 7;
    for (int c = 0; c < ncol; c++)
        roi_cell(self, 0, c, heads[c], c > 0, TRUE);
    if (noise)
        gtk_widget_set_tooltip_text(gtk_grid_get_child_at(self->roi_grid, 8, 0),
                                    "mean(ROI) / σ with σ = SD(noise ROI) / 0.655: background noise of a magnitude "
                                    "image is Rayleigh distributed");
    for (int i = 0; i < self->n_panels; i++) {
        Panel *p = &self->panels[i];
        LarmorRoiStats *st = &self->roi_stats[i];
        /* the frame shown (dynamic runs; frame 0 of static images) */
        const lm_volume *shown = larmor_volume_get_frame_data(p->volume, larmor_view_state_get_frame(self->state));
        larmor_roi_stats(&self->roi, shown, st);
        if (noise)
            larmor_roi_stats(&self->noise_roi, shown, &self->noise_stats[i]);
        self->roi_names[i] = p->run ? g_strdup(larmor_run_get_label(p->run)) : g_strdup("truth");
        self->roi_rows = i + 1;
        char *cells[9] = {
            g_strdup(self->roi_names[i]), g_strdup_printf("%lld", (long long)st->count),
            larmor_format_number("%.4g", st->area_mm2), larmor_format_number("%.5g", st->mean),
            larmor_format_number("%.4g", st->sd), larmor_format_number("%.5g", st->min),
            larmor_format_number("%.5g", st->max),
            noise ? larmor_format_number("%.4g", self->noise_stats[i].sd) : NULL,
            noise ? larmor_format_number("%.1f", larmor_roi_snr(st, &self->noise_stats[i])) : NULL,
        };
        for (int c = 0; c < 9; c++) {
            if (c < ncol)
                roi_cell(self, i + 1, c, cells[c], c > 0, FALSE);
            g_free(cells[c]);
        }
    }
}

/* A ROI drawn in any panel (linked or not) is the ROI of every panel. */
static void on_roi_changed(LarmorViewState *state, LarmorCompareView *self)
{
    LarmorRoi roi;
    larmor_view_state_get_roi(state, &roi);
    larmor_view_state_set_roi(self->state, &roi);
    LarmorRoi noise;
    larmor_view_state_get_noise_roi(self->state, &noise);
    for (int i = 0; i < self->n_panels; i++)
        if (self->panels[i].state) {
            larmor_view_state_set_roi(self->panels[i].state, &roi);
            larmor_view_state_set_noise_roi(self->panels[i].state, &noise);
        }
    if (state == self->state)
        fill_roi(self);
}

gboolean larmor_compare_view_use_roi_as_noise(LarmorCompareView *self)
{
    LarmorRoi roi;
    larmor_view_state_get_roi(self->state, &roi);
    if (roi.shape == LARMOR_ROI_NONE)
        return FALSE;
    /* The region becomes the noise region; the next one drawn is the signal. */
    larmor_view_state_set_noise_roi(self->state, &roi);
    larmor_view_state_clear_roi(self->state);
    return TRUE;
}

double larmor_compare_view_get_roi_snr(LarmorCompareView *self, int row, double *noise_sd)
{
    gboolean ok = row >= 0 && row < self->roi_rows && self->noise_roi.shape != LARMOR_ROI_NONE;
    if (noise_sd)
        *noise_sd = ok ? self->noise_stats[row].sd : NAN;
    return ok ? larmor_roi_snr(&self->roi_stats[row], &self->noise_stats[row]) : NAN;
}

static void on_noise(GtkButton *b, LarmorCompareView *self)
{
    larmor_compare_view_use_roi_as_noise(self);
}

static void on_noise_clear(GtkButton *b, LarmorCompareView *self)
{
    const LarmorRoi none = { .shape = LARMOR_ROI_NONE };
    larmor_view_state_set_noise_roi(self->state, &none);
}

/* --- line profile ------------------------------------------------------ */

static void clear_profile(LarmorCompareView *self)
{
    for (int i = 0; i < self->profile_rows; i++) {
        g_clear_pointer(&self->profile_values[i], g_free);
        g_clear_pointer(&self->profile_names[i], g_free);
    }
    g_clear_pointer(&self->profile_dist, g_free);
    self->profile_rows = self->profile_n = 0;
}

/* The magnitude along the line in every panel, plotted in the runs' colours. */
static void fill_profile(LarmorCompareView *self)
{
    clear_profile(self);
    larmor_plot_clear(self->profile_plot);
    larmor_view_state_get_line(self->state, &self->line);
    if (!self->line.set || self->n_panels == 0) {
        gtk_widget_set_visible(self->profile_box, FALSE);
        return;
    }
    const lm_volume *grid = larmor_volume_get_data(self->panels[0].volume);
    int n = larmor_line_samples(&self->line);
    self->profile_n = n;
    self->profile_dist = g_new(double, n);
    for (int i = 0; i < self->n_panels; i++) {
        Panel *p = &self->panels[i];
        double *values = g_new(double, n);
        if (!larmor_line_profile(&self->line, larmor_volume_get_frame_data(p->volume, larmor_view_state_get_frame(self->state)),
                                 n, self->profile_dist, values)) {
            g_free(values);
            continue;
        }
        int k = self->profile_rows++;
        self->profile_values[k] = values;
        self->profile_names[k] = p->run ? g_strdup(larmor_run_get_label(p->run)) : g_strdup("truth");
        char *label = p->run ? g_strdup_printf("#%d", larmor_run_get_index(p->run)) : g_strdup("truth");
        larmor_plot_add_series(self->profile_plot, label, self->profile_dist, values, n, LARMOR_PLOT_LINES,
                               p->run ? larmor_run_get_index(p->run) - 1 : -1);
        g_free(label);
    }
    char *d = larmor_line_describe(&self->line, grid);
    gtk_label_set_text(self->profile_title, d);
    g_free(d);
    larmor_plot_set_axes(self->profile_plot, "distance (mm)", FALSE, "|ρ|", FALSE);
    gtk_widget_set_visible(self->profile_box, TRUE);
}

static void on_line_changed(LarmorViewState *state, LarmorCompareView *self)
{
    LarmorLine line;
    larmor_view_state_get_line(state, &line);
    larmor_view_state_set_line(self->state, &line);
    for (int i = 0; i < self->n_panels; i++)
        if (self->panels[i].state)
            larmor_view_state_set_line(self->panels[i].state, &line);
    if (state == self->state)
        fill_profile(self);
}

int larmor_compare_view_get_profile(LarmorCompareView *self, int row, const double **dist_mm,
                                    const double **values, const char **name)
{
    if (row < 0 || row >= self->profile_rows)
        return 0;
    if (dist_mm)
        *dist_mm = self->profile_dist;
    if (values)
        *values = self->profile_values[row];
    if (name)
        *name = self->profile_names[row];
    return self->profile_n;
}

int larmor_compare_view_get_profile_rows(LarmorCompareView *self)
{
    return self->profile_rows;
}

LarmorPlot *larmor_compare_view_get_profile_plot(LarmorCompareView *self)
{
    return self->profile_plot;
}

gboolean larmor_compare_view_write_profile_csv(LarmorCompareView *self, const char *path, GError **error)
{
    if (self->profile_rows == 0) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "%s: no line drawn", path);
        return FALSE;
    }
    char *csv = larmor_profile_to_csv(&self->line, larmor_volume_get_data(self->panels[0].volume),
                                      (const char *const *)self->profile_names,
                                      (const double *const *)self->profile_values, self->profile_rows, self->profile_n);
    /* g_file_set_contents: temporary file, fsync, rename (atomic). */
    gboolean ok = g_file_set_contents(path, csv, -1, error);
    g_free(csv);
    return ok;
}

/* A CSV export: the Save dialog, then the writer; the outcome in the status line. */
typedef gboolean (*CsvWriter)(LarmorCompareView *self, const char *path, GError **error);

static void on_csv_export_response(GtkNativeDialog *dialog, int response, LarmorCompareView *self)
{
    if (response == GTK_RESPONSE_ACCEPT) {
        CsvWriter write = (CsvWriter)g_object_get_data(G_OBJECT(dialog), "writer");
        const char *what = g_object_get_data(G_OBJECT(dialog), "what");
        GFile *f = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(dialog));
        char *path = f ? g_file_get_path(f) : NULL;
        GError *error = NULL;
        if (path && !write(self, path, &error)) {
            larmor_label_set_text(self->status_label, error->message);
            g_error_free(error);
        } else if (path) {
            char *t = g_strdup_printf("%s written to %s", what, path);
            larmor_label_set_text(self->status_label, t);
            g_free(t);
        }
        g_free(path);
        g_clear_object(&f);
    }
    g_object_unref(dialog);
}

static void export_csv(LarmorCompareView *self, const char *title, const char *file, const char *what,
                       CsvWriter write)
{
    GtkRoot *root = gtk_widget_get_root(GTK_WIDGET(self));
    GtkFileChooserNative *d = gtk_file_chooser_native_new(title, GTK_IS_WINDOW(root) ? GTK_WINDOW(root) : NULL,
                                                          GTK_FILE_CHOOSER_ACTION_SAVE, "_Export", "_Cancel");
    gtk_file_chooser_set_current_name(GTK_FILE_CHOOSER(d), file);
    g_object_set_data(G_OBJECT(d), "writer", (gpointer)write);
    g_object_set_data(G_OBJECT(d), "what", (gpointer)what);
    g_signal_connect(d, "response", G_CALLBACK(on_csv_export_response), self);
    gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
}

static void on_profile_export(GtkButton *b, LarmorCompareView *self)
{
    export_csv(self, "Export line profile", "profile.csv", "Line profile", larmor_compare_view_write_profile_csv);
}

static void on_roi_tool(LarmorViewState *state, GParamSpec *pspec, LarmorCompareView *self)
{
    for (int i = 0; i < self->n_panels; i++)
        if (self->panels[i].state && self->panels[i].state != self->state)
            larmor_view_state_set_roi_tool(self->panels[i].state, larmor_view_state_get_roi_tool(state));
}

gboolean larmor_compare_view_write_roi_csv(LarmorCompareView *self, const char *path, GError **error)
{
    if (self->roi.shape == LARMOR_ROI_NONE || self->roi_rows == 0) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "%s: no region of interest drawn", path);
        return FALSE;
    }
    char *csv = larmor_roi_to_csv(&self->roi, (const char *const *)self->roi_names, self->roi_stats,
                                  self->noise_roi.shape != LARMOR_ROI_NONE ? self->noise_stats : NULL, self->roi_rows);
    /* g_file_set_contents: temporary file, fsync, rename (atomic). */
    gboolean ok = g_file_set_contents(path, csv, -1, error);
    g_free(csv);
    return ok;
}

int larmor_compare_view_get_roi_rows(LarmorCompareView *self)
{
    return self->roi_rows;
}

gboolean larmor_compare_view_get_roi_stats(LarmorCompareView *self, int row, LarmorRoiStats *st, const char **name)
{
    if (row < 0 || row >= self->roi_rows)
        return FALSE;
    *st = self->roi_stats[row];
    if (name)
        *name = self->roi_names[row];
    return TRUE;
}

static void on_roi_export(GtkButton *b, LarmorCompareView *self)
{
    export_csv(self, "Export ROI statistics", "roi.csv", "ROI statistics", larmor_compare_view_write_roi_csv);
}

static void apply_link(LarmorCompareView *self)
{
    gboolean linked = gtk_toggle_button_get_active(self->link_toggle);
    for (int i = 0; i < self->n_panels; i++) {
        Panel *p = &self->panels[i];
        LarmorViewState *s;
        if (linked || i == 0)
            s = g_object_ref(self->state);
        else {
            s = larmor_view_state_new();
            copy_state(self->state, s);
        }
        if (s != self->state) {
            g_signal_connect(s, "roi-changed", G_CALLBACK(on_roi_changed), self);
            g_signal_connect(s, "line-changed", G_CALLBACK(on_line_changed), self);
        }
        g_set_object(&p->state, s);
        g_object_unref(s);
        larmor_slice_view_set_state(p->view, p->state);
        if (p->diff_view)
            larmor_slice_view_set_state(p->diff_view, p->state);
    }
}

static void on_link(GtkToggleButton *b, GParamSpec *pspec, LarmorCompareView *self)
{
    apply_link(self);
}

static void clear_panels(LarmorCompareView *self)
{
    GtkWidget *child;
    while ((child = gtk_widget_get_first_child(GTK_WIDGET(self->panels_grid))))
        gtk_grid_remove(self->panels_grid, child);
    for (int i = 0; i < self->n_panels; i++) {
        Panel *p = &self->panels[i];
        g_clear_object(&p->volume);
        g_clear_object(&p->diff);
        g_clear_object(&p->run);
        p->resampled = FALSE;
        if (p->state && p->state != self->state)
            g_signal_handlers_disconnect_by_data(p->state, self);
        g_clear_object(&p->state);
        p->view = p->diff_view = NULL;
    }
    self->n_panels = 0;
}

static GtkWidget *make_header(LarmorCompareView *self, Panel *p)
{
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
    gtk_widget_add_css_class(box, "panel-header");
    GtkWidget *swatch = gtk_label_new(NULL);
    GtkWidget *title = gtk_label_new(NULL);
    GtkWidget *sub = gtk_label_new(NULL);
    gtk_widget_add_css_class(sub, "dim-label");
    gtk_widget_add_css_class(sub, "numeric");
    gtk_label_set_xalign(GTK_LABEL(title), 0);
    gtk_label_set_ellipsize(GTK_LABEL(title), PANGO_ELLIPSIZE_END);
    gtk_widget_set_hexpand(title, TRUE);
    if (p->run) {
        GdkRGBA c;
        larmor_palette_color(larmor_run_get_index(p->run) - 1, &c);
        char *hex = g_strdup_printf("#%02x%02x%02x", (int)(c.red * 255), (int)(c.green * 255), (int)(c.blue * 255));
        char *m = g_strdup_printf("<span foreground=\"%s\">■</span>", hex);
        gtk_label_set_markup(GTK_LABEL(swatch), m);
        g_free(m);
        g_free(hex);
        char *t = g_markup_printf_escaped("<b>%s</b>", larmor_run_get_label(p->run));
        gtk_label_set_markup(GTK_LABEL(title), t);
        g_free(t);
        gtk_widget_set_tooltip_text(title, larmor_run_get_label(p->run));
        GString *s = g_string_new(NULL);
        if (larmor_run_has_metrics(p->run))
            g_string_append_printf(s, "%.2f dB · %.2f %%", larmor_run_get_psnr(p->run),
                                   larmor_run_get_percent_error(p->run));
        if (p->resampled) {
            const lm_volume *v = larmor_volume_get_data(larmor_run_get_image(p->run));
            g_string_append_printf(s, "%sresampled from %lld×%lld×%lld", s->len ? " · " : "", (long long)v->dims[0],
                                   (long long)v->dims[1], (long long)v->dims[2]);
        }
        gtk_label_set_text(GTK_LABEL(sub), s->str);
        g_string_free(s, TRUE);
    } else {
        gtk_label_set_markup(GTK_LABEL(swatch), "<span foreground=\"#e8e8e8\">■</span>");
        gtk_label_set_markup(GTK_LABEL(title), "<b>Truth</b>");
        gtk_label_set_text(GTK_LABEL(sub), "reference");
    }
    gtk_box_append(GTK_BOX(box), swatch);
    gtk_box_append(GTK_BOX(box), title);
    gtk_box_append(GTK_BOX(box), sub);
    return box;
}

static LarmorSliceView *make_view(LarmorCompareView *self, LarmorVolume *vol)
{
    LarmorSliceView *v = LARMOR_SLICE_VIEW(larmor_slice_view_new(self->orientation));
    larmor_slice_view_set_volume(v, vol);
    larmor_slice_view_set_state(v, self->state);
    larmor_slice_view_set_title(v, "");
    g_signal_connect(v, "hover", G_CALLBACK(on_hover), self);
    return v;
}

/* --- metrics table ----------------------------------------------------- */

static void add_cell(LarmorCompareView *self, int row, int col, const char *key, const char *text,
                     gboolean numeric, gboolean header)
{
    GtkWidget *l = gtk_label_new(NULL);
    if (header) {
        char *m = g_markup_printf_escaped("<b>%s</b>", text);
        gtk_label_set_markup(GTK_LABEL(l), m);
        g_free(m);
        gtk_widget_add_css_class(l, "dim-label");
    } else if (text && g_str_has_prefix(text, "<span"))
        gtk_label_set_markup(GTK_LABEL(l), text);
    else
        gtk_label_set_text(GTK_LABEL(l), text);
    gtk_label_set_xalign(GTK_LABEL(l), numeric ? 1 : 0);
    if (numeric)
        gtk_widget_add_css_class(l, "numeric");
    gtk_grid_attach(self->metrics_grid, l, col, row, 1, 1);
    if (!header && key)
        g_hash_table_insert(self->cells, g_strdup_printf("%d:%s", row - 1, key), l);
}

static void fill_metrics(LarmorCompareView *self)
{
    GtkWidget *child;
    while ((child = gtk_widget_get_first_child(GTK_WIDGET(self->metrics_grid))))
        gtk_grid_remove(self->metrics_grid, child);
    g_hash_table_remove_all(self->cells);
    static const char *heads[] = { "", "Run", "Kernel", "λ", "Coils", "Iter", "Time", "Gpairs/s", "GFLOPS", "PSNR (dB)", "Error (%)" };
    static const char *keys[] = { "swatch", "run", "variant", "lambda", "coils", "iters", "time", "gpairs", "gflops", "psnr", "error" };
    static const char *tips[] = {
        NULL, NULL, NULL, NULL,
        "Channels and how they were combined: SENSE (given maps), SENSE est. (estimated maps), rss "
        "(root-sum-of-squares); “—”: one coil",
        NULL, "Whole run: Q, Fᴴd and the solve (or gridding)",
        "Fᴴd throughput: M samples × N voxels pairs per second of Fᴴd time, in 10⁹; comparable across every kernel, "
        "NUFFT included",
        "Fᴴd floating-point rate by the direct-sum count; only for kernels that evaluate the direct sum (“—” for "
        "NUFFT and separable kernels)",
        "Against the truth loaded now; in parentheses: stale", "100 RMS(I − I0) / RMS(I0); in parentheses: stale" };
    G_STATIC_ASSERT(G_N_ELEMENTS(heads) == G_N_ELEMENTS(keys) && G_N_ELEMENTS(keys) == G_N_ELEMENTS(tips));
    enum { NCOL = G_N_ELEMENTS(heads) };
    if (self->runs->len == 0) {
        GtkWidget *l = gtk_label_new("No runs to compare");
        gtk_widget_add_css_class(l, "dim-label");
        gtk_grid_attach(self->metrics_grid, l, 0, 0, 1, 1);
        return;
    }
    for (int c = 0; c < NCOL; c++) {
        add_cell(self, 0, c, NULL, heads[c], c >= 3, TRUE);
        if (tips[c])
            gtk_widget_set_tooltip_text(gtk_grid_get_child_at(self->metrics_grid, c, 0), tips[c]);
    }
    for (guint r = 0; r < self->runs->len; r++) {
        LarmorRun *run = self->runs->pdata[r];
        const LarmorReconParams *p = larmor_run_get_params(run);
        gboolean cg = p->method == LM_METHOD_CG;
        GdkRGBA c;
        larmor_palette_color(larmor_run_get_index(run) - 1, &c);
        char *cells[NCOL];
        cells[0] = g_strdup_printf("<span foreground=\"#%02x%02x%02x\">■</span>", (int)(c.red * 255),
                                   (int)(c.green * 255), (int)(c.blue * 255));
        /* The solver (ADMM for tv and wavelet), the regulariser and the
         * field-map correction: runs that differ in them never read alike. */
        char *fm = larmor_run_get_fieldmap_text(run);
        cells[1] = cg ? g_strdup_printf("#%d %s · %s%s%s", larmor_run_get_index(run), larmor_run_get_solver(run),
                                        larmor_run_get_reg_text(run), *fm ? " · " : "", fm)
                      : g_strdup_printf("#%d %s%s%s", larmor_run_get_index(run), larmor_method_label(p->method),
                                        *fm ? " · " : "", fm);
        g_free(fm);
        cells[2] = g_strdup(cg ? larmor_run_get_variant_text(run) : "—");
        cells[3] = cg ? larmor_format_lambda(p->lambda) : g_strdup("—");
        cells[4] = larmor_run_get_coils_text(run);
        cells[5] = cg ? g_strdup_printf("%d", larmor_run_get_iters_done(run)) : g_strdup("—");
        cells[6] = larmor_format_seconds(larmor_run_get_time_total(run));
        cells[7] = larmor_format_number("%.3g", larmor_run_get_gpairs(run));
        cells[8] = larmor_format_number("%.1f", larmor_run_get_gflops(run));
        cells[9] = larmor_format_number("%.2f", larmor_run_get_psnr(run));
        cells[10] = larmor_format_number("%.2f", larmor_run_get_percent_error(run));
        if (larmor_run_get_metrics_stale(run) && larmor_run_has_metrics(run))
            for (int k = 9; k < 11; k++) {
                char *t = g_strdup_printf("(%s)", cells[k]);
                g_free(cells[k]);
                cells[k] = t;
            }
        for (int k = 0; k < NCOL; k++) {
            add_cell(self, (int)r + 1, k, keys[k], cells[k], k >= 3, FALSE);
            g_free(cells[k]);
        }
    }
}

static void fill_plot(LarmorCompareView *self)
{
    larmor_plot_clear(self->conv_plot);
    larmor_plot_set_title(self->conv_plot, "CG convergence");
    larmor_plot_set_axes(self->conv_plot, "iteration", FALSE, "‖r‖ / ‖b‖", TRUE);
    larmor_plot_set_placeholder(self->conv_plot, "No CG runs to plot");
    for (guint r = 0; r < self->runs->len; r++) {
        LarmorRun *run = self->runs->pdata[r];
        int n;
        const double *res = larmor_run_get_residuals(run, &n);
        if (!res || n < 2)
            continue;
        double *x = g_new(double, n);
        for (int i = 0; i < n; i++)
            x[i] = i;
        char *label = g_strdup_printf("#%d", larmor_run_get_index(run));
        larmor_plot_add_series(self->conv_plot, label, x, res, n, LARMOR_PLOT_LINES,
                               larmor_run_get_index(run) - 1);
        g_free(label);
        g_free(x);
    }
}

static void rebuild(LarmorCompareView *self)
{
    clear_panels(self);
    if (self->truth) {
        self->panels[self->n_panels++].volume = g_object_ref(self->truth);
    }
    /* Every panel on one grid, the truth's (else the first run's): runs at
     * another matrix, FOV or position are resampled through the affines,
     * so the same voxel is the same place in the scanner in every panel. */
    LarmorVolume *ref = self->truth;
    for (guint r = 0; r < self->runs->len && self->n_panels <= LARMOR_COMPARE_MAX_RUNS; r++) {
        LarmorRun *run = self->runs->pdata[r];
        LarmorVolume *img = larmor_run_get_image(run);
        if (!img)
            continue;
        if (!ref)
            ref = img;
        LarmorVolume *aligned = larmor_volume_aligned_to(img, ref);
        if (!aligned)
            continue;
        Panel *p = &self->panels[self->n_panels++];
        p->volume = aligned;
        p->resampled = aligned != img;
        p->run = g_object_ref(run);
        if (self->truth)
            p->diff = larmor_volume_new_difference(p->volume, self->truth, "difference");
    }
    gboolean diffs = gtk_toggle_button_get_active(self->diff_toggle) && self->truth;
    gtk_widget_set_sensitive(GTK_WIDGET(self->diff_toggle), self->truth != NULL);
    gtk_widget_set_sensitive(GTK_WIDGET(self->gain_dropdown), diffs);

    if (self->n_panels > 0) {
        /* Keep cursor and window when the grid stays; start fresh otherwise. */
        const lm_volume *v = larmor_volume_get_data(self->panels[0].volume);
        gboolean regrid = v->dims[0] != self->grid_dims[0] || v->dims[1] != self->grid_dims[1] ||
                          v->dims[2] != self->grid_dims[2];
        for (int a = 0; a < 3; a++)
            self->grid_dims[a] = v->dims[a];
        larmor_view_state_set_dims(self->state, v->dims);
        if (regrid)
            auto_window(self);
    }
    for (int i = 0; i < self->n_panels; i++) {
        Panel *p = &self->panels[i];
        GtkWidget *col = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
        gtk_widget_add_css_class(col, "compare-panel");
        gtk_box_append(GTK_BOX(col), make_header(self, p));
        p->view = make_view(self, p->volume);
        gtk_box_append(GTK_BOX(col), GTK_WIDGET(p->view));
        gtk_grid_attach(self->panels_grid, col, i, 0, 1, 1);
        if (diffs) {
            GtkWidget *dcol = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
            gtk_widget_add_css_class(dcol, "compare-panel");
            if (p->diff) {
                GtkWidget *h = gtk_label_new(NULL);
                char *m = g_strdup_printf("<b>#%d − truth</b>", larmor_run_get_index(p->run));
                gtk_label_set_markup(GTK_LABEL(h), m);
                g_free(m);
                gtk_label_set_xalign(GTK_LABEL(h), 0);
                gtk_widget_add_css_class(h, "panel-header");
                gtk_box_append(GTK_BOX(dcol), h);
                p->diff_view = make_view(self, p->diff);
                larmor_slice_view_set_gain(p->diff_view, current_gain(self));
                char *t = g_strdup_printf("×%g", current_gain(self));
                larmor_slice_view_set_title(p->diff_view, t);
                g_free(t);
                gtk_box_append(GTK_BOX(dcol), GTK_WIDGET(p->diff_view));
            } else {
                char *t = p->run ? g_strdup("Not on the truth's grid")
                                 : g_strdup_printf("Below each run: run − truth\n×%g, same window and level", current_gain(self));
                GtkWidget *l = gtk_label_new(t);
                g_free(t);
                gtk_widget_add_css_class(l, "dim-label");
                gtk_widget_set_vexpand(l, TRUE);
                gtk_label_set_wrap(GTK_LABEL(l), TRUE);
                gtk_label_set_justify(GTK_LABEL(l), GTK_JUSTIFY_CENTER);
                gtk_box_append(GTK_BOX(dcol), l);
            }
            gtk_grid_attach(self->panels_grid, dcol, i, 1, 1, 1);
        }
    }
    apply_link(self);
    larmor_time_bar_set_volume(self->time_bar, self->n_panels ? self->panels[0].volume : NULL);
    gtk_stack_set_visible_child_name(self->panels_stack, self->n_panels ? "panels" : "empty");
    fill_metrics(self);
    fill_roi(self);
    fill_profile(self);
    fill_plot(self);
    sync_slider(self);
    int64_t ijk[3];
    larmor_view_state_get_cursor(self->state, ijk);
    show_values(self, ijk, FALSE);
}

/* Unlinked panels keep their own views but always show the same frame. */
static void set_frame(LarmorViewState *st, gpointer frame)
{
    larmor_view_state_set_frame(st, GPOINTER_TO_INT(frame));
}

static void on_frame(LarmorViewState *state, GParamSpec *pspec, LarmorCompareView *self)
{
    each_state(self, set_frame, GINT_TO_POINTER(larmor_view_state_get_frame(state)));
    fill_roi(self); /* the table and the profile measure the frame shown */
    fill_profile(self);
    int64_t ijk[3];
    larmor_view_state_get_cursor(state, ijk);
    show_values(self, ijk, FALSE);
}

LarmorTimeBar *larmor_compare_view_get_time_bar(LarmorCompareView *self)
{
    return self->time_bar;
}

static void on_diff(GtkToggleButton *b, GParamSpec *pspec, LarmorCompareView *self)
{
    rebuild(self);
}

/* --- public ------------------------------------------------------------ */

GtkWidget *larmor_compare_view_new(void)
{
    return g_object_new(LARMOR_TYPE_COMPARE_VIEW, NULL);
}

void larmor_compare_view_set_truth(LarmorCompareView *self, LarmorVolume *truth)
{
    g_set_object(&self->truth, truth);
    rebuild(self);
}

void larmor_compare_view_set_runs(LarmorCompareView *self, LarmorRun *const *runs, int n)
{
    g_ptr_array_set_size(self->runs, 0);
    for (int i = 0; i < n && i < LARMOR_COMPARE_MAX_RUNS; i++)
        g_ptr_array_add(self->runs, g_object_ref(runs[i]));
    rebuild(self);
}

void larmor_compare_view_set_differences(LarmorCompareView *self, gboolean show)
{
    gtk_toggle_button_set_active(self->diff_toggle, show);
}

gboolean larmor_compare_view_get_differences(LarmorCompareView *self)
{
    return gtk_toggle_button_get_active(self->diff_toggle);
}

LarmorOrientation larmor_compare_view_get_orientation(LarmorCompareView *self)
{
    return self->orientation;
}

void larmor_compare_view_set_orientation(LarmorCompareView *self, LarmorOrientation o)
{
    if ((guint)o < 3)
        gtk_drop_down_set_selected(self->orient_dropdown, o);
}

gboolean larmor_compare_view_get_linked(LarmorCompareView *self)
{
    return gtk_toggle_button_get_active(self->link_toggle);
}

void larmor_compare_view_set_linked(LarmorCompareView *self, gboolean linked)
{
    gtk_toggle_button_set_active(self->link_toggle, linked);
}

LarmorViewState *larmor_compare_view_get_state(LarmorCompareView *self)
{
    return self->state;
}

LarmorSliceView *larmor_compare_view_get_panel(LarmorCompareView *self, int i)
{
    return i >= 0 && i < self->n_panels ? self->panels[i].view : NULL;
}

LarmorVolume *larmor_compare_view_get_volume(LarmorCompareView *self, int i, LarmorVolume **difference)
{
    if (i < 0 || i >= self->n_panels) {
        if (difference)
            *difference = NULL;
        return NULL;
    }
    if (difference)
        *difference = self->panels[i].diff;
    return self->panels[i].volume;
}

const char *larmor_compare_view_get_metric_text(LarmorCompareView *self, int row, const char *column)
{
    char *key = g_strdup_printf("%d:%s", row, column);
    GtkLabel *l = g_hash_table_lookup(self->cells, key);
    g_free(key);
    return l ? gtk_label_get_text(l) : NULL;
}

GtkWidget *larmor_compare_view_get_panels_widget(LarmorCompareView *self)
{
    return GTK_WIDGET(self);
}

GtkWidget *larmor_compare_view_get_toolbar(LarmorCompareView *self)
{
    return self->toolbar;
}

static gboolean key_diff(GtkWidget *widget, GVariant *args, gpointer user)
{
    LarmorCompareView *self = LARMOR_COMPARE_VIEW(widget);
    gtk_toggle_button_set_active(self->diff_toggle, !gtk_toggle_button_get_active(self->diff_toggle));
    return TRUE;
}

static void larmor_compare_view_dispose(GObject *object)
{
    LarmorCompareView *self = LARMOR_COMPARE_VIEW(object);
    if (self->state)
        g_signal_handlers_disconnect_by_data(self->state, self);
    if (self->panels_grid)
        clear_panels(self);
    gtk_widget_dispose_template(GTK_WIDGET(object), LARMOR_TYPE_COMPARE_VIEW);
    /* The template's unnamed top box is not cleared by dispose_template in 4.8. */
    for (GtkWidget *c; (c = gtk_widget_get_first_child(GTK_WIDGET(object)));)
        gtk_widget_unparent(c);
    self->panels_grid = NULL;
    g_clear_object(&self->truth);
    g_clear_object(&self->state);
    g_clear_pointer(&self->runs, g_ptr_array_unref);
    g_clear_pointer(&self->cells, g_hash_table_unref);
    clear_roi_rows(self);
    clear_profile(self);
    G_OBJECT_CLASS(larmor_compare_view_parent_class)->dispose(object);
}

static void larmor_compare_view_class_init(LarmorCompareViewClass *klass)
{
    GtkWidgetClass *wc = GTK_WIDGET_CLASS(klass);
    G_OBJECT_CLASS(klass)->dispose = larmor_compare_view_dispose;
    g_type_ensure(LARMOR_TYPE_PLOT);
    larmor_resources_ensure();
    g_type_ensure(LARMOR_TYPE_WRAP_BOX); /* the toolbar */
    gtk_widget_class_set_template_from_resource(wc, LARMOR_RESOURCE_PATH "/ui/larmor-compare-view.ui");
    gtk_widget_class_set_layout_manager_type(wc, GTK_TYPE_BIN_LAYOUT);
#define CHILD(name) gtk_widget_class_bind_template_child(wc, LarmorCompareView, name)
    CHILD(toolbar);
    CHILD(orient_dropdown);
    CHILD(mode_dropdown);
    CHILD(cmap_dropdown);
    CHILD(diff_toggle);
    CHILD(gain_dropdown);
    CHILD(link_toggle);
    CHILD(auto_button);
    CHILD(slice_adjustment);
    CHILD(slice_scale);
    CHILD(panels_stack);
    CHILD(panels_grid);
    CHILD(metrics_grid);
    CHILD(conv_plot);
    CHILD(status_label);
    CHILD(roi_rect_toggle);
    CHILD(roi_ellipse_toggle);
    CHILD(roi_box);
    CHILD(roi_title);
    CHILD(roi_grid);
    CHILD(roi_export_button);
    CHILD(roi_noise_button);
    CHILD(roi_noise_clear_button);
    CHILD(line_toggle);
    CHILD(profile_box);
    CHILD(profile_title);
    CHILD(profile_plot);
    CHILD(profile_export_button);
#undef CHILD
    gtk_widget_class_add_binding(wc, GDK_KEY_d, 0, key_diff, NULL);
}

/* Slices count from 0 on screen, as in the views' labels and the cursor read-out. */
static char *format_slice(GtkScale *scale, double value, gpointer data)
{
    LarmorCompareView *self = data;
    int64_t dims[3];
    larmor_view_state_get_dims(self->state, dims);
    return larmor_format_slice(normal_axis(self), lround(value), (long long)dims[normal_axis(self)]);
}

static void larmor_compare_view_init(LarmorCompareView *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    self->state = larmor_view_state_new();
    self->runs = g_ptr_array_new_with_free_func(g_object_unref);
    self->cells = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    gtk_drop_down_set_selected(self->gain_dropdown, 1); /* x2: differences are small */
    g_signal_connect(self->orient_dropdown, "notify::selected", G_CALLBACK(on_orientation), self);
    g_signal_connect(self->mode_dropdown, "notify::selected", G_CALLBACK(on_mode), self);
    g_signal_connect(self->cmap_dropdown, "notify::selected", G_CALLBACK(on_cmap), self);
    g_signal_connect(self->gain_dropdown, "notify::selected", G_CALLBACK(on_gain), self);
    g_signal_connect(self->diff_toggle, "notify::active", G_CALLBACK(on_diff), self);
    g_signal_connect(self->link_toggle, "notify::active", G_CALLBACK(on_link), self);
    g_signal_connect(self->auto_button, "clicked", G_CALLBACK(on_auto), self);
    g_signal_connect(self->slice_adjustment, "value-changed", G_CALLBACK(on_slider), self);
    gtk_scale_set_format_value_func(self->slice_scale, format_slice, self, NULL);
    g_signal_connect(self->state, "notify::cursor-x", G_CALLBACK(on_state_cursor), self);
    g_signal_connect(self->state, "notify::cursor-y", G_CALLBACK(on_state_cursor), self);
    g_signal_connect(self->state, "notify::cursor-z", G_CALLBACK(on_state_cursor), self);
    g_signal_connect(self->state, "roi-changed", G_CALLBACK(on_roi_changed), self);
    g_signal_connect(self->state, "notify::roi-tool", G_CALLBACK(on_roi_tool), self);
    larmor_bind_roi_tool(G_OBJECT(self->state), self->roi_rect_toggle, self->roi_ellipse_toggle);
    g_signal_connect(self->roi_export_button, "clicked", G_CALLBACK(on_roi_export), self);
    g_signal_connect(self->roi_noise_button, "clicked", G_CALLBACK(on_noise), self);
    g_signal_connect(self->roi_noise_clear_button, "clicked", G_CALLBACK(on_noise_clear), self);
    g_signal_connect(self->state, "line-changed", G_CALLBACK(on_line_changed), self);
    larmor_bind_line_tool(G_OBJECT(self->state), self->line_toggle);
    g_signal_connect(self->profile_export_button, "clicked", G_CALLBACK(on_profile_export), self);
    larmor_plot_set_placeholder(self->profile_plot, "Draw a line");
    /* Dynamic runs: one time bar steps every panel's frame together. */
    self->time_bar = LARMOR_TIME_BAR(larmor_time_bar_new(self->state));
    gtk_widget_insert_before(GTK_WIDGET(self->time_bar), gtk_widget_get_parent(GTK_WIDGET(self->status_label)),
                             GTK_WIDGET(self->status_label));
    g_signal_connect(self->state, "notify::frame", G_CALLBACK(on_frame), self);
    rebuild(self);
}
