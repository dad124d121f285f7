/* Trajectory generators. Units: cycles per FOV; a matrix of n samples
 * |k| <= n/2 along each axis. Samples of one spoke/interleaf are stored
 * together, spoke after spoke, and a requested count m cuts the last
 * spoke short. */
#include "lm_trajgen.h"

#include <math.h>
#include <stdlib.h>
#include <strings.h>

static const char *const kind_names[] = {
    [LM_TRAJ_RADIAL3D] = "radial3d",
    [LM_TRAJ_RADIAL3D_FULL] = "radial3d-full",
    [LM_TRAJ_STACK_OF_SPIRALS] = "stack-of-spirals",
    [LM_TRAJ_SPIRAL2D] = "spiral2d",
    [LM_TRAJ_RADIAL2D] = "radial2d",
    [LM_TRAJ_CARTESIAN] = "cartesian",
};
#define KIND_COUNT ((int)(sizeof kind_names / sizeof kind_names[0]))

const char *lm_traj_kind_name(lm_traj_kind k)
{
    return (int)k >= 0 && (int)k < KIND_COUNT ? kind_names[k] : "unknown";
}

lm_code lm_traj_kind_parse(const char *s, lm_traj_kind *out, lm_error *err)
{
    for (int i = 0; s && i < KIND_COUNT; i++)
        if (!strcasecmp(s, kind_names[i])) {
            *out = (lm_traj_kind)i;
            return LM_OK;
        }
    return lm_fail(err, LM_ERR_INVALID,
                   "trajectory kind '%s' is unknown (known: radial3d, radial3d-full, stack-of-spirals, "
                   "spiral2d, radial2d, cartesian)",
                   s ? s : "(null)");
}

/* 2D golden means of Chan et al. (MRM 61:354, 2009), quoted there as 0.4656
 * and 0.6823: phi2 is the real root of x^3 + x - 1 = 0 and phi1 = phi2^2. */
#define GM_PHI1 0.46557123187676802666
#define GM_PHI2 0.68232780382801932737
/* Golden angle for full 2D spokes (Winkelmann et al. 2007): 180 deg / golden ratio. */
#define GOLDEN_FRAC 0.61803398874989484820

/* The samples-per-voxel ratio of the paper (docs/conventions.md section 4). */
#define PAPER_SAMPLES 284592.0
#define PAPER_VOXELS 2097152.0

static double frac(double x) { return x - floor(x); }

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Spoke s's direction. Centre-out spokes cover the sphere (cos theta in
 * [-1, 1)), full spokes the hemisphere (cos theta in [0, 1)), as Chan et al.
 * map frac(s phi1). */
static void golden_direction(int64_t s, int full, double d[3])
{
    double u = frac((double)s * GM_PHI1);
    double ct = full ? u : 2 * u - 1;
    double st = sqrt(fmax(0.0, 1 - ct * ct));
    double az = 2 * M_PI * frac((double)s * GM_PHI2);
    d[0] = st * cos(az);
    d[1] = st * sin(az);
    d[2] = ct;
}

/* Archimedean spiral r = b theta, b = kmax / (2 pi turns), out to
 * theta_max = 2 pi turns. Its arc length is
 *     s(theta) = (b/2) (theta sqrt(1 + theta^2) + asinh theta),
 * and the r samples of an interleaf sit at equal arc-length steps
 * s(theta_max) / (r - 1), found by Newton's method (s' = b sqrt(1 + theta^2)). */
static double spiral_arc(double b, double th) { return 0.5 * b * (th * sqrt(1 + th * th) + asinh(th)); }

static double *spiral_angles(double turns, double kmax, int64_t r, lm_error *err)
{
    double *th = lm_alloc((size_t)r, sizeof(double), err, "spiral angles");
    if (!th)
        return NULL;
    double tmax = 2 * M_PI * turns, b = kmax / tmax, total = spiral_arc(b, tmax);
    th[0] = 0;
    for (int64_t j = 1; j < r; j++) {
        double target = total * (double)j / (double)(r - 1);
        double x = fmin(sqrt(2 * target / b), tmax); /* s ~ b theta^2 / 2 for large theta */
        for (int it = 0; it < 50; it++) {
            double dx = (spiral_arc(b, x) - target) / (b * sqrt(1 + x * x));
            x -= dx;
            if (fabs(dx) < 1e-13 * (1 + x))
                break;
        }
        th[j] = fmin(fmax(x, 0.0), tmax);
    }
    th[r - 1] = tmax; /* the last sample exactly at kmax */
    return th;
}

