/* The priors' building blocks (lm_backend.h, lm_prior.h, lm_wavelet.h):
 * soft and group soft thresholds against their closed forms and against
 * the prox's defining minimisation, the group norm in double, the
 * gradient against its definition, <D x, y> = <x, D^H y> and D^H D =
 * lm_reg_apply's gradient, the wavelet's orthogonality (Psi^H Psi = I to
 * 1e-6, padding included) and Haar on a constant; with a GPU the device
 * operations against the CPU's. */
#include <complex.h>
#include <string.h>

#include "lm_gpu.h"
#include "lm_prior.h"
#include "lm_test.h"
#include "solver_common.h"

static void fill(lm_cfloat *x, int64_t n)
{
    for (int64_t j = 0; j < n; j++)
        x[j] = CMPLXF((float)(2 * tst_uniform() - 1), (float)(2 * tst_uniform() - 1));
}

static double complex dotc(const lm_cfloat *a, const lm_cfloat *b, int64_t n) /* sum conj(a) b */
{
    double complex s = 0;
    for (int64_t j = 0; j < n; j++)
        s += conj((double complex)a[j]) * (double complex)b[j];
    return s;
}

static double nrm(const lm_cfloat *a, int64_t n)
{
    return sqrt(creal(dotc(a, a, n)));
}

/* Prox of t sum_j ||v_j||: closed form, and no random nearby point does
 * better on t ||z||_{2,1} + 1/2 ||z - v||^2 (the prox's definition). */
static void test_shrink(lm_backend *be)
{
    enum { N = 1000 };
    for (int groups = 1; groups <= 3; groups++) {
        lm_cfloat v[3 * N], z[3 * N], zz[3 * N];
        fill(v, groups * N);
        v[0] = 0; /* a zero group stays zero */
        const float t = 0.6f;
        be->shrink(be, N, groups, z, v, t);
        double worst = 0;
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int g = 0; g < groups; g++)
                s += pow(cabs((double complex)v[g * N + j]), 2);
            const double f = sqrt(s) > t ? 1 - t / sqrt(s) : 0;
            for (int g = 0; g < groups; g++)
                worst = fmax(worst, cabs((double complex)z[g * N + j] - f * (double complex)v[g * N + j]));
        }
        CHECK_MSG(worst < 1e-6, "groups %d: shrink differs from the closed form by %g", groups, worst);
        /* in place gives the same */
        memcpy(zz, v, sizeof(lm_cfloat) * groups * N);
        be->shrink(be, N, groups, zz, zz, t);
        CHECK(memcmp(zz, z, sizeof(lm_cfloat) * groups * N) == 0);
        /* the objective at z is minimal among perturbations */
        for (int j = 0; j < 50; j++) {
            double best = 0, obj0 = 0, s = 0;
            for (int g = 0; g < groups; g++) {
                s += pow(cabs((double complex)z[g * N + j]), 2);
                obj0 += 0.5 * pow(cabs((double complex)(z[g * N + j] - v[g * N + j])), 2);
            }
            obj0 += t * sqrt(s);
            best = obj0;
            for (int trial = 0; trial < 20; trial++) {
                double s2 = 0, obj = 0;
                for (int g = 0; g < groups; g++) {
                    double complex p = (double complex)z[g * N + j] +
                                       1e-2 * CMPLX(2 * tst_uniform() - 1, 2 * tst_uniform() - 1);
                    s2 += pow(cabs(p), 2);
                    obj += 0.5 * pow(cabs(p - (double complex)v[g * N + j]), 2);
                }
                obj += t * sqrt(s2);
                best = fmin(best, obj);
            }
            CHECK_MSG(best >= obj0 - 1e-6, "groups %d, value %d: a perturbation lowers the prox objective", groups, j);
        }
        /* group norm in double */
        double ref = 0;
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int g = 0; g < groups; g++)
                s += pow(cabs((double complex)v[g * N + j]), 2);
            ref += sqrt(s);
        }
        CHECK_NEAR(be->group_norm(be, N, groups, v), ref, 1e-9 * ref);
        /* the l2,1 prox object is the same operation */
        lm_prox p = lm_prox_l21(groups);
        p.apply(&p, be, groups * N, zz, v, t);
        CHECK(memcmp(zz, z, sizeof(lm_cfloat) * groups * N) == 0);
        CHECK_NEAR(p.value(&p, be, groups * N, v), ref, 1e-9 * ref);
    }
}

