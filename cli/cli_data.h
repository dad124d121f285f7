/* Loading a reconstruction's inputs (trajectory + k-space, or one ISMRMRD
 * file carrying both and the matrix) and writing images by extension. */
#ifndef LM_CLI_DATA_H
#define LM_CLI_DATA_H

#include "lm_types.h"

typedef struct cli_inputs {
    lm_geom geom;
    int have_geom;     /* from the file (ISMRMRD) */
    int cartesian;     /* ISMRMRD Cartesian acquisition: reconstruct by FFT by default */
    lm_traj *traj;
    lm_kdata *kdata;
    lm_kdata *noise;   /* noise scans of an ISMRMRD file, or NULL */
} cli_inputs;

lm_code cli_load_inputs(const char *traj_path, const char *kspace_path, cli_inputs *in, lm_error *err);
void cli_inputs_clear(cli_inputs *in);
/* .nii/.nii.gz (magnitude unless as_complex) or .cfl */
lm_code cli_write_image(const char *path, const lm_volume *v, int as_complex, lm_error *err);
int cli_has_suffix(const char *s, const char *suffix);

#endif
