/* gpu-nufft's persistent plan (lm_gpu_nufft_*): a 32^3 matrix (and a 64^2
 * one) with uniform random samples plus radial spokes through k = 0 (hot
 * centre bins). Type 1 and type 2 through the plan against a
 * double-precision direct sum (relative error over 400 voxels / 300
 * samples at most TOL), adjoint to each other (<F^H w, x> = <w, F x>
 * within TOL), warm calls equal the cold first call and a second plan's
 * (reproducible spreading, the default: bit for bit; float atomics,
 * lm_tuning.gpu_nufft_repro 0: within SAME), and the encoding's E^H d and
 * E x of 5 channels (groups of 4 + 1) through the plan equal the one-shot
 * lm_gpu_adjoint / lm_gpu_forward within SAME. Both accumulations are
 * checked against the direct sums. */
#include <complex.h>
#include <string.h>

#include "gpu_util.h"
#include "lm_metrics.h"
#include "lm_tuning.h"

#define TOL 2e-5
#define SAME 1e-6

static lm_traj *make_traj(int64_t n, int d3, int64_t nrand, int spokes, int per_spoke)
{
    lm_error err = {0};
    const int64_t m = nrand + (int64_t)spokes * per_spoke;
    lm_traj *t = lm_traj_new(m, d3 ? 3 : 2, &err);
    const double kmax = 0.5 * (double)n;
    int64_t j = 0;
    for (; j < nrand; j++)
        for (int a = 0; a < 3; a++)
            t->k[3 * j + a] = a == 2 && !d3 ? 0.0f : (float)((2 * gu_uniform() - 1) * kmax * 0.999);
    for (int s = 0; s < spokes; s++) {
        double dir[3] = {2 * gu_uniform() - 1, 2 * gu_uniform() - 1, d3 ? 2 * gu_uniform() - 1 : 0};
        const double len = sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]) + 1e-12;
        for (int q = 0; q < per_spoke; q++, j++) {
            const double r = kmax * 0.99 * (double)(q - per_spoke / 2) / (double)(per_spoke / 2); /* q = per_spoke/2: k = 0 */
            for (int a = 0; a < 3; a++)
                t->k[3 * j + a] = (float)(r * dir[a] / len);
        }
    }
    return t;
}

/* sum_m w_m exp(+i 2 pi k_m . (i - n/2)/n) at voxel v (double) */
static double complex type1_ref(const lm_geom *g, const lm_traj *t, const lm_cfloat *w, int64_t v)
{
    const int64_t i0 = v % g->n[0], i1 = (v / g->n[0]) % g->n[1], i2 = v / (g->n[0] * g->n[1]);
    const double x0 = lm_voxel_pos(i0, g->n[0]), x1 = lm_voxel_pos(i1, g->n[1]), x2 = lm_voxel_pos(i2, g->n[2]);
    double complex acc = 0;
    for (int64_t j = 0; j < t->m; j++) {
        const double ph = t->k[3 * j] * x0 + t->k[3 * j + 1] * x1 + (g->n[2] > 1 ? t->k[3 * j + 2] * x2 : 0.0);
        acc += (double complex)w[j] * cexp(2.0 * I * M_PI * ph);
    }
    return acc;
}

/* sum_i x_i exp(-i 2 pi k_j . (i - n/2)/n) at sample j (double) */
static double complex type2_ref(const lm_geom *g, const lm_traj *t, const lm_cfloat *x, int64_t j)
{
    const int64_t nv = lm_geom_voxels(g);
    double complex acc = 0;
    for (int64_t v = 0; v < nv; v++) {
        const int64_t i0 = v % g->n[0], i1 = (v / g->n[0]) % g->n[1], i2 = v / (g->n[0] * g->n[1]);
        const double ph = t->k[3 * j] * lm_voxel_pos(i0, g->n[0]) + t->k[3 * j + 1] * lm_voxel_pos(i1, g->n[1]) +
                          (g->n[2] > 1 ? t->k[3 * j + 2] * lm_voxel_pos(i2, g->n[2]) : 0.0);
        acc += (double complex)x[v] * cexp(-2.0 * I * M_PI * ph);
    }
    return acc;
}

static double rel_subset(const lm_cfloat *got, const double complex *ref, const int64_t *idx, int cnt)
{
    double num = 0, den = 0;
    for (int q = 0; q < cnt; q++) {
        const double complex d = (double complex)got[idx[q]] - ref[q];
        num += creal(d * conj(d));
        den += creal(ref[q] * conj(ref[q]));
    }
    return sqrt(num / (den > 0 ? den : 1));
}

static void random_c(lm_cfloat *a, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        a[i] = (float)(2 * gu_uniform() - 1) + I * (float)(2 * gu_uniform() - 1);
}

