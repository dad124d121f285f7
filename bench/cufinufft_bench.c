/* cuFINUFFT's type 1 on Larmor's B128 inputs (issue 14's comparison; a
 * benchmark only, built by bench/bench-cufinufft.sh, never part of Larmor):
 *
 *   cufinufft_bench [--cfl DIR] [--reps 30] [--tol 1e-5] [--tsv FILE]
 *
 * Inputs: with --cfl, DIR/b128_traj.cfl (3 x M, k in cycles per FOV as the
 * real parts), DIR/b128_w.cfl (M weights) and, when present,
 * DIR/b128_larmor_type1.cfl (Larmor's 128^3 modes), as
 * tests/gpu/bench_nufft.c writes them; without --cfl, B128 made here by
 * Larmor's own generator (phantoms/lm_trajgen.c lm_traj_generate radial3d,
 * n 128, M 284,592, 64 per spoke; weights lm_phantom_kspace of the 3D
 * Shepp-Logan: B128's k-space, noise 0), the same code lm_problem_make runs.
 *
 * Larmor's type 1: out[i] = sum_m w_m exp(+i 2 pi k_m . (i - n/2) / n), x
 * fastest. cuFINUFFT's type 1 with iflag +1, modeord 0 (modes -n/2..n/2-1,
 * x fastest) and x_m = 2 pi k_m / n is the same sum.
 *
 * For each option set (gpu_method, gpu_sort, upsampfac, ...): makeplan (host
 * wall), setpts (CUDA events on the plan's stream, the default one, median
 * of 10 after one), execute (events, median and min of --reps after 3
 * warm-up calls), inputs and outputs on the device; then the relative error
 * against a double direct sum at 1000 random modes and, with Larmor's file,
 * against Larmor's whole output. */
#define _GNU_SOURCE
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>
#include <cufinufft.h>

#include "lm_phantom.h"
#include "lm_trajgen.h"

