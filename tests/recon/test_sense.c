/* The multi-coil encoding operator (recon/lm_encoding.h) and SENSE CG:
 *  - adjointness <E x, y> = <x, E^H y> with 6 coils (E by the CPU NUFFT at
 *    1e-6, E^H by the double-precision direct sum), 2D and 3D;
 *  - the Toeplitz normal operator against E^H (E x) within 1e-4;
 *  - on a 4x undersampled 2D radial 8-coil problem, SENSE CG beats the
 *    CG of every single coil and their root-sum-of-squares (scale-matched
 *    errors against the truth);
 *  - wrong maps (size, count, NaN, zero) are refused with one line. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lm_encoding.h"
#include "lm_metrics.h"
#include "lm_phantom.h"
#include "lm_recon.h"
#include "lm_test.h"
#include "lm_trajgen.h"
#include "solver_common.h"

/* Smooth maps: a Gaussian falloff from a point on a ring around the FOV
 * centre, times a slow phase ramp that differs per coil. */
static lm_sens *ring_maps(const lm_geom *g, int nc)
{
    lm_sens *s = lm_sens_new(g->n, nc, NULL);
    const int64_t nv = lm_geom_voxels(g);
    for (int c = 0; c < nc; c++) {
        const double ang = 2 * M_PI * c / nc, px = 0.55 * cos(ang), py = 0.55 * sin(ang);
        const double pz = g->n[2] > 1 ? 0.3 * ((c % 2) ? 1 : -1) : 0;
        for (int64_t k = 0; k < g->n[2]; k++)
            for (int64_t j = 0; j < g->n[1]; j++)
                for (int64_t i = 0; i < g->n[0]; i++) {
                    const double x = lm_voxel_pos(i, g->n[0]), y = lm_voxel_pos(j, g->n[1]),
                                 z = g->n[2] > 1 ? lm_voxel_pos(k, g->n[2]) : 0;
                    const double r2 = (x - px) * (x - px) + (y - py) * (y - py) + (z - pz) * (z - pz);
                    const double ph = 1.5 * (cos(ang) * y - sin(ang) * x) + 0.4 * c;
                    s->s[c * nv + i + g->n[0] * (j + g->n[1] * k)] =
                        (lm_cfloat)(exp(-r2 / (2 * 0.35 * 0.35)) * cexp(I * ph));
                }
    }
    return s;
}

static double complex cdot(const lm_cfloat *a, const lm_cfloat *b, int64_t n) /* <a, b> = sum conj(a) b */
{
    double complex s = 0;
    for (int64_t j = 0; j < n; j++)
        s += conj((double complex)a[j]) * (double complex)b[j];
    return s;
}

static void test_adjoint_and_normal(int64_t n0, int64_t n1, int64_t n2, int64_t m)
{
    lm_geom g;
    lm_geom_init(&g, n0, n1, n2, 240);
    lm_traj *t = tst_random_traj(&g, m);
    const int nc = 6;
    lm_sens *s = ring_maps(&g, nc);
    const int64_t nv = lm_geom_voxels(&g);
    lm_error err = {0};
    lm_encoding *e = NULL;
    lm_encoding_desc d = {.geom = &g, .traj = t, .sens = s, .variant = "cpu-dp", .use_cache = 0};
    CHECK_OK(lm_encoding_new(&d, &e, &err), &err);
    if (!e)
        return;
    CHECK(lm_encoding_coils(e) == nc);
    lm_cfloat *x = malloc((size_t)nv * sizeof *x), *y = malloc((size_t)nv * sizeof *y);
    lm_cfloat *z = malloc((size_t)nv * sizeof *z);
    lm_kdata *ex = lm_kdata_new(m, nc, NULL), *dy = lm_kdata_new(m, nc, NULL);
    for (int64_t j = 0; j < nv; j++)
        x[j] = (float)(tst_uniform() - 0.5) + I * (float)(tst_uniform() - 0.5);
    for (int64_t j = 0; j < m * nc; j++)
        dy->d[j] = (float)(tst_uniform() - 0.5) + I * (float)(tst_uniform() - 0.5);

    CHECK_OK(lm_encoding_forward(e, x, ex, &err), &err);
    CHECK_OK(lm_encoding_adjoint(e, dy, y, NULL, &err), &err);
    const double complex lhs = cdot(ex->d, dy->d, m * nc), rhs = cdot(x, y, nv);
    const double adj = cabs(lhs - rhs) / cabs(lhs);
    printf("%lldx%lldx%lld, %d coils: |<Ex,y> - <x,E^H y>| / |<Ex,y>| = %.2e\n", (long long)n0, (long long)n1,
           (long long)n2, nc, adj);
    CHECK_MSG(adj < 1e-5, "adjointness %.3g", adj);

    /* normal operator: Toeplitz against E^H (E x) */
    CHECK_OK(lm_encoding_normal(e, x, y, &err), &err);
    CHECK_OK(lm_encoding_adjoint(e, ex, z, NULL, &err), &err);
    const double nerr = lm_rel_error_c(y, z, nv);
    printf("  Toeplitz E^H E x against E^H (E x): %.2e\n", nerr);
    CHECK_MSG(nerr < 1e-4, "normal operator %.3g", nerr);
    CHECK(lm_encoding_diag(e) > 0);

    free(x), free(y), free(z);
    lm_kdata_free(ex), lm_kdata_free(dy);
    lm_encoding_free(e);
    lm_sens_free(s);
    lm_traj_free(t);
}