static void check_case(const char *name, int64_t n, int d3, int repro)
{
    lm_error err = {0};
    lm_geom g;
    lm_geom_init(&g, n, n, d3 ? n : 1, 200.0);
    lm_traj *t = make_traj(n, d3, d3 ? 2000 : 1500, 24, d3 ? 40 : 60);
    const int64_t m = t->m, nv = lm_geom_voxels(&g), nc = 5;
    lm_cfloat *w = malloc((size_t)m * sizeof *w), *x = malloc((size_t)nv * sizeof *x);
    lm_cfloat *y1 = malloc((size_t)nv * sizeof *y1), *y1w = malloc((size_t)nv * sizeof *y1w);
    lm_cfloat *y1b = malloc((size_t)nv * sizeof *y1b), *d2 = malloc((size_t)m * sizeof *d2);
    lm_cfloat *d2w = malloc((size_t)m * sizeof *d2w);
    random_c(w, m);
    random_c(x, nv);
    lm_cfloat *wd = NULL, *xd = NULL, *yd = NULL, *dd = NULL;
    CHECK_OK(lm_gpu_mem_alloc((void **)&wd, (size_t)m * sizeof *wd, "w", &err), &err);
    CHECK_OK(lm_gpu_mem_alloc((void **)&dd, (size_t)m * sizeof *dd, "d", &err), &err);
    CHECK_OK(lm_gpu_mem_alloc((void **)&xd, (size_t)nv * sizeof *xd, "x", &err), &err);
    CHECK_OK(lm_gpu_mem_alloc((void **)&yd, (size_t)nv * sizeof *yd, "y", &err), &err);
    CHECK_OK(lm_gpu_mem_upload(wd, w, (size_t)m * sizeof *w, &err), &err);
    CHECK_OK(lm_gpu_mem_upload(xd, x, (size_t)nv * sizeof *x, &err), &err);

    lm_gpu_nufft *p = NULL, *p2 = NULL;
    CHECK_OK(lm_gpu_nufft_new(&g, t, nc, &p, &err), &err);
    CHECK_OK(lm_gpu_nufft_new(&g, t, 1, &p2, &err), &err);
    if (!p || !p2)
        goto out;
    /* cold (first) and warm calls, and a second plan */
    CHECK_OK(lm_gpu_nufft_type1(p, wd, yd, &err), &err);
    CHECK_OK(lm_gpu_nufft_wait(p, &err), &err);
    CHECK_OK(lm_gpu_mem_download(y1, yd, (size_t)nv * sizeof *y1, &err), &err);
    CHECK_OK(lm_gpu_nufft_type2(p, xd, dd, &err), &err);
    CHECK_OK(lm_gpu_nufft_wait(p, &err), &err);
    CHECK_OK(lm_gpu_mem_download(d2, dd, (size_t)m * sizeof *d2, &err), &err);
    for (int rep = 0; rep < 3; rep++) {
        CHECK_OK(lm_gpu_nufft_type1(p, wd, yd, &err), &err);
        CHECK_OK(lm_gpu_nufft_type2(p, xd, dd, &err), &err);
    }
    CHECK_OK(lm_gpu_nufft_wait(p, &err), &err);
    CHECK_OK(lm_gpu_mem_download(y1w, yd, (size_t)nv * sizeof *y1w, &err), &err);
    CHECK_OK(lm_gpu_mem_download(d2w, dd, (size_t)m * sizeof *d2w, &err), &err);
    CHECK_OK(lm_gpu_nufft_type1(p2, wd, yd, &err), &err);
    CHECK_OK(lm_gpu_nufft_wait(p2, &err), &err);
    CHECK_OK(lm_gpu_mem_download(y1b, yd, (size_t)nv * sizeof *y1b, &err), &err);
    const double warm1 = lm_rel_error_c(y1w, y1, nv), warm2 = lm_rel_error_c(d2w, d2, m);
    const double other = lm_rel_error_c(y1b, y1, nv);
    CHECK_MSG(warm1 < SAME && warm2 < SAME && other < SAME, "%s: warm vs cold %.3g (type 1) %.3g (type 2), second plan %.3g",
              name, warm1, warm2, other);
    if (repro) /* fixed-point sums: the same bits whatever order the atomics land in */
        CHECK_MSG(memcmp(y1w, y1, (size_t)nv * sizeof *y1) == 0 && memcmp(y1b, y1, (size_t)nv * sizeof *y1) == 0,
                  "%s: reproducible type 1 differs run to run (warm %.3g, second plan %.3g)", name, warm1, other);

    /* against the direct sums */
    enum { NV1 = 400, NS2 = 300 };
    int64_t iv[NV1], is[NS2];
    double complex r1[NV1], r2[NS2];
    for (int q = 0; q < NV1; q++) {
        iv[q] = q == 0 ? nv / 2 + n / 2 : (int64_t)(gu_uniform() * (double)nv); /* the centre voxel, then random */
        r1[q] = type1_ref(&g, t, w, iv[q]);
    }
    for (int q = 0; q < NS2; q++) {
        is[q] = q < 10 ? m - 1 - q : (int64_t)(gu_uniform() * (double)m); /* spoke samples, then random */
        r2[q] = type2_ref(&g, t, x, is[q]);
    }
    const double e1 = rel_subset(y1, r1, iv, NV1), e2 = rel_subset(d2, r2, is, NS2);
    /* <F^H w, x> against <w, F x> */
    double complex a = 0, b = 0;
    for (int64_t v = 0; v < nv; v++)
        a += conj((double complex)y1[v]) * x[v];
    for (int64_t j = 0; j < m; j++)
        b += conj((double complex)w[j]) * d2[j];
    const double adj = cabs(a - b) / cabs(a);
    fprintf(stderr, "%s: type 1 rel error %.3g, type 2 %.3g, adjointness %.3g, warm/cold %.2g %.2g, plan/plan %.2g\n",
            name, e1, e2, adj, warm1, warm2, other);
    CHECK_MSG(e1 < TOL, "%s: type 1 rel error %.3g", name, e1);
    CHECK_MSG(e2 < TOL, "%s: type 2 rel error %.3g", name, e2);
    CHECK_MSG(adj < TOL, "%s: adjointness %.3g", name, adj);

    /* the encoding's sums through the plan against the one-shot calls, 5 channels */
    {
        lm_cfloat *s = malloc((size_t)(nv * nc) * sizeof *s), *xa = malloc((size_t)nv * sizeof *xa);
        lm_cfloat *xb = malloc((size_t)nv * sizeof *xb);
        lm_cfloat *fa = malloc((size_t)(m * nc) * sizeof *fa), *fb = malloc((size_t)(m * nc) * sizeof *fb);
        lm_kdata *k = lm_kdata_new(m, nc, &err);
        random_c(s, nv * nc);
        random_c(k->d, m * nc);
        lm_cfloat *sd = NULL;
        CHECK_OK(lm_gpu_mem_alloc((void **)&sd, (size_t)(nv * nc) * sizeof *sd, "maps", &err), &err);
        CHECK_OK(lm_gpu_mem_upload(sd, s, (size_t)(nv * nc) * sizeof *s, &err), &err);
        CHECK_OK(lm_gpu_adjoint(&g, t, k, sd, NULL, "gpu-nufft", yd, NULL, &err), &err);
        CHECK_OK(lm_gpu_mem_download(xa, yd, (size_t)nv * sizeof *xa, &err), &err);
        for (int rep = 0; rep < 2; rep++) /* cold, then warm */
            CHECK_OK(lm_gpu_nufft_adjoint(p, k, sd, yd, NULL, &err), &err);
        CHECK_OK(lm_gpu_mem_download(xb, yd, (size_t)nv * sizeof *xb, &err), &err);
        const double ea = lm_rel_error_c(xb, xa, nv);
        CHECK_OK(lm_gpu_forward(&g, t, xd, sd, nc, "gpu-nufft", fa, &err), &err);
        for (int rep = 0; rep < 2; rep++)
            CHECK_OK(lm_gpu_nufft_forward(p, xd, sd, nc, fb, &err), &err);
        const double ef = lm_rel_error_c(fb, fa, m * nc);
        fprintf(stderr, "%s: E^H d plan vs one-shot %.2g, E x %.2g (%lld channels)\n", name, ea, ef, (long long)nc);
        CHECK_MSG(ea < SAME && ef < SAME, "%s: E^H d plan vs one-shot %.3g, E x %.3g", name, ea, ef);
        /* a plan refuses more channels than it holds */
        k->ncoils = nc + 1;
        CHECK(lm_gpu_nufft_adjoint(p, k, sd, yd, NULL, &err) == LM_ERR_INVALID);
        k->ncoils = nc;
        lm_gpu_mem_free(sd);
        lm_kdata_free(k);
        free(s), free(xa), free(xb), free(fa), free(fb);
    }
out:
    lm_gpu_nufft_free(p);
    lm_gpu_nufft_free(p2);
    lm_gpu_mem_free(wd), lm_gpu_mem_free(dd), lm_gpu_mem_free(xd), lm_gpu_mem_free(yd);
    free(w), free(x), free(y1), free(y1w), free(y1b), free(d2), free(d2w);
    lm_traj_free(t);
}

int main(void)
{
    gpu_require();
    for (int repro = 1; repro >= 0; repro--) {
        lm_tuning tu;
        lm_tuning_default(&tu);
        tu.gpu_nufft_repro = repro;
        lm_tuning_set(&tu);
        gu_seed(14);
        check_case(repro ? "3D 32^3 fixed point" : "3D 32^3 float atomics", 32, 1, repro);
        check_case(repro ? "2D 64^2 fixed point" : "2D 64^2 float atomics", 64, 0, repro);
    }
    return lm_test_finish("gpu-nufft_plan");
}
