/* GPU Toeplitz CG against the CPU solver (lm_cg_solve_cpu) and against a
 * double-precision direct evaluation of the normal equations, on small
 * random problems: identity, gradient and anatomical regularisers, lambda 0,
 * 2D, warm start, tolerance stop, cancellation, b = 0, zero iterations,
 * both FFT strategies. Tolerances: rho within 2e-3 (relative l2) of the
 * CPU's after 20 float iterations (measured values printed), residual
 * histories within 1e-3 of ||b||, the reported residual within 5 % of the
 * true one. */
#include <complex.h>

#include "gpu_util.h"
#include "lm_solver.h"

typedef struct prob {
    lm_geom g;
    int64_t N, P, p[3];
    lm_cfloat *q, *fhd;
    float *w;
} prob;

static void prob_make(prob *pr, int64_t n0, int64_t n1, int64_t n2, int64_t m, uint64_t seed)
{
    gu_seed(seed);
    lm_geom_init(&pr->g, n0, n1, n2, 240);
    pr->N = n0 * n1 * n2;
    pr->P = 1;
    for (int a = 0; a < 3; a++) {
        pr->p[a] = pr->g.n[a] > 1 ? 2 * pr->g.n[a] : 1;
        pr->P *= pr->p[a];
    }
    double km[3] = {n0 / 2.0, n1 / 2.0, n2 > 1 ? n2 / 2.0 : 0};
    gu_samples s;
    gu_samples_make(&s, m, km, 1);
    float *wq = malloc((size_t)m * 3 * sizeof(float)), *wf = wq + m, *wfi = wf + m;
    for (int64_t i = 0; i < m; i++) {
        double ph = lm_geom_phi(&pr->g, s.in.kx[i], s.in.ky[i], s.in.kz[i]);
        wq[i] = (float)(ph * ph);
        wf[i] = (float)(ph * s.in.wr[i]); /* d = (wr, wi) random */
        wfi[i] = (float)(ph * s.in.wi[i]);
    }
    lm_points pq, pf;
    lm_points_q_grid(&pq, pr->g.n);
    lm_points_image_grid(&pf, pr->g.n);
    double *re = malloc((size_t)pr->P * 2 * sizeof(double)), *im = re + pr->P;
    lm_ksum_in in = {.m = m, .kx = s.in.kx, .ky = s.in.ky, .kz = s.in.kz, .wr = wq, .nsets = 1};
    gu_reference(&in, &pq, re, im);
    pr->q = malloc((size_t)pr->P * sizeof(lm_cfloat));
    for (int64_t j = 0; j < pr->P; j++)
        pr->q[j] = CMPLXF((float)re[j], (float)im[j]);
    in.wr = wf;
    in.wi = wfi;
    gu_reference(&in, &pf, re, im);
    pr->fhd = malloc((size_t)pr->N * sizeof(lm_cfloat));
    for (int64_t j = 0; j < pr->N; j++)
        pr->fhd[j] = CMPLXF((float)re[j], (float)im[j]);
    pr->w = malloc((size_t)pr->N * 3 * sizeof(float));
    for (int64_t j = 0; j < 3 * pr->N; j++)
        pr->w[j] = (float)(0.05 + 0.95 * gu_uniform());
    free(re);
    free(wq);
    gu_samples_free(&s);
}

static void prob_free(prob *pr)
{
    free(pr->q);
    free(pr->fhd);
    free(pr->w);
}

