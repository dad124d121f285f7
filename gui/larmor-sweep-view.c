#include "larmor-sweep-view.h"

#include <math.h>

#include "larmor-util.h"

struct _LarmorSweepView {
    GtkWidget parent_instance;
    GtkDropDown *kind_dropdown;
    GtkLabel *summary_label;
    GtkWidget *use_button;
    LarmorPlot *plot;
    GPtrArray *runs;
    int best;
};

G_DEFINE_FINAL_TYPE(LarmorSweepView, larmor_sweep_view, GTK_TYPE_WIDGET)

enum { SIGNAL_USE_LAMBDA, N_SIGNALS };
static guint signals[N_SIGNALS];

int larmor_lcurve_corner(const double *residual, const double *reg, int n)
{
    int best = -1;
    double best_k = -INFINITY;
    for (int i = 1; i + 1 < n; i++) {
        double p[3][2];
        gboolean ok = TRUE;
        for (int k = 0; k < 3; k++) {
            double a = residual[i - 1 + k], b = reg[i - 1 + k];
            ok &= isfinite(a) && isfinite(b) && a > 0 && b > 0;
            p[k][0] = log10(a);
            p[k][1] = log10(b);
        }
        if (!ok)
            continue;
        /* Menger curvature: 4 * area / product of the side lengths; signed so
         * that the L's corner (convex towards the origin) is positive. */
        double ax = p[1][0] - p[0][0], ay = p[1][1] - p[0][1];
        double bx = p[2][0] - p[1][0], by = p[2][1] - p[1][1];
        double cx = p[2][0] - p[0][0], cy = p[2][1] - p[0][1];
        double cross = ax * by - ay * bx;
        double d = hypot(ax, ay) * hypot(bx, by) * hypot(cx, cy);
        if (d <= 0)
            continue;
        double k = 2 * cross / d;
        /* lambda grows along the sweep: residual up, reg norm down; the
         * corner then turns left (cross > 0). */
        if (k > best_k) {
            best_k = k;
            best = i;
        }
    }
    return best;
}

static gboolean has_errors(GPtrArray *runs)
{
    for (guint i = 0; runs && i < runs->len; i++)
        if (larmor_run_has_metrics(runs->pdata[i]))
            return TRUE;
    return FALSE;
}

static void redraw(LarmorSweepView *self)
{
    larmor_plot_clear(self->plot);
    self->best = -1;
    gtk_widget_set_sensitive(self->use_button, FALSE);
    if (!self->runs || self->runs->len == 0) {
        larmor_plot_set_placeholder(self->plot, "No sweep yet");
        return;
    }
    int n = (int)self->runs->len;
    double *lam = g_new(double, n), *err = g_new(double, n), *res = g_new(double, n), *reg = g_new(double, n);
    char **labels = g_new0(char *, n + 1);
    for (int i = 0; i < n; i++) {
        LarmorRun *r = self->runs->pdata[i];
        lam[i] = larmor_run_get_params(r)->lambda;
        err[i] = larmor_run_get_percent_error(r);
        res[i] = larmor_run_get_data_norm(r);
        reg[i] = larmor_run_get_reg_norm(r);
        labels[i] = g_strdup_printf("%.2g", lam[i]);
    }
    gboolean lcurve = gtk_drop_down_get_selected(self->kind_dropdown) == 1;
    char *summary = NULL;
    if (!lcurve) {
        larmor_plot_set_title(self->plot, "Percent error against λ");
        larmor_plot_set_axes(self->plot, "λ", TRUE, "error (%)", FALSE);
        larmor_plot_set_placeholder(self->plot, "No truth: errors unknown (choose the L-curve)");
        larmor_plot_add_series(self->plot, "error", lam, err, n, LARMOR_PLOT_LINES | LARMOR_PLOT_MARKERS, 0);
        for (int i = 0; i < n; i++)
            if (isfinite(err[i]) && (self->best < 0 || err[i] < err[self->best]))
                self->best = i;
        if (self->best >= 0) {
            char *t = g_strdup_printf("λ %.2g: %.2f %%", lam[self->best], err[self->best]);
            larmor_plot_set_highlight(self->plot, lam[self->best], err[self->best], t);
            g_free(t);
            LarmorRun *b = self->runs->pdata[self->best];
            summary = g_strdup_printf("Best λ = %.2g: %.2f %% error, PSNR %.2f dB (%d values from %.2g to %.2g)",
                                      lam[self->best], err[self->best], larmor_run_get_psnr(b), n, lam[0], lam[n - 1]);
        }
    } else {
        larmor_plot_set_title(self->plot, "L-curve");
        larmor_plot_set_axes(self->plot, "‖Eρ − d‖", TRUE, "‖Wρ‖", TRUE);
        larmor_plot_set_placeholder(self->plot, "No L-curve: it needs CG with one image (SENSE or one coil)");
        larmor_plot_add_series(self->plot, "", res, reg, n, LARMOR_PLOT_LINES | LARMOR_PLOT_MARKERS, 1);
        larmor_plot_set_point_labels(self->plot, (const char *const *)labels, n);
        self->best = larmor_lcurve_corner(res, reg, n);
        if (self->best >= 0) {
            char *t = g_strdup_printf("corner: λ %.2g", lam[self->best]);
            larmor_plot_set_highlight(self->plot, res[self->best], reg[self->best], t);
            g_free(t);
            summary = g_strdup_printf("L-curve corner at λ = %.2g (%d values from %.2g to %.2g)", lam[self->best], n,
                                      lam[0], lam[n - 1]);
        }
    }
    gtk_label_set_text(self->summary_label, summary ? summary : "No best λ: too few usable points");
    gtk_widget_set_sensitive(self->use_button, self->best >= 0);
    g_free(summary);
    g_strfreev(labels);
    g_free(lam);
    g_free(err);
    g_free(res);
    g_free(reg);
}

