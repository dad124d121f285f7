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

/* The units lm_mrd_read and the acquisition loader assume, set by the front
 * end (lm_tuning_set, from LARMOR_MRD_TRAJ_UNITS): an int read and written
 * whole, so no lock is needed. */
static volatile int g_default_units = LM_MRD_UNITS_AUTO;

void lm_mrd_units_set_default(lm_mrd_units u)
{
    g_default_units = (int)u;
}

lm_mrd_units lm_mrd_units_default(void)
{
    return (lm_mrd_units)g_default_units;
}
