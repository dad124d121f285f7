/* The direct sum for several weight sets (receive channels) at once:
 *
 *     out_c(x_j) = sum_m w_{c,m} exp(+i 2 pi (k_m . x_j + f_j t_m)),   c = 0 .. C-1
 *
 * (the off-resonance term f_j t_m when lm_gsamples has t and f: t rides in
 * the shared sample tile's fourth float, f is loaded once per point like
 * the position; one more FMA per pair, still one sin/cos for every set)
 * with one phase, one range reduction and one hardware sin/cos per
 * sample-point pair shared by every channel, then 4 FMA per channel: for C
 * channels the special-function unit's work is C times smaller than C
 * single-channel calls. gpu-tuned (and gpu-multi on one device) take this
 * path when E^H d has several channels. Samples are staged in shared memory
 * with up to LM_SETS_MAX channels' weights per pass (more channels: more
 * passes, each recomputing the sin/cos); each thread owns LM_SETS_VPT
 * points. Accuracy as gpu-fasttrig (the phase reduced in float). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_gpu_device.cuh"
#include "lm_gpu_internal.h"

#define LM_SETS_MAX 8
#define LM_SETS_T 256
#define LM_SETS_TILE 256
#define LM_SETS_VPT 2

struct sets_pts {
    long long n;
    const float *x, *y, *z; /* explicit, or NULL: grid */
    const float *f;         /* field map (n), with sample times; else NULL */
    long long g0, g1, c0, c1, c2;
    float is0, is1, is2;
};

static __device__ __forceinline__ void sets_pos(const sets_pts &p, long long j, float *x, float *y, float *z)
{
    if (p.x) {
        *x = p.x[j];
        *y = p.y[j];
        *z = p.z[j];
        return;
    }
    const long long i = j % p.g0, r = j / p.g0, jj = r % p.g1, k = r / p.g1;
    *x = (float)(i - p.c0) * p.is0;
    *y = (float)(jj - p.c1) * p.is1;
    *z = (float)(k - p.c2) * p.is2;
}

template <int C, bool TIME>
__global__ void __launch_bounds__(LM_SETS_T) k_sets(int m, const float *__restrict__ kx, const float *__restrict__ ky,
                                                    const float *__restrict__ kz, const float *__restrict__ wr,
                                                    const float *__restrict__ wi, const float *__restrict__ tm,
                                                    sets_pts p, float *__restrict__ ore, float *__restrict__ oim)
{
    __shared__ float4 s_k[LM_SETS_TILE];
    __shared__ float2 s_w[LM_SETS_TILE * C];
    float px[LM_SETS_VPT], py[LM_SETS_VPT], pz[LM_SETS_VPT], pf[LM_SETS_VPT];
    float ar[LM_SETS_VPT][C], ai[LM_SETS_VPT][C];
    const long long j0 = ((long long)blockIdx.x * LM_SETS_T + threadIdx.x) * LM_SETS_VPT;
#pragma unroll
    for (int v = 0; v < LM_SETS_VPT; v++) {
        px[v] = py[v] = pz[v] = pf[v] = 0.0f;
        if (j0 + v < p.n) {
            sets_pos(p, j0 + v, &px[v], &py[v], &pz[v]);
            if (TIME)
                pf[v] = p.f[j0 + v];
        }
#pragma unroll
        for (int c = 0; c < C; c++)
            ar[v][c] = ai[v][c] = 0.0f;
    }
    for (int base = 0; base < m; base += LM_SETS_TILE) {
        const int cnt = min(LM_SETS_TILE, m - base);
        __syncthreads();
        for (int q = threadIdx.x; q < cnt; q += LM_SETS_T) {
            s_k[q] = make_float4(kx[base + q], ky[base + q], kz[base + q], TIME ? tm[base + q] : 0.0f);
#pragma unroll
            for (int c = 0; c < C; c++)
                s_w[q * C + c] = make_float2(wr[(size_t)c * m + base + q], wi ? wi[(size_t)c * m + base + q] : 0.0f);
        }
        __syncthreads();
        for (int q = 0; q < cnt; q++) {
            const float4 k = s_k[q];
#pragma unroll
            for (int v = 0; v < LM_SETS_VPT; v++) {
                float ph = fmaf(k.x, px[v], fmaf(k.y, py[v], k.z * pz[v]));
                if (TIME)
                    ph = fmaf(pf[v], k.w, ph);
                const float t = lm_reduce_cycles(ph);
                float sn, cs;
                lm_sincos_fast(t, &sn, &cs);
#pragma unroll
                for (int c = 0; c < C; c++) {
                    const float2 w = s_w[q * C + c];
                    ar[v][c] = fmaf(w.x, cs, fmaf(-w.y, sn, ar[v][c]));
                    ai[v][c] = fmaf(w.x, sn, fmaf(w.y, cs, ai[v][c]));
                }
            }
        }
    }
#pragma unroll
    for (int v = 0; v < LM_SETS_VPT; v++)
        if (j0 + v < p.n)
#pragma unroll
            for (int c = 0; c < C; c++) {
                ore[(size_t)c * p.n + j0 + v] = ar[v][c];
                oim[(size_t)c * p.n + j0 + v] = ai[v][c];
            }
}

