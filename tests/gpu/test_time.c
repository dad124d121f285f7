/* The off-resonance term on the GPU: every GPU variant with time_term (and
 * the gpu-dp reference kernel) against cpu-dp with the same field map and
 * sample times, on grid and explicit points, 2D and 3D, complex and real
 * weights; the device-resident E^H d (lm_gpu_adjoint) with a field map, one
 * channel and several (the multi-channel kernel), with and without coil
 * maps, against cpu-dp's weight sets combined here in double.
 *
 * Tolerance (relative l2 error against cpu-dp): 1e-4 for every variant (the
 * project's budget for float GPU kernels: phases reduced in float, |k.x| to
 * ~30 cycles here and |f t| to ~4 cycles, so ~2e-6 cycles of phase error);
 * gpu-dp 1e-6 (cpu-dp's float outputs). t = 0 with a field map gives the
 * run without one to 1e-6. Outputs are poisoned (NaN) and must all be
 * written. gpu-nufft refuses the term with the message that names the way
 * out, and so does lm_gpu_adjoint; a field map without times is refused. */
#include <complex.h>

#include "gpu_util.h"

typedef struct tcase {
    const char *name;
    int expl;        /* explicit points (n = g[0]), 2 or 3 dims */
    int64_t g[3];    /* image grid */
    int complex_w;
    int64_t m;
    double kmax[3];
} tcase;

static const tcase cases[] = {
    {"image grid 3D complex", 0, {24, 20, 16}, 1, 4000, {12, 10, 8}},
    {"image grid 2D complex", 0, {48, 40, 1}, 1, 3000, {24, 20, 0}},
    {"image grid 3D real", 0, {12, 10, 9}, 0, 2049, {6, 5, 4.5}},
    {"explicit 3D complex", 3, {3001, 0, 0}, 1, 2500, {30, 30, 30}},
    {"explicit 2D complex", 2, {2000, 0, 0}, 1, 1500, {40, 40, 0}},
};
#define NCASES (sizeof cases / sizeof cases[0])

/* Times over a 6 ms readout of 64 samples; field map smooth (to ~500 Hz)
 * plus a rough 60 Hz part. */
static void make_time(int64_t m, float *t)
{
    for (int64_t i = 0; i < m; i++)
        t[i] = (float)(6e-3 * ((double)(i % 64) + gu_uniform()) / 64.0);
}

static void make_fmap(const lm_points *p, float *f)
{
    for (int64_t j = 0; j < p->n; j++) {
        double x[3];
        lm_points_get(p, j, x);
        f[j] = (float)(400.0 * sin(2 * M_PI * (0.8 * x[0] + 0.3 * x[1])) + 200.0 * x[2] +
                       60.0 * (2 * gu_uniform() - 1));
    }
}

