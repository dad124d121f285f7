/* Dynamic phantoms with exact per-spoke k-space (lm_dynamic_phantom.h). */
#include "lm_dynamic_phantom.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lm_coils_synth.h"
#include "lm_trajgen.h"

static const lm_dyn_problem_def problems[] = {
    {.name = "D128c8", .dim = 2, .n = 128, .coils = 8, .readout = 128, .spokes_per_frame = 21, .frames = 24,
     .tr_ms = 4.0},
    {.name = "D64c8", .dim = 3, .n = 64, .coils = 8, .readout = 64, .spokes_per_frame = 21, .frames = 8,
     .tr_ms = 4.0},
};
#define COUNT (sizeof problems / sizeof problems[0])

size_t lm_dyn_problem_count(void) { return COUNT; }
const lm_dyn_problem_def *lm_dyn_problem_at(size_t i) { return i < COUNT ? &problems[i] : NULL; }

const lm_dyn_problem_def *lm_dyn_problem_find(const char *name)
{
    for (size_t i = 0; name && i < COUNT; i++)
        if (!strcasecmp(name, problems[i].name))
            return &problems[i];
    return NULL;
}

/* Golden angle of radial imaging (Winkelmann et al. 2007), as lm_trajgen's radial2d. */
#define GOLDEN_ANGLE (M_PI * (sqrt(5.0) - 1) / 2)

void lm_dyn_phantom_at(int dim, double tau, lm_phantom *out)
{
    *out = dim == 3 ? *lm_phantom_shepp_logan_3d() : *lm_phantom_shepp_logan_2d();
    out->name = dim == 3 ? "dynamic-3d" : "dynamic-2d";
    const double beat = 1 + 0.3 * sin(2 * M_PI * 2 * tau), shift = 0.12 * sin(2 * M_PI * tau);
    /* heart: pulsates; bowel: moves along x */
    out->e[out->count++] = (lm_ellipsoid){.rho = 0.4, .a = 0.11 * beat, .b = 0.13 * beat, .c = 0.11 * beat,
                                          .x0 = -0.30, .y0 = 0.25, .z0 = 0};
    out->e[out->count++] = (lm_ellipsoid){.rho = 0.3, .a = 0.07, .b = 0.10, .c = 0.08, .x0 = 0.28 + shift,
                                          .y0 = -0.30, .z0 = 0, .phi = 20};
}

/* The trajectory: frames in order; within a frame spokes (2D) or
 * (partition fastest, then spoke) for the stack of stars. */
static lm_code make_traj(const lm_dyn_problem_def *d, lm_traj **out, int64_t *nspokes, lm_error *err)
{
    const int64_t parts = d->dim == 3 ? d->n : 1, r = d->readout;
    const int64_t angles = d->spokes_per_frame * d->frames;
    *nspokes = angles * parts;
    lm_traj *t = lm_traj_new(*nspokes * r, d->dim, err);
    if (!t)
        return err ? err->code : LM_ERR_NOMEM;
    t->readout = r;
    for (int64_t a = 0; a < angles; a++) {
        const double ang = fmod((double)a * GOLDEN_ANGLE, M_PI);
        for (int64_t p = 0; p < parts; p++)
            for (int64_t j = 0; j < r; j++) {
                float *k = t->k + 3 * ((a * parts + p) * r + j);
                const double rad = (double)(j - r / 2);
                k[0] = (float)(rad * cos(ang));
                k[1] = (float)(rad * sin(ang));
                k[2] = d->dim == 3 ? (float)(p - parts / 2) : 0.0f;
            }
    }
    *out = t;
    return LM_OK;
}

