/* gpu-nufft: the k-space sum on a grid through a type-1 non-uniform FFT,
 * the CPU's method (kernels/lm_nufft.c) on the GPU:
 *
 *   out(i) = sum_m w_m exp(+i 2 pi k_m (i - c)/s)      per axis, i = 0..g-1
 *
 * Modes are centred (j = i - g/2) by folding exp(i 2 pi k (g/2 - c)/s) into
 * the weights; each sample lands on the fine grid (nf = 2g per axis, next
 * 2-3-5-smooth even size) at u = frac(k/s) nf and is spread with the
 * "exponential of semicircle" kernel exp(beta (sqrt(1 - z^2) - 1)), width
 * W = 6 and beta = 2.30 W (FINUFFT's choice for tolerance 1e-5 at
 * upsampling 2: the CPU plan's kernel, width and beta at that upsampling);
 * then an inverse (exp +i) FFT (the pruned passes of lm_gpu_nufft_fft.cu;
 * cuFFT for fine grids that are not powers of two), and each output mode
 * is divided by the kernel's Fourier transform (Gauss-Legendre quadrature,
 * as on the CPU).
 *
 * A plan (struct lm_gnufft_plan, made once per trajectory and grid: the
 * encoding keeps one per gpu-nufft encoding through lm_gpu_nufft_*) holds
 * everything that depends on the positions only: samples binned (8^3 fine
 * cells per bin in 3D, 32^2 in 2D) and sorted by (bin, position), the
 * shared-memory subproblems listed and counted (the one host sync), the
 * deapodisation factors, the fine grids and the pruned transform's
 * twiddles. Its execs only launch kernels: the weights go into the sorted
 * order (times the centring phase), bins of at least SM_MIN samples are
 * spread in shared memory one subproblem (<= MAXSUB samples) per block and
 * added to the fine grid (warps merge runs of samples at one position: a
 * radial trajectory puts every spoke's first sample at k = 0), while on a
 * second stream the sparse bins' samples go straight into global memory,
 * a warp per sample, by pairs of x points with 128-bit atomics. Sample
 * positions are kept relative to their bin (float error ~1e-7 cells
 * instead of ~3e-5 on a 512 grid). One-shot calls (lm_gnufft_run,
 * lm_gnufft_type2) make a plan on the device cache's fine grids, exec it
 * and free it.
 *
 * Spreading adds into the fine grid with atomics, in whatever order the
 * blocks and warps reach them. Float sums in varying order vary in the
 * last bits from run to run (about 1e-6), and a CG solve amplifies that
 * (percents on small ill-conditioned problems), so by default
 * (lm_tuning.gpu_nufft_repro) every contribution is added as 64-bit fixed
 * point, whose integer sums do not depend on the order: a plan's results
 * are identical run to run. A weight set's scale puts the bound no
 * fine-grid value can pass, m max(|re| + |im|) over its weights (the
 * kernel is at most 1), at 2^61: the resolution, bound / 2^61, is far
 * below float's 2^-24 of the largest value. The fixed-point grid is then
 * converted to floats for the transform. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include <cub/cub.cuh>

#include "lm_gpu_device.cuh"
#include "lm_gpu_internal.h"
#include "lm_gpu_f4.cuh"
#include "lm_gpu_nufft_fft.cuh"

#define LM_NU_W 6
#define LM_NU_TOL 1e-5
#define LM_NU_BETA (2.30 * LM_NU_W)
/* Defaults of a plan's subproblem limits (the tuning's gpu_nufft_maxsub and
 * gpu_nufft_smmin override them when a plan is made: the bench's
 * sweep): at most MAXSUB samples per shared-memory block, bins of at
 * least SM_MIN samples take the shared-memory path. */
#define LM_NU_MAXSUB 128
#define LM_NU_SM_MIN 48
/* Reproducible spreading: a sparse bin's fixed-point atomics cost twice
 * the float ones per point (two 64-bit reds, no 128-bit pairs) while the
 * shared-memory path costs about the same, so more bins go to shared
 * memory (B128 on an H200: 0.86 ms at 8, 0.97 ms at 48). */
#define LM_NU_SM_MIN_FIX 8
/* Weight sets (channels) spread together: the kernel values and target
 * indices of a sample are worked out once for all of them. */
#define LM_NU_NCH 4

/* ---- the per-device cache: fine grid and cuFFT plan ---- */

struct nu_cache {
    float2 *fine;
    size_t fine_cap;
    longlong2 *fix;     /* the fixed-point fine grids (reproducible spreading) */
    size_t fix_cap;
    cufftHandle plan;
    int have_plan;
    long long pdims[3];
    float2 *tw[3];      /* the pruned transform's twiddles per axis (twlen[a] values) */
    long long twlen[3];
};
static nu_cache g_nu[64];

static void nu_cache_clear(nu_cache *c)
{
    if (c->have_plan)
        (void)cufftDestroy(c->plan);
    lm_gfree(c->fine);
    lm_gfree(c->fix);
    for (int a = 0; a < 3; a++)
        lm_gfree(c->tw[a]);
    memset(c, 0, sizeof *c);
}

void lm_gnufft_release(void)
{
    int prev = 0, have = cudaGetDevice(&prev) == cudaSuccess;
    for (int d = 0; d < 64; d++) {
        if (!g_nu[d].fine && !g_nu[d].have_plan)
            continue;
        lm_gdevice_lock(d);
        if (cudaSetDevice(d) == cudaSuccess)
            nu_cache_clear(&g_nu[d]);
        lm_gdevice_unlock(d);
    }
    if (have)
        (void)cudaSetDevice(prev);
    (void)cudaGetLastError();
}

/* ---- host-side parameters ---- */

static long long next_smooth_even(long long n)
{
    if (n < 2)
        n = 2;
    if (n & 1)
        n++;
    for (;; n += 2) {
        long long r = n;
        while (r % 2 == 0)
            r /= 2;
        while (r % 3 == 0)
            r /= 3;
        while (r % 5 == 0)
            r /= 5;
        if (r == 1)
            return n;
    }
}

static double es_kernel(double z, double hw, double beta)
{
    if (fabs(z) >= hw)
        return 0.0;
    double t = 1.0 - (z / hw) * (z / hw);
    return exp(beta * (sqrt(t) - 1.0));
}

/* The CPU plan's quadrature (kernels/lm_nufft.c), so both engines deapodise alike. */
extern "C" void lm_nufft_gauss_legendre(int n, double *x, double *w);

/* Quadrature of the kernel's Fourier transform (as the CPU plan): 96
 * Gauss-Legendre nodes on [0, W/2] (the kernel is even); q_z the nodes,
 * q_f kernel x weight x W/2. Made once. */
#define LM_NU_Q 96
static double g_qz[LM_NU_Q], g_qf[LM_NU_Q];
static pthread_once_t g_q_once = PTHREAD_ONCE_INIT;

static void quad_init(void)
{
    double x[LM_NU_Q], wq[LM_NU_Q];
    lm_nufft_gauss_legendre(LM_NU_Q, x, wq);
    const double hw = 0.5 * LM_NU_W;
    for (int q = 0; q < LM_NU_Q; q++) {
        g_qz[q] = 0.5 * hw * (x[q] + 1.0);
        g_qf[q] = es_kernel(g_qz[q], hw, LM_NU_BETA) * hw * wq[q];
    }
}

