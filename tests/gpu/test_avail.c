/* GPU availability: the variant rows exist in every build, and without a
 * usable GPU (no CUDA at build, no driver, no device) every entry point
 * returns a clear reason instead of crashing. Runs everywhere (CI too);
 * on a machine with a GPU it checks the positive side. */
#include "gpu_util.h"

static const char *expected[] = {"gpu-base", "gpu-regalloc", "gpu-coalesce", "gpu-constmem", "gpu-fasttrig",
                                 "gpu-tuned", "gpu-multi", "gpu-nufft", "gpu-phasor"};

int main(void)
{
    size_t nrows = 0;
    const lm_variant *rows = lm_gpu_variants(&nrows);
    CHECK(rows != NULL);
    CHECK(nrows >= sizeof expected / sizeof expected[0]);
    for (size_t e = 0; e < sizeof expected / sizeof expected[0]; e++) {
        int found = 0;
        for (size_t i = 0; i < nrows; i++)
            if (!strcmp(rows[i].name, expected[e])) {
                found = 1;
                CHECK(rows[i].device == LM_DEVICE_GPU);
                CHECK(rows[i].ksum != NULL && rows[i].available != NULL);
                CHECK(rows[i].description && rows[i].description[0]);
                CHECK(rows[i].grid_only == !strcmp(rows[i].name, "gpu-nufft"));
                /* reachable through the one table */
                lm_error e2;
                lm_error_clear(&e2);
                CHECK(lm_variant_find(rows[i].name, &e2) == &rows[i]);
            }
        CHECK_MSG(found, "%s missing from lm_gpu_variants", expected[e]);
    }

    lm_error why;
    lm_error_clear(&why);
    lm_code avail = lm_gpu_available(&why);
    if (avail == LM_OK) {
        CHECK(lm_gpu_built());
        CHECK(lm_gpu_device_count() > 0);
        lm_gpu_info info;
        lm_error err;
        lm_error_clear(&err);
        CHECK_OK(lm_gpu_describe(0, &info, &err), &err);
        char line[512];
        lm_gpu_info_string(&info, line, sizeof line);
        fprintf(stderr, "GPU 0: %s\n", line);
        CHECK(info.name[0] && info.sm_count > 0 && info.mem_total_gib > 0);
        lm_error_clear(&err);
        CHECK(lm_gpu_describe(9999, &info, &err) == LM_ERR_INVALID && err.msg[0]);
        for (size_t i = 0; i < nrows; i++) {
            lm_error_clear(&err);
            CHECK(rows[i].available(&err) == LM_OK);
        }
    } else {
        fprintf(stderr, "no GPU here, reason: %s\n", why.msg);
        CHECK(avail == LM_ERR_UNSUPPORTED);
        CHECK(why.msg[0] != '\0');
        CHECK(lm_gpu_device_count() == 0);
        if (!lm_gpu_built())
            CHECK(strstr(why.msg, "built without CUDA") != NULL);
        else
            CHECK(strstr(why.msg, "CUDA") != NULL || strstr(why.msg, "device") != NULL);
        /* every row says the same reason */
        for (size_t i = 0; i < nrows; i++) {
            lm_error w2;
            lm_error_clear(&w2);
            CHECK(rows[i].available(&w2) == LM_ERR_UNSUPPORTED);
            CHECK(!strcmp(w2.msg, why.msg));
        }
        /* and every entry point fails cleanly with it */
        float kx[3] = {1, 2, 3}, ky[3] = {0, 1, 0}, kz[3] = {0, 0, 1}, w[3] = {1, 1, 1};
        lm_ksum_in in = {.m = 3, .kx = kx, .ky = ky, .kz = kz, .wr = w, .wi = NULL, .nsets = 1};
        lm_points p;
        int64_t n3[3] = {4, 4, 4};
        lm_points_image_grid(&p, n3);
        float out_re[64], out_im[64];
        for (size_t i = 0; i < nrows; i++) {
            lm_error e2;
            lm_error_clear(&e2);
            lm_code c = lm_ksum_run(&rows[i], &in, &p, out_re, out_im, NULL, &e2);
            CHECK(c == LM_ERR_UNSUPPORTED);
            CHECK(strstr(e2.msg, why.msg) != NULL);
            lm_error_clear(&e2);
            c = rows[i].ksum(&in, &p, out_re, out_im, NULL, &e2);
            CHECK(c == LM_ERR_UNSUPPORTED && e2.msg[0]);
        }
        lm_error e3;
        lm_error_clear(&e3);
        lm_gpu_info info;
        CHECK(lm_gpu_describe(0, &info, &e3) == LM_ERR_UNSUPPORTED && e3.msg[0]);
        lm_geom g;
        lm_geom_init(&g, 4, 4, 4, 240);
        lm_cfloat q[512] = {0}, fhd[64] = {0}, rho[64];
        lm_cg_opts o;
        memset(&o, 0, sizeof o);
        o.iters = 3;
        lm_cg_report rep;
        lm_error_clear(&e3);
        CHECK(lm_cg_solve_gpu(&g, q, fhd, rho, &o, &rep, &e3) == LM_ERR_UNSUPPORTED && e3.msg[0]);
        CHECK(rep.resid_history == NULL);
        lm_gpu_tune_params tp;
        lm_error_clear(&e3);
        CHECK(lm_gpu_tune(0, &tp, NULL, 0, NULL, &e3) == LM_ERR_UNSUPPORTED && e3.msg[0]);
        lm_error_clear(&e3);
        CHECK(lm_gpu_tune_get(0, &tp, NULL, 0, &e3) == LM_ERR_UNSUPPORTED && e3.msg[0]);
        lm_gpu_release(); /* harmless */
    }

    /* the tune file parser (host code) */
    if (lm_gpu_built()) {
        lm_gpu_tune_params tp;
        lm_error e4;
        lm_error_clear(&e4);
        CHECK_OK(lm_gpu_tune_parse("# c\nmodel NVIDIA H200\nthreads 128\ntile 1024\nunroll 4\nvpt 2\n#  64 512 1 8 0.1\n", &tp, &e4), &e4);
        CHECK(tp.threads == 128 && tp.tile == 1024 && tp.unroll == 4 && tp.vpt == 2);
        lm_error_clear(&e4);
        CHECK(lm_gpu_tune_parse("threads 100\ntile 1024\nunroll 4\nvpt 2\n", &tp, &e4) == LM_ERR_FORMAT);
        CHECK(e4.msg[0]);
        lm_error_clear(&e4);
        CHECK(lm_gpu_tune_parse("threads 128\n", &tp, &e4) == LM_ERR_FORMAT);
        lm_error_clear(&e4);
        CHECK(lm_gpu_tune_parse("", &tp, &e4) == LM_ERR_FORMAT);
    }
    return lm_test_finish("gpu-avail");
}
