#include "larmor-run.h"

#include <math.h>
#include <string.h>

#include "lm_kernels.h"

struct _LarmorRun {
    GObject parent_instance;
    LarmorReconParams params;
    int index;
    char *label;
    char *dataset_name;
    char *dataset_key;
    gboolean current;
    LarmorVolume *image;
    int iters_done;
    double *resid;
    int n_resid;
    double time_q, time_fhd, time_cg, time_total;
    gboolean q_from_cache;
    double gflops, gpairs;
    double psnr, percent_error;
    guint metrics_truth;
    gboolean metrics_stale;
    double data_norm, reg_norm;
    gboolean compare;
};

G_DEFINE_FINAL_TYPE(LarmorRun, larmor_run, G_TYPE_OBJECT)

enum { PROP_0, PROP_COMPARE, PROP_LABEL, PROP_CURRENT, PROP_METRICS, N_PROPS };
static GParamSpec *props[N_PROPS];

void larmor_recon_params_init(LarmorReconParams *p)
{
    lm_recon_opts o;
    lm_recon_opts_init(&o);
    memset(p, 0, sizeof *p);
    p->method = LM_METHOD_CG;
    g_strlcpy(p->variant, o.variant ? o.variant : "cpu-simd", sizeof p->variant);
    p->lambda = o.lambda;
    p->reg = o.reg;
    p->iters = o.iters > 0 ? o.iters : 60;
    p->tol = o.tol;
    p->edge = o.edge_frac > 0 ? o.edge_frac : LM_EDGE_FRAC_DEFAULT;
    p->recompute_q = FALSE;
}

const char *larmor_method_label(lm_method m)
{
    switch (m) {
    case LM_METHOD_GRID_LINEAR: return "Gridding (trilinear)";
    case LM_METHOD_GRID_KB: return "Gridding (Kaiser–Bessel)";
    case LM_METHOD_FFT: return "Cartesian FFT";
    default: return "CG (Toeplitz)";
    }
}

const char *larmor_method_short(lm_method m)
{
    switch (m) {
    case LM_METHOD_CG: return "CG";
    case LM_METHOD_GRID_LINEAR: return "Grid-lin";
    case LM_METHOD_GRID_KB: return "Grid-KB";
    case LM_METHOD_FFT: return "FFT";
    default: return "?";
    }
}

const char *larmor_reg_label(lm_reg_kind r)
{
    switch (r) {
    case LM_REG_GRADIENT: return "Gradient";
    case LM_REG_ANATOMICAL: return "Anatomical";
    default: return "Identity";
    }
}

static void larmor_run_finalize(GObject *object)
{
    LarmorRun *self = LARMOR_RUN(object);
    g_free(self->label);
    g_free(self->dataset_name);
    g_free(self->dataset_key);
    g_free(self->resid);
    g_clear_object(&self->image);
    G_OBJECT_CLASS(larmor_run_parent_class)->finalize(object);
}

