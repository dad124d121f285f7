/* Cartesian MRD data with 2x readout oversampling, end to end against
 * ismrmrd_recon_cartesian_2d (ismrmrd-tools): larmor-cli recon of
 * `ismrmrd_generate_cartesian_shepp_logan -m 128 -c 8 -C` is 128 x 128 on
 * reconSpace's 300 x 300 mm, and matches the tool's image within 3 % after
 * one least-squares scale (the two scale their FFTs differently). With
 * -a 2 -w 24 (acceleration 2) the default is SENSE, said on stderr and in
 * the JSON, and it is closer to the phantom than --method fft.
 *   test_mrd_oversampling LARMOR_CLI */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_config.h"
#include "lm_io.h"
#include "lm_test.h"
#include "mrd_test_util.h"

#if LM_HAVE_ISMRMRD
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>

static const char *cli;

static int sh(const char *fmt, const char *a, const char *b)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    char full[2700];
    snprintf(full, sizeof full, "cd '%s' && %s", lm_tmp_dir, cmd);
    int st = system(full);
    return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The first image of /dataset/<var> (float or complex float magnitude),
 * x fastest; NULL if absent. */
static float *read_mrd_image(const char *path, const char *var, int *nx, int *ny)
{
    ISMRMRD_Dataset d;
    ISMRMRD_Image im;
    float *out = NULL;
    if (ismrmrd_init_dataset(&d, path, "/dataset") != ISMRMRD_NOERROR || ismrmrd_open_dataset(&d, false) != ISMRMRD_NOERROR)
        return NULL;
    ismrmrd_init_image(&im);
    if (ismrmrd_read_image(&d, var, 0, &im) == ISMRMRD_NOERROR) {
        *nx = im.head.matrix_size[0];
        *ny = im.head.matrix_size[1];
        size_t n = (size_t)*nx * (size_t)*ny;
        out = malloc(n * sizeof *out);
        for (size_t i = 0; out && i < n; i++) {
            if (im.head.data_type == ISMRMRD_FLOAT)
                out[i] = ((const float *)im.data)[i];
            else if (im.head.data_type == ISMRMRD_CXFLOAT)
                out[i] = cabsf(((const complex float *)im.data)[i]);
            else
                out[i] = NAN;
        }
    }
    ismrmrd_cleanup_image(&im);
    /* The generator stores its phantom as an NDArray, not an image. */
    ISMRMRD_NDArray arr;
    ismrmrd_init_ndarray(&arr);
    if (!out && ismrmrd_read_array(&d, var, 0, &arr) == ISMRMRD_NOERROR && arr.ndim >= 2) {
        *nx = (int)arr.dims[0];
        *ny = (int)arr.dims[1];
        size_t n = (size_t)*nx * (size_t)*ny;
        out = malloc(n * sizeof *out);
        for (size_t i = 0; out && i < n; i++) {
            if (arr.data_type == ISMRMRD_FLOAT)
                out[i] = ((const float *)arr.data)[i];
            else if (arr.data_type == ISMRMRD_CXFLOAT)
                out[i] = cabsf(((const complex float *)arr.data)[i]);
            else
                out[i] = NAN;
        }
    }
    ismrmrd_cleanup_ndarray(&arr);
    ismrmrd_close_dataset(&d);
    free(d.filename);
    free(d.groupname);
    return out;
}

/* ||a - s |b| || / ||a|| with the s that minimises it; *scale gets s. */
static double rel_err_scaled(const float *a, const lm_cfloat *bc, size_t n, double *scale)
{
    float *b = malloc(n * sizeof *b);
    if (!b)
        return INFINITY;
    for (size_t i = 0; i < n; i++)
        b[i] = cabsf(bc[i]);
    double ab = 0, bb = 0, aa = 0;
    for (size_t i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        bb += (double)b[i] * b[i];
        aa += (double)a[i] * a[i];
    }
    double s = bb > 0 ? ab / bb : 0, e = 0;
    for (size_t i = 0; i < n; i++) {
        double r = a[i] - s * b[i];
        e += r * r;
    }
    *scale = s;
    free(b);
    return aa > 0 ? sqrt(e / aa) : INFINITY;
}

static lm_volume *recon(const char *in, const char *extra, const char *out)
{
    char args[1024];
    snprintf(args, sizeof args, "--traj %s --out %s %s --json >%s.json 2>%s.err", in, out, extra, out, out);
    if (sh("'%s' recon %s", cli, args) != 0)
        return NULL;
    lm_volume *v = NULL;
    lm_error err;
    lm_error_clear(&err);
    if (lm_load_volume(lm_tmp_path(out), &v, &err) != LM_OK)
        fprintf(stderr, "%s\n", err.msg);
    return v;
}

