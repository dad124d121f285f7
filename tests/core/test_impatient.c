/* IMPATIENT data directories (lm_io_impatient.h), written here in both
 * header forms as IMPATIENT's datawrite.m and its 0.2 reader define them:
 * values round-trip into Larmor's layout (voxel order from ix/iy/iz, k-space
 * scaled by 1/N and phase-shifted for an offset grid, fm rad/s -> Hz, times,
 * readouts), and broken directories are refused naming the file. */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "io_util.h"
#include "lm_io_impatient.h"

/* Text form (version 1.0), as datawrite.m writes it: coils -1 leaves out
 * coil_number; one section per coil. */
static void write_text_arr(const char *dir, const char *name, const int64_t n[3], int coils, const float *v,
                           int64_t count)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.dat", dir, name);
    FILE *f = fopen(path, "wb");
    fprintf(f, "version = 1.000000\nxDimension = %lld\nyDimension = %lld\nzDimension = %lld\n", (long long)n[0],
            (long long)n[1], (long long)n[2]);
    if (coils > 0)
        fprintf(f, "coil_number = %d\n", coils);
    fprintf(f, "slice_number = 1\nfile_size = %lld\n", (long long)count);
    int nc = coils > 0 ? coils : 1;
    int64_t per = count / nc;
    for (int c = 0; c < nc; c++) {
        fprintf(f, "// Coil No. %d\nBinary_Size = %lld\nBinary:\n", c + 1, (long long)per);
        fwrite(v + c * per, sizeof(float), (size_t)per, f);
    }
    fprintf(f, "EOF\n");
    fclose(f);
}

/* Binary form (version 0.2): float version, int32 size, coils, slices, total. */
static void write_bin_arr(const char *dir, const char *name, int coils, const float *v, int64_t count)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.dat", dir, name);
    FILE *f = fopen(path, "wb");
    float ver = 0.2f;
    int32_t h[4] = {(int32_t)(count / coils), coils, 1, (int32_t)count};
    fwrite(&ver, 4, 1, f);
    fwrite(h, 4, 4, f);
    fwrite(v, sizeof(float), (size_t)count, f);
    fclose(f);
}

enum { NX = 4, NY = 3, NZ = 2, N3 = NX * NY * NZ, P3 = 2, M3 = 10 };

/* 4x3x2 (odd y: the MATLAB writer's positions are half a voxel off), two
 * coils, two readouts of 5 samples; voxels in the writer's order: z
 * fastest, then x, then y. */
static float kx3[M3], ky3[M3], kz3[M3], t3[M3], kr3[M3 * P3], ki3[M3 * P3];
static float ix3[N3], iy3[N3], iz3[N3], sr3[N3 * P3], si3[N3 * P3], fm3[N3];
static int64_t lidx3[N3]; /* Larmor index of each file voxel */

static void make_3d(const char *dir)
{
    const int64_t n[3] = {NX, NY, NZ};
    unsigned seed = 7;
    for (int j = 0; j < M3; j++) {
        kx3[j] = 1.5f * io_rand(&seed);
        ky3[j] = 1.2f * io_rand(&seed);
        kz3[j] = (float)(j < 5 ? -1 : 0);
        t3[j] = (float)(j % 5) * 4e-6f;
    }
    for (int i = 0; i < M3 * P3; i++) {
        kr3[i] = io_rand(&seed);
        ki3[i] = io_rand(&seed);
    }
    int v = 0;
    for (int y = 1; y <= NY; y++)
        for (int x = 1; x <= NX; x++)
            for (int z = 1; z <= NZ; z++, v++) {
                ix3[v] = (float)((x - NX / 2.0 - 1) / NX);
                iy3[v] = (float)((y - NY / 2.0 - 1) / NY);
                iz3[v] = (float)((z - NZ / 2.0 - 1) / NZ);
                lidx3[v] = ((int64_t)(z - 1) * NY + (y - 1)) * NX + (x - 1);
                fm3[v] = (float)(2 * M_PI * (10.0 * v - 50)); /* rad/s */
            }
    for (int i = 0; i < N3 * P3; i++) {
        sr3[i] = io_rand(&seed);
        si3[i] = io_rand(&seed);
    }
    mkdir(dir, 0700);
    write_text_arr(dir, "kx", n, -1, kx3, M3);
    write_text_arr(dir, "ky", n, -1, ky3, M3);
    write_text_arr(dir, "kz", n, -1, kz3, M3);
    write_text_arr(dir, "t", n, -1, t3, M3);
    write_text_arr(dir, "kdata_r", n, P3, kr3, M3 * P3);
    write_text_arr(dir, "kdata_i", n, P3, ki3, M3 * P3);
    write_text_arr(dir, "ix", n, -1, ix3, N3);
    write_text_arr(dir, "iy", n, -1, iy3, N3);
    write_text_arr(dir, "iz", n, -1, iz3, N3);
    write_text_arr(dir, "sensi_r", n, P3, sr3, N3 * P3);
    write_text_arr(dir, "sensi_i", n, P3, si3, N3 * P3);
    write_text_arr(dir, "fm", n, -1, fm3, N3);
    float mask[N3];
    for (int i = 0; i < N3; i++)
        mask[i] = i % 3 != 0;
    write_text_arr(dir, "mask", n, -1, mask, N3);
}

