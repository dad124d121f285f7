/* The frames' FFT(Q) on a GPU: resident or streamed (lm_dyn_budget.h), and
 * LARMOR_GPU_DYN_BUDGET (lm_tuning.h). Arithmetic only: runs without a GPU. */
#include <stdlib.h>

#include "lm_dyn_budget.h"
#include "lm_test.h"
#include "lm_tuning.h"

int main(void)
{
    const int64_t n3[3] = {32, 32, 32}, n2[3] = {128, 128, 1}, n1[3] = {1, 1, 1};
    CHECK(lm_dyn_q_bytes(n3) == 4LL * 64 * 64 * 64);
    CHECK(lm_dyn_q_bytes(n2) == 4LL * 256 * 256);
    CHECK(lm_dyn_q_bytes(n1) == 4);

    lm_dyn_qplan p;
    const int64_t q = lm_dyn_q_bytes(n3);
    /* no tuning: half the free memory */
    lm_dyn_qplan_make(6, n3, 0, 12 * q, &p);
    CHECK(p.need == 6 * q && p.budget == 6 * q && !p.stream); /* exactly fits */
    lm_dyn_qplan_make(6, n3, 0, 12 * q - 2, &p);
    CHECK(p.stream);
    /* unknown free memory: resident */
    lm_dyn_qplan_make(1000, n3, 0, 0, &p);
    CHECK(!p.stream);
    /* the tuned budget wins over the free memory */
    lm_dyn_qplan_make(6, n3, 1, (int64_t)1 << 40, &p);
    CHECK(p.budget == 1 && p.stream);
    lm_dyn_qplan_make(6, n3, (long long)(6 * q), 1, &p);
    CHECK(!p.stream);
    /* two frames (or one) fit the two slots: never streamed */
    lm_dyn_qplan_make(2, n3, 1, 0, &p);
    CHECK(!p.stream);
    lm_dyn_qplan_make(3, n3, 1, 0, &p);
    CHECK(p.stream);

    /* the variable: bytes, refused when not a whole number >= 0 */
    lm_tuning t;
    lm_error err = {0};
    setenv("LARMOR_GPU_DYN_BUDGET", "1", 1);
    CHECK_OK(lm_tuning_from_env(&t, &err), &err);
    CHECK(t.gpu_dyn_budget == 1);
    setenv("LARMOR_GPU_DYN_BUDGET", "68719476736", 1); /* 64 GiB: wider than an int */
    CHECK_OK(lm_tuning_from_env(&t, &err), &err);
    CHECK(t.gpu_dyn_budget == 68719476736LL);
    setenv("LARMOR_GPU_DYN_BUDGET", "2GB", 1);
    CHECK(lm_tuning_from_env(&t, &err) == LM_ERR_INVALID);
    setenv("LARMOR_GPU_DYN_BUDGET", "-5", 1);
    CHECK(lm_tuning_from_env(&t, &err) == LM_ERR_INVALID);
    unsetenv("LARMOR_GPU_DYN_BUDGET");
    CHECK_OK(lm_tuning_from_env(&t, &err), &err);
    CHECK(t.gpu_dyn_budget == 0);
    return lm_test_finish("dyn-budget");
}
