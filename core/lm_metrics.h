/* Image quality metrics exactly as docs/conventions.md section 3 defines them. */
#ifndef LM_METRICS_H
#define LM_METRICS_H

#include <stdint.h>

#include "lm_types.h"

/* Differences are complex (I - I0); means, RMS and max|I0| run over the
 * compared voxels only (the mask's, or all). Identical images (MSE == 0)
 * give psnr_db = +INFINITY and percent_error = 0: test with isinf(); JSON
 * has no infinity, so writers print null for it. A zero truth with a
 * non-zero image gives percent_error = +INFINITY, psnr_db = -INFINITY. */
typedef struct lm_metrics {
    double psnr_db;        /* 20 log10(max|I0| / sqrt(MSE)) */
    double percent_error;  /* 100 RMS(I - I0) / RMS(I0) */
    double rmse;
    double scale_re, scale_im; /* alpha applied (1, 0 when not scale-matched) */
    int64_t count;         /* voxels compared */
} lm_metrics;

/* How an image is matched to its truth before scoring (bit flags):
 * LM_METRICS_SCALE applies the least-squares alpha = argmin ||alpha I - I0||
 * (complex: it also removes one global phase); LM_METRICS_MAGNITUDE scores
 * |I| against |I0| (alpha then real). */
enum { LM_METRICS_SCALE = 1, LM_METRICS_MAGNITUDE = 2 };

/* image and truth: n complex values; mask (may be NULL) selects voxels.
 * scale_match: 0 or LM_METRICS_* flags. */
lm_code lm_metrics_compute(const lm_cfloat *image, const lm_cfloat *truth, int64_t n,
                           const uint8_t *mask, int scale_match, lm_metrics *out, lm_error *err);
/* The one scoring rule of the CLI and the workbench, so that a figure on
 * screen is what `larmor-cli metrics` says of the exported image:
 * - a gridded image (density weights fix no scale) is scored after
 *   least-squares complex scale matching (LM_METRICS_SCALE);
 * - a root-sum-of-squares combination (a magnitude carrying the coils'
 *   profile) and a SENSE solve with estimated maps (unit-norm maps: the
 *   image carries their rss profile and their spatially varying phase,
 *   which no global alpha removes) are scored as magnitudes after scale
 *   matching (LM_METRICS_SCALE | LM_METRICS_MAGNITUDE): the figure of
 *   `metrics --scale-match` on the exported (magnitude) NIfTI;
 * - everything else unmatched (0).
 * The flags are booleans; returns the scale_match argument of
 * lm_metrics_compute. */
int lm_metrics_scale_match_for(int gridded, int rss_combined, int maps_estimated);

/* ||a - b||_2 / ||b||_2 in double (0 when both are zero, +INFINITY when
 * only b is). lm_rel_error: any of the four arrays may be NULL (zeros). */
double lm_rel_error(const float *a_re, const float *a_im, const float *b_re, const float *b_im, int64_t n);
double lm_rel_error_c(const lm_cfloat *a, const lm_cfloat *b, int64_t n);

/* Lesion contrast: how much of a lesion's true contrast an image keeps.
 * mask labels voxels 1 (lesion) and 2 (surrounding tissue, a shell), as
 * lm_lesion_mask writes it; with C(X) = mean over label 1 of X - mean
 * over label 2 of X, contrast = C(image) / C(truth): 1 when the image
 * keeps the lesion's contrast, 0 when it erased it. The image is read as
 * its component along the truth's phase, Re(I conj(I0) / |I0|) (Re I where
 * I0 = 0), the truth as |I0|: linear in the image, so noise adds no bias
 * (the magnitude |I| would: its mean grows with the noise, more where the
 * signal is low) and a linear reconstruction's score does not depend on
 * the lesion's contrast. */
typedef struct lm_lesion_score {
    double contrast;               /* C(image) / C(truth) */
    double image_lesion, image_shell; /* the two means of the image (as above) */
    double truth_lesion, truth_shell; /* and of |truth| */
    int64_t lesion_voxels, shell_voxels;
} lm_lesion_score;

/* mask: n real labels (the real part is read, rounded); LM_ERR_INVALID
 * when a region is empty or the truth has no contrast there. */
lm_code lm_lesion_contrast(const lm_cfloat *image, const lm_cfloat *truth, const lm_cfloat *mask, int64_t n,
                           lm_lesion_score *out, lm_error *err);

#endif
