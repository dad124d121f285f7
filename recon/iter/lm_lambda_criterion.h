/* How lambda is chosen from the data (lm_lambda.h, docs/lambda.md): the
 * criterion alone, so that the reconstruction's options (lm_recon.h) name
 * it without the search's operator headers. */
#ifndef LM_LAMBDA_CRITERION_H
#define LM_LAMBDA_CRITERION_H

#include "lm_error.h"

typedef enum lm_lambda_criterion {
    LM_LAMBDA_DEFAULT = 0,   /* the regulariser's own (lm_lambda_default_criterion) */
    LM_LAMBDA_DISCREPANCY,
    LM_LAMBDA_GCV
} lm_lambda_criterion;

/* "default", "discrepancy", "gcv". */
const char *lm_lambda_criterion_name(lm_lambda_criterion c);
lm_code lm_lambda_criterion_parse(const char *s, lm_lambda_criterion *out, lm_error *err);

#endif
