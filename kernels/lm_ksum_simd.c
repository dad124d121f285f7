/* Vectorised single-precision kernels:
 *
 * cpu-simd       the direct sum out(x_j) = sum_m w_m exp(+i 2 pi (k_m . x_j + f_j t_m)),
 *                16 points per vector, all cores, k data in L1-sized chunks,
 *                polynomial sin/cos after an exact range reduction in cycles;
 *                the off-resonance term f_j t_m (lm_ksum_in.t with
 *                lm_points.f) costs one more multiply-add per pair.
 * cpu-separable  grid points only: the same sum as a complex matrix product
 *                (exp of a sum over axes is the product of per-axis phasors).
 *
 * The vector code is written with GCC/Clang vector extensions, so it follows
 * -march: one AVX-512 instruction per operation on this project's machines,
 * pairs of AVX2 (or NEON/SSE) instructions elsewhere. Rounding uses the
 * AVX-512 instruction where present and the 1.5*2^23 trick otherwise.
 *
 * Accuracy (against cpu-dp, relative 2-norm): the phase is reduced in double
 * to r in [-1/2, 1/2] cycles before it meets float, so its error is a few
 * 1e-7 cycles whatever |k.x| is; the polynomials add ~1e-7; sums run in
 * float over chunks of samples and in double across chunks. Measured errors
 * are ~1e-6 (tests/kernels).
 *
 * Off-resonance on a grid: a vector's 16 voxels take the midrange fc of
 * their field map into the double-precision base phase (fc t_m, reduced
 * with the rest), and the remainder (f_l - fc) t_m joins per lane in float:
 * for a smooth field map that product is small and keeps the phase's error
 * near 1e-7 cycles whatever |f t| is. Explicit points add f t in double. */
#include "lm_kernels_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#define LM_NL 16 /* floats per vector */

typedef float lm_vf __attribute__((vector_size(64)));
typedef float lm_vfu __attribute__((vector_size(64), aligned(4), may_alias));
typedef double lm_vd __attribute__((vector_size(64)));
typedef double lm_vdu __attribute__((vector_size(64), aligned(8), may_alias));
typedef float lm_vf8 __attribute__((vector_size(32)));
typedef float lm_vf8u __attribute__((vector_size(32), aligned(4), may_alias));

/* The small helpers are macros, and the bigger ones take vectors by
 * pointer: without AVX-512, passing 64-byte vectors by value draws GCC and
 * Clang ABI diagnostics (-Wpsabi) although nothing here crosses an ABI. */
#define LM_VLOAD(p) (*(const lm_vfu *)(p))
#define LM_VSTORE(p, v) (*(lm_vfu *)(p) = (v))
#define LM_SPLAT(x) ((lm_vf){0} + (float)(x))
/* A broadcast without the scalar add that 0 + x costs (x - 0 is x for
 * every x, -0 included, so the compiler drops it). */
#define LM_BCAST(x) ((float)(x) - (lm_vf){0})
#define LM_SPLATD(x) ((lm_vd){0} + (double)(x))

/* Round to nearest integer (ties to even): for |t| < 2^22 (float) and
 * |t| < 2^51 (double) where the AVX-512 instruction is missing. */
