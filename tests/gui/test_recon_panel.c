/* The sidebar's reconstruction panel (every kernel variant listed, the
 * unavailable ones insensitive with the reason as tooltip; lambda scale and
 * entry in step; settings round trip) and the new-phantom dialog. */
#include <math.h>
#include <string.h>

#include "gui-test.h"
#include "larmor-phantom-dialog.h"
#include "larmor-recon-panel.h"
#include "lm_kernels.h"

static GtkWidget *find_by_type(GtkWidget *root, GType type, int skip)
{
    for (GtkWidget *c = gtk_widget_get_first_child(root); c; c = gtk_widget_get_next_sibling(c)) {
        if (G_TYPE_CHECK_INSTANCE_TYPE(c, type) && skip-- == 0)
            return c;
        GtkWidget *r = find_by_type(c, type, skip);
        if (r)
            return r;
    }
    return NULL;
}

static void collect_labels(GtkWidget *root, GPtrArray *out)
{
    for (GtkWidget *c = gtk_widget_get_first_child(root); c; c = gtk_widget_get_next_sibling(c)) {
        if (GTK_IS_LABEL(c))
            g_ptr_array_add(out, c);
        collect_labels(c, out);
    }
}

static void test_variants(void)
{
    GtkWidget *panel = g_object_new(LARMOR_TYPE_RECON_PANEL, NULL);
    GtkWidget *win = gtk_window_new();
    gtk_window_set_default_size(GTK_WINDOW(win), 360, 800);
    gtk_window_set_child(GTK_WINDOW(win), panel);
    gui_test_show(GTK_WINDOW(win));

    /* The second drop-down of the panel is the kernel variant. */
    GtkDropDown *dd = GTK_DROP_DOWN(find_by_type(panel, GTK_TYPE_DROP_DOWN, 1));
    GListModel *model = gtk_drop_down_get_model(dd);
    /* "auto" first, then the table. */
    g_assert_cmpuint(g_list_model_get_n_items(model), ==, lm_variant_count() + 1);
    GtkStringObject *first = g_list_model_get_item(model, 0);
    g_assert_cmpstr(gtk_string_object_get_string(first), ==, "auto");
    g_object_unref(first);
    for (guint i = 0; i < lm_variant_count(); i++) {
        GtkStringObject *o = g_list_model_get_item(model, i + 1);
        g_assert_cmpstr(gtk_string_object_get_string(o), ==, lm_variant_at(i)->name);
        g_object_unref(o);
    }
    /* A new panel (a new install) selects auto, shown with its choice. */
    g_assert_cmpuint(gtk_drop_down_get_selected(dd), ==, 0);
    LarmorReconParams dp;
    g_assert_true(larmor_recon_panel_get_params(LARMOR_RECON_PANEL(panel), &dp, NULL));
    g_assert_cmpstr(dp.variant, ==, "auto");
    const lm_variant *picked = lm_variant_resolve("auto", NULL);
    g_assert_nonnull(picked);
    g_assert_true(lm_variant_get_available("gpu-nufft", NULL) ? !strcmp(picked->name, "gpu-nufft")
                                                              : !strcmp(picked->name, "cpu-nufft"));
    char *auto_label = g_strdup_printf("Auto (fastest: %s here)", picked->name);
    char *got = larmor_variant_label("auto");
    g_assert_cmpstr(got, ==, auto_label);
    g_free(got);
    g_assert_true(larmor_variant_is_available("auto", NULL));
    /* The closed drop-down's button shows that label. */
    GPtrArray *button_labels = g_ptr_array_new();
    collect_labels(GTK_WIDGET(dd), button_labels);
    gboolean shown = FALSE;
    for (guint k = 0; k < button_labels->len; k++)
        shown |= g_strcmp0(gtk_label_get_text(button_labels->pdata[k]), auto_label) == 0;
    g_assert_true(shown);
    g_ptr_array_unref(button_labels);

    /* Open the list and look at its rows. */
    g_signal_emit_by_name(dd, "activate");
    gui_test_spin(0.5);
    GtkWidget *popover = find_by_type(GTK_WIDGET(dd), GTK_TYPE_POPOVER, 0);
    g_assert_nonnull(popover);
    g_assert_true(gtk_widget_get_visible(popover));
    GPtrArray *labels = g_ptr_array_new();
    collect_labels(popover, labels);
    int seen = 0, unavailable = 0;
    for (guint i = 0; i < lm_variant_count(); i++) {
        const lm_variant *v = lm_variant_at(i);
        lm_error why = { 0 };
        gboolean ok = !v->available || v->available(&why) == LM_OK;
        for (guint k = 0; k < labels->len; k++) {
            GtkWidget *l = labels->pdata[k];
            if (g_strcmp0(gtk_label_get_text(GTK_LABEL(l)), v->name) != 0)
                continue;
            seen++;
            g_assert_cmpint(gtk_widget_get_sensitive(l), ==, ok);
            const char *tip = gtk_widget_get_tooltip_text(l);
            g_assert_nonnull(tip);
            if (!ok) {
                unavailable++;
                g_assert_true(g_str_has_prefix(tip, "Unavailable: "));
                g_assert_nonnull(strstr(tip, why.msg));
                GtkWidget *row = gtk_widget_get_parent(l); /* the list row */
                g_assert_nonnull(row);
            } else
                g_assert_cmpstr(tip, ==, v->description);
        }
    }
    int auto_rows = 0;
    for (guint k = 0; k < labels->len; k++)
        if (g_strcmp0(gtk_label_get_text(GTK_LABEL(labels->pdata[k])), auto_label) == 0) {
            auto_rows++;
            g_assert_true(gtk_widget_get_sensitive(labels->pdata[k]));
            g_assert_nonnull(strstr(gtk_widget_get_tooltip_text(labels->pdata[k]), picked->name));
        }
    g_assert_cmpint(auto_rows, >=, 1);
    g_free(auto_label);
    printf("# %d variant rows shown, %d unavailable here\n", seen, unavailable);
    g_assert_cmpint(seen, >=, (int)lm_variant_count()); /* the button shows one again */
    g_ptr_array_unref(labels);
    gtk_popover_popdown(GTK_POPOVER(popover));
    gtk_window_destroy(GTK_WINDOW(win));
}

