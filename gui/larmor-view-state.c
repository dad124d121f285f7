#include "larmor-view-state.h"

#include <math.h>

struct _LarmorViewState {
    GObject parent_instance;
    int64_t dims[3];
    int64_t cursor[3];
    double window, level;
    LarmorMode mode;
    LarmorColormap colormap;
    double zoom[3], pan[3][2];
    LarmorRoi roi, noise_roi;
    LarmorLine line;
    LarmorRoiShape roi_tool;
    gboolean radiological, show_colorbar;
    int frame;                 /* the frame of dynamic images shown */
    /* Phase switched the map to cyclic by itself: the map to go back to. */
    gboolean cmap_auto;
    LarmorColormap cmap_before_phase;
};

G_DEFINE_FINAL_TYPE(LarmorViewState, larmor_view_state, G_TYPE_OBJECT)

enum {
    PROP_0,
    PROP_CURSOR_X,
    PROP_CURSOR_Y,
    PROP_CURSOR_Z,
    PROP_WINDOW,
    PROP_LEVEL,
    PROP_MODE,
    PROP_COLORMAP,
    PROP_ROI_TOOL,
    PROP_RADIOLOGICAL,
    PROP_SHOW_COLORBAR,
    PROP_FRAME,
    N_PROPS
};
static GParamSpec *props[N_PROPS];

enum { SIGNAL_VIEW_CHANGED, SIGNAL_ROI_CHANGED, SIGNAL_LINE_CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];

