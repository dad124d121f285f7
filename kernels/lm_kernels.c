/* The variant table, point sets, progress reporting and the checked entry
 * point lm_ksum_run. The kernels themselves live in lm_ksum_*.c and
 * (GPU) lm_gpu_host.c. */
#include "lm_kernels.h"
#include "lm_kernels_impl.h"

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- point sets ---------------------------------------------------------- */

void lm_points_image_grid(lm_points *p, const int64_t n[3])
{
    memset(p, 0, sizeof *p);
    for (int a = 0; a < 3; a++) {
        p->g[a] = n[a];
        p->c[a] = n[a] / 2;
        p->s[a] = n[a];
    }
    p->n = n[0] * n[1] * n[2];
}

void lm_points_q_grid(lm_points *p, const int64_t n[3])
{
    memset(p, 0, sizeof *p);
    for (int a = 0; a < 3; a++) {
        /* A flat axis stays flat: position 0 only. */
        p->g[a] = n[a] > 1 ? 2 * n[a] : 1;
        p->c[a] = n[a] > 1 ? n[a] : 0;
        p->s[a] = n[a] > 1 ? n[a] : 1;
    }
    p->n = p->g[0] * p->g[1] * p->g[2];
}

void lm_points_get(const lm_points *p, int64_t j, double x[3])
{
    if (p->x) {
        x[0] = p->x[j];
        x[1] = p->y ? p->y[j] : 0.0;
        x[2] = p->z ? p->z[j] : 0.0;
        return;
    }
    int64_t i0 = j % p->g[0], r = j / p->g[0];
    int64_t i1 = r % p->g[1], i2 = r / p->g[1];
    x[0] = (double)(i0 - p->c[0]) / (double)p->s[0];
    x[1] = (double)(i1 - p->c[1]) / (double)p->s[1];
    x[2] = (double)(i2 - p->c[2]) / (double)p->s[2];
}

/* ---- progress, cancellation and the shared parallel driver --------------- */

int lm_ctl_report(const lm_ctl *ctl, double fraction)
{
    if (!ctl || !ctl->progress)
        return 0;
    if (fraction < 0.0)
        fraction = 0.0;
    if (fraction > 1.0)
        fraction = 1.0;
    return ctl->progress(ctl->user, fraction) != 0;
}

int lm_ctl_threads(const lm_ctl *ctl)
{
    if (ctl && ctl->threads > 0)
        return ctl->threads;
    int n = omp_get_max_threads();
    return n > 0 ? n : 1;
}

static double lm_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

lm_code lm_ksum_parallel(int64_t units, const lm_ctl *ctl, lm_unit_fn body, void *ctx,
                         const char *what, lm_error *err)
{
    if (units <= 0)
        return LM_OK;
    int nt = lm_ctl_threads(ctl);
    if ((int64_t)nt > units)
        nt = (int)units;
    int64_t next = 0, done = 0;
    int cancel = 0;
    /* The callback runs on the calling thread's team member 0 only and at
     * most every 20 ms, so a GUI sees a steady trickle, not a flood. */
    const double interval = 0.02;
    double last = lm_now();
    if (lm_ctl_report(ctl, 0.0))
        cancel = 1;

#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int leader = omp_get_thread_num() == 0;
        for (;;) {
            int64_t u;
#pragma omp atomic capture
            u = next++;
            if (u >= units || __atomic_load_n(&cancel, __ATOMIC_RELAXED))
                break;
            body(ctx, u);
            int64_t d;
#pragma omp atomic capture
            d = ++done;
            if (leader && ctl && ctl->progress) {
                double now = lm_now();
                if (now - last >= interval) {
                    last = now;
                    if (lm_ctl_report(ctl, (double)d / (double)units))
                        __atomic_store_n(&cancel, 1, __ATOMIC_RELAXED);
                }
            }
        }
    }
    if (cancel)
        return lm_fail(err, LM_ERR_CANCELLED, "%s: cancelled", what);
    /* The work is complete: a cancel request arriving now changes nothing. */
    lm_ctl_report(ctl, 1.0);
    return LM_OK;
}

/* ---- the variant table ---------------------------------------------------- */

/* What cpu-simd was compiled for (the vector code follows -march). */
#if defined(__AVX512F__)
#define LM_SIMD_ISA "AVX-512"
#elif defined(__AVX2__)
#define LM_SIMD_ISA "AVX2"
#elif defined(__AVX__)
#define LM_SIMD_ISA "AVX"
#elif defined(__SSE2__)
#define LM_SIMD_ISA "SSE2"
#elif defined(__ARM_NEON)
#define LM_SIMD_ISA "NEON"
#else
#define LM_SIMD_ISA "generic"
#endif

static lm_code lm_always_available(lm_error *why)
{
    (void)why;
    return LM_OK;
}

