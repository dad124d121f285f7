/* The command line's side of loading (an lm_acq from --traj/--kspace and
 * the companion flags, or from one data directory or member file), and
 * writing images by extension. */
#ifndef LM_CLI_DATA_H
#define LM_CLI_DATA_H

#include "larmor.h"

typedef struct cli_acq_args {
    const char *cmd;                         /* "recon", "convert": names the stderr line */
    const char *traj, *kspace;               /* --traj, --kspace */
    const char *sens, *fieldmap, *times;     /* flags that override what discovery finds */
    const char *series;                      /* --series UID: chooses in a DICOM --fieldmap folder */
    int repetition, contrast;                /* ISMRMRD, -1: the first present */
    int quiet;                               /* no line saying what discovery found */
} cli_acq_args;

/* --traj and --kspace both given: those files, with the companions the
 * flags name. One of them alone (a data directory, an .h5, an IMPATIENT
 * directory, or any file of a data set): lm_acq_discover finds the data and
 * its sens, fieldmap and times, which the flags override. *found (may be
 * NULL) gets the paths, truth and ref included (caller clears). */
lm_code cli_load_acq(const cli_acq_args *args, lm_acq **out, lm_acq_paths *found, lm_error *err);
/* One line on stderr naming the companions discovery found for a (not
 * with quiet, nor when the data came as explicit files or alone): printed
 * once every check passed, so an error stays the only line. */
void cli_report_found(const cli_acq_args *args, const lm_acq *a);
/* --sens for a convert without a matrix: lm_load_sens, then lm_check_sens
 * against g's matrix and ncoils. */
lm_code cli_load_sens(const char *path, const lm_geom *g, int64_t ncoils, lm_sens **out, lm_error *err);
/* --noise: lm_load_noise (a .cfl, or an ISMRMRD file's noise scans), then
 * lm_check_noise against ncoils. */
lm_code cli_load_noise(const char *path, int64_t ncoils, lm_kdata **out, lm_error *err);
/* .nii/.nii.gz (magnitude unless as_complex) or .cfl */
lm_code cli_write_image(const char *path, const lm_volume *v, int as_complex, lm_error *err);
int cli_has_suffix(const char *s, const char *suffix);

#endif
