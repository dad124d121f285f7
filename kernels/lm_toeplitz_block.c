/* Block Toeplitz operator of time segmentation on the CPU
 * (lm_toeplitz_block.h). The layout of lm_toeplitz.c: difference d of Q
 * sits at index d + n of the 2x grid; shifted by n (mod 2n) it lands at d
 * mod 2n, and the unused difference -n is zeroed so that the block matrix
 * of FFTs is exactly Hermitian.
 *
 * As in lm_toeplitz.c the 2x grid is transformed one axis at a time in
 * tiles of lines, with single-threaded batched FFTW plans inside our own
 * OpenMP loop, skipping the zero padding on the way in and the crop on the
 * way out. What differs: many images (coils x segments) go through at
 * once, and the work array keeps the LAST padded axis fastest, so that
 *   - every pass along another axis gathers BT lines adjacent along the
 *     last axis (BT contiguous values per position: whole cache lines);
 *   - the last axis' lines are contiguous: the fused pass reads one line of
 *     every image of the coil group, transforms it, applies the L x L
 *     matrix of each frequency (stored by chunks of QW frequencies, all
 *     pairs of a chunk in one contiguous block, split real/imaginary, read
 *     once for all the group's coils) and transforms back, all in a tile
 *     that stays in cache;
 *   - the first axis (contiguous in x and y) multiplies by c_l s_c when it
 *     reads x and sums conj(c_l s_c) over segments and coils when it
 *     writes y, so the phases and maps cost no pass of their own.
 * The padded half of the last axis is never stored: the work array holds
 * n_last values per line, each image 2^(d-1) N values. */
#include "lm_toeplitz_block.h"
#include "lm_fftw.h"

#include <complex.h>
#include <fftw3.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Below this many values a loop runs on one thread. */
#define PAR_MIN 32768
/* Lines per tile along the last axis in the other axes' passes: 8 complex
 * floats are one cache line. */
#define BT 8
/* Positions ahead that the transposing gathers and scatters prefetch. */
#define PF 16
/* Frequencies per step of the L x L product (one AVX-512 register of floats). */
#define QW 16
/* The work array of a coil group stays under this (at least one coil). */
#define WORK_BUDGET ((int64_t)256 << 20)

static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;

/* a b and conj(a) b without C99's NaN/Inf recovery (which calls out of line
 * and stops vectorisation); the operands are finite. */
static inline lm_cfloat cmul(lm_cfloat a, lm_cfloat b)
{
    return CMPLXF(crealf(a) * crealf(b) - cimagf(a) * cimagf(b), crealf(a) * cimagf(b) + cimagf(a) * crealf(b));
}

static inline lm_cfloat cmulc(lm_cfloat a, lm_cfloat b)
{
    return CMPLXF(crealf(a) * crealf(b) + cimagf(a) * cimagf(b), crealf(a) * cimagf(b) - cimagf(a) * crealf(b));
}

struct lm_toeplitz_block {
    int64_t n[3], p[3];
    int64_t count, pcount;
    int L;
    int64_t npairs;
    int threads;
    int first, last;    /* first and last padded axis */
    int64_t xs[3];      /* strides of x and y (the n grid) */
    int64_t ws[3];      /* strides of a work image: last axis fastest */
    int64_t ecount;     /* values per work image */
    int64_t nlines;     /* lines along the last axis of the 2x grid */
    int64_t cstride;    /* a coil's L lines in the fused tile, rounded for alignment */
    float *qt;          /* per line of the last axis, per chunk of QW frequencies, per pair:
                           QW real parts, then QW imaginary parts (a chunk's L x L matrices
                           are one contiguous read) */
    int gmax;           /* coils per group */
    lm_cfloat *work;    /* gmax x L images of ecount values */
    lm_cfloat **tiles;  /* one per thread */
    lm_cfloat **outs;   /* one per thread, as large: the transforms are out of place (in place,
                           FFTW's ESTIMATE plans copy every line through a buffer) */
    lm_cfloat **accs;   /* one per thread: BT x n of the first axis' sums */
    lm_cfloat **fins;   /* one per thread: the fused pass' inputs, gmax x cstride, zeroed once:
                           only the data part of each line is ever written, the padding
                           stays zero */
    int ntiles;
    fftwf_plan fwd[3], inv[3]; /* a != last: L x BT lines of p[a]; last: L lines */
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
    for (int a = 0; a < 3; a++) {
        if (t->fwd[a])
            fftwf_destroy_plan(t->fwd[a]);
        if (t->inv[a])
            fftwf_destroy_plan(t->inv[a]);
    }
    pthread_mutex_unlock(&plan_lock);
    for (int i = 0; i < t->ntiles; i++) {
        if (t->tiles)
            fftwf_free(t->tiles[i]);
        if (t->accs)
            fftwf_free(t->accs[i]);
        if (t->outs)
            fftwf_free(t->outs[i]);
        if (t->fins)
            fftwf_free(t->fins[i]);
    }
    free(t->fins);
    free(t->outs);
    free(t->tiles);
    free(t->accs);
    fftwf_free(t->qt);
    fftwf_free(t->work);
    free(t);
}

