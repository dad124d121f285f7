/* Walsh adaptive-combine coil maps (Walsh, Gmitro & Marcellin, MRM 43:682,
 * 2000), in the fast form of Inati et al. (ISMRM 2014): computed on a low-
 * resolution grid and interpolated, since the maps are smooth.
 *
 * Low-resolution coil images m_c(x) on L_a = min(n_a, 3 cal_a / 2) points
 * per axis come from the calibration k-space with a Tukey window (little
 * ringing across the object's edge, little blur into the interior); the local signal covariance R(x) = sum over a
 * window of m m^H has, for noiseless data m = s rho, the sensitivity vector
 * as principal eigenvector. Phase referred to the calibration data's first
 * principal component (as ESPIRiT), masked where the local RSS is below
 * `mask` x its maximum, then interpolated trilinearly (periodically, like
 * the FOV) to the image grid and renormalised to unit norm. */
#include "lm_coils_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_kernels.h"

#define TUKEY_FLAT 0.5

/* Tukey window over the calibration box: flat to |k| = TUKEY_FLAT x cn/2,
 * then cos^2 down to 0 just past the box edge. A Hann window (flat 0) kills
 * the ringing but blurs the object's edge into the interior, where the
 * blurred coil images stop being s_c(x) times a common factor. */
static double window_k(double kv, int64_t cn)
{
    if (cn == 1)
        return 1.0;
    double half = 0.5 * (double)cn + 1.0, flat = TUKEY_FLAT * half, ak = fabs(kv);
    if (ak <= flat)
        return 1.0;
    double c = cos(0.5 * 3.14159265358979323846 * (ak - flat) / (half - flat));
    return c * c;
}

/* Box sum of half-width hw along axis ax (clipped at the edges), in place. */
static void box_axis(lm_cdouble *v, const int64_t d[4], int ax, int64_t hw, int threads)
{
    if (hw <= 0 || d[ax] == 1)
        return;
    int64_t inner = 1, outer = 1, na = d[ax];
    for (int a = 0; a < ax; a++)
        inner *= d[a];
    for (int a = ax + 1; a < 4; a++)
        outer *= d[a];
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        lm_cdouble *pre = malloc((size_t)(na + 1) * sizeof *pre);
#pragma omp for schedule(static) collapse(2)
        for (int64_t q = 0; q < outer; q++)
            for (int64_t p = 0; p < inner; p++) {
                if (!pre)
                    continue;
                lm_cdouble *x = v + q * na * inner + p;
                pre[0] = 0;
                for (int64_t i = 0; i < na; i++)
                    pre[i + 1] = pre[i] + x[i * inner];
                for (int64_t i = 0; i < na; i++) {
                    int64_t lo = i - hw < 0 ? 0 : i - hw, hi = i + hw + 1 > na ? na : i + hw + 1;
                    x[i * inner] = pre[hi] - pre[lo];
                }
            }
        free(pre);
    }
}

lm_code lm_walsh_maps(const lm_calib *cal, const int64_t n[3], int window, double mask,
                      const lm_ctl *ctl, lm_sens **out, lm_sens_est_info *info, lm_error *err)
{
    if (!cal || !cal->y || !n || !out)
        return lm_fail(err, LM_ERR_INVALID, "Walsh: missing calibration data");
    *out = NULL;
    if (window < 1 || window % 2 == 0)
        return lm_fail(err, LM_ERR_INVALID, "Walsh: window %d is not a positive odd number", window);
    if (!(mask >= 0 && mask < 1))
        return lm_fail(err, LM_ERR_INVALID, "Walsh: mask level %g is not in [0, 1)", mask);
    int dim = n[2] == 1 ? 2 : 3;
    int64_t nc = cal->ncoils, npairs = nc * (nc + 1) / 2;
    int64_t L[3] = {1, 1, 1};
    for (int a = 0; a < 3; a++) {
        if (a >= dim ? cal->n[a] != 1 : cal->n[a] < 2)
            return lm_fail(err, LM_ERR_INVALID, "Walsh: calibration grid does not fit the %dD image", dim);
        if (a < dim) {
            L[a] = 3 * cal->n[a] / 2;
            L[a] += L[a] % 2;
            if (L[a] > n[a])
                L[a] = n[a];
        }
    }
    int64_t ncal = cal->n[0] * cal->n[1] * cal->n[2], nl = L[0] * L[1] * L[2];
    double energy = 0;
    for (int64_t i = 0; i < ncal * nc; i++) {
        if (!isfinite(creal(cal->y[i])) || !isfinite(cimag(cal->y[i])))
            return lm_fail(err, LM_ERR_FORMAT, "Walsh: calibration data hold a NaN or Inf");
        energy += creal(cal->y[i] * conj(cal->y[i]));
    }
    if (!(energy > 0))
        return lm_fail(err, LM_ERR_INVALID, "Walsh: the calibration data have no energy");
    int threads = lm_ctl_threads(ctl);
    lm_code rc = LM_OK;
    lm_cdouble *mat[3] = {NULL, NULL, NULL};
    lm_cdouble *img = lm_alloc((size_t)(nl * nc), sizeof *img, err, "Walsh");
    lm_cdouble *cov = lm_alloc((size_t)(nl * npairs), sizeof *cov, err, "Walsh");
    lm_cdouble *lm = lm_calloc((size_t)(nl * nc), sizeof *lm, err, "Walsh");
    double *rss = lm_alloc((size_t)nl, sizeof *rss, err, "Walsh");
    lm_cdouble *u = lm_alloc((size_t)nc, sizeof *u, err, "Walsh");
    lm_sens *s = NULL;
    if (!img || !cov || !lm || !rss || !u) {
        rc = LM_ERR_NOMEM;
        goto done;
    }
    if ((rc = lm_calib_principal(cal, u, err)) != LM_OK)
        goto done;
    for (int a = 0; a < 3; a++) {
        int64_t cn = cal->n[a];
        mat[a] = lm_alloc((size_t)(L[a] * cn), sizeof(lm_cdouble), err, "Walsh");
        if (!mat[a]) {
            rc = LM_ERR_NOMEM;
            goto done;
        }
        for (int64_t j = 0; j < L[a]; j++)
            for (int64_t i = 0; i < cn; i++) {
                double kv = (double)(i - cn / 2);
                mat[a][j * cn + i] = window_k(kv, cn) * lm_cis(+1.0, kv * lm_voxel_pos(j, L[a]));
            }
    }
    if ((rc = lm_sep3(cal->n, L, (const lm_cdouble *const *)mat, nc, cal->y, img, threads, err)) != LM_OK)
        goto done;
    /* covariance images for c <= c2, then box-filtered */
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t q = 0; q < nl; q++)
        for (int64_t c = 0, p = 0; c < nc; c++)
            for (int64_t c2 = c; c2 < nc; c2++, p++)
                cov[p * nl + q] = img[q + c * nl] * conj(img[q + c2 * nl]);
    int64_t d4[4] = {L[0], L[1], L[2], npairs};
    for (int a = 0; a < dim; a++)
        box_axis(cov, d4, a, window / 2, threads);
    if (lm_ctl_report(ctl, 0.4)) {
        rc = lm_fail(err, LM_ERR_CANCELLED, "Walsh: cancelled");
        goto done;
    }
    double rmax = 0;
    for (int64_t q = 0; q < nl; q++) {
        double t = 0;
        for (int64_t c = 0; c < nc; c++)
            t += creal(cov[(c * nc - c * (c - 1) / 2) * nl + q]);
        rss[q] = sqrt(fmax(t, 0.0));
        rmax = fmax(rmax, rss[q]);
    }
    int eig_fail = 0;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        lm_eig_ws ws;
        int ok = lm_eig_ws_init(&ws, nc) == 0;
        lm_cdouble v[1024];
