/* Analytic Shepp-Logan phantoms: point values, exact Fourier transforms and
 * the sub-voxel averaged truth on a reconstruction grid.
 *
 * Geometry. Ellipsoid e occupies, in phantom coordinates X ([-1,1] box),
 *     { X : sum_j (v_j / s_j)^2 <= 1 },  v = A (X - c),  s = (a, b, c),
 * A the Euler z-x-z rotation of M. Schabel's phantom3d (the matrix called
 * alpha there), c the centre in the lab frame (as Koay et al. and most
 * analytic-k-space codes place it; phantom3d subtracts the centre after
 * rotating, which moves only the two tilted ellipsoids, by < 0.03).
 * In FOV fractions u = X / 2 this is |Minv (u - c/2)| <= 1 with
 * Minv = diag(2/s) A.
 *
 * Fourier transform. With u = c/2 + A^T diag(s/2) w, w in the unit ball,
 *     F(k) = rho (abc/8) exp(-i 2 pi k.c/2) B(|diag(s/2) A k|),
 *     B(q) = integral over the unit ball of exp(-i 2 pi q.w) dw
 *          = (sin 2 pi q - 2 pi q cos 2 pi q) / (2 pi^2 q^3),  B(0) = 4 pi / 3;
 * in 2D the unit disc gives D(q) = J1(2 pi q) / q, D(0) = pi, and the area
 * factor is ab/4. */
#include "lm_phantom.h"

#include <complex.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Modified 3D Shepp-Logan, ten ellipsoids: the table of M. Schabel's
 * phantom3d (MATLAB Central File Exchange 9416), i.e. the 3D extension of
 * the Shepp-Logan head with Toft's higher-contrast intensities (P. Toft,
 * "The Radon Transform", PhD thesis, DTU 1996, pp. 199-200); this is the
 * ten-ellipsoid head whose k-space Koay, Sarlls & Ozarslan (MRM 58:430,
 * 2007) write in closed form.
 *   rho      a      b      c      x0      y0      z0    phi theta psi */
static const lm_phantom shepp_logan_3d = {
    .name = "shepp-logan",
    .dim = 3,
    .count = 10,
    .e = {
        { 1.0, 0.6900, 0.920, 0.810,  0.00,  0.0000,  0.00,   0, 0,  0},
        {-0.8, 0.6624, 0.874, 0.780,  0.00, -0.0184,  0.00,   0, 0,  0},
        {-0.2, 0.1100, 0.310, 0.220,  0.22,  0.0000,  0.00, -18, 0, 10},
        {-0.2, 0.1600, 0.410, 0.280, -0.22,  0.0000,  0.00,  18, 0, 10},
        { 0.1, 0.2100, 0.250, 0.410,  0.00,  0.3500, -0.15,   0, 0,  0},
        { 0.1, 0.0460, 0.046, 0.050,  0.00,  0.1000,  0.25,   0, 0,  0},
        { 0.1, 0.0460, 0.046, 0.050,  0.00, -0.1000,  0.25,   0, 0,  0},
        { 0.1, 0.0460, 0.023, 0.050, -0.08, -0.6050,  0.00,   0, 0,  0},
        { 0.1, 0.0230, 0.023, 0.020,  0.00, -0.6060,  0.00,   0, 0,  0},
        { 0.1, 0.0230, 0.046, 0.020,  0.06, -0.6050,  0.00,   0, 0,  0},
    },
};

/* The same ten ellipsoids with another contrast (a T1-weighted-like look:
 * dark skull, bright brain, dark ventricles): an anatomical reference that
 * shares the truth's edges but not its intensities, so the anatomically
 * constrained reconstruction is not handed the answer. */
static const lm_phantom shepp_logan_3d_ref = {
    .name = "shepp-logan-ref",
    .dim = 3,
    .count = 10,
    .e = {
        { 0.30, 0.6900, 0.920, 0.810,  0.00,  0.0000,  0.00,   0, 0,  0},
        { 0.50, 0.6624, 0.874, 0.780,  0.00, -0.0184,  0.00,   0, 0,  0},
        {-0.50, 0.1100, 0.310, 0.220,  0.22,  0.0000,  0.00, -18, 0, 10},
        {-0.50, 0.1600, 0.410, 0.280, -0.22,  0.0000,  0.00,  18, 0, 10},
        { 0.20, 0.2100, 0.250, 0.410,  0.00,  0.3500, -0.15,   0, 0,  0},
        { 0.15, 0.0460, 0.046, 0.050,  0.00,  0.1000,  0.25,   0, 0,  0},
        { 0.15, 0.0460, 0.046, 0.050,  0.00, -0.1000,  0.25,   0, 0,  0},
        { 0.25, 0.0460, 0.023, 0.050, -0.08, -0.6050,  0.00,   0, 0,  0},
        { 0.25, 0.0230, 0.023, 0.020,  0.00, -0.6060,  0.00,   0, 0,  0},
        { 0.25, 0.0230, 0.046, 0.020,  0.06, -0.6050,  0.00,   0, 0,  0},
    },
};

