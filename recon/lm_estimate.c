/* Time of a run before it runs (lm_estimate.h). The work of each part is
 * counted in sample-voxel pairs (direct sums) or flops (FFTs, NUFFT
 * spreading) and divided by the variant's nominal speed; the speeds this
 * machine measured in earlier runs correct each part. The nominal speeds
 * are rough single-machine figures: a scalar core does ~0.01-0.02 Gpairs/s
 * of the direct sum (a sin and a cos per pair), the vectorised all-core
 * kernel about ten times that, a GPU hundreds of times; FFTs at about 6
 * GFLOPS on a CPU (FFTW, two cores) and hundreds on a GPU. One measured run
 * replaces them. */
#include "lm_estimate.h"
#include "lm_kernels.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_atomic.h"
#include "lm_qcache.h"

static const struct {
    const char *name;
    double gpairs, gflops; /* gpairs 0: a NUFFT (its sums are counted in flops) */
} nominal[] = {
    {"cpu-dp", 0.01, 6},       {"cpu-sp", 0.02, 6},       {"cpu-simd", 0.2, 6},      {"cpu-nufft", 0, 6},
    {"cpu-separable", 0.5, 6}, {"gpu-base", 2, 300},      {"gpu-regalloc", 20, 300}, {"gpu-coalesce", 30, 300},
    {"gpu-constmem", 40, 300}, {"gpu-fasttrig", 50, 300}, {"gpu-tuned", 50, 300},    {"gpu-multi", 50, 300},
    {"gpu-nufft", 0, 300},     {"gpu-phasor", 50, 300},
};

static const char *const part_names[LM_EST_PARTS] = {"q", "fhd", "iter", "grid", "other"};

/* Flops of an FFT of p points, and of spreading one sample (width-4 kernel). */
static double fft_flops(double p)
{
    return p > 1 ? 5 * p * log2(p) : 0;
}

static double spread_flops(int dims)
{
    return 10 * pow(4, dims);
}

const char *lm_estimate_nominal(const char *variant, double *gpairs, double *gflops, lm_error *err)
{
    const lm_variant *v = lm_variant_is_auto(variant) ? lm_variant_resolve(variant, err) : lm_variant_find(variant, err);
    if (!v)
        return NULL;
    *gpairs = v->approximate ? 0 : v->device == LM_DEVICE_GPU ? 50 : 0.1;
    *gflops = v->device == LM_DEVICE_GPU ? 300 : 6;
    for (size_t i = 0; i < sizeof nominal / sizeof *nominal; i++)
        if (strcmp(nominal[i].name, v->name) == 0) {
            *gpairs = nominal[i].gpairs;
            *gflops = nominal[i].gflops;
        }
    return v->name;
}

void lm_estimate_size_init(lm_estimate_size *sz, const lm_geom *g, int64_t m, int coils, const lm_recon_opts *o)
{
    memset(sz, 0, sizeof *sz);
    sz->method = o->method;
    sz->variant = o->variant;
    sz->samples = m;
    for (int a = 0; a < 3; a++)
        sz->n[a] = g->n[a];
    sz->coils = coils > 0 ? coils : 1;
    sz->iters = o->iters;
    sz->inner = o->reg == LM_REG_TV || o->reg == LM_REG_WAVELET
                    ? (o->admm_cg_iters > 0 ? o->admm_cg_iters : LM_ADMM_CG_ITERS_DEFAULT)
                    : 1;
    sz->segments = !o->fieldmap ? 1 : o->segments > 0 ? o->segments : o->segments == 0 ? 0 : 8;
}