/* ---- device kernels ---- */


/* 1 / (kernel's Fourier transform) at each axis's centred modes (double;
 * flat axes 1). dec holds g0 + g1 + g2 values. */
__global__ void k_nu_deap(nu_geo geo, const double *__restrict__ qz_qf, float *__restrict__ dec)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int tot = geo.g[0] + geo.g[1] + geo.g[2];
    if (i >= tot)
        return;
    const int a = i < geo.g[0] ? 0 : i < geo.g[0] + geo.g[1] ? 1 : 2;
    const int ii = i - (a > 0 ? geo.g[0] : 0) - (a > 1 ? geo.g[1] : 0);
    if (geo.g[a] == 1) {
        dec[i] = 1.0f;
        return;
    }
    const double xi = 2.0 * 3.14159265358979323846 * (double)(ii - geo.g[a] / 2) / (double)geo.nf[a];
    double sum = 0.0;
    for (int q = 0; q < LM_NU_Q; q++)
        sum += qz_qf[LM_NU_Q + q] * cos(xi * qz_qf[q]);
    dec[i] = (float)(1.0 / sum);
}

__global__ void k_nu_prep(int m, const float *__restrict__ kx, const float *__restrict__ ky,
                          const float *__restrict__ kz, const float *__restrict__ wr, const float *__restrict__ wi,
                          nu_geo geo, double is0, double is1, double is2, double sh0, double sh1, double sh2,
                          unsigned *__restrict__ key, int *__restrict__ count, float4 *__restrict__ rel,
                          float2 *__restrict__ cw, float2 *__restrict__ eph)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m)
        return;
    const double k[3] = {(double)kx[i], (double)ky[i], (double)kz[i]};
    const double is[3] = {is0, is1, is2};
    const double sh[3] = {sh0, sh1, sh2};
    float r[3];
    int b[3];
    double ph = 0.0;
    for (int a = 0; a < 3; a++) {
        ph += k[a] * sh[a] * is[a]; /* exp(i 2 pi k (g/2 - c)/s): centred modes */
        if (geo.nf[a] == 1) {
            r[a] = 0.0f;
            b[a] = 0;
            continue;
        }
        double u = k[a] * is[a];
        u -= floor(u);
        double v = u * (double)geo.nf[a];
        if (v >= (double)geo.nf[a])
            v -= (double)geo.nf[a];
        if (v < 0.0)
            v = 0.0;
        int bb = (int)(v / geo.bs[a]);
        if (bb >= geo.nb[a])
            bb = geo.nb[a] - 1;
        b[a] = bb;
        r[a] = (float)(v - (double)bb * geo.bs[a]);
    }
    ph -= rint(ph);
    double s, c;
    sincospi(2.0 * ph, &s, &c);
    const double a_r = wr ? wr[i] : 1.0, a_i = wi ? wi[i] : 0.0; /* NULL: type 2's unit weights */
    cw[i] = make_float2((float)(a_r * c - a_i * s), (float)(a_r * s + a_i * c));
    eph[i] = make_float2((float)c, (float)s);
    rel[i] = make_float4(r[0], r[1], r[2], 0.0f);
    const unsigned bin = (unsigned)((b[2] * geo.nb[1] + b[1]) * geo.nb[0] + b[0]);
    key[i] = bin;
    atomicAdd(&count[bin], 1);
}

/* Counting sort: each sample to bstart[bin] + (its turn in the bin). The
 * order inside a bin varies run to run, as the atomic sums do anyway. */
__global__ void k_nu_scatter(int m, const unsigned *__restrict__ key, const int *__restrict__ bstart,
                             int *__restrict__ fill, const float4 *__restrict__ rel, const float2 *__restrict__ cw,
                             unsigned *__restrict__ skey, float4 *__restrict__ srel, float2 *__restrict__ scw,
                             int *__restrict__ sidx)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m)
        return;
    const unsigned k = key[i];
    const int p = bstart[k] + atomicAdd(&fill[k], 1);
    skey[p] = k;
    srel[p] = rel[i];
    scw[p] = cw[i];
    sidx[p] = i;
}

/* A call's weights: set c of sample i is wc[c m + i] (interleaved) or
 * wr/wi[c m + i] (split; wi NULL: real), times scale[i] when given. */
struct nu_wts {
    const float *wr, *wi;
    const float2 *wc;
    const float *scale;
};

/* nc weight sets into the sorted order (the plan's positions stay where
 * its sort put them; only the weights, times the centring phase, change).
 * wmax (reproducible spreading; else NULL, cleared before): each set's
 * largest |re| + |im|, as float bits (non-negative floats order as their
 * bits, so an integer maximum is exact and order-independent). */
__global__ void k_nu_weights(int m, int nc, const int *__restrict__ sidx, nu_wts w, const float2 *__restrict__ eph,
                             float2 *__restrict__ scw, unsigned *__restrict__ wmax)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    const bool in = p < m;
    const int i = in ? sidx[p] : 0;
    const float2 e = in ? eph[i] : make_float2(0.0f, 0.0f);
    const float f = in && w.scale ? w.scale[i] : 1.0f;
    for (int c = 0; c < nc; c++) {
        float2 v = make_float2(0.0f, 0.0f);
        if (in) {
            const size_t q = (size_t)c * m + i;
            float2 a = w.wc ? w.wc[q] : make_float2(w.wr[q], w.wi ? w.wi[q] : 0.0f);
            a.x *= f;
            a.y *= f;
            v = make_float2(a.x * e.x - a.y * e.y, a.x * e.y + a.y * e.x);
            scw[(size_t)c * m + p] = v;
        }
        if (wmax) {
            float a = fabsf(v.x) + fabsf(v.y);
            for (int o = 16; o > 0; o >>= 1)
                a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o));
            if ((threadIdx.x & 31) == 0)
                atomicMax(wmax + c, __float_as_uint(a));
        }
    }
}

/* The plan's sort by (bin, position): identical positions end up next to
 * each other (the hash of a position's bits below the bin's). */
__global__ void k_nu_key64(int m, const unsigned *__restrict__ key, const float4 *__restrict__ rel,
                           unsigned long long *__restrict__ k64, int *__restrict__ idx)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m)
        return;
    const float4 r = rel[i];
    const unsigned h = (unsigned)__float_as_int(r.x) * 73856093u ^ (unsigned)__float_as_int(r.y) * 19349663u ^
                       (unsigned)__float_as_int(r.z) * 83492791u;
    k64[i] = ((unsigned long long)key[i] << 32) | h;
    idx[i] = i;
}

__global__ void k_nu_gather(int m, const int *__restrict__ idx, const unsigned *__restrict__ key,
                            const float4 *__restrict__ rel, const float2 *__restrict__ cw, unsigned *__restrict__ skey,
                            float4 *__restrict__ srel, float2 *__restrict__ scw, int *__restrict__ sidx)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= m)
        return;
    const int i = idx[p];
    skey[p] = key[i];
    srel[p] = rel[i];
    scw[p] = cw[i];
    sidx[p] = i;
}

