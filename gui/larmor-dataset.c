#include "larmor-dataset.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>

#include "larmor-data-name.h"
#include "larmor-util.h"
#include "larmor.h"

struct _LarmorDataset {
    GObject parent_instance;
    char *name;
    char *source;
    lm_geom geom;
    lm_traj *traj;
    lm_kdata *kdata;
    lm_kdata *noise;           /* noise scans of an MRD file (prewhitening), or NULL */
    LarmorVolume *truth;
    LarmorVolume *reference;
    LarmorCoilMaps *maps;
    char *maps_note;
    char *origin;              /* what the data are, from the spec (see key) */
    char *key;                 /* origin and grid: equal keys, same data on the same grid */
    LarmorDatasetSpec *spec;
    gboolean k_rescaled;       /* files: another FOV than the file's rescaled k (other data) */
    gboolean files_swapped;    /* files: the one given as k-space was the trajectory */
    GBytes *fieldmap;          /* Hz on the matrix, or NULL */
    LarmorVolume *fieldmap_volume;
    char *fieldmap_origin;
    char *fieldmap_note;
    lm_acq_paths paths;        /* files: what was read (discovered companions included) */
    lm_frames *frames;         /* dynamic data: the samples of each frame, NULL for static data */
};

G_DEFINE_FINAL_TYPE(LarmorDataset, larmor_dataset, G_TYPE_OBJECT)

LarmorDatasetSpec *larmor_dataset_spec_copy(const LarmorDatasetSpec *spec)
{
    LarmorDatasetSpec *c = g_new(LarmorDatasetSpec, 1);
    *c = *spec;
    c->traj_path = g_strdup(spec->traj_path);
    c->kdata_path = g_strdup(spec->kdata_path);
    c->sens_path = g_strdup(spec->sens_path);
    c->times_path = g_strdup(spec->times_path);
    return c;
}

void larmor_dataset_spec_free(LarmorDatasetSpec *spec)
{
    if (!spec)
        return;
    g_free(spec->traj_path);
    g_free(spec->kdata_path);
    g_free(spec->sens_path);
    g_free(spec->times_path);
    g_free(spec);
}

static void larmor_dataset_finalize(GObject *object)
{
    LarmorDataset *self = LARMOR_DATASET(object);
    g_free(self->name);
    g_free(self->source);
    larmor_dataset_spec_free(self->spec);
    lm_traj_free(self->traj);
    lm_kdata_free(self->kdata);
    lm_kdata_free(self->noise);
    g_clear_object(&self->truth);
    g_clear_object(&self->reference);
    g_clear_object(&self->maps);
    g_free(self->maps_note);
    g_free(self->origin);
    g_free(self->key);
    g_clear_pointer(&self->fieldmap, g_bytes_unref);
    g_clear_object(&self->fieldmap_volume);
    g_free(self->fieldmap_origin);
    g_free(self->fieldmap_note);
    lm_acq_paths_clear(&self->paths);
    lm_frames_free(self->frames);
    G_OBJECT_CLASS(larmor_dataset_parent_class)->finalize(object);
}

static void larmor_dataset_class_init(LarmorDatasetClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = larmor_dataset_finalize;
}

static void larmor_dataset_init(LarmorDataset *self)
{
}

/* The smallest multiple of 8 whose k-space (|k| <= n/2) holds every
 * sample: radial spokes stop short of n/2, so the tight fit would give
 * 30 for a 32 matrix. A truth loaded later sets the matrix exactly. */
static void matrix_from_traj(const lm_traj *t, lm_geom *g)
{
    double ext[3];
    lm_traj_extent(t, ext);
    int64_t n[3];
    for (int a = 0; a < 3; a++) {
        n[a] = (int64_t)ceil(2 * ext[a] - 1e-3);
        n[a] = MAX((n[a] + 7) / 8 * 8, 8);
    }
    if (t->ndim == 2)
        n[2] = 1;
    lm_geom_init(g, n[0], n[1], n[2], LM_PROBLEM_FOV_MM);
    g->basis = LM_BASIS_BOX;
}

static gboolean is_3d_kind(lm_traj_kind k)
{
    return k == LM_TRAJ_RADIAL3D || k == LM_TRAJ_RADIAL3D_FULL || k == LM_TRAJ_STACK_OF_SPIRALS;
}

/* Takes f (lm_geom_voxels floats, malloc'd) as the data's field map. */
static void take_fieldmap(LarmorDataset *self, float *f, const char *origin)
{
    const gsize n = (gsize)lm_geom_voxels(&self->geom);
    GBytes *b = g_bytes_new_with_free_func(f, n * sizeof(float), free, f);
    larmor_dataset_set_fieldmap(self, b, origin, NULL);
    g_bytes_unref(b);
}

