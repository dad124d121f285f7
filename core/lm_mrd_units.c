/* ISMRMRD trajectory units, reader options and freeing what the reader
 * returns (docs/ismrmrd.md). */
#include "lm_io_ismrmrd.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

lm_code lm_mrd_units_parse(const char *s, lm_mrd_units *out, lm_error *err)
{
    if (!s || !*s || strcasecmp(s, "auto") == 0)
        *out = LM_MRD_UNITS_AUTO;
    else if (strcasecmp(s, "normalized") == 0 || strcasecmp(s, "normalised") == 0)
        *out = LM_MRD_UNITS_NORMALIZED;
    else if (strcasecmp(s, "cycles") == 0 || strcasecmp(s, "cycles/fov") == 0)
        *out = LM_MRD_UNITS_CYCLES;
    else
        return lm_fail(err, LM_ERR_INVALID,
                       "ISMRMRD trajectory units '%s' unknown (auto, normalized or cycles)", s);
    return LM_OK;
}

const char *lm_mrd_units_name(lm_mrd_units u)
{
    switch (u) {
    case LM_MRD_UNITS_AUTO: return "auto";
    case LM_MRD_UNITS_NORMALIZED: return "normalized";
    case LM_MRD_UNITS_CYCLES: return "cycles";
    }
    return "unknown";
}

void lm_mrd_clear(lm_mrd *m)
{
    if (!m)
        return;
    lm_traj_free(m->traj);
    lm_kdata_free(m->kdata);
    lm_kdata_free(m->noise);
    if (m->slices)
        for (int i = 0; i < m->nslices; i++) {
            lm_traj_free(m->slices[i].traj);
            lm_kdata_free(m->slices[i].kdata);
        }
    free(m->slices);
    memset(m, 0, sizeof *m);
}

void lm_mrd_opts_init(lm_mrd_opts *o)
{
    o->units = LM_MRD_UNITS_AUTO;
    o->repetition = -1;
    o->contrast = -1;
}

lm_code lm_mrd_units_env(const char *path, lm_mrd_units *u, lm_error *err)
{
    const char *env = getenv("LARMOR_MRD_TRAJ_UNITS");
    *u = LM_MRD_UNITS_AUTO;
    if (env && *env) {
        lm_code rc = lm_mrd_units_parse(env, u, err);
        if (rc != LM_OK)
            return lm_fail(err, rc, "%s: LARMOR_MRD_TRAJ_UNITS='%s' unknown (auto, normalized or cycles)",
                           path ? path : "", env);
    }
    return LM_OK;
}
