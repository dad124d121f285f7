/* The summary of an MRD file for `larmor-cli info`: what the reader takes
 * from it (lm_mrd_summarize, lm_mrd_read.c) as text. */
#include "lm_config.h"

#include "lm_mrd_private.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !LM_HAVE_ISMRMRD

lm_code lm_mrd_info(const char *path, char **text, lm_error *err)
{
    if (text)
        *text = NULL;
    return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: ISMRMRD input unavailable: built without libismrmrd",
                   path ? path : "");
}

#else /* LM_HAVE_ISMRMRD */

typedef struct strbuf {
    char *s;
    size_t len, cap;
    int failed;
} strbuf;

static void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap ? b->cap * 2 : 1024) + (size_t)n;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
}

lm_code lm_mrd_info(const char *path, char **text, lm_error *err)
{
    if (!text)
        return lm_fail(err, LM_ERR_INVALID, "%s: no output for the ISMRMRD summary", path ? path : "");
    *text = NULL;
    lm_mrd_summary sm;
    lm_mrd_opts o;
    lm_mrd_opts_init(&o);
    o.units = lm_mrd_units_default();
    lm_code rc = lm_mrd_summarize(path, &o, &sm, err);
    if (rc != LM_OK)
        return rc;
    const lm_mrd_scan *s = &sm.scan;
    const lm_mrd_header *h = &sm.hdr;
    strbuf b = {0};
    sb_printf(&b, "%s: ISMRMRD (MRD) HDF5\n", path);
    sb_printf(&b, "  acquisitions: %llu (%llu imaging, %llu noise, %llu other non-imaging skipped",
              (unsigned long long)s->total, (unsigned long long)s->kept, (unsigned long long)s->noise,
              (unsigned long long)s->other_skipped);
    if (s->other_encoding)
        sb_printf(&b, ", %llu of other encodings skipped", (unsigned long long)s->other_encoding);
    if (s->empty)
        sb_printf(&b, ", %llu empty", (unsigned long long)s->empty);
    if (s->other_sel)
        sb_printf(&b, ", %llu of other repetitions/contrasts skipped", (unsigned long long)s->other_sel);
    sb_printf(&b, ")\n");
    const lm_mrd_sel *sel = &sm.sel;
    sb_printf(&b, "  repetitions: %d (%d..%d), reading %d\n", sel->nrep, sel->rep_lo, sel->rep_hi, sel->repetition);
    sb_printf(&b, "  contrasts: %d (%d..%d), reading %d\n", sel->ncon, sel->con_lo, sel->con_hi, sel->contrast);
    if (s->nslices > 1)
        sb_printf(&b, "  slices: %d (idx.slice %u..%u), 2D multi-slice: reconstructed slice by slice and stacked\n",
                  s->nslices, s->lo[0], s->hi[0]);
    else
        sb_printf(&b, "  slices: 1 (idx.slice %u)\n", s->lo[0]);
    sb_printf(&b, "  channels: %lld\n", (long long)s->channels);
    if (s->noise_m > 0)
        sb_printf(&b, "  noise scans: %lld samples per channel (used to prewhiten)\n", (long long)s->noise_m);
    if (s->ns_min == s->ns_max)
        sb_printf(&b, "  samples per acquisition: %lld", (long long)s->ns_min);
    else
        sb_printf(&b, "  samples per acquisition: %lld..%lld", (long long)s->ns_min, (long long)s->ns_max);
    if (s->dpre || s->dpost)
        sb_printf(&b, " (discarding %lld before, %lld after)", (long long)s->dpre, (long long)s->dpost);
    sb_printf(&b, "\n  samples kept: %lld per channel\n", (long long)s->m);
    if (s->tdim == 0)
        sb_printf(&b, "  trajectory: Cartesian, derived from the encoding counters (%dD)\n", sm.ndim);
    else
        sb_printf(&b, "  trajectory: non-Cartesian, %d dimensions stored, %dD; units %s (%s; stored max |k| %.4g)\n",
                  s->tdim, sm.ndim, lm_mrd_units_name(sm.units_used), sm.units_why, sm.kmax_stored);
    if (sm.has_times)
        sb_printf(&b, "  sample times: [%g, %g] s (sample_time_us, t = 0 at center_sample)\n", sm.t_lo, sm.t_hi);
    else
        sb_printf(&b, "  sample times: none (%s)\n", sm.file_has_dwell ? "sample_time_us is 0" : "no sample_time_us");
    sb_printf(&b, "  header trajectory: %s\n", h->trajectory[0] ? h->trajectory : "(none)");
    sb_printf(&b, "  encoded matrix: %lld x %lld x %lld, FOV %g x %g x %g mm\n", (long long)h->matrix[0],
              (long long)h->matrix[1], (long long)h->matrix[2], h->fov_mm[0], h->fov_mm[1], h->fov_mm[2]);
    if (h->recon_matrix[0] > 0)
        sb_printf(&b, "  recon matrix: %lld x %lld x %lld, FOV %g x %g x %g mm\n",
                  (long long)h->recon_matrix[0], (long long)h->recon_matrix[1], (long long)h->recon_matrix[2],
                  h->recon_fov_mm[0], h->recon_fov_mm[1], h->recon_fov_mm[2]);
    if (sm.oversampling_removed)
        sb_printf(&b, "  readout oversampling: removed (readouts cropped to the recon field of view, %lld points)\n",
                  (long long)h->recon_matrix[0]);
    if (h->parallel.accel[0] > 1 || h->parallel.accel[1] > 1)
        sb_printf(&b, "  parallel imaging: acceleration %lld x %lld, calibration %s\n",
                  (long long)h->parallel.accel[0], (long long)h->parallel.accel[1],
                  h->parallel.calibration_mode[0] ? h->parallel.calibration_mode : "(not given)");
    const lm_mrd_provenance *pv = &h->prov;
    if (pv->patient_id[0] || pv->patient_name[0])
        sb_printf(&b, "  patient: %s (ID %s)\n", pv->patient_name[0] ? pv->patient_name : "(no name)",
                  pv->patient_id[0] ? pv->patient_id : "none");
    if (pv->study_instance_uid[0] || pv->study_date[0])
        sb_printf(&b, "  study: %s %s %s\n", pv->study_instance_uid[0] ? pv->study_instance_uid : "(no UID)",
                  pv->study_date, pv->study_description);
    if (pv->system_vendor[0] || pv->system_model[0] || pv->field_strength_t > 0)
        sb_printf(&b, "  system: %s %s, %g T\n", pv->system_vendor, pv->system_model, pv->field_strength_t);
    if (h->encodings > 1)
        sb_printf(&b, "  encodings: %d (only the first is read)\n", h->encodings);
    if (b.failed) {
        free(b.s);
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory for the summary", path);
    }
    *text = b.s;
    return LM_OK;
}

#endif /* LM_HAVE_ISMRMRD */
