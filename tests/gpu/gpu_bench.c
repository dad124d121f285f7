/* GPU benchmark: every GPU variant's F^H d and Q on the benchmark problems
 * (lm_problem_make), the GPU CG, and the whole reconstruction.
 *
 *   gpu_bench [--problems B64,B128] [--budget SECONDS] [--out DIR] [--no-tune]
 *             [--variants a,b] [--skip-recon] [--fieldmap]
 *
 * Times: the median of several calls (one when a call takes longer than a
 * few seconds), wall time of the synchronous call ("call") and the device
 * time of the compute between CUDA events ("kernel", no transfers).
 * Reference: the double-precision GPU kernel gpu-dp (exact grid positions,
 * double phase, sin/cos and sums) over every point; for B128's Q (8x the
 * work) over a random subset of 32768 Q-grid points. gpu-dp itself is
 * cross-checked against cpu-dp (lm_ksum_cpu_dp) on 512 random points.
 * A variant whose predicted time exceeds the budget is not run; its time is
 * extrapolated from the smaller problem and marked '*'.
 *
 * --fieldmap: instead, one coil's F^H d of each problem without and with
 * the off-resonance term (lm_ksum_in.t, lm_points.f) for each variant with
 * time_term, and the ratio; error against gpu-dp with the same field map on
 * 8192 random voxels. Times: the problem's own, else a 2.5 ms readout per
 * spoke; field map smooth, up to about 170 Hz. The target: B128
 * with the field map under 0.6 s on an H100 (gpu-tuned or gpu-phasor):
 *   gpu_bench --problems B128 --variants gpu-tuned,gpu-phasor --fieldmap --no-tune */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lm_device_visibility.h"
#include "lm_tuning.h"
#include "gpu_util.h"
#include "lm_metrics.h"
#include "lm_recon.h"
#include "lm_solver.h"
#include "lm_trajgen.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static FILE *g_tsv;
static double g_budget = 20.0;
static int g_skip_recon;

typedef struct timing {
    double call_s, kernel_s;
    int reps, estimated, failed;
    double err;
    lm_gpu_stats last; /* the last run's breakdown */
} timing;

/* Times fn; out must hold n points. prev_s: a prediction (0: none). */
static timing time_variant(const lm_variant *v, const lm_ksum_in *in, const lm_points *p, float *out,
                           double predicted)
{
    timing t;
    memset(&t, 0, sizeof t);
    t.err = NAN;
    if (predicted > g_budget) {
        t.call_s = predicted;
        t.kernel_s = NAN;
        t.estimated = 1;
        return t;
    }
    double calls[9], kern[9];
    int reps = 0;
    lm_error err;
    for (int r = 0; r < 9; r++) {
        gu_poison(out, 2 * p->n);
        lm_error_clear(&err);
        double t0 = now_s();
        lm_code c = lm_ksum_run(v, in, p, out, out + p->n, NULL, &err);
        double dt = now_s() - t0;
        if (c != LM_OK) {
            fprintf(stderr, "%s: %s\n", v->name, err.msg);
            t.failed = 1;
            return t;
        }
        lm_gpu_stats st;
        lm_gpu_last_stats(&st);
        t.last = st;
        if (r == 0 && dt < 2.0)
            continue; /* warm-up: module load, plans, caches */
        calls[reps] = dt;
        kern[reps] = st.kernel_s;
        reps++;
        double want = dt > 3.0 ? 1 : dt > 1.0 ? 3 : 7;
        if (reps >= want)
            break;
    }
    t.reps = reps;
    t.call_s = median(calls, reps);
    t.kernel_s = median(kern, reps);
    return t;
}

/* rel error of out against ref (double), over idx (or all when NULL). */
static double rel_err_idx(const float *out, int64_t n, const double *ref, int64_t nref, const int64_t *idx)
{
    double num = 0, den = 0;
    for (int64_t j = 0; j < nref; j++) {
        int64_t k = idx ? idx[j] : j;
        double ar = out[k], ai = out[n + k];
        if (!isfinite(ar) || !isfinite(ai))
            return NAN;
        double dr = ar - ref[j], di = ai - ref[nref + j];
        num += dr * dr + di * di;
        den += ref[j] * ref[j] + ref[nref + j] * ref[nref + j];
    }
    return sqrt(num / den);
}

