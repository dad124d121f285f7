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

/* What the reader found in a file's acquisitions (pass 1). */
typedef struct lm_mrd_scan {
    uint64_t total, noise, other_skipped, empty, other_encoding, kept;
    int tdim;               /* -1 until the first kept acquisition */
    int64_t channels;
    int64_t m;              /* samples per channel kept */
    int64_t readout;        /* common kept length (last may be shorter), 0 if it varies */
    int64_t ns_min, ns_max; /* number_of_samples of kept acquisitions */
    int64_t dpre, dpost;    /* of the first kept acquisition */
    int reversed;
    uint16_t lo[4], hi[4];  /* slice, contrast, phase, set among kept */
    uint16_t e2_max;
    int64_t noise_m;        /* samples per channel of the noise scans */
    int64_t noise_channels; /* their channel count (0: none) */
    uint64_t other_sel;     /* imaging acquisitions of other repetitions/contrasts skipped */
    int nslices;            /* distinct idx.slice among kept */
    int64_t *slice_m;       /* 65536 entries: samples per channel of each idx.slice (owned) */
} lm_mrd_scan;

/* The repetition and contrast read, chosen before pass 1 (-1: the file
 * has no imaging acquisitions). */
typedef struct lm_mrd_sel {
    int repetition, contrast;
    int nrep, ncon;         /* distinct values among imaging acquisitions */
    int rep_lo, rep_hi, con_lo, con_hi;
} lm_mrd_sel;

typedef struct lm_mrd_summary {
    lm_mrd_scan scan;          /* slice_m not kept */
    lm_mrd_sel sel;
    lm_mrd_header hdr;
    lm_mrd_units units_used; /* NORMALIZED or CYCLES for stored trajectories */
    const char *units_why;
    double kmax_stored;
    int ndim;
    int has_times, file_has_dwell; /* sample times from sample_time_us */
    double t_lo, t_hi;
    int oversampling_removed; /* Cartesian readouts reduced to reconSpace */
} lm_mrd_summary;

/* The file's acquisitions read as lm_mrd_read_opts would (multi-slice
 * allowed), kept only as their summary: `larmor-cli info` (lm_mrd_info.c).
 * Takes the MRD lock itself. */
lm_code lm_mrd_summarize(const char *path, const lm_mrd_opts *o, lm_mrd_summary *sum, lm_error *err);

#endif

#endif
