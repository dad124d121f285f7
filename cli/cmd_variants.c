/* larmor-cli variants: every kernel variant, available or why not. */
#include <stdio.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "larmor.h"

int cmd_variants(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            puts("usage: larmor-cli variants [--json]");
            return 0;
        } else
            return cli_errorf("variants: unknown option '%s'", argv[i]);
    }
    /* auto first: the fastest accurate variant here, named */
    lm_error aerr = {0};
    const lm_variant *best = lm_variant_resolve(LM_VARIANT_AUTO, &aerr);
    char adesc[160];
    snprintf(adesc, sizeof adesc, "the fastest accurate variant here: %s", best ? best->name : "none");
    if (json) {
        printf("[{");
        cli_json_str(stdout, "variant", LM_VARIANT_AUTO, 1);
        cli_json_str(stdout, "device", best && best->device == LM_DEVICE_GPU ? "gpu" : "cpu", 1);
        cli_json_bool(stdout, "available", best != NULL, 1);
        cli_json_str(stdout, "reason", best ? "" : aerr.msg, 1);
        cli_json_str(stdout, "resolves_to", best ? best->name : "", 1);
        cli_json_str(stdout, "description", adesc, 0);
        printf("}");
    } else {
        printf("%-14s %-11s %s\n", LM_VARIANT_AUTO, best ? "available" : "unavailable",
               best ? adesc : aerr.msg);
    }
    for (size_t i = 0; i < lm_variant_count(); i++) {
        const lm_variant *v = lm_variant_at(i);
        lm_error why = {0};
        int ok = v->available(&why) == LM_OK;
        if (json) {
            printf(", {");
            cli_json_str(stdout, "variant", v->name, 1);
            cli_json_str(stdout, "device", v->device == LM_DEVICE_GPU ? "gpu" : "cpu", 1);
            cli_json_bool(stdout, "available", ok, 1);
            cli_json_str(stdout, "reason", ok ? "" : why.msg, 1);
            cli_json_str(stdout, "description", v->description, 0);
            printf("}");
        } else {
            printf("%-14s %-11s %s\n", v->name, ok ? "available" : "unavailable",
                   ok ? v->description : why.msg);
        }
    }
    if (json)
        printf("]\n");
    return 0;
}
