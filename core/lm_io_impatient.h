/* IMPATIENT MRI data directories (github.com/JiadingGai/Impatient-MRI,
 * README section 4.4): one file per vector, kx.dat ky.dat kz.dat,
 * kdata_r/i.dat, sensi_r/i.dat, fm.dat, t.dat, ix/iy/iz.dat, mask.dat, each
 * either in the text-header form (version 1.0: "key = value" lines,
 * "Binary_Size = n" and "Binary:" before each section of float32) or the
 * older binary-header form (float32 version 0.2, int32 size, coils, slices,
 * total, then float32 data). Converted to Larmor's conventions on reading
 * (docs/fieldmap.md, "IMPATIENT"). */
#ifndef LM_IO_IMPATIENT_H
#define LM_IO_IMPATIENT_H

#include "lm_types.h"

typedef struct lm_impatient {
    lm_geom geom;      /* matrix from ix/iy/iz (checked against the header);
                          fov_mm 0: IMPATIENT stores no field of view; basis
                          Dirac (IMPATIENT's model has no voxel function) */
    lm_traj *traj;     /* cycles/FOV (IMPATIENT's unitless k = k * FOV, the same
                          numbers); t (s) from t.dat when present, readout from
                          where t restarts (0 when the readouts differ in length) */
    int64_t readouts;  /* readouts found where t restarts (0 without t.dat) */
    int64_t readout_min, readout_max; /* their shortest and longest, in samples */
    lm_kdata *kdata;   /* every coil, scaled by 1/N (IMPATIENT's F has no 1/N)
                          and phase-shifted when its voxel grid is offset from
                          Larmor's (shift_vox) */
    lm_sens *sens;     /* sensi_r/i on the matrix, or NULL (one coil, or absent) */
    float *fieldmap;   /* Hz on the matrix (fm.dat is rad/s: divided by 2 pi), or
                          NULL when fm.dat is absent or zero everywhere */
    int fieldmap_zero; /* fm.dat present but zero everywhere */
    int text_form;     /* 1: text headers (version 1.0), 0: binary headers (0.2) */
    double version;
    double shift_vox[3]; /* IMPATIENT's voxel positions minus Larmor's, in voxels */
    int64_t mask_voxels; /* nonzero entries of mask.dat (-1: absent); not applied */
} lm_impatient;

/* 1 when path is a directory holding kx.dat. */
int lm_is_impatient_dir(const char *path);
/* Reads a directory. Required: kx, ky, kz, kdata_r, kdata_i, ix, iy, iz;
 * optional: sensi_r + sensi_i, fm, t, mask. Missing, short, long or
 * inconsistent files and NaN/Inf: one line naming the file. */
lm_code lm_impatient_read(const char *dir, lm_impatient *out, lm_error *err);
void lm_impatient_clear(lm_impatient *m);
/* Multi-line summary for larmor-cli info (caller frees). */
lm_code lm_impatient_info(const char *dir, char **text, lm_error *err);

#endif
