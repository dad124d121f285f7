/* CPU NUFFT (see lm_nufft.h). Layout of the work:
 *
 * set_points: fine-grid coordinates u = k nf / s folded into [0, nf), kept in
 *   double (a float u near 512 would cost ~1e-5 of phase accuracy); samples
 *   counting-sorted by block of the two slowest axes, then by x bin.
 * spreading (type 1): blocks are at least w+2 fine points thick, so blocks of
 *   the same colour (parity of every block index) never write the same
 *   fine-grid point; the four colours run one after another, blocks of one
 *   colour in parallel. No atomics, no private grids, no reduction. Dense
 *   blocks accumulate in a small double buffer (see spread_all). A thin 3D
 *   grid (64x64x16's fine grid has 2 blocks along z) would leave a colour
 *   with fewer blocks than threads: then x is blocked too (eight colours)
 *   and blocks thin down towards w+2 (choose_blocks).
 * interpolation (type 2): reads only, parallel over sorted samples.
 * FFT: pruned, one axis at a time (FFTW guru plans made once per NUFFT
 *   plan): type 1 transforms every x row, then only the y columns whose x is
 *   an output mode, then only the z columns whose (x, y) are; type 2 runs
 *   the same passes in reverse. With upsampling 2 in 3D that is 1.75 passes'
 *   work instead of 3. Real type 1 input (Q) spreads into a real grid and
 *   uses r2c along x (made on first use): half the memory and ~0.9 passes. */
#include "lm_nufft.h"
#include "lm_fftw.h"
#include "lm_tuning.h"

#include <fftw3.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define LM_NUFFT_MAXW 16
#define LM_NUFFT_XBIN 16   /* fine points per x bin (cache locality only) */
#define LM_NUFFT_BLOCK 16  /* target block thickness on the slow axes */
#define LM_NUFFT_KTAB 4096 /* KB table points per fine-grid unit (lerp error ~1e-7) */
/* The kernel values of every sample are kept when they take at most this:
 * an execute per weight set then evaluates no exp (F^H d of 8 coils x 11
 * time segments is 88 executes on one plan). */
#define LM_NUFFT_KCACHE_BYTES ((int64_t)64 << 20)

struct lm_nufft_plan {
    int type, dim, sign, nthreads;
    lm_nufft_opts opts;
    double tol;
    int64_t g[3], nf[3];
    int w[3];              /* per-axis kernel width; 1 on trivial axes (g == 1) */
    int width;
    double beta;
    double S[3];           /* integral of the 1D kernel (1 on trivial axes) */
    float *ktab;           /* KB kernel at z = i / LM_NUFFT_KTAB, 0 <= z <= w/2 (+2 guard) */
    int nktab;
    float *deap[3];        /* per output index: 1 / kernel transform (or 1) */
    fftwf_complex *fw;     /* fine grid, x fastest */
    fftwf_plan cpl[7];     /* complex passes in type 1 order: x, y (2), z (4) */
    int64_t coff[7];       /* where each pass starts in fw (new-array execution on another grid) */
    int ncpl;
    fftwf_plan rpl[4];     /* real type 1 passes: r2c x, y, z (2); made on first use */
    int64_t roff[4];
    int nrpl, rpl_state;   /* 0 not tried, 1 made, -1 failed (fall back to complex) */
    /* lm_nufft_execute_sets: single-threaded twins of the passes (each thread
     * runs whole sets on a grid of its own) and the other threads' grids */
    fftwf_plan cpl1[7], rpl1[4];
    int ncpl1, nrpl1;
    fftwf_complex **fwt;
    int nfwt;
    /* points */
    int64_t m;
    int have_points;
    double *u[3];          /* fine-grid coordinates, sorted order */
    int64_t *perm;         /* sorted position -> caller's index */
    float *ph;             /* pre/post phase (re, im) per sorted sample, or NULL */
    int nb1, nb2;          /* blocks along axes 2 and 1 (3D) or 1 and 0 (2D) */
    int nb0;               /* blocks along x in 3D (1: x not blocked) */
    int64_t *boff;         /* nb1*nb2*nb0 + 1 offsets into the sorted samples */
    double s_k[3];         /* the grid mapping's s (k units per fine grid = s/nf) */
    float *kc;             /* kernel values per sorted sample, w[0] + w[1] + w[2] floats each,
                              or NULL (more than LM_NUFFT_KCACHE_BYTES) */
};

/* ---------- FFTW set-up: init once, plan creation serialised ---------- */

static pthread_mutex_t fftw_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---------- kernels ---------- */

/* Modified Bessel I0, Abramowitz & Stegun 9.8.1-2 (relative error < 2e-7). */
static double bessel_i0(double x)
{
    double ax = fabs(x);
    if (ax < 3.75) {
        double y = (x / 3.75) * (x / 3.75);
        return 1.0 + y * (3.5156229 + y * (3.0899424 + y * (1.2067492 + y * (0.2659732 +
               y * (0.0360768 + y * 0.0045813)))));
    }
    double y = 3.75 / ax;
    return (exp(ax) / sqrt(ax)) *
           (0.39894228 + y * (0.01328592 + y * (0.00225319 + y * (-0.00157565 + y * (0.00916281 +
            y * (-0.02057706 + y * (0.02635537 + y * (-0.01647633 + y * 0.00392377))))))));
}

/* I0(x) / I0(beta) without overflow for large beta. */
static double kb_value(double x, double beta)
{
    if (beta < 3.75 || x < 3.75)
        return bessel_i0(x) / bessel_i0(beta);
    double r = (bessel_i0(x) * exp(-x) * sqrt(x)) / (bessel_i0(beta) * exp(-beta) * sqrt(beta));
    return r * exp(x - beta) * sqrt(beta / x);
}

static double kernel_eval(const lm_nufft_plan *p, double z)
{
    double hw = 0.5 * p->width;
    if (fabs(z) >= hw)
        return 0.0;
    switch (p->opts.kernel) {
    case LM_NUFFT_KERNEL_LINEAR:
        return 1.0 - fabs(z);
    case LM_NUFFT_KERNEL_KB: {
        double t = 1.0 - (z / hw) * (z / hw);
        return kb_value(p->beta * sqrt(t), p->beta);
    }
    default: {
        double t = 1.0 - (z / hw) * (z / hw);
        return exp(p->beta * (sqrt(t) - 1.0));
    }
    }
}

/* Kernel values at l0 + d - u, d = 0..w-1, along one axis (float, hot path). */
static inline void kernel_row(const lm_nufft_plan *p, int w, double u, int64_t *l0, float *kv)
{
    if (w == 1) {
        *l0 = 0;
        kv[0] = 1.0f;
        return;
    }
    int64_t l = (int64_t)ceil(u - 0.5 * w);
    *l0 = l;
    float z0 = (float)((double)l - u);
    float hw = 0.5f * (float)w, inv = 1.0f / hw, beta = (float)p->beta;
    switch (p->opts.kernel) {
    case LM_NUFFT_KERNEL_ES:
        for (int d = 0; d < w; d++) {
            float z = (z0 + (float)d) * inv;
            float t = 1.0f - z * z;
            kv[d] = t > 0.0f ? expf(beta * (sqrtf(t) - 1.0f)) : 0.0f;
        }
        break;
    case LM_NUFFT_KERNEL_LINEAR:
        for (int d = 0; d < w; d++) {
            float t = 1.0f - fabsf(z0 + (float)d);
            kv[d] = t > 0.0f ? t : 0.0f;
        }
        break;
    default: /* KB: Bessel functions are slow, so a table */
        for (int d = 0; d < w; d++) {
            float t = fabsf(z0 + (float)d) * (float)LM_NUFFT_KTAB;
            int i = (int)t;
            if (i >= p->nktab - 1) {
                kv[d] = 0.0f;
                continue;
            }
            float f = t - (float)i;
            kv[d] = p->ktab[i] + f * (p->ktab[i + 1] - p->ktab[i]);
        }
        break;
    }
}

/* The three kernel rows of sorted sample j, from the cache when there is one. */
static inline void sample_rows(const lm_nufft_plan *p, int64_t j, int64_t l0[3], float kv[3][LM_NUFFT_MAXW])
{
    if (!p->kc) {
        for (int a = 0; a < 3; a++)
            kernel_row(p, p->w[a], p->u[a][j], &l0[a], kv[a]);
        return;
    }
    const float *c = p->kc + j * (p->w[0] + p->w[1] + p->w[2]);
    for (int a = 0; a < 3; a++) {
        const int w = p->w[a];
        l0[a] = w == 1 ? 0 : (int64_t)ceil(p->u[a][j] - 0.5 * w);
        memcpy(kv[a], c, (size_t)w * sizeof *c);
        c += w;
    }
}

