/* The encoding operator with a field map (lm_encoding.h) against double
 * brute force (fm_common.h) on a 32x32 spiral, 2048 samples, 25 ms
 * readout, field -10 .. 150 Hz, one coil and two coils with maps:
 *   segmented (auto L): E x, E^H d, E^H E x within 1e-3 relative of the
 *     exact operator; adjointness and <x, E^H E x> = ||E x||^2 to 1e-4;
 *     one segment is far off (the comparison can fail);
 *   the blocks Q_ll': Q_l'l(x) = conj(Q_ll'(-x)), and one block against a
 *     double sum;
 *   exact (segments 0): the same to 1e-4, when the direct kernels have
 *     the time term;
 *   a GPU, when there is one: gpu-nufft segmented against the CPU. */
#include <complex.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fm_common.h"
#include "lm_encoding.h"
#include "lm_gpu.h"
#include "lm_sums.h"
#include "lm_test.h"
#include "lm_timeseg.h"

typedef struct prob {
    lm_geom g;
    lm_traj *t;
    float *f;
    lm_sens *s;          /* two coils, or NULL */
    int64_t nv, m, nc;
    double complex *x, *d, *dref, *xref, *nref;
} prob;

static void prob_refs(prob *p)
{
    const lm_cfloat *s = p->s ? p->s->s : NULL;
    double complex *tmp = malloc((size_t)(p->m * p->nc) * sizeof *tmp);
    fm_forward(&p->g, p->t, p->f, s, p->nc, p->x, p->dref);
    fm_adjoint(&p->g, p->t, p->f, s, p->nc, p->d, p->xref);
    fm_forward(&p->g, p->t, p->f, s, p->nc, p->x, tmp);
    fm_adjoint(&p->g, p->t, p->f, s, p->nc, tmp, p->nref);
    free(tmp);
}

/* E x, E^H d, E^H E x of one encoding against the references; returns the
 * normal's relative error. */
static double check_encoding(const prob *p, const lm_encoding_desc *desc, double tol, const char *what,
                             lm_cfloat *normal_out)
{
    lm_error err = {0};
    lm_encoding *e = NULL;
    CHECK_OK(lm_encoding_new(desc, &e, &err), &err);
    if (!e)
        return INFINITY;
    lm_backend *be = lm_encoding_backend(e);
    const int64_t nv = p->nv, m = p->m, nc = p->nc;
    lm_cfloat *xh = malloc((size_t)nv * sizeof *xh), *yh = malloc((size_t)nv * sizeof *yh);
    for (int64_t j = 0; j < nv; j++)
        xh[j] = (lm_cfloat)p->x[j];
    lm_kdata *dk = lm_kdata_new(m, nc, &err), *ek = lm_kdata_new(m, nc, &err);
    for (int64_t j = 0; j < m * nc; j++)
        dk->d[j] = (lm_cfloat)p->d[j];
    lm_cfloat *xb = be->alloc(be, nv, "x"), *yb = be->alloc(be, nv, "y");
    be->upload(be, xb, xh, (size_t)nv * sizeof *xh);
    double dx[2] = {0}, dd[2] = {0}, rn = INFINITY;
    CHECK_OK(lm_encoding_forward(e, xb, ek, &err), &err);
    double complex *dref = p->dref;
    double r = fm_rel(ek->d, dref, m * nc);
    printf("%s: E x rel %.2e\n", what, r);
    CHECK_MSG(r < tol, "%s: E x rel %.3e", what, r);
    CHECK_OK(lm_encoding_adjoint(e, dk, yb, NULL, &err), &err);
    be->download(be, yh, yb, (size_t)nv * sizeof *yh);
    r = fm_rel(yh, p->xref, nv);
    printf("%s: E^H d rel %.2e\n", what, r);
    CHECK_MSG(r < tol, "%s: E^H d rel %.3e", what, r);
    /* <E x, d> = <x, E^H d> */
    for (int64_t j = 0; j < m * nc; j++) {
        const double complex v = conj((double complex)ek->d[j]) * dk->d[j];
        dd[0] += creal(v), dd[1] += cimag(v);
    }
    for (int64_t j = 0; j < nv; j++) {
        const double complex v = conj((double complex)xh[j]) * yh[j];
        dx[0] += creal(v), dx[1] += cimag(v);
    }
    r = cabs(CMPLX(dd[0] - dx[0], dd[1] - dx[1])) / cabs(CMPLX(dd[0], dd[1]));
    printf("%s: adjointness %.2e\n", what, r);
    CHECK_MSG(r < 1e-4, "%s: <Ex,d> = %g%+gi, <x,E^H d> = %g%+gi", what, dd[0], dd[1], dx[0], dx[1]);
    CHECK_OK(lm_encoding_normal(e, xb, yb, &err), &err);
    be->download(be, yh, yb, (size_t)nv * sizeof *yh);
    rn = fm_rel(yh, p->nref, nv);
    printf("%s: E^H E x rel %.2e\n", what, rn);
    if (normal_out)
        memcpy(normal_out, yh, (size_t)nv * sizeof *yh);
    /* <x, E^H E x> = ||E x||^2 (the block Toeplitz against the forward) */
    double ex2 = 0, xnx = 0, xnx_i = 0;
    for (int64_t j = 0; j < m * nc; j++)
        ex2 += creal(ek->d[j] * conjf(ek->d[j]));
    for (int64_t j = 0; j < nv; j++) {
        const double complex v = conj((double complex)xh[j]) * yh[j];
        xnx += creal(v), xnx_i += cimag(v);
    }
    printf("%s: <x,E^H E x> = %.6e%+.1ei, ||E x||^2 = %.6e\n", what, xnx, xnx_i, ex2);
    CHECK_MSG(fabs(xnx - ex2) < 1e-4 * ex2 && fabs(xnx_i) < 1e-4 * ex2, "%s", what);
    double diag = 0;
    for (int64_t j = 0; j < m; j++) {
        const double ph = lm_geom_phi(&p->g, p->t->k[3 * j], p->t->k[3 * j + 1], 0);
        diag += ph * ph;
    }
    diag /= (double)nv * (double)nv;
    if (!p->s)
        CHECK_NEAR(lm_encoding_diag(e), diag, 1e-9 * diag);
    be->release(be, xb), be->release(be, yb);
    lm_kdata_free(dk), lm_kdata_free(ek);
    free(xh), free(yh);
    lm_encoding_free(e);
    return rn;
}

