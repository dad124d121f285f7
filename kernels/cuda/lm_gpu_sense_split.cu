/* SENSE's normal operator with the coils split across devices (lm_gpu.h,
 * issue 14). Each listed device gets a host thread of its own (the CUDA
 * calls of a thread go to its per-thread stream), FFT(Q), its share of the
 * coil maps and x and y buffers; one application is
 *
 *   caller: sync its stream (x ready), wake the workers
 *   worker: x copied to its device (peer copy) unless it is the caller's,
 *           y_w = sum over its coils conj(s_c) F^H F (s_c x), sync
 *   caller: y = y_0 (worker 0 writes y itself) + the others' y_w copied over
 *
 * The workers live as long as the operator (no thread start per call).
 * Listing one device twice runs two workers on one GPU: the split, the
 * copies and the sum are the same code, only not faster. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_gpu_internal.h"
#include "lm_trace.h"

#define SPLIT_MAX 16

struct split_worker {
    struct lm_gpu_sense_split *m;
    int dev;
    int index;
    int64_t c0, c1;         /* its coils */
    lm_gpu_toeplitz *t;
    float2 *s;              /* its maps: (c1 - c0) x N on its device */
    float2 *x, *y;          /* on its device (x unused on the caller's device; y unused by worker 0) */
    pthread_t th;
    int started;
    unsigned seen;
    double t_copy, t_coils;  /* wall seconds summed over the applications (LARMOR_TRACE) */
    lm_code rc;
    lm_error err;
};

struct lm_gpu_sense_split {
    int64_t n[3], N, ncoils;
    int dev0, nw;
    split_worker w[SPLIT_MAX];
    /* the current task */
    const lm_cfloat *q_host, *q_dev; /* construction only */
    const float2 *s_in;
    const float2 *x;
    float2 *y;
    float2 *tmp;                     /* on dev0: a worker's y arriving */
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned gen;
    int pending, quit;
    int timed;               /* LARMOR_TRACE: time the phases (one extra sync per worker) */
    double t_wait, t_sum;
};

__global__ void k_split_add(long long n, float2 *__restrict__ y, const float2 *__restrict__ a)
{
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        y[i] = make_float2(y[i].x + a[i].x, y[i].y + a[i].y);
}

static unsigned split_blocks(long long n)
{
    long long b = (n + 255) / 256;
    return (unsigned)(b < 1 ? 1 : b > 65535LL * 16 ? 65535LL * 16 : b);
}

/* On the worker's thread and device: FFT(Q), its maps, its buffers. */
static lm_code worker_init(split_worker *w)
{
    const char *who = "sense split (gpu)";
    lm_gpu_sense_split *m = w->m;
    lm_error *err = &w->err;
    lm_code rc = LM_OK;
    const cudaStream_t st = cudaStreamPerThread;
    const size_t nb = (size_t)m->N * sizeof(float2);
    const int64_t nc = w->c1 - w->c0;
    float2 *q = NULL;
    const int local = w->dev == m->dev0;
    if (m->q_dev && !local) { /* Q (interleaved, q count) copied over for the transform */
        const size_t qb = (size_t)lm_q_count(m->n) * sizeof(float2);
        LM_GTRY(lm_gmalloc((void **)&q, qb, err, who, "Q"));
        LM_GCHECK(cudaMemcpyPeerAsync(q, w->dev, m->q_dev, m->dev0, qb, st), who, "Q to the device");
        LM_GCHECK(cudaStreamSynchronize(st), who, "Q to the device");
    }
    LM_GTRY(lm_gpu_toeplitz_new(m->n, m->q_dev ? NULL : m->q_host,
                                m->q_dev ? (q ? (const lm_cfloat *)q : m->q_dev) : NULL, &w->t, err));
    if (local) {
        w->s = (float2 *)m->s_in + (size_t)w->c0 * m->N; /* borrowed: the caller's maps */
    } else {
        LM_GTRY(lm_gmalloc((void **)&w->s, nb * (size_t)nc, err, who, "coil maps"));
        LM_GCHECK(cudaMemcpyPeerAsync(w->s, w->dev, m->s_in + (size_t)w->c0 * m->N, m->dev0, nb * (size_t)nc, st),
                  who, "coil maps to the device");
        LM_GTRY(lm_gmalloc((void **)&w->x, nb, err, who, "x"));
    }
    if (w->index > 0)
        LM_GTRY(lm_gmalloc((void **)&w->y, nb, err, who, "partial sum"));
    LM_GCHECK(cudaStreamSynchronize(st), who, "set-up");
done:
    lm_gfree(q);
    return rc;
}

