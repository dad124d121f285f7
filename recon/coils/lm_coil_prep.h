/* The coils as the encoding operator sees them: the data prewhitened with
 * the noise covariance, compressed to fewer virtual coils, and coil maps
 * given (transformed alike) or estimated from the data (lm_coils.h). Runs
 * before every multi-coil reconstruction, in this order. */
#ifndef LM_COIL_PREP_H
#define LM_COIL_PREP_H

#include "lm_kernels.h"
#include "lm_recon.h"

typedef struct lm_coil_prep {
    const lm_kdata *k;      /* the data to reconstruct (the caller's or kown) */
    const lm_sens *sens;    /* the maps to use (the caller's, or in res->sens), or NULL */
    lm_kdata *kown;         /* whitened or compressed data, owned */
} lm_coil_prep;

/* Fills res->noise_cov/ncov, coils_in, energy_kept, sens (when the maps
 * differ from o->sens), sens_source and note. want_maps: estimate maps when
 * none are given and the data have several channels. ctl may cancel. */
lm_code lm_coil_prep_run(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const lm_recon_opts *o,
                         int want_maps, const lm_ctl *ctl, lm_recon_result *res, lm_coil_prep *p, lm_error *err);
void lm_coil_prep_clear(lm_coil_prep *p);

#endif
