/* Composed operators (lm_linop.h, lm_linop_algebra.c, lm_linop_fourier.h):
 * every combination against the dense product it stands for (double),
 * the adjointness of each, the encoding composed from F, maps, phases and
 * interpolators against the fused encoding (1e-5) and a double-precision
 * direct sum, the fused normal operator lm_linop_gram recognises against
 * E^H E by two applications, and LSQR (E and E^H only) against CG. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fm_common.h"
#include "lm_backend.h"
#include "lm_cg.h"
#include "lm_encoding.h"
#include "lm_linop.h"
#include "lm_linop_fourier.h"
#include "lm_lsqr.h"
#include "lm_sums.h"
#include "lm_test.h"

/* ---- dense leaves ---- */

typedef struct dense {
    int64_t rows, cols;
    double complex *a; /* row-major */
} dense;

static lm_code dense_apply(lm_linop *op, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    const dense *d = op->state;
    for (int64_t i = 0; i < d->rows; i++) {
        double complex acc = 0;
        for (int64_t j = 0; j < d->cols; j++)
            acc += d->a[i * d->cols + j] * x[j];
        y[i] = (lm_cfloat)acc;
    }
    return LM_OK;
}

static lm_code dense_adjoint(lm_linop *op, const lm_cfloat *y, lm_cfloat *x, lm_error *err)
{
    const dense *d = op->state;
    for (int64_t j = 0; j < d->cols; j++) {
        double complex acc = 0;
        for (int64_t i = 0; i < d->rows; i++)
            acc += conj(d->a[i * d->cols + j]) * y[i];
        x[j] = (lm_cfloat)acc;
    }
    return LM_OK;
}

static void dense_destroy(lm_linop *op)
{
    dense *d = op->state;
    free(d->a);
    free(d);
}

static double complex crand(void)
{
    return CMPLX(2 * fm_uniform() - 1, 2 * fm_uniform() - 1);
}

static lm_linop *dense_new(lm_backend *be, int64_t rows, int64_t cols)
{
    lm_linop *op = lm_linop_new(be, cols, rows, "dense", NULL);
    dense *d = calloc(1, sizeof *d);
    d->rows = rows, d->cols = cols;
    d->a = malloc((size_t)(rows * cols) * sizeof *d->a);
    for (int64_t i = 0; i < rows * cols; i++)
        d->a[i] = crand();
    op->state = d;
    op->apply = dense_apply;
    op->adjoint = dense_adjoint;
    op->destroy = dense_destroy;
    return op;
}

/* The dense matrix of any operator, column by column. */
static double complex *matrix_of(lm_linop *op, int adjoint)
{
    const int64_t rows = adjoint ? op->n_in : op->n_out, cols = adjoint ? op->n_out : op->n_in;
    double complex *m = malloc((size_t)(rows * cols) * sizeof *m);
    lm_cfloat *e = calloc((size_t)cols, sizeof *e), *y = malloc((size_t)rows * sizeof *y);
    lm_error err = {0};
    for (int64_t j = 0; j < cols; j++) {
        e[j] = 1;
        CHECK((adjoint ? lm_linop_adjoint(op, e, y, &err) : lm_linop_apply(op, e, y, &err)) == LM_OK);
        for (int64_t i = 0; i < rows; i++)
            m[i * cols + j] = y[i];
        e[j] = 0;
    }
    free(e), free(y);
    return m;
}

static double rel_diff(const double complex *a, const double complex *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num += creal((a[i] - b[i]) * conj(a[i] - b[i]));
        den += creal(b[i] * conj(b[i]));
    }
    return sqrt(num / den);
}

/* The operator's matrix equals want (rows x cols), and its adjoint's
 * matrix is the conjugate transpose of its own. */
static void check_matrix(lm_linop *op, const double complex *want, const char *what)
{
    const int64_t rows = op->n_out, cols = op->n_in;
    double complex *m = matrix_of(op, 0), *mh = matrix_of(op, 1);
    double complex *mt = malloc((size_t)(rows * cols) * sizeof *mt);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            mt[i * cols + j] = conj(mh[j * rows + i]);
    const double e1 = rel_diff(m, want, rows * cols), e2 = rel_diff(mt, m, rows * cols);
    printf("  %-10s matrix %.2e, adjoint %.2e\n", what, e1, e2);
    CHECK(e1 < 1e-6);
    CHECK(e2 < 1e-6);
    free(m), free(mh), free(mt);
}

