/* The Toeplitz CG with Q and F^H d given (lm_solver.h), on the back end of
 * the caller's choice: the same lm_cg source on both devices. */
#include "lm_solver.h"

#include <math.h>
#include <stdlib.h>

lm_code lm_system_new(lm_linop *normal, const int64_t n[3], double lambda, lm_reg_kind reg,
                      const float *edge_weights, lm_linop **reg_op, lm_linop **sum, lm_error *err)
{
    *reg_op = *sum = NULL;
    if (!(lambda >= 0) || !isfinite(lambda))
        return lm_fail(err, LM_ERR_INVALID, "cg: lambda %g must be finite and >= 0", lambda);
    if (reg == LM_REG_TV || reg == LM_REG_WAVELET)
        return lm_fail(err, LM_ERR_INVALID, "cg: the %s prior is not quadratic: it is solved by ADMM (lm_admm.h)",
                       reg == LM_REG_TV ? "tv" : "wavelet");
    const double c = lambda * normal->diag;
    lm_code rc = LM_OK;
    if (c != 0)
        rc = lm_linop_reg(normal->be, n, reg, edge_weights, reg_op, err);
    else if (reg != LM_REG_IDENTITY && reg != LM_REG_GRADIENT && !lm_reg_weighted(reg))
        rc = lm_fail(err, LM_ERR_INVALID, "cg: unknown regulariser %d", (int)reg);
    if (rc == LM_OK && c != 0)
        rc = lm_linop_sum(normal, *reg_op, c, sum, err);
    if (rc != LM_OK) {
        lm_linop_free(*reg_op);
        *reg_op = NULL;
    }
    return rc;
}

static lm_code solve(lm_device_kind dev, const lm_geom *g, const lm_cfloat *q, const lm_cfloat *fhd,
                     lm_cfloat *rho, const lm_cg_opts *o, lm_cg_report *rep, lm_error *err)
{
    if (rep)
        *rep = (lm_cg_report){0};
    if (!g || !q || !fhd || !rho || !o)
        return lm_fail(err, LM_ERR_INVALID, "cg: missing argument");
    if (o->iters < 0)
        return lm_fail(err, LM_ERR_INVALID, "cg: iteration count %d is negative", o->iters);
    if (lm_reg_weighted(o->reg) && o->lambda > 0 && !o->edge_weights)
        return lm_fail(err, LM_ERR_INVALID, "cg: anatomical regulariser without edge weights");
    const int64_t nv = lm_geom_voxels(g);
    lm_backend *be = NULL;
    lm_linop *fhf = NULL, *reg = NULL, *sys = NULL;
    lm_cfloat *b = NULL, *x = NULL;
    lm_cfloat *bh = NULL;
    lm_code rc = dev == LM_DEVICE_GPU ? lm_backend_gpu_new(&be, err) : lm_backend_cpu_new(o->threads, &be, err);
    if (rc == LM_OK)
        rc = lm_linop_toeplitz(be, g->n, q, 0, &fhf, err);
    if (rc == LM_OK)
        rc = lm_system_new(fhf, g->n, o->lambda, o->reg, o->edge_weights, &reg, &sys, err);
    if (rc == LM_OK) {
        bh = lm_alloc((size_t)nv, sizeof *bh, err, "cg right-hand side");
        rc = bh ? LM_OK : LM_ERR_NOMEM;
    }
    if (rc == LM_OK) {
        const float inv_n = (float)(1.0 / (double)nv);
        for (int64_t j = 0; j < nv; j++)
            bh[j] = fhd[j] * inv_n;
        b = be->alloc(be, nv, "cg right-hand side");
        x = be->alloc(be, nv, "cg solution");
        if (b)
            be->upload(be, b, bh, (size_t)nv * sizeof *b);
        if (x && o->warm_start)
            be->upload(be, x, rho, (size_t)nv * sizeof *x);
        rc = be->check(be, err);
    }
    if (rc == LM_OK) {
        lm_cg_params p = {.iters = o->iters, .tol = o->tol, .warm_start = o->warm_start,
                          .monitor = o->monitor, .monitor_user = o->monitor_user};
        rc = lm_cg(sys ? sys : fhf, b, x, &p, rep, err);
        if (rc == LM_OK || rc == LM_ERR_CANCELLED) {
            lm_error e2 = {0};
            be->download(be, rho, x, (size_t)nv * sizeof *rho);
            lm_code rc2 = be->check(be, &e2);
            if (rc2 != LM_OK && rc == LM_OK) {
                rc = rc2;
                if (err)
                    *err = e2;
            }
        }
    }
    if (rc != LM_OK && rc != LM_ERR_CANCELLED && rep) {
        free(rep->resid_history);
        *rep = (lm_cg_report){0};
    }
    free(bh);
    if (be) {
        be->release(be, x);
        be->release(be, b);
    }
    lm_linop_free(sys);
    lm_linop_free(reg);
    lm_linop_free(fhf);
    lm_backend_free(be);
    return rc;
}

lm_code lm_cg_solve_cpu(const lm_geom *g, const lm_cfloat *q, const lm_cfloat *fhd, lm_cfloat *rho,
                        const lm_cg_opts *o, lm_cg_report *rep, lm_error *err)
{
    return solve(LM_DEVICE_CPU, g, q, fhd, rho, o, rep, err);
}

lm_code lm_cg_solve_gpu(const lm_geom *g, const lm_cfloat *q, const lm_cfloat *fhd, lm_cfloat *rho,
                        const lm_cg_opts *o, lm_cg_report *rep, lm_error *err)
{
    return solve(LM_DEVICE_GPU, g, q, fhd, rho, o, rep, err);
}
