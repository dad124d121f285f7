/* Rigid mutual-information registration (lm_register.h). */
#include "lm_register.h"

#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <nlopt.h>
#include <stdlib.h>
#include <string.h>

void lm_register_opts_init(lm_register_opts *o)
{
    *o = (lm_register_opts){.levels = 0, .bins = 32, .max_rot_deg = 15, .max_shift_mm = 0, .max_evals = 400,
                            .xtol = 0.005};
}

void lm_register_centre(const lm_volume *fixed, double centre_mm[3])
{
    for (int a = 0; a < 3; a++) {
        double c = fixed->affine[a][3];
        for (int b = 0; b < 3; b++)
            c += fixed->affine[a][b] * (double)(fixed->dims[b] / 2);
        centre_mm[a] = c;
    }
}

/* |v| as a new real volume. */
static lm_volume *magnitude(const lm_volume *v, lm_error *err)
{
    lm_volume *m = lm_volume_copy(v, err);
    if (!m)
        return NULL;
    const int64_t n = lm_volume_count(m);
    for (int64_t j = 0; j < n; j++)
        m->data[j] = cabsf(m->data[j]);
    return m;
}

/* Block average by f along each axis longer than 1 (a partial last block
 * is dropped); coarse voxel i covers fine voxels f i .. f i + f - 1, so its
 * centre is at fine index f i + (f - 1)/2. */
