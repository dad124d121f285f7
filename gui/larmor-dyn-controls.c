#include "larmor-dyn-controls.h"

struct _LarmorDynControls {
    GtkWidget parent_instance;
    GtkDropDown *prior;
    GtkSpinButton *lambda_t, *lambda_s, *iters;
    GtkToggleButton *live;
};

G_DEFINE_FINAL_TYPE(LarmorDynControls, larmor_dyn_controls, GTK_TYPE_WIDGET)

enum { SIGNAL_LAMBDA_CHANGED, SIGNAL_CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];

static const char *const prior_labels[LARMOR_N_DYN_PRIORS] = {
    "ttv — temporal TV",
    "ttv+tv — temporal and spatial TV",
    "llr — locally low rank",
    "Frame by frame (λt = 0)",
};

/* lambda_s only with ttv+tv; lambda_t not for frame by frame. */
static void update_sensitive(LarmorDynControls *self)
{
    const LarmorDynPrior p = larmor_dyn_controls_get_prior(self);
    gtk_widget_set_sensitive(GTK_WIDGET(self->lambda_s), p == LARMOR_DYN_TTV_TV);
    gtk_widget_set_sensitive(GTK_WIDGET(self->lambda_t), p != LARMOR_DYN_FRAME_BY_FRAME);
}

LarmorDynPrior larmor_dyn_controls_get_prior(LarmorDynControls *self)
{
    return MIN(gtk_drop_down_get_selected(self->prior), LARMOR_N_DYN_PRIORS - 1);
}

void larmor_dyn_controls_set_prior(LarmorDynControls *self, LarmorDynPrior prior)
{
    gtk_drop_down_set_selected(self->prior, MIN((guint)prior, LARMOR_N_DYN_PRIORS - 1));
}

void larmor_dyn_controls_set_lambda(LarmorDynControls *self, double lambda_t, double lambda_s)
{
    gtk_spin_button_set_value(self->lambda_t, lambda_t);
    gtk_spin_button_set_value(self->lambda_s, lambda_s);
}

double larmor_dyn_controls_get_lambda_t(LarmorDynControls *self)
{
    return gtk_spin_button_get_value(self->lambda_t);
}

void larmor_dyn_controls_set_iters(LarmorDynControls *self, int iters)
{
    gtk_spin_button_set_value(self->iters, iters);
}

GtkToggleButton *larmor_dyn_controls_get_live_toggle(LarmorDynControls *self)
{
    return self->live;
}

void larmor_dyn_controls_apply(LarmorDynControls *self, LarmorReconParams *p)
{
    const LarmorDynPrior prior = larmor_dyn_controls_get_prior(self);
    p->dynamic = TRUE;
    p->dyn_time = prior == LARMOR_DYN_LLR ? LM_DYN_TIME_LLR : prior == LARMOR_DYN_FRAME_BY_FRAME ? LM_DYN_TIME_NONE
                                                                                                : LM_DYN_TIME_TV;
    p->dyn_space_tv = prior == LARMOR_DYN_TTV_TV;
    p->lambda = prior == LARMOR_DYN_FRAME_BY_FRAME ? 0 : gtk_spin_button_get_value(self->lambda_t);
    p->lambda_space = p->dyn_space_tv ? gtk_spin_button_get_value(self->lambda_s) : 0;
    p->iters = gtk_spin_button_get_value_as_int(self->iters);
    p->lambda_auto = FALSE;
    p->prior_influence = FALSE;
    p->method = LM_METHOD_CG;
    p->fieldmap = LARMOR_FIELDMAP_OFF; /* no field-map model for frames */
}

void larmor_dyn_controls_set_params(LarmorDynControls *self, const LarmorReconParams *p)
{
    if (!p->dynamic)
        return;
    larmor_dyn_controls_set_prior(self, p->dyn_time == LM_DYN_TIME_NONE  ? LARMOR_DYN_FRAME_BY_FRAME
                                        : p->dyn_time == LM_DYN_TIME_LLR ? LARMOR_DYN_LLR
                                        : p->dyn_space_tv                ? LARMOR_DYN_TTV_TV
                                                                         : LARMOR_DYN_TTV);
    if (p->dyn_time != LM_DYN_TIME_NONE)
        gtk_spin_button_set_value(self->lambda_t, p->lambda);
    if (p->dyn_space_tv)
        gtk_spin_button_set_value(self->lambda_s, p->lambda_space);
    gtk_spin_button_set_value(self->iters, p->iters);
}

static void on_prior(LarmorDynControls *self)
{
    g_signal_emit(self, signals[SIGNAL_CHANGED], 0);
}

static void on_lambda(LarmorDynControls *self)
{
    g_signal_emit(self, signals[SIGNAL_LAMBDA_CHANGED], 0, gtk_spin_button_get_value(self->lambda_t));
}

static void larmor_dyn_controls_dispose(GObject *object)
{
    for (GtkWidget *c; (c = gtk_widget_get_first_child(GTK_WIDGET(object)));)
        gtk_widget_unparent(c);
    G_OBJECT_CLASS(larmor_dyn_controls_parent_class)->dispose(object);
}

