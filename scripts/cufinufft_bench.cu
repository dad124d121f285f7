/* cuFINUFFT on Larmor's trajectory (issue 14's comparison; a benchmark, not
 * part of Larmor's build): scripts/bench-cufinufft.sh builds and runs it.
 *
 *   cufinufft_bench TRAJ N [REPS]
 *
 * TRAJ: a Larmor trajectory (TRAJ.cfl/.hdr, [3, samples, ...], k in cycles
 * per field of view in the real parts: larmor-cli phantom writes one). The
 * type-1 transform of N^3 modes that Larmor's gpu-nufft computes for F^H d:
 *   f(i) = sum_j c_j exp(+i 2 pi k_j . (i - N/2) / N),   i = 0 .. N-1 per axis,
 * is cuFINUFFT's type 1 with x_j = 2 pi k_j / N (wrapped into [-pi, pi)),
 * iflag +1 and mode order 0 (-N/2 .. N/2-1), x fastest. The weights c_j are
 * random (fixed seed): times do not depend on them. Per configuration
 * (method, upsampling): setpts and execute times by CUDA events (execute:
 * median of REPS after 3 warm-ups), and the relative error against a
 * double-precision direct sum at 64 random modes. Single precision, tol 1e-5. */
#include <algorithm>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <cuComplex.h>
#include <cuda_runtime.h>
#include <cufinufft.h>

#define CK(x)                                                                                                        \
    do {                                                                                                             \
        cudaError_t e_ = (x);                                                                                        \
        if (e_ != cudaSuccess) {                                                                                     \
            fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                                                  \
            exit(1);                                                                                                 \
        }                                                                                                            \
    } while (0)

