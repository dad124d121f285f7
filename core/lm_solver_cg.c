/* Toeplitz conjugate gradient on the CPU (GUIDE.md section 1, lm_solver.h).
 *
 * F rho (k_m) = (1/N) phi(k_m) sum_n rho(x_n) exp(-i 2 pi k_m . x_n), hence
 *   F^H d          = fhd_raw / N,
 *   (F^H F rho)(a) = (1/N^2) sum_b Q(x_a - x_b) rho(x_b),
 * a linear convolution with Q at the differences (a - b)/n, |a - b| < n per
 * axis. The raw Q lives at (i - n)/n, i = 0..2n-1, so difference d sits at
 * index d + n; shifted by n (mod 2n) difference d lands at index d mod 2n
 * and a circular convolution on the 2n grid of the zero-padded rho equals
 * the linear one on the n grid. Index n (difference -n) is never used: it is
 * zeroed so that the shifted Q is exactly Hermitian and its FFT real.
 *
 * The zero padding is exploited: the forward transform along x only runs on
 * the rows that hold data (y < n1, z < n2), along y only on the planes
 * z < n2; the inverse mirrors that since only the first n per axis is kept.
 * A 3D transform then costs 7/12 of the full one. */
#include "lm_solver.h"

#include <complex.h>
#include <fftw3.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_once_t fftw_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;
static int fftw_threads_ok;

static void fftw_setup(void)
{
    fftw_threads_ok = fftwf_init_threads() != 0;
    fftwf_make_planner_thread_safe();
}

int64_t lm_q_count(const int64_t n[3])
{
    return (2 * n[0]) * (2 * n[1]) * (n[2] > 1 ? 2 * n[2] : 1);
}

struct lm_toeplitz {
    int64_t n[3], p[3], stride[3];
    int64_t count;      /* N */
    int64_t pcount;     /* padded grid */
    int threads;
    float *buf;         /* interleaved (re, im), the FFT's in-place array */
    float *qhat;        /* real FFT of the shifted Q, with 1/(N^2 P) folded in */
    fftwf_plan fwd[3], inv[3]; /* one pass per padded axis, NULL if none */
    double diag;
};

void lm_toeplitz_free(lm_toeplitz *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&plan_lock);
    for (int a = 0; a < 3; a++) {
        if (t->fwd[a])
            fftwf_destroy_plan(t->fwd[a]);
        if (t->inv[a])
            fftwf_destroy_plan(t->inv[a]);
    }
    pthread_mutex_unlock(&plan_lock);
    fftwf_free(t->buf);
    fftwf_free(t->qhat);
    free(t);
}

double lm_toeplitz_diag(const lm_toeplitz *t)
{
    return t->diag;
}

/* Plans the 1D transforms along axis a over the region where they matter:
 * axes before a (already transformed forward / not yet cropped inverse) at
 * full padded extent, axes after a at the data extent. */
static fftwf_plan plan_pass(lm_toeplitz *t, int a, int sign)
{
    fftwf_iodim dim = {(int)t->p[a], (int)t->stride[a], (int)t->stride[a]};
    fftwf_iodim loops[2];
    int nloops = 0;
    for (int b = 0; b < 3; b++) {
        if (b == a)
            continue;
        int64_t extent = b < a ? t->p[b] : t->n[b];
        if (extent > 1) {
            loops[nloops].n = (int)extent;
            loops[nloops].is = loops[nloops].os = (int)t->stride[b];
            nloops++;
        }
    }
    return fftwf_plan_guru_dft(1, &dim, nloops, loops, (fftwf_complex *)t->buf, (fftwf_complex *)t->buf, sign, FFTW_ESTIMATE);
}

