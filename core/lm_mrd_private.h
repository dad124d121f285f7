/* What the MRD reader, writer and header code share; not part of the
 * library's interface. */
#ifndef LM_MRD_PRIVATE_H
#define LM_MRD_PRIVATE_H

#include "lm_config.h"

#include "lm_io_ismrmrd.h"

/* The header text for a file holding geometry g (encodedSpace; recon, when
 * not NULL and set, reconSpace), ncoils channels, nacq readouts per slice,
 * readout samples per readout (0: unknown), trajectory name, nslices,
 * repetition and contrast limits, the provenance and parallel imaging of
 * hdr (NULL: none). NULL when out of memory. Caller frees. */
char *lm_mrd_header_make(const lm_geom *g, const lm_geom *recon, int64_t ncoils, int64_t nacq, int64_t readout,
                         const char *trajectory, int nslices, int rep, int con, const lm_mrd_provenance *prov,
                         const lm_mrd_parallel *par);

/* LM_OK when p can be written: text fields UTF-8 without control
 * characters, numbers finite, a patient position when any other
 * measurementInformation field is set. path names the file. */
lm_code lm_mrd_provenance_check(const lm_mrd_provenance *p, const char *path, lm_error *err);

/* Cartesian readouts of n samples (kx = -n/2 .. n/2-1, whole readouts one
 * after another) become readouts of nr samples: the central nr of the n
 * image points along x, by a unitary transform (lm_mrd_oversampling.c).
 * *tp and *kp are replaced; *applied 0 (nothing changed) when the data are
 * not of that form or nr is not below n. */
lm_code lm_mrd_remove_oversampling(lm_traj **tp, lm_kdata **kp, int64_t n, int64_t nr, int *applied,
                                   lm_error *err);
/* Phase-encode lines (ky, kz) of g's matrix that no sample of Cartesian t
 * lies on. */
int64_t lm_mrd_missing_lines(const lm_traj *t, const lm_geom *g);

#if LM_HAVE_ISMRMRD
#include <hdf5.h>

/* HDF5's automatic error printing, saved while an MRD call runs. */
typedef struct lm_h5_quiet {
    H5E_auto2_t func;
    void *data;
} lm_h5_quiet;

/* Takes the MRD lock (HDF5's serial build is not thread-safe, and
 * libismrmrd's error handler is global) and silences HDF5. */
void lm_h5_quiet_begin(lm_h5_quiet *q);
void lm_h5_quiet_end(lm_h5_quiet *q);
/* Fails with "path: what (HDF5: innermost message)". */
lm_code lm_h5_fail(lm_error *err, lm_code code, const char *path, const char *what);
#endif

#endif
