/* The GPU NUFFT's plan life cycle (lm_gpu_nufft_plan.h) over gpu-nufft's
 * session of one trajectory (lm_gpu.h): the plan keeps the type and grid,
 * set_points makes the session for the points, execute runs its raw
 * transform and waits. */
#include "lm_gpu_nufft_plan.h"

#include <stdlib.h>

#include "lm_gpu.h"

struct lm_gpu_nufft_plan {
    int type, dim;
    int64_t n[3];
    lm_gpu_nufft *session;   /* NULL until set_points */
};

lm_code lm_gpu_nufft_make_plan(int type, int dim, const int64_t n[3], int sign, double tol, lm_gpu_nufft_plan **out,
                               lm_error *err)
{
    *out = NULL;
    if (type != 1 && type != 2)
        return lm_fail(err, LM_ERR_INVALID, "gpu NUFFT plan: type %d (1 or 2)", type);
    if (dim != 2 && dim != 3)
        return lm_fail(err, LM_ERR_INVALID, "gpu NUFFT plan: dimension %d (2 or 3)", dim);
    if (sign != (type == 1 ? 1 : -1))
        return lm_fail(err, LM_ERR_UNSUPPORTED, "gpu NUFFT plan: type %d runs with sign %+d only", type,
                       type == 1 ? 1 : -1);
    if (!(tol >= LM_GPU_NUFFT_TOL && tol <= 1e-1))
        return lm_fail(err, LM_ERR_UNSUPPORTED, "gpu NUFFT plan: tolerance %g is outside [%g, 0.1]", tol,
                       LM_GPU_NUFFT_TOL);
    for (int a = 0; a < 3; a++)
        if (n[a] < 1 || n[a] > 4096 || (a == 2 && dim == 2 && n[a] != 1))
            return lm_fail(err, LM_ERR_INVALID, "gpu NUFFT plan: grid %lldx%lldx%lld does not fit dimension %d",
                           (long long)n[0], (long long)n[1], (long long)n[2], dim);
    /* the device's type 2 runs on its pruned fine grids only */
    for (int a = 0; a < dim && type == 2; a++) {
        const int64_t f = 2 * n[a];
        if (f < 16 || f > 512 || (f & (f - 1)))
            return lm_fail(err, LM_ERR_UNSUPPORTED, "gpu NUFFT plan: type 2 needs each grid size a power of two from "
                           "8 to 256, got %lldx%lldx%lld", (long long)n[0], (long long)n[1], (long long)n[2]);
    }
    lm_code rc = lm_gpu_available(err);
    if (rc != LM_OK)
        return rc;
    lm_gpu_nufft_plan *p = lm_calloc(1, sizeof *p, err, "gpu NUFFT plan");
    if (!p)
        return LM_ERR_NOMEM;
    p->type = type;
    p->dim = dim;
    for (int a = 0; a < 3; a++)
        p->n[a] = n[a];
    *out = p;
    return LM_OK;
}

lm_code lm_gpu_nufft_set_points(lm_gpu_nufft_plan *p, int64_t m, const float *kx, const float *ky, const float *kz,
                                lm_error *err)
{
    if (!p || !kx || !ky || (p->dim == 3 && !kz) || m < 1)
        return lm_fail(err, LM_ERR_INVALID, "gpu NUFFT plan: no points");
    lm_traj *t = lm_traj_new(m, p->dim, err);
    if (!t)
        return LM_ERR_NOMEM;
    for (int64_t j = 0; j < m; j++) {
        t->k[3 * j] = kx[j];
        t->k[3 * j + 1] = ky[j];
        t->k[3 * j + 2] = kz ? kz[j] : 0.0f;
    }
    lm_geom g;
    lm_geom_init(&g, p->n[0], p->n[1], p->n[2], 240.0);
    lm_code rc = lm_geom_check(&g, t, err);
    lm_gpu_nufft *s = NULL;
    if (rc == LM_OK)
        rc = lm_gpu_nufft_new(&g, t, 1, &s, err);
    lm_traj_free(t);
    if (rc != LM_OK)
        return rc;
    lm_gpu_nufft_free(p->session);
    p->session = s;
    return LM_OK;
}

lm_code lm_gpu_nufft_execute(lm_gpu_nufft_plan *p, const lm_cfloat *in_dev, lm_cfloat *out_dev, lm_error *err)
{
    if (!p || !p->session)
        return lm_fail(err, LM_ERR_INVALID, "gpu NUFFT plan: execute before set_points");
    lm_code rc = p->type == 1 ? lm_gpu_nufft_type1(p->session, in_dev, out_dev, err)
                              : lm_gpu_nufft_type2(p->session, in_dev, out_dev, err);
    return rc == LM_OK ? lm_gpu_nufft_wait(p->session, err) : rc;
}

void lm_gpu_nufft_destroy(lm_gpu_nufft_plan *p)
{
    if (!p)
        return;
    lm_gpu_nufft_free(p->session);
    free(p);
}
