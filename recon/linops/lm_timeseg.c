/* Time-segmentation interpolators (lm_timeseg.h).
 *
 * Per distinct sample time t the coefficients b(t) solve the weighted least
 * squares problem
 *     min_b  sum_k h_k | exp(-i 2 pi f_k t) - sum_l b_l exp(-i 2 pi f_k tau_l) |^2
 * over the histogram's bins (node f_k: the mean field of the bin's voxels,
 * h_k: its share of the voxels), i.e. G b = c with
 *     G_ll' = sum_k h_k exp(-i 2 pi f_k (tau_l' - tau_l)),
 *     c_l(t) = sum_k h_k exp(-i 2 pi f_k (t - tau_l)),
 * G factored once per L (Cholesky in double, with a tiny ridge so that an L
 * larger than the field map needs stays solvable). The min-max kind takes
 * the uniform density on [fmin, fmax] instead, where both sums are sincs.
 * Readouts repeat the same times, so the work is per distinct time. */
#include "lm_timeseg.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_encoding.h"

/* Histogram bins are at most 1/(16 T) Hz wide (T the readout span): the
 * phase of a bin's edge and its node differ by < pi/8 over the readout. */
#define TS_BIN_CYCLES 16.0
#define TS_MAX_BINS 4096
/* Ridge on G, relative to its diagonal (the weights sum to 1). */
#define TS_RIDGE 1e-13

void lm_timeseg_free(lm_timeseg *s)
{
    if (s) {
        free(s->tau);
        free(s->b);
        free(s);
    }
}

static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* The distinct values of the m finite times t, ascending, into u (room for
 * m); their count, or -1 without memory. Through a set on the values' bits
 * first: the times repeat (every readout has the same ones), so only the
 * few distinct ones are sorted, not all m (7 ms of a B128 set-up). */
static int64_t distinct_times(const float *t, int64_t m, float *u)
{
    size_t cap = 64;
    while (cap < 2 * (size_t)m)
        cap <<= 1;
    uint32_t *key = malloc(cap * sizeof *key);
    unsigned char *used = calloc(cap, 1);
    int64_t U = 0;
    if (!key || !used) {
        free(key), free(used);
        return -1;
    }
    for (int64_t j = 0; j < m; j++) {
        const float v = t[j] == 0.0f ? 0.0f : t[j]; /* -0 is 0 */
        uint32_t b;
        memcpy(&b, &v, sizeof b);
        size_t h = (size_t)((b * 2654435761u) ^ (b >> 16)) & (cap - 1);
        while (used[h] && key[h] != b)
            h = (h + 1) & (cap - 1);
        if (!used[h]) {
            used[h] = 1;
            key[h] = b;
            u[U++] = v;
        }
    }
    free(key), free(used);
    qsort(u, (size_t)U, sizeof *u, cmp_float);
    return U;
}

static inline double complex cexpm(double phase_cycles) /* exp(-i 2 pi p) */
{
    const double a = -2 * M_PI * phase_cycles;
    return CMPLX(cos(a), sin(a));
}

static inline double sinc(double x)
{
    return x == 0 ? 1.0 : sin(M_PI * x) / (M_PI * x);
}

/* In-place lower Cholesky of an L x L Hermitian matrix (row-major);
 * 0 on success. */
static int cholesky(double complex *a, int L)
{
    for (int j = 0; j < L; j++) {
        double d = creal(a[j * L + j]);
        for (int k = 0; k < j; k++)
            d -= creal(a[j * L + k] * conj(a[j * L + k]));
        if (!(d > 0))
            return -1;
        const double r = sqrt(d);
        a[j * L + j] = r;
        for (int i = j + 1; i < L; i++) {
            double complex v = a[i * L + j];
            for (int k = 0; k < j; k++)
                v -= a[i * L + k] * conj(a[j * L + k]);
            a[i * L + j] = v / r;
        }
    }
    return 0;
}

static void chol_solve(const double complex *a, int L, double complex *x)
{
    for (int i = 0; i < L; i++) {
        double complex v = x[i];
        for (int k = 0; k < i; k++)
            v -= a[i * L + k] * x[k];
        x[i] = v / a[i * L + i];
    }
    for (int i = L - 1; i >= 0; i--) {
        double complex v = x[i];
        for (int k = i + 1; k < L; k++)
            v -= conj(a[k * L + i]) * x[k];
        x[i] = v / a[i * L + i];
    }
}

