/* gpu-multi: F^H d and Q split over several GPUs, one host thread per
 * device (the paper's multi-GPU variant), on the single-device engine of
 * lm_gpu_ksum.cu (lm_gpaper_run). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lm_gpu_device.cuh"
#include "lm_gpu_internal.h"

/* The paper splits the points over the GPUs. That keeps each launch's
 * work per sample tile (one constant-memory tile per launch), so when a
 * device's share of the points fills only a wave or two of the resident
 * blocks, every launch ends part-empty (B128's F^H d on two GPUs: 1.78x).
 * Then the samples are split instead: every device takes all points and
 * its own tiles, and the host adds the partial sums (one extra pass over
 * the output per device beyond the first). */
#define MULTI_FILL_BLOCKS_PER_SM 8 /* a share below this many blocks per SM splits the samples */

struct multi_job {
    int device;
    lm_ksum_in in;         /* its samples (all of them when the points are split) */
    const lm_points *pts;
    int64_t j0, j1;        /* its points */
    float *dst_re, *dst_im; /* where point j0 goes */
    volatile int *cancel;
    volatile int64_t done;
    int64_t units;
    volatile int finished;
    lm_code rc;
    lm_error err;
    double kernel_s;
};

static void *multi_worker(void *arg)
{
    multi_job *j = (multi_job *)arg;
    lm_error *err = &j->err;
    lm_code rc = LM_OK;
    lm_gsamples s;
    float *d = NULL;
    const int64_t n = j->j1 - j->j0;
    const char *who = "gpu-multi";
    cudaStream_t st = cudaStreamPerThread;
    memset(&s, 0, sizeof s);
    LM_GCHECK(cudaSetDevice(j->device), who, "select device");
    if (n > 0) {
        LM_GTRY(lm_gsamples_upload(who, &j->in, &s, st, err));
        LM_GTRY(lm_gfmap_upload(who, j->pts, &s, st, err)); /* every point's f: paper_run offsets by j0 */
        LM_GTRY(lm_gmalloc((void **)&d, (size_t)n * 2 * sizeof(float), err, who, "the output"));
        LM_GTRY(lm_gpaper_run(LM_GE_MULTI, who, &s, j->pts, j->j0, j->j1, d, d + n, st, NULL, j->cancel,
                          &j->done, &j->kernel_s, err));
        LM_GCHECK(cudaMemcpyAsync(j->dst_re, d, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost, st), who,
                  "download");
        LM_GCHECK(cudaMemcpyAsync(j->dst_im, d + n, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost, st), who,
                  "download");
        LM_GCHECK(cudaStreamSynchronize(st), who, "download");
    }
done:
    if (rc != LM_OK) {
        (void)cudaStreamSynchronize(st);
        *j->cancel = 1; /* the others stop too */
    }
    lm_gfree(d);
    lm_gsamples_free(&s);
    j->rc = rc;
    __atomic_store_n((int *)&j->finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Samples m0..m1 of in, as an input of their own. */
static lm_ksum_in multi_sample_range(const lm_ksum_in *in, int64_t m0, int64_t m1)
{
    lm_ksum_in r = *in;
    r.m = m1 - m0;
    r.kx = in->kx + m0;
    r.ky = in->ky + m0;
    r.kz = in->kz + m0;
    r.wr = in->wr + m0;
    r.wi = in->wi ? in->wi + m0 : NULL;
    r.t = in->t ? in->t + m0 : NULL;
    r.nsets = 1; /* gpu-multi has no multi_set: lm_ksum_run hands it one set at a time */
    return r;
}

/* Device i's share of total (weighted by multiprocessor count), ends at the
 * returned index; aligned down to align except for the last device. */
static int64_t multi_share_end(int64_t total, const int *devs, int nd, int i, int64_t align)
{
    if (i == nd - 1)
        return total;
    int64_t all = 0, upto = 0;
    for (int k = 0; k < nd; k++) {
        all += lm_gdevice_sm_count(devs[k]);
        if (k <= i)
            upto += lm_gdevice_sm_count(devs[k]);
    }
    int64_t e = (int64_t)((double)total * (double)upto / (double)(all > 0 ? all : 1));
    if (align > 1)
        e -= e % align;
    return e;
}

/* Whether gpu-multi splits the samples (1) or the points (0) over devs. */
static int multi_by_samples(const lm_ksum_in *in, const lm_points *pts, const int *devs, int nd,
                            const lm_gpu_tune_params *par)
{
    int64_t min_sm = lm_gdevice_sm_count(devs[0]);
    for (int i = 1; i < nd; i++)
        if (lm_gdevice_sm_count(devs[i]) < min_sm)
            min_sm = lm_gdevice_sm_count(devs[i]);
    const int64_t share_blocks = pts->n / nd / ((int64_t)par->vpt * par->threads);
    return nd > 1 && in->m >= (int64_t)nd * par->tile &&
           share_blocks < MULTI_FILL_BLOCKS_PER_SM * (min_sm > 0 ? min_sm : 1);
}

static lm_code multi_devices(int *devs, int *nd, lm_gpu_tune_params *par, lm_error *err)
{
    *nd = lm_gpu_device_list(devs, LM_GMAX_DEV, err);
    if (*nd < 0)
        return LM_ERR_INVALID;
    if (*nd == 0)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "gpu-multi: no usable device");
    return lm_gtune_params(devs[0], par, err);
}

extern "C" int lm_gpu_multi_by_samples(const lm_ksum_in *in, const lm_points *pts)
{
    int devs[LM_GMAX_DEV], nd = 0;
    lm_gpu_tune_params par;
    lm_error err;
    lm_error_clear(&err);
    if (multi_devices(devs, &nd, &par, &err) != LM_OK)
        return -1;
    return multi_by_samples(in, pts, devs, nd, &par);
}

/* The sample split's partial sums of devices 1.. added into out: the host's
 * one pass over 2 x 8 bytes per point and device, in a few threads (one
 * thread's pass was 5 of the 11 ms gpu-multi's B128 F^H d spent outside
 * its kernels). */
enum { MULTI_ADD_THREADS = 4 };
struct multi_add_job {
    float *out_re, *out_im;
    float *const *partial;
    int nd;
    int64_t n, k0, k1;
};

static void *multi_add_worker(void *arg)
{
    const multi_add_job *a = (const multi_add_job *)arg;
    for (int i = 1; i < a->nd; i++) {
        const float *pr = a->partial[i], *pi = a->partial[i] + a->n;
        for (int64_t k = a->k0; k < a->k1; k++) {
            a->out_re[k] += pr[k];
            a->out_im[k] += pi[k];
        }
    }
    return NULL;
}

static void multi_add_partials(float *out_re, float *out_im, float *const *partial, int nd, int64_t n)
{
    multi_add_job jobs[MULTI_ADD_THREADS];
    pthread_t th[MULTI_ADD_THREADS];
    int started[MULTI_ADD_THREADS] = {0};
    const int nt = n >= (1 << 18) ? MULTI_ADD_THREADS : 1;
    for (int t = 0; t < nt; t++) {
        jobs[t] = multi_add_job{out_re, out_im, partial, nd, n, n * t / nt, n * (t + 1) / nt};
        started[t] = t > 0 && pthread_create(&th[t], NULL, multi_add_worker, &jobs[t]) == 0;
        if (t > 0 && !started[t])
            multi_add_worker(&jobs[t]); /* no thread: add it here */
    }
    multi_add_worker(&jobs[0]);
    for (int t = 1; t < nt; t++)
        if (started[t])
            pthread_join(th[t], NULL);
}

lm_code lm_gmulti_run(const lm_ksum_in *in, const lm_points *pts, float *out_re, float *out_im, const lm_ctl *ctl,
                         double *kernel_s, lm_error *err)
{
    const char *who = "gpu-multi";
    int devs[LM_GMAX_DEV], nd = 0;
    lm_gpu_tune_params par;
    const lm_code prc = multi_devices(devs, &nd, &par, err);
    if (prc != LM_OK)
        return prc;
    const int by_samples = multi_by_samples(in, pts, devs, nd, &par);

    multi_job jobs[LM_GMAX_DEV];
    pthread_t th[LM_GMAX_DEV];
    int started[LM_GMAX_DEV];
    float *partial[LM_GMAX_DEV]; /* sample split: devices 1.. download here */
    volatile int cancel = 0;
    lm_code rc = LM_OK;
    memset(partial, 0, sizeof partial);
    memset(started, 0, sizeof started);
    if (lm_gctl_report(ctl, 0.0))
        return lm_fail(err, LM_ERR_CANCELLED, "%s: cancelled", who);
    for (int i = 1; by_samples && i < nd; i++) {
        partial[i] = (float *)lm_alloc((size_t)pts->n * 2, sizeof(float), err, "gpu-multi partial sums");
        if (!partial[i]) {
            for (int k = 1; k < i; k++)
                free(partial[k]);
            return LM_ERR_NOMEM;
        }
    }
    int64_t start = 0;
    for (int i = 0; i < nd; i++) {
        multi_job *j = &jobs[i];
        memset(j, 0, sizeof *j);
        lm_error_clear(&j->err);
        j->device = devs[i];
        j->pts = pts;
        j->cancel = &cancel;
        if (by_samples) {
            const int64_t end = multi_share_end(in->m, devs, nd, i, par.tile);
            j->in = multi_sample_range(in, start, end);
            start = end;
            j->j0 = 0;
            j->j1 = pts->n;
            j->dst_re = i == 0 ? out_re : partial[i];
            j->dst_im = i == 0 ? out_im : partial[i] + pts->n;
        } else {
            const int64_t end = multi_share_end(pts->n, devs, nd, i, 1);
            j->in = *in;
            j->j0 = start;
            j->j1 = end;
            start = end;
            j->dst_re = out_re + j->j0;
            j->dst_im = out_im + j->j0;
        }
        j->units = j->j1 > j->j0 ? (j->in.m + 2047) / 2048 + 1 : 0;
    }
    for (int i = 0; i < nd; i++) {
        started[i] = pthread_create(&th[i], NULL, multi_worker, &jobs[i]) == 0;
        if (!started[i])
            multi_worker(&jobs[i]); /* no thread: run it here */
    }
    /* The calling thread reports progress and forwards a cancel. */
    for (;;) {
        int all = 1;
        int64_t done = 0, units = 0;
        for (int i = 0; i < nd; i++) {
            all &= __atomic_load_n((int *)&jobs[i].finished, __ATOMIC_ACQUIRE);
            done += jobs[i].done;
            units += jobs[i].units;
        }
        if (all)
            break;
        if (ctl && ctl->progress && lm_gctl_report(ctl, units ? (double)done / (double)units : 0.0))
            cancel = 1;
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    double ks = 0;
    for (int i = 0; i < nd; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        if (jobs[i].kernel_s > ks)
            ks = jobs[i].kernel_s;
    }
    /* Report the first real failure (a worker stopped by another's failure
     * says "cancelled"). */
    for (int i = 0; i < nd && rc == LM_OK; i++)
        if (jobs[i].rc != LM_OK && jobs[i].rc != LM_ERR_CANCELLED)
            rc = lm_fail(err, jobs[i].rc, "%s (device %d)", jobs[i].err.msg, jobs[i].device);
    for (int i = 0; i < nd && rc == LM_OK; i++)
        if (jobs[i].rc != LM_OK)
            rc = lm_fail(err, jobs[i].rc, "%s", jobs[i].err.msg);
    if (rc == LM_OK && by_samples)
        multi_add_partials(out_re, out_im, partial, nd, pts->n);
    for (int i = 1; i < nd; i++)
        free(partial[i]);
    if (rc == LM_OK)
        (void)lm_gctl_report(ctl, 1.0);
    if (kernel_s)
        *kernel_s = ks;
    return rc;
}

