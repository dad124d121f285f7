/* Opening sample times by hand for data loaded from files. */
#ifndef LARMOR_OPEN_TIMES_H
#define LARMOR_OPEN_TIMES_H

#include "larmor-window.h"

/* Reloads the data set with path as its sample times (.cfl [1, samples,
 * spokes], seconds); a bad file leaves a one-line error as any load. */
void larmor_window_open_times(LarmorWindow *self, const char *path);

#endif