static LarmorDataset *make_phantom(const LarmorDatasetSpec *spec, GError **error)
{
    lm_error err = { 0 };
    const lm_phantom *ph = lm_phantom_by_name(spec->phantom, &err);
    if (!ph) {
        larmor_set_error(error, &err);
        return NULL;
    }
    gboolean flat = ph->dim == 2;
    if (flat && is_3d_kind(spec->traj_kind)) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID,
                    "%s trajectory: the 2D phantom needs a 2D trajectory (spiral2d, radial2d or cartesian)",
                    lm_traj_kind_name(spec->traj_kind));
        return NULL;
    }
    if (!flat && !is_3d_kind(spec->traj_kind) && spec->traj_kind != LM_TRAJ_CARTESIAN) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID,
                    "%s trajectory: a 2D trajectory needs the 2D phantom (shepp-logan-2d)",
                    lm_traj_kind_name(spec->traj_kind));
        return NULL;
    }
    if (spec->matrix < 4 || spec->matrix > 512) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "matrix %d: choose 4 to 512", spec->matrix);
        return NULL;
    }
    int coils = MAX(spec->coils, 1);
    if (coils > LM_COILS_SYNTH_MAX) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "%d coils: choose 1 to %d", coils, LM_COILS_SYNTH_MAX);
        return NULL;
    }
    LarmorDataset *self = g_object_new(LARMOR_TYPE_DATASET, NULL);
    lm_geom_init(&self->geom, spec->matrix, spec->matrix, flat ? 1 : spec->matrix, LM_PROBLEM_FOV_MM);
    self->geom.basis = LM_BASIS_BOX;
    lm_volume *truth = NULL;
    /* Sub-voxel averaging as the benchmarks do, lighter on big matrices. */
    int sub = spec->matrix <= 64 ? LM_PROBLEM_TRUTH_SUB : 2;
    lm_coils_synth *cs = NULL;
    lm_sens *sens = NULL;
    /* Maps of (x, y) only for a 2D phantom or a single slice, as larmor-cli phantom --coils. */
    int cdim = flat || self->geom.n[2] == 1 ? 2 : 3;
    float *fm = NULL;
    if (spec->fieldmap_hz > LM_FIELDMAP_SYNTH_MAX_HZ || spec->fieldmap_hz < 0) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "field map %g Hz: choose 0 to %g", spec->fieldmap_hz,
                    LM_FIELDMAP_SYNTH_MAX_HZ);
        g_object_unref(self);
        return NULL;
    }
    /* With a field map (as larmor-cli phantom --fieldmap-hz): sample times
     * over a 25 ms readout and the data under the map, summed on a 2x finer
     * grid (no closed form). */
    if (lm_traj_generate(spec->traj_kind, self->geom.n, spec->samples, spec->readout, &self->traj, &err) ||
        !(self->kdata = lm_kdata_new(self->traj->m, coils, &err)) ||
        (spec->fieldmap_hz > 0 &&
         (lm_traj_times_uniform(self->traj, LM_PROBLEM_READOUT_MS * 1e-3, &err) ||
          lm_fieldmap_synth(self->geom.n, spec->fieldmap_hz, &fm, &err))) ||
        (coils > 1 && (lm_coils_synth_make(cdim, coils, &cs, &err) || lm_coils_synth_maps(cs, self->geom.n, &sens, &err))) ||
        (fm ? lm_fieldmap_synth_kspace(ph, &self->geom, cs, fm, self->traj, NULL, self->kdata, &err)
            : coils == 1 ? lm_phantom_kspace(ph, self->traj, self->kdata->d, &err)
                         : lm_coils_synth_data(cs, ph, self->traj, self->kdata, &err)) ||
        (spec->noise > 0 && lm_noise_add(self->kdata, spec->noise, spec->seed, &err)) ||
        lm_phantom_truth(ph, &self->geom, sub, &truth, &err)) {
        larmor_set_error(error, &err);
        lm_coils_synth_free(cs);
        lm_sens_free(sens);
        free(fm);
        g_object_unref(self);
        return NULL;
    }
    lm_coils_synth_free(cs);
    if (sens)
        self->maps = larmor_coil_maps_new_take(sens, "true maps of the synthetic coils");
    if (fm) {
        char *o = g_strdup_printf("synthetic, up to %g Hz", spec->fieldmap_hz);
        take_fieldmap(self, fm, o);
        g_free(o);
    }
    char coil_text[48] = "";
    if (coils > 1)
        g_snprintf(coil_text, sizeof coil_text, ", %d coils", coils);
    if (spec->fieldmap_hz > 0) {
        size_t l = strlen(coil_text);
        g_snprintf(coil_text + l, sizeof coil_text - l, ", %g Hz", spec->fieldmap_hz);
    }
    self->name = spec->noise > 0 ? g_strdup_printf("%s %d, %s%s, %.3g%% noise", ph->dim == 2 ? "SL2D" : "SL",
                                                   spec->matrix, lm_traj_kind_name(spec->traj_kind), coil_text,
                                                   spec->noise * 100)
                                 : g_strdup_printf("%s %d, %s%s", ph->dim == 2 ? "SL2D" : "SL", spec->matrix,
                                                   lm_traj_kind_name(spec->traj_kind), coil_text);
    self->source = g_strdup_printf("%s phantom, %s trajectory, seed %" G_GUINT64_FORMAT, ph->name,
                                   lm_traj_kind_name(spec->traj_kind), spec->seed);
    self->truth = larmor_volume_new_take(truth, "Truth");
    return self;
}