/* Exclusive scan, 1024 values per block; block totals to sums. */
__global__ void __launch_bounds__(1024) k_scan_block(const int *__restrict__ in, int *__restrict__ out, int n,
                                                     int *__restrict__ sums)
{
    __shared__ int warp_tot[32];
    const int i = blockIdx.x * 1024 + threadIdx.x;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int v = i < n ? in[i] : 0;
    int x = v;
    for (int o = 1; o < 32; o <<= 1) {
        int y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o)
            x += y;
    }
    if (lane == 31)
        warp_tot[w] = x;
    __syncthreads();
    if (w == 0) {
        int t = warp_tot[lane];
        for (int o = 1; o < 32; o <<= 1) {
            int y = __shfl_up_sync(0xffffffffu, t, o);
            if (lane >= o)
                t += y;
        }
        warp_tot[lane] = t; /* inclusive over warps */
    }
    __syncthreads();
    const int before = w > 0 ? warp_tot[w - 1] : 0;
    if (i < n)
        out[i] = before + x - v;
    if (threadIdx.x == 1023 && sums)
        sums[blockIdx.x] = warp_tot[31];
}

__global__ void k_scan_add(int *__restrict__ out, int n, const int *__restrict__ offs)
{
    const int i = blockIdx.x * 1024 + threadIdx.x;
    if (i < n)
        out[i] += offs[blockIdx.x];
}

__global__ void k_nu_nsub(int nbins, int smmin, int maxsub, const int *__restrict__ count, int *__restrict__ nsub)
{
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nbins)
        return;
    const int c = count[b];
    nsub[b] = c >= smmin ? (c + maxsub - 1) / maxsub : 0;
}

/* subproblem list: (bin, first sample, count) */
__global__ void k_nu_subs(int nbins, int maxsub, const int *__restrict__ bstart, const int *__restrict__ count,
                          const int *__restrict__ nsub, const int *__restrict__ suboff, int3 *__restrict__ subs)
{
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nbins)
        return;
    const int ns = nsub[b];
    for (int q = 0; q < ns; q++) {
        const int p0 = bstart[b] + q * maxsub;
        const int p1 = min(p0 + maxsub, bstart[b] + count[b]);
        subs[suboff[b] + q] = make_int3(b, p0, p1 - p0);
    }
}

__global__ void k_nu_total(int nbins, const int *__restrict__ nsub, const int *__restrict__ suboff, int *__restrict__ total)
{
    *total = suboff[nbins - 1] + nsub[nbins - 1];
}

#include "lm_gpu_nufft_spread.cuh"

/* Centred modes out of the fine grid, divided by the kernel's transform. */
__global__ void k_nu_deconv(long long n, nu_geo geo, const float2 *__restrict__ fine, const float *__restrict__ dx,
                            const float *__restrict__ dy, const float *__restrict__ dz, float *__restrict__ ore,
                            float *__restrict__ oim, float2 *__restrict__ oc)
{
    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n)
        return;
    const int i0 = (int)(q % geo.g[0]);
    const long long r = q / geo.g[0];
    const int i1 = (int)(r % geo.g[1]), i2 = (int)(r / geo.g[1]);
    int l0 = i0 - geo.g[0] / 2, l1 = i1 - geo.g[1] / 2, l2 = i2 - geo.g[2] / 2;
    l0 += l0 < 0 ? geo.nf[0] : 0;
    l1 += l1 < 0 ? geo.nf[1] : 0;
    l2 += l2 < 0 ? geo.nf[2] : 0;
    const float2 v = fine[((size_t)l2 * geo.nf[1] + l1) * geo.nf[0] + l0];
    const float f = dx[i0] * dy[i1] * dz[i2];
    if (oc) {
        oc[q] = make_float2(v.x * f, v.y * f);
        return;
    }
    ore[q] = v.x * f;
    oim[q] = v.y * f;
}


/* A warp per sample (bin order): its W^3 neighbours on the fine grid
 * weighted by the kernel, times the conjugate centring phase, to
 * out[sidx]. */
