/* gpu-phasor: the direct sum, faster than the paper's structure.
 *
 * Grid points. On a grid the phase factors over the axes:
 *     exp(i 2 pi k . x) = exp(i 2 pi kx x) exp(i 2 pi ky y) exp(i 2 pi kz z),
 * so a thread owning the VX x VY patch {x0 + a Sx} x {y0 + b Sy} of one grid
 * plane needs, per sample, one sin/cos for the anchor (x0, y0, z0) and then
 *     p_b = w e(anchor) ey^b                  (VY - 1 complex products)
 *     out(a, b) += ex^a p_b                   (4 FMA per point and sample)
 * where ex^a = exp(i 2 pi kx a Sx / s), ey^b likewise, are exact powers made
 * once per sample in double (no recurrence, so no error growth). The 4 FMA
 * per sample-point pair replace the special-function unit's sin + cos (the
 * bound of every per-pair-trig kernel): the kernel is FMA-bound.
 *
 * The anchor's phase is computed without float cancellation: x = (i - c)/s
 * with integer d = i - c, so k x = d (k/s) and only (k/s) mod 1 matters;
 * it is split as hi + lo with hi on a 2^-B lattice such that d * hi sums
 * exactly in float. r = frac(hi part) + lo part then has an error near
 * 1e-8 cycles, far below __sincosf's 2^-21 (4e-7).
 *
 * With real weights (Q) and a grid symmetric about its origin (c = g/2),
 * out(-x) = conj(out(x)): about half the grid is computed and the rest
 * mirrored.
 *
 * Explicit points: shared-memory sample tiles, several points per thread,
 * range-reduced __sincosf (special-function-unit bound).
 *
 * Off-resonance (lm_gsamples t and f): f_j t_m does not factor over the
 * axes, so the grid's phasor tables cannot carry it; with a field map a grid
 * runs through the explicit-point kernel on the grid's positions (made on
 * the device), with t in the shared tile beside wi and f in a register.
 *
 * Long sample lists are split over gridDim.y ("k-splits") into partial sums
 * that a second kernel adds in a fixed order (deterministic). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_gpu_device.cuh"
#include "lm_gpu_internal.h"

#define LM_PH_VX 8
#define LM_PH_VY 4
#define LM_PH_NF4 (2 + (LM_PH_VX + LM_PH_VY - 2 + 1) / 2) /* float4 per sample record */
#define LM_PH_TILE 128                                   /* samples per shared tile */
#define LM_PH_THREADS 256
#define LM_PT_V 4      /* explicit points per thread */
#define LM_PT_TILE 256 /* samples per shared tile, explicit points */

/* Per-sample records for one box: (ux_hi, uy_hi, uz_hi, wr), (ux_lo, uy_lo,
 * uz_lo, wi), then ey^1 .. ey^(VY-1), ex^1 .. ex^(VX-1) as float2. */
__global__ void k_ph_records(int m, const float *__restrict__ kx, const float *__restrict__ ky,
                             const float *__restrict__ kz, const float *__restrict__ wr, const float *__restrict__ wi,
                             double is0, double is1, double is2, double lattice, int sx, int sy, float4 *rec)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m)
        return;
    double u[3] = {(double)kx[i] * is0, (double)ky[i] * is1, (double)kz[i] * is2};
    float hi[3], lo[3];
    for (int a = 0; a < 3; a++) {
        u[a] -= rint(u[a]);
        double h = rint(u[a] * lattice) / lattice;
        hi[a] = (float)h; /* exact: a short lattice number */
        lo[a] = (float)(u[a] - h);
    }
    float4 *r = rec + (size_t)i * LM_PH_NF4;
    r[0] = make_float4(hi[0], hi[1], hi[2], wr[i]);
    r[1] = make_float4(lo[0], lo[1], lo[2], wi ? wi[i] : 0.0f);
    float2 *t = (float2 *)(r + 2);
    for (int b = 1; b < LM_PH_VY; b++) {
        double ph = u[1] * (double)(b * sy);
        ph -= rint(ph);
        double s, c;
        sincospi(2.0 * ph, &s, &c);
        t[b - 1] = make_float2((float)c, (float)s);
    }
    for (int a = 1; a < LM_PH_VX; a++) {
        double ph = u[0] * (double)(a * sx);
        ph -= rint(ph);
        double s, c;
        sincospi(2.0 * ph, &s, &c);
        t[LM_PH_VY - 1 + a - 1] = make_float2((float)c, (float)s);
    }
    for (int q = 2 * (LM_PH_VX + LM_PH_VY - 2); q < 4 * (LM_PH_NF4 - 2); q++)
        ((float *)t)[q] = 0.0f; /* padding */
}