static lm_variant g_dp = {"gpu-dp", "double reference", LM_DEVICE_GPU, 0, 0, lm_gpu_available, lm_ksum_gpu_dp, 0, 1};

/* Reference on a subset idx of grid p (explicit points, exact in float
 * since grid positions are short binary fractions here). */
static lm_code ref_subset(const lm_variant *v, const lm_ksum_in *in, const lm_points *p, const int64_t *idx,
                          int64_t cnt, double *ref, lm_error *err)
{
    float *b = malloc((size_t)cnt * 5 * sizeof(float));
    lm_points e;
    memset(&e, 0, sizeof e);
    e.n = cnt;
    e.x = b;
    e.y = b + cnt;
    e.z = b + 2 * cnt;
    for (int64_t j = 0; j < cnt; j++) {
        double x[3];
        lm_points_get(p, idx[j], x);
        b[j] = (float)x[0];
        b[cnt + j] = (float)x[1];
        b[2 * cnt + j] = (float)x[2];
    }
    lm_code c = lm_ksum_run(v, in, &e, b + 3 * cnt, b + 4 * cnt, NULL, err);
    for (int64_t j = 0; c == LM_OK && j < cnt; j++) {
        ref[j] = b[3 * cnt + j];
        ref[cnt + j] = b[4 * cnt + j];
    }
    free(b);
    return c;
}

static int64_t *random_idx(int64_t n, int64_t cnt, uint64_t seed)
{
    int64_t *idx = malloc((size_t)cnt * sizeof *idx);
    gu_seed(seed);
    for (int64_t j = 0; j < cnt; j++)
        idx[j] = (int64_t)(gu_uniform() * (double)n);
    return idx;
}

typedef struct row {
    const char *name;
    timing fhd, q;
} row;

