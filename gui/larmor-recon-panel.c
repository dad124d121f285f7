#include "larmor-recon-panel.h"

#include <math.h>
#include <stdlib.h>

#include "larmor-dyn-controls.h"
#include "larmor-scroll-guard.h"
#include "larmor-util.h"
#include "larmor.h"

struct _LarmorReconPanel {
    GtkWidget parent_instance;
    LarmorDynControls *dyn; /* under the heading, shown for data with frames (made in code) */

    GtkDropDown *method_dropdown;
    GtkDropDown *variant_dropdown;
    GtkLabel *variant_description;
    GtkCheckButton *fallback_check; /* under the variant's description (made in code) */
    GtkDropDown *reg_dropdown;
    GtkWidget *fieldmap_caption;
    GtkDropDown *fieldmap_dropdown;
    GtkLabel *fieldmap_note;
    GtkWidget *auto_button;
    GtkMenuButton *criterion_button;
    GtkCheckButton *influence_check;
    GtkLabel *details_label;
    GtkWidget *reference_caption;
    GtkWidget *reference_button;
    GtkLabel *reference_label;
    GtkWidget *edge_caption;
    GtkSpinButton *edge_spin;
    GtkCheckButton *recompute_check;
    GtkWidget *coils_caption;
    GtkDropDown *coils_dropdown;
    GtkLabel *coils_note;
    GtkWidget *compress_caption;
    GtkDropDown *compress_dropdown;
    GtkSpinButton *compress_spin;
    GtkCheckButton *prewhiten_check;
    GtkScale *lambda_scale;
    GtkAdjustment *lambda_adjustment;
    GtkEntry *lambda_entry;
    GtkSpinButton *iters_spin;
    GtkEntry *tol_entry;
    GtkWidget *run_button;
    GtkWidget *cancel_button;
    GtkProgressBar *progress_bar;
    GtkLabel *progress_label;
    GtkLabel *time_label;
    GtkEntry *sweep_from_entry;
    GtkEntry *sweep_to_entry;
    GtkSpinButton *sweep_steps_spin;
    GtkWidget *sweep_button;

    double lambda;         /* exact value; the scale shows log10 of it */
    double lambda_by_reg[LARMOR_N_REGS]; /* the last lambda of each regulariser (NaN: its default) */
    int reg_pos;           /* list position the lambda belongs to */
    lm_lambda_criterion criterion; /* of the automatic lambda */
    GSimpleActionGroup *actions;   /* panel.criterion */
    gboolean syncing;
    GtkToggleButton *live_toggle; /* made here, beside the lambda entry */
    double live_sent;      /* the last value sent as "live-lambda" */
    gboolean has_fieldmap, has_times;
    char *fieldmap_origin;
    int ncoils;            /* of the data loaded now (1: single coil) */
    gboolean has_maps, has_noise;
};

G_DEFINE_FINAL_TYPE(LarmorReconPanel, larmor_recon_panel, GTK_TYPE_WIDGET)

enum { SIGNAL_CHANGED, SIGNAL_LIVE_LAMBDA, N_SIGNALS };
static guint signals[N_SIGNALS];

/* Settings that change what a run costs (the window's estimate). */
static void emit_changed(LarmorReconPanel *self)
{
    g_signal_emit(self, signals[SIGNAL_CHANGED], 0);
}

/* --- variants ---------------------------------------------------------- */

typedef struct {
    gboolean available;
    char why[256];
} Availability;

static GHashTable *availability(void)
{
    static GHashTable *table;
    if (!table) {
        table = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        for (size_t i = 0; i < lm_variant_count(); i++) {
            const lm_variant *v = lm_variant_at(i);
            Availability *a = g_new0(Availability, 1);
            lm_error why = { 0 };
            a->available = !v->available || v->available(&why) == LM_OK;
            g_strlcpy(a->why, why.msg[0] ? why.msg : "not available on this machine", sizeof a->why);
            g_hash_table_insert(table, g_strdup(v->name), a);
        }
        /* "auto": the fastest accurate variant here (lm_variant_resolve). */
        Availability *a = g_new0(Availability, 1);
        lm_error why = { 0 };
        a->available = lm_variant_resolve(LM_VARIANT_AUTO, &why) != NULL;
        g_strlcpy(a->why, why.msg[0] ? why.msg : "no NUFFT variant here", sizeof a->why);
        g_hash_table_insert(table, g_strdup(LM_VARIANT_AUTO), a);
    }
    return table;
}

char *larmor_variant_label(const char *name)
{
    if (g_strcmp0(name, LM_VARIANT_AUTO) != 0)
        return g_strdup(name);
    const lm_variant *v = lm_variant_resolve(LM_VARIANT_AUTO, NULL);
    return g_strdup_printf("Auto (fastest: %s here)", v ? v->name : "none");
}

/* The description of a variant, or of what auto picks. */
static char *variant_description(const char *name)
{
    const lm_variant *v = lm_variant_find(name, NULL);
    if (g_strcmp0(name, LM_VARIANT_AUTO) == 0)
        return v ? g_strdup_printf("The fastest variant on this machine that meets the accuracy "
                                   "target: %s — %s", v->name, v->description)
                 : g_strdup("");
    return g_strdup(v ? v->description : "");
}

gboolean larmor_variant_is_available(const char *name, const char **why)
{
    Availability *a = g_hash_table_lookup(availability(), name);
    if (why)
        *why = a ? a->why : "unknown variant";
    return a && a->available;
}

/* A drop-down row (variants, regularisers): a name and a dimmed note. */
static void name_note_setup(GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
    GtkWidget *name = gtk_label_new(NULL), *note = gtk_label_new(NULL);
    gtk_label_set_xalign(GTK_LABEL(name), 0);
    gtk_widget_add_css_class(note, "dim-label");
    gtk_widget_add_css_class(note, "caption");
    gtk_box_append(GTK_BOX(box), name);
    gtk_box_append(GTK_BOX(box), note);
    gtk_list_item_set_child(item, box);
}

/* A kernel's row: its name, and under it why it is unavailable here (the
 * library's own message, wrapped), not only in a tooltip. */
static void variant_setup(GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
    name_note_setup(f, item, data);
    GtkWidget *box = gtk_list_item_get_child(item);
    GtkWidget *note = gtk_widget_get_next_sibling(gtk_widget_get_first_child(box));
    gtk_orientable_set_orientation(GTK_ORIENTABLE(box), GTK_ORIENTATION_VERTICAL);
    gtk_box_set_spacing(GTK_BOX(box), 0);
    gtk_label_set_xalign(GTK_LABEL(note), 0);
    gtk_label_set_wrap(GTK_LABEL(note), TRUE);
    gtk_label_set_max_width_chars(GTK_LABEL(note), 40);
}

