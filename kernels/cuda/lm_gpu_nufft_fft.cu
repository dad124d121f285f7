/* gpu-nufft's pruned transforms of the fine grid (lm_gpu_nufft_fft.cuh):
 * the inverse FFT of a type-1 plan that keeps only the image's modes, and
 * its adjoint for type 2, in place, on lm_gpu_f4.cuh's staged radix-P
 * passes. */
#include <string.h>

#include "lm_gpu_device.cuh"
#include "lm_gpu_internal.h"
#include "lm_gpu_f4.cuh"
#include "lm_gpu_nufft_fft.cuh"

/* ---- the pruned inverse transform of the fine grid ----
 *
 * The image keeps g of the nf modes per axis (fine index (i - g/2) mod nf
 * for mode i < g), so past each axis only the kept values go on: z over
 * every (x, y) line, y over the g2 kept planes only, x over the g1 g2 kept
 * rows, fused with the deapodisation. Against cuFFT's full 3D transform
 * (three passes over nf^3) this is 1 + 1/2 + 1/4 passes at nf = 2g, and
 * the deapodisation's separate pass goes. In place: a line's kept values
 * go back to the first g places of the same line, and a block reads its
 * lines whole before it stores (lm_gpu_f4.cuh). Lengths: powers of two,
 * 16 to 512; other fine grids take cuFFT. */
template <int P1, int P2>
__global__ void __launch_bounds__(32 * P2) k_nu_prune_lines(long long p0, long long es, long long os, int g,
                                                            float2 *__restrict__ buf, const float2 *__restrict__ tw)
{
    constexpr int P = P1 * P2;
    extern __shared__ float2 ex[];
    const int lane = threadIdx.x & 31, sub = threadIdx.x >> 5;
    const long long x = (long long)blockIdx.x * 32 + lane;
    const bool in = x < p0;
    const size_t base = (size_t)x + (size_t)os * blockIdx.y;
    for (int k1 = sub; k1 < P1; k1 += P2)
        f4_phase_b<P1, P2, F4_INV>(ex, k1, lane, in, buf, base, es, NULL, tw);
    __syncthreads();
    float2 v[P1];
    f4_phase_c<P1, P2>(v, ex, sub, lane, tw);
    if (in)
#pragma unroll
        for (int n1 = 0; n1 < P1; n1++) {
            const int i = (P2 * n1 + sub + g / 2) & (P - 1);
            if (i < g)
                buf[base + (size_t)es * i] = v[n1];
        }
}

/* The x axis: kept rows r = y + g1 z of the fine grid (at nf0 (y + nf1 z)),
 * inverse transformed, the g0 kept modes deapodised into ore/oim. */
template <int P1, int P2>
__global__ void __launch_bounds__(32 * P2) k_nu_prune_rows(long long rows, int g0, int g1, long long nf1,
                                                           const float2 *__restrict__ buf, const float *__restrict__ dx,
                                                           const float *__restrict__ dy, const float *__restrict__ dz,
                                                           float *__restrict__ ore, float *__restrict__ oim,
                                                           float2 *__restrict__ oc, const float2 *__restrict__ tw)
{
    constexpr int P = P1 * P2, NT = 32 * P2;
    extern __shared__ float2 ex[];
    const int lane = threadIdx.x & 31, sub = threadIdx.x >> 5;
    const long long r0 = (long long)blockIdx.x * 32;
    for (int idx = threadIdx.x; idx < 32 * P; idx += NT) {
        const int l = idx / P, i = idx % P;
        const long long r = r0 + l;
        ex[i * FS + l] = r < rows ? buf[(size_t)i + (size_t)P * ((size_t)(r % g1) + (size_t)nf1 * (size_t)(r / g1))]
                                  : make_float2(0.0f, 0.0f);
    }
    f4_rows_inverse_staged<P1, P2>(ex, lane, sub, tw);
    for (int idx = threadIdx.x; idx < 32 * g0; idx += NT) {
        const int l = idx / g0, i0 = idx % g0;
        const long long r = r0 + l;
        if (r >= rows)
            continue;
        const float2 w = ex[((i0 - g0 / 2) & (P - 1)) * FS + l];
        const float f = dx[i0] * dy[r % g1] * dz[r / g1];
        const size_t q = (size_t)i0 + (size_t)g0 * (size_t)r;
        if (oc) {
            oc[q] = make_float2(w.x * f, w.y * f);
            continue;
        }
        ore[q] = w.x * f;
        oim[q] = w.y * f;
    }
}

