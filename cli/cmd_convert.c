/* larmor-cli convert: any input Larmor reads (an IMPATIENT directory, an
 * ISMRMRD .h5, BART .cfl) written out as BART cfl files, exactly as Larmor
 * sees it: trajectory in cycles/FOV (BART's units: a matrix of n spans
 * -n/2..n/2), k-space after Larmor's conversions (IMPATIENT's data carry
 * 1/N and its grid offset), coil maps and field map in Larmor's voxel order,
 * times in seconds. Loading is cli_load_acq's (lm_acq); writing lm_cfl_*'s
 * (atomic). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_data.h"
#include "cli_util.h"
#include "commands.h"
#include "larmor.h"

static void usage(FILE *f)
{
    fputs("usage: larmor-cli convert --traj T [--kspace K] --out DIR [--sens S] [--times-out] [--repetition R]\n"
          "                          [--contrast C]\n"
          "  T, K: as recon takes them: .cfl (BART), .h5 (ISMRMRD: one file gives both), .bin (Parboil),\n"
          "  or --traj DIR alone: a data directory or any one file of it (its sens and times are taken)\n"
          "  writes into DIR (created), BART cfl/hdr pairs:\n"
          "    traj     [3, samples, readouts]  k in cycles/FOV (BART's units: -n/2..n/2 over a matrix of n)\n"
          "    kspace   [1, samples, readouts, coils]  as Larmor reconstructs it (IMPATIENT: divided by N,\n"
          "             grid offset applied as a phase)\n"
          "    sens     [nx, ny, nz, coils]  coil maps the input carries (IMPATIENT sensi_r/i) or --sens S\n"
          "    fieldmap [nx, ny, nz]  Hz (real part), when the input carries one that is not zero\n"
          "    times    [1, samples, readouts]  seconds, when the input has sample times (with --times-out,\n"
          "             or always when a field map is written)\n"
          "  prints the matrix and the files written; then e.g.\n"
          "    bart pics -S -l2 -r 0.01 -i 30 -t DIR/traj DIR/kspace DIR/sens x\n"
          "    larmor-cli recon --traj DIR/traj --kspace DIR/kspace --sens DIR/sens --matrix NXxNYxNZ --dirac\n"
          "  (IMPATIENT's model has no voxel basis: --dirac gives the same image as recon --traj on the\n"
          "  directory)\n", f);
}

static int write_real(const char *path, int nd, const int64_t *dims, const float *v, int64_t n, lm_error *err)
{
    lm_cfloat *c = lm_alloc((size_t)n, sizeof *c, err, path);
    if (!c)
        return 0;
    for (int64_t i = 0; i < n; i++)
        c[i] = v[i];
    lm_code rc = lm_cfl_write(path, nd, dims, c, err);
    free(c);
    return rc == LM_OK;
}

int cmd_convert(int argc, char **argv)
{
    static const struct option opts[] = {
        {"traj", required_argument, 0, 't'}, {"kspace", required_argument, 0, 'k'},
        {"out", required_argument, 0, 'o'}, {"sens", required_argument, 0, 's'},
        {"times-out", no_argument, 0, 'T'}, {"repetition", required_argument, 0, 'r'},
        {"contrast", required_argument, 0, 'c'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *traj_path = NULL, *kspace_path = NULL, *out = NULL, *sens_path = NULL;
    int times_out = 0, c;
    long long rep = -1, con = -1;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 't': traj_path = optarg; break;
        case 'k': kspace_path = optarg; break;
        case 'o': out = optarg; break;
        case 's': sens_path = optarg; break;
        case 'T': times_out = 1; break;
        case 'r':
            if (!cli_parse_int("--repetition", optarg, 0, 65535, &rep))
                return 1;
            break;
        case 'c':
            if (!cli_parse_int("--contrast", optarg, 0, 65535, &con))
                return 1;
            break;
        case 'h': usage(stdout); return 0;
        default:
            return cli_errorf("convert: unknown option or missing value '%s' (larmor-cli convert --help)",
                              argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_errorf("convert: unexpected argument '%s'", argv[optind]);
    if (!traj_path || !out)
        return cli_errorf("convert: --traj and --out are required (larmor-cli convert --help)");

    lm_error err = {0};
    const cli_acq_args la = {.cmd = "convert", .traj = traj_path, .kspace = kspace_path, .sens = sens_path,
                             .repetition = (int)rep, .contrast = (int)con};
    lm_acq *in = NULL;
    if (cli_load_acq(&la, &in, NULL, &err) != LM_OK)
        return cli_error(&err);
    int rc = 1;
    char path[4096];
    if (in->nslices > 1) {
        cli_errorf("%s: a multi-slice 2D ISMRMRD file (%d slices): convert takes one volume", traj_path,
                   in->nslices);
        goto done;
    }
    if (times_out && !in->traj->t) {
        cli_errorf("%s: no sample times in the input (--times-out)", traj_path);
        goto done;
    }
    /* Maps from a file: on the file's matrix when it has one, and one per channel. */
    const lm_sens *sens = in->sens;
    if (sens && in->paths.sens &&
        lm_check_sens(sens, in->have_geom ? in->geom.n : sens->n, in->kdata->ncoils, in->paths.sens, &err) != LM_OK)
        goto fail;
    cli_report_found(&la, in);
    if (!cli_mkdirs(out, &err))
        goto fail;
    const int64_t ro = in->traj->readout > 0 && in->traj->m % in->traj->readout == 0 ? in->traj->readout : in->traj->m;
    const int64_t dims_t[3] = {1, ro, in->traj->m / ro};
    snprintf(path, sizeof path, "%s/traj", out);
    if (lm_cfl_write_traj(path, in->traj, &err) != LM_OK)
        goto fail;
    printf("%s.cfl: trajectory [3, %lld, %lld] (cycles/FOV)\n", path, (long long)dims_t[1], (long long)dims_t[2]);
    snprintf(path, sizeof path, "%s/kspace", out);
    if (lm_cfl_write_kdata(path, in->kdata, ro, &err) != LM_OK)
        goto fail;
    printf("%s.cfl: k-space [1, %lld, %lld, %lld]\n", path, (long long)dims_t[1], (long long)dims_t[2],
           (long long)in->kdata->ncoils);
    if (sens) {
        snprintf(path, sizeof path, "%s/sens.cfl", out);
        if (lm_save_sens(path, sens, NULL, &err) != LM_OK)
            goto fail;
        printf("%s: coil maps [%lld, %lld, %lld, %lld]\n", path, (long long)sens->n[0], (long long)sens->n[1],
               (long long)sens->n[2], (long long)sens->ncoils);
    }
    if (in->fieldmap) {
        const int64_t d[3] = {in->geom.n[0], in->geom.n[1], in->geom.n[2]};
        snprintf(path, sizeof path, "%s/fieldmap", out);
        if (!write_real(path, 3, d, in->fieldmap, d[0] * d[1] * d[2], &err))
            goto fail;
        printf("%s.cfl: field map [%lld, %lld, %lld] (Hz)\n", path, (long long)d[0], (long long)d[1],
               (long long)d[2]);
    }
    if (in->traj->t && (times_out || in->fieldmap)) {
        snprintf(path, sizeof path, "%s/times", out);
        if (!write_real(path, 3, dims_t, in->traj->t, in->traj->m, &err))
            goto fail;
        printf("%s.cfl: sample times [1, %lld, %lld] (s)\n", path, (long long)dims_t[1], (long long)dims_t[2]);
    }
    if (in->have_geom)
        printf("matrix: %lldx%lldx%lld%s\n", (long long)in->geom.n[0], (long long)in->geom.n[1],
               (long long)in->geom.n[2], in->geom.basis == LM_BASIS_DIRAC ? " (Dirac basis: recon --dirac)" : "");
    rc = 0;
    goto done;
fail:
    rc = cli_error(&err);
done:
    lm_acq_free(in);
    return rc;
}
