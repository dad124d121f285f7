/* The scalar CPU kernels: out(x_j) = sum_m w_m exp(+i 2 pi (k_m . x_j + f_j t_m)),
 * the off-resonance term f_j t_m only with lm_ksum_in.t and lm_points.f.
 *
 * cpu-dp is the reference every other variant is checked against: double
 * positions, double phase reduced in cycles (exact for the sizes we meet),
 * glibc sincos, double accumulation. cpu-sp is the paper's CPU.SP loop in
 * float: phase 2 pi (k . x) in float, sinf/cosf, float accumulation.
 *
 * Both are scalar but run over points on lm_ctl_threads(ctl) OpenMP
 * threads: cpu-dp is the reference on whole benchmark problems and must
 * finish in reasonable time. Per-core figures (the paper's single-core
 * CPU.DP / CPU.SP) are obtained with ctl->threads = 1 or by dividing by the
 * thread count; every thread runs the same scalar loop, so the two agree.
 *
 * Weight sets (nsets > 1): per sample-point pair one phase and one sin/cos,
 * then a complex multiply-accumulate per set, each set with the same
 * arithmetic as a one-set run (cpu-dp's sets come out bit for bit the same).
 *
 * Off-resonance: one more multiply-add per pair. In cpu-dp the product of
 * two floats f t is exact in double, so the phase keeps its 1e-16 cycles. */
#include "lm_kernels_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Points per work unit: about 2^22 pairs (a few ms to tens of ms) keeps
 * cancel responsive without measurable overhead. */
static int64_t lm_points_per_unit(int64_t m, int64_t n)
{
    int64_t p = ((int64_t)1 << 22) / m;
    if (p < 1)
        p = 1;
    if (p > n)
        p = n;
    return p;
}

typedef struct lm_scalar_ctx {
    const lm_ksum_in *in;
    const lm_points *pts;
    float *out_re, *out_im;
    int64_t per_unit;
    lm_wsets ws;   /* nsets > 1: weights as [m][set][re, im] */
    const float *tm; /* sample times with pts->f, or NULL: no off-resonance term */
    int oom;       /* set by a worker that could not get its accumulators */
} lm_scalar_ctx;

static void lm_dp_unit(void *vctx, int64_t unit)
{
    const lm_scalar_ctx *c = vctx;
    const lm_ksum_in *in = c->in;
    const float *kx = in->kx, *ky = in->ky, *kz = in->kz, *wr = in->wr, *wi = in->wi;
    const float *tm = c->tm;
    int64_t j0 = unit * c->per_unit, j1 = j0 + c->per_unit;
    if (j1 > c->pts->n)
        j1 = c->pts->n;
    for (int64_t j = j0; j < j1; j++) {
        double x[3];
        lm_points_get(c->pts, j, x);
        const double f = tm ? (double)c->pts->f[j] : 0.0;
        double re = 0.0, im = 0.0;
        for (int64_t m = 0; m < in->m; m++) {
            /* Phase in cycles, reduced to [-1/2, 1/2] before scaling by 2 pi:
             * the products of floats are exact in double, so this is the
             * phase to about 1e-16 cycles. */
            double t = (double)kx[m] * x[0] + (double)ky[m] * x[1] + (double)kz[m] * x[2];
            if (tm)
                t += f * (double)tm[m];
            t -= rint(t);
            double s, co;
            sincos(2.0 * M_PI * t, &s, &co);
            if (wi) {
                re += (double)wr[m] * co - (double)wi[m] * s;
                im += (double)wr[m] * s + (double)wi[m] * co;
            } else {
                re += (double)wr[m] * co;
                im += (double)wr[m] * s;
            }
        }
        c->out_re[j] = (float)re;
        c->out_im[j] = (float)im;
    }
}

static void lm_sp_unit(void *vctx, int64_t unit)
{
    const lm_scalar_ctx *c = vctx;
    const lm_ksum_in *in = c->in;
    const float *kx = in->kx, *ky = in->ky, *kz = in->kz, *wr = in->wr, *wi = in->wi;
    const float two_pi = (float)(2.0 * M_PI);
    const float *tm = c->tm;
    int64_t j0 = unit * c->per_unit, j1 = j0 + c->per_unit;
    if (j1 > c->pts->n)
        j1 = c->pts->n;
    for (int64_t j = j0; j < j1; j++) {
        double xd[3];
        lm_points_get(c->pts, j, xd);
        float x = (float)xd[0], y = (float)xd[1], z = (float)xd[2];
        const float f = tm ? c->pts->f[j] : 0.0f;
        float re = 0.0f, im = 0.0f;
        /* The paper's loop as written in float: no range reduction in
         * cycles, so the argument's rounding (about ulp(2 pi |k.x + f t|))
         * is part of what this variant measures. */
        for (int64_t m = 0; m < in->m; m++) {
            float ph = kx[m] * x + ky[m] * y + kz[m] * z;
            if (tm)
                ph += f * tm[m];
            float arg = two_pi * ph;
            float co = cosf(arg), s = sinf(arg);
            if (wi) {
                re += wr[m] * co - wi[m] * s;
                im += wi[m] * co + wr[m] * s;
            } else {
                re += wr[m] * co;
                im += wr[m] * s;
            }
        }
        c->out_re[j] = re;
        c->out_im[j] = im;
    }
}

