/* Conjugate gradient: monotone cost and small residual, agreement with a
 * dense double-precision solve (identity and gradient regularisers), the
 * closed form on a diagonal system, tolerance, warm start and cancel. */
#include <string.h>

#include "lm_solver.h"
#include "lm_test.h"
#include "solver_common.h"

typedef struct mon_log {
    int calls, cancel_at;
    double cost[512], resid[512];
} mon_log;

static int monitor(void *user, int iter, double rel_resid, double cost, double elapsed_s)
{
    mon_log *l = user;
    if (l->calls < 512) {
        l->cost[l->calls] = cost;
        l->resid[l->calls] = rel_resid;
    }
    l->calls++;
    CHECK(iter == l->calls);
    CHECK(elapsed_s >= 0);
    return l->cancel_at && iter == l->cancel_at;
}

static void opts_default(lm_cg_opts *o)
{
    memset(o, 0, sizeof *o);
    o->reg = LM_REG_IDENTITY;
    o->iters = 60;
    o->threads = 2;
}

/* Gaussian elimination with partial pivoting on an n x n complex system. */
static void dense_solve(int n, double complex *a, double complex *b)
{
    for (int c = 0; c < n; c++) {
        int piv = c;
        for (int r = c + 1; r < n; r++)
            if (cabs(a[r * n + c]) > cabs(a[piv * n + c]))
                piv = r;
        for (int k = 0; k < n; k++) {
            double complex tmp = a[c * n + k];
            a[c * n + k] = a[piv * n + k];
            a[piv * n + k] = tmp;
        }
        double complex tb = b[c];
        b[c] = b[piv];
        b[piv] = tb;
        for (int r = c + 1; r < n; r++) {
            double complex f = a[r * n + c] / a[c * n + c];
            for (int k = c; k < n; k++)
                a[r * n + k] -= f * a[c * n + k];
            b[r] -= f * b[c];
        }
    }
    for (int r = n - 1; r >= 0; r--) {
        double complex s = b[r];
        for (int k = r + 1; k < n; k++)
            s -= a[r * n + k] * b[k];
        b[r] = s / a[r * n + r];
    }
}

static double rel_diff(const lm_cfloat *a, const double complex *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t j = 0; j < n; j++) {
        num += pow(cabs((double complex)a[j] - b[j]), 2);
        den += pow(cabs(b[j]), 2);
    }
    return sqrt(num / den);
}

/* Random problem: trajectory, Q and raw F^H d of random k-space. */
typedef struct problem {
    lm_geom g;
    lm_traj *t;
    lm_cfloat *q, *fhd;
    double complex *fhd_d;
    int64_t nv;
} problem;

static void problem_make(problem *p, int64_t nx, int64_t ny, int64_t nz, int64_t m)
{
    lm_geom_init(&p->g, nx, ny, nz, 200);
    p->t = tst_random_traj(&p->g, m);
    p->q = tst_q_direct(&p->g, p->t);
    p->nv = lm_geom_voxels(&p->g);
    double complex *d = malloc((size_t)m * sizeof *d);
    for (int64_t j = 0; j < m; j++)
        d[j] = CMPLX(tst_uniform() - 0.5, tst_uniform() - 0.5);
    p->fhd_d = malloc((size_t)p->nv * sizeof *p->fhd_d);
    tst_adjoint_raw(&p->g, p->t, d, p->fhd_d);
    p->fhd = malloc((size_t)p->nv * sizeof *p->fhd);
    for (int64_t v = 0; v < p->nv; v++)
        p->fhd[v] = (lm_cfloat)p->fhd_d[v];
    free(d);
}

static void problem_free(problem *p)
{
    lm_traj_free(p->t);
    free(p->q), free(p->fhd), free(p->fhd_d);
}