template <bool D3>
__global__ void __launch_bounds__(256) k_nu_interp(int m, const unsigned *__restrict__ skey,
                                                   const float4 *__restrict__ srel, const int *__restrict__ sidx,
                                                   const float2 *__restrict__ eph, nu_geo geo,
                                                   const float2 *__restrict__ fine, float2 *__restrict__ out)
{
    const int p = (int)(((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    const int lane = threadIdx.x & 31;
    if (p >= m)
        return; /* whole warps */
    const unsigned b = skey[p];
    const int bx = b % geo.nb[0], by = (b / geo.nb[0]) % geo.nb[1], bz = b / (geo.nb[0] * geo.nb[1]);
    const float4 r = srel[p];
    int l0x, l0y, l0z;
    const float kv = nu_lane_value(r, lane, D3, &l0x, &l0y, &l0z);
    l0x += bx * geo.bs[0];
    l0y += by * geo.bs[1];
    l0z += D3 ? bz * geo.bs[2] : 0;
    float ar = 0.0f, ai = 0.0f;
#pragma unroll
    for (int it = 0; it < LM_NU_ITER; it++) {
        float k;
        size_t at;
        if (nu_lane_target<D3>(geo, kv, lane, it, l0x, l0y, l0z, &k, &at)) {
            const float2 f = __ldg(fine + at);
            ar = fmaf(k, f.x, ar);
            ai = fmaf(k, f.y, ai);
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        ar += __shfl_xor_sync(0xffffffffu, ar, o);
        ai += __shfl_xor_sync(0xffffffffu, ai, o);
    }
    if (lane == 0) {
        const int i = sidx[p];
        const float2 e = eph[i]; /* e^(+i 2 pi phi): conjugated here */
        out[i] = make_float2(ar * e.x + ai * e.y, ai * e.x - ar * e.y);
    }
}

/* ---- the engine ---- */

static size_t scan_tmp_ints(long long n)
{
    size_t t = 2;
    while (n > 1024) {
        n = (n + 1023) / 1024;
        t += 2 * (size_t)n;
    }
    return t;
}

/* Exclusive scan of n ints (in -> out); tmp holds scan_tmp_ints(n). */
static lm_code gscan(const int *in, int *out, int n, int *tmp, cudaStream_t st, const char *who, lm_error *err)
{
    lm_code rc = LM_OK;
    const int nb = (n + 1023) / 1024;
    if (nb <= 1) {
        k_scan_block<<<1, 1024, 0, st>>>(in, out, n, NULL);
        LM_GLAUNCH(who, "scan");
        return LM_OK;
    }
    k_scan_block<<<nb, 1024, 0, st>>>(in, out, n, tmp);
    LM_GLAUNCH(who, "scan");
    LM_GTRY(gscan(tmp, tmp + nb, nb, tmp + 2 * nb, st, who, err));
    k_scan_add<<<nb, 1024, 0, st>>>(out, n, tmp + nb);
    LM_GLAUNCH(who, "scan");
done:
    return rc;
}

/* ---- a plan's geometry and sample bins (both types) ---- */

struct nu_bins {
    nu_geo geo;
    long long nfine, nbins;
    size_t tile_bytes;
    bool d3;
    void *scratch;
    unsigned *key, *skey;
    float4 *rel, *srel;
    float2 *cw, *scw, *eph;
    int *sidx, *count, *bstart, *fill, *nsub, *suboff, *dtotal, *stmp;
    unsigned *wmax; /* each weight set's largest |re| + |im| (reproducible spreading) */
    int3 *subs;
    float *dec;
    double *dq;
};

/* The fine grid, bins and tiles of a grid of points (checked). */
static lm_code nu_geometry(const char *who, const lm_points *pts, nu_bins *b, lm_error *err)
{
    memset(b, 0, sizeof *b);
    b->d3 = pts->g[2] > 1;
    b->nfine = b->nbins = 1;
    if (pts->x)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: needs grid points, got explicit positions", who);
    if (pts->g[0] < 2 || pts->g[1] < 2)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: grid %lldx%lldx%lld is not 2D or 3D", who,
                       (long long)pts->g[0], (long long)pts->g[1], (long long)pts->g[2]);
    nu_geo &geo = b->geo;
    for (int a = 0; a < 3; a++) {
        const long long g = pts->g[a];
        if (g > (1 << 20))
            return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: grid axis %d of %lld points is too large", who, a, g);
        geo.g[a] = (int)g;
        if (g == 1) {
            geo.nf[a] = 1;
            geo.bs[a] = 1;
            geo.tl[a] = 1;
        } else {
            long long nf = next_smooth_even(2 * g);
            if (nf < 2 * LM_NU_W)
                nf = next_smooth_even(2 * LM_NU_W);
            geo.nf[a] = (int)nf;
            geo.bs[a] = b->d3 ? 8 : 32;
            geo.tl[a] = geo.bs[a] + LM_NU_W;
        }
        geo.nb[a] = (geo.nf[a] + geo.bs[a] - 1) / geo.bs[a];
        b->nfine *= geo.nf[a];
        b->nbins *= geo.nb[a];
    }
    if (b->nfine > (long long)LM_MAX_ELEMENTS || b->nbins > (1LL << 30))
        return lm_fail(err, LM_ERR_NOMEM, "%s: a %dx%dx%d fine grid is absurd", who, geo.nf[0], geo.nf[1], geo.nf[2]);
    b->tile_bytes = (size_t)geo.tl[0] * geo.tl[1] * geo.tl[2] * sizeof(float2);
    return LM_OK;
}

/* A plan's device memory but the fine grids, in one allocation: m
 * samples, nch weight sets spread together. */
static lm_code nu_scratch(const char *who, int m, int nch, int maxsub, nu_bins *b, lm_error *err)
{
    const size_t nbins = (size_t)b->nbins;
    const size_t nsubmax = nbins + (size_t)m / maxsub + 1;
    const size_t sz[] = {(size_t)m * sizeof(unsigned), (size_t)m * sizeof(unsigned), (size_t)m * sizeof(float4),
                         (size_t)m * sizeof(float4),   (size_t)m * sizeof(float2),
                         (size_t)m * (size_t)nch * sizeof(float2),
                         nbins * sizeof(int),  nbins * sizeof(int),  nbins * sizeof(int),
                         nbins * sizeof(int),  nbins * sizeof(int),  64,
                         nsubmax * sizeof(int3),       scan_tmp_ints((long long)nbins) * sizeof(int),
                         ((size_t)b->geo.g[0] + b->geo.g[1] + b->geo.g[2]) * sizeof(float),
                         2 * LM_NU_Q * sizeof(double), (size_t)m * sizeof(int), (size_t)m * sizeof(float2),
                         LM_NU_NCH * sizeof(unsigned)};
    size_t tot = 0, off = 0;
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++)
        tot += (sz[i] + 255) / 256 * 256;
    lm_code rc = lm_gmalloc(&b->scratch, tot, err, who, "the sample bins");
    if (rc != LM_OK)
        return rc;
    char *base = (char *)b->scratch;
    void *ptrs[sizeof sz / sizeof sz[0]];
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) {
        ptrs[i] = base + off;
        off += (sz[i] + 255) / 256 * 256;
    }
    b->key = (unsigned *)ptrs[0];
    b->skey = (unsigned *)ptrs[1];
    b->rel = (float4 *)ptrs[2];
    b->srel = (float4 *)ptrs[3];
    b->cw = (float2 *)ptrs[4];
    b->scw = (float2 *)ptrs[5];
    b->count = (int *)ptrs[6];
    b->bstart = (int *)ptrs[7];
    b->fill = (int *)ptrs[8];
    b->nsub = (int *)ptrs[9];
    b->suboff = (int *)ptrs[10];
    b->dtotal = (int *)ptrs[11];
    b->subs = (int3 *)ptrs[12];
    b->stmp = (int *)ptrs[13];
    b->dec = (float *)ptrs[14];
    b->dq = (double *)ptrs[15];
    b->sidx = (int *)ptrs[16];
    b->eph = (float2 *)ptrs[17];
    b->wmax = (unsigned *)ptrs[18];
    return LM_OK;
}

/* Deapodisation factors, then every sample binned and counting-sorted
 * (first weight set in scw; s->wr NULL: unit weights). */
static lm_code nu_bin(const char *who, const lm_gsamples *s, const lm_points *pts, nu_bins *b, cudaStream_t st,
                      lm_error *err)
{
    lm_code rc = LM_OK;
    const int m = (int)s->m;
    const nu_geo &geo = b->geo;
    double hq[2 * LM_NU_Q];
    pthread_once(&g_q_once, quad_init);
    memcpy(hq, g_qz, sizeof g_qz);
    memcpy(hq + LM_NU_Q, g_qf, sizeof g_qf);
    LM_GCHECK(cudaMemcpyAsync(b->dq, hq, sizeof hq, cudaMemcpyHostToDevice, st), who, "upload");
    k_nu_deap<<<(geo.g[0] + geo.g[1] + geo.g[2] + 127) / 128, 128, 0, st>>>(geo, b->dq, b->dec);
    LM_GLAUNCH(who, "deapodisation");
    LM_GCHECK(cudaMemsetAsync(b->count, 0, (size_t)b->nbins * sizeof(int), st), who, "clear");
    LM_GCHECK(cudaMemsetAsync(b->fill, 0, (size_t)b->nbins * sizeof(int), st), who, "clear");
    k_nu_prep<<<(m + 255) / 256, 256, 0, st>>>(m, s->kx, s->ky, s->kz, s->wr, s->wi, geo, 1.0 / (double)pts->s[0],
                                               1.0 / (double)pts->s[1], 1.0 / (double)pts->s[2],
                                               (double)(pts->g[0] / 2 - pts->c[0]), (double)(pts->g[1] / 2 - pts->c[1]),
                                               (double)(pts->g[2] / 2 - pts->c[2]), b->key, b->count, b->rel, b->cw,
                                               b->eph);
    LM_GLAUNCH(who, "bin samples");
    LM_GTRY(gscan(b->count, b->bstart, (int)b->nbins, b->stmp, st, who, err));
    k_nu_scatter<<<(m + 255) / 256, 256, 0, st>>>(m, b->key, b->bstart, b->fill, b->rel, b->cw, b->skey, b->srel,
                                                  b->scw, b->sidx);
    LM_GLAUNCH(who, "sort samples");
done:
    return rc;
}

/* The per-device fine grids (nch of them) and, for the pruned transforms,
 * the twiddles and shared-memory limits; else the cuFFT plan. The caller
 * holds the device lock. */
static lm_code nu_cache_ready(const char *who, nu_cache *cache, const nu_bins *b, int nch, int prune, int repro,
                              cudaStream_t st, lm_error *err)
{
    lm_code rc = LM_OK;
    const nu_geo &geo = b->geo;
    if (repro && cache->fix_cap < (size_t)b->nfine * nch * sizeof(longlong2)) {
        lm_gfree(cache->fix);
        cache->fix = NULL;
        cache->fix_cap = 0;
        LM_GTRY(lm_gmalloc((void **)&cache->fix, (size_t)b->nfine * nch * sizeof(longlong2), err, who,
                           "the fixed-point fine grids"));
        cache->fix_cap = (size_t)b->nfine * nch * sizeof(longlong2);
    }
    if (cache->fine_cap < (size_t)b->nfine * nch * sizeof(float2)) {
        lm_gfree(cache->fine);
        cache->fine = NULL;
        cache->fine_cap = 0;
        LM_GTRY(lm_gmalloc((void **)&cache->fine, (size_t)b->nfine * nch * sizeof(float2), err, who,
                           "the fine grids"));
        cache->fine_cap = (size_t)b->nfine * nch * sizeof(float2);
    }
    if (prune) {
        for (int a = 0; a < 3; a++) {
            if (geo.nf[a] == 1 || cache->twlen[a] == geo.nf[a])
                continue;
            lm_gfree(cache->tw[a]);
            cache->tw[a] = NULL;
            cache->twlen[a] = 0;
            LM_GTRY(upload_twiddles(geo.nf[a], geo.nf[a], &cache->tw[a], who, err));
            cache->twlen[a] = geo.nf[a];
        }
        for (int a = 0; a < 3; a++)
            if (geo.nf[a] > 1)
                LM_GCHECK(lm_gnu_fft_setup(geo.nf[a]), who, "shared memory");
    } else if (!cache->have_plan || cache->pdims[0] != geo.nf[0] || cache->pdims[1] != geo.nf[1] ||
               cache->pdims[2] != geo.nf[2]) {
        if (cache->have_plan)
            (void)cufftDestroy(cache->plan);
        cache->have_plan = 0;
        if (b->d3)
            LM_GFFT(cufftPlan3d(&cache->plan, geo.nf[2], geo.nf[1], geo.nf[0], CUFFT_C2C), who, "FFT plan");
        else
            LM_GFFT(cufftPlan2d(&cache->plan, geo.nf[1], geo.nf[0], CUFFT_C2C), who, "FFT plan");
        cache->have_plan = 1;
        cache->pdims[0] = geo.nf[0];
        cache->pdims[1] = geo.nf[1];
        cache->pdims[2] = geo.nf[2];
    }
    if (!prune)
        LM_GFFT(cufftSetStream(cache->plan, st), who, "FFT stream");
done:
    return rc;
}

/* ---- the plan: everything that depends on the positions only, made once ---- */

enum { NU_EV = 5 };

struct lm_gnufft_plan {
    nu_bins bn;               /* geometry, sorted samples, subproblems, deapodisation */
    int m, nch, prune, nsubs, maxsub, smmin;
    int merge;                /* samples sorted by position in their bin; warps merge duplicates */
    int v4;                   /* sparse bins' samples spread by pairs of x points (128-bit atomics) */
    int overlap;              /* the shared-memory spread on a second stream, beside the global one */
    int repro;                /* spread in 64-bit fixed point: the same result run to run */
    longlong2 *fix;           /* repro: nch fixed-point fine grids */
    cudaStream_t side;
    cudaEvent_t fork, join;
    float2 *fine;             /* nch fine grids */
    float2 *tw[3];            /* the pruned transform's twiddles */
    cufftHandle fft;          /* own cuFFT plan (fine grids that are not powers of two) */
    int have_fft;
    cufftHandle *fftp;        /* the one used: &fft, or the device cache's */
    int own;                  /* fine, tw and fft are the plan's (else the device cache's) */
    int timing, last_type;
    cudaEvent_t ev[NU_EV];
    double make_s;
};


void lm_gnufft_plan_free(lm_gnufft_plan *p)
{
    if (!p)
        return;
    for (int i = 0; i < NU_EV; i++)
        if (p->ev[i])
            (void)cudaEventDestroy(p->ev[i]);
    if (p->fork)
        (void)cudaEventDestroy(p->fork);
    if (p->join)
        (void)cudaEventDestroy(p->join);
    if (p->side)
        (void)cudaStreamDestroy(p->side);
    if (p->own) {
        lm_gfree(p->fine);
        lm_gfree(p->fix);
        for (int a = 0; a < 3; a++)
            lm_gfree(p->tw[a]);
        if (p->have_fft)
            (void)cufftDestroy(p->fft);
    }
    lm_gfree(p->bn.scratch);
    free(p);
}

/* The fine grids, twiddles (or cuFFT plan) of a plan of its own. */
static lm_code plan_own_grids(const char *who, lm_gnufft_plan *p, lm_error *err)
{
    lm_code rc = LM_OK;
    const nu_geo &geo = p->bn.geo;
    LM_GTRY(lm_gmalloc((void **)&p->fine, (size_t)p->bn.nfine * p->nch * sizeof(float2), err, who, "the fine grids"));
    if (p->repro)
        LM_GTRY(lm_gmalloc((void **)&p->fix, (size_t)p->bn.nfine * p->nch * sizeof(longlong2), err, who,
                           "the fixed-point fine grids"));
    if (p->prune) {
        for (int a = 0; a < 3; a++)
            if (geo.nf[a] > 1) {
                LM_GTRY(upload_twiddles(geo.nf[a], geo.nf[a], &p->tw[a], who, err));
                LM_GCHECK(lm_gnu_fft_setup(geo.nf[a]), who, "shared memory");
            }
    } else {
        if (p->bn.d3)
            LM_GFFT(cufftPlan3d(&p->fft, geo.nf[2], geo.nf[1], geo.nf[0], CUFFT_C2C), who, "FFT plan");
        else
            LM_GFFT(cufftPlan2d(&p->fft, geo.nf[1], geo.nf[0], CUFFT_C2C), who, "FFT plan");
        p->have_fft = 1;
    }
    p->fftp = &p->fft;
done:
    return rc;
}

/* The sorted order by (bin, position): a radix sort of 64-bit keys in
 * scratch of its own, freed before the plan is done. */
static lm_code plan_sort_positions(const char *who, lm_gnufft_plan *p, cudaStream_t st, lm_error *err)
{
    lm_code rc = LM_OK;
    nu_bins &bn = p->bn;
    const int m = p->m;
    int bits = 32;
    while (bits < 64 && (1ULL << (bits - 32)) < (unsigned long long)bn.nbins)
        bits++;
    void *buf = NULL, *tmp = NULL;
    size_t tmp_bytes = 0;
    unsigned long long *k64 = NULL, *k64s = NULL;
    int *idx = NULL, *idxs = NULL;
    LM_GCHECK(cub::DeviceRadixSort::SortPairs(NULL, tmp_bytes, k64, k64s, idx, idxs, m, 0, bits, st), who, "sort");
    LM_GTRY(lm_gmalloc(&buf, (size_t)m * 24 + 256, err, who, "the sort"));
    LM_GTRY(lm_gmalloc(&tmp, tmp_bytes > 0 ? tmp_bytes : 1, err, who, "the sort"));
    k64 = (unsigned long long *)buf;
    k64s = k64 + m;
    idx = (int *)(k64s + m);
    idxs = idx + m;
    k_nu_key64<<<(m + 255) / 256, 256, 0, st>>>(m, bn.key, bn.rel, k64, idx);
    LM_GLAUNCH(who, "sort keys");
    LM_GCHECK(cub::DeviceRadixSort::SortPairs(tmp, tmp_bytes, k64, k64s, idx, idxs, m, 0, bits, st), who, "sort");
    k_nu_gather<<<(m + 255) / 256, 256, 0, st>>>(m, idxs, bn.key, bn.rel, bn.cw, bn.skey, bn.srel, bn.scw, bn.sidx);
    LM_GLAUNCH(who, "sort");
    LM_GCHECK(cudaStreamSynchronize(st), who, "sort"); /* before the sort's memory goes */
done:
    lm_gfree(tmp);
    lm_gfree(buf);
    return rc;
}

/* The plan of the samples s (coordinates on the device; weights unused) on
 * the grid pts for up to max_sets weight sets per group (1..4). cache: the
 * device cache's fine grids and transforms are borrowed (one-shot calls,
 * under the device lock); NULL: the plan has its own. Reads the subproblem
 * count back once (the only host sync). */
static lm_code plan_make(const char *who, const lm_gsamples *s, const lm_points *pts, int max_sets, nu_cache *cache,
                         cudaStream_t st, lm_gnufft_plan **out, lm_error *err)
{
    lm_code rc = LM_OK;
    const double t0 = lm_gnow();
    *out = NULL;
    lm_gnufft_plan *p = (lm_gnufft_plan *)calloc(1, sizeof *p);
    if (!p)
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory for the NUFFT plan", who);
    LM_GTRY(nu_geometry(who, pts, &p->bn, err));
    {
        nu_bins &bn = p->bn;
        const nu_geo &geo = bn.geo;
        const int m = (int)s->m;
        const long long nbins = bn.nbins;
        if (s->m > (1LL << 30))
            LM_GTRY(lm_fail(err, LM_ERR_UNSUPPORTED, "%s: %lld samples are too many", who, (long long)s->m));
        p->m = m;
        p->nch = max_sets < 1 ? 1 : max_sets > LM_NU_NCH ? LM_NU_NCH : max_sets;
        p->prune = lm_gnu_prunable(geo);
        const lm_tuning *tu = lm_tuning_get();
        p->maxsub = tu->gpu_nufft_maxsub ? tu->gpu_nufft_maxsub : LM_NU_MAXSUB;
        p->repro = tu->gpu_nufft_repro;
        p->smmin = tu->gpu_nufft_smmin ? tu->gpu_nufft_smmin : p->repro ? LM_NU_SM_MIN_FIX : LM_NU_SM_MIN;
        p->merge = tu->gpu_nufft_merge;
        p->v4 = tu->gpu_nufft_v4;
        p->overlap = tu->gpu_nufft_overlap;
        int fix_sets = LM_NU_NCH; /* fixed-point tiles are twice as large: the sets a block's shared memory holds */
        if (p->repro) {
            int dev = 0, optin = 48 * 1024;
            if (cudaGetDevice(&dev) == cudaSuccess)
                (void)cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
            while (fix_sets > 1 && 2 * bn.tile_bytes * (size_t)fix_sets > (size_t)optin)
                fix_sets--;
            if (2 * bn.tile_bytes > (size_t)optin)
                p->repro = 0; /* (no such device: a 3D tile is 44 KB) */
            else if (p->nch > fix_sets)
                p->nch = fix_sets;
        }
        if (p->overlap) {
            LM_GCHECK(cudaStreamCreateWithFlags(&p->side, cudaStreamNonBlocking), who, "stream");
            LM_GCHECK(cudaEventCreateWithFlags(&p->fork, cudaEventDisableTiming), who, "events");
            LM_GCHECK(cudaEventCreateWithFlags(&p->join, cudaEventDisableTiming), who, "events");
        }
        p->own = cache == NULL;
        for (int i = 0; i < NU_EV; i++)
            LM_GCHECK(cudaEventCreate(&p->ev[i]), who, "events");
        if (m == 0)
            goto made;
        LM_GTRY(nu_scratch(who, m, p->nch, p->maxsub, &bn, err));
        if (cache) {
            LM_GTRY(nu_cache_ready(who, cache, &bn, p->nch, p->prune, p->repro, st, err));
            p->fine = cache->fine;
            p->fix = cache->fix;
            for (int a = 0; a < 3; a++)
                p->tw[a] = cache->tw[a];
            p->fftp = &cache->plan;
        } else {
            LM_GTRY(plan_own_grids(who, p, err));
        }
        /* the largest tile any plan launches (never lowered: plans share the kernels) */
        if (p->repro && 2 * bn.tile_bytes * fix_sets > 48 * 1024)
            LM_GCHECK(cudaFuncSetAttribute(bn.d3 ? (const void *)k_nu_spread_sm<true, true>
                                                 : (const void *)k_nu_spread_sm<false, true>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)(2 * bn.tile_bytes * fix_sets)),
                      who, "shared memory");
        else if (!p->repro && bn.tile_bytes * LM_NU_NCH > 48 * 1024)
            LM_GCHECK(cudaFuncSetAttribute(bn.d3 ? (const void *)k_nu_spread_sm<true, false>
                                                 : (const void *)k_nu_spread_sm<false, false>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)(bn.tile_bytes * LM_NU_NCH)),
                      who, "shared memory");
        lm_gsamples unit = *s;
        unit.wr = unit.wi = NULL; /* positions and centring phases only */
        LM_GTRY(nu_bin(who, &unit, pts, &bn, st, err));
        if (p->merge)
            LM_GTRY(plan_sort_positions(who, p, st, err));
        k_nu_nsub<<<(unsigned)((nbins + 255) / 256), 256, 0, st>>>((int)nbins, p->smmin, p->maxsub, bn.count, bn.nsub);
        LM_GLAUNCH(who, "subproblems");
        LM_GTRY(gscan(bn.nsub, bn.suboff, (int)nbins, bn.stmp, st, who, err));
        k_nu_subs<<<(unsigned)((nbins + 255) / 256), 256, 0, st>>>((int)nbins, p->maxsub, bn.bstart, bn.count, bn.nsub,
                                                                   bn.suboff, bn.subs);
        LM_GLAUNCH(who, "subproblems");
        k_nu_total<<<1, 1, 0, st>>>((int)nbins, bn.nsub, bn.suboff, bn.dtotal);
        LM_GLAUNCH(who, "subproblems");
        LM_GCHECK(cudaMemcpyAsync(&p->nsubs, bn.dtotal, sizeof(int), cudaMemcpyDeviceToHost, st), who,
                  "subproblem count");
        LM_GCHECK(cudaStreamSynchronize(st), who, "NUFFT plan");
    }
