/* Regularisers W^H W and anatomical edge weights (lm_reg.h). */
#include "lm_reg.h"

#include <complex.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

void lm_reg_apply(const int64_t n[3], lm_reg_kind kind, const float *edge_weights,
                  const lm_cfloat *x, lm_cfloat *y, int threads)
{
    const int64_t n0 = n[0], n1 = n[1], n2 = n[2];
    const int64_t total = n0 * n1 * n2;
    const int nt = threads > 0 ? threads : omp_get_max_threads();
    const int par = total >= 32768; /* small volumes: a barrier costs more than the work */

    if (kind == LM_REG_IDENTITY || kind == LM_REG_WAVELET) {
#pragma omp parallel for num_threads(nt) schedule(static) if (par)
        for (int64_t j = 0; j < total; j++)
            y[j] = x[j];
        return;
    }

    const float *wx = NULL, *wy = NULL, *wz = NULL;
    if (lm_reg_weighted(kind) && edge_weights) {
        wx = edge_weights;
        wy = edge_weights + total;
        wz = edge_weights + 2 * total;
    }
    const int64_t sy = n0, sz = n0 * n1;

    /* Each voxel gathers its own differences, so no write conflicts:
     * y_i = sum over neighbours j of w_ij (x_i - x_j), w_ij the weight of
     * the forward difference that joins them. */
#pragma omp parallel for num_threads(nt) collapse(2) schedule(static) if (par)
    for (int64_t k = 0; k < n2; k++)
        for (int64_t j = 0; j < n1; j++) {
            int64_t row = k * sz + j * sy;
            for (int64_t i = 0; i < n0; i++) {
                int64_t v = row + i;
                float xr = crealf(x[v]), xi = cimagf(x[v]);
                float ar = 0, ai = 0;
#define LM_EDGE(nb, w)                                  \
    do {                                                \
        float w_ = (w);                                 \
        ar += w_ * (xr - crealf(x[nb]));                \
        ai += w_ * (xi - cimagf(x[nb]));                \
    } while (0)
                if (i + 1 < n0) LM_EDGE(v + 1, wx ? wx[v] : 1.0f);
                if (i > 0) LM_EDGE(v - 1, wx ? wx[v - 1] : 1.0f);
                if (j + 1 < n1) LM_EDGE(v + sy, wy ? wy[v] : 1.0f);
                if (j > 0) LM_EDGE(v - sy, wy ? wy[v - sy] : 1.0f);
                if (k + 1 < n2) LM_EDGE(v + sz, wz ? wz[v] : 1.0f);
                if (k > 0) LM_EDGE(v - sz, wz ? wz[v - sz] : 1.0f);
#undef LM_EDGE
                y[v] = CMPLXF(ar, ai);
            }
        }
}

static int64_t nearest(int64_t i, int64_t n, int64_t r)
{
    /* Voxel i sits at (i - n/2)/n of the FOV; the reference voxel at the
     * same place is i r / n, rounded. */
    int64_t j = (int64_t)floor((double)i * (double)r / (double)n + 0.5);
    return j < 0 ? 0 : j >= r ? r - 1 : j;
}