static const lm_variant lm_cpu_variants[] = {
    {"cpu-dp", "double precision, scalar, OpenMP over points: the reference", LM_DEVICE_CPU, 0, 0,
     lm_always_available, lm_ksum_cpu_dp, 1, 1},
    {"cpu-sp", "single precision, scalar sinf/cosf, OpenMP over points (the paper's CPU.SP "
               "per core)",
     LM_DEVICE_CPU, 0, 0, lm_always_available, lm_ksum_cpu_sp, 1, 1},
    {"cpu-simd", "single precision, vectorised (" LM_SIMD_ISA "), all cores, cache-tiled, "
                 "polynomial sin/cos",
     LM_DEVICE_CPU, 0, 0, lm_cpu_simd_available, lm_ksum_cpu_simd, 1, 1},
    {"cpu-nufft", "non-uniform FFT (gridding kernel + FFT), beyond the paper", LM_DEVICE_CPU, 1, 1,
     lm_always_available, lm_ksum_cpu_nufft, 1, 0},
    {"cpu-separable", "single precision, grid points only: the exact sum as a complex matrix "
                      "product of per-axis phasors, beyond the paper",
     LM_DEVICE_CPU, 0, 1, lm_always_available, lm_ksum_cpu_separable, 0, 0},
};
#define LM_N_CPU (sizeof lm_cpu_variants / sizeof lm_cpu_variants[0])

static const lm_variant *lm_gpu_rows;
static size_t lm_gpu_nrows;
static pthread_once_t lm_table_once = PTHREAD_ONCE_INIT;

static void lm_table_init(void)
{
    size_t n = 0;
    const lm_variant *rows = lm_gpu_variants(&n);
    lm_gpu_rows = rows;
    lm_gpu_nrows = rows ? n : 0;
}

size_t lm_variant_count(void)
{
    pthread_once(&lm_table_once, lm_table_init);
    return LM_N_CPU + lm_gpu_nrows;
}

const lm_variant *lm_variant_at(size_t i)
{
    pthread_once(&lm_table_once, lm_table_init);
    if (i < LM_N_CPU)
        return &lm_cpu_variants[i];
    i -= LM_N_CPU;
    return i < lm_gpu_nrows ? &lm_gpu_rows[i] : NULL;
}

const lm_variant *lm_variant_find(const char *name, lm_error *err)
{
    size_t n = lm_variant_count();
    if (name && strcmp(name, LM_VARIANT_AUTO) == 0)
        return lm_variant_resolve(name, err);
    if (name) {
        for (size_t i = 0; i < n; i++) {
            const lm_variant *v = lm_variant_at(i);
            if (strcmp(v->name, name) == 0)
                return v;
        }
    }
    char known[400];
    size_t len = 0;
    known[0] = '\0';
    for (size_t i = 0; i <= n && len < sizeof known; i++) {
        int w = snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "",
                         i < n ? lm_variant_at(i)->name : LM_VARIANT_AUTO);
        if (w < 0)
            break;
        len += (size_t)w;
    }
    lm_fail(err, LM_ERR_INVALID, "%s: unknown kernel variant (known: %s)", name ? name : "(null)",
            known);
    return NULL;
}

int lm_variant_is_auto(const char *name)
{
    return !name || !*name || strcmp(name, LM_VARIANT_AUTO) == 0;
}

/* Fastest first among those that meet the accuracy of docs/conventions.md section 7; the last one
 * runs everywhere. */
static const char *const lm_auto_order[] = {"gpu-nufft", "cpu-nufft"};

const lm_variant *lm_variant_resolve(const char *name, lm_error *err)
{
    if (!lm_variant_is_auto(name))
        return lm_variant_get_available(name, err);
    size_t n = lm_variant_count();
    for (size_t k = 0; k < sizeof lm_auto_order / sizeof lm_auto_order[0]; k++)
        for (size_t i = 0; i < n; i++) {
            const lm_variant *v = lm_variant_at(i);
            if (strcmp(v->name, lm_auto_order[k]) == 0 &&
                (!v->available || v->available(NULL) == LM_OK))
                return v;
        }
    lm_fail(err, LM_ERR_UNSUPPORTED, "auto: no NUFFT variant is available here");
    return NULL;
}

const lm_variant *lm_variant_get_available(const char *name, lm_error *err)
{
    if (name && strcmp(name, LM_VARIANT_AUTO) == 0)
        return lm_variant_resolve(name, err);
    const lm_variant *v = lm_variant_find(name, err);
    if (!v)
        return NULL;
    lm_error why;
    lm_error_clear(&why);
    lm_code c = v->available ? v->available(&why) : LM_OK;
    if (c != LM_OK) {
        lm_fail(err, c, "%s: not available: %s", v->name,
                why.msg[0] ? why.msg : lm_code_name(c));
        return NULL;
    }
    return v;
}