/* ---- type 2 (the forward NUFFT), the adjoint of the above ----
 *
 *   d(m) = e^(-i 2 pi phi_m) sum_l psi(l - u_m) F[l],
 *   F = forward FFT of the fine grid that holds x(i) dec(i) (times a coil
 *       map) at (i - g/2) mod nf per axis and zeros elsewhere,
 *
 * so that <type1(w), x> = <w, type2(x)>. The fine grid is filled and
 * transformed axis by axis in the reverse order of the pruned inverse: x
 * over the image's rows only (the modes placed in shared memory), y over
 * the kept planes, z over every line, each expanding its lines in place
 * from the g kept values to all nf; then a warp per sample gathers its W^3
 * neighbours (samples in bin order, so neighbouring warps share cache
 * lines). */
template <int P1, int P2>
__global__ void __launch_bounds__(32 * P2) k_nu_expand_rows(long long rows, int g0, int g1, long long nf1,
                                                            const float2 *__restrict__ x,
                                                            const float2 *__restrict__ sc, const float *__restrict__ dx,
                                                            const float *__restrict__ dy, const float *__restrict__ dz,
                                                            float2 *__restrict__ buf, const float2 *__restrict__ tw)
{
    constexpr int P = P1 * P2, NT = 32 * P2;
    extern __shared__ float2 ex[];
    const int lane = threadIdx.x & 31, sub = threadIdx.x >> 5;
    const long long r0 = (long long)blockIdx.x * 32;
    for (int idx = threadIdx.x; idx < 32 * P; idx += NT)
        ex[idx] = make_float2(0.0f, 0.0f);
    __syncthreads();
    for (int idx = threadIdx.x; idx < 32 * g0; idx += NT) { /* the row's modes at their fine places */
        const int l = idx / g0, i0 = idx % g0;
        const long long r = r0 + l;
        if (r >= rows)
            continue;
        const size_t q = (size_t)i0 + (size_t)g0 * (size_t)r;
        float2 v = x[q];
        if (sc)
            v = cmul(sc[q], v);
        const float f = dx[i0] * dy[r % g1] * dz[r / g1];
        ex[((i0 - g0 / 2) & (P - 1)) * FS + l] = make_float2(v.x * f, v.y * f);
    }
    f4_rows_forward_staged<P1, P2>(ex, lane, sub, tw);
    f4_rows_store<P1, P2>(ex, r0, rows, g1, nf1, buf);
}

/* Strided lines (x, o) at buf[x + os o + es i]: the g kept values at i < g
 * go to their fine places (i - g/2) mod P, forward transform, all P back
 * (in place: the block reads its lines whole before it stores). */
template <int P1, int P2>
__global__ void __launch_bounds__(32 * P2) k_nu_expand_lines(long long p0, long long es, long long os, int g,
                                                             float2 *__restrict__ buf, const float2 *__restrict__ tw)
{
    constexpr int P = P1 * P2;
    extern __shared__ float2 ex[];
    const int lane = threadIdx.x & 31, sub = threadIdx.x >> 5;
    const long long x = (long long)blockIdx.x * 32 + lane;
    const bool in = x < p0;
    const size_t base = (size_t)x + (size_t)os * blockIdx.y;
    float2 v[P1];
#pragma unroll
    for (int n1 = 0; n1 < P1; n1++) {
        const int i = (P2 * n1 + sub + g / 2) & (P - 1); /* the mode at fine place P2 n1 + sub */
        v[n1] = in && i < g ? buf[base + (size_t)es * i] : make_float2(0.0f, 0.0f);
    }
    f4_phase_a<P1, P2>(v, sub, tw);
#pragma unroll
    for (int k1 = 0; k1 < P1; k1++)
        ex[(k1 + P1 * sub) * FS + lane] = v[k1];
    __syncthreads();
    for (int k1 = sub; k1 < P1; k1 += P2)
        f4_phase_b<P1, P2, F4_FWD>(ex, k1, lane, in, buf, base, es, NULL, tw);
}