/* The anatomical reference of a 3D phantom dataset (best effort: without
 * it the user can still open one). */
static void make_reference(LarmorDataset *self, int sub)
{
    lm_volume *ref = NULL;
    if (self->geom.n[2] > 1 && lm_phantom_truth(lm_phantom_shepp_logan_3d_ref(), &self->geom, sub, &ref, NULL) == LM_OK)
        self->reference = larmor_volume_new_take(ref, "Reference: phantom, other contrast");
}

/* An empty volume on g's grid (dims, voxel size, affine): the geometry of
 * dynamic images made from frame-major values. */
static lm_volume *grid_volume(const lm_geom *g, lm_error *err)
{
    double vox[3];
    for (int a = 0; a < 3; a++)
        vox[a] = g->fov_mm[a] / (double)g->n[a];
    lm_volume *v = lm_volume_new(g->n, vox, err);
    if (v)
        lm_geom_affine(g, v->affine);
    return v;
}

/* A dynamic benchmark problem (D128c8, D64c8): frames, maps and the truth
 * of every frame, as larmor-cli phantom --problem writes them. */
static LarmorDataset *make_dyn_problem(const lm_dyn_problem_def *def, GError **error)
{
    lm_error err = { 0 };
    LarmorDataset *self = g_object_new(LARMOR_TYPE_DATASET, NULL);
    lm_sens *sens = NULL;
    lm_cfloat *truth = NULL;
    lm_volume *grid = NULL;
    /* (lm_dyn_problem_make adds the problem's noise itself.) */
    if (lm_dyn_problem_make(def, &self->geom, &self->traj, &self->kdata, &sens, &truth, &self->frames, &err) ||
        !(grid = grid_volume(&self->geom, &err))) {
        larmor_set_error(error, &err);
        lm_sens_free(sens);
        free(truth);
        g_object_unref(self);
        return NULL;
    }
    self->maps = larmor_coil_maps_new_take(sens, "true maps of the synthetic coils");
    self->truth = larmor_volume_new_frames(grid, truth, self->frames->count, self->frames->duration_s, "Truth", error);
    free(truth);
    lm_volume_free(grid);
    if (!self->truth) {
        g_object_unref(self);
        return NULL;
    }
    self->name = g_strdup(def->name);
    self->source = g_strdup_printf("benchmark problem %s (dynamic)", def->name);
    return self;
}

static LarmorDataset *make_problem(const LarmorDatasetSpec *spec, GError **error)
{
    lm_error err = { 0 };
    const lm_dyn_problem_def *dyn = lm_dyn_problem_find(spec->problem);
    if (dyn)
        return make_dyn_problem(dyn, error);
    const lm_problem_def *def = lm_problem_find(spec->problem, &err);
    if (!def) {
        larmor_set_error(error, &err);
        return NULL;
    }
    LarmorDataset *self = g_object_new(LARMOR_TYPE_DATASET, NULL);
    lm_volume *truth = NULL;
    lm_sens *sens = NULL;
    float *fm = NULL;
    if (lm_problem_make_fieldmap(def, &self->geom, &self->traj, &self->kdata, &truth, &sens, &fm, &err)) {
        larmor_set_error(error, &err);
        g_object_unref(self);
        return NULL;
    }
    if (sens)
        self->maps = larmor_coil_maps_new_take(sens, "true maps of the synthetic coils");
    if (fm) {
        char *o = g_strdup_printf("synthetic, up to %g Hz", def->fieldmap_hz);
        take_fieldmap(self, fm, o);
        g_free(o);
    }
    self->name = g_strdup(def->name);
    self->source = g_strdup_printf("benchmark problem %s", def->name);
    self->truth = larmor_volume_new_take(truth, "Truth");
    make_reference(self, LM_PROBLEM_TRUTH_SUB);
    return self;
}

/* A volume on the data's grid: one of the data's matrix is taken as it is
 * (as before any resampling existed: the voxels are the grid's), one of
 * another matrix is resampled through both affines (never adopted as the
 * data's grid). */
