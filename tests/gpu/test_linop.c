/* Composed operators on a GPU back end (lm_linop.h, lm_encoding_op): E
 * built from F (the device NUFFT, or a direct variant's sums), coil maps
 * and, with a field map, segment phases and interpolators, against the
 * fused encoding on the same device and against the CPU's composed E.
 * k-space stays on the device: E x and E^H y take and give device
 * vectors. Tolerances 1e-4 relative (two NUFFTs of ~1e-6 each, and a
 * direct sum against the NUFFT); measured values printed. */
#include <complex.h>
#include <string.h>

#include "gpu_util.h"
#include "lm_encoding.h"
#include "lm_linop.h"
#include "lm_metrics.h"
#include "lm_spiral.h"
#include "lm_trajgen.h"

static void check_case(const char *name, const char *variant, const lm_geom *g, const lm_traj *t, const lm_sens *s,
                       const float *fm)
{
    lm_error err = {0};
    const int64_t nv = lm_geom_voxels(g), m = t->m, nc = s ? s->ncoils : 1;
    lm_encoding_desc dg = {.geom = g, .traj = t, .sens = s, .variant = variant, .fieldmap = fm,
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
    lm_linop *Eg = NULL, *Ec = NULL;
    CHECK_OK(lm_encoding_op(eg, &Eg, &err), &err);
    CHECK_OK(lm_encoding_op(ec, &Ec, &err), &err);
    if (!Eg || !Ec)
        return;
    lm_cfloat *x = malloc((size_t)nv * sizeof *x), *ehg = malloc((size_t)nv * sizeof *ehg),
              *ehc = malloc((size_t)nv * sizeof *ehc), *ehf = malloc((size_t)nv * sizeof *ehf);
    lm_kdata *y = lm_kdata_new(m, nc, NULL), *eg_k = lm_kdata_new(m, nc, NULL), *ec_k = lm_kdata_new(m, nc, NULL),
             *ef_k = lm_kdata_new(m, nc, NULL);
    for (int64_t v = 0; v < nv; v++)
        x[v] = (float)(gu_uniform() - 0.5) + I * (float)(gu_uniform() - 0.5);
    for (int64_t q = 0; q < m * nc; q++)
        y->d[q] = (float)(gu_uniform() - 0.5) + I * (float)(gu_uniform() - 0.5);
    lm_cfloat *xd = be->alloc(be, nv, "x"), *zd = be->alloc(be, nv, "E^H y");
    lm_cfloat *yd = be->alloc(be, m * nc, "y"), *kd = be->alloc(be, m * nc, "E x");
    be->upload(be, xd, x, (size_t)nv * sizeof *x);
    be->upload(be, yd, y->d, (size_t)(m * nc) * sizeof *y->d);
    /* composed, on the device */
    CHECK_OK(lm_linop_apply(Eg, xd, kd, &err), &err);
    be->download(be, eg_k->d, kd, (size_t)(m * nc) * sizeof *kd);
    CHECK_OK(lm_linop_adjoint(Eg, yd, zd, &err), &err);
    be->download(be, ehg, zd, (size_t)nv * sizeof *zd);
    /* fused, on the device */
    CHECK_OK(lm_encoding_forward(eg, xd, ef_k, &err), &err);
    CHECK_OK(lm_encoding_adjoint(eg, y, zd, NULL, &err), &err);
    be->download(be, ehf, zd, (size_t)nv * sizeof *zd);
    CHECK_OK(be->check(be, &err), &err);
    /* composed on the CPU */
    CHECK_OK(lm_linop_apply(Ec, x, ec_k->d, &err), &err);
    CHECK_OK(lm_linop_adjoint(Ec, y->d, ehc, &err), &err);
    const double f_fused = lm_rel_error_c(eg_k->d, ef_k->d, m * nc), a_fused = lm_rel_error_c(ehg, ehf, nv);
    const double f_cpu = lm_rel_error_c(eg_k->d, ec_k->d, m * nc), a_cpu = lm_rel_error_c(ehg, ehc, nv);
    double complex l = 0, r = 0;
    for (int64_t q = 0; q < m * nc; q++)
        l += conj((double complex)eg_k->d[q]) * y->d[q];
    for (int64_t v = 0; v < nv; v++)
        r += conj((double complex)x[v]) * ehg[v];
    const double adj = cabs(l - r) / cabs(r);
    printf("  %-28s E: fused %.1e cpu %.1e   E^H: fused %.1e cpu %.1e   adjointness %.1e\n", name, f_fused, f_cpu,
           a_fused, a_cpu, adj);
    CHECK(f_fused < 1e-4 && a_fused < 1e-4);
    CHECK(f_cpu < 1e-4 && a_cpu < 1e-4);
    CHECK(adj < 1e-4);
    be->release(be, xd), be->release(be, zd), be->release(be, yd), be->release(be, kd);
    free(x), free(ehg), free(ehc), free(ehf);
    lm_kdata_free(y), lm_kdata_free(eg_k), lm_kdata_free(ec_k), lm_kdata_free(ef_k);
    lm_encoding_free(eg);
    lm_encoding_free(ec);
}

int main(void)
{
    gpu_require();
    gu_seed(7);
    lm_geom g3;
    lm_geom_init(&g3, 32, 32, 32, 220);
    lm_traj *t3 = NULL;
    lm_error err = {0};
    CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL3D, g3.n, 0, 0, &t3, &err), &err);
    lm_sens *s3 = gu_maps(&g3, 4);
    if (t3) {
        check_case("3D 32^3, 4 coils, gpu-nufft", "gpu-nufft", &g3, t3, s3, NULL);
        check_case("3D 32^3, one coil, gpu-tuned", "gpu-tuned", &g3, t3, NULL, NULL);
    }
    lm_geom g2;
    lm_geom_init(&g2, 64, 64, 1, 220);
    lm_traj *t2 = NULL;
    CHECK_OK(lm_traj_generate(LM_TRAJ_SPIRAL2D, g2.n, 0, 0, &t2, &err), &err);
    if (t2)
        CHECK_OK(lm_traj_times_uniform(t2, 20e-3, &err), &err);
    lm_sens *s2 = gu_maps(&g2, 3);
    float *fm = malloc((size_t)lm_geom_voxels(&g2) * sizeof *fm);
    for (int64_t v = 0; v < lm_geom_voxels(&g2); v++)
        fm[v] = (float)(120.0 * exp(-((double)(v % 64) - 40) * ((double)(v % 64) - 40) / 200.0) - 10.0);
    if (t2) {
        check_case("2D spiral, 3 coils, segments", "gpu-nufft", &g2, t2, s2, fm);
        check_case("2D spiral, 3 coils, exact", "gpu-tuned", &g2, t2, s2, fm);
    }
    free(fm);
    lm_sens_free(s3), lm_sens_free(s2);
    lm_traj_free(t3), lm_traj_free(t2);
    return lm_test_finish("gpu-linop");
}
