/* Coil maps on disk (lm_io.h): BART cfl [nx, ny, nz, coils(, maps)] and
 * complex 4D NIfTI; noise samples (.cfl, or an ISMRMRD file's noise scans). */
#include "lm_io.h"
#include "lm_io_ismrmrd.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int is_nifti(const char *path)
{
    return ends_with(path, ".nii") || ends_with(path, ".nii.gz");
}

/* Finite and not zero everywhere. */
static lm_code check_values(const char *path, const lm_sens *s, lm_error *err)
{
    const size_t count = (size_t)(lm_sens_voxels(s) * s->ncoils);
    lm_code rc = lm_check_finite_complex(path, s->s, count, err);
    if (rc != LM_OK)
        return rc;
    for (size_t i = 0; i < count; i++)
        if (crealf(s->s[i]) != 0 || cimagf(s->s[i]) != 0)
            return LM_OK;
    return lm_fail(err, LM_ERR_FORMAT, "%s: coil maps are zero everywhere", path);
}

static lm_code load_cfl(const char *path, lm_sens **out, lm_error *err)
{
    int nd = 0;
    int64_t dims[LM_CFL_MAX_DIMS];
    lm_cfloat *data = NULL;
    lm_code rc = lm_cfl_read(path, &nd, dims, &data, err);
    if (rc != LM_OK)
        return rc;
    for (int a = nd; a < 5; a++)
        dims[a] = 1;
    for (int a = 5; a < nd; a++)
        if (dims[a] != 1) {
            free(data);
            return lm_fail(err, LM_ERR_FORMAT, "%s: coil maps have %lld entries along dimension %d; expected "
                           "[nx, ny, nz, coils] (and a 5th, map sets)", path, (long long)dims[a], a + 1);
        }
    /* ecalib -m 2 writes two map sets in dim 4: the first is the one to use */
    lm_sens *s = lm_sens_new(dims, dims[3], err);
    if (!s) {
        free(data);
        return err ? err->code : LM_ERR_NOMEM;
    }
    memcpy(s->s, data, (size_t)(lm_sens_voxels(s) * s->ncoils) * sizeof(lm_cfloat));
    free(data);
    *out = s;
    return LM_OK;
}

static lm_code load_nifti(const char *path, lm_sens **out, lm_error *err)
{
    lm_volume *v = NULL;
    int64_t frames = 0;
    lm_code rc = lm_nifti_read_frames(path, &v, &frames, err);
    if (rc != LM_OK)
        return rc;
    lm_sens *s = lm_sens_new(v->dims, frames, err);
    if (s)
        memcpy(s->s, v->data, (size_t)(lm_sens_voxels(s) * frames) * sizeof(lm_cfloat));
    lm_volume_free(v);
    if (!s)
        return err ? err->code : LM_ERR_NOMEM;
    *out = s;
    return LM_OK;
}

lm_code lm_load_sens(const char *path, lm_sens **out, lm_error *err)
{
    *out = NULL;
    lm_sens *s = NULL;
    lm_code rc = is_nifti(path) ? load_nifti(path, &s, err) : load_cfl(path, &s, err);
    if (rc == LM_OK)
        rc = check_values(path, s, err);
    if (rc != LM_OK) {
        lm_sens_free(s);
        return rc;
    }
    *out = s;
    return LM_OK;
}

lm_code lm_save_sens(const char *path, const lm_sens *s, const double fov_mm[3], lm_error *err)
{
    if (!s || !s->s)
        return lm_fail(err, LM_ERR_INVALID, "%s: no coil maps to write", path);
    if (!is_nifti(path)) {
        const int64_t dims[4] = {s->n[0], s->n[1], s->n[2], s->ncoils};
        return lm_cfl_write(path, 4, dims, s->s, err);
    }
    double vox[3];
    for (int a = 0; a < 3; a++)
        vox[a] = fov_mm && fov_mm[a] > 0 ? fov_mm[a] / (double)s->n[a] : 1.0;
    const int64_t one[3] = {1, 1, 1};
    lm_volume *v = lm_volume_new(one, vox, err); /* the geometry only */
    if (!v)
        return err ? err->code : LM_ERR_NOMEM;
    for (int a = 0; a < 3; a++)
        v->dims[a] = s->n[a];
    lm_volume_set_centered_affine(v);
    lm_code rc = lm_nifti_write_frames(path, v, s->ncoils, s->s, 1, err);
    lm_volume_free(v);
    return rc;
}

