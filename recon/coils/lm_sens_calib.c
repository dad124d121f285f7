/* Cartesian calibration k-space from non-Cartesian samples (lm_coils.h).
 *
 * Why this way: ESPIRiT needs coil k-space on the integer grid (1/FOV
 * spacing) inside a small box. The samples there are dense (radial, spiral),
 * so gridding is well posed, but the grid values must be consistent across
 * coils: any common k-space weighting error (density) blurs every coil image
 * the same way, which the maps can absorb only if it is smooth. So:
 *
 *  1. take the samples with |k_a| < cal_a/2 + margin_a (margin = max(4, cal/4))
 *     and weight them by density (t->w, else Pipe-Menon on the calibration
 *     plan's fine grid), by 1/phi(k) (the voxel basis is common to all
 *     coils and not part of s_c rho), and by a taper that is 1 inside the
 *     box and falls as cos^2 to 0 over the margin (so neither the box edge
 *     nor the badly-weighted samples at the selection edge ring into the box);
 *  2. type 1 NUFFT (tolerance 1e-5) onto an image grid of G_a = 2 (cal_a/2 +
 *     margin_a + 3) points over the FOV: large enough that the selected band
 *     neither wraps nor aliases;
 *  3. an exact DFT of that image back to the box's integer k.
 * Steps 2-3 are gridding with the NUFFT's deapodised kernel: for an object
 * inside the FOV the result is its k-space on the integer grid up to the
 * density-compensation (Riemann sum) error. */
#include "lm_coils_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_kernels.h"
#include "lm_nufft.h"
#include "lm_progress.h"

#define LM_CALIB_DCF_ITERS 15
#define LM_CALIB_TOL 1e-5

void lm_calib_free(lm_calib *c)
{
    if (c) {
        free(c->y);
        free(c);
    }
}


static double taper(double ak, double half, double margin)
{
    if (ak <= half)
        return 1.0;
    if (ak >= half + margin)
        return 0.0;
    double c = cos(0.5 * 3.14159265358979323846 * (ak - half) / margin);
    return c * c;
}