/* FLOPs per sample-voxel pair, the paper's accounting (Stone et al. 2008;
 * Kirk & Hwu's "13 arithmetic operations to 2 trigonometric" for F^H d):
 *   phase  k.x          3 mul + 2 add           (2 pi folded into k)   5
 *   sin, cos            1 each (hardware SFU)                          2
 *   accumulate, complex w: re += wr c - wi s, im += wi c + wr s
 *                       4 mul + 4 add/sub                              8
 *   accumulate, real w (Q): re += w c, im += w s  2 mul + 2 add        4
 * F^H d = 15, Q = 11. Check: the paper's F^H d, 128^3 x 284,592 pairs in
 * 59 s at 15 flops/pair, is the 152 GFLOPS it reports. Kernels that do
 * less work per pair (phasor recurrences, NUFFT, matrix products) still
 * get these counts: the figure is "paper-equivalent GFLOPS". */
double lm_ksum_flops_per_pair(int real_weights)
{
    return real_weights ? 11.0 : 15.0;
}

static lm_code lm_check_array(const char *what, const float *v, int64_t n, lm_error *err)
{
    if (!v)
        return lm_fail(err, LM_ERR_INVALID, "%s: missing", what);
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return lm_fail(err, LM_ERR_INVALID, "%s[%lld]: not finite (%g)", what, (long long)i,
                           (double)v[i]);
    return LM_OK;
}

lm_code lm_ksum_time_check(const char *name, const lm_ksum_in *in, const lm_points *pts, lm_error *err)
{
    if (!in->t != !pts->f)
        return lm_fail(err, LM_ERR_INVALID, "%s: sample times and a field map go together (got %s only)",
                       name, in->t ? "times" : "the field map");
    return LM_OK;
}

lm_code lm_ksum_time_refuse(const char *name, const lm_ksum_in *in, const lm_points *pts, lm_error *err)
{
    if (!in->t && !pts->f)
        return LM_OK;
    return lm_fail(err, LM_ERR_UNSUPPORTED,
                   "%s: no off-resonance term; use time segmentation or a direct variant", name);
}

/* Progress of one weight set mapped into the whole run's fraction. */
typedef struct lm_set_ctl {
    const lm_ctl *parent;
    int64_t c, nc;
} lm_set_ctl;

static int lm_set_progress(void *user, double f)
{
    const lm_set_ctl *sc = user;
    return lm_ctl_report(sc->parent, ((double)sc->c + f) / (double)sc->nc);
}

/* Sets one after another, for variants without multi_set. */
static lm_code lm_ksum_run_sets(const lm_variant *v, const lm_ksum_in *in, const lm_points *pts,
                                float *out_re, float *out_im, const lm_ctl *ctl, lm_error *err)
{
    const int64_t nc = lm_ksum_nsets(in), m = in->m, n = pts->n;
    lm_set_ctl sc = {.parent = ctl, .nc = nc};
    lm_ctl sub = {.progress = lm_set_progress, .user = &sc, .threads = ctl ? ctl->threads : 0};
    lm_code rc = LM_OK;
    for (int64_t c = 0; c < nc && rc == LM_OK; c++) {
        lm_ksum_in one = *in;
        one.nsets = 1;
        one.wr = in->wr + c * m;
        one.wi = in->wi ? in->wi + c * m : NULL;
        sc.c = c;
        rc = v->ksum(&one, pts, out_re + c * n, out_im + c * n, ctl ? &sub : NULL, err);
    }
    return rc;
}