static void test_params(void)
{
    LarmorReconPanel *panel = g_object_new(LARMOR_TYPE_RECON_PANEL, NULL);
    g_object_ref_sink(panel);
    LarmorReconParams p, q;
    larmor_recon_params_init(&p);
    p.method = LM_METHOD_CG;
    g_strlcpy(p.variant, "cpu-sp", sizeof p.variant);
    p.lambda = 0.003;
    p.reg = LM_REG_GRADIENT;
    p.iters = 17;
    p.tol = 1e-5;
    larmor_recon_panel_set_params(panel, &p);
    GError *error = NULL;
    g_assert_true(larmor_recon_panel_get_params(panel, &q, &error));
    g_assert_no_error(error);
    g_assert_cmpint(q.method, ==, p.method);
    g_assert_cmpstr(q.variant, ==, "cpu-sp");
    g_assert_cmpfloat_with_epsilon(q.lambda, 0.003, 1e-12);
    g_assert_cmpint(q.reg, ==, LM_REG_GRADIENT);
    g_assert_cmpint(q.iters, ==, 17);
    g_assert_cmpfloat_with_epsilon(q.tol, 1e-5, 1e-15);

    /* "Fall back to the CPU" (issue 14): the check, the options, and a run
     * that fell back says so in its label and details. */
    g_assert_false(q.fallback_cpu);
    GtkCheckButton *fb = GTK_CHECK_BUTTON(larmor_recon_panel_get_control(panel, "fallback"));
    g_assert_nonnull(fb);
    gtk_check_button_set_active(fb, TRUE);
    g_assert_true(larmor_recon_panel_get_params(panel, &q, NULL) && q.fallback_cpu);
    lm_recon_opts fo;
    larmor_recon_opts_from_params(&q, NULL, &fo);
    g_assert_cmpint(fo.fallback, ==, LM_FALLBACK_CPU);
    p.fallback_cpu = FALSE;
    larmor_recon_panel_set_params(panel, &p);
    g_assert_false(gtk_check_button_get_active(fb));
    g_strlcpy(q.variant, "gpu-nufft", sizeof q.variant);
    lm_recon_result fr = {.fell_back = 1, .fallback_variant = "cpu-nufft", .iters_done = -1};
    g_strlcpy(fr.fallback_note, "gpu-nufft: out of GPU memory (test); falling back to cpu-nufft",
              sizeof fr.fallback_note);
    LarmorRun *run = larmor_run_new(&q, "test", &fr);
    larmor_run_set_index(run, 1);
    g_assert_nonnull(strstr(larmor_run_get_label(run), "cpu-nufft (CPU fallback)"));
    char *details = larmor_run_get_details(run);
    g_assert_nonnull(strstr(details, "out of GPU memory"));
    g_free(details);
    g_object_unref(run);

    /* The scale is log10(lambda): moving it rewrites the entry. */
    GtkScale *scale = GTK_SCALE(find_by_type(GTK_WIDGET(panel), GTK_TYPE_SCALE, 0));
    GtkAdjustment *adj = gtk_range_get_adjustment(GTK_RANGE(scale));
    g_assert_cmpfloat_with_epsilon(gtk_adjustment_get_value(adj), log10(0.003), 1e-9);
    gtk_adjustment_set_value(adj, -4);
    g_assert_true(larmor_recon_panel_get_params(panel, &q, NULL));
    g_assert_cmpfloat_with_epsilon(q.lambda, 1e-4, 1e-12);
    /* A bad entry is refused with a message naming it. */
    GtkEditable *entry = NULL;
    for (int i = 0; !entry; i++) {
        GtkWidget *e = find_by_type(GTK_WIDGET(panel), GTK_TYPE_ENTRY, i);
        g_assert_nonnull(e);
        if (strcmp(gtk_editable_get_text(GTK_EDITABLE(e)), "0.0001") == 0)
            entry = GTK_EDITABLE(e);
    }
    gtk_editable_set_text(entry, "abc");
    g_assert_false(larmor_recon_panel_get_params(panel, &q, &error));
    g_assert_nonnull(strstr(error->message, "λ"));
    g_clear_error(&error);
    gtk_editable_set_text(entry, "0.25");
    g_assert_true(larmor_recon_panel_get_params(panel, &q, NULL));
    g_assert_cmpfloat(q.lambda, ==, 0.25);
    g_assert_cmpfloat_with_epsilon(gtk_adjustment_get_value(adj), log10(0.25), 1e-9);

    double from, to;
    int steps;
    larmor_recon_panel_set_sweep(panel, 1e-3, 10, 5);
    g_assert_true(larmor_recon_panel_get_sweep(panel, &from, &to, &steps, NULL));
    g_assert_cmpfloat(from, ==, 1e-3);
    g_assert_cmpfloat(to, ==, 10);
    g_assert_cmpint(steps, ==, 5);
    larmor_recon_panel_set_sweep(panel, 1, 0.1, 5);
    g_assert_false(larmor_recon_panel_get_sweep(panel, &from, &to, &steps, &error));
    g_clear_error(&error);
    g_object_unref(panel);
}