/* Modified 2D Shepp-Logan, ten ellipses: Toft's intensities (thesis above)
 * on Shepp & Logan's ellipses, as in MATLAB's phantom('Modified Shepp-Logan').
 * Only phi is used in 2D. */
static const lm_phantom shepp_logan_2d = {
    .name = "shepp-logan-2d",
    .dim = 2,
    .count = 10,
    .e = {
        { 1.0, 0.6900, 0.9200, 0, 0.00,  0.0000, 0,   0, 0, 0},
        {-0.8, 0.6624, 0.8740, 0, 0.00, -0.0184, 0,   0, 0, 0},
        {-0.2, 0.1100, 0.3100, 0, 0.22,  0.0000, 0, -18, 0, 0},
        {-0.2, 0.1600, 0.4100, 0, -0.22, 0.0000, 0,  18, 0, 0},
        { 0.1, 0.2100, 0.2500, 0, 0.00,  0.3500, 0,   0, 0, 0},
        { 0.1, 0.0460, 0.0460, 0, 0.00,  0.1000, 0,   0, 0, 0},
        { 0.1, 0.0460, 0.0460, 0, 0.00, -0.1000, 0,   0, 0, 0},
        { 0.1, 0.0460, 0.0230, 0, -0.08, -0.6050, 0,  0, 0, 0},
        { 0.1, 0.0230, 0.0230, 0, 0.00, -0.6060, 0,   0, 0, 0},
        { 0.1, 0.0230, 0.0460, 0, 0.06, -0.6050, 0,   0, 0, 0},
    },
};

const lm_phantom *lm_phantom_shepp_logan_3d(void) { return &shepp_logan_3d; }
const lm_phantom *lm_phantom_shepp_logan_2d(void) { return &shepp_logan_2d; }
const lm_phantom *lm_phantom_shepp_logan_3d_ref(void) { return &shepp_logan_3d_ref; }

const lm_phantom *lm_phantom_by_name(const char *name, lm_error *err)
{
    if (name && !strcasecmp(name, shepp_logan_3d.name))
        return &shepp_logan_3d;
    if (name && !strcasecmp(name, shepp_logan_2d.name))
        return &shepp_logan_2d;
    if (name && !strcasecmp(name, shepp_logan_3d_ref.name))
        return &shepp_logan_3d_ref;
    lm_fail(err, LM_ERR_INVALID,
            "phantom '%s' is unknown (known: shepp-logan, shepp-logan-2d, shepp-logan-ref)",
            name ? name : "(null)");
    return NULL;
}

/* One ellipsoid prepared in FOV fractions. */
typedef struct prep {
    double rho;
    double c[3];       /* centre */
    double minv[3][3]; /* diag(2/s) A: u -> unit-ball coordinates */
    double fwd[3][3];  /* diag(s/2) A: k -> q vector of the unit-ball FT */
    double measure;    /* abc/8 (3D) or ab/4 (2D) */
    double lip;        /* ||minv||_2 = 2 / min semi-axis */
    double lo[3], hi[3]; /* axis-aligned bounding box */
} prep;

static lm_code check_phantom(const lm_phantom *p, lm_error *err)
{
    if (!p)
        return lm_fail(err, LM_ERR_INVALID, "phantom is missing");
    if ((p->dim != 2 && p->dim != 3) || p->count < 0 || p->count > 16)
        return lm_fail(err, LM_ERR_INVALID, "phantom %s: dimension %d or count %d is invalid",
                       p->name ? p->name : "(unnamed)", p->dim, p->count);
    for (int i = 0; i < p->count; i++) {
        const lm_ellipsoid *e = &p->e[i];
        if (!(e->a > 0 && e->b > 0 && (p->dim == 2 || e->c > 0)))
            return lm_fail(err, LM_ERR_INVALID, "phantom %s: ellipsoid %d has a non-positive semi-axis",
                           p->name ? p->name : "(unnamed)", i + 1);
    }
    return LM_OK;
}