static double scaled_error(const lm_cfloat *img, const lm_volume *truth, int magnitude)
{
    const int64_t nv = lm_volume_count(truth);
    lm_cfloat *a = malloc((size_t)nv * sizeof *a);
    for (int64_t j = 0; j < nv; j++)
        a[j] = magnitude ? cabsf(img[j]) : img[j];
    lm_metrics m;
    lm_error err = {0};
    lm_metrics_compute(a, truth->data, nv, NULL, 1, &m, &err);
    free(a);
    return m.percent_error;
}

static void test_sense_beats_single_coils(void)
{
    lm_geom g;
    lm_geom_init(&g, 64, 64, 1, 240);
    lm_error err = {0};
    /* 25 of the 101 spokes Nyquist asks for: 4x undersampled */
    const int64_t n[3] = {64, 64, 1};
    lm_traj *t = NULL;
    CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL2D, n, 25 * 64, 64, &t, &err), &err);
    lm_volume *truth = NULL;
    CHECK_OK(lm_phantom_truth(lm_phantom_shepp_logan_2d(), &g, 4, &truth, &err), &err);
    const int nc = 8;
    lm_sens *s = ring_maps(&g, nc);
    lm_encoding *e = NULL;
    lm_encoding_desc d = {.geom = &g, .traj = t, .sens = s, .variant = "cpu-nufft", .use_cache = 0};
    CHECK_OK(lm_encoding_new(&d, &e, &err), &err);
    lm_kdata *k = lm_kdata_new(t->m, nc, NULL);
    CHECK_OK(lm_encoding_forward(e, truth->data, k, &err), &err);
    CHECK_OK(lm_noise_add(k, 0.01, 1, &err), &err);
    lm_encoding_free(e);

    lm_recon_opts o;
    lm_recon_opts_init(&o);
    o.variant = "cpu-nufft";
    o.use_cache = 0;
    o.iters = 30;
    o.lambda = 0.001;
    o.sens = s;
    o.keep_coil_images = 1;
    lm_recon_result rs = {0}, rr = {0};
    CHECK_OK(lm_recon_run(&g, t, k, &o, &rs, &err), &err);
    CHECK(rs.combine == LM_COMBINE_SENSE && rs.coils == nc && rs.sens_source == LM_SENS_GIVEN);
    /* coil images under SENSE: s_c rho */
    CHECK(rs.coil_images && rs.coil_images->ncoils == nc);
    if (rs.coil_images && rs.image) {
        const int64_t nv = lm_geom_voxels(&g);
        lm_cfloat want = s->s[3 * nv + 2080] * rs.image->data[2080];
        CHECK(cabsf(rs.coil_images->s[3 * nv + 2080] - want) <= 1e-6f * (cabsf(want) + 1e-6f));
    }
    o.combine = LM_COMBINE_RSS; /* maps given but not wanted */
    CHECK_OK(lm_recon_run(&g, t, k, &o, &rr, &err), &err);
    o.sens = NULL;
    CHECK(rr.combine == LM_COMBINE_RSS && rr.sens_source == LM_SENS_NONE);
    /* rss of the per-channel images is the image */
    if (rr.coil_images && rr.image) {
        const int64_t nv = lm_geom_voxels(&g);
        double a = 0;
        for (int c = 0; c < nc; c++)
            a += cabsf(rr.coil_images->s[c * nv + 2080]) * cabsf(rr.coil_images->s[c * nv + 2080]);
        CHECK_NEAR(sqrt(a), crealf(rr.image->data[2080]), 1e-5 * sqrt(a) + 1e-9);
    }
    CHECK(rr.coil_images != NULL);
    o.keep_coil_images = 0;
    if (!rs.image || !rr.image)
        return;
    const double es = scaled_error(rs.image->data, truth, 0), er = scaled_error(rr.image->data, truth, 1);
    printf("64x64, 8 coils, 4x undersampled radial: SENSE %.2f %%, rss %.2f %%\n", es, er);
    CHECK_MSG(es < er, "SENSE %.2f %% is not below rss %.2f %%", es, er);
    /* each coil on its own */
    o.combine = LM_COMBINE_AUTO;
    double best_single = 1e9;
    for (int c = 0; c < nc; c++) {
        lm_kdata one = {.m = k->m, .ncoils = 1, .d = k->d + c * k->m};
        lm_recon_result r1 = {0};
        CHECK_OK(lm_recon_run(&g, t, &one, &o, &r1, &err), &err);
        if (r1.image) {
            double e1 = scaled_error(r1.image->data, truth, 1);
            best_single = e1 < best_single ? e1 : best_single;
        }
        lm_recon_result_clear(&r1);
    }
    printf("  best single coil %.2f %%\n", best_single);
    CHECK_MSG(es < best_single, "SENSE %.2f %% is not below the best single coil %.2f %%", es, best_single);
    /* measured 17.0 % against 35.2 % */
    CHECK_MSG(es < 0.6 * er, "SENSE %.2f %% against rss %.2f %%", es, er);

    /* bad maps */
    lm_recon_result bad = {0};
    o.combine = LM_COMBINE_SENSE;
    lm_sens *s7 = lm_sens_new(g.n, nc - 1, NULL);
    o.sens = s7;
    lm_error_clear(&err);
    CHECK(lm_recon_run(&g, t, k, &o, &bad, &err) == LM_ERR_INVALID && strstr(err.msg, "channels"));
    printf("  7 maps for 8 channels: %s\n", err.msg);
    int64_t n2[3] = {32, 64, 1};
    lm_sens *sw = lm_sens_new(n2, nc, NULL);
    o.sens = sw;
    lm_error_clear(&err);
    CHECK(lm_recon_run(&g, t, k, &o, &bad, &err) == LM_ERR_INVALID && strstr(err.msg, "matrix"));
    printf("  maps of another size: %s\n", err.msg);
    lm_sens *sz = lm_sens_new(g.n, nc, NULL); /* all zero */
    o.sens = sz;
    lm_error_clear(&err);
    CHECK(lm_recon_run(&g, t, k, &o, &bad, &err) != LM_OK && strstr(err.msg, "zero"));
    printf("  zero maps: %s\n", err.msg);
    sz->s[5] = NAN;
    lm_error_clear(&err);
    CHECK(lm_recon_run(&g, t, k, &o, &bad, &err) != LM_OK && strstr(err.msg, "finite"));
    printf("  NaN in maps: %s\n", err.msg);
    o.sens = NULL;
    o.combine = LM_COMBINE_RSS;
    o.estimate_sens = 1;
    lm_error_clear(&err);
    CHECK(lm_recon_run(&g, t, k, &o, &bad, &err) == LM_ERR_INVALID && strstr(err.msg, "exclude"));
    printf("  estimate and rss: %s\n", err.msg);
    o.combine = LM_COMBINE_SENSE;
    o.estimate_sens = 0;
    o.compress_coils = 9;
    lm_error_clear(&err);
    CHECK(lm_recon_run(&g, t, k, &o, &bad, &err) == LM_ERR_INVALID && strstr(err.msg, "compress"));
    printf("  9 of 8 coils: %s\n", err.msg);
    o.compress_coils = 0;
    lm_sens_free(s7), lm_sens_free(sw), lm_sens_free(sz);

    /* No maps: SENSE with maps estimated from the data (the default) beats
     * rss too, and reports where its maps came from. Estimated maps are
     * normalised over coils (sum |s_c|^2 = 1), so the image carries the true
     * maps' root-sum-of-squares and a smooth phase, as rss's does: both are
     * compared in magnitude. */
    o.combine = LM_COMBINE_AUTO;
    o.sens = NULL;
    lm_recon_result re = {0};
    CHECK_OK(lm_recon_run(&g, t, k, &o, &re, &err), &err);
    CHECK(re.combine == LM_COMBINE_SENSE && re.sens_source == LM_SENS_ESTIMATED && re.sens);
    if (re.image) {
        const double ee = scaled_error(re.image->data, truth, 1);
        printf("  estimated maps: SENSE %.2f %% (%s)\n", ee, re.note);
        /* measured 22.6 % against 35.2 % */
        CHECK_MSG(ee < 0.75 * er, "SENSE with estimated maps %.2f %% against rss %.2f %%", ee, er);
    }
    lm_recon_result_clear(&re);
    /* compressed to 4 virtual coils: still SENSE, maps compressed alike */
    o.sens = s;
    o.compress_coils = 4;
    CHECK_OK(lm_recon_run(&g, t, k, &o, &re, &err), &err);
    CHECK(re.coils == 4 && re.coils_in == nc && re.energy_kept > 0.9 && re.energy_kept <= 1 && re.sens);
    if (re.image) {
        const double ec = scaled_error(re.image->data, truth, 0);
        printf("  compressed to 4 coils (%.4f of the energy): SENSE %.2f %%\n", re.energy_kept, ec);
        CHECK_MSG(ec < 0.6 * er, "compressed SENSE %.2f %%", ec);
    }
    lm_recon_result_clear(&re);
    o.compress_coils = 0;

    lm_recon_result_clear(&rs);
    lm_recon_result_clear(&rr);
    lm_kdata_free(k);
    lm_sens_free(s);
    lm_volume_free(truth);
    lm_traj_free(t);
}

int main(void)
{
    test_adjoint_and_normal(16, 12, 1, 700);
    test_adjoint_and_normal(12, 10, 8, 1500);
    test_sense_beats_single_coils();
    return lm_test_finish("sense");
}