lm_code lm_calib_from_noncart(const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                              const int64_t cal[3], const lm_ctl *ctl, lm_calib **out,
                              int64_t *centre, lm_error *err)
{
    if (!g || !t || !k || !k->d || !cal || !out)
        return lm_fail(err, LM_ERR_INVALID, "coil maps: missing geometry, trajectory or data");
    *out = NULL;
    if (t->m != k->m)
        return lm_fail(err, LM_ERR_INVALID, "coil maps: %lld trajectory samples but %lld data samples",
                       (long long)t->m, (long long)k->m);
    if (k->ncoils < 1 || k->ncoils > 1024)
        return lm_fail(err, LM_ERR_INVALID, "coil maps: %lld channels", (long long)k->ncoils);
    lm_code rc = lm_geom_check(g, t, err);
    if (rc != LM_OK)
        return rc;
    int dim = g->n[2] == 1 ? 2 : 3;
    for (int a = 0; a < 3; a++) {
        int active = a < dim;
        if (active ? (cal[a] < 4 || cal[a] % 2 || cal[a] > g->n[a]) : cal[a] != 1)
            return lm_fail(err, LM_ERR_INVALID,
                           "coil maps: calibration size %lld along axis %d is invalid for a matrix of %lld (even, 4..%lld)",
                           (long long)cal[a], a, (long long)g->n[a], (long long)g->n[a]);
    }
    int64_t m = t->m, nc = k->ncoils;
    for (int64_t i = 0; i < m * nc; i++)
        if (!isfinite(crealf(k->d[i])) || !isfinite(cimagf(k->d[i])))
            return lm_fail(err, LM_ERR_FORMAT, "coil maps: sample %lld of channel %lld is not a finite number",
                           (long long)(i % m), (long long)(i / m));

    double half[3], margin[3], ksel[3];
    int64_t gg[3] = {1, 1, 1}, gc[3] = {0, 0, 0}, calv = 1;
    for (int a = 0; a < dim; a++) {
        half[a] = (double)(cal[a] / 2);
        margin[a] = fmax(4.0, (double)(cal[a] / 4));
        ksel[a] = half[a] + margin[a];
        gg[a] = 2 * ((int64_t)ksel[a] + 3);
        gc[a] = gg[a] / 2;
        calv *= cal[a];
    }
    /* select: strictly inside the taper's support on every active axis */
    int64_t nsel = 0, ncentre = 0;
    for (int64_t i = 0; i < m; i++) {
        int in = 1, box = 1;
        for (int a = 0; a < dim; a++) {
            double ak = fabs((double)t->k[3 * i + a]);
            in &= ak < ksel[a];
            box &= ak <= half[a];
        }
        nsel += in;
        ncentre += box;
    }
    if (centre)
        *centre = ncentre;
    if (ncentre * 4 < calv)
        return lm_fail(err, LM_ERR_INVALID,
                       "coil maps: only %lld samples inside the %lld-point calibration box (need %lld): use a smaller calibration size",
                       (long long)ncentre, (long long)calv, (long long)((calv + 3) / 4));

    float *kk = lm_alloc((size_t)nsel, 3 * sizeof(float), err, "coil calibration");
    int64_t *idx = lm_alloc((size_t)nsel, sizeof(int64_t), err, "coil calibration");
    float *w = lm_alloc((size_t)nsel, sizeof(float), err, "coil calibration");
    lm_cfloat *in = lm_alloc((size_t)nsel, sizeof(lm_cfloat), err, "coil calibration");
    size_t gvox = (size_t)(gg[0] * gg[1] * gg[2]);
    lm_cfloat *img = lm_alloc(gvox, sizeof(lm_cfloat), err, "coil calibration");
    lm_cdouble *imgs = lm_alloc(gvox * (size_t)nc, sizeof(lm_cdouble), err, "coil calibration");
    lm_cdouble *mat[3] = {NULL, NULL, NULL};
    lm_calib *c = lm_calloc(1, sizeof *c, err, "coil calibration");
    lm_nufft_plan *p = NULL;
    if (!kk || !idx || !w || !in || !img || !imgs || !c) {
        rc = LM_ERR_NOMEM;
        goto done;
    }
    c->y = lm_alloc((size_t)(calv * nc), sizeof(lm_cdouble), err, "coil calibration");
    if (!c->y) {
        rc = LM_ERR_NOMEM;
        goto done;
    }
    float *kx = kk, *ky = kk + nsel, *kz = kk + 2 * nsel;
    for (int64_t i = 0, j = 0; i < m; i++) {
        int sel = 1;
        for (int a = 0; a < dim; a++)
            sel &= fabs((double)t->k[3 * i + a]) < ksel[a];
        if (!sel)
            continue;
        idx[j] = i;
        kx[j] = t->k[3 * i];
        ky[j] = t->k[3 * i + 1];
        kz[j] = dim == 3 ? t->k[3 * i + 2] : 0.0f;
        j++;
    }
    lm_nufft_opts o;
    lm_nufft_default_opts(&o);
    o.threads = ctl ? ctl->threads : 0;
    rc = lm_nufft_make_plan(1, dim, gg, +1, LM_CALIB_TOL, &o, &p, err);
    if (rc == LM_OK)
        rc = lm_nufft_set_points(p, nsel, kx, ky, dim == 3 ? kz : NULL, gc, gg, err);
    if (rc != LM_OK)
        goto done;
    if (t->w) {
        for (int64_t j = 0; j < nsel; j++)
            w[j] = t->w[idx[j]];
    } else {
        lm_ctl_range sc;
        lm_ctl dc = lm_ctl_sub(&sc, ctl, 0.0, 0.6);
        rc = lm_nufft_density(p, LM_CALIB_DCF_ITERS, w, &dc, err);
        if (rc != LM_OK)
            goto done;
    }
    for (int64_t j = 0; j < nsel; j++) {
        double tap = 1.0, kv[3] = {kx[j], ky[j], kz[j]};
        for (int a = 0; a < dim; a++)
            tap *= taper(fabs(kv[a]), half[a], margin[a]);
        double phi = lm_geom_phi(g, kv[0], kv[1], kv[2]);
        /* phi only vanishes at the matrix's band edge, far outside the box */
        w[j] = fabs(phi) > 1e-3 ? (float)(w[j] * tap / phi) : 0.0f;
    }
    for (int64_t ch = 0; ch < nc; ch++) {
        for (int64_t j = 0; j < nsel; j++)
            in[j] = w[j] * k->d[idx[j] + ch * m];
        rc = lm_nufft_execute_c(p, in, img, NULL, err);
        if (rc != LM_OK)
            goto done;
        for (size_t v = 0; v < gvox; v++)
            imgs[v + gvox * (size_t)ch] = img[v];
        if (lm_ctl_report(ctl, 0.6 + 0.35 * (double)(ch + 1) / (double)nc)) {
            rc = lm_fail(err, LM_ERR_CANCELLED, "coil maps: cancelled");
            goto done;
        }
    }
    /* image grid -> integer k of the box: y(k_j) = sum_i img(x_i) exp(-i 2 pi k_j x_i) / prod(G) */
    int64_t cn[3] = {cal[0], cal[1], cal[2]};
    for (int a = 0; a < 3; a++) {
        mat[a] = lm_alloc((size_t)(cn[a] * gg[a]), sizeof(lm_cdouble), err, "coil calibration");
        if (!mat[a]) {
            rc = LM_ERR_NOMEM;
            goto done;
        }
        for (int64_t j = 0; j < cn[a]; j++)
            for (int64_t i = 0; i < gg[a]; i++)
                mat[a][j * gg[a] + i] =
                    lm_cis(-1.0, (double)(j - cn[a] / 2) * (double)(i - gc[a]) / (double)gg[a]) /
                    (double)gg[a];
    }
    rc = lm_sep3(gg, cn, (const lm_cdouble *const *)mat, nc, imgs, c->y, lm_ctl_threads(ctl), err);
    if (rc != LM_OK)
        goto done;
    for (int a = 0; a < 3; a++)
        c->n[a] = cn[a];
    c->ncoils = nc;
    *out = c;
    c = NULL;
done:
    lm_nufft_destroy(p);
    lm_calib_free(c);
    for (int a = 0; a < 3; a++)
        free(mat[a]);
    free(kk);
    free(idx);
    free(w);
    free(in);
    free(img);
    free(imgs);
    return rc;
}
