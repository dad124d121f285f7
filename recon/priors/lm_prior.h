/* Non-quadratic priors lambda f(G x) for ADMM (lm_admm.h): a sparsifying
 * transform G (an lm_linop with its adjoint), G^H G as an operator on the
 * image for the x-update, and the proximal operator of f, all on one back
 * end (CPU or GPU from the same source).
 *
 *   tv:      G = D, the forward differences of lm_backend.h (one block per
 *            axis with more than one voxel: 3D, or 2D when nz = 1), f the
 *            l2,1 norm sum_x ||D x(x)||_2 over the axes' complex values
 *            (isotropic total variation); G^H G = D^H D, lm_reg.h's gradient
 *            W^H W; prox: group soft threshold.
 *   wavelet: G = Psi P, Daubechies-4 over each axis zero padded to a power
 *            of two (lm_wavelet.h); f = ||.||_1 (complex magnitudes);
 *            G^H G = I; prox: soft threshold. Computed on the host: with a
 *            GPU back end each application downloads x, transforms it and
 *            uploads the coefficients (and back for the adjoint).
 *
 * Written for reuse: a prior is any G with an adjoint plus any lm_prox. */
#ifndef LM_PRIOR_H
#define LM_PRIOR_H

#include "lm_linop.h"
#include "lm_wavelet.h"

typedef struct lm_prox lm_prox;

/* The proximal operator of a convex f on n values of a back end. */
struct lm_prox {
    const char *name;
    /* z = argmin_z t f(z) + 1/2 ||z - v||^2 (t >= 0); z == v allowed. */
    void (*apply)(const lm_prox *p, lm_backend *be, int64_t n, lm_cfloat *z, const lm_cfloat *v, double t);
    /* f(v) */
    double (*value)(const lm_prox *p, lm_backend *be, int64_t n, const lm_cfloat *v);
    int groups;
    void *user;
};

/* f(v) = sum_j ||(v[j], v[m + j], ..., v[(groups - 1) m + j])||_2, m = n /
 * groups: the l1 norm of complex values for groups 1, the l2,1 norm (TV)
 * for the gradient's axes. */
lm_prox lm_prox_l21(int groups);

typedef struct lm_prior {
    lm_reg_kind kind;
    lm_linop *G;       /* image (N) -> coefficients (G->n_out), with adjoint */
    lm_linop *GhG;     /* G^H G on the image, NULL when it is the identity */
    lm_prox prox;
} lm_prior;

/* D (lm_backend.h's grad / grad_adj): N -> lm_grad_axes(n) N values. */
lm_code lm_linop_grad(lm_backend *be, const int64_t n[3], lm_linop **out, lm_error *err);
/* Psi P (lm_wavelet.h): N -> lm_wavelet_coeffs values; host transform
 * (downloads and uploads on a GPU back end). */
lm_code lm_linop_wavelet(lm_backend *be, const int64_t n[3], lm_wavelet_kind kind, lm_linop **out,
                         lm_error *err);

/* kind LM_REG_TV or LM_REG_WAVELET (Daubechies-4). */
lm_code lm_prior_new(lm_backend *be, const int64_t n[3], lm_reg_kind kind, lm_prior **out, lm_error *err);
void lm_prior_free(lm_prior *p);

#endif
