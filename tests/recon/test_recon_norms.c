/* The L-curve's numbers in lm_recon_result (resid_norm = ||E rho - d||,
 * prior_norm = ||W rho|| or f(G rho)) against a direct double-precision
 * computation on the image the run returned (1e-5 relative): SENSE with
 * four coils and an exact field map (identity prior), one coil with the
 * gradient prior, one coil with TV; NaN where there is no such number
 * (root-sum-of-squares, gridding). The data carry noise of about a third
 * of their RMS, so the residual is not a small difference of large
 * numbers. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fm_common.h"
#include "lm_recon.h"
#include "lm_test.h"

#define N 16
#define COILS 4

static double resid_direct(const lm_geom *g, const lm_traj *t, const float *f, const lm_sens *s, int64_t nc,
                           const lm_volume *img, const lm_kdata *k)
{
    const int64_t nv = lm_geom_voxels(g);
    double complex *x = malloc((size_t)nv * sizeof *x), *ex = malloc((size_t)(t->m * nc) * sizeof *ex);
    for (int64_t v = 0; v < nv; v++)
        x[v] = img->data[v];
    fm_forward(g, t, f, s ? s->s : NULL, nc, x, ex);
    double r2 = 0;
    for (int64_t i = 0; i < t->m * nc; i++) {
        const double complex e = ex[i] - (double complex)k->d[i];
        r2 += creal(e * conj(e));
    }
    free(x), free(ex);
    return sqrt(r2);
}

/* Forward differences along x and y, 0 at the last voxel of an axis
 * (lm_reg.h); tv: sum of the per-voxel 2-norms, else sqrt(sum of squares). */
static double grad_direct(const lm_volume *img, int tv)
{
    double sum = 0;
    for (int64_t j = 0; j < N; j++)
        for (int64_t i = 0; i < N; i++) {
            const lm_cfloat x = img->data[i + N * j];
            const double complex dx = i + 1 < N ? (double complex)img->data[i + 1 + N * j] - x : 0;
            const double complex dy = j + 1 < N ? (double complex)img->data[i + N * (j + 1)] - x : 0;
            const double q = creal(dx * conj(dx)) + creal(dy * conj(dy));
            sum += tv ? sqrt(q) : q;
        }
    return tv ? sum : sqrt(sum);
}

static double norm_direct(const lm_volume *img)
{
    double s = 0;
    for (int64_t v = 0; v < N * N; v++)
        s += (double)crealf(img->data[v]) * crealf(img->data[v]) + (double)cimagf(img->data[v]) * cimagf(img->data[v]);
    return sqrt(s);
}

static void check_rel(const char *what, double got, double want)
{
    const double rel = fabs(got - want) / want;
    printf("%-28s library %.9g  direct %.9g  relative %.2e\n", what, got, want, rel);
    CHECK_MSG(isfinite(got) && want > 0 && rel < 1e-5, "%s: %.9g against %.9g (%.2e)", what, got, want, rel);
}

/* d = E rho + noise of about a third of E rho's RMS. */
static lm_kdata *make_data(const lm_geom *g, const lm_traj *t, const float *f, const lm_sens *s, int64_t nc)
{
    const int64_t nv = lm_geom_voxels(g);
    double complex *rho = malloc((size_t)nv * sizeof *rho), *d = malloc((size_t)(t->m * nc) * sizeof *d);
    for (int64_t v = 0; v < nv; v++) {
        const double x = lm_voxel_pos(v % N, N), y = lm_voxel_pos(v / N, N);
        rho[v] = (x * x / 0.16 + y * y / 0.2 < 1 ? 1.0 : 0.0) + (x > 0.1 && y > 0 ? 0.5 : 0.0);
    }
    fm_forward(g, t, f, s ? s->s : NULL, nc, rho, d);
    double e = 0;
    for (int64_t i = 0; i < t->m * nc; i++)
        e += creal(d[i] * conj(d[i]));
    const double sigma = 0.33 * sqrt(e / (double)(t->m * nc)) * sqrt(3.0);
    lm_kdata *k = lm_kdata_new(t->m, nc, NULL);
    for (int64_t i = 0; i < t->m * nc; i++)
        k->d[i] = (lm_cfloat)(d[i] + sigma * CMPLX(2 * fm_uniform() - 1, 2 * fm_uniform() - 1));
    free(rho), free(d);
    return k;
}

