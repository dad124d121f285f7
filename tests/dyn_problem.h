/* A dynamic phantom problem's parts in one place, for tests and benches
 * (lm_dynamic_phantom.h's lm_dyn_problem_make fills them). */
#ifndef DYN_PROBLEM_H
#define DYN_PROBLEM_H

#include <stdlib.h>

#include "lm_dynamic_phantom.h"

typedef struct dyn_problem {
    lm_geom g;
    lm_traj *t;
    lm_kdata *k;
    lm_sens *s;
    lm_cfloat *truth; /* frames x N, frame-major */
    lm_frames *f;
} dyn_problem;

static inline lm_code dyn_problem_make(const lm_dyn_problem_def *def, dyn_problem *p, lm_error *err)
{
    *p = (dyn_problem){0};
    return lm_dyn_problem_make(def, &p->g, &p->t, &p->k, &p->s, &p->truth, &p->f, err);
}

static inline void dyn_problem_free(dyn_problem *p)
{
    lm_traj_free(p->t);
    lm_kdata_free(p->k);
    lm_sens_free(p->s);
    free(p->truth);
    lm_frames_free(p->f);
    *p = (dyn_problem){0};
}

#endif
