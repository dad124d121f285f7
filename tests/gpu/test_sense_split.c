/* SENSE with the coils split across GPU workers (issue 14): the normal
 * operator E^H E of 7 coils split over LARMOR_GPU_DEVICES=0,0 and 0,0,0
 * (two and three workers on one GPU: the multi-GPU code path without a
 * multi-GPU host; shares 3+4 and 2+2+3) against the same operator on one
 * worker, and a whole SENSE CG reconstruction split against unsplit.
 * The per-coil arithmetic is identical; only the order of the final sum
 * differs: tolerance 1e-6 relative for the operator, 1e-5 for the image
 * after 20 float CG iterations (measured values printed). Also: a list
 * naming a device this machine lacks is refused with a one-line error. On a
 * multi-GPU host, also every device, and with no list two workers per GPU
 * (4 coils per GPU). */
#include <complex.h>

#include "gpu_enc_util.h"
#include "gpu_util.h"
#include "lm_encoding.h"
#include "lm_metrics.h"
#include "lm_recon.h"

/* E^H E x on the device with the devices the environment lists now. */
static void normal_on_gpu(const lm_geom *g, const lm_traj *t, const lm_sens *s, const lm_cfloat *x, lm_cfloat *y,
                          int *workers)
{
    lm_error err = {0};
    lm_encoding *e = NULL;
    lm_encoding_desc d = {.geom = g, .traj = t, .sens = s, .variant = "gpu-nufft", .use_cache = 0};
    CHECK_OK(lm_encoding_new(&d, &e, &err), &err);
    CHECK_OK(lm_encoding_prepare_normal(e, NULL, NULL, &err), &err);
    *workers = lm_encoding_gpu_workers(e);
    gu_normal_host(e, x, y, 2); /* twice: the workers wake again */
    lm_encoding_free(e);
}

int main(void)
{
    lm_error err = {0};
    if (lm_gpu_available(&err) != LM_OK)
        LM_TEST_SKIP("%s", err.msg);
    gpu_tune_devices(NULL);
    const int ngpu = lm_gpu_device_count();
    lm_geom g;
    lm_geom_init(&g, 32, 24, 16, 240); /* not cubic */
    const int64_t nv = lm_geom_voxels(&g), m = 6000;
    const int nc = 7;
    gu_seed(11);
    lm_traj *t = lm_traj_new(m, 3, NULL);
    for (int64_t j = 0; j < m; j++) {
        t->k[j] = (float)((gu_uniform() - 0.5) * 32);
        t->k[m + j] = (float)((gu_uniform() - 0.5) * 24);
        t->k[2 * m + j] = (float)((gu_uniform() - 0.5) * 16);
    }
    lm_sens *s = gu_ring_maps(&g, nc);
    lm_cfloat *x = malloc((size_t)nv * sizeof *x), *y1 = malloc((size_t)nv * sizeof *y1);
    lm_cfloat *y2 = malloc((size_t)nv * sizeof *y2);
    for (int64_t j = 0; j < nv; j++)
        x[j] = (float)(gu_uniform() - 0.5) + I * (float)(gu_uniform() - 0.5);

    int w1 = 0, w2 = 0;
    if (ngpu == 1) { /* one GPU: the reference is one worker */
        normal_on_gpu(&g, t, s, x, y1, &w1);
        CHECK(w1 == 1);
    } else {
        gpu_tune_devices("0");
        normal_on_gpu(&g, t, s, x, y1, &w1);
        CHECK(w1 == 1);
    }
    const char *lists[3] = {"0,0", "0,0,0", NULL};
    char all[64] = "";
    if (ngpu > 1) { /* a real multi-GPU host: every device too */
        for (int d = 0; d < ngpu && d < 8; d++)
            snprintf(all + strlen(all), sizeof all - strlen(all), "%s%d", d ? "," : "", d);
        lists[2] = all;
    }
    for (int i = 0; i < 3 && lists[i]; i++) {
        gpu_tune_devices(lists[i]);
        normal_on_gpu(&g, t, s, x, y2, &w2);
        int listed = 1;
        for (const char *p = lists[i]; *p; p++)
            listed += *p == ',';
        const double r = gu_rel_diff(y2, y1, nv);
        printf("E^H E x, 7 coils, LARMOR_GPU_DEVICES=%s: %d workers, against one: %.2e\n", lists[i], w2, r);
        CHECK(w2 == listed);
        CHECK(r < 1e-6);
    }

    if (ngpu > 1 && ngpu <= 8) { /* no list: every GPU twice once there are coils for it */
        lm_sens *s8 = gu_ring_maps(&g, 4 * ngpu);
        gpu_tune_devices("0");
        normal_on_gpu(&g, t, s8, x, y1, &w1);
        gpu_tune_devices(NULL);
        normal_on_gpu(&g, t, s8, x, y2, &w2);
        const double r = gu_rel_diff(y2, y1, nv);
        printf("E^H E x, %d coils, no LARMOR_GPU_DEVICES: %d workers on %d GPUs, against one: %.2e\n", 4 * ngpu, w2,
               ngpu, r);
        CHECK(w2 == 2 * ngpu);
        CHECK(r < 1e-6);
        lm_sens_free(s8);
    }

    /* the whole SENSE CG, split against unsplit */
    lm_kdata *k = lm_kdata_new(m, nc, NULL);
    for (int64_t j = 0; j < m * nc; j++)
        k->d[j] = (float)(gu_uniform() - 0.5) + I * (float)(gu_uniform() - 0.5);
    lm_recon_opts o;
    lm_recon_opts_init(&o);
    o.variant = "gpu-nufft";
    o.iters = 20;
    o.lambda = 0.01;
    o.sens = s;
    o.use_cache = 0;
    lm_recon_result r1 = {0}, r2 = {0};
    gpu_tune_devices("0");
    CHECK_OK(lm_recon_run(&g, t, k, &o, &r1, &err), &err);
    gpu_tune_devices("0,0");
    CHECK_OK(lm_recon_run(&g, t, k, &o, &r2, &err), &err);
    const double ri = gu_rel_diff(r2.image->data, r1.image->data, nv);
    printf("SENSE CG, 20 iterations, split over 2 workers against one: %.2e\n", ri);
    CHECK(ri < 1e-5);
    lm_recon_result_clear(&r1);
    lm_recon_result_clear(&r2);

    /* a device this machine lacks */
    char bad[32];
    snprintf(bad, sizeof bad, "0,%d", ngpu);
    gpu_tune_devices(bad);
    lm_encoding *e = NULL;
    lm_encoding_desc d = {.geom = &g, .traj = t, .sens = s, .variant = "gpu-nufft", .use_cache = 0};
    lm_code rc = lm_encoding_new(&d, &e, &err);
    if (rc == LM_OK)
        rc = lm_encoding_prepare_normal(e, NULL, NULL, &err);
    printf("LARMOR_GPU_DEVICES=%s: %s\n", bad, err.msg);
    CHECK(rc == LM_ERR_INVALID);
    CHECK(strstr(err.msg, "LARMOR_GPU_DEVICES") != NULL);
    lm_encoding_free(e);
    gpu_tune_devices(NULL);

    lm_kdata_free(k);
    free(x), free(y1), free(y2);
    lm_sens_free(s);
    lm_traj_free(t);
    lm_gpu_release();
    return lm_test_finish("gpu-sense_split");
}
