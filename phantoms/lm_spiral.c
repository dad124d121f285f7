/* Spiral-out trajectory with a gradient-limited time law (lm_spiral.h). */
#include "lm_spiral.h"

#include <math.h>
#include <stdlib.h>

/* Trapezoid intervals over theta: fine enough that the readout's length
 * comes out within ~1e-8 relative and theta(t) between nodes is linear to
 * well below a float's precision of k. */
#define SPIRAL_NODES (1 << 17)
/* Dwell margin: samples at most (1 - 1e-4)/FOV apart before the inversion's
 * own (1e-7-level) error. */
#define SPIRAL_MARGIN 1e-4
#define SPIRAL_MAX_READOUT_S 1.0
#define SPIRAL_MAX_SAMPLES ((int64_t)1 << 24)

typedef struct law {
    double b, thmax, accel;   /* spiral constant, last angle, centripetal limit */
} law;

/* ds/dtheta and the radius of curvature of r = b theta. */
static inline double arc_rate(const law *s, double th) { return s->b * sqrt(1 + th * th); }

static inline double curvature_radius(const law *s, double th)
{
    double q = 1 + th * th;
    return s->b * q * sqrt(q) / (1 + q);
}

static inline double dt_dtheta(const law *s, double th, double vmax)
{
    double v = sqrt(s->accel * curvature_radius(s, th));
    return arc_rate(s, th) / (v < vmax ? v : vmax);
}

/* Readout duration at top speed vmax (trapezoid over SPIRAL_NODES). */
static double duration(const law *s, double vmax)
{
    const double h = s->thmax / SPIRAL_NODES;
    double sum = 0.5 * (dt_dtheta(s, 0, vmax) + dt_dtheta(s, s->thmax, vmax));
    for (int64_t i = 1; i < SPIRAL_NODES; i++)
        sum += dt_dtheta(s, h * (double)i, vmax);
    return sum * h;
}

