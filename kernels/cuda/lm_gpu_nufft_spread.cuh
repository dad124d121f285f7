/* gpu-nufft's spreading kernels (lm_gpu_nufft.cu includes this once, where
 * they stand in its order): the kernel's values per lane, the shared-memory
 * and global-memory spreads, and the 64-bit fixed-point sums of the
 * reproducible mode. Needs lm_gpu_nufft.cu's LM_NU_* constants and nu_geo. */
#ifndef LM_GPU_NUFFT_SPREAD_CUH
#define LM_GPU_NUFFT_SPREAD_CUH

/* ---- reproducible spreading: 64-bit fixed point ---- */

#define LM_NU_FIX_ONE 2305843009213693952.0 /* 2^61: a set's bound; int64 holds 4x that */

/* Set ch's scale from its bound m max(|re| + |im|) (0 for a set of zeros;
 * clamped where absurdly small weights would overflow a float). */
static __device__ __forceinline__ float nu_fix_scale(const unsigned *__restrict__ wmax, int ch, int m)
{
    const double b = (double)m * (double)__uint_as_float(wmax[ch]);
    if (!(b > 0.0))
        return 0.0f;
    const double s = LM_NU_FIX_ONE / b;
    return s < 1e38 ? (float)s : 1e38f;
}

static __device__ __forceinline__ unsigned long long nu_fix(float v)
{
    return (unsigned long long)__float2ll_rn(v);
}

/* (vx, vy) times the set's scale added to a fixed-point pair: two's-
 * complement sums wrap alike signed and unsigned, in any order. */
static __device__ __forceinline__ void fix_add2(unsigned long long *dst, float vx, float vy)
{
    atomicAdd(dst, nu_fix(vx));
    atomicAdd(dst + 1, nu_fix(vy));
}

/* Set ch's fixed-point fine grid to floats, for the transform. */
__global__ void k_nu_unfix(long long n, const longlong2 *__restrict__ fix, const unsigned *__restrict__ wmax, int ch,
                           int m, float2 *__restrict__ fine)
{
    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n)
        return;
    const float s = nu_fix_scale(wmax, ch, m), inv = s > 0.0f ? 1.0f / s : 0.0f;
    const longlong2 v = fix[q];
    fine[q] = make_float2(__ll2float_rn(v.x) * inv, __ll2float_rn(v.y) * inv);
}

/* Spreading is warp-cooperative: a warp takes one sample at a time; lanes
 * 0 .. 3W-1 evaluate the kernel's 3W values (lane = axis * W + d), and the
 * W^3 target points are dealt to the lanes, which fetch their three factors
 * by shuffles. A warp's atomics then hit W^3 distinct addresses (no
 * intra-warp conflicts even where many samples coincide, as at the centre
 * of a radial trajectory). */
#define LM_NU_PTS (LM_NU_W * LM_NU_W * LM_NU_W)
#define LM_NU_ITER ((LM_NU_PTS + 31) / 32)

/* This lane's kernel value (lane < 3W) and the sample's l0 per axis. */
static __device__ __forceinline__ float nu_lane_value(const float4 r, int lane, bool d3, int *l0x, int *l0y, int *l0z)
{
    const float hw = 0.5f * LM_NU_W, inv = 1.0f / hw, beta = (float)LM_NU_BETA;
    *l0x = (int)ceilf(r.x - hw);
    *l0y = (int)ceilf(r.y - hw);
    *l0z = d3 ? (int)ceilf(r.z - hw) : 0;
    const int a = lane / LM_NU_W, d = lane - a * LM_NU_W;
    if (a > 2)
        return 0.0f;
    if (a == 2 && !d3)
        return d == 0 ? 1.0f : 0.0f;
    const float u = a == 0 ? r.x : a == 1 ? r.y : r.z;
    const int l0 = a == 0 ? *l0x : a == 1 ? *l0y : *l0z;
    const float z = ((float)l0 - u + (float)d) * inv;
    const float t = 1.0f - z * z;
    return t > 0.0f ? expf(beta * (sqrtf(t) - 1.0f)) : 0.0f;
}