static LarmorVolume *volume_on_grid(const lm_geom *g, lm_volume *v, const char *name, GError **error)
{
    double vox[3], aff[4][4];
    for (int a = 0; a < 3; a++)
        vox[a] = g->fov_mm[a] / (double)g->n[a];
    lm_geom_affine(g, aff);
    lm_volume grid = { .dims = { g->n[0], g->n[1], g->n[2] }, .voxel_mm = { vox[0], vox[1], vox[2] } };
    memcpy(grid.affine, aff, sizeof aff);
    if (v->dims[0] == g->n[0] && v->dims[1] == g->n[1] && v->dims[2] == g->n[2])
        return larmor_volume_new_take(v, name);
    lm_volume *out = NULL;
    lm_error err = { 0 };
    lm_code c = lm_resample(v, grid.dims, vox, aff, NULL, LM_OUTSIDE_ZERO, &out, &err);
    lm_volume_free(v);
    if (c != LM_OK) {
        larmor_set_error(error, &err);
        return NULL;
    }
    char *n = g_strdup_printf("%s (resampled)", name);
    LarmorVolume *r = larmor_volume_new_take(out, n);
    g_free(n);
    return r;
}

/* The truth of dynamic data: a 4D NIfTI with one volume per frame on the
 * matrix (pixdim[4] gives the frame duration when the data carry none). */
static LarmorVolume *load_frames_truth(LarmorDataset *self, const char *path, GError **error)
{
    lm_error err = { 0 };
    lm_volume *v = NULL;
    int64_t t = 0;
    double frame_s = 0;
    if (lm_nifti_read_frames(path, &v, &t, &err) != LM_OK || lm_nifti_frame_seconds(path, &frame_s, &err) != LM_OK) {
        lm_volume_free(v);
        larmor_set_error(error, &err);
        return NULL;
    }
    if (t != self->frames->count || v->dims[0] != self->geom.n[0] || v->dims[1] != self->geom.n[1] ||
        v->dims[2] != self->geom.n[2]) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "%s: %lldx%lldx%lld x %lld frames, the data %lldx%lldx%lld x "
                    "%lld frames: not used as the truth", path, (long long)v->dims[0], (long long)v->dims[1],
                    (long long)v->dims[2], (long long)t, (long long)self->geom.n[0], (long long)self->geom.n[1],
                    (long long)self->geom.n[2], (long long)self->frames->count);
        lm_volume_free(v);
        return NULL;
    }
    if (!(self->frames->duration_s > 0))
        self->frames->duration_s = frame_s;
    lm_volume *grid = grid_volume(&self->geom, &err);
    char *base = g_path_get_basename(path);
    LarmorVolume *r = grid ? larmor_volume_new_frames(grid, v->data, t, self->frames->duration_s, base, error) : NULL;
    if (!grid)
        larmor_set_error(error, &err);
    g_free(base);
    lm_volume_free(grid);
    lm_volume_free(v);
    return r;
}

/* A discovered truth or reference, on the grid; a file that cannot be read
 * leaves a note instead. */
static LarmorVolume *load_companion_volume(LarmorDataset *self, const char *path)
{
    lm_volume *v = NULL;
    lm_error err = { 0 };
    GError *error = NULL;
    LarmorVolume *r = NULL;
    char *base = g_path_get_basename(path);
    if (self->frames)
        r = load_frames_truth(self, path, &error);
    else if (lm_load_volume(path, &v, &err) == LM_OK)
        r = volume_on_grid(&self->geom, v, base, &error);
    else
        larmor_set_error(&error, &err);
    if (error) {
        char *note = g_strdup_printf("%s%s%s", self->maps_note ? self->maps_note : "", self->maps_note ? "; " : "",
                                     error->message);
        g_free(self->maps_note);
        self->maps_note = note;
        g_error_free(error);
    }
    g_free(base);
    return r;
}

/* What the spec names, plus the companions beside the data (lm_acq's one
 * discovery rule, shared with larmor-cli): the spec's own sens and times
 * override them. */
static void spec_paths(const LarmorDatasetSpec *spec, lm_acq_paths *p, GError **error)
{
    lm_error err = { 0 };
    const char *one = spec->traj_path && spec->kdata_path && g_strcmp0(spec->traj_path, spec->kdata_path) != 0
                          ? NULL
                          : spec->traj_path ? spec->traj_path : spec->kdata_path;
    memset(p, 0, sizeof *p);
    if (one) {
        if (lm_acq_discover(one, p, &err) != LM_OK) {
            larmor_set_error(error, &err);
            return;
        }
    } else {
        p->traj = strdup(spec->traj_path);
        p->kspace = strdup(spec->kdata_path);
        lm_acq_discover_companions(spec->kdata_path, p);
    }
    if (spec->sens_path)
        lm_acq_paths_set(&p->sens, spec->sens_path, NULL);
    if (spec->times_path)
        lm_acq_paths_set(&p->times, spec->times_path, NULL);
}

