/* Parboil's mri-q and mri-fhd (`larmor-cli q`): the raw kernel sums of a
 * variant at the explicit points of a Parboil input file,
 *   Q(x)     = sum_k |phi(k)|^2 exp(+i 2 pi k.x)          (mri-q)
 *   F^H d(x) = sum_k conj(phi(k)) d(k) exp(+i 2 pi k.x)   (mri-fhd),
 * written in Parboil's output format. */
#ifndef LM_Q_H
#define LM_Q_H

#include "lm_error.h"

typedef struct lm_q_result {
    const char *variant;   /* the variant that ran (static) */
    int num_k, num_x;      /* samples and points of the input */
    double time_s;         /* the sum alone, without reading and writing */
} lm_q_result;

/* variant: a name (checked for availability first); fhd 0: Q, 1: F^H d
 * (an mri-q file, which has no k-space data, is refused). */
lm_code lm_q_parboil(const char *variant, const char *in_path, const char *out_path, int fhd, lm_q_result *res,
                     lm_error *err);

#endif