made:
    p->make_s = lm_gnow() - t0;
    *out = p;
    return LM_OK;
done:
    (void)cudaStreamSynchronize(st);
    lm_gnufft_plan_free(p);
    return rc;
}

lm_code lm_gnufft_plan_new(const char *who, const lm_gsamples *s, const lm_points *pts, int max_sets, cudaStream_t st,
                           lm_gnufft_plan **out, lm_error *err)
{
    return plan_make(who, s, pts, max_sets, NULL, st, out, err);
}

void lm_gnufft_plan_timing(lm_gnufft_plan *p, int on)
{
    p->timing = on;
}

double lm_gnufft_plan_make_s(const lm_gnufft_plan *p)
{
    return p->make_s;
}

static void plan_mark(lm_gnufft_plan *p, int i, cudaStream_t st)
{
    if (p->timing)
        (void)cudaEventRecord(p->ev[i], st);
}

int lm_gnufft_plan_stages(lm_gnufft_plan *p, const char **names, double *secs, int max)
{
    static const char *n1[] = {"weights+clear", "spread sm", "spread gm", "fft+deapod"};
    static const char *n1o[] = {"weights+clear", "launch", "spread gm||sm", "fft+deapod"};
    static const char *n2[] = {"apod+fft", "interp", "rest"};
    if (!p->timing || !p->last_type || cudaEventSynchronize(p->ev[NU_EV - 1]) != cudaSuccess)
        return 0;
    const int ns = p->last_type == 1 ? 4 : 3;
    int k = 0;
    for (int i = 0; i <= ns && k < max; i++) {
        float ms = 0;
        /* entry 0: the whole call; then stage i between events i-1 and i (the last ends at the final event) */
        const cudaEvent_t a = i == 0 ? p->ev[0] : p->ev[i - 1], b = i == 0 || i == ns ? p->ev[NU_EV - 1] : p->ev[i];
        if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess)
            ms = -1;
        names[k] = i == 0 ? "total" : p->last_type == 1 ? (p->overlap ? n1o : n1)[i - 1] : n2[i - 1];
        secs[k++] = ms * 1e-3;
    }
    (void)cudaGetLastError();
    return k;
}