struct lm_ph_box {
    int lo[3], w[3];   /* box of the grid to compute */
    int sx, sy;        /* patch strides = threads along x, y */
    int c[3];          /* grid origin index */
    long long nthreads;
    long long npts;    /* w0 w1 w2 */
};

template <bool CPLX>
__global__ void __launch_bounds__(LM_PH_THREADS, 2)
    k_ph_grid(const float4 *__restrict__ rec, int m_lo, int m_hi, int per_split, lm_ph_box box,
              float2 *__restrict__ part, int accumulate)
{
    constexpr int VX = LM_PH_VX, VY = LM_PH_VY, NF4 = LM_PH_NF4;
    __shared__ float4 s_rec[LM_PH_TILE * NF4];
    const long long t = (long long)blockIdx.x * LM_PH_THREADS + threadIdx.x;
    const bool active = t < box.nthreads;
    const int tx = (int)(t % box.sx);
    const long long r1 = t / box.sx;
    const int ty = (int)(r1 % box.sy);
    const int tz = (int)(r1 / box.sy);
    const float dx = (float)(box.lo[0] + tx - box.c[0]);
    const float dy = (float)(box.lo[1] + ty - box.c[1]);
    const float dz = (float)(box.lo[2] + tz - box.c[2]);

    float ar[VX][VY], ai[VX][VY];
#pragma unroll
    for (int a = 0; a < VX; a++)
#pragma unroll
        for (int b = 0; b < VY; b++)
            ar[a][b] = ai[a][b] = 0.0f;

    const int ms = m_lo + blockIdx.y * per_split;
    const int me = min(ms + per_split, m_hi);
    for (int base = ms; base < me; base += LM_PH_TILE) {
        const int cnt = min(LM_PH_TILE, me - base);
        __syncthreads();
        const float4 *src = rec + (size_t)base * NF4;
        for (int q = threadIdx.x; q < cnt * NF4; q += LM_PH_THREADS)
            s_rec[q] = src[q];
        __syncthreads();
        if (!active)
            continue;
        for (int q = 0; q < cnt; q++) {
            const float4 *R = s_rec + q * NF4;
            const float4 h = R[0], l = R[1];
            /* exact on the lattice, then reduced */
            float th = fmaf(h.x, dx, fmaf(h.y, dy, h.z * dz));
            th = lm_reduce_cycles(th);
            float tl = fmaf(l.x, dx, fmaf(l.y, dy, l.z * dz));
            float rr = lm_reduce_cycles(th + tl);
            float sn, cs;
            lm_sincos_fast(rr, &sn, &cs);
            float pr, pi;
            if (CPLX) {
                pr = h.w * cs - l.w * sn;
                pi = fmaf(h.w, sn, l.w * cs);
            } else {
                pr = h.w * cs;
                pi = h.w * sn;
            }
            const float2 *T = (const float2 *)(R + 2);
            float qr[VY], qi[VY];
            qr[0] = pr;
            qi[0] = pi;
#pragma unroll
            for (int b = 1; b < VY; b++) {
                const float2 e = T[b - 1];
                qr[b] = fmaf(pr, e.x, -pi * e.y);
                qi[b] = fmaf(pr, e.y, pi * e.x);
            }
#pragma unroll
            for (int b = 0; b < VY; b++) {
                ar[0][b] += qr[b];
                ai[0][b] += qi[b];
            }
#pragma unroll
            for (int a = 1; a < VX; a++) {
                const float2 e = T[VY - 1 + a - 1];
#pragma unroll
                for (int b = 0; b < VY; b++) {
                    ar[a][b] = fmaf(e.x, qr[b], fmaf(-e.y, qi[b], ar[a][b]));
                    ai[a][b] = fmaf(e.x, qi[b], fmaf(e.y, qr[b], ai[a][b]));
                }
            }
        }
    }
    if (!active)
        return;
    float2 *out = part + (size_t)blockIdx.y * (size_t)box.npts;
#pragma unroll
    for (int b = 0; b < VY; b++) {
        const int yy = ty + b * box.sy;
        if (yy >= box.w[1])
            continue;
#pragma unroll
        for (int a = 0; a < VX; a++) {
            const int xx = tx + a * box.sx;
            if (xx >= box.w[0])
                continue;
            const size_t q = (size_t)xx + (size_t)box.w[0] * ((size_t)yy + (size_t)box.w[1] * (size_t)tz);
            float2 v = make_float2(ar[a][b], ai[a][b]);
            if (accumulate) {
                float2 o = out[q];
                v.x += o.x;
                v.y += o.y;
            }
            out[q] = v;
        }
    }
}

