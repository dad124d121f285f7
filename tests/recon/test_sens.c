/* Coil maps estimated from non-Cartesian data (ESPIRiT and Walsh, 2D and
 * 3D, non-square matrices) against the true analytic maps of coils_synth.h.
 * Error: RMS over the object's interior (normalised ellipsoid radius <=
 * 0.85, i.e. 3-5 voxels inside the edge) of min over a per-voxel phase of
 * ||s_true - e^{ia} s_est||, both unit-norm per voxel (syn_map_error). */
#include <stdio.h>
#include <time.h>

#include "coils_synth.h"
#include "lm_test.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void run(const char *name, const syn_problem *p, lm_sens_method method, double tol)
{
    lm_error err;
    lm_error_clear(&err);
    lm_sens_est_opts o;
    lm_sens_est_default_opts(&o);
    o.method = method;
    lm_sens_est_info info;
    lm_sens *s = NULL;
    double t0 = now();
    CHECK_OK(lm_sens_estimate(&p->g, p->t, p->k, &o, NULL, &s, &info, &err), &err);
    double dt = now() - t0;
    if (!s)
        return;
    CHECK(s->ncoils == p->s->ncoils && s->n[0] == p->g.n[0] && s->n[1] == p->g.n[1] && s->n[2] == p->g.n[2]);
    double cover, jump;
    double e = syn_map_error(p, s, 0.85, &cover, &jump);
    fprintf(stderr, "%-14s %s: map error %.2f %% (interior covered %.1f %%, mask %.1f %% of FOV, "
            "max phase step %.3f rad), calib %lldx%lldx%lld, %lld centre samples, kernels %lld/%lld, %.2f s\n",
            name, info.used == LM_SENS_ESPIRIT ? "espirit" : "walsh", 100 * e, 100 * cover,
            100 * info.mask_fraction, jump, (long long)info.calib[0], (long long)info.calib[1],
            (long long)info.calib[2], (long long)info.centre_samples, (long long)info.kernels_kept,
            (long long)info.kernels_total, dt);
    CHECK_MSG(e <= tol, "%s: map error %.4f > %.4f", name, e, tol);
    CHECK_MSG(cover >= 0.99, "%s: mask covers %.3f of the interior", name, cover);
    CHECK_MSG(jump < 0.3, "%s: phase step %.3f rad between neighbours", name, jump);
    CHECK(info.used == (method == LM_SENS_WALSH ? LM_SENS_WALSH : LM_SENS_ESPIRIT));
    /* unit norm inside the mask */
    int64_t nv = lm_sens_voxels(s);
    double worst = 0;
    for (int64_t v = 0; v < nv; v++) {
        double n2 = 0;
        for (int64_t c = 0; c < s->ncoils; c++)
            n2 += crealf(s->s[v + c * nv] * conjf(s->s[v + c * nv]));
        if (n2 > 0)
            worst = fmax(worst, fabs(sqrt(n2) - 1));
    }
    CHECK_MSG(worst < 1e-5, "%s: map norm off by %.2e", name, worst);
    lm_sens_free(s);
}

int main(void)
{
    lm_error err;
    lm_error_clear(&err);
    syn_problem p;

    /* 2D, non-square, radial (golden angle, Nyquist spoke count) */
    int64_t n2[3] = {64, 56, 1};
    CHECK_OK(syn_make(&p, n2, 8, LM_TRAJ_RADIAL2D, 0, &err), &err);
    if (p.k) {
        run("2D 64x56", &p, LM_SENS_AUTO, 0.05);
        run("2D 64x56", &p, LM_SENS_WALSH, 0.05);
    }
    syn_free(&p);

    /* 3D, non-cubic, centre-out radial with the calibration box sampled at
     * about Nyquist (1300 spokes of 16 samples) */
    int64_t n3[3] = {40, 36, 32};
    CHECK_OK(syn_make(&p, n3, 8, LM_TRAJ_RADIAL3D, 1300 * 16, &err), &err);
    if (p.k) {
        run("3D 40x36x32", &p, LM_SENS_ESPIRIT, 0.05);
        run("3D 40x36x32", &p, LM_SENS_WALSH, 0.05);
    }
    syn_free(&p);
    return lm_test_finish("test_sens");
}