/* Nominal seconds of each part. */
static void nominal_parts(const lm_estimate_size *sz, double gpairs, double gflops, double part[LM_EST_PARTS])
{
    const int dims = sz->n[2] > 1 ? 3 : 2;
    const double nv = (double)sz->n[0] * (double)sz->n[1] * (double)sz->n[2], m = (double)sz->samples;
    const double c = sz->coils > 0 ? sz->coils : 1, qp = nv * (dims == 3 ? 8 : 4);
    const double l = sz->segments > 0 ? sz->segments : 1, blocks = l * (l + 1) / 2;
    const double pairs = gpairs * 1e9, flops = gflops * 1e9;
    memset(part, 0, LM_EST_PARTS * sizeof *part);
    /* A NUFFT's plan (FFT planning, sorting the samples) costs about this
     * much whatever the size: most of a small run's time. */
    const double plan = gpairs > 0 ? 0 : gflops > 100 ? 0.02 : 0.1;
    if (sz->method == LM_METHOD_CG) {
        const double spread = m * spread_flops(dims) + fft_flops(qp);
        if (!sz->q_cached)
            part[LM_EST_Q] = gpairs > 0 ? blocks * m * qp / pairs : plan + blocks * spread / flops;
        part[LM_EST_FHD] = gpairs > 0 ? m * nv * c * l / pairs : plan + c * l * spread / flops;
        /* a step: the Toeplitz product per coil and segment (two FFTs on the
         * 2x grid), or with exact field-map sums E and E^H by direct sums */
        double step = sz->segments == 0 ? 2 * m * nv * c / ((gpairs > 0 ? gpairs : 0.2) * 1e9)
                                        : (c * l * 2 * fft_flops(qp) + 20 * c * nv) / flops;
        part[LM_EST_ITER] = (double)sz->iters * (sz->inner > 0 ? sz->inner : 1) * step;
    } else {
        /* gridding runs on the CPU whatever the variant, with its own plan */
        part[LM_EST_GRID] = sz->method == LM_METHOD_FFT ? c * fft_flops(nv) / 3e9
                                                        : 0.05 + c * (m * spread_flops(dims) + fft_flops(qp)) / 3e9;
    }
    /* set-up, coils, copies: a few hundredths of a second, then per value */
    part[LM_EST_OTHER] = 0.03 + (nv + m * c) * 1e-8;
}

static int find_variant(const lm_estimate_rates *r, const char *name)
{
    for (int i = 0; r && i < r->n; i++)
        if (strcmp(r->v[i].variant, name) == 0)
            return i;
    return -1;
}

lm_code lm_estimate_time(const lm_estimate_size *sz, const lm_estimate_rates *rates, lm_estimate *out, lm_error *err)
{
    memset(out, 0, sizeof *out);
    if (!sz || sz->samples < 0 || sz->n[0] < 1 || sz->n[1] < 1 || sz->n[2] < 1)
        return lm_fail(err, LM_ERR_INVALID, "time estimate: no problem size");
    out->variant = lm_estimate_nominal(sz->variant, &out->nominal_gpairs, &out->nominal_gflops, err);
    if (!out->variant)
        return LM_ERR_INVALID;
    double part[LM_EST_PARTS];
    nominal_parts(sz, out->nominal_gpairs, out->nominal_gflops, part);
    const int vi = find_variant(rates, out->variant);
    for (int p = 0; p < LM_EST_PARTS; p++) {
        const int known = vi >= 0 && rates->v[vi].runs[p] > 0;
        out->part_s[p] = part[p] * (known ? rates->v[vi].ratio[p] : 1);
        out->measured += known && part[p] > 0;
        out->total_s += out->part_s[p];
        out->nominal_s += part[p];
    }
    return LM_OK;
}

static void update(lm_estimate_rates *r, int vi, int p, double measured_s, double nominal_s)
{
    if (!(measured_s > 0) || !(nominal_s > 0) || !isfinite(measured_s))
        return;
    const double ratio = measured_s / nominal_s;
    double *old = &r->v[vi].ratio[p];
    *old = r->v[vi].runs[p] > 0 && *old > 0
               ? exp((1 - LM_ESTIMATE_NEWEST) * log(*old) + LM_ESTIMATE_NEWEST * log(ratio))
               : ratio;
    r->v[vi].runs[p]++;
}