static char *basename_or(const char *path, const char *fallback)
{
    return path ? g_path_get_basename(path) : g_strdup(fallback);
}

/* Files through lm_acq: discovery, loading, consistency checks and the
 * companions moved onto the matrix, as larmor-cli does; companions that do
 * not fit leave a note instead of failing the data. */
static LarmorDataset *make_files(const LarmorDatasetSpec *spec, GError **error)
{
    lm_error err = { 0 };
    lm_acq_paths paths;
    spec_paths(spec, &paths, error);
    if (!paths.traj)
        return NULL;
    lm_acq_opts o;
    lm_acq_opts_init(&o);
    o.lenient = 1;
    lm_acq *acq = NULL;
    if (lm_acq_load(&paths, &o, &acq, &err) != LM_OK) {
        larmor_set_error(error, &err);
        lm_acq_paths_clear(&paths);
        return NULL;
    }
    lm_acq_paths_clear(&paths);
    if (spec->times_path && !acq->paths.times) {
        /* Times opened by hand that do not fit fail the load (those found beside the data leave a note). */
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "%s", acq->note);
        lm_acq_free(acq);
        return NULL;
    }
    const char *tpath = acq->paths.traj, *kpath = acq->paths.kspace;
    if (acq->nslices > 1) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_UNSUPPORTED, "%s: %d slices of 2D data: the workbench opens one "
                    "volume (larmor-cli recon reconstructs every slice)", tpath, acq->nslices);
        lm_acq_free(acq);
        return NULL;
    }
    LarmorDataset *self = g_object_new(LARMOR_TYPE_DATASET, NULL);
    if (acq->have_geom) {
        /* IMPATIENT stores no FOV: the problems' 240 mm, as larmor-cli recon without --fov. */
        self->geom = acq->geom;
        for (int a = 0; a < 3; a++)
            if (!(self->geom.fov_mm[a] > 0))
                self->geom.fov_mm[a] = LM_PROBLEM_FOV_MM;
    } else {
        matrix_from_traj(acq->traj, &self->geom);
    }
    /* The user's matrix and FOV instead of the file's. k is in cycles per
     * FOV: another FOV rescales it (a larger FOV covers more, coarser). */
    if (spec->grid[0] > 0) {
        for (int a = 0; a < 3; a++) {
            self->geom.n[a] = MAX(spec->grid[a], 1);
            double fov = spec->fov_mm[a];
            if (fov > 0 && self->geom.fov_mm[a] > 0 && fov != self->geom.fov_mm[a] && a < acq->traj->ndim) {
                const float scale = (float)(fov / self->geom.fov_mm[a]);
                for (int64_t i = 0; i < acq->traj->m; i++)
                    acq->traj->k[3 * i + a] *= scale;
                self->k_rescaled = TRUE;
            }
            if (fov > 0)
                self->geom.fov_mm[a] = fov;
        }
    }
    if (lm_geom_check(&self->geom, acq->traj, &err) || lm_acq_regrid(acq, &self->geom, &err)) {
        larmor_set_error(error, &err);
        lm_acq_free(acq);
        g_object_unref(self);
        return NULL;
    }
    if (acq->note[0])
        self->maps_note = g_strdup(acq->note);
    self->traj = acq->traj;
    self->kdata = acq->kdata;
    self->noise = acq->noise;
    self->frames = acq->frames;
    acq->traj = NULL;
    acq->kdata = NULL;
    acq->noise = NULL;
    acq->frames = NULL;
    if (acq->sens) {
        char *o2 = acq->paths.sens ? g_path_get_basename(acq->paths.sens)
                                   : g_strdup("sensi_r/i.dat of the IMPATIENT directory");
        self->maps = larmor_coil_maps_new_take(acq->sens, o2);
        acq->sens = NULL;
        g_free(o2);
    }
    if (acq->fieldmap) {
        char *o2 = basename_or(acq->paths.fieldmap, "fm.dat of the IMPATIENT directory");
        take_fieldmap(self, acq->fieldmap, o2);
        acq->fieldmap = NULL;
        g_free(o2);
    }
    if (acq->paths.truth)
        self->truth = load_companion_volume(self, acq->paths.truth);
    if (acq->paths.ref)
        self->reference = load_companion_volume(self, acq->paths.ref);
    self->name = larmor_data_name_from_path(tpath);
    self->files_swapped = acq->swapped;
    if (g_strcmp0(tpath, kpath) == 0)
        self->source = g_strdup(tpath);
    else
        self->source = g_strdup_printf("%s + %s", tpath, kpath);
    self->paths = acq->paths;
    memset(&acq->paths, 0, sizeof acq->paths);
    lm_acq_free(acq);
    return self;
}

