/* The DICOM output options of larmor-cli recon (--out-dicom and friends,
 * docs/dicom.md), kept together so cmd_recon.c carries only their parsing. */
#ifndef CLI_DICOM_H
#define CLI_DICOM_H

#include "larmor.h"

typedef struct cli_dicom_args {
    const char *dir;      /* --out-dicom DIR, or NULL */
    int enhanced;         /* --dicom-enhanced */
    lm_dicom_part part;   /* --dicom-part */
    const char *like;     /* --dicom-like DIR */
    const char *series;   /* --series UID: of a DICOM folder read (--ref, --truth, --fieldmap, --lesion-mask,
                             --dicom-like) */
} cli_dicom_args;

/* Refuses options that need --out-dicom without it, and an --out-dicom
 * folder that exists and is not empty (before any long work). */
lm_code cli_dicom_check(const cli_dicom_args *a, lm_error *err);

/* "Larmor CG SENSE TV lambda=0.003 gpu-nufft": what was done, for the
 * SeriesDescription. variant may be NULL (not CG). */
void cli_dicom_describe(char *buf, size_t len, lm_method method, int coils, lm_coil_combine combine, lm_reg_kind reg,
                        double lambda, const char *variant);

/* Writes v as the series a asks for (nothing when a->dir is NULL), with
 * prov's patient and study; the note about an anonymous patient goes to
 * stderr unless quiet. */
lm_code cli_dicom_write(const cli_dicom_args *a, const lm_volume *v, const lm_mrd_provenance *prov, const char *desc,
                        int quiet, lm_error *err);
/* The same for a dynamic series: v->data holds frames volumes (frame
 * slowest) of frame_s seconds each (0: unknown). */
lm_code cli_dicom_write_frames(const cli_dicom_args *a, const lm_volume *v, int64_t frames, double frame_s,
                               const lm_mrd_provenance *prov, const char *desc, int quiet, lm_error *err);

#endif
