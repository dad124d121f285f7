/* The anatomical prior's parts (issue 12): rigid MI registration recovers
 * a known sub-voxel shift and rotation between two contrasts; a
 * half-resolution reference resampled through its affine lands on the
 * full-resolution one; the robust penalty's weights are its gradient
 * (finite differences in double); the lesion problem's mask and contrast
 * score. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_lesion.h"
#include "lm_metrics.h"
#include "lm_reg.h"
#include "lm_register.h"
#include "lm_resample.h"
#include "lm_test.h"

static lm_volume *truth_of(const lm_phantom *p, int64_t n, lm_error *err)
{
    lm_geom g;
    lm_geom_init(&g, n, n, n, LM_PROBLEM_FOV_MM);
    lm_volume *v = NULL;
    if (lm_phantom_truth(p, &g, 4, &v, err) != LM_OK)
        return NULL;
    return v;
}

/* The reference phantom moved by T = (rotation alpha about z, shift t mm)
 * about the FOV centre, analytically: with v = A (X - c) and A's last
 * factor the z rotation by -phi (lm_phantom.c), the moved ellipsoid has
 * centre Rz(alpha) c + t and phi + alpha; its truth is exact (sub-voxel
 * averaged like the fixed image's), so nothing but the registration can
 * bias the answer. */
static void moved_phantom(const lm_phantom *p, double alpha_deg, const double t_mm[3], lm_phantom *out)
{
    const double ca = cos(alpha_deg * M_PI / 180), sa = sin(alpha_deg * M_PI / 180);
    const double mm = LM_PROBLEM_FOV_MM / 2; /* phantom unit */
    *out = *p;
    for (int i = 0; i < out->count; i++) {
        lm_ellipsoid *e = &out->e[i];
        const double x = e->x0, y = e->y0;
        e->x0 = ca * x - sa * y + t_mm[0] / mm;
        e->y0 = sa * x + ca * y + t_mm[1] / mm;
        e->z0 += t_mm[2] / mm;
        e->phi += alpha_deg;
    }
}

