/* ISMRMRD (MRD) HDF5 input/output through libismrmrd. Without libismrmrd at
 * build time every call returns LM_ERR_UNSUPPORTED with a message saying so. */
#ifndef LM_IO_ISMRMRD_H
#define LM_IO_ISMRMRD_H

#include <stddef.h>
#include <stdint.h>

#include "lm_types.h"

typedef struct lm_mrd {
    lm_geom geom;       /* encoded matrix and FOV from the XML header */
    lm_traj *traj;      /* cycles/FOV (converted; see docs/ismrmrd.md) */
    lm_kdata *kdata;    /* all channels of the imaging acquisitions */
    lm_kdata *noise;    /* the noise-measurement acquisitions (all their samples,
                           every channel), or NULL when the file has none */
    int cartesian;      /* trajectory derived from encoding counters */
} lm_mrd;

lm_code lm_mrd_read(const char *path, lm_mrd *out, lm_error *err);
void lm_mrd_clear(lm_mrd *m);
/* Writes a non-Cartesian dataset (one acquisition per readout of traj). */
lm_code lm_mrd_write(const char *path, const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                     lm_error *err);
/* Multi-line summary for `larmor-cli info` (caller frees). */
lm_code lm_mrd_info(const char *path, char **text, lm_error *err);

/* ---- Additions (docs/ismrmrd.md) ---- */

/* How the trajectory stored in a file is scaled. */
typedef enum lm_mrd_units {
    LM_MRD_UNITS_AUTO = 0,   /* Larmor's own tag if present, else max|k| <= 0.5 means normalised */
    LM_MRD_UNITS_NORMALIZED, /* k in [-0.5, 0.5] of the encoded matrix: multiplied by n per axis */
    LM_MRD_UNITS_CYCLES      /* already cycles/FOV: used as stored */
} lm_mrd_units;

/* "auto", "normalized" (or "normalised"), "cycles". */
lm_code lm_mrd_units_parse(const char *s, lm_mrd_units *out, lm_error *err);
const char *lm_mrd_units_name(lm_mrd_units u);
/* lm_mrd_read with the units given instead of taken from the environment
 * (lm_mrd_read reads LARMOR_MRD_TRAJ_UNITS, default auto). */
lm_code lm_mrd_read_units(const char *path, lm_mrd_units units, lm_mrd *out, lm_error *err);
/* lm_mrd_write naming the header's <trajectory> (cartesian, epi, radial,
 * goldenangle, spiral, other; NULL: other). */
lm_code lm_mrd_write_named(const char *path, const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                           const char *trajectory, lm_error *err);

/* What Larmor takes from the XML header (first <encoding> only). */
typedef struct lm_mrd_header {
    int64_t matrix[3];          /* encodedSpace/matrixSize */
    double fov_mm[3];           /* encodedSpace/fieldOfView_mm */
    int64_t recon_matrix[3];    /* reconSpace (0 if absent) */
    double recon_fov_mm[3];
    int has_center[2];          /* encodingLimits kspace_encoding_step_1/2 center given */
    int64_t center[2];
    char trajectory[32];        /* encoding/trajectory, "" if absent */
    int larmor_units;           /* -1 no Larmor tag, else an lm_mrd_units written by Larmor */
    int64_t larmor_readout;     /* -1 no Larmor tag, else samples per readout (0 unknown) */
    int encodings;              /* number of <encoding> elements */
    int64_t receiver_channels;  /* acquisitionSystemInformation, 0 if absent */
} lm_mrd_header;

/* Parses the header text (len bytes, need not be NUL-terminated); what
 * names the file in messages. Exposed for tests and fuzzing. */
lm_code lm_mrd_header_parse(const char *xml, size_t len, const char *what, lm_mrd_header *out,
                            lm_error *err);

#endif