lm_code lm_toeplitz_new(const int64_t n[3], const lm_cfloat *q, int threads, lm_toeplitz **out,
                        lm_error *err)
{
    *out = NULL;
    for (int a = 0; a < 3; a++)
        if (n[a] <= 0 || n[a] > 4096)
            return lm_fail(err, LM_ERR_INVALID, "toeplitz: matrix %lldx%lldx%lld is out of range",
                           (long long)n[0], (long long)n[1], (long long)n[2]);
    if (!q)
        return lm_fail(err, LM_ERR_INVALID, "toeplitz: Q is missing");
    pthread_once(&fftw_once, fftw_setup);

    lm_toeplitz *t = lm_calloc(1, sizeof *t, err, "toeplitz operator");
    if (!t)
        return LM_ERR_NOMEM;
    t->threads = threads > 0 ? threads : omp_get_max_threads();
    for (int a = 0; a < 3; a++) {
        t->n[a] = n[a];
        t->p[a] = (a < 2 || n[2] > 1) ? 2 * n[a] : 1;
    }
    t->stride[0] = 1;
    t->stride[1] = t->p[0];
    t->stride[2] = t->p[0] * t->p[1];
    t->count = n[0] * n[1] * n[2];
    t->pcount = t->p[0] * t->p[1] * t->p[2];
    const long long pc = (long long)t->pcount;
    if (t->pcount > (int64_t)1 << 31 || t->pcount > (int64_t)LM_MAX_ELEMENTS) {
        free(t);
        return lm_fail(err, LM_ERR_NOMEM, "toeplitz: %lld-point FFT grid is too large", pc);
    }
    t->buf = fftwf_malloc((size_t)t->pcount * 2 * sizeof(float));
    t->qhat = fftwf_malloc((size_t)t->pcount * sizeof(float));
    if (!t->buf || !t->qhat) {
        lm_toeplitz_free(t);
        return lm_fail(err, LM_ERR_NOMEM, "toeplitz: cannot allocate the %lld-point FFT grid", pc);
    }

    /* Planning is serialised: fftwf_plan_with_nthreads is global state. */
    pthread_mutex_lock(&plan_lock);
    if (fftw_threads_ok)
        fftwf_plan_with_nthreads(t->threads);
    int rank = 0, dims[3];
    for (int a = 2; a >= 0; a--) /* FFTW is row-major: slowest axis first */
        if (t->p[a] > 1)
            dims[rank++] = (int)t->p[a];
    fftwf_plan full = fftwf_plan_dft(rank, dims, (fftwf_complex *)t->buf, (fftwf_complex *)t->buf, FFTW_FORWARD, FFTW_ESTIMATE);
    int ok = full != NULL;
    for (int a = 0; a < 3 && ok; a++) {
        if (t->p[a] <= 1)
            continue;
        t->fwd[a] = plan_pass(t, a, FFTW_FORWARD);
        t->inv[a] = plan_pass(t, a, FFTW_BACKWARD);
        ok = t->fwd[a] && t->inv[a];
    }
    pthread_mutex_unlock(&plan_lock);
    if (!ok) {
        if (full) {
            pthread_mutex_lock(&plan_lock);
            fftwf_destroy_plan(full);
            pthread_mutex_unlock(&plan_lock);
        }
        lm_toeplitz_free(t);
        return lm_fail(err, LM_ERR_INTERNAL, "toeplitz: FFTW could not plan the %lld-point transform", pc);
    }

    /* Shift Q by n per padded axis (index d + n -> d mod 2n), zeroing the
     * unused difference -n. */
    const int64_t *p = t->p;
    const int64_t sh[3] = {p[0] > 1 ? n[0] : 0, p[1] > 1 ? n[1] : 0, p[2] > 1 ? n[2] : 0};
#pragma omp parallel for num_threads(t->threads) collapse(2) schedule(static)
    for (int64_t k = 0; k < p[2]; k++)
        for (int64_t j = 0; j < p[1]; j++) {
            int64_t ks = (k + sh[2]) % p[2], js = (j + sh[1]) % p[1];
            for (int64_t i = 0; i < p[0]; i++) {
                int64_t dst = i + p[0] * (j + p[1] * k);
                int used = (p[0] <= 1 || i != n[0]) && (p[1] <= 1 || j != n[1]) && (p[2] <= 1 || k != n[2]);
                if (used) {
                    lm_cfloat v = q[(i + sh[0]) % p[0] + p[0] * (js + p[1] * ks)];
                    t->buf[2 * dst] = crealf(v);
                    t->buf[2 * dst + 1] = cimagf(v);
                } else {
                    t->buf[2 * dst] = t->buf[2 * dst + 1] = 0;
                }
            }
        }
    t->diag = crealf(q[sh[0] + p[0] * (sh[1] + p[1] * sh[2])]) / ((double)t->count * (double)t->count);
    fftwf_execute(full);
    pthread_mutex_lock(&plan_lock);
    fftwf_destroy_plan(full);
    pthread_mutex_unlock(&plan_lock);
    /* The unnormalised inverse FFT multiplies by P; fold 1/(N^2 P) in. */
    const double scale = 1.0 / ((double)t->count * (double)t->count * (double)t->pcount);
#pragma omp parallel for num_threads(t->threads) schedule(static)
    for (int64_t j = 0; j < t->pcount; j++)
        t->qhat[j] = (float)(t->buf[2 * j] * scale);

    *out = t;
    return LM_OK;
}