template <int P1, int P2> static cudaError_t nu_prune_setup(void)
{
    const int sm = (int)f4_smem<P1, P2>();
    cudaError_t e = cudaSuccess;
    const void *fns[4] = {(const void *)k_nu_prune_lines<P1, P2>, (const void *)k_nu_prune_rows<P1, P2>,
                          (const void *)k_nu_expand_lines<P1, P2>, (const void *)k_nu_expand_rows<P1, P2>};
    for (int i = 0; i < 4 && e == cudaSuccess && sm > 48 * 1024; i++)
        e = cudaFuncSetAttribute(fns[i], cudaFuncAttributeMaxDynamicSharedMemorySize, sm);
    return e;
}

/* One pass of a pruned or expanding transform along one axis. */
enum { NU_PRUNE_LINES, NU_PRUNE_ROWS, NU_EXPAND_LINES, NU_EXPAND_ROWS };
struct nu_pass {
    int kind;
    dim3 grid;
    long long p0, es, os; /* lines */
    int g;
    float2 *buf;
    long long rows, nf1;  /* rows */
    int g0, g1;
    const float *dx, *dy, *dz;
    float *ore, *oim;     /* NU_PRUNE_ROWS: the image out, split */
    float2 *oc;           /* or interleaved (ore NULL) */
    const float2 *x, *sc; /* NU_EXPAND_ROWS: the image in (and a coil map, or NULL) */
    const float2 *tw;
};

template <int P1, int P2> static void nu_pass_launch(const nu_pass &a, cudaStream_t st)
{
    const size_t sm = f4_smem<P1, P2>();
    const unsigned nt = 32 * P2;
    switch (a.kind) {
    case NU_PRUNE_LINES: k_nu_prune_lines<P1, P2><<<a.grid, nt, sm, st>>>(a.p0, a.es, a.os, a.g, a.buf, a.tw); break;
    case NU_PRUNE_ROWS:
        k_nu_prune_rows<P1, P2><<<a.grid, nt, sm, st>>>(a.rows, a.g0, a.g1, a.nf1, a.buf, a.dx, a.dy, a.dz, a.ore,
                                                        a.oim, a.oc, a.tw);
        break;
    case NU_EXPAND_LINES: k_nu_expand_lines<P1, P2><<<a.grid, nt, sm, st>>>(a.p0, a.es, a.os, a.g, a.buf, a.tw); break;
    default:
        k_nu_expand_rows<P1, P2><<<a.grid, nt, sm, st>>>(a.rows, a.g0, a.g1, a.nf1, a.x, a.sc, a.dx, a.dy, a.dz, a.buf,
                                                         a.tw);
    }
}

/* Launches a pass at line length P, or (a NULL) sets the kernels' shared
 * memory limits for that length. */
static cudaError_t pass_len(long long P, const nu_pass *a, cudaStream_t st)
{
#define NU_PASS_CASE(L, A, B)                                                                                        \
    case L:                                                                                                        \
        if (!a)                                                                                                    \
            return nu_prune_setup<A, B>();                                                                         \
        nu_pass_launch<A, B>(*a, st);                                                                              \
        return cudaSuccess;
    switch (P) {
        NU_PASS_CASE(16, 4, 4)
        NU_PASS_CASE(32, 8, 4)
        NU_PASS_CASE(64, 8, 8)
        NU_PASS_CASE(128, 16, 8)
        NU_PASS_CASE(256, 16, 16)
        NU_PASS_CASE(512, 32, 16)
    default: return cudaErrorInvalidValue;
    }
#undef NU_PASS_CASE
}

cudaError_t lm_gnu_fft_setup(long long P)
{
    return pass_len(P, NULL, 0);
}

static int nu_pow2(long long p)
{
    return p >= 16 && p <= 512 && (p & (p - 1)) == 0;
}

/* The pruned path applies: every transformed axis a power of two in 16..512
 * (flat z allowed), unless the tuning asks for cuFFT (gpu_nufft_cufft). */
int lm_gnu_prunable(const nu_geo &geo)
{
    return !lm_tuning_get()->gpu_nufft_cufft && nu_pow2(geo.nf[0]) && nu_pow2(geo.nf[1]) && (geo.nf[2] == 1 || nu_pow2(geo.nf[2]));
}