/* Sums the k-split partials of a box in order and stores them in the grid. */
__global__ void k_ph_reduce(const float2 *__restrict__ part, int ks, lm_ph_box box, long long g0, long long g1,
                            float *__restrict__ ore, float *__restrict__ oim)
{
    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= box.npts)
        return;
    float sr = 0.0f, si = 0.0f;
    for (int k = 0; k < ks; k++) {
        float2 v = part[(size_t)k * (size_t)box.npts + (size_t)q];
        sr += v.x;
        si += v.y;
    }
    const long long xx = q % box.w[0], r = q / box.w[0];
    const long long yy = r % box.w[1], zz = r / box.w[1];
    const size_t j = (size_t)(box.lo[0] + xx) + (size_t)g0 * ((size_t)(box.lo[1] + yy) + (size_t)g1 * (size_t)(box.lo[2] + zz));
    ore[j] = sr;
    oim[j] = si;
}

/* out(i) = conj(out(2c - i)) for the slab 1 <= i_A < c_A with every other
 * non-flat axis index >= 1 (the rest was computed). */
__global__ void k_ph_mirror(long long count, int axis, int c0, int c1, int c2, long long g0, long long g1,
                            long long g2, float *ore, float *oim)
{
    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= count)
        return;
    const int c[3] = {c0, c1, c2};
    const long long g[3] = {g0, g1, g2};
    long long w[3], idx[3];
    for (int a = 0; a < 3; a++)
        w[a] = a == axis ? (long long)c[a] - 1 : (g[a] > 1 ? g[a] - 1 : 1);
    long long r = q;
    for (int a = 0; a < 3; a++) {
        idx[a] = r % w[a];
        r /= w[a];
        idx[a] += g[a] > 1 ? 1 : 0; /* index >= 1 on non-flat axes (the mirror axis too) */
    }
    long long src[3];
    for (int a = 0; a < 3; a++)
        src[a] = g[a] > 1 ? 2LL * c[a] - idx[a] : 0;
    const size_t dj = (size_t)idx[0] + (size_t)g0 * ((size_t)idx[1] + (size_t)g1 * (size_t)idx[2]);
    const size_t sj = (size_t)src[0] + (size_t)g0 * ((size_t)src[1] + (size_t)g1 * (size_t)src[2]);
    ore[dj] = ore[sj];
    oim[dj] = -oim[sj];
}

