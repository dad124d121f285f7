#include "larmor-runs-view.h"

#include <math.h>

#include "larmor-plot.h"
#include "larmor-util.h"

struct _LarmorRunsView {
    GtkWidget parent_instance;
    GtkStack *stack;
    GtkColumnView *column_view;
    GtkSingleSelection *selection;
    GtkSortListModel *sorted;
    GListModel *runs;
};

G_DEFINE_FINAL_TYPE(LarmorRunsView, larmor_runs_view, GTK_TYPE_WIDGET)

enum { SIGNAL_RUN_ACTIVATED, SIGNAL_RUN_SELECTED, N_SIGNALS };
static guint signals[N_SIGNALS];

typedef enum {
    COL_COMPARE,
    COL_INDEX,
    COL_METHOD,
    COL_VARIANT,
    COL_REG,
    COL_LAMBDA,
    COL_COILS,
    COL_ITERS,
    COL_TQ,
    COL_QSRC,
    COL_TFHD,
    COL_TSOLVE,
    COL_TTOTAL,
    COL_GPAIRS,
    COL_GFLOPS,
    COL_PSNR,
    COL_ERROR,
    COL_DATA,
    N_COLS
} Col;

static const struct {
    const char *title;
    gboolean numeric;
    const char *tooltip;
} cols[N_COLS] = {
    [COL_COMPARE] = { "Cmp", FALSE, "Show in the Compare page (up to four runs of the data loaded now)" },
    [COL_INDEX] = { "#", TRUE, NULL },
    [COL_METHOD] = { "Method", FALSE, NULL },
    [COL_VARIANT] = { "Kernel", FALSE, NULL },
    [COL_REG] = { "Reg.", FALSE, "Regulariser W" },
    [COL_LAMBDA] = { "λ", TRUE, NULL },
    [COL_COILS] = { "Coils", FALSE, "How the channels were combined and how many: SENSE with the given maps, "
                                    "SENSE with estimated maps (est.), maps-weighted gridding, or root-sum-of-squares "
                                    "(rss); “K of C”: compressed to K virtual coils; “—”: one coil" },
    [COL_ITERS] = { "Iter", TRUE, NULL },
    [COL_TQ] = { "Q", TRUE, "Time to compute Q, or to read it from the cache (marked ⟲)" },
    [COL_QSRC] = { "Q from", FALSE, "Where Q came from: the on-disk cache, or computed for this run (tick “Recompute Q” to bypass the cache)" },
    [COL_TFHD] = { "Fᴴd", TRUE, "Time to compute Fᴴd" },
    [COL_TSOLVE] = { "Solve", TRUE, "Time in CG, or in gridding" },
    [COL_TTOTAL] = { "Total", TRUE, NULL },
    [COL_GPAIRS] = { "Gpairs/s", TRUE,
                     "Fᴴd throughput: M samples × N voxels pairs per second of Fᴴd time, in 10⁹; "
                     "comparable across every kernel, NUFFT included" },
    [COL_GFLOPS] = { "GFLOPS", TRUE,
                     "Fᴴd floating-point rate by the direct-sum count (operations per sample-voxel pair × pairs / "
                     "time); only for kernels that evaluate the direct sum, “—” for NUFFT and separable kernels" },
    [COL_PSNR] = { "PSNR dB", TRUE, "Against the truth (gridding, rss and estimated coil maps after least-squares "
                                    "complex scale matching, as larmor-cli scores them); "
                                    "in parentheses: stale, against a truth no longer loaded" },
    [COL_ERROR] = { "Error %", TRUE, "100 RMS(I − I0) / RMS(I0); in parentheses: stale, against a truth no longer loaded" },
    [COL_DATA] = { "Data", FALSE, "The data set of the run; “not loaded”: another data set than the one loaded now, "
                                  "not offered for comparison" },
};