static lm_volume *downsample(const lm_volume *v, int f, lm_error *err)
{
    if (f <= 1)
        return lm_volume_copy(v, err);
    int64_t d[3], fa[3];
    double vox[3];
    for (int a = 0; a < 3; a++) {
        fa[a] = v->dims[a] >= f ? f : 1;
        d[a] = v->dims[a] / fa[a];
        vox[a] = v->voxel_mm[a] * (double)fa[a];
    }
    lm_volume *c = lm_volume_new(d, vox, err);
    if (!c)
        return NULL;
    for (int r = 0; r < 3; r++) {
        for (int a = 0; a < 3; a++)
            c->affine[r][a] = v->affine[r][a] * (double)fa[a];
        double off = v->affine[r][3];
        for (int a = 0; a < 3; a++)
            off += v->affine[r][a] * 0.5 * (double)(fa[a] - 1);
        c->affine[r][3] = off;
    }
    const double inv = 1.0 / (double)(fa[0] * fa[1] * fa[2]);
    for (int64_t k = 0; k < d[2]; k++)
        for (int64_t j = 0; j < d[1]; j++)
            for (int64_t i = 0; i < d[0]; i++) {
                double s = 0;
                for (int64_t kk = 0; kk < fa[2]; kk++)
                    for (int64_t jj = 0; jj < fa[1]; jj++)
                        for (int64_t ii = 0; ii < fa[0]; ii++)
                            s += crealf(v->data[(i * fa[0] + ii) +
                                                v->dims[0] * ((j * fa[1] + jj) + v->dims[1] * (k * fa[2] + kk))]);
                c->data[i + d[0] * (j + d[1] * k)] = (float)(s * inv);
            }
    return c;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Intensity window [lo, hi] of a real volume: its minimum and its 99.5th
 * percentile, so a few bright noise voxels do not squeeze the histogram. */
static lm_code window(const lm_volume *v, double *lo, double *hi, lm_error *err)
{
    const int64_t n = lm_volume_count(v);
    float *s = lm_alloc((size_t)n, sizeof *s, err, "registration histogram");
    if (!s)
        return LM_ERR_NOMEM;
    for (int64_t j = 0; j < n; j++)
        s[j] = crealf(v->data[j]);
    qsort(s, (size_t)n, sizeof *s, cmp_float);
    *lo = s[0];
    *hi = s[(int64_t)floor(0.995 * (double)(n - 1))];
    if (!(*hi > *lo))
        *hi = s[n - 1];
    free(s);
    return LM_OK;
}

static double bspline3(double u)
{
    u = fabs(u);
    if (u < 1)
        return 2.0 / 3.0 - u * u + 0.5 * u * u * u;
    if (u < 2)
        return (2 - u) * (2 - u) * (2 - u) / 6.0;
    return 0;
}

typedef struct mi_ctx {
    const lm_volume *fixed, *moving; /* real, this level */
    double flo, fhi, mlo, mhi;        /* intensity windows */
    int bins;
    double centre[3];
    double *joint;                    /* bins x (bins + 4) */
    int64_t npts;                     /* sample points: one per fixed voxel, jittered */
    double *pts;                      /* their world positions (3 per point) */
    float *fval;                      /* the fixed image there */
    double moving_inv[4][4];          /* moving world -> index */
    int act[6], nact;                 /* the parameters optimised (a 2D image: rz, tx, ty) */
    double full[6];                   /* all six, the others held */
    int evals;
    double covered;                   /* share of the fixed image's signal (sum of |fixed| at the
                                         points) that fell inside the moving image, last evaluation */
    lm_code rc;
    lm_error *err;
} mi_ctx;

/* Trilinear value of a real volume at a fractional index, the nearest
 * edge voxel outside. */
static double trilinear(const lm_volume *v, const double q[3])
{
    int64_t i0[3];
    double w[3];
    for (int a = 0; a < 3; a++) {
        const int64_t n = v->dims[a];
        double p = q[a];
        if (n == 1) {
            i0[a] = 0;
            w[a] = 0;
            continue;
        }
        p = p < 0 ? 0 : p > (double)(n - 1) ? (double)(n - 1) : p;
        int64_t f = (int64_t)floor(p);
        if (f >= n - 1)
            f = n - 2;
        i0[a] = f;
        w[a] = p - (double)f;
    }
    const int64_t sx = v->dims[0] > 1, sy = v->dims[1] > 1 ? v->dims[0] : 0,
                  sz = v->dims[2] > 1 ? v->dims[0] * v->dims[1] : 0;
    const lm_cfloat *d = v->data + i0[0] + v->dims[0] * (i0[1] + v->dims[1] * i0[2]);
    const double c00 = crealf(d[0]) * (1 - w[0]) + crealf(d[sx]) * w[0];
    const double c10 = crealf(d[sy]) * (1 - w[0]) + crealf(d[sy + sx]) * w[0];
    const double c01 = crealf(d[sz]) * (1 - w[0]) + crealf(d[sz + sx]) * w[0];
    const double c11 = crealf(d[sz + sy]) * (1 - w[0]) + crealf(d[sz + sy + sx]) * w[0];
    return ((c00 * (1 - w[1]) + c10 * w[1]) * (1 - w[2]) + (c01 * (1 - w[1]) + c11 * w[1]) * w[2]);
}

/* Sample points: every fixed voxel moved by a fixed pseudo-random jitter
 * of up to half a voxel along each axis, the fixed image interpolated
 * there. On the grid itself the moving image would be interpolated (and
 * blurred) by an amount that depends on T, and MI would prefer the
 * transforms that blur it to match the fixed image's partial volumes
 * (Pluim et al., Comput Vis Image Underst 77:211, 2000; Mattes et al.
 * sample at random points for the same reason). */
static lm_code make_points(mi_ctx *c, lm_error *err)
{
    const lm_volume *f = c->fixed;
    c->npts = lm_volume_count(f);
    c->pts = lm_alloc((size_t)c->npts * 3, sizeof *c->pts, err, "registration points");
    c->fval = c->pts ? lm_alloc((size_t)c->npts, sizeof *c->fval, err, "registration points") : NULL;
    if (!c->fval)
        return LM_ERR_NOMEM;
    uint64_t st = 0x9e3779b97f4a7c15ULL;
    int64_t j = 0;
    for (int64_t k = 0; k < f->dims[2]; k++)
        for (int64_t y = 0; y < f->dims[1]; y++)
            for (int64_t x = 0; x < f->dims[0]; x++, j++) {
                double q[3] = {(double)x, (double)y, (double)k};
                for (int a = 0; a < 3; a++) {
                    st ^= st << 13, st ^= st >> 7, st ^= st << 17; /* xorshift64 */
                    if (f->dims[a] > 1)
                        q[a] += (double)(st >> 11) * 0x1.0p-53 - 0.5;
                }
                c->fval[j] = (float)trilinear(f, q);
                for (int a = 0; a < 3; a++)
                    c->pts[3 * j + a] = f->affine[a][0] * q[0] + f->affine[a][1] * q[1] + f->affine[a][2] * q[2] +
                                        f->affine[a][3];
            }
    return lm_affine_invert(c->moving->affine, c->moving_inv, err);
}

/* MI of fixed and moving(T x) over the sample points; the moving axis of
 * the histogram carries two padding bins either side for the B-spline's
 * support. */
static double mi_at(mi_ctx *c, const double p[6])
{
    const int B = c->bins, W = B + 4;
    lm_rigid r = {.rot_deg = {p[0], p[1], p[2]}, .shift_mm = {p[3], p[4], p[5]},
                  .centre_mm = {c->centre[0], c->centre[1], c->centre[2]}};
    double t[4][4], m[3][4];
    lm_rigid_matrix(&r, t);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 4; b++)
            m[a][b] = c->moving_inv[a][0] * t[0][b] + c->moving_inv[a][1] * t[1][b] + c->moving_inv[a][2] * t[2][b] +
                      (b == 3 ? c->moving_inv[a][3] : 0);
    c->evals++;
    memset(c->joint, 0, (size_t)B * (size_t)W * sizeof *c->joint);
    const double fs = (B - 1) / (c->fhi - c->flo), ms = (B - 1) / (c->mhi - c->mlo);
    double sig_in = 0, sig_all = 0;
    for (int64_t j = 0; j < c->npts; j++) {
        const double *w = c->pts + 3 * j;
        double q[3];
        int inside = 1;
        for (int a = 0; a < 3; a++) {
            q[a] = m[a][0] * w[0] + m[a][1] * w[1] + m[a][2] * w[2] + m[a][3];
            inside &= q[a] >= -0.5 && q[a] <= (double)c->moving->dims[a] - 0.5;
        }
        const double sig = fabs((double)c->fval[j]);
        sig_all += sig;
        sig_in += inside ? sig : 0;
        double tf = (c->fval[j] - c->flo) * fs;
        double tm = (trilinear(c->moving, q) - c->mlo) * ms;
        tf = tf < 0 ? 0 : tf > B - 1 ? B - 1 : tf;
        tm = tm < 0 ? 0 : tm > B - 1 ? B - 1 : tm;
        const int bf = (int)(tf + 0.5);
        const int bm = (int)floor(tm);
        double *row = c->joint + (size_t)bf * (size_t)W + 2;
        for (int q2 = bm - 1; q2 <= bm + 2; q2++)
            row[q2] += bspline3(tm - q2);
    }
    c->covered = sig_all > 0 ? sig_in / sig_all : 0;
    double total = 0, pf[B], pm[W];
    memset(pm, 0, sizeof pm);
    for (int a = 0; a < B; a++) {
        pf[a] = 0;
        for (int b = 0; b < W; b++) {
            pf[a] += c->joint[a * W + b];
            pm[b] += c->joint[a * W + b];
        }
        total += pf[a];
    }
    double mi = 0;
    for (int a = 0; a < B; a++)
        for (int b = 0; b < W; b++) {
            const double pj = c->joint[a * W + b];
            if (pj > 0)
                mi += pj / total * log(pj * total / (pf[a] * pm[b]));
        }
    return mi;
}