static void larmor_dyn_controls_class_init(LarmorDynControlsClass *klass)
{
    G_OBJECT_CLASS(klass)->dispose = larmor_dyn_controls_dispose;
    gtk_widget_class_set_layout_manager_type(GTK_WIDGET_CLASS(klass), GTK_TYPE_GRID_LAYOUT);
    /* lambda-changed(lambda_t): the temporal weight moved (Live). */
    signals[SIGNAL_LAMBDA_CHANGED] = g_signal_new("lambda-changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
                                                  NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_DOUBLE);
    /* changed: the prior was chosen (what Live can re-solve depends on it). */
    signals[SIGNAL_CHANGED] = g_signal_new("changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                           NULL, G_TYPE_NONE, 0);
}

static void attach(LarmorDynControls *self, GtkWidget *w, int col, int row, int span)
{
    gtk_widget_set_parent(w, GTK_WIDGET(self));
    GtkLayoutManager *lm = gtk_widget_get_layout_manager(GTK_WIDGET(self));
    GtkGridLayoutChild *c = GTK_GRID_LAYOUT_CHILD(gtk_layout_manager_get_layout_child(lm, w));
    gtk_grid_layout_child_set_column(c, col);
    gtk_grid_layout_child_set_row(c, row);
    gtk_grid_layout_child_set_column_span(c, span);
}

static GtkWidget *row_label(const char *text, GtkWidget *target)
{
    GtkWidget *l = gtk_label_new_with_mnemonic(text);
    gtk_label_set_mnemonic_widget(GTK_LABEL(l), target);
    gtk_label_set_xalign(GTK_LABEL(l), 1);
    gtk_widget_add_css_class(l, "dim-label");
    return l;
}

static GtkSpinButton *spin(double lo, double hi, double step, int digits, double value, const char *tip)
{
    GtkSpinButton *s = GTK_SPIN_BUTTON(gtk_spin_button_new_with_range(lo, hi, step));
    gtk_spin_button_set_digits(s, digits);
    gtk_spin_button_set_value(s, value);
    gtk_widget_set_hexpand(GTK_WIDGET(s), TRUE);
    gtk_widget_set_tooltip_text(GTK_WIDGET(s), tip);
    return s;
}

static void larmor_dyn_controls_init(LarmorDynControls *self)
{
    GtkGridLayout *grid = GTK_GRID_LAYOUT(gtk_widget_get_layout_manager(GTK_WIDGET(self)));
    gtk_grid_layout_set_row_spacing(grid, 6);
    gtk_grid_layout_set_column_spacing(grid, 10);
    self->prior = GTK_DROP_DOWN(gtk_drop_down_new_from_strings((const char *const[]){
        prior_labels[0], prior_labels[1], prior_labels[2], prior_labels[3], NULL }));
    gtk_widget_set_hexpand(GTK_WIDGET(self->prior), TRUE);
    gtk_widget_set_tooltip_text(GTK_WIDGET(self->prior), "The prior across frames (ADMM over the frames' Toeplitz "
                                                         "operators); frame by frame solves each frame alone by CG");
    self->lambda_t = spin(0, 10, 0.005, 4, LM_DYN_LAMBDA_DEFAULT, "Temporal weight λt (relative, as --lambda)");
    self->lambda_s = spin(0, 10, 0.001, 4, 0.01, "Spatial TV weight λs (relative, as --lambda-space)");
    self->iters = spin(1, 200, 1, 0, LM_DYN_ITERS_DEFAULT, "ADMM iterations (" G_STRINGIFY(LM_DYN_CG_ITERS_DEFAULT) " CG steps each); CG steps frame by frame");
    self->live = GTK_TOGGLE_BUTTON(gtk_toggle_button_new_with_mnemonic("Li_ve"));
    gtk_widget_set_valign(GTK_WIDGET(self->live), GTK_ALIGN_CENTER);
    gtk_widget_set_sensitive(GTK_WIDGET(self->live), FALSE);
    GtkWidget *head = gtk_label_new("Dynamic data");
    gtk_label_set_xalign(GTK_LABEL(head), 0);
    gtk_widget_add_css_class(head, "heading");
    attach(self, head, 0, 0, 3);
    attach(self, row_label("_Prior", GTK_WIDGET(self->prior)), 0, 1, 1);
    attach(self, GTK_WIDGET(self->prior), 1, 1, 2);
    attach(self, row_label("λ _time", GTK_WIDGET(self->lambda_t)), 0, 2, 1);
    attach(self, GTK_WIDGET(self->lambda_t), 1, 2, 1);
    attach(self, GTK_WIDGET(self->live), 2, 2, 1);
    attach(self, row_label("λ _space", GTK_WIDGET(self->lambda_s)), 0, 3, 1);
    attach(self, GTK_WIDGET(self->lambda_s), 1, 3, 2);
    attach(self, row_label("_ADMM its", GTK_WIDGET(self->iters)), 0, 4, 1);
    attach(self, GTK_WIDGET(self->iters), 1, 4, 2);
    g_signal_connect_swapped(self->prior, "notify::selected", G_CALLBACK(update_sensitive), self);
    g_signal_connect_swapped(self->prior, "notify::selected", G_CALLBACK(on_prior), self);
    g_signal_connect_swapped(self->lambda_t, "value-changed", G_CALLBACK(on_lambda), self);
    update_sensitive(self);
}

GtkWidget *larmor_dyn_controls_new(void)
{
    return g_object_new(LARMOR_TYPE_DYN_CONTROLS, NULL);
}
