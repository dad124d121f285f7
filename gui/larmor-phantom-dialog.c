#include "larmor-phantom-dialog.h"

#include <math.h>

#include "larmor-util.h"
#include "larmor.h"

#define N_KINDS 6

struct _LarmorPhantomDialog {
    GtkWindow parent_instance;
    GtkWidget *cancel_button;
    GtkWidget *create_button;
    GtkDropDown *problem_dropdown;
    GtkDropDown *phantom_dropdown;
    GtkSpinButton *matrix_spin;
    GtkDropDown *traj_dropdown;
    GtkSpinButton *samples_spin;
    GtkSpinButton *readout_spin;
    GtkSpinButton *noise_spin;
    GtkSpinButton *seed_spin;
    GtkSpinButton *coils_spin;
    GtkSpinButton *fieldmap_spin;
    GtkLabel *summary_label;
};

G_DEFINE_FINAL_TYPE(LarmorPhantomDialog, larmor_phantom_dialog, GTK_TYPE_WINDOW)

enum { SIGNAL_CREATE, N_SIGNALS };
/* The benchmark problems the workbench can build and reconstruct: every
 * one, the 2D spiral with a field map (S128c8f) included now that the
 * reconstruction panel corrects field maps. */
static gboolean problem_listed(const lm_problem_def *d)
{
    return d != NULL;
}

/* The problem at position pos of the list (0 = the first problem). */
static const lm_problem_def *listed_problem(guint pos)
{
    for (size_t i = 0; i < lm_problem_count(); i++)
        if (problem_listed(lm_problem_at(i)) && pos-- == 0)
            return lm_problem_at(i);
    return lm_problem_at(0);
}

/* The dynamic problems (D128c8, D64c8) follow the static ones in the list. */
static guint static_listed(void)
{
    guint n = 0;
    for (size_t i = 0; i < lm_problem_count(); i++)
        n += problem_listed(lm_problem_at(i));
    return n;
}

/* The dynamic problem at list position pos (0 = the first problem), or NULL. */
static const lm_dyn_problem_def *listed_dyn_problem(guint pos)
{
    const guint ns = static_listed();
    return pos >= ns ? lm_dyn_problem_at(pos - ns) : NULL;
}

static guint signals[N_SIGNALS];

static gboolean custom(LarmorPhantomDialog *self)
{
    return gtk_drop_down_get_selected(self->problem_dropdown) == 0;
}

static void update_summary(LarmorPhantomDialog *self)
{
    gboolean flat = gtk_drop_down_get_selected(self->phantom_dropdown) == 1;
    double n = gtk_spin_button_get_value(self->matrix_spin);
    double N = flat ? n * n : n * n * n;
    double m = gtk_spin_button_get_value(self->samples_spin);
    char *t;
    if (m > 0)
        t = g_strdup_printf("%.0f voxels, %.0f samples: %.3f samples per voxel%s", N, m, m / N,
                            custom(self) ? "" : ". Benchmark problems are fixed; choose Custom to change them.");
    else
        t = g_strdup_printf("%.0f voxels; the trajectory's natural number of samples", N);
    gtk_label_set_text(self->summary_label, t);
    g_free(t);
}

static void on_field(GObject *o, GParamSpec *pspec, LarmorPhantomDialog *self)
{
    update_summary(self);
}

static void on_problem(GtkDropDown *dd, GParamSpec *pspec, LarmorPhantomDialog *self)
{
    guint i = gtk_drop_down_get_selected(dd);
    gboolean c = i == 0;
    GtkWidget *fields[] = { GTK_WIDGET(self->phantom_dropdown), GTK_WIDGET(self->matrix_spin),
                            GTK_WIDGET(self->traj_dropdown), GTK_WIDGET(self->samples_spin),
                            GTK_WIDGET(self->readout_spin), GTK_WIDGET(self->noise_spin),
                            GTK_WIDGET(self->seed_spin), GTK_WIDGET(self->coils_spin),
                            GTK_WIDGET(self->fieldmap_spin) };
    for (guint k = 0; k < G_N_ELEMENTS(fields); k++)
        gtk_widget_set_sensitive(fields[k], c);
    if (!c) {
        /* Show what the benchmark is made of (docs/conventions.md section 4). */
        const lm_dyn_problem_def *dd = listed_dyn_problem(i - 1);
        if (dd) {
            gtk_drop_down_set_selected(self->phantom_dropdown, dd->dim == 2);
            gtk_spin_button_set_value(self->matrix_spin, (double)dd->n);
            gtk_spin_button_set_value(self->coils_spin, (double)dd->coils);
            gtk_spin_button_set_value(self->noise_spin, dd->noise * 100);
            gtk_spin_button_set_value(self->fieldmap_spin, 0);
            gtk_spin_button_set_value(self->samples_spin,
                                      (double)(dd->readout * dd->spokes_per_frame * dd->frames * (dd->dim == 3 ? dd->n : 1)));
            gtk_spin_button_set_value(self->readout_spin, (double)dd->readout);
            update_summary(self);
            return;
        }
        const lm_problem_def *d = listed_problem(i - 1);
        gtk_drop_down_set_selected(self->phantom_dropdown, d->dim == 2);
        gtk_spin_button_set_value(self->matrix_spin, (double)d->n);
        gtk_drop_down_set_selected(self->traj_dropdown, d->dim == 2 ? LM_TRAJ_SPIRAL2D : LM_TRAJ_RADIAL3D);
        gtk_spin_button_set_value(self->fieldmap_spin, d->fieldmap_hz);
        gtk_spin_button_set_value(self->samples_spin, (double)d->m);
        gtk_spin_button_set_value(self->readout_spin, (double)d->readout);
        gtk_spin_button_set_value(self->noise_spin, d->noise * 100);
        gtk_spin_button_set_value(self->seed_spin, LM_PROBLEM_NOISE_SEED);
        gtk_spin_button_set_value(self->coils_spin, (double)d->coils);
    }
    update_summary(self);
}

