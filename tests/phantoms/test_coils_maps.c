/* The synthetic coil maps: the grid holds the Fourier series' values; the
 * set is deterministic; scaled so the root-sum-of-squares is 1 at the
 * centre and stays in [0.5, 2] over the head; each coil is brightest near
 * its own position and dim on the far side; phases differ per coil; the
 * maps are smooth (low order) and tame outside the head; bad arguments are
 * refused. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_coils_synth.h"
#include "lm_test.h"

/* The 3D head's outer ellipsoid in FOV fractions (semi-axes 0.69/2, 0.92/2,
 * 0.81/2); the 2D head is its z = 0 section. */
static int in_head(double x, double y, double z)
{
    return (x / 0.345) * (x / 0.345) + (y / 0.46) * (y / 0.46) + (z / 0.405) * (z / 0.405) <= 1.0;
}

static void check_set(int dim, int64_t C, int64_t nn)
{
    lm_error err = {0};
    lm_coils_synth *cs = NULL;
    CHECK_OK(lm_coils_synth_make(dim, C, &cs, &err), &err);
    if (!cs)
        return;
    const int64_t n[3] = {nn, nn, dim == 3 ? nn : 1};
    const int64_t V = n[0] * n[1] * n[2];
    lm_sens *s = NULL;
    CHECK_OK(lm_coils_synth_maps(cs, n, &s, &err), &err);
    if (!s) {
        lm_coils_synth_free(cs);
        return;
    }
    CHECK(s->ncoils == C && s->n[0] == nn && s->n[2] == n[2]);
    CHECK(cs->nterms == (dim == 3 ? 125 : 49) && cs->order == (dim == 3 ? 2 : 3));

    /* Grid = series: every voxel of every coil against the direct double
     * sum (float rounding: < 1e-6 of max|s|). */
    double worst = 0, smax = 0;
    for (int64_t c = 0; c < C; c++)
        for (int64_t v = 0; v < V; v += (c == 0 ? 1 : 7)) {
            double x = lm_voxel_pos(v % n[0], n[0]), y = lm_voxel_pos((v / n[0]) % n[1], n[1]);
            double z = lm_voxel_pos(v / (n[0] * n[1]), n[2]);
            double complex r = lm_coils_synth_value(cs, c, x, y, z);
            worst = fmax(worst, cabs(s->s[c * V + v] - r));
            smax = fmax(smax, cabs(r));
        }
    CHECK_MSG(worst <= 1e-6 * smax, "%dD, %lld coils: grid against series %.3g (max |s| %.3g)", dim, (long long)C,
              worst, smax);

    /* RSS: 1 at the centre voxel (x = 0) by construction; over the head
     * within [0.5, 2] for an array (a single coil shades more: [0.2, 4]). */
    double rss_c = 0, rmin = INFINITY, rmax = 0, head_max = 0, fov_max = 0, step_max = 0;
    for (int64_t v = 0; v < V; v++) {
        int64_t ix = v % n[0], iy = (v / n[0]) % n[1], iz = v / (n[0] * n[1]);
        double x = lm_voxel_pos(ix, n[0]), y = lm_voxel_pos(iy, n[1]), z = lm_voxel_pos(iz, n[2]);
        double r2 = 0;
        for (int64_t c = 0; c < C; c++) {
            double a = cabsf(s->s[c * V + v]);
            r2 += a * a;
            fov_max = fmax(fov_max, a);
            if (in_head(x, y, z))
                head_max = fmax(head_max, a);
            /* Smoothness: neighbour steps along x (periodic). */
            int64_t w = v - ix + (ix + 1) % n[0];
            step_max = fmax(step_max, cabsf(s->s[c * V + w] - s->s[c * V + v]));
        }
        if (ix == n[0] / 2 && iy == n[1] / 2 && iz == n[2] / 2)
            rss_c = sqrt(r2);
        if (in_head(x, y, z)) {
            rmin = fmin(rmin, sqrt(r2));
            rmax = fmax(rmax, sqrt(r2));
        }
    }
    CHECK_NEAR(rss_c, 1.0, 1e-6);
    double lo = C > 1 ? 0.5 : 0.2, hi = C > 1 ? 2.0 : 4.0;
    CHECK_MSG(rmin >= lo && rmax <= hi, "%dD, %lld coils: RSS over the head in [%.3f, %.3f], wanted [%g, %g]", dim,
              (long long)C, rmin, rmax, lo, hi);
    /* Order K per axis: a voxel step changes s by at most 2 pi K / n of
     * max|s| (Bernstein); and outside the head the series stays within
     * 1.5 x its largest value inside. */
    CHECK_MSG(step_max <= 2 * M_PI * cs->order / (double)nn * fov_max, "%dD: step %.3g", dim, step_max);
    CHECK_MSG(fov_max <= 1.5 * head_max, "%dD, %lld coils: max |s| %.3g in the FOV, %.3g in the head", dim,
              (long long)C, fov_max, head_max);

    /* Each coil: brighter at the head's edge towards it than at the
     * opposite edge (by 2x at least), brightest within 0.12 FOV of that
     * edge; phases at the centre spread over the circle (at least a quarter
     * of an even spacing 2 pi / C apart). */
    double worst_ratio = INFINITY, worst_dist = 0, min_dphase = INFINITY;
    for (int64_t c = 0; c < C; c++) {
        const double *p = cs->pos + 3 * c;
        double az = atan2(p[1], p[0]);
        /* Head edge in the coil's direction at the coil's height (95 %
         * of the way out along the ray). */
        double t = 0.95 * sqrt(1 - pow(p[2] / 0.405, 2)) / sqrt(pow(cos(az) / 0.345, 2) + pow(sin(az) / 0.46, 2));
        double near[3] = {t * cos(az), t * sin(az), p[2]}, far[3] = {-near[0], -near[1], p[2]};
        double an = cabs(lm_coils_synth_value(cs, c, near[0], near[1], near[2]));
        double af = cabs(lm_coils_synth_value(cs, c, far[0], far[1], far[2]));
        worst_ratio = fmin(worst_ratio, an / af);
        double best = 0, bx = 0, by = 0, bz = 0;
        for (int64_t v = 0; v < V; v++) {
            double x = lm_voxel_pos(v % n[0], n[0]), y = lm_voxel_pos((v / n[0]) % n[1], n[1]);
            double z = lm_voxel_pos(v / (n[0] * n[1]), n[2]);
            double a = cabsf(s->s[c * V + v]);
            if (in_head(x, y, z) && a > best) {
                best = a;
                bx = x;
                by = y;
                bz = z;
            }
        }
        double dz = dim == 3 ? bz - near[2] : 0.0;
        worst_dist = fmax(worst_dist, sqrt(pow(bx - near[0], 2) + pow(by - near[1], 2) + dz * dz));
        double ph = carg(lm_coils_synth_value(cs, c, 0, 0, 0));
        for (int64_t d = 0; d < c; d++) {
            double dp = fabs(remainder(ph - carg(lm_coils_synth_value(cs, d, 0, 0, 0)), 2 * M_PI));
            min_dphase = fmin(min_dphase, dp);
        }
    }
    CHECK_MSG(worst_ratio >= 2.0, "%dD, %lld coils: near/far edge ratio %.2f", dim, (long long)C, worst_ratio);
    CHECK_MSG(worst_dist <= 0.12, "%dD, %lld coils: brightest voxel %.3f FOV from the near edge", dim, (long long)C,
              worst_dist);
    if (C > 1)
        CHECK_MSG(min_dphase >= 0.25 * 2 * M_PI / (double)C,
                  "%dD, %lld coils: two coils' centre phases differ by %.3g rad", dim, (long long)C, min_dphase);
    fprintf(stderr,
            "%dD, %2lld coils, %lld^%d: grid-series %.2g, RSS head [%.3f, %.3f], max|s| head %.3f FOV %.3f, "
            "near/far >= %.2f, peak <= %.3f FOV from the near edge, centre phases >= %.3f rad apart\n",
            dim, (long long)C, (long long)nn, dim, worst, rmin, rmax, head_max, fov_max, worst_ratio, worst_dist,
            C > 1 ? min_dphase : 0.0);
    lm_sens_free(s);
    lm_coils_synth_free(cs);
}

