/* The forward NUFFT (type 2) on the GPU, the encoding's E x with
 * gpu-nufft (lm_gpu_forward): against a double-precision direct sum on 256
 * samples, against the CPU plan's E x, and adjoint to the GPU E^H:
 * <E x, y> = <x, E^H y>. 3D (32^3, 4 coils), 2D (64^2, 2 coils), and 2D
 * time-segmented (a field map, each segment one forward NUFFT). Tolerances
 * 1e-4 relative (the NUFFTs are ~1e-5; measured values printed). The time
 * of one E x on B128 is printed, not asserted. */
#include <complex.h>
#include <string.h>
#include <time.h>

#include "gpu_util.h"
#include "lm_encoding.h"
#include "lm_metrics.h"
#include "lm_spiral.h"
#include "lm_trajgen.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}


/* (1/N) phi(k) sum_n s_c x e^(-i 2 pi k . x_n) for sample j, coil c (double). */
static double complex direct(const lm_geom *g, const lm_traj *t, const lm_sens *s, const lm_cfloat *x, int64_t j,
                             int c)
{
    const int64_t nv = lm_geom_voxels(g);
    const double kx = t->k[3 * j], ky = t->k[3 * j + 1], kz = t->k[3 * j + 2];
    double complex acc = 0;
    for (int64_t v = 0; v < nv; v++) {
        const int64_t i0 = v % g->n[0], i1 = (v / g->n[0]) % g->n[1], i2 = v / (g->n[0] * g->n[1]);
        const double ph = kx * lm_voxel_pos(i0, g->n[0]) + ky * lm_voxel_pos(i1, g->n[1]) +
                          (g->n[2] > 1 ? kz * lm_voxel_pos(i2, g->n[2]) : 0.0);
        const double complex sv = s ? (double complex)s->s[c * nv + v] : 1.0;
        acc += sv * (double complex)x[v] * cexp(-2.0 * I * M_PI * ph);
    }
    return acc * lm_geom_phi(g, kx, ky, kz) / (double)nv;
}

static void check_case(const char *name, const lm_geom *g, const lm_traj *t, const lm_sens *s, const float *fm)
{
    lm_error err = {0};
    const int64_t nv = lm_geom_voxels(g), m = t->m, nc = s ? s->ncoils : 1;
    lm_encoding_desc dg = {.geom = g, .traj = t, .sens = s, .variant = "gpu-nufft", .fieldmap = fm,
                           .segments = fm ? LM_SEGMENTS_AUTO : 0};
    lm_encoding_desc dc = dg;
    dc.variant = "cpu-nufft";
    lm_encoding *eg = NULL, *ec = NULL;
    CHECK_OK(lm_encoding_new(&dg, &eg, &err), &err);
    CHECK_OK(lm_encoding_new(&dc, &ec, &err), &err);
    if (!eg || !ec)
        return;
    lm_backend *be = lm_encoding_backend(eg);
    CHECK(be->device == LM_DEVICE_GPU);
    lm_cfloat *x = malloc((size_t)nv * sizeof *x), *z = malloc((size_t)nv * sizeof *z);
    for (int64_t v = 0; v < nv; v++)
        x[v] = (float)(gu_uniform() - 0.5) + I * (float)(gu_uniform() - 0.5);
    lm_kdata *dgk = lm_kdata_new(m, nc, NULL), *dck = lm_kdata_new(m, nc, NULL), *y = lm_kdata_new(m, nc, NULL);
    for (int64_t q = 0; q < m * nc; q++)
        y->d[q] = (float)(gu_uniform() - 0.5) + I * (float)(gu_uniform() - 0.5);
    lm_cfloat *xd = be->alloc(be, nv, "x"), *zd = be->alloc(be, nv, "E^H y");
    be->upload(be, xd, x, (size_t)nv * sizeof *x);
    CHECK_OK(lm_encoding_forward(eg, xd, dgk, &err), &err);
    CHECK_OK(lm_encoding_forward(ec, x, dck, &err), &err);
    const double ec_rel = lm_rel_error_c(dgk->d, dck->d, m * nc);
    /* adjointness with the GPU adjoint: <E x, y> against <x, E^H y> */
    CHECK_OK(lm_encoding_adjoint(eg, y, zd, NULL, &err), &err);
    be->download(be, z, zd, (size_t)nv * sizeof *z);
    CHECK_OK(be->check(be, &err), &err);
    double complex lhs = 0, rhs = 0;
    for (int64_t q = 0; q < m * nc; q++)
        lhs += (double complex)dgk->d[q] * conj((double complex)y->d[q]);
    for (int64_t v = 0; v < nv; v++)
        rhs += (double complex)x[v] * conj((double complex)z[v]);
    const double adj = cabs(lhs - rhs) / cabs(lhs);
    double dnum = 0, dden = 0;
    if (!fm) /* the direct sum on every 16th sample (no field map) */
        for (int64_t j = 0; j < m; j += m / 256 > 0 ? m / 256 : 1)
            for (int c = 0; c < nc; c++) {
                const double complex r = direct(g, t, s, x, j, c);
                dnum += pow(cabs((double complex)dgk->d[c * m + j] - r), 2);
                dden += pow(cabs(r), 2);
            }
    const double dir = dden > 0 ? sqrt(dnum / dden) : 0;
    printf("%s: E x gpu against cpu %.2e, against the direct sum %.2e; <Ex,y> - <x,E^H y> %.2e\n", name, ec_rel,
           dir, adj);
    CHECK_MSG(ec_rel < 1e-4, "%s: gpu E x differs from the CPU plan's by %.3g", name, ec_rel);
    CHECK_MSG(dir < 1e-4, "%s: gpu E x differs from the direct sum by %.3g", name, dir);
    CHECK_MSG(adj < 1e-4, "%s: adjointness %.3g", name, adj);
    be->release(be, xd);
    be->release(be, zd);
    lm_kdata_free(dgk);
    lm_kdata_free(dck);
    lm_kdata_free(y);
    free(x);
    free(z);
    lm_encoding_free(eg);
    lm_encoding_free(ec);
}