static double cell_number(LarmorRun *r, Col c)
{
    const LarmorReconParams *p = larmor_run_get_params(r);
    switch (c) {
    case COL_INDEX: return larmor_run_get_index(r);
    case COL_METHOD: return p->method;
    case COL_REG: return p->reg;
    case COL_LAMBDA: return p->lambda;
    case COL_ITERS: return larmor_run_get_iters_done(r);
    case COL_TQ: return larmor_run_get_time_q(r);
    case COL_TFHD: return larmor_run_get_time_fhd(r);
    case COL_TSOLVE: return larmor_run_get_time_cg(r);
    case COL_TTOTAL: return larmor_run_get_time_total(r);
    case COL_GPAIRS: return larmor_run_get_gpairs(r);
    case COL_GFLOPS: return larmor_run_get_gflops(r);
    case COL_QSRC: return p->method == LM_METHOD_CG ? larmor_run_get_q_from_cache(r) : NAN;
    case COL_PSNR: return larmor_run_get_psnr(r);
    case COL_ERROR: return larmor_run_get_percent_error(r);
    default: return 0;
    }
}

static char *larmor_replace_arrow(const char *text)
{
    GString *g = g_string_new(text);
    g_string_replace(g, "→", "->", 0);
    return g_string_free(g, FALSE);
}

static char *cell_text(LarmorRun *r, Col c)
{
    const LarmorReconParams *p = larmor_run_get_params(r);
    gboolean cg = p->method == LM_METHOD_CG;
    switch (c) {
    case COL_INDEX: return g_strdup_printf("%d", larmor_run_get_index(r));
    case COL_METHOD: return g_strdup(larmor_run_get_solver(r)); /* short: the table fits the page */
    case COL_VARIANT: return g_strdup(cg ? larmor_run_get_variant_text(r) : "—");
    case COL_REG: return g_strdup(cg ? larmor_run_get_reg_text(r) : "—");
    case COL_LAMBDA: return cg ? larmor_format_lambda(p->lambda) : g_strdup("—");
    case COL_COILS: return larmor_run_get_coils_text(r);
    case COL_ITERS: return cg ? g_strdup_printf("%d", larmor_run_get_iters_done(r)) : g_strdup("—");
    case COL_TQ: {
        if (!cg)
            return g_strdup("—");
        char *s = larmor_format_seconds(larmor_run_get_time_q(r));
        if (larmor_run_get_q_from_cache(r)) {
            char *t = g_strdup_printf("⟲ %s", s);
            g_free(s);
            return t;
        }
        return s;
    }
    case COL_QSRC:
        if (cg && larmor_run_get_is_live(r)) /* the session's Q, not a run of its own */
            return g_strdup_printf("#%d", larmor_run_get_live_from(r));
        return g_strdup(!cg ? "—" : larmor_run_get_q_from_cache(r) ? "cache" : "computed");
    case COL_TFHD: return cg ? larmor_format_seconds(larmor_run_get_time_fhd(r)) : g_strdup("—");
    case COL_TSOLVE: return larmor_format_seconds(larmor_run_get_time_cg(r));
    case COL_TTOTAL: return larmor_format_seconds(larmor_run_get_time_total(r));
    case COL_GPAIRS: return larmor_format_number("%.3g", larmor_run_get_gpairs(r));
    case COL_GFLOPS: return larmor_format_number("%.1f", larmor_run_get_gflops(r));
    case COL_PSNR:
    case COL_ERROR: {
        char *t = larmor_format_number("%.2f", c == COL_PSNR ? larmor_run_get_psnr(r) : larmor_run_get_percent_error(r));
        if (larmor_run_get_metrics_stale(r) && larmor_run_has_metrics(r)) {
            char *m = g_strdup_printf("(%s)", t);
            g_free(t);
            return m;
        }
        return t;
    }
    case COL_DATA: {
        const char *n = larmor_run_get_dataset_name(r) ? larmor_run_get_dataset_name(r) : "";
        return larmor_run_get_current(r) ? g_strdup(n) : g_strdup_printf("%s (not loaded)", n);
    }
    default: return g_strdup("");
    }
}

char *larmor_runs_cell_text(LarmorRun *run, const char *title)
{
    for (int c = 0; c < N_COLS; c++)
        if (g_strcmp0(cols[c].title, title) == 0)
            return c == COL_COMPARE ? g_strdup(larmor_run_get_compare(run) ? "1" : "0") : cell_text(run, c);
    return NULL;
}