int main(void)
{
    lm_error err = {0};
    check_set(3, 1, 40);
    check_set(3, 8, 40);
    check_set(3, 32, 40);
    check_set(3, 64, 32);
    check_set(2, 1, 96);
    check_set(2, 8, 96);
    check_set(2, 16, 96);

    /* Deterministic: the same coefficients every time, and the one-call
     * form gives the maps of that set. */
    lm_coils_synth *a = NULL, *b = NULL;
    CHECK_OK(lm_coils_synth_make(3, 8, &a, &err), &err);
    CHECK_OK(lm_coils_synth_make(3, 8, &b, &err), &err);
    if (a && b) {
        CHECK(memcmp(a->a, b->a, sizeof(double complex) * (size_t)(a->ncoils * a->nterms)) == 0);
        const int64_t n[3] = {20, 18, 16};
        lm_sens *s1 = NULL, *s2 = NULL;
        CHECK_OK(lm_coils_synth_maps(a, n, &s1, &err), &err);
        CHECK_OK(lm_coils_synth_sens(3, 8, n, &s2, &err), &err);
        CHECK(s1 && s2 && memcmp(s1->s, s2->s, sizeof(lm_cfloat) * (size_t)(20 * 18 * 16 * 8)) == 0);
        lm_sens_free(s1);
        lm_sens_free(s2);
        /* Frequencies: integers, |f| <= order, fx fastest, each once. */
        int ok = 1;
        for (int64_t j = 0; j < a->nterms; j++)
            for (int ax = 0; ax < 3; ax++) {
                double f = a->freq[3 * j + ax];
                ok &= f == round(f) && fabs(f) <= a->order;
            }
        CHECK(ok && a->freq[0] == -2 && a->freq[3] == -1 && a->freq[3 * 124] == 2 && a->freq[3 * 124 + 2] == 2);
    }
    /* 2D maps do not depend on z; 3D maps on a single slice are the z = 0 plane. */
    {
        lm_coils_synth *c2 = NULL;
        CHECK_OK(lm_coils_synth_make(2, 4, &c2, &err), &err);
        const int64_t n3[3] = {16, 16, 3}, n1[3] = {16, 16, 1};
        lm_sens *s3 = NULL, *s1 = NULL;
        CHECK_OK(lm_coils_synth_maps(c2, n3, &s3, &err), &err);
        CHECK_OK(lm_coils_synth_maps(c2, n1, &s1, &err), &err);
        if (s3 && s1)
            for (int64_t c = 0; c < 4; c++)
                for (int64_t z = 0; z < 3; z++)
                    CHECK(memcmp(s3->s + c * 768 + z * 256, s1->s + c * 256, 256 * sizeof(lm_cfloat)) == 0);
        lm_sens_free(s3);
        lm_sens_free(s1);
        lm_coils_synth_free(c2);
        if (a) {
            CHECK_OK(lm_coils_synth_maps(a, n1, &s1, &err), &err);
            if (s1)
                CHECK(cabs(s1->s[3 * 256 + 5 * 16 + 9] - lm_coils_synth_value(a, 3, lm_voxel_pos(9, 16),
                                                                                lm_voxel_pos(5, 16), 0)) < 1e-6);
            lm_sens_free(s1);
        }
    }
    lm_coils_synth_free(a);
    lm_coils_synth_free(b);

    /* Bad arguments: one-line errors, nothing allocated. */
    lm_coils_synth *x = (lm_coils_synth *)&err; /* must be reset to NULL */
    CHECK(lm_coils_synth_make(4, 8, &x, &err) == LM_ERR_INVALID && x == NULL && strstr(err.msg, "dimension"));
    CHECK(lm_coils_synth_make(3, 0, &x, &err) == LM_ERR_INVALID && strstr(err.msg, "coils"));
    CHECK(lm_coils_synth_make(3, LM_COILS_SYNTH_MAX + 1, &x, &err) == LM_ERR_INVALID);
    CHECK(lm_coils_synth_make(3, 8, NULL, &err) == LM_ERR_INVALID);
    const int64_t bad[3] = {16, 0, 16};
    lm_sens *s = NULL;
    CHECK(lm_coils_synth_sens(3, 8, bad, &s, &err) == LM_ERR_INVALID && s == NULL && strstr(err.msg, "matrix"));
    CHECK(lm_coils_synth_value(NULL, 0, 0, 0, 0) == 0);
    return lm_test_finish("coils_maps");
}