lm_code lm_check_sens(const lm_sens *s, const int64_t n[3], int64_t ncoils, const char *path, lm_error *err)
{
    if (s->n[0] != n[0] || s->n[1] != n[1] || s->n[2] != n[2])
        return lm_fail(err, LM_ERR_INVALID, "%s: coil maps are %lldx%lldx%lld but the matrix is %lldx%lldx%lld",
                       path, (long long)s->n[0], (long long)s->n[1], (long long)s->n[2], (long long)n[0],
                       (long long)n[1], (long long)n[2]);
    if (s->ncoils != ncoils)
        return lm_fail(err, LM_ERR_INVALID, "%s: %lld coil maps but the k-space has %lld channels", path,
                       (long long)s->ncoils, (long long)ncoils);
    return LM_OK;
}

/* Noise scans of an MRD file; any repetition or contrast (noise scans are
 * never filtered by them) and multi-slice files are fine. */
static lm_code load_mrd_noise(const char *path, lm_kdata **out, lm_error *err)
{
    lm_mrd m = {0};
    lm_code rc = lm_mrd_read_opts(path, NULL, &m, err);
    if (rc != LM_OK)
        return rc;
    if (!m.noise)
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: the ISMRMRD file holds no noise scans", path);
    *out = m.noise;
    m.noise = NULL;
    lm_mrd_clear(&m);
    return rc;
}

lm_code lm_load_noise(const char *path, lm_kdata **out, lm_error *err)
{
    *out = NULL;
    lm_kdata *k = NULL;
    lm_code rc = ends_with(path, ".h5") ? load_mrd_noise(path, &k, err) : lm_load_kdata(path, &k, err);
    if (rc != LM_OK)
        return rc;
    if (k->m < 1 || k->ncoils < 1)
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: no noise samples", path);
    for (int64_t i = 0; rc == LM_OK && i < k->m * k->ncoils; i++)
        if (!isfinite(crealf(k->d[i])) || !isfinite(cimagf(k->d[i])))
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: noise sample %lld of channel %lld is not a finite number", path,
                         (long long)(i % k->m), (long long)(i / k->m));
    /* a dead channel makes the covariance singular: say which one, here */
    for (int64_t c = 0; rc == LM_OK && c < k->ncoils; c++) {
        const lm_cfloat *d = k->d + (size_t)c * (size_t)k->m;
        int64_t i = 0;
        while (i < k->m && crealf(d[i]) == 0 && cimagf(d[i]) == 0)
            i++;
        if (i == k->m)
            rc = k->ncoils == 1 ? lm_fail(err, LM_ERR_FORMAT, "%s: noise samples are zero everywhere", path)
                                : lm_fail(err, LM_ERR_FORMAT, "%s: noise channel %lld of %lld is zero everywhere",
                                          path, (long long)c, (long long)k->ncoils);
    }
    if (rc != LM_OK) {
        lm_kdata_free(k);
        return rc;
    }
    *out = k;
    return LM_OK;
}

lm_code lm_check_noise(const lm_kdata *noise, int64_t ncoils, const char *path, lm_error *err)
{
    if (!noise || !noise->d)
        return lm_fail(err, LM_ERR_INVALID, "%s: no noise samples", path);
    if (noise->ncoils != ncoils)
        /* [samples, coils] as a 2D array reads as one channel: say where coils go */
        return lm_fail(err, LM_ERR_INVALID, "%s: noise samples have %lld channels but the k-space has %lld%s", path,
                       (long long)noise->ncoils, (long long)ncoils,
                       noise->ncoils == 1 && ncoils > 1 && !ends_with(path, ".h5")
                           ? " (a .cfl holds channels in its 4th dimension: [1, samples, 1, coils])"
                           : "");
    if (noise->m < 2 * ncoils)
        return lm_fail(err, LM_ERR_INVALID,
                       "%s: %lld noise samples per channel are too few for %lld channels (at least %lld)", path,
                       (long long)noise->m, (long long)ncoils, (long long)(2 * ncoils));
    return LM_OK;
}