const char *larmor_runs_column_tooltip(const char *title)
{
    for (int c = 0; c < N_COLS; c++)
        if (g_strcmp0(cols[c].title, title) == 0)
            return cols[c].tooltip;
    return NULL;
}

/* --- factories --------------------------------------------------------- */

static void setup_label(GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
    Col c = GPOINTER_TO_INT(data);
    GtkWidget *l = gtk_label_new(NULL);
    gtk_label_set_xalign(GTK_LABEL(l), cols[c].numeric ? 1 : 0);
    if (cols[c].numeric)
        gtk_widget_add_css_class(l, "numeric");
    /* What the figure means, on every cell of the column. */
    if (cols[c].tooltip)
        gtk_widget_set_tooltip_text(l, cols[c].tooltip);
    gtk_list_item_set_child(item, l);
}

static void fill_label(GtkWidget *l, LarmorRun *r, Col c)
{
    char *t = cell_text(r, c);
    if (c == COL_INDEX) {
        /* The run's colour, as in the plots and compare panels. */
        GdkRGBA col;
        larmor_palette_color(larmor_run_get_index(r) - 1, &col);
        char *m = g_strdup_printf("<span foreground=\"#%02x%02x%02x\">■</span> %s", (int)(col.red * 255),
                                  (int)(col.green * 255), (int)(col.blue * 255), t);
        gtk_label_set_markup(GTK_LABEL(l), m);
        g_free(m);
    } else
        gtk_label_set_text(GTK_LABEL(l), t);
    g_free(t);
    /* Runs of another data set are greyed. */
    if (larmor_run_get_current(r))
        gtk_widget_remove_css_class(l, "dim-label");
    else
        gtk_widget_add_css_class(l, "dim-label");
}

/* Metrics recomputed or marked stale, or the run leaving the data loaded
 * now: the bound cell follows. */
static void on_run_notify(LarmorRun *r, GParamSpec *pspec, GtkWidget *l)
{
    fill_label(l, r, GPOINTER_TO_INT(g_object_get_data(G_OBJECT(l), "column")));
}

static void bind_label(GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
    Col c = GPOINTER_TO_INT(data);
    LarmorRun *r = gtk_list_item_get_item(item);
    GtkWidget *l = gtk_list_item_get_child(item);
    g_object_set_data(G_OBJECT(l), "column", GINT_TO_POINTER(c));
    fill_label(l, r, c);
    gulong id = g_signal_connect_object(r, "notify", G_CALLBACK(on_run_notify), l, 0);
    g_object_set_data(G_OBJECT(l), "notify-id", GSIZE_TO_POINTER(id));
    g_object_set_data(G_OBJECT(l), "run", r);
}

static void unbind_label(GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
    GtkWidget *l = gtk_list_item_get_child(item);
    LarmorRun *r = g_object_get_data(G_OBJECT(l), "run");
    gulong id = GPOINTER_TO_SIZE(g_object_get_data(G_OBJECT(l), "notify-id"));
    if (r && id)
        g_signal_handler_disconnect(r, id);
    g_object_set_data(G_OBJECT(l), "run", NULL);
    g_object_set_data(G_OBJECT(l), "notify-id", NULL);
}

static void setup_check(GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
    GtkWidget *b = gtk_check_button_new();
    gtk_widget_set_halign(b, GTK_ALIGN_CENTER);
    gtk_list_item_set_child(item, b);
}

static void bind_check(GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
    GtkWidget *b = gtk_list_item_get_child(item);
    GBinding *binding = g_object_bind_property(gtk_list_item_get_item(item), "compare", b, "active",
                                               G_BINDING_BIDIRECTIONAL | G_BINDING_SYNC_CREATE);
    g_object_set_data(G_OBJECT(b), "binding", binding);
    /* Only runs of the data loaded now can be compared. */
    GBinding *sens = g_object_bind_property(gtk_list_item_get_item(item), "current", b, "sensitive",
                                            G_BINDING_SYNC_CREATE);
    g_object_set_data(G_OBJECT(b), "sensitive-binding", sens);
}

