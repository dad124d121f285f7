/* Time segmentation in 3D on the device (issues 11 and 14): the block
 * Toeplitz product of gpu-nufft with x transformed last, in one kernel
 * with the block product (k_tb_xfused, the default), against the same
 * product with separate passes (LARMOR_GPU_BLOCK_XFUSE=0; the same FFT(Q)
 * on the device: tolerance 2e-6 relative) and against the CPU's block
 * operator (cpu-nufft: its own Q, tolerance 1e-4), with a 150 Hz field map
 * and 12 ms readouts. Matrices 16 x 32 x 8 and 128 x 16 x 8 (every axis its
 * own length; 128 gives x the 256-point rows of B128); L and coils chosen
 * so a kernel block holds all coils (L 3, 3 coils), whole chunks and a
 * partial one (L 8, 5 coils: 4 + 1), and two coils of up to 16 segments
 * (L 12, 5 coils: 2 + 2 + 1). E^H d on the device (the data up once, the
 * segment interpolators and phases applied there, channels in groups of
 * 4) against the CPU's, tolerance 1e-4. */
#include <complex.h>

#include "gpu_enc_util.h"
#include "gpu_util.h"
#include "lm_encoding.h"

/* E^H E x with variant v and L segments, and E^H d when k is given; y and
 * xa on the host. */
static void normal(const lm_geom *g, const lm_traj *t, const lm_sens *s, const float *f, const char *v, int L,
                   const lm_cfloat *x, lm_cfloat *y, const lm_kdata *k, lm_cfloat *xa)
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
    if (k) {
        lm_backend *be = lm_encoding_backend(e);
        const int64_t nv = lm_encoding_voxels(e);
        lm_cfloat *xd = be->alloc(be, nv, "E^H d");
        CHECK_OK(be->check(be, &err), &err);
        CHECK_OK(lm_encoding_adjoint(e, k, xd, NULL, &err), &err);
        be->download(be, xa, xd, (size_t)nv * sizeof *xa);
        CHECK_OK(be->check(be, &err), &err);
        be->release(be, xd);
    }
    lm_encoding_free(e);
}

static void check_case(int n0, int n1, int n2, int L, int nc)
{
    lm_geom g;
    lm_geom_init(&g, n0, n1, n2, 200);
    const int64_t nv = lm_geom_voxels(&g), m = 8192, nr = 32;
    gu_seed(5);
    lm_error err = {0};
    lm_traj *t = lm_traj_new(m, 3, NULL);
    CHECK_OK(lm_traj_alloc_times(t, &err), &err);
    const int n[3] = {n0, n1, n2};
    for (int64_t j = 0; j < m; j++) {
        for (int a = 0; a < 3; a++)
            t->k[3 * j + a] = (float)((gu_uniform() - 0.5) * n[a]);
        t->t[j] = (float)(0.012 * (double)(j % (m / nr)) / (double)(m / nr)); /* 32 readouts of 12 ms */
    }
    float *f = malloc((size_t)nv * sizeof *f);
    for (int64_t v = 0; v < nv; v++) {
        const double x = lm_voxel_pos(v % n0, n0), y = lm_voxel_pos((v / n0) % n1, n1),
                     z = lm_voxel_pos(v / ((int64_t)n0 * n1), n2);
        f[v] = (float)(150 * exp(-((x - 0.1) * (x - 0.1) + y * y + (z + 0.2) * (z + 0.2)) / 0.05) - 10);
    }
    lm_sens *s = gu_ring_maps(&g, nc);
    lm_cfloat *x = malloc((size_t)nv * sizeof *x), *yf = malloc((size_t)nv * sizeof *yf);
    lm_cfloat *yp = malloc((size_t)nv * sizeof *yp), *yc = malloc((size_t)nv * sizeof *yc);
    for (int64_t j = 0; j < nv; j++)
        x[j] = (float)(gu_uniform() - 0.5) + I * (float)(gu_uniform() - 0.5);
    /* E^H d: the segmented adjoint on the device (data up once, groups of
     * up to 4 channels per segment) against the CPU's */
    lm_kdata *k = lm_kdata_new(m, nc, &err);
    CHECK_OK(k ? LM_OK : LM_ERR_NOMEM, &err);
    for (int64_t j = 0; k && j < m * nc; j++)
        k->d[j] = (float)(gu_uniform() - 0.5) + I * (float)(gu_uniform() - 0.5);
    lm_cfloat *af = malloc((size_t)nv * sizeof *af), *ac = malloc((size_t)nv * sizeof *ac);
    normal(&g, t, s, f, "gpu-nufft", L, x, yf, k, af);
    gpu_tune_xfuse(0);
    normal(&g, t, s, f, "gpu-nufft", L, x, yp, NULL, NULL);
    gpu_tune_xfuse(1);
    normal(&g, t, s, f, "cpu-nufft", L, x, yc, k, ac);
    const double rp = gu_rel_diff(yf, yp, nv), rc = gu_rel_diff(yf, yc, nv), ra = gu_rel_diff(af, ac, nv);
    printf("%dx%dx%d, L = %d, %d coils: x last and fused against separate passes %.2e, against the CPU %.2e; "
           "E^H d against the CPU %.2e\n",
           n0, n1, n2, L, nc, rp, rc, ra);
    CHECK_MSG(rp < 2e-6, "fused vs separate %.2e", rp);
    CHECK_MSG(rc < 1e-4, "gpu vs cpu %.2e", rc);
    CHECK_MSG(ra < 1e-4, "E^H d gpu vs cpu %.2e", ra);
    lm_kdata_free(k);
    free(x), free(yf), free(yp), free(yc), free(f), free(af), free(ac);
    lm_sens_free(s);
    lm_traj_free(t);
}

int main(void)
{
    lm_error err = {0};
    if (lm_gpu_available(&err) != LM_OK)
        LM_TEST_SKIP("%s", err.msg);
    check_case(16, 32, 8, 3, 3);
    check_case(16, 32, 8, 8, 5);
    check_case(16, 32, 8, 12, 5);
    check_case(128, 16, 8, 8, 5);
    lm_gpu_release();
    return lm_test_finish("gpu-timeseg3d");
}
