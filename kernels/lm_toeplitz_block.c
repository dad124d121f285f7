/* Block Toeplitz operator of time segmentation on the CPU
 * (lm_toeplitz_block.h). The layout of lm_toeplitz.c: difference d of Q
 * sits at index d + n of the 2x grid; shifted by n (mod 2n) it lands at d
 * mod 2n, and the unused difference -n is zeroed so that the block matrix
 * of FFTs is exactly Hermitian. Unlike lm_toeplitz.c the transforms are
 * plain batched FFTW plans over the whole padded grid (the L segments are
 * the batch): simpler, and the L x L product dominates as L grows. */
#include "lm_toeplitz_block.h"
#include "lm_fftw.h"

#include <complex.h>
#include <fftw3.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PAR_MIN 32768

static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;

struct lm_toeplitz_block {
    int64_t n[3], p[3];
    int64_t count, pcount;
    int L;
    int64_t npairs;
    int threads;
    lm_cfloat *qhat;     /* npairs x pcount: FFT(shifted Q_ll') / (N^2 P) */
    lm_cfloat *work;     /* L x pcount */
    fftwf_plan fwd, inv; /* batched over the L segments, in place on work */
};

int lm_toeplitz_block_segments(const lm_toeplitz_block *t)
{
    return t->L;
}

void lm_toeplitz_block_free(lm_toeplitz_block *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&plan_lock);
    if (t->fwd)
        fftwf_destroy_plan(t->fwd);
    if (t->inv)
        fftwf_destroy_plan(t->inv);
    pthread_mutex_unlock(&plan_lock);
    fftwf_free(t->qhat);
    fftwf_free(t->work);
    free(t);
}

static fftwf_plan plan(const lm_toeplitz_block *t, int howmany, lm_cfloat *buf, int sign)
{
    int rank = 0, dims[3];
    for (int a = 2; a >= 0; a--) /* FFTW is row-major: slowest axis first */
        if (t->p[a] > 1)
            dims[rank++] = (int)t->p[a];
    pthread_mutex_lock(&plan_lock);
    if (lm_fftw_setup())
        fftwf_plan_with_nthreads(t->threads);
    fftwf_plan pl = fftwf_plan_many_dft(rank, dims, howmany, (fftwf_complex *)buf, NULL, 1, (int)t->pcount,
                                        (fftwf_complex *)buf, NULL, 1, (int)t->pcount, sign, FFTW_ESTIMATE);
    pthread_mutex_unlock(&plan_lock);
    return pl;
}

lm_code lm_toeplitz_block_new(const int64_t n[3], int L, const lm_cfloat *q, int threads,
                              lm_toeplitz_block **out, lm_error *err)
{
    *out = NULL;
    for (int a = 0; a < 3; a++)
        if (n[a] <= 0 || n[a] > 4096)
            return lm_fail(err, LM_ERR_INVALID, "block toeplitz: matrix %lldx%lldx%lld is out of range",
                           (long long)n[0], (long long)n[1], (long long)n[2]);
    if (L < 1 || L > LM_BLOCK_MAX_L)
        return lm_fail(err, LM_ERR_INVALID, "block toeplitz: %d segments is out of range", L);
    if (!q)
        return lm_fail(err, LM_ERR_INVALID, "block toeplitz: Q is missing");
    lm_toeplitz_block *t = lm_calloc(1, sizeof *t, err, "block toeplitz operator");
    if (!t)
        return LM_ERR_NOMEM;
    t->threads = threads > 0 ? threads : omp_get_max_threads();
    t->L = L;
    t->npairs = (int64_t)L * (L + 1) / 2;
    int padded = 0;
    for (int a = 0; a < 3; a++) {
        t->n[a] = n[a];
        t->p[a] = n[a] > 1 ? 2 * n[a] : 1;
        padded += t->p[a] > 1;
    }
    t->count = n[0] * n[1] * n[2];
    t->pcount = t->p[0] * t->p[1] * t->p[2];
    size_t qn, wn;
    if (!padded || t->pcount > (int64_t)1 << 31 || !lm_size_mul((size_t)t->pcount, (size_t)t->npairs, &qn) ||
        !lm_size_mul((size_t)t->pcount, (size_t)L, &wn) || qn > (size_t)LM_MAX_ELEMENTS) {
        const long long pc = (long long)t->pcount;
        free(t);
        return lm_fail(err, padded ? LM_ERR_NOMEM : LM_ERR_INVALID,
                       "block toeplitz: %lld points x %d segments is out of range", pc, L);
    }
    t->qhat = fftwf_malloc(qn * sizeof *t->qhat);
    t->work = fftwf_malloc(wn * sizeof *t->work);
    if (!t->qhat || !t->work) {
        lm_toeplitz_block_free(t);
        return lm_fail(err, LM_ERR_NOMEM, "block toeplitz: cannot allocate %d segments of the %lld-point grid", L,
                       (long long)t->pcount);
    }
    t->fwd = plan(t, L, t->work, FFTW_FORWARD);
    t->inv = plan(t, L, t->work, FFTW_BACKWARD);
    fftwf_plan one = plan(t, 1, t->qhat, FFTW_FORWARD);
    if (!t->fwd || !t->inv || !one) {
        if (one) {
            pthread_mutex_lock(&plan_lock);
            fftwf_destroy_plan(one);
            pthread_mutex_unlock(&plan_lock);
        }
        lm_toeplitz_block_free(t);
        return lm_fail(err, LM_ERR_INTERNAL, "block toeplitz: FFTW could not plan the %lld-point transform",
                       (long long)t->pcount);
    }
    /* shift (difference d to index d mod 2n), zero the unused -n, FFT, scale */
    const int64_t *p = t->p;
    const int64_t sh[3] = {p[0] > 1 ? n[0] : 0, p[1] > 1 ? n[1] : 0, p[2] > 1 ? n[2] : 0};
    const float scale = (float)(1.0 / ((double)t->count * (double)t->count * (double)t->pcount));
    for (int64_t pr = 0; pr < t->npairs; pr++) {
        const lm_cfloat *src = q + pr * t->pcount;
        lm_cfloat *g = t->qhat + pr * t->pcount;
#pragma omp parallel for num_threads(t->threads) collapse(2) schedule(static) if (t->pcount >= PAR_MIN)
        for (int64_t k = 0; k < p[2]; k++)
            for (int64_t j = 0; j < p[1]; j++) {
                const int64_t ks = (k + sh[2]) % p[2], js = (j + sh[1]) % p[1];
                for (int64_t i = 0; i < p[0]; i++) {
                    const int used = (p[0] <= 1 || i != n[0]) && (p[1] <= 1 || j != n[1]) && (p[2] <= 1 || k != n[2]);
                    g[i + p[0] * (j + p[1] * k)] = used ? src[(i + sh[0]) % p[0] + p[0] * (js + p[1] * ks)] : 0;
                }
            }
        fftwf_execute_dft(one, (fftwf_complex *)g, (fftwf_complex *)g);
#pragma omp parallel for num_threads(t->threads) schedule(static) if (t->pcount >= PAR_MIN)
        for (int64_t i = 0; i < t->pcount; i++)
            g[i] *= scale;
    }
    pthread_mutex_lock(&plan_lock);
    fftwf_destroy_plan(one);
    pthread_mutex_unlock(&plan_lock);
    *out = t;
    return LM_OK;
}

