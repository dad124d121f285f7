/* Minimal test helpers: each test file is one program; meson counts exit
 * 0 as pass and 77 as skip. CHECK records a failure and goes on, so one run
 * shows every broken assertion. */
#ifndef LM_TEST_H
#define LM_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int lm_test_failures;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
            lm_test_failures++;                                                       \
        }                                                                             \
    } while (0)

#define CHECK_MSG(cond, ...)                                                          \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
            lm_test_failures++;                                                       \
        }                                                                             \
    } while (0)

/* |a - b| <= tol, printing both values on failure. */
#define CHECK_NEAR(a, b, tol)                                                         \
    do {                                                                              \
        double lm_a_ = (a), lm_b_ = (b), lm_t_ = (tol);                               \
        if (!(fabs(lm_a_ - lm_b_) <= lm_t_)) {                                        \
            fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.9g, %s = %.9g, tol %.3g\n", \
                    __FILE__, __LINE__, #a, lm_a_, #b, lm_b_, lm_t_);                 \
            lm_test_failures++;                                                       \
        }                                                                             \
    } while (0)

#define CHECK_OK(expr, errp)                                                          \
    do {                                                                              \
        lm_code lm_c_ = (expr);                                                       \
        if (lm_c_ != LM_OK) {                                                         \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,      \
                    (errp)->msg);                                                     \
            lm_test_failures++;                                                       \
        }                                                                             \
    } while (0)

#define LM_TEST_SKIP(...)                                                             \
    do {                                                                              \
        fprintf(stderr, "SKIP: " __VA_ARGS__);                                        \
        fputc('\n', stderr);                                                          \
        exit(77);                                                                     \
    } while (0)

static inline int lm_test_finish(const char *name)
{
    if (lm_test_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, lm_test_failures);
        return 1;
    }
    fprintf(stderr, "%s: all checks passed\n", name);
    return 0;
}

#endif
