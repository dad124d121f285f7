/* The benchmark problem table (docs/conventions.md section 4) and B32 built in full. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_test.h"
#include "lm_coils_synth.h"
#include "lm_spiral.h"
#include "lm_trajgen.h"

int main(void)
{
    lm_error err = {0};

    /* The table as docs/conventions.md section 4 gives it; M = round(n^3 284,592 / 128^3). */
    static const struct {
        const char *name;
        int64_t n, m, r;
        double noise;
        int64_t coils;
    } want[] = {{"B32", 32, 4447, 16, 0, 1},
                {"B64", 64, 35574, 32, 0, 1},
                {"B128", 128, 284592, 64, 0, 1},
                {"B64n", 64, 35574, 32, 0.05, 1},
                {"B128n", 128, 284592, 64, 0.05, 1},
                {"B64c8", 64, 35574, 32, 0, 8},
                {"B128c32", 128, 284592, 64, 0, 32},
                {"B64c8n", 64, 35574, 32, 0.05, 8}};
    CHECK(lm_problem_count() == 10);
    for (size_t i = 0; i < 8; i++) {
        const lm_problem_def *d = lm_problem_find(want[i].name, &err);
        CHECK(d && d == lm_problem_at(i));
        if (!d)
            continue;
        CHECK(d->n == want[i].n && d->m == want[i].m && d->readout == want[i].r && d->noise == want[i].noise &&
              d->coils == want[i].coils);
        CHECK(d->m == llround((double)(d->n * d->n * d->n) * 284592.0 / 2097152.0));
    }
    {
        const lm_problem_def *d = lm_problem_find("B128c8f", &err); /* B128's trajectory, 8 coils, field map */
        CHECK(d && d == lm_problem_at(9) && d->n == 128 && d->m == 284592 && d->coils == 8 &&
              d->fieldmap_hz == 150.0 && d->readout_ms == 10.0 && d->dim != 2);
    }
    CHECK(lm_problem_at(10) == NULL);
    CHECK(lm_problem_find("b64N", &err) == lm_problem_at(3)); /* case does not matter */
    CHECK(lm_problem_find("B256", &err) == NULL && err.code == LM_ERR_INVALID);
    CHECK(strstr(err.msg, "B256") && strstr(err.msg, "B128n") && strstr(err.msg, "B64c8n")); /* names the bad one and the known ones */

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

    /* B64c8: B64's trajectory, 8 coils; the maps are lm_coils_synth's 3D
     * set on the 64^3 grid and the data its exact k-space (float of the
     * double reference, < 1e-8); the truth is rho, not coil-weighted. */
    {
        lm_traj *tc = NULL, *t64 = NULL;
        lm_kdata *kc = NULL;
        lm_sens *sc = NULL, *s8 = NULL, *none = (lm_sens *)&err;
        lm_coils_synth *cs = NULL;
        CHECK_OK(lm_problem_make_coils(lm_problem_find("B64c8", &err), &g, &tc, &kc, NULL, &sc, &err), &err);
        CHECK_OK(lm_problem_make(lm_problem_find("B64", &err), NULL, &t64, NULL, NULL, &err), &err);
        CHECK_OK(lm_coils_synth_make(3, 8, &cs, &err), &err);
        const int64_t n64[3] = {64, 64, 64};
        CHECK_OK(lm_coils_synth_sens(3, 8, n64, &s8, &err), &err);
        if (tc && kc && sc && t64 && cs && s8) {
            CHECK(g.n[0] == 64 && tc->m == 35574 && kc->m == 35574 && kc->ncoils == 8);
            CHECK(memcmp(tc->k, t64->k, sizeof(float) * 3 * (size_t)tc->m) == 0);
            CHECK(sc->ncoils == 8 && sc->n[0] == 64 && sc->n[1] == 64 && sc->n[2] == 64);
            CHECK(memcmp(sc->s, s8->s, sizeof(lm_cfloat) * (size_t)(64 * 64 * 64 * 8)) == 0);
            int bad_c = 0;
            for (int64_t c = 0; c < 8; c++)
                for (int64_t i = 0; i < tc->m; i += 97) {
                    double complex r =
                        lm_coils_synth_ft(cs, p, c, tc->k[3 * i], tc->k[3 * i + 1], tc->k[3 * i + 2]);
                    bad_c += cabs(kc->d[c * tc->m + i] - r) > 1e-8;
                }
            CHECK(bad_c == 0);
        }
        /* A single-coil problem has no maps. */
        CHECK_OK(lm_problem_make_coils(lm_problem_find("B32", &err), NULL, NULL, NULL, NULL, &none, &err), &err);
        CHECK(none == NULL);
        /* B64c8n: 5 % noise over all channels (one sigma), reproducible. */
        lm_kdata *kn = NULL;
        CHECK_OK(lm_problem_make(lm_problem_find("B64c8n", &err), NULL, NULL, &kn, NULL, &err), &err);
        if (kn && kc) {
            CHECK(kn->ncoils == 8 && kn->m == kc->m);
            double sd = 0, sn = 0;
            for (int64_t i = 0; i < kn->m * 8; i++) {
                sd += pow(cabsf(kc->d[i]), 2);
                sn += pow(cabsf(kn->d[i] - kc->d[i]), 2);
            }
            CHECK_NEAR(sqrt(sn / sd), 0.05, 0.05 * 0.02);
        }
        lm_kdata_free(kn);
        lm_traj_free(tc);
        lm_traj_free(t64);
        lm_kdata_free(kc);
        lm_sens_free(sc);
        lm_sens_free(s8);
        lm_coils_synth_free(cs);
    }
    /* S128c8f (issue 11): the 2D head on 128 x 128, lm_spiral's 4
     * interleaves of 25 ms (the table's m and readout are the design's),
     * 8 coils of 2D maps, the synthetic field map of largest |f| 150 Hz. */
    {
        const lm_problem_def *d = lm_problem_find("S128c8f", &err);
        CHECK(d && d == lm_problem_at(8));
        lm_geom gs;
        lm_traj *ts = NULL;
        lm_kdata *ks = NULL;
        lm_sens *ss = NULL;
        lm_volume *vs = NULL;
        float *fm = NULL;
        if (d) {
            CHECK(d->n == 128 && d->dim == 2 && d->interleaves == 4 && d->readout_ms == 25.0 &&
                  d->fieldmap_hz == 150.0 && d->coils == 8 && d->noise == 0);
            CHECK_OK(lm_problem_make_fieldmap(d, &gs, &ts, &ks, &vs, &ss, &fm, &err), &err);
        }
        if (ts && ks && vs && ss && fm) {
            CHECK(gs.n[0] == 128 && gs.n[1] == 128 && gs.n[2] == 1 && gs.fov_mm[0] == 240.0);
            CHECK(ts->m == d->m && ts->readout == d->readout && ts->ndim == 2 && ts->t);
            CHECK(ts->t[ts->readout - 1] == 0.025f && ts->t[ts->readout] == 0.0f);
            CHECK(ks->m == d->m && ks->ncoils == 8 && ss->ncoils == 8 && ss->n[2] == 1);
            CHECK(vs->dims[0] == 128 && vs->dims[2] == 1);
            double peak = 0;
            for (int64_t i = 0; i < 128 * 128; i++)
                peak = fmax(peak, fabs(fm[i]));
            CHECK_NEAR(peak, 150.0, 1e-4);
            /* sample 0 is k = 0 at t = 0: no off-resonance yet, so d_c(0) is
             * the integral of rho s_c, which the analytic transform gives
             * exactly; the fine grid's sum differs by its discretisation
             * error (measured 1.7e-4 relative) */
            lm_coils_synth *cs = NULL;
            CHECK_OK(lm_coils_synth_make(2, 8, &cs, &err), &err);
            double worst = 0, scale = 0;
            for (int64_t c = 0; cs && c < 8; c++) {
                double complex r = lm_coils_synth_ft(cs, lm_phantom_shepp_logan_2d(), c, 0, 0, 0);
                worst = fmax(worst, cabs(ks->d[c * ks->m] - r));
                scale = fmax(scale, cabs(r));
            }
            printf("S128c8f: d_c(k = 0) against the analytic integral: %.2e relative\n", worst / scale);
            CHECK(worst <= 1e-3 * scale);
            lm_coils_synth_free(cs);
        }
        lm_traj_free(ts);
        lm_kdata_free(ks);
        lm_sens_free(ss);
        lm_volume_free(vs);
        free(fm);
        /* the design still gives the table's counts */
        lm_spiral_info info;
        lm_traj *tsp = NULL;
        lm_spiral_opts so = {.n = 128, .interleaves = 4, .readout_s = 0.025, .fov_mm = 240};
        CHECK_OK(lm_spiral_make(&so, &tsp, &info, &err), &err);
        CHECK(d && tsp && info.samples == d->readout && tsp->m == d->m);
        lm_traj_free(tsp);
    }

    return lm_test_finish("problems");
}