static void test_grad(lm_backend *be, const int64_t n[3])
{
    const int64_t nv = n[0] * n[1] * n[2];
    const int axes = lm_grad_axes(n);
    lm_error err = {0};
    lm_linop *D = NULL;
    CHECK_OK(lm_linop_grad(be, n, &D, &err), &err);
    if (!D)
        return;
    CHECK(D->n_in == nv && D->n_out == axes * nv);
    lm_cfloat *x = malloc(sizeof *x * nv), *y = malloc(sizeof *y * axes * nv), *dx = malloc(sizeof *dx * axes * nv);
    lm_cfloat *dhy = malloc(sizeof *dhy * nv), *dhdx = malloc(sizeof *dhdx * nv), *ref = malloc(sizeof *ref * nv);
    fill(x, nv);
    fill(y, axes * nv);
    CHECK_OK(lm_linop_apply(D, x, dx, &err), &err);
    CHECK_OK(lm_linop_adjoint(D, y, dhy, &err), &err);
    /* the definition: forward differences, zero on an axis' last slice */
    const int64_t st[3] = {1, n[0], n[0] * n[1]};
    double worst = 0;
    for (int64_t v = 0; v < nv; v++) {
        const int64_t idx[3] = {v % n[0], (v / n[0]) % n[1], v / (n[0] * n[1])};
        int g = 0;
        for (int a = 0; a < 3; a++) {
            if (n[a] < 2)
                continue;
            lm_cfloat want = idx[a] + 1 < n[a] ? x[v + st[a]] - x[v] : 0;
            worst = fmax(worst, cabsf(dx[g++ * nv + v] - want));
        }
    }
    CHECK_MSG(worst < 1e-6, "%lldx%lldx%lld: gradient off by %g", (long long)n[0], (long long)n[1],
              (long long)n[2], worst);
    /* adjointness */
    const double complex l = dotc(dx, y, axes * nv), r = dotc(x, dhy, nv);
    CHECK_MSG(cabs(l - r) <= 1e-5 * cabs(l), "<Dx,y> = %g%+gi, <x,D^H y> = %g%+gi", creal(l), cimag(l), creal(r),
              cimag(r));
    /* D^H D is the gradient regulariser's W^H W */
    CHECK_OK(lm_linop_adjoint(D, dx, dhdx, &err), &err);
    lm_reg_apply(n, LM_REG_GRADIENT, NULL, x, ref, 1);
    worst = 0;
    for (int64_t v = 0; v < nv; v++)
        worst = fmax(worst, cabsf(dhdx[v] - ref[v]));
    CHECK_MSG(worst < 1e-5, "D^H D differs from lm_reg_apply by %g", worst);
    lm_reg_apply(n, LM_REG_TV, NULL, x, dhy, 1);
    CHECK(memcmp(dhy, ref, sizeof *ref * nv) == 0);
    free(x), free(y), free(dx), free(dhy), free(dhdx), free(ref);
    lm_linop_free(D);
}

