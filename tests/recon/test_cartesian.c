/* Cartesian FFT reconstruction: on integer-grid samples it must equal the
 * direct adjoint sum rho(x) = sum_k d(k) exp(+i 2 pi k.x) (cpu-dp, double),
 * invert a full grid exactly, and refuse off-grid samples. */
#include <complex.h>
#include <stdlib.h>
#include <string.h>

#include "lm_cartesian.h"
#include "lm_kernels.h"
#include "lm_metrics.h"
#include "lm_test.h"
#include "lm_trajgen.h"

static double rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return ((*s >> 8) & 0xffffff) / (double)0x1000000 - 0.5;
}

static void check_against_direct(const int64_t n[3], int drop_every, unsigned seed)
{
    lm_error err = {0};
    lm_geom g;
    lm_geom_init(&g, n[0], n[1], n[2], 240);
    lm_traj *t = NULL;
    CHECK_OK(lm_traj_generate(LM_TRAJ_CARTESIAN, n, 0, 0, &t, &err), &err);
    if (!t)
        return;
    /* A partial grid: keep all but every drop_every-th sample. */
    int64_t m = 0;
    for (int64_t j = 0; j < t->m; j++)
        if (!drop_every || j % drop_every)
            memmove(&t->k[3 * m++], &t->k[3 * j], 3 * sizeof(float));
    t->m = m;
    lm_cfloat *d = malloc((size_t)m * sizeof *d);
    float *kx = malloc((size_t)m * 5 * sizeof(float));
    for (int64_t j = 0; j < m; j++) {
        d[j] = (float)rnd(&seed) + I * (float)rnd(&seed);
        kx[j] = t->k[3 * j], kx[m + j] = t->k[3 * j + 1], kx[2 * m + j] = t->k[3 * j + 2];
        kx[3 * m + j] = crealf(d[j]), kx[4 * m + j] = cimagf(d[j]);
    }
    int64_t nv = n[0] * n[1] * n[2];
    lm_cfloat *img = malloc((size_t)nv * sizeof *img), *ref = malloc((size_t)nv * sizeof *ref);
    float *re = malloc((size_t)nv * 2 * sizeof(float));
    CHECK_OK(lm_cartesian_fft(&g, t, d, img, NULL, &err), &err);
    lm_ksum_in in = {.m = m, .kx = kx, .ky = kx + m, .kz = kx + 2 * m, .wr = kx + 3 * m, .wi = kx + 4 * m};
    lm_points pts;
    lm_points_image_grid(&pts, n);
    CHECK_OK(lm_ksum_run(lm_variant_find("cpu-dp", NULL), &in, &pts, re, re + nv, NULL, &err), &err);
    for (int64_t i = 0; i < nv; i++)
        ref[i] = re[i] + I * re[nv + i];
    /* Both are float results of the same sum: FFT rounding ~ eps log N. */
    double rel = lm_rel_error_c(img, ref, nv);
    CHECK_MSG(rel < 1e-5, "%lldx%lldx%lld drop %d: rel error %.3g", (long long)n[0], (long long)n[1],
              (long long)n[2], drop_every, rel);
    lm_traj_free(t);
    free(d), free(kx), free(img), free(ref), free(re);
}

int main(void)
{
    check_against_direct((int64_t[]){16, 12, 8}, 0, 1);
    check_against_direct((int64_t[]){16, 16, 1}, 0, 2);
    check_against_direct((int64_t[]){15, 9, 6}, 3, 3); /* odd sizes, partial grid */

    /* Off-grid samples are refused with a message naming the sample. */
    lm_error err = {0};
    lm_geom g;
    lm_geom_init(&g, 8, 8, 8, 240);
    lm_traj *t = lm_traj_new(2, 3, &err);
    t->k[3] = 1.5f;
    lm_cfloat d[2] = {1, 1}, img[512];
    CHECK(lm_cartesian_fft(&g, t, d, img, NULL, &err) == LM_ERR_INVALID);
    CHECK(strstr(err.msg, "sample 1") != NULL);
    t->k[3] = 4.0f; /* k = n/2 lies outside -n/2 .. n/2-1 */
    CHECK(lm_cartesian_check(&g, t, &err) == LM_ERR_INVALID);
    lm_traj_free(t);
    return lm_test_finish("test_cartesian");
}