/* --fieldmap: one coil's F^H d without and with the off-resonance term. */
static void run_fieldmap(const char *pname, size_t nvar, const lm_variant **vars)
{
    lm_error err;
    lm_error_clear(&err);
    const lm_problem_def *def = lm_problem_find(pname, &err);
    lm_geom g;
    lm_traj *traj = NULL;
    lm_kdata *kd = NULL;
    if (!def || lm_problem_make(def, &g, &traj, &kd, NULL, &err) != LM_OK) {
        fprintf(stderr, "%s: %s\n", pname, err.msg);
        return;
    }
    const int64_t m = traj->m, N = lm_geom_voxels(&g), ro = traj->readout > 0 ? traj->readout : 64;
    float *k = malloc((size_t)m * 6 * sizeof(float));
    float *kx = k, *ky = k + m, *kz = k + 2 * m, *wr = k + 3 * m, *wi = k + 4 * m, *tm = k + 5 * m;
    for (int64_t i = 0; i < m; i++) {
        kx[i] = traj->k[3 * i];
        ky[i] = traj->k[3 * i + 1];
        kz[i] = traj->k[3 * i + 2];
        const double ph = lm_geom_phi(&g, kx[i], ky[i], kz[i]);
        wr[i] = (float)(ph * crealf(kd->d[i]));
        wi[i] = (float)(ph * cimagf(kd->d[i]));
        tm[i] = traj->t ? traj->t[i] : (float)(2.5e-3 * (double)(i % ro) / (double)ro);
    }
    lm_points pts, ptf;
    lm_points_image_grid(&pts, g.n);
    float *f = malloc((size_t)N * sizeof(float));
    for (int64_t j = 0; j < N; j++) {
        double x[3];
        lm_points_get(&pts, j, x);
        f[j] = (float)(120.0 * sin(2 * M_PI * x[0]) * cos(2 * M_PI * x[1]) + 100.0 * x[2]);
    }
    ptf = pts;
    ptf.f = f;
    lm_ksum_in in = {.m = m, .kx = kx, .ky = ky, .kz = kz, .wr = wr, .wi = wi, .nsets = 1};
    lm_ksum_in in_t = in;
    in_t.t = tm;
    printf("\n== %s field map: %lldx%lldx%lld voxels, %lld samples, one coil's F^H d\n", pname,
           (long long)g.n[0], (long long)g.n[1], (long long)g.n[2], (long long)m);
    /* reference: gpu-dp with the field map on a random subset (explicit points) */
    const int64_t cnt = N < 8192 ? N : 8192;
    int64_t *idx = random_idx(N, cnt, 777);
    float *b = malloc((size_t)cnt * 6 * sizeof(float));
    lm_points e;
    memset(&e, 0, sizeof e);
    e.n = cnt;
    e.x = b;
    e.y = b + cnt;
    e.z = b + 2 * cnt;
    e.f = b + 3 * cnt;
    for (int64_t j = 0; j < cnt; j++) {
        double x[3];
        lm_points_get(&pts, idx[j], x);
        b[j] = (float)x[0];
        b[cnt + j] = (float)x[1];
        b[2 * cnt + j] = (float)x[2];
        b[3 * cnt + j] = f[idx[j]];
    }
    double *ref = malloc((size_t)cnt * 2 * sizeof(double));
    lm_error_clear(&err);
    if (lm_ksum_run(&g_dp, &in_t, &e, b + 4 * cnt, b + 5 * cnt, NULL, &err) != LM_OK) {
        fprintf(stderr, "gpu-dp: %s\n", err.msg);
        exit(1);
    }
    for (int64_t j = 0; j < cnt; j++) {
        ref[j] = b[4 * cnt + j];
        ref[cnt + j] = b[5 * cnt + j];
    }
    float *out = malloc((size_t)N * 2 * sizeof(float));
    const double pairs = (double)N * (double)m;
    for (size_t v = 0; v < nvar; v++) {
        if (!vars[v]->time_term) {
            printf("%-14s no off-resonance term\n", vars[v]->name);
            continue;
        }
        timing t0 = time_variant(vars[v], &in, &pts, out, 0);
        timing t1 = time_variant(vars[v], &in_t, &ptf, out, 0);
        if (t0.failed || t1.failed)
            continue;
        const double er = rel_err_idx(out, N, ref, cnt, idx);
        printf("%-14s without %8.4f s (kernel %8.4f)  with field map %8.4f s (kernel %8.4f, %6.1f Gpairs/s)"
               "  ratio %.3f  rel err vs gpu-dp %.2e\n",
               vars[v]->name, t0.call_s, t0.kernel_s, t1.call_s, t1.kernel_s, pairs / t1.kernel_s * 1e-9,
               t1.call_s / t0.call_s, er);
        fprintf(g_tsv, "%s\t%s\tfhd\t%.6f\t%.6f\t%.3f\t\t%d\t0\n", pname, vars[v]->name, t0.call_s, t0.kernel_s,
                pairs / t0.kernel_s * 1e-9, t0.reps);
        fprintf(g_tsv, "%s\t%s\tfhd-fieldmap\t%.6f\t%.6f\t%.3f\t%.3g\t%d\t0\n", pname, vars[v]->name, t1.call_s,
                t1.kernel_s, pairs / t1.kernel_s * 1e-9, er, t1.reps);
        fflush(stdout);
    }
    free(out);
    free(ref);
    free(b);
    free(idx);
    free(f);
    free(k);
    lm_traj_free(traj);
    lm_kdata_free(kd);
}