static void variant_bind(GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
    GtkWidget *box = gtk_list_item_get_child(item);
    GtkWidget *name = gtk_widget_get_first_child(box), *note = gtk_widget_get_next_sibling(name);
    const char *variant = gtk_string_object_get_string(gtk_list_item_get_item(item));
    const char *why;
    gboolean ok = larmor_variant_is_available(variant, &why);
    char *label = larmor_variant_label(variant);
    gtk_label_set_text(GTK_LABEL(name), label);
    g_free(label);
    char *reason = ok ? NULL : g_strdup_printf("unavailable: %s", why);
    gtk_label_set_text(GTK_LABEL(note), ok ? "" : reason);
    g_free(reason);
    gtk_widget_set_visible(note, !ok);
    /* Unavailable variants stay in the list, greyed, with the reason. */
    gtk_widget_set_sensitive(name, ok);
    gtk_widget_set_sensitive(note, ok);
    gtk_list_item_set_selectable(item, ok);
    gtk_list_item_set_activatable(item, ok);
    char *tip = ok ? variant_description(variant) : g_strdup_printf("Unavailable: %s", why);
    gtk_widget_set_tooltip_text(name, tip);
    gtk_widget_set_tooltip_text(box, tip);
    g_free(tip);
}

static const char *selected_variant(LarmorReconPanel *self)
{
    GtkStringObject *o = gtk_drop_down_get_selected_item(self->variant_dropdown);
    return o ? gtk_string_object_get_string(o) : LM_VARIANT_AUTO;
}

static void update_variant_description(LarmorReconPanel *self)
{
    const char *name = selected_variant(self), *why;
    char *t = larmor_variant_is_available(name, &why) ? variant_description(name)
                                                       : g_strdup_printf("Unavailable: %s", why);
    gtk_label_set_text(self->variant_description, t);
    g_free(t);
}

/* --- regularisers ------------------------------------------------------ */

/* The list's order (the CLI's names, quadratic first) -> lm_reg_kind. */
static const lm_reg_kind reg_order[LARMOR_N_REGS] = {
    LM_REG_IDENTITY, LM_REG_GRADIENT, LM_REG_TV, LM_REG_WAVELET, LM_REG_ANATOMICAL, LM_REG_ANATOMICAL_EDGES,
};

lm_reg_kind larmor_reg_at(guint pos)
{
    return pos < LARMOR_N_REGS ? reg_order[pos] : LM_REG_IDENTITY;
}

guint larmor_reg_position(lm_reg_kind r)
{
    for (guint i = 0; i < LARMOR_N_REGS; i++)
        if (reg_order[i] == r)
            return i;
    return 0;
}

static const char *reg_caption(lm_reg_kind r)
{
    switch (r) {
    case LM_REG_GRADIENT: return "finite differences";
    case LM_REG_TV: return "total variation";
    case LM_REG_WAVELET: return "Daubechies-4, ℓ1";
    case LM_REG_ANATOMICAL: return "reference + data edges";
    case LM_REG_ANATOMICAL_EDGES: return "reference edges";
    default: return "Tikhonov";
    }
}

gboolean larmor_reg_is_available(lm_reg_kind r, const char **why)
{
    static int probed = -1;
    static char reason[256];
    if (why)
        *why = NULL;
    if (r != LM_REG_WAVELET)
        return TRUE;
    if (probed < 0) {
        /* The wavelet prior needs GSL: the library says so when it lacks it. */
        lm_error err = { 0 };
        probed = larmor_wavelet_available(&err) == LM_OK;
        g_strlcpy(reason, err.msg[0] ? err.msg : "this build has no wavelet transform (GSL)", sizeof reason);
    }
    if (why && !probed)
        *why = reason;
    return probed;
}

void larmor_reg_lambda_range(lm_reg_kind r, double *lo_log10, double *hi_log10, double *def)
{
    switch (r) {
    case LM_REG_TV: /* lambda scaled by the image's intensity: best ~0.002 on B64n (BENCHMARKS.md) */
        *lo_log10 = -5, *hi_log10 = 0, *def = 0.003;
        break;
    case LM_REG_WAVELET: /* best ~0.01 on B64n */
        *lo_log10 = -5, *hi_log10 = 0, *def = 0.01;
        break;
    case LM_REG_ANATOMICAL: /* best 20-500 on the lesion phantom (docs/priors.md) */
        *lo_log10 = -4, *hi_log10 = 3, *def = 30;
        break;
    case LM_REG_ANATOMICAL_EDGES: /* best 3-100 */
        *lo_log10 = -4, *hi_log10 = 3, *def = 10;
        break;
    default:
        *lo_log10 = -6, *hi_log10 = 2, *def = 0.01;
        break;
    }
}

static void reg_bind(GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
    GtkWidget *box = gtk_list_item_get_child(item);
    GtkWidget *name = gtk_widget_get_first_child(box), *note = gtk_widget_get_next_sibling(name);
    lm_reg_kind r = larmor_reg_at(gtk_list_item_get_position(item));
    const char *why;
    gboolean ok = larmor_reg_is_available(r, &why);
    gtk_label_set_text(GTK_LABEL(name), lm_reg_name(r));
    gtk_label_set_text(GTK_LABEL(note), ok ? reg_caption(r) : "unavailable");
    /* Unavailable ones stay listed, greyed, with the reason (as kernels). */
    gtk_widget_set_sensitive(name, ok);
    gtk_list_item_set_selectable(item, ok);
    gtk_list_item_set_activatable(item, ok);
    char *tip = ok ? NULL : g_strdup_printf("Unavailable: %s", why);
    gtk_widget_set_tooltip_text(box, tip);
    g_free(tip);
}

static lm_reg_kind selected_reg(LarmorReconPanel *self)
{
    return larmor_reg_at(gtk_drop_down_get_selected(self->reg_dropdown));
}

/* --- lambda ------------------------------------------------------------ */

static void show_lambda(LarmorReconPanel *self)
{
    self->syncing = TRUE;
    char *t = larmor_format_lambda(self->lambda);
    gtk_editable_set_text(GTK_EDITABLE(self->lambda_entry), t);
    g_free(t);
    gtk_adjustment_set_value(self->lambda_adjustment,
                             self->lambda > 0 ? log10(self->lambda) : gtk_adjustment_get_lower(self->lambda_adjustment));
    self->syncing = FALSE;
}

