/* Test helper for tests/core/test_dicom_tools.sh (not a test itself):
 *   dicom_fixture write OUT   volumes with known geometry as NIfTI and as
 *                             DICOM series written by Larmor (OUT/NAME.nii
 *                             and OUT/NAME/, one per case below)
 *   dicom_fixture read SRC OUT.nii [UID]   what lm_load_volume reads from SRC,
 *                             written as NIfTI (float32, the affine read)
 *   dicom_fixture convert SRC DIR [PART [SCALE]]   any volume SRC, times SCALE,
 *                             written as a series
 * `write` also makes dynamic (4D) cases: OUT/NAME.nii 4D and OUT/NAME/ a
 * dynamic series of the same frames (frame t: the pattern shifted by t).
 * so the external checkers (dcm2niix, dciodvfy, pydicom) can judge both ways. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_dicom.h"
#include "lm_io.h"

/* Rotation about x by a, then about z by b (degrees), scaled per column. */
static void oblique_affine(double aff[4][4], const double vox[3], double a, double b, int flip_k)
{
    const double ca = cos(a * M_PI / 180), sa = sin(a * M_PI / 180), cb = cos(b * M_PI / 180),
                 sb = sin(b * M_PI / 180);
    const double rx[3][3] = {{1, 0, 0}, {0, ca, -sa}, {0, sa, ca}};
    const double rz[3][3] = {{cb, -sb, 0}, {sb, cb, 0}, {0, 0, 1}};
    memset(aff, 0, 16 * sizeof(double));
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            double s = 0;
            for (int k = 0; k < 3; k++)
                s += rz[r][k] * rx[k][c];
            aff[r][c] = s * vox[c] * (c == 2 && flip_k ? -1 : 1);
        }
    aff[0][3] = -23.5;
    aff[1][3] = 17.25;
    aff[2][3] = -8.125;
    aff[3][3] = 1;
}

/* A smooth complex pattern with a sharp edge, values of both signs. */
static void fill(lm_volume *v)
{
    for (int64_t k = 0; k < v->dims[2]; k++)
        for (int64_t j = 0; j < v->dims[1]; j++)
            for (int64_t i = 0; i < v->dims[0]; i++) {
                double x = (double)i / (double)v->dims[0] - 0.4, y = (double)j / (double)v->dims[1] - 0.55;
                double m = 800.0 * exp(-4 * (x * x + y * y)) * (1 + 0.1 * (double)k) + (x > 0.2 ? 300 : 0);
                double ph = 2.5 * sin(6 * x + 3 * y + 0.2 * (double)k);
                v->data[(k * v->dims[1] + j) * v->dims[0] + i] = (float)(m * cos(ph)) + I * (float)(m * sin(ph));
            }
}

static int write_case(const char *out, const char *name, const int64_t dims[3], const double vox[3], double a,
                      double b, int flip_k, lm_dicom_part part, int enhanced)
{
    lm_error err = {0};
    lm_volume *v = lm_volume_new(dims, vox, &err);
    if (!v)
        return fprintf(stderr, "%s\n", err.msg), 1;
    oblique_affine(v->affine, vox, a, b, flip_k);
    fill(v);
    char path[1024];
    /* The NIfTI holds what the DICOM part shows: float32 real values. */
    lm_volume *shown = lm_volume_copy(v, &err);
    for (int64_t n = 0; n < lm_volume_count(v); n++) {
        lm_cfloat z = v->data[n];
        float x = part == LM_DICOM_PHASE ? cargf(z) : part == LM_DICOM_REAL ? crealf(z)
                  : part == LM_DICOM_IMAG ? cimagf(z) : cabsf(z);
        shown->data[n] = x;
    }
    snprintf(path, sizeof path, "%s/%s.nii", out, name);
    int rc = lm_nifti_write(path, shown, LM_NIFTI_REAL, &err) != LM_OK;
    lm_dicom_write_opts o;
    lm_dicom_write_opts_init(&o);
    lm_mrd_provenance prov = {0};
    snprintf(prov.patient_id, sizeof prov.patient_id, "FIXTURE-%s", name);
    snprintf(prov.patient_name, sizeof prov.patient_name, "Fixture^%s", name);
    snprintf(prov.study_instance_uid, sizeof prov.study_instance_uid, "1.2.826.0.1.3680043.10.543.7");
    snprintf(prov.patient_position, sizeof prov.patient_position, "HFS");
    o.prov = &prov;
    o.part = part;
    o.enhanced = enhanced;
    o.nucleus = enhanced ? "23NA" : NULL;
    o.series_description = "Larmor fixture";
    snprintf(path, sizeof path, "%s/%s", out, name);
    if (!rc)
        rc = lm_dicom_write_series(path, v, &o, &err) != LM_OK;
    if (rc)
        fprintf(stderr, "%s\n", err.msg);
    lm_volume_free(v);
    lm_volume_free(shown);
    return rc;
}