/* The axis other than a and b (3 axes). */
static inline int other_axis(int a, int b)
{
    return 3 - a - b;
}

/* Where Q's transform is made: the shifted block read from the raw Q, the
 * 2x grid in between, the fused pass' layout written at the end. */
typedef struct qhat_job {
    const lm_cfloat *src;  /* raw Q of the pair (lm_points_q_grid order) */
    const int64_t *smap[3]; /* per axis: raw index of shifted index i, -1 for the unused -n */
    lm_cfloat *g;          /* 2x grid, axis 0 fastest */
    int64_t pr;            /* the pair */
    float scale;           /* 1 / (N^2 P) */
} qhat_job;

/* One forward FFT along axis a of the pair's 2x grid, in tiles of 16 lines
 * adjacent along the faster other axis; the plan `pl` transforms 16
 * contiguous lines of p[a]. The first padded axis reads the raw Q shifted
 * (difference d to index d mod 2n, the unused -n zeroed), the last writes
 * FFT / (N^2 P) into qt; the others work on g. */
static void qhat_axis(lm_toeplitz_block *t, const qhat_job *job, int a, fftwf_plan pl)
{
    const int64_t *p = t->p, pa = p[a];
    const int64_t st[3] = {1, p[0], p[0] * p[1]};
    int b1 = -1, b2 = -1; /* the other axes, b1 the faster one */
    for (int b = 0; b < 3; b++)
        if (b != a) {
            if (b1 < 0)
                b1 = b;
            else
                b2 = b;
        }
    if (p[b1] == 1) {
        const int s = b1;
        b1 = b2;
        b2 = s;
    }
    const int from_q = a == t->first, to_qt = a == t->last;
    const int64_t e1 = p[b1], e2 = p[b2], nblk = (e1 + 15) / 16, nl = t->n[t->last];
    const int64_t nch = (pa + QW - 1) / QW, chunk = t->npairs * 2 * QW;
#pragma omp parallel num_threads(t->ntiles) if (t->pcount >= PAR_MIN)
    {
        lm_cfloat *tile = t->tiles[omp_get_thread_num()];
#pragma omp for collapse(2) schedule(static)
        for (int64_t i2 = 0; i2 < e2; i2++)
            for (int64_t blk = 0; blk < nblk; blk++) {
                const int64_t i1 = blk * 16, cnt = e1 - i1 < 16 ? e1 - i1 : 16;
                const int64_t o = i1 * st[b1] + i2 * st[b2];
                if (cnt < 16)
                    memset(tile, 0, (size_t)(16 * pa) * sizeof *tile);
                if (from_q) {
                    const int64_t m2 = job->smap[b2][i2];
                    for (int64_t l = 0; l < cnt; l++) {
                        const int64_t m1 = job->smap[b1][i1 + l];
                        for (int64_t j = 0; j < pa; j++) {
                            const int64_t ma = job->smap[a][j];
                            tile[l * pa + j] = m1 < 0 || m2 < 0 || ma < 0 ? 0
                                               : job->src[ma * st[a] + m1 * st[b1] + m2 * st[b2]];
                        }
                    }
                } else {
                    for (int64_t j = 0; j < pa; j++) {
                        __builtin_prefetch(job->g + o + (j + PF) * st[a]);
                        for (int64_t l = 0; l < cnt; l++)
                            tile[l * pa + j] = job->g[o + l * st[b1] + j * st[a]];
                    }
                }
                fftwf_execute_dft(pl, (fftwf_complex *)tile, (fftwf_complex *)tile);
                if (to_qt) {
                    for (int64_t l = 0; l < cnt; l++) {
                        const int64_t idx1 = i1 + l;
                        const int64_t line = idx1 * (t->ws[b1] / nl) + i2 * (t->ws[b2] / nl);
                        float *dst = t->qt + line * nch * chunk + job->pr * 2 * QW;
                        for (int64_t j = 0; j < pa; j++) {
                            float *d = dst + j / QW * chunk + j % QW;
                            d[0] = crealf(tile[l * pa + j]) * job->scale;
                            d[QW] = cimagf(tile[l * pa + j]) * job->scale;
                        }
                    }
                } else {
                    for (int64_t j = 0; j < pa; j++) {
                        __builtin_prefetch(job->g + o + (j + PF) * st[a], 1);
                        for (int64_t l = 0; l < cnt; l++)
                            job->g[o + l * st[b1] + j * st[a]] = tile[l * pa + j];
                    }
                }
            }
    }
}

