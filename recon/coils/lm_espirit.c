/* ESPIRiT coil maps (Uecker et al., MRM 71:990, 2014; BART's ecalib is the
 * reference for the defaults and the phase rotation).
 *
 * Calibration matrix A: one row per kernel-sized patch of the calibration
 * grid, columns (coil, kernel offset kappa). Its row space (the conjugates
 * of the right singular vectors V|| above the threshold) spans every patch,
 * so with the projector P = conj(V|| V||^H) and K kernel points
 *
 *   y_c(k) = (1/K) sum_{kappa, c', kappa'} P[(c,kappa),(c',kappa')] y_c'(k - kappa + kappa'),
 *
 * a convolution; with y(k) = sum_x m(x) exp(-i 2 pi k.x) it is, per voxel,
 * m(x) = G(x) m(x) with the C x C matrix
 *
 *   G_cc'(x) = sum_delta g_cc'(delta) exp(+i 2 pi delta.x),
 *   g_cc'(delta) = (1/K) sum_kappa' P[(c, kappa'+delta), (c', kappa')],
 *
 * whose eigenvector of eigenvalue ~1 is the coil-sensitivity vector s(x).
 *
 * Cost: A^H A is accumulated from patch correlations per (coil pair, shift)
 * with sliding-window sums (cal^dim per pair and shift, instead of
 * patches x N^2); its eigenvectors above the threshold come from LAPACK
 * zheevr (the N^3 tridiagonal reduction dominates: N = C K = 1000, 8 coils
 * and a 5^3 kernel, takes ~1.5 s with reference LAPACK, 6^3 ~5x that,
 * which is why 3D defaults to kernel 5). G(x) is evaluated exactly (its
 * band is only 2 kernel - 1 wide) by separable DFTs one z slice at a time,
 * and each voxel's largest eigenpair again by zheevr. */
#include "lm_coils_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_kernels.h"

#define LM_ESPIRIT_MAX_N 2048 /* C x K beyond this: compress coils first */

typedef struct esp {
    int64_t cn[3], kk[3], L[3], D[3];
    int64_t nc, nk, N, npairs;
    const lm_cdouble *y;
    lm_cdouble *h; /* N x N Gram, column-major */
} esp;

static inline int64_t kidx(const esp *e, int64_t a0, int64_t a1, int64_t a2)
{
    return a0 + e->kk[0] * (a1 + e->kk[1] * a2);
}

/* Gram entries H[(c,kappa),(c2,kappa+delta)] for every valid kappa:
 *   sum over patch origins r of conj(y_c(r+kappa)) y_c2(r+kappa+delta). */