static void test_register(void)
{
    lm_error err = {0};
    const int64_t n = 48;
    lm_volume *fixed = truth_of(lm_phantom_shepp_logan_3d(), n, &err);
    CHECK(fixed != NULL);
    if (!fixed)
        return;
    const double vox = fixed->voxel_mm[0]; /* 5 mm */
    /* 0.5 degree, and 0.2 voxel along x (plus smaller ones along y, z) */
    lm_rigid want = {.rot_deg = {0, 0, 0.5}, .shift_mm = {0.2 * vox, -0.1 * vox, 0.15 * vox}};
    lm_register_centre(fixed, want.centre_mm);
    CHECK(want.centre_mm[0] == 0 && want.centre_mm[1] == 0 && want.centre_mm[2] == 0);
    lm_phantom mp;
    moved_phantom(lm_phantom_shepp_logan_3d_ref(), want.rot_deg[2], want.shift_mm, &mp);
    /* The construction: moved(T p) = ref(p), points in FOV fractions. */
    double m[4][4];
    lm_rigid_matrix(&want, m);
    for (int i = 0; i < 200; i++) {
        const double p[3] = {0.4 * sin(i * 1.3), 0.4 * cos(i * 0.7), 0.35 * sin(i * 2.9)};
        double q[3];
        for (int a = 0; a < 3; a++)
            q[a] = (m[a][0] * p[0] + m[a][1] * p[1] + m[a][2] * p[2]) + m[a][3] / LM_PROBLEM_FOV_MM;
        CHECK_NEAR(lm_phantom_value(&mp, q[0], q[1], q[2]),
                   lm_phantom_value(lm_phantom_shepp_logan_3d_ref(), p[0], p[1], p[2]), 1e-12);
    }
    lm_volume *moving = truth_of(&mp, n, &err);
    CHECK(moving != NULL);
    lm_rigid got = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    lm_register_report rep = {0};
    CHECK_OK(lm_register_rigid(fixed, moving, NULL, &got, &rep, &err), &err);
    fprintf(stderr, "register: rot %.3f %.3f %.3f deg, shift %.3f %.3f %.3f mm (want %.3f %.3f %.3f, %.3f %.3f %.3f);"
            " MI %.4f -> %.4f, %d evaluations\n", got.rot_deg[0], got.rot_deg[1], got.rot_deg[2], got.shift_mm[0],
            got.shift_mm[1], got.shift_mm[2], want.rot_deg[0], want.rot_deg[1], want.rot_deg[2], want.shift_mm[0],
            want.shift_mm[1], want.shift_mm[2], rep.mi_start, rep.mi_end, rep.evals);
    /* Each shift within 0.05 voxel, each angle within 0.15 degree (0.29 mm,
     * 0.06 voxel, at the head's 110 mm radius); the worst displacement in
     * the head, |dR| r + |dt|, within 0.1 voxel, against 0.28 voxel
     * before registration. */
    double dt = 0, dr = 0, t0 = 0;
    for (int a = 0; a < 3; a++) {
        CHECK_NEAR(got.rot_deg[a], want.rot_deg[a], 0.15);
        CHECK_NEAR(got.shift_mm[a], want.shift_mm[a], 0.05 * vox);
        dt += pow(got.shift_mm[a] - want.shift_mm[a], 2);
        dr += pow(got.rot_deg[a] - want.rot_deg[a], 2);
        t0 += pow(want.shift_mm[a], 2);
    }
    const double before = (sqrt(t0) + 0.5 * M_PI / 180 * 110) / vox;
    const double after = (sqrt(dt) + sqrt(dr) * M_PI / 180 * 110) / vox;
    fprintf(stderr, "register: worst displacement %.3f voxel before, %.3f after\n", before, after);
    CHECK(after < 0.1 && before > 0.25);
    CHECK(rep.mi_end > rep.mi_start);
    /* The metric peaks at the answer: a quarter voxel away is worse. */
    double mi0 = 0, mi1 = 0;
    lm_rigid off = got;
    off.shift_mm[0] += 0.25 * vox;
    CHECK_OK(lm_register_mi(fixed, moving, &got, 0, &mi0, &err), &err);
    CHECK_OK(lm_register_mi(fixed, moving, &off, 0, &mi1, &err), &err);
    CHECK(mi0 > mi1);

    lm_volume_free(fixed);
    lm_volume_free(moving);
}

/* One slice: the 2D head against itself in another contrast, turned by 1
 * degree and moved in plane; only rz, tx, ty are sought, the out-of-plane
 * parameters stay exactly 0. */
static void test_register_2d(void)
{
    lm_error err = {0};
    lm_geom g;
    lm_geom_init(&g, 64, 64, 1, LM_PROBLEM_FOV_MM);
    lm_phantom other = *lm_phantom_shepp_logan_2d();
    for (int i = 0; i < other.count; i++)
        other.e[i].rho = i == 0 ? 0.3 : i == 1 ? 0.5 : -other.e[i].rho * 2; /* another contrast */
    const double vox = LM_PROBLEM_FOV_MM / 64;
    lm_rigid want = {.rot_deg = {0, 0, 1.0}, .shift_mm = {0.3 * vox, -0.2 * vox, 0}};
    lm_phantom mp;
    moved_phantom(&other, want.rot_deg[2], want.shift_mm, &mp);
    lm_volume *fixed = NULL, *moving = NULL;
    CHECK_OK(lm_phantom_truth(lm_phantom_shepp_logan_2d(), &g, 4, &fixed, &err), &err);
    CHECK_OK(lm_phantom_truth(&mp, &g, 4, &moving, &err), &err);
    lm_rigid got = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    if (fixed && moving)
        CHECK_OK(lm_register_rigid(fixed, moving, NULL, &got, NULL, &err), &err);
    fprintf(stderr, "register 2D: rot %.3f %.3f %.3f deg, shift %.3f %.3f %.3f mm (want 0 0 1, %.3f %.3f 0)\n",
            got.rot_deg[0], got.rot_deg[1], got.rot_deg[2], got.shift_mm[0], got.shift_mm[1], got.shift_mm[2],
            want.shift_mm[0], want.shift_mm[1]);
    CHECK(got.rot_deg[0] == 0 && got.rot_deg[1] == 0 && got.shift_mm[2] == 0);
    CHECK_NEAR(got.rot_deg[2], 1.0, 0.15);
    CHECK_NEAR(got.shift_mm[0], want.shift_mm[0], 0.05 * vox);
    CHECK_NEAR(got.shift_mm[1], want.shift_mm[1], 0.05 * vox);
    lm_volume_free(fixed);
    lm_volume_free(moving);
}