/* Spiral layout shared by spiral2d and stack-of-spirals (planes = 1 for 2D):
 * interleaves nl, readout r, total m, turns. Turns = kmax / nl puts
 * adjacent interleaves 1/FOV apart radially (Nyquist); the default readout
 * makes the steps along the curve at most 1/FOV. */
static lm_code spiral_layout(int64_t nmin, int64_t planes, int64_t m, int64_t readout, int64_t *nl,
                             int64_t *r, int64_t *mt, double *turns, lm_error *err)
{
    double kmax = (double)nmin / 2;
    int64_t l = nmin / 8 > 1 ? nmin / 8 : 1;
    if (readout > 0) {
        if (m > 0)
            l = ceil_div(ceil_div(m, readout), planes);
        *r = readout;
    } else if (m > 0) {
        *r = ceil_div(m, planes * l);
    } else {
        double tmax = 2 * M_PI * kmax / (double)l;
        *r = (int64_t)ceil(spiral_arc(kmax / tmax, tmax)) + 1;
    }
    if (*r < 2 || l < 1)
        return lm_fail(err, LM_ERR_INVALID, "spiral: readout %lld is too short (2 or more)", (long long)*r);
    *nl = l;
    *turns = kmax / (double)l;
    *mt = m > 0 ? m : planes * l * *r;
    return LM_OK;
}