/* The inverse transform of one fine grid and the deapodisation into
 * ore/oim, pruned (the grid is overwritten). */
lm_code lm_gnu_prune_apply(const nu_geo &geo, float2 *fc, float2 *const tw[3], const float *dec, float *ore,
                              float *oim, float2 *oc, cudaStream_t st, const char *who, lm_error *err)
{
    lm_code rc = LM_OK;
    const long long nf0 = geo.nf[0], nf1 = geo.nf[1], nf2 = geo.nf[2];
    const unsigned lx = (unsigned)((nf0 + 31) / 32);
    nu_pass a;
    memset(&a, 0, sizeof a);
    a.buf = fc;
    if (nf2 > 1) {
        a.kind = NU_PRUNE_LINES, a.grid = dim3(lx, (unsigned)nf1), a.p0 = nf0, a.es = nf0 * nf1, a.os = nf0;
        a.g = geo.g[2], a.tw = tw[2];
        LM_GCHECK(pass_len(nf2, &a, st), who, "fft z");
        LM_GLAUNCH(who, "fft z");
    }
    a.kind = NU_PRUNE_LINES, a.grid = dim3(lx, (unsigned)geo.g[2]), a.p0 = nf0, a.es = nf0, a.os = nf0 * nf1;
    a.g = geo.g[1], a.tw = tw[1];
    LM_GCHECK(pass_len(nf1, &a, st), who, "fft y");
    LM_GLAUNCH(who, "fft y");
    a.kind = NU_PRUNE_ROWS, a.rows = (long long)geo.g[1] * geo.g[2], a.g0 = geo.g[0], a.g1 = geo.g[1], a.nf1 = nf1;
    a.grid = dim3((unsigned)((a.rows + 31) / 32)), a.dx = dec, a.dy = dec + geo.g[0], a.dz = dec + geo.g[0] + geo.g[1];
    a.ore = ore, a.oim = oim, a.oc = oc, a.tw = tw[0];
    LM_GCHECK(pass_len(nf0, &a, st), who, "fft x");
    LM_GLAUNCH(who, "fft x");
done:
    return rc;
}

/* The type-2 mirror: the image x (times sc) deapodised into the fine grid
 * fc and transformed forward (x rows, y on the kept planes, z). */
lm_code lm_gnu_expand_apply(const nu_geo &geo, const float2 *x, const float2 *sc, float2 *fc, float2 *const tw[3],
                               const float *dec, cudaStream_t st, const char *who, lm_error *err)
{
    lm_code rc = LM_OK;
    const long long nf0 = geo.nf[0], nf1 = geo.nf[1], nf2 = geo.nf[2];
    const unsigned lx = (unsigned)((nf0 + 31) / 32);
    nu_pass a;
    memset(&a, 0, sizeof a);
    a.buf = fc;
    a.kind = NU_EXPAND_ROWS, a.rows = (long long)geo.g[1] * geo.g[2], a.g0 = geo.g[0], a.g1 = geo.g[1], a.nf1 = nf1;
    a.grid = dim3((unsigned)((a.rows + 31) / 32)), a.dx = dec, a.dy = dec + geo.g[0], a.dz = dec + geo.g[0] + geo.g[1];
    a.x = x, a.sc = sc, a.tw = tw[0];
    LM_GCHECK(pass_len(nf0, &a, st), who, "fft x");
    LM_GLAUNCH(who, "fft x");
    a.kind = NU_EXPAND_LINES, a.grid = dim3(lx, (unsigned)geo.g[2]), a.p0 = nf0, a.es = nf0, a.os = nf0 * nf1;
    a.g = geo.g[1], a.tw = tw[1];
    LM_GCHECK(pass_len(nf1, &a, st), who, "fft y");
    LM_GLAUNCH(who, "fft y");
    if (nf2 > 1) {
        a.kind = NU_EXPAND_LINES, a.grid = dim3(lx, (unsigned)nf1), a.p0 = nf0, a.es = nf0 * nf1, a.os = nf0;
        a.g = geo.g[2], a.tw = tw[2];
        LM_GCHECK(pass_len(nf2, &a, st), who, "fft z");
        LM_GLAUNCH(who, "fft z");
    }
done:
    return rc;
}