static void matmul(const double complex *a, const double complex *b, int64_t r, int64_t k, int64_t c,
                   double complex *out)
{
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) {
            double complex acc = 0;
            for (int64_t q = 0; q < k; q++)
                acc += a[i * k + q] * b[q * c + j];
            out[i * c + j] = acc;
        }
}

static void test_algebra(void)
{
    lm_backend *be = NULL;
    lm_error err = {0};
    CHECK(lm_backend_cpu_new(1, &be, &err) == LM_OK);
    lm_linop *a = dense_new(be, 4, 3), *b = dense_new(be, 5, 4), *c = dense_new(be, 4, 3);
    double complex *ma = matrix_of(a, 0), *mb = matrix_of(b, 0), *mc = matrix_of(c, 0);
    double complex want[60];

    lm_linop *op = NULL;
    CHECK(lm_linop_chain(a, b, &op, &err) == LM_OK); /* b a: 5 x 3 */
    matmul(mb, ma, 5, 4, 3, want);
    check_matrix(op, want, "chain");
    lm_linop_free(op);

    const double coef[2] = {0.5, -2.0};
    lm_linop *ac[2] = {a, c};
    CHECK(lm_linop_sum_n(2, ac, coef, &op, &err) == LM_OK);
    for (int i = 0; i < 12; i++)
        want[i] = 0.5 * ma[i] - 2.0 * mc[i];
    check_matrix(op, want, "sum");
    lm_linop_free(op);

    CHECK(lm_linop_stack(2, ac, &op, &err) == LM_OK); /* 8 x 3 */
    for (int i = 0; i < 12; i++)
        want[i] = ma[i], want[12 + i] = mc[i];
    check_matrix(op, want, "stack");
    lm_linop_free(op);

    CHECK(lm_linop_adjoint_op(a, &op, &err) == LM_OK); /* 3 x 4 */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            want[i * 4 + j] = conj(ma[j * 3 + i]);
    check_matrix(op, want, "adjoint");
    lm_linop_free(op);

    lm_cfloat d[4];
    for (int i = 0; i < 4; i++)
        d[i] = (lm_cfloat)crand();
    CHECK(lm_linop_cdiag(be, 4, d, 0, &op, &err) == LM_OK);
    for (int i = 0; i < 16; i++)
        want[i] = i % 5 == 0 ? (double complex)d[i / 5] : 0;
    check_matrix(op, want, "cdiag");
    lm_linop_free(op);

    lm_cfloat s[2 * 3]; /* 2 coils of 3 voxels */
    for (int i = 0; i < 6; i++)
        s[i] = (lm_cfloat)crand();
    CHECK(lm_linop_maps(be, 3, 2, s, &op, &err) == LM_OK); /* 6 x 3 */
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 3; j++)
            want[i * 3 + j] = i % 3 == j ? (double complex)s[i] : 0;
    check_matrix(op, want, "maps");
    lm_linop_free(op);

    CHECK(lm_linop_repeat(a, 2, &op, &err) == LM_OK); /* 8 x 6, block diagonal */
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 6; j++)
            want[i * 6 + j] = i / 4 == j / 3 ? ma[(i % 4) * 3 + j % 3] : 0;
    check_matrix(op, want, "repeat");
    lm_linop_free(op);

    /* a composition outlives the parts the caller frees first */
    CHECK(lm_linop_chain(a, b, &op, &err) == LM_OK);
    lm_linop_free(a), lm_linop_free(b);
    matmul(mb, ma, 5, 4, 3, want);
    check_matrix(op, want, "chain kept");
    lm_linop_free(op);

    /* sizes that do not fit are refused with a message */
    CHECK(lm_linop_chain(c, c, &op, &err) == LM_ERR_INVALID && op == NULL);
    CHECK(err.msg[0] != 0);
    lm_linop_free(c);
    free(ma), free(mb), free(mc);
    lm_backend_free(be);
}

/* ---- the encoding, composed ---- */

#define N2 24

static lm_sens *smooth_maps(const lm_geom *g, int nc)
{
    lm_sens *s = lm_sens_new(g->n, nc, NULL);
    const int64_t nv = lm_geom_voxels(g);
    for (int c = 0; c < nc; c++) {
        const double cx = 0.4 * cos(2 * M_PI * c / nc), cy = 0.4 * sin(2 * M_PI * c / nc);
        for (int64_t v = 0; v < nv; v++) {
            const double x = lm_voxel_pos(v % g->n[0], g->n[0]), y = lm_voxel_pos(v / g->n[0], g->n[1]);
            const double r2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
            s->s[c * nv + v] = (lm_cfloat)(exp(-r2 / 0.3) * cexp(I * (1.3 * c + 2 * x)));
        }
    }
    return s;
}

