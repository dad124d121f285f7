/* The single-coil benchmark of `larmor-cli bench` (lm_bench.h). */
#include "lm_bench.h"

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lm_kernels.h"
#include "lm_metrics.h"
#include "lm_recon.h"
#include "lm_solver.h"
#include "lm_sums.h"

struct lm_bench {
    lm_geom g;
    lm_traj *t;
    lm_kdata *k;
    lm_volume *truth;
    float *kx, *wr, *wi;      /* F^H d weights conj(phi) d, structure of arrays */
    lm_ksum_in kin;
    int64_t *idx;             /* the reference voxels */
    int64_t nref;
    lm_cfloat *ref, *sub;     /* cpu-dp's F^H d there; a variant's */
    lm_cfloat *fallback_q;    /* cpu-nufft's Q for the solver path, made once */
};

static double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

lm_code lm_bench_new(const lm_problem_def *def, lm_bench **out, lm_error *err)
{
    *out = NULL;
    lm_bench *b = calloc(1, sizeof *b);
    if (!b)
        return lm_fail(err, LM_ERR_NOMEM, "bench: out of memory");
    lm_code rc = lm_problem_make(def, &b->g, &b->t, &b->k, &b->truth, err);
    if (rc != LM_OK) {
        lm_bench_free(b);
        return rc;
    }
    const lm_traj *t = b->t;
    int64_t M = t->m;
    b->kx = malloc((size_t)M * 3 * sizeof *b->kx);
    b->wr = malloc((size_t)M * sizeof *b->wr);
    b->wi = malloc((size_t)M * sizeof *b->wi);
    if (!b->kx || !b->wr || !b->wi) {
        lm_bench_free(b);
        return lm_fail(err, LM_ERR_NOMEM, "bench: out of memory");
    }
    float *kx = b->kx;
    for (int64_t m = 0; m < M; m++) {
        kx[m] = t->k[3 * m], kx[M + m] = t->k[3 * m + 1], kx[2 * M + m] = t->k[3 * m + 2];
        double phi = lm_geom_phi(&b->g, t->k[3 * m], t->k[3 * m + 1], t->k[3 * m + 2]);
        b->wr[m] = (float)(phi * crealf(b->k->d[m]));
        b->wi[m] = (float)(phi * cimagf(b->k->d[m]));
    }
    b->kin = (lm_ksum_in){.m = M, .kx = kx, .ky = kx + M, .kz = kx + 2 * M, .wr = b->wr, .wi = b->wi};
    *out = b;
    return LM_OK;
}

void lm_bench_free(lm_bench *b)
{
    if (!b)
        return;
    lm_traj_free(b->t);
    lm_kdata_free(b->k);
    lm_volume_free(b->truth);
    free(b->kx), free(b->wr), free(b->wi);
    free(b->idx), free(b->ref), free(b->sub), free(b->fallback_q);
    free(b);
}

int64_t lm_bench_voxels(const lm_bench *b)
{
    return lm_geom_voxels(&b->g);
}

/* Every stride-th voxel from a fixed odd offset: spread over the volume. */
static int64_t *subset_indices(int64_t n, int64_t count)
{
    if (count > n)
        count = n;
    int64_t *idx = malloc((size_t)count * sizeof *idx);
    if (!idx)
        return NULL;
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (int64_t i = 0; i < count; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        idx[i] = (int64_t)(s % (uint64_t)n);
    }
    return idx;
}

static lm_code fhd_on_subset(const lm_bench *b, const lm_variant *v, lm_cfloat *out, double *secs, lm_error *err)
{
    const lm_geom *g = &b->g;
    int64_t count = b->nref;
    float *x = malloc((size_t)count * 5 * sizeof(float));
    if (!x)
        return lm_fail(err, LM_ERR_NOMEM, "bench: out of memory for the voxel subset");
    float *y = x + count, *z = y + count, *re = z + count, *im = re + count;
    for (int64_t j = 0; j < count; j++) {
        int64_t i = b->idx[j];
        x[j] = (float)lm_voxel_pos(i % g->n[0], g->n[0]);
        y[j] = (float)lm_voxel_pos((i / g->n[0]) % g->n[1], g->n[1]);
        z[j] = (float)lm_voxel_pos(i / (g->n[0] * g->n[1]), g->n[2]);
    }
    lm_points pts = {.n = count, .x = x, .y = y, .z = z};
    double t0 = bench_now();
    lm_code c = lm_ksum_run(v, &b->kin, &pts, re, im, NULL, err);
    *secs = bench_now() - t0;
    for (int64_t j = 0; c == LM_OK && j < count; j++)
        out[j] = re[j] + I * im[j];
    free(x);
    return c;
}