static void larmor_run_get_property(GObject *object, guint id, GValue *value, GParamSpec *pspec)
{
    LarmorRun *self = LARMOR_RUN(object);
    switch (id) {
    case PROP_COMPARE: g_value_set_boolean(value, self->compare); break;
    case PROP_LABEL: g_value_set_string(value, self->label); break;
    case PROP_CURRENT: g_value_set_boolean(value, self->current); break;
    case PROP_METRICS: g_value_set_double(value, self->percent_error); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
}

static void larmor_run_set_property(GObject *object, guint id, const GValue *value, GParamSpec *pspec)
{
    LarmorRun *self = LARMOR_RUN(object);
    switch (id) {
    case PROP_COMPARE: larmor_run_set_compare(self, g_value_get_boolean(value)); break;
    case PROP_CURRENT: larmor_run_set_current(self, g_value_get_boolean(value)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
}

static void larmor_run_class_init(LarmorRunClass *klass)
{
    GObjectClass *oc = G_OBJECT_CLASS(klass);
    oc->finalize = larmor_run_finalize;
    oc->get_property = larmor_run_get_property;
    oc->set_property = larmor_run_set_property;
    props[PROP_COMPARE] = g_param_spec_boolean("compare", NULL, NULL, FALSE,
                                               G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
    props[PROP_LABEL] = g_param_spec_string("label", NULL, NULL, NULL, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
    props[PROP_CURRENT] = g_param_spec_boolean("current", NULL, NULL, TRUE,
                                               G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
    /* Notified whenever the metrics (or their staleness) change; the value is the percent error. */
    props[PROP_METRICS] = g_param_spec_double("metrics", NULL, NULL, -G_MAXDOUBLE, G_MAXDOUBLE, 0,
                                              G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
    g_object_class_install_properties(oc, N_PROPS, props);
}

static void larmor_run_init(LarmorRun *self)
{
    self->psnr = self->percent_error = NAN;
    self->data_norm = self->reg_norm = NAN;
    self->gflops = self->gpairs = NAN;
    self->current = TRUE;
}

static void update_label(LarmorRun *self)
{
    const LarmorReconParams *p = &self->params;
    g_free(self->label);
    const char *m = larmor_method_short(p->method);
    if (p->method == LM_METHOD_CG)
        self->label = g_strdup_printf("#%d %s · %s · λ %.2g", self->index, m, p->variant, p->lambda);
    else
        self->label = g_strdup_printf("#%d %s", self->index, m);
    if (self->image) {
        char *name = g_strdup_printf("%s", self->label);
        larmor_volume_set_name(self->image, name);
        g_free(name);
    }
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_LABEL]);
}

LarmorRun *larmor_run_new(const LarmorReconParams *params, const char *dataset_name,
                          lm_recon_result *res)
{
    LarmorRun *self = g_object_new(LARMOR_TYPE_RUN, NULL);
    self->params = *params;
    self->dataset_name = g_strdup(dataset_name);
    if (res->image) {
        self->image = larmor_volume_new_take(res->image, "run");
        res->image = NULL;
    }
    self->iters_done = res->iters_done;
    if (res->resid_history && res->iters_done >= 0) {
        self->n_resid = res->iters_done + 1;
        self->resid = g_memdup2(res->resid_history, sizeof(double) * (gsize)self->n_resid);
    }
    self->time_q = res->time_q_s;
    self->time_fhd = res->time_fhd_s;
    self->time_cg = params->method == LM_METHOD_CG ? res->time_cg_s : res->time_grid_s;
    self->time_total = res->time_total_s;
    self->q_from_cache = res->q_from_cache;
    if (params->method == LM_METHOD_CG && res->time_fhd_s > 0 && res->fhd_pairs > 0) {
        self->gpairs = res->fhd_pairs / res->time_fhd_s / 1e9;
        /* The direct-sum operation count means something only for kernels
         * that do the direct sum: not for NUFFT (approximate) or the
         * separable (grid-only) factorisation. */
        const lm_variant *v = lm_variant_find(params->variant, NULL);
        if (v && !v->approximate && !v->grid_only)
            self->gflops = res->fhd_pairs * lm_ksum_flops_per_pair(0) / res->time_fhd_s / 1e9;
    }
    lm_recon_result_clear(res);
    update_label(self);
    return self;
}

void larmor_run_set_index(LarmorRun *self, int index)
{
    self->index = index;
    update_label(self);
}

int larmor_run_get_index(LarmorRun *self) { return self->index; }
const char *larmor_run_get_label(LarmorRun *self) { return self->label; }
const LarmorReconParams *larmor_run_get_params(LarmorRun *self) { return &self->params; }
const char *larmor_run_get_dataset_name(LarmorRun *self) { return self->dataset_name; }
LarmorVolume *larmor_run_get_image(LarmorRun *self) { return self->image; }
void larmor_run_drop_image(LarmorRun *self) { g_clear_object(&self->image); }
int larmor_run_get_iters_done(LarmorRun *self) { return self->iters_done; }
double larmor_run_get_time_q(LarmorRun *self) { return self->time_q; }
double larmor_run_get_time_fhd(LarmorRun *self) { return self->time_fhd; }
double larmor_run_get_time_cg(LarmorRun *self) { return self->time_cg; }
double larmor_run_get_time_total(LarmorRun *self) { return self->time_total; }
gboolean larmor_run_get_q_from_cache(LarmorRun *self) { return self->q_from_cache; }
double larmor_run_get_gflops(LarmorRun *self) { return self->gflops; }
double larmor_run_get_gpairs(LarmorRun *self) { return self->gpairs; }
const char *larmor_run_get_dataset_key(LarmorRun *self) { return self->dataset_key; }
gboolean larmor_run_get_current(LarmorRun *self) { return self->current; }
guint larmor_run_get_metrics_truth(LarmorRun *self) { return self->metrics_truth; }
gboolean larmor_run_get_metrics_stale(LarmorRun *self) { return self->metrics_stale; }

void larmor_run_set_dataset_key(LarmorRun *self, const char *key)
{
    g_free(self->dataset_key);
    self->dataset_key = g_strdup(key);
}

void larmor_run_set_current(LarmorRun *self, gboolean current)
{
    current = !!current;
    if (self->current == current)
        return;
    self->current = current;
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_CURRENT]);
}

void larmor_run_set_metrics_against(LarmorRun *self, double psnr_db, double percent_error, guint truth_serial)
{
    self->psnr = psnr_db;
    self->percent_error = percent_error;
    self->metrics_truth = truth_serial;
    self->metrics_stale = FALSE;
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_METRICS]);
}

void larmor_run_set_metrics_stale(LarmorRun *self, gboolean stale)
{
    stale = !!stale;
    if (self->metrics_stale == stale)
        return;
    self->metrics_stale = stale;
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_METRICS]);
}
double larmor_run_get_psnr(LarmorRun *self) { return self->psnr; }
double larmor_run_get_percent_error(LarmorRun *self) { return self->percent_error; }
double larmor_run_get_data_norm(LarmorRun *self) { return self->data_norm; }
double larmor_run_get_reg_norm(LarmorRun *self) { return self->reg_norm; }
gboolean larmor_run_get_compare(LarmorRun *self) { return self->compare; }

const double *larmor_run_get_residuals(LarmorRun *self, int *n)
{
    *n = self->n_resid;
    return self->resid;
}

void larmor_run_set_metrics(LarmorRun *self, double psnr_db, double percent_error)
{
    larmor_run_set_metrics_against(self, psnr_db, percent_error, 0);
}

gboolean larmor_run_has_metrics(LarmorRun *self)
{
    return !isnan(self->percent_error);
}

void larmor_run_set_lcurve(LarmorRun *self, double data_norm, double reg_norm)
{
    self->data_norm = data_norm;
    self->reg_norm = reg_norm;
}

void larmor_run_set_compare(LarmorRun *self, gboolean compare)
{
    compare = !!compare;
    if (self->compare == compare)
        return;
    self->compare = compare;
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_COMPARE]);
}