static int file_has(const char *name, const char *needle)
{
    size_t n;
    unsigned char *b = lm_read_bytes(lm_tmp_path(name), &n);
    if (!b)
        return 0;
    char *s = realloc(b, n + 1);
    s[n] = '\0';
    int ok = strstr(s, needle) != NULL;
    if (!ok)
        fprintf(stderr, "%s: no '%s' in: %s\n", name, needle, s);
    free(s);
    return ok;
}
#endif

int main(int argc, char **argv)
{
#if !LM_HAVE_ISMRMRD
    (void)argc, (void)argv;
    LM_TEST_SKIP("built without libismrmrd");
#else
    if (argc < 2) {
        fprintf(stderr, "usage: %s LARMOR_CLI\n", argv[0]);
        return 2;
    }
    static char cli_abs[4096];
    if (!realpath(argv[1], cli_abs)) {
        perror(argv[1]);
        return 2;
    }
    cli = cli_abs; /* the commands run in the temporary folder */
    if (system("command -v ismrmrd_generate_cartesian_shepp_logan >/dev/null 2>&1 && "
               "command -v ismrmrd_recon_cartesian_2d >/dev/null 2>&1") != 0)
        LM_TEST_SKIP("ismrmrd-tools not installed (apt-get install ismrmrd-tools)");
    unsetenv("LARMOR_MRD_TRAJ_UNITS");
    lm_tmp_make("mrd-os");
    CHECK(sh("ismrmrd_generate_cartesian_shepp_logan -m 128 -c 8 -C -o %s >gen.log 2>&1%s", "sl.h5", "") == 0);
    CHECK(sh("cp sl.h5 %s && ismrmrd_recon_cartesian_2d %s >recon2d.log 2>&1", "ref.h5", "ref.h5") == 0);
    int rx = 0, ry = 0;
    float *ref = read_mrd_image(lm_tmp_path("ref.h5"), "cpp", &rx, &ry);
    CHECK_MSG(ref && rx == 128 && ry == 128, "ismrmrd_recon_cartesian_2d image %d x %d", rx, ry);

    lm_volume *v = recon("sl.h5", "", "x.nii");
    CHECK(v != NULL);
    if (v && ref && rx == 128 && ry == 128) {
        /* reconSpace, not encodedSpace (256 x 128 over 600 mm before) */
        CHECK_MSG(v->dims[0] == 128 && v->dims[1] == 128 && v->dims[2] == 1, "image %lld x %lld x %lld",
                  (long long)v->dims[0], (long long)v->dims[1], (long long)v->dims[2]);
        CHECK_MSG(fabs(v->voxel_mm[0] - 300.0 / 128) < 1e-3 && fabs(v->voxel_mm[1] - 300.0 / 128) < 1e-3,
                  "voxel %g x %g mm", v->voxel_mm[0], v->voxel_mm[1]);
        if (v->dims[0] == 128 && v->dims[1] == 128) {
            double s, e = rel_err_scaled(ref, v->data, 128 * 128, &s);
            fprintf(stderr, "against ismrmrd_recon_cartesian_2d: %.2f %% (scale %g)\n", 100 * e, s);
            CHECK_MSG(e < 0.03, "relative error %.2f %% (tolerance 3 %%)", 100 * e);
        }
        CHECK(file_has("x.nii.json", "\"fft\""));
    }
    lm_volume_free(v);

    /* Accelerated: SENSE by default. */
    CHECK(sh("ismrmrd_generate_cartesian_shepp_logan -m 128 -c 8 -C -a 2 -w 24 -o %s >gen2.log 2>&1%s", "slu.h5",
             "") == 0);
    CHECK(sh("cp slu.h5 %s && ismrmrd_recon_cartesian_2d %s >recon2du.log 2>&1", "refu.h5", "refu.h5") == 0);
    lm_volume *u = recon("slu.h5", "", "u.nii");
    lm_volume *f = recon("slu.h5", "--method fft", "f.nii");
    CHECK(u && f);
    CHECK(file_has("u.nii.err", "--method cg") && file_has("u.nii.err", "acceleration 2"));
    CHECK(file_has("u.nii.json", "\"cg\""));
    CHECK(file_has("f.nii.json", "\"fft\""));
    int px = 0, py = 0;
    float *ph = read_mrd_image(lm_tmp_path("slu.h5"), "phantom", &px, &py);
    if (u && f && ph && px == 128 && py == 128 && u->dims[0] == 128 && f->dims[0] == 128) {
        double su, sf, eu = rel_err_scaled(ph, u->data, 128 * 128, &su), ef = rel_err_scaled(ph, f->data, 128 * 128, &sf);
        fprintf(stderr, "acceleration 2 against the phantom: SENSE %.1f %%, FFT %.1f %%\n", 100 * eu, 100 * ef);
        CHECK_MSG(eu < ef, "SENSE %.3f is not closer to the phantom than the FFT %.3f", eu, ef);
    }
    free(ph);
    lm_volume_free(u);
    lm_volume_free(f);
    free(ref);
    return lm_test_finish("test_mrd_oversampling_cli");
#endif
}