static __device__ __forceinline__ void atomic_add2(float2 *dst, float vx, float vy)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd(dst, make_float2(vx, vy)); /* one vector atomic (global memory, sm_90) */
#else
    atomicAdd(&dst->x, vx);
    atomicAdd(&dst->y, vy);
#endif
}

/* (vx, vy) added to a float2 in shared memory with one 64-bit compare-and-
 * swap: shared float atomics are CAS loops on sm_70..sm_90 anyway (SASS
 * ATOMS.CAST.SPIN), so one loop for both halves halves the work. */
static __device__ __forceinline__ void smem_add2(float2 *a, float vx, float vy)
{
    unsigned long long *p = (unsigned long long *)a;
    unsigned long long old = *p, assumed;
    do {
        assumed = old;
        const float2 f = make_float2(__int_as_float((int)(unsigned)(assumed & 0xffffffffu)) + vx,
                                     __int_as_float((int)(unsigned)(assumed >> 32)) + vy);
        const unsigned long long nv =
            (unsigned long long)(unsigned)__float_as_int(f.x) | ((unsigned long long)(unsigned)__float_as_int(f.y) << 32);
        old = atomicCAS(p, assumed, nv);
    } while (old != assumed);
}

/* Shared-memory spreading of one subproblem; D3: z is a spread axis; FIX:
 * the tile and the grid in fixed point (fix, wmax), else floats (fine). */
