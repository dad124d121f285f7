/* The GPU engine's runtime: CUDA errors and the sticky ones after which
 * the context is gone, the stream-ordered memory pools and peer access,
 * the devices (which are usable, their locks, their description), the
 * last call's timing stats, and the context made in the background while a
 * command reads its inputs. Every .cu file's host side goes through these
 * (lm_gpu_internal.h). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lm_gpu_device.cuh"
#include "lm_trace.h"
#include "lm_gpu_internal.h"

/* ======================================================================== */
/* errors                                                                    */
/* ======================================================================== */

/* The errors after which the context is unusable until the process ends
 * (sticky), or the device itself is gone. */
static int sticky_error(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorECCUncorrectable:
    case cudaErrorLaunchTimeout:
    case cudaErrorDevicesUnavailable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorUnknown: /* what a device that fell off the bus reports */
        return 1;
    default:
        return 0;
    }
}

lm_code lm_gcuda_fail(lm_error *err, cudaError_t e, const char *who, const char *what)
{
    if (e == cudaErrorMemoryAllocation)
        return lm_fail(err, LM_ERR_NOMEM, "%s: %s: out of GPU memory", who, what);
    char msg[400];
    snprintf(msg, sizeof msg, "%s: %s: %s (%s)", who, what, cudaGetErrorString(e), cudaGetErrorName(e));
    if (sticky_error(e))
        lm_gpu_mark_lost(msg); /* later calls fail at once instead of touching a dead context */
    return lm_fail(err, LM_ERR_GPU, "%s", msg);
}

lm_code lm_gcufft_fail(lm_error *err, cufftResult r, const char *who, const char *what)
{
    if (r == CUFFT_ALLOC_FAILED)
        return lm_fail(err, LM_ERR_NOMEM, "%s: %s: cuFFT is out of GPU memory", who, what);
    return lm_fail(err, LM_ERR_GPU, "%s: %s: cuFFT error %d", who, what, (int)r);
}

/* Device memory comes from the device's stream-ordered pool (cudaMallocAsync
 * on the calling thread's default stream), which keeps up to
 * LM_GPOOL_KEEP bytes of freed memory for the next call instead of handing
 * it back to the driver: repeated calls skip cudaMalloc/cudaFree and their
 * implicit synchronisations. lm_gpu_release() trims the pools. */
#define LM_GPOOL_KEEP ((uint64_t)8 << 30)
static pthread_mutex_t g_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_pool_set[64];

