/* PNG montage of central slices (cairo image surfaces; no GTK). */
#ifndef LM_CLI_MONTAGE_H
#define LM_CLI_MONTAGE_H

#include "larmor.h"

/* rows: volumes (magnitude shown), each as axial, coronal, sagittal central
 * slices on a shared grey window [0, vmax] (vmax <= 0: the first volume's max). */
lm_code cli_write_montage(const char *path, const lm_volume *const *vols, const char *const *labels,
                          int count, double vmax, lm_error *err);

#endif
