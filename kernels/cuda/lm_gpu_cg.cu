/* Toeplitz CG on the GPU (lm_cg_solve_gpu) with the CPU solver's math and
 * scaling (core/lm_solver_cg.c, lm_solver.h):
 *
 *   A rho = (1/N^2) crop(IFFT(FFT(Qs) . FFT(zero-pad(rho)))) + lambda s W^H W rho,
 *   b = fhd / N,  s = Re Q(0) / N^2,
 *
 * Qs the raw Q shifted by n per padded axis with the unused difference -n
 * zeroed, so Qs is Hermitian and its FFT real (kept as real, 1/(N^2 P)
 * folded in). Regularisers as lm_reg_apply (identity, negative Laplacian
 * with Neumann boundaries, D^T diag(w) D with axis-major edge weights).
 *
 * Everything stays on the device: Q's FFT is made once, cuFFT plans once
 * per matrix size (kept between solves), the CG vectors are resident, dot
 * products are reduced on the device in double in a fixed order (runs are
 * reproducible), and per iteration one small struct of scalars comes back
 * for the monitor (residual, cost) and the stopping tests. The padded
 * transforms skip the zero padding (forward: 2D transforms of the planes
 * that hold data, then the third axis; inverse mirrored), 2/3 of a full 3D
 * transform; LARMOR_GPU_CG_FFT=0 selects one full 3D plan instead. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lm_gpu_device.cuh"
#include "lm_gpu_internal.h"

#define LM_CG_RB 1024  /* reduction blocks (fixed: deterministic sums) */
#define LM_CG_T 256

struct cg_scal {
    double rr, pap, alpha, rr_new, cost, beta, bb;
    int stop;
    int pad;
};

/* ---- kernels ---- */

/* Shifted, Hermitian-completed Q into buf (P values). */
__global__ void k_cg_shift_q(long long P, long long p0, long long p1, long long p2, long long n0, long long n1,
                             long long n2, const float2 *__restrict__ qi, const float *__restrict__ qre,
                             const float *__restrict__ qim, float2 *__restrict__ buf)
{
    const long long d = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (d >= P)
        return;
    const long long i = d % p0, r = d / p0, j = r % p1, k = r / p1;
    const long long sh0 = p0 > 1 ? n0 : 0, sh1 = p1 > 1 ? n1 : 0, sh2 = p2 > 1 ? n2 : 0;
    const bool used = (p0 <= 1 || i != n0) && (p1 <= 1 || j != n1) && (p2 <= 1 || k != n2);
    float2 v = make_float2(0.0f, 0.0f);
    if (used) {
        const size_t s = (size_t)((i + sh0) % p0) + (size_t)p0 * ((size_t)((j + sh1) % p1) + (size_t)p1 * (size_t)((k + sh2) % p2));
        v = qi ? qi[s] : make_float2(qre[s], qim[s]);
    }
    buf[d] = v;
}

__global__ void k_cg_qhat(long long P, const float2 *__restrict__ buf, double scale, float *__restrict__ qhat)
{
    const long long d = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (d < P)
        qhat[d] = (float)((double)buf[d].x * scale);
}

/* b = fhd / N (as the CPU: float multiply by (float)(1/N)); partial |b|^2. */
__global__ void k_cg_init_b(long long N, const float2 *__restrict__ fi, const float *__restrict__ fre,
                            const float *__restrict__ fim, float invn, float2 *__restrict__ b, double *__restrict__ part)
{
    __shared__ double sh[32];
    double acc = 0.0;
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < N; j += (long long)gridDim.x * blockDim.x) {
        float2 f = fi ? fi[j] : make_float2(fre[j], fim[j]);
        float2 v = make_float2(f.x * invn, f.y * invn);
        b[j] = v;
        acc += (double)v.x * v.x + (double)v.y * v.y;
    }
    acc = lm_block_sum(acc, sh);
    if (threadIdx.x == 0)
        part[blockIdx.x] = acc;
}

/* Sum of nb partials (column col of a [nb][4] array) in a fixed order. */
static __device__ double sum_parts(const double *part, int nb, int stride, int col, double *sh)
{
    double a = 0.0;
    for (int i = threadIdx.x; i < nb; i += blockDim.x)
        a += part[(size_t)i * stride + col];
    return lm_block_sum(a, sh);
}

__global__ void k_cg_fin_b(const double *__restrict__ part, int nb, cg_scal *sc)
{
    __shared__ double sh[32];
    double v = sum_parts(part, nb, 1, 0, sh);
    if (threadIdx.x == 0) {
        sc->bb = v;
        sc->stop = 0;
    }
}

/* Writes the zero-padded vector into buf (all P values). With update, p is
 * first advanced: p = r + beta p (float beta, as the CPU). */