static void unbind_check(GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
    GtkWidget *b = gtk_list_item_get_child(item);
    GBinding *binding = g_object_get_data(G_OBJECT(b), "binding");
    if (binding)
        g_binding_unbind(binding);
    g_object_set_data(G_OBJECT(b), "binding", NULL);
    GBinding *sens = g_object_get_data(G_OBJECT(b), "sensitive-binding");
    if (sens)
        g_binding_unbind(sens);
    g_object_set_data(G_OBJECT(b), "sensitive-binding", NULL);
}

static int compare_col(gconstpointer a, gconstpointer b, gpointer data)
{
    Col c = GPOINTER_TO_INT(data);
    LarmorRun *ra = LARMOR_RUN((gpointer)a), *rb = LARMOR_RUN((gpointer)b);
    if (c == COL_VARIANT || c == COL_DATA || c == COL_QSRC || c == COL_COILS) {
        char *ta = cell_text(ra, c), *tb = cell_text(rb, c);
        int r = g_strcmp0(ta, tb);
        g_free(ta);
        g_free(tb);
        return r < 0 ? GTK_ORDERING_SMALLER : r > 0 ? GTK_ORDERING_LARGER : GTK_ORDERING_EQUAL;
    }
    double x = cell_number(ra, c), y = cell_number(rb, c);
    /* NaN (no value) sorts last. */
    if (isnan(x) || isnan(y))
        return isnan(x) == isnan(y) ? GTK_ORDERING_EQUAL : isnan(x) ? GTK_ORDERING_LARGER : GTK_ORDERING_SMALLER;
    return x < y ? GTK_ORDERING_SMALLER : x > y ? GTK_ORDERING_LARGER : GTK_ORDERING_EQUAL;
}

/* --- public ------------------------------------------------------------ */

GtkWidget *larmor_runs_view_new(void)
{
    return g_object_new(LARMOR_TYPE_RUNS_VIEW, NULL);
}

static void update_stack(LarmorRunsView *self)
{
    gboolean any = self->runs && g_list_model_get_n_items(self->runs) > 0;
    gtk_stack_set_visible_child_name(self->stack, any ? "list" : "empty");
}

static void on_items_changed(GListModel *m, guint pos, guint removed, guint added, LarmorRunsView *self)
{
    update_stack(self);
}

void larmor_runs_view_set_model(LarmorRunsView *self, GListModel *runs)
{
    if (self->runs)
        g_signal_handlers_disconnect_by_data(self->runs, self);
    g_set_object(&self->runs, runs);
    gtk_sort_list_model_set_model(self->sorted, runs);
    if (runs)
        g_signal_connect(runs, "items-changed", G_CALLBACK(on_items_changed), self);
    update_stack(self);
}

LarmorRun *larmor_runs_view_get_selected(LarmorRunsView *self)
{
    return gtk_single_selection_get_selected_item(self->selection);
}

void larmor_runs_view_select(LarmorRunsView *self, LarmorRun *run)
{
    GListModel *m = G_LIST_MODEL(self->selection);
    for (guint i = 0; i < g_list_model_get_n_items(m); i++) {
        gpointer item = g_list_model_get_item(m, i);
        g_object_unref(item);
        if (item == run) {
            gtk_single_selection_set_selected(self->selection, i);
            return;
        }
    }
}

static void on_activate(GtkColumnView *cv, guint position, LarmorRunsView *self)
{
    LarmorRun *run = g_list_model_get_item(G_LIST_MODEL(self->selection), position);
    if (run) {
        g_signal_emit(self, signals[SIGNAL_RUN_ACTIVATED], 0, run);
        g_object_unref(run);
    }
}

static void on_selected(GtkSingleSelection *sel, GParamSpec *pspec, LarmorRunsView *self)
{
    g_signal_emit(self, signals[SIGNAL_RUN_SELECTED], 0, gtk_single_selection_get_selected_item(sel));
}

static void csv_num(GString *s, double v)
{
    if (isfinite(v))
        g_string_append_printf(s, "%.6g", v);
}

