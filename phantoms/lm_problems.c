/* Noise and the named benchmark problems of docs/conventions.md section 4. */
#include "lm_trajgen.h"

#include "lm_coils_synth.h"
#include "lm_fieldmap_synth.h"
#include "lm_spiral.h"

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- noise ----------------------------------------------------------------
 * xoshiro256** (Blackman & Vigna) seeded through splitmix64: integer-only,
 * so the stream is bit-identical on every machine and compiler. Gaussians
 * come from Box-Muller on 53-bit uniforms; they go through libm's log, sin,
 * cos (correctly rounded or within 1 ulp on common platforms) and are
 * stored as float, so the noise is reproducible to the last float bit in
 * practice and to ~1e-16 relative in any case. */

typedef struct rng {
    uint64_t s[4];
} rng;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void rng_seed(rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1) with 53 random bits. */
static double rng_uniform(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Two independent standard normals (Box-Muller). */
static void rng_gauss2(rng *r, double *a, double *b)
{
    double u1 = 1.0 - rng_uniform(r); /* (0, 1]: log stays finite */
    double u2 = rng_uniform(r);
    double rad = sqrt(-2.0 * log(u1));
    *a = rad * cos(2 * M_PI * u2);
    *b = rad * sin(2 * M_PI * u2);
}

/* Noise definition: complex white Gaussian n with E|n|^2 = sigma^2,
 * sigma = level * RMS|d| (RMS over every sample of every channel, before
 * the noise), i.e. real and imaginary parts independent with standard
 * deviation sigma / sqrt(2) each. Sample i (channel-major order, samples
 * fastest) takes the i-th Box-Muller pair of the stream: (re, im). */
lm_code lm_noise_add(lm_kdata *k, double level, uint64_t seed, lm_error *err)
{
    if (!k || !k->d || k->m <= 0 || k->ncoils <= 0)
        return lm_fail(err, LM_ERR_INVALID, "noise: k-space data missing");
    if (!(level >= 0) || !isfinite(level))
        return lm_fail(err, LM_ERR_INVALID, "noise: level %g is not a finite non-negative number", level);
    if (level == 0)
        return LM_OK;
    const int64_t count = k->m * k->ncoils;
    double ss = 0;
    for (int64_t i = 0; i < count; i++) {
        double re = crealf(k->d[i]), im = cimagf(k->d[i]);
        ss += re * re + im * im;
    }
    double sigma = level * sqrt(ss / (double)count);
    double s = sigma / sqrt(2.0);
    rng r;
    rng_seed(&r, seed);
    for (int64_t i = 0; i < count; i++) {
        double a, b;
        rng_gauss2(&r, &a, &b);
        double re = crealf(k->d[i]) + s * a, im = cimagf(k->d[i]) + s * b;
        k->d[i] = (float)re + I * (float)im;
    }
    return LM_OK;
}

/* ---- benchmark problems ----------------------------------------------------
 * docs/conventions.md section 4: M = round(n^3 * 284,592 / 128^3), readout n/2. */
/* Multi-coil problems (docs/conventions.md section 4, wave 2): B64's and B128's
 * trajectories seen by 8 and 32 synthetic head coils (lm_coils_synth). */
/* Samples per interleaf of S128c8f's spiral design (lm_spiral_make; the
 * test checks the design still gives it). */
#define S128_READOUT 3265
static const lm_problem_def problems[] = {
    {.name = "B32", .n = 32, .m = 4447, .readout = 16, .noise = 0.0, .coils = 1},
    {.name = "B64", .n = 64, .m = 35574, .readout = 32, .noise = 0.0, .coils = 1},
    {.name = "B128", .n = 128, .m = 284592, .readout = 64, .noise = 0.0, .coils = 1},
    {.name = "B64n", .n = 64, .m = 35574, .readout = 32, .noise = 0.05, .coils = 1},
    {.name = "B128n", .n = 128, .m = 284592, .readout = 64, .noise = 0.05, .coils = 1},
    {.name = "B64c8", .n = 64, .m = 35574, .readout = 32, .noise = 0.0, .coils = 8},
    {.name = "B128c32", .n = 128, .m = 284592, .readout = 64, .noise = 0.0, .coils = 32},
    {.name = "B64c8n", .n = 64, .m = 35574, .readout = 32, .noise = 0.05, .coils = 8},
    /* Issue 11: a 2D spiral under a field map. 128 x 128, 4 interleaves of
     * 25 ms (lm_spiral: 12.8 mT/m, slew 150 T/m/s, FOV 240 mm), 8 coils,
     * largest |f| 150 Hz (3.75 cycles over a readout at the bump). */
    {.name = "S128c8f", .n = 128, .m = 4 * S128_READOUT, .readout = S128_READOUT, .noise = 0.0, .coils = 8,
     .dim = 2, .interleaves = 4, .readout_ms = 25.0, .fieldmap_hz = 150.0},
    /* Issue 11's 3D speed problem: B128's radial trajectory, 8 coils, the
     * same kind of map up to 150 Hz over 10 ms readouts (1.5 cycles). Its
     * exact data take ~1.4e12 sample-voxel pairs: a GPU makes them. */
    {.name = "B128c8f", .n = 128, .m = 284592, .readout = 64, .noise = 0.0, .coils = 8, .readout_ms = 10.0,
     .fieldmap_hz = 150.0},
};
#define PROBLEM_COUNT (sizeof problems / sizeof problems[0])

size_t lm_problem_count(void) { return PROBLEM_COUNT; }

const lm_problem_def *lm_problem_at(size_t i) { return i < PROBLEM_COUNT ? &problems[i] : NULL; }

const lm_problem_def *lm_problem_find(const char *name, lm_error *err)
{
    for (size_t i = 0; name && i < PROBLEM_COUNT; i++)
        if (!strcasecmp(name, problems[i].name))
            return &problems[i];
    char known[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < PROBLEM_COUNT && len < sizeof known; i++) {
        int w = snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "", problems[i].name);
        if (w < 0)
            break;
        len += (size_t)w;
    }
    lm_fail(err, LM_ERR_INVALID, "problem '%s' is unknown (known: %s)", name ? name : "(null)", known);
    return NULL;
}