static std::vector<float> read_traj(const char *base, long long *m)
{
    char path[4096];
    snprintf(path, sizeof path, "%s.hdr", base);
    FILE *h = fopen(path, "r");
    if (!h) {
        fprintf(stderr, "%s: cannot open\n", path);
        exit(1);
    }
    char line[4096];
    long long dims[16] = {0}, total = 1;
    int nd = 0;
    while (fgets(line, sizeof line, h))
        if (line[0] == '#' && strstr(line, "Dimensions")) {
            if (!fgets(line, sizeof line, h))
                break;
            char *p = line;
            for (char *t = strtok(p, " \t\n"); t && nd < 16; t = strtok(NULL, " \t\n"))
                dims[nd++] = atoll(t);
        }
    fclose(h);
    for (int i = 0; i < nd; i++)
        total *= dims[i] > 0 ? dims[i] : 1;
    if (nd < 2 || dims[0] != 3) {
        fprintf(stderr, "%s.hdr: not a [3, samples, ...] trajectory\n", base);
        exit(1);
    }
    *m = total / 3;
    snprintf(path, sizeof path, "%s.cfl", base);
    FILE *f = fopen(path, "rb");
    std::vector<float> raw((size_t)total * 2);
    if (!f || fread(raw.data(), sizeof(float), raw.size(), f) != raw.size()) {
        fprintf(stderr, "%s: cannot read %lld complex values\n", path, total);
        exit(1);
    }
    fclose(f);
    std::vector<float> k((size_t)total);
    for (long long i = 0; i < total; i++)
        k[(size_t)i] = raw[2 * (size_t)i]; /* real parts, [3, M]: k_a of sample j at 3 j + a */
    return k;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: cufinufft_bench TRAJ N [REPS]\n");
        return 2;
    }
    long long m = 0;
    const int N = atoi(argv[2]), reps = argc > 3 ? atoi(argv[3]) : 20;
    std::vector<float> k = read_traj(argv[1], &m);
    std::vector<float> x[3];
    for (int a = 0; a < 3; a++) {
        x[a].resize((size_t)m);
        for (long long j = 0; j < m; j++) {
            double u = 2 * M_PI * (double)k[3 * (size_t)j + a] / N;
            u = u - 2 * M_PI * std::floor((u + M_PI) / (2 * M_PI)); /* [-pi, pi) */
            x[a][(size_t)j] = (float)u;
        }
    }
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<float> U(-1, 1);
    std::vector<cuFloatComplex> c((size_t)m);
    for (auto &v : c)
        v = make_cuFloatComplex(U(rng), U(rng));
    const long long nm = (long long)N * N * N;
    float *dx[3];
    cuFloatComplex *dc, *df;
    for (int a = 0; a < 3; a++) {
        CK(cudaMalloc(&dx[a], (size_t)m * sizeof(float)));
        CK(cudaMemcpy(dx[a], x[a].data(), (size_t)m * sizeof(float), cudaMemcpyHostToDevice));
    }
    CK(cudaMalloc(&dc, (size_t)m * sizeof *dc));
    CK(cudaMalloc(&df, (size_t)nm * sizeof *df));
    CK(cudaMemcpy(dc, c.data(), (size_t)m * sizeof *dc, cudaMemcpyHostToDevice));
    /* the reference at 64 random modes */
    const int NR = 64;
    std::vector<long long> at(NR);
    std::vector<std::complex<double>> ref(NR);
    std::uniform_int_distribution<long long> R(0, nm - 1);
    for (int r = 0; r < NR; r++) {
        at[r] = R(rng);
        const long long i0 = at[r] % N - N / 2, i1 = (at[r] / N) % N - N / 2, i2 = at[r] / ((long long)N * N) - N / 2;
        std::complex<double> s = 0;
        for (long long j = 0; j < m; j++) {
            const double ph = (double)i0 * x[0][(size_t)j] + (double)i1 * x[1][(size_t)j] + (double)i2 * x[2][(size_t)j];
            s += std::complex<double>(c[(size_t)j].x, c[(size_t)j].y) * std::polar(1.0, ph);
        }
        ref[r] = s;
    }
    printf("cuFINUFFT type 1, %lld points, %d^3 modes, tol 1e-5, single precision, %d executes\n", m, N, reps);
    printf("%-28s %10s %10s %10s %10s\n", "method", "plan ms", "setpts ms", "exec ms", "rel.err");
    struct cfg {
        const char *name;
        int method, sort;
        double up;
    } cfgs[] = {{"GM-sort (1), sigma 2", 1, 1, 2.0},   {"SM (2), sigma 2", 2, 1, 2.0},
                {"OD (3), sigma 2", 3, 1, 2.0},        {"GM-sort (1), sigma 1.25", 1, 1, 1.25},
                {"SM (2), sigma 1.25", 2, 1, 1.25},    {"OD (3), sigma 1.25", 3, 1, 1.25},
                {"default (method 0)", 0, 1, 0.0}};
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (const cfg &g : cfgs) {
        cufinufft_opts o;
        cufinufft_default_opts(&o);
        if (g.method)
            o.gpu_method = g.method;
        o.gpu_sort = g.sort;
        if (g.up > 0)
            o.upsampfac = g.up;
        o.modeord = 0;
        int64_t nmodes[3] = {N, N, N};
        cufinufftf_plan plan;
        float ms = 0, pms = 0, sms = 0;
        CK(cudaEventRecord(e0));
        int ier = cufinufftf_makeplan(1, 3, nmodes, +1, 1, 1e-5f, &plan, &o);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&pms, e0, e1));
        if (ier > 1) {
            printf("%-28s makeplan error %d\n", g.name, ier);
            continue;
        }
        CK(cudaEventRecord(e0));
        ier = cufinufftf_setpts(plan, m, dx[0], dx[1], dx[2], 0, NULL, NULL, NULL);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&sms, e0, e1));
        if (ier > 1) {
            printf("%-28s setpts error %d\n", g.name, ier);
            cufinufftf_destroy(plan);
            continue;
        }
        std::vector<float> t;
        for (int r = 0; r < reps + 3 && ier <= 1; r++) {
            CK(cudaEventRecord(e0));
            ier = cufinufftf_execute(plan, dc, df);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (r >= 3)
                t.push_back(ms);
        }
        if (ier > 1) {
            printf("%-28s execute error %d\n", g.name, ier);
            cufinufftf_destroy(plan);
            continue;
        }
        std::sort(t.begin(), t.end());
        std::vector<cuFloatComplex> f(NR);
        double num = 0, den = 0;
        for (int r = 0; r < NR; r++) {
            CK(cudaMemcpy(&f[r], df + at[r], sizeof f[r], cudaMemcpyDeviceToHost));
            num += std::norm(std::complex<double>(f[r].x, f[r].y) - ref[r]);
            den += std::norm(ref[r]);
        }
        printf("%-28s %10.3f %10.3f %10.3f %10.2e\n", g.name, pms, sms, t[t.size() / 2], std::sqrt(num / den));
        cufinufftf_destroy(plan);
    }
    return 0;
}