static void run_problem(const char *pname, const double *prev_fhd, const double *prev_q, double *my_fhd,
                        double *my_q, size_t nvar, const lm_variant **vars)
{
    lm_error err;
    lm_error_clear(&err);
    const lm_problem_def *def = lm_problem_find(pname, &err);
    if (!def) {
        fprintf(stderr, "%s\n", err.msg);
        return;
    }
    lm_geom g;
    lm_traj *traj = NULL;
    lm_kdata *kd = NULL;
    lm_volume *truth = NULL;
    double t0 = now_s();
    if (lm_problem_make(def, &g, &traj, &kd, &truth, &err) != LM_OK) {
        fprintf(stderr, "%s: %s\n", pname, err.msg);
        return;
    }
    const int64_t m = traj->m, N = lm_geom_voxels(&g);
    printf("\n== %s: %lldx%lldx%lld voxels, %lld samples (made in %.1f s)\n", pname, (long long)g.n[0],
           (long long)g.n[1], (long long)g.n[2], (long long)m, now_s() - t0);
    float *k = malloc((size_t)m * 6 * sizeof(float));
    float *kx = k, *ky = k + m, *kz = k + 2 * m, *wq = k + 3 * m, *wfr = k + 4 * m, *wfi = k + 5 * m;
    for (int64_t i = 0; i < m; i++) {
        kx[i] = traj->k[3 * i];
        ky[i] = traj->k[3 * i + 1];
        kz[i] = traj->k[3 * i + 2];
        double ph = lm_geom_phi(&g, kx[i], ky[i], kz[i]);
        wq[i] = (float)(ph * ph);
        wfr[i] = (float)(ph * crealf(kd->d[i]));
        wfi[i] = (float)(ph * cimagf(kd->d[i]));
    }
    lm_ksum_in in_f = {.m = m, .kx = kx, .ky = ky, .kz = kz, .wr = wfr, .wi = wfi, .nsets = 1};
    lm_ksum_in in_q = {.m = m, .kx = kx, .ky = ky, .kz = kz, .wr = wq, .nsets = 1};
    lm_points pf, pq;
    lm_points_image_grid(&pf, g.n);
    lm_points_q_grid(&pq, g.n);
    const int64_t NQ = pq.n;
    const double pairs_f = (double)N * (double)m, pairs_q = (double)NQ * (double)m;

    /* references */
    double *ref_f = malloc((size_t)N * 2 * sizeof(double));
    float *of = malloc((size_t)N * 2 * sizeof(float)), *oq = malloc((size_t)NQ * 2 * sizeof(float));
    t0 = now_s();
    lm_error_clear(&err);
    if (lm_ksum_run(&g_dp, &in_f, &pf, of, of + N, NULL, &err) != LM_OK) {
        fprintf(stderr, "gpu-dp: %s\n", err.msg);
        exit(1);
    }
    for (int64_t j = 0; j < 2 * N; j++)
        ref_f[j] = of[j];
    printf("reference F^H d: gpu-dp over all %lld voxels, %.2f s\n", (long long)N, now_s() - t0);
    const int64_t qsub = NQ <= ((int64_t)1 << 21) ? NQ : 32768;
    int64_t *qidx = qsub == NQ ? NULL : random_idx(NQ, qsub, 4242);
    double *ref_q = malloc((size_t)qsub * 2 * sizeof(double));
    t0 = now_s();
    lm_error_clear(&err);
    if (!qidx) {
        if (lm_ksum_run(&g_dp, &in_q, &pq, oq, oq + NQ, NULL, &err) != LM_OK) {
            fprintf(stderr, "gpu-dp: %s\n", err.msg);
            exit(1);
        }
        for (int64_t j = 0; j < 2 * NQ; j++)
            ref_q[j] = oq[j];
    } else if (ref_subset(&g_dp, &in_q, &pq, qidx, qsub, ref_q, &err) != LM_OK) {
        fprintf(stderr, "gpu-dp: %s\n", err.msg);
        exit(1);
    }
    printf("reference Q: gpu-dp over %s%lld Q-grid points, %.2f s\n", qidx ? "a random subset of " : "all ",
           (long long)qsub, now_s() - t0);
    /* cross-check gpu-dp against cpu-dp on 512 points each */
    {
        const lm_variant *cdp = lm_variant_find("cpu-dp", &err);
        int64_t *ci = random_idx(N, 512, 99), *cq = random_idx(NQ, 512, 98);
        double *a = malloc(512 * 2 * sizeof(double)), *b = malloc(512 * 2 * sizeof(double));
        double ef = NAN, eq = NAN;
        if (cdp && ref_subset(cdp, &in_f, &pf, ci, 512, a, &err) == LM_OK &&
            ref_subset(&g_dp, &in_f, &pf, ci, 512, b, &err) == LM_OK) {
            float *fa = malloc(512 * 2 * sizeof(float));
            for (int j = 0; j < 1024; j++)
                fa[j] = (float)b[j];
            ef = rel_err_idx(fa, 512, a, 512, NULL);
            free(fa);
        }
        if (cdp && ref_subset(cdp, &in_q, &pq, cq, 512, a, &err) == LM_OK &&
            ref_subset(&g_dp, &in_q, &pq, cq, 512, b, &err) == LM_OK) {
            float *fa = malloc(512 * 2 * sizeof(float));
            for (int j = 0; j < 1024; j++)
                fa[j] = (float)b[j];
            eq = rel_err_idx(fa, 512, a, 512, NULL);
            free(fa);
        }
        printf("gpu-dp vs cpu-dp on 512 random points: F^H d %.2e, Q %.2e\n", ef, eq);
        free(a);
        free(b);
        free(ci);
        free(cq);
    }

    /* every variant */
    row rows[32];
    for (size_t v = 0; v < nvar; v++) {
        rows[v].name = vars[v]->name;
        double pred_f = prev_fhd && prev_fhd[v] > 0 ? prev_fhd[v] * 64 : 0; /* B64 -> B128: 64x the pairs */
        rows[v].fhd = time_variant(vars[v], &in_f, &pf, of, pred_f);
        if (!rows[v].fhd.estimated && !rows[v].fhd.failed)
            rows[v].fhd.err = rel_err_idx(of, N, ref_f, N, NULL);
        my_fhd[v] = rows[v].fhd.failed ? 0 : rows[v].fhd.call_s;
        double pred_q = prev_q && prev_q[v] > 0 ? prev_q[v] * 64 : rows[v].fhd.call_s * (double)NQ / (double)N;
        rows[v].q = time_variant(vars[v], &in_q, &pq, oq, pred_q);
        if (!rows[v].q.estimated && !rows[v].q.failed)
            rows[v].q.err = rel_err_idx(oq, NQ, ref_q, qsub, qidx);
        my_q[v] = rows[v].q.failed ? 0 : rows[v].q.call_s;
        fprintf(stderr, "  done %s\n", vars[v]->name);
    }
    printf("\n%-13s %10s %10s %8s %10s %9s | %10s %10s %8s %10s %9s\n", "variant", "F^H d s", "kernel s",
           "Gpair/s", "rel.err", "reps", "Q s", "kernel s", "Gpair/s", "rel.err", "reps");
    for (size_t v = 0; v < nvar; v++) {
        const row *r = &rows[v];
        printf("%-13s %9.4f%s %10.4f %8.1f %10.2e %9d | %9.4f%s %10.4f %8.1f %10.2e %9d\n", r->name, r->fhd.call_s,
               r->fhd.estimated ? "*" : " ", r->fhd.kernel_s, pairs_f / r->fhd.call_s * 1e-9, r->fhd.err, r->fhd.reps,
               r->q.call_s, r->q.estimated ? "*" : " ", r->q.kernel_s, pairs_q / r->q.call_s * 1e-9, r->q.err,
               r->q.reps);
        fprintf(g_tsv, "%s\t%s\tfhd\t%.6f\t%.6f\t%.3f\t%.3e\t%d\t%d\n", pname, r->name, r->fhd.call_s, r->fhd.kernel_s,
                pairs_f / r->fhd.call_s * 1e-9, r->fhd.err, r->fhd.reps, r->fhd.estimated);
        fprintf(g_tsv, "%s\t%s\tq\t%.6f\t%.6f\t%.3f\t%.3e\t%d\t%d\n", pname, r->name, r->q.call_s, r->q.kernel_s,
               pairs_q / r->q.call_s * 1e-9, r->q.err, r->q.reps, r->q.estimated);
    }
    printf("(Gpair/s = points x samples / call time; * = not run, extrapolated from the smaller problem)\n");
    printf("call = upload + kernel + download (+ allocation): last run, ms\n");
    for (size_t v = 0; v < nvar; v++) {
        const row *r = &rows[v];
        const timing *ts[2] = {&r->fhd, &r->q};
        for (int w = 0; w < 2; w++) {
            const lm_gpu_stats *st = &ts[w]->last;
            if (ts[w]->estimated || ts[w]->failed || (!st->nstages && strcmp(r->name, "gpu-phasor")))
                continue;
            printf("  %-11s %-5s total %8.3f  upload %7.3f  kernel %8.3f  download %7.3f", r->name, w ? "Q" : "F^H d",
                   st->total_s * 1e3, st->upload_s * 1e3, st->kernel_s * 1e3, st->download_s * 1e3);
            for (int i = 0; i < st->nstages; i++)
                printf("%s%s %.3f", i ? ", " : "  [", st->stage_name[i], st->stage_s[i] * 1e3);
            printf("%s\n", st->nstages ? "]" : "");
        }
    }

    /* gpu-phasor on explicit points (the image voxels given as positions) */
    if (!g_skip_recon) {
        float *pb = malloc((size_t)N * 3 * sizeof(float));
        lm_points ep;
        memset(&ep, 0, sizeof ep);
        ep.n = N;
        ep.x = pb;
        ep.y = pb + N;
        ep.z = pb + 2 * N;
        for (int64_t j = 0; j < N; j++) {
            double x[3];
            lm_points_get(&pf, j, x);
            pb[j] = (float)x[0];
            pb[N + j] = (float)x[1];
            pb[2 * N + j] = (float)x[2];
        }
        const lm_variant *ph = lm_variant_find("gpu-phasor", &err);
        timing t = time_variant(ph, &in_f, &ep, of, 0);
        double e = rel_err_idx(of, N, ref_f, N, NULL);
        printf("gpu-phasor, F^H d on explicit points: %.4f s (kernel %.4f), %.1f Gpair/s, rel.err %.2e\n", t.call_s,
               t.kernel_s, pairs_f / t.call_s * 1e-9, e);
        fprintf(g_tsv, "%s\tgpu-phasor-explicit\tfhd\t%.6f\t%.6f\t%.3f\t%.3e\t%d\t0\n", pname, t.call_s, t.kernel_s,
                pairs_f / t.call_s * 1e-9, e, t.reps);
        free(pb);
    }

    /* CG and the whole reconstruction */
    if (!g_skip_recon) {
        const lm_variant *ph = lm_variant_find("gpu-phasor", &err);
        lm_cfloat *q = malloc((size_t)NQ * sizeof(lm_cfloat)), *fhd = malloc((size_t)N * sizeof(lm_cfloat));
        lm_cfloat *rho = malloc((size_t)N * sizeof(lm_cfloat)), *rho2 = malloc((size_t)N * sizeof(lm_cfloat));
        lm_ksum_run(ph, &in_q, &pq, oq, oq + NQ, NULL, &err);
        for (int64_t j = 0; j < NQ; j++)
            q[j] = CMPLXF(oq[j], oq[NQ + j]);
        lm_ksum_run(ph, &in_f, &pf, of, of + N, NULL, &err);
        for (int64_t j = 0; j < N; j++)
            fhd[j] = CMPLXF(of[j], of[N + j]);
        lm_cg_opts o;
        memset(&o, 0, sizeof o);
        o.iters = 60;
        o.lambda = 0.01;
        o.reg = LM_REG_IDENTITY;
        for (int mode = 3; mode >= 0; mode--) {
            static const char *mname[4] = {"full 3D", "pruned", "pruned, z fused", "own shared-memory"};
            lm_gpu_cg_set_fft_mode(mode);
            double ts[5];
            int ok = 1;
            lm_cg_report rep = {0, 0, NULL};
            for (int r = 0; r < 4 && ok; r++) {
                double tt = now_s();
                lm_error_clear(&err);
                ok = lm_cg_solve_gpu(&g, q, fhd, rho, &o, &rep, &err) == LM_OK;
                if (r > 0)
                    ts[r - 1] = now_s() - tt;
                if (!ok)
                    fprintf(stderr, "cg: %s\n", err.msg);
                if (r < 3 || !ok)
                    free(rep.resid_history), rep.resid_history = NULL;
            }
            if (ok) {
                printf("GPU CG (%s FFTs): 60 iterations %.4f s (median of 3, Q upload and FFT included), final residual %.3e\n",
                       mname[mode], median(ts, 3), rep.rel_resid);
                fprintf(g_tsv, "%s\tcg-gpu-%s\tcg\t%.6f\t0\t0\t%.3e\t3\t0\n", pname,
                        mode == 3 ? "own" : mode == 2 ? "fused" : mode ? "pruned" : "full", median(ts, 3),
                        rep.rel_resid);
                free(rep.resid_history);
            }
        }
        lm_gpu_cg_set_fft_mode(3);
        if (N <= 64 * 64 * 64) {
            lm_cg_report rep;
            double tt = now_s();
            lm_error_clear(&err);
            if (lm_cg_solve_cpu(&g, q, fhd, rho2, &o, &rep, &err) == LM_OK) {
                double tc = now_s() - tt;
                lm_cg_report rg;
                lm_cg_solve_gpu(&g, q, fhd, rho, &o, &rg, &err);
                printf("CPU CG: %.3f s; GPU vs CPU CG image rel diff %.2e (residual %.3e vs %.3e)\n", tc,
                       lm_rel_error_c(rho, rho2, N), rg.rel_resid, rep.rel_resid);
                free(rep.resid_history);
                free(rg.resid_history);
            }
        }
        /* whole reconstruction, all on the device (lm_recon_run with a GPU
         * variant: Q summed on the device, no cache) */
        const char *how[2] = {"gpu-phasor", "gpu-nufft"};
        for (int h = 0; h < 2; h++) {
            double tot[4], tq[4], tf[4], tcg[4];
            int ok = 1;
            for (int r = 0; r < 4 && ok; r++) {
                lm_recon_opts ro;
                lm_recon_opts_init(&ro);
                ro.variant = how[h];
                ro.use_cache = 0;
                ro.iters = o.iters;
                ro.lambda = o.lambda;
                ro.reg = o.reg;
                lm_recon_result res;
                lm_error_clear(&err);
                ok = lm_recon_run(&g, traj, kd, &ro, &res, &err) == LM_OK;
                if (!ok) {
                    fprintf(stderr, "gpu-recon: %s\n", err.msg);
                    break;
                }
                memcpy(h ? rho2 : rho, res.image->data, (size_t)N * sizeof(lm_cfloat));
                tot[r] = res.time_total_s;
                tq[r] = res.time_q_s;
                tf[r] = res.time_fhd_s;
                tcg[r] = res.time_cg_s;
                lm_recon_result_clear(&res);
            }
            if (!ok)
                continue;
            double mt = median(tot + 1, 3), mq = median(tq + 1, 3), mf = median(tf + 1, 3), mc = median(tcg + 1, 3);
            lm_metrics met, mets;
            memset(&met, 0, sizeof met);
            memset(&mets, 0, sizeof mets);
            met.percent_error = mets.percent_error = NAN;
            met.psnr_db = mets.psnr_db = NAN;
            if (truth) {
                lm_metrics_compute(h ? rho2 : rho, truth->data, N, NULL, 0, &met, &err);
                lm_metrics_compute(h ? rho2 : rho, truth->data, N, NULL, 1, &mets, &err);
            }
            printf("whole recon, %s%s: %.4f s (Q %.4f, F^H d %.4f, CG %.4f), error %.2f %%, PSNR %.2f dB "
                   "(scale-matched: %.2f %%, alpha %.3f%+.3fi)\n",
                   how[h], h == 0 ? " (Q precomputed, uploaded)" : " (Q too)", mt, mq, mf, mc, met.percent_error,
                   met.psnr_db, mets.percent_error, mets.scale_re, mets.scale_im);
            fprintf(g_tsv, "%s\trecon-%s\trecon\t%.6f\t%.6f\t%.6f\t%.6f\t3\t0\n", pname, how[h], mt, mq, mf, mc);
        }
        printf("recon images gpu-nufft vs gpu-phasor: rel diff %.2e\n", lm_rel_error_c(rho2, rho, N));
        free(q);
        free(fhd);
        free(rho);
        free(rho2);
    }
    free(ref_f);
    free(ref_q);
    free(qidx);
    free(of);
    free(oq);
    free(k);
    lm_traj_free(traj);
    lm_kdata_free(kd);
    lm_volume_free(truth);
}