static lm_code worker_apply(split_worker *w)
{
    const char *who = "sense split (gpu)";
    lm_gpu_sense_split *m = w->m;
    lm_error *err = &w->err;
    lm_code rc = LM_OK;
    const cudaStream_t st = cudaStreamPerThread;
    const float2 *x = m->x;
    float2 *y = w->index == 0 ? m->y : w->y;
    double t0 = m->timed ? lm_gnow() : 0;
    if (w->dev != m->dev0) {
        LM_GCHECK(cudaMemcpyPeerAsync(w->x, w->dev, m->x, m->dev0, (size_t)m->N * sizeof(float2), st), who,
                  "x to the device");
        x = w->x;
        if (m->timed) {
            LM_GCHECK(cudaStreamSynchronize(st), who, "x to the device");
            const double t1 = lm_gnow();
            w->t_copy += t1 - t0;
            t0 = t1;
        }
    }
    for (int64_t c = w->c0; c < w->c1; c++)
        LM_GTRY(lm_gpu_toeplitz_apply_coil(w->t, (const lm_cfloat *)x, (const lm_cfloat *)(w->s + (c - w->c0) * m->N),
                                           (lm_cfloat *)y, c > w->c0, err));
    if (w->c1 == w->c0)
        LM_GCHECK(cudaMemsetAsync(y, 0, (size_t)m->N * sizeof(float2), st), who, "clear");
    LM_GCHECK(cudaStreamSynchronize(st), who, "coils");
    if (m->timed)
        w->t_coils += lm_gnow() - t0;
done:
    if (rc != LM_OK)
        (void)cudaStreamSynchronize(st);
    return rc;
}

static void worker_free(split_worker *w)
{
    lm_gpu_toeplitz_free(w->t);
    if (w->dev != w->m->dev0)
        lm_gfree(w->s);
    lm_gfree(w->x);
    lm_gfree(w->y);
    (void)cudaStreamSynchronize(cudaStreamPerThread);
    w->t = NULL, w->s = w->x = w->y = NULL;
}

static void *worker_main(void *arg)
{
    split_worker *w = (split_worker *)arg;
    lm_gpu_sense_split *m = w->m;
    cudaError_t e = cudaSetDevice(w->dev);
    w->rc = e == cudaSuccess ? worker_init(w) : lm_gcuda_fail(&w->err, e, "sense split (gpu)", "device");
    pthread_mutex_lock(&m->mu);
    if (--m->pending == 0)
        pthread_cond_signal(&m->done);
    for (;;) {
        while (!m->quit && m->gen == w->seen)
            pthread_cond_wait(&m->go, &m->mu);
        if (m->quit)
            break;
        w->seen = m->gen;
        pthread_mutex_unlock(&m->mu);
        const lm_code rc = worker_apply(w);
        pthread_mutex_lock(&m->mu);
        w->rc = rc;
        if (--m->pending == 0)
            pthread_cond_signal(&m->done);
    }
    pthread_mutex_unlock(&m->mu);
    worker_free(w);
    return NULL;
}

static void wait_workers(lm_gpu_sense_split *m)
{
    pthread_mutex_lock(&m->mu);
    while (m->pending > 0)
        pthread_cond_wait(&m->done, &m->mu);
    pthread_mutex_unlock(&m->mu);
}