static void test_monotone(void)
{
    problem p;
    problem_make(&p, 12, 12, 1, 400);
    lm_cg_opts o;
    opts_default(&o);
    o.iters = 80;
    mon_log log = {0};
    o.monitor = monitor;
    o.monitor_user = &log;
    lm_cfloat *rho = malloc((size_t)p.nv * sizeof *rho);
    lm_cg_report rep;
    lm_error err = {0};
    CHECK_OK(lm_cg_solve_cpu(&p.g, p.q, p.fhd, rho, &o, &rep, &err), &err);
    CHECK(rep.iters_done == log.calls);
    CHECK(rep.resid_history && rep.resid_history[0] == 1.0);
    int mono = 1;
    for (int i = 1; i < log.calls && i < 512; i++)
        if (log.cost[i] > log.cost[i - 1] + 1e-6 * fabs(log.cost[i - 1]))
            mono = 0;
    CHECK_MSG(mono, "cost not monotonically decreasing");
    CHECK(log.cost[0] < 0);
    fprintf(stderr, "monotone: %d iters, rel resid %.3g, cost %.6g -> %.6g\n", rep.iters_done,
            rep.rel_resid, log.cost[0], log.cost[log.calls - 1]);
    CHECK_MSG(rep.rel_resid < 1e-3, "rel resid %g", rep.rel_resid);
    CHECK_NEAR(rep.resid_history[rep.iters_done], rep.rel_resid, 0);

    /* The cost equals rho^H A rho - 2 Re rho^H b computed afresh. */
    lm_toeplitz *op = NULL;
    CHECK_OK(lm_toeplitz_new(p.g.n, p.q, 2, &op, &err), &err);
    lm_cfloat *ar = malloc((size_t)p.nv * sizeof *ar);
    lm_toeplitz_apply(op, rho, ar);
    double c = 0;
    for (int64_t v = 0; v < p.nv; v++)
        c += creal(conj(rho[v]) * ar[v]) - 2 * creal(conj(rho[v]) * p.fhd_d[v] / (double)p.nv);
    CHECK_NEAR(log.cost[log.calls - 1], c, 1e-4 * fabs(c));

    /* tol stops early; history has iters_done + 1 entries. */
    free(rep.resid_history);
    o.tol = 1e-2;
    o.monitor = NULL;
    CHECK_OK(lm_cg_solve_cpu(&p.g, p.q, p.fhd, rho, &o, &rep, &err), &err);
    CHECK(rep.rel_resid < 1e-2 && rep.iters_done < log.calls);
    CHECK(rep.iters_done >= 1 && rep.resid_history[rep.iters_done - 1] >= 1e-2);
    int first = rep.iters_done;
    free(rep.resid_history);

    /* Warm start from that iterate continues where it stopped. */
    o.tol = 1e-3;
    o.warm_start = 1;
    CHECK_OK(lm_cg_solve_cpu(&p.g, p.q, p.fhd, rho, &o, &rep, &err), &err);
    CHECK_MSG(rep.resid_history[0] < 1.1e-2, "warm start resid %g", rep.resid_history[0]);
    CHECK(rep.rel_resid < 1e-3);
    fprintf(stderr, "tol 1e-2: %d iters; warm start to 1e-3: %d more\n", first, rep.iters_done);
    free(rep.resid_history);

    /* Cancel at iteration 3. */
    memset(&log, 0, sizeof log);
    log.cancel_at = 3;
    o.tol = 0;
    o.warm_start = 0;
    o.monitor = monitor;
    o.monitor_user = &log;
    lm_code rc = lm_cg_solve_cpu(&p.g, p.q, p.fhd, rho, &o, &rep, &err);
    CHECK(rc == LM_ERR_CANCELLED);
    CHECK(err.code == LM_ERR_CANCELLED);
    CHECK(rep.iters_done == 3);
    CHECK(rep.resid_history == NULL);
    CHECK(log.calls == 3);

    /* Zero right-hand side: rho = 0 at once. */
    memset(p.fhd, 0, (size_t)p.nv * sizeof *p.fhd);
    o.monitor = NULL;
    o.warm_start = 1;
    CHECK_OK(lm_cg_solve_cpu(&p.g, p.q, p.fhd, rho, &o, &rep, &err), &err);
    CHECK(rep.iters_done == 0 && rho[0] == 0);
    free(rep.resid_history);

    /* Bad arguments. */
    o.lambda = -1;
    CHECK(lm_cg_solve_cpu(&p.g, p.q, p.fhd, rho, &o, &rep, &err) == LM_ERR_INVALID);
    o.lambda = 1;
    o.reg = LM_REG_ANATOMICAL;
    CHECK(lm_cg_solve_cpu(&p.g, p.q, p.fhd, rho, &o, &rep, &err) == LM_ERR_INVALID);

    lm_toeplitz_free(op);
    free(ar), free(rho);
    problem_free(&p);
}

