#include "larmor-coils-view.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "larmor-colormap.h"
#include "larmor-slice.h"
#include "larmor-util.h"

#define THUMB_PX 96 /* a thumbnail's longer side, logical pixels */

typedef struct {
    GtkFlowBox *flow;
    GtkLabel *note;
    GPtrArray *pictures; /* GtkPicture per thumbnail, in order */
    GPtrArray *labels;   /* char * shown on each */
} Section;

struct _LarmorCoilsView {
    GtkWidget parent_instance;

    /* template */
    GtkLabel *run_label;
    GtkLabel *slice_label;
    GtkToggleButton *magnitude_button;
    GtkToggleButton *phase_button;
    GtkLabel *images_heading;
    GtkLabel *images_note;
    GtkFlowBox *images_flow;
    GtkLabel *maps_heading;
    GtkLabel *maps_note;
    GtkFlowBox *maps_flow;
    GtkLabel *combined_note;
    GtkFlowBox *combined_flow;
    GtkLabel *noise_note;
    GtkDrawingArea *noise_area;
    GtkWidget *large_box;
    GtkLabel *large_label;

    Section sections[3];
    LarmorSliceView *large_view;
    LarmorViewState *large_state;
    LarmorViewState *linked;
    LarmorRun *run;
    LarmorCoilMaps *data_maps;
    int data_coils;
    LarmorMode map_mode;
    int slice;
    LarmorCoilsKind large_kind;
    int large_index;           /* -1: nothing large */
};

G_DEFINE_FINAL_TYPE(LarmorCoilsView, larmor_coils_view, GTK_TYPE_WIDGET)

/* --- what is shown ----------------------------------------------------- */

/* The maps to show: the run's (its own, or the given ones it used), else
 * the data set's. */
static LarmorCoilMaps *shown_maps(LarmorCoilsView *self)
{
    if (self->run && larmor_run_get_maps(self->run))
        return larmor_run_get_maps(self->run);
    /* A run of other data: the maps loaded now are not its. */
    if (self->run && !larmor_run_get_current(self->run))
        return NULL;
    return self->data_maps;
}

static const lm_sens *shown_images(LarmorCoilsView *self)
{
    return self->run ? larmor_run_get_coil_images(self->run) : NULL;
}

static LarmorVolume *combined_image(LarmorCoilsView *self)
{
    return self->run ? larmor_run_get_image(self->run) : NULL;
}

/* Channel c of a [n, coils] array as a volume header (no copy). */
static lm_volume channel_volume(const lm_sens *s, int64_t c)
{
    lm_volume v;
    memset(&v, 0, sizeof v);
    for (int a = 0; a < 3; a++) {
        v.dims[a] = s->n[a];
        v.voxel_mm[a] = 1;
    }
    v.data = s->s + c * lm_sens_voxels(s);
    return v;
}

/* --- thumbnails -------------------------------------------------------- */

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* A texture of one plane (pw x ph values, row 0 at the bottom on screen),
 * nearest-neighbour enlarged by an integer factor so that small matrices
 * stay sharp. */
static GdkTexture *plane_texture(const float *vals, int pw, int ph, double window, double level, LarmorColormap cm)
{
    int f = MAX(1, THUMB_PX / MAX(pw, ph));
    int tw = pw * f, th = ph * f;
    guint32 *row = g_new(guint32, pw);
    guint32 *px = g_new(guint32, (gsize)tw * th);
    for (int y = 0; y < ph; y++) {
        larmor_colormap_map(vals + (size_t)y * pw, (size_t)pw, window, level, 1, cm, row);
        /* Vertical index grows upwards on screen. */
        int ty0 = (ph - 1 - y) * f;
        for (int x = 0; x < pw; x++)
            for (int k = 0; k < f; k++)
                px[(size_t)ty0 * tw + (size_t)x * f + k] = row[x];
        for (int k = 1; k < f; k++)
            memcpy(px + (size_t)(ty0 + k) * tw, px + (size_t)ty0 * tw, (size_t)tw * sizeof *px);
    }
    g_free(row);
    GBytes *bytes = g_bytes_new_take(px, (gsize)tw * th * 4);
    GdkTexture *tex = gdk_memory_texture_new(tw, th, GDK_MEMORY_DEFAULT, bytes, (gsize)tw * 4);
    g_bytes_unref(bytes);
    return tex;
}