static fftwf_plan plan_lines(int len, int howmany, lm_cfloat *in, lm_cfloat *out, int sign)
{
    return fftwf_plan_many_dft(1, &len, howmany, (fftwf_complex *)in, NULL, 1, len, (fftwf_complex *)out, NULL, 1,
                               len, sign, FFTW_ESTIMATE);
}

/* FFT(shifted Q_ll') / (N^2 P) of every pair into qt. */
static lm_code make_qhat(lm_toeplitz_block *t, const lm_cfloat *q, lm_error *err)
{
    const int64_t *n = t->n, *p = t->p, pc = t->pcount;
    lm_cfloat *g = t->first < t->last ? fftwf_malloc((size_t)pc * sizeof *g) : NULL;
    int64_t *maps = malloc((size_t)(p[0] + p[1] + p[2]) * sizeof *maps);
    fftwf_plan ax[3] = {NULL, NULL, NULL};
    int ok = maps && (g || t->first == t->last);
    pthread_mutex_lock(&plan_lock);
    if (lm_fftw_setup())
        fftwf_plan_with_nthreads(1);
    for (int a = 0; a < 3 && ok; a++)
        if (p[a] > 1)
            ok = (ax[a] = plan_lines((int)p[a], 16, t->tiles[0], t->tiles[0], FFTW_FORWARD)) != NULL;
    pthread_mutex_unlock(&plan_lock);
    lm_code rc = ok ? LM_OK
                    : lm_fail(err, maps ? LM_ERR_INTERNAL : LM_ERR_NOMEM,
                              "block toeplitz: cannot set up the %lld-point transform of Q", (long long)pc);
    qhat_job job = {.g = g, .scale = (float)(1.0 / ((double)t->count * (double)t->count * (double)pc))};
    if (rc == LM_OK) {
        int64_t *m = maps;
        for (int a = 0; a < 3; a++) {
            for (int64_t i = 0; i < p[a]; i++) /* index d + n of difference d: shifted by n mod 2n */
                m[i] = p[a] <= 1 ? 0 : i == n[a] ? -1 : (i + n[a]) % p[a];
            job.smap[a] = m;
            m += p[a];
        }
    }
    for (int64_t pr = 0; pr < t->npairs && rc == LM_OK; pr++) {
        job.src = q + pr * pc;
        job.pr = pr;
        for (int a = 0; a < 3; a++)
            if (ax[a])
                qhat_axis(t, &job, a, ax[a]);
    }
    pthread_mutex_lock(&plan_lock);
    for (int a = 0; a < 3; a++)
        if (ax[a])
            fftwf_destroy_plan(ax[a]);
    pthread_mutex_unlock(&plan_lock);
    fftwf_free(g);
    free(maps);
    return rc;
}