static void update_key(LarmorDataset *self)
{
    g_free(self->key);
    self->key = g_strdup_printf("%s@%lldx%lldx%lld", self->origin ? self->origin : "?", (long long)self->geom.n[0],
                                (long long)self->geom.n[1], (long long)self->geom.n[2]);
}

/* A file's identity: its path, size and modification time. */
static void append_file_id(GString *s, const char *path)
{
    GStatBuf st;
    g_string_append_printf(s, "|%s", path ? path : "");
    if (path && g_stat(path, &st) == 0)
        g_string_append_printf(s, ":%lld:%lld", (long long)st.st_size, (long long)st.st_mtime);
}

static char *spec_origin(const LarmorDatasetSpec *spec)
{
    GString *s = g_string_new(NULL);
    switch (spec->kind) {
    case LARMOR_SOURCE_PROBLEM:
        g_string_printf(s, "problem:%s", spec->problem);
        break;
    case LARMOR_SOURCE_PHANTOM:
        g_string_printf(s, "phantom:%s:%d:%d:%lld:%lld:%.17g:%" G_GUINT64_FORMAT, spec->phantom, spec->matrix,
                        (int)spec->traj_kind, (long long)spec->samples, (long long)spec->readout, spec->noise,
                        spec->seed);
        if (spec->coils > 1)
            g_string_append_printf(s, ":c%d", spec->coils);
        if (spec->fieldmap_hz > 0)
            g_string_append_printf(s, ":f%.17g", spec->fieldmap_hz);
        break;
    default: {
        /* Two files in either order are the same data. */
        const char *a = spec->traj_path, *b = spec->kdata_path;
        if (g_strcmp0(a, b) > 0) {
            const char *t = a;
            a = b;
            b = t;
        }
        g_string_assign(s, "files");
        append_file_id(s, a);
        append_file_id(s, b);

        break;
    }
    }
    return g_string_free(s, FALSE);
}

LarmorDataset *larmor_dataset_new_from_spec(const LarmorDatasetSpec *spec, GError **error)
{
    LarmorDataset *self;
    switch (spec->kind) {
    case LARMOR_SOURCE_PROBLEM: self = make_problem(spec, error); break;
    case LARMOR_SOURCE_PHANTOM: self = make_phantom(spec, error); break;
    default: self = make_files(spec, error); break;
    }
    if (self) {
        self->origin = spec_origin(spec);
        /* Another FOV rescales k: other data. (Another matrix is only
         * another grid of the same data: see the key.) */
        if (self->k_rescaled) {
            char *o = g_strdup_printf("%s|fov:%.6gx%.6gx%.6g", self->origin, self->geom.fov_mm[0], self->geom.fov_mm[1],
                                      self->geom.fov_mm[2]);
            g_free(self->origin);
            self->origin = o;
        }
        self->spec = larmor_dataset_spec_copy(spec);
        if (self->files_swapped) { /* the spec says which file is which (sessions, recent data) */
            char *t = self->spec->traj_path;
            self->spec->traj_path = self->spec->kdata_path;
            self->spec->kdata_path = t;
        }
        update_key(self);
    }
    return self;
}

const char *larmor_dataset_get_key(LarmorDataset *self)
{
    return self->key;
}

static void load_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
    GError *error = NULL;
    LarmorDataset *ds = larmor_dataset_new_from_spec(data, &error);
    if (ds)
        g_task_return_pointer(task, ds, g_object_unref);
    else
        g_task_return_error(task, error);
}

void larmor_dataset_load_async(const LarmorDatasetSpec *spec, GCancellable *cancellable,
                               GAsyncReadyCallback callback, gpointer user_data)
{
    GTask *task = g_task_new(NULL, cancellable, callback, user_data);
    g_task_set_source_tag(task, larmor_dataset_load_async);
    g_task_set_task_data(task, larmor_dataset_spec_copy(spec), (GDestroyNotify)larmor_dataset_spec_free);
    g_task_run_in_thread(task, load_thread);
    g_object_unref(task);
}

LarmorDataset *larmor_dataset_load_finish(GAsyncResult *result, GError **error)
{
    return g_task_propagate_pointer(G_TASK(result), error);
}

const char *larmor_dataset_get_name(LarmorDataset *self)
{
    return self->name;
}

const LarmorDatasetSpec *larmor_dataset_get_spec(LarmorDataset *self)
{
    return self->spec;
}

const char *larmor_dataset_get_source(LarmorDataset *self)
{
    return self->source;
}

const lm_geom *larmor_dataset_get_geom(LarmorDataset *self)
{
    return &self->geom;
}

