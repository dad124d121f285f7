/* Loading a reconstruction's inputs (trajectory + k-space, or one ISMRMRD
 * file carrying both and the matrix) and writing images by extension. */
#ifndef LM_CLI_DATA_H
#define LM_CLI_DATA_H

#include "lm_io_ismrmrd.h"
#include "lm_types.h"

typedef struct cli_inputs {
    lm_geom geom;
    int have_geom;     /* from the file (ISMRMRD) */
    int cartesian;     /* ISMRMRD Cartesian acquisition: reconstruct by FFT by default */
    int64_t accel;     /* ISMRMRD Cartesian: the header's acceleration (product of both steps; 0 none) */
    int64_t missing_lines; /* ISMRMRD Cartesian: phase-encode lines never sampled */
    lm_traj *traj;
    lm_kdata *kdata;
    lm_kdata *noise;   /* noise scans of an ISMRMRD file, or NULL */
    /* ISMRMRD multi-slice 2D: nslices > 1, traj and kdata NULL, mrd holds the
     * slices (in stacking order) and geom; else nslices 1, mrd empty. */
    int nslices;
    lm_mrd mrd;
    int is_mrd, repetition, contrast; /* what was read from an ISMRMRD file */
    int fov_known;     /* geom.fov_mm comes from the file (ISMRMRD); else --fov sets it */
    int is_impatient;  /* an IMPATIENT data directory (lm_io_impatient.h) */
    lm_sens *sens;     /* coil maps the input carries (IMPATIENT), on geom's matrix, or NULL */
    float *fieldmap;   /* field map in Hz the input carries (IMPATIENT), on geom's matrix, or NULL */
} cli_inputs;

/* cli_load_inputs_mrd reading the first repetition and contrast. traj_path
 * may name an IMPATIENT data directory: trajectory with sample times,
 * k-space, matrix, coil maps and field map from its files (kspace_path must
 * then be NULL or the same directory). */
lm_code cli_load_inputs(const char *traj_path, const char *kspace_path, cli_inputs *in, lm_error *err);
/* As cli_load_inputs; for an ISMRMRD file, the repetition and contrast to
 * read (-1: the first present), and multi-slice files are accepted. */
lm_code cli_load_inputs_mrd(const char *traj_path, const char *kspace_path, int repetition, int contrast,
                            cli_inputs *in, lm_error *err);
void cli_inputs_clear(cli_inputs *in);
/* Moves the coil maps and field map in carries onto g's matrix when it
 * differs from in->geom's (trilinear through both grids' centred affines,
 * the nearest value beyond the edges); in->geom.n becomes g's. */
lm_code cli_inputs_regrid(cli_inputs *in, const lm_geom *g, lm_error *err);
/* --sens: lm_load_sens, then lm_check_sens against g's matrix (for a
 * multi-slice 2D file: one slice, nx x ny x 1) and ncoils. */
lm_code cli_load_sens(const char *path, const lm_geom *g, int64_t ncoils, lm_sens **out, lm_error *err);
/* --noise: lm_load_noise (a .cfl, or an ISMRMRD file's noise scans), then
 * lm_check_noise against ncoils. */
lm_code cli_load_noise(const char *path, int64_t ncoils, lm_kdata **out, lm_error *err);
/* The channel count of what in holds (first slice of a multi-slice file),
 * 0 when nothing is loaded. */
int64_t cli_inputs_channels(const cli_inputs *in);
/* .nii/.nii.gz (magnitude unless as_complex) or .cfl */
lm_code cli_write_image(const char *path, const lm_volume *v, int as_complex, lm_error *err);
int cli_has_suffix(const char *s, const char *suffix);

#endif