static void test_text_form(void)
{
    lm_error err = {0};
    const char *dir = P("brain3d");
    make_3d(dir);
    CHECK(lm_is_impatient_dir(dir));
    CHECK(!lm_is_impatient_dir(P("nothere")));
    lm_impatient m;
    CHECK_OK(lm_impatient_read(dir, &m, &err), &err);
    if (!m.traj)
        return;
    CHECK(m.text_form == 1);
    CHECK(m.geom.n[0] == NX && m.geom.n[1] == NY && m.geom.n[2] == NZ);
    CHECK(m.geom.basis == LM_BASIS_DIRAC);
    CHECK(m.traj->m == M3 && m.traj->ndim == 3 && m.traj->readout == 5);
    CHECK(m.kdata->ncoils == P3 && m.kdata->m == M3);
    /* y is odd: the writer's grid sits half a voxel below Larmor's */
    CHECK_NEAR(m.shift_vox[0], 0, 1e-6);
    CHECK_NEAR(m.shift_vox[1], -0.5, 1e-6);
    CHECK_NEAR(m.shift_vox[2], 0, 1e-6);
    CHECK(m.mask_voxels == 16);
    for (int j = 0; j < M3; j++) {
        CHECK(m.traj->k[3 * j] == kx3[j] && m.traj->k[3 * j + 1] == ky3[j] && m.traj->k[3 * j + 2] == kz3[j]);
        CHECK(m.traj->t && m.traj->t[j] == t3[j]);
        /* d_Larmor = d_IMPATIENT / N * exp(+i 2 pi k.delta), delta = -0.5/NY along y */
        double arg = 2 * M_PI * ky3[j] * (-0.5 / NY);
        for (int c = 0; c < P3; c++) {
            double complex want = (kr3[c * M3 + j] + I * ki3[c * M3 + j]) / N3 * cexp(I * arg);
            lm_cfloat got = m.kdata->d[c * M3 + j];
            CHECK_NEAR(crealf(got), creal(want), 1e-6);
            CHECK_NEAR(cimagf(got), cimag(want), 1e-6);
        }
    }
    CHECK(m.sens && m.sens->ncoils == P3 && m.sens->n[1] == NY);
    CHECK(m.fieldmap != NULL);
    for (int v = 0; v < N3 && m.sens && m.fieldmap; v++) {
        for (int c = 0; c < P3; c++) {
            lm_cfloat s = m.sens->s[c * N3 + lidx3[v]];
            CHECK(crealf(s) == sr3[c * N3 + v] && cimagf(s) == si3[c * N3 + v]);
        }
        CHECK_NEAR(m.fieldmap[lidx3[v]], 10.0 * v - 50, 1e-4); /* Hz */
    }
    lm_impatient_clear(&m);

    char *text = NULL;
    CHECK_OK(lm_impatient_info(dir, &text, &err), &err);
    CHECK(text && strstr(text, "text headers") && strstr(text, "4x3x2") && strstr(text, "readout 5") &&
          strstr(text, "[-50, 180] Hz") && strstr(text, "16 of 24"));
    free(text);
}

