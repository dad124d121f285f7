#include "larmor-run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "larmor-util.h"
#include "larmor.h"

struct _LarmorRun {
    GObject parent_instance;
    LarmorReconParams params;
    int index;
    char *label;
    char *variant_text;    /* "cpu-simd", or "auto → cpu-nufft" */
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
    gboolean exported;     /* image written or listed in an exported CSV */
    int coils, coils_in;
    lm_coil_combine combine;
    lm_sens_source sens_source;
    double energy_kept;
    lm_sens *coil_images;
    LarmorCoilMaps *maps;
    gboolean own_maps;         /* from lm_recon_result.sens, not the data set's */
    lm_cfloat *noise_cov;
    int ncov;
    GObject *live;             /* LarmorLive: the kept session's re-solver, or NULL */
    gboolean is_live;          /* a live run: its image follows the live re-solves */
    int live_from;             /* the index of the finished run it was forked from */
    gboolean uncorrected;      /* the data had a field map this run did not correct for */
    double lambda_used, lambda_sigma;
    char lambda_criterion[24];
    char lambda_note[160];
    char fallback_note[400]; /* lm_recon_result.fallback_note: the GPU failed, the CPU twin ran */
    int segments;              /* -1: no field map */
    double segment_error;
    LarmorVolume *prior_influence;
};

G_DEFINE_FINAL_TYPE(LarmorRun, larmor_run, G_TYPE_OBJECT)

enum { PROP_0, PROP_COMPARE, PROP_LABEL, PROP_CURRENT, PROP_METRICS, PROP_IMAGE, N_PROPS };
static GParamSpec *props[N_PROPS];

void larmor_recon_params_init(LarmorReconParams *p)
{
    lm_recon_opts o;
    lm_recon_opts_init(&o);
    memset(p, 0, sizeof *p);
    p->method = LM_METHOD_CG;
    g_strlcpy(p->variant, o.variant ? o.variant : LM_VARIANT_AUTO, sizeof p->variant);
    p->lambda = o.lambda;
    p->reg = o.reg;
    p->iters = o.iters > 0 ? o.iters : 60;
    p->tol = o.tol;
    p->edge = o.edge_frac > 0 ? o.edge_frac : LM_EDGE_FRAC_DEFAULT;
    p->recompute_q = FALSE;
    p->coils = LARMOR_COILS_SENSE;
    p->compress = 0;
    p->prewhiten = TRUE;
    p->lambda_auto = FALSE;
    p->criterion = LM_LAMBDA_DEFAULT;
    p->prior_influence = FALSE;
    p->fieldmap = LARMOR_FIELDMAP_SEGMENTED;
}

static const char *const fieldmap_names[LARMOR_N_FIELDMAP_MODES] = { "off", "segmented", "exact" };

const char *larmor_fieldmap_mode_name(LarmorFieldmapMode m)
{
    return (guint)m < LARMOR_N_FIELDMAP_MODES ? fieldmap_names[m] : "off";
}

gboolean larmor_fieldmap_mode_parse(const char *s, LarmorFieldmapMode *out)
{
    for (int i = 0; i < LARMOR_N_FIELDMAP_MODES; i++)
        if (g_strcmp0(s, fieldmap_names[i]) == 0) {
            *out = i;
            return TRUE;
        }
    return FALSE;
}

const char *larmor_fieldmap_mode_label(LarmorFieldmapMode m)
{
    switch (m) {
    case LARMOR_FIELDMAP_SEGMENTED: return "Time-segmented";
    case LARMOR_FIELDMAP_EXACT: return "Exact";
    default: return "Off";
    }
}

static const char *const coil_names[LARMOR_N_COILS_SOURCES] = { "sense", "estimate", "rss" };

const char *larmor_coil_source_name(LarmorCoilSource c)
{
    return (guint)c < LARMOR_N_COILS_SOURCES ? coil_names[c] : "sense";
}

gboolean larmor_coil_source_parse(const char *s, LarmorCoilSource *out)
{
    for (int i = 0; i < LARMOR_N_COILS_SOURCES; i++)
        if (g_strcmp0(s, coil_names[i]) == 0) {
            *out = i;
            return TRUE;
        }
    return FALSE;
}

const char *larmor_coil_source_label(LarmorCoilSource c)
{
    switch (c) {
    case LARMOR_COILS_ESTIMATE: return "Estimate maps (SENSE)";
    case LARMOR_COILS_RSS: return "Root-sum-of-squares";
    default: return "Coil maps (SENSE)";
    }
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
    case LM_REG_ANATOMICAL_EDGES: return "Anatomical edges";
    case LM_REG_TV: return "Total variation";
    case LM_REG_WAVELET: return "Wavelet";
    default: return "Identity";
    }
}