lm_code lm_toeplitz_block_new_coils(const int64_t n[3], int L, const lm_cfloat *q, int threads, int max_coils,
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
    t->first = t->last = -1;
    int64_t pmax = 1;
    for (int a = 0; a < 3; a++) {
        t->n[a] = n[a];
        t->p[a] = n[a] > 1 ? 2 * n[a] : 1;
        if (t->p[a] > 1) {
            if (t->first < 0)
                t->first = a;
            t->last = a;
        }
        pmax = t->p[a] > pmax ? t->p[a] : pmax;
    }
    t->count = n[0] * n[1] * n[2];
    t->pcount = t->p[0] * t->p[1] * t->p[2];
    if (t->last < 0 || t->pcount > (int64_t)1 << 31) {
        const long long pc = (long long)t->pcount;
        const int flat = t->last < 0;
        free(t);
        return lm_fail(err, flat ? LM_ERR_INVALID : LM_ERR_NOMEM, "block toeplitz: %lld points x %d segments is %s",
                       pc, L, flat ? "a single voxel" : "out of range");
    }
    const int la = t->last;
    t->xs[0] = 1, t->xs[1] = n[0], t->xs[2] = n[0] * n[1];
    t->ws[la] = 1;
    t->ecount = n[la];
    for (int b = 0; b < 3; b++)
        if (b != la) {
            t->ws[b] = t->ecount;
            t->ecount *= b < la ? t->p[b] : n[b];
        }
    t->nlines = t->ecount / n[la];
    const int64_t pl = t->p[la];
    t->cstride = (L * pl + 15) / 16 * 16;
    int64_t g = WORK_BUDGET / ((int64_t)L * t->ecount * (int64_t)sizeof(lm_cfloat));
    g = g < 1 ? 1 : g;
    g = max_coils > 0 && g > max_coils ? max_coils : g;
    t->gmax = (int)g;
    int64_t tl = t->gmax * t->cstride;
    if ((int64_t)L * BT * pmax > tl)
        tl = (int64_t)L * BT * pmax;
    if (16 * pmax > tl)
        tl = 16 * pmax;
    size_t qn, wn;
    const int64_t nch = (pl + QW - 1) / QW;
    if (!lm_size_mul((size_t)(t->nlines * nch * QW), (size_t)t->npairs * 2, &qn) ||
        !lm_size_mul((size_t)t->ecount, (size_t)(t->gmax * L), &wn) || qn > (size_t)LM_MAX_ELEMENTS * 2 ||
        wn > (size_t)LM_MAX_ELEMENTS) {
        const long long pc = (long long)t->pcount;
        free(t);
        return lm_fail(err, LM_ERR_NOMEM, "block toeplitz: %lld points x %d segments is out of range", pc, L);
    }
    t->ntiles = t->threads;
    t->qt = fftwf_malloc(qn * sizeof *t->qt);
    t->work = fftwf_malloc(wn * sizeof *t->work);
    t->tiles = calloc((size_t)t->ntiles, sizeof *t->tiles);
    t->accs = calloc((size_t)t->ntiles, sizeof *t->accs);
    t->outs = calloc((size_t)t->ntiles, sizeof *t->outs);
    t->fins = calloc((size_t)t->ntiles, sizeof *t->fins);
    int ok = t->qt && t->work && t->tiles && t->accs && t->outs && t->fins;
    for (int i = 0; ok && i < t->ntiles; i++)
        ok = (t->tiles[i] = fftwf_malloc((size_t)tl * sizeof(lm_cfloat))) != NULL &&
             (t->outs[i] = fftwf_malloc((size_t)tl * sizeof(lm_cfloat))) != NULL &&
             (t->fins[i] = fftwf_malloc((size_t)(t->gmax * t->cstride) * sizeof(lm_cfloat))) != NULL &&
             (t->accs[i] = fftwf_malloc((size_t)(BT * pmax) * sizeof(lm_cfloat))) != NULL;
    if (!ok) {
        lm_toeplitz_block_free(t);
        return lm_fail(err, LM_ERR_NOMEM, "block toeplitz: cannot allocate %d segments of the %lld-point grid", L,
                       (long long)t->pcount);
    }
    if (pl % QW) /* the last chunk's spare frequencies: read by the product, never used */
        memset(t->qt, 0, qn * sizeof *t->qt);
    for (int i = 0; i < t->ntiles; i++)
        memset(t->fins[i], 0, (size_t)(t->gmax * t->cstride) * sizeof(lm_cfloat));
    /* every tile comes from fftwf_malloc and the fused pass' coils start at
     * multiples of 16 values: they share the planned alignment */
    pthread_mutex_lock(&plan_lock);
    if (lm_fftw_setup())
        fftwf_plan_with_nthreads(1);
    for (int a = 0; a < 3 && ok; a++) {
        if (t->p[a] <= 1)
            continue;
        const int howmany = a == la ? L : L * BT;
        t->fwd[a] = plan_lines((int)t->p[a], howmany, t->tiles[0], t->outs[0], FFTW_FORWARD);
        t->inv[a] = plan_lines((int)t->p[a], howmany, t->tiles[0], t->outs[0], FFTW_BACKWARD);
        ok = t->fwd[a] && t->inv[a];
    }
    pthread_mutex_unlock(&plan_lock);
    lm_code rc = ok ? make_qhat(t, q, err)
                    : lm_fail(err, LM_ERR_INTERNAL, "block toeplitz: FFTW could not plan the %lld-point transform",
                              (long long)t->pcount);
    if (rc != LM_OK) {
        lm_toeplitz_block_free(t);
        return rc;
    }
    *out = t;
    return LM_OK;
}

