/* lm_recon_opts.fallback (issue 14) where CI runs it, without a GPU: a GPU
 * variant that cannot run here falls back to its CPU twin with
 * LM_FALLBACK_CPU and gives that twin's image bit for bit (same code, same
 * inputs), with the note; without the option the run fails with the GPU's
 * one-line error and leaves the result zeroed. Cancellation and bad input
 * never fall back. On a machine with a GPU the same checks run with an
 * injected out-of-memory at plan time (lm_gpu_fault_set) instead; the
 * mid-CG and lost-device cases are tests/gpu/test_fallback.c. B32,
 * 10 iterations. */
#include <string.h>

#include "lm_gpu.h"
#include "lm_metrics.h"
#include "lm_recon.h"
#include "lm_test.h"
#include "lm_trajgen.h"

static int have_gpu;

/* Makes the next GPU run fail: here it cannot run at all; on a GPU machine
 * its first device allocation fails. */
static void gpu_will_fail(void)
{
    lm_error err = {0};
    if (have_gpu)
        CHECK_OK(lm_gpu_fault_set("nomem:plan", &err), &err);
}

static lm_recon_opts opts(const char *variant, lm_fallback fb)
{
    lm_recon_opts o;
    lm_recon_opts_init(&o);
    o.variant = variant;
    o.iters = 10;
    o.use_cache = 0;
    o.fallback = fb;
    return o;
}

static int cancel_in_cg(void *user, const lm_progress *p)
{
    (void)user;
    return p->stage == LM_STAGE_CG && p->iter >= 2;
}

static int zeroed(const lm_recon_result *r)
{
    return !r->image && !r->resid_history && !r->fell_back && !r->fallback_variant && !r->fallback_note[0];
}