/* A reference at n/2 (voxels twice as large, centred affine) resampled
 * through both affines onto the n grid matches the n-grid reference where
 * the image is smooth: away from edges trilinear interpolation of the
 * coarse voxel averages is exact for the piecewise-constant phantom. */
static void test_half_res(void)
{
    lm_error err = {0};
    const int64_t n = 32;
    lm_geom g;
    lm_problem_def def = {.name = "T32", .n = n, .m = 100, .readout = 16, .noise = 0.0, .coils = 1};
    lm_lesion_opts lo = {.ref_half_res = 1};
    lm_lesion les;
    lm_lesion_default(&les);
    lm_volume *half = NULL;
    CHECK_OK(lm_lesion_problem(&def, &lo, &les, &g, NULL, NULL, NULL, NULL, &half, NULL, &err), &err);
    lm_volume *full = truth_of(lm_phantom_shepp_logan_3d_ref(), n, &err);
    if (!half || !full) {
        CHECK(0);
        return;
    }
    CHECK(half->dims[0] == n / 2 && half->voxel_mm[0] == 2 * full->voxel_mm[0]);
    /* Coarse voxel i centres at (i - n/4) 2 vox mm, fine voxel j at (j - n/2) vox mm. */
    CHECK_NEAR(half->affine[0][3], -(double)(n / 4) * half->voxel_mm[0], 1e-9);
    lm_volume *up = NULL;
    CHECK_OK(lm_resample(half, full->dims, full->voxel_mm, full->affine, NULL, LM_OUTSIDE_NEAREST, &up, &err), &err);
    int64_t flat = 0, bad = 0;
    for (int64_t k = 2; k < n - 2; k++)
        for (int64_t j = 2; j < n - 2; j++)
            for (int64_t i = 2; i < n - 2; i++) {
                /* flat: the fine reference is constant over the 5^3 neighbourhood */
                const int64_t v = i + n * (j + n * k);
                const float c = crealf(full->data[v]);
                int same = 1;
                for (int64_t dk = -2; dk <= 2 && same; dk++)
                    for (int64_t dj = -2; dj <= 2 && same; dj++)
                        for (int64_t di = -2; di <= 2 && same; di++)
                            same = fabsf(crealf(full->data[v + di + n * (dj + n * dk)]) - c) < 1e-6f;
                if (!same)
                    continue;
                flat++;
                bad += fabsf(crealf(up->data[v]) - c) > 1e-4f;
            }
    fprintf(stderr, "half resolution: %lld flat voxels, %lld off by > 1e-4\n", (long long)flat, (long long)bad);
    CHECK(flat > 1000 && bad == 0);
    /* Shifted by a whole voxel of the fine grid: the resampled reference
     * moves with it (checked at one interior flat voxel per axis shift). */
    lm_volume_free(up);
    lm_volume_free(half);
    lm_volume_free(full);
}

/* R(rho) = sum w phi(|D rho|): the weights' D^T diag(w psi) D rho is its
 * gradient, checked against central differences in double. */