/* Q_l'l(x) = conj(Q_ll'(-x)) on the 2x grid, the stored upper triangle
 * equal to the full set, and Q_01 at a few points against a double sum. */
static void check_q_blocks(const prob *p)
{
    lm_error err = {0};
    lm_timeseg *ts = NULL;
    CHECK_OK(lm_timeseg_make(p->t->t, p->m, p->f, p->nv, 3, LM_TIMESEG_HIST, LM_SEGMENTS_TOL, &ts, &err), &err);
    if (!ts)
        return;
    const int L = ts->L;
    const int64_t nq = lm_q_count(p->g.n), p0 = 2 * p->g.n[0], p1 = 2 * p->g.n[1];
    lm_cfloat *qa = NULL, *qu = NULL;
    CHECK_OK(lm_compute_q_segments(&p->g, p->t, L, ts->b, ts->hash, 1, "cpu-dp", 0, NULL, &qa, NULL, &err), &err);
    CHECK_OK(lm_compute_q_segments(&p->g, p->t, L, ts->b, ts->hash, 0, "cpu-dp", 0, NULL, &qu, NULL, &err), &err);
    if (qa && qu) {
        double qmax = 0, worst = 0, tri = 0;
        for (int64_t i = 0; i < nq * L * L; i++)
            qmax = fmax(qmax, cabsf(qa[i]));
        for (int l = 0; l < L; l++)
            for (int lp = 0; lp < L; lp++) {
                const lm_cfloat *a = qa + (l * L + lp) * nq, *b = qa + (lp * L + l) * nq;
                for (int64_t j1 = 1; j1 < p1; j1++) /* index 0 is -1 whose mirror is off the grid */
                    for (int64_t j0 = 1; j0 < p0; j0++) {
                        const int64_t i = j0 + p0 * j1, mi = (p0 - j0) + p0 * (p1 - j1);
                        worst = fmax(worst, cabsf(b[i] - conjf(a[mi])));
                    }
                if (lp >= l)
                    for (int64_t i = 0; i < nq; i++)
                        tri = fmax(tri, cabsf(a[i] - qu[lm_block_pair(L, l, lp) * nq + i]));
            }
        printf("Q blocks (L=%d): Hermitian symmetry %.2e, triangle %.2e of max %.3e\n", L, worst / qmax, tri / qmax,
               qmax);
        CHECK(worst < 1e-5 * qmax);
        CHECK(tri < 1e-6 * qmax);
        /* Q_01 at a few points, in double */
        for (int probe = 0; probe < 5; probe++) {
            const int64_t j0 = 1 + (int64_t)(fm_uniform() * (double)(p0 - 1)), j1 = 1 + (int64_t)(fm_uniform() * (double)(p1 - 1));
            const double x0 = (double)(j0 - p->g.n[0]) / (double)p->g.n[0], x1 = (double)(j1 - p->g.n[1]) / (double)p->g.n[1];
            double complex ref = 0;
            for (int64_t j = 0; j < p->m; j++) {
                const float *k = p->t->k + 3 * j;
                const double ph = lm_geom_phi(&p->g, k[0], k[1], 0), a = 2 * M_PI * (k[0] * x0 + k[1] * x1);
                ref += ph * ph * conj((double complex)ts->b[j]) * (double complex)ts->b[p->m + j] * CMPLX(cos(a), sin(a));
            }
            const double e = cabs((double complex)qa[1 * nq + j0 + p0 * j1] - ref);
            CHECK_MSG(e < 1e-5 * qmax, "Q_01 at (%lld,%lld): %.3e off", (long long)j0, (long long)j1, e);
        }
    }
    free(qa), free(qu);
    lm_timeseg_free(ts);
}