static void larmor_run_finalize(GObject *object)
{
    LarmorRun *self = LARMOR_RUN(object);
    g_free(self->label);
    g_free(self->variant_text);
    g_free(self->dataset_name);
    g_free(self->dataset_key);
    g_free(self->resid);
    g_clear_object(&self->image);
    lm_sens_free(self->coil_images);
    g_clear_object(&self->maps);
    free(self->noise_cov);
    g_clear_object(&self->live);
    g_clear_object(&self->prior_influence);
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
    case PROP_IMAGE: g_value_set_object(value, self->image); break;
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
    props[PROP_IMAGE] = g_param_spec_object("image", NULL, NULL, LARMOR_TYPE_VOLUME,
                                            G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
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
    self->energy_kept = NAN;
    self->current = TRUE;
    self->lambda_used = self->lambda_sigma = NAN;
    self->segments = -1;
    self->segment_error = NAN;
}

static void update_label(LarmorRun *self)
{
    const LarmorReconParams *p = &self->params;
    g_free(self->label);
    const char *m = larmor_method_short(p->method);
    char *coils = self->coils > 1 || self->coils_in > 1 ? larmor_run_get_coils_text(self) : NULL;
    char *c = coils ? g_strdup_printf(" · %s", coils) : g_strdup("");
    /* Off-resonance: "FM 9 seg" or "FM exact"; an automatic lambda says so. */
    char *fm = larmor_run_get_fieldmap_text(self);
    if (*fm) {
        char *t = g_strdup_printf(" · %s", fm);
        g_free(fm);
        fm = t;
    }
    char live[32] = "";
    if (self->is_live)
        g_snprintf(live, sizeof live, " · live from #%d", self->live_from);
    if (p->dynamic) {
        char ls[32] = "";
        if (p->dyn_space_tv)
            g_snprintf(ls, sizeof ls, " · λs %.2g", p->lambda_space);
        self->label = g_strdup_printf("#%d dynamic · %s · %s · λt %.2g%s%s%s", self->index, larmor_dyn_reg_name(p),
                                      self->variant_text, p->lambda, ls, c, live);
    } else if (p->method == LM_METHOD_CG)
        self->label = g_strdup_printf("#%d %s · %s · %s · λ %.2g%s%s%s%s", self->index, larmor_run_get_solver(self),
                                      lm_reg_name(p->reg), self->variant_text, p->lambda, p->lambda_auto ? " auto" : "",
                                      c, fm, live);
    else
        self->label = g_strdup_printf("#%d %s%s%s", self->index, m, c, fm);
    g_free(coils);
    g_free(c);
    g_free(fm);
    if (self->image) {
        char *name = g_strdup_printf("%s", self->label);
        larmor_volume_set_name(self->image, name);
        g_free(name);
    }
    if (self->prior_influence) {
        char *name = g_strdup_printf("#%d prior influence (|Δ|)", self->index);
        larmor_volume_set_name(self->prior_influence, name);
        g_free(name);
    }
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_LABEL]);
}

const char *larmor_run_get_solver(LarmorRun *self)
{
    const LarmorReconParams *p = &self->params;
    if (p->dynamic)
        return p->dyn_time == LM_DYN_TIME_NONE && !p->dyn_space_tv ? "CG" : "ADMM";
    if (p->method != LM_METHOD_CG)
        return larmor_method_short(p->method);
    /* The non-smooth priors are solved by ADMM (lm_admm.h), the others by CG. */
    return p->reg == LM_REG_TV || p->reg == LM_REG_WAVELET ? "ADMM" : "CG";
}

const char *larmor_run_get_reg_text(LarmorRun *self)
{
    return self->params.dynamic ? larmor_dyn_reg_name(&self->params) : larmor_reg_label(self->params.reg);
}

char *larmor_run_get_fieldmap_text(LarmorRun *self)
{
    const LarmorReconParams *p = &self->params;
    if (self->uncorrected)
        return g_strdup("uncorrected");
    if (p->method != LM_METHOD_CG || p->fieldmap == LARMOR_FIELDMAP_OFF)
        return g_strdup("");
    return self->segments > 0 ? g_strdup_printf("FM %d seg", self->segments) : g_strdup("FM exact");
}

void larmor_run_set_uncorrected(LarmorRun *self, gboolean uncorrected)
{
    self->uncorrected = !!uncorrected;
    update_label(self);
}

gboolean larmor_run_get_uncorrected(LarmorRun *self) { return self->uncorrected; }