static void prepare(const lm_phantom *p, int i, prep *q)
{
    const lm_ellipsoid *e = &p->e[i];
    const double deg = M_PI / 180.0;
    double A[3][3];
    double cf = cos(e->phi * deg), sf = sin(e->phi * deg);
    if (p->dim == 2) {
        /* The theta = psi = 0 case of the 3D matrix: a rotation by phi. */
        double R[3][3] = {{cf, sf, 0}, {-sf, cf, 0}, {0, 0, 1}};
        memcpy(A, R, sizeof A);
    } else {
        double ct = cos(e->theta * deg), st = sin(e->theta * deg);
        double cp = cos(e->psi * deg), sp = sin(e->psi * deg);
        double R[3][3] = {
            {cp * cf - ct * sf * sp, cp * sf + ct * cf * sp, sp * st},
            {-sp * cf - ct * sf * cp, -sp * sf + ct * cf * cp, cp * st},
            {st * sf, -st * cf, ct},
        };
        memcpy(A, R, sizeof A);
    }
    double s[3] = {e->a / 2, e->b / 2, p->dim == 2 ? 1.0 : e->c / 2};
    q->rho = e->rho;
    q->c[0] = e->x0 / 2;
    q->c[1] = e->y0 / 2;
    q->c[2] = p->dim == 2 ? 0.0 : e->z0 / 2;
    for (int r = 0; r < 3; r++)
        for (int col = 0; col < 3; col++) {
            q->minv[r][col] = A[r][col] / s[r];
            q->fwd[r][col] = A[r][col] * s[r];
        }
    q->measure = p->dim == 2 ? s[0] * s[1] : s[0] * s[1] * s[2];
    double smin = fmin(s[0], s[1]);
    if (p->dim == 3)
        smin = fmin(smin, s[2]);
    q->lip = 1.0 / smin;
    /* Half-extent along axis j: the norm of column j of fwd (u - c = fwd^T w). */
    for (int j = 0; j < 3; j++) {
        double h = 0;
        for (int r = 0; r < (p->dim == 2 ? 2 : 3); r++)
            h += q->fwd[r][j] * q->fwd[r][j];
        h = sqrt(h);
        if (p->dim == 2 && j == 2)
            h = INFINITY; /* a 2D phantom is a cylinder along z */
        q->lo[j] = q->c[j] - h;
        q->hi[j] = q->c[j] + h;
    }
}

/* Squared unit-ball radius of u: <= 1 inside. The single test every path
 * (point value, truth, brute force) goes through, so they agree exactly. */
static inline double radius2(const prep *q, int dim, double x, double y, double z)
{
    double dx = x - q->c[0], dy = y - q->c[1], dz = z - q->c[2];
    double r2 = 0;
    for (int r = 0; r < dim; r++) {
        double v = q->minv[r][0] * dx + q->minv[r][1] * dy + (dim == 3 ? q->minv[r][2] * dz : 0.0);
        r2 += v * v;
    }
    return r2;
}

double lm_phantom_value(const lm_phantom *p, double x, double y, double z)
{
    if (check_phantom(p, NULL) != LM_OK)
        return 0.0;
    double v = 0;
    for (int i = 0; i < p->count; i++) {
        prep q;
        prepare(p, i, &q);
        if (radius2(&q, p->dim, x, y, z) <= 1.0)
            v += q.rho;
    }
    return v;
}

/* Unit-ball FT times 1/(4 pi): (sin x - x cos x) / x^3, x = 2 pi q. The
 * closed form loses ~ eps / x^2 to cancellation, so below x = 1 use the
 * series sum_j (-1)^j (2j+2) x^2j / (2j+3)!, whose 10th term is < 1e-18. */
static double ball_core(double x)
{
    if (x < 1.0) {
        double x2 = x * x, term = 1.0 / 3.0, sum = 0;
        for (int j = 0; j < 10; j++) {
            sum += term;
            /* ratio of consecutive terms */
            term *= -x2 / ((2.0 * j + 2) * (2.0 * j + 5));
        }
        return sum;
    }
    return (sin(x) - x * cos(x)) / (x * x * x);
}

/* Unit-disc FT over 2 pi: J1(x) / x, x = 2 pi q; J1 itself is accurate
 * near 0 so only the division needs the limit. */
static double disc_core(double x)
{
    if (x < 1e-4)
        return 0.5 - x * x / 16.0;
    return j1(x) / x;
}

