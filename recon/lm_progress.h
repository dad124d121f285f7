/* A stage's progress as a part of its caller's: a child lm_ctl whose
 * fractions [0, 1] land in [lo, hi] of the parent's (which may be NULL),
 * passing cancellation back. The range struct must outlive the child. */
#ifndef LM_PROGRESS_H
#define LM_PROGRESS_H

#include "lm_kernels.h"

typedef struct lm_ctl_range {
    const lm_ctl *parent;
    double lo, hi;
} lm_ctl_range;

lm_ctl lm_ctl_sub(lm_ctl_range *r, const lm_ctl *parent, double lo, double hi);

#endif