/* The field map's histogram and evaluation points. */
typedef struct hist {
    int K;           /* occupied bins */
    double *node, *h; /* mean frequency and weight (sum 1) per occupied bin */
    int P;
    double *eval;    /* edges and means of the occupied bins */
    double fmin, fmax;
} hist;

static void hist_free(hist *h)
{
    free(h->node), free(h->h), free(h->eval);
}

static lm_code hist_make(const float *f, int64_t n, double span, hist *H, lm_error *err)
{
    memset(H, 0, sizeof *H);
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t j = 0; j < n; j++) {
        if (!isfinite(f[j]))
            return lm_fail(err, LM_ERR_INVALID, "field map: voxel %lld is not a finite number", (long long)j);
        lo = f[j] < lo ? f[j] : lo;
        hi = f[j] > hi ? f[j] : hi;
    }
    H->fmin = lo, H->fmax = hi;
    int bins = 1;
    if (hi > lo && span > 0) {
        const double b = ceil((hi - lo) * span * TS_BIN_CYCLES);
        bins = b < 1 ? 1 : b > TS_MAX_BINS ? TS_MAX_BINS : (int)b;
    }
    const double w = (hi - lo) / bins;
    double *sum = calloc((size_t)bins, sizeof *sum);
    int64_t *cnt = calloc((size_t)bins, sizeof *cnt);
    H->node = malloc((size_t)bins * sizeof *H->node);
    H->h = malloc((size_t)bins * sizeof *H->h);
    H->eval = malloc((size_t)bins * 3 * sizeof *H->eval);
    if (!sum || !cnt || !H->node || !H->h || !H->eval) {
        free(sum), free(cnt), hist_free(H);
        return lm_fail(err, LM_ERR_NOMEM, "field map: cannot allocate its %d-bin histogram", bins);
    }
    for (int64_t j = 0; j < n; j++) {
        int k = w > 0 ? (int)((f[j] - lo) / w) : 0;
        k = k < 0 ? 0 : k >= bins ? bins - 1 : k;
        sum[k] += f[j];
        cnt[k]++;
    }
    for (int k = 0; k < bins; k++) {
        if (!cnt[k])
            continue;
        H->node[H->K] = sum[k] / (double)cnt[k];
        H->h[H->K] = (double)cnt[k] / (double)n;
        H->K++;
        const double e0 = lo + k * w, e1 = k == bins - 1 ? hi : lo + (k + 1) * w;
        H->eval[H->P++] = e0;
        H->eval[H->P++] = sum[k] / (double)cnt[k];
        if (e1 != e0)
            H->eval[H->P++] = e1;
    }
    free(sum), free(cnt);
    return LM_OK;
}

static void centres(int L, double tmin, double tmax, double *tau)
{
    for (int l = 0; l < L; l++)
        tau[l] = L == 1 ? 0.5 * (tmin + tmax) : tmin + (tmax - tmin) * (double)l / (double)(L - 1);
}

/* Fits b for the distinct times u (b: L x U, float) and returns the worst
 * error; -1 when G cannot be factored. stride > 1: only every stride-th
 * time and the last (b of the others is left as it is): a subset of the
 * points, so its error is never above the full one. */