/* Transform of the unit ball (3D) or disc (2D) at |q|^2 = q2. */
static inline double unit_ft(int dim, double q2)
{
    double x = 2 * M_PI * sqrt(q2);
    return dim == 3 ? 4 * M_PI * ball_core(x) : 2 * M_PI * disc_core(x);
}

static double complex ft_prepped(const prep *qs, int count, int dim, double kx, double ky, double kz)
{
    double complex sum = 0;
    for (int i = 0; i < count; i++) {
        const prep *q = &qs[i];
        double w[3], q2 = 0;
        for (int r = 0; r < dim; r++) {
            w[r] = q->fwd[r][0] * kx + q->fwd[r][1] * ky + (dim == 3 ? q->fwd[r][2] * kz : 0.0);
            q2 += w[r] * w[r];
        }
        double mag = unit_ft(dim, q2);
        double ph = -2 * M_PI * (kx * q->c[0] + ky * q->c[1] + (dim == 3 ? kz * q->c[2] : 0.0));
        sum += q->rho * q->measure * mag * (cos(ph) + I * sin(ph));
    }
    return sum;
}

double complex lm_phantom_ft(const lm_phantom *p, double kx, double ky, double kz)
{
    if (check_phantom(p, NULL) != LM_OK)
        return 0.0;
    prep qs[16];
    for (int i = 0; i < p->count; i++)
        prepare(p, i, &qs[i]);
    return ft_prepped(qs, p->count, p->dim, kx, ky, kz);
}

lm_code lm_phantom_kspace(const lm_phantom *p, const lm_traj *t, lm_cfloat *d, lm_error *err)
{
    lm_code c = check_phantom(p, err);
    if (c != LM_OK)
        return c;
    if (!t || !t->k || t->m <= 0 || !d)
        return lm_fail(err, LM_ERR_INVALID, "phantom %s: k-space needs a trajectory and an output buffer",
                       p->name);
    prep qs[16];
    for (int i = 0; i < p->count; i++)
        prepare(p, i, &qs[i]);
    const int64_t m = t->m;
    const float *k = t->k;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; i++) {
        /* A 2D phantom ignores kz: its 2D integral (ft_prepped with dim 2). */
        double complex v = ft_prepped(qs, p->count, p->dim, k[3 * i], k[3 * i + 1], k[3 * i + 2]);
        d[i] = (float)creal(v) + I * (float)cimag(v);
    }
    return LM_OK;
}

/* A modulation by exp(+i 2 pi f.x) shifts the transform to k - f. Per
 * ellipsoid e the shifted transform factors as
 *     rho meas B(|fwd k - fwd f|) exp(-i 2 pi k.c) exp(+i 2 pi f.c),
 * so fwd f and rho meas exp(+i 2 pi f.c) are tabled once per (e, term) and
 * each (sample, e, term) costs one unit-ball transform. */