/* The first failure; a worker's message is copied into err. */
static lm_code first_failure(lm_gpu_sense_split *m, lm_error *err)
{
    for (int i = 0; i < m->nw; i++)
        if (m->w[i].rc != LM_OK) {
            if (err)
                *err = m->w[i].err;
            return m->w[i].rc;
        }
    return LM_OK;
}

extern "C" void lm_gpu_sense_split_free(lm_gpu_sense_split *m)
{
    if (!m)
        return;
    if (m->timed) {
        char line[256];
        snprintf(line, sizeof line, "sense split: %u applications, caller waits %.3f s, sums %.3f s", m->gen,
                 m->t_wait, m->t_sum);
        lm_trace(line);
        for (int i = 0; i < m->nw; i++) {
            snprintf(line, sizeof line, "sense split: worker %d (device %d, coils %lld-%lld): x copy %.3f s, coils %.3f s",
                     i, m->w[i].dev, (long long)m->w[i].c0, (long long)m->w[i].c1 - 1, m->w[i].t_copy,
                     m->w[i].t_coils);
            lm_trace(line);
        }
    }
    pthread_mutex_lock(&m->mu);
    m->quit = 1;
    pthread_cond_broadcast(&m->go);
    pthread_mutex_unlock(&m->mu);
    for (int i = 0; i < m->nw; i++)
        if (m->w[i].started)
            pthread_join(m->w[i].th, NULL);
    lm_gfree(m->tmp);
    (void)cudaStreamSynchronize(cudaStreamPerThread);
    pthread_cond_destroy(&m->go);
    pthread_cond_destroy(&m->done);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

extern "C" lm_code lm_gpu_sense_split_new(const int64_t n[3], const lm_cfloat *q_host, const lm_cfloat *q_dev,
                                          const lm_cfloat *s, int64_t ncoils, const int *devs, int ndev,
                                          lm_gpu_sense_split **out, lm_error *err)
{
    const char *who = "sense split (gpu)";
    lm_code rc = LM_OK;
    lm_gpu_sense_split *m = NULL;
    *out = NULL;
    if (!s || ncoils < 1 || !devs || ndev < 1 || ndev > SPLIT_MAX || (!q_host && !q_dev))
        return lm_fail(err, LM_ERR_INVALID, "%s: needs Q, coil maps and 1 to %d devices", who, SPLIT_MAX);
    int cur = 0;
    const cudaError_t ce = cudaGetDevice(&cur);
    if (ce != cudaSuccess)
        return lm_gcuda_fail(err, ce, who, "current device");
    if (devs[0] != cur)
        return lm_fail(err, LM_ERR_INVALID, "%s: the first device (%d) must be the current one (%d)", who, devs[0],
                       cur);
    for (int i = 0; i < ndev; i++)
        if (devs[i] < 0 || devs[i] >= lm_gpu_device_count())
            return lm_fail(err, LM_ERR_INVALID, "%s: device %d does not exist here (%d usable)", who, devs[i],
                           lm_gpu_device_count());
    m = (lm_gpu_sense_split *)lm_calloc(1, sizeof *m, err, "SENSE split");
    if (!m)
        return LM_ERR_NOMEM;
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->go, NULL);
    pthread_cond_init(&m->done, NULL);
    memcpy(m->n, n, sizeof m->n);
    m->N = n[0] * n[1] * n[2];
    m->ncoils = ncoils;
    m->dev0 = cur;
    m->nw = ndev < ncoils ? ndev : (int)ncoils; /* no idle worker */
    m->q_host = q_host, m->q_dev = q_dev;
    m->s_in = (const float2 *)s;
    m->timed = lm_tuning_get()->trace;
    for (int i = 0; i < m->nw; i++) /* x and the partial sums cross over the link (copies work without) */
        lm_gpeer_open(cur, devs[i]);
    if (m->nw > 1)
        LM_GTRY(lm_gmalloc((void **)&m->tmp, (size_t)m->N * sizeof(float2), err, who, "partial sum"));
    m->pending = m->nw;
    for (int i = 0; i < m->nw; i++) {
        split_worker *w = &m->w[i];
        w->m = m;
        w->dev = devs[i];
        w->index = i;
        w->c0 = ncoils * i / m->nw;
        w->c1 = ncoils * (i + 1) / m->nw;
        w->started = pthread_create(&w->th, NULL, worker_main, w) == 0;
        if (!w->started) {
            pthread_mutex_lock(&m->mu);
            m->pending -= m->nw - i;
            pthread_mutex_unlock(&m->mu);
            wait_workers(m);
            rc = lm_fail(err, LM_ERR_NOMEM, "%s: could not start a thread for device %d", who, devs[i]);
            goto done;
        }
    }
    wait_workers(m);
    rc = first_failure(m, err);
done:
    m->q_host = m->q_dev = NULL;
    if (rc != LM_OK) {
        lm_gpu_sense_split_free(m);
        return rc;
    }
    *out = m;
    return LM_OK;
}

