/* Gridding baselines (lm_grid.h), both built on the NUFFT engine: gridding
 * is a type 1 NUFFT of density-weighted data with a given kernel.
 *
 *   img(x_n) = sum_m w_m d_m exp(+i 2 pi k_m . x_n),   x_n = (i - n/2)/n,
 *
 * which is the Riemann sum of rho(x) = int d(k) exp(+i 2 pi k.x) dk when
 * w_m is the k-space volume per sample (cycles^dim): the forward model
 * d(k) ~ int rho(x) exp(-i 2 pi k.x) dx over a FOV of volume 1 then gives
 * back rho in the truth's units.
 *
 *   linear: tent kernel of width 2 on the n-grid itself (k spacing 1/FOV),
 *           i.e. trilinear (bilinear in 2D) interpolation onto the Cartesian
 *           grid, inverse FFT, no deapodisation (the paper's baseline).
 *   kb:     Kaiser-Bessel width 5 on the 2x grid, beta per Beatty et al.
 *           2005, inverse FFT, crop, deapodisation by the kernel's transform.
 * Density weights: t->w when present (k volume per sample); otherwise
 * Pipe-Menon iterations with the method's own kernel (w <- w T / (C C^T w),
 * T chosen so that w is the k volume per sample where sampling is dense).
 * In undersampled regions (the periphery of radial k-space) a kernel this
 * narrow under-weights samples; that acts as a low-pass and is what the
 * paper's baseline does too. Samples beyond |k| = n/2 wrap around: on the
 * voxel grid k and k + n are the same frequency. */
#include "lm_grid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_nufft.h"
#include "lm_progress.h"

#define LM_GRID_DCF_ITERS 15
#define LM_GRID_KB_WIDTH 5

/* Progress of a stage mapped into [lo, hi] of the caller's range. */


static lm_code grid_run(const lm_geom *g, const lm_traj *t, const lm_cfloat *d, lm_cfloat *img,
                        const lm_ctl *ctl, lm_error *err, int kb)
{
    const char *what = kb ? "grid-kb" : "grid-linear";
    if (!g || !t || !d || !img)
        return lm_fail(err, LM_ERR_INVALID, "%s: missing geometry, trajectory, data or image", what);
    lm_code rc = lm_geom_check(g, t, err);
    if (rc != LM_OK)
        return rc;
    if (g->n[0] < 2 || g->n[1] < 2)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: matrix %lldx%lldx%lld is not 2D or 3D", what,
                       (long long)g->n[0], (long long)g->n[1], (long long)g->n[2]);
    int dim = g->n[2] == 1 ? 2 : 3;
    int64_t m = t->m;
    if (lm_ctl_report(ctl, 0.0))
        return lm_fail(err, LM_ERR_CANCELLED, "%s: cancelled", what);

    lm_nufft_opts o;
    lm_nufft_default_opts(&o);
    o.threads = ctl ? ctl->threads : 0;
    if (kb) {
        o.kernel = LM_NUFFT_KERNEL_KB;
        o.width = LM_GRID_KB_WIDTH;
        o.upsampfac = 2.0;
    } else {
        o.kernel = LM_NUFFT_KERNEL_LINEAR;
        o.upsampfac = 1.0;
        o.deapodize = 0;
    }
    float *k = lm_alloc((size_t)m, 3 * sizeof(float), err, what);
    float *w = lm_alloc((size_t)m, sizeof(float), err, what);
    lm_cfloat *wd = lm_alloc((size_t)m, sizeof(lm_cfloat), err, what);
    lm_nufft_plan *p = NULL;
    if (!k || !w || !wd) {
        rc = LM_ERR_NOMEM;
        goto done;
    }
    float *kx = k, *ky = k + m, *kz = k + 2 * m;
    for (int64_t i = 0; i < m; i++) {
        kx[i] = t->k[3 * i];
        ky[i] = t->k[3 * i + 1];
        kz[i] = t->k[3 * i + 2];
    }
    int64_t c[3], s[3];
    for (int a = 0; a < 3; a++) {
        c[a] = g->n[a] / 2;
        s[a] = g->n[a];
    }
    rc = lm_nufft_make_plan(1, dim, g->n, +1, 1e-3, &o, &p, err);
    if (rc == LM_OK)
        rc = lm_nufft_set_points(p, m, kx, ky, dim == 3 ? kz : NULL, c, s, err);
    if (rc != LM_OK)
        goto done;
    if (t->w) {
        memcpy(w, t->w, (size_t)m * sizeof(float));
    } else {
        lm_ctl_range sc;
        lm_ctl dc = lm_ctl_sub(&sc, ctl, 0.0, 0.8);
        rc = lm_nufft_density(p, LM_GRID_DCF_ITERS, w, &dc, err);
        if (rc != LM_OK)
            goto done;
    }
    for (int64_t i = 0; i < m; i++)
        wd[i] = w[i] * d[i];
    lm_ctl_range sc;
    lm_ctl ec = lm_ctl_sub(&sc, ctl, t->w ? 0.0 : 0.8, 1.0);
    rc = lm_nufft_execute_c(p, wd, img, &ec, err);
done:
    lm_nufft_destroy(p);
    free(k);
    free(w);
    free(wd);
    if (rc == LM_ERR_CANCELLED)
        return lm_fail(err, rc, "%s: cancelled", what);
    return rc;
}

lm_code lm_grid_linear(const lm_geom *g, const lm_traj *t, const lm_cfloat *d, lm_cfloat *img,
                       const lm_ctl *ctl, lm_error *err)
{
    return grid_run(g, t, d, img, ctl, err, 0);
}

lm_code lm_grid_kb(const lm_geom *g, const lm_traj *t, const lm_cfloat *d, lm_cfloat *img,
                   const lm_ctl *ctl, lm_error *err)
{
    return grid_run(g, t, d, img, ctl, err, 1);
}
