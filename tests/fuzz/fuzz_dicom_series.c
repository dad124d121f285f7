/* The DICOM series logic on tag records (lm_dicom_series.c): choosing a
 * series, sorting the slices and the geometry, from records built out of
 * the input bytes (any doubles, NaN and infinities included). dcmtk does
 * the file parsing and is not fuzzed here. Checks: a failure has a one-line
 * message; on success the indices are a permutation of the series picked
 * and the affine and voxel size are finite. */
#include "fuzz_common.h"
#include "lm_dicom.h"

#define MAX_RECS 24

static double take_double(const uint8_t **p, size_t *left)
{
    if (*left < 2)
        return 0;
    /* Mostly small, well-formed numbers; sometimes raw bit patterns. */
    double v;
    if ((*p)[0] == 0xFF && *left >= 9) {
        memcpy(&v, *p + 1, sizeof v);
        *p += 9, *left -= 9;
        return v;
    }
    v = ((int16_t)((*p)[0] | (*p)[1] << 8)) / 64.0;
    *p += 2, *left -= 2;
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const uids[3] = {"1.2.3", "1.2.4", ""};
    static char names[MAX_RECS][8];
    lm_dicom_rec r[MAX_RECS];
    if (size < 2)
        return 0;
    const int n = data[0] % MAX_RECS;
    const int pick_uid = data[1] % 4; /* 0..2: that UID, 3: none given */
    const uint8_t *p = data + 2;
    size_t left = size - 2;
    for (int k = 0; k < n; k++) {
        memset(&r[k], 0, sizeof r[k]);
        snprintf(names[k], sizeof names[k], "f%d", k);
        r[k].file = names[k];
        uint8_t b = left ? *p : 0;
        if (left)
            p++, left--;
        snprintf(r[k].series_uid, sizeof r[k].series_uid, "%s", uids[b % 3]);
        r[k].has_ipp = !(b & 0x08), r[k].has_iop = !(b & 0x10), r[k].has_spacing = !(b & 0x20);
        r[k].frame = b & 0x40 ? k : -1;
        r[k].rows = 1 + (b >> 7);
        r[k].cols = 2;
        for (int a = 0; a < 3; a++)
            r[k].ipp[a] = take_double(&p, &left);
        for (int a = 0; a < 6; a++)
            r[k].iop[a] = take_double(&p, &left);
        r[k].spacing[0] = take_double(&p, &left);
        r[k].spacing[1] = take_double(&p, &left);
        r[k].thickness = take_double(&p, &left);
    }
    lm_error err;
    lm_error_clear(&err);
    int *idx = NULL, count = 0;
    lm_code rc = lm_dicom_series_choose(r, n, pick_uid < 3 ? uids[pick_uid] : NULL, "fuzz", &idx, &count, &err);
    FUZZ_CHECK_MSG(rc, err);
    if (rc != LM_OK)
        return 0;
    if (count < 1 || count > n)
        abort();
    int seen[MAX_RECS] = {0};
    for (int k = 0; k < count; k++)
        seen[idx[k]]++;
    double aff[4][4], vox[3];
    lm_error_clear(&err);
    rc = lm_dicom_series_geometry(r, idx, count, "fuzz", aff, vox, &err);
    FUZZ_CHECK_MSG(rc, err);
    for (int k = 0; k < count; k++)
        if (--seen[idx[k]] != 0 || strcmp(r[idx[k]].series_uid, r[idx[0]].series_uid) != 0)
            abort(); /* not a permutation of one series */
    if (rc == LM_OK) {
        for (int a = 0; a < 3; a++) {
            if (!isfinite(vox[a]) || !(vox[a] > 0))
                abort();
            for (int c = 0; c < 4; c++)
                if (!isfinite(aff[a][c]))
                    abort();
        }
    }
    free(idx);
    return 0;
}
