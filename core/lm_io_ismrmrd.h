/* ISMRMRD (MRD) HDF5 input/output through libismrmrd. Without libismrmrd at
 * build time every call returns LM_ERR_UNSUPPORTED with a message saying so. */
#ifndef LM_IO_ISMRMRD_H
#define LM_IO_ISMRMRD_H

#include "lm_types.h"

typedef struct lm_mrd {
    lm_geom geom;       /* encoded matrix and FOV from the XML header */
    lm_traj *traj;      /* cycles/FOV (converted; see docs/ismrmrd.md) */
    lm_kdata *kdata;    /* all channels, noise-adjustment scans skipped */
    int cartesian;      /* trajectory derived from encoding counters */
} lm_mrd;

lm_code lm_mrd_read(const char *path, lm_mrd *out, lm_error *err);
void lm_mrd_clear(lm_mrd *m);
/* Writes a non-Cartesian dataset (one acquisition per readout of traj). */
lm_code lm_mrd_write(const char *path, const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                     lm_error *err);
/* Multi-line summary for `larmor-cli info` (caller frees). */
lm_code lm_mrd_info(const char *path, char **text, lm_error *err);

#endif