__global__ void k_cg_pad(long long P, long long p0, long long p1, long long n0, long long n1, long long n2,
                         const float2 *__restrict__ src, const float2 *__restrict__ r, float2 *__restrict__ pv,
                         const cg_scal *__restrict__ sc, int update, float2 *__restrict__ buf)
{
    const long long d = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (d >= P)
        return;
    const long long i = d % p0, q = d / p0, j = q % p1, k = q / p1;
    float2 v = make_float2(0.0f, 0.0f);
    if (i < n0 && j < n1 && k < n2) {
        const size_t s = (size_t)i + (size_t)n0 * ((size_t)j + (size_t)n1 * (size_t)k);
        if (update) {
            const float beta = (float)sc->beta;
            const float2 rv = r[s], pp = pv[s];
            v = make_float2(rv.x + beta * pp.x, rv.y + beta * pp.y);
            pv[s] = v;
        } else {
            v = src[s];
        }
    }
    buf[d] = v;
}

__global__ void k_cg_mul(long long P, float2 *__restrict__ buf, const float *__restrict__ qhat)
{
    const long long d = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (d < P) {
        const float q = qhat[d];
        float2 v = buf[d];
        buf[d] = make_float2(v.x * q, v.y * q);
    }
}

/* out = crop(buf) + c W^H W in; partial Re <in, out>. */
__global__ void k_cg_crop_reg(long long N, long long n0, long long n1, long long n2, long long p0, long long p1,
                              const float2 *__restrict__ buf, const float2 *__restrict__ in, int reg, float c,
                              const float *__restrict__ w, float2 *__restrict__ out, double *__restrict__ part)
{
    __shared__ double sh[32];
    double acc = 0.0;
    const long long sy = n0, sz = n0 * n1;
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < N; v += (long long)gridDim.x * blockDim.x) {
        const long long i = v % n0, q = v / n0, j = q % n1, k = q / n1;
        float2 y = buf[(size_t)i + (size_t)p0 * ((size_t)j + (size_t)p1 * (size_t)k)];
        const float2 x = in[v];
        if (reg >= 0) {
            float ar, ai;
            if (reg == 0) {
                ar = x.x;
                ai = x.y;
            } else {
                const float *wx = w, *wy = w ? w + N : NULL, *wz = w ? w + 2 * N : NULL;
                ar = 0.0f;
                ai = 0.0f;
#define LM_CG_EDGE(nb, wt)                  \
    do {                                    \
        const float w_ = (wt);              \
        const float2 o_ = in[nb];           \
        ar += w_ * (x.x - o_.x);            \
        ai += w_ * (x.y - o_.y);            \
    } while (0)
                if (i + 1 < n0) LM_CG_EDGE(v + 1, wx ? wx[v] : 1.0f);
                if (i > 0) LM_CG_EDGE(v - 1, wx ? wx[v - 1] : 1.0f);
                if (j + 1 < n1) LM_CG_EDGE(v + sy, wy ? wy[v] : 1.0f);
                if (j > 0) LM_CG_EDGE(v - sy, wy ? wy[v - sy] : 1.0f);
                if (k + 1 < n2) LM_CG_EDGE(v + sz, wz ? wz[v] : 1.0f);
                if (k > 0) LM_CG_EDGE(v - sz, wz ? wz[v - sz] : 1.0f);
#undef LM_CG_EDGE
            }
            y.x += c * ar;
            y.y += c * ai;
        }
        out[v] = y;
        acc += (double)x.x * y.x + (double)x.y * y.y;
    }
    acc = lm_block_sum(acc, sh);
    if (threadIdx.x == 0)
        part[blockIdx.x] = acc;
}

__global__ void k_cg_fin_pap(const double *__restrict__ part, int nb, cg_scal *sc)
{
    __shared__ double sh[32];
    double v = sum_parts(part, nb, 1, 0, sh);
    if (threadIdx.x == 0) {
        sc->pap = v;
        if (!(v > 0.0)) {
            sc->stop = 1;
            sc->alpha = 0.0;
        } else {
            sc->alpha = sc->rr / v;
        }
    }
}