void lm_toeplitz_apply(lm_toeplitz *t, const lm_cfloat *x, lm_cfloat *y)
{
    const int64_t *n = t->n, *p = t->p;
    float *buf = t->buf;
    const int nt = t->threads;

#pragma omp parallel num_threads(nt)
    {
#pragma omp for schedule(static)
        for (int64_t j = 0; j < 2 * t->pcount; j++)
            buf[j] = 0;
#pragma omp for collapse(2) schedule(static)
        for (int64_t k = 0; k < n[2]; k++)
            for (int64_t j = 0; j < n[1]; j++) {
                const lm_cfloat *src = x + n[0] * (j + n[1] * k);
                float *dst = buf + 2 * p[0] * (j + p[1] * k);
                for (int64_t i = 0; i < n[0]; i++) {
                    dst[2 * i] = crealf(src[i]);
                    dst[2 * i + 1] = cimagf(src[i]);
                }
            }
    }
    for (int a = 0; a < 3; a++)
        if (t->fwd[a])
            fftwf_execute(t->fwd[a]);
    const float *qh = t->qhat;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t j = 0; j < t->pcount; j++) {
        buf[2 * j] *= qh[j];
        buf[2 * j + 1] *= qh[j];
    }
    for (int a = 2; a >= 0; a--)
        if (t->inv[a])
            fftwf_execute(t->inv[a]);
#pragma omp parallel for num_threads(nt) collapse(2) schedule(static)
    for (int64_t k = 0; k < n[2]; k++)
        for (int64_t j = 0; j < n[1]; j++) {
            lm_cfloat *dst = y + n[0] * (j + n[1] * k);
            const float *src = buf + 2 * p[0] * (j + p[1] * k);
            for (int64_t i = 0; i < n[0]; i++)
                dst[i] = CMPLXF(src[2 * i], src[2 * i + 1]);
        }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct cg_sys {
    lm_toeplitz *op;
    int64_t n[3], count;
    lm_reg_kind reg;
    const float *weights;
    double reg_scale;  /* lambda s */
    lm_cfloat *tmp;    /* W^H W p for the difference regularisers */
    int threads;
} cg_sys;

static void cg_apply(cg_sys *s, const lm_cfloat *x, lm_cfloat *y)
{
    lm_toeplitz_apply(s->op, x, y);
    if (s->reg_scale == 0)
        return;
    const float c = (float)s->reg_scale;
    const int64_t count = s->count;
    if (s->reg == LM_REG_IDENTITY) {
#pragma omp parallel for num_threads(s->threads) schedule(static)
        for (int64_t j = 0; j < count; j++)
            y[j] += c * x[j];
        return;
    }
    lm_reg_apply(s->n, s->reg, s->weights, x, s->tmp, s->threads);
    lm_cfloat *tmp = s->tmp;
#pragma omp parallel for num_threads(s->threads) schedule(static)
    for (int64_t j = 0; j < count; j++)
        y[j] += c * tmp[j];
}

/* Re <a, b> = Re sum conj(a) b, in double. */
static double dot_re(const lm_cfloat *a, const lm_cfloat *b, int64_t count, int nt)
{
    double s = 0;
#pragma omp parallel for num_threads(nt) reduction(+ : s) schedule(static)
    for (int64_t j = 0; j < count; j++)
        s += (double)crealf(a[j]) * crealf(b[j]) + (double)cimagf(a[j]) * cimagf(b[j]);
    return s;
}