char *larmor_name_slug(const char *text)
{
    GString *s = g_string_new(NULL);
    for (const char *c = text ? text : ""; *c; c++) {
        if (g_ascii_isalnum(*c) || *c == '.')
            g_string_append_c(s, g_ascii_tolower(*c));
        else if (s->len && s->str[s->len - 1] != '-')
            g_string_append_c(s, '-');
    }
    while (s->len && (s->str[s->len - 1] == '-' || s->str[s->len - 1] == '.'))
        g_string_truncate(s, s->len - 1);
    if (!s->len)
        g_string_assign(s, "image");
    return g_string_free(s, FALSE);
}

char *larmor_run_get_file_stem(LarmorRun *self)
{
    const LarmorReconParams *p = &self->params;
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "run%d %s", self->index, larmor_run_get_solver(self));
    if (p->method == LM_METHOD_CG) {
        char l[G_ASCII_DTOSTR_BUF_SIZE];
        g_ascii_formatd(l, sizeof l, "%.3g", p->lambda);
        g_string_append_printf(s, " %s l%s %s", p->dynamic ? larmor_dyn_reg_name(p) : lm_reg_name(p->reg), l,
                               self->variant_text ? self->variant_text : p->variant);
    }
    char *fm = larmor_run_get_fieldmap_text(self);
    g_string_append_printf(s, " %s%s", fm, self->is_live ? " live" : "");
    g_free(fm);
    char *slug = larmor_name_slug(s->str);
    g_string_free(s, TRUE);
    return slug;
}

const char *larmor_dyn_reg_name(const LarmorReconParams *p)
{
    if (p->dyn_time == LM_DYN_TIME_NONE)
        return p->dyn_space_tv ? "tv per frame" : "frame by frame";
    if (p->dyn_time == LM_DYN_TIME_TV && p->dyn_space_tv)
        return "ttv+tv";
    return lm_dyn_time_name(p->dyn_time);
}

static char *variant_text(const char *variant)
{
    const lm_variant *picked = lm_variant_is_auto(variant) ? lm_variant_resolve(variant, NULL) : NULL;
    return picked ? g_strdup_printf("%s → %s", LM_VARIANT_AUTO, picked->name) : g_strdup(variant);
}

LarmorRun *larmor_run_new_dynamic(const LarmorReconParams *params, const char *dataset_name, LarmorVolume *image,
                                  const lm_dyn_result *res, int coils)
{
    LarmorRun *self = g_object_new(LARMOR_TYPE_RUN, NULL);
    self->params = *params;
    self->params.lambda = res->lambda_t;
    self->params.lambda_space = res->lambda_s;
    self->dataset_name = g_strdup(dataset_name);
    self->variant_text = variant_text(params->variant);
    self->image = image;
    self->iters_done = res->iters_done;
    self->time_q = res->time_prep_s;
    self->time_cg = res->time_solve_s;
    self->time_total = res->time_prep_s + res->time_solve_s;
    self->coils = self->coils_in = coils;
    if (params->lambda_auto) {
        self->lambda_used = res->lambda_t;
        g_strlcpy(self->lambda_criterion, "cross-validation", sizeof self->lambda_criterion);
        g_snprintf(self->lambda_note, sizeof self->lambda_note,
                   "cross-validation: held-out k-space error %.3g, %d trial solves", res->cv_score, res->solves - 1);
    }
    self->combine = coils > 1 ? LM_COMBINE_SENSE : LM_COMBINE_AUTO;
    self->sens_source = coils > 1 ? LM_SENS_GIVEN : self->sens_source;
    update_label(self);
    return self;
}

int64_t larmor_run_get_frames(LarmorRun *self)
{
    return self->image ? larmor_volume_get_n_frames(self->image) : 1;
}

