/* NIfTI-1: byte-exact round trips (.nii, .nii.gz; magnitude and complex),
 * the header fields libniftiio reads back, every supported input datatype
 * with scaling and units, and malformed inputs with their messages. */
#include <nifti1_io.h>
#include <stdint.h>

#include "io_util.h"
#include "lm_io.h"

static lm_error err;

/* A 7 x 5 x 3 volume, rotated 90 degrees about z and shifted. */
static lm_volume *make_volume(int positive_real, unsigned seed)
{
    int64_t dims[3] = {7, 5, 3};
    double vox[3] = {1.5, 2.0, 2.5};
    lm_volume *v = lm_volume_new(dims, vox, &err);
    double a[4][4] = {{0, -2.0, 0, 10}, {1.5, 0, 0, -20}, {0, 0, 2.5, 30.25}, {0, 0, 0, 1}};
    memcpy(v->affine, a, sizeof a);
    for (int64_t i = 0; i < lm_volume_count(v); i++)
        v->data[i] = positive_real ? CMPLXF(fabsf(io_rand(&seed)) * 100.0f, 0.0f)
                                   : CMPLXF(io_rand(&seed), io_rand(&seed));
    return v;
}

static void check_header(const char *path, const lm_volume *v, int datatype)
{
    int swapped = 0;
    nifti_1_header *h = nifti_read_header(path, &swapped, 1);
    CHECK_MSG(h != NULL, "%s: header unreadable", path);
    if (!h)
        return;
    CHECK(h->sizeof_hdr == 348 && strcmp(h->magic, "n+1") == 0 && h->vox_offset == 352.0f);
    CHECK(h->dim[0] == 3 && h->dim[1] == v->dims[0] && h->dim[2] == v->dims[1] &&
          h->dim[3] == v->dims[2]);
    for (int i = 4; i < 8; i++) /* unused: libniftiio writes 0 */
        CHECK(h->dim[i] == 0 || h->dim[i] == 1);
    CHECK(h->datatype == datatype);
    CHECK(h->bitpix == (datatype == NIFTI_TYPE_COMPLEX64 ? 64 : 32));
    for (int a = 0; a < 3; a++)
        CHECK_NEAR(h->pixdim[a + 1], v->voxel_mm[a], 0);
    CHECK(h->pixdim[0] == 1.0f || h->pixdim[0] == -1.0f);
    CHECK(h->qform_code == NIFTI_XFORM_SCANNER_ANAT);
    CHECK(h->sform_code == NIFTI_XFORM_SCANNER_ANAT);
    CHECK(h->xyzt_units == SPACE_TIME_TO_XYZT(NIFTI_UNITS_MM, 0));
    const float *rows[3] = {h->srow_x, h->srow_y, h->srow_z};
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 4; c++)
            CHECK_NEAR(rows[r][c], v->affine[r][c], 0);
    free(h);

    /* The qform, as libniftiio reconstructs it, gives the same mapping. */
    nifti_image *nim = nifti_image_read(path, 0);
    CHECK(nim != NULL);
    if (nim) {
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 4; c++)
                CHECK_NEAR(nim->qto_xyz.m[r][c], v->affine[r][c], 1e-5);
        nifti_image_free(nim);
    }
}