static void section_clear(Section *sec)
{
    GtkWidget *c;
    while ((c = gtk_widget_get_first_child(GTK_WIDGET(sec->flow))))
        gtk_flow_box_remove(sec->flow, c);
    g_ptr_array_set_size(sec->pictures, 0);
    g_ptr_array_set_size(sec->labels, 0);
}

static void section_add(Section *sec, const char *label, const char *tooltip)
{
    GtkWidget *overlay = gtk_overlay_new();
    GtkWidget *pic = gtk_picture_new();
    gtk_picture_set_can_shrink(GTK_PICTURE(pic), TRUE);
    gtk_widget_set_size_request(pic, THUMB_PX, THUMB_PX);
    gtk_widget_add_css_class(pic, "coil-thumbnail");
    gtk_overlay_set_child(GTK_OVERLAY(overlay), pic);
    GtkWidget *l = gtk_label_new(label);
    gtk_widget_set_halign(l, GTK_ALIGN_START);
    gtk_widget_set_valign(l, GTK_ALIGN_START);
    gtk_widget_add_css_class(l, "coil-number");
    gtk_overlay_add_overlay(GTK_OVERLAY(overlay), l);
    gtk_widget_set_tooltip_text(overlay, tooltip);
    gtk_flow_box_append(sec->flow, overlay);
    g_ptr_array_add(sec->pictures, pic);
    g_ptr_array_add(sec->labels, g_strdup(label));
}

/* The slice shown: the linked views' z, clamped to the data. */
static int64_t current_slice(LarmorCoilsView *self, int64_t nz)
{
    int64_t c[3] = { 0, 0, 0 };
    if (self->linked)
        larmor_view_state_get_cursor(self->linked, c);
    return CLAMP(c[2], 0, MAX(nz - 1, 0));
}

/* Fills a section's pictures from channels of s in mode; one window for
 * all of them (magnitude: 0 to the 99.5th percentile over every channel's
 * slice, so that their sensitivities compare), phase: -pi to pi. */
static void fill_section(LarmorCoilsView *self, Section *sec, const lm_sens *s, LarmorMode mode)
{
    if (!s || sec->pictures->len == 0)
        return;
    int pw = (int)s->n[0], ph = (int)s->n[1];
    size_t plane = (size_t)pw * ph;
    int64_t z = current_slice(self, s->n[2]);
    guint n = MIN(sec->pictures->len, (guint)s->ncoils);
    float *vals = g_new(float, plane * n);
    for (guint c = 0; c < n; c++) {
        lm_volume v = channel_volume(s, c);
        larmor_slice_extract(&v, LARMOR_ORIENT_AXIAL, z, mode, vals + c * plane);
    }
    double window, level;
    LarmorColormap cm = LARMOR_COLORMAP_GREY;
    if (mode == LARMOR_MODE_PHASE) {
        window = 2 * G_PI;
        level = 0;
        cm = LARMOR_COLORMAP_CYCLIC; /* no seam where the phase wraps */
    } else {
        float *sorted = g_memdup2(vals, plane * n * sizeof *vals);
        qsort(sorted, plane * n, sizeof *sorted, cmp_float);
        double hi = sorted[(size_t)(0.995 * (double)(plane * n - 1))];
        if (!(hi > 0))
            hi = sorted[plane * n - 1] > 0 ? sorted[plane * n - 1] : 1;
        g_free(sorted);
        window = hi;
        level = hi / 2;
    }
    for (guint c = 0; c < n; c++) {
        GdkTexture *t = plane_texture(vals + c * plane, pw, ph, window, level, cm);
        gtk_picture_set_paintable(sec->pictures->pdata[c], GDK_PAINTABLE(t));
        g_object_unref(t);
    }
    g_free(vals);
}

static void fill_combined(LarmorCoilsView *self)
{
    Section *sec = &self->sections[LARMOR_COILS_COMBINED];
    LarmorVolume *img = combined_image(self);
    if (!img || sec->pictures->len == 0)
        return;
    const lm_volume *v = larmor_volume_get_data(img);
    lm_sens one = { .n = { v->dims[0], v->dims[1], v->dims[2] }, .ncoils = 1, .s = v->data };
    fill_section(self, sec, &one, LARMOR_MODE_MAGNITUDE);
}

