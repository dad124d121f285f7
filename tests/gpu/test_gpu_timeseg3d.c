/* Time segmentation in 3D on the device (issues 11 and 14): the block
 * Toeplitz product of gpu-nufft, whose z transforms and block product run
 * in one kernel (k_tb_zfused, LARMOR_GPU_BLOCK_ZFUSE=1), against the same
 * product with separate passes (the default, the same FFT(Q) on the device:
 * tolerance 2e-6 relative) and against the CPU's block operator
 * (cpu-nufft: its own Q, tolerance 1e-4), on a 16 x 16 x 16 matrix with 3
 * coils, a 150 Hz field map and 12 ms readouts, for L = 3 (10 columns of 3
 * segments per block, 2 idle lines), 6 (5 x 6) and 8 (4 x 8: all 32). */
#include <complex.h>

#include "gpu_enc_util.h"
#include "gpu_util.h"
#include "lm_encoding.h"

/* E^H E x with variant v and L segments; y on the host. */
static void normal(const lm_geom *g, const lm_traj *t, const lm_sens *s, const float *f, const char *v, int L,
                   const lm_cfloat *x, lm_cfloat *y)
{
    lm_error err = {0};
    lm_encoding *e = NULL;
    lm_encoding_desc d = {.geom = g, .traj = t, .sens = s, .variant = v, .fieldmap = f, .segments = L,
                          .use_cache = 0};
    CHECK_OK(lm_encoding_new(&d, &e, &err), &err);
    if (!e)
        return;
    CHECK(lm_encoding_segments(e, NULL) == L);
    gu_normal_host(e, x, y, 1);
    lm_encoding_free(e);
}

int main(void)
{
    lm_error err = {0};
    if (lm_gpu_available(&err) != LM_OK)
        LM_TEST_SKIP("%s", err.msg);
    lm_geom g;
    lm_geom_init(&g, 16, 16, 16, 200);
    const int64_t nv = lm_geom_voxels(&g), m = 8192, nr = 32;
    gu_seed(5);
    lm_traj *t = lm_traj_new(m, 3, NULL);
    CHECK_OK(lm_traj_alloc_times(t, &err), &err);
    for (int64_t j = 0; j < m; j++) {
        for (int a = 0; a < 3; a++)
            t->k[3 * j + a] = (float)((gu_uniform() - 0.5) * 16);
        t->t[j] = (float)(0.012 * (double)(j % (m / nr)) / (double)(m / nr)); /* 32 readouts of 12 ms */
    }
    float *f = malloc((size_t)nv * sizeof *f);
    for (int64_t v = 0; v < nv; v++) {
        const double x = lm_voxel_pos(v % 16, 16), y = lm_voxel_pos((v / 16) % 16, 16),
                     z = lm_voxel_pos(v / 256, 16);
        f[v] = (float)(150 * exp(-((x - 0.1) * (x - 0.1) + y * y + (z + 0.2) * (z + 0.2)) / 0.05) - 10);
    }
    lm_sens *s = gu_ring_maps(&g, 3);
    lm_cfloat *x = malloc((size_t)nv * sizeof *x), *yf = malloc((size_t)nv * sizeof *yf);
    lm_cfloat *yp = malloc((size_t)nv * sizeof *yp), *yc = malloc((size_t)nv * sizeof *yc);
    for (int64_t j = 0; j < nv; j++)
        x[j] = (float)(gu_uniform() - 0.5) + I * (float)(gu_uniform() - 0.5);
    const int Ls[3] = {3, 6, 8};
    for (int i = 0; i < 3; i++) {
        const int L = Ls[i];
        setenv("LARMOR_GPU_BLOCK_ZFUSE", "1", 1);
        normal(&g, t, s, f, "gpu-nufft", L, x, yf);
        unsetenv("LARMOR_GPU_BLOCK_ZFUSE");
        normal(&g, t, s, f, "gpu-nufft", L, x, yp);
        normal(&g, t, s, f, "cpu-nufft", L, x, yc);
        const double rp = gu_rel_diff(yf, yp, nv), rc = gu_rel_diff(yf, yc, nv);
        printf("L = %d, 3 coils, 16^3: fused against separate passes %.2e, against the CPU %.2e\n", L, rp, rc);
        CHECK_MSG(rp < 2e-6, "fused vs separate %.2e", rp);
        CHECK_MSG(rc < 1e-4, "gpu vs cpu %.2e", rc);
    }
    free(x), free(yf), free(yp), free(yc), free(f);
    lm_sens_free(s);
    lm_traj_free(t);
    lm_gpu_release();
    return lm_test_finish("gpu_timeseg3d");
}
