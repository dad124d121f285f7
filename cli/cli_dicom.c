/* larmor-cli recon's DICOM output (docs/dicom.md). */
#include "cli_dicom.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

lm_code cli_dicom_check(const cli_dicom_args *a, lm_error *err)
{
    if (!a->dir && (a->enhanced || a->like || a->part != LM_DICOM_MAGNITUDE))
        return lm_fail(err, LM_ERR_INVALID, "recon: --dicom-enhanced, --dicom-part and --dicom-like need --out-dicom DIR");
    return a->dir ? lm_dicom_check_out_dir(a->dir, err) : LM_OK;
}

/* Upper-case copy of s appended to buf. */
static void append_upper(char *buf, size_t len, const char *s)
{
    size_t n = strlen(buf);
    if (n + 1 < len)
        buf[n++] = ' ';
    for (; *s && n + 1 < len; s++)
        buf[n++] = (char)toupper((unsigned char)*s);
    buf[n] = '\0';
}

void cli_dicom_describe(char *buf, size_t len, lm_method method, int coils, lm_coil_combine combine, lm_reg_kind reg,
                        double lambda, const char *variant)
{
    snprintf(buf, len, "Larmor");
    append_upper(buf, len, lm_method_name(method));
    if (coils > 1)
        append_upper(buf, len, combine == LM_COMBINE_RSS ? "rss" : "sense");
    if (method != LM_METHOD_CG)
        return;
    append_upper(buf, len, lm_reg_name(reg));
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, " lambda=%g%s%s", lambda, variant && *variant ? " " : "", variant ? variant : "");
}

lm_code cli_dicom_write(const cli_dicom_args *a, const lm_volume *v, const lm_mrd_provenance *prov, const char *desc,
                        int quiet, lm_error *err)
{
    return cli_dicom_write_frames(a, v, 1, 0, prov, desc, quiet, err);
}

lm_code cli_dicom_write_frames(const cli_dicom_args *a, const lm_volume *v, int64_t frames, double frame_s,
                               const lm_mrd_provenance *prov, const char *desc, int quiet, lm_error *err)
{
    if (!a->dir)
        return LM_OK;
    lm_dicom_write_opts o;
    lm_dicom_write_opts_init(&o);
    o.part = a->part;
    o.enhanced = a->enhanced;
    o.series_description = desc;
    o.prov = prov;
    o.like_dir = a->like;
    o.like_series = a->like ? a->series : NULL;
    o.window[1] = 0; /* the 1st to 99th percentile */
    o.frames = frames;
    o.frame_s = frame_s;
    lm_code rc = lm_dicom_write_series(a->dir, v, &o, err);
    if (rc == LM_OK && !quiet) {
        if (o.note[0])
            fprintf(stderr, "recon: DICOM: %s\n", o.note);
        fprintf(stderr, "recon: wrote %s (%d DICOM file%s, %s%s, series %s)\n", a->dir, o.files,
                o.files == 1 ? "" : "s", lm_dicom_part_name(o.part), frames > 1 ? ", dynamic" : "", o.series_uid);
    }
    return rc;
}
