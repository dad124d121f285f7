#include "lm_fftw.h"

#include <fftw3.h>
#include <pthread.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int threads_ok;

static void setup(void)
{
    threads_ok = fftwf_init_threads() != 0;
    fftwf_make_planner_thread_safe();
}

int lm_fftw_setup(void)
{
    pthread_once(&once, setup);
    return threads_ok;
}