static void larmor_view_state_get_property(GObject *object, guint id, GValue *value,
                                           GParamSpec *pspec)
{
    LarmorViewState *self = LARMOR_VIEW_STATE(object);
    switch (id) {
    case PROP_CURSOR_X:
    case PROP_CURSOR_Y:
    case PROP_CURSOR_Z: g_value_set_int(value, (int)self->cursor[id - PROP_CURSOR_X]); break;
    case PROP_WINDOW: g_value_set_double(value, self->window); break;
    case PROP_LEVEL: g_value_set_double(value, self->level); break;
    case PROP_MODE: g_value_set_int(value, self->mode); break;
    case PROP_COLORMAP: g_value_set_int(value, self->colormap); break;
    case PROP_ROI_TOOL: g_value_set_int(value, self->roi_tool); break;
    case PROP_RADIOLOGICAL: g_value_set_boolean(value, self->radiological); break;
    case PROP_SHOW_COLORBAR: g_value_set_boolean(value, self->show_colorbar); break;
    case PROP_FRAME: g_value_set_int(value, self->frame); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
}

static void larmor_view_state_set_property(GObject *object, guint id, const GValue *value,
                                           GParamSpec *pspec)
{
    LarmorViewState *self = LARMOR_VIEW_STATE(object);
    switch (id) {
    case PROP_CURSOR_X:
    case PROP_CURSOR_Y:
    case PROP_CURSOR_Z:
        larmor_view_state_set_cursor_axis(self, (int)(id - PROP_CURSOR_X), g_value_get_int(value));
        break;
    case PROP_WINDOW: larmor_view_state_set_window_level(self, g_value_get_double(value), self->level); break;
    case PROP_LEVEL: larmor_view_state_set_window_level(self, self->window, g_value_get_double(value)); break;
    case PROP_MODE: larmor_view_state_set_mode(self, g_value_get_int(value)); break;
    case PROP_COLORMAP: larmor_view_state_set_colormap(self, g_value_get_int(value)); break;
    case PROP_ROI_TOOL: larmor_view_state_set_roi_tool(self, g_value_get_int(value)); break;
    case PROP_RADIOLOGICAL: larmor_view_state_set_radiological(self, g_value_get_boolean(value)); break;
    case PROP_SHOW_COLORBAR: larmor_view_state_set_show_colorbar(self, g_value_get_boolean(value)); break;
    case PROP_FRAME: larmor_view_state_set_frame(self, g_value_get_int(value)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
}

static void larmor_view_state_class_init(LarmorViewStateClass *klass)
{
    GObjectClass *oc = G_OBJECT_CLASS(klass);
    oc->get_property = larmor_view_state_get_property;
    oc->set_property = larmor_view_state_set_property;
    const GParamFlags f = G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;
    props[PROP_CURSOR_X] = g_param_spec_int("cursor-x", NULL, NULL, 0, G_MAXINT, 0, f);
    props[PROP_CURSOR_Y] = g_param_spec_int("cursor-y", NULL, NULL, 0, G_MAXINT, 0, f);
    props[PROP_CURSOR_Z] = g_param_spec_int("cursor-z", NULL, NULL, 0, G_MAXINT, 0, f);
    props[PROP_WINDOW] = g_param_spec_double("window", NULL, NULL, 0, G_MAXDOUBLE, 1, f);
    props[PROP_LEVEL] = g_param_spec_double("level", NULL, NULL, -G_MAXDOUBLE, G_MAXDOUBLE, 0.5, f);
    props[PROP_MODE] = g_param_spec_int("mode", NULL, NULL, 0, LARMOR_MODE_IMAGINARY, 0, f);
    props[PROP_COLORMAP] = g_param_spec_int("colormap", NULL, NULL, 0, LARMOR_N_COLORMAPS - 1, 0, f);
    props[PROP_ROI_TOOL] = g_param_spec_int("roi-tool", NULL, NULL, 0, LARMOR_ROI_LINE, 0, f);
    props[PROP_RADIOLOGICAL] = g_param_spec_boolean("radiological", NULL, NULL, FALSE, f);
    props[PROP_SHOW_COLORBAR] = g_param_spec_boolean("show-colorbar", NULL, NULL, TRUE, f);
    props[PROP_FRAME] = g_param_spec_int("frame", NULL, NULL, 0, G_MAXINT, 0, f);
    g_object_class_install_properties(oc, N_PROPS, props);
    /* The shared region of interest changed (drawn, moved or cleared). */
    signals[SIGNAL_ROI_CHANGED] = g_signal_new("roi-changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
                                               NULL, NULL, NULL, G_TYPE_NONE, 0);
    /* The profile line changed (drawn or cleared). */
    signals[SIGNAL_LINE_CHANGED] = g_signal_new("line-changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
                                                NULL, NULL, NULL, G_TYPE_NONE, 0);

    /* Zoom or pan of one orientation changed (argument: the orientation). */
    signals[SIGNAL_VIEW_CHANGED] = g_signal_new("view-changed", G_TYPE_FROM_CLASS(klass),
                                                G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                                G_TYPE_NONE, 1, G_TYPE_INT);
}

static void larmor_view_state_init(LarmorViewState *self)
{
    for (int a = 0; a < 3; a++) {
        self->dims[a] = 1;
        self->zoom[a] = 1;
    }
    self->window = 1;
    self->level = 0.5;
    self->show_colorbar = TRUE;
}

LarmorViewState *larmor_view_state_new(void)
{
    return g_object_new(LARMOR_TYPE_VIEW_STATE, NULL);
}

void larmor_view_state_set_dims(LarmorViewState *self, const int64_t dims[3])
{
    gboolean same = TRUE;
    for (int a = 0; a < 3; a++)
        same &= self->dims[a] == MAX(dims[a], 1);
    if (same)
        return;
    int64_t c[3];
    for (int a = 0; a < 3; a++) {
        self->dims[a] = MAX(dims[a], 1);
        c[a] = self->dims[a] / 2;
    }
    larmor_view_state_set_cursor(self, c);
}

void larmor_view_state_get_dims(LarmorViewState *self, int64_t dims[3])
{
    for (int a = 0; a < 3; a++)
        dims[a] = self->dims[a];
}

void larmor_view_state_get_cursor(LarmorViewState *self, int64_t ijk[3])
{
    for (int a = 0; a < 3; a++)
        ijk[a] = self->cursor[a];
}

void larmor_view_state_set_cursor(LarmorViewState *self, const int64_t ijk[3])
{
    g_object_freeze_notify(G_OBJECT(self));
    for (int a = 0; a < 3; a++)
        larmor_view_state_set_cursor_axis(self, a, ijk[a]);
    g_object_thaw_notify(G_OBJECT(self));
}

void larmor_view_state_set_cursor_axis(LarmorViewState *self, int axis, int64_t value)
{
    g_return_if_fail(axis >= 0 && axis < 3);
    value = CLAMP(value, 0, self->dims[axis] - 1);
    if (self->cursor[axis] == value)
        return;
    self->cursor[axis] = value;
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_CURSOR_X + axis]);
}

double larmor_view_state_get_window(LarmorViewState *self)
{
    return self->window;
}

double larmor_view_state_get_level(LarmorViewState *self)
{
    return self->level;
}

void larmor_view_state_set_window_level(LarmorViewState *self, double window, double level)
{
    if (!isfinite(window) || !isfinite(level))
        return;
    window = MAX(window, 1e-12);
    g_object_freeze_notify(G_OBJECT(self));
    if (window != self->window) {
        self->window = window;
        g_object_notify_by_pspec(G_OBJECT(self), props[PROP_WINDOW]);
    }
    if (level != self->level) {
        self->level = level;
        g_object_notify_by_pspec(G_OBJECT(self), props[PROP_LEVEL]);
    }
    g_object_thaw_notify(G_OBJECT(self));
}

LarmorMode larmor_view_state_get_mode(LarmorViewState *self)
{
    return self->mode;
}

void larmor_view_state_set_mode(LarmorViewState *self, LarmorMode mode)
{
    if ((unsigned)mode > LARMOR_MODE_IMAGINARY || mode == self->mode)
        return;
    LarmorMode old = self->mode;
    self->mode = mode;
    g_object_freeze_notify(G_OBJECT(self));
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_MODE]);
    /* Phase wraps: show it with the cyclic map, and go back to the map of
     * before when leaving phase, unless the user picked one meanwhile. */
    if (mode == LARMOR_MODE_PHASE && self->colormap != LARMOR_COLORMAP_CYCLIC) {
        LarmorColormap before = self->colormap;
        larmor_view_state_set_colormap(self, LARMOR_COLORMAP_CYCLIC);
        self->cmap_auto = TRUE;
        self->cmap_before_phase = before;
    } else if (old == LARMOR_MODE_PHASE && self->cmap_auto) {
        larmor_view_state_set_colormap(self, self->cmap_before_phase);
    }
    g_object_thaw_notify(G_OBJECT(self));
}