static void update_slice_label(LarmorCoilsView *self)
{
    const lm_sens *s = shown_images(self);
    LarmorCoilMaps *m = shown_maps(self);
    int64_t nz = s ? s->n[2] : m ? larmor_coil_maps_get_sens(m)->n[2] : 0;
    if (nz <= 0) {
        gtk_label_set_text(self->slice_label, "");
        return;
    }
    char *t = larmor_format_slice(2, current_slice(self, nz), nz);
    gtk_label_set_text(self->slice_label, t);
    g_free(t);
}

static void refill(LarmorCoilsView *self)
{
    fill_section(self, &self->sections[LARMOR_COILS_IMAGES], shown_images(self), LARMOR_MODE_MAGNITUDE);
    LarmorCoilMaps *m = shown_maps(self);
    fill_section(self, &self->sections[LARMOR_COILS_MAPS], m ? larmor_coil_maps_get_sens(m) : NULL, self->map_mode);
    fill_combined(self);
    update_slice_label(self);
}

/* --- large view -------------------------------------------------------- */

static LarmorVolume *volume_of(LarmorCoilsView *self, LarmorCoilsKind kind, int i, char **title)
{
    *title = NULL;
    if (kind == LARMOR_COILS_COMBINED) {
        LarmorVolume *img = combined_image(self);
        if (!img)
            return NULL;
        *title = g_strdup_printf("Combined: %s", larmor_run_get_label(self->run));
        return g_object_ref(img);
    }
    const lm_sens *s = NULL;
    if (kind == LARMOR_COILS_IMAGES)
        s = shown_images(self);
    else if (shown_maps(self))
        s = larmor_coil_maps_get_sens(shown_maps(self));
    if (!s || i < 0 || i >= s->ncoils)
        return NULL;
    LarmorVolume *ref = combined_image(self);
    double vox[3] = { 1, 1, 1 };
    if (ref)
        memcpy(vox, larmor_volume_get_data(ref)->voxel_mm, sizeof vox);
    lm_volume *v = lm_volume_new(s->n, vox, NULL);
    if (!v)
        return NULL;
    memcpy(v->data, s->s + (int64_t)i * lm_sens_voxels(s), (size_t)lm_sens_voxels(s) * sizeof(lm_cfloat));
    *title = kind == LARMOR_COILS_IMAGES ? g_strdup_printf("Coil %d image", i + 1)
                                         : g_strdup_printf("Coil %d map (%s)", i + 1,
                                                           self->map_mode == LARMOR_MODE_PHASE ? "phase" : "magnitude");
    return larmor_volume_new_take(v, *title);
}

void larmor_coils_view_show_large(LarmorCoilsView *self, LarmorCoilsKind kind, int i)
{
    char *title = NULL;
    LarmorVolume *v = volume_of(self, kind, i, &title);
    self->large_kind = kind;
    self->large_index = v ? i : -1;
    larmor_slice_view_set_volume(self->large_view, v);
    if (v) {
        const lm_volume *d = larmor_volume_get_data(v);
        larmor_view_state_set_dims(self->large_state, d->dims);
        larmor_view_state_set_cursor_axis(self->large_state, 2, current_slice(self, d->dims[2]));
        gboolean phase = kind == LARMOR_COILS_MAPS && self->map_mode == LARMOR_MODE_PHASE;
        larmor_view_state_set_mode(self->large_state, phase ? LARMOR_MODE_PHASE : LARMOR_MODE_MAGNITUDE);
        larmor_view_state_set_colormap(self->large_state, phase ? LARMOR_COLORMAP_CYCLIC : LARMOR_COLORMAP_GREY);
        larmor_slice_view_reset(self->large_view);
        larmor_slice_view_set_title(self->large_view, title);
        gtk_label_set_text(self->large_label, title);
        g_object_unref(v);
    } else {
        larmor_slice_view_set_title(self->large_view, NULL);
        gtk_label_set_text(self->large_label, "Click a thumbnail to show it here");
    }
    g_free(title);
}

LarmorSliceView *larmor_coils_view_get_large_view(LarmorCoilsView *self)
{
    return self->large_view;
}