/* Gauss-Legendre nodes and weights on [-1, 1] (Newton on P_n); also used by
 * the GPU plan (lm_gpu_nufft.cu) so both deapodise with the same quadrature. */
void lm_nufft_gauss_legendre(int n, double *x, double *w)
{
    for (int i = 0; i < (n + 1) / 2; i++) {
        double z = cos(M_PI * (i + 0.75) / (n + 0.5)), pp = 1.0;
        for (int it = 0; it < 100; it++) {
            double p1 = 1.0, p2 = 0.0;
            for (int j = 1; j <= n; j++) {
                double p3 = p2;
                p2 = p1;
                p1 = ((2.0 * j - 1.0) * z * p2 - (j - 1.0) * p3) / j;
            }
            pp = n * (z * p1 - p2) / (z * z - 1.0);
            double dz = p1 / pp;
            z -= dz;
            if (fabs(dz) < 1e-15)
                break;
        }
        x[i] = -z;
        x[n - 1 - i] = z;
        w[i] = w[n - 1 - i] = 2.0 / ((1.0 - z * z) * pp * pp);
    }
}

/* Phi(xi) = int phi(z) cos(xi z) dz over the kernel's support, for xi_j = 2 pi j / nf. */
static lm_code kernel_transform(lm_nufft_plan *p, int axis, lm_error *err)
{
    int64_t g = p->g[axis], nf = p->nf[axis];
    float *dec = lm_alloc((size_t)g, sizeof(float), err, "nufft deapodisation");
    if (!dec)
        return err ? err->code : LM_ERR_NOMEM;
    p->deap[axis] = dec;
    if (g == 1) {
        dec[0] = 1.0f;
        p->S[axis] = 1.0;
        return LM_OK;
    }
    enum { Q = 96 };
    double x[Q], wq[Q], z[Q], f[Q];
    lm_nufft_gauss_legendre(Q, x, wq);
    double hw = 0.5 * p->width;
    /* Integrate over [0, hw] (the kernel is even): nodes mapped from [-1, 1]. */
    for (int q = 0; q < Q; q++) {
        z[q] = 0.5 * hw * (x[q] + 1.0);
        f[q] = kernel_eval(p, z[q]) * hw; /* 2 * (hw/2) * weight */
    }
    double s0 = 0.0;
    for (int q = 0; q < Q; q++)
        s0 += f[q] * wq[q];
    p->S[axis] = s0;
    for (int64_t i = 0; i < g; i++) {
        int64_t j = i - g / 2;
        double xi = 2.0 * M_PI * (double)j / (double)nf, s = 0.0;
        for (int q = 0; q < Q; q++)
            s += f[q] * wq[q] * cos(xi * z[q]);
        dec[i] = p->opts.deapodize ? (float)(1.0 / s) : 1.0f;
    }
    return LM_OK;
}

/* ---------- pruned FFT passes ---------- */

/* Output modes along an axis occupy fine indices [0, g - g/2) and
 * [nf - g/2, nf): the two ranges as (start, count). */
static int mode_ranges(int64_t g, int64_t nf, int64_t r[2][2])
{
    r[0][0] = 0;
    r[0][1] = g - g / 2;
    r[1][0] = nf - g / 2;
    r[1][1] = g / 2;
    return g / 2 > 0 ? 2 : 1;
}

/* guru64: strides of big fine grids overflow int */
static fftwf_plan guru_c2c(lm_nufft_plan *p, fftwf_complex *base, fftwf_iodim64 t, int nh,
                           const fftwf_iodim64 *h, int fsign)
{
    return fftwf_plan_guru64_dft(1, &t, nh, h, base, base, fsign, p->opts.fftw_flags);
}

/* Called with fftw_lock held; the passes into pl (offsets into fw: off),
 * their count into *n. */
static lm_code make_complex_passes_locked(lm_nufft_plan *p, fftwf_plan *pl, int64_t *off, int *n)
{
    const int fsign = p->sign > 0 ? FFTW_BACKWARD : FFTW_FORWARD; /* BACKWARD is exp(+i) */
    const ptrdiff_t nx = p->nf[0], ny = p->nf[1], nz = p->nf[2];
    int64_t rx[2][2], ry[2][2];
    int cx = mode_ranges(p->g[0], p->nf[0], rx), cy = mode_ranges(p->g[1], p->nf[1], ry);
    /* x: every row */
    fftwf_iodim64 t = {nx, 1, 1}, h[2] = {{ny * nz, nx, nx}};
    off[*n] = 0;
    if (!(pl[*n] = guru_c2c(p, p->fw, t, 1, h, fsign)))
        return LM_ERR_INTERNAL;
    (*n)++;
    /* y: columns whose x is a mode, every z */
    for (int a = 0; a < cx; a++) {
        fftwf_iodim64 ty = {ny, nx, nx}, hy[2] = {{rx[a][1], 1, 1}, {nz, nx * ny, nx * ny}};
        off[*n] = rx[a][0];
        if (!(pl[*n] = guru_c2c(p, p->fw + rx[a][0], ty, 2, hy, fsign)))
            return LM_ERR_INTERNAL;
        (*n)++;
    }
    if (nz == 1)
        return LM_OK;
    /* z: columns whose x and y are modes */
    for (int a = 0; a < cx; a++)
        for (int b = 0; b < cy; b++) {
            fftwf_iodim64 tz = {nz, nx * ny, nx * ny},
                          hz[2] = {{rx[a][1], 1, 1}, {ry[b][1], nx, nx}};
            off[*n] = rx[a][0] + ry[b][0] * nx;
            if (!(pl[*n] = guru_c2c(p, p->fw + off[*n], tz, 2, hz, fsign)))
                return LM_ERR_INTERNAL;
            (*n)++;
        }
    return LM_OK;
}

static lm_code make_complex_passes(lm_nufft_plan *p)
{
    (void)lm_fftw_setup();
    pthread_mutex_lock(&fftw_lock);
    if (lm_fftw_setup())
        fftwf_plan_with_nthreads(p->nthreads);
    lm_code rc = make_complex_passes_locked(p, p->cpl, p->coff, &p->ncpl);
    pthread_mutex_unlock(&fftw_lock);
    return rc;
}

/* Real input, forward transforms (the sign is applied when reading out, by
 * conjugation). Rows are padded to hx = nx/2 + 1 complex values. Needed
 * modes: x in [0, g0/2] (negative x by symmetry, which also needs y and z
 * mirrored: y in [0, g1/2] and [ny - g1/2, ny)). */
static int make_real_passes_threads(lm_nufft_plan *p, int threads, fftwf_plan *out, int *nout)
{
    const ptrdiff_t nx = p->nf[0], ny = p->nf[1], nz = p->nf[2], hx = nx / 2 + 1;
    const ptrdiff_t xc = p->g[0] / 2 + 1 < hx ? p->g[0] / 2 + 1 : hx;
    const ptrdiff_t y0[2] = {0, ny - p->g[1] / 2}, yc[2] = {p->g[1] / 2 + 1, p->g[1] / 2};
    fftwf_plan pl[4] = {0};
    int n = 0, ok = ny >= p->g[1] + 1; /* the two y ranges must not overlap (nf = g does) */
    pthread_mutex_lock(&fftw_lock);
    if (lm_fftw_setup())
        fftwf_plan_with_nthreads(threads);
    if (ok) {
        fftwf_iodim64 t = {nx, 1, 1}, h[1] = {{ny * nz, 2 * hx, hx}};
        p->roff[n] = 0;
        ok = (pl[n++] = fftwf_plan_guru64_dft_r2c(1, &t, 1, h, (float *)p->fw, p->fw, p->opts.fftw_flags)) != NULL;
    }
    if (ok) {
        fftwf_iodim64 ty = {ny, hx, hx}, hy[2] = {{xc, 1, 1}, {nz, hx * ny, hx * ny}};
        p->roff[n] = 0;
        ok = (pl[n++] = guru_c2c(p, p->fw, ty, 2, hy, FFTW_FORWARD)) != NULL;
    }
    for (int b = 0; b < 2 && ok && nz > 1; b++) {
        if (yc[b] <= 0)
            continue;
        fftwf_iodim64 tz = {nz, hx * ny, hx * ny}, hz[2] = {{xc, 1, 1}, {yc[b], hx, hx}};
        p->roff[n] = y0[b] * hx;
        ok = (pl[n++] = guru_c2c(p, p->fw + y0[b] * hx, tz, 2, hz, FFTW_FORWARD)) != NULL;
    }
    if (!ok)
        for (int i = 0; i < n; i++)
            if (pl[i])
                fftwf_destroy_plan(pl[i]);
    pthread_mutex_unlock(&fftw_lock);
    if (ok) {
        memcpy(out, pl, sizeof pl);
        *nout = n;
    }
    return ok;
}