/* Explicit points: V points per thread, samples through shared memory. */
template <bool CPLX, bool TIME>
__global__ void __launch_bounds__(LM_PH_THREADS)
    k_ph_points(long long n, const float *__restrict__ x, const float *__restrict__ y, const float *__restrict__ z,
                const float *__restrict__ f, const float *__restrict__ kx, const float *__restrict__ ky,
                const float *__restrict__ kz, const float *__restrict__ wr, const float *__restrict__ wi,
                const float *__restrict__ tm, int m_lo, int m_hi, int per_split, float2 *__restrict__ part,
                int accumulate)
{
    __shared__ float4 s_k[LM_PT_TILE];
    __shared__ float2 s_wt[LM_PT_TILE]; /* (wi, t) */
    const long long base = (long long)blockIdx.x * LM_PH_THREADS * LM_PT_V + threadIdx.x;
    float px[LM_PT_V], py[LM_PT_V], pz[LM_PT_V], pf[LM_PT_V], ar[LM_PT_V], ai[LM_PT_V];
#pragma unroll
    for (int v = 0; v < LM_PT_V; v++) {
        const long long j = base + (long long)v * LM_PH_THREADS;
        const bool ok = j < n;
        px[v] = ok && x ? x[j] : 0.0f;
        py[v] = ok && y ? y[j] : 0.0f;
        pz[v] = ok && z ? z[j] : 0.0f;
        pf[v] = ok && TIME ? f[j] : 0.0f;
        ar[v] = ai[v] = 0.0f;
    }
    const int ms = m_lo + blockIdx.y * per_split;
    const int me = min(ms + per_split, m_hi);
    for (int b0 = ms; b0 < me; b0 += LM_PT_TILE) {
        const int cnt = min(LM_PT_TILE, me - b0);
        __syncthreads();
        for (int q = threadIdx.x; q < cnt; q += LM_PH_THREADS) {
            s_k[q] = make_float4(kx[b0 + q], ky[b0 + q], kz[b0 + q], wr[b0 + q]);
            s_wt[q] = make_float2(CPLX ? wi[b0 + q] : 0.0f, TIME ? tm[b0 + q] : 0.0f);
        }
        __syncthreads();
#pragma unroll 2
        for (int q = 0; q < cnt; q++) {
            const float4 k = s_k[q];
            const float2 wt = s_wt[q];
            const float bw = wt.x;
#pragma unroll
            for (int v = 0; v < LM_PT_V; v++) {
                float t = fmaf(k.x, px[v], fmaf(k.y, py[v], k.z * pz[v]));
                if (TIME)
                    t = fmaf(pf[v], wt.y, t);
                float sn, cs;
                lm_sincos_fast(lm_reduce_cycles(t), &sn, &cs);
                if (CPLX) {
                    ar[v] = fmaf(k.w, cs, fmaf(-bw, sn, ar[v]));
                    ai[v] = fmaf(k.w, sn, fmaf(bw, cs, ai[v]));
                } else {
                    ar[v] = fmaf(k.w, cs, ar[v]);
                    ai[v] = fmaf(k.w, sn, ai[v]);
                }
            }
        }
    }
    float2 *out = part + (size_t)blockIdx.y * (size_t)n;
#pragma unroll
    for (int v = 0; v < LM_PT_V; v++) {
        const long long j = base + (long long)v * LM_PH_THREADS;
        if (j < n) {
            float2 val = make_float2(ar[v], ai[v]);
            if (accumulate) {
                float2 o = out[j];
                val.x += o.x;
                val.y += o.y;
            }
            out[j] = val;
        }
    }
}

__global__ void k_ph_reduce_pts(const float2 *__restrict__ part, int ks, long long n, float *__restrict__ ore,
                                float *__restrict__ oim)
{
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n)
        return;
    float sr = 0.0f, si = 0.0f;
    for (int k = 0; k < ks; k++) {
        float2 v = part[(size_t)k * (size_t)n + (size_t)j];
        sr += v.x;
        si += v.y;
    }
    ore[j] = sr;
    oim[j] = si;
}

/* ------------------------------------------------------------------------ */

/* k-splits so that the launch fills the device about four times over. */
static int choose_splits(long long blocks, int m, int device, const void *kernel, int threads)
{
    int occ = 1;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel, threads, 0) != cudaSuccess || occ < 1) {
        (void)cudaGetLastError();
        occ = 1;
    }
    const long long slots = (long long)lm_gdevice_sm_count(device) * occ;
    if (blocks >= 4 * slots)
        return 1;
    long long ks = (4 * slots + blocks - 1) / blocks;
    long long maxk = m / 512 > 1 ? m / 512 : 1;
    if (ks > maxk)
        ks = maxk;
    if (ks > 64)
        ks = 64;
    return ks < 1 ? 1 : (int)ks;
}

