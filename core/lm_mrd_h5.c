/* HDF5 plumbing shared by the MRD reader and writer: one MRD call at a
 * time with HDF5's printing silenced, and HDF5's innermost error message
 * for one-line failures. */
#include "lm_config.h"

#if LM_HAVE_ISMRMRD
#include "lm_mrd_private.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t mrd_lock = PTHREAD_MUTEX_INITIALIZER;

void lm_h5_quiet_begin(lm_h5_quiet *q)
{
    pthread_mutex_lock(&mrd_lock);
    q->func = NULL;
    q->data = NULL;
    H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void lm_h5_quiet_end(lm_h5_quiet *q)
{
    H5Eclear2(H5E_DEFAULT);
    H5Eset_auto2(H5E_DEFAULT, q->func, q->data);
    pthread_mutex_unlock(&mrd_lock);
}

/* The innermost (most specific) HDF5 error message, one line: the walk
 * goes upward from it, so keep the first one seen. */
static herr_t h5_walk_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    (void)n;
    char *buf = data;
    if (!buf[0] && e->desc && e->desc[0]) {
        snprintf(buf, 160, "%s", e->desc);
        for (char *p = buf; *p; p++)
            if (*p == '\n' || *p == '\r' || *p == '\t')
                *p = ' ';
    }
    return 0;
}

lm_code lm_h5_fail(lm_error *err, lm_code code, const char *path, const char *what)
{
    char msg[160] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, h5_walk_cb, msg);
    H5Eclear2(H5E_DEFAULT);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == ' ')
        msg[--n] = '\0';
    if (msg[0])
        return lm_fail(err, code, "%s: %s (HDF5: %s)", path, what, msg);
    return lm_fail(err, code, "%s: %s", path, what);
}

#endif