/* T frames of an oblique volume, each the pattern moved by the frame index,
 * 0.25 s apart: a 4D NIfTI (magnitude) and a dynamic series. */
static int write_dynamic(const char *out, const char *name, const int64_t dims[3], const double vox[3], int64_t frames,
                         int enhanced)
{
    lm_error err = {0};
    lm_volume *v = lm_volume_new(dims, vox, &err);
    if (!v)
        return fprintf(stderr, "%s\n", err.msg), 1;
    oblique_affine(v->affine, vox, 15, 25, 0);
    const int64_t n = lm_volume_count(v);
    lm_cfloat *all = calloc((size_t)(n * frames), sizeof *all), *own = v->data;
    int rc = !all;
    fill(v);
    for (int64_t t = 0; !rc && t < frames; t++)
        for (int64_t i = 0; i < n; i++) /* moved by t voxels along x: frames differ */
            all[t * n + i] = v->data[(i + t) % n];
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.nii", out, name);
    /* The NIfTI holds the magnitude, as the series. */
    rc = rc || lm_nifti_write_series(path, v, frames, all, 0, 0.25, &err) != LM_OK;
    lm_dicom_write_opts o;
    lm_dicom_write_opts_init(&o);
    o.enhanced = enhanced;
    o.frames = frames;
    o.frame_s = 0.25;
    o.series_description = "Larmor fixture dynamic";
    snprintf(path, sizeof path, "%s/%s", out, name);
    v->data = all;
    rc = rc || lm_dicom_write_series(path, v, &o, &err) != LM_OK;
    v->data = own;
    if (rc)
        fprintf(stderr, "%s: %s\n", name, err.msg);
    free(all);
    lm_volume_free(v);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "write")) {
        const char *out = argv[2];
        const int64_t d3[3] = {40, 36, 12}, d1[3] = {32, 28, 1};
        const double v3[3] = {1.1, 0.9, 2.5}, v1[3] = {0.8, 0.8, 4};
        int rc = 0;
        rc |= write_case(out, "axial", d3, v3, 0, 0, 0, LM_DICOM_MAGNITUDE, 0);
        rc |= write_case(out, "oblique", d3, v3, 20, -35, 0, LM_DICOM_MAGNITUDE, 0);
        rc |= write_case(out, "oblique_flipped", d3, v3, 12, 50, 1, LM_DICOM_MAGNITUDE, 0);
        rc |= write_case(out, "oblique_phase", d3, v3, 20, -35, 0, LM_DICOM_PHASE, 0);
        rc |= write_case(out, "oblique_real", d3, v3, -15, 10, 0, LM_DICOM_REAL, 0);
        rc |= write_case(out, "single_slice", d1, v1, 30, 0, 0, LM_DICOM_IMAG, 0);
        rc |= write_case(out, "enhanced", d3, v3, 20, -35, 0, LM_DICOM_MAGNITUDE, 1);
        const int64_t d4[3] = {24, 20, 6};
        rc |= write_dynamic(out, "dynamic", d4, v3, 5, 0);
        rc |= write_dynamic(out, "dynamic_enhanced", d4, v3, 5, 1);
        rc |= write_dynamic(out, "dynamic_2d", d1, v1, 4, 0);
        rc |= write_dynamic(out, "dynamic_2d_enhanced", d1, v1, 4, 1);
        return rc;
    }
    if (argc >= 4 && !strcmp(argv[1], "read")) {
        lm_error err = {0};
        lm_volume *v = NULL;
        if (lm_load_volume_series(argv[2], argc > 4 ? argv[4] : NULL, &v, &err) != LM_OK ||
            lm_nifti_write(argv[3], v, LM_NIFTI_REAL, &err) != LM_OK) {
            fprintf(stderr, "%s\n", err.msg);
            lm_volume_free(v);
            return 1;
        }
        lm_volume_free(v);
        return 0;
    }
    if (argc >= 4 && !strcmp(argv[1], "convert")) {
        lm_error err = {0};
        lm_volume *v = NULL;
        lm_dicom_write_opts o;
        lm_dicom_write_opts_init(&o);
        o.series_description = "Larmor test input";
        int bad = (argc > 4 && lm_dicom_part_parse(argv[4], &o.part, &err) != LM_OK) ||
                  lm_load_volume(argv[2], &v, &err) != LM_OK;
        for (int64_t n = 0; !bad && argc > 5 && n < lm_volume_count(v); n++)
            v->data[n] *= (float)atof(argv[5]);
        bad = bad || lm_dicom_write_series(argv[3], v, &o, &err) != LM_OK;
        if (bad)
            fprintf(stderr, "%s\n", err.msg);
        lm_volume_free(v);
        return bad;
    }
    fprintf(stderr, "usage: dicom_fixture write OUT | read SRC OUT.nii [SERIES_UID] | convert SRC DIR [PART [SCALE]]\n");
    return 2;
}