static void round_trip(const char *name, int as_complex, int positive_real, int flip)
{
    lm_volume *v = make_volume(positive_real, 5);
    if (flip) { /* a left-handed affine: qfac -1 */
        double a[4][4] = {{-1.5, 0, 0, 4.5}, {0, 2.0, 0, -4}, {0, 0, 2.5, -2.5}, {0, 0, 0, 1}};
        memcpy(v->affine, a, sizeof a);
    }
    CHECK_OK(lm_nifti_write(P(name), v, as_complex, &err), &err);
    check_header(P(name), v, as_complex ? NIFTI_TYPE_COMPLEX64 : NIFTI_TYPE_FLOAT32);
    lm_volume *r = NULL;
    CHECK_OK(lm_nifti_read(P(name), &r, &err), &err);
    if (r) {
        int64_t n = lm_volume_count(v);
        CHECK(r->dims[0] == 7 && r->dims[1] == 5 && r->dims[2] == 3);
        CHECK_MSG(memcmp(r->data, v->data, (size_t)n * sizeof(lm_cfloat)) == 0, "%s: data differ", name);
        CHECK(memcmp(r->affine, v->affine, sizeof r->affine) == 0);
        CHECK(memcmp(r->voxel_mm, v->voxel_mm, sizeof r->voxel_mm) == 0);
        /* writing what was read gives the same file */
        char name2[64];
        snprintf(name2, sizeof name2, "again-%s", name);
        CHECK_OK(lm_nifti_write(P(name2), r, as_complex, &err), &err);
        CHECK_MSG(files_equal(P(name), P(name2)), "%s: rewrite differs", name);
        lm_volume_free(r);
    }
    lm_volume_free(v);
}

static void test_magnitude_of_complex(void)
{
    lm_volume *v = make_volume(0, 11);
    CHECK_OK(lm_nifti_write(P("mag.nii"), v, 0, &err), &err);
    lm_volume *r = NULL;
    CHECK_OK(lm_nifti_read(P("mag.nii"), &r, &err), &err);
    int ok = r != NULL;
    for (int64_t i = 0; ok && i < lm_volume_count(v); i++)
        ok = crealf(r->data[i]) == cabsf(v->data[i]) && cimagf(r->data[i]) == 0.0f;
    CHECK_MSG(ok, "magnitude write");
    lm_volume_free(r);
    lm_volume_free(v);

    /* 2D image: z = 1 */
    int64_t d2[3] = {6, 4, 1};
    lm_volume *w = lm_volume_new(d2, NULL, &err);
    w->data[23] = 4.0f;
    CHECK_OK(lm_nifti_write(P("flat.nii.gz"), w, 0, &err), &err);
    r = NULL;
    CHECK_OK(lm_nifti_read(P("flat.nii.gz"), &r, &err), &err);
    CHECK(r && r->dims[0] == 6 && r->dims[1] == 4 && r->dims[2] == 1 && crealf(r->data[23]) == 4.0f);
    lm_volume_free(r);
    lm_volume_free(w);
}

/* Writes a NIfTI file of any type straight through libniftiio. data NULL
 * writes the header only. */
static void write_raw(const char *path, int datatype, const int dims[8], const void *data,
                      float slope, float inter, int xyz_units, int qform_code, int sform_code)
{
    nifti_image *nim = nifti_make_new_nim(dims, datatype, 0);
    nim->data = (void *)data;
    nim->scl_slope = slope;
    nim->scl_inter = inter;
    nim->xyz_units = xyz_units;
    nim->qform_code = qform_code;
    nim->sform_code = sform_code;
    nim->pixdim[1] = nim->dx = 2.0f;
    nim->pixdim[2] = nim->dy = 3.0f;
    nim->pixdim[3] = nim->dz = 4.0f;
    nim->quatern_b = nim->quatern_c = nim->quatern_d = 0.0f;
    nim->qoffset_x = 1.0f;
    nim->qoffset_y = 2.0f;
    nim->qoffset_z = 3.0f;
    nim->qfac = 1.0f;
    memset(&nim->sto_xyz, 0, sizeof nim->sto_xyz);
    nim->sto_xyz.m[0][0] = 5.0f;
    nim->sto_xyz.m[1][1] = 6.0f;
    nim->sto_xyz.m[2][2] = 7.0f;
    nim->sto_xyz.m[0][3] = -8.0f;
    nim->sto_xyz.m[3][3] = 1.0f;
    nim->nifti_type = NIFTI_FTYPE_NIFTI1_1;
    nifti_set_filenames(nim, path, 0, 1);
    znzFile fp = nifti_image_write_hdr_img(nim, data ? 1 : 0, "wb");
    (void)fp;
    nim->data = NULL;
    nifti_image_free(nim);
}