static void on_lambda_scale(GtkAdjustment *adj, LarmorReconPanel *self)
{
    if (self->syncing)
        return;
    /* Round to 2 significant digits: the scale cannot pick finer anyway. */
    char buf[32];
    g_snprintf(buf, sizeof buf, "%.2g", pow(10, gtk_adjustment_get_value(adj)));
    self->lambda = g_ascii_strtod(buf, NULL);
    self->syncing = TRUE;
    gtk_editable_set_text(GTK_EDITABLE(self->lambda_entry), buf);
    self->syncing = FALSE;
}

/* Live lambda: the scale's value changes for the slider and the entry
 * alike (after the handlers above updated self->lambda). */
static void on_live_lambda(LarmorReconPanel *self)
{
    if (!gtk_toggle_button_get_active(self->live_toggle) || self->lambda == self->live_sent)
        return;
    self->live_sent = self->lambda;
    g_signal_emit(self, signals[SIGNAL_LIVE_LAMBDA], 0, self->lambda);
}

/* The dynamic controls' lambda_t with their Live on. */
static void on_dyn_live_lambda(LarmorReconPanel *self)
{
    const double lambda = larmor_dyn_controls_get_lambda_t(self->dyn);
    if (!gtk_toggle_button_get_active(larmor_dyn_controls_get_live_toggle(self->dyn)) || lambda == self->live_sent)
        return;
    self->live_sent = lambda;
    g_signal_emit(self, signals[SIGNAL_LIVE_LAMBDA], 0, lambda);
}

static gboolean parse_nonneg(const char *text, double *out)
{
    char *end;
    double v = g_ascii_strtod(text, &end);
    while (end && g_ascii_isspace(*end))
        end++;
    if (end == text || (end && *end) || !isfinite(v) || v < 0)
        return FALSE;
    *out = v;
    return TRUE;
}

static void on_lambda_entry_changed(GtkEditable *e, LarmorReconPanel *self)
{
    if (self->syncing)
        return;
    double v;
    if (parse_nonneg(gtk_editable_get_text(e), &v)) {
        gtk_widget_remove_css_class(GTK_WIDGET(self->lambda_entry), "error");
        self->lambda = v;
        self->syncing = TRUE;
        gtk_adjustment_set_value(self->lambda_adjustment,
                                 v > 0 ? log10(v) : gtk_adjustment_get_lower(self->lambda_adjustment));
        self->syncing = FALSE;
    } else
        gtk_widget_add_css_class(GTK_WIDGET(self->lambda_entry), "error");
}

/* The slider's decades for the regulariser (tv and wavelet weigh on
 * another scale), with marks on whole decades. */
static void set_lambda_range(LarmorReconPanel *self, lm_reg_kind r)
{
    double lo, hi, def;
    larmor_reg_lambda_range(r, &lo, &hi, &def);
    self->syncing = TRUE;
    gtk_adjustment_set_lower(self->lambda_adjustment, lo);
    gtk_adjustment_set_upper(self->lambda_adjustment, hi);
    self->syncing = FALSE;
    /* A mark per decade; labels at the ends and at 1 only: the slider
     * shares its row with the entry and Auto, and labels would overlap. */
    gtk_scale_clear_marks(self->lambda_scale);
    for (int e = (int)hi; e >= (int)lo; e--) {
        char *m = e == 0 ? g_strdup("1") : e == (int)lo || e == (int)hi ? g_strdup_printf("10<sup>%d</sup>", e) : NULL;
        gtk_scale_add_mark(self->lambda_scale, e, GTK_POS_BOTTOM, m);
        g_free(m);
    }
}

/* Each regulariser keeps its own lambda: a Tikhonov weight means nothing
 * to total variation. */
static void on_reg(GObject *o, GParamSpec *pspec, LarmorReconPanel *self)
{
    int pos = (int)gtk_drop_down_get_selected(self->reg_dropdown);
    if (pos < 0 || pos >= LARMOR_N_REGS || pos == self->reg_pos)
        return;
    if (self->reg_pos >= 0)
        self->lambda_by_reg[self->reg_pos] = self->lambda;
    self->reg_pos = pos;
    lm_reg_kind r = larmor_reg_at(pos);
    double lo, hi, def;
    larmor_reg_lambda_range(r, &lo, &hi, &def);
    set_lambda_range(self, r);
    self->lambda = isnan(self->lambda_by_reg[pos]) ? def : self->lambda_by_reg[pos];
    show_lambda(self);
}

gboolean larmor_recon_panel_auto_lambda_available(LarmorReconPanel *self)
{
    return gtk_drop_down_get_selected(self->method_dropdown) == LM_METHOD_CG;
}

double larmor_recon_panel_get_lambda(LarmorReconPanel *self)
{
    return self->lambda;
}

void larmor_recon_panel_set_lambda(LarmorReconPanel *self, double lambda)
{
    self->lambda = lambda;
    show_lambda(self);
}

static void on_tol_changed(GtkEditable *e, LarmorReconPanel *self)
{
    double v;
    if (parse_nonneg(gtk_editable_get_text(e), &v))
        gtk_widget_remove_css_class(GTK_WIDGET(e), "error");
    else
        gtk_widget_add_css_class(GTK_WIDGET(e), "error");
}

/* --- coils ------------------------------------------------------------- */

/* Why a coil source cannot run on the data loaded now (NULL: it can). */
static const char *coil_source_why(LarmorReconPanel *self, LarmorCoilSource c)
{
    if (c == LARMOR_COILS_SENSE && self->ncoils > 1 && !self->has_maps)
        return "No coil maps for these data: open them (menu → Open Coil Maps…) or choose another source";
    return NULL;
}

static void coils_setup(GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
    GtkWidget *l = gtk_label_new(NULL);
    gtk_label_set_xalign(GTK_LABEL(l), 0);
    gtk_list_item_set_child(item, l);
}

static void coils_bind(GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
    LarmorReconPanel *self = data;
    GtkWidget *l = gtk_list_item_get_child(item);
    LarmorCoilSource c = gtk_list_item_get_position(item);
    gtk_label_set_text(GTK_LABEL(l), larmor_coil_source_label(c));
    const char *why = coil_source_why(self, c);
    /* Unavailable sources stay listed, greyed, with the reason (as kernels). */
    gtk_widget_set_sensitive(l, why == NULL);
    gtk_list_item_set_selectable(item, why == NULL);
    gtk_list_item_set_activatable(item, why == NULL);
    gtk_widget_set_tooltip_text(l, why);
}