/* Sample ranges per launch: several when someone listens for progress. */
static int launch_chunks(const lm_ctl *ctl, int m)
{
    if (!ctl || !ctl->progress)
        return 1;
    int c = m / 4096;
    return c < 1 ? 1 : c > 16 ? 16 : c;
}

static int lattice_bits(const lm_points *p)
{
    long long maxd = 1;
    for (int a = 0; a < 3; a++) {
        long long d0 = llabs((long long)p->c[a]), d1 = llabs((long long)(p->g[a] - 1 - p->c[a]));
        if (d0 > maxd)
            maxd = d0;
        if (d1 > maxd)
            maxd = d1;
    }
    int lg = 0;
    while ((1LL << lg) < maxd + 1)
        lg++;
    int bits = 22 - lg;
    return bits < 0 ? 0 : bits > 20 ? 20 : bits;
}

/* One box of the grid: records, partial sums, reduction into the grid. */
static lm_code run_box(const char *who, const lm_gsamples *s, const lm_points *pts, const int lo[3], const int w[3],
                       int bits, float4 *rec, float2 **part, size_t *part_cap, float *d_re, float *d_im,
                       cudaStream_t st, const lm_ctl *ctl, double frac0, double frac1, lm_error *err)
{
    lm_code rc = LM_OK;
    const int m = (int)s->m;
    const bool cplx = s->wi != NULL;
    int device = 0;
    lm_ph_box box;
    memset(&box, 0, sizeof box);
    for (int a = 0; a < 3; a++) {
        box.lo[a] = lo[a];
        box.w[a] = w[a];
        box.c[a] = (int)pts->c[a];
    }
    box.sx = (w[0] + LM_PH_VX - 1) / LM_PH_VX;
    box.sy = (w[1] + LM_PH_VY - 1) / LM_PH_VY;
    box.nthreads = (long long)box.sx * box.sy * w[2];
    box.npts = (long long)w[0] * w[1] * w[2];
    const long long blocks = (box.nthreads + LM_PH_THREADS - 1) / LM_PH_THREADS;
    const void *kern = cplx ? (const void *)k_ph_grid<true> : (const void *)k_ph_grid<false>;
    int ks, chunks, per_split;
    size_t need;

    LM_GCHECK(cudaGetDevice(&device), who, "current device");
    k_ph_records<<<(m + 255) / 256, 256, 0, st>>>(m, s->kx, s->ky, s->kz, s->wr, s->wi, 1.0 / (double)pts->s[0],
                                                  1.0 / (double)pts->s[1], 1.0 / (double)pts->s[2],
                                                  ldexp(1.0, bits), box.sx, box.sy, rec);
    LM_GLAUNCH(who, "sample records");
    ks = choose_splits(blocks, m, device, kern, LM_PH_THREADS);
    need = (size_t)ks * (size_t)box.npts * sizeof(float2);
    if (need > *part_cap) {
        LM_GCHECK(cudaStreamSynchronize(st), who, "kernel");
        lm_gfree(*part);
        *part = NULL;
        *part_cap = 0;
        LM_GTRY(lm_gmalloc((void **)part, need, err, who, "the partial sums"));
        *part_cap = need;
    }
    chunks = launch_chunks(ctl, m);
    per_split = 0;
    for (int c = 0; c < chunks; c++) {
        const int m_lo = (int)((long long)m * c / chunks), m_hi = (int)((long long)m * (c + 1) / chunks);
        per_split = (m_hi - m_lo + ks - 1) / ks;
        per_split = (per_split + LM_PH_TILE - 1) / LM_PH_TILE * LM_PH_TILE;
        if (per_split < LM_PH_TILE)
            per_split = LM_PH_TILE;
        dim3 grid((unsigned)blocks, (unsigned)ks);
        if (cplx)
            k_ph_grid<true><<<grid, LM_PH_THREADS, 0, st>>>(rec, m_lo, m_hi, per_split, box, *part, c > 0);
        else
            k_ph_grid<false><<<grid, LM_PH_THREADS, 0, st>>>(rec, m_lo, m_hi, per_split, box, *part, c > 0);
        LM_GLAUNCH(who, "kernel launch");
        if (chunks > 1) {
            LM_GCHECK(cudaStreamSynchronize(st), who, "kernel");
            if (lm_gctl_report(ctl, frac0 + (frac1 - frac0) * (c + 1) / chunks)) {
                rc = lm_fail(err, LM_ERR_CANCELLED, "%s: cancelled", who);
                goto done;
            }
        }
    }
    k_ph_reduce<<<(unsigned)((box.npts + 255) / 256), 256, 0, st>>>(*part, ks, box, pts->g[0], pts->g[1], d_re, d_im);
    LM_GLAUNCH(who, "reduction");
done:
    return rc;
}

