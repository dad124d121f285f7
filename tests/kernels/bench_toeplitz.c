/* Benchmark (meson test --benchmark --suite kernels): one application of
 * F^H F through the pruned passes of lm_toeplitz against a plain full 3D
 * FFTW transform pair of the 2x grid (ESTIMATE and MEASURE plans). */
#include <complex.h>
#include <fftw3.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lm_tuning.h"
#include "lm_solver.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double time_full(int64_t n, int threads, unsigned flags, int reps)
{
    int p = (int)(2 * n);
    size_t pc = (size_t)p * p * p;
    fftwf_complex *buf = fftwf_malloc(pc * sizeof *buf);
    float *qh = malloc(pc * sizeof *qh);
    fftwf_plan_with_nthreads(threads);
    double tp = now_s();
    fftwf_plan f = fftwf_plan_dft_3d(p, p, p, buf, buf, FFTW_FORWARD, flags);
    fftwf_plan b = fftwf_plan_dft_3d(p, p, p, buf, buf, FFTW_BACKWARD, flags);
    tp = now_s() - tp;
    for (size_t j = 0; j < pc; j++)
        qh[j] = 1.0f / (float)pc;
    double t0 = now_s();
    for (int r = 0; r < reps; r++) {
        memset(buf, 0, pc * sizeof *buf);
        for (int64_t k = 0; k < n; k++)
            for (int64_t j = 0; j < n; j++)
                for (int64_t i = 0; i < n; i++)
                    buf[i + p * (j + p * k)] = (float)((i + j + k) % 7) - 3.0f;
        fftwf_execute(f);
#pragma omp parallel for num_threads(threads)
        for (size_t j = 0; j < pc; j++)
            buf[j] *= qh[j];
        fftwf_execute(b);
    }
    double t = (now_s() - t0) / reps;
    if (flags == FFTW_MEASURE)
        fprintf(stderr, "  (MEASURE planning took %.2f s)\n", tp);
    fftwf_destroy_plan(f);
    fftwf_destroy_plan(b);
    fftwf_free(buf);
    free(qh);
    return t;
}

int main(int argc, char **argv)
{
    lm_error tuning_err = {0};
    if (lm_tuning_init_from_env(&tuning_err) != LM_OK) { /* the LARMOR_* knobs being measured */
        fprintf(stderr, "%s\n", tuning_err.msg);
        return 2;
    }
    int threads = omp_get_max_threads();
    int64_t sizes[3] = {32, 64, 128};
    int nsizes = argc > 1 ? 1 : 3;
    if (argc > 1)
        sizes[0] = atoll(argv[1]);
    for (int s = 0; s < nsizes; s++) {
        int64_t n = sizes[s];
        int64_t dims[3] = {n, n, n};
        int64_t qc = lm_q_count(dims), nv = n * n * n;
        lm_cfloat *q = malloc((size_t)qc * sizeof *q), *x = malloc((size_t)nv * sizeof *x);
        lm_cfloat *y = malloc((size_t)nv * sizeof *y);
        for (int64_t j = 0; j < qc; j++)
            q[j] = 1.0f;
        for (int64_t j = 0; j < nv; j++)
            x[j] = (float)(j % 7) - 3.0f;
        int reps = n <= 32 ? 50 : n <= 64 ? 10 : 3;
        lm_toeplitz *op = NULL;
        lm_error err = {0};
        double tp = now_s();
        if (lm_toeplitz_new(dims, q, threads, &op, &err) != LM_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        tp = now_s() - tp;
        lm_toeplitz_apply(op, x, y); /* warm-up */
        double t0 = now_s();
        for (int r = 0; r < reps; r++)
            lm_toeplitz_apply(op, x, y);
        double tpr = (now_s() - t0) / reps;
        lm_toeplitz_free(op);
        double tfe = time_full(n, threads, FFTW_ESTIMATE, reps);
        double tfm = n <= 64 ? time_full(n, threads, FFTW_MEASURE, reps) : 0;
        printf("n=%lld threads=%d: pruned %.2f ms (setup %.2f s), full ESTIMATE %.2f ms, full MEASURE %.2f ms\n",
               (long long)n, threads, 1e3 * tpr, tp, 1e3 * tfe, 1e3 * tfm);
        free(q);
        free(x);
        free(y);
    }
    return 0;
}