/* x += a p, r -= a Ap (a = (float)alpha); partial |r|^2 and Re <x, r + b>. */
__global__ void k_cg_update(long long N, float2 *__restrict__ x, float2 *__restrict__ r, const float2 *__restrict__ pv,
                            const float2 *__restrict__ ap, const float2 *__restrict__ b, const cg_scal *__restrict__ sc,
                            double *__restrict__ part)
{
    __shared__ double sh[32];
    double a1 = 0.0, a2 = 0.0;
    if (!sc->stop) {
        const float af = (float)sc->alpha;
        for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < N; j += (long long)gridDim.x * blockDim.x) {
            const float2 pp = pv[j], aa = ap[j], bj = b[j];
            float2 xv = x[j], rv = r[j];
            xv.x += af * pp.x;
            xv.y += af * pp.y;
            rv.x -= af * aa.x;
            rv.y -= af * aa.y;
            x[j] = xv;
            r[j] = rv;
            const double rre = rv.x, rim = rv.y;
            a1 += rre * rre + rim * rim;
            a2 += (double)xv.x * (rre + bj.x) + (double)xv.y * (rim + bj.y);
        }
    }
    a1 = lm_block_sum(a1, sh);
    a2 = lm_block_sum(a2, sh);
    if (threadIdx.x == 0) {
        part[2 * blockIdx.x] = a1;
        part[2 * blockIdx.x + 1] = a2;
    }
}

__global__ void k_cg_fin_rr(const double *__restrict__ part, int nb, cg_scal *sc)
{
    __shared__ double sh[32];
    double rr = sum_parts(part, nb, 2, 0, sh);
    double ca = sum_parts(part, nb, 2, 1, sh);
    if (threadIdx.x == 0 && !sc->stop) {
        sc->rr_new = rr;
        sc->cost = -ca;
        sc->beta = rr / sc->rr;
        sc->rr = rr;
    }
}

/* r = b - Ap (warm start); partial |r|^2. Also copies r into p. */
__global__ void k_cg_resid(long long N, const float2 *__restrict__ b, const float2 *__restrict__ ap,
                           float2 *__restrict__ r, float2 *__restrict__ pv, double *__restrict__ part)
{
    __shared__ double sh[32];
    double acc = 0.0;
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < N; j += (long long)gridDim.x * blockDim.x) {
        const float2 bj = b[j], aj = ap[j];
        const float2 v = make_float2(bj.x - aj.x, bj.y - aj.y);
        r[j] = v;
        pv[j] = v;
        acc += (double)v.x * v.x + (double)v.y * v.y;
    }
    acc = lm_block_sum(acc, sh);
    if (threadIdx.x == 0)
        part[blockIdx.x] = acc;
}

__global__ void k_cg_fin_rr0(const double *__restrict__ part, int nb, cg_scal *sc)
{
    __shared__ double sh[32];
    double v = sum_parts(part, nb, 1, 0, sh);
    if (threadIdx.x == 0)
        sc->rr = v;
}

/* ---- plans, cached per device and matrix size ---- */

struct cg_plans {
    long long n[3];
    int mode;      /* 0 full 3D/2D plan, 1 pruned */
    int nplans;
    cufftHandle h[3]; /* mode 0: h[0]; mode 1: h[0] data planes, h[1] last axis */
    cufftHandle full; /* full transform of the padded grid (FFT(Q)); h[0] in mode 0 */
    int have_full;    /* full is its own plan (mode 1) */
    int valid;
};
static cg_plans g_cgp[64];
static int g_fft_mode = -1;

extern "C" void lm_gpu_cg_set_fft_mode(int mode)
{
    g_fft_mode = mode;
}

static int fft_mode(void)
{
    if (g_fft_mode >= 0)
        return g_fft_mode;
    const char *e = getenv("LARMOR_GPU_CG_FFT");
    if (e && e[0])
        return atoi(e) ? 1 : 0;
    return 1;
}

static void plans_clear(cg_plans *c)
{
    for (int i = 0; i < c->nplans; i++)
        (void)cufftDestroy(c->h[i]);
    if (c->have_full)
        (void)cufftDestroy(c->full);
    memset(c, 0, sizeof *c);
}

void lm_gcg_release(void)
{
    int prev = 0, have = cudaGetDevice(&prev) == cudaSuccess;
    for (int d = 0; d < 64; d++) {
        if (!g_cgp[d].valid && !g_cgp[d].nplans)
            continue;
        lm_gdevice_lock(d);
        if (cudaSetDevice(d) == cudaSuccess)
            plans_clear(&g_cgp[d]);
        lm_gdevice_unlock(d);
    }
    if (have)
        (void)cudaSetDevice(prev);
    (void)cudaGetLastError();
}