static lm_code run_grid(const char *who, const lm_gsamples *s, const lm_points *pts, float *d_re, float *d_im,
                        cudaStream_t st, const lm_ctl *ctl, lm_error *err)
{
    lm_code rc = LM_OK;
    float4 *rec = NULL;
    float2 *part = NULL;
    size_t part_cap = 0;
    const int bits = lattice_bits(pts);
    int nbox = 0, lo[6][3], w[6][3];
    int sym = s->wi == NULL && !lm_tuning_get()->gpu_phasor_nosym;
    int axis = -1;
    long long total = 0, acc = 0;

    for (int a = 0; a < 3; a++) {
        const int64_t g = pts->g[a], c = pts->c[a];
        if (!((g == 1 && c == 0) || (g % 2 == 0 && c == g / 2)))
            sym = 0;
        if (g > 1)
            axis = a;
    }
    if (axis < 0)
        sym = 0;
    if (sym) {
        const int cA = (int)pts->c[axis];
        /* 1: the half i_A >= c_A; 2: the plane i_A = 0; 3..: on the slab
         * 1 <= i_A < c_A, the lines where another axis index is 0. */
        for (int a = 0; a < 3; a++) {
            lo[0][a] = 0;
            w[0][a] = (int)pts->g[a];
        }
        lo[0][axis] = cA;
        w[0][axis] = (int)pts->g[axis] - cA;
        nbox = 1;
        if (cA >= 1) {
            for (int a = 0; a < 3; a++) {
                lo[1][a] = 0;
                w[1][a] = (int)pts->g[a];
            }
            w[1][axis] = 1;
            nbox = 2;
        }
        if (cA >= 2) {
            int prev_done[3] = {0, 0, 0};
            for (int b = 0; b < 3; b++) {
                if (b == axis || pts->g[b] <= 1)
                    continue;
                for (int a = 0; a < 3; a++) {
                    lo[nbox][a] = prev_done[a] ? 1 : 0;
                    w[nbox][a] = prev_done[a] ? (int)pts->g[a] - 1 : (int)pts->g[a];
                }
                lo[nbox][axis] = 1;
                w[nbox][axis] = cA - 1;
                lo[nbox][b] = 0;
                w[nbox][b] = 1;
                prev_done[b] = 1;
                nbox++;
            }
        }
    } else {
        for (int a = 0; a < 3; a++) {
            lo[0][a] = 0;
            w[0][a] = (int)pts->g[a];
        }
        nbox = 1;
    }
    for (int b = 0; b < nbox; b++)
        total += (long long)w[b][0] * w[b][1] * w[b][2];

    LM_GTRY(lm_gmalloc((void **)&rec, (size_t)s->m * LM_PH_NF4 * sizeof(float4), err, who, "the sample records"));
    for (int b = 0; b < nbox; b++) {
        const long long np = (long long)w[b][0] * w[b][1] * w[b][2];
        if (np == 0)
            continue;
        const double f0 = (double)acc / (double)total, f1 = (double)(acc + np) / (double)total;
        LM_GTRY(run_box(who, s, pts, lo[b], w[b], bits, rec, &part, &part_cap, d_re, d_im, st, ctl, f0, f1, err));
        acc += np;
        /* the records are rewritten for the next box: order it */
    }
    if (sym && pts->c[axis] >= 2) {
        long long count = 1;
        for (int a = 0; a < 3; a++)
            count *= a == axis ? pts->c[a] - 1 : (pts->g[a] > 1 ? pts->g[a] - 1 : 1);
        k_ph_mirror<<<(unsigned)((count + 255) / 256), 256, 0, st>>>(count, axis, (int)pts->c[0], (int)pts->c[1],
                                                                     (int)pts->c[2], pts->g[0], pts->g[1],
                                                                     pts->g[2], d_re, d_im);
        LM_GLAUNCH(who, "mirror");
    }
done:
    (void)cudaStreamSynchronize(st);
    lm_gfree(part);
    lm_gfree(rec);
    return rc;
}

