/* The Toeplitz normal operator on the CPU (docs/conventions.md section 1, lm_toeplitz.h).
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
 * The 2x grid is transformed one axis at a time in tiles of lines, with our
 * own OpenMP loop around single-threaded batched FFTW plans: a tile of lines
 * is gathered into a small contiguous buffer, transformed there and
 * scattered back. This keeps FFTW_ESTIMATE plans fast (on 256^3 a strided
 * ESTIMATE plan of the z axis was 10x slower than a measured one, and
 * FFTW_MEASURE planning costs seconds) and lets the zero padding be skipped:
 *   forward along axis a: only lines whose later axes lie in the data part
 *     (the rest are zero), reading n_a values and padding in the tile;
 *   the last axis: forward, times FFT(Q), inverse in the same tile, keeping
 *     only the first n values, so the padded half of that axis is never
 *     stored (the work array is 4N values in 3D, not 8N) or cleared;
 *   inverse along the other axes: only the lines that survive the crop.
 * The first axis reads rho and the last inverse writes the result directly.
 * A 3D product costs 7/12 of the 1D transforms of a full forward/inverse
 * pair and no separate zeroing, multiply or copy passes. */
#include "lm_toeplitz.h"
#include "lm_fftw.h"

#include <complex.h>
#include <fftw3.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Lines per tile: 16 complex floats are two cache lines, so a strided
 * gather reads whole lines. */
#define LM_TILE 16
/* Below this many values a loop runs on one thread: a parallel region's
 * barrier costs more than the work, and far more when cores are shared. */
#define LM_PAR_MIN 32768

static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;

struct lm_toeplitz {
    int64_t n[3], p[3];
    int64_t count;       /* N */
    int64_t pcount;      /* points of the 2x grid */
    int threads;
    int first, last;     /* first and last padded axis; -1 when none (N == 1) */
    int64_t e[3], es[3]; /* work array: extent p before `last`, n from it on */
    int64_t xs[3];       /* strides of rho (the n grid) */
    int64_t ls[3];       /* line index of the 2x grid without `last` */
    lm_cfloat *work;
    float *qt;           /* FFT(shifted Q) / (N^2 P), lines along `last` contiguous */
    fftwf_plan fwd[3], inv[3]; /* LM_TILE lines of p[a], single-threaded */
    lm_cfloat **tiles;   /* one per thread */
    int ntiles;
    double diag;
};

static void destroy_plans(lm_toeplitz *t)
{
    pthread_mutex_lock(&plan_lock);
    for (int a = 0; a < 3; a++) {
        if (t->fwd[a])
            fftwf_destroy_plan(t->fwd[a]);
        if (t->inv[a])
            fftwf_destroy_plan(t->inv[a]);
        t->fwd[a] = t->inv[a] = NULL;
    }
    pthread_mutex_unlock(&plan_lock);
}

void lm_toeplitz_free(lm_toeplitz *t)
{
    if (!t)
        return;
    destroy_plans(t);
    if (t->tiles)
        for (int i = 0; i < t->ntiles; i++)
            fftwf_free(t->tiles[i]);
    free(t->tiles);
    fftwf_free(t->work);
    fftwf_free(t->qt);
    free(t);
}

double lm_toeplitz_diag(const lm_toeplitz *t)
{
    return t->diag;
}

/* FFT(shifted Q) on the full 2x grid, real part scaled, stored as lines
 * along `last`. Uses a temporary 2x-grid array and a threaded plan once. */
