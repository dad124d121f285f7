/* larmor-cli q: Parboil's mri-q (and, for mri-fhd inputs with --fhd,
 * mri-fhd) on the input's explicit points, written in Parboil's format. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
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
    lm_parboil *p = NULL;
    float *wr = NULL, *wi = NULL, *ore = NULL, *oim = NULL;
    int rc = 1;
    const lm_variant *v = lm_variant_get_available(variant, &err);
    if (!v || lm_parboil_read(in_path, &p, &err) != LM_OK)
        goto done;
    if (fhd && !p->d_r) {
        lm_fail(&err, LM_ERR_INVALID, "%s: an mri-q file has no k-space data for --fhd", in_path);
        goto done;
    }
    size_t nk = (size_t)p->num_k, nx = (size_t)p->num_x;
    if (!(wr = lm_alloc(nk, sizeof *wr, &err, "weights")) || !(wi = lm_alloc(nk, sizeof *wi, &err, "weights")) ||
        !(ore = lm_alloc(nx, sizeof *ore, &err, "output")) || !(oim = lm_alloc(nx, sizeof *oim, &err, "output")))
        goto done;
    for (size_t m = 0; m < nk; m++) {
        if (fhd) { /* conj(phi) d, as Parboil's mri-fhd */
            wr[m] = p->phi_r[m] * p->d_r[m] + p->phi_i[m] * p->d_i[m];
            wi[m] = p->phi_r[m] * p->d_i[m] - p->phi_i[m] * p->d_r[m];
        } else {
            wr[m] = p->phi_r[m] * p->phi_r[m] + p->phi_i[m] * p->phi_i[m];
        }
    }
    lm_ksum_in kin = {.m = p->num_k, .kx = p->kx, .ky = p->ky, .kz = p->kz, .wr = wr, .wi = fhd ? wi : NULL};
    lm_points pts = {.n = p->num_x, .x = p->x, .y = p->y, .z = p->z};
    double t0 = cli_now();
    if (lm_ksum_run(v, &kin, &pts, ore, oim, NULL, &err) != LM_OK)
        goto done;
    double dt = cli_now() - t0;
    if (lm_parboil_write_output(out_path, p->num_x, ore, oim, &err) != LM_OK)
        goto done;
    double pairs = (double)nk * (double)nx;
    if (json) {
        printf("{");
        cli_json_str(stdout, "variant", v->name, 1);
        cli_json_int(stdout, "num_k", p->num_k, 1);
        cli_json_int(stdout, "num_x", p->num_x, 1);
        cli_json_num(stdout, "time_s", dt, 1);
        cli_json_num(stdout, "gpairs_per_s", pairs / dt * 1e-9, 0);
        printf("}\n");
    } else {
        printf("%s: %s of %d samples at %d points in %.3f s (%.2f Gpairs/s) -> %s\n", v->name,
               fhd ? "F^H d" : "Q", p->num_k, p->num_x, dt, pairs / dt * 1e-9, out_path);
    }
    rc = 0;
done:
    if (rc)
        cli_error(&err);
    lm_parboil_free(p);
    free(wr), free(wi), free(ore), free(oim);
    return rc;
}
