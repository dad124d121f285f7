/* Parboil's mri-q and mri-fhd through a kernel variant (lm_q.h). */
#include "lm_q.h"

#include <stdlib.h>
#include <time.h>

#include "lm_io.h"
#include "lm_kernels.h"

static double q_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

lm_code lm_q_parboil(const char *variant, const char *in_path, const char *out_path, int fhd, lm_q_result *res,
                     lm_error *err)
{
    lm_parboil *p = NULL;
    float *wr = NULL, *wi = NULL, *ore = NULL, *oim = NULL;
    const lm_variant *v = lm_variant_get_available(variant, err);
    if (!v)
        return err ? err->code : LM_ERR_UNSUPPORTED;
    lm_code rc = lm_parboil_read(in_path, &p, err);
    if (rc != LM_OK)
        goto done;
    rc = LM_ERR_INVALID;
    if (fhd && !p->d_r) {
        lm_fail(err, LM_ERR_INVALID, "%s: an mri-q file has no k-space data for --fhd", in_path);
        goto done;
    }
    rc = LM_ERR_NOMEM;
    size_t nk = (size_t)p->num_k, nx = (size_t)p->num_x;
    if (!(wr = lm_alloc(nk, sizeof *wr, err, "weights")) || !(wi = lm_alloc(nk, sizeof *wi, err, "weights")) ||
        !(ore = lm_alloc(nx, sizeof *ore, err, "output")) || !(oim = lm_alloc(nx, sizeof *oim, err, "output")))
        goto done;
    for (size_t m = 0; m < nk; m++) {
        if (fhd) { /* conj(phi) d, as Parboil's mri-fhd */
            wr[m] = p->phi_r[m] * p->d_r[m] + p->phi_i[m] * p->d_i[m];
            wi[m] = p->phi_r[m] * p->d_i[m] - p->phi_i[m] * p->d_r[m];
        } else {
            wr[m] = p->phi_r[m] * p->phi_r[m] + p->phi_i[m] * p->phi_i[m];
        }
    }
    lm_ksum_in kin = {.m = p->num_k, .kx = p->kx, .ky = p->ky, .kz = p->kz, .wr = wr, .wi = fhd ? wi : NULL};
    lm_points pts = {.n = p->num_x, .x = p->x, .y = p->y, .z = p->z};
    double t0 = q_now();
    if ((rc = lm_ksum_run(v, &kin, &pts, ore, oim, NULL, err)) != LM_OK)
        goto done;
    double dt = q_now() - t0;
    if ((rc = lm_parboil_write_output(out_path, p->num_x, ore, oim, err)) != LM_OK)
        goto done;
    *res = (lm_q_result){.variant = v->name, .num_k = p->num_k, .num_x = p->num_x, .time_s = dt};
done:
    lm_parboil_free(p);
    free(wr), free(wi), free(ore), free(oim);
    return rc;
}