/* ||b - A rho|| / ||b|| in double, A and b straight from the definitions. */
static double true_resid(const prob *pr, const lm_cfloat *rho, const lm_cg_opts *o)
{
    const int64_t *n = pr->g.n, N = pr->N;
    const double diag = crealf(pr->q[(pr->p[0] > 1 ? n[0] : 0) +
                                     pr->p[0] * ((pr->p[1] > 1 ? n[1] : 0) + pr->p[1] * (pr->p[2] > 1 ? n[2] : 0))]) /
                        ((double)N * N);
    const double ls = o->lambda * diag;
    double num = 0, den = 0;
#pragma omp parallel for reduction(+ : num, den)
    for (int64_t a = 0; a < N; a++) {
        int64_t ia[3] = {a % n[0], (a / n[0]) % n[1], a / (n[0] * n[1])};
        double complex acc = 0;
        for (int64_t b = 0; b < N; b++) {
            int64_t ib[3] = {b % n[0], (b / n[0]) % n[1], b / (n[0] * n[1])};
            int64_t qi[3];
            for (int d = 0; d < 3; d++)
                qi[d] = pr->p[d] > 1 ? ia[d] - ib[d] + n[d] : 0;
            acc += (double complex)pr->q[qi[0] + pr->p[0] * (qi[1] + pr->p[1] * qi[2])] * (double complex)rho[b];
        }
        acc /= (double)N * (double)N;
        double complex x = rho[a], reg = 0;
        if (o->reg == LM_REG_IDENTITY) {
            reg = x;
        } else {
            const int64_t st[3] = {1, n[0], n[0] * n[1]};
            for (int d = 0; d < 3; d++) {
                const float *wd = o->reg == LM_REG_ANATOMICAL ? o->edge_weights + d * N : NULL;
                if (ia[d] + 1 < n[d])
                    reg += (wd ? wd[a] : 1.0) * (x - rho[a + st[d]]);
                if (ia[d] > 0)
                    reg += (wd ? wd[a - st[d]] : 1.0) * (x - rho[a - st[d]]);
            }
        }
        acc += ls * reg;
        double complex b = (double complex)pr->fhd[a] / (double)N;
        double complex r = b - acc;
        num += creal(r) * creal(r) + cimag(r) * cimag(r);
        den += creal(b) * creal(b) + cimag(b) * cimag(b);
    }
    return sqrt(num / den);
}

typedef struct mon {
    int calls, cancel_at;
    double cost[128];
} mon;

static int monitor(void *user, int iter, double rel, double cost, double el)
{
    (void)rel, (void)el;
    mon *m = user;
    m->calls++;
    if (iter < 128)
        m->cost[iter] = cost;
    return m->cancel_at > 0 && iter >= m->cancel_at;
}