static int make_real_passes(lm_nufft_plan *p)
{
    if (p->rpl_state)
        return p->rpl_state > 0;
    const int ok = make_real_passes_threads(p, p->nthreads, p->rpl, &p->nrpl);
    p->rpl_state = ok ? 1 : -1;
    return ok;
}

/* ---------- plan ---------- */

void lm_nufft_default_opts(lm_nufft_opts *o)
{
    memset(o, 0, sizeof *o);
    o->upsampfac = 2.0;
    o->kernel = LM_NUFFT_KERNEL_ES;
    o->deapodize = 1;
    o->fftw_flags = FFTW_ESTIMATE;
}

static int64_t next_smooth_even(int64_t n)
{
    if (n < 2)
        n = 2;
    if (n & 1)
        n++;
    for (;; n += 2) {
        int64_t r = n;
        while (r % 2 == 0)
            r /= 2;
        while (r % 3 == 0)
            r /= 3;
        while (r % 5 == 0)
            r /= 5;
        if (r == 1)
            return n;
    }
}

static int width_for(const lm_nufft_opts *o, double tol)
{
    if (o->kernel == LM_NUFFT_KERNEL_LINEAR)
        return 2;
    if (o->width > 0)
        return o->width;
    double w;
    if (fabs(o->upsampfac - 2.0) < 1e-12) {
        w = ceil(-log10(tol / 10.0)); /* FINUFFT: one point per digit */
    } else {
        /* Below 2x the deapodisation amplifies float rounding by ~100 per
         * axis at the band edge: kernels wider than 1e-5 asks only add error. */
        if (tol < 1e-5)
            tol = 1e-5;
        w = ceil(-log(tol) / (M_PI * sqrt(1.0 - 1.0 / o->upsampfac)));
    }
    if (w < 2)
        w = 2;
    if (w > LM_NUFFT_MAXW)
        w = LM_NUFFT_MAXW;
    return (int)w;
}

static double beta_for(const lm_nufft_opts *o, int w)
{
    if (o->beta > 0)
        return o->beta;
    double s = o->upsampfac;
    if (o->kernel == LM_NUFFT_KERNEL_KB) {
        double a = (w / s) * (w / s) * (s - 0.5) * (s - 0.5) - 0.8; /* Beatty 2005 */
        return M_PI * sqrt(a > 0.1 ? a : 0.1);
    }
    if (o->kernel == LM_NUFFT_KERNEL_LINEAR)
        return 0.0;
    if (fabs(s - 2.0) < 1e-12) {
        double bw = w == 2 ? 2.20 : w == 3 ? 2.26 : w == 4 ? 2.38 : 2.30; /* FINUFFT's table */
        return bw * w;
    }
    return 0.97 * M_PI * (1.0 - 1.0 / (2.0 * s)) * w;
}

lm_code lm_nufft_make_plan(int type, int dim, const int64_t g[3], int sign, double tol,
                           const lm_nufft_opts *opts, lm_nufft_plan **out, lm_error *err)
{
    *out = NULL;
    lm_nufft_opts o;
    if (opts)
        o = *opts;
    else
        lm_nufft_default_opts(&o);
    if (type != 1 && type != 2)
        return lm_fail(err, LM_ERR_INVALID, "nufft: type %d is not 1 or 2", type);
    if (dim != 2 && dim != 3)
        return lm_fail(err, LM_ERR_INVALID, "nufft: %d dimensions (2 or 3 supported)", dim);
    if (sign != 1 && sign != -1)
        return lm_fail(err, LM_ERR_INVALID, "nufft: sign %d is not +1 or -1", sign);
    for (int a = 0; a < 3; a++) {
        int trivial_ok = dim == 2 && a == 2;
        if (g[a] < 1 || g[a] > 65536 || (g[a] == 1 && !trivial_ok) || (dim == 2 && a == 2 && g[a] != 1))
            return lm_fail(err, LM_ERR_INVALID, "nufft: grid %lldx%lldx%lld is invalid for %dD",
                           (long long)g[0], (long long)g[1], (long long)g[2], dim);
    }
    if (o.kernel != LM_NUFFT_KERNEL_ES && o.kernel != LM_NUFFT_KERNEL_KB && o.kernel != LM_NUFFT_KERNEL_LINEAR)
        return lm_fail(err, LM_ERR_INVALID, "nufft: unknown kernel %d", (int)o.kernel);
    int linear = o.kernel == LM_NUFFT_KERNEL_LINEAR;
    if (!(o.upsampfac >= (linear ? 1.0 : 1.1) && o.upsampfac <= 4.0))
        return lm_fail(err, LM_ERR_INVALID, "nufft: upsampling factor %g is out of range", o.upsampfac);
    if (!linear && o.width == 0 && !(tol >= 1e-7 && tol <= 1e-1))
        return lm_fail(err, LM_ERR_INVALID, "nufft: tolerance %g is out of range (1e-7 .. 1e-1)", tol);
    if (o.width != 0 && (o.width < 2 || o.width > LM_NUFFT_MAXW))
        return lm_fail(err, LM_ERR_INVALID, "nufft: kernel width %d is out of range (2 .. %d)", o.width,
                       LM_NUFFT_MAXW);

    lm_nufft_plan *p = lm_calloc(1, sizeof *p, err, "nufft plan");
    if (!p)
        return LM_ERR_NOMEM;
    p->type = type;
    p->dim = dim;
    p->sign = sign;
    p->opts = o;
    p->tol = tol;
    p->nthreads = o.threads > 0 ? o.threads : omp_get_max_threads();
    p->width = width_for(&o, tol);
    p->beta = beta_for(&o, p->width);
    size_t total = 1;
    for (int a = 0; a < 3; a++) {
        p->g[a] = g[a];
        if (g[a] == 1) {
            p->nf[a] = 1;
            p->w[a] = 1;
        } else {
            int64_t want = (int64_t)ceil(o.upsampfac * (double)g[a] - 1e-9);
            p->nf[a] = linear && o.upsampfac == 1.0 ? g[a] : next_smooth_even(want);
            if (p->nf[a] < 2 * p->width)
                p->nf[a] = next_smooth_even(2 * p->width);
            p->w[a] = p->width;
        }
        if (!lm_size_mul(total, (size_t)p->nf[a], &total)) {
            lm_nufft_destroy(p);
            return lm_fail(err, LM_ERR_NOMEM, "nufft: fine grid is absurdly large");
        }
    }
    if (o.kernel == LM_NUFFT_KERNEL_KB) {
        p->nktab = (int)(0.5 * p->width * LM_NUFFT_KTAB) + 2;
        if (!(p->ktab = lm_alloc((size_t)p->nktab, sizeof(float), err, "nufft kernel table"))) {
            lm_nufft_destroy(p);
            return LM_ERR_NOMEM;
        }
        for (int i = 0; i < p->nktab; i++)
            p->ktab[i] = (float)kernel_eval(p, (double)i / LM_NUFFT_KTAB);
    }
    lm_code rc = LM_OK;
    for (int a = 0; a < 3 && rc == LM_OK; a++)
        rc = kernel_transform(p, a, err);
    if (rc != LM_OK) {
        lm_nufft_destroy(p);
        return rc;
    }
    size_t bytes;
    if (total > LM_MAX_ELEMENTS || !lm_size_mul(total, sizeof(fftwf_complex), &bytes) ||
        !(p->fw = fftwf_malloc(bytes))) {
        lm_nufft_destroy(p);
        return lm_fail(err, LM_ERR_NOMEM, "nufft: cannot allocate the %lldx%lldx%lld fine grid",
                       (long long)p->nf[0], (long long)p->nf[1], (long long)p->nf[2]);
    }
    if (make_complex_passes(p) != LM_OK) {
        lm_nufft_destroy(p);
        return lm_fail(err, LM_ERR_INTERNAL, "nufft: FFTW could not plan the fine grid");
    }
    *out = p;
    return LM_OK;
}

