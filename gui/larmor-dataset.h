/* What a reconstruction works on: geometry, trajectory, k-space and an
 * optional truth. Built in a worker thread from a benchmark problem, a
 * custom phantom or files; the trajectory and k-space never change after
 * that, so running tasks share them by reference. */
#ifndef LARMOR_DATASET_H
#define LARMOR_DATASET_H

#include <gio/gio.h>

#include "larmor-coil-maps.h"
#include "larmor-volume.h"
#include "larmor.h"

G_BEGIN_DECLS

typedef enum {
    LARMOR_SOURCE_PROBLEM = 0, /* a named benchmark problem (B32 ...) */
    LARMOR_SOURCE_PHANTOM,     /* a custom analytic phantom */
    LARMOR_SOURCE_FILES,       /* trajectory and k-space files (one .h5 gives both) */
} LarmorSourceKind;

typedef struct {
    LarmorSourceKind kind;
    char problem[32];
    char phantom[32];          /* "shepp-logan", "shepp-logan-2d" */
    int matrix;
    lm_traj_kind traj_kind;
    int64_t samples;           /* 0: the kind's natural count */
    int64_t readout;           /* 0: default */
    double noise;              /* relative sigma */
    guint64 seed;
    int coils;                 /* custom phantom: receive coils (0 or 1: one uniform coil;
                                  more: lm_coils_synth maps, kept with the data) */
    char *traj_path, *kdata_path; /* files: one of them alone (or both the same) names a data
                                     directory or any file of a data set (lm_acq_discover) */
    char *sens_path;           /* files: coil maps; NULL: sens beside the data (lm_acq_discover) */
    char *times_path;          /* files: sample times; NULL: times.cfl beside the data */
    int64_t grid[3];           /* files: reconstruction matrix instead of the file's (0: the file's) */
    double fov_mm[3];          /* with grid: its field of view (<= 0: the file's) */
    double fieldmap_hz;        /* custom phantom: > 0 adds lm_fieldmap_synth's map with this
                                  largest |f| and the data under it, with sample times (as
                                  larmor-cli phantom --fieldmap-hz) */
} LarmorDatasetSpec;

LarmorDatasetSpec *larmor_dataset_spec_copy(const LarmorDatasetSpec *spec);
void larmor_dataset_spec_free(LarmorDatasetSpec *spec);

#define LARMOR_TYPE_DATASET (larmor_dataset_get_type())
G_DECLARE_FINAL_TYPE(LarmorDataset, larmor_dataset, LARMOR, DATASET, GObject)

/* Blocking (for worker threads and tests). */
LarmorDataset *larmor_dataset_new_from_spec(const LarmorDatasetSpec *spec, GError **error);
void larmor_dataset_load_async(const LarmorDatasetSpec *spec, GCancellable *cancellable,
                               GAsyncReadyCallback callback, gpointer user_data);
LarmorDataset *larmor_dataset_load_finish(GAsyncResult *result, GError **error);

const char *larmor_dataset_get_name(LarmorDataset *self);
/* The spec the data were made from (sessions remember it). */
const LarmorDatasetSpec *larmor_dataset_get_spec(LarmorDataset *self);
/* Identity of the data and their grid: the same benchmark problem, phantom
 * parameters or files (path, size, time) on the same matrix give the same
 * key, so runs can tell whether they belong to the data loaded now. */
const char *larmor_dataset_get_key(LarmorDataset *self);
const lm_geom *larmor_dataset_get_geom(LarmorDataset *self);
const lm_traj *larmor_dataset_get_traj(LarmorDataset *self);
const lm_kdata *larmor_dataset_get_kdata(LarmorDataset *self);
LarmorVolume *larmor_dataset_get_truth(LarmorDataset *self);
/* For 3D phantoms: the same ellipsoids in another contrast, ready as the
 * anatomical regulariser's reference (NULL for loaded data). */
LarmorVolume *larmor_dataset_get_reference(LarmorDataset *self);
/* A truth of another matrix is resampled onto the data's grid through
 * both affines (larmor_dataset_get_truth then returns the resampled one);
 * the grid changes only when the user changes the matrix. */
