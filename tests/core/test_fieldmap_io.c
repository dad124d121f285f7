/* Field maps and sample times (lm_io_fieldmap.h): a NIfTI map at another
 * matrix and FOV is resampled onto the reconstruction grid (a field linear
 * in mm comes out exact), one on the matrix is taken as is, a .cfl must be
 * on the matrix; NaN, wrong sizes and bad times are refused naming the file. */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "io_util.h"
#include "lm_io.h"
#include "lm_io_fieldmap.h"

/* Hz, linear in scanner mm: trilinear interpolation reproduces it. */
static double field_hz(const double p[3]) { return 3.0 * p[0] - 2.0 * p[1] + 0.5 * p[2] + 20.0; }

static void world(const double a[4][4], double i, double j, double k, double p[3])
{
    for (int r = 0; r < 3; r++)
        p[r] = a[r][0] * i + a[r][1] * j + a[r][2] * k + a[r][3];
}

static lm_volume *linear_map(const int64_t dims[3], const double vox[3])
{
    lm_volume *v = lm_volume_new(dims, vox, NULL);
    for (int64_t k = 0; k < dims[2]; k++)
        for (int64_t j = 0; j < dims[1]; j++)
            for (int64_t i = 0; i < dims[0]; i++) {
                double p[3];
                world(v->affine, (double)i, (double)j, (double)k, p);
                v->data[(k * dims[1] + j) * dims[0] + i] = (float)field_hz(p);
            }
    return v;
}

static void write_cfl_real(const char *path, int nd, const int64_t *dims, const float *v)
{
    int64_t n = 1;
    for (int a = 0; a < nd; a++)
        n *= dims[a];
    lm_cfloat *c = calloc((size_t)n, sizeof *c);
    for (int64_t i = 0; i < n; i++)
        c[i] = v[i];
    lm_error err = {0};
    if (lm_cfl_write(path, nd, dims, c, &err) != LM_OK) {
        fprintf(stderr, "fixture %s: %s\n", path, err.msg);
        exit(1);
    }
    free(c);
}

static void test_fieldmap(void)
{
    lm_error err = {0};
    lm_geom g;
    lm_geom_init(&g, 24, 20, 8, 0);
    g.fov_mm[0] = 240, g.fov_mm[1] = 200, g.fov_mm[2] = 64; /* non-cubic matrix and FOV */
    const int64_t N = lm_geom_voxels(&g);
    double aff[4][4];
    lm_geom_affine(&g, aff);
    CHECK_NEAR(aff[0][0], 10.0, 0);
    CHECK_NEAR(aff[2][2], 8.0, 0);
    CHECK_NEAR(aff[1][3], -100.0, 1e-12); /* voxel n/2 at 0 mm */

    /* A larger, finer map covering the grid: resampled, exact for a linear field. */
    const int64_t sd[3] = {40, 36, 12};
    const double sv[3] = {7.0, 6.5, 6.0};
    lm_volume *src = linear_map(sd, sv);
    CHECK_OK(lm_nifti_write(P("fine.nii.gz"), src, 1, &err), &err);
    float *f = NULL;
    int resampled = -1;
    CHECK_OK(lm_load_fieldmap(P("fine.nii.gz"), &g, NULL, &f, &resampled, &err), &err);
    CHECK(resampled == 1);
    double worst = 0;
    for (int64_t k = 0; f && k < g.n[2]; k++)
        for (int64_t j = 0; j < g.n[1]; j++)
            for (int64_t i = 0; i < g.n[0]; i++) {
                double p[3];
                world(aff, (double)i, (double)j, (double)k, p);
                double d = fabs(f[(k * g.n[1] + j) * g.n[0] + i] - field_hz(p));
                worst = d > worst ? d : worst;
            }
    CHECK_MSG(worst < 1e-3, "resampled linear field off by %g Hz", worst);
    free(f);
    lm_volume_free(src);

    /* On the matrix: taken as is, even with another voxel size. */
    const int64_t same[3] = {24, 20, 8};
    const double odd_vox[3] = {1, 1, 1};
    src = linear_map(same, odd_vox);
    CHECK_OK(lm_nifti_write(P("same.nii"), src, 1, &err), &err);
    f = NULL;
    CHECK_OK(lm_load_fieldmap(P("same.nii"), &g, NULL, &f, &resampled, &err), &err);
    CHECK(resampled == 0);
    int equal = f != NULL;
    for (int64_t i = 0; f && i < N; i++)
        equal &= f[i] == crealf(src->data[i]);
    CHECK(equal);
    free(f);

    /* .cfl on the matrix: the real part. */
    float *vals = malloc((size_t)N * sizeof *vals);
    for (int64_t i = 0; i < N; i++)
        vals[i] = (float)i * 0.5f - 30;
    write_cfl_real(P("fm"), 3, same, vals);
    f = NULL;
    CHECK_OK(lm_load_fieldmap(P("fm.cfl"), &g, NULL, &f, NULL, &err), &err);
    CHECK(f && f[7] == vals[7] && f[N - 1] == vals[N - 1]);
    free(f);

    /* Refusals, each naming the file. */
    const int64_t wrong[3] = {24, 20, 4};
    write_cfl_real(P("small"), 3, wrong, vals);
    EXPECT_FAIL(lm_load_fieldmap(P("small.cfl"), &g, NULL, &f, NULL, &err), &err, LM_ERR_FORMAT, "small.cfl",
                "24x20x4", "24x20x8");
    CHECK(f == NULL);
    vals[17] = NAN;
    write_cfl_real(P("nan"), 3, same, vals);
    EXPECT_FAIL(lm_load_fieldmap(P("nan.cfl"), &g, NULL, &f, NULL, &err), &err, LM_ERR_FORMAT, "nan.cfl",
                "element 17", "NaN");
    src->data[5] = INFINITY;
    CHECK_OK(lm_nifti_write(P("inf.nii"), src, 1, &err), &err);
    EXPECT_FAIL(lm_load_fieldmap(P("inf.nii"), &g, NULL, &f, NULL, &err), &err, LM_ERR_FORMAT, "inf.nii",
                "element 5", "infinite");
    EXPECT_FAIL(lm_load_fieldmap(P("nothere.nii.gz"), &g, NULL, &f, NULL, &err), &err, LM_ERR_IO, "nothere.nii.gz");
    EXPECT_FAIL(lm_load_fieldmap(P("fm.txt"), &g, NULL, &f, NULL, &err), &err, LM_ERR_FORMAT, "fm.txt");
    free(vals);
    lm_volume_free(src);

    char *text = NULL;
    CHECK_OK(lm_fieldmap_info(P("fm.cfl"), &text, &err), &err);
    CHECK(text && strstr(text, "24x20x8") && strstr(text, "[-30, "));
    free(text);
}