static double rel_f(const lm_cfloat *a, const lm_cfloat *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        const lm_cfloat e = a[i] - b[i];
        num += (double)crealf(e * conjf(e));
        den += (double)crealf(b[i] * conjf(b[i]));
    }
    return sqrt(num / den);
}

/* <E x, d> against <x, E^H d>. */
static double adjointness(lm_linop *E, const lm_cfloat *x, const lm_cfloat *d, lm_cfloat *ex, lm_cfloat *ehd)
{
    lm_error err = {0};
    CHECK(lm_linop_apply(E, x, ex, &err) == LM_OK);
    CHECK(lm_linop_adjoint(E, d, ehd, &err) == LM_OK);
    double complex a = 0, b = 0;
    for (int64_t i = 0; i < E->n_out; i++)
        a += conj((double complex)ex[i]) * d[i];
    for (int64_t i = 0; i < E->n_in; i++)
        b += conj((double complex)x[i]) * ehd[i];
    return cabs(a - b) / cabs(b);
}

typedef struct enc_case {
    const char *name, *variant;
    int coils, fieldmap, segments;
    double ref_tol; /* against the double direct sum */
} enc_case;

static void test_encoding_case(const enc_case *c)
{
    lm_geom g;
    lm_geom_init(&g, N2, N2, 1, 240);
    lm_traj *t = fm_spiral(N2);
    float *f = c->fieldmap ? fm_fieldmap(&g) : NULL;
    float *fz = NULL;
    if (!f) { /* the double reference wants a field map: zero */
        fz = calloc((size_t)lm_geom_voxels(&g), sizeof *fz);
    }
    lm_sens *s = c->coils > 1 ? smooth_maps(&g, c->coils) : NULL;
    lm_error err = {0};
    lm_encoding_desc d = {.geom = &g, .traj = t, .sens = s, .variant = c->variant, .fieldmap = f,
                          .segments = c->segments, .use_cache = 0, .threads = 0};
    lm_encoding *e = NULL;
    CHECK(lm_encoding_new(&d, &e, &err) == LM_OK);
    lm_linop *E = NULL;
    CHECK(lm_encoding_op(e, &E, &err) == LM_OK);
    const int64_t nv = lm_geom_voxels(&g), m = t->m, nc = lm_encoding_coils(e);
    CHECK(E->n_in == nv && E->n_out == m * nc);

    lm_cfloat *x = malloc((size_t)nv * sizeof *x), *xd = malloc((size_t)nv * sizeof *xd);
    lm_cfloat *ex = malloc((size_t)(m * nc) * sizeof *ex), *ehd = malloc((size_t)nv * sizeof *ehd);
    lm_kdata *kd = lm_kdata_new(m, nc, NULL);
    double complex *xr = malloc((size_t)nv * sizeof *xr), *dr = malloc((size_t)(m * nc) * sizeof *dr);
    double complex *ar = malloc((size_t)nv * sizeof *ar);
    for (int64_t i = 0; i < nv; i++)
        x[i] = (lm_cfloat)(xr[i] = crand());
    for (int64_t i = 0; i < m * nc; i++)
        kd->d[i] = (lm_cfloat)(dr[i] = crand());

    /* composed against fused */
    CHECK(lm_linop_apply(E, x, ex, &err) == LM_OK);
    CHECK(lm_linop_adjoint(E, kd->d, ehd, &err) == LM_OK);
    lm_kdata *fused = lm_kdata_new(m, nc, NULL);
    CHECK(lm_encoding_forward(e, x, fused, &err) == LM_OK);
    CHECK(lm_encoding_adjoint(e, kd, xd, NULL, &err) == LM_OK);
    const double ef = rel_f(ex, fused->d, m * nc), ea = rel_f(ehd, xd, nv);

    /* against the direct sum in double (segments carry their interpolation error) */
    fm_forward(&g, t, f ? f : fz, s ? s->s : NULL, nc, xr, dr);
        const double rf = fm_rel(ex, dr, m * nc);
    for (int64_t i = 0; i < m * nc; i++) /* the adjoint's reference on the random data */
        dr[i] = kd->d[i];
    fm_adjoint(&g, t, f ? f : fz, s ? s->s : NULL, nc, dr, ar);
    const double ra = fm_rel(ehd, ar, nv);
    const double adj = adjointness(E, x, kd->d, ex, ehd);
    printf("  %-22s fused: E %.1e E^H %.1e   direct sum: E %.1e E^H %.1e   adjointness %.1e\n", c->name, ef, ea,
           rf, ra, adj);
    CHECK(ef < 1e-5);
    CHECK(ea < 1e-5);
    CHECK(rf < c->ref_tol);
    CHECK(ra < c->ref_tol);
    CHECK(adj < 1e-5);

    /* E's normal operator is the encoding's fused one once made */
    lm_linop *N = NULL, *G = NULL;
    CHECK(lm_encoding_normal_op(e, &N, &err) == LM_OK);
    CHECK(lm_linop_gram(E, &G, &err) == LM_OK);
    CHECK(G == N);
    lm_linop_free(G);

    free(x), free(xd), free(ex), free(ehd), free(xr), free(dr), free(ar);
    lm_kdata_free(kd), lm_kdata_free(fused);
    lm_encoding_free(e);
    lm_sens_free(s);
    free(f), free(fz);
    lm_traj_free(t);
}