static void test_wavelet(lm_backend *be, const int64_t n[3], lm_wavelet_kind kind)
{
    lm_error err = {0};
    lm_linop *W = NULL;
    lm_code rc = lm_linop_wavelet(be, n, kind, &W, &err);
    if (rc == LM_ERR_UNSUPPORTED) {
        fprintf(stderr, "wavelet: %s\n", err.msg);
        return;
    }
    CHECK_OK(rc, &err);
    if (!W)
        return;
    const int64_t nv = n[0] * n[1] * n[2], m = W->n_out;
    int64_t p[3], want = 1;
    for (int a = 0; a < 3; a++) {
        p[a] = 1;
        while (p[a] < n[a])
            p[a] *= 2;
        want *= p[a];
    }
    CHECK(W->n_in == nv && m == want);
    lm_cfloat *x = malloc(sizeof *x * nv), *c = malloc(sizeof *c * m), *back = malloc(sizeof *back * nv);
    lm_cfloat *c2 = malloc(sizeof *c2 * m), *c3 = malloc(sizeof *c3 * m);
    fill(x, nv);
    CHECK_OK(lm_linop_apply(W, x, c, &err), &err);
    CHECK_OK(lm_linop_adjoint(W, c, back, &err), &err);
    double worst = 0;
    for (int64_t v = 0; v < nv; v++)
        worst = fmax(worst, cabsf(back[v] - x[v]));
    CHECK_MSG(worst < 1e-6, "%s %lldx%lldx%lld: Psi^H Psi x - x = %g", kind == LM_WAVELET_HAAR ? "haar" : "db4",
              (long long)n[0], (long long)n[1], (long long)n[2], worst);
    CHECK_NEAR(nrm(c, m), nrm(x, nv), 1e-6 * nrm(x, nv)); /* an isometry */
    /* adjointness with a random coefficient vector */
    fill(c2, m);
    CHECK_OK(lm_linop_adjoint(W, c2, back, &err), &err);
    const double complex l = dotc(c, c2, m), r = dotc(x, back, nv);
    CHECK(cabs(l - r) <= 1e-5 * cabs(l));
    if (m == nv) { /* no padding: Psi Psi^H = I too */
        CHECK_OK(lm_linop_apply(W, back, c3, &err), &err);
        worst = 0;
        for (int64_t j = 0; j < m; j++)
            worst = fmax(worst, cabsf(c3[j] - c2[j]));
        CHECK_MSG(worst < 1e-6, "Psi Psi^H c - c = %g", worst);
    }
    /* a constant volume has one coefficient: its mean times sqrt(N) */
    if (m == nv && kind == LM_WAVELET_HAAR) {
        for (int64_t v = 0; v < nv; v++)
            x[v] = CMPLXF(2.0f, -1.0f);
        CHECK_OK(lm_linop_apply(W, x, c, &err), &err);
        CHECK(cabs((double complex)c[0] - sqrt((double)nv) * CMPLX(2, -1)) < 1e-4 * sqrt((double)nv));
        double rest = 0;
        for (int64_t j = 1; j < m; j++)
            rest = fmax(rest, cabsf(c[j]));
        CHECK_MSG(rest < 1e-5, "Haar of a constant: coefficient %g off the scaling one", rest);
    }
    free(x), free(c), free(back), free(c2), free(c3);
    lm_linop_free(W);
}

