/* The encoding operator and SENSE CG on the GPU against the CPU: with 8
 * coils, E^H d (gpu-nufft, gpu-phasor and gpu-tuned against cpu-dp), the normal
 * operator (cuFFT Toeplitz against the FFTW one, same Q), and the whole
 * SENSE reconstruction (gpu-nufft against cpu-nufft, 20 iterations).
 * Tolerances: 1e-4 relative for the operators, 2e-3 for the images after
 * 20 float CG iterations (measured values printed). */
#include <complex.h>

#include "gpu_enc_util.h"
#include "gpu_util.h"
#include "lm_encoding.h"
#include "lm_metrics.h"
#include "lm_recon.h"

int main(void)
{
    lm_error err = {0};
    if (lm_gpu_available(&err) != LM_OK)
        LM_TEST_SKIP("%s", err.msg);
    lm_geom g;
    lm_geom_init(&g, 32, 32, 32, 240);
    const int64_t nv = lm_geom_voxels(&g), m = 6000;
    const int nc = 8;
    gu_seed(7);
    lm_traj *t = lm_traj_new(m, 3, NULL);
    for (int64_t j = 0; j < 3 * m; j++)
        t->k[j] = (float)((gu_uniform() - 0.5) * 32);
    lm_kdata *k = lm_kdata_new(m, nc, NULL);
    for (int64_t j = 0; j < m * nc; j++)
        k->d[j] = (float)(gu_uniform() - 0.5) + I * (float)(gu_uniform() - 0.5);
    lm_sens *s = gu_ring_maps(&g, nc);

    const char *gv[3] = {"gpu-nufft", "gpu-phasor", "gpu-tuned"}; /* tuned: one sin/cos per pair for all coils */
    lm_encoding *ec = NULL;
    lm_encoding_desc dc = {.geom = &g, .traj = t, .sens = s, .variant = "cpu-dp", .use_cache = 0};
    CHECK_OK(lm_encoding_new(&dc, &ec, &err), &err);
    lm_cfloat *bc = malloc((size_t)nv * sizeof *bc), *bg = malloc((size_t)nv * sizeof *bg);
    lm_cfloat *yc = malloc((size_t)nv * sizeof *yc), *yg = malloc((size_t)nv * sizeof *yg);
    CHECK_OK(lm_encoding_adjoint(ec, k, bc, NULL, &err), &err);
    CHECK_OK(lm_encoding_normal(ec, bc, yc, &err), &err);
    for (int v = 0; v < 3; v++) {
        lm_encoding *eg = NULL;
        lm_encoding_desc dg = dc;
        dg.variant = gv[v];
        CHECK_OK(lm_encoding_new(&dg, &eg, &err), &err);
        if (!eg)
            continue;
        lm_backend *be = lm_encoding_backend(eg);
        CHECK(be->device == LM_DEVICE_GPU);
        lm_cfloat *xd = be->alloc(be, nv, "x"), *yd = be->alloc(be, nv, "y");
        CHECK_OK(lm_encoding_adjoint(eg, k, xd, NULL, &err), &err);
        be->download(be, bg, xd, (size_t)nv * sizeof *bg);
        const double ea = lm_rel_error_c(bg, bc, nv);
        /* the same input for both normal operators */
        be->upload(be, xd, bc, (size_t)nv * sizeof *bc);
        CHECK_OK(lm_encoding_normal(eg, xd, yd, &err), &err);
        be->download(be, yg, yd, (size_t)nv * sizeof *yg);
        CHECK_OK(be->check(be, &err), &err);
        const double en = lm_rel_error_c(yg, yc, nv);
        printf("%s, %d coils: E^H d %.2e, E^H E x %.2e (against cpu-dp)\n", gv[v], nc, ea, en);
        CHECK_MSG(ea < 1e-4, "%s adjoint %.3g", gv[v], ea);
        CHECK_MSG(en < 1e-4, "%s normal %.3g", gv[v], en);
        be->release(be, xd);
        be->release(be, yd);
        lm_encoding_free(eg);
    }

    lm_recon_opts o;
    lm_recon_opts_init(&o);
    o.iters = 20;
    o.use_cache = 0;
    o.sens = s;
    o.reg = LM_REG_GRADIENT;
    o.lambda = 0.1;
    lm_recon_result rc = {0}, rg = {0};
    o.variant = "cpu-nufft";
    CHECK_OK(lm_recon_run(&g, t, k, &o, &rc, &err), &err);
    o.variant = "gpu-nufft";
    CHECK_OK(lm_recon_run(&g, t, k, &o, &rg, &err), &err);
    if (rc.image && rg.image) {
        const double e = lm_rel_error_c(rg.image->data, rc.image->data, nv);
        printf("SENSE CG, 20 iterations, gradient: gpu-nufft against cpu-nufft %.2e\n", e);
        CHECK_MSG(e < 2e-3, "SENSE image %.3g", e);
        CHECK(rg.combine == LM_COMBINE_SENSE && rg.iters_done == 20);
    }
    lm_recon_result_clear(&rc);
    lm_recon_result_clear(&rg);
    free(bc), free(bg), free(yc), free(yg);
    lm_encoding_free(ec);
    lm_sens_free(s);
    lm_kdata_free(k);
    lm_traj_free(t);
    lm_gpu_release();
    return lm_test_finish("gpu-sense");
}
