#include "lm_fftw.h"

#include <fftw3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "lm_atomic.h"
#include "lm_qcache.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t wisdom_lock = PTHREAD_MUTEX_INITIALIZER;
static int threads_ok;

/* $XDG_CACHE_HOME/larmor/fftw-wisdom-single, or NULL (no cache folder). */
static char *wisdom_path(void)
{
    char *dir = NULL, *path = NULL;
    if (lm_qcache_dir(&dir, NULL) != LM_OK)
        return NULL;
    if (asprintf(&path, "%s/fftw-wisdom-single", dir) < 0)
        path = NULL;
    free(dir);
    return path;
}

static void setup(void)
{
    threads_ok = fftwf_init_threads() != 0;
    fftwf_make_planner_thread_safe();
    char *path = wisdom_path();
    if (path) /* a missing or foreign file leaves FFTW without wisdom: it plans again */
        (void)fftwf_import_wisdom_from_filename(path);
    free(path);
}

int lm_fftw_setup(void)
{
    pthread_once(&once, setup);
    return threads_ok;
}

void lm_fftw_wisdom_save(void)
{
    lm_fftw_setup();
    char *path = wisdom_path();
    lm_atomic a = {0};
    pthread_mutex_lock(&wisdom_lock);
    if (path && lm_atomic_begin(&a, path, 1, NULL) == LM_OK) {
        fftwf_export_wisdom_to_file(a.f);
        if (lm_atomic_commit(&a, NULL) != LM_OK)
            lm_atomic_abort(&a);
    }
    pthread_mutex_unlock(&wisdom_lock);
    free(path);
}
