/* F^H d of every channel in one call (recon/lm_sums.h lm_compute_fhd_sets)
 * and the encoding's adjoint that uses it, against the channel-by-channel
 * path through cpu-dp:
 *  - lm_compute_fhd_sets(cpu-dp) equals lm_compute_fhd(cpu-dp) per channel
 *    exactly (the sets run the one-set arithmetic); cpu-simd within 5e-6
 *    relative per channel (its one-set bound, test_ksum_simd);
 *  - lm_encoding_adjoint with 5 coil maps against sum_c conj(s_c) F^H d_c / N
 *    built from single-channel cpu-dp sums: cpu-dp within 1e-6 (float
 *    rounding of the combination), cpu-simd within 5e-6; one coil without
 *    maps as well;
 *  - mismatched k-space refused. */
#include <complex.h>

#include "ksum_util.h"
#include "lm_encoding.h"
#include "lm_sums.h"

static double crel(int64_t n, const lm_cfloat *a, const lm_cfloat *b)
{
    double num = 0, den = 0;
    for (int64_t j = 0; j < n; j++) {
        num += cabs((double complex)a[j] - (double complex)b[j]) * cabs((double complex)a[j] - (double complex)b[j]);
        den += cabs((double complex)b[j]) * cabs((double complex)b[j]);
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

typedef struct case_data {
    lm_geom g;
    lm_traj *t;
    lm_kdata *k;
    lm_sens *s;
    int64_t nv;
    lm_cfloat *ref_fhd; /* cpu-dp, channel by channel: nv x nc */
} case_data;

static void case_make(case_data *cd, int64_t n0, int64_t n1, int64_t n2, int64_t m, int64_t nc)
{
    lm_error err;
    lm_geom_init(&cd->g, n0, n1, n2, 220);
    cd->nv = lm_geom_voxels(&cd->g);
    cd->t = lm_traj_new(m, n2 > 1 ? 3 : 2, &err);
    for (int64_t j = 0; j < m; j++)
        for (int a = 0; a < 3; a++)
            cd->t->k[3 * j + a] = cd->g.n[a] > 1 ? (float)ku_uniform(-0.49 * cd->g.n[a], 0.49 * cd->g.n[a]) : 0.0f;
    cd->k = lm_kdata_new(m, nc, &err);
    for (int64_t j = 0; j < m * nc; j++)
        cd->k->d[j] = CMPLXF((float)ku_uniform(-1, 1), (float)ku_uniform(-1, 1));
    cd->s = lm_sens_new(cd->g.n, nc, &err);
    for (int64_t j = 0; j < cd->nv * nc; j++)
        cd->s->s[j] = CMPLXF((float)ku_uniform(-1, 1), (float)ku_uniform(-1, 1));
    cd->ref_fhd = malloc((size_t)(cd->nv * nc) * sizeof(lm_cfloat));
    for (int64_t c = 0; c < nc; c++) {
        lm_cfloat *f = NULL;
        CHECK_OK(lm_compute_fhd(&cd->g, cd->t, cd->k->d + c * m, "cpu-dp", NULL, &f, &err), &err);
        if (f)
            memcpy(cd->ref_fhd + c * cd->nv, f, (size_t)cd->nv * sizeof(lm_cfloat));
        free(f);
    }
}

static void case_free(case_data *cd)
{
    lm_traj_free(cd->t);
    lm_kdata_free(cd->k);
    lm_sens_free(cd->s);
    free(cd->ref_fhd);
}

static void test_fhd_sets(const char *what, case_data *cd)
{
    const char *names[] = {"cpu-dp", "cpu-simd", "cpu-separable"};
    const double tols[] = {0.0, 5e-6, 5e-6};
    for (int i = 0; i < 3; i++) {
        lm_error err;
        lm_cfloat *f = NULL;
        CHECK_OK(lm_compute_fhd_sets(&cd->g, cd->t, cd->k, names[i], NULL, &f, &err), &err);
        if (!f)
            continue;
        double worst = 0;
        for (int64_t c = 0; c < cd->k->ncoils; c++) {
            double e = crel(cd->nv, f + c * cd->nv, cd->ref_fhd + c * cd->nv);
            worst = e > worst ? e : worst;
            CHECK_MSG(e <= tols[i], "%s, %s, channel %lld: rel error %.3g > %.1g", names[i], what,
                      (long long)c, e, tols[i]);
        }
        fprintf(stderr, "lm_compute_fhd_sets %-13s %s, %lld channels: worst rel error %.3g\n",
                names[i], what, (long long)cd->k->ncoils, worst);
        free(f);
    }
}

/* x = sum_c conj(s_c) F^H d_c / N from the reference sums, in double. */
static lm_cfloat *adjoint_ref(const case_data *cd, int maps)
{
    lm_cfloat *x = calloc((size_t)cd->nv, sizeof *x);
    for (int64_t j = 0; j < cd->nv; j++) {
        double complex a = 0;
        for (int64_t c = 0; c < cd->k->ncoils; c++) {
            double complex f = cd->ref_fhd[c * cd->nv + j];
            a += maps ? conj((double complex)cd->s->s[c * cd->nv + j]) * f : f;
        }
        x[j] = (lm_cfloat)(a / (double)cd->nv);
    }
    return x;
}

static void test_adjoint(const char *what, case_data *cd, int maps)
{
    lm_cfloat *ref = adjoint_ref(cd, maps);
    lm_cfloat *x = malloc((size_t)cd->nv * sizeof *x);
    const char *names[] = {"cpu-dp", "cpu-simd"};
    const double tols[] = {1e-6, 5e-6};
    for (int i = 0; i < 2; i++) {
        lm_error err;
        lm_encoding_desc d = {.geom = &cd->g, .traj = cd->t, .sens = maps ? cd->s : NULL,
                              .variant = names[i]};
        lm_encoding *e = NULL;
        CHECK_OK(lm_encoding_new(&d, &e, &err), &err);
        if (!e)
            continue;
        CHECK_OK(lm_encoding_adjoint(e, cd->k, x, NULL, &err), &err);
        double r = crel(cd->nv, x, ref);
        fprintf(stderr, "lm_encoding_adjoint %-13s %s: rel error %.3g\n", names[i], what, r);
        CHECK_MSG(r <= tols[i], "adjoint %s, %s: rel error %.3g > %.1g", names[i], what, r, tols[i]);
        /* k-space of the wrong shape is refused */
        lm_kdata short_k = *cd->k;
        short_k.m--;
        CHECK(lm_encoding_adjoint(e, &short_k, x, NULL, &err) == LM_ERR_INVALID);
        lm_encoding_free(e);
    }
    free(x);
    free(ref);
}

static void test_bad(case_data *cd)
{
    lm_error err;
    lm_cfloat *f = (lm_cfloat *)1;
    lm_kdata k = *cd->k;
    k.m = cd->t->m + 1;
    CHECK(lm_compute_fhd_sets(&cd->g, cd->t, &k, "cpu-simd", NULL, &f, &err) == LM_ERR_INVALID);
    CHECK(f == NULL);
    k = *cd->k;
    k.ncoils = 0;
    CHECK(lm_compute_fhd_sets(&cd->g, cd->t, &k, "cpu-simd", NULL, &f, &err) == LM_ERR_INVALID);
    CHECK(lm_compute_fhd_sets(&cd->g, cd->t, NULL, "cpu-simd", NULL, &f, &err) == LM_ERR_INVALID);
    CHECK(lm_compute_fhd_sets(&cd->g, cd->t, cd->k, "cpu-warp9", NULL, &f, &err) != LM_OK);
}

int main(void)
{
    ku_seed("test_fhd_sets");
    case_data cd;
    case_make(&cd, 19, 12, 6, 700, 5);
    test_fhd_sets("19x12x6", &cd);
    test_adjoint("19x12x6, 5 coils", &cd, 1);
    test_bad(&cd);
    case_free(&cd);

    case_make(&cd, 24, 20, 1, 500, 1);
    test_fhd_sets("24x20 (2D)", &cd);
    test_adjoint("24x20 (2D), one coil, no maps", &cd, 0);
    case_free(&cd);

    case_make(&cd, 24, 20, 1, 500, 9);
    test_fhd_sets("24x20 (2D)", &cd);
    test_adjoint("24x20 (2D), 9 coils", &cd, 1);
    case_free(&cd);
    return lm_test_finish("test_fhd_sets");
}
