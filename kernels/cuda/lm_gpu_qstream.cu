/* Streamed FFT(Q) (lm_gpu_qstream, lm_gpu.h; docs/gpu-design.md "Streamed
 * FFT(Q)"): every member's FFT(Q) in pinned host memory, two device slots.
 * Acquiring member i makes the compute stream wait for its upload into a
 * slot, then starts the upload of member i + 1 into the other slot on a
 * copy stream of its own, once the work queued on that slot (member i - 1)
 * is done: the copy of the next frame overlaps the product of this one.
 * Members acquired out of order are uploaded then (correct, not
 * overlapped). The bytes are the resident ones, moved: the products are
 * bit-identical to resident FFT(Q). Used by one thread at a time (the
 * operators of one model); reference-counted. */
#include <stdlib.h>
#include <string.h>

#include "lm_gpu_device.cuh"
#include "lm_gpu_internal.h"

struct lm_gpu_qstream {
    int refs; /* atomic */
    int frames;
    int device;
    long long P;            /* floats per member, from the first put */
    float **host;           /* frames x P, pinned */
    float *slot[2];         /* device */
    int owner[2];           /* member in each slot, -1: none */
    int cur;                /* slot the compute stream reads, -1: none yet */
    int used[2];            /* free_ev[s] recorded at least once */
    cudaStream_t copy;
    cudaEvent_t ready[2];   /* upload into slot s done (copy stream) */
    cudaEvent_t free_ev[2]; /* work reading slot s queued so far done (compute stream) */
    long long uploads;
};

extern "C" lm_code lm_gpu_qstream_new(int frames, lm_gpu_qstream **out, lm_error *err)
{
    const char *who = "streamed FFT(Q)";
    lm_code rc = LM_OK;
    *out = NULL;
    if (frames < 1)
        return lm_fail(err, LM_ERR_INVALID, "%s: no frames", who);
    lm_gpu_qstream *q = (lm_gpu_qstream *)lm_calloc(1, sizeof *q, err, who);
    if (!q)
        return LM_ERR_NOMEM;
    q->refs = 1;
    q->frames = frames;
    q->cur = -1;
    q->owner[0] = q->owner[1] = -1;
    q->host = (float **)lm_calloc((size_t)frames, sizeof *q->host, err, who);
    if (!q->host) {
        free(q);
        return LM_ERR_NOMEM;
    }
    LM_GTRY(lm_gdevice_begin(who, &q->device, err));
    LM_GCHECK(cudaStreamCreateWithFlags(&q->copy, cudaStreamNonBlocking), who, "copy stream");
    for (int s = 0; s < 2; s++) {
        LM_GCHECK(cudaEventCreateWithFlags(&q->ready[s], cudaEventDisableTiming), who, "event");
        LM_GCHECK(cudaEventCreateWithFlags(&q->free_ev[s], cudaEventDisableTiming), who, "event");
    }
    *out = q;
    return LM_OK;
done:
    lm_gpu_qstream_free(q);
    return rc;
}

lm_gpu_qstream *lm_gpu_qstream_ref(lm_gpu_qstream *q)
{
    __atomic_add_fetch(&q->refs, 1, __ATOMIC_ACQ_REL);
    return q;
}

extern "C" void lm_gpu_qstream_free(lm_gpu_qstream *q)
{
    if (!q || __atomic_sub_fetch(&q->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    if (q->copy)
        (void)cudaStreamSynchronize(q->copy);
    for (int s = 0; s < 2; s++) {
        lm_gfree(q->slot[s]);
        if (q->ready[s])
            (void)cudaEventDestroy(q->ready[s]);
        if (q->free_ev[s])
            (void)cudaEventDestroy(q->free_ev[s]);
    }
    if (q->copy)
        (void)cudaStreamDestroy(q->copy);
    for (int f = 0; f < q->frames; f++)
        if (q->host[f])
            (void)cudaFreeHost(q->host[f]);
    free(q->host);
    free(q);
}

extern "C" long long lm_gpu_qstream_uploads(const lm_gpu_qstream *q)
{
    return q ? q->uploads : 0;
}

/* Member `frame`'s P values from device memory into pinned host memory;
 * the slots are made with the first member. */
lm_code lm_gpu_qstream_put(lm_gpu_qstream *q, int frame, const float *dev, long long P, lm_error *err)
{
    const char *who = "streamed FFT(Q)";
    lm_code rc = LM_OK;
    if (frame < 0 || frame >= q->frames || q->host[frame] || (q->P && q->P != P))
        return lm_fail(err, LM_ERR_INVALID, "%s: frame %d is out of range, given twice or of another size", who,
                       frame);
    if (!q->P) {
        q->P = P;
        for (int s = 0; s < 2; s++)
            LM_GTRY(lm_gmalloc((void **)&q->slot[s], (size_t)P * sizeof(float), err, who, "a device slot"));
    }
    if (cudaMallocHost((void **)&q->host[frame], (size_t)P * sizeof(float)) != cudaSuccess) {
        (void)cudaGetLastError();
        q->host[frame] = NULL;
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of pinned host memory for frame %d (%.1f MB)", who, frame,
                       (double)P * sizeof(float) / 1e6);
    }
    LM_GCHECK(cudaMemcpyAsync(q->host[frame], dev, (size_t)P * sizeof(float), cudaMemcpyDeviceToHost,
                              cudaStreamPerThread),
              who, "park FFT(Q)");
    LM_GCHECK(cudaStreamSynchronize(cudaStreamPerThread), who, "park FFT(Q)");
done:
    return rc;
}

/* Member f into slot s on the copy stream, after the work queued on s. */
static lm_code upload(lm_gpu_qstream *q, int s, int f, lm_error *err)
{
    const char *who = "streamed FFT(Q)";
    lm_code rc = LM_OK;
    if (!q->host[f])
        return lm_fail(err, LM_ERR_INVALID, "%s: frame %d was never parked", who, f);
    if (q->used[s])
        LM_GCHECK(cudaStreamWaitEvent(q->copy, q->free_ev[s], 0), who, "wait");
    LM_GCHECK(cudaMemcpyAsync(q->slot[s], q->host[f], (size_t)q->P * sizeof(float), cudaMemcpyHostToDevice, q->copy),
              who, "upload FFT(Q)");
    LM_GCHECK(cudaEventRecord(q->ready[s], q->copy), who, "event");
    q->owner[s] = f;
    q->uploads++;
done:
    return rc;
}

lm_code lm_gpu_qstream_acquire(lm_gpu_qstream *q, int frame, cudaStream_t st, const float **out, lm_error *err)
{
    const char *who = "streamed FFT(Q)";
    lm_code rc = LM_OK;
    if (q->cur >= 0 && q->owner[q->cur] == frame) {
        *out = q->slot[q->cur];
        return LM_OK;
    }
    const int s = q->cur < 0 ? 0 : 1 - q->cur;
    if (q->cur >= 0) { /* the slot left behind: free once the work queued on it is done */
        LM_GCHECK(cudaEventRecord(q->free_ev[q->cur], st), who, "event");
        q->used[q->cur] = 1;
    }
    if (q->owner[s] != frame)
        LM_GTRY(upload(q, s, frame, err));
    LM_GCHECK(cudaStreamWaitEvent(st, q->ready[s], 0), who, "wait");
    q->cur = s;
    *out = q->slot[s];
    if (q->frames > 1) { /* the next member while this one computes */
        const int next = (frame + 1) % q->frames;
        if (q->owner[1 - s] != next && q->host[next])
            LM_GTRY(upload(q, 1 - s, next, err));
    }
done:
    return rc;
}