static double fit(const hist *H, lm_timeseg_kind kind, int L, const double *tau, const float *u, int64_t U,
                  int64_t stride, lm_cfloat *b, double *rms)
{
    double complex *G = malloc((size_t)(L * L) * sizeof *G);
    double complex *Ae = malloc((size_t)H->P * (size_t)L * sizeof *Ae);  /* exp(-i 2 pi g_p tau_l) */
    double complex *An = malloc((size_t)H->K * (size_t)L * sizeof *An);  /* exp(+i 2 pi f_k tau_l) */
    double worst = -1, ss = 0;
    int64_t nu = 0;
    if (!G || !Ae || !An)
        goto out;
    const double fc = 0.5 * (H->fmin + H->fmax), W = H->fmax - H->fmin;
    for (int l = 0; l < L; l++)
        for (int lp = 0; lp < L; lp++) {
            const double d = tau[lp] - tau[l];
            double complex g = 0;
            if (kind == LM_TIMESEG_MINMAX)
                g = cexpm(fc * d) * sinc(W * d);
            else
                for (int k = 0; k < H->K; k++)
                    g += H->h[k] * cexpm(H->node[k] * d);
            G[l * L + lp] = g + (l == lp ? TS_RIDGE : 0);
        }
    if (cholesky(G, L) != 0)
        goto out;
    for (int p = 0; p < H->P; p++)
        for (int l = 0; l < L; l++)
            Ae[p * L + l] = cexpm(H->eval[p] * tau[l]);
    for (int k = 0; k < H->K; k++)
        for (int l = 0; l < L; l++)
            An[k * L + l] = conj(cexpm(H->node[k] * tau[l]));
    worst = 0;
    nu = (U - 1 + stride - 1) / stride + 1; /* 0, stride, 2 stride, .., and U - 1 */
#pragma omp parallel reduction(max : worst) reduction(+ : ss)
    {
        double complex c[LM_TIMESEG_MAX_L];
#pragma omp for schedule(dynamic, 16)
        for (int64_t ii = 0; ii < nu; ii++) {
            const int64_t i = ii == nu - 1 ? U - 1 : ii * stride;
            const double t = u[i];
            for (int l = 0; l < L; l++)
                c[l] = 0;
            if (kind == LM_TIMESEG_MINMAX) {
                for (int l = 0; l < L; l++)
                    c[l] = cexpm(fc * (t - tau[l])) * sinc(W * (t - tau[l]));
            } else {
                for (int k = 0; k < H->K; k++) {
                    const double complex e = H->h[k] * cexpm(H->node[k] * t);
                    for (int l = 0; l < L; l++)
                        c[l] += e * An[k * L + l];
                }
            }
            chol_solve(G, L, c);
            for (int l = 0; l < L; l++) {
                b[l * U + i] = CMPLXF((float)creal(c[l]), (float)cimag(c[l]));
                c[l] = b[l * U + i]; /* the error of what the operators use */
            }
            for (int p = 0; p < H->P; p++) {
                double complex a = 0;
                for (int l = 0; l < L; l++)
                    a += c[l] * Ae[p * L + l];
                const double e = cabs(cexpm(H->eval[p] * t) - a);
                worst = e > worst ? e : worst;
            }
            /* the mean square over the voxels: each bin's node by its share */
            for (int k = 0; k < H->K; k++) {
                double complex a = 0;
                for (int l = 0; l < L; l++)
                    a += c[l] * conj(An[k * L + l]);
                const double complex e = cexpm(H->node[k] * t) - a;
                ss += H->h[k] * (creal(e) * creal(e) + cimag(e) * cimag(e));
            }
        }
    }
out:
    if (rms)
        *rms = nu > 0 ? sqrt(ss / (double)nu) : -1;
    free(G), free(Ae), free(An);
    return worst;
}

static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

