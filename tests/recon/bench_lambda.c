/* Development bench for the automatic lambda (docs/lambda.md): on a
 * benchmark problem and one regulariser, every lambda of a log grid with
 * the residual against the true noise power (the noise-free problem's data
 * subtracted), the outer-k-space noise estimate, the penalty, the
 * Hutchinson tr H and GCV, and the error against the truth.
 *   bench_lambda PROBLEM [identity|gradient] [probes]   e.g. B64n gradient 4 */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_tuning.h"
#include "lm_encoding.h"
#include "lm_lambda.h"
#include "lm_metrics.h"
#include "lm_trajgen.h"

static lm_code adj(void *user, const lm_kdata *z, lm_cfloat *x, lm_error *err)
{
    return lm_encoding_adjoint(user, z, x, NULL, err);
}

int main(int argc, char **argv)
{
    lm_error tuning_err = {0};
    if (lm_tuning_init_from_env(&tuning_err) != LM_OK) { /* the LARMOR_* knobs being measured */
        fprintf(stderr, "%s\n", tuning_err.msg);
        return 2;
    }
    const char *name = argc > 1 ? argv[1] : "B32";
    lm_reg_kind reg = argc > 2 && !strcmp(argv[2], "gradient") ? LM_REG_GRADIENT : LM_REG_IDENTITY;
    int probes = argc > 3 ? atoi(argv[3]) : 0;
    lm_error err = {0};
    const lm_problem_def *def = lm_problem_find(name, &err);
    if (!def) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    lm_problem_def clean = *def;
    clean.noise = 0;
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL, *k0 = NULL;
    lm_volume *truth = NULL;
    lm_sens *s = NULL;
    if (lm_problem_make_coils(def, &g, &t, &k, &truth, &s, &err) != LM_OK ||
        lm_problem_make_coils(&clean, NULL, NULL, &k0, NULL, NULL, &err) != LM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const int64_t mt = k->m * k->ncoils, nv = lm_geom_voxels(&g);
    double np = 0, de = 0;
    for (int64_t j = 0; j < mt; j++) {
        np += cabs(k->d[j] - k0->d[j]) * cabs(k->d[j] - k0->d[j]);
        de += cabs(k->d[j]) * cabs(k->d[j]);
    }
    lm_lambda_noise nz = {0};
    if (lm_lambda_noise_outer(&g, t, k, LM_LAMBDA_OUTER_FRAC, &nz, &err) != LM_OK)
        fprintf(stderr, "%s\n", err.msg);
    const double np_est = nz.sigma2_sum * (double)k->m, sig_est = nz.sigma;
    if (argc > 4) {
        printf("%s: true sigma %.5g, outer estimate %.5g (ratio %.3f) from %lld samples per channel\n", name,
               sqrt(np / (double)mt), sig_est, sig_est / sqrt(np / (double)mt), (long long)nz.samples);
        return 0;
    }
    printf("%s %s: M %lld, true sigma %.5g, outer estimate %.5g (ratio %.3f)\n", name, reg == LM_REG_GRADIENT ? "gradient" : "identity", (long long)mt,
           sqrt(np / (double)mt), sig_est, sig_est / sqrt(np / (double)mt));
    lm_encoding *e = NULL;
    lm_encoding_desc ed = {.geom = &g, .traj = t, .sens = s, .variant = "cpu-nufft", .use_cache = 1};
    lm_linop *normal = NULL, *rop = NULL;
    lm_lambda_tik *tik = NULL;
    lm_cfloat *img = malloc((size_t)nv * sizeof *img);
    if (lm_encoding_new(&ed, &e, &err) != LM_OK || lm_encoding_normal_op(e, &normal, &err) != LM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    lm_backend *be = lm_encoding_backend(e);
    lm_cfloat *b = be->alloc(be, nv, "b");
    if (lm_encoding_adjoint(e, k, b, NULL, &err) != LM_OK ||
        (reg != LM_REG_IDENTITY && lm_linop_reg(be, g.n, reg, NULL, &rop, &err) != LM_OK)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    lm_lambda_tik_desc td = {.normal = normal, .reg = rop, .b = b, .d_energy = de, .iters = 60, .probes = probes,
                             .m = k->m, .ncoils = k->ncoils, .adjoint = adj, .adjoint_user = e};
    if (lm_lambda_tik_new(&td, &tik, &err) != LM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    printf("%9s %10s %10s %11s %9s %11s %8s %6s\n", "lambda", "res/np", "res/np_est", "penalty", "dof", "gcv",
           "err %", "iters");
    for (int i = 8; i >= -4; i--) {
        const double lam = pow(10.0, i / 4.0);
        lm_lambda_eval ev;
        if (lm_lambda_tik_solve(tik, lam, probes > 0, &ev, &err) != LM_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        be->download(be, img, lm_lambda_tik_solution(tik), (size_t)nv * sizeof *img);
        lm_metrics mt_ = {0};
        lm_metrics_compute(img, truth->data, nv, NULL, 0, &mt_, &err);
        const double gcv = (double)mt * ev.resid / (((double)mt - ev.dof) * ((double)mt - ev.dof));
        printf("%9.4g %10.4f %10.4f %11.5g %9.1f %11.5g %8.2f %6d\n", lam, ev.resid / np, ev.resid / np_est,
               ev.penalty, ev.dof, gcv, mt_.percent_error, ev.iters);
        fflush(stdout);
    }
    return 0;
}