static void free_points(lm_nufft_plan *p)
{
    for (int a = 0; a < 3; a++) {
        free(p->u[a]);
        p->u[a] = NULL;
    }
    free(p->perm);
    free(p->ph);
    free(p->boff);
    free(p->kc);
    p->kc = NULL;
    p->perm = NULL;
    p->ph = NULL;
    p->boff = NULL;
    p->m = 0;
    p->have_points = 0;
}

void lm_nufft_destroy(lm_nufft_plan *p)
{
    if (!p)
        return;
    free_points(p);
    for (int a = 0; a < 3; a++)
        free(p->deap[a]);
    free(p->ktab);
    pthread_mutex_lock(&fftw_lock);
    for (int i = 0; i < p->ncpl; i++)
        fftwf_destroy_plan(p->cpl[i]);
    for (int i = 0; i < p->nrpl; i++)
        fftwf_destroy_plan(p->rpl[i]);
    for (int i = 0; i < p->ncpl1; i++)
        fftwf_destroy_plan(p->cpl1[i]);
    for (int i = 0; i < p->nrpl1; i++)
        fftwf_destroy_plan(p->rpl1[i]);
    pthread_mutex_unlock(&fftw_lock);
    for (int i = 0; i < p->nfwt; i++)
        fftwf_free(p->fwt[i]);
    free(p->fwt);
    if (p->fw)
        fftwf_free(p->fw);
    free(p);
}

void lm_nufft_fine_grid(const lm_nufft_plan *p, int64_t nf[3])
{
    for (int a = 0; a < 3; a++)
        nf[a] = p->nf[a];
}

void lm_nufft_spread_blocks(const lm_nufft_plan *p, int nb[3])
{
    const int a1 = p->dim == 3 ? 2 : 1, a2 = p->dim == 3 ? 1 : 0;
    nb[0] = nb[1] = nb[2] = 1;
    if (!p->have_points)
        return;
    nb[a1] = p->nb1;
    nb[a2] = p->nb2;
    if (p->dim == 3)
        nb[0] = p->nb0;
}

int lm_nufft_width(const lm_nufft_plan *p)
{
    return p->width;
}

/* ---------- points ---------- */

static int blocks_along(int64_t nf, int w, int thick)
{
    if (nf == 1)
        return 1;
    /* w + 2: the boxes (block plus halo w/2 + 1 each side) of blocks two
     * apart must not meet */
    int bs = w + 2 > thick ? w + 2 : thick;
    int64_t nb = nf / bs;
    if (nb > 1 && (nb & 1))
        nb--; /* an odd count would put blocks 0 and nb-1 (wrap neighbours) in one colour */
    return nb < 1 ? 1 : (int)nb;
}

/* Blocks for spreading: LM_NUFFT_BLOCK thick on the slow axes while that
 * gives every colour LM_NUFFT_BLOCKS_PER_THREAD blocks per thread (dynamic
 * scheduling evens out their different sample counts); otherwise, in 3D, x
 * is blocked too (eight colours), as few x blocks as that needs since each
 * block costs its halo, and then the blocks thin down to w + 2. */
static void choose_blocks(lm_nufft_plan *p, int a1, int a2)
{
    /* the tuning's nufft_blocks_per_thread (0: LM_NUFFT_BLOCK slabs
     * always) is for measuring the choice */
    const long bpt = lm_tuning_get()->nufft_blocks_per_thread;
    const int64_t per_colour = (int64_t)(bpt > 0 ? bpt : 0) * p->nthreads;
    for (int thick = LM_NUFFT_BLOCK;; thick -= 2) {
        p->nb1 = blocks_along(p->nf[a1], p->w[a1], thick);
        p->nb2 = blocks_along(p->nf[a2], p->w[a2], thick);
        p->nb0 = 1;
        const int64_t slow = (int64_t)p->nb1 * p->nb2;
        if (slow / 4 >= per_colour)
            return;
        if (p->dim == 3 && p->nf[0] > 1) {
            const int most = blocks_along(p->nf[0], p->w[0], thick);
            if (most >= 2) {
                int nb0 = 2;
                while (nb0 + 2 <= most && slow * nb0 / 8 < per_colour)
                    nb0 += 2;
                p->nb0 = nb0;
                if (slow * nb0 / 8 >= per_colour)
                    return;
            }
        }
        if (thick <= p->width + 2)
            return; /* as thin as the kernel allows */
    }
}

lm_code lm_nufft_set_points(lm_nufft_plan *p, int64_t m, const float *kx, const float *ky,
                            const float *kz, const int64_t c[3], const int64_t s[3], lm_error *err)
{
    free_points(p);
    if (m < 0 || (m > 0 && (!kx || !ky || (p->dim == 3 && !kz))))
        return lm_fail(err, LM_ERR_INVALID, "nufft: %lld samples without coordinates", (long long)m);
    for (int a = 0; a < 3; a++)
        if (s[a] <= 0)
            return lm_fail(err, LM_ERR_INVALID, "nufft: grid spacing 1/%lld along axis %d is invalid",
                           (long long)s[a], a);
    const float *k[3] = {kx, ky, kz};
    int need_phase = 0;
    for (int a = 0; a < 3; a++) {
        p->s_k[a] = (double)s[a];
        if (c[a] != p->g[a] / 2 && (a < 2 || kz))
            need_phase = 1;
    }
    int a1 = p->dim == 3 ? 2 : 1, a2 = p->dim == 3 ? 1 : 0;
    choose_blocks(p, a1, a2);
    int64_t nbx = p->dim == 3 ? (p->nf[0] + LM_NUFFT_XBIN - 1) / LM_NUFFT_XBIN : 1;
    int64_t nblocks = (int64_t)p->nb1 * p->nb2 * p->nb0, nkeys = nblocks * nbx;

    double *u[3] = {0};
    int64_t *key = NULL, *cnt = NULL;
    lm_code rc = LM_ERR_NOMEM;
    for (int a = 0; a < 3; a++)
        if (!(u[a] = lm_alloc((size_t)m, sizeof(double), err, "nufft coordinates")))
            goto fail;
    if (!(key = lm_alloc((size_t)m, sizeof(int64_t), err, "nufft bins")) ||
        !(cnt = lm_calloc((size_t)nkeys + 1, sizeof(int64_t), err, "nufft bins")) ||
        !(p->perm = lm_alloc((size_t)m, sizeof(int64_t), err, "nufft permutation")) ||
        !(p->boff = lm_alloc((size_t)nblocks + 1, sizeof(int64_t), err, "nufft blocks")) ||
        (need_phase && !(p->ph = lm_alloc((size_t)m, 2 * sizeof(float), err, "nufft phases"))))
        goto fail;
    for (int a = 0; a < 3; a++)
        if (!(p->u[a] = lm_alloc((size_t)m, sizeof(double), err, "nufft coordinates")))
            goto fail;

    int bad = 0;
#pragma omp parallel for num_threads(p->nthreads) reduction(| : bad) schedule(static)
    for (int64_t i = 0; i < m; i++) {
        int64_t b[3];
        for (int a = 0; a < 3; a++) {
            if (p->nf[a] == 1) {
                u[a][i] = 0.0;
                b[a] = 0;
                continue;
            }
            double kv = k[a][i];
            if (!isfinite(kv)) {
                bad = 1;
                kv = 0.0;
            }
            double nf = (double)p->nf[a], v = kv * nf / (double)s[a];
            v -= nf * floor(v / nf);
            if (v >= nf) /* rounding */
                v -= nf;
            u[a][i] = v;
            b[a] = (int64_t)v;
        }
        int64_t bb1 = b[a1] * p->nb1 / p->nf[a1], bb2 = b[a2] * p->nb2 / p->nf[a2];
        int64_t bb0 = p->nb0 > 1 ? b[0] * p->nb0 / p->nf[0] : 0;
        int64_t bx = p->dim == 3 ? b[0] / LM_NUFFT_XBIN : 0;
        key[i] = ((bb1 * p->nb2 + bb2) * p->nb0 + bb0) * nbx + bx;
    }
    if (bad) {
        rc = lm_fail(err, LM_ERR_INVALID, "nufft: a sample coordinate is not finite");
        goto fail;
    }
    for (int64_t i = 0; i < m; i++)
        cnt[key[i] + 1]++;
    for (int64_t j = 0; j < nkeys; j++)
        cnt[j + 1] += cnt[j];
    for (int64_t b = 0; b <= nblocks; b++)
        p->boff[b] = cnt[b * nbx];
    for (int64_t i = 0; i < m; i++)
        p->perm[cnt[key[i]]++] = i;

#pragma omp parallel for num_threads(p->nthreads) schedule(static)
    for (int64_t j = 0; j < m; j++) {
        int64_t i = p->perm[j];
        for (int a = 0; a < 3; a++)
            p->u[a][j] = u[a][i];
        if (p->ph) {
            /* exp(i sign 2 pi k (g/2 - c) / s): moves the modes to -g/2 .. g/2-1 */
            double ph = 0.0;
            for (int a = 0; a < 3; a++)
                if (k[a] && c[a] != p->g[a] / 2)
                    ph += (double)k[a][i] * (double)(p->g[a] / 2 - c[a]) / (double)s[a];
            ph -= floor(ph); /* cycles; keeps the argument small */
            p->ph[2 * j] = (float)cos(2.0 * M_PI * ph * p->sign);
            p->ph[2 * j + 1] = (float)sin(2.0 * M_PI * ph * p->sign);
        }
    }
    const int sw = p->w[0] + p->w[1] + p->w[2];
    if (m > 0 && m * sw * (int64_t)sizeof(float) <= LM_NUFFT_KCACHE_BYTES &&
        (p->kc = malloc((size_t)(m * sw) * sizeof *p->kc)) != NULL) {
#pragma omp parallel for num_threads(p->nthreads) schedule(static)
        for (int64_t j = 0; j < m; j++) {
            float *c = p->kc + j * sw;
            for (int a = 0; a < 3; a++) {
                int64_t l0;
                kernel_row(p, p->w[a], p->u[a][j], &l0, c);
                c += p->w[a];
            }
        }
    }
    p->m = m;
    p->have_points = 1;
    rc = LM_OK;
fail:
    for (int a = 0; a < 3; a++)
        free(u[a]);
    free(key);
    free(cnt);
    if (rc != LM_OK)
        free_points(p);
    return rc;
}