static void test_datatypes(void)
{
    int dims[8] = {3, 2, 2, 1, 1, 1, 1, 1};
    const uint8_t u8[4] = {0, 1, 200, 255};
    const int16_t i16[4] = {-3, 0, 7, 32767};
    const int32_t i32[4] = {-100000, 0, 5, 2000000000};
    const double f64[4] = {-1.25, 0, 3.5, 1e30};
    const double c128[8] = {1, -1, 2, -2, 0.5, 0.25, -3, 3};
    lm_volume *r;

    write_raw(P("u8.nii"), NIFTI_TYPE_UINT8, dims, u8, 0.0f, 0.0f, NIFTI_UNITS_MM, 1, 0);
    r = NULL;
    CHECK_OK(lm_nifti_read(P("u8.nii"), &r, &err), &err);
    CHECK(r && crealf(r->data[2]) == 200.0f && crealf(r->data[3]) == 255.0f);
    /* qform only (sform_code 0): identity rotation, pixdim, offsets */
    CHECK(r && r->affine[0][0] == 2.0 && r->affine[1][1] == 3.0 && r->affine[2][2] == 4.0 &&
          r->affine[0][3] == 1.0 && r->affine[1][3] == 2.0 && r->affine[2][3] == 3.0);
    lm_volume_free(r);

    /* int16 with scaling: y = 0.5 x + 10 */
    write_raw(P("i16.nii.gz"), NIFTI_TYPE_INT16, dims, i16, 0.5f, 10.0f, NIFTI_UNITS_MM, 0, 1);
    r = NULL;
    CHECK_OK(lm_nifti_read(P("i16.nii.gz"), &r, &err), &err);
    CHECK(r && crealf(r->data[0]) == 8.5f && crealf(r->data[2]) == 13.5f &&
          crealf(r->data[3]) == 16393.5f);
    /* sform wins over qform */
    CHECK(r && r->affine[0][0] == 5.0 && r->affine[1][1] == 6.0 && r->affine[2][2] == 7.0 &&
          r->affine[0][3] == -8.0);
    lm_volume_free(r);

    write_raw(P("i32.nii"), NIFTI_TYPE_INT32, dims, i32, 0.0f, 0.0f, NIFTI_UNITS_MM, 0, 0);
    r = NULL;
    CHECK_OK(lm_nifti_read(P("i32.nii"), &r, &err), &err);
    CHECK(r && crealf(r->data[0]) == -100000.0f && crealf(r->data[3]) == 2e9f);
    /* neither qform nor sform: centred from the voxel sizes */
    CHECK(r && r->affine[0][0] == 2.0 && r->affine[0][3] == -2.0 && r->voxel_mm[2] == 4.0);
    lm_volume_free(r);

    /* float64 in metres: voxel sizes 2000 x 3000 x 4000 mm */
    write_raw(P("f64.nii"), NIFTI_TYPE_FLOAT64, dims, f64, 0.0f, 0.0f, NIFTI_UNITS_METER, 0, 1);
    r = NULL;
    CHECK_OK(lm_nifti_read(P("f64.nii"), &r, &err), &err);
    CHECK(r && crealf(r->data[0]) == -1.25f && crealf(r->data[3]) == 1e30f);
    CHECK(r && r->voxel_mm[0] == 2000.0 && r->voxel_mm[1] == 3000.0 && r->affine[0][0] == 5000.0 &&
          r->affine[0][3] == -8000.0);
    lm_volume_free(r);

    write_raw(P("c128.nii"), NIFTI_TYPE_COMPLEX128, dims, c128, 0.0f, 0.0f, NIFTI_UNITS_MM, 1, 1);
    r = NULL;
    CHECK_OK(lm_nifti_read(P("c128.nii"), &r, &err), &err);
    CHECK(r && r->data[0] == CMPLXF(1, -1) && r->data[3] == CMPLXF(-3, 3));
    lm_volume_free(r);

    /* 4D with dim[4] == 1 is a 3D image */
    int d4[8] = {4, 2, 2, 1, 1, 1, 1, 1};
    write_raw(P("d4one.nii"), NIFTI_TYPE_UINT8, d4, u8, 0.0f, 0.0f, NIFTI_UNITS_MM, 0, 0);
    r = NULL;
    CHECK_OK(lm_nifti_read(P("d4one.nii"), &r, &err), &err);
    CHECK(r && r->dims[0] == 2 && r->dims[1] == 2 && r->dims[2] == 1);
    lm_volume_free(r);
}

