/* larmor-cli recon on a multi-slice 2D ISMRMRD file, end to end: 3 slices
 * (shuffled acquisitions, centres 5 mm apart along z) reconstruct to a
 * 16 x 16 x 3 NIfTI whose affine has the slices' spacing and origin, and
 * each of its slices equals (within float rounding) the reconstruction of
 * a file holding that slice's acquisitions alone; the JSON says "slices":
 * 3; --truth compares the stacked volume; an absent --repetition and a
 * truth of the wrong size fail with one line.
 *   test_mrd_slices LARMOR_CLI */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_config.h"
#include "lm_io.h"
#include "lm_io_ismrmrd.h"
#include "lm_test.h"
#include "mrd_test_util.h"

#if LM_HAVE_ISMRMRD
#include "mrd_slices_craft.h"

static sl_file F;
static char xml[4096];
static const char *cli;

/* Runs larmor-cli with args (stdout to out, stderr to err); exit status. */
static int run(const char *args, const char *out, const char *err)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", cli, args, out, err);
    int st = system(cmd);
    return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static char *slurp(const char *path)
{
    size_t n;
    unsigned char *b = lm_read_bytes(path, &n);
    if (!b)
        return NULL;
    char *s = realloc(b, n + 1);
    if (s)
        s[n] = '\0';
    return s;
}