/* The device's operations against the CPU's (skipped without a GPU). */
static void test_gpu(void)
{
    lm_error err = {0};
    lm_backend *g = NULL, *c = NULL;
    if (lm_backend_gpu_new(&g, &err) != LM_OK) {
        fprintf(stderr, "prox: GPU part skipped: %s\n", err.msg);
        return;
    }
    CHECK_OK(lm_backend_cpu_new(1, &c, &err), &err);
    const int64_t n[3] = {17, 12, 9}, nv = n[0] * n[1] * n[2];
    lm_cfloat *x = malloc(sizeof *x * 3 * nv), *hc = malloc(sizeof *hc * 3 * nv), *hg = malloc(sizeof *hg * 3 * nv);
    fill(x, 3 * nv);
    lm_cfloat *dx = g->alloc(g, 3 * nv, "x"), *dy = g->alloc(g, 3 * nv, "y");
    g->upload(g, dx, x, sizeof *x * 3 * nv);
    /* gradient */
    c->grad(c, n, hc, x);
    g->grad(g, n, dy, dx);
    g->download(g, hg, dy, sizeof *hg * 3 * nv);
    double worst = 0;
    for (int64_t j = 0; j < 3 * nv; j++)
        worst = fmax(worst, cabsf(hc[j] - hg[j]));
    CHECK_MSG(worst < 1e-6, "GPU gradient differs by %g", worst);
    /* adjoint */
    c->grad_adj(c, n, hc, x);
    g->grad_adj(g, n, dy, dx);
    g->download(g, hg, dy, sizeof *hg * nv);
    worst = 0;
    for (int64_t j = 0; j < nv; j++)
        worst = fmax(worst, cabsf(hc[j] - hg[j]));
    CHECK_MSG(worst < 1e-5, "GPU gradient adjoint differs by %g", worst);
    /* shrink and group norm */
    c->shrink(c, nv, 3, hc, x, 0.7f);
    g->shrink(g, nv, 3, dy, dx, 0.7f);
    g->download(g, hg, dy, sizeof *hg * 3 * nv);
    worst = 0;
    for (int64_t j = 0; j < 3 * nv; j++)
        worst = fmax(worst, cabsf(hc[j] - hg[j]));
    CHECK_MSG(worst < 1e-6, "GPU shrink differs by %g", worst);
    const double nc = c->group_norm(c, nv, 3, x), ng = g->group_norm(g, nv, 3, dx);
    CHECK_NEAR(ng, nc, 1e-9 * nc);
    CHECK_OK(g->check(g, &err), &err);
    /* the wavelet through the host */
    lm_linop *wc = NULL, *wg = NULL;
    if (lm_linop_wavelet(c, n, LM_WAVELET_DB4, &wc, &err) == LM_OK) {
        CHECK_OK(lm_linop_wavelet(g, n, LM_WAVELET_DB4, &wg, &err), &err);
        lm_cfloat *dc = g->alloc(g, wg->n_out, "c");
        lm_cfloat *hcw = malloc(sizeof *hcw * wc->n_out), *hgw = malloc(sizeof *hgw * wc->n_out);
        CHECK_OK(lm_linop_apply(wc, x, hcw, &err), &err);
        CHECK_OK(lm_linop_apply(wg, dx, dc, &err), &err);
        g->download(g, hgw, dc, sizeof *hgw * wg->n_out);
        CHECK(memcmp(hcw, hgw, sizeof *hgw * wg->n_out) == 0);
        g->release(g, dc);
        free(hcw), free(hgw);
    }
    lm_linop_free(wc);
    lm_linop_free(wg);
    g->release(g, dx);
    g->release(g, dy);
    free(x), free(hc), free(hg);
    lm_backend_free(g);
    lm_backend_free(c);
}

int main(void)
{
    lm_error err = {0};
    lm_backend *be = NULL;
    CHECK_OK(lm_backend_cpu_new(2, &be, &err), &err);
    if (!be)
        return 1;
    test_shrink(be);
    const int64_t sizes[][3] = {{5, 6, 7}, {8, 7, 1}, {1, 9, 4}, {64, 48, 1}, {40, 40, 40}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        test_grad(be, sizes[i]);
    const int64_t wsizes[][3] = {{16, 8, 4}, {32, 32, 1}, {12, 10, 1}, {9, 5, 3}, {64, 64, 64}};
    for (size_t i = 0; i < sizeof wsizes / sizeof wsizes[0]; i++) {
        test_wavelet(be, wsizes[i], LM_WAVELET_HAAR);
        test_wavelet(be, wsizes[i], LM_WAVELET_DB4);
    }
    lm_error e2 = {0};
    CHECK(lm_linop_grad(be, (const int64_t[3]){1, 1, 1}, &(lm_linop *){NULL}, &e2) == LM_ERR_INVALID);
    lm_prior *pr = NULL;
    CHECK(lm_prior_new(be, (const int64_t[3]){8, 8, 1}, LM_REG_GRADIENT, &pr, &e2) == LM_ERR_INVALID && !pr);
    CHECK_OK(lm_backend_take_error(be, &err), &err);
    lm_backend_free(be);
    test_gpu();
    return lm_test_finish("prox");
}
