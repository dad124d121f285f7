/* Reconstruction with a field map (lm_recon.h) of a small 2D phantom on the
 * spiral of fm_common.h. Data: the exact forward model (double brute force,
 * field term included) of the phantom on a 2x finer grid (64x64, its own
 * voxel basis and field map samples), so not an inverse crime; truth: the
 * 2x2 averages on the 32x32 matrix. CG with the field map (auto segments)
 * must beat CG without it clearly; gridding ignores the map (the
 * uncorrected baseline) and gives the same image with or without it. */
#include <complex.h>
#include <stdio.h>
#include <string.h>

#include "fm_common.h"
#include "lm_encoding.h"
#include "lm_recon.h"
#include "lm_test.h"

/* disks and an ellipse, intensity in [0, 1] */
static double phantom(double x, double y)
{
    double v = 0;
    if ((x / 0.40) * (x / 0.40) + (y / 0.45) * (y / 0.45) < 1)
        v += 0.6;
    if ((x - 0.12) * (x - 0.12) + (y + 0.08) * (y + 0.08) < 0.12 * 0.12)
        v += 0.4;
    if ((x + 0.18) * (x + 0.18) + (y - 0.15) * (y - 0.15) < 0.07 * 0.07)
        v -= 0.3;
    return v;
}

static double percent_error(const lm_cfloat *img, const double *truth, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t j = 0; j < n; j++) {
        const double complex e = (double complex)img[j] - truth[j];
        num += creal(e * conj(e));
        den += truth[j] * truth[j];
    }
    return 100 * sqrt(num / den);
}

int main(void)
{
    lm_error err = {0};
    lm_geom g, gf;
    lm_geom_init(&g, 32, 32, 1, 240);
    lm_geom_init(&gf, 64, 64, 1, 240);
    const int64_t nv = lm_geom_voxels(&g), nf = lm_geom_voxels(&gf);
    lm_traj *t = fm_spiral(32);
    float *f = fm_fieldmap(&g), *ff = fm_fieldmap(&gf);
    double complex *rho = malloc((size_t)nf * sizeof *rho), *d = malloc((size_t)t->m * sizeof *d);
    double *truth = calloc((size_t)nv, sizeof *truth);
    for (int64_t v = 0; v < nf; v++) {
        const int64_t i = v % 64, j = v / 64;
        rho[v] = phantom(lm_voxel_pos(i, 64), lm_voxel_pos(j, 64));
        truth[(i / 2) + 32 * (j / 2)] += creal(rho[v]) / 4;
    }
    fm_forward(&gf, t, ff, NULL, 1, rho, d);
    lm_kdata *k = lm_kdata_new(t->m, 1, &err);
    for (int64_t j = 0; j < t->m; j++)
        k->d[j] = (lm_cfloat)d[j];

    lm_recon_opts o;
    lm_recon_opts_init(&o);
    o.variant = "cpu-nufft";
    o.iters = 30;
    o.use_cache = 0;
    o.threads = 2;
    lm_recon_result plain = {0}, corr = {0}, grid0 = {0}, grid1 = {0};
    CHECK_OK(lm_recon_run(&g, t, k, &o, &plain, &err), &err);
    o.fieldmap = f;
    CHECK_OK(lm_recon_run(&g, t, k, &o, &corr, &err), &err);
    if (plain.image && corr.image) {
        const double ep = percent_error(plain.image->data, truth, nv), ec = percent_error(corr.image->data, truth, nv);
        printf("CG without the field map %.2f %%, with it %.2f %% (L = %d, interpolation error %.2e)\n", ep, ec,
               corr.segments, corr.segment_error);
        CHECK(corr.segments > 1 && corr.segment_error < LM_SEGMENTS_TOL);
        CHECK(plain.segments == 0);
        CHECK_MSG(ec < 0.5 * ep, "corrected %.2f %% vs uncorrected %.2f %%", ec, ep);
    }
    /* exact, when the direct kernels have the time term */
    o.segments = 0;
    lm_recon_result ex = {0};
    lm_code rc = lm_recon_run(&g, t, k, &o, &ex, &err);
    if (rc == LM_OK && corr.image) {
        const double ee = percent_error(ex.image->data, truth, nv), ec = percent_error(corr.image->data, truth, nv);
        printf("CG exact %.2f %% (%s)\n", ee, ex.note);
        CHECK(fabs(ee - ec) < 0.5);
        CHECK(strstr(ex.note, "exact off-resonance sums by"));
    } else {
        printf("exact not run: %s\n", err.msg);
        CHECK(rc == LM_ERR_UNSUPPORTED);
    }
    lm_recon_result_clear(&ex);
    /* gridding ignores the field map */
    o.segments = LM_SEGMENTS_AUTO;
    o.method = LM_METHOD_GRID_KB;
    CHECK_OK(lm_recon_run(&g, t, k, &o, &grid1, &err), &err);
    o.fieldmap = NULL;
    CHECK_OK(lm_recon_run(&g, t, k, &o, &grid0, &err), &err);
    if (grid0.image && grid1.image)
        CHECK(memcmp(grid0.image->data, grid1.image->data, (size_t)nv * sizeof(lm_cfloat)) == 0);
    /* a field map without sample times is refused */
    float *times = t->t;
    t->t = NULL;
    o.method = LM_METHOD_CG;
    o.fieldmap = f;
    lm_recon_result bad = {0};
    CHECK(lm_recon_run(&g, t, k, &o, &bad, &err) == LM_ERR_INVALID && strstr(err.msg, "sample times"));
    t->t = times;

    lm_recon_result_clear(&plain), lm_recon_result_clear(&corr);
    lm_recon_result_clear(&grid0), lm_recon_result_clear(&grid1);
    lm_kdata_free(k);
    free(rho), free(d), free(truth), free(f), free(ff);
    lm_traj_free(t);
    return lm_test_finish("fieldmap_recon");
}