int main(void)
{
    lm_error err = {0};
    if (lm_gpu_available(&err) != LM_OK)
        LM_TEST_SKIP("%s", err.msg);
    gu_seed(11);
    {
        lm_geom g;
        lm_geom_init(&g, 32, 32, 32, 240);
        lm_traj *t = lm_traj_new(6000, 3, NULL);
        for (int64_t j = 0; j < 3 * t->m; j++)
            t->k[j] = (float)((gu_uniform() - 0.5) * 32);
        lm_sens *s = gu_maps(&g, 4);
        check_case("3D 32^3, 4 coils", &g, t, s, NULL);
        lm_sens_free(s);
        lm_traj_free(t);
    }
    {
        lm_geom g;
        lm_geom_init(&g, 64, 64, 1, 240);
        lm_traj *t = lm_traj_new(4096, 3, NULL);
        for (int64_t j = 0; j < t->m; j++) {
            t->k[3 * j] = (float)((gu_uniform() - 0.5) * 64);
            t->k[3 * j + 1] = (float)((gu_uniform() - 0.5) * 64);
            t->k[3 * j + 2] = 0;
        }
        lm_sens *s = gu_maps(&g, 2);
        check_case("2D 64^2, 2 coils", &g, t, s, NULL);
        /* time-segmented: 8 readouts of 512 samples over 20 ms, a ramp of
         * -40..120 Hz across x */
        t->readout = 512;
        CHECK_OK(lm_traj_times_uniform(t, 20e-3, &err), &err);
        float *fm = malloc(64 * 64 * sizeof *fm);
        for (int v = 0; v < 64 * 64; v++)
            fm[v] = (float)(-40.0 + 160.0 * (v % 64) / 63.0);
        if (t->t)
            check_case("2D 64^2, 2 coils, field map, segmented", &g, t, s, fm);
        free(fm);
        lm_sens_free(s);
        lm_traj_free(t);
    }
    { /* one E x on B128, printed */
        const lm_problem_def *def = lm_problem_find("B128", &err);
        lm_geom g;
        lm_traj *t = NULL;
        CHECK_OK(lm_problem_make(def, &g, &t, NULL, NULL, &err), &err);
        lm_encoding_desc dg = {.geom = &g, .traj = t, .variant = "gpu-nufft"};
        lm_encoding *eg = NULL;
        CHECK_OK(lm_encoding_new(&dg, &eg, &err), &err);
        if (eg && t) {
            lm_backend *be = lm_encoding_backend(eg);
            const int64_t nv = lm_geom_voxels(&g);
            lm_cfloat *xd = be->alloc(be, nv, "x");
            be->zero(be, nv, xd);
            lm_kdata *d = lm_kdata_new(t->m, 1, NULL);
            double best = 1e9;
            for (int r = 0; r < 5; r++) {
                const double t0 = now_s();
                CHECK_OK(lm_encoding_forward(eg, xd, d, &err), &err);
                best = fmin(best, now_s() - t0);
            }
            printf("B128 E x (gpu-nufft, whole call with uploads and download): %.2f ms (best of 5)\n", 1e3 * best);
            be->release(be, xd);
            lm_kdata_free(d);
        }
        lm_encoding_free(eg);
        lm_traj_free(t);
    }
    return lm_test_finish("gpu-forward");
}
