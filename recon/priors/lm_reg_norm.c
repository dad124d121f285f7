#include "lm_reg_norm.h"

#include <complex.h>
#include <stdlib.h>

#include "lm_reg.h"

lm_code lm_reg_quadratic_value(const int64_t n[3], lm_reg_kind reg, const lm_volume *ref, double edge_frac,
                               const lm_cfloat *rho, double *out, lm_error *err)
{
    *out = 0;
    if (!(reg == LM_REG_IDENTITY || reg == LM_REG_GRADIENT || reg == LM_REG_ANATOMICAL_EDGES))
        return lm_fail(err, LM_ERR_INVALID, "regulariser value: only identity, gradient and anatomical-edges are "
                                            "quadratic in the image alone");
    if (reg == LM_REG_ANATOMICAL_EDGES && !ref)
        return lm_fail(err, LM_ERR_INVALID, "regulariser value: anatomical-edges needs a reference");
    const int64_t N = n[0] * n[1] * n[2];
    float *weights = NULL;
    if (reg == LM_REG_ANATOMICAL_EDGES) {
        lm_code c = lm_reg_anatomical_weights(ref, n, edge_frac > 0 ? edge_frac : LM_EDGE_FRAC_DEFAULT, &weights, err);
        if (c != LM_OK)
            return c;
    }
    lm_cfloat *y = malloc((size_t)N * sizeof *y);
    if (!y) {
        free(weights);
        return lm_fail(err, LM_ERR_NOMEM, "regulariser value: out of memory (%lld voxels)", (long long)N);
    }
    /* anatomical-edges' W^H W is the weighted kernel's (lm_reg_weighted) */
    lm_reg_apply(n, lm_reg_weighted(reg) ? LM_REG_ANATOMICAL : reg, weights, rho, y, 0);
    double v = 0;
    for (int64_t i = 0; i < N; i++)
        v += crealf(conjf(rho[i]) * y[i]);
    free(y);
    free(weights);
    *out = v;
    return LM_OK;
}