lm_code lm_timeseg_make(const float *t, int64_t m, const float *f, int64_t n, int L, lm_timeseg_kind kind,
                        double tol, lm_timeseg **out, lm_error *err)
{
    *out = NULL;
    if (!t || !f || m <= 0 || n <= 0)
        return lm_fail(err, LM_ERR_INVALID, "time segmentation: missing sample times or field map");
    if (L != LM_SEGMENTS_AUTO && (L < 1 || L > LM_TIMESEG_MAX_L))
        return lm_fail(err, LM_ERR_INVALID, "time segmentation: %d segments is out of range (1..%d, or auto)", L,
                       LM_TIMESEG_MAX_L);
    if (kind != LM_TIMESEG_HIST && kind != LM_TIMESEG_MINMAX)
        return lm_fail(err, LM_ERR_INVALID, "time segmentation: unknown interpolator %d", (int)kind);
    for (int64_t j = 0; j < m; j++)
        if (!isfinite(t[j]))
            return lm_fail(err, LM_ERR_INVALID, "sample times: sample %lld is not a finite number", (long long)j);

    /* distinct times */
    float *u = lm_alloc((size_t)m, sizeof *u, err, "sample times");
    if (!u)
        return LM_ERR_NOMEM;
    const int64_t U = distinct_times(t, m, u);
    if (U < 0) {
        free(u);
        return lm_fail(err, LM_ERR_NOMEM, "time segmentation: cannot list the %lld sample times", (long long)m);
    }
    const double tmin = u[0], tmax = u[U - 1];

    hist H;
    lm_code rc = hist_make(f, n, tmax - tmin, &H, err);
    lm_timeseg *s = rc == LM_OK ? lm_calloc(1, sizeof *s, err, "time segmentation") : NULL;
    lm_cfloat *bu = NULL;
    if (!s) {
        free(u);
        if (rc == LM_OK)
            hist_free(&H);
        return rc == LM_OK ? LM_ERR_NOMEM : rc;
    }
    const int lmax = L == LM_SEGMENTS_AUTO ? LM_TIMESEG_MAX_L : L;
    s->kind = kind;
    s->m = m;
    s->fmin = H.fmin, s->fmax = H.fmax;
    s->times = U;
    s->tau = lm_alloc((size_t)lmax, sizeof *s->tau, err, "segment centres");
    bu = s->tau ? lm_alloc((size_t)lmax * (size_t)U, sizeof *bu, err, "interpolators") : NULL;
    if (!bu) {
        rc = LM_ERR_NOMEM;
        goto fail;
    }
    /* auto: each L is tried on every 8th time first (the fit at a time
     * depends on that time only; the subset's mean square estimates the
     * whole's, and the error falls several times per segment), skipped
     * when that is far above tol and decided in full otherwise: the same L
     * as trying each in full, for about a quarter of the work */
    const int64_t sub = L == LM_SEGMENTS_AUTO && U >= 64 ? 8 : 1;
    for (int l1 = L == LM_SEGMENTS_AUTO ? 1 : L; l1 <= lmax; l1++) {
        centres(l1, tmin, tmax, s->tau);
        double rms = -1;
        if (sub > 1 && l1 < lmax) {
            const double es = fit(&H, kind, l1, s->tau, u, U, sub, bu, &rms);
            if (es < 0) {
                rc = lm_fail(err, LM_ERR_NOMEM, "time segmentation: cannot fit %d segments", l1);
                goto fail;
            }
            if (rms >= 2 * tol * LM_TIMESEG_AUTO_SHARE)
                continue;
        }
        const double e = fit(&H, kind, l1, s->tau, u, U, 1, bu, &rms);
        if (e < 0) {
            rc = lm_fail(err, LM_ERR_NOMEM, "time segmentation: cannot fit %d segments", l1);
            goto fail;
        }
        s->L = l1;
        s->error = rms;
        s->worst = e;
        if (L != LM_SEGMENTS_AUTO || rms < tol * LM_TIMESEG_AUTO_SHARE)
            break;
    }
    /* back to every sample: b_l(t_j) = bu_l(index of t_j among the distinct times) */
    s->b = lm_alloc((size_t)s->L * (size_t)m, sizeof *s->b, err, "interpolators");
    if (!s->b) {
        rc = LM_ERR_NOMEM;
        goto fail;
    }
#pragma omp parallel for schedule(static) if (m >= 32768)
    for (int64_t j = 0; j < m; j++) {
        const float *hit = bsearch(&t[j], u, (size_t)U, sizeof *u, cmp_float);
        const int64_t i = hit - u;
        for (int l = 0; l < s->L; l++)
            s->b[l * m + j] = bu[l * U + i];
    }
    /* b is bu at each time's place: hashing bu and the times is hashing b
     * (18 MB on B128c8f, byte by byte 20 ms) in 1 MB */
    uint64_t h = 1469598103934665603ull;
    h = fnv(h, &s->L, sizeof s->L);
    h = fnv(h, &s->kind, sizeof s->kind);
    h = fnv(h, s->tau, (size_t)s->L * sizeof *s->tau);
    h = fnv(h, bu, (size_t)s->L * (size_t)U * sizeof *bu);
    h = fnv(h, t, (size_t)m * sizeof *t);
    s->hash = h;
    free(bu), free(u), hist_free(&H);
    *out = s;
    return LM_OK;
fail:
    free(bu), free(u), hist_free(&H);
    lm_timeseg_free(s);
    return rc;
}

void lm_timeseg_phases(const lm_timeseg *s, const float *f, int64_t n, lm_cfloat *c)
{
#pragma omp parallel for schedule(static) if (n >= 32768)
    for (int64_t j = 0; j < n; j++)
        for (int l = 0; l < s->L; l++) {
            const double complex e = cexpm((double)f[j] * s->tau[l]);
            c[l * n + j] = CMPLXF((float)creal(e), (float)cimag(e));
        }
}