/* ---------- spreading and interpolation ---------- */

static void zero_fine(lm_nufft_plan *p, int real)
{
    float *f = (float *)p->fw;
    size_t row = real ? 2 * (size_t)(p->nf[0] / 2 + 1) : 2 * (size_t)p->nf[0];
#pragma omp parallel for num_threads(p->nthreads) schedule(static)
    for (int64_t z = 0; z < p->nf[2] * p->nf[1]; z++)
        memset(f + (size_t)z * row, 0, row * sizeof(float));
}

/* Adds (vr, vi) * kernel around sample j into the fine grid. */
static inline void spread_one(const lm_nufft_plan *p, float *fw, int64_t j, float vr, float vi)
{
    float kv[3][LM_NUFFT_MAXW];
    int64_t l0[3];
    sample_rows(p, j, l0, kv);
    const int64_t nfx = p->nf[0], nfy = p->nf[1], nfz = p->nf[2];
    const int wx = p->w[0], wy = p->w[1], wz = p->w[2];
    int64_t ix[LM_NUFFT_MAXW];
    int contiguous = l0[0] >= 0 && l0[0] + wx <= nfx;
    for (int d = 0; d < wx; d++) {
        int64_t v = l0[0] + d;
        ix[d] = v < 0 ? v + nfx : v >= nfx ? v - nfx : v;
    }
    float kx2[2 * LM_NUFFT_MAXW];
    for (int d = 0; d < wx; d++)
        kx2[2 * d] = kx2[2 * d + 1] = kv[0][d];
    for (int dz = 0; dz < wz; dz++) {
        int64_t iz = l0[2] + dz;
        iz = iz < 0 ? iz + nfz : iz >= nfz ? iz - nfz : iz;
        for (int dy = 0; dy < wy; dy++) {
            int64_t iy = l0[1] + dy;
            iy = iy < 0 ? iy + nfy : iy >= nfy ? iy - nfy : iy;
            float kk = kv[2][dz] * kv[1][dy], ar = vr * kk, ai = vi * kk;
            float *row = fw + 2 * ((size_t)iz * (size_t)nfy + (size_t)iy) * (size_t)nfx;
            if (contiguous) {
                float *r = row + 2 * l0[0];
                float av[2 * LM_NUFFT_MAXW];
                for (int d = 0; d < wx; d++) {
                    av[2 * d] = ar;
                    av[2 * d + 1] = ai;
                }
                for (int q = 0; q < 2 * wx; q++)
                    r[q] += kx2[q] * av[q];
            } else {
                for (int d = 0; d < wx; d++) {
                    row[2 * ix[d]] += ar * kv[0][d];
                    row[2 * ix[d] + 1] += ai * kv[0][d];
                }
            }
        }
    }
}

/* The same into the real grid of the r2c path (rows of 2 hx floats). */
static inline void spread_one_real(const lm_nufft_plan *p, float *fr, int64_t j, float v)
{
    float kv[3][LM_NUFFT_MAXW];
    int64_t l0[3];
    sample_rows(p, j, l0, kv);
    const int64_t nfx = p->nf[0], nfy = p->nf[1], nfz = p->nf[2], rs = 2 * (nfx / 2 + 1);
    const int wx = p->w[0], wy = p->w[1], wz = p->w[2];
    int64_t ix[LM_NUFFT_MAXW];
    int contiguous = l0[0] >= 0 && l0[0] + wx <= nfx;
    for (int d = 0; d < wx; d++) {
        int64_t q = l0[0] + d;
        ix[d] = q < 0 ? q + nfx : q >= nfx ? q - nfx : q;
    }
    for (int dz = 0; dz < wz; dz++) {
        int64_t iz = l0[2] + dz;
        iz = iz < 0 ? iz + nfz : iz >= nfz ? iz - nfz : iz;
        for (int dy = 0; dy < wy; dy++) {
            int64_t iy = l0[1] + dy;
            iy = iy < 0 ? iy + nfy : iy >= nfy ? iy - nfy : iy;
            float a = v * kv[2][dz] * kv[1][dy];
            float *row = fr + ((size_t)iz * (size_t)nfy + (size_t)iy) * (size_t)rs;
            if (contiguous) {
                float *r = row + l0[0];
                for (int d = 0; d < wx; d++)
                    r[d] += a * kv[0][d];
            } else {
                for (int d = 0; d < wx; d++)
                    row[ix[d]] += a * kv[0][d];
            }
        }
    }
}

static inline void interp_one(const lm_nufft_plan *p, const float *fw, int64_t j, float *outr, float *outi)
{
    float kv[3][LM_NUFFT_MAXW];
    int64_t l0[3];
    sample_rows(p, j, l0, kv);
    const int64_t nfx = p->nf[0], nfy = p->nf[1], nfz = p->nf[2];
    const int wx = p->w[0], wy = p->w[1], wz = p->w[2];
    int64_t ix[LM_NUFFT_MAXW];
    for (int d = 0; d < wx; d++) {
        int64_t v = l0[0] + d;
        ix[d] = v < 0 ? v + nfx : v >= nfx ? v - nfx : v;
    }
    int contiguous = l0[0] >= 0 && l0[0] + wx <= nfx;
    float accr = 0.0f, acci = 0.0f;
    for (int dz = 0; dz < wz; dz++) {
        int64_t iz = l0[2] + dz;
        iz = iz < 0 ? iz + nfz : iz >= nfz ? iz - nfz : iz;
        for (int dy = 0; dy < wy; dy++) {
            int64_t iy = l0[1] + dy;
            iy = iy < 0 ? iy + nfy : iy >= nfy ? iy - nfy : iy;
            const float *row = fw + 2 * ((size_t)iz * (size_t)nfy + (size_t)iy) * (size_t)nfx;
            float sr = 0.0f, si = 0.0f;
            if (contiguous) {
                const float *r = row + 2 * l0[0];
                for (int d = 0; d < wx; d++) {
                    sr += kv[0][d] * r[2 * d];
                    si += kv[0][d] * r[2 * d + 1];
                }
            } else {
                for (int d = 0; d < wx; d++) {
                    sr += kv[0][d] * row[2 * ix[d]];
                    si += kv[0][d] * row[2 * ix[d] + 1];
                }
            }
            float kk = kv[2][dz] * kv[1][dy];
            accr += kk * sr;
            acci += kk * si;
        }
    }
    *outr = accr;
    *outi = acci;
}