void lm_toeplitz_block_apply_coil(lm_toeplitz_block *t, const lm_cfloat *x, const lm_cfloat *s, const lm_cfloat *c,
                                  lm_cfloat *y, int accumulate)
{
    const int64_t *n = t->n, *p = t->p, pc = t->pcount, nv = t->count;
    const int L = t->L;
    lm_cfloat *w = t->work;
    /* zero-padded c_l' s x for every segment, the padding written as zeros in the same pass */
#pragma omp parallel for num_threads(t->threads) collapse(2) schedule(static) if (pc >= PAR_MIN)
    for (int64_t k = 0; k < p[2]; k++)
        for (int64_t j = 0; j < p[1]; j++) {
            const int64_t row = p[0] * (j + p[1] * k);
            if (k >= n[2] || j >= n[1]) {
                for (int l = 0; l < L; l++)
                    memset(w + l * pc + row, 0, (size_t)p[0] * sizeof *w);
                continue;
            }
            const int64_t vrow = n[0] * (j + n[1] * k);
            for (int l = 0; l < L; l++) {
                lm_cfloat *wl = w + l * pc + row;
                const lm_cfloat *cl = c + l * nv + vrow;
                for (int64_t i = 0; i < n[0]; i++) {
                    const lm_cfloat v = s ? s[vrow + i] * x[vrow + i] : x[vrow + i];
                    wl[i] = cl[i] * v;
                }
                for (int64_t i = n[0]; i < p[0]; i++)
                    wl[i] = 0;
            }
        }
    fftwf_execute(t->fwd);
    /* Y_l = sum_l' Qhat_ll' Z_l', Qhat_ll' = conj(Qhat_l'l) below the diagonal */
#pragma omp parallel for num_threads(t->threads) schedule(static) if (pc >= PAR_MIN)
    for (int64_t i = 0; i < pc; i++) {
        lm_cfloat z[LM_BLOCK_MAX_L];
        for (int l = 0; l < L; l++)
            z[l] = w[l * pc + i];
        for (int l = 0; l < L; l++) {
            lm_cfloat acc = 0;
            for (int lp = 0; lp < L; lp++) {
                const lm_cfloat qv = lp >= l ? t->qhat[lm_block_pair(L, l, lp) * pc + i]
                                             : conjf(t->qhat[lm_block_pair(L, lp, l) * pc + i]);
                acc += qv * z[lp];
            }
            w[l * pc + i] = acc;
        }
    }
    fftwf_execute(t->inv);
#pragma omp parallel for num_threads(t->threads) collapse(2) schedule(static) if (nv >= PAR_MIN)
    for (int64_t k = 0; k < n[2]; k++)
        for (int64_t j = 0; j < n[1]; j++) {
            const int64_t row = p[0] * (j + p[1] * k), vrow = n[0] * (j + n[1] * k);
            for (int64_t i = 0; i < n[0]; i++) {
                lm_cfloat v = 0;
                for (int l = 0; l < L; l++)
                    v += conjf(c[l * nv + vrow + i]) * w[l * pc + row + i];
                if (s)
                    v = conjf(s[vrow + i]) * v;
                y[vrow + i] = accumulate ? y[vrow + i] + v : v;
            }
        }
}