static void test_binary_form(void)
{
    lm_error err = {0};
    const char *dir = P("spiral2d");
    mkdir(dir, 0700);
    enum { n = 4, N = 16, M = 6 };
    float kx[M], ky[M], kz[M] = {0}, t[M], kr[M], ki[M], ix[N], iy[N], iz[N] = {0}, fm[N] = {0};
    for (int j = 0; j < M; j++) {
        kx[j] = (float)j - 2.5f;
        ky[j] = 0.5f * (float)j;
        t[j] = 0.0107f + (float)j * 5e-6f;
        kr[j] = (float)j;
        ki[j] = -1.0f;
    }
    /* y fastest; positions 1/8 voxel above Larmor's, as the sample 64x64x1 */
    for (int x = 0, v = 0; x < n; x++)
        for (int y = 0; y < n; y++, v++) {
            ix[v] = (float)((x - n / 2 + 0.125) / n);
            iy[v] = (float)((y - n / 2 + 0.125) / n);
        }
    write_bin_arr(dir, "kx", 1, kx, M);
    write_bin_arr(dir, "ky", 1, ky, M);
    write_bin_arr(dir, "kz", 1, kz, M);
    write_bin_arr(dir, "t", 1, t, M);
    write_bin_arr(dir, "kdata_r", 1, kr, M);
    write_bin_arr(dir, "kdata_i", 1, ki, M);
    write_bin_arr(dir, "ix", 1, ix, N);
    write_bin_arr(dir, "iy", 1, iy, N);
    write_bin_arr(dir, "iz", 1, iz, N);
    write_bin_arr(dir, "fm", 1, fm, N);
    lm_impatient m;
    CHECK_OK(lm_impatient_read(dir, &m, &err), &err);
    if (!m.traj)
        return;
    CHECK(m.text_form == 0);
    CHECK(m.geom.n[0] == n && m.geom.n[1] == n && m.geom.n[2] == 1);
    CHECK(m.traj->ndim == 2 && m.traj->readout == M);
    CHECK(m.sens == NULL && m.fieldmap == NULL && m.fieldmap_zero == 1 && m.mask_voxels == -1);
    CHECK_NEAR(m.shift_vox[0], 0.125, 1e-6);
    CHECK_NEAR(m.shift_vox[1], 0.125, 1e-6);
    for (int j = 0; j < M; j++) {
        double arg = 2 * M_PI * (kx[j] + ky[j]) * 0.125 / n;
        double complex want = (kr[j] + I * ki[j]) / N * cexp(I * arg);
        CHECK_NEAR(crealf(m.kdata->d[j]), creal(want), 1e-6);
        CHECK_NEAR(cimagf(m.kdata->d[j]), cimag(want), 1e-6);
        CHECK(m.traj->t[j] == t[j]);
    }
    lm_impatient_clear(&m);

    /* Refusals on copies of this directory, each naming the file. */
    write_bin_arr(dir, "kdata_i", 1, ki, M - 1);
    EXPECT_FAIL(lm_impatient_read(dir, &m, &err), &err, LM_ERR_FORMAT, "kdata_i.dat", "5 values");
    write_bin_arr(dir, "kdata_i", 1, ki, M);
    char path[512];
    snprintf(path, sizeof path, "%s/kx.dat", dir);
    size_t len = 0;
    char *bytes = read_bytes(path, &len);
    write_bytes(path, bytes, len - 3); /* truncated */
    EXPECT_FAIL(lm_impatient_read(dir, &m, &err), &err, LM_ERR_FORMAT, "kx.dat", "truncated");
    write_bytes(path, bytes, len);
    free(bytes);
    kz[2] = 1;
    write_bin_arr(dir, "kz", 1, kz, M);
    EXPECT_FAIL(lm_impatient_read(dir, &m, &err), &err, LM_ERR_FORMAT, "kz.dat", "z = 1");
    kz[2] = 0;
    write_bin_arr(dir, "kz", 1, kz, M);
    t[4] = NAN;
    write_bin_arr(dir, "t", 1, t, M);
    EXPECT_FAIL(lm_impatient_read(dir, &m, &err), &err, LM_ERR_FORMAT, "t.dat", "NaN");
    t[4] = 2.0f; /* not seconds */
    write_bin_arr(dir, "t", 1, t, M);
    EXPECT_FAIL(lm_impatient_read(dir, &m, &err), &err, LM_ERR_FORMAT, "t.dat", "seconds");
    t[4] = 0.0107f + 4 * 5e-6f;
    write_bin_arr(dir, "t", 1, t, M);
    const float iy3v = iy[3];
    iy[3] = iy[2]; /* a voxel twice */
    write_bin_arr(dir, "iy", 1, iy, N);
    EXPECT_FAIL(lm_impatient_read(dir, &m, &err), &err, LM_ERR_FORMAT, "spiral2d", "appears twice");
    iy[3] = iy3v + 0.1f; /* off the grid: a fifth position */
    write_bin_arr(dir, "iy", 1, iy, N);
    EXPECT_FAIL(lm_impatient_read(dir, &m, &err), &err, LM_ERR_FORMAT, "spiral2d", "distinct positions");
    iy[3] = iy3v;
    write_bin_arr(dir, "iy", 1, iy, N);
    fm[0] = 1; /* a field map without times */
    write_bin_arr(dir, "fm", 1, fm, N);
    snprintf(path, sizeof path, "%s/t.dat", dir);
    remove(path);
    EXPECT_FAIL(lm_impatient_read(dir, &m, &err), &err, LM_ERR_FORMAT, "fm.dat", "t.dat");
    snprintf(path, sizeof path, "%s/kdata_r.dat", dir);
    remove(path);
    EXPECT_FAIL(lm_impatient_read(dir, &m, &err), &err, LM_ERR_IO, "kdata_r.dat", "cannot open");
    write_text(path, "garbage");
    EXPECT_FAIL(lm_impatient_read(dir, &m, &err), &err, LM_ERR_FORMAT, "kdata_r.dat", "not an IMPATIENT file");
}