static double objective(unsigned n, const double *x, double *grad, void *user)
{
    (void)n;
    (void)grad; /* derivative-free */
    mi_ctx *c = user;
    if (c->rc != LM_OK)
        return 0;
    for (int i = 0; i < c->nact; i++)
        c->full[c->act[i]] = x[i];
    return -mi_at(c, c->full);
}

typedef struct level_data {
    lm_volume *fixed, *moving;
} level_data;

static lm_code level_prepare(const lm_volume *fixed_mag, const lm_volume *moving_mag, int f, int bins,
                             level_data *ld, mi_ctx *c, lm_error *err)
{
    /* Moving blocks of about the fixed level's voxel size. */
    double fv = fmin(fixed_mag->voxel_mm[0], fmin(fixed_mag->voxel_mm[1], fixed_mag->voxel_mm[2]));
    double mvx = fmin(moving_mag->voxel_mm[0], fmin(moving_mag->voxel_mm[1], moving_mag->voxel_mm[2]));
    int fm = mvx > 0 ? (int)floor(f * fv / mvx + 0.5) : 1;
    if (fm < 1)
        fm = 1;
    ld->fixed = downsample(fixed_mag, f, err);
    ld->moving = ld->fixed ? downsample(moving_mag, fm, err) : NULL;
    if (!ld->moving)
        return err ? err->code : LM_ERR_NOMEM;
    c->fixed = ld->fixed;
    c->moving = ld->moving;
    c->bins = bins;
    lm_code rc = window(ld->fixed, &c->flo, &c->fhi, err);
    if (rc == LM_OK)
        rc = window(ld->moving, &c->mlo, &c->mhi, err);
    if (rc == LM_OK && !(c->fhi > c->flo))
        rc = lm_fail(err, LM_ERR_INVALID, "registration: the reconstruction is constant");
    if (rc == LM_OK && !(c->mhi > c->mlo))
        rc = lm_fail(err, LM_ERR_INVALID, "registration: the reference is constant");
    if (rc == LM_OK)
        rc = make_points(c, err);
    return rc;
}