#if defined(__AVX512F__)
#define LM_VROUND(t) \
    ((lm_vf)_mm512_roundscale_ps((__m512)(t), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
#define LM_VROUNDD(t) \
    ((lm_vd)_mm512_roundscale_pd((__m512d)(t), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
#else
/* 1.5 * 2^23 and 1.5 * 2^52: adding them rounds away the fraction. */
#define LM_VROUND(t) (((t) + LM_SPLAT(12582912.0f)) - LM_SPLAT(12582912.0f))
#define LM_VROUNDD(t) (((t) + LM_SPLATD(6755399441055744.0)) - LM_SPLATD(6755399441055744.0))
#endif

/* Two vectors of 8 doubles to one of 16 floats. */
#define LM_VD2F(lo, hi)                                                                          \
    __builtin_shufflevector(__builtin_convertvector((lo), lm_vf8),                               \
                            __builtin_convertvector((hi), lm_vf8), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, \
                            10, 11, 12, 13, 14, 15)

/* Scalar: t minus its nearest integer, in [-1/2, 1/2]. */
static inline double lm_frac(double t)
{
    return t - rint(t);
}

/* Half-angle sin/cos: with s = sqrt2 sin(pi r), c = sqrt2 cos(pi r),
 *   sin(2 pi r) = s c,   cos(2 pi r) = 1 - s^2.
 * Polynomials in r^2 on |r| <= 1/2 (Chebyshev fits of degree 9 and 10, abs
 * error 2e-8 and 3e-10 before rounding to float), times sqrt2 so that the
 * double-angle step costs one multiply and one fused multiply-add. Max
 * error in float: 6e-7 (cos), 2.5e-7 (sin).
 *
 * The mean error over a period matters more than the max: with positive
 * weights (Q's |phi|^2) a bias b in cos adds b * sum(w) to every point,
 * coherently, and costs ~b sqrt(M) in relative error (8e-6 at M = 20,000
 * for the plain fit, whose b is -5.6e-8). The S coefficients below are the
 * fit's, rounded to float and then moved by a few ulps (S3 -1, S5 -5,
 * S9 -12) so that the mean error of cos over r uniform in [-1/2, 1/2] is
 * 1e-10; sin's is zero by symmetry. C4 is moved so that the points where
 * weights' phases sit for real or imaginary data (r = 0, 1/4, 1/2) come out
 * exact, except cos at r = 1/2 (-1 + 6e-8, as close as sqrt2 scaling allows). */
#define LM_S1 4.442883015e+00f
#define LM_S3 (-7.308246136e+00f)
#define LM_S5 3.606352806e+00f
#define LM_S7 (-8.461104035e-01f)
#define LM_S9 1.098219529e-01f
#define LM_C0 1.4142135620607717f
#define LM_C2 (-6.9788641096726462f)
#define LM_C4 5.739882469e+00f /* fit + 2 ulps: c(1/2) = 0, s(1/4) c(1/4) = 1 exactly */
#define LM_C6 (-1.8882748474707349f)
#define LM_C8 0.33225118871134949f
#define LM_C10 (-0.034501058039088947f)

static inline __attribute__((always_inline)) void lm_half_sc(const lm_vf *rp, lm_vf *s,
                                                             lm_vf *c)
{
    lm_vf r = *rp, r2 = r * r;
    lm_vf p = LM_SPLAT(LM_S9);
    p = p * r2 + LM_S7;
    p = p * r2 + LM_S5;
    p = p * r2 + LM_S3;
    p = p * r2 + LM_S1;
    *s = p * r;
    lm_vf q = LM_SPLAT(LM_C10);
    q = q * r2 + LM_C8;
    q = q * r2 + LM_C6;
    q = q * r2 + LM_C4;
    q = q * r2 + LM_C2;
    *c = q * r2 + LM_C0;
}

/* sin(2 pi r), cos(2 pi r) for |r| <= 1/2. */
static inline __attribute__((always_inline)) void lm_sincos2pi(const lm_vf *r, lm_vf *sn,
                                                               lm_vf *cs)
{
    lm_vf s, c;
    lm_half_sc(r, &s, &c);
    *sn = s * c;
    *cs = 1.0f - s * s;
}

/* Samples per chunk: the per-chunk data (tables, steps, amplitudes) stays in
 * L1, and float partial sums stay short before they go into double. */
#define LM_SIMD_K 1024

/* Per-sample data both kernels share: the weight as amplitude and phase,
 * w = a exp(i 2 pi th), so that the weight's phase joins the exact
 * reduction in cycles and the inner loop only scales by a real number. */
typedef struct lm_wprep {
    float *amp;   /* a_m, signed */
    double *th;   /* th_m in cycles, in [-1/4, 1/4] */
} lm_wprep;

static lm_code lm_wprep_make(const lm_ksum_in *in, lm_wprep *w, const char *what, lm_error *err)
{
    w->amp = lm_alloc((size_t)in->m, sizeof(float), err, what);
    w->th = w->amp ? lm_alloc((size_t)in->m, sizeof(double), err, what) : NULL;
    if (!w->th) {
        free(w->amp);
        w->amp = NULL;
        return err ? err->code : LM_ERR_NOMEM;
    }
    for (int64_t m = 0; m < in->m; m++) {
        if (in->wi) {
            /* Signed amplitude, th in [-1/4, 1/4]: real weights of either
             * sign keep th = 0, where sin/cos are exact (a point sum such
             * as the centre voxel's adds these errors coherently). */
            double re = in->wr[m], im = in->wi[m];
            double a = hypot(re, im), th = atan2(im, re) / (2.0 * M_PI);
            if (th > 0.25) {
                th -= 0.5;
                a = -a;
            } else if (th < -0.25) {
                th += 0.5;
                a = -a;
            }
            w->amp[m] = (float)a;
            w->th[m] = th;
        } else {
            w->amp[m] = in->wr[m];
            w->th[m] = 0.0;
        }
    }
    return LM_OK;
}

static void lm_wprep_free(lm_wprep *w)
{
    free(w->amp);
    free(w->th);
}

/* ---- cpu-simd ------------------------------------------------------------ */

typedef struct lm_simd_ctx {
    const lm_ksum_in *in;
    const lm_points *pts;
    float *out_re, *out_im;
    lm_wprep w;
    float *step;         /* grid: frac(kx / s0) per sample */
    double *kd;          /* explicit: (th, kx, ky, kz) per sample */
    const float *tm;     /* sample times with pts->f, or NULL: no off-resonance */
    int V;               /* vectors per work unit */
    int64_t nseg;        /* grid: segments per row */
    lm_wsets ws;         /* nsets > 1: the weights in blocks of sets */
    int oom;             /* set by a worker that could not get its accumulators */
} lm_simd_ctx;

/* Lane offsets from the centre lane of a 16-voxel block: |step * L| <= 4,
 * so t = base + step * L stays below 4.5 and keeps ~2.4e-7 cycles. */
static const lm_vf lm_lane_off = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};

/* Grid: one segment of a row, V vectors of 16 consecutive voxels. The phase
 * of voxel (centre + L) for sample m is base[v][m] + step[m] * L: base comes
 * reduced from double, step = frac(kx/s) is exact enough in float. */
static inline __attribute__((always_inline)) void
lm_simd_grid_chunk(const int V, const int T, int64_t K, const float *const *base, const float *step,
                   const float *amp, const float *tm, const lm_vf *df, double *acc_re, double *acc_im)
{
    lm_vf ar[4] = {0}, ai[4] = {0};
    for (int64_t m = 0; m < K; m++) {
        lm_vf st = LM_SPLAT(step[m]), a = LM_SPLAT(amp[m]);
        lm_vf tt = T ? LM_BCAST(tm[m]) : (lm_vf){0};
        for (int v = 0; v < V; v++) {
            lm_vf t = base[v][m] + st * lm_lane_off;
            if (T)
                t += df[v] * tt; /* the lane's field map off the vector's midrange */
            lm_vf r = t - LM_VROUND(t);
            lm_vf s, c;
            lm_half_sc(&r, &s, &c);
            lm_vf as = a * s;
            ar[v] += a * (1.0f - s * s);
            ai[v] += as * c;
        }
    }
    for (int v = 0; v < V; v++)
        for (int l = 0; l < LM_NL; l++) {
            acc_re[v * LM_NL + l] += ar[v][l];
            acc_im[v * LM_NL + l] += ai[v][l];
        }
}

/* The field map of V vectors of a row from x0 (voxel j0 + x0 on): per
 * vector the midrange fc of its voxels' f, and per lane f - fc in float
 * (0 on lanes past the row's end). */
static void lm_simd_grid_fmap(const lm_points *p, int64_t j0, int64_t x0, int V, double *fc, lm_vf *df)
{
    for (int v = 0; v < V; v++) {
        const int64_t xs = x0 + v * LM_NL;
        const int64_t nl = p->g[0] - xs < LM_NL ? p->g[0] - xs : LM_NL;
        const float *f = p->f + j0 + xs;
        float lo = nl > 0 ? f[0] : 0.0f, hi = lo;
        for (int64_t l = 1; l < nl; l++) {
            lo = f[l] < lo ? f[l] : lo;
            hi = f[l] > hi ? f[l] : hi;
        }
        fc[v] = 0.5 * ((double)lo + (double)hi);
        df[v] = (lm_vf){0};
        for (int64_t l = 0; l < nl; l++)
            df[v][l] = (float)((double)f[l] - fc[v]);
    }
}

/* One vector's base phases for a chunk: th + k . (x centre) (+ fc t), in
 * double, reduced, then float. th may be NULL (weight sets). */
static inline __attribute__((always_inline)) void
lm_simd_base_row(float *tv, int64_t K, const double *th, const float *kx, const float *ky, const float *kz,
                 const float *tm, double xv, double y, double z, double fc)
{
    if (tm) {
#pragma omp simd
        for (int64_t m = 0; m < K; m++) {
            double t = (th ? th[m] : 0.0) + (double)ky[m] * y + (double)kz[m] * z + (double)kx[m] * xv +
                       fc * (double)tm[m];
            tv[m] = (float)(t - rint(t));
        }
    } else {
#pragma omp simd
        for (int64_t m = 0; m < K; m++) {
            double t = (th ? th[m] : 0.0) + (double)ky[m] * y + (double)kz[m] * z + (double)kx[m] * xv;
            tv[m] = (float)(t - rint(t));
        }
    }
}

static void lm_simd_grid_unit(void *vctx, int64_t unit)
{
    const lm_simd_ctx *c = vctx;
    const lm_ksum_in *in = c->in;
    const lm_points *p = c->pts;
    const int V = c->V;
    int64_t row = unit / c->nseg, seg = unit % c->nseg;
    int64_t i1 = row % p->g[1], i2 = row / p->g[1];
    double y = (double)(i1 - p->c[1]) / (double)p->s[1];
    double z = (double)(i2 - p->c[2]) / (double)p->s[2];
    int64_t x0 = seg * V * LM_NL;
    double xc[4], fc[4] = {0};
    lm_vf df[4] = {0};
    for (int v = 0; v < V; v++)
        xc[v] = (double)(x0 + v * LM_NL + 8 - p->c[0]) / (double)p->s[0];
    if (c->tm)
        lm_simd_grid_fmap(p, row * p->g[0], x0, V, fc, df);

    double acc_re[4 * LM_NL] = {0}, acc_im[4 * LM_NL] = {0};
    float tab[4][LM_SIMD_K] __attribute__((aligned(64)));
    const float *base[4] = {tab[0], tab[1], tab[2], tab[3]};

    for (int64_t m0 = 0; m0 < in->m; m0 += LM_SIMD_K) {
        int64_t K = in->m - m0 < LM_SIMD_K ? in->m - m0 : LM_SIMD_K;
        const float *kx = in->kx + m0, *ky = in->ky + m0, *kz = in->kz + m0;
        const double *th = c->w.th + m0;
        const float *tm = c->tm ? c->tm + m0 : NULL;
        /* Once per chunk and segment, not per voxel: about 1/16 of the work. */
        for (int v = 0; v < V; v++)
            lm_simd_base_row(tab[v], K, th, kx, ky, kz, tm, xc[v], y, z, fc[v]);
        const float *st = c->step + m0, *amp = c->w.amp + m0;
        if (tm) {
            switch (V) {
            case 1: lm_simd_grid_chunk(1, 1, K, base, st, amp, tm, df, acc_re, acc_im); break;
            case 2: lm_simd_grid_chunk(2, 1, K, base, st, amp, tm, df, acc_re, acc_im); break;
            case 3: lm_simd_grid_chunk(3, 1, K, base, st, amp, tm, df, acc_re, acc_im); break;
            default: lm_simd_grid_chunk(4, 1, K, base, st, amp, tm, df, acc_re, acc_im); break;
            }
        } else {
            switch (V) {
            case 1: lm_simd_grid_chunk(1, 0, K, base, st, amp, NULL, df, acc_re, acc_im); break;
            case 2: lm_simd_grid_chunk(2, 0, K, base, st, amp, NULL, df, acc_re, acc_im); break;
            case 3: lm_simd_grid_chunk(3, 0, K, base, st, amp, NULL, df, acc_re, acc_im); break;
            default: lm_simd_grid_chunk(4, 0, K, base, st, amp, NULL, df, acc_re, acc_im); break;
            }
        }
    }
    int64_t nx = p->g[0] - x0 < V * LM_NL ? p->g[0] - x0 : V * LM_NL;
    int64_t j0 = row * p->g[0] + x0;
    for (int64_t l = 0; l < nx; l++) {
        c->out_re[j0 + l] = (float)acc_re[l];
        c->out_im[j0 + l] = (float)acc_im[l];
    }
}

/* Explicit points: 16 points per vector, phase k.x + th in double (exact
 * products of floats), reduced, then float from there on. */
#define LM_SIMD_VE 2

static inline __attribute__((always_inline)) void lm_simd_points_body(const lm_simd_ctx *c, int64_t unit,
                                                                       const int T)
{
    const lm_ksum_in *in = c->in;
    const lm_points *p = c->pts;
    enum { V = LM_SIMD_VE };
    int64_t j0 = unit * V * LM_NL;
    int64_t nj = p->n - j0 < V * LM_NL ? p->n - j0 : V * LM_NL;

    /* Positions (and field map) as doubles, two halves of 8 per vector;
     * padding lanes at 0. */
    double pos[4][V * LM_NL] __attribute__((aligned(64)));
    memset(pos, 0, sizeof pos);
    for (int64_t l = 0; l < nj; l++) {
        pos[0][l] = p->x[j0 + l];
        pos[1][l] = p->y[j0 + l];
        pos[2][l] = p->z[j0 + l];
        pos[3][l] = T ? p->f[j0 + l] : 0.0;
    }
    lm_vd px[2 * V], py[2 * V], pz[2 * V], pf[2 * V];
    for (int h = 0; h < 2 * V; h++) {
        px[h] = *(const lm_vdu *)&pos[0][8 * h];
        py[h] = *(const lm_vdu *)&pos[1][8 * h];
        pz[h] = *(const lm_vdu *)&pos[2][8 * h];
        pf[h] = *(const lm_vdu *)&pos[3][8 * h];
    }

    double acc_re[V * LM_NL] = {0}, acc_im[V * LM_NL] = {0};
    for (int64_t m0 = 0; m0 < in->m; m0 += LM_SIMD_K) {
        int64_t K = in->m - m0 < LM_SIMD_K ? in->m - m0 : LM_SIMD_K;
        const double *kd = c->kd + 4 * m0;
        const float *amp = c->w.amp + m0;
        const float *tm = T ? c->tm + m0 : NULL;
        lm_vf ar[V] = {0}, ai[V] = {0};
        for (int64_t m = 0; m < K; m++) {
            lm_vd th = LM_SPLATD(kd[4 * m]), kx = LM_SPLATD(kd[4 * m + 1]);
            lm_vd ky = LM_SPLATD(kd[4 * m + 2]), kz = LM_SPLATD(kd[4 * m + 3]);
            lm_vd tt = T ? LM_SPLATD(tm[m]) : (lm_vd){0};
            lm_vf a = LM_SPLAT(amp[m]);
            for (int v = 0; v < V; v++) {
                lm_vd t0 = th + kx * px[2 * v] + ky * py[2 * v] + kz * pz[2 * v];
                lm_vd t1 = th + kx * px[2 * v + 1] + ky * py[2 * v + 1] + kz * pz[2 * v + 1];
                if (T) {
                    t0 += tt * pf[2 * v];
                    t1 += tt * pf[2 * v + 1];
                }
                lm_vf r = LM_VD2F(t0 - LM_VROUNDD(t0), t1 - LM_VROUNDD(t1));
                lm_vf s, cc;
                lm_half_sc(&r, &s, &cc);
                lm_vf as = a * s;
                ar[v] += a * (1.0f - s * s);
                ai[v] += as * cc;
            }
        }
        for (int v = 0; v < V; v++)
            for (int l = 0; l < LM_NL; l++) {
                acc_re[v * LM_NL + l] += ar[v][l];
                acc_im[v * LM_NL + l] += ai[v][l];
            }
    }
    for (int64_t l = 0; l < nj; l++) {
        c->out_re[j0 + l] = (float)acc_re[l];
        c->out_im[j0 + l] = (float)acc_im[l];
    }
}

static void lm_simd_points_unit(void *vctx, int64_t unit)
{
    lm_simd_points_body(vctx, unit, 0);
}

static void lm_simd_points_time_unit(void *vctx, int64_t unit)
{
    lm_simd_points_body(vctx, unit, 1);
}

/* ---- cpu-simd, weight sets ------------------------------------------------
 *
 * With C > 1 weight sets the weight's phase can no longer join the phase
 * (each set has its own), so per sample and 16 points: one range-reduced
 * sin/cos into an L1 table, then per block of up to LM_SIMD_SB sets a
 * complex multiply-accumulate, 4 FMAs per set. A block's 2 x 8 accumulators,
 * sin and cos stay in registers (32 zmm); the table lets every block reuse
 * the chunk's sin/cos, so they are computed once whatever C is. Sums run in
 * float over a chunk and in double across chunks, as for one set. */
#define LM_SIMD_SB 8   /* sets per register block */
#define LM_SIMD_KS 128 /* samples per chunk: the sin/cos table is 16 KB */

/* B sets of one vector over K samples: tab [K][cos 16, sin 16], w [K][B][re,
 * im]; adds into double rows d[2 b] (re) and d[2 b + 1] (im), stride ds. */
static inline __attribute__((always_inline)) void
lm_simd_sets_block(const int B, int64_t K, const float *tab, const float *w, double *d,
                   int64_t ds)
{
    lm_vf ar[LM_SIMD_SB], ai[LM_SIMD_SB];
    for (int b = 0; b < B; b++) {
        ar[b] = (lm_vf){0};
        ai[b] = (lm_vf){0};
    }
    for (int64_t m = 0; m < K; m++) {
        lm_vf cs = LM_VLOAD(tab + m * 2 * LM_NL), sn = LM_VLOAD(tab + m * 2 * LM_NL + LM_NL);
        const float *wm = w + m * B * 2;
        for (int b = 0; b < B; b++) {
            lm_vf wr = LM_BCAST(wm[2 * b]), wi = LM_BCAST(wm[2 * b + 1]);
            /* Separate statements so that each is one fused multiply-add. */
            ar[b] += cs * wr;
            ar[b] -= sn * wi;
            ai[b] += sn * wr;
            ai[b] += cs * wi;
        }
    }
    for (int b = 0; b < B; b++)
        for (int l = 0; l < LM_NL; l++) {
            d[2 * b * ds + l] += ar[b][l];
            d[(2 * b + 1) * ds + l] += ai[b][l];
        }
}

/* Every block of sets for one vector: d points at set 0's real row. */
static void lm_simd_sets_all(const lm_wsets *ws, int64_t m0, int64_t K, const float *tab,
                             double *d, int64_t ds)
{
    for (int64_t blk = 0; blk < ws->nblk; blk++) {
        const float *w = lm_wsets_at(ws, blk, m0);
        double *db = d + blk * ws->B * 2 * ds;
        switch (ws->B) {
        case 1: lm_simd_sets_block(1, K, tab, w, db, ds); break;
        case 2: lm_simd_sets_block(2, K, tab, w, db, ds); break;
        case 3: lm_simd_sets_block(3, K, tab, w, db, ds); break;
        case 4: lm_simd_sets_block(4, K, tab, w, db, ds); break;
        case 5: lm_simd_sets_block(5, K, tab, w, db, ds); break;
        case 6: lm_simd_sets_block(6, K, tab, w, db, ds); break;
        case 7: lm_simd_sets_block(7, K, tab, w, db, ds); break;
        default: lm_simd_sets_block(8, K, tab, w, db, ds); break;
        }
    }
}

/* Accumulators of every (padded) set for VN points: [set][re, im][VN]. */
static double *lm_simd_sets_acc(lm_simd_ctx *c, int64_t VN)
{
    double *acc = calloc((size_t)(c->ws.nblk * c->ws.B * 2 * VN), sizeof(double));
    if (!acc)
        __atomic_store_n(&c->oom, 1, __ATOMIC_RELAXED);
    return acc;
}

static void lm_simd_sets_store(const lm_simd_ctx *c, const double *acc, int64_t VN, int64_t j0,
                               int64_t nj)
{
    const int64_t n = c->pts->n;
    for (int64_t k = 0; k < c->ws.nsets; k++)
        for (int64_t l = 0; l < nj; l++) {
            c->out_re[k * n + j0 + l] = (float)acc[2 * k * VN + l];
            c->out_im[k * n + j0 + l] = (float)acc[(2 * k + 1) * VN + l];
        }
}

static void lm_simd_grid_sets_unit(void *vctx, int64_t unit)
{
    lm_simd_ctx *c = vctx;
    const lm_ksum_in *in = c->in;
    const lm_points *p = c->pts;
    const int V = c->V;
    const int64_t VN = V * LM_NL;
    int64_t row = unit / c->nseg, seg = unit % c->nseg;
    int64_t i1 = row % p->g[1], i2 = row / p->g[1];
    double y = (double)(i1 - p->c[1]) / (double)p->s[1];
    double z = (double)(i2 - p->c[2]) / (double)p->s[2];
    int64_t x0 = seg * VN;
    double *acc = lm_simd_sets_acc(c, VN);
    if (!acc)
        return;
    double fc[4] = {0};
    lm_vf df[4] = {0};
    if (c->tm)
        lm_simd_grid_fmap(p, row * p->g[0], x0, V, fc, df);
    float base[LM_SIMD_KS] __attribute__((aligned(64)));
    float tab[LM_SIMD_KS * 2 * LM_NL] __attribute__((aligned(64)));

    for (int64_t m0 = 0; m0 < in->m; m0 += LM_SIMD_KS) {
        int64_t K = in->m - m0 < LM_SIMD_KS ? in->m - m0 : LM_SIMD_KS;
        const float *kx = in->kx + m0, *ky = in->ky + m0, *kz = in->kz + m0;
        const float *st = c->step + m0;
        const float *tm = c->tm ? c->tm + m0 : NULL;
        for (int v = 0; v < V; v++) {
            double xv = (double)(x0 + v * LM_NL + 8 - p->c[0]) / (double)p->s[0];
            lm_simd_base_row(base, K, NULL, kx, ky, kz, tm, xv, y, z, fc[v]);
            for (int64_t m = 0; m < K; m++) {
                lm_vf t = base[m] + LM_BCAST(st[m]) * lm_lane_off;
                if (tm)
                    t += df[v] * LM_BCAST(tm[m]);
                lm_vf r = t - LM_VROUND(t), sn, cs;
                lm_sincos2pi(&r, &sn, &cs);
                LM_VSTORE(tab + m * 2 * LM_NL, cs);
                LM_VSTORE(tab + m * 2 * LM_NL + LM_NL, sn);
            }
            lm_simd_sets_all(&c->ws, m0, K, tab, acc + v * LM_NL, VN);
        }
    }
    int64_t nx = p->g[0] - x0 < VN ? p->g[0] - x0 : VN;
    lm_simd_sets_store(c, acc, VN, row * p->g[0] + x0, nx);
    free(acc);
}

static void lm_simd_points_sets_unit(void *vctx, int64_t unit)
{
    lm_simd_ctx *c = vctx;
    const lm_ksum_in *in = c->in;
    const lm_points *p = c->pts;
    enum { V = LM_SIMD_VE, VN = LM_SIMD_VE * LM_NL };
    int64_t j0 = unit * VN;
    int64_t nj = p->n - j0 < VN ? p->n - j0 : VN;
    double *acc = lm_simd_sets_acc(c, VN);
    if (!acc)
        return;
    double pos[4][VN] __attribute__((aligned(64)));
    memset(pos, 0, sizeof pos);
    for (int64_t l = 0; l < nj; l++) {
        pos[0][l] = p->x[j0 + l];
        pos[1][l] = p->y[j0 + l];
        pos[2][l] = p->z[j0 + l];
        pos[3][l] = c->tm ? p->f[j0 + l] : 0.0;
    }
    float tab[LM_SIMD_KS * 2 * LM_NL] __attribute__((aligned(64)));

    for (int64_t m0 = 0; m0 < in->m; m0 += LM_SIMD_KS) {
        int64_t K = in->m - m0 < LM_SIMD_KS ? in->m - m0 : LM_SIMD_KS;
        const double *kd = c->kd + 4 * m0;
        const float *tm = c->tm ? c->tm + m0 : NULL;
        for (int v = 0; v < V; v++) {
            lm_vd px0 = *(const lm_vdu *)&pos[0][16 * v], px1 = *(const lm_vdu *)&pos[0][16 * v + 8];
            lm_vd py0 = *(const lm_vdu *)&pos[1][16 * v], py1 = *(const lm_vdu *)&pos[1][16 * v + 8];
            lm_vd pz0 = *(const lm_vdu *)&pos[2][16 * v], pz1 = *(const lm_vdu *)&pos[2][16 * v + 8];
            lm_vd pf0 = *(const lm_vdu *)&pos[3][16 * v], pf1 = *(const lm_vdu *)&pos[3][16 * v + 8];
            for (int64_t m = 0; m < K; m++) {
                lm_vd kx = LM_SPLATD(kd[4 * m + 1]), ky = LM_SPLATD(kd[4 * m + 2]);
                lm_vd kz = LM_SPLATD(kd[4 * m + 3]);
                lm_vd t0 = kx * px0 + ky * py0 + kz * pz0;
                lm_vd t1 = kx * px1 + ky * py1 + kz * pz1;
                if (tm) {
                    lm_vd tt = LM_SPLATD(tm[m]);
                    t0 += tt * pf0;
                    t1 += tt * pf1;
                }
                lm_vf r = LM_VD2F(t0 - LM_VROUNDD(t0), t1 - LM_VROUNDD(t1)), sn, cs;
                lm_sincos2pi(&r, &sn, &cs);
                LM_VSTORE(tab + m * 2 * LM_NL, cs);
                LM_VSTORE(tab + m * 2 * LM_NL + LM_NL, sn);
            }
            lm_simd_sets_all(&c->ws, m0, K, tab, acc + v * LM_NL, VN);
        }
    }
    lm_simd_sets_store(c, acc, VN, j0, nj);
    free(acc);
}

lm_code lm_cpu_simd_available(lm_error *why)
{
    (void)why; /* portable vector code: runs wherever it was compiled for */
    return LM_OK;
}

lm_code lm_ksum_cpu_simd(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im,
                         const lm_ctl *ctl, lm_error *err)
{
    if (!in || !pts || !out_re || !out_im || in->m <= 0 || pts->n <= 0)
        return lm_fail(err, LM_ERR_INVALID, "cpu-simd: empty problem or missing arrays");
    lm_code rc = lm_ksum_time_check("cpu-simd", in, pts, err);
    if (rc != LM_OK)
        return rc;
    lm_simd_ctx c;
    memset(&c, 0, sizeof c);
    c.in = in;
    c.pts = pts;
    c.out_re = out_re;
    c.out_im = out_im;
    c.tm = in->t;
    /* One set: the weight's phase joins the reduction (lm_wprep); sets:
     * the weights as they are, blocked for the accumulation. */
    const int sets = lm_ksum_nsets(in) > 1;
    rc = sets ? lm_wsets_make(in, LM_SIMD_SB, &c.ws, "cpu-simd: weight sets", err)
                      : lm_wprep_make(in, &c.w, "cpu-simd: sample tables", err);
    if (rc)
        return rc;

    int64_t units;
    lm_unit_fn fn;
    if (pts->x) {
        c.kd = lm_alloc((size_t)in->m * 4, sizeof(double), err, "cpu-simd: sample tables");
        if (!c.kd) {
            rc = err ? err->code : LM_ERR_NOMEM;
            goto done;
        }
        for (int64_t m = 0; m < in->m; m++) {
            c.kd[4 * m] = sets ? 0.0 : c.w.th[m];
            c.kd[4 * m + 1] = in->kx[m];
            c.kd[4 * m + 2] = in->ky[m];
            c.kd[4 * m + 3] = in->kz[m];
        }
        units = (pts->n + LM_SIMD_VE * LM_NL - 1) / (LM_SIMD_VE * LM_NL);
        fn = sets ? lm_simd_points_sets_unit : c.tm ? lm_simd_points_time_unit : lm_simd_points_unit;
    } else {
        c.step = lm_alloc((size_t)in->m, sizeof(float), err, "cpu-simd: sample tables");
        if (!c.step) {
            rc = err ? err->code : LM_ERR_NOMEM;
            goto done;
        }
        for (int64_t m = 0; m < in->m; m++)
            c.step[m] = (float)lm_frac((double)in->kx[m] / (double)pts->s[0]);
        /* Segments of up to 4 vectors; a row is split evenly so that the
         * last segment wastes fewer than 16 lanes. */
        int64_t g0 = pts->g[0];
        c.nseg = (g0 + 4 * LM_NL - 1) / (4 * LM_NL);
        int64_t per = (g0 + c.nseg - 1) / c.nseg;
        c.V = (int)((per + LM_NL - 1) / LM_NL);
        c.nseg = (g0 + c.V * LM_NL - 1) / (c.V * LM_NL);
        units = pts->g[1] * pts->g[2] * c.nseg;
        fn = sets ? lm_simd_grid_sets_unit : lm_simd_grid_unit;
    }
    rc = lm_ksum_parallel(units, ctl, fn, &c, "cpu-simd", err);
    if (rc == LM_OK && c.oom)
        rc = lm_fail(err, LM_ERR_NOMEM, "cpu-simd: out of memory for the sets' sums");
done:
    free(c.kd);
    free(c.step);
    lm_wprep_free(&c.w);
    lm_wsets_free(&c.ws);
    return rc;
}

/* ---- cpu-separable ------------------------------------------------------- */

/* On a grid, exp(i 2 pi k.x) = Ex(kx, i0) Ey(ky, i1) Ez(kz, i2), so for every
 * row (i1, i2) of x:
 *     out(i0, row) = sum_m Ex[i0][m] C[m][row],   C = w Ey Ez,
 * a complex matrix product with 4 real multiply-adds per pair and no
 * trigonometry in the inner loop. Work unit: a block of rows of one z plane;
 * per chunk of samples it fills Ex (every x, shared by the block's rows) and
 * C (every row of the block) with the polynomial sin/cos above, phases
 * reduced in double, then runs a register-tiled product: 2 vectors (32 x)
 * by 4 rows, 16 accumulators, 32 FMAs per sample. */
#define LM_SEP_K 128  /* samples per chunk: the Ex panel of a 32-x block is 32 KB */
#define LM_SEP_RB 4   /* rows per register tile */
#define LM_SEP_XB 32  /* x per register tile (two vectors) */

typedef struct lm_sep_ctx {
    const lm_ksum_in *in;
    const lm_points *pts;
    float *out_re, *out_im;
    lm_wprep w;
    int64_t nxb;        /* x blocks of 32 */
    int64_t yblock;     /* rows per unit (multiple of LM_SEP_RB) */
    int64_t nyb;        /* units per z plane */
    int oom;            /* set by a worker that could not get its scratch */
} lm_sep_ctx;

static inline __attribute__((always_inline)) void
lm_sep_tile(int64_t K, const float *exr, const float *exi, const float *cr, const float *ci,
            int64_t cstride, lm_vf acc[2][LM_SEP_RB][2])
{
    lm_vf r0[LM_SEP_RB] = {0}, r1[LM_SEP_RB] = {0}, i0[LM_SEP_RB] = {0}, i1[LM_SEP_RB] = {0};
    for (int64_t m = 0; m < K; m++) {
        lm_vf er0 = LM_VLOAD(exr + m * LM_SEP_XB), er1 = LM_VLOAD(exr + m * LM_SEP_XB + LM_NL);
        lm_vf ei0 = LM_VLOAD(exi + m * LM_SEP_XB), ei1 = LM_VLOAD(exi + m * LM_SEP_XB + LM_NL);
        for (int b = 0; b < LM_SEP_RB; b++) {
            lm_vf br = LM_SPLAT(cr[b * cstride + m]), bi = LM_SPLAT(ci[b * cstride + m]);
            /* Separate statements so that each is one fused multiply-add. */
            r0[b] += er0 * br;
            r0[b] -= ei0 * bi;
            i0[b] += er0 * bi;
            i0[b] += ei0 * br;
            r1[b] += er1 * br;
            r1[b] -= ei1 * bi;
            i1[b] += er1 * bi;
            i1[b] += ei1 * br;
        }
    }
    for (int b = 0; b < LM_SEP_RB; b++) {
        acc[0][b][0] = r0[b];
        acc[0][b][1] = i0[b];
        acc[1][b][0] = r1[b];
        acc[1][b][1] = i1[b];
    }
}

static void lm_sep_unit(void *vctx, int64_t unit)
{
    lm_sep_ctx *c = vctx;
    const lm_ksum_in *in = c->in;
    const lm_points *p = c->pts;
    int64_t i2 = unit / c->nyb, y0 = (unit % c->nyb) * c->yblock;
    int64_t ny = p->g[1] - y0 < c->yblock ? p->g[1] - y0 : c->yblock;
    int64_t nyp = (ny + LM_SEP_RB - 1) / LM_SEP_RB * LM_SEP_RB;
    int64_t g0 = p->g[0], nxb = c->nxb;
    double z = (double)(i2 - p->c[2]) / (double)p->s[2];

    /* Scratch: Ex panels [xb][m][32] re and im, C [row][m] re and im, and
     * double accumulators [row][x]. */
    size_t ex_n = (size_t)nxb * LM_SEP_K * LM_SEP_XB, c_n = (size_t)nyp * LM_SEP_K;
    size_t acc_n = (size_t)nyp * nxb * LM_SEP_XB;
    float *exr = aligned_alloc(64, ((2 * ex_n + 2 * c_n) * sizeof(float) + 63) / 64 * 64);
    double *accr = calloc(2 * acc_n, sizeof(double));
    if (!exr || !accr) {
        __atomic_store_n(&c->oom, 1, __ATOMIC_RELAXED);
        free(exr);
        free(accr);
        return;
    }
    float *exi = exr + ex_n, *cr = exi + ex_n, *ci = cr + c_n;
    double *acci = accr + acc_n;

    for (int64_t m0 = 0; m0 < in->m; m0 += LM_SEP_K) {
        int64_t K = in->m - m0 < LM_SEP_K ? in->m - m0 : LM_SEP_K;
        const float *kx = in->kx + m0, *ky = in->ky + m0, *kz = in->kz + m0;
        const float *amp = c->w.amp + m0;
        const double *th = c->w.th + m0;

        /* Ex[xb][m][l] = exp(i 2 pi kx (x - c0)/s0), vectorised along x from
         * a per-16 base reduced in double (as in cpu-simd). */
        for (int64_t m = 0; m < K; m++) {
            double kxs = (double)kx[m] / (double)p->s[0];
            lm_vf st = LM_SPLAT((float)lm_frac(kxs));
            for (int64_t xb = 0; xb < nxb; xb++)
                for (int h = 0; h < 2; h++) {
                    int64_t xs = xb * LM_SEP_XB + h * LM_NL;
                    float b = (float)lm_frac(kxs * (double)(xs + 8 - p->c[0]));
                    lm_vf t = b + st * lm_lane_off;
                    lm_vf sn, cs;
                    lm_vf r = t - LM_VROUND(t);
                    lm_sincos2pi(&r, &sn, &cs);
                    size_t o = ((size_t)xb * LM_SEP_K + (size_t)m) * LM_SEP_XB + (size_t)h * LM_NL;
                    LM_VSTORE(exr + o, cs);
                    LM_VSTORE(exi + o, sn);
                }
        }
        /* C[row][m] = a exp(i 2 pi (th + ky y + kz z)), vectorised over m. */
        for (int64_t yy = 0; yy < nyp; yy++) {
            float *crr = cr + yy * LM_SEP_K, *cir = ci + yy * LM_SEP_K;
            if (yy >= ny) {
                memset(crr, 0, LM_SEP_K * sizeof(float));
                memset(cir, 0, LM_SEP_K * sizeof(float));
                continue;
            }
            double y = (double)(y0 + yy - p->c[1]) / (double)p->s[1];
            int64_t m = 0;
            for (; m + LM_NL <= K; m += LM_NL) {
                lm_vd t[2];
                for (int h = 0; h < 2; h++) {
                    lm_vd thv = *(const lm_vdu *)(th + m + 8 * h);
                    lm_vd kyv = __builtin_convertvector(*(const lm_vf8u *)(ky + m + 8 * h), lm_vd);
                    lm_vd kzv = __builtin_convertvector(*(const lm_vf8u *)(kz + m + 8 * h), lm_vd);
                    t[h] = thv + kyv * y + kzv * z;
                    t[h] -= LM_VROUNDD(t[h]);
                }
                lm_vf sn, cs, a = LM_VLOAD(amp + m);
                lm_vf r = LM_VD2F(t[0], t[1]);
                lm_sincos2pi(&r, &sn, &cs);
                LM_VSTORE(crr + m, a * cs);
                LM_VSTORE(cir + m, a * sn);
            }
            for (; m < K; m++) {
                double t = lm_frac(th[m] + (double)ky[m] * y + (double)kz[m] * z);
                crr[m] = amp[m] * (float)cos(2.0 * M_PI * t);
                cir[m] = amp[m] * (float)sin(2.0 * M_PI * t);
            }
        }
        /* The product, tile by tile; float within a chunk, double across. */
        for (int64_t xb = 0; xb < nxb; xb++) {
            const float *er = exr + (size_t)xb * LM_SEP_K * LM_SEP_XB;
            const float *ei = exi + (size_t)xb * LM_SEP_K * LM_SEP_XB;
            for (int64_t yt = 0; yt < nyp; yt += LM_SEP_RB) {
                lm_vf acc[2][LM_SEP_RB][2];
                lm_sep_tile(K, er, ei, cr + yt * LM_SEP_K, ci + yt * LM_SEP_K, LM_SEP_K, acc);
                for (int b = 0; b < LM_SEP_RB; b++)
                    for (int h = 0; h < 2; h++) {
                        double *dr = accr + ((size_t)(yt + b) * nxb + xb) * LM_SEP_XB + h * LM_NL;
                        double *di = acci + ((size_t)(yt + b) * nxb + xb) * LM_SEP_XB + h * LM_NL;
                        for (int l = 0; l < LM_NL; l++) {
                            dr[l] += acc[h][b][0][l];
                            di[l] += acc[h][b][1][l];
                        }
                    }
            }
        }
    }
    for (int64_t y = 0; y < ny; y++) {
        int64_t j = (i2 * p->g[1] + y0 + y) * g0;
        const double *dr = accr + (size_t)y * nxb * LM_SEP_XB;
        const double *di = acci + (size_t)y * nxb * LM_SEP_XB;
        for (int64_t x = 0; x < g0; x++) {
            c->out_re[j + x] = (float)dr[x];
            c->out_im[j + x] = (float)di[x];
        }
    }
    free(exr);
    free(accr);
}

lm_code lm_ksum_cpu_separable(const lm_ksum_in *in, const lm_points *pts, float *out_re,
                              float *out_im, const lm_ctl *ctl, lm_error *err)
{
    if (!in || !pts || !out_re || !out_im || in->m <= 0 || pts->n <= 0)
        return lm_fail(err, LM_ERR_INVALID, "cpu-separable: empty problem or missing arrays");
    if (pts->x)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "cpu-separable: needs grid points");
    lm_code trc = lm_ksum_time_refuse("cpu-separable", in, pts, err);
    if (trc != LM_OK)
        return trc;
    lm_sep_ctx c;
    memset(&c, 0, sizeof c);
    c.in = in;
    c.pts = pts;
    c.out_re = out_re;
    c.out_im = out_im;
    c.nxb = (pts->g[0] + LM_SEP_XB - 1) / LM_SEP_XB;
    /* Whole planes when there are enough of them to share out; otherwise
     * split planes into row blocks (2D images). Bigger blocks amortise the
     * Ex panel, which every unit fills for itself. */
    int nt = lm_ctl_threads(ctl);
    int64_t want = 4 * (int64_t)nt;
    c.nyb = pts->g[2] >= want ? 1 : (want + pts->g[2] - 1) / pts->g[2];
    if (c.nyb > (pts->g[1] + 15) / 16)
        c.nyb = (pts->g[1] + 15) / 16;
    if (c.nyb < 1)
        c.nyb = 1;
    c.yblock = (pts->g[1] + c.nyb - 1) / c.nyb;
    c.yblock = (c.yblock + LM_SEP_RB - 1) / LM_SEP_RB * LM_SEP_RB;
    c.nyb = (pts->g[1] + c.yblock - 1) / c.yblock;
    lm_code rc = lm_wprep_make(in, &c.w, "cpu-separable: sample tables", err);
    if (rc)
        return rc;
    rc = lm_ksum_parallel(pts->g[2] * c.nyb, ctl, lm_sep_unit, &c, "cpu-separable", err);
    lm_wprep_free(&c.w);
    if (rc == LM_OK && c.oom)
        return lm_fail(err, LM_ERR_NOMEM, "cpu-separable: out of memory for scratch");
    return rc;
}
