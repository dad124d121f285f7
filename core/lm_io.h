/* File I/O: BART cfl/hdr, NIfTI-1 (libniftiio), Parboil mri-q/mri-fhd, and
 * loaders that pick the format by extension (docs/conventions.md section 6). Every
 * write is atomic (temporary file in the same folder, then rename). Every
 * error message names the file and the problem in one line. */
#ifndef LM_IO_H
#define LM_IO_H

#include <stdint.h>

#include "lm_types.h"

#define LM_CFL_MAX_DIMS 16

/* Whether path names a cfl pair by its base (x for x.cfl + x.hdr): its last
 * component has no extension. A dot in a folder's name (.cache/run/x) or a
 * leading dot is not an extension. */
int lm_cfl_is_base(const char *path);

/* path may name x.cfl, x.hdr or the base x. dims[] gets ndim sizes
 * (trailing 1s trimmed, at least 1). Checks size against the header. */
lm_code lm_cfl_read(const char *path, int *ndim, int64_t dims[LM_CFL_MAX_DIMS],
                    lm_cfloat **data, lm_error *err);
/* The header's sizes only (all LM_CFL_MAX_DIMS set, 1 past ndim). */
lm_code lm_cfl_read_dims(const char *path, int *ndim, int64_t dims[LM_CFL_MAX_DIMS], lm_error *err);
lm_code lm_cfl_write(const char *path, int ndim, const int64_t *dims,
                     const lm_cfloat *data, lm_error *err);

/* Trajectory as BART writes it: 3 x readout x spokes (real part used). */
lm_code lm_cfl_read_traj(const char *path, lm_traj **out, lm_error *err);
lm_code lm_cfl_write_traj(const char *path, const lm_traj *t, lm_error *err);
/* k-space as 1 x readout x spokes x ... x coils (BART dim 3 = coils);
 * any shape whose product is m x coils is accepted on read. */
lm_code lm_cfl_read_kdata(const char *path, lm_kdata **out, lm_error *err);
lm_code lm_cfl_write_kdata(const char *path, const lm_kdata *k, int64_t readout, lm_error *err);
/* Dynamic data with frames equal frames of m / frames samples in BART's
 * time dimension 10 (lm_frames.h): traj [3, readout, spokes, 1, ...,
 * frames], kspace [1, readout, spokes, coils, 1, ..., frames]; images
 * [x, y, z, 1, ..., frames]. */
lm_code lm_cfl_write_traj_frames(const char *path, const lm_traj *t, int64_t frames, lm_error *err);
lm_code lm_cfl_write_kdata_frames(const char *path, const lm_kdata *k, int64_t readout, int64_t frames,
                                  lm_error *err);
lm_code lm_cfl_write_image_frames(const char *path, const int64_t n[3], int64_t frames, const lm_cfloat *data,
                                  lm_error *err);
/* Images as x y z. A cfl stores no geometry: the volume read has
 * no_geometry set (voxel 1 mm, centred, as placeholders). */
lm_code lm_cfl_read_volume(const char *path, lm_volume **out, lm_error *err);
lm_code lm_cfl_write_volume(const char *path, const lm_volume *v, lm_error *err);

/* NIfTI-1 .nii / .nii.gz. Complex64 when as_complex > 0, float32 magnitude
 * when 0, float32 real part (signed: field maps in Hz) when LM_NIFTI_REAL.
 * dim/pixdim in mm, qform and sform from v->affine, xyzt_units mm. */
#define LM_NIFTI_REAL (-1)
lm_code lm_nifti_write(const char *path, const lm_volume *v, int as_complex, lm_error *err);
/* Any real or complex datatype; scaled by scl_slope/inter; 3D (4th dim 1). */
lm_code lm_nifti_read(const char *path, lm_volume **out, lm_error *err);
/* 4D: frames volumes of v's grid, one after another in data (x fastest,
 * frame slowest), with v's voxel size and affine. */
lm_code lm_nifti_write_frames(const char *path, const lm_volume *v, int64_t frames, const lm_cfloat *data,
                              int as_complex, lm_error *err);
/* The same as a time series: pixdim[4] = frame_s, time units seconds
 * (frame_s 0: unknown, as lm_nifti_write_frames). */