static void level_free(level_data *ld, mi_ctx *c)
{
    free(c->pts);
    free(c->fval);
    c->pts = NULL;
    c->fval = NULL;
    lm_volume_free(ld->fixed);
    lm_volume_free(ld->moving);
    ld->fixed = ld->moving = NULL;
}

lm_code lm_register_mi(const lm_volume *fixed, const lm_volume *moving, const lm_rigid *t, int bins, double *mi,
                       lm_error *err)
{
    if (!fixed || !moving || !mi || !fixed->data || !moving->data)
        return lm_fail(err, LM_ERR_INVALID, "registration: missing image");
    if (bins <= 0)
        bins = 32;
    if (bins < 4 || bins > 256)
        return lm_fail(err, LM_ERR_INVALID, "registration: %d histogram bins is out of range (4..256)", bins);
    lm_volume *fm = magnitude(fixed, err), *mm = fm ? magnitude(moving, err) : NULL;
    level_data ld = {0};
    mi_ctx c = {.err = err, .rc = LM_OK};
    lm_register_centre(fixed, c.centre);
    c.joint = mm ? lm_alloc((size_t)bins * (size_t)(bins + 4), sizeof *c.joint, err, "registration") : NULL;
    lm_code rc = c.joint ? level_prepare(fm, mm, 1, bins, &ld, &c, err) : LM_ERR_NOMEM;
    if (rc == LM_OK) {
        double p[6] = {0};
        if (t)
            p[0] = t->rot_deg[0], p[1] = t->rot_deg[1], p[2] = t->rot_deg[2], p[3] = t->shift_mm[0],
            p[4] = t->shift_mm[1], p[5] = t->shift_mm[2];
        *mi = mi_at(&c, p);
        rc = c.rc;
    }
    level_free(&ld, &c);
    free(c.joint);
    lm_volume_free(fm);
    lm_volume_free(mm);
    return rc;
}