lm_code lm_phantom_kspace_modulated(const lm_phantom *p, const lm_traj *t, int64_t nterms, const double *f,
                                    int64_t nsets, const double complex *a, lm_cfloat *d, lm_error *err)
{
    lm_code c = check_phantom(p, err);
    if (c != LM_OK)
        return c;
    if (!t || !t->k || t->m <= 0 || !d || !f || !a)
        return lm_fail(err, LM_ERR_INVALID,
                       "phantom %s: modulated k-space needs a trajectory, terms, coefficients and an output buffer",
                       p->name);
    if (nterms < 1 || nterms > 65536 || nsets < 1 || nsets > 65536)
        return lm_fail(err, LM_ERR_INVALID, "phantom %s: %lld terms x %lld sets is out of range (1..65536 each)",
                       p->name, (long long)nterms, (long long)nsets);
    for (int64_t j = 0; j < nterms; j++) {
        if (!isfinite(f[3 * j]) || !isfinite(f[3 * j + 1]) || !isfinite(f[3 * j + 2]))
            return lm_fail(err, LM_ERR_INVALID, "phantom %s: frequency of term %lld is not finite", p->name,
                           (long long)j);
        if (p->dim == 2 && f[3 * j + 2] != 0)
            return lm_fail(err, LM_ERR_INVALID, "phantom %s: term %lld has fz = %g but a 2D phantom has no z",
                           p->name, (long long)j, f[3 * j + 2]);
    }
    const int count = p->count, dim = p->dim;
    const int64_t J = nterms, m = t->m;
    prep qs[16];
    for (int e = 0; e < count; e++)
        prepare(p, e, &qs[e]);
    /* Per (ellipsoid, term): fwd f (3), then rho meas exp(+i 2 pi f.c) (re, im). */
    double *tab = lm_alloc((size_t)(count > 0 ? count : 1) * (size_t)J, 5 * sizeof(double), err,
                           "modulated k-space tables");
    const int nt = omp_get_max_threads();
    double *val = tab ? lm_alloc((size_t)nt * (size_t)J, 2 * sizeof(double), err, "modulated k-space terms") : NULL;
    if (!tab || !val) {
        free(tab);
        return err ? err->code : LM_ERR_NOMEM;
    }
    for (int e = 0; e < count; e++)
        for (int64_t j = 0; j < J; j++) {
            const prep *q = &qs[e];
            const double *fj = f + 3 * j;
            double *te = tab + 5 * ((size_t)e * J + j);
            for (int r = 0; r < 3; r++)
                te[r] = q->fwd[r][0] * fj[0] + q->fwd[r][1] * fj[1] + (dim == 3 ? q->fwd[r][2] * fj[2] : 0.0);
            double ph = 2 * M_PI * (fj[0] * q->c[0] + fj[1] * q->c[1] + (dim == 3 ? fj[2] * q->c[2] : 0.0));
            te[3] = q->rho * q->measure * cos(ph);
            te[4] = q->rho * q->measure * sin(ph);
        }
    const float *k = t->k;
#pragma omp parallel num_threads(nt)
    {
        double *v = val + 2 * (size_t)J * (size_t)omp_get_thread_num();
#pragma omp for schedule(static)
        for (int64_t i = 0; i < m; i++) {
            const double kx = k[3 * i], ky = k[3 * i + 1], kz = k[3 * i + 2];
            for (int64_t j = 0; j < 2 * J; j++)
                v[j] = 0;
            for (int e = 0; e < count; e++) {
                const prep *q = &qs[e];
                double b[3];
                for (int r = 0; r < dim; r++)
                    b[r] = q->fwd[r][0] * kx + q->fwd[r][1] * ky + (dim == 3 ? q->fwd[r][2] * kz : 0.0);
                double ph = -2 * M_PI * (kx * q->c[0] + ky * q->c[1] + (dim == 3 ? kz * q->c[2] : 0.0));
                const double cr = cos(ph), ci = sin(ph);
                const double *te = tab + 5 * (size_t)e * J;
                for (int64_t j = 0; j < J; j++, te += 5) {
                    double q2 = 0;
                    for (int r = 0; r < dim; r++) {
                        double w = b[r] - te[r];
                        q2 += w * w;
                    }
                    double mag = unit_ft(dim, q2);
                    v[2 * j] += mag * (cr * te[3] - ci * te[4]);
                    v[2 * j + 1] += mag * (cr * te[4] + ci * te[3]);
                }
            }
            /* Real arithmetic: complex products in C would go through the
             * NaN-checking library multiply. */
            for (int64_t s = 0; s < nsets; s++) {
                const double complex *as = a + s * J;
                double re = 0, im = 0;
                for (int64_t j = 0; j < J; j++) {
                    double ar = creal(as[j]), ai = cimag(as[j]);
                    re += ar * v[2 * j] - ai * v[2 * j + 1];
                    im += ar * v[2 * j + 1] + ai * v[2 * j];
                }
                d[s * m + i] = (float)re + I * (float)im;
            }
        }
    }
    free(val);
    free(tab);
    return LM_OK;
}

/* Classifies one voxel against one ellipsoid: returns the fraction of the
 * voxel's sub-samples inside. Fully inside/outside voxels skip the
 * sub-samples but give exactly what counting them would. */
static double voxel_fraction(const prep *q, int dim, const double ctr[3], const double half[3],
                             const double *offx, const double *offy, const double *offz, int sx, int sy,
                             int sz)
{
    /* Cheap bound: every point of the box is within |half| of the centre, and
     * the map to the unit ball stretches distances by at most q->lip. The
     * 1e-9 margins keep rounding in radius2 from flipping a sub-sample. */
    double hr = sqrt(half[0] * half[0] + half[1] * half[1] + (dim == 3 ? half[2] * half[2] : 0.0));
    double r = sqrt(radius2(q, dim, ctr[0], ctr[1], ctr[2]));
    if (r - q->lip * hr > 1.0 + 1e-9)
        return 0.0;
    if (r + q->lip * hr < 1.0 - 1e-9)
        return 1.0;
    /* Corners inside => the whole box inside (the ellipsoid is convex). */
    int inside = 1;
    for (int cidx = 0; cidx < 8 && inside; cidx++) {
        double x = ctr[0] + ((cidx & 1) ? half[0] : -half[0]);
        double y = ctr[1] + ((cidx & 2) ? half[1] : -half[1]);
        double z = ctr[2] + ((cidx & 4) ? half[2] : -half[2]);
        if (!(radius2(q, dim, x, y, z) < 1.0 - 1e-9))
            inside = 0;
    }
    if (inside)
        return 1.0;
    int64_t count = 0;
    for (int c = 0; c < sz; c++)
        for (int b = 0; b < sy; b++)
            for (int a = 0; a < sx; a++)
                count += radius2(q, dim, ctr[0] + offx[a], ctr[1] + offy[b], ctr[2] + offz[c]) <= 1.0;
    return (double)count / ((double)sx * sy * sz);
}

