/* The resident-or-streamed decision for the frames' FFT(Q) (lm_dyn_budget.h). */
#include "lm_dyn_budget.h"

int64_t lm_dyn_q_bytes(const int64_t n[3])
{
    int64_t p = 1;
    for (int a = 0; a < 3; a++)
        p *= n[a] > 1 ? 2 * n[a] : 1;
    return 4 * p;
}

void lm_dyn_qplan_make(int64_t frames, const int64_t n[3], long long tuned, int64_t dev_free, lm_dyn_qplan *out)
{
    out->q_bytes = lm_dyn_q_bytes(n);
    out->need = frames * out->q_bytes;
    out->budget = tuned > 0 ? (int64_t)tuned : dev_free > 0 ? dev_free / 2 : INT64_MAX;
    out->stream = frames > 2 && out->need > out->budget;
}