/* Makes (or reuses) the plans for padded grid p of data extent n. */
static lm_code plans_get(cg_plans *c, const long long n[3], const long long p[3], int want_mode, const char *who,
                         lm_error *err)
{
    lm_code rc = LM_OK;
    int mode = want_mode;
    /* pruning needs x and y padded; 3D also z */
    if (!(p[0] > 1 && p[1] > 1))
        mode = 0;
    if (c->valid && c->n[0] == n[0] && c->n[1] == n[1] && c->n[2] == n[2] && c->mode == mode)
        return LM_OK;
    plans_clear(c);
    {
        int rank = 0, dims[3];
        for (int a = 2; a >= 0; a--)
            if (p[a] > 1)
                dims[rank++] = (int)p[a];
        if (rank == 0) {
            dims[0] = 1;
            rank = 1;
        }
        LM_GFFT(cufftPlanMany(&c->full, rank, dims, NULL, 1, 0, NULL, 1, 0, CUFFT_C2C, 1), who, "FFT plan");
        c->have_full = 1;
    }
    if (mode == 0) {
        c->h[0] = c->full; /* one plan serves both */
        c->have_full = 0;
        c->nplans = 1;
    } else if (p[2] > 1) {
        int d2[2] = {(int)p[1], (int)p[0]};
        LM_GFFT(cufftPlanMany(&c->h[0], 2, d2, d2, 1, (int)(p[0] * p[1]), d2, 1, (int)(p[0] * p[1]), CUFFT_C2C,
                              (int)n[2]),
                who, "FFT plan");
        c->nplans = 1;
        int d1[1] = {(int)p[2]};
        LM_GFFT(cufftPlanMany(&c->h[1], 1, d1, d1, (int)(p[0] * p[1]), 1, d1, (int)(p[0] * p[1]), 1, CUFFT_C2C,
                              (int)(p[0] * p[1])),
                who, "FFT plan");
        c->nplans = 2;
    } else {
        int dx[1] = {(int)p[0]};
        LM_GFFT(cufftPlanMany(&c->h[0], 1, dx, dx, 1, (int)p[0], dx, 1, (int)p[0], CUFFT_C2C, (int)n[1]), who,
                "FFT plan");
        c->nplans = 1;
        int dy[1] = {(int)p[1]};
        LM_GFFT(cufftPlanMany(&c->h[1], 1, dy, dy, (int)p[0], 1, dy, (int)p[0], 1, CUFFT_C2C, (int)p[0]), who,
                "FFT plan");
        c->nplans = 2;
    }
    c->mode = mode;
    c->n[0] = n[0];
    c->n[1] = n[1];
    c->n[2] = n[2];
    c->valid = 1;
done:
    if (rc != LM_OK)
        plans_clear(c);
    return rc;
}

static lm_code fft_fwd(cg_plans *c, float2 *buf, cudaStream_t st, const char *who, lm_error *err)
{
    lm_code rc = LM_OK;
    for (int i = 0; i < c->nplans; i++) {
        LM_GFFT(cufftSetStream(c->h[i], st), who, "FFT stream");
        LM_GFFT(cufftExecC2C(c->h[i], (cufftComplex *)buf, (cufftComplex *)buf, CUFFT_FORWARD), who, "FFT");
    }
done:
    return rc;
}

static lm_code fft_inv(cg_plans *c, float2 *buf, cudaStream_t st, const char *who, lm_error *err)
{
    lm_code rc = LM_OK;
    for (int i = c->nplans - 1; i >= 0; i--) {
        LM_GFFT(cufftSetStream(c->h[i], st), who, "FFT stream");
        LM_GFFT(cufftExecC2C(c->h[i], (cufftComplex *)buf, (cufftComplex *)buf, CUFFT_INVERSE), who, "FFT");
    }
done:
    return rc;
}

/* ---- the solver ---- */