LarmorDatasetSpec *larmor_phantom_dialog_get_spec(LarmorPhantomDialog *self)
{
    LarmorDatasetSpec *s = g_new0(LarmorDatasetSpec, 1);
    guint i = gtk_drop_down_get_selected(self->problem_dropdown);
    if (i > 0) {
        s->kind = LARMOR_SOURCE_PROBLEM;
        const lm_dyn_problem_def *dd = listed_dyn_problem(i - 1);
        g_strlcpy(s->problem, dd ? dd->name : listed_problem(i - 1)->name, sizeof s->problem);
    } else
        s->kind = LARMOR_SOURCE_PHANTOM;
    g_strlcpy(s->phantom, gtk_drop_down_get_selected(self->phantom_dropdown) == 1 ? "shepp-logan-2d" : "shepp-logan",
              sizeof s->phantom);
    s->matrix = gtk_spin_button_get_value_as_int(self->matrix_spin);
    s->traj_kind = gtk_drop_down_get_selected(self->traj_dropdown);
    s->samples = (int64_t)gtk_spin_button_get_value(self->samples_spin);
    s->readout = (int64_t)gtk_spin_button_get_value(self->readout_spin);
    s->noise = gtk_spin_button_get_value(self->noise_spin) / 100;
    s->seed = (guint64)gtk_spin_button_get_value(self->seed_spin);
    s->coils = gtk_spin_button_get_value_as_int(self->coils_spin);
    s->fieldmap_hz = s->kind == LARMOR_SOURCE_PHANTOM ? gtk_spin_button_get_value(self->fieldmap_spin) : 0;
    return s;
}

void larmor_phantom_dialog_set_spec(LarmorPhantomDialog *self, const LarmorDatasetSpec *s)
{
    guint sel = 0;
    if (s->kind == LARMOR_SOURCE_PROBLEM)
        for (size_t i = 0, pos = 0; i < lm_problem_count(); i++) {
            if (!problem_listed(lm_problem_at(i)))
                continue;
            pos++;
            if (g_strcmp0(lm_problem_at(i)->name, s->problem) == 0)
                sel = (guint)pos;
        }
    if (s->kind == LARMOR_SOURCE_PROBLEM)
        for (size_t i = 0; i < lm_dyn_problem_count(); i++)
            if (g_strcmp0(lm_dyn_problem_at(i)->name, s->problem) == 0)
                sel = static_listed() + 1 + (guint)i;
    if (sel == 0) {
        gtk_drop_down_set_selected(self->phantom_dropdown, g_strcmp0(s->phantom, "shepp-logan-2d") == 0);
        if (s->matrix > 0)
            gtk_spin_button_set_value(self->matrix_spin, s->matrix);
        gtk_drop_down_set_selected(self->traj_dropdown, MIN((guint)s->traj_kind, N_KINDS - 1));
        gtk_spin_button_set_value(self->samples_spin, (double)s->samples);
        gtk_spin_button_set_value(self->readout_spin, (double)s->readout);
        gtk_spin_button_set_value(self->noise_spin, s->noise * 100);
        gtk_spin_button_set_value(self->seed_spin, (double)s->seed);
        gtk_spin_button_set_value(self->coils_spin, MAX(s->coils, 1));
        gtk_spin_button_set_value(self->fieldmap_spin, s->fieldmap_hz);
    }
    gtk_drop_down_set_selected(self->problem_dropdown, sel);
    on_problem(self->problem_dropdown, NULL, self);
}