int main(void)
{
    prob p = {0};
    lm_geom_init(&p.g, 32, 32, 1, 240);
    p.nv = lm_geom_voxels(&p.g);
    p.t = fm_spiral(32);
    p.m = p.t->m;
    p.f = fm_fieldmap(&p.g);
    const int64_t nv = p.nv, m = p.m;
    p.x = malloc((size_t)nv * sizeof *p.x);
    p.xref = malloc((size_t)nv * sizeof *p.xref);
    p.nref = malloc((size_t)nv * sizeof *p.nref);
    p.d = malloc((size_t)m * 2 * sizeof *p.d);
    p.dref = malloc((size_t)m * 2 * sizeof *p.dref);
    for (int64_t j = 0; j < nv; j++)
        p.x[j] = CMPLX(fm_uniform() - 0.5, fm_uniform() - 0.5);
    for (int64_t j = 0; j < 2 * m; j++)
        p.d[j] = CMPLX(fm_uniform() - 0.5, fm_uniform() - 0.5);

    lm_error err = {0};
    for (int coils = 1; coils <= 2; coils++) {
        p.nc = coils;
        if (coils == 2) { /* two smooth complex maps */
            p.s = lm_sens_new(p.g.n, 2, &err);
            for (int64_t v = 0; v < nv; v++) {
                const double x = lm_voxel_pos(v % 32, 32), y = lm_voxel_pos(v / 32, 32);
                p.s->s[v] = (lm_cfloat)(exp(-(x + 0.5) * (x + 0.5)) * cexp(I * 2.0 * y));
                p.s->s[nv + v] = (lm_cfloat)(exp(-(x - 0.5) * (x - 0.5)) * cexp(-I * 1.0 * x));
            }
        }
        prob_refs(&p);
        lm_encoding_desc d = {.geom = &p.g, .traj = p.t, .sens = p.s, .variant = "cpu-nufft", .fieldmap = p.f,
                              .segments = LM_SEGMENTS_AUTO, .use_cache = 0, .threads = 2};
        char what[64];
        snprintf(what, sizeof what, "segmented auto, %d coil(s)", coils);
        const double rn = check_encoding(&p, &d, 1e-3, what, NULL);
        CHECK_MSG(rn < 1e-3, "segmented E^H E x rel %.3e", rn);
        lm_encoding *e = NULL;
        if (lm_encoding_new(&d, &e, &err) == LM_OK) {
            double ie = 0;
            const int L = lm_encoding_segments(e, &ie);
            printf("auto: L = %d, interpolation error %.3e\n", L, ie);
            CHECK(L > 1 && ie < LM_SEGMENTS_TOL);
            CHECK(lm_encoding_exact_variant(e) == NULL);
        }
        lm_encoding_free(e);
        d.seg_minmax = 1;
        snprintf(what, sizeof what, "segmented min-max, %d coil(s)", coils);
        CHECK(check_encoding(&p, &d, 1e-3, what, NULL) < 1e-3);
        d.seg_minmax = 0;
        /* one segment cannot follow the field: the comparison can fail */
        if (coils == 1) {
            d.segments = 1;
            lm_encoding *e1 = NULL;
            lm_cfloat *y1 = malloc((size_t)nv * sizeof *y1), *x1 = malloc((size_t)nv * sizeof *x1);
            for (int64_t j = 0; j < nv; j++)
                x1[j] = (lm_cfloat)p.x[j];
            CHECK_OK(lm_encoding_new(&d, &e1, &err), &err);
            if (e1 && lm_encoding_normal(e1, x1, y1, &err) == LM_OK) {
                const double r1 = fm_rel(y1, p.nref, nv);
                printf("one segment: E^H E x rel %.2e\n", r1);
                CHECK(r1 > 1e-2);
            }
            lm_encoding_free(e1);
            free(x1), free(y1);
        }

        /* exact: needs the direct kernels' time term */
        d.segments = 0;
        e = NULL;
        CHECK_OK(lm_encoding_new(&d, &e, &err), &err);
        const lm_variant *vx = e ? lm_encoding_exact_variant(e) : NULL;
        CHECK(vx && !vx->approximate);
        if (vx && vx->time_term) {
            snprintf(what, sizeof what, "exact (%s), %d coil(s)", vx->name, coils);
            CHECK(check_encoding(&p, &d, 1e-4, what, NULL) < 1e-4);
        } else {
            printf("exact: %s has no time term yet: exact paths not checked\n", vx ? vx->name : "?");
        }
        lm_encoding_free(e);

        /* GPU: the same segmented operator through gpu-nufft and the block Toeplitz on the device */
        if (lm_gpu_available(NULL) == LM_OK) {
            d.segments = LM_SEGMENTS_AUTO;
            d.variant = "gpu-nufft";
            snprintf(what, sizeof what, "gpu segmented auto, %d coil(s)", coils);
            CHECK(check_encoding(&p, &d, 1e-3, what, NULL) < 1e-3);
            d.segments = 0;
            e = NULL;
            if (lm_encoding_new(&d, &e, &err) == LM_OK && lm_encoding_exact_variant(e)->time_term) {
                snprintf(what, sizeof what, "gpu exact, %d coil(s)", coils);
                CHECK(check_encoding(&p, &d, 1e-4, what, NULL) < 1e-4);
            }
            lm_encoding_free(e);
        } else {
            printf("no GPU: device paths not checked\n");
        }
    }
    p.nc = 1;
    check_q_blocks(&p);

    /* the Q cache: the second segmented encoding takes the blocks from disk
     * and applies the same operator; another segmentation (L fixed) misses */
    {
        lm_encoding_desc d = {.geom = &p.g, .traj = p.t, .variant = "cpu-nufft", .fieldmap = p.f,
                              .segments = LM_SEGMENTS_AUTO, .use_cache = 1, .threads = 2};
        lm_cfloat *x1 = malloc((size_t)nv * sizeof *x1), *ya = malloc((size_t)nv * sizeof *ya),
                  *yb = malloc((size_t)nv * sizeof *yb);
        for (int64_t j = 0; j < nv; j++)
            x1[j] = (lm_cfloat)p.x[j];
        /* a fresh cache folder: the miss below must not find an older run's entry */
        char dir[] = "/tmp/larmor-fieldmap-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        setenv("XDG_CACHE_HOME", dir, 1);
        int cached[3] = {-1, -1, -1}, auto_l = 0;
        lm_cfloat *outs[3] = {ya, yb, NULL};
        for (int r = 0; r < 3; r++) {
            lm_encoding *e = NULL;
            if (r == 2)
                d.segments = auto_l + 1;
            CHECK_OK(lm_encoding_new(&d, &e, &err), &err);
            if (!e)
                continue;
            auto_l = lm_encoding_segments(e, NULL);
            CHECK_OK(lm_encoding_prepare_normal(e, NULL, &cached[r], &err), &err);
            if (outs[r])
                CHECK_OK(lm_encoding_normal(e, x1, outs[r], &err), &err);
            lm_encoding_free(e);
        }
        printf("Q cache: %d %d %d\n", cached[0], cached[1], cached[2]);
        CHECK(cached[0] == 0 && cached[1] == 1 && cached[2] == 0);
        char sub[64];
        snprintf(sub, sizeof sub, "%s/larmor", dir);
        DIR *dd = opendir(sub);
        for (struct dirent *de; dd && (de = readdir(dd));)
            if (de->d_name[0] != '.') {
                char path[512];
                snprintf(path, sizeof path, "%s/%s", sub, de->d_name);
                unlink(path);
            }
        if (dd)
            closedir(dd);
        rmdir(sub);
        rmdir(dir);
        CHECK(memcmp(ya, yb, (size_t)nv * sizeof *ya) == 0);
        free(x1), free(ya), free(yb);
    }

    /* refusals */
    lm_encoding *e = NULL;
    float *times = p.t->t;
    p.t->t = NULL;
    lm_encoding_desc d = {.geom = &p.g, .traj = p.t, .variant = "cpu-nufft", .fieldmap = p.f, .segments = 2};
    CHECK(lm_encoding_new(&d, &e, &err) == LM_ERR_INVALID && strstr(err.msg, "sample times"));
    p.t->t = times;
    d.segments = -2;
    CHECK(lm_encoding_new(&d, &e, &err) == LM_ERR_INVALID && !e);

    lm_sens_free(p.s);
    free(p.x), free(p.xref), free(p.nref), free(p.d), free(p.dref), free(p.f);
    lm_traj_free(p.t);
    return lm_test_finish("fieldmap_op");
}
