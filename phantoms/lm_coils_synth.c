/* Synthetic coil sensitivities as low-order Fourier series, fitted once to
 * head-coil-like target profiles, and the exact multi-coil k-space they
 * give with an analytic phantom. See lm_coils_synth.h for the model.
 *
 * Fit. Minimise sum_p w_p |sum_j a_j e_j(x_p) - t(x_p)|^2
 *             + mu W sum_j (1 + |f_j|^2) |a_j|^2,   e_j(x) = exp(+i 2 pi f_j.x),
 * on a G^dim grid of the FOV (W = sum_p w_p). The normal matrix is
 *     N_jl = sum_p w_p exp(-i 2 pi (f_j - f_l).x_p) = What(f_j - f_l),
 * a low-frequency DFT of the weights, and the right-hand side a low-frequency
 * DFT of w t, so both come from separable sums and the J x J Hermitian
 * positive definite system is solved by Cholesky in double. Weight 1 over
 * the head, FIT_OUT outside it (the series is periodic over the FOV and
 * cannot follow a target that is not, so it is held loosely there); the
 * ridge, heavier on high frequencies, keeps the series smooth. */
#include "lm_coils_synth.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ORDER_3D 2
#define ORDER_2D 3
#define FIT_GRID_3D 32
#define FIT_GRID_2D 64
/* Coil centres on an elliptic cylinder just outside the phantom's skull
 * (semi-axes 0.345 x 0.46 x 0.405 FOV); rings spread over RING_SPAN in z. */
#define COIL_RX 0.44
#define COIL_RY 0.52
#define RING_SPAN 0.5
/* Target: 1 / (1 + d^2 / WIDTH^2), phase ramp of RAMP cycles/FOV along
 * the coil's tangent. */
#define WIDTH 0.3
#define RAMP 0.3
/* Fit region: the head ellipsoid, a little enlarged (inside the FOV). */
#define FIT_RX 0.38
#define FIT_RY 0.48
#define FIT_RZ 0.44
#define FIT_OUT 0.01
#define RIDGE 1e-4

/* ---- design --------------------------------------------------------------- */

/* Rings by coil count: a single ring up to 8 coils (an 8-channel head coil),
 * then 2, 3 or 4 rings, alternate rings rotated by half a step. */
static int ring_count(int dim, int64_t C)
{
    if (dim == 2 || C <= 8)
        return 1;
    return C <= 16 ? 2 : C <= 40 ? 3 : 4;
}

typedef struct coil_design {
    double p[3];   /* centre */
    double tg[3];  /* unit tangent (phase ramp direction) */
    double theta;  /* phase offset */
} coil_design;

static void layout(int dim, int64_t C, coil_design *cd)
{
    const int rings = ring_count(dim, C);
    int64_t c = 0;
    for (int r = 0; r < rings; r++) {
        int64_t nr = C / rings + (r < C % rings);
        double z = dim == 2 || rings == 1 ? 0.0 : RING_SPAN * ((r + 0.5) / rings - 0.5);
        for (int64_t i = 0; i < nr; i++, c++) {
            double az = 2 * M_PI * ((double)i + 0.5 * (r % 2)) / (double)nr;
            cd[c].p[0] = COIL_RX * cos(az);
            cd[c].p[1] = COIL_RY * sin(az);
            cd[c].p[2] = z;
            cd[c].tg[0] = -sin(az);
            cd[c].tg[1] = cos(az);
            cd[c].tg[2] = 0;
            /* Phase offsets 2 pi slot / C, slots i rings + r: a permutation
             * of 0..C-1 that follows the azimuth within each ring. */
            cd[c].theta = 2 * M_PI * (double)(i * rings + r) / (double)C;
        }
    }
}

static double complex target(const coil_design *cd, double x, double y, double z)
{
    double dx = x - cd->p[0], dy = y - cd->p[1], dz = z - cd->p[2];
    double mag = 1.0 / (1.0 + (dx * dx + dy * dy + dz * dz) / (WIDTH * WIDTH));
    double ph = cd->theta + 2 * M_PI * RAMP * (cd->tg[0] * dx + cd->tg[1] * dy + cd->tg[2] * dz);
    return mag * cexp(I * ph);
}

/* ---- low-frequency DFT on the fit grid --------------------------------------
 * out[f] = sum_p u_p exp(-i 2 pi f.x_p), f in [-K, K]^dim (fx fastest; in 2D
 * fz = 0 only), u on G x G x gz (gz = 1 in 2D), x fastest. Separable. */