lm_code lm_problem_make(const lm_problem_def *def, lm_geom *g, lm_traj **traj, lm_kdata **kdata,
                        lm_volume **truth, lm_error *err)
{
    return lm_problem_make_coils(def, g, traj, kdata, truth, NULL, err);
}

lm_code lm_problem_make_coils(const lm_problem_def *def, lm_geom *g, lm_traj **traj, lm_kdata **kdata,
                              lm_volume **truth, lm_sens **sens, lm_error *err)
{
    return lm_problem_make_fieldmap(def, g, traj, kdata, truth, sens, NULL, err);
}

lm_code lm_problem_make_fieldmap(const lm_problem_def *def, lm_geom *g, lm_traj **traj, lm_kdata **kdata,
                                 lm_volume **truth, lm_sens **sens, float **fieldmap, lm_error *err)
{
    const int planar = def && def->dim == 2;
    if (!def || def->n < 2 || (!planar && (def->m < 1 || def->readout < 1)) || !(def->noise >= 0) ||
        def->coils < 0 || def->coils > LM_COILS_SYNTH_MAX || (def->dim != 0 && def->dim != 2 && def->dim != 3) ||
        (planar && def->interleaves < 1) || !(def->readout_ms >= 0) || !(def->fieldmap_hz >= 0) ||
        def->fieldmap_hz > LM_FIELDMAP_SYNTH_MAX_HZ)
        return lm_fail(err, LM_ERR_INVALID, "problem %s: definition is invalid",
                       def && def->name ? def->name : "(null)");
    if (traj)
        *traj = NULL;
    if (kdata)
        *kdata = NULL;
    if (truth)
        *truth = NULL;
    if (sens)
        *sens = NULL;
    if (fieldmap)
        *fieldmap = NULL;
    const int64_t ncoils = def->coils > 1 ? def->coils : 1;
    const int with_fm = def->fieldmap_hz > 0;
    const double readout_ms = def->readout_ms > 0 ? def->readout_ms : with_fm ? LM_PROBLEM_READOUT_MS : 0;
    const lm_phantom *ph = planar ? lm_phantom_shepp_logan_2d() : lm_phantom_shepp_logan_3d();
    lm_geom geom;
    lm_geom_init(&geom, def->n, def->n, planar ? 1 : def->n, LM_PROBLEM_FOV_MM);
    geom.basis = LM_BASIS_BOX;

    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *v = NULL;
    lm_sens *s = NULL;
    lm_coils_synth *cs = NULL;
    float *fm = NULL;
    lm_code c = LM_OK;
    /* One coefficient set for the maps and the data. */
    if (ncoils > 1 && (kdata || sens) && (c = lm_coils_synth_make(planar ? 2 : 3, ncoils, &cs, err)) != LM_OK)
        goto fail;
    if (with_fm && (kdata || fieldmap) && (c = lm_fieldmap_synth(geom.n, def->fieldmap_hz, &fm, err)) != LM_OK)
        goto fail;
    if (traj || kdata) {
        if (planar) {
            lm_spiral_opts so = {.n = def->n, .interleaves = def->interleaves,
                                 .readout_s = (readout_ms > 0 ? readout_ms : LM_PROBLEM_READOUT_MS) * 1e-3,
                                 .fov_mm = LM_PROBLEM_FOV_MM};
            c = lm_spiral_make(&so, &t, NULL, err);
        } else {
            c = lm_traj_generate(LM_TRAJ_RADIAL3D, geom.n, def->m, def->readout, &t, err);
            if (c == LM_OK && readout_ms > 0)
                c = lm_traj_times_uniform(t, readout_ms * 1e-3, err);
        }
        if (c != LM_OK)
            goto fail;
    }
    if (kdata) {
        if (!(k = lm_kdata_new(t->m, ncoils, err))) {
            c = err ? err->code : LM_ERR_NOMEM;
            goto fail;
        }
        if (with_fm)
            c = lm_fieldmap_synth_kspace(ph, &geom, cs, fm, t, NULL, k, err);
        else
            c = cs ? lm_coils_synth_data(cs, ph, t, k, err) : lm_phantom_kspace(ph, t, k->d, err);
        if (c != LM_OK)
            goto fail;
        if (def->noise > 0 && (c = lm_noise_add(k, def->noise, LM_PROBLEM_NOISE_SEED, err)) != LM_OK)
            goto fail;
    }
    if (truth && (c = lm_phantom_truth(ph, &geom, LM_PROBLEM_TRUTH_SUB, &v, err)) != LM_OK)
        goto fail;
    if (sens && cs && (c = lm_coils_synth_maps(cs, geom.n, &s, err)) != LM_OK)
        goto fail;
    lm_coils_synth_free(cs);

    if (g)
        *g = geom;
    if (traj)
        *traj = t;
    else
        lm_traj_free(t);
    if (kdata)
        *kdata = k;
    if (truth)
        *truth = v;
    if (sens)
        *sens = s;
    if (fieldmap)
        *fieldmap = fm;
    else
        free(fm);
    return LM_OK;
fail:
    lm_coils_synth_free(cs);
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_volume_free(v);
    lm_sens_free(s);
    free(fm);
    return c;
}