lm_code lm_estimate_record(lm_estimate_rates *rates, const lm_estimate_size *sz, const lm_recon_result *res,
                           lm_error *err)
{
    lm_estimate e;
    lm_code rc = lm_estimate_time(sz, NULL, &e, err);
    if (rc != LM_OK)
        return rc;
    int vi = find_variant(rates, e.variant);
    if (vi < 0) {
        if (rates->n >= LM_ESTIMATE_VARIANTS)
            return lm_fail(err, LM_ERR_INVALID, "time estimate: more than %d variants measured", LM_ESTIMATE_VARIANTS);
        vi = rates->n++;
        memset(&rates->v[vi], 0, sizeof rates->v[vi]);
        snprintf(rates->v[vi].variant, sizeof rates->v[vi].variant, "%s", e.variant);
    }
    double part[LM_EST_PARTS];
    lm_estimate_size done = *sz;
    done.q_cached = 0;
    nominal_parts(&done, e.nominal_gpairs, e.nominal_gflops, part);
    if (sz->method == LM_METHOD_CG) {
        if (!res->q_from_cache)
            update(rates, vi, LM_EST_Q, res->time_q_s, part[LM_EST_Q]);
        update(rates, vi, LM_EST_FHD, res->time_fhd_s, part[LM_EST_FHD]);
        /* per step actually taken (a tolerance may stop early) */
        if (sz->iters > 0 && res->iters_done > 0)
            update(rates, vi, LM_EST_ITER, res->time_cg_s, part[LM_EST_ITER] * res->iters_done / sz->iters);
    } else
        update(rates, vi, LM_EST_GRID, res->time_grid_s, part[LM_EST_GRID]);
    const double other = res->time_total_s - res->time_q_s - res->time_fhd_s - res->time_cg_s - res->time_grid_s -
                         res->time_lambda_s - res->time_register_s;
    update(rates, vi, LM_EST_OTHER, other, part[LM_EST_OTHER]);
    return LM_OK;
}

static lm_code rates_path(const char *path, char **out, lm_error *err)
{
    if (path) {
        *out = strdup(path);
        return *out ? LM_OK : lm_fail(err, LM_ERR_NOMEM, "time estimate: out of memory");
    }
    char *dir = NULL;
    lm_code rc = lm_qcache_dir(&dir, err);
    if (rc != LM_OK)
        return rc;
    if (asprintf(out, "%s/rates.txt", dir) < 0) {
        *out = NULL;
        rc = lm_fail(err, LM_ERR_NOMEM, "time estimate: out of memory");
    }
    free(dir);
    return rc;
}

lm_code lm_estimate_rates_load(const char *path, lm_estimate_rates *rates, lm_error *err)
{
    memset(rates, 0, sizeof *rates);
    char *p = NULL;
    lm_code rc = rates_path(path, &p, err);
    if (rc != LM_OK)
        return rc;
    FILE *f = fopen(p, "r");
    if (!f) {
        rc = errno == ENOENT ? LM_OK : lm_fail(err, LM_ERR_IO, "%s: %s", p, strerror(errno));
        free(p);
        return rc;
    }
    char line[256];
    int no = 0;
    while (rc == LM_OK && fgets(line, sizeof line, f)) {
        no++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char name[32], part[16];
        double ratio;
        int runs, part_i = -1;
        if (sscanf(line, "%31s %15s %lf %d", name, part, &ratio, &runs) == 4)
            for (int i = 0; i < LM_EST_PARTS; i++)
                if (strcmp(part, part_names[i]) == 0)
                    part_i = i;
        if (part_i < 0 || !(ratio > 0) || !isfinite(ratio) || runs < 1) {
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: line %d: expected \"variant part ratio runs\" (part q, fhd, iter, "
                         "grid or other; ratio > 0)", p, no);
            break;
        }
        int vi = find_variant(rates, name);
        if (vi < 0 && rates->n < LM_ESTIMATE_VARIANTS) {
            vi = rates->n++;
            snprintf(rates->v[vi].variant, sizeof rates->v[vi].variant, "%s", name);
        }
        if (vi >= 0) {
            rates->v[vi].ratio[part_i] = ratio;
            rates->v[vi].runs[part_i] = runs;
        }
    }
    fclose(f);
    free(p);
    if (rc != LM_OK)
        memset(rates, 0, sizeof *rates);
    return rc;
}

lm_code lm_estimate_rates_save(const char *path, const lm_estimate_rates *rates, lm_error *err)
{
    char *p = NULL;
    lm_code rc = rates_path(path, &p, err);
    if (rc != LM_OK)
        return rc;
    lm_atomic a = {0};
    rc = lm_atomic_begin(&a, p, 1, err);
    if (rc == LM_OK) {
        fprintf(a.f, "# larmor: measured / nominal time of each part of a run, per variant (lm_estimate.h)\n");
        for (int i = 0; i < rates->n; i++)
            for (int k = 0; k < LM_EST_PARTS; k++)
                if (rates->v[i].runs[k] > 0)
                    fprintf(a.f, "%s %s %.6g %d\n", rates->v[i].variant, part_names[k], rates->v[i].ratio[k],
                            rates->v[i].runs[k]);
        rc = lm_atomic_commit(&a, err);
    }
    lm_atomic_abort(&a);
    free(p);
    return rc;
}