gboolean larmor_dataset_set_truth(LarmorDataset *self, LarmorVolume *truth, GError **error);
double larmor_dataset_samples_per_voxel(LarmorDataset *self);
/* Multi-line summary: samples, matrix, FOV, samples per voxel, coils. */
char *larmor_dataset_describe(LarmorDataset *self);
/* Where it came from: "benchmark problem B32", a file name, ... */
const char *larmor_dataset_get_source(LarmorDataset *self);

/* Dynamic data (docs/dynamic.md): which samples make each frame, and the
 * frame duration when known (D128c8's 84 ms; a cfl's frames take it from
 * a 4D truth beside them); NULL for static data. Immutable, like the
 * trajectory. The truth of dynamic data has one frame per frame. */
const lm_frames *larmor_dataset_get_frames(LarmorDataset *self);

/* Receive channels of the k-space (1 for single-coil data). */
int64_t larmor_dataset_get_coils(LarmorDataset *self);
/* The coil maps that go with the data (NULL: none): the true maps of a
 * synthetic multi-coil phantom, sens.cfl beside the k-space, or maps the
 * user opened (larmor_dataset_set_maps). Running tasks keep their own
 * reference, so replacing them never pulls maps from under a worker. */
LarmorCoilMaps *larmor_dataset_get_maps(LarmorDataset *self);
/* Checks the maps against the matrix and the channel count (one-line error). */
gboolean larmor_dataset_set_maps(LarmorDataset *self, LarmorCoilMaps *maps, GError **error);
/* Why maps found beside the data were not taken ("sens.cfl: 4 coil maps but
 * the k-space has 8 channels"), or NULL. */
const char *larmor_dataset_get_maps_note(LarmorDataset *self);
/* Noise-only samples for prewhitening: none of Larmor's inputs carry them
 * yet, so always FALSE (the prewhitening control says so). */
gboolean larmor_dataset_has_noise(LarmorDataset *self);
/* The noise scans the data came with (read-only, lives as long as the data
 * set: safe to read from a worker holding a reference), or NULL. */
const lm_kdata *larmor_dataset_get_noise(LarmorDataset *self);

/* Off-resonance (docs/fieldmap.md). The field map that goes with the data
 * (NULL: none): Hz on the matrix, lm_geom_voxels floats, immutable and
 * shared by reference with running tasks. It comes with benchmark problems
 * that have one (S128c8f), custom phantoms with fieldmap_hz, IMPATIENT
 * directories (fm.dat), or File > Open Field Map (larmor_fieldmap_load_async).
 * A truth that changes the grid drops it (the note says so). */
GBytes *larmor_dataset_get_fieldmap(LarmorDataset *self);
/* The same as an image (real part in Hz, the grid's affine) for the viewer's overlay. */
LarmorVolume *larmor_dataset_get_fieldmap_volume(LarmorDataset *self);
/* Where it came from ("synthetic, up to 150 Hz", a file name), or NULL. */
const char *larmor_dataset_get_fieldmap_origin(LarmorDataset *self);
/* Takes a map of lm_geom_voxels values on the matrix (checked: size and
 * finiteness, one-line error); NULL removes it. */
gboolean larmor_dataset_set_fieldmap(LarmorDataset *self, GBytes *fieldmap, const char *origin, GError **error);
const char *larmor_dataset_get_fieldmap_note(LarmorDataset *self);
/* The trajectory carries sample times (lm_traj.t): a field map can be used. */
gboolean larmor_dataset_has_times(LarmorDataset *self);

/* A field map file (.nii/.nii.gz resampled onto the data's grid through its
 * affine, .cfl on the matrix: lm_load_fieldmap) read in a worker for the
 * grid the data have now; the result is the GBytes for
 * larmor_dataset_set_fieldmap. */
void larmor_fieldmap_load_async(LarmorDataset *dataset, const char *path, GCancellable *cancellable,
                                GAsyncReadyCallback callback, gpointer user_data);
GBytes *larmor_fieldmap_load_finish(GAsyncResult *result, gboolean *resampled, GError **error);

/* Loads a NIfTI/cfl volume in a worker thread. */
void larmor_volume_load_async(const char *path, GCancellable *cancellable,
                              GAsyncReadyCallback callback, gpointer user_data);
LarmorVolume *larmor_volume_load_finish(GAsyncResult *result, GError **error);

G_END_DECLS

#endif