static void pool_setup(int dev)
{
    if (dev < 0 || dev >= 64 || __atomic_load_n(&g_pool_set[dev], __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&g_pool_lock);
    if (!g_pool_set[dev]) {
        cudaMemPool_t pool;
        if (cudaDeviceGetDefaultMemPool(&pool, dev) == cudaSuccess) {
            uint64_t keep = LM_GPOOL_KEEP;
            (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
        }
        (void)cudaGetLastError();
        __atomic_store_n(&g_pool_set[dev], 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_pool_lock);
}

/* Opens devices a and b to each other, both ways, where the hardware
 * allows (NVLink, PCIe peer-to-peer): peer access for cudaMalloc memory,
 * and the default pools' access for stream-ordered allocations
 * (cudaMallocAsync), which peer access does not cover. Without it a copy
 * between the two devices goes through the host; with it, over the link.
 * Leaves the calling thread's current device as it was. */
void lm_gpeer_open(int a, int b)
{
    if (a == b)
        return;
    int prev = 0;
    const int have_prev = cudaGetDevice(&prev) == cudaSuccess;
    const int pair[2][2] = {{a, b}, {b, a}}; /* {owner, accessor} */
    for (int k = 0; k < 2; k++) {
        const int owner = pair[k][0], user = pair[k][1];
        int can = 0;
        if (cudaDeviceCanAccessPeer(&can, user, owner) != cudaSuccess || !can) {
            (void)cudaGetLastError();
            continue;
        }
        if (cudaSetDevice(user) == cudaSuccess)
            (void)cudaDeviceEnablePeerAccess(owner, 0); /* "already enabled" is fine */
        cudaMemPool_t pool;
        if (cudaDeviceGetDefaultMemPool(&pool, owner) == cudaSuccess) {
            cudaMemAccessDesc d;
            memset(&d, 0, sizeof d);
            d.location.type = cudaMemLocationTypeDevice;
            d.location.id = user;
            d.flags = cudaMemAccessFlagsProtReadWrite;
            (void)cudaMemPoolSetAccess(pool, &d, 1);
        }
        (void)cudaGetLastError();
    }
    if (have_prev)
        (void)cudaSetDevice(prev);
}

extern "C" int lm_gpu_device_list(int *devs, int max, lm_error *err)
{
    const int count = lm_gpu_device_count();
    const char *env = lm_tuning_get()->gpu_devices;
    int n = 0;
    if (!env || !*env) {
        for (int d = 0; d < count && n < max; d++)
            devs[n++] = d;
        return n;
    }
    for (const char *p = env; *p && n < max;) {
        char *end = NULL;
        const long d = strtol(p, &end, 10);
        if (end == p || d < 0 || d >= count || (*end && *end != ',')) {
            (void)lm_fail(err, LM_ERR_INVALID, "LARMOR_GPU_DEVICES=%s: not a list of this machine's %d GPU(s) "
                          "(e.g. 0,1)", env, count);
            return -1;
        }
        devs[n++] = (int)d;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

void lm_gpool_trim(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    for (int d = 0; d < n && d < 64; d++) {
        cudaMemPool_t pool;
        if (g_pool_set[d] && cudaDeviceGetDefaultMemPool(&pool, d) == cudaSuccess)
            (void)cudaMemPoolTrimTo(pool, 0);
    }
    (void)cudaGetLastError();
}

lm_code lm_gmalloc(void **p, size_t bytes, lm_error *err, const char *who, const char *what)
{
    *p = NULL;
    lm_code frc = lm_gpu_fault_check(LM_GFAULT_SITE_ALLOC, who, err);
    if (frc != LM_OK)
        return frc;
    if (bytes == 0)
        bytes = 16;
    if (bytes / 8 > (size_t)LM_MAX_ELEMENTS)
        return lm_fail(err, LM_ERR_NOMEM, "%s: %s: %.1f GiB is absurd", who, what,
                       (double)bytes / 1073741824.0);
    int dev = 0;
    if (cudaGetDevice(&dev) == cudaSuccess)
        pool_setup(dev);
    cudaError_t e = cudaMallocAsync(p, bytes, cudaStreamPerThread);
    if (e == cudaErrorMemoryAllocation) {
        /* memory the pool keeps may be what is missing: give it back, retry */
        (void)cudaGetLastError();
        cudaMemPool_t pool;
        if (cudaStreamSynchronize(cudaStreamPerThread) == cudaSuccess &&
            cudaDeviceGetDefaultMemPool(&pool, dev) == cudaSuccess && cudaMemPoolTrimTo(pool, 0) == cudaSuccess)
            e = cudaMallocAsync(p, bytes, cudaStreamPerThread);
    }
    if (e == cudaSuccess)
        return LM_OK;
    *p = NULL;
    (void)cudaGetLastError(); /* out of memory is not sticky: clear it */
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
        fr = tot = 0;
    (void)cudaGetLastError();
    if (e == cudaErrorMemoryAllocation)
        return lm_fail(err, LM_ERR_NOMEM, "%s: %s needs %.1f MiB of GPU memory, %.1f MiB free of %.1f MiB",
                       who, what, (double)bytes / 1048576.0, (double)fr / 1048576.0,
                       (double)tot / 1048576.0);
    return lm_gcuda_fail(err, e, who, what);
}

void lm_gfree(void *p)
{
    if (p)
        (void)cudaFreeAsync(p, cudaStreamPerThread);
}

extern "C" lm_code lm_gpu_mem_usage_get(lm_gpu_mem_usage *u, lm_error *err)
{
    memset(u, 0, sizeof *u);
    int dev = 0;
    cudaMemPool_t pool;
    unsigned long long used = 0, high = 0;
    size_t fr = 0, tot = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetDefaultMemPool(&pool, dev) != cudaSuccess ||
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) != cudaSuccess ||
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high) != cudaSuccess ||
        cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
        (void)cudaGetLastError();
        return lm_fail(err, LM_ERR_GPU, "gpu: cannot read the memory use");
    }
    u->pool_used = (int64_t)used;
    u->pool_peak = (int64_t)high;
    u->dev_free = (int64_t)fr;
    u->dev_total = (int64_t)tot;
    return LM_OK;
}

extern "C" void lm_gpu_mem_peak_reset(void)
{
    int dev = 0;
    cudaMemPool_t pool;
    unsigned long long zero = 0;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetDefaultMemPool(&pool, dev) == cudaSuccess)
        (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero);
    (void)cudaGetLastError();
}

double lm_gnow(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int lm_gctl_report(const lm_ctl *ctl, double fraction)
{
    if (!ctl || !ctl->progress)
        return 0;
    if (fraction < 0)
        fraction = 0;
    if (fraction > 1)
        fraction = 1;
    return ctl->progress(ctl->user, fraction) != 0;
}

static thread_local lm_gpu_stats g_stats;

void lm_gstats_set(double total_s, double kernel_s, double upload_s, double download_s)
{
    g_stats.total_s = total_s;
    g_stats.kernel_s = kernel_s;
    g_stats.upload_s = upload_s;
    g_stats.download_s = download_s;
}

void lm_gstats_stages_clear(void)
{
    g_stats.nstages = 0;
}

void lm_gstats_stage(const char *name, double seconds)
{
    if (g_stats.nstages >= 8)
        return;
    snprintf(g_stats.stage_name[g_stats.nstages], sizeof g_stats.stage_name[0], "%s", name);
    g_stats.stage_s[g_stats.nstages++] = seconds;
}

extern "C" void lm_gpu_last_stats(lm_gpu_stats *s)
{
    if (s)
        *s = g_stats;
}

extern "C" int lm_gpu_built(void)
{
    return 1;
}

/* ======================================================================== */
/* devices                                                                   */
/* ======================================================================== */


static pthread_once_t g_avail_once = PTHREAD_ONCE_INIT;
static lm_code g_avail_code = LM_ERR_UNSUPPORTED;
static char g_avail_msg[512];
static int g_dev_count;             /* cudaGetDeviceCount */
static int g_usable[LM_GMAX_DEV];   /* compute capability >= 8.0 */
static int g_sms[LM_GMAX_DEV];
static pthread_mutex_t g_dev_locks[LM_GMAX_DEV];

/* A device's compute capability and SM count, read on first need through
 * cudaDeviceGetAttribute: cudaGetDeviceProperties reads every property,
 * some over PCIe, and on a two-GPU host counting the devices with it cost
 * every command about 0.3 s; a command on one GPU must not touch the
 * others (no property reads, no context). */
static int g_probed[LM_GMAX_DEV];
static pthread_mutex_t g_probe_lock = PTHREAD_MUTEX_INITIALIZER;

int lm_gdevice_usable(int d)
{
    if (d < 0 || d >= g_dev_count)
        return 0;
    if (__atomic_load_n(&g_probed[d], __ATOMIC_ACQUIRE))
        return g_usable[d];
    pthread_mutex_lock(&g_probe_lock);
    if (!g_probed[d]) {
        int major = 0, sms = 0;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) == cudaSuccess &&
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d) == cudaSuccess) {
            g_sms[d] = sms;
            g_usable[d] = major >= 8;
        }
        (void)cudaGetLastError();
        __atomic_store_n(&g_probed[d], 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_probe_lock);
    return g_usable[d];
}

