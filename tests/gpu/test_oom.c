/* Out of memory: an absurd request (a 4096^3 grid: 512 GiB of output) must
 * give a clean LM_ERR_NOMEM with a message naming what did not fit, leave
 * the caller's output untouched, and leave the device usable: a normal call
 * afterwards gives the right answer. Same for the CG solver. */
#include "gpu_util.h"

int main(void)
{
    gpu_require();
    size_t nrows = 0;
    const lm_variant *rows = lm_gpu_variants(&nrows);
    gu_seed(5);
    double km[3] = {8, 8, 8};
    gu_samples smp;
    gu_samples_make(&smp, 500, km, 1);
    lm_points huge;
    gu_grid(&huge, 4096, 4096, 4096, 2048, 2048, 2048, 4096, 4096, 4096);
    float sentinel_re[16], sentinel_im[16];
    lm_points small;
    gu_grid(&small, 8, 8, 8, 4, 4, 4, 8, 8, 8);
    double *rr = malloc(512 * 2 * sizeof(double));
    gu_reference(&smp.in, &small, rr, rr + 512);
    float *o = malloc(512 * 2 * sizeof(float));

    for (size_t i = 0; i < nrows; i++) {
        for (int k = 0; k < 16; k++)
            sentinel_re[k] = sentinel_im[k] = 12345.0f;
        lm_error err;
        lm_error_clear(&err);
        /* the variant function itself: lm_ksum_run would accept the size too */
        lm_code c = rows[i].ksum(&smp.in, &huge, sentinel_re, sentinel_im, NULL, &err);
        CHECK_MSG(c == LM_ERR_NOMEM, "%s: absurd size gave %s (%s)", rows[i].name, lm_code_name(c), err.msg);
        CHECK(err.msg[0] != '\0');
        fprintf(stderr, "  %-13s %s\n", rows[i].name, err.msg);
        int untouched = 1;
        for (int k = 0; k < 16; k++)
            untouched &= sentinel_re[k] == 12345.0f && sentinel_im[k] == 12345.0f;
        CHECK_MSG(untouched, "%s wrote into the output on failure", rows[i].name);
        /* and the device still works */
        gu_poison(o, 1024);
        lm_error_clear(&err);
        CHECK_OK(rows[i].ksum(&smp.in, &small, o, o + 512, NULL, &err), &err);
        double e = gu_rel_error(o, o + 512, rr, rr + 512, 512);
        CHECK_MSG(e <= 1e-4, "%s after the failure: rel error %.3g", rows[i].name, e);
    }

    /* CG: a 4096^3 matrix is refused before anything is read */
    {
        lm_geom g;
        lm_geom_init(&g, 4096, 4096, 4096, 240);
        lm_cfloat q[8] = {0}, fhd[8] = {0}, rho[8];
        lm_cg_opts op;
        memset(&op, 0, sizeof op);
        op.iters = 2;
        lm_cg_report rep;
        lm_error err;
        lm_error_clear(&err);
        lm_code c = lm_cg_solve_gpu(&g, q, fhd, rho, &op, &rep, &err);
        CHECK_MSG(c == LM_ERR_NOMEM, "cg: absurd size gave %s (%s)", lm_code_name(c), err.msg);
        CHECK(rep.resid_history == NULL);
        fprintf(stderr, "  %-13s %s\n", "cg (gpu)", err.msg);
    }
    free(o);
    free(rr);
    gu_samples_free(&smp);
    lm_gpu_release();
    return lm_test_finish("gpu-oom");
}