/* F^H d on `planes` central z planes of the image grid (a grid slab). */
static lm_code fhd_on_slab(const lm_bench *b, const lm_variant *v, int64_t planes, double *secs, lm_error *err)
{
    lm_points pts;
    lm_points_image_grid(&pts, b->g.n);
    pts.g[2] = planes;
    pts.c[2] = planes / 2;
    pts.n = pts.g[0] * pts.g[1] * planes;
    float *re = malloc((size_t)pts.n * 2 * sizeof(float));
    if (!re)
        return lm_fail(err, LM_ERR_NOMEM, "bench: out of memory for a slab");
    double t0 = bench_now();
    lm_code c = lm_ksum_run(v, &b->kin, &pts, re, re + pts.n, NULL, err);
    *secs = bench_now() - t0;
    free(re);
    return c;
}

lm_code lm_bench_reference(lm_bench *b, int64_t ref_voxels, lm_error *err)
{
    int64_t N = lm_bench_voxels(b);
    b->nref = ref_voxels < N ? ref_voxels : N;
    b->idx = subset_indices(N, b->nref);
    b->ref = malloc((size_t)b->nref * sizeof *b->ref);
    b->sub = malloc((size_t)b->nref * sizeof *b->sub);
    if (!b->idx || !b->ref || !b->sub)
        return lm_fail(err, LM_ERR_NOMEM, "bench: out of memory");
    double tref;
    return fhd_on_subset(b, lm_variant_find("cpu-dp", NULL), b->ref, &tref, err);
}

/* What `larmor-cli recon --method cg --variant V --lambda L --iters I
 * --no-cache` runs on the problem (lm_recon_run), timed by its own stages.
 * A GPU variant runs twice and reports the second. */
static lm_code recon_path(const lm_bench *b, const lm_variant *v, double lambda, int iters, lm_recon_result *res,
                          lm_error *err)
{
    lm_recon_opts o;
    lm_recon_opts_init(&o);
    o.variant = v->name;
    o.lambda = lambda;
    o.iters = iters;
    o.use_cache = 0; /* Q computed, as the Q column has always been */
    if (v->device == LM_DEVICE_GPU) {
        lm_recon_result warm = {0};
        lm_code rc = lm_recon_run(&b->g, b->t, b->k, &o, &warm, err);
        lm_recon_result_clear(&warm);
        if (rc != LM_OK)
            return rc;
    }
    return lm_recon_run(&b->g, b->t, b->k, &o, res, err);
}

/* The variant's full F^H d, timed (a GPU variant's second run), or its time
 * extrapolated from the subset or a slab when that would exceed the budget
 * (*fhd stays NULL then). The reference voxels' values go to b->sub. */
static lm_code time_fhd(lm_bench *b, const lm_variant *v, double budget, lm_bench_row *r, lm_cfloat **fhd,
                        lm_error *err)
{
    const lm_geom *g = &b->g;
    int64_t N = lm_geom_voxels(g), R = b->nref;
    double predicted = 0, tsub = 0;
    /* Only CPU kernels are slow enough to need extrapolating; GPU grid
     * kernels are not represented by an explicit-point subset. */
    if (!v->grid_only && v->device == LM_DEVICE_CPU) {
        lm_code c = fhd_on_subset(b, v, b->sub, &tsub, err);
        if (c != LM_OK)
            return c;
        predicted = tsub * (double)N / (double)R;
        /* Grid kernels run faster on rows than on scattered points: when
         * the whole would exceed the budget, time a slab of z planes
         * (about 10 s) and scale that instead. */
        if (predicted > budget && g->n[2] > 1) {
            double per_plane = predicted / (double)g->n[2];
            int64_t planes = (int64_t)(10.0 / per_plane);
            planes = planes < 1 ? 1 : planes > g->n[2] ? g->n[2] : planes;
            double tslab = 0;
            c = fhd_on_slab(b, v, planes, &tslab, err);
            if (c != LM_OK)
                return c;
            predicted = tslab * (double)g->n[2] / (double)planes;
        }
    }
    if (predicted > budget) {
        r->time_fhd_s = predicted;
        r->fhd_estimated = 1;
        return LM_OK;
    }
    if (v->device == LM_DEVICE_GPU) { /* warm up: context and plans */
        lm_cfloat *warm = NULL;
        lm_code c = lm_compute_fhd(g, b->t, b->k->d, v->name, NULL, &warm, err);
        if (c != LM_OK)
            return c;
        free(warm);
    }
    double t0 = bench_now();
    lm_code c = lm_compute_fhd(g, b->t, b->k->d, v->name, NULL, fhd, err);
    if (c != LM_OK)
        return c;
    r->time_fhd_s = bench_now() - t0;
    for (int64_t j = 0; j < R; j++)
        b->sub[j] = (*fhd)[b->idx[j]];
    return LM_OK;
}

