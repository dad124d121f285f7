/* The value of a quadratic regulariser at an image, ||W rho||^2 =
 * rho^H W^H W rho (kernels/lm_reg.h), for callers that report it (the
 * workbench's L-curve) without the kernels' interface. */
#ifndef LM_REG_NORM_H
#define LM_REG_NORM_H

#include <stdint.h>

#include "lm_reg_kind.h"
#include "lm_types.h"

/* reg: LM_REG_IDENTITY, LM_REG_GRADIENT or LM_REG_ANATOMICAL_EDGES (whose
 * weights come from ref, any grid, with edge_frac; 0: LM_EDGE_FRAC_DEFAULT).
 * Other kinds (not quadratic, or weighted by the data) and a missing
 * reference are refused. *out: ||W rho||^2 in double. */
lm_code lm_reg_quadratic_value(const int64_t n[3], lm_reg_kind reg, const lm_volume *ref, double edge_frac,
                               const lm_cfloat *rho, double *out, lm_error *err);

#endif
