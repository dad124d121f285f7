/* ISMRMRD (MRD) HDF5 input/output through libismrmrd. Without libismrmrd at
 * build time every call returns LM_ERR_UNSUPPORTED with a message saying so. */
#ifndef LM_IO_ISMRMRD_H
#define LM_IO_ISMRMRD_H

#include <stddef.h>
#include <stdint.h>

#include "lm_types.h"

/* One slice of a multi-slice 2D acquisition (lm_mrd.slices). Geometry as
 * stored in the first acquisition of the slice: MRD's patient coordinates
 * (DICOM LPS), mm, unit direction vectors (all 0 when the file has none). */
typedef struct lm_mrd_slice {
    lm_traj *traj;          /* cycles/FOV, 2D (kz = 0) */
    lm_kdata *kdata;        /* every channel, acquisition order within the slice */
    int index;              /* the acquisitions' idx.slice */
    double position[3], read_dir[3], phase_dir[3], slice_dir[3];
} lm_mrd_slice;

/* Who and what was scanned, from the MRD header (docs/ismrmrd.md): "" or 0
 * when absent. Read: text longer than its field is cut at a UTF-8
 * character boundary and control characters become '?'; a number that is
 * not one is refused. Written (lm_mrd_write_dataset): the fields set, in the
 * MRD schema's order; text must be UTF-8 without control characters. */
typedef struct lm_mrd_provenance {
    /* subjectInformation */
    char patient_name[128];
    char patient_id[72];
    char patient_birthdate[16];     /* xs:date, YYYY-MM-DD */
    char patient_gender[4];         /* M, F or O */
    /* studyInformation */
    char study_instance_uid[72];
    char study_id[72];
    char accession_number[24];
    char study_date[16];            /* xs:date */
    char study_time[24];            /* xs:time */
    char study_description[128];
    /* measurementInformation (written only with patient_position, which MRD requires) */
    char measurement_id[72];
    char patient_position[8];       /* HFS, HFP, FFS, ... */
    int has_table_position;
    double relative_table_position[3];
    char protocol_name[128];
    char series_description[128];
    char frame_of_reference_uid[72];
    /* acquisitionSystemInformation */
    char system_vendor[72];
    char system_model[72];
    double field_strength_t;        /* systemFieldStrength_T, 0 absent */
    /* experimentalConditions */
    int64_t h1_frequency_hz;        /* H1resonanceFrequency_Hz, 0 absent */
    /* The nucleus imaged, DICOM's term ("1H", "23NA"; "" unknown): named by a
     * userParameterString ImagedNucleus, ResonantNucleus, Nucleus or
     * tNucleus, else an X-nucleus whose gyromagnetic ratio is
     * H1resonanceFrequency_Hz / systemFieldStrength_T (lm_mrd_nucleus). */
    char nucleus[8];
} lm_mrd_provenance;

/* DICOM's term for a nucleus written as "23Na", "Na23", "23NA", "1H", "H"
 * ...; NULL when it is none of DICOM's defined terms. */
const char *lm_nucleus_term(const char *text);
/* The X-nucleus whose |gamma| / 2 pi is hz / tesla within 1 %; NULL for
 * none, and for the proton (H1resonanceFrequency_Hz is the proton's
 * frequency by definition, so a proton ratio says nothing). */
const char *lm_nucleus_from_frequency(double hz, double tesla);
/* 1 when a userParameterString of this name names the nucleus. */
int lm_nucleus_parameter_name(const char *name);
/* Fills pv->nucleus from the frequency and field when the header named none. */
void lm_mrd_nucleus(lm_mrd_provenance *pv);

/* encoding/parallelImaging of the first encoding. */
typedef struct lm_mrd_parallel {
    int64_t accel[2];               /* accelerationFactor along encode steps 1 and 2; 0 absent */
    char calibration_mode[16];      /* embedded, interleaved, separate, external, other; "" absent */
} lm_mrd_parallel;

typedef struct lm_mrd {
    lm_geom geom;       /* encoded matrix and FOV from the XML header; along x
                           reconSpace's when Cartesian readout oversampling was
                           removed (readout_oversampling, docs/ismrmrd.md) */
    lm_traj *traj;      /* cycles/FOV (converted; see docs/ismrmrd.md); NULL when
                           nslices > 1 */
    lm_kdata *kdata;    /* all channels of the imaging acquisitions; NULL when
                           nslices > 1 */
    lm_kdata *noise;    /* the noise-measurement acquisitions (all their samples,
                           every channel), or NULL when the file has none */
    int cartesian;      /* trajectory derived from encoding counters */
    /* Multi-slice 2D (only from lm_mrd_read_opts; lm_mrd_read and
     * lm_mrd_read_units refuse such files): nslices > 1 and slices holds
     * them, sorted by position along the first slice's slice_dir (ties by
     * index), which is the order lm_mrd_slices_affine stacks them in; traj and
     * kdata are then NULL. nslices == 1: traj and kdata as always, slices NULL. */
    int nslices;
    lm_mrd_slice *slices;
    int repetition, contrast;     /* the idx.repetition and idx.contrast read */
    int nrepetitions, ncontrasts; /* how many distinct ones the imaging acquisitions hold */
    /* Added for DICOM output and streaming (all zero when absent; a caller
     * building an lm_mrd by hand may leave them zero). */
    lm_mrd_provenance prov;
    lm_mrd_parallel parallel;
    lm_geom recon_geom;           /* reconSpace (n all 0 when absent or equal to geom) */
    int readout_oversampling;     /* Cartesian readouts decimated by this factor on reading
                                     (reconSpace's matrix and FOV; 1 or 0: none) */
    int64_t missing_lines;        /* Cartesian: phase-encode lines of the matrix never sampled */
} lm_mrd;