static int one_line_with(const char *path, const char *needle)
{
    char *s = slurp(path);
    int ok = s && strstr(s, needle) && strchr(s, '\n') == s + strlen(s) - 1;
    if (s)
        fprintf(stderr, "stderr: %s", s);
    free(s);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s LARMOR_CLI\n", argv[0]);
        return 2;
    }
    cli = argv[1];
    lm_tmp_make("mrd-slices-cli");
    setenv("XDG_CACHE_HOME", lm_tmp_path("cache"), 1);
    craft_xml(xml, sizeof xml, SL_N, 1, 240, "radial");
    sl_make(&F, sl_z);
    CHECK(craft_write(lm_tmp_path("multi.h5"), xml, 0, F.acq, F.nacq) == 0);
    /* each slice alone, its acquisitions in the same order */
    for (int s = 0; s < SL_NSL; s++) {
        craft_acq one[SL_NACQ];
        int n = 0;
        for (int i = 0; i < F.nacq; i++)
            if (F.acq[i].head.idx.slice == s)
                one[n++] = F.acq[i];
        char name[32];
        snprintf(name, sizeof name, "single%d.h5", s);
        CHECK(n == SL_NSP && craft_write(lm_tmp_path(name), xml, 0, one, n) == 0);
    }

    const char *opts = "--method cg --variant cpu-dp --iters 8 --lambda 0.01";
    char args[2048];
    snprintf(args, sizeof args, "recon --traj '%s' %s --out '%s' --json", lm_tmp_path("multi.h5"), opts,
             lm_tmp_path("multi.nii"));
    CHECK(run(args, lm_tmp_path("multi.json"), lm_tmp_path("multi.err")) == 0);
    char *js = slurp(lm_tmp_path("multi.json"));
    CHECK(js && strstr(js, "\"slices\": 3") && strstr(js, "\"slice_spacing_mm\": 5,") &&
          strstr(js, "\"repetition\": 0"));
    if (js)
        fprintf(stderr, "%s", js);
    free(js);
    for (int s = 0; s < SL_NSL; s++) {
        snprintf(args, sizeof args, "recon --traj '%s/single%d.h5' %s --out '%s/single%d.nii' --json", lm_tmp_dir, s,
                 opts, lm_tmp_dir, s);
        CHECK(run(args, lm_tmp_path("single.json"), lm_tmp_path("single.err")) == 0);
        js = slurp(lm_tmp_path("single.json"));
        CHECK(js && strstr(js, "\"slices\": 1"));
        free(js);
    }

    lm_volume *v = NULL;
    lm_error e = {0};
    CHECK_OK(lm_nifti_read(lm_tmp_path("multi.nii"), &v, &e), &e);
    if (v) {
        CHECK(v->dims[0] == SL_N && v->dims[1] == SL_N && v->dims[2] == SL_NSL);
        CHECK(fabs(v->voxel_mm[0] - 15) < 1e-5 && fabs(v->voxel_mm[2] - 5) < 1e-5);
        CHECK(fabs(v->affine[2][2] - 5) < 1e-5 && v->affine[0][2] == 0 && v->affine[1][2] == 0);
        /* origin: voxel (8, 8, 0) at the first slice by position, (2, -3, 5) mm LPS */
        CHECK(fabs(v->affine[0][3] - 118) < 1e-4 && fabs(v->affine[1][3] - 123) < 1e-4 &&
              fabs(v->affine[2][3] - 5) < 1e-5);
        /* stacked by position: idx 1 (5 mm), idx 2 (10 mm), idx 0 (15 mm) */
        static const int by_pos[SL_NSL] = {1, 2, 0};
        const int64_t nv = SL_N * SL_N;
        for (int k = 0; k < SL_NSL; k++) {
            char name[32];
            snprintf(name, sizeof name, "single%d.nii", by_pos[k]);
            lm_volume *s = NULL;
            CHECK_OK(lm_nifti_read(lm_tmp_path(name), &s, &e), &e);
            if (!s)
                continue;
            CHECK(s->dims[0] == SL_N && s->dims[1] == SL_N && s->dims[2] == 1);
            double maxv = 0, maxd = 0;
            for (int64_t i = 0; i < nv && s->dims[2] == 1; i++) {
                double a = cabsf(s->data[i]), b = cabsf(v->data[(size_t)k * (size_t)nv + (size_t)i]);
                maxv = fmax(maxv, a);
                maxd = fmax(maxd, fabs(a - b));
            }
            CHECK_MSG(maxv > 0.1 && maxd <= 1e-5 * maxv, "slice %d: max |diff| %g of max %g", k, maxd, maxv);
            /* and the slices differ from each other */
            if (k > 0) {
                double dd = 0;
                for (int64_t i = 0; i < nv; i++)
                    dd = fmax(dd, fabs(cabsf(v->data[(size_t)k * nv + i]) - cabsf(v->data[(size_t)(k - 1) * nv + i])));
                CHECK(dd > 1e-3 * maxv);
            }
            lm_volume_free(s);
        }
    }
    lm_volume_free(v);

    /* --truth on the stacked volume: the same reconstruction, complex */
    snprintf(args, sizeof args, "recon --traj '%s' %s --complex --out '%s'", lm_tmp_path("multi.h5"), opts,
             lm_tmp_path("multi_c.nii"));
    CHECK(run(args, lm_tmp_path("c.out"), lm_tmp_path("c.err")) == 0);
    snprintf(args, sizeof args, "recon --traj '%s' %s --truth '%s' --out '%s' --json", lm_tmp_path("multi.h5"), opts,
             lm_tmp_path("multi_c.nii"), lm_tmp_path("again.nii"));
    CHECK(run(args, lm_tmp_path("truth.json"), lm_tmp_path("truth.err")) == 0);
    js = slurp(lm_tmp_path("truth.json"));
    const char *pe = js ? strstr(js, "\"percent_error\": ") : NULL;
    CHECK_MSG(pe && strtod(pe + 17, NULL) < 1e-3, "truth run: %s", js ? js : "(no output)");
    free(js);
    /* a truth that is one slice */
    snprintf(args, sizeof args, "recon --traj '%s' %s --truth '%s' --out '%s'", lm_tmp_path("multi.h5"), opts,
             lm_tmp_path("single0.nii"), lm_tmp_path("bad.nii"));
    CHECK(run(args, lm_tmp_path("bad.out"), lm_tmp_path("bad.err")) != 0);
    CHECK(one_line_with(lm_tmp_path("bad.err"), "but the 3 slices stack to 16x16x3"));
    /* a repetition the file lacks */
    snprintf(args, sizeof args, "recon --traj '%s' %s --repetition 4 --out '%s'", lm_tmp_path("multi.h5"), opts,
             lm_tmp_path("bad.nii"));
    CHECK(run(args, lm_tmp_path("bad.out"), lm_tmp_path("bad.err")) != 0);
    CHECK(one_line_with(lm_tmp_path("bad.err"), "repetition 4 is not in the file (it holds 1: 0..0)"));
    /* a 3D matrix asked for */
    snprintf(args, sizeof args, "recon --traj '%s' %s --matrix 16x16x4 --out '%s'", lm_tmp_path("multi.h5"), opts,
             lm_tmp_path("bad.nii"));
    CHECK(run(args, lm_tmp_path("bad.out"), lm_tmp_path("bad.err")) != 0);
    CHECK(one_line_with(lm_tmp_path("bad.err"), "3 slices of 2D data but the matrix asked for is 16x16x4"));
    /* coil maps are not taken with several slices */
    snprintf(args, sizeof args, "recon --traj '%s' %s --sens '%s' --out '%s'", lm_tmp_path("multi.h5"), opts,
             lm_tmp_path("multi.nii"), lm_tmp_path("bad.nii"));
    CHECK(run(args, lm_tmp_path("bad.out"), lm_tmp_path("bad.err")) != 0);
    CHECK(one_line_with(lm_tmp_path("bad.err"), "--sens is not supported with multi-slice data"));
    return lm_test_finish("mrd-slices-cli");
}
#else
int main(void)
{
    LM_TEST_SKIP("built without ISMRMRD");
}
#endif