lm_code lm_toeplitz_block_new(const int64_t n[3], int L, const lm_cfloat *q, int threads,
                              lm_toeplitz_block **out, lm_error *err)
{
    return lm_toeplitz_block_new_coils(n, L, q, threads, 1, out, err);
}

/* The coils of one application's group: maps and where the sums go. */
typedef struct group {
    const lm_cfloat *x, *s, *c; /* s: the group's first map (NULL: 1) */
    lm_cfloat *y;
    int ng;                     /* coils */
    int add;                    /* add to y (else the first group's sums overwrite it) */
} group;

/* y (+)= the first axis' sums acc (cnt lines of n values at x offsets
 * xo + t * xl). */
static void store_y(const group *gr, const lm_cfloat *acc, int64_t na, int64_t cnt, int64_t xo, int64_t xl)
{
    for (int64_t l = 0; l < cnt; l++) {
        lm_cfloat *yl = gr->y + xo + l * xl;
        const lm_cfloat *al = acc + l * na;
        if (gr->add)
            for (int64_t j = 0; j < na; j++)
                yl[j] += al[j];
        else
            memcpy(yl, al, (size_t)na * sizeof *yl);
    }
}

/* One coil's L lines (stride ls in the tile) of x . s . c_l, values at x
 * offsets xo + j, j < na, padded with zeros to pa. */
static void load_x(const lm_toeplitz_block *t, const group *gr, int k, lm_cfloat *tile, int64_t ls, int64_t tl,
                   int64_t xo, int64_t na, int64_t pa)
{
    const int64_t nv = t->count;
    const lm_cfloat *x = gr->x + xo, *s = gr->s ? gr->s + k * nv + xo : NULL, *c = gr->c + xo;
    for (int l = 0; l < t->L; l++) {
        const lm_cfloat *cl = c + l * nv;
        lm_cfloat *dst = tile + l * ls + tl;
        if (s)
            for (int64_t j = 0; j < na; j++)
                dst[j] = cmul(cl[j], cmul(s[j], x[j]));
        else
            for (int64_t j = 0; j < na; j++)
                dst[j] = cmul(cl[j], x[j]);
    }
    for (int l = 0; l < t->L; l++)
        memset(tile + l * ls + tl + na, 0, (size_t)(pa - na) * sizeof *tile);
}

