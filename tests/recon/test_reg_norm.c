/* lm_reg_quadratic_value (recon/priors/lm_reg_norm.h), the workbench's
 * ||W rho||^2 for the L-curve, against sums written out in double:
 * identity sum |rho|^2; gradient the forward differences along each axis
 * (none past the last voxel); anatomical-edges with a reference that has no
 * edges (weights 1) equals gradient. Relative tolerance 1e-5 (float image,
 * double sums). Kinds that are not quadratic in the image alone, and
 * anatomical-edges without a reference, are refused with a message. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_reg_norm.h"
#include "lm_test.h"

static double gradient_ref(const int64_t n[3], const lm_cfloat *x)
{
    double s = 0;
    for (int64_t z = 0; z < n[2]; z++)
        for (int64_t y = 0; y < n[1]; y++)
            for (int64_t i = 0; i < n[0]; i++) {
                const int64_t j = i + n[0] * (y + n[1] * z);
                const double complex v = x[j];
                if (i + 1 < n[0])
                    s += pow(cabs(x[j + 1] - v), 2);
                if (y + 1 < n[1])
                    s += pow(cabs(x[j + n[0]] - v), 2);
                if (z + 1 < n[2])
                    s += pow(cabs(x[j + n[0] * n[1]] - v), 2);
            }
    return s;
}

int main(void)
{
    const int64_t n[3] = {12, 10, 6};
    const int64_t N = n[0] * n[1] * n[2];
    lm_cfloat *x = malloc((size_t)N * sizeof *x);
    CHECK(x != NULL);
    if (!x)
        return 1;
    srand(7);
    double id = 0;
    for (int64_t j = 0; j < N; j++) {
        x[j] = (float)rand() / RAND_MAX - 0.5f + I * ((float)rand() / RAND_MAX - 0.5f);
        id += pow(cabs(x[j]), 2);
    }
    lm_error err = {0};
    double v = -1;
    CHECK_OK(lm_reg_quadratic_value(n, LM_REG_IDENTITY, NULL, 0, x, &v, &err), &err);
    CHECK_NEAR(v / id, 1.0, 1e-5);

    const double gr = gradient_ref(n, x);
    CHECK_OK(lm_reg_quadratic_value(n, LM_REG_GRADIENT, NULL, 0, x, &v, &err), &err);
    CHECK_NEAR(v / gr, 1.0, 1e-5);

    /* a flat reference has no edges: every weight 1, the gradient's value */
    const double mm[3] = {1, 1, 1};
    lm_volume *ref = lm_volume_new(n, mm, &err);
    CHECK(ref != NULL);
    if (ref) {
        for (int64_t j = 0; j < N; j++)
            ref->data[j] = 3.0f;
        CHECK_OK(lm_reg_quadratic_value(n, LM_REG_ANATOMICAL_EDGES, ref, 0, x, &v, &err), &err);
        CHECK_NEAR(v / gr, 1.0, 1e-5);
        /* a step in the reference lowers the weights across it: a smaller value */
        for (int64_t j = 0; j < N; j++)
            ref->data[j] = (j % n[0]) < n[0] / 2 ? 1.0f : 5.0f;
        CHECK_OK(lm_reg_quadratic_value(n, LM_REG_ANATOMICAL_EDGES, ref, 0, x, &v, &err), &err);
        CHECK_MSG(v < gr, "a reference edge should lower ||W rho||^2: %g against %g", v, gr);
        lm_volume_free(ref);
    }

    lm_error_clear(&err);
    CHECK(lm_reg_quadratic_value(n, LM_REG_ANATOMICAL_EDGES, NULL, 0, x, &v, &err) == LM_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "reference") != NULL, "message: %s", err.msg);
    lm_error_clear(&err);
    CHECK(lm_reg_quadratic_value(n, LM_REG_TV, NULL, 0, x, &v, &err) == LM_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "quadratic") != NULL, "message: %s", err.msg);
    free(x);
    return lm_test_finish("recon-reg-norm");
}