static lm_code make_qhat(lm_toeplitz *t, const lm_cfloat *q, lm_error *err)
{
    const int64_t *n = t->n, *p = t->p;
    lm_cfloat *g = fftwf_malloc((size_t)t->pcount * sizeof *g);
    if (!g)
        return lm_fail(err, LM_ERR_NOMEM, "toeplitz: cannot allocate the %lld-point FFT grid",
                       (long long)t->pcount);
    int rank = 0, dims[3];
    for (int a = 2; a >= 0; a--) /* FFTW is row-major: slowest axis first */
        if (p[a] > 1)
            dims[rank++] = (int)p[a];
    pthread_mutex_lock(&plan_lock);
    if (lm_fftw_setup())
        fftwf_plan_with_nthreads(t->threads);
    fftwf_plan full = fftwf_plan_dft(rank, dims, (fftwf_complex *)g, (fftwf_complex *)g, FFTW_FORWARD,
                                     FFTW_ESTIMATE);
    pthread_mutex_unlock(&plan_lock);
    if (!full) {
        fftwf_free(g);
        return lm_fail(err, LM_ERR_INTERNAL, "toeplitz: FFTW could not plan the %lld-point transform",
                       (long long)t->pcount);
    }

    /* Shift by n per padded axis (index d + n -> d mod 2n), zeroing the
     * unused difference -n. */
    const int64_t sh[3] = {p[0] > 1 ? n[0] : 0, p[1] > 1 ? n[1] : 0, p[2] > 1 ? n[2] : 0};
#pragma omp parallel for num_threads(t->threads) collapse(2) schedule(static) if (t->pcount >= LM_PAR_MIN)
    for (int64_t k = 0; k < p[2]; k++)
        for (int64_t j = 0; j < p[1]; j++) {
            int64_t ks = (k + sh[2]) % p[2], js = (j + sh[1]) % p[1];
            for (int64_t i = 0; i < p[0]; i++) {
                int used = (p[0] <= 1 || i != n[0]) && (p[1] <= 1 || j != n[1]) && (p[2] <= 1 || k != n[2]);
                g[i + p[0] * (j + p[1] * k)] = used ? q[(i + sh[0]) % p[0] + p[0] * (js + p[1] * ks)] : 0;
            }
        }
    t->diag = crealf(q[sh[0] + p[0] * (sh[1] + p[1] * sh[2])]) / ((double)t->count * (double)t->count);
    fftwf_execute(full);
    pthread_mutex_lock(&plan_lock);
    fftwf_destroy_plan(full);
    pthread_mutex_unlock(&plan_lock);

    /* The unnormalised inverse FFT multiplies by P; fold 1/(N^2 P) in. */
    const double scale = 1.0 / ((double)t->count * (double)t->count * (double)t->pcount);
    const int L = t->last;
    const int64_t pl = p[L];
#pragma omp parallel for num_threads(t->threads) collapse(2) schedule(static) if (t->pcount >= LM_PAR_MIN)
    for (int64_t k = 0; k < p[2]; k++)
        for (int64_t j = 0; j < p[1]; j++)
            for (int64_t i = 0; i < p[0]; i++) {
                int64_t idx[3] = {i, j, k};
                int64_t line = 0;
                for (int b = 0; b < 3; b++)
                    if (b != L)
                        line += idx[b] * t->ls[b];
                t->qt[line * pl + idx[L]] = (float)(crealf(g[i + p[0] * (j + p[1] * k)]) * scale);
            }
    fftwf_free(g);
    return LM_OK;
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
    (void)lm_fftw_setup();

    lm_toeplitz *t = lm_calloc(1, sizeof *t, err, "toeplitz operator");
    if (!t)
        return LM_ERR_NOMEM;
    t->threads = threads > 0 ? threads : omp_get_max_threads();
    t->first = t->last = -1;
    for (int a = 0; a < 3; a++) {
        t->n[a] = n[a];
        t->p[a] = n[a] > 1 ? 2 * n[a] : 1; /* a flat axis stays flat */
        if (t->p[a] > 1) {
            if (t->first < 0)
                t->first = a;
            t->last = a;
        }
    }
    t->count = n[0] * n[1] * n[2];
    t->pcount = t->p[0] * t->p[1] * t->p[2];
    const long long pc = (long long)t->pcount;
    if (t->pcount > (int64_t)1 << 31 || t->pcount > (int64_t)LM_MAX_ELEMENTS) {
        free(t);
        return lm_fail(err, LM_ERR_NOMEM, "toeplitz: %lld-point FFT grid is too large", pc);
    }
    if (t->last < 0) {
        /* One voxel: F^H F is the number Q(0) / N^2. */
        t->diag = crealf(q[0]);
        *out = t;
        return LM_OK;
    }
    for (int a = 0; a < 3; a++)
        t->e[a] = a < t->last ? t->p[a] : n[a];
    t->es[0] = t->xs[0] = 1;
    t->es[1] = t->e[0];
    t->es[2] = t->e[0] * t->e[1];
    t->xs[1] = n[0];
    t->xs[2] = n[0] * n[1];
    for (int a = 0, stride = 1; a < 3; a++)
        if (a != t->last) {
            t->ls[a] = stride;
            stride *= (int)t->p[a];
        }

    int64_t pmax = 1;
    for (int a = 0; a < 3; a++)
        if (t->p[a] > pmax)
            pmax = t->p[a];
    t->work = fftwf_malloc((size_t)(t->e[0] * t->e[1] * t->e[2]) * sizeof *t->work);
    t->qt = fftwf_malloc((size_t)t->pcount * sizeof *t->qt);
    t->ntiles = t->threads;
    t->tiles = calloc((size_t)t->ntiles, sizeof *t->tiles);
    int ok = t->work && t->qt && t->tiles;
    for (int i = 0; ok && i < t->ntiles; i++)
        ok = (t->tiles[i] = fftwf_malloc((size_t)(LM_TILE * pmax) * sizeof(lm_cfloat))) != NULL;
    if (!ok) {
        lm_toeplitz_free(t);
        return lm_fail(err, LM_ERR_NOMEM, "toeplitz: cannot allocate the FFT work arrays (%lld points)", pc);
    }

    /* Batched plans over one tile; every tile comes from fftwf_malloc, so
     * they share the planned alignment for fftwf_execute_dft. */
    pthread_mutex_lock(&plan_lock);
    if (lm_fftw_setup())
        fftwf_plan_with_nthreads(1);
    for (int a = 0; a < 3 && ok; a++) {
        if (t->p[a] <= 1)
            continue;
        int len = (int)t->p[a];
        fftwf_complex *tile = (fftwf_complex *)t->tiles[0];
        t->fwd[a] = fftwf_plan_many_dft(1, &len, LM_TILE, tile, NULL, 1, len, tile, NULL, 1, len,
                                        FFTW_FORWARD, FFTW_ESTIMATE);
        t->inv[a] = fftwf_plan_many_dft(1, &len, LM_TILE, tile, NULL, 1, len, tile, NULL, 1, len,
                                        FFTW_BACKWARD, FFTW_ESTIMATE);
        ok = t->fwd[a] && t->inv[a];
    }
    pthread_mutex_unlock(&plan_lock);
    lm_code rc = ok ? make_qhat(t, q, err)
                    : lm_fail(err, LM_ERR_INTERNAL, "toeplitz: FFTW could not plan the %lld-point transform", pc);
    if (rc != LM_OK) {
        lm_toeplitz_free(t);
        return rc;
    }
    *out = t;
    return LM_OK;
}