/* Weight sets: accumulators of every set per point, weights read in order. */
static void lm_dp_sets_unit(void *vctx, int64_t unit)
{
    lm_scalar_ctx *c = vctx;
    const lm_ksum_in *in = c->in;
    const float *kx = in->kx, *ky = in->ky, *kz = in->kz, *tm = c->tm;
    const int64_t nc = c->ws.nsets, n = c->pts->n;
    double *acc = malloc((size_t)nc * 2 * sizeof(double));
    if (!acc) {
        __atomic_store_n(&c->oom, 1, __ATOMIC_RELAXED);
        return;
    }
    int64_t j0 = unit * c->per_unit, j1 = j0 + c->per_unit;
    if (j1 > n)
        j1 = n;
    for (int64_t j = j0; j < j1; j++) {
        double x[3];
        lm_points_get(c->pts, j, x);
        const double f = tm ? (double)c->pts->f[j] : 0.0;
        memset(acc, 0, (size_t)nc * 2 * sizeof(double));
        for (int64_t m = 0; m < in->m; m++) {
            double t = (double)kx[m] * x[0] + (double)ky[m] * x[1] + (double)kz[m] * x[2];
            if (tm)
                t += f * (double)tm[m];
            t -= rint(t);
            double s, co;
            sincos(2.0 * M_PI * t, &s, &co);
            const float *w = lm_wsets_at(&c->ws, 0, m);
            for (int64_t k = 0; k < nc; k++) {
                double wr = w[2 * k], wi = w[2 * k + 1];
                acc[2 * k] += wr * co - wi * s;
                acc[2 * k + 1] += wr * s + wi * co;
            }
        }
        for (int64_t k = 0; k < nc; k++) {
            c->out_re[k * n + j] = (float)acc[2 * k];
            c->out_im[k * n + j] = (float)acc[2 * k + 1];
        }
    }
    free(acc);
}

static void lm_sp_sets_unit(void *vctx, int64_t unit)
{
    lm_scalar_ctx *c = vctx;
    const lm_ksum_in *in = c->in;
    const float *kx = in->kx, *ky = in->ky, *kz = in->kz, *tm = c->tm;
    const float two_pi = (float)(2.0 * M_PI);
    const int64_t nc = c->ws.nsets, n = c->pts->n;
    float *acc = malloc((size_t)nc * 2 * sizeof(float));
    if (!acc) {
        __atomic_store_n(&c->oom, 1, __ATOMIC_RELAXED);
        return;
    }
    int64_t j0 = unit * c->per_unit, j1 = j0 + c->per_unit;
    if (j1 > n)
        j1 = n;
    for (int64_t j = j0; j < j1; j++) {
        double xd[3];
        lm_points_get(c->pts, j, xd);
        float x = (float)xd[0], y = (float)xd[1], z = (float)xd[2];
        const float f = tm ? c->pts->f[j] : 0.0f;
        memset(acc, 0, (size_t)nc * 2 * sizeof(float));
        for (int64_t m = 0; m < in->m; m++) {
            float ph = kx[m] * x + ky[m] * y + kz[m] * z;
            if (tm)
                ph += f * tm[m];
            float arg = two_pi * ph;
            float co = cosf(arg), s = sinf(arg);
            const float *w = lm_wsets_at(&c->ws, 0, m);
            for (int64_t k = 0; k < nc; k++) {
                float wr = w[2 * k], wi = w[2 * k + 1];
                acc[2 * k] += wr * co - wi * s;
                acc[2 * k + 1] += wi * co + wr * s;
            }
        }
        for (int64_t k = 0; k < nc; k++) {
            c->out_re[k * n + j] = acc[2 * k];
            c->out_im[k * n + j] = acc[2 * k + 1];
        }
    }
    free(acc);
}

static lm_code lm_scalar_run(const char *name, lm_unit_fn fn, lm_unit_fn fn_sets,
                             const lm_ksum_in *in, const lm_points *pts, float *out_re,
                             float *out_im, const lm_ctl *ctl, lm_error *err)
{
    if (!in || !pts || !out_re || !out_im || in->m <= 0 || pts->n <= 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: empty problem or missing arrays", name);
    lm_code rc = lm_ksum_time_check(name, in, pts, err);
    if (rc != LM_OK)
        return rc;
    const int64_t nc = lm_ksum_nsets(in);
    lm_scalar_ctx c = {.in = in,
                       .pts = pts,
                       .out_re = out_re,
                       .out_im = out_im,
                       .per_unit = lm_points_per_unit(in->m * nc, pts->n),
                       .tm = in->t};
    int64_t units = (pts->n + c.per_unit - 1) / c.per_unit;
    if (nc == 1)
        return lm_ksum_parallel(units, ctl, fn, &c, name, err);
    rc = lm_wsets_make(in, nc, &c.ws, name, err);
    if (rc != LM_OK)
        return rc;
    rc = lm_ksum_parallel(units, ctl, fn_sets, &c, name, err);
    lm_wsets_free(&c.ws);
    if (rc == LM_OK && c.oom)
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory for the sets' sums", name);
    return rc;
}

lm_code lm_ksum_cpu_dp(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im,
                       const lm_ctl *ctl, lm_error *err)
{
    return lm_scalar_run("cpu-dp", lm_dp_unit, lm_dp_sets_unit, in, pts, out_re, out_im, ctl, err);
}

lm_code lm_ksum_cpu_sp(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im,
                       const lm_ctl *ctl, lm_error *err)
{
    return lm_scalar_run("cpu-sp", lm_sp_unit, lm_sp_sets_unit, in, pts, out_re, out_im, ctl, err);
}
