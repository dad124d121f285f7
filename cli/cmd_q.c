/* larmor-cli q: Parboil's mri-q (and, for mri-fhd inputs with --fhd,
 * mri-fhd) on the input's explicit points, written in Parboil's format
 * (lm_q.h); this file parses the options and prints. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "larmor.h"

int cmd_q(int argc, char **argv)
{
    static const struct option opts[] = {
        {"variant", required_argument, 0, 'v'}, {"parboil", required_argument, 0, 'p'},
        {"out", required_argument, 0, 'o'}, {"fhd", no_argument, 0, 'f'},
        {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *variant = "cpu-simd", *in_path = NULL, *out_path = NULL;
    int fhd = 0, json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'v': variant = optarg; break;
        case 'p': in_path = optarg; break;
        case 'o': out_path = optarg; break;
        case 'f': fhd = 1; break;
        case 'j': json = 1; break;
        case 'h':
            puts("usage: larmor-cli q --variant NAME --parboil IN.bin --out OUT [--fhd] [--json]\n"
                 "  Q(x) = sum_k |phi(k)|^2 exp(+i 2 pi k.x) at the file's points (Parboil mri-q);\n"
                 "  --fhd: F^H d = sum_k conj(phi) d exp(+i 2 pi k.x) for mri-fhd inputs");
            return 0;
        default: return 2;
        }
    }
    if (!in_path || !out_path)
        return cli_errorf("q: --parboil IN and --out OUT are required");
    lm_error err = {0};
    lm_q_result res;
    if (lm_q_parboil(variant, in_path, out_path, fhd, &res, &err) != LM_OK)
        return cli_error(&err);
    double dt = res.time_s;
    double pairs = (double)res.num_k * (double)res.num_x;
    if (json) {
        printf("{");
        cli_json_str(stdout, "variant", res.variant, 1);
        cli_json_int(stdout, "num_k", res.num_k, 1);
        cli_json_int(stdout, "num_x", res.num_x, 1);
        cli_json_num(stdout, "time_s", dt, 1);
        cli_json_num(stdout, "gpairs_per_s", pairs / dt * 1e-9, 0);
        printf("}\n");
    } else {
        printf("%s: %s of %d samples at %d points in %.3f s (%.2f Gpairs/s) -> %s\n", res.variant,
               fhd ? "F^H d" : "Q", res.num_k, res.num_x, dt, pairs / dt * 1e-9, out_path);
    }
    return 0;
}