int main(void)
{
    lm_error err = {0};
    have_gpu = lm_gpu_available(NULL) == LM_OK;
    const lm_problem_def *def = lm_problem_find("B32", &err);
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *truth = NULL;
    CHECK_OK(lm_problem_make(def, &g, &t, &k, &truth, &err), &err);
    if (!t || !k)
        return lm_test_finish("fallback");
    const int64_t nv = lm_geom_voxels(&g);

    /* names and parsing */
    lm_fallback f = LM_FALLBACK_NONE;
    CHECK(lm_fallback_parse("cpu", &f, &err) == LM_OK && f == LM_FALLBACK_CPU);
    CHECK(lm_fallback_parse("gpu", &f, &err) == LM_ERR_INVALID && strstr(err.msg, "none, cpu"));
    CHECK(strcmp(lm_fallback_name(LM_FALLBACK_NONE), "none") == 0);
    CHECK(lm_gpu_fault_set("nomem:somewhere", &err) == LM_ERR_INVALID && strstr(err.msg, "nomem:plan"));
    CHECK(lm_gpu_fault_set(NULL, &err) == LM_OK);
    const lm_variant *gn = lm_variant_find("gpu-nufft", NULL), *gt = lm_variant_find("gpu-tuned", NULL);
    CHECK(gn && strcmp(lm_recon_cpu_twin(gn, &err)->name, "cpu-nufft") == 0);
    const lm_variant *twin = gt ? lm_recon_cpu_twin(gt, &err) : NULL;
    CHECK(twin && (strcmp(twin->name, "cpu-simd") == 0 || strcmp(twin->name, "cpu-sp") == 0));

    /* the CPU twin's own image */
    lm_recon_opts o = opts("cpu-nufft", LM_FALLBACK_NONE);
    lm_recon_result ref;
    CHECK_OK(lm_recon_run(&g, t, k, &o, &ref, &err), &err);

    /* gpu-nufft with --fallback cpu: the twin's image and the note */
    lm_recon_result r;
    o = opts("gpu-nufft", LM_FALLBACK_CPU);
    gpu_will_fail();
    CHECK_OK(lm_recon_run(&g, t, k, &o, &r, &err), &err);
    CHECK(r.fell_back == 1 && r.fallback_variant && strcmp(r.fallback_variant, "cpu-nufft") == 0);
    CHECK_MSG(strstr(r.fallback_note, "gpu-nufft: ") == r.fallback_note &&
                  strstr(r.fallback_note, "; falling back to cpu-nufft") &&
                  strstr(r.fallback_note, have_gpu ? "out of GPU memory" : "not available"),
              "note: %s", r.fallback_note);
    fprintf(stderr, "note: %s\n", r.fallback_note);
    if (r.image && ref.image)
        CHECK_MSG(memcmp(r.image->data, ref.image->data, (size_t)nv * sizeof *r.image->data) == 0 ||
                      lm_rel_error_c(r.image->data, ref.image->data, nv) < 1e-6,
                  "fallback image differs from cpu-nufft's by %.3g", lm_rel_error_c(r.image->data, ref.image->data, nv));
    CHECK(r.iters_done == ref.iters_done);
    lm_recon_result_clear(&r);

    /* a direct GPU variant falls back to the exact CPU sums */
    o = opts("gpu-tuned", LM_FALLBACK_CPU);
    o.iters = 2;
    gpu_will_fail();
    CHECK_OK(lm_recon_run(&g, t, k, &o, &r, &err), &err);
    CHECK(r.fell_back && twin && r.fallback_variant == twin->name);
    lm_recon_result_clear(&r);

    /* without the option: the GPU's one-line error, nothing in the result */
    o = opts("gpu-nufft", LM_FALLBACK_NONE);
    gpu_will_fail();
    lm_code c = lm_recon_run(&g, t, k, &o, &r, &err);
    CHECK_MSG(c == (have_gpu ? LM_ERR_NOMEM : LM_ERR_UNSUPPORTED) && strstr(err.msg, have_gpu ? "GPU memory" : "gpu-nufft") &&
                  !strchr(err.msg, '\n'),
              "no fallback: %s (%s)", lm_code_name(c), err.msg);
    CHECK(zeroed(&r));

    /* cancellation and bad input never fall back (nor say they did) */
    o = opts("gpu-nufft", LM_FALLBACK_CPU);
    o.progress = cancel_in_cg;
    if (!have_gpu) { /* on a GPU the GPU run itself is cancelled: no failure to fall back from */
        c = lm_recon_run(&g, t, k, &o, &r, &err);
        CHECK_MSG(c == LM_ERR_CANCELLED && !strstr(err.msg, "falling back"), "cancel: %s (%s)", lm_code_name(c), err.msg);
        CHECK(zeroed(&r));
    } else {
        c = lm_recon_run(&g, t, k, &o, &r, &err);
        CHECK_MSG(c == LM_ERR_CANCELLED, "cancel: %s (%s)", lm_code_name(c), err.msg);
        CHECK(zeroed(&r));
    }
    o = opts("gpu-nufft", LM_FALLBACK_CPU);
    o.lambda = -1;
    c = lm_recon_run(&g, t, k, &o, &r, &err);
    CHECK_MSG(c == LM_ERR_INVALID && strstr(err.msg, "lambda") && !strstr(err.msg, "falling back"), "bad input: %s",
              err.msg);
    CHECK(zeroed(&r));

    /* gridding does not use the variant: nothing to fall back from */
    o = opts("gpu-nufft", LM_FALLBACK_CPU);
    o.method = LM_METHOD_GRID_LINEAR;
    CHECK_OK(lm_recon_run(&g, t, k, &o, &r, &err), &err);
    CHECK(!r.fell_back && !r.fallback_note[0]);
    lm_recon_result_clear(&r);

    CHECK(lm_gpu_fault_set(NULL, &err) == LM_OK);
    lm_recon_result_clear(&ref);
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_volume_free(truth);
    lm_gpu_release();
    return lm_test_finish("fallback");
}