LarmorRun *larmor_run_new(const LarmorReconParams *params, const char *dataset_name,
                          lm_recon_result *res)
{
    LarmorRun *self = g_object_new(LARMOR_TYPE_RUN, NULL);
    self->params = *params;
    self->dataset_name = g_strdup(dataset_name);
    /* auto names the variant it picked (the same on this machine all along). */
    self->variant_text = res->fell_back && res->fallback_variant
                             ? g_strdup_printf("%s (CPU fallback)", res->fallback_variant)
                             : variant_text(params->variant);
    g_strlcpy(self->fallback_note, res->fell_back ? res->fallback_note : "", sizeof self->fallback_note);
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
        const lm_variant *v = lm_variant_find(res->fell_back ? res->fallback_variant : params->variant, NULL);
        if (v && !v->approximate && !v->grid_only)
            self->gflops = res->fhd_pairs * lm_ksum_flops_per_pair(0) / res->time_fhd_s / 1e9;
    }
    self->coils = res->coils;
    self->coils_in = res->coils_in > 0 ? res->coils_in : res->coils;
    self->combine = res->combine;
    self->sens_source = res->sens_source;
    if (self->coils_in != self->coils && res->energy_kept > 0)
        self->energy_kept = res->energy_kept;
    /* Per-channel images, the run's own maps and the noise covariance
     * stay with the run (the coils page shows them). */
    self->coil_images = res->coil_images;
    res->coil_images = NULL;
    if (res->sens) {
        self->maps = larmor_coil_maps_new_take(res->sens, res->sens_source == LM_SENS_ESTIMATED
                                                              ? "estimated by the run"
                                                              : "compressed with the data by the run");
        self->own_maps = TRUE;
        res->sens = NULL;
    }
    if (res->noise_cov && res->ncov > 0) {
        self->noise_cov = res->noise_cov;
        self->ncov = res->ncov;
        res->noise_cov = NULL;
    }
    self->lambda_used = params->method == LM_METHOD_CG ? res->lambda_used : NAN;
    self->lambda_sigma = res->lambda_sigma > 0 ? res->lambda_sigma : NAN;
    g_strlcpy(self->lambda_criterion, res->lambda_criterion, sizeof self->lambda_criterion);
    g_strlcpy(self->lambda_note, res->lambda_note, sizeof self->lambda_note);
    if (params->method == LM_METHOD_CG && params->fieldmap != LARMOR_FIELDMAP_OFF) {
        self->segments = res->segments;
        self->segment_error = res->segments > 0 ? res->segment_error : NAN;
    }
    if (res->prior_influence) {
        self->prior_influence = larmor_volume_new_take(res->prior_influence, "prior influence");
        res->prior_influence = NULL;
        if (self->image)
            g_object_set_data_full(G_OBJECT(self->image), LARMOR_PRIOR_INFLUENCE_KEY,
                                   g_object_ref(self->prior_influence), g_object_unref);
    }
    lm_recon_result_clear(res);
    update_label(self);
    return self;
}

double larmor_run_get_lambda_used(LarmorRun *self) { return self->lambda_used; }
const char *larmor_run_get_lambda_criterion(LarmorRun *self) { return self->lambda_criterion; }
const char *larmor_run_get_lambda_note(LarmorRun *self) { return self->lambda_note; }
double larmor_run_get_lambda_sigma(LarmorRun *self) { return self->lambda_sigma; }
int larmor_run_get_segments(LarmorRun *self) { return self->segments; }
double larmor_run_get_segment_error(LarmorRun *self) { return self->segment_error; }
LarmorVolume *larmor_run_get_prior_influence(LarmorRun *self) { return self->prior_influence; }

void larmor_run_set_prior_influence(LarmorRun *self, LarmorVolume *influence)
{
    g_set_object(&self->prior_influence, influence);
    if (self->image)
        g_object_set_data_full(G_OBJECT(self->image), LARMOR_PRIOR_INFLUENCE_KEY,
                               influence ? g_object_ref(influence) : NULL, influence ? g_object_unref : NULL);
    update_label(self);
}

