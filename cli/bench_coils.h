/* larmor-cli bench's multi-coil path (bench_coils.c). */
#ifndef LM_BENCH_COILS_H
#define LM_BENCH_COILS_H

#include "larmor.h"

/* Returns the command's exit status. */
int bench_coils(const lm_problem_def *def, const char *const *names, int nnames, int iters, double lambda, int json);

#endif