static lm_code lowdft(const double complex *u, int G, int dim, int K, double complex *out, lm_error *err)
{
    const int L = 2 * K + 1, gz = dim == 3 ? G : 1, lz = dim == 3 ? L : 1;
    double complex *e = lm_alloc((size_t)L * G, sizeof *e, err, "coil fit tables");
    double complex *t1 = e ? lm_calloc((size_t)L * G * gz, sizeof *t1, err, "coil fit") : NULL;
    double complex *t2 = t1 ? lm_calloc((size_t)L * L * gz, sizeof *t2, err, "coil fit") : NULL;
    if (!t2) {
        free(e);
        free(t1);
        return err ? err->code : LM_ERR_NOMEM;
    }
    for (int f = -K; f <= K; f++)
        for (int i = 0; i < G; i++)
            e[(f + K) * G + i] = cexp(-2 * M_PI * I * f * lm_voxel_pos(i, G));
    /* t1[fx, iy, iz] = sum_ix u e(fx, ix) */
    for (int64_t row = 0; row < (int64_t)G * gz; row++)
        for (int fx = 0; fx < L; fx++) {
            double complex s = 0;
            for (int ix = 0; ix < G; ix++)
                s += u[row * G + ix] * e[fx * G + ix];
            t1[row * L + fx] = s;
        }
    /* t2[fx, fy, iz] = sum_iy t1[fx, iy, iz] e(fy, iy) */
    for (int iz = 0; iz < gz; iz++)
        for (int fy = 0; fy < L; fy++)
            for (int fx = 0; fx < L; fx++) {
                double complex s = 0;
                for (int iy = 0; iy < G; iy++)
                    s += t1[((int64_t)iz * G + iy) * L + fx] * e[fy * G + iy];
                t2[((int64_t)iz * L + fy) * L + fx] = s;
            }
    /* out[fx, fy, fz] = sum_iz t2[fx, fy, iz] e(fz, iz) */
    for (int fz = 0; fz < lz; fz++)
        for (int fxy = 0; fxy < L * L; fxy++) {
            double complex s = 0;
            if (dim == 3)
                for (int iz = 0; iz < gz; iz++)
                    s += t2[(int64_t)iz * L * L + fxy] * e[fz * G + iz];
            else
                s = t2[fxy];
            out[(int64_t)fz * L * L + fxy] = s;
        }
    free(e);
    free(t1);
    free(t2);
    return LM_OK;
}

/* Solves A X = B in place (A: J x J Hermitian positive definite, row-major,
 * its lower triangle overwritten by the Cholesky factor; B: nrhs right-hand
 * sides of J, each contiguous). Returns 0 if A is not positive definite. */
static int cholesky_solve(double complex *A, int64_t J, double complex *B, int64_t nrhs)
{
    for (int64_t j = 0; j < J; j++) {
        double d = creal(A[j * J + j]);
        for (int64_t k = 0; k < j; k++)
            d -= creal(A[j * J + k] * conj(A[j * J + k]));
        if (!(d > 0))
            return 0;
        double ljj = sqrt(d);
        A[j * J + j] = ljj;
        for (int64_t i = j + 1; i < J; i++) {
            double complex s = A[i * J + j];
            for (int64_t k = 0; k < j; k++)
                s -= A[i * J + k] * conj(A[j * J + k]);
            A[i * J + j] = s / ljj;
        }
    }
    for (int64_t r = 0; r < nrhs; r++) {
        double complex *b = B + r * J;
        for (int64_t i = 0; i < J; i++) { /* L y = b */
            double complex s = b[i];
            for (int64_t k = 0; k < i; k++)
                s -= A[i * J + k] * b[k];
            b[i] = s / creal(A[i * J + i]);
        }
        for (int64_t i = J - 1; i >= 0; i--) { /* L^H x = y */
            double complex s = b[i];
            for (int64_t k = i + 1; k < J; k++)
                s -= conj(A[k * J + i]) * b[k];
            b[i] = s / creal(A[i * J + i]);
        }
    }
    return 1;
}

void lm_coils_synth_free(lm_coils_synth *cs)
{
    if (cs) {
        free(cs->freq);
        free(cs->a);
        free(cs->pos);
        free(cs);
    }
}