static void update_coils(LarmorReconPanel *self)
{
    gboolean multi = self->ncoils > 1;
    LarmorCoilSource c = gtk_drop_down_get_selected(self->coils_dropdown);
    const char *why = coil_source_why(self, c);
    char *note;
    if (!multi)
        note = g_strdup("One receive coil: nothing to combine");
    else if (why)
        note = g_strdup(why);
    else if (c == LARMOR_COILS_SENSE)
        note = g_strdup_printf("SENSE with the %d coils' maps", self->ncoils);
    else if (c == LARMOR_COILS_ESTIMATE)
        note = g_strdup_printf("SENSE with maps estimated from the %d channels' k-space centre", self->ncoils);
    else
        note = g_strdup_printf("%d channels reconstructed one by one, then root-sum-of-squares (magnitude)",
                               self->ncoils);
    gtk_label_set_text(self->coils_note, note);
    if (why)
        gtk_widget_add_css_class(GTK_WIDGET(self->coils_note), "warning");
    else
        gtk_widget_remove_css_class(GTK_WIDGET(self->coils_note), "warning");
    g_free(note);
    gtk_widget_set_sensitive(GTK_WIDGET(self->coils_dropdown), multi);
    gtk_widget_set_sensitive(self->coils_caption, multi);
    gtk_widget_set_sensitive(GTK_WIDGET(self->compress_dropdown), multi);
    gtk_widget_set_sensitive(self->compress_caption, multi);
    gtk_widget_set_visible(GTK_WIDGET(self->compress_spin), gtk_drop_down_get_selected(self->compress_dropdown) == 2);
    gtk_widget_set_sensitive(GTK_WIDGET(self->compress_spin), multi);
    if (self->ncoils > 1)
        gtk_adjustment_set_upper(gtk_spin_button_get_adjustment(self->compress_spin), self->ncoils);
    /* The control stays, so the choice is there once data bring noise samples. */
    gtk_widget_set_sensitive(GTK_WIDGET(self->prewhiten_check), multi && self->has_noise);
    gtk_widget_set_tooltip_text(GTK_WIDGET(self->prewhiten_check),
                                self->has_noise ? "Whiten the channels with the noise covariance measured from the "
                                                  "data's noise samples before reconstructing"
                                                : "The data carry no noise samples: nothing to prewhiten with");
}

static void on_coils(GObject *o, GParamSpec *pspec, LarmorReconPanel *self)
{
    update_coils(self);
}

void larmor_recon_panel_set_coil_info(LarmorReconPanel *self, int ncoils, gboolean has_maps, gboolean has_noise)
{
    self->ncoils = MAX(ncoils, 1);
    self->has_maps = has_maps;
    self->has_noise = has_noise;
    /* Rebind the list rows so their sensitivity follows. */
    GtkListItemFactory *f = gtk_drop_down_get_factory(self->coils_dropdown);
    g_object_ref(f);
    gtk_drop_down_set_factory(self->coils_dropdown, NULL);
    gtk_drop_down_set_factory(self->coils_dropdown, f);
    g_object_unref(f);
    update_coils(self);
}

void larmor_recon_panel_prefer_data_maps(LarmorReconPanel *self)
{
    if (self->has_maps && gtk_drop_down_get_selected(self->coils_dropdown) == LARMOR_COILS_ESTIMATE)
        gtk_drop_down_set_selected(self->coils_dropdown, LARMOR_COILS_SENSE);
}

const char *larmor_recon_panel_get_coils_note(LarmorReconPanel *self)
{
    return gtk_label_get_text(self->coils_note);
}

gboolean larmor_recon_panel_coil_source_available(LarmorReconPanel *self, LarmorCoilSource c, const char **why)
{
    const char *w = coil_source_why(self, c);
    if (why)
        *why = w;
    return w == NULL;
}

GtkWidget *larmor_recon_panel_get_coils_widget(LarmorReconPanel *self, const char *name)
{
    if (g_strcmp0(name, "coils") == 0)
        return GTK_WIDGET(self->coils_dropdown);
    if (g_strcmp0(name, "compress") == 0)
        return GTK_WIDGET(self->compress_dropdown);
    if (g_strcmp0(name, "prewhiten") == 0)
        return GTK_WIDGET(self->prewhiten_check);
    return NULL;
}

/* --- field map -------------------------------------------------------- */

/* Why the field-map correction cannot run on the data now (NULL: it can). */
static const char *fieldmap_why(LarmorReconPanel *self)
{
    if (!self->has_fieldmap)
        return "No field map with these data: open one (menu → Open Field Map…)";
    if (!self->has_times)
        return "The trajectory has no sample times: the field map cannot be used";
    if (gtk_drop_down_get_selected(self->method_dropdown) != LM_METHOD_CG)
        return "Only CG corrects off-resonance; gridding stays uncorrected";
    return NULL;
}

static void update_fieldmap(LarmorReconPanel *self)
{
    const char *why = fieldmap_why(self);
    gtk_widget_set_sensitive(GTK_WIDGET(self->fieldmap_dropdown), why == NULL);
    gtk_widget_set_sensitive(self->fieldmap_caption, why == NULL);
    char *note;
    if (why)
        note = g_strdup(why);
    else if (gtk_drop_down_get_selected(self->fieldmap_dropdown) == LARMOR_FIELDMAP_OFF)
        note = g_strdup_printf("Uncorrected (field map: %s)", self->fieldmap_origin ? self->fieldmap_origin : "loaded");
    else
        note = g_strdup_printf("Corrected with the field map: %s", self->fieldmap_origin ? self->fieldmap_origin : "loaded");
    gtk_label_set_text(self->fieldmap_note, note);
    g_free(note);
}

void larmor_recon_panel_set_fieldmap_info(LarmorReconPanel *self, gboolean has_fieldmap, gboolean has_times,
                                          const char *origin)
{
    self->has_fieldmap = has_fieldmap;
    self->has_times = has_times;
    g_free(self->fieldmap_origin);
    self->fieldmap_origin = g_strdup(origin);
    update_fieldmap(self);
}

gboolean larmor_recon_panel_fieldmap_available(LarmorReconPanel *self, const char **why)
{
    const char *w = fieldmap_why(self);
    if (why)
        *why = w;
    return w == NULL;
}

void larmor_recon_panel_set_details(LarmorReconPanel *self, const char *text)
{
    gtk_label_set_text(self->details_label, text ? text : "");
    gtk_widget_set_visible(GTK_WIDGET(self->details_label), text && *text);
}

const char *larmor_recon_panel_get_status(LarmorReconPanel *self)
{
    return gtk_label_get_text(self->progress_label);
}

const char *larmor_recon_panel_get_details(LarmorReconPanel *self)
{
    return gtk_label_get_text(self->details_label);
}