/* The two spreads of a group of nc weight sets (kernel instances by
 * dimension and accumulation). */
template <bool D3, bool FIX>
static void spread_sm(const lm_gnufft_plan *p, int nc, cudaStream_t ss)
{
    const nu_bins &bn = p->bn;
    k_nu_spread_sm<D3, FIX><<<p->nsubs, 256, (FIX ? 2 : 1) * bn.tile_bytes * nc, ss>>>(
        bn.subs, bn.srel, bn.scw, p->m, nc, bn.geo, p->fine, p->fix, bn.wmax, bn.nfine, p->merge);
}

static void launch_spread_sm(const lm_gnufft_plan *p, int nc, cudaStream_t ss)
{
    if (p->bn.d3)
        p->repro ? spread_sm<true, true>(p, nc, ss) : spread_sm<true, false>(p, nc, ss);
    else
        p->repro ? spread_sm<false, true>(p, nc, ss) : spread_sm<false, false>(p, nc, ss);
}

template <bool D3, bool FIX>
static void spread_gm(const lm_gnufft_plan *p, int nc, cudaStream_t st)
{
    const nu_bins &bn = p->bn;
    k_nu_spread_gm<D3, FIX><<<(unsigned)(((long long)p->m * 32 + 255) / 256), 256, 0, st>>>(
        p->m, p->smmin, bn.skey, bn.count, bn.srel, bn.scw, nc, bn.geo, p->fine, p->fix, bn.wmax, bn.nfine, p->v4);
}