char *larmor_run_get_details(LarmorRun *self)
{
    GString *s = g_string_new(NULL);
    const LarmorReconParams *p = &self->params;
    if (self->fallback_note[0])
        g_string_append(s, self->fallback_note);
    if (p->method == LM_METHOD_CG && p->lambda_auto && isfinite(self->lambda_used)) {
        if (s->len)
            g_string_append(s, " · ");
        g_string_append_printf(s, "λ = %.3g (%s", self->lambda_used,
                               self->lambda_criterion[0] ? self->lambda_criterion : "auto");
        if (isfinite(self->lambda_sigma))
            g_string_append_printf(s, ", σ %.3g", self->lambda_sigma);
        g_string_append(s, ")");
    }
    if (self->segments >= 0) {
        if (s->len)
            g_string_append(s, " · ");
        if (self->segments > 0)
            g_string_append_printf(s, "field map: %d time segments, interpolation error %.2e", self->segments,
                                   self->segment_error);
        else
            g_string_append(s, "field map: exact model");
    }
    if (self->prior_influence) {
        if (s->len)
            g_string_append(s, " · ");
        g_string_append(s, "prior influence kept");
    }
    return g_string_free(s, FALSE);
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
const char *larmor_run_get_variant_text(LarmorRun *self) { return self->variant_text ? self->variant_text : self->params.variant; }
LarmorVolume *larmor_run_get_image(LarmorRun *self) { return self->image; }
void larmor_run_drop_image(LarmorRun *self) { g_clear_object(&self->image); }

void larmor_run_set_live(LarmorRun *self, GObject *live)
{
    if (live)
        g_object_ref(live);
    g_clear_object(&self->live);
    self->live = live;
}

GObject *larmor_run_get_live(LarmorRun *self) { return self->live; }
gboolean larmor_run_get_is_live(LarmorRun *self) { return self->is_live; }

LarmorRun *larmor_run_fork_live(LarmorRun *src)
{
    LarmorRun *self = g_object_new(LARMOR_TYPE_RUN, NULL);
    self->params = src->params;
    self->params.lambda_auto = FALSE; /* live lambda is the slider's */
    self->params.prior_influence = FALSE;
    self->variant_text = g_strdup(src->variant_text);
    self->dataset_name = g_strdup(src->dataset_name);
    self->dataset_key = g_strdup(src->dataset_key);
    self->current = src->current;
    self->coils = src->coils;
    self->coils_in = src->coils_in;
    self->combine = src->combine;
    self->sens_source = src->sens_source;
    self->energy_kept = src->energy_kept;
    if (src->maps)
        self->maps = g_object_ref(src->maps);
    self->segments = src->segments;
    self->segment_error = src->segment_error;
    self->uncorrected = src->uncorrected;
    self->is_live = TRUE;
    self->live_from = src->index;
    /* Q and E^H d come from the session, not from a run of its own; no
     * solve has finished yet. */
    self->time_q = self->time_fhd = self->time_cg = self->time_total = NAN;
    self->gflops = self->gpairs = NAN;
    update_label(self);
    return self;
}

int larmor_run_get_live_from(LarmorRun *self) { return self->live_from; }

gboolean larmor_run_update_live(LarmorRun *self, LarmorVolume *image, double lambda, int iters_done, double solve_s,
                                double psnr_db, double percent_error, guint truth_serial)
{
    g_return_val_if_fail(LARMOR_IS_VOLUME(image), FALSE);
    if (!self->is_live)
        return FALSE; /* a finished run keeps its result */
    g_set_object(&self->image, image);
    self->params.lambda = lambda;
    self->iters_done = iters_done;
    /* Its own solve's time; Q and E^H d were the session's (NaN: not run). */
    self->time_cg = self->time_total = solve_s;
    /* the history and L-curve point were the original solve's */
    g_clear_pointer(&self->resid, g_free);
    self->n_resid = 0;
    self->data_norm = self->reg_norm = NAN;
    update_label(self);
    if (isnan(percent_error))
        larmor_run_set_metrics(self, NAN, NAN);
    else
        larmor_run_set_metrics_against(self, psnr_db, percent_error, truth_serial);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_IMAGE]);
    return TRUE;
}

gboolean larmor_run_live_fits(LarmorRun *self, const LarmorReconParams *want, char **why)
{
    if (self->params.dynamic || want->dynamic) {
        /* The temporal weight moves; the prior stays the run's. */
        const gboolean same = self->params.dynamic && want->dynamic && self->params.dyn_time == want->dyn_time &&
                              self->params.dyn_space_tv == want->dyn_space_tv && want->dyn_time != LM_DYN_TIME_NONE;
        if (!same && why)
            *why = g_strdup_printf("Live λt re-solves run #%d (%s): choose that temporal prior, or run the one "
                                   "chosen now first", self->live_from > 0 ? self->live_from : self->index,
                                   self->params.dynamic ? larmor_dyn_reg_name(&self->params) : "static");
        return same;
    }
    if (want->method != LM_METHOD_CG || want->reg != self->params.reg) {
        if (why)
            *why = g_strdup_printf("Live λ re-solves run #%d (%s, %s): choose CG with that regulariser, or run "
                                   "the one chosen now first",
                                   self->live_from > 0 ? self->live_from : self->index,
                                   larmor_method_short(self->params.method), larmor_reg_label(self->params.reg));
        return FALSE;
    }
    return TRUE;
}

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
gboolean larmor_run_get_exported(LarmorRun *self) { return self->exported; }
void larmor_run_set_exported(LarmorRun *self, gboolean exported) { self->exported = exported; }
int larmor_run_get_coils(LarmorRun *self) { return self->coils; }
int larmor_run_get_coils_in(LarmorRun *self) { return self->coils_in; }
lm_coil_combine larmor_run_get_combine(LarmorRun *self) { return self->combine; }
lm_sens_source larmor_run_get_sens_source(LarmorRun *self) { return self->sens_source; }
double larmor_run_get_energy_kept(LarmorRun *self) { return self->energy_kept; }
const lm_sens *larmor_run_get_coil_images(LarmorRun *self) { return self->coil_images; }
LarmorCoilMaps *larmor_run_get_maps(LarmorRun *self) { return self->maps; }

char *larmor_run_get_coils_text(LarmorRun *self)
{
    if (self->coils_in <= 1 && self->coils <= 1)
        return g_strdup("—");
    char n[32];
    if (self->coils_in > self->coils)
        g_snprintf(n, sizeof n, "%d of %d", self->coils, self->coils_in);
    else
        g_snprintf(n, sizeof n, "%d", self->coils);
    if (self->combine == LM_COMBINE_RSS)
        return g_strdup_printf("rss %s", n);
    /* Gridding weights the channel images with the maps (Roemer), no SENSE solve. */
    if (self->params.method != LM_METHOD_CG)
        return g_strdup_printf("maps %s", n);
    return g_strdup_printf("SENSE %s%s", self->sens_source == LM_SENS_ESTIMATED ? "est. " : "", n);
}