/* Dense A = F^H F + lambda s W^H W from the direct sum; CG must match. */
static void test_dense(lm_reg_kind reg, double lambda, int64_t nx, int64_t ny, int64_t nz, int64_t m)
{
    problem p;
    problem_make(&p, nx, ny, nz, m);
    int n = (int)p.nv;
    double complex *a = calloc((size_t)n * n, sizeof *a), *x = malloc((size_t)n * sizeof *x);
    double s = 0;
    for (int64_t j = 0; j < m; j++) {
        const float *k = p.t->k + 3 * j;
        double ph = lm_geom_phi(&p.g, k[0], k[1], k[2]);
        s += ph * ph;
    }
    s /= (double)n * n;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            double xr[3], xc[3];
            tst_pos(&p.g, r, xr);
            tst_pos(&p.g, c, xc);
            double complex acc = 0;
            for (int64_t j = 0; j < m; j++) {
                const float *k = p.t->k + 3 * j;
                double ph = lm_geom_phi(&p.g, k[0], k[1], k[2]);
                double arg = 2 * M_PI * (k[0] * (xr[0] - xc[0]) + k[1] * (xr[1] - xc[1]) + k[2] * (xr[2] - xc[2]));
                acc += ph * ph * CMPLX(cos(arg), sin(arg));
            }
            a[r * n + c] = acc / ((double)n * n);
        }
    /* W^H W column by column through lm_reg_apply on unit vectors. */
    lm_cfloat *e = calloc((size_t)n, sizeof *e), *col = malloc((size_t)n * sizeof *col);
    for (int c = 0; c < n; c++) {
        e[c] = 1;
        lm_reg_apply(p.g.n, reg, NULL, e, col, 1);
        e[c] = 0;
        for (int r = 0; r < n; r++)
            a[r * n + c] += lambda * s * col[r];
    }
    for (int r = 0; r < n; r++)
        x[r] = p.fhd_d[r] / (double)n;
    dense_solve(n, a, x);

    lm_cg_opts o;
    opts_default(&o);
    o.reg = reg;
    o.lambda = lambda;
    o.iters = 500;
    o.tol = 1e-6;
    lm_cfloat *rho = malloc((size_t)n * sizeof *rho);
    lm_cg_report rep;
    lm_error err = {0};
    CHECK_OK(lm_cg_solve_cpu(&p.g, p.q, p.fhd, rho, &o, &rep, &err), &err);
    double rel = rel_diff(rho, x, n);
    fprintf(stderr, "dense %s lambda %g (%lldx%lldx%lld, m %lld): %d iters, resid %.2g, rel diff %.3g\n",
            reg == LM_REG_IDENTITY ? "identity" : "gradient", lambda, (long long)nx, (long long)ny,
            (long long)nz, (long long)m, rep.iters_done, rep.rel_resid, rel);
    CHECK_MSG(rel < 1e-4, "CG vs dense: %g", rel);
    free(rep.resid_history);
    free(a), free(x), free(e), free(col), free(rho);
    problem_free(&p);
}

/* Full Cartesian sampling with the Dirac basis: F^H F = I / N, so
 * (1 + lambda) rho / N = fhd / N: rho = fhd / (1 + lambda), in one step. */
static void test_diagonal(void)
{
    lm_geom g;
    lm_geom_init(&g, 8, 6, 1, 100);
    g.basis = LM_BASIS_DIRAC;
    int64_t nv = lm_geom_voxels(&g);
    lm_traj *t = lm_traj_new(nv, 2, NULL);
    for (int64_t v = 0; v < nv; v++) {
        t->k[3 * v] = (float)(v % 8 - 4);
        t->k[3 * v + 1] = (float)(v / 8 - 3);
    }
    lm_cfloat *q = tst_q_direct(&g, t);
    lm_cfloat *fhd = malloc((size_t)nv * sizeof *fhd), *rho = malloc((size_t)nv * sizeof *rho);
    for (int64_t v = 0; v < nv; v++)
        fhd[v] = CMPLXF((float)tst_uniform(), (float)tst_uniform() - 0.5f);
    lm_toeplitz *op = NULL;
    lm_error err = {0};
    CHECK_OK(lm_toeplitz_new(g.n, q, 1, &op, &err), &err);
    CHECK_NEAR(lm_toeplitz_diag(op), 1.0 / (double)nv, 1e-6 / (double)nv);
    lm_toeplitz_free(op);

    const double lambdas[3] = {0, 0.5, 3};
    for (int l = 0; l < 3; l++) {
        lm_cg_opts o;
        opts_default(&o);
        o.lambda = lambdas[l];
        o.iters = 5;
        o.tol = 1e-5;
        lm_cg_report rep;
        CHECK_OK(lm_cg_solve_cpu(&g, q, fhd, rho, &o, &rep, &err), &err);
        double maxd = 0;
        for (int64_t v = 0; v < nv; v++)
            maxd = fmax(maxd, cabsf(rho[v] - fhd[v] / (float)(1 + lambdas[l])));
        CHECK_MSG(maxd < 1e-5, "lambda %g: max diff %g", lambdas[l], maxd);
        CHECK(rep.iters_done == 1);
        free(rep.resid_history);
    }
    free(q), free(fhd), free(rho);
    lm_traj_free(t);
}