lm_code lm_register_rigid(const lm_volume *fixed, const lm_volume *moving, const lm_register_opts *o,
                          lm_rigid *t, lm_register_report *rep, lm_error *err)
{
    lm_register_opts def;
    if (!o) {
        lm_register_opts_init(&def);
        o = &def;
    }
    if (!fixed || !moving || !t || !fixed->data || !moving->data)
        return lm_fail(err, LM_ERR_INVALID, "registration: missing image");
    if (o->bins < 4 || o->bins > 256)
        return lm_fail(err, LM_ERR_INVALID, "registration: %d histogram bins is out of range (4..256)", o->bins);
    if (o->levels < 0 || o->levels > 6 || o->max_evals < 1 || !(o->max_rot_deg > 0) || !(o->max_shift_mm >= 0) ||
        !(o->xtol > 0))
        return lm_fail(err, LM_ERR_INVALID, "registration: invalid options");
    int levels = o->levels;
    if (levels == 0) {
        int64_t mn = INT64_MAX;
        for (int a = 0; a < 3; a++)
            if (fixed->dims[a] > 1 && fixed->dims[a] < mn)
                mn = fixed->dims[a];
        for (levels = 1; levels < 3 && mn >> levels >= 16; levels++)
            ;
    }
    double max_shift = o->max_shift_mm;
    if (max_shift == 0)
        for (int a = 0; a < 3; a++)
            max_shift = fmax(max_shift, 0.25 * fixed->voxel_mm[a] * (double)fixed->dims[a]);

    lm_volume *fm = magnitude(fixed, err), *mm = fm ? magnitude(moving, err) : NULL;
    mi_ctx c = {.err = err, .rc = LM_OK};
    /* A single slice pins its plane: only the in-plane motion (rotation
     * about z, shifts along x and y) is seen. */
    if (fixed->dims[2] == 1)
        c.act[0] = 2, c.act[1] = 3, c.act[2] = 4, c.nact = 3;
    else
        for (int i = 0; i < 6; i++)
            c.act[c.nact++] = i;
    lm_register_centre(fixed, c.centre);
    t->centre_mm[0] = c.centre[0], t->centre_mm[1] = c.centre[1], t->centre_mm[2] = c.centre[2];
    c.joint = mm ? lm_alloc((size_t)o->bins * (size_t)(o->bins + 4), sizeof *c.joint, err, "registration") : NULL;
    lm_code rc = c.joint ? LM_OK : LM_ERR_NOMEM;
    double p[6] = {t->rot_deg[0], t->rot_deg[1], t->rot_deg[2], t->shift_mm[0], t->shift_mm[1], t->shift_mm[2]};
    double p0[6];
    memcpy(p0, p, sizeof p0);
    const double vox0 = fmin(fixed->voxel_mm[0], fmin(fixed->voxel_mm[1], fixed->voxel_mm[2]));
    if (rep)
        *rep = (lm_register_report){.levels = levels};
    for (int L = levels - 1; L >= 0 && rc == LM_OK; L--) {
        level_data ld = {0};
        rc = level_prepare(fm, mm, 1 << L, o->bins, &ld, &c, err);
        nlopt_opt opt = rc == LM_OK ? nlopt_create(NLOPT_LN_BOBYQA, (unsigned)c.nact) : NULL;
        if (rc == LM_OK && !opt)
            rc = lm_fail(err, LM_ERR_NOMEM, "registration: NLopt could not create its optimiser");
        if (rc == LM_OK) {
            const double f = (double)(1 << L);
            double lb[6], ub[6], step[6], xtol[6];
            for (int i = 0; i < 6; i++) {
                const double bound = i < 3 ? o->max_rot_deg : max_shift;
                lb[i] = -bound;
                ub[i] = bound;
                if (p[i] < lb[i] || p[i] > ub[i])
                    p[i] = p[i] < lb[i] ? lb[i] : ub[i];
                /* Steps of about a level voxel; a degree moves the FOV's
                 * edge by a similar amount. */
                step[i] = i < 3 ? 1.0 * f : 0.5 * f * vox0;
                if (step[i] > 0.4 * bound)
                    step[i] = 0.4 * bound;
                xtol[i] = o->xtol * f;
            }
            if (L == 0 && rep) {
                rep->mi_start = mi_at(&c, p0);
                rc = c.rc;
            }
            /* the active parameters, packed */
            double x[6];
            for (int i = 0; i < c.nact; i++) {
                const int a = c.act[i];
                lb[i] = lb[a], ub[i] = ub[a], step[i] = step[a], xtol[i] = xtol[a], x[i] = p[a];
            }
            memcpy(c.full, p, sizeof c.full);
            nlopt_set_lower_bounds(opt, lb);
            nlopt_set_upper_bounds(opt, ub);
            nlopt_set_initial_step(opt, step);
            nlopt_set_xtol_abs(opt, xtol);
            nlopt_set_maxeval(opt, o->max_evals);
            nlopt_set_min_objective(opt, objective, &c);
            double best = 0;
            nlopt_result nr = rc == LM_OK ? nlopt_optimize(opt, x, &best) : NLOPT_SUCCESS;
            for (int i = 0; rc == LM_OK && i < c.nact; i++)
                c.full[c.act[i]] = x[i];
            if (rc == LM_OK && c.rc != LM_OK)
                rc = c.rc;
            else if (rc == LM_OK && nr < 0 && nr != NLOPT_ROUNDOFF_LIMITED)
                rc = lm_fail(err, LM_ERR_INVALID, "registration: NLopt BOBYQA failed (%s)", nlopt_result_to_string(nr));
            if (rc == LM_OK)
                memcpy(p, c.full, sizeof p);
            if (rc == LM_OK && L == 0 && rep) {
                rep->mi_end = mi_at(&c, p); /* -best, and the coverage there */
                rep->covered = c.covered;
            }
        }
        if (opt)
            nlopt_destroy(opt);
        level_free(&ld, &c);
    }
    if (rep)
        rep->evals = c.evals;
    if (rc == LM_OK) {
        for (int i = 0; i < 3; i++) {
            t->rot_deg[i] = p[i];
            t->shift_mm[i] = p[3 + i];
        }
    }
    free(c.joint);
    lm_volume_free(fm);
    lm_volume_free(mm);
    return rc;
}
