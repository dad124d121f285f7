/* Trajectory generators: exact counts, k-space bounds, spacing along the
 * readout, spread of the spoke directions, 2D kinds in the plane. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_test.h"
#include "lm_trajgen.h"

/* Float k of integer-valued radii up to 2048 carries < 2048 * 6e-8 ~ 1.2e-4
 * of rounding; 1e-4 covers the radii used here (<= 64) many times over. */
#define KTOL 1e-4

static const float *ks(const lm_traj *t, int64_t i) { return t->k + 3 * i; }

static double norm3(const float *k) { return sqrt((double)k[0] * k[0] + (double)k[1] * k[1] + (double)k[2] * k[2]); }

static void check_bounds(const char *what, const lm_traj *t, const int64_t n[3])
{
    double kmax[3];
    lm_traj_extent(t, kmax);
    for (int a = 0; a < 3; a++)
        CHECK_MSG(kmax[a] <= (double)(n[a] / 2) + 1e-9, "%s: |k| along axis %d reaches %g > %lld", what, a, kmax[a],
                  (long long)(n[a] / 2));
    lm_geom g;
    lm_geom_init(&g, n[0], n[1], n[2], 240);
    lm_error err = {0};
    CHECK_OK(lm_geom_check(&g, t, &err), &err);
}

/* Centre-out spokes: sample j of each spoke at radius j along one direction. */
static void check_centre_out(const lm_traj *t, int64_t r, double dirs[][3], int64_t *nspokes)
{
    int64_t s = 0;
    for (int64_t i0 = 0; i0 < t->m; i0 += r, s++) {
        const float *k1 = i0 + 1 < t->m ? ks(t, i0 + 1) : NULL;
        CHECK(norm3(ks(t, i0)) == 0.0);
        if (k1) {
            double nn = norm3(k1);
            for (int a = 0; a < 3; a++)
                dirs[s][a] = k1[a] / nn;
        }
        for (int64_t j = 1; j < r && i0 + j < t->m; j++) {
            const float *k = ks(t, i0 + j), *kp = ks(t, i0 + j - 1);
            CHECK_NEAR(norm3(k), (double)j, KTOL);
            float step[3] = {k[0] - kp[0], k[1] - kp[1], k[2] - kp[2]};
            CHECK_NEAR(norm3(step), 1.0, KTOL); /* 1/FOV apart */
            for (int a = 0; a < 3; a++)
                CHECK_NEAR(k[a], j * dirs[s][a], KTOL); /* straight line */
        }
    }
    *nspokes = s;
}