static void on_create(GtkButton *b, LarmorPhantomDialog *self)
{
    LarmorDatasetSpec *s = larmor_phantom_dialog_get_spec(self);
    g_signal_emit(self, signals[SIGNAL_CREATE], 0, s);
    larmor_dataset_spec_free(s);
    gtk_window_destroy(GTK_WINDOW(self));
}

static void on_cancel(GtkButton *b, LarmorPhantomDialog *self)
{
    gtk_window_destroy(GTK_WINDOW(self));
}

GtkWidget *larmor_phantom_dialog_new(GtkWindow *parent)
{
    return g_object_new(LARMOR_TYPE_PHANTOM_DIALOG, "transient-for", parent, NULL);
}

static void larmor_phantom_dialog_class_init(LarmorPhantomDialogClass *klass)
{
    GtkWidgetClass *wc = GTK_WIDGET_CLASS(klass);
    larmor_resources_ensure();
    gtk_widget_class_set_template_from_resource(wc, LARMOR_RESOURCE_PATH "/ui/larmor-phantom-dialog.ui");
#define CHILD(name) gtk_widget_class_bind_template_child(wc, LarmorPhantomDialog, name)
    CHILD(cancel_button);
    CHILD(create_button);
    CHILD(problem_dropdown);
    CHILD(phantom_dropdown);
    CHILD(matrix_spin);
    CHILD(traj_dropdown);
    CHILD(samples_spin);
    CHILD(readout_spin);
    CHILD(noise_spin);
    CHILD(seed_spin);
    CHILD(coils_spin);
    CHILD(fieldmap_spin);
    CHILD(summary_label);
#undef CHILD
    gtk_widget_class_add_binding_action(wc, GDK_KEY_Escape, 0, "window.close", NULL);
    /* create(const LarmorDatasetSpec *) */
    signals[SIGNAL_CREATE] = g_signal_new("create", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                          NULL, G_TYPE_NONE, 1, G_TYPE_POINTER);
}

static void larmor_phantom_dialog_init(LarmorPhantomDialog *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    GtkStringList *problems = gtk_string_list_new(NULL);
    gtk_string_list_append(problems, "Custom");
    for (size_t i = 0; i < lm_problem_count(); i++) {
        const lm_problem_def *d = lm_problem_at(i);
        if (!problem_listed(d))
            continue;
        char coils[24] = "";
        if (d->coils > 1)
            g_snprintf(coils, sizeof coils, ", %lld coils", (long long)d->coils);
        char fm[40] = "";
        if (d->fieldmap_hz > 0)
            g_snprintf(fm, sizeof fm, ", field map ≤ %g Hz", d->fieldmap_hz);
        char *t = g_strdup_printf("%s — %lld%s, %lld samples%s%s%s", d->name, (long long)d->n, d->dim == 2 ? "²" : "³",
                                  (long long)d->m, coils, d->noise > 0 ? ", noisy" : "", fm);
        gtk_string_list_append(problems, t);
        g_free(t);
    }
    for (size_t i = 0; i < lm_dyn_problem_count(); i++) {
        const lm_dyn_problem_def *d = lm_dyn_problem_at(i);
        char *t = g_strdup_printf("%s — %lld%s, %lld coils, %lld frames of %lld spokes (dynamic)", d->name, (long long)d->n,
                                  d->dim == 2 ? "²" : "³", (long long)d->coils, (long long)d->frames,
                                  (long long)d->spokes_per_frame);
        gtk_string_list_append(problems, t);
        g_free(t);
    }
    gtk_drop_down_set_model(self->problem_dropdown, G_LIST_MODEL(problems));
    g_object_unref(problems);
    GtkStringList *kinds = gtk_string_list_new(NULL);
    for (int k = 0; k < N_KINDS; k++)
        gtk_string_list_append(kinds, lm_traj_kind_name(k));
    gtk_drop_down_set_model(self->traj_dropdown, G_LIST_MODEL(kinds));
    g_object_unref(kinds);

    g_signal_connect(self->problem_dropdown, "notify::selected", G_CALLBACK(on_problem), self);
    g_signal_connect(self->phantom_dropdown, "notify::selected", G_CALLBACK(on_field), self);
    g_signal_connect(self->matrix_spin, "notify::value", G_CALLBACK(on_field), self);
    g_signal_connect(self->samples_spin, "notify::value", G_CALLBACK(on_field), self);
    g_signal_connect(self->create_button, "clicked", G_CALLBACK(on_create), self);
    g_signal_connect(self->cancel_button, "clicked", G_CALLBACK(on_cancel), self);
    gtk_window_set_default_widget(GTK_WINDOW(self), self->create_button);
    gtk_drop_down_set_selected(self->problem_dropdown, 1); /* B32: the quick one */
    on_problem(self->problem_dropdown, NULL, self);
}