static void test_encoding(void)
{
    const enc_case cases[] = {
        {"one coil, cpu-nufft", "cpu-nufft", 1, 0, 0, 1e-5},
        {"one coil, cpu-simd", "cpu-simd", 1, 0, 0, 1e-5},
        {"4 coils, cpu-nufft", "cpu-nufft", 4, 0, 0, 1e-5},
        {"4 coils, field map exact", "cpu-simd", 4, 1, 0, 1e-5},
        {"4 coils, automatic segments", "cpu-nufft", 4, 1, LM_SEGMENTS_AUTO, 1e-2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        test_encoding_case(&cases[i]);
}

/* ---- the fused coil sum that lm_linop_gram recognises ---- */

static void test_gram_sense(void)
{
    lm_geom g;
    lm_geom_init(&g, N2, N2, 1, 240);
    lm_traj *t = fm_spiral(N2);
    lm_sens *s = smooth_maps(&g, 3);
    lm_error err = {0};
    lm_backend *be = NULL;
    CHECK(lm_backend_cpu_new(0, &be, &err) == LM_OK);
    const lm_variant *v = lm_sums_variant("cpu-nufft", &err);
    CHECK(v != NULL);
    lm_linop *F = NULL, *S = NULL, *R = NULL, *E = NULL, *T = NULL, *G = NULL, *Gslow = NULL;
    CHECK(lm_linop_fourier(be, &g, t, v, NULL, 0, &F, &err) == LM_OK);
    CHECK(lm_linop_maps(be, lm_geom_voxels(&g), 3, s->s, &S, &err) == LM_OK);
    CHECK(lm_linop_repeat(F, 3, &R, &err) == LM_OK);
    CHECK(lm_linop_chain(S, R, &E, &err) == LM_OK);
    CHECK(lm_linop_gram(E, &Gslow, &err) == LM_OK); /* F carries no normal yet: two applications */
    lm_cfloat *q = NULL;
    CHECK(lm_compute_q(&g, t, "cpu-nufft", 0, NULL, &q, NULL, &err) == LM_OK);
    CHECK(lm_linop_toeplitz(be, g.n, q, 0, &T, &err) == LM_OK);
    lm_linop_set_normal(F, T);
    CHECK(lm_linop_gram(E, &G, &err) == LM_OK);
    CHECK(G != Gslow && G->n_in == G->n_out);
    const int64_t nv = lm_geom_voxels(&g);
    lm_cfloat *x = malloc((size_t)nv * sizeof *x), *y1 = malloc((size_t)nv * sizeof *y1),
              *y2 = malloc((size_t)nv * sizeof *y2);
    for (int64_t i = 0; i < nv; i++)
        x[i] = (lm_cfloat)crand();
    CHECK(lm_linop_apply(G, x, y1, &err) == LM_OK);
    CHECK(lm_linop_apply(Gslow, x, y2, &err) == LM_OK);
    const double e = rel_f(y1, y2, nv);
    printf("  fused sum_c S_c^H T S_c against E^H (E x): %.1e\n", e);
    CHECK(e < 1e-4);
    CHECK(G->diag > 0);
    free(x), free(y1), free(y2), free(q);
    lm_linop_free(G), lm_linop_free(Gslow), lm_linop_free(T);
    lm_linop_free(E), lm_linop_free(R), lm_linop_free(S), lm_linop_free(F);
    lm_backend_free(be);
    lm_sens_free(s);
    lm_traj_free(t);
}

/* ---- LSQR (E, E^H only) against CG (Toeplitz normal operator) ---- */

static void test_lsqr_vs_cg(void)
{
    lm_geom g;
    lm_geom_init(&g, N2, N2, 1, 240);
    lm_traj *t = fm_spiral(N2);
    lm_sens *s = smooth_maps(&g, 4);
    lm_error err = {0};
    lm_encoding_desc d = {.geom = &g, .traj = t, .sens = s, .variant = "cpu-nufft", .threads = 0};
    lm_encoding *e = NULL;
    CHECK(lm_encoding_new(&d, &e, &err) == LM_OK);
    lm_backend *be = lm_encoding_backend(e);
    const int64_t nv = lm_geom_voxels(&g), m = t->m, nc = 4;
    /* data of a smooth object, through the double direct sum (no inverse crime with the NUFFT) */
    double complex *xr = malloc((size_t)nv * sizeof *xr), *dr = malloc((size_t)(m * nc) * sizeof *dr);
    for (int64_t v = 0; v < nv; v++) {
        const double x = lm_voxel_pos(v % N2, N2), y = lm_voxel_pos(v / N2, N2);
        xr[v] = x * x + y * y < 0.16 ? 1.0 + 0.5 * x : 0.0;
    }
    float *fz = calloc((size_t)nv, sizeof *fz);
    fm_forward(&g, t, fz, s->s, nc, xr, dr);
    lm_kdata *kd = lm_kdata_new(m, nc, NULL);
    for (int64_t i = 0; i < m * nc; i++)
        kd->d[i] = (lm_cfloat)dr[i];

    lm_linop *E = NULL, *N = NULL, *R = NULL, *A = NULL;
    CHECK(lm_encoding_op(e, &E, &err) == LM_OK);
    CHECK(lm_encoding_normal_op(e, &N, &err) == LM_OK);
    const double lambda = 0.05, damp2 = lambda * N->diag;
    CHECK(lm_linop_reg(be, g.n, LM_REG_IDENTITY, NULL, &R, &err) == LM_OK);
    CHECK(lm_linop_sum(N, R, damp2, &A, &err) == LM_OK);
    lm_cfloat *b = malloc((size_t)nv * sizeof *b), *xcg = malloc((size_t)nv * sizeof *xcg),
              *xls = malloc((size_t)nv * sizeof *xls);
    CHECK(lm_encoding_adjoint(e, kd, b, NULL, &err) == LM_OK);
    lm_cg_params cp = {.iters = 300, .tol = 1e-7};
    lm_cg_report cr = {0};
    CHECK(lm_cg(A, b, xcg, &cp, &cr, &err) == LM_OK);
    free(cr.resid_history);
    lm_lsqr_params lp = {.iters = 300, .damp = sqrt(damp2), .tol = 1e-7};
    lm_lsqr_report lr = {0};
    CHECK(lm_lsqr(E, kd->d, xls, &lp, &lr, &err) == LM_OK);
    const double diff = rel_f(xls, xcg, nv);
    printf("  LSQR (%d iterations) against CG (%d): %.2e\n", lr.iters_done, cr.iters_done, diff);
    CHECK(diff < 1e-3);
    /* and it is not the trivial answer: the object is recovered */
    double num = 0, den = 0;
    for (int64_t v = 0; v < nv; v++) {
        num += cabs(xls[v] - xr[v]) * cabs(xls[v] - xr[v]);
        den += cabs(xr[v]) * cabs(xr[v]);
    }
    printf("  LSQR error against the object: %.1f %%\n", 100 * sqrt(num / den));
    CHECK(sqrt(num / den) < 0.3);
    /* a bad damping is refused */
    lp.damp = -1;
    CHECK(lm_lsqr(E, kd->d, xls, &lp, &lr, &err) == LM_ERR_INVALID);
    free(b), free(xcg), free(xls), free(xr), free(dr), free(fz);
    lm_kdata_free(kd);
    lm_linop_free(A), lm_linop_free(R);
    lm_encoding_free(e);
    lm_sens_free(s);
    lm_traj_free(t);
}

int main(void)
{
    test_algebra();
    test_encoding();
    test_gram_sense();
    test_lsqr_vs_cg();
    return lm_test_finish("linop_compose");
}