/* Sample weights as read by spreading: re/im with a stride (split or
 * interleaved), times the pre-phase. */
typedef struct lm_nufft_src {
    const float *re, *im;
    int64_t stride;
} lm_nufft_src;

/* real: into the r2c grid (src.im must be NULL and there is no phase) */
/* A block's box on the fine grid: along the blocked axes its own points
 * plus a halo of w/2 + 1 (every write of its samples lies inside), along
 * the others the whole axis. */
typedef struct spread_box {
    int64_t o[3], len[3];
    int boxed[3];
} spread_box;

static void block_box(const lm_nufft_plan *p, int b1, int b2, int b0, spread_box *bx)
{
    int a1 = p->dim == 3 ? 2 : 1, a2 = p->dim == 3 ? 1 : 0;
    for (int a = 0; a < 3; a++) {
        bx->o[a] = 0;
        bx->len[a] = p->nf[a];
        bx->boxed[a] = 0;
    }
    const int ax[3] = {a1, a2, 0}, bi[3] = {b1, b2, b0}, nb[3] = {p->nb1, p->nb2, p->nb0};
    for (int q = 0; q < 3; q++) {
        int a = ax[q];
        if (p->nf[a] == 1 || (q == 2 && nb[q] == 1)) /* x is boxed only when blocked */
            continue;
        int64_t nf = p->nf[a], h = p->w[a] / 2 + 1;
        /* integer coordinates b with b * nb / nf == bi (see set_points) */
        int64_t bs = ((int64_t)bi[q] * nf + nb[q] - 1) / nb[q], be = ((int64_t)(bi[q] + 1) * nf + nb[q] - 1) / nb[q];
        bx->o[a] = bs - h;
        bx->len[a] = be - bs + 2 * h;
        bx->boxed[a] = 1;
    }
}

/* Spreads sample j into a block-local double buffer (el = 1 real, 2 complex). */
static inline void spread_one_box(const lm_nufft_plan *p, double *loc, const spread_box *bx, int el, int64_t j,
                                  double vr, double vi)
{
    float kv[3][LM_NUFFT_MAXW];
    int64_t l0[3], idx[3][LM_NUFFT_MAXW];
    sample_rows(p, j, l0, kv);
    for (int a = 0; a < 3; a++) {
        int64_t nf = p->nf[a];
        for (int d = 0; d < p->w[a]; d++) {
            int64_t v = l0[a] + d;
            idx[a][d] = bx->boxed[a] ? v - bx->o[a] : v < 0 ? v + nf : v >= nf ? v - nf : v;
        }
    }
    const int wx = p->w[0], wy = p->w[1], wz = p->w[2];
    const int64_t lx = bx->len[0], ly = bx->len[1];
    for (int dz = 0; dz < wz; dz++)
        for (int dy = 0; dy < wy; dy++) {
            double kk = (double)kv[2][dz] * kv[1][dy], ar = vr * kk, ai = vi * kk;
            double *row = loc + (size_t)el * (size_t)((idx[2][dz] * ly + idx[1][dy]) * lx);
            if (el == 1) {
                for (int d = 0; d < wx; d++)
                    row[idx[0][d]] += ar * kv[0][d];
            } else {
                for (int d = 0; d < wx; d++) {
                    row[2 * idx[0][d]] += ar * kv[0][d];
                    row[2 * idx[0][d] + 1] += ai * kv[0][d];
                }
            }
        }
}

/* Adds a block's buffer into the fine grid (rows of rs floats, el per point). */
static void add_box(const lm_nufft_plan *p, float *fw, const double *loc, const spread_box *bx, int el, int64_t rs)
{
    const int64_t nfx = p->nf[0], nfy = p->nf[1], nfz = p->nf[2];
    for (int64_t z = 0; z < bx->len[2]; z++) {
        int64_t gz = bx->o[2] + z;
        gz = gz < 0 ? gz + nfz : gz >= nfz ? gz - nfz : gz;
        for (int64_t y = 0; y < bx->len[1]; y++) {
            int64_t gy = bx->o[1] + y;
            gy = gy < 0 ? gy + nfy : gy >= nfy ? gy - nfy : gy;
            float *row = fw + (gz * nfy + gy) * rs;
            const double *src = loc + (size_t)el * (size_t)((z * bx->len[1] + y) * bx->len[0]);
            if (!bx->boxed[0]) {
                for (int64_t x = 0; x < el * nfx; x++)
                    row[x] += (float)src[x];
                continue;
            }
            for (int64_t x = 0; x < bx->len[0]; x++) {
                int64_t gx = bx->o[0] + x;
                gx = gx < 0 ? gx + nfx : gx >= nfx ? gx - nfx : gx;
                for (int e = 0; e < el; e++)
                    row[el * gx + e] += (float)src[el * x + e];
            }
        }
    }
}

/* Spreads every sample, block by block, one colour at a time. Blocks dense
 * enough that grid points receive many additions (the centre of radial
 * k-space: thousands) accumulate in a double buffer first, so float
 * rounding does not grow with the number of additions; measured on B128's
 * Q at tolerance 1e-6 that is the difference between 2e-5 and 2e-6.
 * real: into the r2c grid (src.im must be NULL and there is no phase). */
static void spread_all(lm_nufft_plan *p, lm_nufft_src src, int real)
{
    float *fw = (float *)p->fw;
    const int nb1 = p->nb1, nb2 = p->nb2, nb0 = p->nb0, el = real ? 1 : 2, ncolours = nb0 > 1 ? 8 : 4;
    const int64_t rs = real ? 2 * (p->nf[0] / 2 + 1) : 2 * p->nf[0];
    double wd = 1.0;
    for (int a = 0; a < 3; a++)
        wd *= p->w[a];
#pragma omp parallel num_threads(p->nthreads)
    {
        double *loc = NULL;
        size_t cap = 0;
        for (int colour = 0; colour < ncolours; colour++) {
#pragma omp for schedule(dynamic, 1)
            for (int b = 0; b < nb1 * nb2 * nb0; b++) {
                int b0 = b % nb0, b12 = b / nb0, b1 = b12 / nb2, b2 = b12 % nb2;
                if ((((b0 & 1) << 2) | ((b1 & 1) << 1) | (b2 & 1)) != colour)
                    continue;
                int64_t j0 = p->boff[b], j1 = p->boff[b + 1];
                spread_box bx;
                block_box(p, b1, b2, b0, &bx);
                size_t vol = (size_t)(bx.len[0] * bx.len[1] * bx.len[2]) * (size_t)el;
                /* worth a buffer when points get > 4 additions on average */
                int dense = (double)(j1 - j0) * wd > 4.0 * (double)vol / el;
                if (dense && vol > cap) {
                    free(loc);
                    cap = vol;
                    if (!(loc = malloc(cap * sizeof *loc)))
                        cap = 0;
                }
                if (dense && loc) {
                    memset(loc, 0, vol * sizeof *loc);
                    for (int64_t j = j0; j < j1; j++) {
                        int64_t i = p->perm[j];
                        double vr = src.re[i * src.stride], vi = src.im ? src.im[i * src.stride] : 0.0;
                        if (p->ph && !real) {
                            double cr = p->ph[2 * j], ci = p->ph[2 * j + 1], tr = vr * cr - vi * ci;
                            vi = vr * ci + vi * cr;
                            vr = tr;
                        }
                        spread_one_box(p, loc, &bx, el, j, vr, vi);
                    }
                    add_box(p, fw, loc, &bx, el, rs);
                    continue;
                }
                if (real) {
                    for (int64_t j = j0; j < j1; j++)
                        spread_one_real(p, fw, j, src.re[p->perm[j] * src.stride]);
                    continue;
                }
                for (int64_t j = j0; j < j1; j++) {
                    int64_t i = p->perm[j];
                    float vr = src.re[i * src.stride], vi = src.im ? src.im[i * src.stride] : 0.0f;
                    if (p->ph) {
                        float cr = p->ph[2 * j], ci = p->ph[2 * j + 1];
                        float tr = vr * cr - vi * ci;
                        vi = vr * ci + vi * cr;
                        vr = tr;
                    }
                    spread_one(p, fw, j, vr, vi);
                }
            }
        }
        free(loc);
    }
}

/* Interpolates at every sample; writes re/im (with a stride) at the caller's
 * index, times the post-phase. */