lm_code lm_mrd_read(const char *path, lm_mrd *out, lm_error *err);
void lm_mrd_clear(lm_mrd *m);
/* Writes a non-Cartesian dataset (one acquisition per readout of traj). */
lm_code lm_mrd_write(const char *path, const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                     lm_error *err);
/* Multi-line summary for `larmor-cli info` (caller frees): also the slices,
 * repetitions and contrasts present and which repetition/contrast is read. */
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
/* lm_mrd_read with the units given instead of the process's default
 * (lm_mrd_units_default: auto unless the front end set LARMOR_MRD_TRAJ_UNITS). */
lm_code lm_mrd_read_units(const char *path, lm_mrd_units units, lm_mrd *out, lm_error *err);
/* lm_mrd_write naming the header's <trajectory> (cartesian, epi, radial,
 * goldenangle, spiral, other; NULL: other). */
lm_code lm_mrd_write_named(const char *path, const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                           const char *trajectory, lm_error *err);

/* Writes an lm_mrd as lm_mrd_read_opts returns it: m->traj and m->kdata
 * (nslices <= 1), or every slice of m->slices in their order with its
 * idx.slice, position and directions (nslices > 1; the matrix must be 2D);
 * m->noise, when not NULL, as noise-measurement acquisitions (no
 * trajectory, 4096 samples each) before the imaging ones; every
 * acquisition with all channels, idx.repetition m->repetition and
 * idx.contrast m->contrast (negative: 0); the header also carries
 * m->prov, m->recon_geom (when set) and m->parallel (when an acceleration
 * is set), refused before writing when its text is not UTF-8 without
 * control characters. Atomic. Reading the file back
 * with those options gives m's data bit for bit. */
lm_code lm_mrd_write_dataset(const char *path, const lm_mrd *m, const char *trajectory, lm_error *err);

/* What Larmor takes from the XML header: the encoding fields from the
 * first <encoding> only, provenance from the sections above it. */
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
    lm_mrd_provenance prov;
    lm_mrd_parallel parallel;
} lm_mrd_header;

/* Parses the header text (len bytes, need not be NUL-terminated); what
 * names the file in messages. Exposed for tests and fuzzing. */
lm_code lm_mrd_header_parse(const char *xml, size_t len, const char *what, lm_mrd_header *out,
                            lm_error *err);

/* ---- Multi-slice, repetitions, contrasts (docs/ismrmrd.md) ---- */

/* What lm_mrd_read_opts reads. Acquisitions of another repetition or
 * contrast are skipped (info counts them). */
typedef struct lm_mrd_opts {
    lm_mrd_units units; /* as lm_mrd_read_units (AUTO: tag, then max|k|; the
                           process default is not applied: see lm_mrd_units_default) */
    int repetition;     /* idx.repetition to read; -1: the lowest present */
    int contrast;       /* idx.contrast to read; -1: the lowest present */
} lm_mrd_opts;

/* units AUTO, repetition and contrast -1. */
void lm_mrd_opts_init(lm_mrd_opts *o);
/* The units lm_mrd_read (and the acquisition loader) assume: AUTO unless a
 * front end set others (lm_tuning_set applies LARMOR_MRD_TRAJ_UNITS, read by
 * lm_tuning_from_env; the library never reads the environment). */
void lm_mrd_units_set_default(lm_mrd_units u);
lm_mrd_units lm_mrd_units_default(void);
/* Reads one repetition and contrast. Unlike lm_mrd_read, files whose
 * acquisitions span several idx.slice values with an encoded z of 1 are
 * read as multi-slice 2D data: out->nslices > 1, out->slices set and
 * out->traj/out->kdata NULL (callers must handle both). Several slices in a
 * 3D encoding (z > 1), several cardiac phases or sets are refused. A
 * repetition or contrast asked for but absent: LM_ERR_INVALID. opts NULL:
 * lm_mrd_opts_init's defaults. */
lm_code lm_mrd_read_opts(const char *path, const lm_mrd_opts *opts, lm_mrd *out, lm_error *err);

/* Sorts m->slices by position along the first slice's slice direction
 * (ties by index): the order lm_mrd_slices_affine stacks them in (and the
 * reader returns them in). Also for slices that carry no data (an MRD
 * client stacking the images it received). */
void lm_mrd_sort_slices(lm_mrd *m);

/* The index -> scanner mm affine (NIfTI RAS: MRD's LPS x and y negated) of
 * the volume stacking m->slices in their order (nx x ny x nslices, the
 * matrix m->geom.n[0..1]): columns 0 and 1 along read_dir and phase_dir
 * with voxels fov/n, column 2 along slice_dir with the spacing measured
 * between consecutive slice positions; index (nx/2, ny/2, k) is slice k's
 * position. voxel_mm gets the three voxel sizes. Refused (LM_ERR_FORMAT,
 * one line, no file name: the caller adds it): fewer than 2 slices, missing
 * (zero) or differing directions, slices out of order, duplicated
 * positions, spacing uneven by more than 1 %, centres off the slice axis. */
lm_code lm_mrd_slices_affine(const lm_mrd *m, double affine[4][4], double voxel_mm[3], lm_error *err);

#endif