static void test_bad_inputs(void)
{
    lm_volume *v = NULL;
    EXPECT_FAIL(lm_nifti_read(P("missing.nii"), &v, &err), &err, LM_ERR_IO, "missing.nii",
                "No such file");

    write_text(P("garbage.nii"), "this is not a NIfTI file at all, only some text");
    EXPECT_FAIL(lm_nifti_read(P("garbage.nii"), &v, &err), &err, LM_ERR_FORMAT, "garbage.nii",
                "not a readable NIfTI-1 file");

    /* NaN in float32 data */
    int dims[8] = {3, 2, 2, 2, 1, 1, 1, 1};
    float f[8] = {0, 1, 2, NAN, 4, 5, 6, 7};
    write_raw(P("nan.nii"), NIFTI_TYPE_FLOAT32, dims, f, 0.0f, 0.0f, NIFTI_UNITS_MM, 0, 0);
    EXPECT_FAIL(lm_nifti_read(P("nan.nii"), &v, &err), &err, LM_ERR_FORMAT, "nan.nii",
                "element 3 of 8", "NaN real part");
    f[3] = INFINITY;
    write_raw(P("inf.nii.gz"), NIFTI_TYPE_FLOAT32, dims, f, 0.0f, 0.0f, NIFTI_UNITS_MM, 0, 0);
    EXPECT_FAIL(lm_nifti_read(P("inf.nii.gz"), &v, &err), &err, LM_ERR_FORMAT, "inf.nii.gz",
                "element 3 of 8", "infinite real part");

    /* truncated: plain and gzip */
    lm_volume *good = make_volume(0, 3);
    CHECK_OK(lm_nifti_write(P("trunc.nii"), good, 1, &err), &err);
    CHECK(truncate(P("trunc.nii"), 352 + 100) == 0);
    EXPECT_FAIL(lm_nifti_read(P("trunc.nii"), &v, &err), &err, LM_ERR_FORMAT, "trunc.nii",
                "file holds 452 bytes", "need 1192 (truncated)");
    CHECK_OK(lm_nifti_write(P("trunc.nii.gz"), good, 1, &err), &err);
    struct stat st;
    stat(P("trunc.nii.gz"), &st);
    CHECK(truncate(P("trunc.nii.gz"), st.st_size / 2) == 0);
    EXPECT_FAIL(lm_nifti_read(P("trunc.nii.gz"), &v, &err), &err, LM_ERR_FORMAT, "trunc.nii.gz",
                "truncated or unreadable");
    CHECK(truncate(P("trunc.nii"), 200) == 0);
    EXPECT_FAIL(lm_nifti_read(P("trunc.nii"), &v, &err), &err, LM_ERR_FORMAT, "trunc.nii",
                "not a readable NIfTI-1 file");

    /* a two-file .hdr/.img pair (only the single-file form is read) */
    {
        int d2[8] = {3, 2, 2, 2, 1, 1, 1, 1};
        float z8[8] = {0};
        nifti_image *nim = nifti_make_new_nim(d2, NIFTI_TYPE_FLOAT32, 0);
        nim->data = z8;
        nim->nifti_type = NIFTI_FTYPE_NIFTI1_2;
        nifti_set_filenames(nim, P("pair.hdr"), 0, 1);
        nifti_image_write(nim);
        nim->data = NULL;
        nifti_image_free(nim);
        CHECK(file_exists(P("pair.img")));
        EXPECT_FAIL(lm_nifti_read(P("pair.hdr"), &v, &err), &err, LM_ERR_UNSUPPORTED, "pair.hdr",
                    "not a single-file NIfTI-1 image");
    }

    /* 4D series */
    int d4[8] = {4, 2, 2, 2, 5, 1, 1, 1};
    float f4[40] = {0};
    write_raw(P("series.nii"), NIFTI_TYPE_FLOAT32, d4, f4, 0.0f, 0.0f, NIFTI_UNITS_MM, 0, 0);
    EXPECT_FAIL(lm_nifti_read(P("series.nii"), &v, &err), &err, LM_ERR_UNSUPPORTED, "series.nii",
                "4D image", "dim[4] is 5");

    /* absurd size (header only; the check comes before any allocation) */
    int dh[8] = {3, 32767, 32767, 32767, 1, 1, 1, 1};
    write_raw(P("absurd.nii"), NIFTI_TYPE_FLOAT32, dh, NULL, 0.0f, 0.0f, NIFTI_UNITS_MM, 0, 0);
    EXPECT_FAIL(lm_nifti_read(P("absurd.nii"), &v, &err), &err, LM_ERR_NOMEM, "absurd.nii",
                "32767 x 32767 x 32767", "absurd");

    /* unsupported datatype */
    int d3[8] = {3, 2, 1, 1, 1, 1, 1, 1};
    const uint8_t rgb[6] = {1, 2, 3, 4, 5, 6};
    write_raw(P("rgb.nii"), NIFTI_TYPE_RGB24, d3, rgb, 0.0f, 0.0f, NIFTI_UNITS_MM, 0, 0);
    EXPECT_FAIL(lm_nifti_read(P("rgb.nii"), &v, &err), &err, LM_ERR_UNSUPPORTED, "rgb.nii",
                "RGB24", "not supported");

    /* write-side checks */
    EXPECT_FAIL(lm_nifti_write(P("x.img"), good, 0, &err), &err, LM_ERR_INVALID, "x.img",
                ".nii or .nii.gz");
    int64_t big[3] = {40000, 1, 1};
    lm_volume *wide = lm_volume_new(big, NULL, &err);
    EXPECT_FAIL(lm_nifti_write(P("wide.nii"), wide, 0, &err), &err, LM_ERR_INVALID, "wide.nii",
                "does not fit NIfTI-1");
    lm_volume_free(wide);
    lm_volume_free(good);
    CHECK(stray_temps() == 0);
}