static void on_create(LarmorPhantomDialog *d, const LarmorDatasetSpec *spec, LarmorDatasetSpec **out)
{
    *out = larmor_dataset_spec_copy(spec);
}

static void test_phantom_dialog(void)
{
    GtkWidget *d = larmor_phantom_dialog_new(NULL);
    gui_test_show(GTK_WINDOW(d));
    /* Opens on B32. */
    LarmorDatasetSpec *s = larmor_phantom_dialog_get_spec(LARMOR_PHANTOM_DIALOG(d));
    g_assert_cmpint(s->kind, ==, LARMOR_SOURCE_PROBLEM);
    g_assert_cmpstr(s->problem, ==, "B32");
    g_assert_cmpint(s->matrix, ==, 32);
    g_assert_cmpint(s->samples, ==, 4447);
    larmor_dataset_spec_free(s);

    /* A custom one round-trips through the fields. */
    LarmorDatasetSpec c = { .kind = LARMOR_SOURCE_PHANTOM, .matrix = 24, .traj_kind = LM_TRAJ_SPIRAL2D,
                            .samples = 3000, .readout = 100, .noise = 0.02, .seed = 7 };
    g_strlcpy(c.phantom, "shepp-logan-2d", sizeof c.phantom);
    larmor_phantom_dialog_set_spec(LARMOR_PHANTOM_DIALOG(d), &c);
    s = larmor_phantom_dialog_get_spec(LARMOR_PHANTOM_DIALOG(d));
    g_assert_cmpint(s->kind, ==, LARMOR_SOURCE_PHANTOM);
    g_assert_cmpstr(s->phantom, ==, "shepp-logan-2d");
    g_assert_cmpint(s->matrix, ==, 24);
    g_assert_cmpint(s->traj_kind, ==, LM_TRAJ_SPIRAL2D);
    g_assert_cmpint(s->samples, ==, 3000);
    g_assert_cmpint(s->readout, ==, 100);
    g_assert_cmpfloat_with_epsilon(s->noise, 0.02, 1e-9);
    g_assert_cmpuint(s->seed, ==, 7);
    larmor_dataset_spec_free(s);

    /* That spec builds a dataset (in this thread: the worker's function). */
    GError *error = NULL;
    LarmorDataset *ds = larmor_dataset_new_from_spec(&c, &error);
    g_assert_no_error(error);
    g_assert_nonnull(ds);
    g_assert_cmpint(larmor_dataset_get_geom(ds)->n[2], ==, 1);
    g_assert_cmpint(larmor_dataset_get_traj(ds)->m, ==, 3000);
    g_assert_nonnull(larmor_dataset_get_truth(ds));
    g_object_unref(ds);
    /* A 2D trajectory with the 3D phantom is refused with a reason. */
    g_strlcpy(c.phantom, "shepp-logan", sizeof c.phantom);
    g_assert_null(larmor_dataset_new_from_spec(&c, &error));
    g_assert_nonnull(strstr(error->message, "2D"));
    g_clear_error(&error);

    /* Create emits the spec and closes the dialog. */
    LarmorDatasetSpec *got = NULL;
    g_signal_connect(d, "create", G_CALLBACK(on_create), &got);
    GtkWidget *create = gtk_window_get_default_widget(GTK_WINDOW(d));
    g_assert_nonnull(create);
    g_object_add_weak_pointer(G_OBJECT(d), (gpointer *)&d);
    g_signal_emit_by_name(create, "clicked");
    g_assert_nonnull(got);
    g_assert_cmpint(got->matrix, ==, 24);
    larmor_dataset_spec_free(got);
    gui_test_spin(0.1);
    g_assert_null(d);
}

int main(int argc, char **argv)
{
    gui_test_init(&argc, &argv);
    g_test_add_func("/recon-panel/variants", test_variants);
    g_test_add_func("/recon-panel/params", test_params);
    g_test_add_func("/recon-panel/phantom-dialog", test_phantom_dialog);
    return g_test_run();
}