enum { PASS_FWD, PASS_INV, PASS_FUSED };

/* One pass of 1D transforms along axis a over the lines that matter (see
 * the top of the file). Lines are grouped LM_TILE at a time along the
 * other axis with the smaller stride. */
/* One coil of a SENSE normal operator folded into the passes that touch x
 * and y: the first pass reads s . x, the last writes conj(s) . result,
 * added to y when acc (s NULL: 1). Saves two passes over memory per coil. */
typedef struct coil_io {
    const lm_cfloat *s;
    int acc;
} coil_io;

static inline lm_cfloat coil_out(const coil_io *c, const lm_cfloat *y, int64_t i, lm_cfloat v)
{
    if (c->s)
        v = conjf(c->s[i]) * v;
    return c->acc ? y[i] + v : v;
}

static void run_pass(lm_toeplitz *t, int a, int mode, const lm_cfloat *x, lm_cfloat *y, const coil_io *coil)
{
    const int64_t pa = t->p[a], na = t->n[a];
    int b1 = -1, b2 = -1;
    for (int b = 0; b < 3; b++)
        if (b != a) {
            if (b1 < 0)
                b1 = b;
            else
                b2 = b;
        }
    int64_t ext[3];
    for (int b = 0; b < 3; b++)
        ext[b] = b < a ? t->p[b] : t->n[b];
    if (ext[b1] == 1) { /* tile along an axis that has lines */
        int s = b1;
        b1 = b2;
        b2 = s;
    }
    const lm_cfloat *src = a == t->first && mode != PASS_INV ? x : t->work;
    const int64_t *ss = src == x ? t->xs : t->es;
    lm_cfloat *dst = a == t->first && mode != PASS_FWD ? y : t->work;
    const int64_t *ds = dst == y ? t->xs : t->es;
    const int64_t n_in = mode == PASS_INV ? pa : na;    /* values read per line */
    const int64_t n_out = mode == PASS_FWD ? pa : na;   /* values written per line */
    const int64_t ext1 = ext[b1], ext2 = ext[b2];
    const int64_t nblk = (ext1 + LM_TILE - 1) / LM_TILE;
    const int L = t->last;

#pragma omp parallel num_threads(t->ntiles) if (ext1 * ext2 * pa >= LM_PAR_MIN)
    {
        lm_cfloat *tile = t->tiles[omp_get_thread_num()];
#pragma omp for collapse(2) schedule(static)
        for (int64_t i2 = 0; i2 < ext2; i2++)
            for (int64_t blk = 0; blk < nblk; blk++) {
                const int64_t i1 = blk * LM_TILE;
                const int64_t cnt = ext1 - i1 < LM_TILE ? ext1 - i1 : LM_TILE;
                const int64_t so = i1 * ss[b1] + i2 * ss[b2], sl = ss[b1], sa = ss[a];
                /* Gather: position-major when the lines are adjacent in
                 * memory (one pass, whole cache lines), line-major for rows. */
                const lm_cfloat *sm = src == x ? coil->s : NULL;
                if (sm) {
                    for (int64_t l = 0; l < cnt; l++)
                        for (int64_t j = 0; j < n_in; j++) {
                            const int64_t i = so + l * sl + j * sa;
                            tile[l * pa + j] = src[i] * sm[i];
                        }
                } else if (sl < sa) {
                    for (int64_t j = 0; j < n_in; j++)
                        for (int64_t l = 0; l < cnt; l++)
                            tile[l * pa + j] = src[so + l * sl + j * sa];
                } else {
                    for (int64_t l = 0; l < cnt; l++)
                        for (int64_t j = 0; j < n_in; j++)
                            tile[l * pa + j] = src[so + l * sl + j * sa];
                }
                for (int64_t l = 0; l < cnt; l++)
                    for (int64_t j = n_in; j < pa; j++)
                        tile[l * pa + j] = 0;
                for (int64_t l = cnt; l < LM_TILE; l++) /* keep spare lines finite */
                    for (int64_t j = 0; j < pa; j++)
                        tile[l * pa + j] = 0;

                if (mode == PASS_INV) {
                    fftwf_execute_dft(t->inv[a], (fftwf_complex *)tile, (fftwf_complex *)tile);
                } else {
                    fftwf_execute_dft(t->fwd[a], (fftwf_complex *)tile, (fftwf_complex *)tile);
                    if (mode == PASS_FUSED) {
                        for (int64_t l = 0; l < cnt; l++) {
                            int64_t idx[3];
                            idx[b1] = i1 + l;
                            idx[b2] = i2;
                            idx[a] = 0;
                            int64_t line = 0;
                            for (int b = 0; b < 3; b++)
                                if (b != L)
                                    line += idx[b] * t->ls[b];
                            const float *qrow = t->qt + line * pa;
                            lm_cfloat *row = tile + l * pa;
                            for (int64_t j = 0; j < pa; j++)
                                row[j] *= qrow[j];
                        }
                        fftwf_execute_dft(t->inv[a], (fftwf_complex *)tile, (fftwf_complex *)tile);
                    }
                }

                const int64_t dof = i1 * ds[b1] + i2 * ds[b2], dl = ds[b1], da = ds[a];
                if (dst == y && (coil->s || coil->acc)) {
                    for (int64_t l = 0; l < cnt; l++)
                        for (int64_t j = 0; j < n_out; j++) {
                            const int64_t i = dof + l * dl + j * da;
                            y[i] = coil_out(coil, y, i, tile[l * pa + j]);
                        }
                } else if (dl < da) {
                    for (int64_t j = 0; j < n_out; j++)
                        for (int64_t l = 0; l < cnt; l++)
                            dst[dof + l * dl + j * da] = tile[l * pa + j];
                } else {
                    for (int64_t l = 0; l < cnt; l++)
                        for (int64_t j = 0; j < n_out; j++)
                            dst[dof + l * dl + j * da] = tile[l * pa + j];
                }
            }
    }
}

static void apply(lm_toeplitz *t, const lm_cfloat *x, lm_cfloat *y, const coil_io *coil)
{
    if (t->last < 0) {
        y[0] = coil_out(coil, y, 0, (float)t->diag * (coil->s ? coil->s[0] * x[0] : x[0]));
        return;
    }
    /* x is read only by the first pass and y written only by the last, so
     * x == y is fine without a coil. */
    for (int a = t->first; a < t->last; a++)
        if (t->p[a] > 1)
            run_pass(t, a, PASS_FWD, x, y, coil);
    run_pass(t, t->last, PASS_FUSED, x, y, coil);
    for (int a = t->last - 1; a >= t->first; a--)
        if (t->p[a] > 1)
            run_pass(t, a, PASS_INV, x, y, coil);
}

void lm_toeplitz_apply(lm_toeplitz *t, const lm_cfloat *x, lm_cfloat *y)
{
    const coil_io none = {NULL, 0};
    apply(t, x, y, &none);
}

void lm_toeplitz_apply_coil(lm_toeplitz *t, const lm_cfloat *x, const lm_cfloat *s, lm_cfloat *y, int accumulate)
{
    const coil_io c = {s, accumulate};
    apply(t, x, y, &c);
}