static void interp_all(lm_nufft_plan *p, float *out_re, float *out_im, int64_t stride)
{
    const float *fw = (const float *)p->fw;
#pragma omp parallel for num_threads(p->nthreads) schedule(dynamic, 1024)
    for (int64_t j = 0; j < p->m; j++) {
        float vr, vi;
        interp_one(p, fw, j, &vr, &vi);
        if (p->ph) {
            float cr = p->ph[2 * j], ci = p->ph[2 * j + 1];
            float tr = vr * cr - vi * ci;
            vi = vr * ci + vi * cr;
            vr = tr;
        }
        int64_t i = p->perm[j];
        out_re[i * stride] = vr;
        out_im[i * stride] = vi;
    }
}

/* Real interpolation from the real-layout grid (density compensation). */
static void interp_all_real(lm_nufft_plan *p, float *out)
{
    const float *fr = (const float *)p->fw;
    const int64_t nfx = p->nf[0], nfy = p->nf[1], nfz = p->nf[2], rs = 2 * (nfx / 2 + 1);
    const int wx = p->w[0], wy = p->w[1], wz = p->w[2];
#pragma omp parallel for num_threads(p->nthreads) schedule(dynamic, 1024)
    for (int64_t j = 0; j < p->m; j++) {
        float kv[3][LM_NUFFT_MAXW];
        int64_t l0[3], ix[LM_NUFFT_MAXW];
        sample_rows(p, j, l0, kv);
        for (int d = 0; d < wx; d++) {
            int64_t q = l0[0] + d;
            ix[d] = q < 0 ? q + nfx : q >= nfx ? q - nfx : q;
        }
        float acc = 0.0f;
        for (int dz = 0; dz < wz; dz++) {
            int64_t iz = l0[2] + dz;
            iz = iz < 0 ? iz + nfz : iz >= nfz ? iz - nfz : iz;
            for (int dy = 0; dy < wy; dy++) {
                int64_t iy = l0[1] + dy;
                iy = iy < 0 ? iy + nfy : iy >= nfy ? iy - nfy : iy;
                const float *row = fr + ((size_t)iz * (size_t)nfy + (size_t)iy) * (size_t)rs;
                float sr = 0.0f;
                for (int d = 0; d < wx; d++)
                    sr += kv[0][d] * row[ix[d]];
                acc += kv[2][dz] * kv[1][dy] * sr;
            }
        }
        out[p->perm[j]] = acc;
    }
}

/* Fine-grid index of output index i along an axis: mode i - g/2, wrapped. */
static inline int64_t fine_index(int64_t i, int64_t g, int64_t nf)
{
    int64_t j = i - g / 2;
    return j < 0 ? j + nf : j;
}

static void grid_out(lm_nufft_plan *p, float *out_re, float *out_im, int64_t stride)
{
    const float *fw = (const float *)p->fw;
    const int64_t g0 = p->g[0], g1 = p->g[1], g2 = p->g[2];
#pragma omp parallel for num_threads(p->nthreads) schedule(static)
    for (int64_t zy = 0; zy < g2 * g1; zy++) {
        int64_t iz = zy / g1, iy = zy % g1;
        int64_t fz = fine_index(iz, g2, p->nf[2]), fy = fine_index(iy, g1, p->nf[1]);
        float dzy = p->deap[2][iz] * p->deap[1][iy];
        const float *row = fw + 2 * ((size_t)fz * (size_t)p->nf[1] + (size_t)fy) * (size_t)p->nf[0];
        int64_t o = zy * g0;
        for (int64_t ix = 0; ix < g0; ix++) {
            int64_t fx = fine_index(ix, g0, p->nf[0]);
            float d = dzy * p->deap[0][ix];
            out_re[(o + ix) * stride] = row[2 * fx] * d;
            out_im[(o + ix) * stride] = row[2 * fx + 1] * d;
        }
    }
}

/* Output of the r2c path: R = forward transform of the real grid, stored
 * for x modes 0 .. nx/2; mode j with jx < 0 is conj(R(-j)); sign +1 is the
 * conjugate of the forward transform. */
static void grid_out_real(lm_nufft_plan *p, float *out_re, float *out_im, int64_t stride)
{
    const float *fw = (const float *)p->fw;
    const int64_t g0 = p->g[0], g1 = p->g[1], g2 = p->g[2];
    const int64_t nx = p->nf[0], ny = p->nf[1], nz = p->nf[2], hx = nx / 2 + 1;
    const float conj_out = p->sign > 0 ? -1.0f : 1.0f;
#pragma omp parallel for num_threads(p->nthreads) schedule(static)
    for (int64_t zy = 0; zy < g2 * g1; zy++) {
        int64_t iz = zy / g1, iy = zy % g1;
        int64_t jz = iz - g2 / 2, jy = iy - g1 / 2;
        int64_t fz = jz < 0 ? jz + nz : jz, fy = jy < 0 ? jy + ny : jy;
        int64_t mz = jz > 0 ? nz - jz : -jz, my = jy > 0 ? ny - jy : -jy; /* mirrored */
        const float *row = fw + 2 * ((size_t)fz * (size_t)ny + (size_t)fy) * (size_t)hx;
        const float *mrow = fw + 2 * ((size_t)mz * (size_t)ny + (size_t)my) * (size_t)hx;
        float dzy = p->deap[2][iz] * p->deap[1][iy];
        int64_t o = zy * g0;
        for (int64_t ix = 0; ix < g0; ix++) {
            int64_t jx = ix - g0 / 2;
            float re, im;
            if (jx >= 0) {
                re = row[2 * jx];
                im = row[2 * jx + 1];
            } else {
                re = mrow[-2 * jx];
                im = -mrow[-2 * jx + 1];
            }
            float d = dzy * p->deap[0][ix];
            out_re[(o + ix) * stride] = re * d;
            out_im[(o + ix) * stride] = conj_out * im * d;
        }
    }
}

static void grid_in(lm_nufft_plan *p, const float *in_re, const float *in_im, int64_t stride)
{
    float *fw = (float *)p->fw;
    const int64_t g0 = p->g[0], g1 = p->g[1], g2 = p->g[2];
#pragma omp parallel for num_threads(p->nthreads) schedule(static)
    for (int64_t zy = 0; zy < g2 * g1; zy++) {
        int64_t iz = zy / g1, iy = zy % g1;
        int64_t fz = fine_index(iz, g2, p->nf[2]), fy = fine_index(iy, g1, p->nf[1]);
        float dzy = p->deap[2][iz] * p->deap[1][iy];
        float *row = fw + 2 * ((size_t)fz * (size_t)p->nf[1] + (size_t)fy) * (size_t)p->nf[0];
        int64_t o = zy * g0;
        for (int64_t ix = 0; ix < g0; ix++) {
            int64_t fx = fine_index(ix, g0, p->nf[0]);
            float d = dzy * p->deap[0][ix];
            row[2 * fx] = in_re[(o + ix) * stride] * d;
            row[2 * fx + 1] = in_im ? in_im[(o + ix) * stride] * d : 0.0f;
        }
    }
}

static lm_code execute_strided(lm_nufft_plan *p, const float *in_re, const float *in_im,
                               float *out_re, float *out_im, int64_t stride, const lm_ctl *ctl,
                               lm_error *err)
{
    if (!p->have_points)
        return lm_fail(err, LM_ERR_INVALID, "nufft: execute before set_points");
    if (lm_ctl_report(ctl, 0.0))
        return lm_fail(err, LM_ERR_CANCELLED, "nufft: cancelled");
    if (p->type == 1) {
        int real = !in_im && !p->ph && make_real_passes(p);
        zero_fine(p, real);
        lm_nufft_src src = {in_re, in_im, stride};
        spread_all(p, src, real);
        if (lm_ctl_report(ctl, 0.35))
            return lm_fail(err, LM_ERR_CANCELLED, "nufft: cancelled");
        if (real) {
            for (int i = 0; i < p->nrpl; i++) {
                fftwf_complex *a = p->fw + p->roff[i];
                if (i == 0)
                    fftwf_execute_dft_r2c(p->rpl[i], (float *)a, a);
                else
                    fftwf_execute_dft(p->rpl[i], a, a);
            }
        } else {
            for (int i = 0; i < p->ncpl; i++)
                fftwf_execute_dft(p->cpl[i], p->fw + p->coff[i], p->fw + p->coff[i]);
        }
        if (lm_ctl_report(ctl, 0.9))
            return lm_fail(err, LM_ERR_CANCELLED, "nufft: cancelled");
        if (real)
            grid_out_real(p, out_re, out_im, stride);
        else
            grid_out(p, out_re, out_im, stride);
    } else {
        zero_fine(p, 0);
        grid_in(p, in_re, in_im, stride);
        if (lm_ctl_report(ctl, 0.1))
            return lm_fail(err, LM_ERR_CANCELLED, "nufft: cancelled");
        for (int i = p->ncpl - 1; i >= 0; i--) /* z, y, x: the zero columns are skipped */
            fftwf_execute_dft(p->cpl[i], p->fw + p->coff[i], p->fw + p->coff[i]);
        if (lm_ctl_report(ctl, 0.65))
            return lm_fail(err, LM_ERR_CANCELLED, "nufft: cancelled");
        interp_all(p, out_re, out_im, stride);
    }
    if (lm_ctl_report(ctl, 1.0))
        return lm_fail(err, LM_ERR_CANCELLED, "nufft: cancelled");
    return LM_OK;
}