const lm_traj *larmor_dataset_get_traj(LarmorDataset *self)
{
    return self->traj;
}

const lm_kdata *larmor_dataset_get_kdata(LarmorDataset *self)
{
    return self->kdata;
}

LarmorVolume *larmor_dataset_get_reference(LarmorDataset *self)
{
    return self->reference;
}

LarmorVolume *larmor_dataset_get_truth(LarmorDataset *self)
{
    return self->truth;
}

gboolean larmor_dataset_set_truth(LarmorDataset *self, LarmorVolume *truth, GError **error)
{
    LarmorVolume *on_grid = NULL;
    if (truth) {
        const lm_volume *v = larmor_volume_get_data(truth);
        if (v->dims[0] != self->geom.n[0] || v->dims[1] != self->geom.n[1] || v->dims[2] != self->geom.n[2]) {
            /* Another grid: resampled through the affines onto the data's
             * grid, never adopted as the matrix (only the user changes it). */
            lm_error err = { 0 };
            lm_volume *c = lm_volume_copy(v, &err);
            if (!c) {
                larmor_set_error(error, &err);
                return FALSE;
            }
            if (!(on_grid = volume_on_grid(&self->geom, c, larmor_volume_get_name(truth), error)))
                return FALSE;
            truth = on_grid;
        }
    }
    g_set_object(&self->truth, truth);
    g_clear_object(&on_grid);
    return TRUE;
}

double larmor_dataset_samples_per_voxel(LarmorDataset *self)
{
    return (double)self->traj->m / (double)lm_geom_voxels(&self->geom);
}

char *larmor_dataset_describe(LarmorDataset *self)
{
    GString *s = g_string_new(NULL);
    const lm_geom *g = &self->geom;
    g_string_append_printf(s, "%'" G_GINT64_FORMAT " samples", self->traj->m);
    if (self->traj->readout > 0)
        g_string_append_printf(s, " (%" G_GINT64_FORMAT " per readout)", self->traj->readout);
    g_string_append_printf(s, "\nMatrix %" G_GINT64_FORMAT " × %" G_GINT64_FORMAT " × %" G_GINT64_FORMAT,
                           g->n[0], g->n[1], g->n[2]);
    g_string_append_printf(s, "\nFOV %.0f mm, voxels %.2f mm", g->fov_mm[0], g->fov_mm[0] / (double)g->n[0]);
    g_string_append_printf(s, "\n%.4f samples per voxel", larmor_dataset_samples_per_voxel(self));
    if (self->kdata->ncoils > 1)
        g_string_append_printf(s, "\n%" G_GINT64_FORMAT " coils", self->kdata->ncoils);
    if (self->frames) {
        g_string_append_printf(s, "\n%" G_GINT64_FORMAT " frames of %'" G_GINT64_FORMAT " samples", self->frames->count,
                               lm_frames_samples(self->frames, 0));
        if (self->frames->duration_s > 0)
            g_string_append_printf(s, ", %.1f ms each", 1e3 * self->frames->duration_s);
    }
    return g_string_free(s, FALSE);
}

const lm_frames *larmor_dataset_get_frames(LarmorDataset *self)
{
    return self->frames;
}

int64_t larmor_dataset_get_coils(LarmorDataset *self)
{
    return self->kdata->ncoils;
}

LarmorCoilMaps *larmor_dataset_get_maps(LarmorDataset *self)
{
    return self->maps;
}

gboolean larmor_dataset_set_maps(LarmorDataset *self, LarmorCoilMaps *maps, GError **error)
{
    if (maps && !larmor_coil_maps_check(larmor_coil_maps_get_sens(maps), self->geom.n, self->kdata->ncoils,
                                        larmor_coil_maps_get_origin(maps), error))
        return FALSE;
    g_set_object(&self->maps, maps);
    g_clear_pointer(&self->maps_note, g_free);
    return TRUE;
}

const char *larmor_dataset_get_maps_note(LarmorDataset *self)
{
    return self->maps_note;
}

gboolean larmor_dataset_has_noise(LarmorDataset *self)
{
    return self->noise != NULL;
}

const lm_kdata *larmor_dataset_get_noise(LarmorDataset *self)
{
    return self->noise;
}

GBytes *larmor_dataset_get_fieldmap(LarmorDataset *self)
{
    return self->fieldmap;
}

LarmorVolume *larmor_dataset_get_fieldmap_volume(LarmorDataset *self)
{
    return self->fieldmap_volume;
}

const char *larmor_dataset_get_fieldmap_origin(LarmorDataset *self)
{
    return self->fieldmap_origin;
}

const char *larmor_dataset_get_fieldmap_note(LarmorDataset *self)
{
    return self->fieldmap_note;
}

gboolean larmor_dataset_has_times(LarmorDataset *self)
{
    return self->traj && self->traj->t;
}