lm_code lm_cg_solve_cpu(const lm_geom *g, const lm_cfloat *q, const lm_cfloat *fhd,
                        lm_cfloat *rho, const lm_cg_opts *o, lm_cg_report *rep, lm_error *err)
{
    if (rep) {
        rep->iters_done = 0;
        rep->rel_resid = 0;
        rep->resid_history = NULL;
    }
    if (!g || !q || !fhd || !rho || !o)
        return lm_fail(err, LM_ERR_INVALID, "cg: missing argument");
    if (!(o->lambda >= 0) || !isfinite(o->lambda))
        return lm_fail(err, LM_ERR_INVALID, "cg: lambda %g must be finite and >= 0", o->lambda);
    if (o->iters < 0)
        return lm_fail(err, LM_ERR_INVALID, "cg: iteration count %d is negative", o->iters);
    if (o->reg != LM_REG_IDENTITY && o->reg != LM_REG_GRADIENT && o->reg != LM_REG_ANATOMICAL)
        return lm_fail(err, LM_ERR_INVALID, "cg: unknown regulariser %d", (int)o->reg);
    if (o->reg == LM_REG_ANATOMICAL && o->lambda > 0 && !o->edge_weights)
        return lm_fail(err, LM_ERR_INVALID, "cg: anatomical regulariser without edge weights");

    const double t0 = now_s();
    const int nt = o->threads > 0 ? o->threads : omp_get_max_threads();
    cg_sys s = {0};
    lm_code rc = lm_toeplitz_new(g->n, q, nt, &s.op, err);
    if (rc != LM_OK)
        return rc;
    for (int a = 0; a < 3; a++)
        s.n[a] = g->n[a];
    const int64_t count = s.count = g->n[0] * g->n[1] * g->n[2];
    s.reg = o->reg;
    s.weights = o->edge_weights;
    s.reg_scale = o->lambda * lm_toeplitz_diag(s.op);
    s.threads = nt;

    lm_cfloat *b = lm_alloc((size_t)count, sizeof *b, err, "cg vectors");
    lm_cfloat *r = b ? lm_alloc((size_t)count, sizeof *r, err, "cg vectors") : NULL;
    lm_cfloat *pv = r ? lm_alloc((size_t)count, sizeof *pv, err, "cg vectors") : NULL;
    lm_cfloat *ap = pv ? lm_alloc((size_t)count, sizeof *ap, err, "cg vectors") : NULL;
    double *hist = ap ? lm_alloc((size_t)o->iters + 1, sizeof *hist, err, "cg history") : NULL;
    if (hist && s.reg != LM_REG_IDENTITY && s.reg_scale > 0) {
        s.tmp = lm_alloc((size_t)count, sizeof *s.tmp, err, "cg vectors");
        if (!s.tmp) {
            free(hist);
            hist = NULL;
        }
    }
    if (!hist) {
        rc = LM_ERR_NOMEM;
        goto done;
    }

    const float inv_n = (float)(1.0 / (double)count);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t j = 0; j < count; j++)
        b[j] = fhd[j] * inv_n;
    const double bnorm = sqrt(dot_re(b, b, count, nt));
    if (!isfinite(bnorm)) {
        rc = lm_fail(err, LM_ERR_INVALID, "cg: F^H d is not finite");
        goto done;
    }
    if (bnorm == 0) {
        /* A is positive semidefinite: 0 solves it (the minimum-norm answer). */
        memset(rho, 0, (size_t)count * sizeof *rho);
        hist[0] = 0;
        if (rep) {
            rep->resid_history = hist;
            hist = NULL;
        }
        goto done;
    }

    if (o->warm_start) {
        cg_apply(&s, rho, ap);
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t j = 0; j < count; j++)
            r[j] = b[j] - ap[j];
    } else {
        memset(rho, 0, (size_t)count * sizeof *rho);
        memcpy(r, b, (size_t)count * sizeof *r);
    }
    memcpy(pv, r, (size_t)count * sizeof *pv);
    double rr = dot_re(r, r, count, nt);
    double rel = sqrt(rr) / bnorm;
    hist[0] = rel;
    int done_iters = 0;

    for (int it = 1; it <= o->iters && !(o->tol > 0 && rel < o->tol); it++) {
        cg_apply(&s, pv, ap);
        double pap = dot_re(pv, ap, count, nt);
        if (!(pap > 0))
            break; /* p in the null space (or rounding): no further descent */
        const double alpha = rr / pap;
        const float af = (float)alpha;
        double rr_new = 0, cost_acc = 0;
#pragma omp parallel for num_threads(nt) reduction(+ : rr_new, cost_acc) schedule(static)
        for (int64_t j = 0; j < count; j++) {
            lm_cfloat x = rho[j] + af * pv[j];
            lm_cfloat rj = r[j] - af * ap[j];
            rho[j] = x;
            r[j] = rj;
            double rre = crealf(rj), rim = cimagf(rj);
            rr_new += rre * rre + rim * rim;
            /* cost = rho^H A rho - 2 Re rho^H b = -Re <rho, r + b> */
            cost_acc += (double)crealf(x) * (rre + crealf(b[j])) + (double)cimagf(x) * (rim + cimagf(b[j]));
        }
        rel = sqrt(rr_new) / bnorm;
        hist[it] = rel;
        done_iters = it;
        if (o->monitor && o->monitor(o->monitor_user, it, rel, -cost_acc, now_s() - t0)) {
            if (rep) {
                rep->iters_done = it;
                rep->rel_resid = rel;
            }
            rc = lm_fail(err, LM_ERR_CANCELLED, "cg: cancelled at iteration %d", it);
            goto done;
        }
        const float beta = (float)(rr_new / rr);
        rr = rr_new;
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t j = 0; j < count; j++)
            pv[j] = r[j] + beta * pv[j];
    }
    if (rep) {
        rep->iters_done = done_iters;
        rep->rel_resid = rel;
        rep->resid_history = hist;
        hist = NULL;
    }

done:
    free(hist);
    free(s.tmp);
    free(ap);
    free(pv);
    free(r);
    free(b);
    lm_toeplitz_free(s.op);
    return rc;
}