/* acc[j] (+)= conj(s) . sum_l conj(c_l) . line_l[j], j < na (the first coil sets). */
static void sum_x(const lm_toeplitz_block *t, const group *gr, int k, const lm_cfloat *tile, int64_t ls,
                  int64_t tl, int64_t xo, int64_t na, lm_cfloat *acc)
{
    const int64_t nv = t->count;
    const lm_cfloat *s = gr->s ? gr->s + k * nv + xo : NULL, *c = gr->c + xo;
    lm_cfloat v[na];
    for (int64_t j = 0; j < na; j++)
        v[j] = cmulc(c[j], tile[tl + j]);
    for (int l = 1; l < t->L; l++) {
        const lm_cfloat *cl = c + l * nv, *src = tile + l * ls + tl;
        for (int64_t j = 0; j < na; j++)
            v[j] += cmulc(cl[j], src[j]);
    }
    if (s)
        for (int64_t j = 0; j < na; j++)
            acc[j] = k ? acc[j] + cmulc(s[j], v[j]) : cmulc(s[j], v[j]);
    else
        for (int64_t j = 0; j < na; j++)
            acc[j] = k ? acc[j] + v[j] : v[j];
}

/* A pass along axis a != last (forward: the first reads x; inverse: the
 * first sums into y). Work items: BT lines adjacent along the last axis. */
static void run_pass(lm_toeplitz_block *t, int a, int inverse, const group *gr)
{
    const int la = t->last, o = other_axis(a, la), L = t->L;
    const int64_t pa = t->p[a], na = t->n[a], nl = t->n[la];
    const int64_t eo = o < a ? t->p[o] : t->n[o];
    const int64_t nblk = (nl + BT - 1) / BT;
    const int64_t n_in = inverse ? pa : na, n_out = inverse ? na : pa;
    const int from_x = !inverse && a == t->first, to_y = inverse && a == t->first;
    const int64_t ws_a = t->ws[a], ws_o = t->ws[o];
    const fftwf_plan pl = inverse ? t->inv[a] : t->fwd[a];

#pragma omp parallel num_threads(t->ntiles) if (eo * nl * pa * L * gr->ng >= PAR_MIN)
    {
        const int me = omp_get_thread_num();
        lm_cfloat *tile = t->tiles[me], *out = t->outs[me], *acc = t->accs[me];
#pragma omp for collapse(2) schedule(dynamic, 1)
        for (int64_t io = 0; io < eo; io++)
            for (int64_t blk = 0; blk < nblk; blk++) {
                const int64_t i0 = blk * BT, cnt = nl - i0 < BT ? nl - i0 : BT;
                const int64_t wo = io * ws_o + i0;                          /* work offset of the first line */
                const int64_t xo = io * t->xs[o] + i0 * t->xs[la], xl = t->xs[la]; /* x offsets (first axis) */
                for (int k = 0; k < gr->ng; k++) {
                    if (from_x) {
                        for (int64_t l = 0; l < cnt; l++)
                            load_x(t, gr, k, tile, BT * pa, l * pa, xo + l * xl, na, pa);
                    } else {
                        for (int s = 0; s < L; s++) {
                            const lm_cfloat *w = t->work + ((int64_t)k * L + s) * t->ecount + wo;
                            lm_cfloat *ts = tile + s * BT * pa;
                            if (cnt == BT)
                                for (int64_t j = 0; j < n_in; j++) {
                                    /* one cache line per position, ws_a apart: too many
                                     * streams for the hardware prefetcher */
                                    __builtin_prefetch(w + (j + PF) * ws_a);
                                    for (int64_t l = 0; l < BT; l++)
                                        ts[l * pa + j] = w[j * ws_a + l];
                                }
                            else
                                for (int64_t j = 0; j < n_in; j++)
                                    for (int64_t l = 0; l < cnt; l++)
                                        ts[l * pa + j] = w[j * ws_a + l];
                            for (int64_t l = 0; l < cnt; l++)
                                memset(ts + l * pa + n_in, 0, (size_t)(pa - n_in) * sizeof *ts);
                        }
                    }
                    for (int s = 0; s < L && cnt < BT; s++) /* spare lines stay finite */
                        memset(tile + (s * BT + cnt) * pa, 0, (size_t)((BT - cnt) * pa) * sizeof *tile);
                    fftwf_execute_dft(pl, (fftwf_complex *)tile, (fftwf_complex *)out);
                    if (to_y) {
                        for (int64_t l = 0; l < cnt; l++)
                            sum_x(t, gr, k, out, BT * pa, l * pa, xo + l * xl, na, acc + l * na);
                    } else {
                        for (int s = 0; s < L; s++) {
                            lm_cfloat *w = t->work + ((int64_t)k * L + s) * t->ecount + wo;
                            const lm_cfloat *ts = out + s * BT * pa;
                            if (cnt == BT)
                                for (int64_t j = 0; j < n_out; j++) {
                                    __builtin_prefetch(w + (j + PF) * ws_a, 1);
                                    for (int64_t l = 0; l < BT; l++)
                                        w[j * ws_a + l] = ts[l * pa + j];
                                }
                            else
                                for (int64_t j = 0; j < n_out; j++)
                                    for (int64_t l = 0; l < cnt; l++)
                                        w[j * ws_a + l] = ts[l * pa + j];
                        }
                    }
                }
                if (to_y)
                    store_y(gr, acc, na, cnt, xo, xl);
            }
    }
}