/* Grid positions (float, FOV fractions) for the explicit-point kernel. */
__global__ void k_ph_grid_pos(long long n, long long g0, long long g1, long long c0, long long c1, long long c2,
                              double is0, double is1, double is2, float *x, float *y, float *z)
{
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n)
        return;
    const long long i0 = j % g0, r = j / g0, i1 = r % g1, i2 = r / g1;
    x[j] = (float)((double)(i0 - c0) * is0);
    y[j] = (float)((double)(i1 - c1) * is1);
    z[j] = (float)((double)(i2 - c2) * is2);
}

static lm_code run_points(const char *who, const lm_gsamples *s, const lm_points *pts, float *d_re, float *d_im,
                          cudaStream_t st, const lm_ctl *ctl, lm_error *err)
{
    lm_code rc = LM_OK;
    const long long n = pts->n;
    const int m = (int)s->m;
    const bool cplx = s->wi != NULL, time = s->t != NULL;
    float *pos = NULL;
    float2 *part = NULL;
    int device = 0, ks, chunks;
    const long long blocks = (n + (long long)LM_PH_THREADS * LM_PT_V - 1) / ((long long)LM_PH_THREADS * LM_PT_V);
    const void *kern = time ? (cplx ? (const void *)k_ph_points<true, true> : (const void *)k_ph_points<false, true>)
                            : (cplx ? (const void *)k_ph_points<true, false> : (const void *)k_ph_points<false, false>);

    LM_GCHECK(cudaGetDevice(&device), who, "current device");
    if (time && !s->f) {
        rc = lm_fail(err, LM_ERR_INVALID, "%s: sample times without a field map on the device", who);
        goto done;
    }
    ks = choose_splits(blocks, m, device, kern, LM_PH_THREADS);
    LM_GTRY(lm_gmalloc((void **)&pos, (size_t)n * 3 * sizeof(float), err, who, "the point positions"));
    LM_GTRY(lm_gmalloc((void **)&part, (size_t)ks * (size_t)n * sizeof(float2), err, who, "the partial sums"));
    if (!pts->x) {
        k_ph_grid_pos<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(
            n, pts->g[0], pts->g[1], pts->c[0], pts->c[1], pts->c[2], 1.0 / (double)pts->s[0],
            1.0 / (double)pts->s[1], 1.0 / (double)pts->s[2], pos, pos + n, pos + 2 * n);
        LM_GLAUNCH(who, "grid positions");
    } else {
        LM_GCHECK(cudaMemcpyAsync(pos, pts->x, (size_t)n * sizeof(float), cudaMemcpyHostToDevice, st), who, "upload");
        if (pts->y)
            LM_GCHECK(cudaMemcpyAsync(pos + n, pts->y, (size_t)n * sizeof(float), cudaMemcpyHostToDevice, st), who,
                      "upload");
        else
            LM_GCHECK(cudaMemsetAsync(pos + n, 0, (size_t)n * sizeof(float), st), who, "positions");
        if (pts->z)
            LM_GCHECK(cudaMemcpyAsync(pos + 2 * n, pts->z, (size_t)n * sizeof(float), cudaMemcpyHostToDevice, st),
                      who, "upload");
        else
            LM_GCHECK(cudaMemsetAsync(pos + 2 * n, 0, (size_t)n * sizeof(float), st), who, "positions");
    }
    chunks = launch_chunks(ctl, m);
    for (int c = 0; c < chunks; c++) {
        const int m_lo = (int)((long long)m * c / chunks), m_hi = (int)((long long)m * (c + 1) / chunks);
        int per_split = (m_hi - m_lo + ks - 1) / ks;
        per_split = (per_split + LM_PT_TILE - 1) / LM_PT_TILE * LM_PT_TILE;
        if (per_split < LM_PT_TILE)
            per_split = LM_PT_TILE;
        dim3 grid((unsigned)blocks, (unsigned)ks);
#define LM_PTK(C, T)                                                                                           \
    k_ph_points<C, T><<<grid, LM_PH_THREADS, 0, st>>>(n, pos, pos + n, pos + 2 * n, s->f, s->kx, s->ky, s->kz, s->wr, \
                                                      s->wi, s->t, m_lo, m_hi, per_split, part, c > 0)
        if (time) {
            if (cplx) LM_PTK(true, true); else LM_PTK(false, true);
        } else {
            if (cplx) LM_PTK(true, false); else LM_PTK(false, false);
        }
#undef LM_PTK
        LM_GLAUNCH(who, "kernel launch");
        if (chunks > 1) {
            LM_GCHECK(cudaStreamSynchronize(st), who, "kernel");
            if (lm_gctl_report(ctl, (double)(c + 1) / chunks)) {
                rc = lm_fail(err, LM_ERR_CANCELLED, "%s: cancelled", who);
                goto done;
            }
        }
    }
    k_ph_reduce_pts<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(part, ks, n, d_re, d_im);
    LM_GLAUNCH(who, "reduction");
done:
    (void)cudaStreamSynchronize(st);
    lm_gfree(part);
    lm_gfree(pos);
    return rc;
}