void larmor_run_set_maps(LarmorRun *self, LarmorCoilMaps *maps)
{
    g_set_object(&self->maps, maps);
    self->own_maps = FALSE;
}

const lm_cfloat *larmor_run_get_noise_cov(LarmorRun *self, int *ncov)
{
    if (ncov)
        *ncov = self->ncov;
    return self->noise_cov;
}

void larmor_run_drop_coil_data(LarmorRun *self)
{
    g_clear_pointer(&self->coil_images, lm_sens_free);
    /* Given maps belong to the data set and cost nothing extra; the run's
     * own (estimated, compressed) go. */
    if (self->own_maps)
        g_clear_object(&self->maps);
}

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

/* --- sessions ------------------------------------------------------------ */

/* Doubles as %.17g (exact round trip, NaN as "nan"), not the locale's. */
static void kf_set_double(GKeyFile *kf, const char *g, const char *k, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_key_file_set_string(kf, g, k, g_ascii_formatd(buf, sizeof buf, "%.17g", v));
}

static gboolean kf_get_double(GKeyFile *kf, const char *g, const char *k, double *out, GError **error)
{
    char *s = g_key_file_get_string(kf, g, k, error);
    if (!s)
        return FALSE;
    char *end = NULL;
    *out = g_ascii_strtod(s, &end);
    gboolean ok = end && end != s && *end == 0;
    if (!ok)
        g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "%s: %s=%s is not a number", g, k, s);
    g_free(s);
    return ok;
}

void larmor_run_save_to_keyfile(LarmorRun *self, GKeyFile *kf, const char *g)
{
    const LarmorReconParams *p = &self->params;
    g_key_file_set_string(kf, g, "method", lm_method_name(p->method));
    g_key_file_set_string(kf, g, "variant", p->variant);
    g_key_file_set_string(kf, g, "variant-text", larmor_run_get_variant_text(self));
    kf_set_double(kf, g, "lambda", p->lambda);
    if (p->dynamic) {
        /* lambda is the temporal weight; the image has its frames (NIfTI 4D). */
        g_key_file_set_boolean(kf, g, "dynamic", TRUE);
        g_key_file_set_string(kf, g, "dyn-time", lm_dyn_time_name(p->dyn_time));
        g_key_file_set_boolean(kf, g, "dyn-space-tv", p->dyn_space_tv);
        kf_set_double(kf, g, "lambda-space", p->lambda_space);
    }
    g_key_file_set_string(kf, g, "reg", lm_reg_name(p->reg));
    g_key_file_set_integer(kf, g, "iters", p->iters);
    kf_set_double(kf, g, "tol", p->tol);
    kf_set_double(kf, g, "edge", p->edge);
    g_key_file_set_boolean(kf, g, "recompute-q", p->recompute_q);
    g_key_file_set_string(kf, g, "coil-source", larmor_coil_source_name(p->coils));
    g_key_file_set_integer(kf, g, "compress", p->compress);
    g_key_file_set_boolean(kf, g, "prewhiten", p->prewhiten);
    g_key_file_set_integer(kf, g, "index", self->index);
    g_key_file_set_string(kf, g, "dataset-name", self->dataset_name ? self->dataset_name : "");
    g_key_file_set_string(kf, g, "dataset-key", self->dataset_key ? self->dataset_key : "");
    g_key_file_set_integer(kf, g, "iters-done", self->iters_done);
    GString *r = g_string_new(NULL);
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    for (int i = 0; i < self->n_resid; i++)
        g_string_append_printf(r, "%s%s", i ? ";" : "", g_ascii_formatd(buf, sizeof buf, "%.17g", self->resid[i]));
    g_key_file_set_string(kf, g, "residuals", r->str);
    g_string_free(r, TRUE);
    kf_set_double(kf, g, "time-q", self->time_q);
    kf_set_double(kf, g, "time-fhd", self->time_fhd);
    kf_set_double(kf, g, "time-cg", self->time_cg);
    kf_set_double(kf, g, "time-total", self->time_total);
    g_key_file_set_boolean(kf, g, "q-from-cache", self->q_from_cache);
    kf_set_double(kf, g, "gflops", self->gflops);
    kf_set_double(kf, g, "gpairs", self->gpairs);
    kf_set_double(kf, g, "psnr", self->psnr);
    kf_set_double(kf, g, "percent-error", self->percent_error);
    g_key_file_set_boolean(kf, g, "metrics-stale", self->metrics_stale);
    kf_set_double(kf, g, "data-norm", self->data_norm);
    kf_set_double(kf, g, "reg-norm", self->reg_norm);
    g_key_file_set_integer(kf, g, "coils", self->coils);
    g_key_file_set_integer(kf, g, "coils-in", self->coils_in);
    g_key_file_set_string(kf, g, "combine", lm_coil_combine_name(self->combine));
    g_key_file_set_string(kf, g, "sens-source", lm_sens_source_name(self->sens_source));
    kf_set_double(kf, g, "energy-kept", self->energy_kept);
    g_key_file_set_boolean(kf, g, "lambda-auto", p->lambda_auto);
    g_key_file_set_string(kf, g, "lambda-criterion", lm_lambda_criterion_name(p->criterion));
    g_key_file_set_boolean(kf, g, "prior-influence", p->prior_influence);
    g_key_file_set_string(kf, g, "fieldmap", larmor_fieldmap_mode_name(p->fieldmap));
    kf_set_double(kf, g, "lambda-used", self->lambda_used);
    kf_set_double(kf, g, "lambda-sigma", self->lambda_sigma);
    g_key_file_set_string(kf, g, "lambda-chosen-by", self->lambda_criterion);
    g_key_file_set_string(kf, g, "lambda-note", self->lambda_note);
    g_key_file_set_boolean(kf, g, "fallback-cpu", p->fallback_cpu);
    g_key_file_set_string(kf, g, "fallback-note", self->fallback_note);
    g_key_file_set_integer(kf, g, "segments", self->segments);
    kf_set_double(kf, g, "segment-error", self->segment_error);
    g_key_file_set_integer(kf, g, "live-from", self->is_live ? self->live_from : 0);
    g_key_file_set_boolean(kf, g, "fieldmap-uncorrected", self->uncorrected);
}