lm_code lm_phantom_truth(const lm_phantom *p, const lm_geom *g, int sub, lm_volume **out, lm_error *err)
{
    lm_code code = check_phantom(p, err);
    if (code != LM_OK)
        return code;
    if (!g || !out)
        return lm_fail(err, LM_ERR_INVALID, "phantom %s: truth needs a geometry and an output", p->name);
    for (int a = 0; a < 3; a++)
        if (g->n[a] < 1 || g->n[a] > 4096)
            return lm_fail(err, LM_ERR_INVALID, "phantom %s: matrix %lldx%lldx%lld is out of range (1..4096)",
                           p->name, (long long)g->n[0], (long long)g->n[1], (long long)g->n[2]);
    if (sub < 1 || sub > 64)
        return lm_fail(err, LM_ERR_INVALID, "phantom %s: sub-voxel factor %d is out of range (1..64)", p->name,
                       sub);
    const int64_t nx = g->n[0], ny = g->n[1], nz = g->n[2];
    double vox[3];
    for (int a = 0; a < 3; a++)
        vox[a] = g->fov_mm[a] > 0 ? g->fov_mm[a] / (double)g->n[a] : 1.0;
    lm_volume *v = lm_volume_new(g->n, vox, err);
    if (!v)
        return err ? err->code : LM_ERR_NOMEM;

    prep qs[16];
    for (int i = 0; i < p->count; i++)
        prepare(p, i, &qs[i]);
    const int dim = p->dim;
    /* A single-slice geometry samples the plane z = 0 (its voxel is the
     * whole FOV thick); a 2D phantom does not depend on z. Either way the
     * sub-samples are sub^2 in the plane. */
    const int planar = dim == 2 || nz == 1;
    const int sx = sub, sy = sub, sz = planar ? 1 : sub;
    double half[3] = {0.5 / (double)nx, 0.5 / (double)ny, planar ? 0.0 : 0.5 / (double)nz};
    double offx[64], offy[64], offz[64];
    for (int s = 0; s < sub; s++) {
        double f = (s + 0.5) / sub - 0.5;
        offx[s] = f / (double)nx;
        offy[s] = f / (double)ny;
        offz[s] = planar ? 0.0 : f / (double)nz;
    }
    const int count = p->count;
    const int64_t rows = ny * nz;
#pragma omp parallel for schedule(dynamic, 4)
    for (int64_t row = 0; row < rows; row++) {
        int64_t iy = row % ny, iz = row / ny;
        double cy = lm_voxel_pos(iy, ny), cz = lm_voxel_pos(iz, nz); /* 0 when nz == 1 */
        /* Ellipsoids whose bounding box meets this row. */
        int cand[16], nc = 0;
        for (int i = 0; i < count; i++) {
            const prep *q = &qs[i];
            if (cy + half[1] < q->lo[1] || cy - half[1] > q->hi[1])
                continue;
            if (dim == 3 && (cz + half[2] < q->lo[2] || cz - half[2] > q->hi[2]))
                continue;
            cand[nc++] = i;
        }
        lm_cfloat *dst = v->data + row * nx;
        for (int64_t ix = 0; ix < nx; ix++) {
            double ctr[3] = {lm_voxel_pos(ix, nx), cy, cz};
            double val = 0;
            for (int j = 0; j < nc; j++) {
                const prep *q = &qs[cand[j]];
                if (ctr[0] + half[0] < q->lo[0] || ctr[0] - half[0] > q->hi[0])
                    continue;
                val += q->rho * voxel_fraction(q, dim, ctr, half, offx, offy, offz, sx, sy, sz);
            }
            dst[ix] = (float)val;
        }
    }
    *out = v;
    return LM_OK;
}