static void on_kind(GtkDropDown *dd, GParamSpec *pspec, LarmorSweepView *self)
{
    redraw(self);
}

static void on_use(GtkButton *b, LarmorSweepView *self)
{
    LarmorRun *best = larmor_sweep_view_get_best(self);
    if (best)
        g_signal_emit(self, signals[SIGNAL_USE_LAMBDA], 0, larmor_run_get_params(best)->lambda);
}

GtkWidget *larmor_sweep_view_new(void)
{
    return g_object_new(LARMOR_TYPE_SWEEP_VIEW, NULL);
}

int larmor_sweep_view_set_runs(LarmorSweepView *self, GPtrArray *runs)
{
    g_clear_pointer(&self->runs, g_ptr_array_unref);
    self->runs = runs ? g_ptr_array_ref(runs) : NULL;
    /* Errors when there is a truth; otherwise the L-curve. */
    g_signal_handlers_block_by_func(self->kind_dropdown, on_kind, self);
    gtk_drop_down_set_selected(self->kind_dropdown, has_errors(runs) ? 0 : 1);
    g_signal_handlers_unblock_by_func(self->kind_dropdown, on_kind, self);
    redraw(self);
    return self->best;
}

LarmorRun *larmor_sweep_view_get_best(LarmorSweepView *self)
{
    return self->runs && self->best >= 0 ? self->runs->pdata[self->best] : NULL;
}

LarmorPlot *larmor_sweep_view_get_plot(LarmorSweepView *self)
{
    return self->plot;
}

static void larmor_sweep_view_dispose(GObject *object)
{
    LarmorSweepView *self = LARMOR_SWEEP_VIEW(object);
    gtk_widget_dispose_template(GTK_WIDGET(object), LARMOR_TYPE_SWEEP_VIEW);
    /* The template's unnamed top box is not cleared by dispose_template in 4.8. */
    for (GtkWidget *c; (c = gtk_widget_get_first_child(GTK_WIDGET(object)));)
        gtk_widget_unparent(c);
    g_clear_pointer(&self->runs, g_ptr_array_unref);
    G_OBJECT_CLASS(larmor_sweep_view_parent_class)->dispose(object);
}

static void larmor_sweep_view_class_init(LarmorSweepViewClass *klass)
{
    GtkWidgetClass *wc = GTK_WIDGET_CLASS(klass);
    G_OBJECT_CLASS(klass)->dispose = larmor_sweep_view_dispose;
    g_type_ensure(LARMOR_TYPE_PLOT);
    larmor_resources_ensure();
    gtk_widget_class_set_template_from_resource(wc, LARMOR_RESOURCE_PATH "/ui/larmor-sweep-view.ui");
    gtk_widget_class_set_layout_manager_type(wc, GTK_TYPE_BIN_LAYOUT);
    gtk_widget_class_bind_template_child(wc, LarmorSweepView, kind_dropdown);
    gtk_widget_class_bind_template_child(wc, LarmorSweepView, summary_label);
    gtk_widget_class_bind_template_child(wc, LarmorSweepView, use_button);
    gtk_widget_class_bind_template_child(wc, LarmorSweepView, plot);
    /* use-lambda(double): the user wants the best lambda in the settings. */
    signals[SIGNAL_USE_LAMBDA] = g_signal_new("use-lambda", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL,
                                              NULL, NULL, G_TYPE_NONE, 1, G_TYPE_DOUBLE);
}

static void larmor_sweep_view_init(LarmorSweepView *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    self->best = -1;
    g_signal_connect(self->kind_dropdown, "notify::selected", G_CALLBACK(on_kind), self);
    g_signal_connect(self->use_button, "clicked", G_CALLBACK(on_use), self);
    redraw(self);
}