template <bool D3, bool FIX>
__global__ void __launch_bounds__(256) k_nu_spread_sm(const int3 *__restrict__ subs, const float4 *__restrict__ srel,
                                                      const float2 *__restrict__ scw, int m, int nc, nu_geo geo,
                                                      float2 *__restrict__ fine, longlong2 *__restrict__ fix,
                                                      const unsigned *__restrict__ wmax, long long nfine, int merge)
{
    extern __shared__ __align__(16) unsigned char nu_smem[];
    float2 *tile = (float2 *)nu_smem;
    unsigned long long *tfix = (unsigned long long *)nu_smem; /* FIX: re, im per point */
    const int3 sp = subs[blockIdx.x];
    const int b = sp.x;
    const int bx = b % geo.nb[0], by = (b / geo.nb[0]) % geo.nb[1], bz = b / (geo.nb[0] * geo.nb[1]);
    /* the tile's extents are the geometry's (nu_geometry: bins of 8^3 in
     * 3D, 32^2 in 2D, plus W): constants, so the index arithmetic below
     * divides by constants */
    constexpr int TX = D3 ? 8 + LM_NU_W : 32 + LM_NU_W, TY = TX, TZ = D3 ? TX : 1;
    constexpr int tsize = TX * TY * TZ;
    const int half = LM_NU_W / 2;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const int npts = D3 ? LM_NU_PTS : LM_NU_W * LM_NU_W;
    float fs[LM_NU_NCH];
#pragma unroll
    for (int ch = 0; ch < LM_NU_NCH; ch++)
        fs[ch] = FIX && ch < nc ? nu_fix_scale(wmax, ch, m) : 0.0f;
    for (int q = threadIdx.x; q < tsize * nc; q += blockDim.x) {
        if (FIX)
            tfix[2 * q] = tfix[2 * q + 1] = 0ULL;
        else
            tile[q] = make_float2(0.0f, 0.0f);
    }
    __syncthreads();
    /* merge: each warp takes a contiguous run of the subproblem (the plan
     * sorted a bin's samples by position) and spreads the summed weights of
     * samples at one position once: a radial trajectory puts every spoke's
     * first sample at k = 0, thousands at one point. Else warps stride. */
    const int chunk = merge ? (sp.z + nwarps - 1) / nwarps : 1;
    const int pa = sp.y + (merge ? warp * chunk : warp), pend = merge ? min(pa + chunk, sp.y + sp.z) : sp.y + sp.z;
    float2 c[LM_NU_NCH];
#pragma unroll
    for (int ch = 0; ch < LM_NU_NCH; ch++)
        c[ch] = make_float2(0.0f, 0.0f);
    for (int p = pa; p < pend; p += merge ? 1 : nwarps) {
        const float4 r = srel[p];
#pragma unroll
        for (int ch = 0; ch < LM_NU_NCH; ch++)
            if (ch < nc) {
                const float2 v = scw[(size_t)ch * m + p];
                c[ch].x += v.x;
                c[ch].y += v.y;
            }
        if (merge && p + 1 < pend) {
            const float4 rn = srel[p + 1];
            if (rn.x == r.x && rn.y == r.y && rn.z == r.z)
                continue; /* the same position: its weight joins this one's */
        }
        int l0x, l0y, l0z;
        const float kv = nu_lane_value(r, lane, D3, &l0x, &l0y, &l0z);
#pragma unroll
        for (int it = 0; it < LM_NU_ITER; it++) {
            const int q = lane + 32 * it;
            const int dx = q % LM_NU_W, dy = (q / LM_NU_W) % LM_NU_W, dz = q / (LM_NU_W * LM_NU_W);
            const float vx = __shfl_sync(0xffffffffu, kv, dx);
            const float vy = __shfl_sync(0xffffffffu, kv, LM_NU_W + dy);
            const float vz = D3 ? __shfl_sync(0xffffffffu, kv, 2 * LM_NU_W + (dz < LM_NU_W ? dz : 0)) : 1.0f;
            if (q < npts) {
                const float k = vx * vy * vz;
                const int at = ((D3 ? l0z + half + dz : 0) * TY + (l0y + half + dy)) * TX + (l0x + half + dx);
#pragma unroll
                for (int ch = 0; ch < LM_NU_NCH; ch++)
                    if (ch < nc) {
                        if (FIX)
                            fix_add2(tfix + 2 * (ch * tsize + at), c[ch].x * k * fs[ch], c[ch].y * k * fs[ch]);
                        else
                            smem_add2(tile + ch * tsize + at, c[ch].x * k, c[ch].y * k);
                    }
            }
        }
#pragma unroll
        for (int ch = 0; ch < LM_NU_NCH; ch++)
            c[ch] = make_float2(0.0f, 0.0f);
    }
    __syncthreads();
    const int ox = bx * geo.bs[0] - half, oy = by * geo.bs[1] - half, oz = D3 ? bz * geo.bs[2] - half : 0;
    /* a tile wider than a small fine grid wraps more than once: true modulo */
    const bool narrow = geo.nf[0] < TX || geo.nf[1] < TY || (D3 && geo.nf[2] < TZ);
    for (int q = threadIdx.x; q < tsize; q += blockDim.x) {
        int ix = ox + q % TX, iy = oy + (q / TX) % TY, iz = oz + q / (TX * TY);
        if (narrow) {
            ix = ((ix % geo.nf[0]) + geo.nf[0]) % geo.nf[0];
            iy = ((iy % geo.nf[1]) + geo.nf[1]) % geo.nf[1];
            iz = ((iz % geo.nf[2]) + geo.nf[2]) % geo.nf[2];
        } else {
            ix = ix < 0 ? ix + geo.nf[0] : ix >= geo.nf[0] ? ix - geo.nf[0] : ix;
            iy = iy < 0 ? iy + geo.nf[1] : iy >= geo.nf[1] ? iy - geo.nf[1] : iy;
            iz = iz < 0 ? iz + geo.nf[2] : iz >= geo.nf[2] ? iz - geo.nf[2] : iz;
        }
        const size_t at = ((size_t)iz * geo.nf[1] + iy) * geo.nf[0] + ix;
        for (int ch = 0; ch < nc; ch++) {
            if (FIX) {
                const unsigned long long a = tfix[2 * (ch * tsize + q)], b = tfix[2 * (ch * tsize + q) + 1];
                unsigned long long *g = (unsigned long long *)(fix + (size_t)ch * nfine + at);
                if (a)
                    atomicAdd(g, a);
                if (b)
                    atomicAdd(g + 1, b);
                continue;
            }
            const float2 v = tile[ch * tsize + q];
            if (v.x != 0.0f || v.y != 0.0f)
                atomic_add2(fine + (size_t)ch * nfine + at, v.x, v.y);
        }
    }
}