static void launch_spread_gm(const lm_gnufft_plan *p, int nc, cudaStream_t st)
{
    if (p->bn.d3)
        p->repro ? spread_gm<true, true>(p, nc, st) : spread_gm<true, false>(p, nc, st);
    else
        p->repro ? spread_gm<false, true>(p, nc, st) : spread_gm<false, false>(p, nc, st);
}

lm_code lm_gnufft_exec1(lm_gnufft_plan *p, const char *who, const lm_gnufft_wts *wt, long long nsets, float *d_re,
                        float *d_im, float2 *d_c, cudaStream_t st, const lm_ctl *ctl, lm_error *err)
{
    lm_code rc = LM_OK;
    const nu_bins &bn = p->bn;
    const nu_geo &geo = bn.geo;
    const int m = p->m;
    const long long n = (long long)geo.g[0] * geo.g[1] * geo.g[2], nfine = bn.nfine;
    nsets = nsets > 1 ? nsets : 1;
    p->last_type = 1;
    plan_mark(p, 0, st);
    if (m == 0) {
        if (d_c)
            LM_GCHECK(cudaMemsetAsync(d_c, 0, (size_t)(n * nsets) * sizeof(float2), st), who, "clear");
        else {
            LM_GCHECK(cudaMemsetAsync(d_re, 0, (size_t)(n * nsets) * sizeof(float), st), who, "clear");
            LM_GCHECK(cudaMemsetAsync(d_im, 0, (size_t)(n * nsets) * sizeof(float), st), who, "clear");
        }
        for (int i = 1; i < NU_EV; i++)
            plan_mark(p, i, st);
        return LM_OK;
    }
    if (!p->prune)
        LM_GFFT(cufftSetStream(*p->fftp, st), who, "FFT stream");
    for (long long set0 = 0; set0 < nsets; set0 += p->nch) {
        const int nc = nsets - set0 < p->nch ? (int)(nsets - set0) : p->nch;
        nu_wts w;
        w.wr = wt->wr ? wt->wr + set0 * m : NULL;
        w.wi = wt->wi ? wt->wi + set0 * m : NULL;
        w.wc = wt->wc ? wt->wc + set0 * m : NULL;
        w.scale = wt->scale;
        unsigned *wmax = p->repro ? bn.wmax : NULL;
        if (wmax)
            LM_GCHECK(cudaMemsetAsync(wmax, 0, LM_NU_NCH * sizeof(unsigned), st), who, "clear");
        k_nu_weights<<<(m + 255) / 256, 256, 0, st>>>(m, nc, bn.sidx, w, bn.eph, bn.scw, wmax);
        LM_GLAUNCH(who, "weights");
        if (p->repro)
            LM_GCHECK(cudaMemsetAsync(p->fix, 0, (size_t)nfine * nc * sizeof(longlong2), st), who, "clear fine grid");
        else
            LM_GCHECK(cudaMemsetAsync(p->fine, 0, (size_t)nfine * nc * sizeof(float2), st), who, "clear fine grid");
        if (set0 == 0)
            plan_mark(p, 1, st);
        /* dense bins in shared memory (on the side stream when overlapping:
         * both only add into the fine grid; the global path is bound by L2
         * atomics, the shared one by the SMs) */
        const cudaStream_t ss = p->overlap ? p->side : st;
        if (p->overlap) {
            LM_GCHECK(cudaEventRecord(p->fork, st), who, "fork");
            LM_GCHECK(cudaStreamWaitEvent(ss, p->fork, 0), who, "fork");
        }
        if (p->nsubs > 0) {
            launch_spread_sm(p, nc, ss);
            LM_GLAUNCH(who, "spread");
        }
        if (set0 == 0)
            plan_mark(p, 2, st); /* overlapping: only the launch */
        launch_spread_gm(p, nc, st);
        LM_GLAUNCH(who, "spread");
        if (p->overlap) {
            LM_GCHECK(cudaEventRecord(p->join, ss), who, "join");
            LM_GCHECK(cudaStreamWaitEvent(st, p->join, 0), who, "join");
        }
        if (set0 == 0)
            plan_mark(p, 3, st);
        if (ctl && lm_gctl_report(ctl, ((double)set0 + 0.4 * nc) / (double)nsets)) {
            rc = lm_fail(err, LM_ERR_CANCELLED, "%s: cancelled", who);
            goto done;
        }
        for (int c = 0; c < nc; c++) {
            float2 *fc = p->fine + (size_t)c * nfine;
            if (p->repro) {
                k_nu_unfix<<<(unsigned)((nfine + 255) / 256), 256, 0, st>>>(nfine, p->fix + (size_t)c * nfine, bn.wmax,
                                                                           c, m, fc);
                LM_GLAUNCH(who, "fixed point");
            }
            float *ore = d_c ? NULL : d_re + (set0 + c) * n, *oim = d_c ? NULL : d_im + (set0 + c) * n;
            float2 *oc = d_c ? d_c + (set0 + c) * n : NULL;
            if (p->prune) {
                LM_GTRY(lm_gnu_prune_apply(geo, fc, p->tw, bn.dec, ore, oim, oc, st, who, err));
                continue;
            }
            LM_GFFT(cufftExecC2C(*p->fftp, (cufftComplex *)fc, (cufftComplex *)fc, CUFFT_INVERSE), who, "FFT");
            k_nu_deconv<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(n, geo, fc, bn.dec, bn.dec + geo.g[0],
                                                                    bn.dec + geo.g[0] + geo.g[1], ore, oim, oc);
            LM_GLAUNCH(who, "deapodise");
        }
    }
    plan_mark(p, NU_EV - 1, st);
done:
    return rc;
}