template <int C>
static void launch(int m, const lm_gsamples *s, int c0, const sets_pts &p, float *re, float *im, cudaStream_t st)
{
    const unsigned blocks = (unsigned)((p.n + (long long)LM_SETS_T * LM_SETS_VPT - 1) / ((long long)LM_SETS_T * LM_SETS_VPT));
    const float *wr = s->wr + (size_t)c0 * m, *wi = s->wi ? s->wi + (size_t)c0 * m : NULL;
    if (s->t)
        k_sets<C, true><<<blocks, LM_SETS_T, 0, st>>>(m, s->kx, s->ky, s->kz, wr, wi, s->t, p, re + (size_t)c0 * p.n,
                                                      im + (size_t)c0 * p.n);
    else
        k_sets<C, false><<<blocks, LM_SETS_T, 0, st>>>(m, s->kx, s->ky, s->kz, wr, wi, NULL, p,
                                                       re + (size_t)c0 * p.n, im + (size_t)c0 * p.n);
}

lm_code lm_gsets_run(const char *who, const lm_gsamples *s, const lm_points *pts, float *d_re, float *d_im,
                     cudaStream_t st, const lm_ctl *ctl, double *kernel_s, lm_error *err)
{
    lm_code rc = LM_OK;
    const int m = (int)s->m;
    const long long nsets = s->nsets > 1 ? s->nsets : 1;
    cudaEvent_t e0 = NULL, e1 = NULL;
    float *px = NULL;
    sets_pts p;
    memset(&p, 0, sizeof p);
    p.n = pts->n;
    if (s->t && !s->f) {
        rc = lm_fail(err, LM_ERR_INVALID, "%s: sample times without a field map on the device", who);
        goto done;
    }
    p.f = s->t ? s->f : NULL;
    if (pts->x) {
        /* explicit positions go up once */
        LM_GTRY(lm_gmalloc((void **)&px, (size_t)pts->n * 3 * sizeof(float), err, who, "the point positions"));
        LM_GCHECK(cudaMemcpyAsync(px, pts->x, (size_t)pts->n * sizeof(float), cudaMemcpyHostToDevice, st), who, "upload");
        LM_GCHECK(cudaMemcpyAsync(px + pts->n, pts->y, (size_t)pts->n * sizeof(float), cudaMemcpyHostToDevice, st), who,
                  "upload");
        LM_GCHECK(cudaMemcpyAsync(px + 2 * pts->n, pts->z, (size_t)pts->n * sizeof(float), cudaMemcpyHostToDevice, st),
                  who, "upload");
        p.x = px;
        p.y = px + pts->n;
        p.z = px + 2 * pts->n;
    } else {
        p.g0 = pts->g[0];
        p.g1 = pts->g[1];
        p.c0 = pts->c[0];
        p.c1 = pts->c[1];
        p.c2 = pts->c[2];
        p.is0 = (float)(1.0 / (double)pts->s[0]);
        p.is1 = (float)(1.0 / (double)pts->s[1]);
        p.is2 = (float)(1.0 / (double)pts->s[2]);
    }
    LM_GCHECK(cudaEventCreate(&e0), who, "events");
    LM_GCHECK(cudaEventCreate(&e1), who, "events");
    LM_GCHECK(cudaEventRecord(e0, st), who, "events");
    for (long long c0 = 0; c0 < nsets;) {
        const long long left = nsets - c0;
        /* instantiations for 1, 2, 4 and 8 channels per pass */
        const int c = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
        switch (c) {
        case 8: launch<8>(m, s, (int)c0, p, d_re, d_im, st); break;
        case 4: launch<4>(m, s, (int)c0, p, d_re, d_im, st); break;
        case 2: launch<2>(m, s, (int)c0, p, d_re, d_im, st); break;
        default: launch<1>(m, s, (int)c0, p, d_re, d_im, st); break;
        }
        LM_GLAUNCH(who, "direct sum over channels");
        c0 += c;
        if (lm_gctl_report(ctl, (double)c0 / (double)nsets)) {
            rc = lm_fail(err, LM_ERR_CANCELLED, "%s: cancelled", who);
            goto done;
        }
    }
    LM_GCHECK(cudaEventRecord(e1, st), who, "events");
    LM_GCHECK(cudaEventSynchronize(e1), who, "kernel");
    if (kernel_s) {
        float ms = 0;
        LM_GCHECK(cudaEventElapsedTime(&ms, e0, e1), who, "events");
        *kernel_s = ms * 1e-3;
    }
done:
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st);
    if (e0)
        (void)cudaEventDestroy(e0);
    if (e1)
        (void)cudaEventDestroy(e1);
    lm_gfree(px);
    return rc;
}
