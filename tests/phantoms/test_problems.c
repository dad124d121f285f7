/* The benchmark problem table (GUIDE.md section 4) and B32 built in full. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_test.h"
#include "lm_trajgen.h"

int main(void)
{
    lm_error err = {0};

    /* The table as GUIDE.md gives it; M = round(n^3 284,592 / 128^3). */
    static const struct {
        const char *name;
        int64_t n, m, r;
        double noise;
    } want[] = {{"B32", 32, 4447, 16, 0},
                {"B64", 64, 35574, 32, 0},
                {"B128", 128, 284592, 64, 0},
                {"B64n", 64, 35574, 32, 0.05},
                {"B128n", 128, 284592, 64, 0.05}};
    CHECK(lm_problem_count() == 5);
    for (size_t i = 0; i < 5; i++) {
        const lm_problem_def *d = lm_problem_find(want[i].name, &err);
        CHECK(d && d == lm_problem_at(i));
        if (!d)
            continue;
        CHECK(d->n == want[i].n && d->m == want[i].m && d->readout == want[i].r && d->noise == want[i].noise);
        CHECK(d->m == llround((double)(d->n * d->n * d->n) * 284592.0 / 2097152.0));
    }
    CHECK(lm_problem_at(5) == NULL);
    CHECK(lm_problem_find("b64N", &err) == lm_problem_at(3)); /* case does not matter */
    CHECK(lm_problem_find("B256", &err) == NULL && err.code == LM_ERR_INVALID);
    CHECK(strstr(err.msg, "B256") && strstr(err.msg, "B128n")); /* names the bad one and the known ones */

    /* B32 in full. */
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *v = NULL;
    CHECK_OK(lm_problem_make(lm_problem_find("B32", &err), &g, &t, &k, &v, &err), &err);
    if (!t || !k || !v)
        return lm_test_finish("problems");
    CHECK(g.n[0] == 32 && g.n[1] == 32 && g.n[2] == 32 && g.fov_mm[0] == 240.0 && g.basis == LM_BASIS_BOX);
    CHECK(t->m == 4447 && t->readout == 16 && t->ndim == 3);
    CHECK(k->m == 4447 && k->ncoils == 1);
    CHECK(v->dims[0] == 32 && v->dims[2] == 32);
    CHECK_NEAR(v->voxel_mm[1], 7.5, 1e-12);
    double kmax[3];
    lm_traj_extent(t, kmax);
    CHECK(kmax[0] <= 16 && kmax[1] <= 16 && kmax[2] <= 16);
    /* k-space is the 3D phantom's transform at the trajectory (float of the
     * double reference: < 1e-8 for |d| <= 0.08). */
    const lm_phantom *p = lm_phantom_shepp_logan_3d();
    int bad = 0;
    for (int64_t i = 0; i < t->m; i += 7) {
        double complex r = lm_phantom_ft(p, t->k[3 * i], t->k[3 * i + 1], t->k[3 * i + 2]);
        bad += cabs(k->d[i] - r) > 1e-8;
    }
    CHECK(bad == 0);
    /* Sample 0 is k = 0: d(0) = sum rho x volume ~ 0.0785; the truth's mean
     * equals it up to the sub-sample lattice error (h = 1/128: 2 pi R h^2 ~
     * 1.5e-4 per cap, see test_phantom_truth). */
    CHECK_NEAR(crealf(k->d[0]), creal(lm_phantom_ft(p, 0, 0, 0)), 1e-8);
    double mean = 0;
    for (int64_t i = 0; i < lm_volume_count(v); i++)
        mean += crealf(v->data[i]) / (double)lm_volume_count(v);
    CHECK_NEAR(mean, crealf(k->d[0]), 3e-4);
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_volume_free(v);

    /* Any output may be NULL: only the truth, only the k-space. */
    v = NULL;
    CHECK_OK(lm_problem_make(lm_problem_find("B32", &err), NULL, NULL, NULL, &v, &err), &err);
    CHECK(v && v->dims[0] == 32);
    lm_volume_free(v);
    k = NULL;
    CHECK_OK(lm_problem_make(lm_problem_find("B32", &err), NULL, NULL, &k, NULL, &err), &err);
    CHECK(k && k->m == 4447);

    /* B64n = B64 plus noise of 5 % RMS|d| (seed 1): the difference has
     * RMS 0.05 RMS|d| within sampling error (35,574 samples: 0.4 % std
     * error; 2 % allowed), and it is the same on every build. */
    lm_kdata *k64 = NULL, *k64n = NULL, *k64n2 = NULL;
    CHECK_OK(lm_problem_make(lm_problem_find("B64", &err), NULL, NULL, &k64, NULL, &err), &err);
    CHECK_OK(lm_problem_make(lm_problem_find("B64n", &err), NULL, NULL, &k64n, NULL, &err), &err);
    CHECK_OK(lm_problem_make(lm_problem_find("B64n", &err), NULL, NULL, &k64n2, NULL, &err), &err);
    if (k64 && k64n && k64n2) {
        double sd = 0, sn = 0;
        for (int64_t i = 0; i < k64->m; i++) {
            sd += pow(cabsf(k64->d[i]), 2);
            sn += pow(cabsf(k64n->d[i] - k64->d[i]), 2);
        }
        CHECK_NEAR(sqrt(sn / sd), 0.05, 0.05 * 0.02);
        CHECK(memcmp(k64n->d, k64n2->d, sizeof(lm_cfloat) * (size_t)k64n->m) == 0);
    }
    lm_kdata_free(k);
    lm_kdata_free(k64);
    lm_kdata_free(k64n);
    lm_kdata_free(k64n2);

    CHECK(lm_problem_make(NULL, &g, NULL, NULL, NULL, &err) == LM_ERR_INVALID);
    return lm_test_finish("problems");
}