int main(void)
{
    lm_error err = {0};
    lm_geom g;
    lm_geom_init(&g, N, N, 1, 240);
    const int64_t nv = lm_geom_voxels(&g);
    lm_traj *t = fm_spiral(N);
    float *f = fm_fieldmap(&g), *zero = calloc((size_t)nv, sizeof *zero);
    lm_sens *s = lm_sens_new(g.n, COILS, &err);
    for (int64_t c = 0; c < COILS; c++)
        for (int64_t v = 0; v < nv; v++) {
            const double x = lm_voxel_pos(v % N, N), y = lm_voxel_pos(v / N, N);
            const double cx = 0.5 * cos(2 * M_PI * c / COILS), cy = 0.5 * sin(2 * M_PI * c / COILS);
            const double w = exp(-((x - cx) * (x - cx) + (y - cy) * (y - cy)) / 0.5);
            s->s[c * nv + v] = (lm_cfloat)(w * cexp(I * (M_PI * c / COILS + x)));
        }

    lm_recon_opts o;
    lm_recon_opts_init(&o);
    o.lcurve_norms = 1;
    o.iters = 15;
    o.use_cache = 0;
    o.threads = 2;
    o.lambda = 0.05;

    /* SENSE, four coils, the exact field map (a direct variant). */
    lm_kdata *k4 = make_data(&g, t, f, s, COILS);
    o.variant = "cpu-dp";
    o.sens = s;
    o.combine = LM_COMBINE_SENSE;
    o.fieldmap = f;
    o.segments = 0;
    lm_recon_result r = {0};
    lm_code rc = lm_recon_run(&g, t, k4, &o, &r, &err);
    if (rc == LM_ERR_UNSUPPORTED)
        printf("exact field map not run here: %s\n", err.msg);
    else {
        CHECK_OK(rc, &err);
        if (r.image) {
            check_rel("SENSE 4 + field map: resid", r.resid_norm, resid_direct(&g, t, f, s, COILS, r.image, k4));
            check_rel("SENSE 4 + field map: prior", r.prior_norm, norm_direct(r.image));
        }
    }
    lm_recon_result_clear(&r);

    /* Root-sum-of-squares: no single image solves E. */
    o.variant = "cpu-nufft";
    o.sens = NULL;
    o.fieldmap = NULL;
    o.combine = LM_COMBINE_RSS;
    CHECK_OK(lm_recon_run(&g, t, k4, &o, &r, &err), &err);
    CHECK(isnan(r.resid_norm) && isnan(r.prior_norm));
    lm_recon_result_clear(&r);

    /* One coil, no field map (the NUFFT), gradient and TV. */
    lm_kdata *k1 = make_data(&g, t, zero, NULL, 1);
    o.combine = LM_COMBINE_AUTO;
    o.reg = LM_REG_GRADIENT;
    CHECK_OK(lm_recon_run(&g, t, k1, &o, &r, &err), &err);
    if (r.image) {
        check_rel("1 coil gradient: resid", r.resid_norm, resid_direct(&g, t, zero, NULL, 1, r.image, k1));
        check_rel("1 coil gradient: prior", r.prior_norm, grad_direct(r.image, 0));
    }
    lm_recon_result_clear(&r);
    o.reg = LM_REG_TV;
    o.lambda = 0.01;
    CHECK_OK(lm_recon_run(&g, t, k1, &o, &r, &err), &err);
    if (r.image) {
        check_rel("1 coil tv: resid", r.resid_norm, resid_direct(&g, t, zero, NULL, 1, r.image, k1));
        check_rel("1 coil tv: prior", r.prior_norm, grad_direct(r.image, 1));
    }
    lm_recon_result_clear(&r);

    /* Gridding: no objective. */
    o.method = LM_METHOD_GRID_KB;
    CHECK_OK(lm_recon_run(&g, t, k1, &o, &r, &err), &err);
    CHECK(isnan(r.resid_norm) && isnan(r.prior_norm));
    lm_recon_result_clear(&r);

    lm_kdata_free(k4), lm_kdata_free(k1);
    lm_sens_free(s);
    free(f), free(zero);
    lm_traj_free(t);
    return lm_test_finish("recon_norms");
}
