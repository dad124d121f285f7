/* larmor-cli bench's field-map path (bench_fieldmap.c). */
#ifndef LM_BENCH_FIELDMAP_H
#define LM_BENCH_FIELDMAP_H

#include "larmor.h"

/* Returns the command's exit status. */
int bench_fieldmap(const lm_problem_def *def, const char *const *names, int nnames, int iters, double lambda,
                   int json);

#endif
