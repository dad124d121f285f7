/* CPU timing of the segmented normal operator, by default at B64 size
 * (64^3, one coil): one application of the block Toeplitz product for L
 * segments (synthetic Hermitian Q blocks: the timing does not depend on
 * their values), next to the plain Toeplitz product (L = 0; per coil).
 * Usage: bench_fieldmap [L ...] [--n N] [--2d] [--coils C] [--group G] [--reps R]
 * (G: coils per pass of the block operator, default C);
 * S128c8f's operator is `bench_fieldmap 11 --n 128 --2d --coils 8`. */
#include <complex.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lm_tuning.h"
#include "lm_toeplitz.h"
#include "lm_toeplitz_block.h"
#include "lm_types.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    lm_error tuning_err = {0};
    if (lm_tuning_init_from_env(&tuning_err) != LM_OK) { /* the LARMOR_* knobs being measured */
        fprintf(stderr, "%s\n", tuning_err.msg);
        return 2;
    }
    int64_t nn = 64, coils = 1, group = 0;
    int ls[16], nl = 0, flat = 0, reps = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc)
            nn = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--coils") && i + 1 < argc)
            coils = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--group") && i + 1 < argc)
            group = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--2d"))
            flat = 1;
        else if (nl < 16)
            ls[nl++] = atoi(argv[i]);
    }
    if (!nl) {
        const int def[] = {0, 1, 4, 6, 8};
        for (nl = 0; nl < 5; nl++)
            ls[nl] = def[nl];
    }
    const int64_t n[3] = {nn, nn, flat ? 1 : nn}, nv = n[0] * n[1] * n[2], nq = lm_q_count(n);
    const int threads = omp_get_max_threads();
    lm_cfloat *x = malloc((size_t)nv * sizeof *x), *y = malloc((size_t)nv * sizeof *y);
    lm_cfloat *s = malloc((size_t)(nv * coils) * sizeof *s);
    for (int64_t j = 0; j < nv; j++)
        x[j] = (float)(j % 7) - 3.0f + I * (float)(j % 5);
    for (int64_t j = 0; j < nv * coils; j++)
        s[j] = cexpf(I * 0.01f * (float)(j % 300));
    for (int i = 0; i < nl; i++) {
        const int L = ls[i];
        const int64_t np = L ? (int64_t)L * (L + 1) / 2 : 1;
        lm_cfloat *q = malloc((size_t)(nq * np) * sizeof *q);
        lm_cfloat *c = L ? malloc((size_t)(nv * L) * sizeof *c) : NULL;
        if (!q || (L && !c)) {
            fprintf(stderr, "bench_fieldmap: out of memory for L=%d\n", L);
            return 1;
        }
        for (int64_t j = 0; j < nq * np; j++)
            q[j] = 1.0f / (1.0f + (float)(j % 97)); /* real and even enough: values do not matter */
        for (int64_t j = 0; j < nv * L; j++)
            c[j] = cexpf(I * 0.001f * (float)(j % 1000));
        lm_error err = {0};
        double t0 = now(), tb, tm = 1e30;
        if (L == 0) {
            lm_toeplitz *t = NULL;
            if (lm_toeplitz_new(n, q, threads, &t, &err) != LM_OK) {
                fprintf(stderr, "bench_fieldmap: %s\n", err.msg);
                return 1;
            }
            tb = now() - t0;
            for (int r = 0; r < reps; r++) {
                t0 = now();
                for (int64_t k = 0; k < coils; k++)
                    lm_toeplitz_apply_coil(t, x, s + k * nv, y, k > 0);
                tm = fmin(tm, now() - t0);
            }
            lm_toeplitz_free(t);
        } else {
            lm_toeplitz_block *t = NULL;
            if (lm_toeplitz_block_new_coils(n, L, q, threads, (int)(group > 0 ? group : coils), &t, &err) != LM_OK) {
                fprintf(stderr, "bench_fieldmap: %s\n", err.msg);
                return 1;
            }
            tb = now() - t0;
            for (int r = 0; r < reps; r++) {
                t0 = now();
                lm_toeplitz_block_apply_sense(t, x, s, coils, c, y, 0);
                tm = fmin(tm, now() - t0);
            }
            lm_toeplitz_block_free(t);
        }
        printf("{\"n\": [%lld, %lld, %lld], \"coils\": %lld, \"segments\": %d, \"threads\": %d, "
               "\"setup_s\": %.3f, \"apply_s\": %.4f}\n",
               (long long)n[0], (long long)n[1], (long long)n[2], (long long)coils, L, threads, tb, tm);
        fflush(stdout);
        free(q), free(c);
    }
    free(x), free(y), free(s);
    return 0;
}