static void avail_init(void)
{
    /* recursive: a progress callback may call the engine again */
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    for (int i = 0; i < LM_GMAX_DEV; i++)
        pthread_mutex_init(&g_dev_locks[i], &ma);
    pthread_mutexattr_destroy(&ma);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        int drv = 0, rt = 0;
        (void)cudaDriverGetVersion(&drv);
        (void)cudaRuntimeGetVersion(&rt);
        if (e == cudaErrorNoDevice)
            snprintf(g_avail_msg, sizeof g_avail_msg, "no CUDA device");
        else if (e == cudaErrorInsufficientDriver && drv > 0)
            snprintf(g_avail_msg, sizeof g_avail_msg,
                     "CUDA driver too old: it supports CUDA %d.%d, this build needs %d.%d (%s)",
                     drv / 1000, (drv % 1000) / 10, rt / 1000, (rt % 1000) / 10, cudaGetErrorString(e));
        else
            snprintf(g_avail_msg, sizeof g_avail_msg, "no CUDA driver: %s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        g_dev_count = 0;
        return;
    }
    if (n <= 0) {
        snprintf(g_avail_msg, sizeof g_avail_msg, "no CUDA device");
        return;
    }
    if (n > LM_GMAX_DEV)
        n = LM_GMAX_DEV;
    g_dev_count = n;
    /* available when one device is usable: the first such is all a
     * single-GPU command reads (usually device 0) */
    int usable = 0;
    for (int d = 0; d < n && !usable; d++)
        usable = lm_gdevice_usable(d);
    if (!usable) {
        char old[400] = "";
        cudaDeviceProp p; /* the message names the device: the slow query, only on this failure */
        if (cudaGetDeviceProperties(&p, 0) == cudaSuccess)
            snprintf(old, sizeof old, "%s has compute capability %d.%d; this build needs 8.0 or newer", p.name,
                     p.major, p.minor);
        (void)cudaGetLastError();
        snprintf(g_avail_msg, sizeof g_avail_msg, "%s", old[0] ? old : "no usable CUDA device");
        return;
    }
    g_avail_code = LM_OK;
    lm_trace("CUDA devices counted");
}