GtkWidget *larmor_recon_panel_get_control(LarmorReconPanel *self, const char *name)
{
    static const struct { const char *name; gsize offset; } controls[] = {
        { "reg", G_STRUCT_OFFSET(LarmorReconPanel, reg_dropdown) },
        { "fieldmap", G_STRUCT_OFFSET(LarmorReconPanel, fieldmap_dropdown) },
        { "auto-lambda", G_STRUCT_OFFSET(LarmorReconPanel, auto_button) },
        { "criterion", G_STRUCT_OFFSET(LarmorReconPanel, criterion_button) },
        { "prior-influence", G_STRUCT_OFFSET(LarmorReconPanel, influence_check) },
        { "lambda-scale", G_STRUCT_OFFSET(LarmorReconPanel, lambda_scale) },
        { "method", G_STRUCT_OFFSET(LarmorReconPanel, method_dropdown) },
        { "fallback", G_STRUCT_OFFSET(LarmorReconPanel, fallback_check) },
        { "iters", G_STRUCT_OFFSET(LarmorReconPanel, iters_spin) },
        { "run", G_STRUCT_OFFSET(LarmorReconPanel, run_button) },
    };
    for (guint i = 0; i < G_N_ELEMENTS(controls); i++)
        if (g_strcmp0(name, controls[i].name) == 0)
            return G_STRUCT_MEMBER(GtkWidget *, self, controls[i].offset);
    return larmor_recon_panel_get_coils_widget(self, name);
}

/* --- automatic lambda's criterion ------------------------------------- */

static void on_criterion(GSimpleAction *a, GVariant *v, gpointer data)
{
    LarmorReconPanel *self = data;
    lm_lambda_criterion c = LM_LAMBDA_DEFAULT;
    if (lm_lambda_criterion_parse(g_variant_get_string(v, NULL), &c, NULL) != LM_OK)
        return;
    self->criterion = c;
    g_simple_action_set_state(a, v);
}

static void set_criterion(LarmorReconPanel *self, lm_lambda_criterion c)
{
    self->criterion = c;
    GAction *a = g_action_map_lookup_action(G_ACTION_MAP(self->actions), "criterion");
    g_simple_action_set_state(G_SIMPLE_ACTION(a), g_variant_new_string(lm_lambda_criterion_name(c)));
}

/* --- sensitivity ------------------------------------------------------- */

static void update_sensitivity(LarmorReconPanel *self)
{
    gboolean cg = gtk_drop_down_get_selected(self->method_dropdown) == LM_METHOD_CG;
    lm_reg_kind reg = selected_reg(self);
    gboolean anat = lm_reg_weighted(reg);
    gtk_widget_set_sensitive(GTK_WIDGET(self->variant_dropdown), cg);
    gtk_widget_set_sensitive(GTK_WIDGET(self->fallback_check), cg);
    gtk_widget_set_sensitive(GTK_WIDGET(self->reg_dropdown), cg);
    gtk_widget_set_sensitive(GTK_WIDGET(self->lambda_scale), cg);
    gtk_widget_set_sensitive(GTK_WIDGET(self->lambda_entry), cg);
    gtk_widget_set_sensitive(GTK_WIDGET(self->iters_spin), cg);
    gtk_widget_set_sensitive(GTK_WIDGET(self->tol_entry), cg);
    /* The prior's rows follow the regulariser only: greyed for gridding,
     * not hidden, so the controls below keep their place. */
    GtkWidget *anat_rows[] = { self->reference_caption, self->reference_button, self->edge_caption,
                               GTK_WIDGET(self->edge_spin) };
    for (guint i = 0; i < G_N_ELEMENTS(anat_rows); i++) {
        gtk_widget_set_visible(anat_rows[i], anat);
        gtk_widget_set_sensitive(anat_rows[i], cg);
    }
    gtk_widget_set_sensitive(GTK_WIDGET(self->recompute_check), cg);
    gtk_widget_set_sensitive(GTK_WIDGET(self->influence_check), cg);
    gtk_widget_set_sensitive(self->auto_button, cg);
    gtk_widget_set_sensitive(GTK_WIDGET(self->criterion_button), cg);
    gtk_widget_set_tooltip_text(self->auto_button,
                                cg ? "Reconstruct with λ chosen from the data (docs/lambda.md) and set the slider "
                                     "to it (tv and wavelet: the discrepancy principle; dynamic data: λ time by "
                                     "k-space cross-validation)"
                                   : "The automatic λ needs the CG method");
    update_fieldmap(self);
}

static void on_method_or_reg(GObject *o, GParamSpec *pspec, LarmorReconPanel *self)
{
    update_sensitivity(self);
}

static void on_variant(GObject *o, GParamSpec *pspec, LarmorReconPanel *self)
{
    update_variant_description(self);
}

/* --- public ------------------------------------------------------------ */

gboolean larmor_recon_panel_get_params(LarmorReconPanel *self, LarmorReconParams *p, GError **error)
{
    if (!larmor_recon_panel_get_static_params(self, p, error))
        return FALSE;
    if (gtk_widget_get_visible(GTK_WIDGET(self->dyn)))
        larmor_dyn_controls_apply(self->dyn, p);
    return TRUE;
}

gboolean larmor_recon_panel_get_static_params(LarmorReconPanel *self, LarmorReconParams *p, GError **error)
{
    larmor_recon_params_init(p);
    p->method = gtk_drop_down_get_selected(self->method_dropdown);
    g_strlcpy(p->variant, selected_variant(self), sizeof p->variant);
    p->reg = selected_reg(self);
    p->criterion = self->criterion;
    p->prior_influence = gtk_check_button_get_active(self->influence_check);
    p->fallback_cpu = gtk_check_button_get_active(self->fallback_check);
    p->fieldmap = MIN(gtk_drop_down_get_selected(self->fieldmap_dropdown), LARMOR_N_FIELDMAP_MODES - 1);
    p->iters = gtk_spin_button_get_value_as_int(self->iters_spin);
    p->edge = gtk_spin_button_get_value(self->edge_spin);
    p->recompute_q = gtk_check_button_get_active(self->recompute_check);
    p->coils = MIN(gtk_drop_down_get_selected(self->coils_dropdown), LARMOR_N_COILS_SOURCES - 1);
    switch (gtk_drop_down_get_selected(self->compress_dropdown)) {
    case 1: p->compress = -1; break;
    case 2: p->compress = gtk_spin_button_get_value_as_int(self->compress_spin); break;
    default: p->compress = 0; break;
    }
    p->prewhiten = gtk_check_button_get_active(self->prewhiten_check);
    if (!parse_nonneg(gtk_editable_get_text(GTK_EDITABLE(self->lambda_entry)), &p->lambda)) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "λ “%s”: give a number ≥ 0, e.g. 1e-3",
                    gtk_editable_get_text(GTK_EDITABLE(self->lambda_entry)));
        return FALSE;
    }
    if (!parse_nonneg(gtk_editable_get_text(GTK_EDITABLE(self->tol_entry)), &p->tol)) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "Tolerance “%s”: give a number ≥ 0, e.g. 1e-6",
                    gtk_editable_get_text(GTK_EDITABLE(self->tol_entry)));
        return FALSE;
    }
    return TRUE;
}