int main(int argc, char **argv)
{
    lm_error tuning_err = {0};
    if (lm_tuning_init_from_env(&tuning_err) != LM_OK) { /* the LARMOR_* knobs being measured */
        fprintf(stderr, "%s\n", tuning_err.msg);
        return 2;
    }
    const char *problems = "B64,B128", *outdir = ".", *only = NULL;
    int tune = 1, fieldmap = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--problems") && i + 1 < argc)
            problems = argv[++i];
        else if (!strcmp(argv[i], "--budget") && i + 1 < argc)
            g_budget = atof(argv[++i]);
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            outdir = argv[++i];
        else if (!strcmp(argv[i], "--no-tune"))
            tune = 0;
        else if (!strcmp(argv[i], "--variants") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--skip-recon"))
            g_skip_recon = 1;
        else if (!strcmp(argv[i], "--fieldmap"))
            fieldmap = 1;
        else {
            fprintf(stderr, "usage: gpu_bench [--problems B64,B128] [--budget s] [--out DIR] [--no-tune] "
                            "[--variants a,b] [--skip-recon] [--fieldmap]\n");
            return 2;
        }
    }
    /* One GPU visible unless gpu-multi is measured: the driver initialises
     * every visible device (docs/gpu-design.md, start-up). */
    char visible[256];
    if (lm_gpu_visible_narrow(getenv("CUDA_VISIBLE_DEVICES"), getenv("LARMOR_GPU_DEVICES"),
                              !only || strstr(only, "gpu-multi") != NULL, visible, sizeof visible))
        setenv("CUDA_VISIBLE_DEVICES", visible, 1);
    gpu_require();
    char path[1024];
    snprintf(path, sizeof path, "%s/gpu_bench.tsv", outdir);
    g_tsv = fopen(path, "w");
    if (!g_tsv) {
        fprintf(stderr, "%s: cannot write\n", path);
        return 1;
    }
    fprintf(g_tsv, "problem\tvariant\twhat\tcall_s\tkernel_s\tgpairs_per_s\trel_err\treps\testimated\n");
    lm_error err;
    lm_error_clear(&err);
    for (int d = 0; d < lm_gpu_device_count(); d++) {
        lm_gpu_info info;
        char line[512];
        if (lm_gpu_describe(d, &info, &err) == LM_OK) {
            lm_gpu_info_string(&info, line, sizeof line);
            printf("GPU %d: %s\n", d, line);
        }
    }
    if (tune) {
        lm_gpu_tune_params tp;
        double t0 = now_s();
        if (lm_gpu_tune(0, &tp, path, sizeof path, NULL, &err) == LM_OK)
            printf("gpu-tuned sweep (%.1f s): threads %d, tile %d, unroll %d, points/thread %d -> %s\n", now_s() - t0,
                   tp.threads, tp.tile, tp.unroll, tp.vpt, path);
        else
            printf("tune failed: %s\n", err.msg);
    }
    size_t nrows = 0;
    const lm_variant *rows = lm_gpu_variants(&nrows);
    const lm_variant *vars[32];
    size_t nv = 0;
    for (size_t i = 0; i < nrows && nv < 32; i++) {
        if (only) {
            const char *hit = strstr(only, rows[i].name);
            size_t l = strlen(rows[i].name);
            if (!hit || (hit[l] != '\0' && hit[l] != ','))
                continue;
        }
        vars[nv++] = &rows[i];
    }
    double prev_f[32] = {0}, prev_q[32] = {0}, cur_f[32], cur_q[32];
    int have_prev = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", problems);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        if (fieldmap) {
            run_fieldmap(tok, nv, vars);
            continue;
        }
        run_problem(tok, have_prev ? prev_f : NULL, have_prev ? prev_q : NULL, cur_f, cur_q, nv, vars);
        memcpy(prev_f, cur_f, sizeof prev_f);
        memcpy(prev_q, cur_q, sizeof prev_q);
        have_prev = 1;
    }
    fclose(g_tsv);
    lm_gpu_release();
    return 0;
}
