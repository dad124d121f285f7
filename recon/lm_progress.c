/* Progress of a stage within its caller's (lm_progress.h). */
#include "lm_progress.h"

static int range_progress(void *user, double f)
{
    const lm_ctl_range *r = user;
    return lm_ctl_report(r->parent, r->lo + (r->hi - r->lo) * f);
}

lm_ctl lm_ctl_sub(lm_ctl_range *r, const lm_ctl *parent, double lo, double hi)
{
    r->parent = parent;
    r->lo = lo;
    r->hi = hi;
    lm_ctl c = {range_progress, r, parent ? parent->threads : 0};
    return c;
}