gboolean larmor_dataset_set_fieldmap(LarmorDataset *self, GBytes *fieldmap, const char *origin, GError **error)
{
    const int64_t n = lm_geom_voxels(&self->geom);
    lm_volume *v = NULL;
    if (fieldmap) {
        gsize size;
        const float *f = g_bytes_get_data(fieldmap, &size);
        lm_error err = { 0 };
        if (size != (gsize)n * sizeof(float)) {
            g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "%s: %" G_GSIZE_FORMAT " field-map values but the "
                        "matrix has %lld voxels", origin ? origin : "field map", size / sizeof(float), (long long)n);
            return FALSE;
        }
        if (lm_check_fieldmap(f, n, origin ? origin : "field map", &err) ||
            !(v = lm_volume_new(self->geom.n, (const double[3]){ self->geom.fov_mm[0] / (double)self->geom.n[0],
                                                                 self->geom.fov_mm[1] / (double)self->geom.n[1],
                                                                 self->geom.fov_mm[2] / (double)self->geom.n[2] },
                                &err))) {
            larmor_set_error(error, &err);
            return FALSE;
        }
        lm_geom_affine(&self->geom, v->affine);
        for (int64_t i = 0; i < n; i++)
            v->data[i] = f[i];
    }
    if (self->fieldmap)
        g_bytes_unref(self->fieldmap);
    self->fieldmap = fieldmap ? g_bytes_ref(fieldmap) : NULL;
    g_clear_object(&self->fieldmap_volume);
    if (v) {
        char *name = g_strdup_printf("Field map (Hz): %s", origin ? origin : "");
        self->fieldmap_volume = larmor_volume_new_take(v, name);
        g_free(name);
    }
    g_free(self->fieldmap_origin);
    self->fieldmap_origin = fieldmap ? g_strdup(origin) : NULL;
    g_clear_pointer(&self->fieldmap_note, g_free);
    return TRUE;
}

typedef struct {
    char *path;
    lm_geom geom;
    gboolean resampled;
} FieldmapJob;

static void fieldmap_job_free(FieldmapJob *j)
{
    g_free(j->path);
    g_free(j);
}

static void fieldmap_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
    FieldmapJob *j = data;
    lm_error err = { 0 };
    float *f = NULL;
    int resampled = 0;
    if (lm_load_fieldmap(j->path, &j->geom, NULL, &f, &resampled, &err)) {
        GError *error = NULL;
        larmor_set_error(&error, &err);
        g_task_return_error(task, error);
        return;
    }
    j->resampled = resampled;
    g_task_return_pointer(task, g_bytes_new_with_free_func(f, (gsize)lm_geom_voxels(&j->geom) * sizeof(float), free, f),
                          (GDestroyNotify)g_bytes_unref);
}

void larmor_fieldmap_load_async(LarmorDataset *dataset, const char *path, GCancellable *cancellable,
                                GAsyncReadyCallback callback, gpointer user_data)
{
    GTask *task = g_task_new(NULL, cancellable, callback, user_data);
    g_task_set_source_tag(task, larmor_fieldmap_load_async);
    FieldmapJob *j = g_new0(FieldmapJob, 1);
    j->path = g_strdup(path);
    j->geom = dataset->geom;
    g_task_set_task_data(task, j, (GDestroyNotify)fieldmap_job_free);
    g_task_run_in_thread(task, fieldmap_thread);
    g_object_unref(task);
}

GBytes *larmor_fieldmap_load_finish(GAsyncResult *result, gboolean *resampled, GError **error)
{
    GBytes *b = g_task_propagate_pointer(G_TASK(result), error);
    if (resampled)
        *resampled = b && ((FieldmapJob *)g_task_get_task_data(G_TASK(result)))->resampled;
    return b;
}

static void volume_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
    lm_error err = { 0 };
    lm_volume *v = NULL;
    if (lm_load_volume(data, &v, &err)) {
        GError *error = NULL;
        larmor_set_error(&error, &err);
        g_task_return_error(task, error);
        return;
    }
    char *base = g_path_get_basename(data);
    g_task_return_pointer(task, larmor_volume_new_take(v, base), g_object_unref);
    g_free(base);
}

void larmor_volume_load_async(const char *path, GCancellable *cancellable,
                              GAsyncReadyCallback callback, gpointer user_data)
{
    GTask *task = g_task_new(NULL, cancellable, callback, user_data);
    g_task_set_source_tag(task, larmor_volume_load_async);
    g_task_set_task_data(task, g_strdup(path), g_free);
    g_task_run_in_thread(task, volume_thread);
    g_object_unref(task);
}

LarmorVolume *larmor_volume_load_finish(GAsyncResult *result, GError **error)
{
    return g_task_propagate_pointer(G_TASK(result), error);
}