lm_code lm_reg_anatomical_weights(const lm_volume *ref, const int64_t n[3], double edge_frac,
                                  float **weights, lm_error *err)
{
    if (!ref || !ref->data || !weights)
        return lm_fail(err, LM_ERR_INVALID, "anatomical reference: missing");
    if (!(edge_frac > 0) || !isfinite(edge_frac))
        return lm_fail(err, LM_ERR_INVALID, "anatomical reference: edge fraction %g must be > 0", edge_frac);
    size_t total = 1;
    for (int a = 0; a < 3; a++)
        if (n[a] <= 0 || ref->dims[a] <= 0 || !lm_size_mul(total, (size_t)n[a], &total))
            return lm_fail(err, LM_ERR_INVALID, "anatomical reference: invalid size");
    size_t w_count;
    if (!lm_size_mul(total, 3, &w_count))
        return lm_fail(err, LM_ERR_NOMEM, "anatomical reference: size is absurd");

    float *mag = lm_alloc(total, sizeof(float), err, "anatomical reference");
    if (!mag)
        return err ? err->code : LM_ERR_NOMEM;
    float *w = lm_alloc(w_count, sizeof(float), err, "anatomical weights");
    if (!w) {
        free(mag);
        return err ? err->code : LM_ERR_NOMEM;
    }

    const int64_t *rd = ref->dims;
    double peak = 0;
    for (int64_t k = 0; k < n[2]; k++) {
        int64_t rk = nearest(k, n[2], rd[2]);
        for (int64_t j = 0; j < n[1]; j++) {
            int64_t rj = nearest(j, n[1], rd[1]);
            for (int64_t i = 0; i < n[0]; i++) {
                int64_t ri = nearest(i, n[0], rd[0]);
                float m = cabsf(ref->data[ri + rd[0] * (rj + rd[1] * rk)]);
                if (!isfinite(m)) {
                    free(mag);
                    free(w);
                    return lm_fail(err, LM_ERR_FORMAT, "anatomical reference: voxel (%lld,%lld,%lld) is not finite",
                                   (long long)ri, (long long)rj, (long long)rk);
                }
                mag[i + n[0] * (j + n[1] * k)] = m;
                if (m > peak)
                    peak = m;
            }
        }
    }

    const int64_t stride[3] = {1, n[0], n[0] * n[1]};
    const double scale = peak > 0 ? 1.0 / (edge_frac * peak) : 0.0;
    for (int a = 0; a < 3; a++) {
        float *wa = w + (size_t)a * total;
        for (int64_t k = 0; k < n[2]; k++)
            for (int64_t j = 0; j < n[1]; j++)
                for (int64_t i = 0; i < n[0]; i++) {
                    int64_t v = i + n[0] * (j + n[1] * k);
                    int64_t idx[3] = {i, j, k};
                    if (idx[a] + 1 >= n[a]) {
                        wa[v] = 1.0f; /* no difference past the edge: unused */
                        continue;
                    }
                    double t = fabs((double)mag[v + stride[a]] - mag[v]) * scale;
                    wa[v] = (float)(1.0 / (1.0 + t * t));
                }
    }
    free(mag);
    *weights = w;
    return LM_OK;
}

/* |D_a rho(v)|^2 for the three forward differences at voxel v (0 past the
 * last voxel of an axis). */
static void diffs2(const int64_t n[3], const lm_cfloat *rho, int64_t i, int64_t j, int64_t k, double d2[3])
{
    const int64_t v = i + n[0] * (j + n[1] * k);
    const int64_t idx[3] = {i, j, k}, stride[3] = {1, n[0], n[0] * n[1]};
    for (int a = 0; a < 3; a++) {
        if (idx[a] + 1 >= n[a]) {
            d2[a] = 0;
            continue;
        }
        const double dr = (double)crealf(rho[v + stride[a]]) - crealf(rho[v]);
        const double di = (double)cimagf(rho[v + stride[a]]) - cimagf(rho[v]);
        d2[a] = dr * dr + di * di;
    }
}

/* The penalty of one difference with |D rho|^2 = t2, and its weight
 * psi = phi'(t) / t. */
static double pen_value(lm_robust pen, double t2, double dd)
{
    if (pen == LM_ROBUST_LORENTZIAN)
        return 0.5 * dd * log1p(t2 / dd);
    /* dd (sqrt(1 + t2/dd) - 1) = t2 / (sqrt(1 + t2/dd) + 1): no cancellation */
    return t2 / (sqrt(1 + t2 / dd) + 1);
}

static double pen_weight(lm_robust pen, double t2, double dd)
{
    return pen == LM_ROBUST_LORENTZIAN ? 1 / (1 + t2 / dd) : 1 / sqrt(1 + t2 / dd);
}