static void gram_shift(const esp *e, int64_t c, int64_t c2, const int64_t dl[3], lm_cdouble *buf)
{
    int64_t lo[3], hi[3]; /* valid kappa: [lo, hi) per axis */
    for (int a = 0; a < 3; a++) {
        lo[a] = dl[a] < 0 ? -dl[a] : 0;
        hi[a] = dl[a] > 0 ? e->kk[a] - dl[a] : e->kk[a];
    }
    int64_t n0 = e->cn[0], n1 = e->cn[1];
    int64_t nk0 = hi[0] - lo[0], nk1 = hi[1] - lo[1], nk2 = hi[2] - lo[2];
    /* rows q1, q2 needed: [lo, hi - 1 + L) */
    int64_t q1lo = lo[1], q1n = nk1 - 1 + e->L[1], q2lo = lo[2], q2n = nk2 - 1 + e->L[2];
    const lm_cdouble *ya = e->y + c * e->cn[0] * e->cn[1] * e->cn[2];
    const lm_cdouble *yb = e->y + c2 * e->cn[0] * e->cn[1] * e->cn[2];
    /* buf: sx[k0][q1][q2] then sxy[k0][k1][q2] in place of the first part */
    lm_cdouble *sx = buf, *sxy = buf + nk0 * q1n * q2n;
    lm_cdouble row[512];
    for (int64_t i2 = 0; i2 < q2n; i2++)
        for (int64_t i1 = 0; i1 < q1n; i1++) {
            int64_t q1 = q1lo + i1, q2 = q2lo + i2;
            const lm_cdouble *ra = ya + n0 * (q1 + n1 * q2);
            const lm_cdouble *rb = yb + n0 * (q1 + dl[1] + n1 * (q2 + dl[2])) + dl[0];
            int64_t q0n = nk0 - 1 + e->L[0];
            for (int64_t i0 = 0; i0 < q0n; i0++)
                row[i0] = conj(ra[lo[0] + i0]) * rb[lo[0] + i0];
            lm_cdouble s = 0;
            for (int64_t i0 = 0; i0 < e->L[0]; i0++)
                s += row[i0];
            for (int64_t k0 = 0; k0 < nk0; k0++) {
                if (k0 > 0)
                    s += row[k0 - 1 + e->L[0]] - row[k0 - 1];
                sx[(k0 * q1n + i1) * q2n + i2] = s;
            }
        }
    for (int64_t k0 = 0; k0 < nk0; k0++)
        for (int64_t i2 = 0; i2 < q2n; i2++) {
            lm_cdouble s = 0;
            for (int64_t i1 = 0; i1 < e->L[1]; i1++)
                s += sx[(k0 * q1n + i1) * q2n + i2];
            for (int64_t k1 = 0; k1 < nk1; k1++) {
                if (k1 > 0)
                    s += sx[(k0 * q1n + k1 - 1 + e->L[1]) * q2n + i2] - sx[(k0 * q1n + k1 - 1) * q2n + i2];
                sxy[(k0 * nk1 + k1) * q2n + i2] = s;
            }
        }
    for (int64_t k0 = 0; k0 < nk0; k0++)
        for (int64_t k1 = 0; k1 < nk1; k1++) {
            const lm_cdouble *col = sxy + (k0 * nk1 + k1) * q2n;
            lm_cdouble s = 0;
            for (int64_t i2 = 0; i2 < e->L[2]; i2++)
                s += col[i2];
            for (int64_t k2 = 0; k2 < nk2; k2++) {
                if (k2 > 0)
                    s += col[k2 - 1 + e->L[2]] - col[k2 - 1];
                int64_t i = c * e->nk + kidx(e, lo[0] + k0, lo[1] + k1, lo[2] + k2);
                int64_t j = c2 * e->nk + kidx(e, lo[0] + k0 + dl[0], lo[1] + k1 + dl[1], lo[2] + k2 + dl[2]);
                /* H_ij = sum conj(A_ri) A_rj; column-major */
                e->h[i + e->N * j] = s;
                e->h[j + e->N * i] = conj(s);
            }
        }
}

static lm_code build_gram(esp *e, int threads, lm_error *err)
{
    int64_t nd = e->D[0] * e->D[1] * e->D[2];
    int64_t ntask = e->nc * e->nc * nd;
    size_t bufn = (size_t)(e->kk[0] * e->cn[1] * e->cn[2] * 2);
    int failed = 0;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        lm_cdouble *buf = malloc(bufn * sizeof *buf);
        if (!buf) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 4)
        for (int64_t q = 0; q < ntask; q++) {
            if (!buf)
                continue;
            int64_t di = q % nd, c = (q / nd) % e->nc, c2 = q / (nd * e->nc);
            if (c2 < c)
                continue;
            /* same coil: one of delta and -delta (their entries mirror) */
            if (c2 == c && di < nd / 2)
                continue;
            int64_t dl[3] = {di % e->D[0] - (e->kk[0] - 1), (di / e->D[0]) % e->D[1] - (e->kk[1] - 1),
                             di / (e->D[0] * e->D[1]) - (e->kk[2] - 1)};
            gram_shift(e, c, c2, dl, buf);
        }
        free(buf);
    }
    return failed ? lm_fail(err, LM_ERR_NOMEM, "ESPIRiT: out of memory for the calibration matrix") : LM_OK;
}

/* Largest eigenvalue of the Gram by power iteration (only the threshold
 * needs it, to a few digits). */
static double gram_top(const esp *e, lm_cdouble *v, lm_cdouble *t)
{
    int64_t N = e->N;
    for (int64_t i = 0; i < N; i++)
        v[i] = 1.0 + 0.01 * (double)(i % 7);
    double lam = 0;
    for (int it = 0; it < 60; it++) {
        double nrm = 0;
        for (int64_t i = 0; i < N; i++)
            nrm += creal(v[i] * conj(v[i]));
        nrm = sqrt(nrm);
        if (!(nrm > 0))
            return 0;
        for (int64_t i = 0; i < N; i++)
            v[i] /= nrm;
        memset(t, 0, (size_t)N * sizeof *t);
        for (int64_t j = 0; j < N; j++) {
            lm_cdouble vj = v[j];
            const lm_cdouble *col = e->h + N * j;
            for (int64_t i = 0; i < N; i++)
                t[i] += col[i] * vj;
        }
        lm_cdouble r = 0;
        for (int64_t i = 0; i < N; i++)
            r += conj(v[i]) * t[i];
        lam = creal(r);
        memcpy(v, t, (size_t)N * sizeof *t);
    }
    return lam;
}