void larmor_recon_panel_set_dynamic(LarmorReconPanel *self, gboolean dynamic)
{
    gtk_widget_set_visible(GTK_WIDGET(self->dyn), dynamic);
}

LarmorDynControls *larmor_recon_panel_get_dyn_controls(LarmorReconPanel *self)
{
    return self->dyn;
}

void larmor_recon_panel_set_params(LarmorReconPanel *self, const LarmorReconParams *p)
{
    larmor_dyn_controls_set_params(self->dyn, p);
    if (p->dynamic)
        return; /* the static controls keep their own settings */
    gtk_drop_down_set_selected(self->method_dropdown, CLAMP((guint)p->method, 0, LM_METHOD_FFT));
    GListModel *m = gtk_drop_down_get_model(self->variant_dropdown);
    for (guint i = 0; i < g_list_model_get_n_items(m); i++) {
        GtkStringObject *o = g_list_model_get_item(m, i);
        gboolean match = g_strcmp0(gtk_string_object_get_string(o), p->variant) == 0;
        g_object_unref(o);
        if (match) {
            gtk_drop_down_set_selected(self->variant_dropdown, i);
            break;
        }
    }
    gtk_drop_down_set_selected(self->reg_dropdown, larmor_reg_position(p->reg));
    set_criterion(self, p->criterion);
    gtk_check_button_set_active(self->influence_check, p->prior_influence);
    gtk_check_button_set_active(self->fallback_check, p->fallback_cpu);
    gtk_drop_down_set_selected(self->fieldmap_dropdown, MIN((guint)p->fieldmap, LARMOR_N_FIELDMAP_MODES - 1));
    gtk_spin_button_set_value(self->iters_spin, p->iters);
    if (p->edge > 0)
        gtk_spin_button_set_value(self->edge_spin, p->edge);
    gtk_check_button_set_active(self->recompute_check, p->recompute_q);
    gtk_drop_down_set_selected(self->coils_dropdown, MIN((guint)p->coils, LARMOR_N_COILS_SOURCES - 1));
    if (p->compress > 0) {
        gtk_spin_button_set_value(self->compress_spin, p->compress);
        gtk_drop_down_set_selected(self->compress_dropdown, 2);
    } else
        gtk_drop_down_set_selected(self->compress_dropdown, p->compress < 0 ? 1 : 0);
    gtk_check_button_set_active(self->prewhiten_check, p->prewhiten);
    update_coils(self);
    self->lambda = p->lambda;
    show_lambda(self);
    char buf[32];
    g_snprintf(buf, sizeof buf, "%g", p->tol);
    gtk_editable_set_text(GTK_EDITABLE(self->tol_entry), buf);
    update_sensitivity(self);
}

gboolean larmor_recon_panel_get_sweep(LarmorReconPanel *self, double *from, double *to, int *steps,
                                      GError **error)
{
    if (!parse_nonneg(gtk_editable_get_text(GTK_EDITABLE(self->sweep_from_entry)), from) || *from <= 0 ||
        !parse_nonneg(gtk_editable_get_text(GTK_EDITABLE(self->sweep_to_entry)), to) || *to <= *from) {
        g_set_error_literal(error, LARMOR_ERROR, LM_ERR_INVALID,
                            "λ sweep: give 0 < from < to, e.g. 1e-4 to 1");
        return FALSE;
    }
    *steps = gtk_spin_button_get_value_as_int(self->sweep_steps_spin);
    return TRUE;
}

void larmor_recon_panel_set_sweep(LarmorReconPanel *self, double from, double to, int steps)
{
    char buf[32];
    g_snprintf(buf, sizeof buf, "%g", from);
    gtk_editable_set_text(GTK_EDITABLE(self->sweep_from_entry), buf);
    g_snprintf(buf, sizeof buf, "%g", to);
    gtk_editable_set_text(GTK_EDITABLE(self->sweep_to_entry), buf);
    gtk_spin_button_set_value(self->sweep_steps_spin, steps);
}

void larmor_recon_panel_clear_recompute(LarmorReconPanel *self)
{
    gtk_check_button_set_active(self->recompute_check, FALSE);
}

GtkWidget *larmor_recon_panel_get_sweep_button(LarmorReconPanel *self)
{
    return self->sweep_button;
}

void larmor_recon_panel_set_reference_name(LarmorReconPanel *self, const char *name)
{
    gtk_label_set_text(self->reference_label, name ? name : "Choose…");
}

void larmor_recon_panel_set_running(LarmorReconPanel *self, gboolean running)
{
    if (running) {
        gtk_progress_bar_set_fraction(self->progress_bar, 0);
        gtk_label_set_text(self->progress_label, "Starting…");
        gtk_label_set_text(self->time_label, "");
    }
}

void larmor_recon_panel_set_progress(LarmorReconPanel *self, const LarmorProgressInfo *info)
{
    gtk_progress_bar_set_fraction(self->progress_bar, CLAMP(info->fraction, 0, 1));
    larmor_label_set_text(self->progress_label, info->text);
    gtk_widget_set_tooltip_text(GTK_WIDGET(self->progress_label), info->text);
    char *t;
    if (!isnan(info->time_left_s) && info->time_left_s >= 0.5) {
        /* An estimate: whole seconds, or minutes and seconds. */
        double left = info->time_left_s;
        if (left < 120)
            t = g_strdup_printf("about %.0f s left", ceil(left));
        else
            t = g_strdup_printf("about %d min %02d s left", (int)(left / 60), (int)fmod(left, 60));
    } else {
        char *s = larmor_format_seconds(info->elapsed_s);
        t = g_strdup_printf("%s", s);
        g_free(s);
    }
    larmor_label_set_text(self->time_label, t);
    g_free(t);
}

void larmor_recon_panel_set_status(LarmorReconPanel *self, const char *text, double fraction)
{
    gtk_progress_bar_set_fraction(self->progress_bar, fraction);
    gtk_label_set_text(self->progress_label, text);
    gtk_widget_set_tooltip_text(GTK_WIDGET(self->progress_label), text);
    gtk_label_set_text(self->time_label, "");
}