lm_code lm_traj_generate(lm_traj_kind kind, const int64_t n[3], int64_t m, int64_t readout,
                         lm_traj **out, lm_error *err)
{
    if (!n || !out)
        return lm_fail(err, LM_ERR_INVALID, "trajectory: matrix or output missing");
    *out = NULL;
    for (int a = 0; a < 3; a++)
        if (n[a] < 1 || n[a] > 4096)
            return lm_fail(err, LM_ERR_INVALID, "trajectory: matrix %lldx%lldx%lld is out of range (1..4096)",
                           (long long)n[0], (long long)n[1], (long long)n[2]);
    /* Bounds that also keep every product below from overflowing. */
    if (m < 0 || readout < 0 || m > (int64_t)LM_MAX_ELEMENTS || readout > ((int64_t)1 << 24))
        return lm_fail(err, LM_ERR_INVALID, "trajectory: samples %lld or readout %lld is out of range",
                       (long long)m, (long long)readout);
    const char *name = lm_traj_kind_name(kind);
    int three_d = kind == LM_TRAJ_RADIAL3D || kind == LM_TRAJ_RADIAL3D_FULL || kind == LM_TRAJ_STACK_OF_SPIRALS;
    if (three_d && n[2] < 2)
        return lm_fail(err, LM_ERR_INVALID, "trajectory %s: needs a 3D matrix, got %lldx%lldx%lld", name,
                       (long long)n[0], (long long)n[1], (long long)n[2]);
    if (n[0] < 2 || n[1] < 2)
        return lm_fail(err, LM_ERR_INVALID, "trajectory %s: matrix %lldx%lldx%lld is too small", name,
                       (long long)n[0], (long long)n[1], (long long)n[2]);
    int64_t n2 = min64(n[0], n[1]), n3 = min64(n2, n[2]);
    int64_t paper_m = llround((double)n[0] * (double)n[1] * (double)n[2] * PAPER_SAMPLES / PAPER_VOXELS);
    if (paper_m < 1)
        paper_m = 1;

    lm_traj *t = NULL;
    int64_t r = 0, mt = 0;
    switch (kind) {
    case LM_TRAJ_RADIAL3D: {
        r = readout ? readout : n3 / 2;
        if (r < 1 || r - 1 > n3 / 2)
            return lm_fail(err, LM_ERR_INVALID, "trajectory %s: readout %lld exceeds kmax %lld + 1", name,
                           (long long)r, (long long)(n3 / 2));
        mt = m ? m : paper_m;
        if (!(t = lm_traj_new(mt, 3, err)))
            return err ? err->code : LM_ERR_NOMEM;
        double d[3] = {0, 0, 1};
        for (int64_t i = 0; i < mt; i++) {
            int64_t j = i % r;
            if (j == 0)
                golden_direction(i / r, 0, d);
            for (int a = 0; a < 3; a++)
                t->k[3 * i + a] = (float)((double)j * d[a]);
        }
        break;
    }
    case LM_TRAJ_RADIAL3D_FULL:
    case LM_TRAJ_RADIAL2D: {
        int64_t nn = kind == LM_TRAJ_RADIAL2D ? n2 : n3;
        r = readout ? readout : nn;
        int64_t lo = r / 2; /* sample j at radius j - r/2 */
        if (r < 2 || lo > nn / 2 || r - 1 - lo > nn / 2)
            return lm_fail(err, LM_ERR_INVALID, "trajectory %s: readout %lld does not fit kmax %lld", name,
                           (long long)r, (long long)(nn / 2));
        if (kind == LM_TRAJ_RADIAL2D)
            mt = m ? m : (int64_t)ceil(M_PI / 2 * (double)nn) * r; /* Nyquist spoke count */
        else
            mt = m ? m : paper_m;
        if (!(t = lm_traj_new(mt, kind == LM_TRAJ_RADIAL2D ? 2 : 3, err)))
            return err ? err->code : LM_ERR_NOMEM;
        double d[3] = {0, 0, 1};
        for (int64_t i = 0; i < mt; i++) {
            int64_t j = i % r, s = i / r;
            if (j == 0) {
                if (kind == LM_TRAJ_RADIAL2D) {
                    double ang = M_PI * frac((double)s * GOLDEN_FRAC);
                    d[0] = cos(ang);
                    d[1] = sin(ang);
                    d[2] = 0;
                } else {
                    golden_direction(s, 1, d);
                }
            }
            for (int a = 0; a < 3; a++)
                t->k[3 * i + a] = (float)((double)(j - lo) * d[a]);
        }
        break;
    }
    case LM_TRAJ_SPIRAL2D:
    case LM_TRAJ_STACK_OF_SPIRALS: {
        int64_t planes = kind == LM_TRAJ_SPIRAL2D ? 1 : n[2], nl = 1;
        double turns = 0;
        lm_code c = spiral_layout(n2, planes, m, readout, &nl, &r, &mt, &turns, err);
        if (c != LM_OK)
            return c;
        double kmax = (double)n2 / 2;
        double *th = spiral_angles(turns, kmax, r, err);
        if (!th)
            return err ? err->code : LM_ERR_NOMEM;
        if (!(t = lm_traj_new(mt, kind == LM_TRAJ_SPIRAL2D ? 2 : 3, err))) {
            free(th);
            return err ? err->code : LM_ERR_NOMEM;
        }
        double b = kmax / (2 * M_PI * turns);
        for (int64_t i = 0; i < mt; i++) {
            int64_t ro = i / r, j = i % r;
            int64_t p = ro / nl, l = ro % nl;
            /* b th <= kmax and |cos|, |sin| <= 1 keep |k| <= n/2 per axis. */
            double rad = fmin(b * th[j], kmax), ang = th[j] + 2 * M_PI * (double)l / (double)nl;
            t->k[3 * i] = (float)(rad * cos(ang));
            t->k[3 * i + 1] = (float)(rad * sin(ang));
            t->k[3 * i + 2] = kind == LM_TRAJ_SPIRAL2D ? 0.0f : (float)(p - n[2] / 2);
        }
        free(th);
        break;
    }
    case LM_TRAJ_CARTESIAN: {
        int64_t total = n[0] * n[1] * n[2];
        if ((m && m != total) || (readout && readout != n[0]))
            return lm_fail(err, LM_ERR_INVALID,
                           "trajectory %s: samples %lld / readout %lld differ from the grid's %lld / %lld", name,
                           (long long)m, (long long)readout, (long long)total, (long long)n[0]);
        r = n[0];
        mt = total;
        if (!(t = lm_traj_new(mt, n[2] > 1 ? 3 : 2, err)))
            return err ? err->code : LM_ERR_NOMEM;
        for (int64_t i = 0; i < mt; i++) {
            int64_t ix = i % n[0], iy = (i / n[0]) % n[1], iz = i / (n[0] * n[1]);
            t->k[3 * i] = (float)(ix - n[0] / 2);
            t->k[3 * i + 1] = (float)(iy - n[1] / 2);
            t->k[3 * i + 2] = (float)(iz - n[2] / 2);
        }
        break;
    }
    default:
        return lm_fail(err, LM_ERR_INVALID, "trajectory kind %d is unknown", (int)kind);
    }
    t->readout = r;
    *out = t;
    return LM_OK;
}