lm_code lm_ksum_run(const lm_variant *v, const lm_ksum_in *in, const lm_points *pts,
                    float *out_re, float *out_im, const lm_ctl *ctl, lm_error *err)
{
    if (!v || !v->ksum)
        return lm_fail(err, LM_ERR_INVALID, "kernel: no variant given");
    if (!in || !pts)
        return lm_fail(err, LM_ERR_INVALID, "%s: no samples or no points given", v->name);
    if (!out_re || !out_im)
        return lm_fail(err, LM_ERR_INVALID, "%s: no output arrays given", v->name);
    if (in->m <= 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: no k-space samples (m = %lld)", v->name,
                       (long long)in->m);
    if (pts->n <= 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: no points to evaluate (n = %lld)", v->name,
                       (long long)pts->n);
    if (in->m > (int64_t)LM_MAX_ELEMENTS || pts->n > (int64_t)LM_MAX_ELEMENTS)
        return lm_fail(err, LM_ERR_INVALID, "%s: absurd problem size", v->name);
    if (in->nsets < 0 || in->nsets > LM_KSUM_MAX_SETS)
        return lm_fail(err, LM_ERR_INVALID, "%s: %lld weight sets is out of range (0 .. %d)",
                       v->name, (long long)in->nsets, LM_KSUM_MAX_SETS);
    /* Both factors are below 2^36 and 2^17: the products fit in int64. */
    const int64_t nsets = lm_ksum_nsets(in);
    if (in->m * nsets > (int64_t)LM_MAX_ELEMENTS || pts->n * nsets > (int64_t)LM_MAX_ELEMENTS)
        return lm_fail(err, LM_ERR_INVALID, "%s: absurd problem size (%lld weight sets)", v->name,
                       (long long)nsets);
    lm_code c;
    if ((c = lm_check_array("kx", in->kx, in->m, err)) ||
        (c = lm_check_array("ky", in->ky, in->m, err)) ||
        (c = lm_check_array("kz", in->kz, in->m, err)) ||
        (c = lm_check_array("weights (real)", in->wr, in->m * nsets, err)))
        return c;
    if (in->wi && (c = lm_check_array("weights (imag)", in->wi, in->m * nsets, err)))
        return c;

    if ((c = lm_ksum_time_check(v->name, in, pts, err)))
        return c;
    if (in->t) {
        if (!v->time_term)
            return lm_ksum_time_refuse(v->name, in, pts, err);
        if ((c = lm_check_array("sample times", in->t, in->m, err)) ||
            (c = lm_check_array("field map", pts->f, pts->n, err)))
            return c;
    }
    if (pts->x) {
        if ((c = lm_check_array("points x", pts->x, pts->n, err)) ||
            (c = lm_check_array("points y", pts->y, pts->n, err)) ||
            (c = lm_check_array("points z", pts->z, pts->n, err)))
            return c;
        if (v->grid_only)
            return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: needs grid points, got explicit positions",
                           v->name);
    } else {
        int64_t n = 1;
        for (int a = 0; a < 3; a++) {
            if (pts->g[a] < 1 || pts->s[a] < 1)
                return lm_fail(err, LM_ERR_INVALID,
                               "%s: grid axis %d has size %lld, spacing 1/%lld", v->name, a,
                               (long long)pts->g[a], (long long)pts->s[a]);
            if (__builtin_mul_overflow(n, pts->g[a], &n))
                return lm_fail(err, LM_ERR_INVALID, "%s: grid size overflows", v->name);
        }
        if (n != pts->n)
            return lm_fail(err, LM_ERR_INVALID,
                           "%s: grid %lldx%lldx%lld does not hold n = %lld points", v->name,
                           (long long)pts->g[0], (long long)pts->g[1], (long long)pts->g[2],
                           (long long)pts->n);
    }

    lm_error why;
    lm_error_clear(&why);
    c = v->available ? v->available(&why) : LM_OK;
    if (c != LM_OK)
        return lm_fail(err, c, "%s: not available: %s", v->name,
                       why.msg[0] ? why.msg : lm_code_name(c));
    if (nsets > 1 && !v->multi_set)
        return lm_ksum_run_sets(v, in, pts, out_re, out_im, ctl, err);
    return v->ksum(in, pts, out_re, out_im, ctl, err);
}

/* ---- weight sets, blocked for the multi-set kernels ----------------------- */

lm_code lm_wsets_make(const lm_ksum_in *in, int64_t block_max, lm_wsets *ws, const char *what,
                      lm_error *err)
{
    memset(ws, 0, sizeof *ws);
    const int64_t nc = lm_ksum_nsets(in), m = in->m;
    if (block_max < 1)
        block_max = 1;
    /* Even blocks: 10 sets in blocks of at most 8 become 5 + 5, not 8 + 2. */
    ws->nblk = (nc + block_max - 1) / block_max;
    ws->B = (nc + ws->nblk - 1) / ws->nblk;
    ws->m = m;
    ws->nsets = nc;
    size_t count;
    if (!lm_size_mul((size_t)ws->nblk * (size_t)ws->B * 2, (size_t)m, &count))
        return lm_fail(err, LM_ERR_NOMEM, "%s: size overflows", what);
    ws->w = lm_calloc(count, sizeof(float), err, what);
    if (!ws->w)
        return err ? err->code : LM_ERR_NOMEM;
    for (int64_t c = 0; c < nc; c++) {
        const int64_t b = c / ws->B, l = c % ws->B;
        const float *wr = in->wr + c * m, *wi = in->wi ? in->wi + c * m : NULL;
        float *dst = ws->w + (b * m * ws->B + l) * 2;
        for (int64_t j = 0; j < m; j++) {
            dst[j * ws->B * 2] = wr[j];
            dst[j * ws->B * 2 + 1] = wi ? wi[j] : 0.0f;
        }
    }
    return LM_OK;
}

void lm_wsets_free(lm_wsets *ws)
{
    free(ws->w);
    memset(ws, 0, sizeof *ws);
}