lm_code lm_nufft_execute(lm_nufft_plan *p, const float *in_re, const float *in_im, float *out_re,
                         float *out_im, const lm_ctl *ctl, lm_error *err)
{
    if (!in_re || !out_re || !out_im)
        return lm_fail(err, LM_ERR_INVALID, "nufft: execute without data");
    return execute_strided(p, in_re, in_im, out_re, out_im, 1, ctl, err);
}

lm_code lm_nufft_execute_c(lm_nufft_plan *p, const lm_cfloat *in, lm_cfloat *out, const lm_ctl *ctl,
                           lm_error *err)
{
    if (!in || !out)
        return lm_fail(err, LM_ERR_INVALID, "nufft: execute without data");
    const float *i = (const float *)in;
    float *o = (float *)out;
    return execute_strided(p, i, i + 1, o, o + 1, 2, ctl, err);
}

typedef struct set_ctl {
    const lm_ctl *parent;
    int64_t c, nc;
} set_ctl;

static int set_progress(void *user, double f)
{
    const set_ctl *sc = user;
    return lm_ctl_report(sc->parent, ((double)sc->c + f) / (double)sc->nc);
}

/* The single-threaded twins of the passes and a fine grid per further
 * thread, made on the first lm_nufft_execute_sets that runs sets side by
 * side; 0 when they cannot be made (the sets then run one by one). */
static int make_set_workers(lm_nufft_plan *p, int real)
{
    if (!p->ncpl1) {
        pthread_mutex_lock(&fftw_lock);
        if (lm_fftw_setup())
            fftwf_plan_with_nthreads(1);
        int64_t off[7];
        lm_code rc = make_complex_passes_locked(p, p->cpl1, off, &p->ncpl1);
        pthread_mutex_unlock(&fftw_lock);
        if (rc != LM_OK || p->ncpl1 != p->ncpl)
            return 0;
    }
    if (real && !p->nrpl1 && !make_real_passes_threads(p, 1, p->rpl1, &p->nrpl1))
        return 0;
    if (!p->fwt) {
        const size_t bytes = (size_t)(p->nf[0] * p->nf[1] * p->nf[2]) * sizeof(fftwf_complex);
        if (!(p->fwt = calloc((size_t)(p->nthreads - 1), sizeof *p->fwt)))
            return 0;
        for (p->nfwt = 0; p->nfwt < p->nthreads - 1; p->nfwt++)
            if (!(p->fwt[p->nfwt] = fftwf_malloc(bytes)))
                return 0;
    }
    return p->nfwt == p->nthreads - 1;
}

lm_code lm_nufft_execute_sets(lm_nufft_plan *p, int64_t nsets, const float *in_re, const float *in_im,
                              int64_t in_dist, float *out_re, float *out_im, int64_t out_dist, const lm_ctl *ctl,
                              lm_error *err)
{
    if (!in_re || !out_re || !out_im || nsets < 0)
        return lm_fail(err, LM_ERR_INVALID, "nufft: execute without data");
    if (!p->have_points)
        return lm_fail(err, LM_ERR_INVALID, "nufft: execute before set_points");
    const int64_t grid = p->nf[0] * p->nf[1] * p->nf[2];
    const int real = p->type == 1 && !in_im && !p->ph && make_real_passes(p);
    /* side by side only when every thread has sets and the extra grids are small */
    const int side = p->nthreads > 1 && nsets >= p->nthreads &&
                     (double)(p->nthreads - 1) * (double)grid * sizeof(fftwf_complex) <= LM_NUFFT_SETS_BYTES &&
                     make_set_workers(p, real);
    if (!side) { /* each execute reports 0 .. 1: with sets, its share of the whole */
        lm_code rc = LM_OK;
        set_ctl sc = {.parent = ctl, .nc = nsets};
        const lm_ctl sub = {.progress = set_progress, .user = &sc, .threads = ctl ? ctl->threads : 0};
        for (int64_t c = 0; c < nsets && rc == LM_OK; c++) {
            sc.c = c;
            rc = execute_strided(p, in_re + c * in_dist, in_im ? in_im + c * in_dist : NULL, out_re + c * out_dist,
                                 out_im + c * out_dist, 1, nsets > 1 && ctl ? &sub : ctl, err);
        }
        return rc;
    }
    /* Each thread runs whole sets on its own grid with single-threaded
     * passes: one parallel region for all the sets instead of four per set
     * (whose barriers and idle spinning cost more than the sets' work on a
     * busy machine). The calling thread reports progress and takes a
     * cancellation to every thread before its next set. */
    int64_t next = 0, done = 0;
    int cancelled = lm_ctl_report(ctl, 0.0);
#pragma omp parallel num_threads(p->nthreads) if (!cancelled)
    {
        const int me = omp_get_thread_num();
        lm_nufft_plan w = *p;
        w.nthreads = 1;
        w.fw = me == 0 ? p->fw : p->fwt[me - 1];
        memcpy(w.cpl, p->cpl1, sizeof w.cpl);
        memcpy(w.rpl, p->rpl1, sizeof w.rpl);
        for (;;) {
            int64_t c;
            int stop;
#pragma omp atomic read
            stop = cancelled;
            if (stop)
                break;
#pragma omp atomic capture
            c = next++;
            if (c >= nsets)
                break;
            (void)execute_strided(&w, in_re + c * in_dist, in_im ? in_im + c * in_dist : NULL,
                                  out_re + c * out_dist, out_im + c * out_dist, 1, NULL, NULL);
            int64_t d;
#pragma omp atomic capture
            d = ++done;
            if (me == 0 && lm_ctl_report(ctl, (double)d / (double)nsets)) {
#pragma omp atomic write
                cancelled = 1;
            }
        }
    }
    if (cancelled || lm_ctl_report(ctl, 1.0))
        return lm_fail(err, LM_ERR_CANCELLED, "nufft: cancelled");
    return LM_OK;
}

lm_code lm_nufft_density(lm_nufft_plan *p, int iterations, float *w, const lm_ctl *ctl, lm_error *err)
{
    if (iterations < 1)
        return lm_fail(err, LM_ERR_INVALID, "nufft: %d density iterations", iterations);
    if (!p->have_points)
        return lm_fail(err, LM_ERR_INVALID, "nufft: density before set_points");
    int64_t m = p->m;
    float *cw = lm_alloc((size_t)m, sizeof(float), err, "density compensation");
    if (!cw)
        return LM_ERR_NOMEM;
    /* Target of C C^T w for a uniform density: the 1D kernel integral S
     * twice (spread, then interpolate) per axis, times the k volume of a
     * fine-grid cell (s/nf per axis). */
    double target = 1.0;
    for (int a = 0; a < 3; a++)
        if (p->nf[a] > 1)
            target *= p->S[a] * p->S[a] * p->s_k[a] / (double)p->nf[a];
    for (int64_t i = 0; i < m; i++)
        w[i] = 1.0f;
    lm_code rc = LM_OK;
    for (int it = 0; it < iterations; it++) {
        if (lm_ctl_report(ctl, (double)it / iterations)) {
            rc = lm_fail(err, LM_ERR_CANCELLED, "nufft: density compensation cancelled");
            break;
        }
        /* real weights, real grid (the r2c layout; no FFT, no phase) */
        zero_fine(p, 1);
        lm_nufft_src src = {w, NULL, 1};
        spread_all(p, src, 1);
        interp_all_real(p, cw);
        for (int64_t i = 0; i < m; i++)
            if (cw[i] > 0.0f)
                w[i] = (float)((double)w[i] * target / (double)cw[i]);
    }
    free(cw);
    return rc;
}