double lm_reg_robust_value(const int64_t n[3], const float *edge_weights, lm_robust pen, double delta,
                           const lm_cfloat *rho)
{
    const int64_t total = n[0] * n[1] * n[2];
    const double dd = delta * delta;
    double sum = 0;
    for (int64_t k = 0; k < n[2]; k++)
        for (int64_t j = 0; j < n[1]; j++)
            for (int64_t i = 0; i < n[0]; i++) {
                const int64_t v = i + n[0] * (j + n[1] * k);
                double d2[3];
                diffs2(n, rho, i, j, k, d2);
                for (int a = 0; a < 3; a++)
                    sum += (edge_weights ? edge_weights[a * total + v] : 1.0) * pen_value(pen, d2[a], dd);
            }
    return sum;
}

/* Separable Gaussian of sigma voxels (kernel cut at 3 sigma, renormalised
 * at the borders) along every axis longer than 1. */
static lm_code gauss_smooth(const int64_t n[3], double sigma, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    const int64_t total = n[0] * n[1] * n[2];
    const int r = (int)ceil(3 * sigma);
    double kern[64];
    if (r >= 64)
        return lm_fail(err, LM_ERR_INVALID, "edge smoothing: sigma %g voxels is too large", sigma);
    for (int q = 0; q <= r; q++)
        kern[q] = exp(-0.5 * q * q / (sigma * sigma));
    lm_cfloat *t = lm_alloc((size_t)total, sizeof *t, err, "edge smoothing");
    if (!t)
        return LM_ERR_NOMEM;
    memcpy(y, x, (size_t)total * sizeof *y);
    const int64_t stride[3] = {1, n[0], n[0] * n[1]};
    for (int a = 0; a < 3; a++) {
        if (n[a] < 2)
            continue;
        memcpy(t, y, (size_t)total * sizeof *t);
#pragma omp parallel for schedule(static) if (total >= 32768)
        for (int64_t v = 0; v < total; v++) {
            const int64_t pos = (v / stride[a]) % n[a];
            double sr = 0, si = 0, sw = 0;
            for (int q = -r; q <= r; q++) {
                const int64_t p = pos + q;
                if (p < 0 || p >= n[a])
                    continue;
                const double w = kern[q < 0 ? -q : q];
                const lm_cfloat z = t[v + q * stride[a]];
                sr += w * crealf(z);
                si += w * cimagf(z);
                sw += w;
            }
            y[v] = CMPLXF((float)(sr / sw), (float)(si / sw));
        }
    }
    free(t);
    return LM_OK;
}

lm_code lm_reg_robust_weights(const int64_t n[3], const float *edge_weights, lm_robust pen, double delta,
                              double sigma_vox, const lm_cfloat *rho, float *out, int threads, lm_error *err)
{
    if (!(delta > 0) || !isfinite(delta) || !(sigma_vox >= 0) || !isfinite(sigma_vox))
        return lm_fail(err, LM_ERR_INVALID, "reweighting: scale %g or smoothing %g is invalid", delta, sigma_vox);
    const int64_t total = n[0] * n[1] * n[2];
    lm_cfloat *sm = NULL;
    if (sigma_vox > 0) {
        if (!(sm = lm_alloc((size_t)total, sizeof *sm, err, "edge smoothing")))
            return LM_ERR_NOMEM;
        lm_code rc = gauss_smooth(n, sigma_vox, rho, sm, err);
        if (rc != LM_OK) {
            free(sm);
            return rc;
        }
        rho = sm;
    }
    const int nt = threads > 0 ? threads : omp_get_max_threads();
    const double dd = delta * delta;
#pragma omp parallel for num_threads(nt) collapse(2) schedule(static) if (total >= 32768)
    for (int64_t k = 0; k < n[2]; k++)
        for (int64_t j = 0; j < n[1]; j++)
            for (int64_t i = 0; i < n[0]; i++) {
                const int64_t v = i + n[0] * (j + n[1] * k);
                double d2[3];
                diffs2(n, rho, i, j, k, d2);
                for (int a = 0; a < 3; a++) {
                    const double w = edge_weights ? edge_weights[a * total + v] : 1.0;
                    out[a * total + v] = (float)(w * pen_weight(pen, d2[a], dd));
                }
            }
    free(sm);
    return LM_OK;
}
