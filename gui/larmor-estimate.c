#include "larmor-estimate.h"

#include <math.h>
#include <string.h>

#include "larmor-util.h"
#include "larmor.h"

/* Rough single-machine rates: a scalar core does ~0.01-0.02 Gpairs/s of
 * the direct sum (sin and cos per pair), the vectorised all-core kernel
 * about ten times that, a GPU kernel hundreds of times (the paper's 5.x
 * steps). The NUFFT's rate is an equivalent: its cost hardly grows with N. */
double larmor_estimate_nominal_gpairs(const char *variant)
{
    const lm_variant *v = lm_variant_is_auto(variant) ? lm_variant_resolve(variant, NULL) : lm_variant_find(variant, NULL);
    const char *name = v ? v->name : variant ? variant : "";
    if (strcmp(name, "cpu-dp") == 0)
        return 0.01;
    if (strcmp(name, "cpu-sp") == 0)
        return 0.02;
    if (strcmp(name, "cpu-simd") == 0)
        return 0.2;
    if (strcmp(name, "cpu-nufft") == 0)
        return 2;
    if (strcmp(name, "gpu-base") == 0)
        return 2;
    if (g_str_has_prefix(name, "gpu-"))
        return 50;
    return 0.1;
}

/* Floating-point rate for the FFTs of the CG (GFLOPS): CPU or GPU. */
static double fft_gflops(const char *variant)
{
    const lm_variant *v = lm_variant_is_auto(variant) ? lm_variant_resolve(variant, NULL) : lm_variant_find(variant, NULL);
    const char *name = v ? v->name : variant ? variant : "";
    return g_str_has_prefix(name, "gpu-") ? 300 : 3;
}

void larmor_estimate_compute(const int64_t n[3], int64_t m, int coils, const LarmorReconParams *p,
                             double measured_gpairs, LarmorEstimate *e)
{
    memset(e, 0, sizeof *e);
    const double N = (double)n[0] * (double)n[1] * (double)n[2], M = (double)m, C = MAX(coils, 1);
    const double cf = 8; /* bytes per complex float */
    gboolean cg = p->method == LM_METHOD_CG;
    e->q = cg ? 2 * 8 * N * cf : 0;
    e->work = cg ? 2 * 8 * N * cf : 8 * N * cf;
    e->vectors = (cg ? 5 : 1) * N * cf;
    e->coils = C > 1 ? 2 * C * N * cf : 0;
    e->kdata = M * C * cf + M * 12;
    e->total = e->q + e->work + e->vectors + e->coils + e->kdata;

    e->measured = isfinite(measured_gpairs) && measured_gpairs > 0;
    e->gpairs = e->measured ? measured_gpairs : larmor_estimate_nominal_gpairs(p->variant);
    const double rate = e->gpairs * 1e9;
    if (cg) {
        e->t_q = M * 8 * N / rate;          /* Q: every sample against the 8N points of the 2x grid */
        e->t_fhd = M * N * C / rate;        /* F^H d per coil */
        /* Each iteration: per coil two FFTs of 8N points (5 n log2 n flops each). */
        double fft = 5 * 8 * N * log2(MAX(8 * N, 2));
        e->t_cg = p->iters * C * 2 * fft / (fft_gflops(p->variant) * 1e9);
    } else {
        /* Gridding: a few dozen kernel taps per sample, one FFT. */
        e->t_fhd = (M * C * 64 * 10 + 5 * 8 * N * log2(MAX(8 * N, 2))) / 3e9;
    }
    e->total_s = e->t_q + e->t_fhd + e->t_cg;
}

char *larmor_format_bytes(double b)
{
    if (b >= 1e9)
        return g_strdup_printf("%.1f GB", b / 1e9);
    if (b >= 1e6)
        return g_strdup_printf("%.0f MB", b / 1e6);
    return g_strdup_printf("%.0f kB", b / 1e3);
}

char *larmor_estimate_text(const LarmorEstimate *e, const LarmorReconParams *p)
{
    char *mem = larmor_format_bytes(e->total), *t = larmor_format_seconds(e->total_s);
    char *q = larmor_format_bytes(e->q);
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "Estimate: memory ≈ %s", mem);
    if (p->method == LM_METHOD_CG)
        g_string_append_printf(s, " (Q %s)", q);
    g_string_append_printf(s, ", time ≈ %s", t);
    if (p->method == LM_METHOD_CG) {
        char *tq = larmor_format_seconds(e->t_q), *tf = larmor_format_seconds(e->t_fhd),
             *tc = larmor_format_seconds(e->t_cg);
        g_string_append_printf(s, " (Q %s unless cached, Fᴴd %s, %d iterations %s) at %.2g Gpairs/s (%s)", tq, tf,
                               p->iters, tc, e->gpairs, e->measured ? "measured here" : "nominal");
        g_free(tq);
        g_free(tf);
        g_free(tc);
    }
    g_free(mem);
    g_free(t);
    g_free(q);
    return g_string_free(s, FALSE);
}