lm_code lm_spiral_make(const lm_spiral_opts *o, lm_traj **out, lm_spiral_info *info, lm_error *err)
{
    if (!o || !out)
        return lm_fail(err, LM_ERR_INVALID, "spiral: options or output missing");
    *out = NULL;
    const double fov_mm = o->fov_mm > 0 ? o->fov_mm : LM_SPIRAL_FOV_DEFAULT;
    const double slew = o->slew > 0 ? o->slew : LM_SPIRAL_SLEW_DEFAULT;
    if (o->n < 2 || o->n > 4096)
        return lm_fail(err, LM_ERR_INVALID, "spiral: matrix %lld is out of range (2..4096)", (long long)o->n);
    if (o->interleaves < 1 || o->interleaves > o->n)
        return lm_fail(err, LM_ERR_INVALID, "spiral: %lld interleaves is out of range (1..%lld)",
                       (long long)o->interleaves, (long long)o->n);
    if (!(o->readout_s > 0) || o->readout_s > SPIRAL_MAX_READOUT_S)
        return lm_fail(err, LM_ERR_INVALID, "spiral: readout %g ms is out of range (0..%g ms]", o->readout_s * 1e3,
                       SPIRAL_MAX_READOUT_S * 1e3);
    if (!isfinite(fov_mm) || fov_mm > 1e4 || !isfinite(slew) || slew > 1e4)
        return lm_fail(err, LM_ERR_INVALID, "spiral: FOV %g mm or slew %g T/m/s is out of range", fov_mm, slew);

    const double kmax = (double)o->n / 2, R = o->readout_s;
    const int64_t L = o->interleaves;
    const double turns = kmax / (double)L, fov_m = fov_mm * 1e-3;
    law s = {.thmax = 2 * M_PI * turns};
    s.b = kmax / s.thmax;
    s.accel = LM_SPIRAL_GAMMA_HZ_T * slew * fov_m / sqrt(1.25); /* cycles/FOV per s^2 */

    /* The slew limit alone (vmax unbounded) sets the shortest readout. */
    const double t_slew = duration(&s, INFINITY);
    if (!(t_slew < R))
        return lm_fail(err, LM_ERR_INVALID,
                       "spiral: a %g ms readout is too short for %lld interleaves of a %lld matrix (the slew "
                       "limit of %g T/m/s alone needs %.3g ms; use more interleaves)",
                       R * 1e3, (long long)L, (long long)o->n, slew, t_slew * 1e3);
    /* duration() falls as vmax grows: bisect between the constant-speed
     * bound (total arc / R: too slow) and the slew-limited speed at the
     * rim (no faster speed is ever reached). */
    const double arc = 0.5 * s.b * (s.thmax * sqrt(1 + s.thmax * s.thmax) + asinh(s.thmax));
    double lo = arc / R, hi = sqrt(s.accel * curvature_radius(&s, s.thmax));
    if (hi < lo)
        hi = lo;
    for (int it = 0; it < 200 && hi - lo > 1e-12 * hi; it++) {
        double mid = 0.5 * (lo + hi);
        if (duration(&s, mid) > R)
            lo = mid;
        else
            hi = mid;
    }
    const double vmax = hi;
    const double steps = ceil(R * vmax * (1 + SPIRAL_MARGIN));
    if (steps + 1 > (double)SPIRAL_MAX_SAMPLES)
        return lm_fail(err, LM_ERR_INVALID, "spiral: %.0f samples per interleaf is too many (at most %lld)",
                       steps + 1, (long long)SPIRAL_MAX_SAMPLES);
    const int64_t r = (int64_t)steps + 1;
    const double dwell = R / steps;

    /* Cumulative time at the theta nodes, scaled so the last node is R
     * exactly (removes the bisection's last 1e-12). */
    double *tab = lm_alloc(SPIRAL_NODES + 1, sizeof(double), err, "spiral time table");
    if (!tab)
        return err ? err->code : LM_ERR_NOMEM;
    const double h = s.thmax / SPIRAL_NODES;
    tab[0] = 0;
    double prev = dt_dtheta(&s, 0, vmax);
    for (int64_t i = 1; i <= SPIRAL_NODES; i++) {
        double cur = dt_dtheta(&s, h * (double)i, vmax);
        tab[i] = tab[i - 1] + 0.5 * h * (prev + cur);
        prev = cur;
    }
    const double scale = R / tab[SPIRAL_NODES];
    for (int64_t i = 0; i <= SPIRAL_NODES; i++)
        tab[i] *= scale;

    lm_traj *t = lm_traj_new(L * r, 2, err);
    if (!t || lm_traj_alloc_times(t, err) != LM_OK) {
        free(tab);
        lm_traj_free(t);
        return err ? err->code : LM_ERR_NOMEM;
    }
    int64_t node = 0;
    for (int64_t j = 0; j < r; j++) {
        double tau = j == r - 1 ? R : (double)j * dwell, th;
        while (node < SPIRAL_NODES - 1 && tab[node + 1] < tau)
            node++;
        if (j == r - 1)
            th = s.thmax; /* the last sample exactly on the rim */
        else {
            double span = tab[node + 1] - tab[node];
            double u = span > 0 ? (tau - tab[node]) / span : 0;
            th = h * ((double)node + fmin(fmax(u, 0.0), 1.0));
        }
        /* b th <= kmax: |kx|, |ky| <= n/2 */
        double rad = fmin(s.b * th, kmax);
        for (int64_t l = 0; l < L; l++) {
            int64_t i = l * r + j;
            double ang = th + 2 * M_PI * (double)l / (double)L;
            t->k[3 * i] = (float)(rad * cos(ang));
            t->k[3 * i + 1] = (float)(rad * sin(ang));
            t->k[3 * i + 2] = 0.0f;
            t->t[i] = (float)tau;
        }
    }
    free(tab);
    t->readout = r;
    if (info) {
        info->samples = r;
        info->dwell_s = dwell;
        info->vmax = vmax;
        info->gmax_mt_m = vmax / (LM_SPIRAL_GAMMA_HZ_T * fov_m) * 1e3;
        info->r_slew = fmin(vmax * vmax / s.accel, kmax); /* rho_c ~ |k| away from the centre */
        info->turns = turns;
    }
    *out = t;
    return LM_OK;
}

lm_code lm_traj_times_uniform(lm_traj *t, double readout_s, lm_error *err)
{
    if (!t || t->m < 1 || !t->k)
        return lm_fail(err, LM_ERR_INVALID, "sample times: trajectory missing");
    if (!(readout_s >= 0) || readout_s > SPIRAL_MAX_READOUT_S)
        return lm_fail(err, LM_ERR_INVALID, "sample times: readout %g ms is out of range (0..%g ms)",
                       readout_s * 1e3, SPIRAL_MAX_READOUT_S * 1e3);
    lm_code c = lm_traj_alloc_times(t, err);
    if (c != LM_OK)
        return c;
    const int64_t r = t->readout > 0 && t->readout <= t->m ? t->readout : t->m;
    const double dwell = r > 1 ? readout_s / (double)(r - 1) : 0;
    for (int64_t start = 0; start < t->m; start += r) {
        int64_t end = start + r < t->m ? start + r : t->m, j0 = start;
        double best = INFINITY;
        for (int64_t i = start; i < end; i++) {
            const float *k = t->k + 3 * i;
            double k2 = (double)k[0] * k[0] + (double)k[1] * k[1] + (double)k[2] * k[2];
            if (k2 < best)
                best = k2, j0 = i;
        }
        for (int64_t i = start; i < end; i++)
            t->t[i] = (float)((double)(i - j0) * dwell);
    }
    return LM_OK;
}