#pragma omp for schedule(dynamic, 64)
        for (int64_t q = 0; q < nl; q++) {
            if (!ok || !(rss[q] > mask * rmax) || rss[q] <= 0)
                continue;
            for (int64_t j = 0; j < nc; j++)
                for (int64_t i = j; i < nc; i++) /* R_ij = conj(R_ji), stored (j, i) */
                    ws.a[i + nc * j] = conj(cov[(j * nc - j * (j - 1) / 2 + (i - j)) * nl + q]);
            double lam;
            if (lm_eig_top(&ws, &lam, v) != 0) {
#pragma omp atomic write
                eig_fail = 1;
                continue;
            }
            lm_phase_ref(v, u, nc);
            for (int64_t c = 0; c < nc; c++)
                lm[q + c * nl] = v[c];
        }
        if (!ok) {
#pragma omp atomic write
            eig_fail = 1;
        }
        lm_eig_ws_free(&ws);
    }
    if (eig_fail) {
        rc = lm_fail(err, LM_ERR_INTERNAL, "Walsh: a voxel's eigen-decomposition failed");
        goto done;
    }
    if (lm_ctl_report(ctl, 0.8)) {
        rc = lm_fail(err, LM_ERR_CANCELLED, "Walsh: cancelled");
        goto done;
    }
    s = lm_sens_new(n, nc, err);
    if (!s) {
        rc = LM_ERR_NOMEM;
        goto done;
    }
    int64_t nv = n[0] * n[1] * n[2], kept = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : kept) if (threads > 1)
    for (int64_t vox = 0; vox < nv; vox++) {
        int64_t j[3] = {vox % n[0], (vox / n[0]) % n[1], vox / (n[0] * n[1])};
        int64_t i0[3], i1[3];
        double f[3];
        for (int a = 0; a < 3; a++) {
            /* continuous low-res index of this voxel's position, periodic */
            double x = lm_voxel_pos(j[a], n[a]) * (double)L[a] + (double)(L[a] / 2);
            double fl = floor(x);
            f[a] = x - fl;
            i0[a] = ((int64_t)fl % L[a] + L[a]) % L[a];
            i1[a] = (i0[a] + 1) % L[a];
        }
        lm_cdouble v[1024];
        for (int64_t c = 0; c < nc; c++)
            v[c] = 0;
        double wm = 0;
        for (int corner = 0; corner < 8; corner++) {
            double wt = 1;
            int64_t q = 0, stride = 1;
            for (int a = 0; a < 3; a++) {
                int b = (corner >> a) & 1;
                wt *= b ? f[a] : 1 - f[a];
                q += (b ? i1[a] : i0[a]) * stride;
                stride *= L[a];
            }
            if (wt == 0)
                continue;
            int in = 0;
            for (int64_t c = 0; c < nc; c++) {
                v[c] += wt * lm[q + c * nl];
                in |= lm[q + c * nl] != 0;
            }
            wm += in ? wt : 0;
        }
        double nrm = 0;
        for (int64_t c = 0; c < nc; c++)
            nrm += creal(v[c] * conj(v[c]));
        nrm = sqrt(nrm);
        int on = wm >= 0.5 && nrm > 0;
        kept += on;
        for (int64_t c = 0; c < nc; c++)
            s->s[vox + c * nv] = on ? (lm_cfloat)(v[c] / nrm) : 0;
    }
    if (info)
        info->mask_fraction = (double)kept / (double)nv;
    *out = s;
    s = NULL;
done:
    lm_sens_free(s);
    for (int a = 0; a < 3; a++)
        free(mat[a]);
    free(img);
    free(cov);
    free(lm);
    free(rss);
    free(u);
    return rc;
}
