/* Helpers of the dynamic reconstruction's tests. */
#ifndef DYN_TEST_H
#define DYN_TEST_H

#include <complex.h>
#include <math.h>

#include "lm_types.h"

typedef double _Complex zc;

/* ||a - b|| / ||b|| with b the double-precision reference. */
static inline double dyn_rel_err(const lm_cfloat *a, const zc *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num += pow(cabs((zc)a[i] - b[i]), 2);
        den += pow(cabs(b[i]), 2);
    }
    return sqrt(num / den);
}

#endif
