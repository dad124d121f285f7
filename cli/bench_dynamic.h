/* larmor-cli bench's dynamic path (bench_dynamic.c): D128c8, D64c8. */
#ifndef LM_BENCH_DYNAMIC_H
#define LM_BENCH_DYNAMIC_H

#include "larmor.h"

/* Per variant: frame-by-frame SENSE and temporal TV at lambda (< 0: the
 * default), iters iterations each; set-up, solve and error over all
 * frames. Returns the command's exit status. */
int bench_dynamic(const lm_dyn_problem_def *def, const char *const *names, int nnames, int iters, double lambda,
                  int json);

#endif