lm_code lm_dyn_problem_make(const lm_dyn_problem_def *def, lm_geom *g, lm_traj **traj, lm_kdata **kdata,
                            lm_sens **sens, lm_cfloat **truth, lm_frames **frames, lm_error *err)
{
    *traj = NULL;
    *kdata = NULL;
    *sens = NULL;
    *frames = NULL;
    if (truth)
        *truth = NULL;
    if (!def)
        return lm_fail(err, LM_ERR_INVALID, "dynamic problem: none given");
    lm_geom_init(g, def->n, def->n, def->dim == 3 ? def->n : 1, LM_PROBLEM_FOV_MM);
    int64_t nspokes = 0;
    lm_coils_synth *cs = NULL;
    lm_traj *t = NULL, *one = NULL;
    lm_kdata *k = NULL, *kone = NULL;
    lm_cfloat *tr = NULL;
    lm_frames *f = NULL;
    lm_code rc = make_traj(def, &t, &nspokes, err);
    if (rc == LM_OK)
        rc = lm_coils_synth_make(2, def->coils, &cs, err);
    if (rc == LM_OK)
        rc = lm_coils_synth_maps(cs, g->n, sens, err);
    if (rc == LM_OK && !(k = lm_kdata_new(t->m, def->coils, err)))
        rc = LM_ERR_NOMEM;
    if (rc == LM_OK && !(one = lm_traj_new(def->readout, def->dim, err)))
        rc = LM_ERR_NOMEM;
    if (rc == LM_OK && !(kone = lm_kdata_new(def->readout, def->coils, err)))
        rc = LM_ERR_NOMEM;
    /* every spoke at its own time: the phantom of that moment */
    const int64_t r = def->readout;
    for (int64_t s = 0; s < nspokes && rc == LM_OK; s++) {
        lm_phantom ph;
        lm_dyn_phantom_at(def->dim, ((double)s + 0.5) / (double)nspokes, &ph);
        memcpy(one->k, t->k + 3 * s * r, (size_t)(3 * r) * sizeof *one->k);
        rc = lm_coils_synth_data(cs, &ph, one, kone, err);
        for (int64_t c = 0; c < def->coils && rc == LM_OK; c++)
            memcpy(k->d + c * t->m + s * r, kone->d + c * r, (size_t)r * sizeof *k->d);
    }
    if (rc == LM_OK && def->noise > 0)
        rc = lm_noise_add(k, def->noise, LM_PROBLEM_NOISE_SEED, err);
    if (rc == LM_OK)
        rc = lm_frames_equal(t->m, def->frames, &f, err);
    if (rc == LM_OK)
        f->duration_s = 1e-3 * def->tr_ms * (double)(nspokes / def->frames);
    const int64_t N = lm_geom_voxels(g);
    if (rc == LM_OK && truth && !(tr = lm_alloc((size_t)(N * def->frames), sizeof *tr, err, "dynamic truth")))
        rc = LM_ERR_NOMEM;
    for (int64_t fr = 0; truth && fr < def->frames && rc == LM_OK; fr++) {
        lm_phantom ph;
        lm_dyn_phantom_at(def->dim, ((double)fr + 0.5) / (double)def->frames, &ph);
        lm_volume *v = NULL;
        rc = lm_phantom_truth(&ph, g, LM_PROBLEM_TRUTH_SUB, &v, err);
        if (rc == LM_OK)
            memcpy(tr + fr * N, v->data, (size_t)N * sizeof *tr);
        lm_volume_free(v);
    }
    lm_traj_free(one);
    lm_kdata_free(kone);
    lm_coils_synth_free(cs);
    if (rc != LM_OK) {
        lm_traj_free(t);
        lm_kdata_free(k);
        lm_sens_free(*sens);
        *sens = NULL;
        free(tr);
        lm_frames_free(f);
        return rc;
    }
    *traj = t;
    *kdata = k;
    *frames = f;
    if (truth)
        *truth = tr;
    return LM_OK;
}

lm_code lm_dyn_truth_averaged(const lm_dyn_problem_def *def, const lm_geom *g, int64_t samples, lm_cfloat **truth,
                              lm_error *err)
{
    *truth = NULL;
    if (!def || samples < 1)
        return lm_fail(err, LM_ERR_INVALID, "frame-averaged truth: no problem or fewer than 1 sample per frame");
    const int64_t N = lm_geom_voxels(g);
    lm_cfloat *tr = lm_alloc((size_t)(N * def->frames), sizeof *tr, err, "frame-averaged truth");
    if (!tr)
        return LM_ERR_NOMEM;
    double *acc = lm_alloc((size_t)(2 * N), sizeof *acc, err, "frame-averaged truth sums");
    lm_code rc = acc ? LM_OK : LM_ERR_NOMEM;
    for (int64_t fr = 0; fr < def->frames && rc == LM_OK; fr++) {
        memset(acc, 0, (size_t)(2 * N) * sizeof *acc);
        for (int64_t j = 0; j < samples && rc == LM_OK; j++) {
            lm_phantom ph;
            lm_dyn_phantom_at(def->dim, ((double)fr + ((double)j + 0.5) / (double)samples) / (double)def->frames,
                              &ph);
            lm_volume *v = NULL;
            rc = lm_phantom_truth(&ph, g, LM_PROBLEM_TRUTH_SUB, &v, err);
            for (int64_t i = 0; rc == LM_OK && i < N; i++) {
                acc[2 * i] += crealf(v->data[i]);
                acc[2 * i + 1] += cimagf(v->data[i]);
            }
            lm_volume_free(v);
        }
        for (int64_t i = 0; rc == LM_OK && i < N; i++)
            tr[fr * N + i] = (float)(acc[2 * i] / (double)samples) + I * (float)(acc[2 * i + 1] / (double)samples);
    }
    free(acc);
    if (rc != LM_OK) {
        free(tr);
        return rc;
    }
    *truth = tr;
    return LM_OK;
}