/* z_l <- sum_l' Qhat_ll' z_l' at QW frequencies (w of them valid): q the
 * line's pairs at these frequencies (pair pr's real parts at q + pr 2 QW,
 * imaginary parts QW further: one chunk of the fused layout), z_l at
 * z + l zs. Qhat_l'l = conj(Qhat_ll'). */
static inline void block_product(int L, const float *restrict q, lm_cfloat *restrict z, int64_t zs, int w)
{
    float zr[LM_BLOCK_MAX_L][QW], zi[LM_BLOCK_MAX_L][QW], yr[LM_BLOCK_MAX_L][QW], yi[LM_BLOCK_MAX_L][QW];
    for (int l = 0; l < L; l++) {
        const float *zl = (const float *)(z + l * zs);
        if (w == QW) {
            for (int j = 0; j < QW; j++) {
                zr[l][j] = zl[2 * j];
                zi[l][j] = zl[2 * j + 1];
            }
        } else {
            for (int j = 0; j < QW; j++) {
                zr[l][j] = j < w ? zl[2 * j] : 0;
                zi[l][j] = j < w ? zl[2 * j + 1] : 0;
            }
        }
        for (int j = 0; j < QW; j++)
            yr[l][j] = yi[l][j] = 0;
    }
    /* row l accumulates in registers (ar, ai), the conjugate terms go to
     * the later rows in memory */
    const float *qp = q;
    for (int l = 0; l < L; l++) {
        float ar[QW], ai[QW], zlr[QW], zli[QW];
        for (int j = 0; j < QW; j++) {
            zlr[j] = zr[l][j], zli[j] = zi[l][j];
            ar[j] = yr[l][j] + qp[j] * zlr[j] - qp[QW + j] * zli[j]; /* the diagonal block */
            ai[j] = yi[l][j] + qp[j] * zli[j] + qp[QW + j] * zlr[j];
        }
        qp += 2 * QW;
        for (int lp = l + 1; lp < L; lp++, qp += 2 * QW) {
            const float *qr = qp, *qi = qp + QW;
            float *restrict ylr = yr[lp], *restrict yli = yi[lp];
            const float *zpr = zr[lp], *zpi = zi[lp];
            for (int j = 0; j < QW; j++) {
                ar[j] += qr[j] * zpr[j] - qi[j] * zpi[j];
                ai[j] += qr[j] * zpi[j] + qi[j] * zpr[j];
                ylr[j] += qr[j] * zlr[j] + qi[j] * zli[j];
                yli[j] += qr[j] * zli[j] - qi[j] * zlr[j];
            }
        }
        for (int j = 0; j < QW; j++)
            yr[l][j] = ar[j], yi[l][j] = ai[j];
    }
    for (int l = 0; l < L; l++) {
        float *zl = (float *)(z + l * zs);
        for (int j = 0; j < w; j++) {
            zl[2 * j] = yr[l][j];
            zl[2 * j + 1] = yi[l][j];
        }
    }
}