int main(void)
{
    lm_error err = {0};
    lm_traj *t = NULL;

    /* Names round-trip; unknown names list the known ones. */
    const char *names[] = {"radial3d", "radial3d-full", "stack-of-spirals", "spiral2d", "radial2d", "cartesian"};
    for (int i = 0; i < 6; i++) {
        lm_traj_kind k;
        CHECK_OK(lm_traj_kind_parse(names[i], &k, &err), &err);
        CHECK(strcmp(lm_traj_kind_name(k), names[i]) == 0);
    }
    lm_traj_kind kk;
    CHECK(lm_traj_kind_parse("rosette", &kk, &err) == LM_ERR_INVALID && strstr(err.msg, "stack-of-spirals"));

    /* radial3d as in B32: 32^3, 4,447 samples, 16 per spoke (defaults give
     * the same), 278 spokes, the last 15 long. */
    const int64_t n32[3] = {32, 32, 32};
    CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL3D, n32, 0, 0, &t, &err), &err);
    if (t) {
        CHECK(t->m == 4447 && t->readout == 16 && t->ndim == 3);
        lm_traj_free(t);
    }
    CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL3D, n32, 4447, 16, &t, &err), &err);
    if (t) {
        CHECK(t->m == 4447 && t->readout == 16 && t->ndim == 3);
        check_bounds("radial3d", t, n32);
        static double dirs[400][3];
        int64_t ns;
        check_centre_out(t, 16, dirs, &ns);
        CHECK(ns == 278);
        /* Spread: the mean direction of evenly spread unit vectors is ~0
         * (for random directions it would be ~1/sqrt(3 * 278) = 0.035 per
         * axis; golden means do better). Every octant holds its share. */
        double mean[3] = {0}, mind = 10;
        int oct[8] = {0};
        for (int64_t s = 0; s < ns; s++) {
            for (int a = 0; a < 3; a++)
                mean[a] += dirs[s][a] / (double)ns;
            oct[(dirs[s][0] > 0) + 2 * (dirs[s][1] > 0) + 4 * (dirs[s][2] > 0)]++;
            for (int64_t u = 0; u < s; u++) {
                double d = 0;
                for (int a = 0; a < 3; a++)
                    d += (dirs[s][a] - dirs[u][a]) * (dirs[s][a] - dirs[u][a]);
                mind = fmin(mind, sqrt(d));
            }
        }
        double mnorm = sqrt(mean[0] * mean[0] + mean[1] * mean[1] + mean[2] * mean[2]);
        fprintf(stderr, "radial3d: 278 spokes, |mean direction| %.4f, closest pair %.4f, octants", mnorm, mind);
        for (int o = 0; o < 8; o++)
            fprintf(stderr, " %d", oct[o]);
        fputc('\n', stderr);
        CHECK(mnorm < 0.02);
        /* Distinct: nearest neighbours of 278 evenly spread points are
         * ~sqrt(4 pi / 278) ~ 0.2 apart; anything below 0.02 is a repeat. */
        CHECK(mind > 0.02);
        for (int o = 0; o < 8; o++)
            CHECK_MSG(abs(oct[o] - 278 / 8) <= 7, "octant %d holds %d of 278 spokes", o, oct[o]);
        lm_traj_free(t);
    }
    /* Cutting: exact count, whole and partial last spoke. */
    CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL3D, n32, 1000, 10, &t, &err), &err);
    if (t) {
        CHECK(t->m == 1000 && t->readout == 10);
        lm_traj_free(t);
    }
    CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL3D, n32, 1005, 17, &t, &err), &err);
    if (t) {
        CHECK(t->m == 1005 && t->readout == 17); /* radius up to 16 = n/2 */
        check_bounds("radial3d r=17", t, n32);
        CHECK_NEAR(norm3(ks(t, 1004)), 1004 % 17, KTOL);
        lm_traj_free(t);
    }
    CHECK(lm_traj_generate(LM_TRAJ_RADIAL3D, n32, 100, 18, &t, &err) == LM_ERR_INVALID && !t);
    const int64_t flat[3] = {32, 32, 1};
    CHECK(lm_traj_generate(LM_TRAJ_RADIAL3D, flat, 0, 0, &t, &err) == LM_ERR_INVALID && !t);
    CHECK(lm_traj_generate(LM_TRAJ_RADIAL3D, n32, -5, 0, &t, &err) == LM_ERR_INVALID && !t);
    CHECK(lm_traj_generate(LM_TRAJ_SPIRAL2D, n32, 0, (int64_t)1 << 40, &t, &err) == LM_ERR_INVALID && !t);

    /* B128's trajectory: 284,592 samples, the radius-63 samples inside
     * |k| <= 64. */
    const int64_t n128[3] = {128, 128, 128};
    CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL3D, n128, 284592, 64, &t, &err), &err);
    if (t) {
        CHECK(t->m == 284592 && t->readout == 64);
        check_bounds("radial3d 128", t, n128);
        lm_traj_free(t);
    }

    /* radial3d-full: spokes -16 .. 15 through the centre, directions on the
     * hemisphere; lines cover the sphere, so the second moment of the
     * directions is ~I/3. */
    CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL3D_FULL, n32, 32 * 200, 0, &t, &err), &err);
    if (t) {
        CHECK(t->m == 6400 && t->readout == 32 && t->ndim == 3);
        check_bounds("radial3d-full", t, n32);
        double mom[3][3] = {{0}};
        for (int64_t s = 0; s < 200; s++) {
            const float *c = ks(t, s * 32 + 16), *e = ks(t, s * 32 + 31);
            CHECK(norm3(c) == 0.0);
            CHECK_NEAR(norm3(ks(t, s * 32)), 16.0, KTOL);
            CHECK_NEAR(norm3(e), 15.0, KTOL);
            double d[3] = {e[0] / 15.0, e[1] / 15.0, e[2] / 15.0};
            CHECK(d[2] >= -1e-6);
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++)
                    mom[a][b] += d[a] * d[b] / 200;
            for (int j = 1; j < 32; j++) {
                const float *k = ks(t, s * 32 + j), *kp = ks(t, s * 32 + j - 1);
                float st[3] = {k[0] - kp[0], k[1] - kp[1], k[2] - kp[2]};
                CHECK_NEAR(norm3(st), 1.0, KTOL);
            }
        }
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                CHECK_NEAR(mom[a][b], a == b ? 1.0 / 3 : 0.0, 0.02);
        lm_traj_free(t);
    }

    /* radial2d: kz = 0, full spokes, successive angles a golden angle apart. */
    const int64_t n2d[3] = {64, 48, 1};
    CHECK_OK(lm_traj_generate(LM_TRAJ_RADIAL2D, n2d, 0, 0, &t, &err), &err);
    if (t) {
        CHECK(t->ndim == 2 && t->readout == 48);
        CHECK(t->m == (int64_t)ceil(M_PI / 2 * 48) * 48); /* Nyquist spoke count */
        check_bounds("radial2d", t, n2d);
        int kz0 = 1;
        for (int64_t i = 0; i < t->m; i++)
            kz0 &= ks(t, i)[2] == 0.0f;
        CHECK(kz0);
        for (int s = 0; s < 10; s++) {
            const float *a = ks(t, s * 48 + 47), *b = ks(t, (s + 1) * 48 + 47);
            double da = atan2(b[1], b[0]) - atan2(a[1], a[0]);
            double deg = fmod(da * 180 / M_PI + 720, 180);
            CHECK_NEAR(deg, fmod(180 * 0.6180339887498949, 180), 1e-4);
        }
        lm_traj_free(t);
    }

    /* spiral2d: kz = 0, inside the disc of radius n/2, each interleaf from
     * the centre to kmax in equal steps along the curve. */
    const int64_t n64[3] = {64, 64, 64};
    CHECK_OK(lm_traj_generate(LM_TRAJ_SPIRAL2D, n64, 0, 0, &t, &err), &err);
    if (t) {
        int64_t r = t->readout, nl = t->m / r;
        CHECK(t->ndim == 2 && t->m % r == 0 && nl == 8);
        check_bounds("spiral2d", t, n64);
        double maxstep = 0, minstep = 10, maxr = 0;
        int kz0 = 1;
        for (int64_t i = 0; i < t->m; i++) {
            kz0 &= ks(t, i)[2] == 0.0f;
            maxr = fmax(maxr, norm3(ks(t, i)));
            if (i % r) {
                const float *k = ks(t, i), *kp = ks(t, i - 1);
                float st[3] = {k[0] - kp[0], k[1] - kp[1], 0};
                maxstep = fmax(maxstep, norm3(st));
                minstep = fmin(minstep, norm3(st));
            } else {
                CHECK(norm3(ks(t, i)) == 0.0);
            }
        }
        CHECK(kz0);
        CHECK_NEAR(maxr, 32.0, KTOL);
        fprintf(stderr, "spiral2d 64: %lld interleaves of %lld, steps %.4f .. %.4f\n", (long long)nl, (long long)r,
                minstep, maxstep);
        /* Equal arc-length steps of at most 1/FOV; chords are a little
         * shorter than the arcs only where the curve bends hard (centre). */
        CHECK(maxstep <= 1.0 + KTOL);
        CHECK(minstep > 0.9);
        lm_traj_free(t);
    }
    CHECK_OK(lm_traj_generate(LM_TRAJ_SPIRAL2D, n64, 5000, 300, &t, &err), &err);
    if (t) {
        CHECK(t->m == 5000 && t->readout == 300);
        check_bounds("spiral2d m", t, n64);
        lm_traj_free(t);
    }

    /* stack-of-spirals: every Cartesian kz plane, the same spirals on each. */
    const int64_t nsos[3] = {32, 32, 8};
    CHECK_OK(lm_traj_generate(LM_TRAJ_STACK_OF_SPIRALS, nsos, 0, 0, &t, &err), &err);
    if (t) {
        int64_t per = t->m / 8;
        CHECK(t->ndim == 3 && t->m % 8 == 0 && per % t->readout == 0);
        check_bounds("stack-of-spirals", t, nsos);
        for (int p = 0; p < 8; p++) {
            CHECK(ks(t, p * per)[2] == (float)(p - 4));
            CHECK(ks(t, p * per + per - 1)[2] == (float)(p - 4));
            CHECK(ks(t, p * per + 7)[0] == ks(t, 7)[0] && ks(t, p * per + 7)[1] == ks(t, 7)[1]);
        }
        lm_traj_free(t);
    }
    CHECK_OK(lm_traj_generate(LM_TRAJ_STACK_OF_SPIRALS, nsos, 12345, 0, &t, &err), &err);
    if (t) {
        CHECK(t->m == 12345);
        check_bounds("stack-of-spirals m", t, nsos);
        lm_traj_free(t);
    }

    /* cartesian: every grid point once, k = i - n/2. */
    const int64_t nc[3] = {8, 6, 4};
    CHECK_OK(lm_traj_generate(LM_TRAJ_CARTESIAN, nc, 0, 0, &t, &err), &err);
    if (t) {
        CHECK(t->m == 192 && t->ndim == 3 && t->readout == 8);
        check_bounds("cartesian", t, nc);
        static char seen[8][6][4];
        int ok = 1;
        for (int64_t i = 0; i < t->m; i++) {
            const float *k = ks(t, i);
            int x = (int)k[0] + 4, y = (int)k[1] + 3, z = (int)k[2] + 2;
            ok &= x >= 0 && x < 8 && y >= 0 && y < 6 && z >= 0 && z < 4 && !seen[x][y][z];
            ok &= k[0] == floorf(k[0]) && k[1] == floorf(k[1]) && k[2] == floorf(k[2]);
            if (ok)
                seen[x][y][z] = 1;
        }
        CHECK(ok);
        CHECK(ks(t, 0)[0] == -4 && ks(t, 1)[0] == -3); /* x fastest */
        lm_traj_free(t);
    }
    const int64_t nc2[3] = {16, 16, 1};
    CHECK_OK(lm_traj_generate(LM_TRAJ_CARTESIAN, nc2, 0, 0, &t, &err), &err);
    if (t) {
        CHECK(t->m == 256 && t->ndim == 2 && ks(t, 255)[2] == 0.0f && ks(t, 255)[1] == 7.0f);
        lm_traj_free(t);
    }
    CHECK(lm_traj_generate(LM_TRAJ_CARTESIAN, nc, 100, 0, &t, &err) == LM_ERR_INVALID && !t);
    CHECK(lm_traj_generate((lm_traj_kind)99, nc, 0, 0, &t, &err) == LM_ERR_INVALID && !t);

    return lm_test_finish("trajgen");
}