static void test_reg(void)
{
    const int64_t n[3] = {5, 4, 3};
    const int64_t nv = 60;
    lm_cfloat x[60], y[60], wx[60], wy[60];
    float *w = malloc(3 * nv * sizeof *w);
    for (int64_t j = 0; j < 3 * nv; j++)
        w[j] = (float)tst_uniform();
    for (int kind = LM_REG_IDENTITY; kind <= LM_REG_ANATOMICAL; kind++) {
        for (int64_t j = 0; j < nv; j++) {
            x[j] = CMPLXF((float)tst_uniform(), (float)tst_uniform());
            y[j] = CMPLXF((float)tst_uniform(), (float)tst_uniform());
        }
        lm_reg_apply(n, kind, w, x, wx, 2);
        lm_reg_apply(n, kind, w, y, wy, 2);
        double complex a = 0, b = 0;
        double xwx = 0;
        for (int64_t j = 0; j < nv; j++) {
            a += conj(y[j]) * wx[j];
            b += conj(wy[j]) * x[j];
            xwx += creal(conj(x[j]) * wx[j]);
        }
        CHECK_MSG(cabs(a - b) < 1e-5 * cabs(a), "reg %d not self-adjoint", kind);
        CHECK_MSG(xwx >= 0, "reg %d not positive semidefinite", kind);
        if (kind != LM_REG_IDENTITY) {
            for (int64_t j = 0; j < nv; j++)
                x[j] = 2.5f - 1.0f * I;
            lm_reg_apply(n, kind, w, x, wx, 2);
            double mx = 0;
            for (int64_t j = 0; j < nv; j++)
                mx = fmax(mx, cabsf(wx[j]));
            CHECK_MSG(mx < 1e-6, "reg %d does not annihilate constants (%g)", kind, mx);
        }
    }
    /* Hand values: a line of 4, delta at 1 -> (-1, 2, -1, 0); at the end
     * (Neumann) delta at 0 -> (1, -1, 0, 0). */
    const int64_t line[3] = {4, 1, 1};
    lm_cfloat d1[4] = {0, 1, 0, 0}, out[4];
    lm_reg_apply(line, LM_REG_GRADIENT, NULL, d1, out, 1);
    CHECK(out[0] == -1 && out[1] == 2 && out[2] == -1 && out[3] == 0);
    lm_cfloat d0[4] = {1, 0, 0, 0};
    lm_reg_apply(line, LM_REG_GRADIENT, NULL, d0, out, 1);
    CHECK(out[0] == 1 && out[1] == -1 && out[2] == 0 && out[3] == 0);
    /* Anatomical with weight 0.25 on the 0-1 difference: delta at 0. */
    float lw[12] = {0.25f, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    lm_reg_apply(line, LM_REG_ANATOMICAL, lw, d0, out, 1);
    CHECK(out[0] == 0.25f && out[1] == -0.25f && out[2] == 0 && out[3] == 0);
    free(w);

    /* Anatomical weights: a step of height 1 between x = 3 and x = 4 in an
     * 8 x 4 x 2 reference, edge fraction 0.1: 1 / (1 + 100) across the
     * step, 1 elsewhere. */
    lm_error err = {0};
    const int64_t rd[3] = {8, 4, 2};
    lm_volume *ref = lm_volume_new(rd, NULL, &err);
    for (int64_t j = 0; j < 64; j++)
        ref->data[j] = (j % 8) >= 4 ? 1.0f : 0.0f;
    float *aw = NULL;
    CHECK_OK(lm_reg_anatomical_weights(ref, rd, 0.1, &aw, &err), &err);
    if (aw) {
        CHECK_NEAR(aw[3], 1.0 / 101.0, 1e-7);
        CHECK_NEAR(aw[2], 1.0, 0);
        CHECK_NEAR(aw[4], 1.0, 0);
        CHECK_NEAR(aw[64 + 3], 1.0, 0);       /* y differences */
        CHECK_NEAR(aw[128 + 3 + 8], 1.0, 0);  /* z differences */
        free(aw);
    }
    /* Resampled to 4 x 2 x 1: voxel i takes reference round(2 i): 0, 2, 4, 6
     * so the step lies between i = 1 and i = 2. */
    const int64_t half[3] = {4, 2, 1};
    CHECK_OK(lm_reg_anatomical_weights(ref, half, 0.1, &aw, &err), &err);
    if (aw) {
        CHECK_NEAR(aw[1], 1.0 / 101.0, 1e-7);
        CHECK_NEAR(aw[0], 1.0, 0);
        CHECK_NEAR(aw[2], 1.0, 0);
        free(aw);
    }
    CHECK(lm_reg_anatomical_weights(ref, half, 0, &aw, &err) == LM_ERR_INVALID);
    lm_volume_free(ref);
}

int main(void)
{
    test_reg();
    test_diagonal();
    test_monotone();
    test_dense(LM_REG_IDENTITY, 0.05, 6, 5, 1, 60);
    test_dense(LM_REG_IDENTITY, 0, 6, 5, 1, 90);
    test_dense(LM_REG_GRADIENT, 0.3, 4, 3, 3, 50);
    test_dense(LM_REG_GRADIENT, 1.0, 7, 6, 1, 40);
    return lm_test_finish("cg");
}
