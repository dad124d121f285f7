/* The Toeplitz product F^H F x through Q on the 2x grid against the direct
 * double-precision F^H (F x), on 2D, 3D and odd-sized problems. */
#include <string.h>

#include "lm_solver.h"
#include "lm_test.h"
#include "solver_common.h"

static void check_case(int64_t nx, int64_t ny, int64_t nz, int64_t m, lm_basis basis)
{
    lm_geom g;
    lm_geom_init(&g, nx, ny, nz, 240);
    g.basis = basis;
    lm_traj *t = tst_random_traj(&g, m);
    int64_t nv = lm_geom_voxels(&g);
    int padded = (nx > 1) + (ny > 1) + (nz > 1);
    CHECK(lm_q_count(g.n) == (1 << padded) * nv);
    lm_cfloat *q = tst_q_direct(&g, t);

    double complex *x = malloc((size_t)nv * sizeof *x), *ref = malloc((size_t)nv * sizeof *ref);
    double complex *d = malloc((size_t)m * sizeof *d);
    lm_cfloat *xf = malloc((size_t)nv * sizeof *xf), *yf = malloc((size_t)nv * sizeof *yf);
    lm_cfloat *zf = malloc((size_t)nv * sizeof *zf);
    for (int64_t v = 0; v < nv; v++) {
        x[v] = CMPLX(tst_uniform() - 0.5, tst_uniform() - 0.5);
        xf[v] = (lm_cfloat)x[v];
    }
    tst_forward(&g, t, x, d);
    tst_adjoint_raw(&g, t, d, ref);
    for (int64_t v = 0; v < nv; v++)
        ref[v] /= (double)nv; /* F^H = raw / N */

    lm_error err = {0};
    lm_toeplitz *op = NULL;
    CHECK_OK(lm_toeplitz_new(g.n, q, 2, &op, &err), &err);
    if (!op)
        return;
    lm_toeplitz_apply(op, xf, yf);
    double num = 0, den = 0;
    for (int64_t v = 0; v < nv; v++) {
        num += pow(cabs((double complex)yf[v] - ref[v]), 2);
        den += pow(cabs(ref[v]), 2);
    }
    double rel = sqrt(num / den);
    fprintf(stderr, "toeplitz %lldx%lldx%lld m=%lld basis=%d: rel err %.3g\n", (long long)nx,
            (long long)ny, (long long)nz, (long long)m, (int)basis, rel);
    CHECK_MSG(rel <= 1e-4, "rel error %g", rel);

    /* s = Re Q(0) / N^2 = sum |phi|^2 / N^2 */
    double s = 0;
    for (int64_t j = 0; j < m; j++) {
        double ph = lm_geom_phi(&g, t->k[3 * j], t->k[3 * j + 1], t->k[3 * j + 2]);
        s += ph * ph;
    }
    s /= (double)nv * (double)nv;
    CHECK_NEAR(lm_toeplitz_diag(op), s, 1e-5 * s);

    /* Hermitian: <z, A x> == <A z, x>; in place apply works. */
    for (int64_t v = 0; v < nv; v++)
        zf[v] = CMPLXF((float)tst_uniform(), (float)tst_uniform());
    double complex zax = 0, azx = 0;
    for (int64_t v = 0; v < nv; v++)
        zax += conj(zf[v]) * yf[v];
    lm_toeplitz_apply(op, zf, zf);
    for (int64_t v = 0; v < nv; v++)
        azx += conj(zf[v]) * xf[v];
    CHECK_MSG(cabs(zax - azx) <= 1e-4 * cabs(zax), "<z,Ax> %g%+gi vs <Az,x> %g%+gi", creal(zax),
              cimag(zax), creal(azx), cimag(azx));

    /* One coil fused: y0 + conj(s) . A (s . x) against the same steps one
     * by one (map products on the first and last passes). */
    {
        lm_cfloat *sm = malloc((size_t)nv * sizeof *sm), *acc = malloc((size_t)nv * sizeof *acc);
        lm_cfloat *tmp = malloc((size_t)nv * sizeof *tmp);
        for (int64_t v = 0; v < nv; v++) {
            sm[v] = CMPLXF((float)tst_uniform() - 0.3f, (float)tst_uniform() - 0.6f);
            acc[v] = CMPLXF((float)tst_uniform(), -(float)tst_uniform());
            tmp[v] = sm[v] * xf[v];
        }
        lm_toeplitz_apply(op, tmp, tmp);
        double e = 0, n2 = 0;
        lm_cfloat *y2 = malloc((size_t)nv * sizeof *y2);
        memcpy(y2, acc, (size_t)nv * sizeof *y2);
        lm_toeplitz_apply_coil(op, xf, sm, y2, 1);
        for (int64_t v = 0; v < nv; v++) {
            const double complex want = (double complex)acc[v] + conj((double complex)sm[v]) * (double complex)tmp[v];
            e += pow(cabs((double complex)y2[v] - want), 2);
            n2 += pow(cabs(want), 2);
        }
        CHECK_MSG(sqrt(e / n2) <= 1e-6, "coil product, accumulated: rel err %g", sqrt(e / n2));
        lm_toeplitz_apply_coil(op, xf, NULL, y2, 0); /* no map, no sum: the plain product */
        e = n2 = 0;
        for (int64_t v = 0; v < nv; v++) {
            e += pow(cabs((double complex)y2[v] - (double complex)yf[v]), 2);
            n2 += pow(cabs((double complex)yf[v]), 2);
        }
        CHECK_MSG(sqrt(e / n2) <= 1e-6, "coil product without a map: rel err %g", sqrt(e / n2));
        free(sm), free(acc), free(tmp), free(y2);
    }

    lm_toeplitz_free(op);
    free(x), free(ref), free(d), free(xf), free(yf), free(zf), free(q);
    lm_traj_free(t);
}

int main(void)
{
    check_case(8, 8, 8, 200, LM_BASIS_BOX);
    check_case(16, 12, 1, 200, LM_BASIS_BOX);
    check_case(5, 7, 3, 150, LM_BASIS_DIRAC);
    check_case(9, 6, 1, 100, LM_BASIS_DIRAC);
    check_case(6, 4, 10, 120, LM_BASIS_BOX);
    /* Flat axes anywhere, tiles with a partial last block (n > 16). */
    check_case(1, 6, 5, 80, LM_BASIS_BOX);
    check_case(7, 1, 4, 80, LM_BASIS_BOX);
    check_case(9, 1, 1, 30, LM_BASIS_BOX);
    check_case(1, 1, 1, 10, LM_BASIS_DIRAC);
    check_case(20, 18, 1, 300, LM_BASIS_BOX);
    return lm_test_finish("toeplitz");
}