extern "C" lm_code lm_gpu_available(lm_error *why)
{
    if (lm_gpu_fault_check(LM_GFAULT_SITE_ENTRY, "gpu", why) != LM_OK)
        return LM_ERR_GPU;
    pthread_once(&g_avail_once, avail_init);
    if (g_avail_code != LM_OK)
        return lm_fail(why, g_avail_code, "%s", g_avail_msg);
    return LM_OK;
}

extern "C" int lm_gpu_device_count(void)
{
    pthread_once(&g_avail_once, avail_init);
    if (g_avail_code != LM_OK || lm_gpu_lost())
        return 0;
    int c = 0;
    for (int d = 0; d < g_dev_count; d++) /* probes every device: for callers that split work */
        c += lm_gdevice_usable(d);
    return c;
}

int lm_gdevice_sm_count(int device)
{
    pthread_once(&g_avail_once, avail_init);
    return lm_gdevice_usable(device) && g_sms[device] > 0 ? g_sms[device] : 1;
}

lm_code lm_gdevice_begin(const char *who, int *device, lm_error *err)
{
    lm_error why;
    lm_error_clear(&why);
    if (lm_gpu_fault_check(LM_GFAULT_SITE_ENTRY, who, err) != LM_OK)
        return LM_ERR_GPU;
    if (lm_gpu_available(&why) != LM_OK)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: not available: %s", who, why.msg);
    int d = 0;
    cudaError_t e = cudaGetDevice(&d);
    if (e != cudaSuccess)
        return lm_gcuda_fail(err, e, who, "current device");
    if (!lm_gdevice_usable(d))
        return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: CUDA device %d is not usable (compute capability < 8.0)",
                       who, d);
    *device = d;
    return LM_OK;
}

void lm_gdevice_lock(int device)
{
    pthread_once(&g_avail_once, avail_init);
    pthread_mutex_lock(&g_dev_locks[device % LM_GMAX_DEV]);
}

void lm_gdevice_unlock(int device)
{
    pthread_mutex_unlock(&g_dev_locks[device % LM_GMAX_DEV]);
}