char *larmor_runs_to_csv(GListModel *runs)
{
    GString *s = g_string_new("index,dataset,method,variant,reg,lambda,iters,time_q_s,q_cached,time_fhd_s,"
                              "time_solve_s,time_total_s,gflops_fhd,psnr_db,percent_error,"
                              "residual_norm,reg_norm,gpairs_fhd,metrics_stale,coils,coils_in,combine,sens_source,"
                              "lambda_auto,lambda_criterion,fieldmap,segments,segment_error\n");
    for (guint i = 0; i < g_list_model_get_n_items(runs); i++) {
        LarmorRun *r = g_list_model_get_item(runs, i);
        const LarmorReconParams *p = larmor_run_get_params(r);
        /* Names contain no commas or quotes except the dataset's: quote it. */
        char *ds = g_strdup(larmor_run_get_dataset_name(r) ? larmor_run_get_dataset_name(r) : "");
        GString *q = g_string_new("\"");
        for (const char *c = ds; *c; c++) {
            if (*c == '"')
                g_string_append_c(q, '"');
            g_string_append_c(q, *c);
        }
        g_string_append_c(q, '"');
        /* auto with what it picked, in ASCII: "auto -> cpu-nufft" */
        /* Gridding and FFT have no kernel variant, regulariser or lambda: empty. */
        const gboolean cg = p->method == LM_METHOD_CG;
        char *variant = cg ? larmor_replace_arrow(larmor_run_get_variant_text(r)) : g_strdup("");
        g_string_append_printf(s, "%d,%s,%s,%s,%s,", larmor_run_get_index(r), q->str, lm_method_name(p->method),
                               variant, cg ? lm_reg_name(p->reg) : "");
        g_free(variant);
        if (cg)
            csv_num(s, p->lambda);
        g_string_append_printf(s, ",%d,", larmor_run_get_iters_done(r));
        csv_num(s, larmor_run_get_time_q(r));
        g_string_append_printf(s, ",%d,", larmor_run_get_q_from_cache(r) ? 1 : 0);
        const double rest[] = { larmor_run_get_time_fhd(r), larmor_run_get_time_cg(r), larmor_run_get_time_total(r),
                                larmor_run_get_gflops(r), larmor_run_get_psnr(r), larmor_run_get_percent_error(r),
                                larmor_run_get_data_norm(r), larmor_run_get_reg_norm(r), larmor_run_get_gpairs(r) };
        for (guint k = 0; k < G_N_ELEMENTS(rest); k++) {
            if (k)
                g_string_append_c(s, ',');
            csv_num(s, rest[k]);
        }
        g_string_append_printf(s, ",%d,%d,%d,%s,%s,%d,%s,%s,%d,", larmor_run_get_metrics_stale(r) ? 1 : 0,
                               larmor_run_get_coils(r), larmor_run_get_coils_in(r),
                               larmor_run_get_coils(r) > 1 ? lm_coil_combine_name(larmor_run_get_combine(r)) : "",
                               lm_sens_source_name(larmor_run_get_sens_source(r)), p->lambda_auto ? 1 : 0,
                               p->lambda_auto ? larmor_run_get_lambda_criterion(r) : "",
                               larmor_run_get_uncorrected(r) ? "off"
                               : cg                          ? larmor_fieldmap_mode_name(p->fieldmap)
                                                             : "",
                               larmor_run_get_segments(r));
        csv_num(s, larmor_run_get_segment_error(r));
        g_string_append_c(s, '\n');
        g_string_free(q, TRUE);
        g_free(ds);
        g_object_unref(r);
    }
    return g_string_free(s, FALSE);
}

static gboolean key_delete(GtkWidget *widget, GVariant *args, gpointer user)
{
    return gtk_widget_activate_action(widget, "win.remove-run", NULL);
}

static void larmor_runs_view_dispose(GObject *object)
{
    LarmorRunsView *self = LARMOR_RUNS_VIEW(object);
    if (self->runs)
        g_signal_handlers_disconnect_by_data(self->runs, self);
    g_clear_object(&self->runs);
    gtk_widget_dispose_template(GTK_WIDGET(object), LARMOR_TYPE_RUNS_VIEW);
    /* The template's unnamed top box is not cleared by dispose_template in 4.8. */
    for (GtkWidget *c; (c = gtk_widget_get_first_child(GTK_WIDGET(object)));)
        gtk_widget_unparent(c);
    g_clear_object(&self->selection);
    G_OBJECT_CLASS(larmor_runs_view_parent_class)->dispose(object);
}