/* Target `it` of this lane among a sample's W^3 (2D: W^2) fine-grid
 * neighbours: its kernel weight and its (wrapped) index on the fine grid;
 * false when the lane has no target this round. Every lane must call it
 * (the weights come by shuffles from the lanes that evaluated them). */
template <bool D3>
static __device__ __forceinline__ bool nu_lane_target(const nu_geo &geo, float kv, int lane, int it, int l0x, int l0y,
                                                      int l0z, float *k, size_t *at)
{
    const int q = lane + 32 * it;
    const int dx = q % LM_NU_W, dy = (q / LM_NU_W) % LM_NU_W, dz = q / (LM_NU_W * LM_NU_W);
    const float vx = __shfl_sync(0xffffffffu, kv, dx);
    const float vy = __shfl_sync(0xffffffffu, kv, LM_NU_W + dy);
    const float vz = D3 ? __shfl_sync(0xffffffffu, kv, 2 * LM_NU_W + (dz < LM_NU_W ? dz : 0)) : 1.0f;
    if (q >= (D3 ? LM_NU_PTS : LM_NU_W * LM_NU_W))
        return false;
    int ix = l0x + dx, iy = l0y + dy, iz = D3 ? l0z + dz : 0;
    ix = ix < 0 ? ix + geo.nf[0] : ix >= geo.nf[0] ? ix - geo.nf[0] : ix;
    iy = iy < 0 ? iy + geo.nf[1] : iy >= geo.nf[1] ? iy - geo.nf[1] : iy;
    iz = iz < 0 ? iz + geo.nf[2] : iz >= geo.nf[2] ? iz - geo.nf[2] : iz;
    *k = vx * vy * vz;
    *at = ((size_t)iz * geo.nf[1] + iy) * geo.nf[0] + ix;
    return true;
}

/* (a, b) and (c, d) added to dst[0] and dst[1] (16-byte aligned): one
 * 128-bit atomic on sm_90 (global memory), else four float atomics. */
static __device__ __forceinline__ void atomic_add4(float2 *dst, float a, float b, float c, float d)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd((float4 *)dst, make_float4(a, b, c, d));
#else
    atomicAdd(&dst[0].x, a);
    atomicAdd(&dst[0].y, b);
    atomicAdd(&dst[1].x, c);
    atomicAdd(&dst[1].y, d);
#endif
}

/* A sample's W^3 (2D: W^2) neighbours as aligned pairs of x points (even
 * x, x + 1): per row of W x points 4 slots, slot s the pair at x0 = l0x -
 * (l0x & 1) + 2 s, a point outside the kernel's W weighing 0. Against one
 * 64-bit atomic per point: 3 or 4 atomics per row instead of 6 (nf even:
 * a pair never straddles the wrap). Every lane must call it (shuffles). */
