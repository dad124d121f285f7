/* Inputs for off-resonance correction (docs/fieldmap.md): field maps in Hz
 * on the reconstruction grid and sample times in seconds (lm_traj.t). */
#ifndef LM_IO_FIELDMAP_H
#define LM_IO_FIELDMAP_H

#include "lm_types.h"

/* The reconstruction grid's index -> mm affine when nothing else places it:
 * axis-aligned, voxels fov/n, voxel n/2 at 0 mm (as lm_recon_run writes
 * its images). */
void lm_geom_affine(const lm_geom *g, double affine[4][4]);

/* A field map in Hz on g's matrix (the real part of the file), *out gets
 * lm_geom_voxels(g) floats (caller frees).
 *   .nii/.nii.gz: taken as is when its matrix is g's; otherwise resampled
 *   (trilinear, the nearest value beyond its edges) from its own affine
 *   onto the grid dst_affine places (NULL: lm_geom_affine(g));
 *   .cfl: [nx, ny, nz] (trailing 1s optional), must be g's matrix.
 * NaN/Inf are refused, naming the element. *resampled (may be NULL) is set
 * to 1 when the map was resampled. */
lm_code lm_load_fieldmap(const char *path, const lm_geom *g, const double dst_affine[4][4], float **out,
                         int *resampled, lm_error *err);
/* The same, where path may be a DICOM folder of several series:
 * series_uid (NULL: the folder's only one) chooses, as lm_load_volume_series. */
lm_code lm_load_fieldmap_series(const char *path, const char *series_uid, const lm_geom *g,
                                const double dst_affine[4][4], float **out, int *resampled, lm_error *err);

/* Field map values: finite. path names the file in the message. */
lm_code lm_check_fieldmap(const float *f, int64_t n, const char *path, lm_error *err);

/* Sample times (.cfl [1, samples, spokes] as BART shapes them, real part,
 * seconds) into t->t: t->m values, checked by lm_check_times with the
 * readout t->readout (when 0: the file's samples dimension). */
lm_code lm_load_times(const char *path, lm_traj *t, lm_error *err);

/* Times must be finite, within 1 s of the echo reference (a larger value
 * means another unit, usually ms), and non-decreasing within each readout
 * of `readout` samples (0: the whole array is one readout). */
lm_code lm_check_times(const float *times, int64_t m, int64_t readout, const char *path, lm_error *err);

/* One-line summaries for larmor-cli info (caller frees): a field map's
 * matrix and range in Hz on its own grid; sample times' count, readouts
 * and range in s (checked as lm_check_times with the file's readouts). */
lm_code lm_fieldmap_info(const char *path, char **text, lm_error *err);
lm_code lm_times_info(const char *path, char **text, lm_error *err);

/* Smallest and largest value of v (n > 0). */
void lm_float_range(const float *v, int64_t n, double *lo, double *hi);

#endif