static void on_child_activated(GtkFlowBox *flow, GtkFlowBoxChild *child, LarmorCoilsView *self)
{
    for (int k = 0; k < 3; k++)
        if (self->sections[k].flow == flow)
            larmor_coils_view_show_large(self, k, gtk_flow_box_child_get_index(child));
}

/* --- noise covariance -------------------------------------------------- */

static void draw_noise(GtkDrawingArea *area, cairo_t *cr, int width, int height, gpointer data)
{
    LarmorCoilsView *self = data;
    int n = 0;
    const lm_cfloat *cov = self->run ? larmor_run_get_noise_cov(self->run, &n) : NULL;
    if (!cov || n <= 0)
        return;
    double mx = 0;
    for (int i = 0; i < n * n; i++)
        mx = MAX(mx, cabsf(cov[i]));
    if (!(mx > 0))
        mx = 1;
    const uint32_t *lut = larmor_colormap_lut(LARMOR_COLORMAP_VIRIDIS);
    const double bar_w = 14, gap = 10, text_w = 56;
    double side = MIN(width - bar_w - gap - text_w, height - 4);
    if (side < 8)
        return;
    double cell = side / n;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            uint32_t p = lut[larmor_colormap_index(cabsf(cov[r * n + c]), mx, mx / 2, 1)];
            cairo_set_source_rgb(cr, larmor_pixel_r(p) / 255.0, larmor_pixel_g(p) / 255.0, larmor_pixel_b(p) / 255.0);
            cairo_rectangle(cr, c * cell, 2 + r * cell, cell + 0.5, cell + 0.5);
            cairo_fill(cr);
        }
    /* Colour bar: 0 at the bottom, max |cov| at the top. */
    double bx = side + gap;
    for (int k = 0; k < 256; k++) {
        uint32_t p = lut[k];
        cairo_set_source_rgb(cr, larmor_pixel_r(p) / 255.0, larmor_pixel_g(p) / 255.0, larmor_pixel_b(p) / 255.0);
        cairo_rectangle(cr, bx, 2 + side * (1 - (k + 1) / 256.0), bar_w, side / 256.0 + 0.5);
        cairo_fill(cr);
    }
    GdkRGBA fg;
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    gtk_style_context_get_color(gtk_widget_get_style_context(GTK_WIDGET(area)), &fg);
    G_GNUC_END_IGNORE_DEPRECATIONS
    gdk_cairo_set_source_rgba(cr, &fg);
    PangoLayout *layout = gtk_widget_create_pango_layout(GTK_WIDGET(area), NULL);
    char buf[32];
    g_snprintf(buf, sizeof buf, "%.3g", mx);
    pango_layout_set_text(layout, buf, -1);
    cairo_move_to(cr, bx + bar_w + 4, 0);
    pango_cairo_show_layout(cr, layout);
    pango_layout_set_text(layout, "0", -1);
    int tw, th;
    pango_layout_get_pixel_size(layout, &tw, &th);
    cairo_move_to(cr, bx + bar_w + 4, 2 + side - th);
    pango_cairo_show_layout(cr, layout);
    g_object_unref(layout);
}

GtkWidget *larmor_coils_view_get_noise_widget(LarmorCoilsView *self)
{
    return GTK_WIDGET(self->noise_area);
}

/* --- rebuild ----------------------------------------------------------- */

