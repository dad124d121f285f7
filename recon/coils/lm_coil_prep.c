/* Whitening, compression and coil maps before a multi-coil reconstruction
 * (lm_coil_prep.h). */
#include "lm_coil_prep.h"

#include <complex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_coils.h"

void lm_coil_prep_clear(lm_coil_prep *p)
{
    lm_kdata_free(p->kown);
    memset(p, 0, sizeof *p);
}

static lm_kdata *kdata_copy(const lm_kdata *k, lm_error *err)
{
    lm_kdata *c = lm_kdata_new(k->m, k->ncoils, err);
    if (c)
        memcpy(c->d, k->d, (size_t)(k->m * k->ncoils) * sizeof(lm_cfloat));
    return c;
}

/* Replaces the working data with nk (owned). */
static void take_data(lm_coil_prep *p, lm_kdata *nk)
{
    lm_kdata_free(p->kown);
    p->kown = nk;
    p->k = nk;
}

/* Replaces the working maps with ns, kept in res->sens. */
static void take_maps(lm_coil_prep *p, lm_recon_result *res, lm_sens *ns)
{
    if (res->sens != ns)
        lm_sens_free(res->sens);
    res->sens = ns;
    p->sens = ns;
}

static lm_code whiten(const lm_recon_opts *o, lm_recon_result *res, lm_coil_prep *p, lm_error *err)
{
    const lm_kdata *nz = o->noise;
    if (nz->ncoils != p->k->ncoils)
        return lm_fail(err, LM_ERR_INVALID, "noise samples have %lld channels but the k-space has %lld",
                       (long long)nz->ncoils, (long long)p->k->ncoils);
    lm_cmat *cov = NULL, *w = NULL;
    lm_kdata *kw = NULL;
    lm_sens *sw = NULL;
    lm_code rc = lm_noise_covariance(nz, &cov, err);
    if (rc == LM_OK)
        rc = lm_prewhiten_make(cov, &w, err);
    if (rc == LM_OK) {
        const int64_t nc = cov->n;
        res->noise_cov = lm_alloc((size_t)(nc * nc), sizeof *res->noise_cov, err, "noise covariance");
        rc = res->noise_cov ? LM_OK : LM_ERR_NOMEM;
        for (int64_t i = 0; rc == LM_OK && i < nc * nc; i++)
            res->noise_cov[i] = (lm_cfloat)cov->a[i];
        res->ncov = (int)nc;
    }
    if (rc == LM_OK && !(kw = kdata_copy(p->k, err)))
        rc = LM_ERR_NOMEM;
    if (rc == LM_OK)
        rc = lm_prewhiten_apply(w, kw, err);
    if (rc == LM_OK && p->sens) {
        /* maps from elsewhere live in the unwhitened coil basis */
        sw = lm_sens_copy(p->sens, err);
        rc = sw ? lm_cmat_apply_sens(w, sw, err) : LM_ERR_NOMEM;
    }
    if (rc == LM_OK) {
        take_data(p, kw);
        kw = NULL;
        if (sw) {
            take_maps(p, res, sw);
            sw = NULL;
        }
    }
    lm_kdata_free(kw);
    lm_sens_free(sw);
    lm_cmat_free(cov);
    lm_cmat_free(w);
    return rc;
}

static lm_code compress(const lm_recon_opts *o, lm_recon_result *res, lm_coil_prep *p, lm_error *err)
{
    lm_coil_compress *plan = NULL;
    lm_kdata *kc = NULL;
    lm_sens *sc = NULL;
    const int64_t want = o->compress_coils < 0 ? 0 : o->compress_coils;
    if (want > p->k->ncoils)
        return lm_fail(err, LM_ERR_INVALID, "cannot compress %lld channels to %lld coils",
                       (long long)p->k->ncoils, (long long)want);
    lm_code rc = lm_coil_compress_plan(p->k, want, 0, &plan, err);
    if (rc == LM_OK)
        rc = lm_coil_compress_apply_kdata(plan, p->k, &kc, err);
    if (rc == LM_OK && p->sens)
        rc = lm_coil_compress_apply_sens(plan, p->sens, &sc, err);
    if (rc == LM_OK) {
        res->energy_kept = plan->energy;
        take_data(p, kc);
        kc = NULL;
        if (sc) {
            take_maps(p, res, sc);
            sc = NULL;
        }
    }
    lm_kdata_free(kc);
    lm_sens_free(sc);
    lm_coil_compress_free(plan);
    return rc;
}

lm_code lm_coil_prep_run(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_recon_opts *o,
                         int want_maps, const lm_ctl *ctl, lm_recon_result *res, lm_coil_prep *p, lm_error *err)
{
    memset(p, 0, sizeof *p);
    p->k = k;
    /* root-sum-of-squares asked for: maps, even given ones, play no part */
    p->sens = o->combine == LM_COMBINE_RSS ? NULL : o->sens;
    res->coils_in = (int)k->ncoils;
    res->sens_source = p->sens ? LM_SENS_GIVEN : LM_SENS_NONE;
    lm_code rc = LM_OK;
    if (o->noise)
        rc = whiten(o, res, p, err);
    if (rc == LM_OK && o->compress_coils != 0 && k->ncoils > 1)
        rc = compress(o, res, p, err);
    if (rc == LM_OK && want_maps && !p->sens && p->k->ncoils > 1) {
        lm_sens *est = NULL;
        lm_sens_est_info info;
        memset(&info, 0, sizeof info);
        rc = lm_sens_estimate(g, t, p->k, NULL, ctl, &est, &info, err);
        if (rc == LM_OK) {
            take_maps(p, res, est);
            res->sens_source = LM_SENS_ESTIMATED;
            snprintf(res->note, sizeof res->note,
                     "coil maps estimated by %s from %lld centre samples on a %lldx%lldx%lld calibration grid%s%s",
                     info.used == LM_SENS_WALSH ? "Walsh" : "ESPIRiT", (long long)info.centre_samples,
                     (long long)info.calib[0], (long long)info.calib[1], (long long)info.calib[2],
                     info.note[0] ? "; " : "", info.note);
        }
    }
    if (rc != LM_OK)
        lm_coil_prep_clear(p);
    return rc;
}