lm_code lm_gnufft_exec2(lm_gnufft_plan *p, const char *who, const float2 *x, const float2 *sc, long long nsets,
                        float2 *out, cudaStream_t st, lm_error *err)
{
    lm_code rc = LM_OK;
    const nu_bins &bn = p->bn;
    const int m = p->m;
    const long long n = (long long)bn.geo.g[0] * bn.geo.g[1] * bn.geo.g[2];
    if (!p->prune)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: the forward NUFFT needs fine grids of powers of two from 16 to "
                       "512, got %dx%dx%d", who, bn.geo.nf[0], bn.geo.nf[1], bn.geo.nf[2]);
    nsets = sc ? (nsets > 1 ? nsets : 1) : 1;
    p->last_type = 2;
    plan_mark(p, 0, st);
    if (m == 0) {
        for (int i = 1; i < NU_EV; i++)
            plan_mark(p, i, st);
        return LM_OK;
    }
    for (long long c = 0; c < nsets; c++) {
        LM_GTRY(lm_gnu_expand_apply(bn.geo, x, sc ? sc + c * n : NULL, p->fine, p->tw, bn.dec, st, who, err));
        if (c == 0)
            plan_mark(p, 1, st);
        if (bn.d3)
            k_nu_interp<true><<<(unsigned)(((long long)m * 32 + 255) / 256), 256, 0, st>>>(
                m, bn.skey, bn.srel, bn.sidx, bn.eph, bn.geo, p->fine, out + c * m);
        else
            k_nu_interp<false><<<(unsigned)(((long long)m * 32 + 255) / 256), 256, 0, st>>>(
                m, bn.skey, bn.srel, bn.sidx, bn.eph, bn.geo, p->fine, out + c * m);
        LM_GLAUNCH(who, "interpolate");
        if (c == 0)
            plan_mark(p, 2, st);
    }
    plan_mark(p, NU_EV - 1, st);
done:
    return rc;
}

/* ---- one-shot calls: a plan on the device cache's grids, one exec, freed ---- */

lm_code lm_gnufft_run(const char *who, const lm_gsamples *s, const lm_points *pts, float *d_re, float *d_im,
                      cudaStream_t st, const lm_ctl *ctl, double *kernel_s, lm_error *err)
{
    lm_code rc = LM_OK;
    const long long nsets = s->nsets > 1 ? s->nsets : 1;
    int device = 0, locked = 0;
    lm_gnufft_plan *p = NULL;
    lm_gnufft_wts w = {s->wr, s->wi, NULL, NULL};
    LM_GCHECK(cudaGetDevice(&device), who, "current device");
    lm_gdevice_lock(device);
    locked = 1;
    LM_GTRY(plan_make(who, s, pts, nsets < LM_NU_NCH ? (int)nsets : LM_NU_NCH, &g_nu[device % 64], st, &p, err));
    p->timing = 1;
    LM_GTRY(lm_gnufft_exec1(p, who, &w, nsets, d_re, d_im, NULL, st, ctl, err));
    LM_GCHECK(cudaEventSynchronize(p->ev[NU_EV - 1]), who, "kernel");
    {
        const char *names[8];
        double secs[8];
        const int k = lm_gnufft_plan_stages(p, names, secs, 8);
        /* the plan's time (binning, sort, subproblems and their count read back) is a stage of the call */
        lm_gstats_stage("plan", p->make_s);
        for (int i = 1; i < k; i++)
            lm_gstats_stage(names[i], secs[i]);
        if (kernel_s)
            *kernel_s = p->make_s + (k > 0 ? secs[0] : 0);
    }
    (void)lm_gctl_report(ctl, 1.0);
done:
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st);
    lm_gnufft_plan_free(p);
    if (locked)
        lm_gdevice_unlock(device);
    return rc;
}

lm_code lm_gnufft_type2(const char *who, const lm_gsamples *s, const lm_points *pts, const float2 *x,
                        const float2 *sc, long long nsets, float2 *out, cudaStream_t st, lm_error *err)
{
    lm_code rc = LM_OK;
    int device = 0, locked = 0;
    lm_gnufft_plan *p = NULL;
    nu_bins bn;
    LM_GTRY(nu_geometry(who, pts, &bn, err));
    if (!lm_gnu_prunable(bn.geo)) /* refused before the device cache grows a cuFFT plan */
        return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: the forward NUFFT needs fine grids of powers of two from 16 to "
                       "512, got %dx%dx%d", who, bn.geo.nf[0], bn.geo.nf[1], bn.geo.nf[2]);
    if (s->m == 0)
        return LM_OK;
    LM_GCHECK(cudaGetDevice(&device), who, "current device");
    lm_gdevice_lock(device);
    locked = 1;
    LM_GTRY(plan_make(who, s, pts, 1, &g_nu[device % 64], st, &p, err));
    LM_GTRY(lm_gnufft_exec2(p, who, x, sc, nsets, out, st, err));
    LM_GCHECK(cudaStreamSynchronize(st), who, "forward NUFFT");
done:
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st);
    lm_gnufft_plan_free(p);
    if (locked)
        lm_gdevice_unlock(device);
    return rc;
}