lm_code lm_coils_synth_make(int dim, int64_t ncoils, lm_coils_synth **out, lm_error *err)
{
    if (!out)
        return lm_fail(err, LM_ERR_INVALID, "coil synthesis: no output");
    *out = NULL;
    if (dim != 2 && dim != 3)
        return lm_fail(err, LM_ERR_INVALID, "coil synthesis: dimension %d is not 2 or 3", dim);
    if (ncoils < 1 || ncoils > LM_COILS_SYNTH_MAX)
        return lm_fail(err, LM_ERR_INVALID, "coil synthesis: %lld coils is out of range (1..%d)",
                       (long long)ncoils, LM_COILS_SYNTH_MAX);
    const int K = dim == 3 ? ORDER_3D : ORDER_2D, L = 2 * K + 1, L2 = 2 * (2 * K) + 1;
    const int64_t J = dim == 3 ? (int64_t)L * L * L : (int64_t)L * L;
    const int G = dim == 3 ? FIT_GRID_3D : FIT_GRID_2D, gz = dim == 3 ? G : 1;
    const int64_t P = (int64_t)G * G * gz, C = ncoils;

    lm_code rc = LM_ERR_NOMEM;
    lm_coils_synth *cs = lm_calloc(1, sizeof *cs, err, "coil synthesis");
    coil_design *cd = lm_calloc((size_t)C, sizeof *cd, err, "coil synthesis");
    double complex *w = lm_alloc((size_t)P, sizeof *w, err, "coil fit weights");
    double complex *wt = lm_alloc((size_t)P, sizeof *wt, err, "coil fit target");
    double complex *what = lm_alloc((size_t)(dim == 3 ? L2 * L2 * L2 : L2 * L2), sizeof *what, err, "coil fit");
    double complex *N = lm_alloc((size_t)(J * J), sizeof *N, err, "coil fit normal matrix");
    if (!cs || !cd || !w || !wt || !what || !N)
        goto fail;
    cs->dim = dim;
    cs->ncoils = C;
    cs->order = K;
    cs->nterms = J;
    cs->freq = lm_alloc((size_t)J, 3 * sizeof(double), err, "coil synthesis");
    cs->a = lm_alloc((size_t)(C * J), sizeof(double complex), err, "coil synthesis");
    cs->pos = lm_alloc((size_t)C, 3 * sizeof(double), err, "coil synthesis");
    if (!cs->freq || !cs->a || !cs->pos)
        goto fail;
    for (int64_t j = 0; j < J; j++) {
        cs->freq[3 * j] = (double)(j % L - K);
        cs->freq[3 * j + 1] = (double)((j / L) % L - K);
        cs->freq[3 * j + 2] = dim == 3 ? (double)(j / (L * L) - K) : 0.0;
    }
    layout(dim, C, cd);
    for (int64_t c = 0; c < C; c++)
        memcpy(cs->pos + 3 * c, cd[c].p, 3 * sizeof(double));

    /* Weights and the normal matrix N_jl = What(f_j - f_l). */
    double wsum = 0;
    for (int64_t p = 0; p < P; p++) {
        double x = lm_voxel_pos(p % G, G), y = lm_voxel_pos((p / G) % G, G);
        double z = dim == 3 ? lm_voxel_pos(p / ((int64_t)G * G), G) : 0.0;
        double r2 = (x / FIT_RX) * (x / FIT_RX) + (y / FIT_RY) * (y / FIT_RY) + (z / FIT_RZ) * (z / FIT_RZ);
        w[p] = r2 <= 1.0 ? 1.0 : FIT_OUT;
        wsum += creal(w[p]);
    }
    if ((rc = lowdft(w, G, dim, 2 * K, what, err)) != LM_OK)
        goto fail;
    for (int64_t j = 0; j < J; j++)
        for (int64_t l = 0; l < J; l++) {
            int dx = (int)(cs->freq[3 * j] - cs->freq[3 * l]) + 2 * K;
            int dy = (int)(cs->freq[3 * j + 1] - cs->freq[3 * l + 1]) + 2 * K;
            int dz = dim == 3 ? (int)(cs->freq[3 * j + 2] - cs->freq[3 * l + 2]) + 2 * K : 0;
            N[j * J + l] = what[((int64_t)dz * L2 + dy) * L2 + dx];
        }
    for (int64_t j = 0; j < J; j++) {
        const double *f = cs->freq + 3 * j;
        N[j * J + j] += RIDGE * wsum * (1.0 + f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
    }
    /* Right-hand sides, one per coil. */
    for (int64_t c = 0; c < C; c++) {
        for (int64_t p = 0; p < P; p++) {
            double x = lm_voxel_pos(p % G, G), y = lm_voxel_pos((p / G) % G, G);
            double z = dim == 3 ? lm_voxel_pos(p / ((int64_t)G * G), G) : 0.0;
            wt[p] = w[p] * target(&cd[c], x, y, z);
        }
        if ((rc = lowdft(wt, G, dim, K, cs->a + c * J, err)) != LM_OK)
            goto fail;
    }
    if (!cholesky_solve(N, J, cs->a, C)) {
        rc = lm_fail(err, LM_ERR_INTERNAL, "coil synthesis: the fit's normal matrix is not positive definite");
        goto fail;
    }
    /* Scale: root-sum-of-squares 1 at x = 0, where every e_j is 1. */
    double rss = 0;
    for (int64_t c = 0; c < C; c++) {
        double complex s = 0;
        for (int64_t j = 0; j < J; j++)
            s += cs->a[c * J + j];
        rss += creal(s) * creal(s) + cimag(s) * cimag(s);
    }
    rss = sqrt(rss);
    if (!(rss > 0)) {
        rc = lm_fail(err, LM_ERR_INTERNAL, "coil synthesis: the maps vanish at the centre");
        goto fail;
    }
    for (int64_t i = 0; i < C * J; i++)
        cs->a[i] /= rss;
    free(cd);
    free(w);
    free(wt);
    free(what);
    free(N);
    *out = cs;
    return LM_OK;
fail:
    lm_coils_synth_free(cs);
    free(cd);
    free(w);
    free(wt);
    free(what);
    free(N);
    return rc;
}

double complex lm_coils_synth_value(const lm_coils_synth *cs, int64_t coil, double x, double y, double z)
{
    if (!cs || coil < 0 || coil >= cs->ncoils)
        return 0;
    double complex s = 0;
    const double complex *a = cs->a + coil * cs->nterms;
    for (int64_t j = 0; j < cs->nterms; j++) {
        const double *f = cs->freq + 3 * j;
        s += a[j] * cexp(2 * M_PI * I * (f[0] * x + f[1] * y + f[2] * z));
    }
    return s;
}

double complex lm_coils_synth_ft(const lm_coils_synth *cs, const lm_phantom *p, int64_t coil, double kx,
                                 double ky, double kz)
{
    if (!cs || !p || coil < 0 || coil >= cs->ncoils || (p->dim == 2 && cs->dim == 3))
        return 0;
    double complex s = 0;
    const double complex *a = cs->a + coil * cs->nterms;
    for (int64_t j = 0; j < cs->nterms; j++) {
        const double *f = cs->freq + 3 * j;
        s += a[j] * lm_phantom_ft(p, kx - f[0], ky - f[1], kz - f[2]);
    }
    return s;
}

/* Separable evaluation on the grid: per coil and z, b[fx, fy] = sum_fz a ez;
 * per row y, c[fx] = sum_fy b ey; per voxel, sum_fx c ex. Real arithmetic
 * in the inner loops (C's complex multiply checks for NaN in a library
 * call). */
lm_code lm_coils_synth_maps(const lm_coils_synth *cs, const int64_t n[3], lm_sens **out, lm_error *err)
{
    if (!cs || !n || !out)
        return lm_fail(err, LM_ERR_INVALID, "coil synthesis: maps need a coil set, a matrix and an output");
    *out = NULL;
    for (int a = 0; a < 3; a++)
        if (n[a] < 1 || n[a] > 4096)
            return lm_fail(err, LM_ERR_INVALID, "coil synthesis: matrix %lldx%lldx%lld is out of range (1..4096)",
                           (long long)n[0], (long long)n[1], (long long)n[2]);
    lm_sens *s = lm_sens_new(n, cs->ncoils, err);
    if (!s)
        return err ? err->code : LM_ERR_NOMEM;
    const int K = cs->order, L = 2 * K + 1, lz = cs->dim == 3 ? L : 1;
    const int64_t nx = n[0], ny = n[1], nz = n[2], nmax = nx > ny ? (nx > nz ? nx : nz) : (ny > nz ? ny : nz);
    /* e[axis][f][i] = exp(+i 2 pi f x_i), as (re, im) */
    double *e = lm_alloc((size_t)3 * L * nmax, 2 * sizeof(double), err, "coil map tables");
    double *b = lm_alloc((size_t)L * L * nz, 2 * sizeof(double), err, "coil maps");
    if (!e || !b) {
        free(e);
        free(b);
        lm_sens_free(s);
        return err ? err->code : LM_ERR_NOMEM;
    }
    for (int ax = 0; ax < 3; ax++)
        for (int f = -K; f <= K; f++)
            for (int64_t i = 0; i < n[ax]; i++) {
                double ph = 2 * M_PI * f * lm_voxel_pos(i, n[ax]);
                double *t = e + 2 * (((size_t)ax * L + (f + K)) * nmax + i);
                t[0] = cos(ph);
                t[1] = sin(ph);
            }
    const double *ex = e, *ey = e + 2 * (size_t)L * nmax, *ez = e + 4 * (size_t)L * nmax;
    for (int64_t c = 0; c < cs->ncoils; c++) {
        const double complex *a = cs->a + c * cs->nterms;
        for (int64_t iz = 0; iz < nz; iz++)
            for (int fxy = 0; fxy < L * L; fxy++) {
                double re = 0, im = 0;
                for (int fz = 0; fz < lz; fz++) {
                    double ar = creal(a[fz * L * L + fxy]), ai = cimag(a[fz * L * L + fxy]);
                    /* 2D maps do not depend on z: the fz = 0 term only. */
                    double er = cs->dim == 3 ? ez[2 * (fz * nmax + iz)] : 1.0;
                    double ei = cs->dim == 3 ? ez[2 * (fz * nmax + iz) + 1] : 0.0;
                    re += ar * er - ai * ei;
                    im += ar * ei + ai * er;
                }
                b[2 * (iz * L * L + fxy)] = re;
                b[2 * (iz * L * L + fxy) + 1] = im;
            }
        lm_cfloat *dst = s->s + c * nx * ny * nz;
#pragma omp parallel for schedule(static)
        for (int64_t row = 0; row < ny * nz; row++) {
            int64_t iy = row % ny, iz = row / ny;
            double cr[16], ci[16]; /* L <= 2 ORDER_2D + 1 */
            for (int fx = 0; fx < L; fx++) {
                double re = 0, im = 0;
                for (int fy = 0; fy < L; fy++) {
                    const double *bb = b + 2 * (iz * L * L + fy * L + fx), *t = ey + 2 * (fy * nmax + iy);
                    re += bb[0] * t[0] - bb[1] * t[1];
                    im += bb[0] * t[1] + bb[1] * t[0];
                }
                cr[fx] = re;
                ci[fx] = im;
            }
            for (int64_t ix = 0; ix < nx; ix++) {
                double re = 0, im = 0;
                for (int fx = 0; fx < L; fx++) {
                    const double *t = ex + 2 * (fx * nmax + ix);
                    re += cr[fx] * t[0] - ci[fx] * t[1];
                    im += cr[fx] * t[1] + ci[fx] * t[0];
                }
                dst[row * nx + ix] = (float)re + I * (float)im;
            }
        }
    }
    free(e);
    free(b);
    *out = s;
    return LM_OK;
}

lm_code lm_coils_synth_data(const lm_coils_synth *cs, const lm_phantom *p, const lm_traj *t, lm_kdata *out,
                            lm_error *err)
{
    if (!cs || !p || !t || !out || !out->d)
        return lm_fail(err, LM_ERR_INVALID, "coil synthesis: k-space needs coils, a phantom, a trajectory and an output");
    if (out->m != t->m || out->ncoils != cs->ncoils)
        return lm_fail(err, LM_ERR_INVALID,
                       "coil synthesis: output holds %lld samples x %lld coils, the trajectory %lld samples and "
                       "the coil set %lld coils",
                       (long long)out->m, (long long)out->ncoils, (long long)t->m, (long long)cs->ncoils);
    if (p->dim == 2 && cs->dim == 3)
        return lm_fail(err, LM_ERR_INVALID, "coil synthesis: the 2D phantom %s needs 2D coil maps",
                       p->name ? p->name : "(unnamed)");
    return lm_phantom_kspace_modulated(p, t, cs->nterms, cs->freq, cs->ncoils, cs->a, out->d, err);
}

lm_code lm_coils_synth_sens(int dim, int64_t ncoils, const int64_t n[3], lm_sens **out, lm_error *err)
{
    lm_coils_synth *cs = NULL;
    lm_code rc = lm_coils_synth_make(dim, ncoils, &cs, err);
    if (rc == LM_OK)
        rc = lm_coils_synth_maps(cs, n, out, err);
    lm_coils_synth_free(cs);
    return rc;
}

lm_code lm_coils_synth_kspace(const lm_phantom *p, int dim, int64_t ncoils, const lm_traj *t, lm_kdata *out,
                              lm_error *err)
{
    lm_coils_synth *cs = NULL;
    lm_code rc = lm_coils_synth_make(dim, ncoils, &cs, err);
    if (rc == LM_OK)
        rc = lm_coils_synth_data(cs, p, t, out, err);
    lm_coils_synth_free(cs);
    return rc;
}