/* The pass along the last axis: per line of the 2x grid, every image's
 * forward FFT, the L x L product per coil, the inverse FFT. With one
 * padded axis it reads x and sums into y itself. */
static void run_fused(lm_toeplitz_block *t, const group *gr)
{
    const int la = t->last, L = t->L, only = t->first == la;
    const int64_t pl = t->p[la], nl = t->n[la], cs = t->cstride, chunk = t->npairs * 2 * QW;
    const int64_t nch = (pl + QW - 1) / QW;
#pragma omp parallel num_threads(t->ntiles) if (t->nlines * pl * L * gr->ng >= PAR_MIN)
    {
        const int me = omp_get_thread_num();
        lm_cfloat *tile = t->tiles[me], *out = t->outs[me], *acc = t->accs[me], *fin = t->fins[me];
#pragma omp for schedule(dynamic, 4)
        for (int64_t line = 0; line < t->nlines; line++) {
            for (int k = 0; k < gr->ng; k++) {
                lm_cfloat *fk = fin + k * cs;
                if (only)
                    load_x(t, gr, k, fk, pl, 0, 0, nl, pl);
                else
                    for (int s = 0; s < L; s++) /* the padding after nl is zero already */
                        memcpy(fk + s * pl, t->work + ((int64_t)k * L + s) * t->ecount + line * nl,
                               (size_t)nl * sizeof *fk);
                fftwf_execute_dft(t->fwd[la], (fftwf_complex *)fk, (fftwf_complex *)(out + k * cs));
            }
            const float *ql = t->qt + line * nch * chunk;
            for (int64_t ch = 0; ch < nch; ch++) {
                const int64_t j0 = ch * QW;
                const int w = pl - j0 < QW ? (int)(pl - j0) : QW;
                for (int k = 0; k < gr->ng; k++)
                    block_product(L, ql + ch * chunk, out + k * cs + j0, pl, w);
            }
            for (int k = 0; k < gr->ng; k++) {
                lm_cfloat *tk = tile + k * cs;
                fftwf_execute_dft(t->inv[la], (fftwf_complex *)(out + k * cs), (fftwf_complex *)tk);
                if (only)
                    sum_x(t, gr, k, tk, pl, 0, 0, nl, acc);
                else
                    for (int s = 0; s < L; s++)
                        memcpy(t->work + ((int64_t)k * L + s) * t->ecount + line * nl, tk + s * pl,
                               (size_t)nl * sizeof *tk);
            }
            if (only)
                store_y(gr, acc, nl, 1, 0, 0);
        }
    }
}

void lm_toeplitz_block_apply_sense(lm_toeplitz_block *t, const lm_cfloat *x, const lm_cfloat *s, int64_t ncoils,
                                   const lm_cfloat *c, lm_cfloat *y, int accumulate)
{
    if (!s)
        ncoils = 1;
    for (int64_t k0 = 0; k0 < ncoils; k0 += t->gmax) {
        const group gr = {.x = x, .s = s ? s + k0 * t->count : NULL, .c = c, .y = y,
                          .ng = (int)(ncoils - k0 < t->gmax ? ncoils - k0 : t->gmax), .add = accumulate || k0 > 0};
        for (int a = t->first; a < t->last; a++)
            if (t->p[a] > 1)
                run_pass(t, a, 0, &gr);
        run_fused(t, &gr);
        for (int a = t->last - 1; a >= t->first; a--)
            if (t->p[a] > 1)
                run_pass(t, a, 1, &gr);
    }
}

void lm_toeplitz_block_apply_coil(lm_toeplitz_block *t, const lm_cfloat *x, const lm_cfloat *s, const lm_cfloat *c,
                                  lm_cfloat *y, int accumulate)
{
    lm_toeplitz_block_apply_sense(t, x, s, 1, c, y, accumulate);
}