lm_code lm_gphasor_run(const char *who, const lm_gsamples *s, const lm_points *pts, float *d_re, float *d_im,
                       cudaStream_t st, const lm_ctl *ctl, double *kernel_s, lm_error *err)
{
    lm_code rc = LM_OK;
    cudaEvent_t e0 = NULL, e1 = NULL;
    LM_GCHECK(cudaEventCreate(&e0), who, "events");
    LM_GCHECK(cudaEventCreate(&e1), who, "events");
    LM_GCHECK(cudaEventRecord(e0, st), who, "events");
    if (s->m == 0) {
        LM_GCHECK(cudaMemsetAsync(d_re, 0, (size_t)pts->n * sizeof(float), st), who, "clear");
        LM_GCHECK(cudaMemsetAsync(d_im, 0, (size_t)pts->n * sizeof(float), st), who, "clear");
    } else if (pts->x || s->t) { /* a field map does not factor over the axes */
        LM_GTRY(run_points(who, s, pts, d_re, d_im, st, ctl, err));
    } else {
        for (int a = 0; a < 3; a++)
            if (pts->g[a] > INT32_MAX / 2 || pts->c[a] > INT32_MAX / 2 || pts->c[a] < -(INT32_MAX / 2)) {
                rc = lm_fail(err, LM_ERR_UNSUPPORTED, "%s: grid axis %d is too large", who, a);
                goto done;
            }
        LM_GTRY(run_grid(who, s, pts, d_re, d_im, st, ctl, err));
    }
    LM_GCHECK(cudaEventRecord(e1, st), who, "events");
    LM_GCHECK(cudaEventSynchronize(e1), who, "kernel");
    if (kernel_s) {
        float ms = 0;
        LM_GCHECK(cudaEventElapsedTime(&ms, e0, e1), who, "events");
        *kernel_s = ms * 1e-3;
    }
    (void)lm_gctl_report(ctl, 1.0);
done:
    if (e0)
        (void)cudaEventDestroy(e0);
    if (e1)
        (void)cudaEventDestroy(e1);
    return rc;
}