LarmorColormap larmor_view_state_get_colormap(LarmorViewState *self)
{
    return self->colormap;
}

void larmor_view_state_set_colormap(LarmorViewState *self, LarmorColormap cm)
{
    if ((unsigned)cm >= LARMOR_N_COLORMAPS)
        return;
    self->cmap_auto = FALSE; /* a map set from outside is the user's choice */
    if (cm == self->colormap)
        return;
    self->colormap = cm;
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_COLORMAP]);
}

LarmorColormap larmor_view_state_get_user_colormap(LarmorViewState *self)
{
    return self->cmap_auto ? self->cmap_before_phase : self->colormap;
}

gboolean larmor_view_state_get_radiological(LarmorViewState *self)
{
    return self->radiological;
}

void larmor_view_state_set_radiological(LarmorViewState *self, gboolean radiological)
{
    radiological = !!radiological;
    if (radiological == self->radiological)
        return;
    self->radiological = radiological;
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_RADIOLOGICAL]);
}

gboolean larmor_view_state_get_show_colorbar(LarmorViewState *self)
{
    return self->show_colorbar;
}

void larmor_view_state_set_show_colorbar(LarmorViewState *self, gboolean show)
{
    show = !!show;
    if (show == self->show_colorbar)
        return;
    self->show_colorbar = show;
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_SHOW_COLORBAR]);
}

double larmor_view_state_get_zoom(LarmorViewState *self, LarmorOrientation o)
{
    return self->zoom[o];
}

void larmor_view_state_get_pan(LarmorViewState *self, LarmorOrientation o, double *px, double *py)
{
    *px = self->pan[o][0];
    *py = self->pan[o][1];
}

void larmor_view_state_set_zoom_pan(LarmorViewState *self, LarmorOrientation o, double zoom,
                                    double px, double py)
{
    zoom = CLAMP(zoom, 0.25, 64.0);
    px = CLAMP(px, -2.0, 2.0);
    py = CLAMP(py, -2.0, 2.0);
    if (zoom == self->zoom[o] && px == self->pan[o][0] && py == self->pan[o][1])
        return;
    self->zoom[o] = zoom;
    self->pan[o][0] = px;
    self->pan[o][1] = py;
    g_signal_emit(self, signals[SIGNAL_VIEW_CHANGED], 0, (int)o);
}

void larmor_view_state_reset_zoom(LarmorViewState *self)
{
    for (int o = 0; o < 3; o++)
        larmor_view_state_set_zoom_pan(self, o, 1, 0, 0);
}

void larmor_view_state_get_roi(LarmorViewState *self, LarmorRoi *roi)
{
    *roi = self->roi;
}

void larmor_view_state_set_roi(LarmorViewState *self, const LarmorRoi *roi)
{
    if (larmor_roi_equal(&self->roi, roi))
        return;
    self->roi = *roi;
    g_signal_emit(self, signals[SIGNAL_ROI_CHANGED], 0);
}

void larmor_view_state_clear_roi(LarmorViewState *self)
{
    const LarmorRoi none = { .shape = LARMOR_ROI_NONE };
    larmor_view_state_set_roi(self, &none);
}

void larmor_view_state_get_noise_roi(LarmorViewState *self, LarmorRoi *roi)
{
    *roi = self->noise_roi;
}

void larmor_view_state_set_noise_roi(LarmorViewState *self, const LarmorRoi *roi)
{
    if (larmor_roi_equal(&self->noise_roi, roi))
        return;
    self->noise_roi = *roi;
    g_signal_emit(self, signals[SIGNAL_ROI_CHANGED], 0);
}

void larmor_view_state_get_line(LarmorViewState *self, LarmorLine *line)
{
    *line = self->line;
}

void larmor_view_state_set_line(LarmorViewState *self, const LarmorLine *line)
{
    if (larmor_line_equal(&self->line, line))
        return;
    self->line = *line;
    g_signal_emit(self, signals[SIGNAL_LINE_CHANGED], 0);
}

LarmorRoiShape larmor_view_state_get_roi_tool(LarmorViewState *self)
{
    return self->roi_tool;
}

void larmor_view_state_set_roi_tool(LarmorViewState *self, LarmorRoiShape tool)
{
    tool = CLAMP(tool, LARMOR_ROI_NONE, LARMOR_ROI_LINE);
    if (self->roi_tool == tool)
        return;
    self->roi_tool = tool;
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_ROI_TOOL]);
}

int larmor_view_state_get_frame(LarmorViewState *self)
{
    return self->frame;
}

void larmor_view_state_set_frame(LarmorViewState *self, int frame)
{
    frame = MAX(frame, 0);
    if (frame == self->frame)
        return;
    self->frame = frame;
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_FRAME]);
}