lm_code lm_espirit_maps(const lm_calib *cal, const int64_t n[3], int kernel, double thresh,
                        double crop, const lm_ctl *ctl, lm_sens **out, lm_sens_est_info *info,
                        lm_error *err)
{
    if (!cal || !cal->y || !n || !out)
        return lm_fail(err, LM_ERR_INVALID, "ESPIRiT: missing calibration data");
    *out = NULL;
    int dim = n[2] == 1 ? 2 : 3;
    if (kernel < 2)
        return lm_fail(err, LM_ERR_INVALID, "ESPIRiT: kernel size %d is below 2", kernel);
    if (!(thresh > 0 && thresh < 1))
        return lm_fail(err, LM_ERR_INVALID, "ESPIRiT: threshold %g is not in (0, 1)", thresh);
    if (!(crop >= 0 && crop < 1))
        return lm_fail(err, LM_ERR_INVALID, "ESPIRiT: crop %g is not in [0, 1)", crop);
    esp e;
    memset(&e, 0, sizeof e);
    e.nc = cal->ncoils;
    e.y = cal->y;
    e.nk = 1;
    for (int a = 0; a < 3; a++) {
        e.cn[a] = cal->n[a];
        if (a >= dim) {
            if (e.cn[a] != 1)
                return lm_fail(err, LM_ERR_INVALID, "ESPIRiT: 2D image but 3D calibration data");
            e.kk[a] = 1;
        } else {
            if (e.cn[a] < 4)
                return lm_fail(err, LM_ERR_INVALID, "ESPIRiT: calibration size %lld along axis %d is below 4",
                               (long long)e.cn[a], a);
            /* at least two patch positions per axis */
            e.kk[a] = kernel < e.cn[a] - 1 ? kernel : e.cn[a] - 1;
        }
        e.L[a] = e.cn[a] - e.kk[a] + 1;
        e.D[a] = 2 * e.kk[a] - 1;
        e.nk *= e.kk[a];
    }
    if (e.cn[0] > 500)
        return lm_fail(err, LM_ERR_INVALID, "ESPIRiT: calibration size %lld is too large", (long long)e.cn[0]);
    e.N = e.nc * e.nk;
    e.npairs = e.nc * (e.nc + 1) / 2;
    if (info)
        info->kernels_total = e.N;
    if (e.N > LM_ESPIRIT_MAX_N)
        return lm_fail(err, LM_ERR_UNSUPPORTED,
                       "ESPIRiT: %lld channels x %lld kernel points is too large an eigenproblem (max %d): compress coils first",
                       (long long)e.nc, (long long)e.nk, LM_ESPIRIT_MAX_N);
    int64_t ncal = e.cn[0] * e.cn[1] * e.cn[2];
    double energy = 0;
    for (int64_t i = 0; i < ncal * e.nc; i++) {
        if (!isfinite(creal(e.y[i])) || !isfinite(cimag(e.y[i])))
            return lm_fail(err, LM_ERR_FORMAT, "ESPIRiT: calibration data hold a NaN or Inf");
        energy += creal(e.y[i] * conj(e.y[i]));
    }
    if (!(energy > 0))
        return lm_fail(err, LM_ERR_INVALID, "ESPIRiT: the calibration data have no energy");
    int threads = lm_ctl_threads(ctl);
    lm_code rc = LM_OK;
    int64_t N = e.N, D3 = e.D[0] * e.D[1] * e.D[2];
    lm_cdouble *z = NULL, *zr = NULL, *gk = NULL, *u = NULL, *slice = NULL, *mat[3] = {NULL, NULL, NULL};
    double *ev = NULL;
    lapack_int *isuppz = NULL;
    lm_sens *s = NULL;
    u = lm_alloc((size_t)e.nc, sizeof *u, err, "ESPIRiT");
    e.h = lm_calloc((size_t)(N * N), sizeof(lm_cdouble), err, "ESPIRiT Gram matrix");
    z = lm_alloc((size_t)(N * N), sizeof(lm_cdouble), err, "ESPIRiT eigenvectors");
    ev = lm_alloc((size_t)N, sizeof(double), err, "ESPIRiT");
    isuppz = lm_alloc((size_t)(2 * N), sizeof(lapack_int), err, "ESPIRiT");
    if (!u || !e.h || !z || !ev || !isuppz) {
        rc = LM_ERR_NOMEM;
        goto done;
    }
    if ((rc = lm_calib_principal(cal, u, err)) != LM_OK)
        goto done;
    if ((rc = build_gram(&e, threads, err)) != LM_OK)
        goto done;
    if (lm_ctl_report(ctl, 0.1)) {
        rc = lm_fail(err, LM_ERR_CANCELLED, "ESPIRiT: cancelled");
        goto done;
    }
    /* signal space: eigenvalues of A^H A above thresh x the largest (BART) */
    double lmax = gram_top(&e, z, z + N);
    if (!(lmax > 0)) {
        rc = lm_fail(err, LM_ERR_INVALID, "ESPIRiT: the calibration data have no energy");
        goto done;
    }
    double tr = 0;
    for (int64_t i = 0; i < N; i++)
        tr += creal(e.h[i + N * i]);
    lapack_int r = 0;
    lapack_int info_l = LAPACKE_zheevr(LAPACK_COL_MAJOR, 'V', 'V', 'L', (lapack_int)N, e.h, (lapack_int)N,
                                       thresh * lmax, 2.0 * tr, 0, 0, 0, &r, ev, z, (lapack_int)N, isuppz);
    if (info_l != 0 || r < 1) {
        rc = lm_fail(err, LM_ERR_INTERNAL, "ESPIRiT: eigen-decomposition of the calibration matrix failed (%d, %d kept)",
                     (int)info_l, (int)r);
        goto done;
    }
    if (info)
        info->kernels_kept = r;
    if (lm_ctl_report(ctl, 0.3)) {
        rc = lm_fail(err, LM_ERR_CANCELLED, "ESPIRiT: cancelled");
        goto done;
    }
    /* rows of V|| contiguous: zr[i r + l] = V_il */
    zr = lm_alloc((size_t)(N * r), sizeof *zr, err, "ESPIRiT");
    gk = lm_calloc((size_t)(e.npairs * D3), sizeof *gk, err, "ESPIRiT");
    if (!zr || !gk) {
        rc = LM_ERR_NOMEM;
        goto done;
    }
    for (int64_t i = 0; i < N; i++)
        for (int64_t l = 0; l < r; l++)
            zr[i * r + l] = z[i + N * l];
    /* g_cc'(delta) = (1/K) sum_kappa' P[(c, kappa'+delta), (c', kappa')]. The rows of
     * A = U S V^H are combinations of conj(v_l), so the patches' projector is
     * P_ij = sum_l conj(V_il) V_jl. */
    {
        int64_t nc = e.nc;
#pragma omp parallel for num_threads(threads) schedule(dynamic) if (threads > 1)
        for (int64_t q = 0; q < nc * nc * D3; q++) {
            int64_t di = q % D3, c = (q / D3) % nc, c2 = q / (D3 * nc);
            if (c2 < c)
                continue;
            int64_t dl[3] = {di % e.D[0] - (e.kk[0] - 1), (di / e.D[0]) % e.D[1] - (e.kk[1] - 1),
                             di / (e.D[0] * e.D[1]) - (e.kk[2] - 1)};
            lm_cdouble acc = 0;
            for (int64_t b2 = 0; b2 < e.kk[2]; b2++) {
                int64_t a2 = b2 + dl[2];
                if (a2 < 0 || a2 >= e.kk[2])
                    continue;
                for (int64_t b1 = 0; b1 < e.kk[1]; b1++) {
                    int64_t a1 = b1 + dl[1];
                    if (a1 < 0 || a1 >= e.kk[1])
                        continue;
                    for (int64_t b0 = 0; b0 < e.kk[0]; b0++) {
                        int64_t a0 = b0 + dl[0];
                        if (a0 < 0 || a0 >= e.kk[0])
                            continue;
                        const lm_cdouble *vi = zr + (c * e.nk + kidx(&e, a0, a1, a2)) * r;
                        const lm_cdouble *vj = zr + (c2 * e.nk + kidx(&e, b0, b1, b2)) * r;
                        for (int64_t l = 0; l < r; l++)
                            acc += conj(vi[l]) * vj[l];
                    }
                }
            }
            int64_t p = c * nc - c * (c - 1) / 2 + (c2 - c);
            gk[p * D3 + di] = acc / (double)e.nk;
        }
    }
    free(z);
    z = NULL;
    free(e.h);
    e.h = NULL;

    s = lm_sens_new(n, e.nc, err);
    if (!s) {
        rc = LM_ERR_NOMEM;
        goto done;
    }
    int64_t nxy = n[0] * n[1], nv = nxy * n[2];
    slice = lm_alloc((size_t)(nxy * e.npairs), sizeof *slice, err, "ESPIRiT");
    for (int a = 0; a < 3; a++)
        mat[a] = lm_alloc((size_t)(n[a] * e.D[a]), sizeof(lm_cdouble), err, "ESPIRiT");
    if (!slice || !mat[0] || !mat[1] || !mat[2]) {
        rc = LM_ERR_NOMEM;
        goto done;
    }
    for (int a = 0; a < 3; a++)
        for (int64_t j = 0; j < n[a]; j++)
            for (int64_t d = 0; d < e.D[a]; d++)
                mat[a][j * e.D[a] + d] = lm_cis(+1.0, (double)(d - (e.kk[a] - 1)) * lm_voxel_pos(j, n[a]));
    int64_t masked = 0;
    int eig_fail = 0;
    for (int64_t iz = 0; iz < n[2] && rc == LM_OK; iz++) {
        int64_t o[3] = {n[0], n[1], 1};
        const lm_cdouble *m3[3] = {mat[0], mat[1], mat[2] + iz * e.D[2]};
        rc = lm_sep3(e.D, o, m3, e.npairs, gk, slice, threads, err);
        if (rc != LM_OK)
            break;
        int64_t nc = e.nc;
#pragma omp parallel num_threads(threads) reduction(+ : masked) if (threads > 1)
        {
            lm_eig_ws ws;
            int ok = lm_eig_ws_init(&ws, nc) == 0;
            lm_cdouble v[1024];
#pragma omp for schedule(dynamic, 64)
            for (int64_t q = 0; q < nxy; q++) {
                if (!ok)
                    continue;
                for (int64_t j = 0; j < nc; j++)
                    for (int64_t i = j; i < nc; i++) {
                        /* lower (i >= j): G_ij = conj(G_ji), stored pair (j, i) */
                        int64_t p = j * nc - j * (j - 1) / 2 + (i - j);
                        ws.a[i + nc * j] = conj(slice[p * nxy + q]);
                    }
                double lam = 0;
                int64_t vox = q + iz * nxy;
                if (lm_eig_top(&ws, &lam, v) != 0) {
#pragma omp atomic write
                    eig_fail = 1;
                    continue;
                }
                if (!(lam >= crop) || lam <= 0) {
                    masked++;
                    for (int64_t c = 0; c < nc; c++)
                        s->s[vox + c * nv] = 0;
                    continue;
                }
                lm_phase_ref(v, u, nc);
                for (int64_t c = 0; c < nc; c++)
                    s->s[vox + c * nv] = (lm_cfloat)v[c];
            }
            if (!ok) {
#pragma omp atomic write
                eig_fail = 1;
            }
            lm_eig_ws_free(&ws);
        }
        if (eig_fail) {
            rc = lm_fail(err, LM_ERR_INTERNAL, "ESPIRiT: a voxel's eigen-decomposition failed");
            break;
        }
        if (lm_ctl_report(ctl, 0.3 + 0.7 * (double)(iz + 1) / (double)n[2]))
            rc = lm_fail(err, LM_ERR_CANCELLED, "ESPIRiT: cancelled");
    }
    if (rc == LM_OK) {
        if (info)
            info->mask_fraction = 1.0 - (double)masked / (double)nv;
        *out = s;
        s = NULL;
    }
done:
    lm_sens_free(s);
    free(e.h);
    free(z);
    free(zr);
    free(gk);
    free(u);
    free(ev);
    free(isuppz);
    free(slice);
    for (int a = 0; a < 3; a++)
        free(mat[a]);
    return rc;
}