/* Interleaves of different lengths (samples removed, or a scanner's
 * variable-length spirals): readouts start where the times restart, each of
 * its own length. Before, the reader took the whole list for one readout
 * and refused the first restart ("times decrease within readout 0"). */
static void test_unequal_readouts(void)
{
    lm_error err = {0};
    const char *dir = P("unequal");
    mkdir(dir, 0700);
    enum { n = 4, N = 16, M = 14 };
    static const int lens[3] = {5, 3, 6};
    float kx[M], ky[M], kz[M] = {0}, t[M], kr[M], ki[M], ix[N], iy[N], iz[N] = {0}, fm[N];
    for (int r = 0, j = 0; r < 3; r++)
        for (int s = 0; s < lens[r]; s++, j++) {
            kx[j] = (float)s - 2.0f;
            ky[j] = 0.5f * (float)r;
            t[j] = (float)s * 5e-6f; /* every interleave from the echo */
            kr[j] = (float)j;
            ki[j] = 1.0f;
        }
    for (int x = 0, v = 0; x < n; x++)
        for (int y = 0; y < n; y++, v++) {
            ix[v] = (float)(x - n / 2) / n;
            iy[v] = (float)(y - n / 2) / n;
            fm[v] = (float)(2 * M_PI * 10.0 * v); /* rad/s */
        }
    write_bin_arr(dir, "kx", 1, kx, M);
    write_bin_arr(dir, "ky", 1, ky, M);
    write_bin_arr(dir, "kz", 1, kz, M);
    write_bin_arr(dir, "t", 1, t, M);
    write_bin_arr(dir, "kdata_r", 1, kr, M);
    write_bin_arr(dir, "kdata_i", 1, ki, M);
    write_bin_arr(dir, "ix", 1, ix, N);
    write_bin_arr(dir, "iy", 1, iy, N);
    write_bin_arr(dir, "iz", 1, iz, N);
    write_bin_arr(dir, "fm", 1, fm, N);
    lm_impatient m;
    CHECK_OK(lm_impatient_read(dir, &m, &err), &err);
    if (!m.traj)
        return;
    CHECK(m.traj->m == M && m.traj->readout == 0);
    CHECK(m.readouts == 3 && m.readout_min == 3 && m.readout_max == 6);
    for (int j = 0; j < M; j++)
        CHECK(m.traj->t && m.traj->t[j] == t[j]);
    CHECK(m.fieldmap != NULL);
    if (m.fieldmap)
        CHECK_NEAR(m.fieldmap[5], 50.0, 1e-3); /* voxel (1, 1) is file voxel 5 (y fastest) */
    lm_impatient_clear(&m);
    char *text = NULL;
    CHECK_OK(lm_impatient_info(dir, &text, &err), &err);
    CHECK_MSG(text && strstr(text, "3 readouts of 3 to 6 samples"), "info: %s", text ? text : "(none)");
    free(text);
}