static double rel_diff(const lm_cfloat *a, const lm_cfloat *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t j = 0; j < n; j++) {
        if (!isfinite(crealf(a[j])) || !isfinite(cimagf(a[j])))
            return NAN;
        double complex d = (double complex)a[j] - (double complex)b[j];
        num += creal(d) * creal(d) + cimag(d) * cimag(d);
        den += crealf(b[j]) * crealf(b[j]) + cimagf(b[j]) * cimagf(b[j]);
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Runs CPU and GPU with the same options (cancel_at: monitor stops there)
 * and compares. */
static void compare(const char *what, const prob *pr, lm_cg_opts o, const lm_cfloat *start, int cancel_at)
{
    const int64_t N = pr->N;
    lm_cfloat *rc = malloc((size_t)N * sizeof(lm_cfloat)), *rg = malloc((size_t)N * sizeof(lm_cfloat));
    for (int64_t j = 0; j < N; j++) {
        rc[j] = start ? start[j] : 0;
        rg[j] = start ? start[j] : CMPLXF(NAN, NAN); /* poisoned: must be written */
    }
    mon mc = {0, cancel_at, {0}}, mg = {0, cancel_at, {0}};
    lm_cg_report repc, repg;
    lm_error ec, eg;
    lm_error_clear(&ec);
    lm_error_clear(&eg);
    o.monitor = monitor;
    o.monitor_user = &mc;
    lm_code cc = lm_cg_solve_cpu(&pr->g, pr->q, pr->fhd, rc, &o, &repc, &ec);
    o.monitor_user = &mg;
    lm_code cg = lm_cg_solve_gpu(&pr->g, pr->q, pr->fhd, rg, &o, &repg, &eg);
    CHECK_MSG(cc == cg, "%s: cpu %s (%s), gpu %s (%s)", what, lm_code_name(cc), ec.msg, lm_code_name(cg), eg.msg);
    CHECK_MSG(repc.iters_done == repg.iters_done, "%s: iterations cpu %d gpu %d", what, repc.iters_done,
              repg.iters_done);
    CHECK(mc.calls == mg.calls);
    double d = rel_diff(rg, rc, N);
    CHECK_MSG(d <= 2e-3, "%s: rho differs from the CPU's by %.3g", what, d);
    double hmax = 0, cmax = 0;
    if (cg == LM_OK && cc == LM_OK && repc.resid_history && repg.resid_history) {
        for (int i = 0; i <= repg.iters_done && i <= repc.iters_done; i++) {
            double h = fabs(repg.resid_history[i] - repc.resid_history[i]);
            if (h > hmax)
                hmax = h;
        }
        CHECK_MSG(hmax <= 1e-3, "%s: residual histories differ by %.3g", what, hmax);
        CHECK_MSG(fabs(repg.rel_resid - repc.rel_resid) <= 1e-3, "%s: final residual cpu %.4g gpu %.4g", what,
                  repc.rel_resid, repg.rel_resid);
    }
    if (cg == LM_ERR_CANCELLED)
        CHECK(repg.resid_history == NULL);
    for (int i = 1; i <= mg.calls && i < 128; i++) {
        double c = fabs(mg.cost[i] - mc.cost[i]) / (fabs(mc.cost[i]) + 1e-30);
        if (c > cmax)
            cmax = c;
    }
    CHECK_MSG(cmax <= 1e-3, "%s: monitor costs differ by %.3g (relative)", what, cmax);
    double tr = NAN;
    if (cg == LM_OK && N <= 4096) {
        tr = true_resid(pr, rg, &o);
        CHECK_MSG(fabs(tr - repg.rel_resid) <= 0.05 * repg.rel_resid + 1e-4,
                  "%s: reported residual %.4g, true (double) %.4g", what, repg.rel_resid, tr);
    }
    fprintf(stderr, "  %-34s iters %2d  rho vs cpu %.2e  history %.1e  cost %.1e  resid %.3e (true %.3e)\n", what,
            repg.iters_done, d, hmax, cmax, repg.rel_resid, tr);
    free(repc.resid_history);
    free(repg.resid_history);
    free(rc);
    free(rg);
}

int main(void)
{
    gpu_require();
    prob pr, p2, p3, p4, p5;
    prob_make(&pr, 10, 8, 6, 2000, 11);
    /* every padded axis a power of two: mode 3 (all axes in shared memory) */
    prob_make(&p4, 16, 8, 32, 3000, 14);
    prob_make(&p5, 32, 16, 1, 1500, 15);
    prob_make(&p2, 16, 12, 1, 1200, 12);
    prob_make(&p3, 12, 10, 16, 2500, 13); /* z padded to 32: the fused z pass */
    lm_cg_opts o;
    for (int mode = 3; mode >= 0; mode--) {
        lm_gpu_cg_set_fft_mode(mode);
        static const char *names[4] = {"full", "pruned", "pruned, z fused", "every axis in shared memory"};
        fprintf(stderr, "FFT strategy %s\n", names[mode]);
        memset(&o, 0, sizeof o);
        o.iters = 20;
        o.lambda = 0.05;
        o.reg = LM_REG_IDENTITY;
        compare("3D pow2 x,y,z identity", &p4, o, NULL, 0);
        compare("2D pow2 identity", &p5, o, NULL, 0);
        o.reg = LM_REG_GRADIENT;
        compare("3D pow2 x,y,z gradient", &p4, o, NULL, 0);
        memset(&o, 0, sizeof o);
        o.iters = 20;
        o.lambda = 0.05;
        o.reg = LM_REG_IDENTITY;
        compare("3D pow2 identity", &p3, o, NULL, 0);
        o.reg = LM_REG_GRADIENT;
        compare("3D pow2 gradient", &p3, o, NULL, 0);
        memset(&o, 0, sizeof o);
        o.iters = 20;
        o.lambda = 0.05;
        o.reg = LM_REG_IDENTITY;
        compare("3D identity", &pr, o, NULL, 0);
        o.reg = LM_REG_GRADIENT;
        o.lambda = 0.1;
        compare("3D gradient", &pr, o, NULL, 0);
        o.reg = LM_REG_ANATOMICAL;
        o.edge_weights = pr.w;
        compare("3D anatomical", &pr, o, NULL, 0);
        o.edge_weights = NULL;
        o.reg = LM_REG_IDENTITY;
        o.lambda = 0;
        o.iters = 15;
        compare("3D lambda 0", &pr, o, NULL, 0);
        o.lambda = 0.02;
        o.iters = 20;
        compare("2D identity", &p2, o, NULL, 0);
        o.reg = LM_REG_GRADIENT;
        compare("2D gradient", &p2, o, NULL, 0);
        o.reg = LM_REG_ANATOMICAL;
        o.edge_weights = p2.w;
        compare("2D anatomical", &p2, o, NULL, 0);
        o.edge_weights = NULL;
    }
    lm_gpu_cg_set_fft_mode(3);

    /* warm start: continue from a CPU iterate */
    {
        memset(&o, 0, sizeof o);
        o.iters = 5;
        o.lambda = 0.05;
        lm_cfloat *start = malloc((size_t)pr.N * sizeof(lm_cfloat));
        lm_cg_report rep;
        lm_error err;
        lm_error_clear(&err);
        CHECK_OK(lm_cg_solve_cpu(&pr.g, pr.q, pr.fhd, start, &o, &rep, &err), &err);
        free(rep.resid_history);
        o.warm_start = 1;
        compare("3D warm start", &pr, o, start, 0);
        free(start);
    }
    /* tolerance stop, cancellation, zero iterations */
    memset(&o, 0, sizeof o);
    o.iters = 40;
    o.lambda = 0.05;
    o.tol = 1e-2;
    compare("3D tol 1e-2", &pr, o, NULL, 0);
    o.tol = 0;
    compare("3D cancel at 3", &pr, o, NULL, 3);
    o.iters = 0;
    compare("3D zero iterations", &pr, o, NULL, 0);

    /* b = 0: rho = 0 */
    {
        lm_cfloat *z = calloc((size_t)pr.N, sizeof(lm_cfloat)), *rho = malloc((size_t)pr.N * sizeof(lm_cfloat));
        for (int64_t j = 0; j < pr.N; j++)
            rho[j] = 1.0f;
        memset(&o, 0, sizeof o);
        o.iters = 5;
        lm_cg_report rep;
        lm_error err;
        lm_error_clear(&err);
        CHECK_OK(lm_cg_solve_gpu(&pr.g, pr.q, z, rho, &o, &rep, &err), &err);
        int zero = 1;
        for (int64_t j = 0; j < pr.N; j++)
            zero &= rho[j] == 0;
        CHECK(zero && rep.iters_done == 0 && rep.resid_history && rep.resid_history[0] == 0);
        free(rep.resid_history);
        free(z);
        free(rho);
    }
    /* bad arguments */
    {
        lm_cfloat rho[4];
        lm_error err;
        lm_error_clear(&err);
        memset(&o, 0, sizeof o);
        o.lambda = -1;
        CHECK(lm_cg_solve_gpu(&pr.g, pr.q, pr.fhd, rho, &o, NULL, &err) == LM_ERR_INVALID && err.msg[0]);
        o.lambda = 0.1;
        o.reg = LM_REG_ANATOMICAL;
        lm_error_clear(&err);
        CHECK(lm_cg_solve_gpu(&pr.g, pr.q, pr.fhd, rho, &o, NULL, &err) == LM_ERR_INVALID && err.msg[0]);
    }
    prob_free(&pr);
    prob_free(&p2);
    prob_free(&p3);
    prob_free(&p4);
    prob_free(&p5);
    lm_gpu_release();
    return lm_test_finish("gpu-cg");
}