static double rel_err(int64_t n, const float *ar, const float *ai, const float *br, const float *bi)
{
    double num = 0, den = 0;
    for (int64_t j = 0; j < n; j++) {
        const double dr = (double)ar[j] - br[j], di = (double)ai[j] - bi[j];
        num += dr * dr + di * di;
        den += (double)br[j] * br[j] + (double)bi[j] * bi[j];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static int all_finite(int64_t n, const float *a, const float *b)
{
    for (int64_t j = 0; j < n; j++)
        if (!isfinite(a[j]) || !isfinite(b[j]))
            return 0;
    return 1;
}

static void test_ksum(const tcase *c)
{
    gu_samples s;
    gu_samples_make(&s, c->m, c->kmax, c->complex_w);
    float *px = NULL, *py = NULL, *pz = NULL;
    lm_points pts;
    memset(&pts, 0, sizeof pts);
    if (c->expl) {
        const int64_t n = c->g[0];
        px = malloc((size_t)n * sizeof(float));
        py = malloc((size_t)n * sizeof(float));
        pz = malloc((size_t)n * sizeof(float));
        for (int64_t j = 0; j < n; j++) {
            px[j] = (float)(gu_uniform() - 0.5);
            py[j] = (float)(gu_uniform() - 0.5);
            pz[j] = c->expl == 3 ? (float)(gu_uniform() - 0.5) : 0.0f;
        }
        pts.n = n;
        pts.x = px;
        pts.y = py;
        pts.z = pz;
    } else {
        lm_points_image_grid(&pts, c->g);
    }
    const int64_t n = pts.n;
    float *t = malloc((size_t)c->m * sizeof(float)), *f = malloc((size_t)n * sizeof(float));
    float *zt = calloc((size_t)c->m, sizeof(float));
    make_time(c->m, t);
    make_fmap(&pts, f);
    lm_ksum_in in = s.in, in0 = s.in;
    in.t = t;
    in0.t = zt;
    lm_points pf = pts;
    pf.f = f;
    float *rr = malloc((size_t)n * sizeof(float)), *ri = malloc((size_t)n * sizeof(float));
    float *ar = malloc((size_t)n * sizeof(float)), *ai = malloc((size_t)n * sizeof(float));
    float *br = malloc((size_t)n * sizeof(float)), *bi = malloc((size_t)n * sizeof(float));
    lm_error err;
    const lm_variant *dp = lm_variant_find("cpu-dp", &err);
    CHECK_OK(lm_ksum_run(dp, &in, &pf, rr, ri, NULL, &err), &err);

    /* gpu-dp, called directly (not a table row) */
    for (int64_t j = 0; j < n; j++)
        ar[j] = ai[j] = NAN;
    CHECK_OK(lm_ksum_gpu_dp(&in, &pf, ar, ai, NULL, &err), &err);
    double e = rel_err(n, ar, ai, rr, ri);
    fprintf(stderr, "%-24s gpu-dp        rel error %.3g (tol 1e-6)\n", c->name, e);
    CHECK_MSG(all_finite(n, ar, ai) && e <= 1e-6, "%s, gpu-dp: rel error %.3g", c->name, e);

    size_t nr = 0;
    const lm_variant *rows = lm_gpu_variants(&nr);
    for (size_t k = 0; k < nr; k++) {
        const lm_variant *v = &rows[k];
        lm_error_clear(&err);
        if (!v->time_term) {
            lm_code rc = lm_ksum_run(v, &in, &pf, ar, ai, NULL, &err);
            CHECK_MSG(rc == LM_ERR_UNSUPPORTED && strstr(err.msg, "no off-resonance term") &&
                          strstr(err.msg, "time segmentation"),
                      "%s: %d %s", v->name, (int)rc, err.msg);
            continue;
        }
        for (int64_t j = 0; j < n; j++)
            ar[j] = ai[j] = br[j] = bi[j] = NAN;
        CHECK_OK(lm_ksum_run(v, &in, &pf, ar, ai, NULL, &err), &err);
        e = rel_err(n, ar, ai, rr, ri);
        fprintf(stderr, "%-24s %-13s rel error %.3g (tol 1e-4)\n", c->name, v->name, e);
        CHECK_MSG(all_finite(n, ar, ai) && e <= 1e-4, "%s, %s: rel error %.3g", c->name, v->name, e);
        /* t = 0 with the field map against no term at all */
        CHECK_OK(lm_ksum_run(v, &in0, &pf, ar, ai, NULL, &err), &err);
        CHECK_OK(lm_ksum_run(v, &s.in, &pts, br, bi, NULL, &err), &err);
        e = rel_err(n, ar, ai, br, bi);
        /* gpu-phasor on a grid with a field map runs its explicit-point
         * kernel (f t does not split over the axes), against its grid
         * kernel without: two float summation orders, ~1e-6 apart */
        const double tol0 = pts.x == NULL && strcmp(v->name, "gpu-phasor") == 0 ? 5e-6 : 1e-6;
        CHECK_MSG(all_finite(n, ar, ai) && e <= tol0, "%s, %s: t = 0 differs from no term by %.3g", c->name,
                  v->name, e);
        /* times without a field map, called directly */
        lm_error_clear(&err);
        CHECK(v->ksum(&in, &pts, ar, ai, NULL, &err) == LM_ERR_INVALID);
    }
    free(rr);
    free(ri);
    free(ar);
    free(ai);
    free(br);
    free(bi);
    free(t);
    free(zt);
    free(f);
    free(px);
    free(py);
    free(pz);
    gu_samples_free(&s);
}

/* E^H d on the device with a field map against cpu-dp's sets. */
static void test_adjoint(const char *variant, int64_t nc, int with_maps, int dims)
{
    lm_error err;
    lm_geom g;
    lm_geom_init(&g, 20, 16, dims == 3 ? 12 : 1, 200.0);
    const int64_t N = lm_geom_voxels(&g), m = 3000;
    lm_traj *tr = lm_traj_new(m, dims, &err);
    lm_kdata *kd = lm_kdata_new(m, nc, &err);
    CHECK(tr && kd && lm_traj_alloc_times(tr, &err) == LM_OK);
    if (!tr || !kd || !tr->t) {
        lm_traj_free(tr);
        lm_kdata_free(kd);
        return;
    }
    for (int64_t i = 0; i < m; i++) {
        for (int a = 0; a < 3; a++)
            tr->k[3 * i + a] = g.n[a] > 1 ? (float)((gu_uniform() - 0.5) * (double)g.n[a]) : 0.0f;
        for (int64_t c = 0; c < nc; c++)
            kd->d[c * m + i] = (float)(2 * gu_uniform() - 1) + I * (float)(2 * gu_uniform() - 1);
    }
    make_time(m, tr->t);
    lm_points pts;
    lm_points_image_grid(&pts, g.n);
    float *f = malloc((size_t)N * sizeof(float));
    make_fmap(&pts, f);
    lm_cfloat *sens = malloc((size_t)(N * nc) * sizeof(lm_cfloat));
    for (int64_t i = 0; i < N * nc; i++)
        sens[i] = (float)(0.5 + gu_uniform()) * cexpf(I * (float)(6.28 * gu_uniform()));

    /* reference: cpu-dp with nc weight sets phi d_c, combined in double */
    float *wr = malloc((size_t)(m * nc) * sizeof(float)), *wi = malloc((size_t)(m * nc) * sizeof(float));
    float *kx = malloc((size_t)m * 3 * sizeof(float)), *ky = kx + m, *kz = ky + m;
    for (int64_t i = 0; i < m; i++) {
        kx[i] = tr->k[3 * i];
        ky[i] = tr->k[3 * i + 1];
        kz[i] = tr->k[3 * i + 2];
        const double phi = lm_geom_phi(&g, kx[i], ky[i], kz[i]);
        for (int64_t c = 0; c < nc; c++) {
            wr[c * m + i] = (float)(phi * crealf(kd->d[c * m + i]));
            wi[c * m + i] = (float)(phi * cimagf(kd->d[c * m + i]));
        }
    }
    lm_ksum_in in = {.m = m, .kx = kx, .ky = ky, .kz = kz, .wr = wr, .wi = wi, .nsets = nc, .t = tr->t};
    lm_points pf = pts;
    pf.f = f;
    float *fr = malloc((size_t)(N * nc) * sizeof(float)), *fi = malloc((size_t)(N * nc) * sizeof(float));
    const lm_variant *dp = lm_variant_find("cpu-dp", &err);
    CHECK_OK(lm_ksum_run(dp, &in, &pf, fr, fi, NULL, &err), &err);
    float *xr = malloc((size_t)N * sizeof(float)), *xi = malloc((size_t)N * sizeof(float));
    for (int64_t j = 0; j < N; j++) {
        double complex acc = 0;
        for (int64_t c = 0; c < nc; c++) {
            const double complex v = (double)fr[c * N + j] + I * (double)fi[c * N + j];
            acc += (with_maps ? conj((double complex)sens[c * N + j]) : 1.0) * v;
        }
        acc /= (double)N;
        xr[j] = (float)creal(acc);
        xi[j] = (float)cimag(acc);
    }

    float *f_dev = NULL;
    lm_cfloat *s_dev = NULL, *x_dev = NULL;
    lm_cfloat *x = malloc((size_t)N * sizeof(lm_cfloat));
    CHECK_OK(lm_gpu_mem_alloc((void **)&f_dev, (size_t)N * sizeof(float), "field map", &err), &err);
    CHECK_OK(lm_gpu_mem_alloc((void **)&x_dev, (size_t)N * sizeof(lm_cfloat), "x", &err), &err);
    CHECK_OK(lm_gpu_mem_upload(f_dev, f, (size_t)N * sizeof(float), &err), &err);
    if (with_maps) {
        CHECK_OK(lm_gpu_mem_alloc((void **)&s_dev, (size_t)(N * nc) * sizeof(lm_cfloat), "maps", &err), &err);
        CHECK_OK(lm_gpu_mem_upload(s_dev, sens, (size_t)(N * nc) * sizeof(lm_cfloat), &err), &err);
    }
    if (!strcmp(variant, "gpu-nufft")) {
        lm_error_clear(&err);
        lm_code rc = lm_gpu_adjoint(&g, tr, kd, s_dev, f_dev, variant, x_dev, NULL, &err);
        CHECK_MSG(rc == LM_ERR_UNSUPPORTED && strstr(err.msg, "no off-resonance term"), "gpu-nufft adjoint: %s",
                  err.msg);
    } else {
        CHECK_OK(lm_gpu_adjoint(&g, tr, kd, s_dev, f_dev, variant, x_dev, NULL, &err), &err);
        CHECK_OK(lm_gpu_mem_download(x, x_dev, (size_t)N * sizeof(lm_cfloat), &err), &err);
        float *gr = malloc((size_t)N * sizeof(float)), *gi = malloc((size_t)N * sizeof(float));
        for (int64_t j = 0; j < N; j++) {
            gr[j] = crealf(x[j]);
            gi[j] = cimagf(x[j]);
        }
        const double e = rel_err(N, gr, gi, xr, xi);
        fprintf(stderr, "E^H d %dD %-12s %2lld coils%s: rel error %.3g (tol 1e-4)\n", dims, variant, (long long)nc,
                with_maps ? ", maps" : "", e);
        CHECK_MSG(all_finite(N, gr, gi) && e <= 1e-4, "E^H d %s, %lld coils: rel error %.3g", variant,
                  (long long)nc, e);
        free(gr);
        free(gi);
        /* a field map needs the times */
        float *keep = tr->t;
        tr->t = NULL;
        lm_error_clear(&err);
        CHECK(lm_gpu_adjoint(&g, tr, kd, s_dev, f_dev, variant, x_dev, NULL, &err) == LM_ERR_INVALID);
        tr->t = keep;
    }
    lm_gpu_mem_free(f_dev);
    lm_gpu_mem_free(s_dev);
    lm_gpu_mem_free(x_dev);
    free(x);
    free(xr);
    free(xi);
    free(fr);
    free(fi);
    free(kx);
    free(wr);
    free(wi);
    free(sens);
    free(f);
    lm_traj_free(tr);
    lm_kdata_free(kd);
}

int main(void)
{
    gpu_require();
    gu_seed(20261124);
    for (size_t i = 0; i < NCASES; i++)
        test_ksum(&cases[i]);
    test_adjoint("gpu-tuned", 1, 0, 3);
    test_adjoint("gpu-tuned", 5, 1, 3); /* the multi-channel kernel: 4 + 1 per pass */
    test_adjoint("gpu-tuned", 3, 1, 2);
    test_adjoint("gpu-phasor", 2, 1, 3);
    test_adjoint("gpu-base", 2, 0, 2);
    test_adjoint("gpu-nufft", 1, 0, 3);
    return lm_test_finish("gpu-time");
}