lm_code lm_gcg_solve(const lm_geom *g, const lm_cfloat *q_host, const float *q_dre, const float *q_dim,
                     const lm_cfloat *fhd_host, const float *fhd_dre, const float *fhd_dim, lm_cfloat *rho,
                     const lm_cg_opts *o, lm_cg_report *rep, lm_error *err)
{
    const char *who = "cg (gpu)";
    const double t0 = lm_gnow();
    lm_code rc = LM_OK;
    int device = 0, locked = 0, done_iters = 0;
    long long n[3], p[3], N = 0, P = 0;
    float2 *buf = NULL, *vec = NULL, *x, *r, *pv, *ap, *b;
    float *qhat = NULL, *wts = NULL;
    double *part = NULL, *hist = NULL;
    cg_scal *dsc = NULL, *hsc = NULL;
    cg_plans *plans = NULL;
    double diag = 0, reg_scale = 0, bnorm = 0, rel = 0;
    int reg = -1;
    const cudaStream_t st = cudaStreamPerThread;
    unsigned pblocks = 0;
    x = r = pv = ap = b = NULL;

    if (rep) {
        rep->iters_done = 0;
        rep->rel_resid = 0;
        rep->resid_history = NULL;
    }
    if (!g || !(q_host || (q_dre && q_dim)) || !(fhd_host || (fhd_dre && fhd_dim)) || !rho || !o)
        return lm_fail(err, LM_ERR_INVALID, "cg: missing argument");
    if (!(o->lambda >= 0) || !isfinite(o->lambda))
        return lm_fail(err, LM_ERR_INVALID, "cg: lambda %g must be finite and >= 0", o->lambda);
    if (o->iters < 0)
        return lm_fail(err, LM_ERR_INVALID, "cg: iteration count %d is negative", o->iters);
    if (o->reg != LM_REG_IDENTITY && o->reg != LM_REG_GRADIENT && o->reg != LM_REG_ANATOMICAL)
        return lm_fail(err, LM_ERR_INVALID, "cg: unknown regulariser %d", (int)o->reg);
    if (o->reg == LM_REG_ANATOMICAL && o->lambda > 0 && !o->edge_weights)
        return lm_fail(err, LM_ERR_INVALID, "cg: anatomical regulariser without edge weights");
    for (int a = 0; a < 3; a++) {
        if (g->n[a] <= 0 || g->n[a] > 4096)
            return lm_fail(err, LM_ERR_INVALID, "cg: matrix %lldx%lldx%lld is out of range", (long long)g->n[0],
                           (long long)g->n[1], (long long)g->n[2]);
        n[a] = g->n[a];
        p[a] = n[a] > 1 ? 2 * n[a] : 1;
    }
    N = n[0] * n[1] * n[2];
    P = p[0] * p[1] * p[2];
    if (P > (1LL << 31))
        return lm_fail(err, LM_ERR_NOMEM, "cg: %lld-point FFT grid is too large", P);
    LM_GTRY(lm_gdevice_begin(who, &device, err));

    /* s = Re Q(0)/N^2 from Q's centre (host or device) */
    {
        const size_t c0 = (size_t)(p[0] > 1 ? n[0] : 0) +
                          (size_t)p[0] * ((size_t)(p[1] > 1 ? n[1] : 0) + (size_t)p[1] * (size_t)(p[2] > 1 ? n[2] : 0));
        float qc = 0;
        if (q_host) {
            qc = ((const float *)q_host)[2 * c0];
        } else {
            LM_GCHECK(cudaMemcpyAsync(&qc, q_dre + c0, sizeof(float), cudaMemcpyDeviceToHost, st), who, "Q centre");
            LM_GCHECK(cudaStreamSynchronize(st), who, "Q centre");
        }
        diag = (double)qc / ((double)N * (double)N);
    }
    reg_scale = o->lambda * diag;
    if (reg_scale != 0)
        reg = o->reg == LM_REG_IDENTITY ? 0 : 1;

    /* everything allocated before anything is uploaded */
    LM_GTRY(lm_gmalloc((void **)&buf, (size_t)P * sizeof(float2), err, who, "the padded FFT grid"));
    LM_GTRY(lm_gmalloc((void **)&qhat, (size_t)P * sizeof(float), err, who, "FFT(Q)"));
    LM_GTRY(lm_gmalloc((void **)&vec, (size_t)N * 5 * sizeof(float2), err, who, "the CG vectors"));
    x = vec;
    r = vec + N;
    pv = vec + 2 * N;
    ap = vec + 3 * N;
    b = vec + 4 * N;
    LM_GTRY(lm_gmalloc((void **)&part, (size_t)LM_CG_RB * 2 * sizeof(double), err, who, "reductions"));
    LM_GTRY(lm_gmalloc((void **)&dsc, sizeof(cg_scal), err, who, "scalars"));
    if (reg == 1 && o->reg == LM_REG_ANATOMICAL)
        LM_GTRY(lm_gmalloc((void **)&wts, (size_t)N * 3 * sizeof(float), err, who, "edge weights"));
    LM_GCHECK(cudaMallocHost((void **)&hsc, sizeof(cg_scal)), who, "pinned scalars");
    hist = (double *)lm_alloc((size_t)o->iters + 1, sizeof(double), err, "cg history");
    if (!hist) {
        rc = LM_ERR_NOMEM;
        goto done;
    }

    lm_gdevice_lock(device);
    locked = 1;
    plans = &g_cgp[device % 64];
    LM_GTRY(plans_get(plans, n, p, fft_mode(), who, err));

    /* FFT(Q), real, scaled */
    {
        const unsigned blocks = (unsigned)((P + LM_CG_T - 1) / LM_CG_T);
        if (q_host) {
            /* upload raw Q into qhat's... no: into ap region is too small; use buf as staging via vec? */
            float2 *stage = NULL;
            LM_GTRY(lm_gmalloc((void **)&stage, (size_t)P * sizeof(float2), err, who, "Q upload"));
            cudaError_t e = cudaMemcpyAsync(stage, q_host, (size_t)P * sizeof(float2), cudaMemcpyHostToDevice, st);
            if (e == cudaSuccess) {
                k_cg_shift_q<<<blocks, LM_CG_T, 0, st>>>(P, p[0], p[1], p[2], n[0], n[1], n[2], stage, NULL, NULL, buf);
                e = cudaGetLastError();
            }
            if (e == cudaSuccess)
                e = cudaStreamSynchronize(st);
            lm_gfree(stage);
            LM_GCHECK(e, who, "upload Q");
        } else {
            k_cg_shift_q<<<blocks, LM_CG_T, 0, st>>>(P, p[0], p[1], p[2], n[0], n[1], n[2], NULL, q_dre, q_dim, buf);
            LM_GLAUNCH(who, "shift Q");
        }
        /* a full transform: Q fills the whole padded grid */
        LM_GFFT(cufftSetStream(plans->full, st), who, "FFT stream");
        LM_GFFT(cufftExecC2C(plans->full, (cufftComplex *)buf, (cufftComplex *)buf, CUFFT_FORWARD), who, "FFT(Q)");
        k_cg_qhat<<<blocks, LM_CG_T, 0, st>>>(P, buf, 1.0 / ((double)N * (double)N * (double)P), qhat);
        LM_GLAUNCH(who, "FFT(Q)");
    }
    if (wts)
        LM_GCHECK(cudaMemcpyAsync(wts, o->edge_weights, (size_t)N * 3 * sizeof(float), cudaMemcpyHostToDevice, st),
                  who, "upload edge weights");

    /* b = fhd / N, ||b|| */
    if (fhd_host) {
        LM_GCHECK(cudaMemcpyAsync(ap, fhd_host, (size_t)N * sizeof(float2), cudaMemcpyHostToDevice, st), who,
                  "upload F^H d");
        k_cg_init_b<<<LM_CG_RB, LM_CG_T, 0, st>>>(N, ap, NULL, NULL, (float)(1.0 / (double)N), b, part);
    } else {
        k_cg_init_b<<<LM_CG_RB, LM_CG_T, 0, st>>>(N, NULL, fhd_dre, fhd_dim, (float)(1.0 / (double)N), b, part);
    }
    LM_GLAUNCH(who, "b");
    k_cg_fin_b<<<1, LM_CG_T, 0, st>>>(part, LM_CG_RB, dsc);
    LM_GLAUNCH(who, "b");
    LM_GCHECK(cudaMemcpyAsync(hsc, dsc, sizeof(cg_scal), cudaMemcpyDeviceToHost, st), who, "scalars");
    LM_GCHECK(cudaStreamSynchronize(st), who, "b");
    bnorm = sqrt(hsc->bb);
    if (!isfinite(bnorm)) {
        rc = lm_fail(err, LM_ERR_INVALID, "cg: F^H d is not finite");
        goto done;
    }
    if (bnorm == 0) {
        memset(rho, 0, (size_t)N * sizeof(lm_cfloat));
        hist[0] = 0;
        if (rep) {
            rep->resid_history = hist;
            hist = NULL;
        }
        goto done;
    }

    pblocks = (unsigned)((P + LM_CG_T - 1) / LM_CG_T);
    if (o->warm_start) {
        LM_GCHECK(cudaMemcpyAsync(x, rho, (size_t)N * sizeof(float2), cudaMemcpyHostToDevice, st), who, "upload rho");
        k_cg_pad<<<pblocks, LM_CG_T, 0, st>>>(P, p[0], p[1], n[0], n[1], n[2], x, NULL, NULL, dsc, 0, buf);
        LM_GLAUNCH(who, "pad");
        LM_GTRY(fft_fwd(plans, buf, st, who, err));
        k_cg_mul<<<pblocks, LM_CG_T, 0, st>>>(P, buf, qhat);
        LM_GLAUNCH(who, "multiply");
        LM_GTRY(fft_inv(plans, buf, st, who, err));
        k_cg_crop_reg<<<LM_CG_RB, LM_CG_T, 0, st>>>(N, n[0], n[1], n[2], p[0], p[1], buf, x, reg, (float)reg_scale,
                                                   wts, ap, part);
        LM_GLAUNCH(who, "crop");
        k_cg_resid<<<LM_CG_RB, LM_CG_T, 0, st>>>(N, b, ap, r, pv, part);
        LM_GLAUNCH(who, "residual");
    } else {
        LM_GCHECK(cudaMemsetAsync(x, 0, (size_t)N * sizeof(float2), st), who, "clear");
        k_cg_resid<<<LM_CG_RB, LM_CG_T, 0, st>>>(N, b, x, r, pv, part); /* r = b - 0 */
        LM_GLAUNCH(who, "residual");
    }
    k_cg_fin_rr0<<<1, LM_CG_T, 0, st>>>(part, LM_CG_RB, dsc);
    LM_GLAUNCH(who, "residual");
    LM_GCHECK(cudaMemcpyAsync(hsc, dsc, sizeof(cg_scal), cudaMemcpyDeviceToHost, st), who, "scalars");
    LM_GCHECK(cudaStreamSynchronize(st), who, "residual");
    rel = sqrt(hsc->rr) / bnorm;
    hist[0] = rel;

    for (int it = 1; it <= o->iters && !(o->tol > 0 && rel < o->tol); it++) {
        k_cg_pad<<<pblocks, LM_CG_T, 0, st>>>(P, p[0], p[1], n[0], n[1], n[2], pv, r, pv, dsc, it > 1, buf);
        LM_GLAUNCH(who, "pad");
        LM_GTRY(fft_fwd(plans, buf, st, who, err));
        k_cg_mul<<<pblocks, LM_CG_T, 0, st>>>(P, buf, qhat);
        LM_GLAUNCH(who, "multiply");
        LM_GTRY(fft_inv(plans, buf, st, who, err));
        k_cg_crop_reg<<<LM_CG_RB, LM_CG_T, 0, st>>>(N, n[0], n[1], n[2], p[0], p[1], buf, pv, reg, (float)reg_scale,
                                                   wts, ap, part);
        LM_GLAUNCH(who, "crop");
        k_cg_fin_pap<<<1, LM_CG_T, 0, st>>>(part, LM_CG_RB, dsc);
        LM_GLAUNCH(who, "alpha");
        k_cg_update<<<LM_CG_RB, LM_CG_T, 0, st>>>(N, x, r, pv, ap, b, dsc, part);
        LM_GLAUNCH(who, "update");
        k_cg_fin_rr<<<1, LM_CG_T, 0, st>>>(part, LM_CG_RB, dsc);
        LM_GLAUNCH(who, "beta");
        LM_GCHECK(cudaMemcpyAsync(hsc, dsc, sizeof(cg_scal), cudaMemcpyDeviceToHost, st), who, "scalars");
        LM_GCHECK(cudaStreamSynchronize(st), who, "iteration");
        if (hsc->stop)
            break; /* p^H A p <= 0: no further descent (as the CPU solver) */
        rel = sqrt(hsc->rr_new) / bnorm;
        hist[it] = rel;
        done_iters = it;
        if (o->monitor && o->monitor(o->monitor_user, it, rel, hsc->cost, lm_gnow() - t0)) {
            if (rep) {
                rep->iters_done = it;
                rep->rel_resid = rel;
            }
            LM_GCHECK(cudaMemcpy(rho, x, (size_t)N * sizeof(float2), cudaMemcpyDeviceToHost), who, "download rho");
            rc = lm_fail(err, LM_ERR_CANCELLED, "cg: cancelled at iteration %d", it);
            goto done;
        }
    }
    LM_GCHECK(cudaMemcpyAsync(rho, x, (size_t)N * sizeof(float2), cudaMemcpyDeviceToHost, st), who, "download rho");
    LM_GCHECK(cudaStreamSynchronize(st), who, "download rho");
    if (rep) {
        rep->iters_done = done_iters;
        rep->rel_resid = rel;
        rep->resid_history = hist;
        hist = NULL;
    }
done:
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st);
    if (locked)
        lm_gdevice_unlock(device);
    free(hist);
    if (hsc)
        (void)cudaFreeHost(hsc);
    lm_gfree(dsc);
    lm_gfree(part);
    lm_gfree(wts);
    lm_gfree(vec);
    lm_gfree(qhat);
    lm_gfree(buf);
    lm_gstats_set(lm_gnow() - t0, 0, 0, 0);
    return rc;
}