static void test_times(void)
{
    lm_error err = {0};
    /* 3 readouts of 5 samples: 2 us dwell, echo at sample 1 */
    lm_traj *t = lm_traj_new(15, 2, &err);
    t->readout = 5;
    float v[15];
    for (int i = 0; i < 15; i++)
        v[i] = (float)((i % 5) - 1) * 2e-6f;
    const int64_t d[3] = {1, 5, 3};
    write_cfl_real(P("times"), 3, d, v);
    CHECK_OK(lm_load_times(P("times.cfl"), t, &err), &err);
    CHECK(t->t && t->t[0] == v[0] && t->t[14] == v[14] && t->t[6] == 0);
    char *text = NULL;
    CHECK_OK(lm_times_info(P("times.cfl"), &text, &err), &err);
    CHECK(text && strstr(text, "15 sample times, 3 readouts of 5"));
    free(text);
    /* By its base, in a folder whose name has a dot (.cache, .devrun): the
     * dot is not the file's extension (it was refused as "must be a .cfl"). */
    CHECK(mkdir(P(".dotted"), 0700) == 0);
    write_cfl_real(P(".dotted/times"), 3, d, v);
    CHECK_OK(lm_load_times(P(".dotted/times"), t, &err), &err);
    CHECK(t->t && t->t[14] == v[14]);
    CHECK(lm_cfl_is_base("a/.b/times") && lm_cfl_is_base("times") && lm_cfl_is_base("x.y/.hidden"));
    CHECK(!lm_cfl_is_base("a/.b/times.cfl") && !lm_cfl_is_base("t.nii"));

    /* Wrong length. */
    const int64_t d14[3] = {1, 7, 2};
    write_cfl_real(P("t14"), 3, d14, v);
    EXPECT_FAIL(lm_load_times(P("t14.cfl"), t, &err), &err, LM_ERR_FORMAT, "t14.cfl", "14 sample times", "15");
    /* Decreasing within a readout (samples 2 -> 3 of the second). */
    float bad[15];
    memcpy(bad, v, sizeof bad);
    bad[8] = bad[7] - 1e-6f;
    write_cfl_real(P("down"), 3, d, bad);
    EXPECT_FAIL(lm_load_times(P("down.cfl"), t, &err), &err, LM_ERR_FORMAT, "down.cfl", "decrease",
                "readout 1");
    /* Restarting at a readout boundary is fine (sample 5 < sample 4). */
    CHECK(v[5] < v[4]);
    /* NaN, infinite, milliseconds. */
    memcpy(bad, v, sizeof bad);
    bad[3] = NAN;
    write_cfl_real(P("tnan"), 3, d, bad);
    EXPECT_FAIL(lm_load_times(P("tnan.cfl"), t, &err), &err, LM_ERR_FORMAT, "tnan.cfl", "element 3", "NaN");
    bad[3] = -INFINITY;
    write_cfl_real(P("tinf"), 3, d, bad);
    EXPECT_FAIL(lm_load_times(P("tinf.cfl"), t, &err), &err, LM_ERR_FORMAT, "tinf.cfl", "infinite");
    for (int i = 0; i < 15; i++)
        bad[i] = (float)(i % 5) * 2.0f; /* ms */
    write_cfl_real(P("tms"), 3, d, bad);
    EXPECT_FAIL(lm_load_times(P("tms.cfl"), t, &err), &err, LM_ERR_FORMAT, "tms.cfl", "seconds");
    const int64_t d2[3] = {2, 5, 3};
    float two[30] = {0};
    write_cfl_real(P("t2"), 3, d2, two);
    EXPECT_FAIL(lm_load_times(P("t2.cfl"), t, &err), &err, LM_ERR_FORMAT, "t2.cfl", "30 sample times");
    EXPECT_FAIL(lm_load_times(P("t.nii"), t, &err), &err, LM_ERR_FORMAT, "t.nii", ".cfl");
    /* A refused file leaves the times already loaded alone. */
    CHECK(t->t && t->t[14] == v[14]);

    /* Unknown readout: the file's samples dimension is the readout. */
    free(t->t);
    t->t = NULL;
    t->readout = 0;
    CHECK_OK(lm_load_times(P("times.cfl"), t, &err), &err);
    CHECK(lm_check_times(bad, 15, 0, "x", &err) == LM_ERR_FORMAT);
    lm_traj_free(t);
}

int main(void)
{
    io_make_dir();
    test_fieldmap();
    test_times();
    io_remove_dir();
    return lm_test_finish("fieldmap");
}