static gboolean parse_sens_source(const char *s, lm_sens_source *out)
{
    for (int i = LM_SENS_NONE; i <= LM_SENS_ESTIMATED; i++)
        if (g_strcmp0(s, lm_sens_source_name(i)) == 0) {
            *out = i;
            return TRUE;
        }
    return FALSE;
}

LarmorRun *larmor_run_new_from_keyfile(GKeyFile *kf, const char *g, LarmorVolume *image, GError **error)
{
    LarmorRun *self = g_object_new(LARMOR_TYPE_RUN, NULL);
    LarmorReconParams *p = &self->params;
    larmor_recon_params_init(p);
    GError *e = NULL;
    char *s = NULL, *bad = NULL;
    lm_error err = { 0 };
#define STR(key) (g_free(s), s = g_key_file_get_string(kf, g, key, &e))
#define DBL(key, dst) kf_get_double(kf, g, key, dst, &e)
#define INT(key, dst) ((*(dst) = g_key_file_get_integer(kf, g, key, &e)), e == NULL)
#define BOOL(key, dst) ((*(dst) = g_key_file_get_boolean(kf, g, key, &e)), e == NULL)
    if (!STR("method") || lm_method_parse(s, &p->method, &err) != LM_OK)
        bad = "method";
    else if (!STR("variant") || strlen(s) >= sizeof p->variant)
        bad = "variant";
    else if (g_strlcpy(p->variant, s, sizeof p->variant), !STR("reg") || lm_reg_parse(s, &p->reg, &err) != LM_OK)
        bad = "reg";
    else if (!STR("coil-source") || !larmor_coil_source_parse(s, &p->coils))
        bad = "coil-source";
    else if (!STR("combine") || lm_coil_combine_parse(s, &self->combine, &err) != LM_OK)
        bad = "combine";
    else if (!STR("sens-source") || !parse_sens_source(s, &self->sens_source))
        bad = "sens-source";
    else if (!DBL("lambda", &p->lambda) || !INT("iters", &p->iters) || !DBL("tol", &p->tol) ||
             !DBL("edge", &p->edge) || !BOOL("recompute-q", &p->recompute_q) || !INT("compress", &p->compress) ||
             !BOOL("prewhiten", &p->prewhiten) || !INT("index", &self->index) || !INT("iters-done", &self->iters_done) ||
             !DBL("time-q", &self->time_q) || !DBL("time-fhd", &self->time_fhd) || !DBL("time-cg", &self->time_cg) ||
             !DBL("time-total", &self->time_total) || !BOOL("q-from-cache", &self->q_from_cache) ||
             !DBL("gflops", &self->gflops) || !DBL("gpairs", &self->gpairs) || !DBL("psnr", &self->psnr) ||
             !DBL("percent-error", &self->percent_error) || !BOOL("metrics-stale", &self->metrics_stale) ||
             !DBL("data-norm", &self->data_norm) || !DBL("reg-norm", &self->reg_norm) ||
             !INT("coils", &self->coils) || !INT("coils-in", &self->coils_in) ||
             !DBL("energy-kept", &self->energy_kept))
        bad = "";
    else if (!(p->iters >= 0 && p->iters <= 100000 && self->iters_done >= -1 && self->iters_done <= 100000 &&
               self->coils >= 0 && self->coils_in >= 0 && self->index >= 0))
        bad = "iters, coils or index";
#undef STR
#undef DBL
#undef INT
#undef BOOL
    lm_error_clear(&err);
    if (bad) {
        if (e)
            g_set_error(error, LARMOR_ERROR, LM_ERR_FORMAT, "%s", e->message);
        else
            g_set_error(error, LARMOR_ERROR, LM_ERR_FORMAT, "[%s]: bad %s", g, bad);
        g_clear_error(&e);
        g_free(s);
        g_object_unref(self);
        return NULL;
    }
    g_free(s);
    self->dataset_name = g_key_file_get_string(kf, g, "dataset-name", NULL);
    self->dataset_key = g_key_file_get_string(kf, g, "dataset-key", NULL);
    self->variant_text = g_key_file_get_string(kf, g, "variant-text", NULL);
    char *r = g_key_file_get_string(kf, g, "residuals", NULL);
    if (r && *r) {
        char **parts = g_strsplit(r, ";", -1);
        self->n_resid = (int)g_strv_length(parts);
        self->resid = g_new(double, self->n_resid);
        for (int i = 0; i < self->n_resid; i++)
            self->resid[i] = g_ascii_strtod(parts[i], NULL);
        g_strfreev(parts);
    }
    g_free(r);
    /* Keys added with issues 11, 12 and 23: sessions written before have none. */
    p->dynamic = g_key_file_get_boolean(kf, g, "dynamic", NULL);
    if (p->dynamic) {
        char *t = g_key_file_get_string(kf, g, "dyn-time", NULL);
        p->dyn_time = LM_DYN_TIME_NONE;
        for (lm_dyn_time k = LM_DYN_TIME_NONE; k <= LM_DYN_TIME_LLR; k++)
            if (t && g_strcmp0(t, lm_dyn_time_name(k)) == 0)
                p->dyn_time = k;
        g_free(t);
        p->dyn_space_tv = g_key_file_get_boolean(kf, g, "dyn-space-tv", NULL);
        p->lambda_space = g_key_file_get_double(kf, g, "lambda-space", NULL);
    }
    p->lambda_auto = g_key_file_get_boolean(kf, g, "lambda-auto", NULL);
    p->prior_influence = g_key_file_get_boolean(kf, g, "prior-influence", NULL);
    char *c = g_key_file_get_string(kf, g, "lambda-criterion", NULL);
    if (c)
        lm_lambda_criterion_parse(c, &p->criterion, NULL);
    g_free(c);
    c = g_key_file_get_string(kf, g, "fieldmap", NULL);
    if (!c || !larmor_fieldmap_mode_parse(c, &p->fieldmap))
        p->fieldmap = LARMOR_FIELDMAP_OFF;
    g_free(c);
    if (!kf_get_double(kf, g, "lambda-used", &self->lambda_used, NULL))
        self->lambda_used = p->method == LM_METHOD_CG ? p->lambda : NAN;
    kf_get_double(kf, g, "lambda-sigma", &self->lambda_sigma, NULL);
    kf_get_double(kf, g, "segment-error", &self->segment_error, NULL);
    c = g_key_file_get_string(kf, g, "lambda-chosen-by", NULL);
    g_strlcpy(self->lambda_criterion, c ? c : "", sizeof self->lambda_criterion);
    g_free(c);
    c = g_key_file_get_string(kf, g, "lambda-note", NULL);
    g_strlcpy(self->lambda_note, c ? c : "", sizeof self->lambda_note);
    g_free(c);
    p->fallback_cpu = g_key_file_get_boolean(kf, g, "fallback-cpu", NULL); /* issue 14: older sessions lack it */
    c = g_key_file_get_string(kf, g, "fallback-note", NULL);
    g_strlcpy(self->fallback_note, c ? c : "", sizeof self->fallback_note);
    g_free(c);
    if (g_key_file_has_key(kf, g, "segments", NULL))
        self->segments = CLAMP(g_key_file_get_integer(kf, g, "segments", NULL), -1, 100000);
    /* A live run comes back without its session (it changes no more), still saying where it came from. */
    self->live_from = MAX(0, g_key_file_get_integer(kf, g, "live-from", NULL));
    self->is_live = self->live_from > 0;
    self->uncorrected = g_key_file_get_boolean(kf, g, "fieldmap-uncorrected", NULL);
    if (image)
        self->image = g_object_ref(image);
    update_label(self);
    return self;
}
