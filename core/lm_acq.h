/* An acquisition: everything one data set brings to a reconstruction (the
 * trajectory with its sample times, the k-space of all coils, coil maps,
 * field map, noise scans, geometry and who was scanned), read from BART
 * cfl files, an IMPATIENT directory, an ISMRMRD .h5 or a Parboil .bin, and
 * checked and moved onto the reconstruction matrix in one place.
 *
 *   lm_acq_paths p;  lm_acq_discover("DIR or any member file", &p, &err);
 *   lm_acq *a;       lm_acq_load(&p, NULL, &a, &err);
 *                    lm_acq_regrid(a, &recon_geom, &err);
 *                    ... a->traj, a->kdata, a->sens, a->fieldmap ...
 *                    lm_acq_free(a); lm_acq_paths_clear(&p);
 *
 * The library never exits: every error is one line naming the file. */
#ifndef LM_ACQ_H
#define LM_ACQ_H

#include "lm_frames.h"
#include "lm_io_ismrmrd.h"
#include "lm_types.h"

/* The files of one data set (malloc'd; NULL: absent). traj and kspace name
 * the same file for an .h5, a Parboil .bin or an IMPATIENT directory. */
typedef struct lm_acq_paths {
    char *traj, *kspace;  /* the data */
    char *sens;           /* coil maps [nx, ny, nz, coils] (.cfl or complex 4D NIfTI) */
    char *fieldmap;       /* Hz (.nii/.nii.gz resampled through its affine, or .cfl on the matrix) */
    char *fieldmap_series; /* SeriesInstanceUID when fieldmap is a DICOM folder of several series */
    char *times;          /* sample times, seconds (.cfl [1, samples, spokes]) */
    char *truth, *ref;    /* the true image and an anatomical reference (volumes) */
} lm_acq_paths;

void lm_acq_paths_clear(lm_acq_paths *p);
/* Deep copy (dst is overwritten, not cleared first). */
lm_code lm_acq_paths_copy(lm_acq_paths *dst, const lm_acq_paths *src, lm_error *err);
/* Replaces *slot by a copy of path (NULL clears it). */
lm_code lm_acq_paths_set(char **slot, const char *path, lm_error *err);

/* Finds a data set from a directory or from any one of its files, by the
 * names larmor-cli phantom and convert write: traj.cfl + kspace.cfl (or
 * data.h5, the directory's only .h5, an IMPATIENT directory, a .bin), and
 * beside them sens.cfl|.nii.gz, fieldmap.nii.gz|.nii|.cfl, times.cfl,
 * truth.nii.gz|.nii and ref.nii.gz|.nii. An .h5 or .bin given names the
 * data itself. Only files that exist are set. A path that does not exist
 * or a directory without data: LM_ERR_IO / LM_ERR_INVALID naming it. */
lm_code lm_acq_discover(const char *path, lm_acq_paths *out, lm_error *err);
/* Only the companions (sens, fieldmap, times, truth, ref) of the directory
 * path names or holds path; what out has already is kept. */
void lm_acq_discover_companions(const char *path, lm_acq_paths *out);

typedef struct lm_acq_opts {
    int repetition, contrast; /* ISMRMRD: which to read (-1: the first present) */
    int lenient;              /* a companion (times, maps, field map) that does not fit is
                                 dropped with its error in lm_acq.note, instead of failing */
} lm_acq_opts;

void lm_acq_opts_init(lm_acq_opts *o);