template <bool D3>
static __device__ __forceinline__ void nu_spread_pairs(const nu_geo &geo, float kv, int lane, int l0x, int l0y,
                                                       int l0z, const float2 *c, int nc, float2 *__restrict__ fine,
                                                       long long nfine)
{
    constexpr int NT = (D3 ? LM_NU_W * LM_NU_W : LM_NU_W) * 4;
    const int par = l0x & 1;
#pragma unroll
    for (int it = 0; it < (NT + 31) / 32; it++) {
        const int t = lane + 32 * it;
        const int sl = t & 3, row = t >> 2;
        const int dy = row % LM_NU_W, dz = row / LM_NU_W;
        const int dx0 = 2 * sl - par, dx1 = dx0 + 1;
        const float a0 = __shfl_sync(0xffffffffu, kv, dx0 < 0 ? 0 : dx0 > LM_NU_W - 1 ? LM_NU_W - 1 : dx0);
        const float a1 = __shfl_sync(0xffffffffu, kv, dx1 > LM_NU_W - 1 ? LM_NU_W - 1 : dx1);
        const float vy = __shfl_sync(0xffffffffu, kv, LM_NU_W + dy);
        const float vz = D3 ? __shfl_sync(0xffffffffu, kv, 2 * LM_NU_W + (dz < LM_NU_W ? dz : 0)) : 1.0f;
        if (t >= NT || dx0 > LM_NU_W - 1)
            continue;
        const float w = vy * vz, k0 = dx0 >= 0 ? a0 * w : 0.0f, k1 = dx1 <= LM_NU_W - 1 ? a1 * w : 0.0f;
        int ix = l0x - par + 2 * sl, iy = l0y + dy, iz = D3 ? l0z + dz : 0;
        ix = ix < 0 ? ix + geo.nf[0] : ix >= geo.nf[0] ? ix - geo.nf[0] : ix;
        iy = iy < 0 ? iy + geo.nf[1] : iy >= geo.nf[1] ? iy - geo.nf[1] : iy;
        iz = iz < 0 ? iz + geo.nf[2] : iz >= geo.nf[2] ? iz - geo.nf[2] : iz;
        const size_t at = ((size_t)iz * geo.nf[1] + iy) * geo.nf[0] + ix;
#pragma unroll
        for (int ch = 0; ch < LM_NU_NCH; ch++)
            if (ch < nc)
                atomic_add4(fine + (size_t)ch * nfine + at, c[ch].x * k0, c[ch].y * k0, c[ch].x * k1, c[ch].y * k1);
    }
}

/* Samples of sparse bins: straight into global memory, a warp per sample
 * (FIX: in fixed point, one point at a time). */
template <bool D3, bool FIX>
__global__ void __launch_bounds__(256) k_nu_spread_gm(int m, int smmin, const unsigned *__restrict__ skey,
                                                      const int *__restrict__ count,
                                                      const float4 *__restrict__ srel, const float2 *__restrict__ scw,
                                                      int nc, nu_geo geo, float2 *__restrict__ fine,
                                                      longlong2 *__restrict__ fix, const unsigned *__restrict__ wmax,
                                                      long long nfine, int v4)
{
    const int p = (int)(((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    const int lane = threadIdx.x & 31;
    if (p >= m)
        return; /* whole warps */
    const unsigned b = skey[p];
    if (count[b] >= smmin)
        return;
    const int bx = b % geo.nb[0], by = (b / geo.nb[0]) % geo.nb[1], bz = b / (geo.nb[0] * geo.nb[1]);
    const float4 r = srel[p];
    float2 c[LM_NU_NCH];
#pragma unroll
    for (int ch = 0; ch < LM_NU_NCH; ch++)
        c[ch] = ch < nc ? scw[(size_t)ch * m + p] : make_float2(0.0f, 0.0f);
    int l0x, l0y, l0z;
    const float kv = nu_lane_value(r, lane, D3, &l0x, &l0y, &l0z);
    l0x += bx * geo.bs[0];
    l0y += by * geo.bs[1];
    l0z += D3 ? bz * geo.bs[2] : 0;
    if (!FIX && v4) { /* pairs of x neighbours, one 128-bit atomic each */
        nu_spread_pairs<D3>(geo, kv, lane, l0x, l0y, l0z, c, nc, fine, nfine);
        return;
    }
    if (FIX)
#pragma unroll
        for (int ch = 0; ch < LM_NU_NCH; ch++)
            if (ch < nc) {
                const float s = nu_fix_scale(wmax, ch, m);
                c[ch].x *= s;
                c[ch].y *= s;
            }
#pragma unroll
    for (int it = 0; it < LM_NU_ITER; it++) {
        float k;
        size_t at;
        if (nu_lane_target<D3>(geo, kv, lane, it, l0x, l0y, l0z, &k, &at))
#pragma unroll
            for (int ch = 0; ch < LM_NU_NCH; ch++)
                if (ch < nc) {
                    if (FIX)
                        fix_add2((unsigned long long *)(fix + (size_t)ch * nfine + at), c[ch].x * k, c[ch].y * k);
                    else
                        atomic_add2(fine + (size_t)ch * nfine + at, c[ch].x * k, c[ch].y * k);
                }
    }
}

#endif