static void row_metrics(const lm_bench *b, const lm_cfloat *image, lm_bench_row *r)
{
    lm_metrics met;
    lm_error ignored = {0};
    if (lm_metrics_compute(image, b->truth->data, lm_geom_voxels(&b->g), NULL, 0, &met, &ignored) == LM_OK) {
        r->psnr_db = met.psnr_db;
        r->percent_error = met.percent_error;
    }
}

/* CG by the stand-alone solver with an accurate Q (from the cache or
 * cpu-nufft) on the variant's device: for a variant whose own Q would
 * exceed the budget. */
static lm_code solver_path(lm_bench *b, const lm_variant *v, const lm_cfloat *fhd, int iters, double lambda,
                           lm_bench_row *r, lm_error *err)
{
    if (!b->fallback_q) {
        int cached = 0;
        lm_code c = lm_compute_q(&b->g, b->t, "cpu-nufft", 1, NULL, &b->fallback_q, &cached, err);
        if (c != LM_OK)
            return c;
    }
    snprintf(r->note, sizeof r->note, "CG by the solver with Q from cpu-nufft");
    r->cg_path = "solver";
    lm_volume *img = lm_volume_new(b->g.n, NULL, err);
    if (!img)
        return err ? err->code : LM_ERR_NOMEM;
    lm_cg_opts co = {.lambda = lambda, .reg = LM_REG_IDENTITY, .iters = iters};
    lm_cg_report rep = {0};
    double t0 = bench_now();
    lm_code cc = v->device == LM_DEVICE_GPU ? lm_cg_solve_gpu(&b->g, b->fallback_q, fhd, img->data, &co, &rep, err)
                                            : lm_cg_solve_cpu(&b->g, b->fallback_q, fhd, img->data, &co, &rep, err);
    r->time_cg_s = bench_now() - t0;
    r->iters = rep.iters_done;
    free(rep.resid_history);
    if (cc == LM_OK)
        row_metrics(b, img->data, r);
    lm_volume_free(img);
    return cc;
}

lm_code lm_bench_variant(lm_bench *b, const char *name, int iters, double lambda, double budget, lm_bench_row *r,
                         lm_error *err)
{
    memset(r, 0, sizeof *r);
    const lm_variant *v = lm_variant_get_available(name, err);
    if (!v)
        return err ? err->code : LM_ERR_UNSUPPORTED;
    if (!b->ref)
        return lm_fail(err, LM_ERR_INVALID, "bench: no cpu-dp reference (lm_bench_reference first)");
    r->variant = name;
    r->resolved = v->name;
    if (strcmp(name, v->name) != 0)
        snprintf(r->label, sizeof r->label, "%s -> %s", name, v->name);
    else
        snprintf(r->label, sizeof r->label, "%s", v->name);
    r->psnr_db = r->percent_error = NAN;
    lm_cfloat *fhd = NULL;
    lm_code c = time_fhd(b, v, budget, r, &fhd, err);
    if (c != LM_OK)
        return c;
    double pairs = (double)b->t->m * (double)lm_geom_voxels(&b->g);
    r->rel_error = lm_rel_error_c(b->sub, b->ref, b->nref);
    r->gpairs = pairs / r->time_fhd_s * 1e-9;
    r->gflops = pairs * lm_ksum_flops_per_pair(0) / r->time_fhd_s * 1e-9;
    r->cg_path = "";
    r->time_ehd_s = NAN;
    const int q_fits = 8.0 * r->time_fhd_s <= budget;
    if (!q_fits) {
        r->time_q_s = 8.0 * r->time_fhd_s; /* Q is 8x the pairs of F^H d */
        r->q_estimated = 1;
    }
    if (fhd && q_fits) {
        /* recon's own path; a GPU variant's timed run is its second in this
         * process (context, plans and pools warm, as served) */
        lm_recon_result res = {0};
        c = recon_path(b, v, lambda, iters, &res, err);
        free(fhd);
        if (c != LM_OK)
            return c;
        r->cg_path = "recon";
        r->time_q_s = res.time_q_s;
        r->time_ehd_s = res.time_fhd_s;
        r->time_cg_s = res.time_cg_s;
        r->iters = res.iters_done;
        row_metrics(b, res.image->data, r);
        r->time_total_s = res.time_total_s;
        lm_recon_result_clear(&res);
        return LM_OK;
    }
    if (fhd) { /* Q would exceed the budget */
        c = solver_path(b, v, fhd, iters, lambda, r, err);
        free(fhd);
        if (c != LM_OK)
            return c;
    } else {
        r->time_cg_s = NAN;
        snprintf(r->note, sizeof r->note, "F^H d extrapolated: no image");
    }
    r->time_total_s = r->time_q_s + r->time_fhd_s + (isfinite(r->time_cg_s) ? r->time_cg_s : 0);
    return LM_OK;
}