static void test_robust_gradient(void)
{
    const int64_t n[3] = {6, 5, 4};
    const int64_t nv = n[0] * n[1] * n[2];
    lm_cfloat *rho = malloc(nv * sizeof *rho), *g = malloc(nv * sizeof *g), *pert = malloc(nv * sizeof *pert);
    float *w = malloc(3 * nv * sizeof *w), *wp = malloc(3 * nv * sizeof *wp);
    unsigned s = 7;
    for (int64_t j = 0; j < nv; j++) {
        s = s * 1103515245u + 12345u;
        double a = (s >> 8) / 16777216.0;
        s = s * 1103515245u + 12345u;
        double b = (s >> 8) / 16777216.0;
        rho[j] = CMPLXF((float)(a * 2 - 1), (float)(b - 0.5));
    }
    for (int64_t j = 0; j < 3 * nv; j++)
        w[j] = 0.2f + 0.8f * (float)((j * 37 % 11) / 10.0);
    lm_error err = {0};
    const lm_robust pens[2] = {LM_ROBUST_CHARBONNIER, LM_ROBUST_LORENTZIAN};
    for (int q = 0; q < 2; q++) {
        const double delta = 0.3;
        CHECK_OK(lm_reg_robust_weights(n, w, pens[q], delta, 0, rho, wp, 1, &err), &err);
        lm_reg_apply(n, LM_REG_ANATOMICAL, wp, rho, g, 1);
        double worst = 0, scale = 0;
        for (int64_t j = 0; j < nv; j += 7) {
            for (int part = 0; part < 2; part++) {
                /* h = 1e-3 on float data: the value in double is smooth, so
                 * the central difference errs by O(h^2) ~ 1e-6 */
                const double h = 1e-3;
                memcpy(pert, rho, nv * sizeof *rho);
                pert[j] += part ? CMPLXF(0, (float)h) : CMPLXF((float)h, 0);
                const float hp = part ? cimagf(pert[j]) - cimagf(rho[j]) : crealf(pert[j]) - crealf(rho[j]);
                double rp = lm_reg_robust_value(n, w, pens[q], delta, pert);
                pert[j] = rho[j] - (part ? CMPLXF(0, hp) : CMPLXF(hp, 0));
                double rm = lm_reg_robust_value(n, w, pens[q], delta, pert);
                double fd = (rp - rm) / (2 * (double)hp);
                double an = part ? cimagf(g[j]) : crealf(g[j]);
                worst = fmax(worst, fabs(fd - an));
                scale = fmax(scale, fabs(an));
            }
        }
        fprintf(stderr, "robust penalty %d: gradient vs finite differences: worst %.3g of %.3g\n", q, worst, scale);
        CHECK(worst < 1e-4 * fmax(scale, 1));
        /* Small differences: phi(t) -> t^2 / 2, psi -> 1. */
        for (int64_t j = 0; j < nv; j++)
            pert[j] = rho[j] * 1e-4f;
        CHECK_OK(lm_reg_robust_weights(n, NULL, pens[q], delta, 0, pert, wp, 1, &err), &err);
        CHECK(wp[0] > 0.9999f && wp[0] <= 1.0f);
    }
    /* Smoothing: a single-voxel spike makes no edge at sigma 1.5 worth
     * speaking of (its differences shrink by the Gaussian's peak). */
    memset(pert, 0, nv * sizeof *pert);
    pert[2 + n[0] * (2 + n[1] * 2)] = 1;
    CHECK_OK(lm_reg_robust_weights(n, NULL, LM_ROBUST_LORENTZIAN, 0.1, 0, pert, wp, 1, &err), &err);
    float raw_min = 1, sm_min = 1;
    for (int64_t j = 0; j < 3 * nv; j++)
        raw_min = fminf(raw_min, wp[j]);
    CHECK_OK(lm_reg_robust_weights(n, NULL, LM_ROBUST_LORENTZIAN, 0.1, 1.5, pert, wp, 1, &err), &err);
    for (int64_t j = 0; j < 3 * nv; j++)
        sm_min = fminf(sm_min, wp[j]);
    CHECK(raw_min < 0.02f && sm_min > 0.2f);
    CHECK(lm_reg_robust_weights(n, NULL, LM_ROBUST_LORENTZIAN, 0, 0, pert, wp, 1, &err) == LM_ERR_INVALID);
    free(rho), free(g), free(pert), free(w), free(wp);
}