static void test_text_errors(void)
{
    lm_error err = {0};
    const char *dir = P("brain3d");
    lm_impatient m;
    const int64_t n[3] = {NX, NY, NZ}, wrong[3] = {NX, NY, 3};
    /* Coil maps for another coil count. */
    write_text_arr(dir, "sensi_r", n, 1, sr3, N3);
    EXPECT_FAIL(lm_impatient_read(dir, &m, &err), &err, LM_ERR_FORMAT, "sensi_r.dat", "2 coils");
    write_text_arr(dir, "sensi_r", n, P3, sr3, N3 * P3);
    /* Only one half of the maps. */
    char path[512];
    snprintf(path, sizeof path, "%s/sensi_i.dat", dir);
    remove(path);
    EXPECT_FAIL(lm_impatient_read(dir, &m, &err), &err, LM_ERR_IO, "sensi_i.dat", "missing");
    write_text_arr(dir, "sensi_i", n, P3, si3, N3 * P3);
    /* A header matrix that disagrees. */
    write_text_arr(dir, "fm", wrong, -1, fm3, N3);
    EXPECT_FAIL(lm_impatient_read(dir, &m, &err), &err, LM_ERR_FORMAT, "fm.dat", "4x3x3");
    write_text_arr(dir, "fm", n, -1, fm3, N3);
    /* Positions off the header's grid. */
    float bad[N3];
    memcpy(bad, iz3, sizeof bad);
    bad[5] = 0.1f;
    write_text_arr(dir, "iz", n, -1, bad, N3);
    EXPECT_FAIL(lm_impatient_read(dir, &m, &err), &err, LM_ERR_FORMAT, "iz.dat", "not a regular grid");
    write_text_arr(dir, "iz", n, -1, iz3, N3);
    /* Sections that do not add up to file_size. */
    snprintf(path, sizeof path, "%s/ky.dat", dir);
    FILE *f = fopen(path, "wb");
    fprintf(f, "version = 1.000000\nfile_size = %d\nBinary_Size = 4\nBinary:\n", M3);
    fwrite(ky3, 4, 4, f);
    fprintf(f, "EOF\n");
    fclose(f);
    EXPECT_FAIL(lm_impatient_read(dir, &m, &err), &err, LM_ERR_FORMAT, "ky.dat", "file_size");
    /* A Binary_Size with no data after it. */
    f = fopen(path, "wb");
    fprintf(f, "version = 1.000000\nfile_size = %d\nBinary_Size = %d\nBinary:\n", M3, M3);
    fwrite(ky3, 4, 3, f);
    fclose(f);
    EXPECT_FAIL(lm_impatient_read(dir, &m, &err), &err, LM_ERR_FORMAT, "ky.dat", "truncated");
    write_text_arr(dir, "ky", n, -1, ky3, M3);
    CHECK_OK(lm_impatient_read(dir, &m, &err), &err);
    lm_impatient_clear(&m);
}

int main(void)
{
    io_make_dir();
    test_text_form();
    test_binary_form();
    test_unequal_readouts();
    test_text_errors();
    io_remove_dir();
    return lm_test_finish("impatient");
}