typedef struct lm_acq {
    lm_geom geom;       /* the file's matrix and FOV (have_geom), else zeros until lm_acq_regrid */
    int have_geom;      /* the input carries a matrix (ISMRMRD, IMPATIENT) */
    int fov_known;      /* geom.fov_mm comes from the file (ISMRMRD) */
    int cartesian;      /* ISMRMRD Cartesian acquisition (reconstruct by FFT by default) */
    int64_t accel;      /* Cartesian: the header's acceleration (both steps' product; 0 none) */
    int64_t missing_lines; /* Cartesian: phase-encode lines never sampled */
    lm_traj *traj;      /* cycles/FOV; t (s) from the file or paths.times, else NULL */
    lm_kdata *kdata;    /* every coil */
    lm_frames *frames;  /* dynamic data: which samples make each frame (a cfl's dimension 10,
                           or lm_acq_bin); NULL for one static volume */
    lm_kdata *noise;    /* noise scans of an ISMRMRD file, or NULL */
    /* ISMRMRD multi-slice 2D: nslices > 1, traj and kdata NULL, mrd holds the
     * slices in stacking order; else nslices 1 and mrd empty. */
    int nslices;
    lm_mrd mrd;
    int is_mrd, repetition, contrast, is_impatient;
    /* Coil maps and field map: those the input carries (IMPATIENT) on geom's
     * matrix, or read from paths.sens / paths.fieldmap. lm_acq_regrid puts
     * them on the reconstruction matrix. */
    lm_sens *sens;
    float *fieldmap;    /* Hz, lm_geom_voxels(&geom) values after lm_acq_regrid */
    int fieldmap_resampled; /* lm_acq_regrid moved it from another matrix */
    lm_acq_paths paths; /* the files read (traj and kspace swapped when given the other way round;
                           a companion dropped by a lenient load is cleared here) */
    int swapped;        /* the file given as k-space was the trajectory (paths say which is which) */
    int lenient;        /* as lm_acq_opts.lenient */
    char note[512];     /* lenient: why companions were dropped, one line each joined by "; " */
    /* Provenance from an ISMRMRD header (zero when absent or not read). */
    lm_mrd_provenance prov;
} lm_acq;

/* Reads the data p names: traj and kspace (either may name an .h5, a .bin
 * or an IMPATIENT directory that holds both; two .cfl given the wrong way
 * round are swapped), then p's times into the trajectory and p's coil maps.
 * The field map is read, and the maps checked (matrix, then channels), by
 * lm_acq_regrid, which knows the grid. Multi-slice ISMRMRD data take
 * no companions (times, maps, field map stay unread). o NULL:
 * lm_acq_opts_init's. */
lm_code lm_acq_load(const lm_acq_paths *p, const lm_acq_opts *o, lm_acq **out, lm_error *err);
void lm_acq_free(lm_acq *a);
/* An acquisition from MRD data already read (lm_mrd_read_opts, or a
 * stream's acquisitions through lm_mrd_from_messages): m's members move
 * into *out and m is left empty, as lm_acq_load does with a file's. */
lm_code lm_acq_from_mrd(lm_mrd *m, lm_acq **out, lm_error *err);

/* Puts the companions on g's matrix and takes g as the acquisition's geom:
 * maps and field map the input carries are resampled (trilinear through
 * both grids' centred affines, the nearest value beyond the edges); a field
 * map file is read onto g (lm_load_fieldmap); coil maps from a file must be
 * on g's matrix. A field map without sample times is refused. */
lm_code lm_acq_regrid(lm_acq *a, const lm_geom *g, lm_error *err);

/* Bins a continuous acquisition into frames (replacing any it has):
 * spokes_per_frame > 0 spokes per frame, else `frames` frames of equal
 * spoke count (lm_frames.h). Data that already have frames (a cfl's
 * dimension 10) are refused: binning them again would mix frames. */
lm_code lm_acq_bin(lm_acq *a, int64_t spokes_per_frame, int64_t frames, lm_error *err);

/* Receive channels (first slice of a multi-slice file). */
int64_t lm_acq_channels(const lm_acq *a);

/* One line saying which files p holds, basenames after dir ("traj.cfl,
 * kspace.cfl, sens.cfl, times.cfl"); caller frees. */
char *lm_acq_paths_describe(const lm_acq_paths *p);

#endif
