#include "larmor-estimate.h"

#include <math.h>
#include <string.h>

#include "larmor-recon-task.h"
#include "larmor-util.h"

void larmor_estimate_compute(const int64_t n[3], int64_t m, int coils, const LarmorReconParams *p,
                             gboolean fieldmap, const lm_estimate_rates *rates, LarmorEstimate *e)
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

    /* The time: recon/'s model of the run these settings make. */
    static const float no_map = 0;
    lm_recon_opts o;
    larmor_recon_opts_from_params(p, fieldmap ? &no_map : NULL, &o);
    lm_geom g = { .n = { n[0], n[1], n[2] } };
    lm_estimate_size sz;
    lm_estimate_size_init(&sz, &g, m, coils, &o);
    e->time_ok = lm_estimate_time(&sz, rates, &e->time, NULL) == LM_OK;
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
    char *mem = larmor_format_bytes(e->total), *q = larmor_format_bytes(e->q);
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "Estimate: memory ≈ %s", mem);
    if (p->method == LM_METHOD_CG)
        g_string_append_printf(s, " (Q %s)", q);
    if (e->time_ok) {
        const lm_estimate *t = &e->time;
        char *tt = larmor_format_seconds(t->total_s);
        g_string_append_printf(s, ", time ≈ %s", tt);
        g_free(tt);
        if (p->method == LM_METHOD_CG) {
            char *tq = larmor_format_seconds(t->part_s[LM_EST_Q]), *tf = larmor_format_seconds(t->part_s[LM_EST_FHD]),
                 *tc = larmor_format_seconds(t->part_s[LM_EST_ITER]);
            g_string_append_printf(s, " (Q %s unless cached, Fᴴd %s, %d iterations %s)", tq, tf, p->iters, tc);
            g_free(tq);
            g_free(tf);
            g_free(tc);
        }
        g_string_append_printf(s, t->measured ? "; %s's speed measured here" : "; %s's nominal speed", t->variant);
    }
    g_free(mem);
    g_free(q);
    return g_string_free(s, FALSE);
}
