/* Block Toeplitz operator of time segmentation on the CPU
 * (lm_toeplitz_block.h). The layout of lm_toeplitz.c: difference d of Q
 * sits at index d + n of the 2x grid; shifted by n (mod 2n) it lands at d
 * mod 2n, and the unused difference -n is zeroed so that the block matrix
 * of FFTs is exactly Hermitian. Unlike lm_toeplitz.c the transforms are
 * plain FFTW plans over the whole padded grid, one per segment, the
 * segments spread over the threads (single-threaded plans; on the 256^2
 * grid of a 2D spiral FFTW_ESTIMATE's plan, batched or not, one or two
 * threads, took 1.0-1.7 ms per transform, FFTW_MEASURE's 0.13-0.15 ms, for
 * 0.13 s of planning: measured up to LM_TB_MEASURE_MAX points).
 * The L x L product runs over tiles of frequencies, each pair's block read
 * once per tile (the off-diagonal ones serve both (l, l') and (l', l)). */
#include "lm_toeplitz_block.h"
#include "lm_fftw.h"

#include <complex.h>
#include <fftw3.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PAR_MIN 32768
/* Grids up to this many points are planned with FFTW_MEASURE (0.13 s for
 * 256^2, a 10x faster plan than FFTW_ESTIMATE's); larger ones (3D) would
 * take seconds to measure. */
#define LM_TB_MEASURE_MAX (1 << 20)
/* Frequencies per tile of the block product: the tile's L inputs and L
 * outputs stay in L1/L2 while each pair's block streams through once, with
 * real and imaginary parts apart so that the loops are plain FMA streams. */
#define TB_TILE 128


static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;

struct lm_toeplitz_block {
    int64_t n[3], p[3];
    int64_t count, pcount;
    int L;
    int64_t npairs;
    int threads;
    lm_cfloat *qhat;     /* npairs x pcount: FFT(shifted Q_ll') / (N^2 P); kept in tiles of TB_TILE
                            values as TB_TILE real parts then TB_TILE imaginary parts (tb_q) */
    lm_cfloat *work;     /* L x pcount */
    fftwf_plan fwd, inv; /* one segment, in place, single-threaded (run on any of work's segments) */
};

/* Real and imaginary part of block pr at frequency i in the tiled layout. */
static inline float *tb_q(const lm_toeplitz_block *t, int64_t pr, int64_t i)
{
    return (float *)(t->qhat + pr * t->pcount) + 2 * (i / TB_TILE) * TB_TILE + i % TB_TILE;
}

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
        fftwf_plan_with_nthreads(1);
    fftwf_plan pl = fftwf_plan_many_dft(rank, dims, howmany, (fftwf_complex *)buf, NULL, 1, (int)t->pcount,
                                        (fftwf_complex *)buf, NULL, 1, (int)t->pcount, sign,
                                        t->pcount <= LM_TB_MEASURE_MAX ? FFTW_MEASURE : FFTW_ESTIMATE);
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
    t->fwd = plan(t, 1, t->work, FFTW_FORWARD);
    t->inv = plan(t, 1, t->work, FFTW_BACKWARD);
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
        /* to the tiled layout (real parts then imaginary parts per tile) */
        for (int64_t i0 = 0; i0 < t->pcount; i0 += TB_TILE) {
            float re[TB_TILE], im[TB_TILE];
            const int64_t nt = t->pcount - i0 < TB_TILE ? t->pcount - i0 : TB_TILE;
            for (int64_t i = 0; i < nt; i++)
                re[i] = crealf(g[i0 + i]), im[i] = cimagf(g[i0 + i]);
            float *d = (float *)(g + i0);
            memcpy(d, re, (size_t)nt * sizeof *re);
            memcpy(d + TB_TILE, im, (size_t)nt * sizeof *im);
        }
    }
    pthread_mutex_lock(&plan_lock);
    fftwf_destroy_plan(one);
    pthread_mutex_unlock(&plan_lock);
    if (t->pcount <= LM_TB_MEASURE_MAX) /* the measured plans, for the next process */
        lm_fftw_wisdom_save();
    *out = t;
    return LM_OK;
}

/* Every segment of work through plan p, the segments over the threads. */
static void transform_segments(lm_toeplitz_block *t, fftwf_plan p)
{
    lm_cfloat *w = t->work;
    const int64_t pc = t->pcount;
#pragma omp parallel for num_threads(t->threads) schedule(dynamic, 1) if (t->L > 1)
    for (int l = 0; l < t->L; l++)
        fftwf_execute_dft(p, (fftwf_complex *)(w + l * pc), (fftwf_complex *)(w + l * pc));
}


/* Y_l = sum_l' Qhat_ll' Z_l' per frequency, Qhat_l'l = conj(Qhat_ll'). */
static void combine(lm_toeplitz_block *t)
{
    const int64_t pc = t->pcount;
    const int L = t->L;
    lm_cfloat *w = t->work;
    const int64_t ntiles = (pc + TB_TILE - 1) / TB_TILE;
#pragma omp parallel for num_threads(t->threads) schedule(static) if (pc >= PAR_MIN)
    for (int64_t tile = 0; tile < ntiles; tile++) {
        const int64_t i0 = tile * TB_TILE, nt = pc - i0 < TB_TILE ? pc - i0 : TB_TILE;
        if (L > 16) { /* rare: the plain loop, one frequency at a time */
            for (int64_t i = i0; i < i0 + nt; i++) {
                lm_cfloat z[LM_BLOCK_MAX_L];
                for (int l = 0; l < L; l++)
                    z[l] = w[l * pc + i];
                for (int l = 0; l < L; l++) {
                    lm_cfloat acc = 0;
                    for (int lp = 0; lp < L; lp++) {
                        const float *q = tb_q(t, lm_block_pair(L, l < lp ? l : lp, l < lp ? lp : l), i);
                        const lm_cfloat qv = q[0] + I * (lp >= l ? q[TB_TILE] : -q[TB_TILE]);
                        acc += qv * z[lp];
                    }
                    w[l * pc + i] = acc;
                }
            }
            continue;
        }
        float zr[16][TB_TILE], zi[16][TB_TILE], yr[16][TB_TILE], yi[16][TB_TILE];
        for (int l = 0; l < L; l++)
            for (int64_t i = 0; i < nt; i++) {
                zr[l][i] = crealf(w[l * pc + i0 + i]), zi[l][i] = cimagf(w[l * pc + i0 + i]);
                yr[l][i] = yi[l][i] = 0;
            }
        for (int l = 0; l < L; l++)
            for (int lp = l; lp < L; lp++) {
                const float *qr = tb_q(t, lm_block_pair(L, l, lp), i0), *qi = qr + TB_TILE;
                /* y_l += q z_l' */
                for (int64_t i = 0; i < nt; i++) {
                    yr[l][i] += qr[i] * zr[lp][i] - qi[i] * zi[lp][i];
                    yi[l][i] += qr[i] * zi[lp][i] + qi[i] * zr[lp][i];
                }
                if (lp != l) /* y_l' += conj(q) z_l */
                    for (int64_t i = 0; i < nt; i++) {
                        yr[lp][i] += qr[i] * zr[l][i] + qi[i] * zi[l][i];
                        yi[lp][i] += qr[i] * zi[l][i] - qi[i] * zr[l][i];
                    }
            }
        for (int l = 0; l < L; l++)
            for (int64_t i = 0; i < nt; i++)
                w[l * pc + i0 + i] = yr[l][i] + I * yi[l][i];
    }
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
    transform_segments(t, t->fwd);
    combine(t);
    transform_segments(t, t->inv);
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