static void rebuild(LarmorCoilsView *self)
{
    for (int k = 0; k < 3; k++)
        section_clear(&self->sections[k]);
    LarmorRun *run = self->run;
    int coils = run ? larmor_run_get_coils(run) : self->data_coils;
    if (run) {
        /* The label names the coils ("… · SENSE 8") when there are several. */
        char *t = g_strdup_printf("%s%s", larmor_run_get_label(run), coils > 1 ? "" : " · one coil");
        gtk_label_set_text(self->run_label, t);
        g_free(t);
    } else
        gtk_label_set_text(self->run_label, "No run selected: the data set's maps");

    /* Coil images */
    const lm_sens *imgs = shown_images(self);
    char *t;
    if (imgs) {
        for (int64_t c = 0; c < imgs->ncoils; c++) {
            char num[16], *tip = g_strdup_printf("Coil %lld: its own image (click to enlarge)", (long long)c + 1);
            g_snprintf(num, sizeof num, "%lld", (long long)c + 1);
            section_add(&self->sections[LARMOR_COILS_IMAGES], num, tip);
            g_free(tip);
        }
        t = g_strdup_printf("Coil images (%lld)", (long long)imgs->ncoils);
        gtk_label_set_text(self->images_heading, t);
        g_free(t);
        gtk_label_set_text(self->images_note,
                           larmor_run_get_combine(run) == LM_COMBINE_RSS || larmor_run_get_params(run)->method != LM_METHOD_CG
                               ? "Each channel reconstructed on its own"
                               : "sᶜ ρ: the SENSE image seen through each coil's map");
    } else {
        gtk_label_set_text(self->images_heading, "Coil images");
        gtk_label_set_text(self->images_note,
                           !run            ? "Select a run on the Runs page"
                           : coils <= 1    ? "The run had one coil"
                                           : "The run kept no per-channel images (a sweep point, or an older run: the "
                                             "newest runs keep them)");
    }

    /* Maps */
    LarmorCoilMaps *maps = shown_maps(self);
    if (maps) {
        const lm_sens *s = larmor_coil_maps_get_sens(maps);
        for (int64_t c = 0; c < s->ncoils; c++) {
            char num[16], *tip = g_strdup_printf("Coil %lld: sensitivity map (click to enlarge)", (long long)c + 1);
            g_snprintf(num, sizeof num, "%lld", (long long)c + 1);
            section_add(&self->sections[LARMOR_COILS_MAPS], num, tip);
            g_free(tip);
        }
        t = g_strdup_printf("Sensitivity maps (%lld)", (long long)s->ncoils);
        gtk_label_set_text(self->maps_heading, t);
        g_free(t);
        gboolean runs_own = run && larmor_run_get_maps(run) == maps;
        if (runs_own)
            t = g_strdup_printf("Used by the run: %s", larmor_coil_maps_get_origin(maps));
        else if (run && larmor_run_get_coils(run) > 1)
            t = g_strdup_printf("The data set's (%s); the run did not use them (%s)", larmor_coil_maps_get_origin(maps),
                                larmor_run_get_combine(run) == LM_COMBINE_RSS ? "root-sum-of-squares" : "other maps");
        else
            t = g_strdup_printf("The data set's: %s", larmor_coil_maps_get_origin(maps));
        gtk_label_set_text(self->maps_note, t);
        g_free(t);
    } else {
        gtk_label_set_text(self->maps_heading, "Sensitivity maps");
        gtk_label_set_text(self->maps_note, coils <= 1 ? "One coil: no maps"
                                            : run && !larmor_run_get_current(run)
                                                ? "The run used no maps, and its data are not loaded"
                                                       : "No coil maps: open them (menu → Open Coil Maps…), or "
                                                         "estimate them in a run");
    }

    /* Combined */
    if (combined_image(self)) {
        section_add(&self->sections[LARMOR_COILS_COMBINED], "Σ", "The run's image (click to enlarge)");
        gtk_label_set_text(self->combined_note, run && larmor_run_get_combine(run) == LM_COMBINE_RSS && coils > 1
                                                    ? "Root-sum-of-squares of the coil images (magnitude)"
                                                : coils > 1 ? "One complex image from all coils"
                                                            : "The run's image");
    } else
        gtk_label_set_text(self->combined_note, run ? "The run kept no image" : "");

    /* Noise covariance */
    int ncov = 0;
    gboolean cov = run && larmor_run_get_noise_cov(run, &ncov) && ncov > 0;
    gtk_widget_set_visible(GTK_WIDGET(self->noise_area), cov);
    if (cov) {
        t = g_strdup_printf("%d × %d, magnitude, measured from the noise samples before whitening", ncov, ncov);
        gtk_label_set_text(self->noise_note, t);
        g_free(t);
    } else
        gtk_label_set_text(self->noise_note, "None: the run had no noise samples to measure it from");
    gtk_widget_queue_draw(GTK_WIDGET(self->noise_area));

    refill(self);
    /* The large view follows when what it showed is still there. */
    larmor_coils_view_show_large(self, self->large_index >= 0 ? self->large_kind : LARMOR_COILS_COMBINED,
                                 self->large_index >= 0 ? self->large_index : 0);
}

/* --- public ------------------------------------------------------------ */