extern "C" lm_code lm_gpu_describe(int device, lm_gpu_info *info, lm_error *err)
{
    lm_error why;
    lm_error_clear(&why);
    if (!info)
        return lm_fail(err, LM_ERR_INVALID, "gpu: no info struct given");
    memset(info, 0, sizeof *info);
    if (lm_gpu_available(&why) != LM_OK)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "gpu: %s", why.msg);
    if (device < 0 || device >= g_dev_count)
        return lm_fail(err, LM_ERR_INVALID, "gpu: no CUDA device %d (%d present)", device, g_dev_count);
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, device);
    if (e != cudaSuccess)
        return lm_gcuda_fail(err, e, "gpu", "device properties");
    info->device = device;
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->sm_count = p.multiProcessorCount;
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device) == cudaSuccess)
        info->clock_ghz = khz / 1e6;
    info->l2_bytes = (size_t)p.l2CacheSize;
    info->mem_total_gib = (double)p.totalGlobalMem / 1073741824.0;
    int prev = 0;
    if (cudaGetDevice(&prev) == cudaSuccess && cudaSetDevice(device) == cudaSuccess) {
        size_t fr = 0, tot = 0;
        if (cudaMemGetInfo(&fr, &tot) == cudaSuccess)
            info->mem_free_gib = (double)fr / 1073741824.0;
        (void)cudaSetDevice(prev);
    }
    (void)cudaGetLastError();
    (void)cudaDriverGetVersion(&info->driver_version);
    (void)cudaRuntimeGetVersion(&info->runtime_version);
    return LM_OK;
}

extern "C" void lm_gpu_info_string(const lm_gpu_info *i, char *buf, size_t len)
{
    if (!buf || !len)
        return;
    snprintf(buf, len, "%s, sm_%d%d, %d SMs at %.2f GHz, %.1f GiB (%.1f free), L2 %.0f MiB, driver %d.%d, runtime %d.%d",
             i->name, i->cc_major, i->cc_minor, i->sm_count, i->clock_ghz, i->mem_total_gib,
             i->mem_free_gib, (double)i->l2_bytes / 1048576.0, i->driver_version / 1000,
             (i->driver_version % 1000) / 10, i->runtime_version / 1000, (i->runtime_version % 1000) / 10);
}

extern "C" void lm_gpu_release(void)
{
    lm_gpu_prewarm_wait();
    lm_gnufft_release();
    for (int d = 0; d < g_dev_count && d < 64; d++) {
        int prev = 0;
        /* only devices this process used: selecting another would make its context */
        if (!__atomic_load_n(&g_pool_set[d], __ATOMIC_ACQUIRE))
            continue;
        if (cudaGetDevice(&prev) == cudaSuccess && cudaSetDevice(d) == cudaSuccess) {
            (void)cudaStreamSynchronize(cudaStreamPerThread);
            (void)cudaSetDevice(prev);
        }
    }
    lm_gpool_trim();
    (void)cudaGetLastError();
}

/* ---- the context made while the caller reads its inputs ---- */

static pthread_mutex_t g_warm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t g_warm_thread;
static int g_warm_state; /* 0 never started, 1 running (joinable), 2 joined */

static void *prewarm_main(void *arg)
{
    (void)arg;
    pthread_once(&g_avail_once, avail_init);
    if (g_avail_code == LM_OK && !lm_gpu_lost() && lm_gdevice_usable(0)) {
        if (cudaSetDevice(0) == cudaSuccess && cudaFree(0) == cudaSuccess)
            pool_setup(0);
        (void)cudaGetLastError();
        lm_trace("CUDA context made (in the background)");
    }
    return NULL;
}

extern "C" void lm_gpu_prewarm(void)
{
    if (!lm_tuning_get()->gpu_prewarm)
        return;
    pthread_mutex_lock(&g_warm_lock);
    if (g_warm_state == 0)
        g_warm_state = pthread_create(&g_warm_thread, NULL, prewarm_main, NULL) == 0 ? 1 : 2;
    pthread_mutex_unlock(&g_warm_lock);
}

extern "C" void lm_gpu_prewarm_wait(void)
{
    pthread_mutex_lock(&g_warm_lock);
    if (g_warm_state == 1) {
        (void)pthread_join(g_warm_thread, NULL);
        g_warm_state = 2;
    }
    pthread_mutex_unlock(&g_warm_lock);
}