/* nifti_tool, when installed, agrees on the header fields. */
static void test_nifti_tool(void)
{
    if (system("command -v nifti_tool >/dev/null 2>&1") != 0) {
        fprintf(stderr, "SKIP (sub-check): nifti_tool not on PATH\n");
        return;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "nifti_tool -disp_hdr -field dim -field pixdim -field qform_code -field sform_code "
             "-field xyzt_units -field datatype -field srow_x -infiles %s > %s 2>&1",
             P("c.nii.gz"), P("tool.txt"));
    CHECK(system(cmd) == 0);
    char *out = read_bytes(P("tool.txt"), NULL);
    if (out) {
        fprintf(stderr, "  nifti_tool -disp_hdr:\n%s", out);
        CHECK(strstr(out, "3 7 5 3 ") != NULL);
        CHECK(strstr(out, "1.5 2.0 2.5") != NULL);
        CHECK(strstr(out, "0.0 -2.0 0.0 10.0") != NULL);
        CHECK(strstr(out, "qform_code           252      1    1") != NULL);
        CHECK(strstr(out, "sform_code           254      1    1") != NULL);
        CHECK(strstr(out, "xyzt_units           123      1    2") != NULL);
        CHECK(strstr(out, "datatype              70      1    32") != NULL);
    }
    free(out);
}

int main(void)
{
    io_make_dir();
    round_trip("m.nii", 0, 1, 0);
    round_trip("m.nii.gz", 0, 1, 1);
    round_trip("c.nii", 1, 0, 1);
    round_trip("c.nii.gz", 1, 0, 0);
    test_magnitude_of_complex();
    test_datatypes();
    test_bad_inputs();
    test_nifti_tool();
    io_remove_dir();
    return lm_test_finish("test_nifti");
}