GtkWidget *larmor_coils_view_new(void)
{
    return g_object_new(LARMOR_TYPE_COILS_VIEW, NULL);
}

static void on_linked_cursor(LarmorViewState *state, GParamSpec *pspec, LarmorCoilsView *self)
{
    refill(self);
    if (self->large_index >= 0) {
        int64_t d[3];
        larmor_view_state_get_dims(self->large_state, d);
        larmor_view_state_set_cursor_axis(self->large_state, 2, current_slice(self, d[2]));
    }
}

void larmor_coils_view_set_linked_state(LarmorCoilsView *self, LarmorViewState *state)
{
    if (self->linked)
        g_signal_handlers_disconnect_by_data(self->linked, self);
    g_set_object(&self->linked, state);
    if (state)
        g_signal_connect(state, "notify::cursor-z", G_CALLBACK(on_linked_cursor), self);
    refill(self);
}

void larmor_coils_view_set_data_maps(LarmorCoilsView *self, LarmorCoilMaps *maps, int ncoils)
{
    g_set_object(&self->data_maps, maps);
    self->data_coils = ncoils;
    rebuild(self);
}

void larmor_coils_view_set_run(LarmorCoilsView *self, LarmorRun *run)
{
    if (self->run == run && run)
        return;
    g_set_object(&self->run, run);
    rebuild(self);
}

LarmorRun *larmor_coils_view_get_run(LarmorCoilsView *self)
{
    return self->run;
}

void larmor_coils_view_set_map_mode(LarmorCoilsView *self, LarmorMode mode)
{
    mode = mode == LARMOR_MODE_PHASE ? LARMOR_MODE_PHASE : LARMOR_MODE_MAGNITUDE;
    if (self->map_mode == mode)
        return;
    self->map_mode = mode;
    gtk_toggle_button_set_active(mode == LARMOR_MODE_PHASE ? self->phase_button : self->magnitude_button, TRUE);
    LarmorCoilMaps *m = shown_maps(self);
    fill_section(self, &self->sections[LARMOR_COILS_MAPS], m ? larmor_coil_maps_get_sens(m) : NULL, mode);
    if (self->large_index >= 0 && self->large_kind == LARMOR_COILS_MAPS)
        larmor_coils_view_show_large(self, LARMOR_COILS_MAPS, self->large_index);
}

LarmorMode larmor_coils_view_get_map_mode(LarmorCoilsView *self)
{
    return self->map_mode;
}

int larmor_coils_view_get_slice(LarmorCoilsView *self)
{
    const lm_sens *s = shown_images(self);
    LarmorCoilMaps *m = shown_maps(self);
    int64_t nz = s ? s->n[2] : m ? larmor_coil_maps_get_sens(m)->n[2] : 1;
    return (int)current_slice(self, nz);
}

static void on_mode_toggled(GtkToggleButton *b, LarmorCoilsView *self)
{
    if (gtk_toggle_button_get_active(b))
        larmor_coils_view_set_map_mode(self, b == self->phase_button ? LARMOR_MODE_PHASE : LARMOR_MODE_MAGNITUDE);
}

int larmor_coils_view_get_count(LarmorCoilsView *self, LarmorCoilsKind kind)
{
    return (guint)kind < 3 ? (int)self->sections[kind].pictures->len : 0;
}

GtkWidget *larmor_coils_view_get_thumbnail(LarmorCoilsView *self, LarmorCoilsKind kind, int i)
{
    if ((guint)kind >= 3 || i < 0 || (guint)i >= self->sections[kind].pictures->len)
        return NULL;
    return self->sections[kind].pictures->pdata[i];
}

const char *larmor_coils_view_get_thumbnail_label(LarmorCoilsView *self, LarmorCoilsKind kind, int i)
{
    if ((guint)kind >= 3 || i < 0 || (guint)i >= self->sections[kind].labels->len)
        return NULL;
    return self->sections[kind].labels->pdata[i];
}

const char *larmor_coils_view_get_note(LarmorCoilsView *self, LarmorCoilsKind kind)
{
    switch (kind) {
    case LARMOR_COILS_IMAGES: return gtk_label_get_text(self->images_note);
    case LARMOR_COILS_MAPS: return gtk_label_get_text(self->maps_note);
    default: return gtk_label_get_text(self->combined_note);
    }
}