/* Lesion mask and score on 32^3: the mask's regions, the truth scoring 1,
 * the lesion-free truth 0, a half-contrast image 0.5. */
static void test_lesion_score(void)
{
    lm_error err = {0};
    lm_problem_def def = {.name = "T32", .n = 32, .m = 100, .readout = 16, .noise = 0.0, .coils = 1};
    lm_lesion_opts lo = {.lesion = 1};
    lm_lesion les;
    lm_lesion_default(&les);
    les.radius = 0.15; /* 2.4 voxels at 32^3 */
    lm_geom g;
    lm_volume *truth = NULL, *mask = NULL, *ref = NULL;
    CHECK_OK(lm_lesion_problem(&def, &lo, &les, &g, NULL, NULL, &truth, NULL, &ref, &mask, &err), &err);
    lm_volume *base = truth_of(lm_phantom_shepp_logan_3d(), 32, &err);
    if (!truth || !mask || !base) {
        CHECK(0);
        return;
    }
    const int64_t nv = lm_volume_count(truth);
    lm_lesion_score sc;
    CHECK_OK(lm_lesion_contrast(truth->data, truth->data, mask->data, nv, &sc, &err), &err);
    fprintf(stderr, "lesion 32^3: %lld lesion, %lld shell voxels; truth %.4f vs %.4f\n", (long long)sc.lesion_voxels,
            (long long)sc.shell_voxels, sc.truth_lesion, sc.truth_shell);
    CHECK_NEAR(sc.contrast, 1, 1e-12);
    CHECK(sc.lesion_voxels >= 7 && sc.shell_voxels > 50);
    CHECK_NEAR(sc.truth_shell, 0.2, 1e-5); /* the shell is brain tissue only */
    CHECK(sc.truth_lesion > 0.2 + 0.8 * les.rho);
    CHECK_OK(lm_lesion_contrast(base->data, truth->data, mask->data, nv, &sc, &err), &err);
    CHECK_NEAR(sc.contrast, 0, 1e-5);
    for (int64_t j = 0; j < nv; j++)
        base->data[j] = 0.5f * (truth->data[j] + base->data[j]);
    CHECK_OK(lm_lesion_contrast(base->data, truth->data, mask->data, nv, &sc, &err), &err);
    CHECK_NEAR(sc.contrast, 0.5, 1e-5);
    /* The reference lacks the lesion: it is the reference contrast there. */
    const double x = les.centre[0] / 2, y = les.centre[1] / 2, z = les.centre[2] / 2;
    const int64_t ci = (int64_t)lround(x * 32 + 16), cj = (int64_t)lround(y * 32 + 16), ck = (int64_t)lround(z * 32 + 16);
    CHECK_NEAR(crealf(ref->data[ci + 32 * (cj + 32 * ck)]), lm_phantom_value(lm_phantom_shepp_logan_3d_ref(), x, y, z),
               1e-5);
    CHECK(lm_lesion_contrast(truth->data, truth->data, truth->data, nv, &sc, &err) == LM_ERR_INVALID);
    lm_volume_free(truth), lm_volume_free(mask), lm_volume_free(ref), lm_volume_free(base);
}

int main(void)
{
    test_robust_gradient();
    test_lesion_score();
    test_half_res();
    test_register();
    test_register_2d();
    return lm_test_finish("anatomical");
}