extern "C" lm_code lm_gpu_sense_split_apply(lm_gpu_sense_split *m, const lm_cfloat *x, lm_cfloat *y, lm_error *err)
{
    const char *who = "sense split (gpu)";
    lm_code rc = LM_OK;
    const cudaStream_t st = cudaStreamPerThread;
    if (x == y)
        return lm_fail(err, LM_ERR_INVALID, "%s: x and y must differ", who);
    double t0 = 0;
    LM_GCHECK(cudaStreamSynchronize(st), who, "x"); /* the workers read x on their own streams */
    t0 = m->timed ? lm_gnow() : 0;
    pthread_mutex_lock(&m->mu);
    m->x = (const float2 *)x;
    m->y = (float2 *)y;
    m->pending = m->nw;
    m->gen++;
    pthread_cond_broadcast(&m->go);
    pthread_mutex_unlock(&m->mu);
    wait_workers(m);
    LM_GTRY(first_failure(m, err));
    if (m->timed) {
        const double t1 = lm_gnow();
        m->t_wait += t1 - t0;
        t0 = t1;
    }
    for (int i = 1; i < m->nw; i++) {
        LM_GCHECK(cudaMemcpyPeerAsync(m->tmp, m->dev0, m->w[i].y, m->w[i].dev, (size_t)m->N * sizeof(float2), st),
                  who, "partial sum back");
        k_split_add<<<split_blocks(m->N), 256, 0, st>>>(m->N, (float2 *)y, m->tmp);
        LM_GLAUNCH(who, "sum");
    }
    if (m->timed) {
        LM_GCHECK(cudaStreamSynchronize(st), who, "sum");
        m->t_sum += lm_gnow() - t0;
    }
done:
    return rc;
}

extern "C" double lm_gpu_sense_split_diag(const lm_gpu_sense_split *m)
{
    return lm_gpu_toeplitz_diag(m->w[0].t);
}

extern "C" int lm_gpu_sense_split_workers(const lm_gpu_sense_split *m)
{
    return m->nw;
}

/* Two host threads per GPU keep it busy through each other's launch gaps
 * (B128c32 CG on two H200s: 0.290 s with 0,1; 0.269 s with 0,1,0,1). */
#define SPLIT_WORKERS_PER_GPU 2

extern "C" int lm_gpu_sense_split_devices(int64_t ncoils, int *devs, int max, lm_error *err)
{
    const int cap = max < SPLIT_MAX ? max : SPLIT_MAX, w = SPLIT_WORKERS_PER_GPU;
    int nd = lm_gpu_device_list(devs, cap, err);
    if (nd < 2 || lm_tuning_get()->gpu_devices[0])
        return nd;
    if (ncoils >= 2 * w * nd && w * nd <= cap) {
        for (int k = 1; k < w; k++)
            for (int i = 0; i < nd; i++)
                devs[k * nd + i] = devs[i];
        nd *= w;
    }
    return nd;
}