/* --- object ------------------------------------------------------------ */

static void larmor_coils_view_dispose(GObject *object)
{
    LarmorCoilsView *self = LARMOR_COILS_VIEW(object);
    if (self->linked)
        g_signal_handlers_disconnect_by_data(self->linked, self);
    g_clear_object(&self->linked);
    g_clear_object(&self->run);
    g_clear_object(&self->data_maps);
    g_clear_object(&self->large_state);
    for (int k = 0; k < 3; k++) {
        g_clear_pointer(&self->sections[k].pictures, g_ptr_array_unref);
        g_clear_pointer(&self->sections[k].labels, g_ptr_array_unref);
    }
    gtk_widget_dispose_template(GTK_WIDGET(object), LARMOR_TYPE_COILS_VIEW);
    /* The template's unnamed top box is not cleared by dispose_template in 4.8. */
    for (GtkWidget *c; (c = gtk_widget_get_first_child(GTK_WIDGET(object)));)
        gtk_widget_unparent(c);
    G_OBJECT_CLASS(larmor_coils_view_parent_class)->dispose(object);
}

static void larmor_coils_view_class_init(LarmorCoilsViewClass *klass)
{
    GtkWidgetClass *wc = GTK_WIDGET_CLASS(klass);
    G_OBJECT_CLASS(klass)->dispose = larmor_coils_view_dispose;
    larmor_resources_ensure();
    gtk_widget_class_set_template_from_resource(wc, LARMOR_RESOURCE_PATH "/ui/larmor-coils-view.ui");
    gtk_widget_class_set_layout_manager_type(wc, GTK_TYPE_BIN_LAYOUT);
#define CHILD(name) gtk_widget_class_bind_template_child(wc, LarmorCoilsView, name)
    CHILD(run_label);
    CHILD(slice_label);
    CHILD(magnitude_button);
    CHILD(phase_button);
    CHILD(images_heading);
    CHILD(images_note);
    CHILD(images_flow);
    CHILD(maps_heading);
    CHILD(maps_note);
    CHILD(maps_flow);
    CHILD(combined_note);
    CHILD(combined_flow);
    CHILD(noise_note);
    CHILD(noise_area);
    CHILD(large_box);
    CHILD(large_label);
#undef CHILD
}

static void larmor_coils_view_init(LarmorCoilsView *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    GtkFlowBox *flows[3] = { self->images_flow, self->maps_flow, self->combined_flow };
    GtkLabel *notes[3] = { self->images_note, self->maps_note, self->combined_note };
    for (int k = 0; k < 3; k++) {
        self->sections[k].flow = flows[k];
        self->sections[k].note = notes[k];
        self->sections[k].pictures = g_ptr_array_new();
        self->sections[k].labels = g_ptr_array_new_with_free_func(g_free);
        g_signal_connect(flows[k], "child-activated", G_CALLBACK(on_child_activated), self);
    }
    self->map_mode = LARMOR_MODE_MAGNITUDE;
    self->large_index = -1;
    self->large_state = larmor_view_state_new();
    self->large_view = LARMOR_SLICE_VIEW(larmor_slice_view_new(LARMOR_ORIENT_AXIAL));
    larmor_slice_view_set_state(self->large_view, self->large_state);
    larmor_slice_view_set_placeholder(self->large_view, "No image");
    gtk_widget_set_vexpand(GTK_WIDGET(self->large_view), TRUE);
    gtk_widget_set_hexpand(GTK_WIDGET(self->large_view), TRUE);
    gtk_box_append(GTK_BOX(self->large_box), GTK_WIDGET(self->large_view));
    gtk_drawing_area_set_draw_func(self->noise_area, draw_noise, self, NULL);
    g_signal_connect(self->magnitude_button, "toggled", G_CALLBACK(on_mode_toggled), self);
    g_signal_connect(self->phase_button, "toggled", G_CALLBACK(on_mode_toggled), self);
    rebuild(self);
}

void larmor_coils_view_set_display(LarmorCoilsView *self, gboolean radiological, gboolean show_colorbar)
{
    larmor_view_state_set_radiological(self->large_state, radiological);
    larmor_view_state_set_show_colorbar(self->large_state, show_colorbar);
}
