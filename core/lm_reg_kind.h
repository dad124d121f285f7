/* The regularisers a reconstruction can use, as one enum. It lives in
 * core/ because both kernels/ (W^H W on either device, lm_reg.h, lm_gpu.h)
 * and recon/'s public options (lm_recon.h, which front ends see without the
 * kernels' headers) name it; core/ is the one layer both may include. */
#ifndef LM_REG_KIND_H
#define LM_REG_KIND_H

typedef enum lm_reg_kind {
    LM_REG_IDENTITY = 0, /* W = I (Tikhonov) */
    LM_REG_GRADIENT,     /* W = 3D forward finite differences */
    LM_REG_ANATOMICAL,   /* the reference's edges times the data's (docs/priors.md) */
    /* Not quadratic: solved by ADMM (recon/lm_admm.h), not by lm_reg_apply. */
    LM_REG_TV,           /* isotropic total variation sum_x ||D rho(x)||_2 */
    LM_REG_WAVELET,      /* ||Psi rho||_1, Psi an orthogonal wavelet (lm_wavelet.h) */
    LM_REG_ANATOMICAL_EDGES /* finite differences weighted by a reference's edges alone */
} lm_reg_kind;

/* True for the kinds whose W^H W is D^T diag(w) D with edge weights: one
 * kernel serves both (lm_reg_apply, lm_gpu_reg_apply with
 * LM_REG_ANATOMICAL). */
static inline int lm_reg_weighted(lm_reg_kind k) { return k == LM_REG_ANATOMICAL || k == LM_REG_ANATOMICAL_EDGES; }

/* The anatomical kinds' edge threshold as a fraction of the reference's
 * maximum (lm_reg_anatomical_weights, lm_recon_opts.edge_frac). */
/* 0.05: region steps in a typical reference are well above 5 % of its
 * maximum, so edges get weights near 1/17 while noise-level wiggles keep ~1
 * (B32: 16.7 % error at 0.05 against 24.7 % at 0.1; BENCHMARKS.md). */
#define LM_EDGE_FRAC_DEFAULT 0.05

#endif
