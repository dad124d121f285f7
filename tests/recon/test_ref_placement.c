/* Where an anatomical reference lands (issue 26, defect 2). A BART cfl
 * stores no geometry: with the reconstruction's matrix it lies on the
 * reconstruction's grid, so the same reference as cfl and as NIfTI gives
 * the same image (registered or not). A registration that ends with the
 * reference barely covering the image, or sharing next to no information
 * with it, is refused with a message naming --no-register; never used. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lm_io.h"
#include "lm_lesion.h"
#include "lm_recon.h"
#include "lm_register.h"
#include "lm_test.h"

static lm_geom g;
static lm_traj *traj;
static lm_kdata *kd;

/* The anatomical reconstruction with ref; its image (caller frees) or NULL
 * with err set. */
static lm_volume *recon(const lm_volume *ref, int do_register, lm_recon_result *keep, lm_error *err)
{
    lm_recon_opts o;
    lm_recon_opts_init(&o);
    o.reg = LM_REG_ANATOMICAL;
    o.lambda = 100;
    o.iters = 20;
    o.ref = ref;
    o.ref_register = do_register;
    o.use_cache = 0;
    lm_recon_result r = {0};
    lm_volume *img = NULL;
    if (lm_recon_run(&g, traj, kd, &o, &r, err) == LM_OK) {
        img = r.image;
        r.image = NULL;
    }
    if (keep)
        *keep = r;
    else
        lm_recon_result_clear(&r);
    return img;
}

static double rel_diff(const lm_volume *a, const lm_volume *b)
{
    double num = 0, den = 0;
    for (int64_t j = 0; j < lm_volume_count(a); j++) {
        num += pow(cabsf(a->data[j] - b->data[j]), 2);
        den += pow(cabsf(b->data[j]), 2);
    }
    return den > 0 ? sqrt(num / den) : INFINITY;
}

static void expect_refused(const char *label, const lm_volume *ref)
{
    lm_error err = {0};
    lm_recon_result r = {0};
    lm_volume *img = recon(ref, 1, &r, &err);
    fprintf(stderr, "%s: %s\n", label, img ? "accepted" : err.msg);
    CHECK_MSG(img == NULL, "%s: a failed registration was used (MI %.4f nats)", label, r.ref_mi_end);
    CHECK_MSG(err.code == LM_ERR_INVALID && strstr(err.msg, "registration failed") && strstr(err.msg, "--no-register")
              && strstr(err.msg, "NIfTI"), "%s: %s", label, err.msg);
    lm_volume_free(img);
    lm_recon_result_clear(&r);
}

int main(void)
{
    lm_error err = {0};
    const lm_problem_def def = {.name = "B32n-lesion", .n = 32, .m = 4447, .readout = 16, .noise = 0.05, .coils = 1};
    lm_lesion les;
    lm_lesion_default(&les);
    lm_lesion_opts lo = {.lesion = 1};
    lm_volume *ref = NULL;
    CHECK_OK(lm_lesion_problem(&def, &lo, &les, &g, &traj, &kd, NULL, NULL, &ref, NULL, &err), &err);
    if (!ref)
        return lm_test_finish("ref_placement");

    /* The same reference through a cfl file: no geometry. */
    char dir[] = "/tmp/lm-refplace-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[64];
    snprintf(path, sizeof path, "%s/ref", dir);
    lm_volume *cfl = NULL;
    CHECK_OK(lm_cfl_write_volume(path, ref, &err), &err);
    CHECK_OK(lm_load_volume(path, &cfl, &err), &err);
    char p2[80];
    snprintf(p2, sizeof p2, "%s.cfl", path), unlink(p2);
    snprintf(p2, sizeof p2, "%s.hdr", path), unlink(p2);
    rmdir(dir);
    if (!cfl)
        return lm_test_finish("ref_placement");
    CHECK(cfl->no_geometry);

    /* cfl == NIfTI, with and without registration (1e-4: the same
     * arithmetic on the same placement, up to float rounding). */
    for (int reg = 0; reg <= 1; reg++) {
        lm_volume *a = recon(ref, reg, NULL, &err), *b = recon(cfl, reg, NULL, &err);
        CHECK_MSG(a && b, "%s", err.msg);
        if (a && b) {
            const double d = rel_diff(b, a);
            fprintf(stderr, "%s: cfl reference vs NIfTI: relative difference %.3g\n",
                    reg ? "registered" : "placed", d);
            CHECK_MSG(d < 1e-4, "cfl reference differs from NIfTI by %.3g", d);
        }
        lm_volume_free(a);
        lm_volume_free(b);
    }

    /* Forced failures. The placeholder geometry taken at face value (what
     * cfl references got before): 32 mm of a 240 mm field of view. */
    lm_volume *small = lm_volume_copy(cfl, &err);
    CHECK(small != NULL);
    if (small) {
        small->no_geometry = 0;
        expect_refused("reference 1 mm voxels", small);
    }
    /* Noise with the right geometry: it covers the image but shares no
     * information with it. */
    lm_volume *noise = lm_volume_copy(ref, &err);
    CHECK(noise != NULL);
    if (noise) {
        unsigned s = 12345;
        for (int64_t j = 0; j < lm_volume_count(noise); j++) {
            s = s * 1103515245u + 12345u;
            noise->data[j] = (float)((s >> 8) & 0xffff) / 65536.0f;
        }
        expect_refused("noise reference", noise);
    }
    lm_volume_free(small);
    lm_volume_free(noise);
    lm_volume_free(cfl);
    lm_volume_free(ref);
    lm_traj_free(traj);
    lm_kdata_free(kd);
    return lm_test_finish("ref_placement");
}