#define NREF 1000
#define MAXREP 200

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "cufinufft_bench: %s: %s\n", #call, cudaGetErrorString(e_));           \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* A BART cfl (with its .hdr): the sizes and the complex64 values; NULL when absent. */
static float complex *cfl_read(const char *dir, const char *name, int64_t dims[4])
{
    char path[4096], line[512];
    snprintf(path, sizeof path, "%s/%s.hdr", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    for (int i = 0; i < 4; i++)
        dims[i] = 1;
    int ok = 0, at = 0; /* the sizes follow the "# Dimensions" line */
    while (fgets(line, sizeof line, f)) {
        if (!at) {
            at = !strncmp(line, "# Dimensions", 12);
            continue;
        }
        long long d[4] = {1, 1, 1, 1};
        ok = sscanf(line, "%lld %lld %lld %lld", &d[0], &d[1], &d[2], &d[3]) >= 1;
        for (int i = 0; i < 4; i++)
            dims[i] = d[i];
        break;
    }
    fclose(f);
    const int64_t n = dims[0] * dims[1] * dims[2] * dims[3];
    snprintf(path, sizeof path, "%s/%s.cfl", dir, name);
    float complex *v = ok && n > 0 ? malloc((size_t)n * sizeof *v) : NULL;
    f = v ? fopen(path, "rb") : NULL;
    if (!f || fread(v, sizeof *v, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "cufinufft_bench: %s: unreadable or short\n", path);
        exit(1);
    }
    fclose(f);
    return v;
}

typedef struct cfg {
    const char *name;
    int method, sort, np;
    double upsamp;
} cfg;

int main(int argc, char **argv)
{
    const char *cfldir = NULL, *tsv = NULL;
    int reps = 30;
    double tol = 1e-5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cfl") && i + 1 < argc)
            cfldir = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tol") && i + 1 < argc)
            tol = atof(argv[++i]);
        else if (!strcmp(argv[i], "--tsv") && i + 1 < argc)
            tsv = argv[++i];
        else {
            fprintf(stderr, "usage: cufinufft_bench [--cfl DIR] [--reps 30] [--tol 1e-5] [--tsv FILE]\n");
            return 2;
        }
    }
    reps = reps < 20 ? 20 : reps > MAXREP ? MAXREP : reps;
    const int64_t n = 128, nv = n * n * n;
    int64_t m = 0;
    float *kx = NULL;              /* 3 x m: k in cycles per FOV, sample by sample */
    float complex *w = NULL, *larmor = NULL;
    const char *source;
    if (cfldir) {
        int64_t dt[4], dw[4], dy[4];
        float complex *tk = cfl_read(cfldir, "b128_traj", dt);
        w = cfl_read(cfldir, "b128_w", dw);
        if (!tk || !w || dt[0] != 3 || dw[0] != dt[1]) {
            fprintf(stderr, "cufinufft_bench: %s: no b128_traj (3 x M) and b128_w (M) cfl pair\n", cfldir);
            return 1;
        }
        m = dt[1];
        kx = malloc((size_t)(3 * m) * sizeof *kx);
        for (int64_t j = 0; j < 3 * m; j++)
            kx[j] = crealf(tk[j]);
        free(tk);
        larmor = cfl_read(cfldir, "b128_larmor_type1", dy);
        if (larmor && dy[0] * dy[1] * dy[2] != nv) {
            fprintf(stderr, "cufinufft_bench: %s/b128_larmor_type1: not 128^3\n", cfldir);
            return 1;
        }
        source = "cfl files of tests/gpu/bench_nufft";
    } else {
        lm_error err = {0};
        lm_traj *t = NULL;
        const int64_t nn[3] = {n, n, n};
        if (lm_traj_generate(LM_TRAJ_RADIAL3D, nn, 284592, 64, &t, &err) != LM_OK) {
            fprintf(stderr, "cufinufft_bench: %s\n", err.msg);
            return 1;
        }
        m = t->m;
        kx = malloc((size_t)(3 * m) * sizeof *kx);
        memcpy(kx, t->k, (size_t)(3 * m) * sizeof *kx);
        w = malloc((size_t)m * sizeof *w);
        if (lm_phantom_kspace(lm_phantom_shepp_logan_3d(), t, w, &err) != LM_OK) {
            fprintf(stderr, "cufinufft_bench: %s\n", err.msg);
            return 1;
        }
        lm_traj_free(t);
        source = "B128 from Larmor's lm_traj_generate + lm_phantom_kspace";
    }
    CK(cudaFree(0));
    struct cudaDeviceProp prop;
    int dev = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    printf("cufinufft_bench: %lld^3 modes, %lld samples (%s), tol %g, %d reps, device %s\n", (long long)n,
           (long long)m, source, tol, reps, prop.name);

    /* coordinates x = 2 pi k / n (FINUFFT's periodic [-pi, pi) scale), split per axis */
    float *xh = malloc((size_t)(3 * m) * sizeof *xh);
    for (int64_t j = 0; j < m; j++)
        for (int a = 0; a < 3; a++) { /* wrapped into [-pi, pi): integer modes, the same sum */
            const double u = 2.0 * M_PI * (double)kx[3 * j + a] / (double)n;
            xh[a * m + j] = (float)(u - 2.0 * M_PI * floor((u + M_PI) / (2.0 * M_PI)));
        }
    float *xd = NULL;
    cuFloatComplex *cd = NULL, *fd = NULL;
    CK(cudaMalloc((void **)&xd, (size_t)(3 * m) * sizeof *xd));
    CK(cudaMalloc((void **)&cd, (size_t)m * sizeof *cd));
    CK(cudaMalloc((void **)&fd, (size_t)nv * sizeof *fd));
    CK(cudaMemcpy(xd, xh, (size_t)(3 * m) * sizeof *xd, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(cd, w, (size_t)m * sizeof *cd, cudaMemcpyHostToDevice));

    /* the double direct sum at NREF random voxels (Larmor's sum, double, k as float as given) */
    int64_t vref[NREF];
    double complex ref[NREF];
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (int q = 0; q < NREF; q++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        vref[q] = (int64_t)(s % (uint64_t)nv);
    }
    const double t0 = now_s();
#pragma omp parallel for schedule(dynamic, 8)
    for (int q = 0; q < NREF; q++) {
        const int64_t v = vref[q];
        const double p0 = (double)(v % n - n / 2) / n, p1 = (double)((v / n) % n - n / 2) / n,
                     p2 = (double)(v / (n * n) - n / 2) / n;
        double ar = 0, ai = 0;
        for (int64_t j = 0; j < m; j++) {
            const double ph = 2.0 * M_PI * (kx[3 * j] * p0 + kx[3 * j + 1] * p1 + kx[3 * j + 2] * p2);
            double sn, cs;
            sincos(ph, &sn, &cs);
            const double wr = crealf(w[j]), wi = cimagf(w[j]);
            ar += wr * cs - wi * sn;
            ai += wr * sn + wi * cs;
        }
        ref[q] = ar + I * ai;
    }
    printf("direct double sum at %d voxels: %.2f s\n", NREF, now_s() - t0);
    if (larmor) {
        double num = 0, den = 0;
        for (int q = 0; q < NREF; q++) {
            const double complex d = (double complex)larmor[vref[q]] - ref[q];
            num += creal(d * conj(d)), den += creal(ref[q] * conj(ref[q]));
        }
        printf("Larmor's file against the direct sum at %d voxels: rel error %.3g\n", NREF, sqrt(num / den));
    }

    const cfg cfgs[] = {
        {"default (method 0, upsampfac 0: auto)", 0, 1, 0, 0.0},
        {"GM (method 1, no sort)", 1, 0, 0, 2.0},
        {"GM-sort (method 1)", 1, 1, 0, 2.0},
        {"SM (method 2)", 2, 1, 0, 2.0},
        {"OD (method 3)", 3, 1, 0, 2.0},
        {"OD (method 3, np 16)", 3, 1, 16, 2.0},
        {"OD (method 3, np 64)", 3, 1, 64, 2.0},
        {"block gather (method 4)", 4, 1, 0, 2.0},
        {"default method 0", 0, 1, 0, 1.25},
        {"GM (method 1, no sort)", 1, 0, 0, 1.25},
        {"GM-sort (method 1)", 1, 1, 0, 1.25},
        {"SM (method 2)", 2, 1, 0, 1.25},
        {"OD (method 3)", 3, 1, 0, 1.25},
        {"OD (method 3, np 16)", 3, 1, 16, 1.25},
        {"OD (method 3, np 64)", 3, 1, 64, 1.25},
        {"block gather (method 4)", 4, 1, 0, 1.25},
        {"default method 0", 0, 1, 0, 2.0},
    };
    const int ncfg = (int)(sizeof cfgs / sizeof cfgs[0]);
    FILE *tf = tsv ? fopen(tsv, "w") : NULL;
    if (tf)
        fprintf(tf, "config\tmethod\tsort\tnp\tupsampfac\tmakeplan_ms\tsetpts_ms\tsetpts_wall_ms\texec_median_ms\t"
                    "exec_min_ms\tsetpts_plus_exec_ms\trel_err_direct\trel_err_larmor\n");
    printf("%-38s %5s %9s %9s %9s %9s %9s %9s %10s %10s\n", "options", "upsf", "plan ms", "setpts", "(wall)",
           "exec med", "exec min", "set+exec", "err direct", "err Larmor");
    float complex *fh = malloc((size_t)nv * sizeof *fh);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int c = 0; c < ncfg; c++) {
        const cfg *k = &cfgs[c];
        cufinufft_opts o;
        cufinufft_default_opts(&o);
        o.gpu_method = k->method;
        o.gpu_sort = k->sort;
        o.upsampfac = k->upsamp;
        if (k->np)
            o.gpu_np = k->np;
        const int64_t modes[3] = {n, n, n};
        cufinufftf_plan p = NULL;
        double ta = now_s();
        int ier = cufinufftf_makeplan(1, 3, modes, +1, 1, (float)tol, &p, &o);
        CK(cudaDeviceSynchronize());
        const double plan_ms = (now_s() - ta) * 1e3;
        double set[10], setw[10], ex[MAXREP];
        float ms = 0;
        for (int r = 0; ier == 0 && r < 11; r++) {
            ta = now_s();
            CK(cudaEventRecord(e0, 0));
            ier = cufinufftf_setpts(p, m, xd, xd + m, xd + 2 * m, 0, NULL, NULL, NULL);
            CK(cudaEventRecord(e1, 0));
            CK(cudaEventSynchronize(e1));
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (r > 0)
                set[r - 1] = ms, setw[r - 1] = (now_s() - ta) * 1e3;
        }
        for (int r = 0; ier == 0 && r < reps + 3; r++) {
            CK(cudaEventRecord(e0, 0));
            ier = cufinufftf_execute(p, cd, fd);
            CK(cudaEventRecord(e1, 0));
            CK(cudaEventSynchronize(e1));
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (r >= 3)
                ex[r - 3] = ms;
        }
        if (ier != 0) {
            printf("%-38s %5.2f  failed: cuFINUFFT error %d\n", k->name, k->upsamp, ier);
            if (tf)
                fprintf(tf, "%s\t%d\t%d\t%d\t%.2f\tfailed %d\n", k->name, k->method, k->sort, k->np, k->upsamp, ier);
            if (p)
                cufinufftf_destroy(p);
            cudaGetLastError();
            continue;
        }
        CK(cudaMemcpy(fh, fd, (size_t)nv * sizeof *fh, cudaMemcpyDeviceToHost));
        double num = 0, den = 0;
        for (int q = 0; q < NREF; q++) {
            const double complex d = (double complex)fh[vref[q]] - ref[q];
            num += creal(d * conj(d)), den += creal(ref[q] * conj(ref[q]));
        }
        const double err_direct = sqrt(num / den);
        double err_larmor = -1;
        if (larmor) {
            num = den = 0;
            for (int64_t v = 0; v < nv; v++) {
                const double complex d = (double complex)fh[v] - (double complex)larmor[v];
                num += creal(d * conj(d)), den += creal((double complex)larmor[v] * conj(larmor[v]));
            }
            err_larmor = sqrt(num / den);
        }
        double mn = ex[0];
        for (int r = 1; r < reps; r++)
            mn = ex[r] < mn ? ex[r] : mn;
        const double sm = median(set, 10), smw = median(setw, 10), em = median(ex, reps);
        printf("%-38s %5.2f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %10.3g %10.3g\n", k->name, k->upsamp, plan_ms, sm, smw,
               em, mn, sm + em, err_direct, err_larmor);
        if (tf)
            fprintf(tf, "%s\t%d\t%d\t%d\t%.2f\t%.3f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.3g\t%.3g\n", k->name, k->method,
                    k->sort, k->np, k->upsamp, plan_ms, sm, smw, em, mn, sm + em, err_direct, err_larmor);
        fflush(stdout);
        cufinufftf_destroy(p);
    }
    if (tf)
        fclose(tf);
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    cudaFree(xd), cudaFree(cd), cudaFree(fd);
    free(fh), free(xh), free(kx), free(w), free(larmor);
    return 0;
}
