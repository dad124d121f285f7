/* Coil maps from the data (lm_coils.h): calibration gridding, then ESPIRiT
 * or Walsh, with AUTO falling back to Walsh when ESPIRiT cannot run (too
 * large an eigenproblem, a LAPACK failure) or keeps under 5 % of the voxels
 * (the eigenvalue never reaches the crop level: inconsistent calibration). */
#include "lm_coils_impl.h"
#include "lm_progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LM_SENS_CALIB 24        /* BART ecalib -r */
#define LM_SENS_KERNEL_2D 6     /* BART ecalib -k */
#define LM_SENS_KERNEL_3D 5     /* 6^3 x C eigenproblem is ~5x slower, see lm_espirit.c */
#define LM_SENS_THRESH 0.001    /* BART ecalib -t */
#define LM_SENS_CROP 0.8        /* BART ecalib -c */
#define LM_SENS_WINDOW 3       /* low-res voxels; the calibration images are already averaged, a wider window biases near edges (test_sens: 5 gives 4.6 %, 3 gives 3.4 % in 3D) */
#define LM_SENS_MASK 0.05
#define LM_SENS_AUTO_MIN_MASK 0.05

void lm_sens_est_default_opts(lm_sens_est_opts *o)
{
    memset(o, 0, sizeof *o);
    o->method = LM_SENS_AUTO;
    o->thresh = LM_SENS_THRESH;
    o->crop = LM_SENS_CROP;
    o->window = LM_SENS_WINDOW;
    o->mask = LM_SENS_MASK;
}


lm_code lm_sens_estimate(const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                         const lm_sens_est_opts *o, const lm_ctl *ctl, lm_sens **out,
                         lm_sens_est_info *info, lm_error *err)
{
    lm_sens_est_opts def;
    if (!o) {
        lm_sens_est_default_opts(&def);
        o = &def;
    }
    lm_sens_est_info tmp;
    if (!info)
        info = &tmp;
    memset(info, 0, sizeof *info);
    if (!g || !t || !k || !out)
        return lm_fail(err, LM_ERR_INVALID, "coil maps: missing geometry, trajectory or data");
    *out = NULL;
    if (o->method < LM_SENS_AUTO || o->method > LM_SENS_WALSH)
        return lm_fail(err, LM_ERR_INVALID, "coil maps: unknown method %d", (int)o->method);
    if (o->calib < 0 || o->calib % 2)
        return lm_fail(err, LM_ERR_INVALID, "coil maps: calibration size %d is not even and positive", o->calib);
    if (o->kernel < 0)
        return lm_fail(err, LM_ERR_INVALID, "coil maps: kernel size %d is negative", o->kernel);
    int dim = g->n[2] == 1 ? 2 : 3;
    int64_t cal[3] = {1, 1, 1};
    for (int a = 0; a < dim; a++) {
        int64_t c = o->calib ? o->calib : LM_SENS_CALIB;
        if (!o->calib && c > g->n[a] / 2) /* small matrices: the centre half */
            c = g->n[a] / 2;
        c -= c % 2;
        if (c > g->n[a])
            return lm_fail(err, LM_ERR_INVALID, "coil maps: calibration size %lld exceeds the matrix (%lld along axis %d)",
                           (long long)c, (long long)g->n[a], a);
        cal[a] = c;
        info->calib[a] = c;
    }
    info->calib[2] = cal[2];
    int kernel = o->kernel ? o->kernel : (dim == 2 ? LM_SENS_KERNEL_2D : LM_SENS_KERNEL_3D);

    lm_calib *cb = NULL;
    lm_ctl_range sc;
    lm_ctl cc = lm_ctl_sub(&sc, ctl, 0.0, 0.3);
    lm_code rc = lm_calib_from_noncart(g, t, k, cal, &cc, &cb, &info->centre_samples, err);
    if (rc != LM_OK)
        return rc;
    /* checked here so that AUTO does not fall back on data without signal */
    double energy = 0;
    for (int64_t i = 0; i < cb->n[0] * cb->n[1] * cb->n[2] * cb->ncoils; i++)
        energy += creal(cb->y[i] * conj(cb->y[i]));
    if (!(energy > 0)) {
        lm_calib_free(cb);
        return lm_fail(err, LM_ERR_INVALID, "coil maps: the data have no energy in the calibration region");
    }
    lm_ctl_range se;
    lm_ctl ce = lm_ctl_sub(&se, ctl, 0.3, 1.0);
    lm_sens *s = NULL;
    if (o->method != LM_SENS_WALSH) {
        lm_error e1;
        lm_error_clear(&e1);
        info->used = LM_SENS_ESPIRIT;
        rc = lm_espirit_maps(cb, g->n, kernel, o->thresh > 0 ? o->thresh : LM_SENS_THRESH, o->crop,
                             &ce, &s, info, &e1);
        int fall = 0;
        if (o->method == LM_SENS_AUTO && rc != LM_OK && rc != LM_ERR_CANCELLED &&
            rc != LM_ERR_NOMEM && rc != LM_ERR_FORMAT) {
            snprintf(info->note, sizeof info->note, "ESPIRiT failed (%.100s), Walsh used", e1.msg);
            fall = 1;
        } else if (o->method == LM_SENS_AUTO && rc == LM_OK && info->mask_fraction < LM_SENS_AUTO_MIN_MASK) {
            snprintf(info->note, sizeof info->note,
                     "ESPIRiT kept %.1f %% of the voxels (eigenvalues below crop %.2f), Walsh used",
                     100.0 * info->mask_fraction, o->crop);
            lm_sens_free(s);
            s = NULL;
            fall = 1;
        } else if (rc != LM_OK) {
            lm_fail(err, rc, "%s", e1.msg);
        }
        if (fall) {
            info->used = LM_SENS_WALSH;
            rc = lm_walsh_maps(cb, g->n, o->window ? o->window : LM_SENS_WINDOW, o->mask, &ce, &s,
                               info, err);
        }
    } else {
        info->used = LM_SENS_WALSH;
        rc = lm_walsh_maps(cb, g->n, o->window ? o->window : LM_SENS_WINDOW, o->mask, &ce, &s, info, err);
    }
    lm_calib_free(cb);
    if (rc != LM_OK) {
        lm_sens_free(s);
        return rc;
    }
    *out = s;
    return LM_OK;
}
