/* DICOM series in and out (docs/dicom.md). The files are parsed and encoded by
 * dcmtk (Debian libdcmtk-dev) in lm_dicom_io.cc; the series logic (choosing
 * a series, sorting slices, the geometry) works on parsed tag records in
 * lm_dicom_series.c, plain C, so it can be fuzzed without files. */
#ifndef LM_DICOM_H
#define LM_DICOM_H

#include <stdint.h>

#include "lm_io_ismrmrd.h"
#include "lm_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Writing ---- */

typedef enum lm_dicom_part {
    LM_DICOM_MAGNITUDE = 0,
    LM_DICOM_PHASE,         /* radians, [-pi, pi] */
    LM_DICOM_REAL,
    LM_DICOM_IMAG
} lm_dicom_part;

/* "magnitude", "phase", "real", "imag" (or "imaginary"). */
lm_code lm_dicom_part_parse(const char *s, lm_dicom_part *out, lm_error *err);
const char *lm_dicom_part_name(lm_dicom_part p);

typedef struct lm_dicom_write_opts {
    lm_dicom_part part;
    int enhanced;                  /* one Enhanced MR multi-frame file instead of one file per slice */
    const char *series_description; /* what was done; cut to 64 characters */
    const lm_mrd_provenance *prov; /* patient, study, frame of reference (NULL or empty: none) */
    const char *like_dir;          /* template series: identity taken from it instead of prov */
    const char *like_series;       /* the template's SeriesInstanceUID when like_dir holds several */
    const char *nucleus;           /* "1H", "23NA", ...; NULL or "": unknown */
    double window[2];              /* centre, width; width <= 0: the 1st to 99th percentile */
    int64_t frames;                /* a dynamic series: v->data holds this many volumes of v's grid, one
                                      after another (frame slowest); 0 or 1: one volume */
    double frame_s;                /* one frame's duration in seconds (0: unknown): the frames' time offsets */
    char note[256];                /* out: one line when the patient is anonymous and the study new */
    char series_uid[72];           /* out: the new SeriesInstanceUID */
    int files;                     /* out: files written */
} lm_dicom_write_opts;

void lm_dicom_write_opts_init(lm_dicom_write_opts *o);

/* Writes v as a new DICOM series into dir: created; refused when it exists
 * and is not empty. The files are written into a temporary sibling folder
 * that is renamed to dir when complete. Pixels are int16 with
 * RescaleSlope/Intercept (error after rescale at most 1e-4 of the largest
 * |value|); geometry from v->affine, RAS turned into DICOM's LPS. */
lm_code lm_dicom_write_series(const char *dir, const lm_volume *v, lm_dicom_write_opts *o, lm_error *err);

/* One image of a set (lm_dicom_write_set): its own sub-folder, description
 * and window; the rest of the options is the set's. */
typedef struct lm_dicom_set_item {
    const lm_volume *v;
    const char *name;               /* the sub-folder: letters, digits, - _ . + = (not starting with '.') */
    const char *series_description;
    double window[2];               /* centre, width; width <= 0: the 1st to 99th percentile */
    char series_uid[72];            /* out */
} lm_dicom_set_item;

/* Writes n images as n series of one study into the new folder parent, one
 * sub-folder each: one patient, study and FrameOfReference (from o, as
 * lm_dicom_write_series), SeriesNumbers one after another; o's part, form,
 * nucleus, template and frames apply to every one (o->series_description
 * and o->window do not: each item has its own). Atomic: everything is
 * written into a temporary sibling of parent, renamed when complete. */
lm_code lm_dicom_write_set(const char *parent, lm_dicom_set_item *items, int n, lm_dicom_write_opts *o,
                           lm_error *err);

/* Fails with a one-line message when dir exists and is not an empty folder
 * (what lm_dicom_write_series refuses), so a front end can refuse before
 * long work. */
lm_code lm_dicom_check_out_dir(const char *dir, lm_error *err);

/* ---- Reading ---- */

/* 1 when path is a folder, or a file with the DICOM preamble ("DICM" at byte 128). */
int lm_dicom_is_candidate(const char *path);
int lm_dicom_has_preamble(const char *path);

/* Reads one DICOM series: path is a folder holding one series (files of any
 * name; other non-DICOM files are refused) or one file (a multi-frame
 * image, or one slice). series_uid (NULL: the only one) chooses among
 * several. Rescale applied; the volume holds real values, affine in RAS. */
lm_code lm_dicom_read(const char *path, const char *series_uid, lm_volume **out, lm_error *err);

/* ---- The series logic, on parsed records (lm_dicom_series.c) ---- */

typedef struct lm_dicom_rec {
    const char *file;        /* for messages */
    char series_uid[72];
    int frame;               /* frame of a multi-frame file, or -1 */
    int rows, cols;
    int has_ipp, has_iop, has_spacing;
    double ipp[3];           /* ImagePositionPatient, LPS mm */
    double iop[6];           /* ImageOrientationPatient: row direction, then column direction */
    double spacing[2];       /* PixelSpacing: between rows, between columns (mm) */
    double thickness;        /* SliceThickness, or SpacingBetweenSlices when given; 0 absent */
} lm_dicom_rec;

/* Picks the records of one series: series_uid when given (refused when no
 * record has it), else the only one; several series: a one-line error
 * listing their UIDs. idx gets the indices picked (caller frees). */
lm_code lm_dicom_series_choose(const lm_dicom_rec *r, int n, const char *series_uid, const char *where, int **idx,
                               int *count, lm_error *err);

/* The geometry of the records idx[0..count) (one series): checks one
 * orientation, one matrix and pixel spacing, slices on a line at a uniform
 * spacing; sorts idx by position along the normal (row x column direction)
 * and gives the RAS affine of index (column, row, slice) and the voxel size. */
lm_code lm_dicom_series_geometry(const lm_dicom_rec *r, int *idx, int count, const char *where,
                                 double affine[4][4], double voxel_mm[3], lm_error *err);

#ifdef __cplusplus
}
#endif

#endif
