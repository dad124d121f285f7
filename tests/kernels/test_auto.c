/* The "auto" variant (lm_variant_resolve): the fastest variant here that
 * meets the accuracy of docs/conventions.md section 7, gpu-nufft with a usable GPU, else cpu-nufft;
 * and the default everywhere (lm_recon_opts_init, lm_sums_variant). */
#include <string.h>

#include "lm_kernels.h"
#include "lm_recon.h"
#include "lm_sums.h"
#include "lm_test.h"

int main(void)
{
    lm_error err;
    lm_error_clear(&err);
    /* What auto must pick on this machine, decided independently. */
    lm_error gpu_why;
    lm_error_clear(&gpu_why);
    const int gpu = lm_variant_get_available("gpu-nufft", &gpu_why) != NULL;
    const char *want = gpu ? "gpu-nufft" : "cpu-nufft";
    fprintf(stderr, "gpu-nufft %s; auto should be %s\n", gpu ? "available" : gpu_why.msg, want);

    const lm_variant *a = lm_variant_resolve(LM_VARIANT_AUTO, &err);
    CHECK_MSG(a && strcmp(a->name, want) == 0, "auto -> %s (%s)", a ? a->name : "NULL", err.msg);
    CHECK(a && a->approximate); /* a NUFFT */
    /* NULL, "" and "auto" are the same choice, through every entry point. */
    CHECK(lm_variant_resolve(NULL, &err) == a);
    CHECK(lm_variant_resolve("", &err) == a);
    CHECK(lm_variant_find(LM_VARIANT_AUTO, &err) == a);
    CHECK(lm_variant_get_available(LM_VARIANT_AUTO, &err) == a);
    CHECK(lm_sums_variant(NULL, &err) == a);
    CHECK(lm_sums_variant("", &err) == a);
    CHECK(lm_sums_variant(LM_VARIANT_AUTO, &err) == a);
    CHECK(lm_variant_is_auto(NULL) && lm_variant_is_auto("") && lm_variant_is_auto("auto"));
    CHECK(!lm_variant_is_auto("cpu-nufft") && !lm_variant_is_auto("autox"));
    /* find(NULL) stays an error (no silent default there). */
    CHECK(lm_variant_find(NULL, &err) == NULL);

    /* Named variants resolve to themselves; unknown ones fail naming auto
     * among the known names. */
    const lm_variant *dp = lm_variant_resolve("cpu-dp", &err);
    CHECK(dp && strcmp(dp->name, "cpu-dp") == 0);
    lm_error_clear(&err);
    CHECK(lm_variant_resolve("cpu-nope", &err) == NULL);
    CHECK_MSG(err.code == LM_ERR_INVALID && strstr(err.msg, "cpu-nope") && strstr(err.msg, "auto"),
              "message: %s", err.msg);
    /* Without a GPU, a GPU variant by name is refused with the reason
     * (auto never is). */
    if (!gpu) {
        lm_error_clear(&err);
        CHECK(lm_variant_resolve("gpu-nufft", &err) == NULL && err.msg[0]);
    }

    /* The reconstruction's default is auto. */
    lm_recon_opts o;
    lm_recon_opts_init(&o);
    CHECK(o.variant && strcmp(o.variant, LM_VARIANT_AUTO) == 0);
    CHECK(lm_sums_variant(o.variant, &err) == a);
    return lm_test_finish("test_auto");
}