/* --- object ------------------------------------------------------------ */

static void larmor_recon_panel_dispose(GObject *object)
{
    LarmorReconPanel *self = LARMOR_RECON_PANEL(object);
    g_clear_object(&self->actions);
    g_clear_pointer(&self->fieldmap_origin, g_free);
    gtk_widget_dispose_template(GTK_WIDGET(object), LARMOR_TYPE_RECON_PANEL);
    /* The template's unnamed top box is not cleared by dispose_template in 4.8. */
    for (GtkWidget *c; (c = gtk_widget_get_first_child(GTK_WIDGET(object)));)
        gtk_widget_unparent(c);
    G_OBJECT_CLASS(larmor_recon_panel_parent_class)->dispose(object);
}

static void larmor_recon_panel_class_init(LarmorReconPanelClass *klass)
{
    GtkWidgetClass *wc = GTK_WIDGET_CLASS(klass);
    G_OBJECT_CLASS(klass)->dispose = larmor_recon_panel_dispose;
    larmor_resources_ensure();
    gtk_widget_class_set_template_from_resource(wc, LARMOR_RESOURCE_PATH "/ui/larmor-recon-panel.ui");
    gtk_widget_class_set_layout_manager_type(wc, GTK_TYPE_BIN_LAYOUT);
#define CHILD(name) gtk_widget_class_bind_template_child(wc, LarmorReconPanel, name)
    CHILD(method_dropdown);
    CHILD(variant_dropdown);
    CHILD(variant_description);
    CHILD(reg_dropdown);
    CHILD(fieldmap_caption);
    CHILD(fieldmap_dropdown);
    CHILD(fieldmap_note);
    CHILD(auto_button);
    CHILD(criterion_button);
    CHILD(influence_check);
    CHILD(details_label);
    CHILD(reference_caption);
    CHILD(reference_button);
    CHILD(reference_label);
    CHILD(edge_caption);
    CHILD(edge_spin);
    CHILD(recompute_check);
    CHILD(coils_caption);
    CHILD(coils_dropdown);
    CHILD(coils_note);
    CHILD(compress_caption);
    CHILD(compress_dropdown);
    CHILD(compress_spin);
    CHILD(prewhiten_check);
    CHILD(lambda_scale);
    CHILD(lambda_adjustment);
    CHILD(lambda_entry);
    CHILD(iters_spin);
    CHILD(tol_entry);
    CHILD(run_button);
    CHILD(cancel_button);
    CHILD(progress_bar);
    CHILD(progress_label);
    CHILD(time_label);
    CHILD(sweep_from_entry);
    CHILD(sweep_to_entry);
    CHILD(sweep_steps_spin);
    CHILD(sweep_button);
#undef CHILD
    /* Method, variant, iterations or coil settings changed. */
    /* live-lambda(double): lambda moved while "Live" is on (slider or entry). */
    signals[SIGNAL_LIVE_LAMBDA] = g_signal_new("live-lambda", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL,
                                               NULL, NULL, G_TYPE_NONE, 1, G_TYPE_DOUBLE);
    signals[SIGNAL_CHANGED] = g_signal_new("changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                           NULL, G_TYPE_NONE, 0);
}

static void larmor_recon_panel_init(LarmorReconPanel *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));

    GtkStringList *names = gtk_string_list_new(NULL);
    gtk_string_list_append(names, LM_VARIANT_AUTO); /* first: the default */
    for (size_t i = 0; i < lm_variant_count(); i++)
        gtk_string_list_append(names, lm_variant_at(i)->name);
    GtkListItemFactory *f = gtk_signal_list_item_factory_new();
    g_signal_connect(f, "setup", G_CALLBACK(variant_setup), self);
    g_signal_connect(f, "bind", G_CALLBACK(variant_bind), self);
    gtk_drop_down_set_factory(self->variant_dropdown, f);
    gtk_drop_down_set_model(self->variant_dropdown, G_LIST_MODEL(names));
    g_object_unref(f);
    g_object_unref(names);
    /* "Fall back to the CPU", a row of its own under the variant's
     * description (made here so the template's rows stay as they are). */
    {
        GtkGrid *grid = GTK_GRID(gtk_widget_get_parent(GTK_WIDGET(self->variant_description)));
        int col, row, w, h;
        gtk_grid_query_child(grid, GTK_WIDGET(self->variant_description), &col, &row, &w, &h);
        gtk_grid_insert_row(grid, row + h);
        self->fallback_check = GTK_CHECK_BUTTON(gtk_check_button_new_with_mnemonic("_Fall back to the CPU"));
        gtk_widget_set_tooltip_text(GTK_WIDGET(self->fallback_check),
                                    "When a GPU kernel runs out of GPU memory, hits a driver error or is not "
                                    "available here, run again on its CPU twin (gpu-nufft → cpu-nufft) and "
                                    "say so in the run's details");
        gtk_grid_attach(grid, GTK_WIDGET(self->fallback_check), col, row + h, w, 1);
    }

    GtkStringList *sources = gtk_string_list_new(NULL);
    for (int c = 0; c < LARMOR_N_COILS_SOURCES; c++)
        gtk_string_list_append(sources, larmor_coil_source_label(c));
    GtkListItemFactory *cf = gtk_signal_list_item_factory_new();
    g_signal_connect(cf, "setup", G_CALLBACK(coils_setup), self);
    g_signal_connect(cf, "bind", G_CALLBACK(coils_bind), self);
    gtk_drop_down_set_factory(self->coils_dropdown, cf);
    gtk_drop_down_set_model(self->coils_dropdown, G_LIST_MODEL(sources));
    g_object_unref(cf);
    g_object_unref(sources);
    self->ncoils = 1;

    GtkStringList *regs = gtk_string_list_new(NULL);
    for (guint i = 0; i < LARMOR_N_REGS; i++)
        gtk_string_list_append(regs, lm_reg_name(reg_order[i]));
    GtkListItemFactory *rf = gtk_signal_list_item_factory_new();
    g_signal_connect(rf, "setup", G_CALLBACK(name_note_setup), self);
    g_signal_connect(rf, "bind", G_CALLBACK(reg_bind), self);
    gtk_drop_down_set_factory(self->reg_dropdown, rf);
    gtk_drop_down_set_model(self->reg_dropdown, G_LIST_MODEL(regs));
    g_object_unref(rf);
    g_object_unref(regs);
    for (int i = 0; i < LARMOR_N_REGS; i++)
        self->lambda_by_reg[i] = NAN;
    self->reg_pos = 0; /* identity, selected at first */
    g_signal_connect(self->reg_dropdown, "notify::selected", G_CALLBACK(on_reg), self);

    GtkStringList *modes = gtk_string_list_new(NULL);
    for (int m = 0; m < LARMOR_N_FIELDMAP_MODES; m++)
        gtk_string_list_append(modes, larmor_fieldmap_mode_label(m));
    gtk_drop_down_set_model(self->fieldmap_dropdown, G_LIST_MODEL(modes));
    g_object_unref(modes);
    g_signal_connect_swapped(self->fieldmap_dropdown, "notify::selected", G_CALLBACK(update_fieldmap), self);

    /* The automatic lambda's criterion: a small menu beside "Auto". */
    self->actions = g_simple_action_group_new();
    static const GActionEntry entries[] = { { "criterion", NULL, "s", "'default'", on_criterion, { 0 } } };
    g_action_map_add_action_entries(G_ACTION_MAP(self->actions), entries, G_N_ELEMENTS(entries), self);
    gtk_widget_insert_action_group(GTK_WIDGET(self), "panel", G_ACTION_GROUP(self->actions));
    GMenu *menu = g_menu_new();
    GMenu *section = g_menu_new();
    g_menu_append(section, "The regulariser's own (discrepancy; GCV for anatomical)", "panel.criterion::default");
    g_menu_append(section, "Discrepancy principle (noise from outer k-space)", "panel.criterion::discrepancy");
    g_menu_append(section, "Generalised cross-validation (GCV)", "panel.criterion::gcv");
    g_menu_append_section(menu, "Choose λ by", G_MENU_MODEL(section));
    gtk_menu_button_set_menu_model(self->criterion_button, G_MENU_MODEL(menu));
    g_object_unref(section);
    g_object_unref(menu);

    g_signal_connect(self->coils_dropdown, "notify::selected", G_CALLBACK(on_coils), self);
    g_signal_connect(self->compress_dropdown, "notify::selected", G_CALLBACK(on_coils), self);
    g_signal_connect(self->method_dropdown, "notify::selected", G_CALLBACK(on_method_or_reg), self);
    g_signal_connect(self->reg_dropdown, "notify::selected", G_CALLBACK(on_method_or_reg), self);
    g_signal_connect(self->variant_dropdown, "notify::selected", G_CALLBACK(on_variant), self);
    g_signal_connect(self->lambda_adjustment, "value-changed", G_CALLBACK(on_lambda_scale), self);
    g_signal_connect(self->lambda_entry, "changed", G_CALLBACK(on_lambda_entry_changed), self);
    g_signal_connect(self->tol_entry, "changed", G_CALLBACK(on_tol_changed), self);
    self->live_toggle = GTK_TOGGLE_BUTTON(gtk_toggle_button_new_with_mnemonic("Li_ve"));
    gtk_widget_set_valign(GTK_WIDGET(self->live_toggle), GTK_ALIGN_CENTER);
    gtk_widget_set_sensitive(GTK_WIDGET(self->live_toggle), FALSE);
    gtk_box_append(GTK_BOX(gtk_widget_get_parent(GTK_WIDGET(self->lambda_entry))), GTK_WIDGET(self->live_toggle));
    self->live_sent = NAN;
    g_signal_connect_swapped(self->lambda_adjustment, "value-changed", G_CALLBACK(on_live_lambda), self);
    g_signal_connect_swapped(self->live_toggle, "toggled", G_CALLBACK(on_live_lambda), self);
    /* Marks on whole decades help read the log scale. */
    set_lambda_range(self, LM_REG_IDENTITY);
    /* Dynamic data's prior and weights, right under the heading. */
    self->dyn = LARMOR_DYN_CONTROLS(larmor_dyn_controls_new());
    gtk_widget_set_visible(GTK_WIDGET(self->dyn), FALSE);
    GtkWidget *top = gtk_widget_get_first_child(GTK_WIDGET(self));
    gtk_widget_insert_after(GTK_WIDGET(self->dyn), top, gtk_widget_get_first_child(top));
    g_signal_connect_swapped(self->dyn, "lambda-changed", G_CALLBACK(on_dyn_live_lambda), self);
    g_signal_connect_swapped(self->dyn, "changed", G_CALLBACK(emit_changed), self);
    g_signal_connect_swapped(larmor_dyn_controls_get_live_toggle(self->dyn), "toggled", G_CALLBACK(on_dyn_live_lambda),
                             self);

    LarmorReconParams p;
    larmor_recon_params_init(&p);
    larmor_recon_panel_set_params(self, &p);
    update_variant_description(self);
    GObject *dropdowns[] = { G_OBJECT(self->method_dropdown), G_OBJECT(self->variant_dropdown),
                             G_OBJECT(self->coils_dropdown), G_OBJECT(self->compress_dropdown),
                             G_OBJECT(self->reg_dropdown), G_OBJECT(self->fieldmap_dropdown) };
    for (guint i = 0; i < G_N_ELEMENTS(dropdowns); i++)
        g_signal_connect_swapped(dropdowns[i], "notify::selected", G_CALLBACK(emit_changed), self);
    g_signal_connect_swapped(self->iters_spin, "value-changed", G_CALLBACK(emit_changed), self);
    g_signal_connect_swapped(self->compress_spin, "value-changed", G_CALLBACK(emit_changed), self);
    larmor_scroll_guard_attach(GTK_WIDGET(self)); /* the panel lives in the scrolled sidebar */
}

void larmor_recon_panel_set_live_available(LarmorReconPanel *self, gboolean available, const char *why)
{
    GtkToggleButton *dyn_live = larmor_dyn_controls_get_live_toggle(self->dyn);
    gtk_widget_set_sensitive(GTK_WIDGET(dyn_live), available);
    gtk_widget_set_tooltip_text(GTK_WIDGET(dyn_live), available ? "Live: re-solve the newest dynamic run as λt moves "
                                                                  "(2 ADMM iterations while it moves, the run's "
                                                                  "when it rests)"
                                                                : why);
    if (!available)
        gtk_toggle_button_set_active(dyn_live, FALSE);
    gtk_widget_set_sensitive(GTK_WIDGET(self->live_toggle), available);
    gtk_widget_set_tooltip_text(GTK_WIDGET(self->live_toggle),
                                why ? why
                                    : "Live: re-solve the newest run as λ moves (preview while dragging, "
                                      "the full solve when it rests)");
    if (!available)
        gtk_toggle_button_set_active(self->live_toggle, FALSE);
    self->live_sent = self->lambda; /* a new run: its own lambda is solved */
}

GtkToggleButton *larmor_recon_panel_get_live_toggle(LarmorReconPanel *self)
{
    return self->live_toggle;
}