extern "C" lm_code lm_cg_solve_gpu(const lm_geom *g, const lm_cfloat *q, const lm_cfloat *fhd, lm_cfloat *rho,
                                   const lm_cg_opts *o, lm_cg_report *rep, lm_error *err)
{
    if (!q || !fhd) {
        if (rep) {
            rep->iters_done = 0;
            rep->rel_resid = 0;
            rep->resid_history = NULL;
        }
        return lm_fail(err, LM_ERR_INVALID, "cg: missing argument");
    }
    return lm_gcg_solve(g, q, NULL, NULL, fhd, NULL, NULL, rho, o, rep, err);
}

/* ---- the whole reconstruction on one device ---- */

extern "C" lm_code lm_gpu_recon(const lm_geom *g, const lm_traj *t, const lm_cfloat *d, const lm_cfloat *q,
                                const char *variant, const lm_cg_opts *o, lm_cfloat *rho, lm_cg_report *rep,
                                lm_gpu_recon_times *times, lm_error *err)
{
    const char *who = "gpu-recon";
    const double t0 = lm_gnow();
    lm_code rc = LM_OK;
    int device = 0, e;
    lm_gsamples sq, sf;
    float *hk = NULL, *dq = NULL, *df = NULL;
    long long N, NQ, m;
    lm_points pq, pf;
    lm_ksum_in kin;
    double t1;
    const cudaStream_t st = cudaStreamPerThread;
    memset(&sq, 0, sizeof sq);
    memset(&sf, 0, sizeof sf);
    if (times)
        memset(times, 0, sizeof *times);
    if (rep) {
        rep->iters_done = 0;
        rep->rel_resid = 0;
        rep->resid_history = NULL;
    }
    if (!g || !t || !d || !rho || !o || !variant)
        return lm_fail(err, LM_ERR_INVALID, "%s: missing argument", who);
    e = lm_gengine_by_name(variant);
    if (e < 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: %s is not a GPU variant", who, variant);
    if (e == LM_GE_MULTI)
        e = LM_GE_TUNED; /* one device here */
    LM_GTRY(lm_geom_check(g, t, err));
    LM_GTRY(lm_gdevice_begin(who, &device, err));
    m = t->m;
    N = g->n[0] * g->n[1] * g->n[2];
    memset(&pq, 0, sizeof pq);
    memset(&pf, 0, sizeof pf);
    for (int a = 0; a < 3; a++) {
        pf.g[a] = g->n[a];
        pf.c[a] = g->n[a] / 2;
        pf.s[a] = g->n[a];
        pq.g[a] = g->n[a] > 1 ? 2 * g->n[a] : 1;
        pq.c[a] = g->n[a] > 1 ? g->n[a] : 0;
        pq.s[a] = g->n[a] > 1 ? g->n[a] : 1;
    }
    pf.n = N;
    NQ = pq.g[0] * pq.g[1] * pq.g[2];
    pq.n = NQ;

    /* samples: coordinates split, weights from the voxel basis */
    hk = (float *)lm_alloc((size_t)m, 6 * sizeof(float), err, "gpu-recon samples");
    if (!hk) {
        rc = LM_ERR_NOMEM;
        goto done;
    }
    for (long long i = 0; i < m; i++) {
        const float kx = t->k[3 * i], ky = t->k[3 * i + 1], kz = t->k[3 * i + 2];
        const double ph = lm_geom_phi(g, kx, ky, kz);
        hk[i] = kx;
        hk[m + i] = ky;
        hk[2 * m + i] = kz;
        hk[3 * m + i] = (float)(ph * ph);                /* Q: |phi|^2 */
        const float *di = (const float *)d + 2 * i;
        hk[4 * m + i] = (float)(ph * di[0]);              /* F^H d: conj(phi) d, phi real */
        hk[5 * m + i] = (float)(ph * di[1]);
    }
    kin.m = m;
    kin.kx = hk;
    kin.ky = hk + m;
    kin.kz = hk + 2 * m;
    LM_GTRY(lm_gmalloc((void **)&df, (size_t)N * 2 * sizeof(float), err, who, "F^H d"));
    if (!q)
        LM_GTRY(lm_gmalloc((void **)&dq, (size_t)NQ * 2 * sizeof(float), err, who, "Q"));

    t1 = lm_gnow();
    if (!q) {
        kin.wr = hk + 3 * m;
        kin.wi = NULL;
        LM_GTRY(lm_gsamples_upload(who, &kin, &sq, st, err));
        LM_GTRY(lm_gengine_run((enum lm_gengine)e, variant, &sq, &pq, dq, dq + NQ, st, NULL, NULL, err));
        LM_GCHECK(cudaStreamSynchronize(st), who, "Q");
    }
    if (times)
        times->q_s = lm_gnow() - t1;
    t1 = lm_gnow();
    kin.wr = hk + 4 * m;
    kin.wi = hk + 5 * m;
    LM_GTRY(lm_gsamples_upload(who, &kin, &sf, st, err));
    LM_GTRY(lm_gengine_run((enum lm_gengine)e, variant, &sf, &pf, df, df + N, st, NULL, NULL, err));
    LM_GCHECK(cudaStreamSynchronize(st), who, "F^H d");
    if (times)
        times->fhd_s = lm_gnow() - t1;
    t1 = lm_gnow();
    LM_GTRY(lm_gcg_solve(g, q, q ? NULL : dq, q ? NULL : dq + NQ, NULL, df, df + N, rho, o, rep, err));
    if (times)
        times->cg_s = lm_gnow() - t1;
done:
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st);
    lm_gsamples_free(&sq);
    lm_gsamples_free(&sf);
    lm_gfree(dq);
    lm_gfree(df);
    free(hk);
    if (times)
        times->total_s = lm_gnow() - t0;
    return rc;
}