lm_code lm_nifti_write_series(const char *path, const lm_volume *v, int64_t frames, const lm_cfloat *data,
                              int as_complex, double frame_s, lm_error *err);
/* A 4D file's frame duration in seconds (pixdim[4] in its time units); 0
 * for a 3D file or none stored. */
lm_code lm_nifti_frame_seconds(const char *path, double *frame_s, lm_error *err);
/* Reads a 3D or 4D image: (*out)->data holds *frames volumes. */
lm_code lm_nifti_read_frames(const char *path, lm_volume **out, int64_t *frames, lm_error *err);

/* Coil maps [nx, ny, nz, coils]: .cfl (as bart ecalib writes them; a 5th
 * "maps" dimension keeps its first set) or a complex 4D NIfTI. NaN/Inf and
 * all-zero maps are refused. */
lm_code lm_load_sens(const char *path, lm_sens **out, lm_error *err);
/* Atomic; .cfl or .nii/.nii.gz (complex64, 4D, centred affine from fov_mm,
 * which may be NULL). */
lm_code lm_save_sens(const char *path, const lm_sens *s, const double fov_mm[3], lm_error *err);
/* Maps against the reconstruction: matrix and channel count. */
lm_code lm_check_sens(const lm_sens *s, const int64_t n[3], int64_t ncoils, const char *path, lm_error *err);

/* Noise samples for prewhitening, m samples x coils: a .cfl shaped like
 * k-space ([1, samples, 1, coils]: BART's coil dimension 3; dimensions 0-2
 * and 4+ all hold samples), or the noise scans of an ISMRMRD .h5 (refused
 * when it has none). NaN/Inf and a channel that is zero everywhere are
 * refused. */
lm_code lm_load_noise(const char *path, lm_kdata **out, lm_error *err);
/* Noise against the data: the same channel count, and at least 2 samples
 * per channel for every channel (what a full-rank covariance needs). */
lm_code lm_check_noise(const lm_kdata *noise, int64_t ncoils, const char *path, lm_error *err);

/* Parboil mri-q / mri-fhd. */
typedef struct lm_parboil {
    int32_t num_k, num_x;
    float *kx, *ky, *kz;     /* num_k */
    float *x, *y, *z;        /* num_x */
    float *phi_r, *phi_i;    /* num_k */
    float *d_r, *d_i;        /* num_k, mri-fhd only (NULL for mri-q) */
} lm_parboil;
lm_code lm_parboil_read(const char *path, lm_parboil **out, lm_error *err);
void lm_parboil_free(lm_parboil *p);
/* Output file: uint32 numX, float real[numX], float imag[numX]. */
lm_code lm_parboil_write_output(const char *path, int64_t n, const float *re, const float *im,
                                lm_error *err);
lm_code lm_parboil_read_output(const char *path, int64_t *n, float **re, float **im, lm_error *err);

/* Loaders by extension: .cfl/.hdr, .nii/.nii.gz (volumes), .h5 (ISMRMRD,
 * when built with it), .bin (Parboil: its k points). A volume may also be
 * a DICOM series: a folder holding one, or one (multi-frame) DICOM file
 * (lm_dicom.h; docs/dicom.md). */
lm_code lm_load_traj(const char *path, lm_traj **out, lm_error *err);
lm_code lm_load_kdata(const char *path, lm_kdata **out, lm_error *err);
lm_code lm_load_volume(const char *path, lm_volume **out, lm_error *err);
/* lm_load_volume choosing series_uid (NULL: the only one) in a DICOM folder. */
lm_code lm_load_volume_series(const char *path, const char *series_uid, lm_volume **out, lm_error *err);
/* Human-readable, multi-line summary of what a file holds (caller frees). */
lm_code lm_file_info(const char *path, char **text, lm_error *err);

/* Checks data for NaN/Inf; names the first bad element. */
lm_code lm_check_finite(const char *what, const float *v, size_t count, lm_error *err);
/* The same for count complex values, naming element and real/imaginary part. */
lm_code lm_check_finite_complex(const char *what, const lm_cfloat *v, size_t count, lm_error *err);
/* Trajectory and k-space must have the same number of samples (per channel). */
lm_code lm_check_traj_kdata(const lm_traj *t, const lm_kdata *k, const char *traj_path,
                            const char *k_path, lm_error *err);

#endif