/* GTK 4.8 has no tooltip for column headers: find the titles' labels. */
static void set_header_tooltips(GtkWidget *w)
{
    for (GtkWidget *c = gtk_widget_get_first_child(w); c; c = gtk_widget_get_next_sibling(c)) {
        if (GTK_IS_LABEL(c)) {
            const char *tip = larmor_runs_column_tooltip(gtk_label_get_text(GTK_LABEL(c)));
            if (tip)
                gtk_widget_set_tooltip_text(gtk_widget_get_parent(c), tip);
        } else if (!GTK_IS_SCROLLABLE(c) || c == w)
            set_header_tooltips(c);
    }
}

static void larmor_runs_view_class_init(LarmorRunsViewClass *klass)
{
    GtkWidgetClass *wc = GTK_WIDGET_CLASS(klass);
    G_OBJECT_CLASS(klass)->dispose = larmor_runs_view_dispose;
    larmor_resources_ensure();
    gtk_widget_class_set_template_from_resource(wc, LARMOR_RESOURCE_PATH "/ui/larmor-runs-view.ui");
    gtk_widget_class_set_layout_manager_type(wc, GTK_TYPE_BIN_LAYOUT);
    gtk_widget_class_bind_template_child(wc, LarmorRunsView, stack);
    gtk_widget_class_bind_template_child(wc, LarmorRunsView, column_view);
    gtk_widget_class_add_binding(wc, GDK_KEY_Delete, 0, key_delete, NULL);
    /* run-activated(LarmorRun): double click or Enter on a row. */
    signals[SIGNAL_RUN_ACTIVATED] = g_signal_new("run-activated", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST,
                                                 0, NULL, NULL, NULL, G_TYPE_NONE, 1, LARMOR_TYPE_RUN);
    /* run-selected(LarmorRun or NULL): the selection changed. */
    signals[SIGNAL_RUN_SELECTED] = g_signal_new("run-selected", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST,
                                                0, NULL, NULL, NULL, G_TYPE_NONE, 1, LARMOR_TYPE_RUN);
}

static void larmor_runs_view_init(LarmorRunsView *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    for (int c = 0; c < N_COLS; c++) {
        GtkListItemFactory *f = gtk_signal_list_item_factory_new();
        if (c == COL_COMPARE) {
            g_signal_connect(f, "setup", G_CALLBACK(setup_check), NULL);
            g_signal_connect(f, "bind", G_CALLBACK(bind_check), NULL);
            g_signal_connect(f, "unbind", G_CALLBACK(unbind_check), NULL);
        } else {
            g_signal_connect(f, "setup", G_CALLBACK(setup_label), GINT_TO_POINTER(c));
            g_signal_connect(f, "bind", G_CALLBACK(bind_label), GINT_TO_POINTER(c));
            g_signal_connect(f, "unbind", G_CALLBACK(unbind_label), GINT_TO_POINTER(c));
        }
        GtkColumnViewColumn *col = gtk_column_view_column_new(cols[c].title, f);
        if (c != COL_COMPARE) {
            GtkSorter *sorter = GTK_SORTER(gtk_custom_sorter_new(compare_col, GINT_TO_POINTER(c), NULL));
            gtk_column_view_column_set_sorter(col, sorter);
            g_object_unref(sorter);
        }
        gtk_column_view_column_set_resizable(col, TRUE);
        if (c == COL_DATA)
            gtk_column_view_column_set_expand(col, TRUE);
        gtk_column_view_append_column(self->column_view, col);
        g_object_unref(col);
    }
    self->sorted = gtk_sort_list_model_new(NULL, g_object_ref(gtk_column_view_get_sorter(self->column_view)));
    self->selection = gtk_single_selection_new(G_LIST_MODEL(self->sorted));
    gtk_single_selection_set_autoselect(self->selection, TRUE);
    gtk_column_view_set_model(self->column_view, GTK_SELECTION_MODEL(self->selection));
    g_signal_connect(self->column_view, "activate", G_CALLBACK(on_activate), self);
    g_signal_connect(self->selection, "notify::selected-item", G_CALLBACK(on_selected), self);
    set_header_tooltips(GTK_WIDGET(self->column_view));
    update_stack(self);
}
