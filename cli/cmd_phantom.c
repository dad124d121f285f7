/* larmor-cli phantom: a named benchmark problem or a custom phantom, written
 * as DIR/traj.cfl, DIR/kspace.cfl and DIR/truth.nii.gz (or DIR/data.h5);
 * with coils also DIR/sens.cfl, the maps the k-space was made with; with a
 * field map (--fieldmap-hz, S128c8f) DIR/fieldmap.nii.gz and DIR/times.cfl. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "larmor.h"
#include "phantom_dynamic.h"

static void help(void)
{
    puts("usage: larmor-cli phantom --problem NAME --out DIR [--format cfl|ismrmrd] [--coils C]\n"
         "                          [--fieldmap-hz MAX] [--readout-ms R]\n"
         "       larmor-cli phantom --matrix N [--phantom shepp-logan|shepp-logan-2d] [--traj KIND]\n"
         "                          [--samples M] [--readout R] [--noise LEVEL] [--seed S] [--coils C] --out DIR\n"
         "  NAME: B32 B64 B128 B64n B128n B64c8 B128c32 B64c8n S128c8f B128c8f (its data need a GPU)\n"
         "        dynamic (docs/dynamic.md): D128c8 D64c8, frames in dimension 10 of traj.cfl and\n"
         "        kspace.cfl, truth.nii.gz 4D (pixdim[4] the frame duration); --noise LEVEL adds noise\n"
         "  C: receive coils 1..64 (1: one uniform coil; more: synthetic head-coil maps, the exact\n"
         "     k-space per coil in kspace.cfl [1, samples, spokes, coils] and the maps in\n"
         "     sens.cfl [nx, ny, nz, coils]; with --problem it replaces the problem's count)\n"
         "  KIND: radial3d radial3d-full stack-of-spirals spiral2d radial2d cartesian\n"
         "  LEVEL: noise sigma as a fraction of RMS |d| (0.05 = 5 %)\n"
         "  MAX: off-resonance: a smooth field map (background and a frontal bump) whose largest |f| is\n"
         "     MAX Hz (0..10000; S128c8f: 150), the data under it summed on a 2x finer grid, written as\n"
         "     DIR/fieldmap.nii.gz (Hz) and DIR/times.cfl [1, samples, spokes] (s); 0 turns it off\n"
         "  R: readout duration in ms for the sample times (default 25; uniform dwell, t = 0 at the\n"
         "     readout's sample nearest k = 0; S128c8f's spiral is redesigned for it)\n"
         "writes DIR/traj.cfl+hdr, DIR/kspace.cfl+hdr, DIR/truth.nii.gz and, for 3D, DIR/ref.nii.gz\n"
         "(an anatomical reference: the same ellipsoids in another contrast; ismrmrd: DIR/data.h5)\n"
         "  with --problem: --lesion adds a small spherical lesion to the truth and the data, not to\n"
         "  ref.nii.gz, and writes DIR/lesion-mask.nii.gz (1 lesion, 2 surrounding shell: recon\n"
         "  --lesion-mask); --ref-shift-vox V|VX,VY,VZ moves the reference's content by V voxels (x)\n"
         "  with its affine unchanged; --ref-half-res writes it on an n/2 grid");
}

int cmd_phantom(int argc, char **argv)
{
    static const struct option opts[] = {
        {"problem", required_argument, 0, 'p'}, {"out", required_argument, 0, 'o'},
        {"format", required_argument, 0, 'f'}, {"matrix", required_argument, 0, 'n'},
        {"phantom", required_argument, 0, 'P'}, {"traj", required_argument, 0, 't'},
        {"samples", required_argument, 0, 'm'}, {"readout", required_argument, 0, 'r'},
        {"noise", required_argument, 0, 'z'}, {"seed", required_argument, 0, 's'},
        {"coils", required_argument, 0, 'c'}, {"fieldmap-hz", required_argument, 0, 'F'},
        {"readout-ms", required_argument, 0, 'R'}, {"help", no_argument, 0, 'h'},
        {"lesion", no_argument, 0, 'L'}, {"ref-shift-vox", required_argument, 0, 'S'},
        {"ref-half-res", no_argument, 0, 'H'}, {0, 0, 0, 0}};
    lm_lesion_opts lo = {0};
    int lesion_mode = 0;
    const char *problem = NULL, *out = NULL, *format = "cfl", *phantom_name = "shepp-logan";
    const char *traj_kind = NULL;
    int64_t n[3] = {0, 0, 0};
    long long samples = 0, readout = 0, seed = 1, coils = 0;
    double noise = 0, fm_hz = -1, readout_ms = 0; /* -1: not given */
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': problem = optarg; break;
        case 'o': out = optarg; break;
        case 'f': format = optarg; break;
        case 'n': if (!cli_parse_matrix(optarg, n)) return 1; break;
        case 'P': phantom_name = optarg; break;
        case 't': traj_kind = optarg; break;
        case 'm': if (!cli_parse_int("--samples", optarg, 1, 1LL << 32, &samples)) return 1; break;
        case 'r': if (!cli_parse_int("--readout", optarg, 1, 1 << 20, &readout)) return 1; break;
        case 'z': if (!cli_parse_double("--noise", optarg, &noise)) return 1; break;
        case 's': if (!cli_parse_int("--seed", optarg, 0, (1LL << 62), &seed)) return 1; break;
        case 'c': if (!cli_parse_int("--coils", optarg, 1, LM_COILS_SYNTH_MAX, &coils)) return 1; break;
        case 'F':
            if (!cli_parse_double("--fieldmap-hz", optarg, &fm_hz)) return 1;
            if (fm_hz < 0 || fm_hz > LM_FIELDMAP_SYNTH_MAX_HZ)
                return cli_errorf("phantom: --fieldmap-hz %s is out of range 0..%g Hz", optarg, LM_FIELDMAP_SYNTH_MAX_HZ);
            break;
        case 'R':
            if (!cli_parse_double("--readout-ms", optarg, &readout_ms)) return 1;
            if (!(readout_ms > 0) || readout_ms > 1000)
                return cli_errorf("phantom: --readout-ms %s is out of range (0..1000 ms]", optarg);
            break;
        case 'L': lo.lesion = lesion_mode = 1; break;
        case 'H': lo.ref_half_res = lesion_mode = 1; break;
        case 'S':
            lesion_mode = 1;
            if (!strchr(optarg, ',') ? !cli_parse_doubles("--ref-shift-vox", optarg, lo.ref_shift_vox, 1)
                                     : !cli_parse_doubles("--ref-shift-vox", optarg, lo.ref_shift_vox, 3))
                return 1;
            break;
        case 'h': help(); return 0;
        default: return 2;
        }
    }
    if (!out)
        return cli_errorf("phantom: --out DIR is required");
    if (strcmp(format, "cfl") && strcmp(format, "ismrmrd"))
        return cli_errorf("phantom: --format '%s' is not cfl or ismrmrd", format);
    if (!problem && !n[0])
        return cli_errorf("phantom: give --problem NAME or --matrix N");
    if (lesion_mode && !problem)
        return cli_errorf("phantom: --lesion, --ref-shift-vox and --ref-half-res need --problem NAME");
    if (noise < 0 || noise > 10)
        return cli_errorf("phantom: --noise %g is out of range 0..10", noise);
    if (problem && lm_dyn_problem_find(problem)) {
        if (strcmp(format, "cfl") || coils || fm_hz >= 0 || readout_ms > 0 || lesion_mode)
            return cli_errorf("phantom: %s takes --out, --noise and --seed only", problem);
        return cli_phantom_dynamic(lm_dyn_problem_find(problem), out, noise, seed);
    }

    lm_error err = {0};
    lm_geom g;
    lm_traj *t = NULL;
    lm_kdata *k = NULL;
    lm_volume *truth = NULL, *ref = NULL, *mask = NULL;
    lm_sens *sens = NULL;
    lm_coils_synth *cs = NULL;
    float *fieldmap = NULL;
    lm_volume *fmv = NULL;
    int rc = 1;

    if (problem) {
        const lm_problem_def *found = lm_problem_find(problem, &err);
        if (!found)
            goto done;
        lm_problem_def def = *found;
        if (coils)
            def.coils = coils;
        if (fm_hz >= 0)
            def.fieldmap_hz = fm_hz;
        if (readout_ms > 0)
            def.readout_ms = readout_ms;
        lm_lesion les;
        lm_lesion_default(&les);
        if (lesion_mode && lm_lesion_problem(&def, &lo, &les, &g, &t, &k, &truth, &sens, &ref, &mask, &err) != LM_OK)
            goto done;
        if (!lesion_mode && lm_problem_make_fieldmap(&def, &g, &t, &k, &truth, &sens, &fieldmap, &err) != LM_OK)
            goto done;
    } else {
        const lm_phantom *ph = lm_phantom_by_name(phantom_name, &err);
        if (!ph)
            goto done;
        if (ph->dim == 2)
            n[2] = 1;
        lm_traj_kind kind = (n[2] == 1) ? LM_TRAJ_RADIAL2D : LM_TRAJ_RADIAL3D;
        if (traj_kind && lm_traj_kind_parse(traj_kind, &kind, &err) != LM_OK)
            goto done;
        lm_geom_init(&g, n[0], n[1], n[2], 240.0);
        if (lm_traj_generate(kind, n, samples, readout, &t, &err) != LM_OK)
            goto done;
        if (!(k = lm_kdata_new(t->m, coils > 1 ? coils : 1, &err)))
            goto done;
        if (fm_hz > 0 || readout_ms > 0) {
            if (lm_traj_times_uniform(t, (readout_ms > 0 ? readout_ms : LM_PROBLEM_READOUT_MS) * 1e-3, &err) != LM_OK)
                goto done;
        }
        if (fm_hz > 0 && lm_fieldmap_synth(g.n, fm_hz, &fieldmap, &err) != LM_OK)
            goto done;
        if (coils > 1) {
            /* Maps of (x, y) only for a 2D phantom or a single slice. */
            int dim = ph->dim == 2 || n[2] == 1 ? 2 : 3;
            if (lm_coils_synth_make(dim, coils, &cs, &err) != LM_OK || lm_coils_synth_maps(cs, g.n, &sens, &err) != LM_OK)
                goto done;
        }
        if (fieldmap) { /* no closed form: the sum on a 2x finer grid */
            if (lm_fieldmap_synth_kspace(ph, &g, cs, fieldmap, t, NULL, k, &err) != LM_OK)
                goto done;
        } else if (cs ? lm_coils_synth_data(cs, ph, t, k, &err) != LM_OK : lm_phantom_kspace(ph, t, k->d, &err) != LM_OK)
            goto done;
        if (noise > 0 && lm_noise_add(k, noise, (uint64_t)seed, &err) != LM_OK)
            goto done;
        if (lm_phantom_truth(ph, &g, 4, &truth, &err) != LM_OK)
            goto done;
    }
    if (!cli_mkdirs(out, &err))
        goto done;
    char path[4096];
    if (!strcmp(format, "ismrmrd")) {
        snprintf(path, sizeof path, "%s/data.h5", out);
        if (lm_mrd_write(path, &g, t, k, &err) != LM_OK)
            goto done;
    } else {
        snprintf(path, sizeof path, "%s/traj", out);
        if (lm_cfl_write_traj(path, t, &err) != LM_OK)
            goto done;
        snprintf(path, sizeof path, "%s/kspace", out);
        if (lm_cfl_write_kdata(path, k, t->readout, &err) != LM_OK)
            goto done;
    }
    if (sens) {
        int64_t dims[4] = {sens->n[0], sens->n[1], sens->n[2], sens->ncoils};
        snprintf(path, sizeof path, "%s/sens", out);
        if (lm_cfl_write(path, 4, dims, sens->s, &err) != LM_OK)
            goto done;
    }
    if (t->t) { /* [1, samples, spokes] as the trajectory, seconds */
        int64_t r = t->readout > 0 && t->m % t->readout == 0 ? t->readout : t->m;
        int64_t dims[3] = {1, r, t->m / r};
        lm_cfloat *tc = lm_alloc((size_t)t->m, sizeof *tc, &err, "sample times");
        if (!tc)
            goto done;
        for (int64_t i = 0; i < t->m; i++)
            tc[i] = t->t[i];
        snprintf(path, sizeof path, "%s/times", out);
        lm_code wc = lm_cfl_write(path, 3, dims, tc, &err);
        free(tc);
        if (wc != LM_OK)
            goto done;
    }
    if (fieldmap) { /* Hz as signed float32, on the truth's grid and affine */
        if (!(fmv = lm_volume_copy(truth, &err)))
            goto done;
        for (int64_t i = 0; i < lm_volume_count(fmv); i++)
            fmv->data[i] = fieldmap[i];
        snprintf(path, sizeof path, "%s/fieldmap.nii.gz", out);
        if (lm_nifti_write(path, fmv, LM_NIFTI_REAL, &err) != LM_OK)
            goto done;
    }
    snprintf(path, sizeof path, "%s/truth.nii.gz", out);
    if (lm_nifti_write(path, truth, 0, &err) != LM_OK)
        goto done;
    if (mask) {
        snprintf(path, sizeof path, "%s/lesion-mask.nii.gz", out);
        if (lm_nifti_write(path, mask, 0, &err) != LM_OK)
            goto done;
    }
    if (g.n[2] > 1) { /* anatomical reference: same edges, another contrast */
        if (!ref && lm_phantom_truth(lm_phantom_shepp_logan_3d_ref(), &g, 4, &ref, &err) != LM_OK)
            goto done;
        snprintf(path, sizeof path, "%s/ref.nii.gz", out);
        if (lm_nifti_write(path, ref, 0, &err) != LM_OK)
            goto done;
    }
    fprintf(stderr, "phantom: %s: %lld samples x %lld coils, matrix %lldx%lldx%lld%s -> %s\n",
            problem ? problem : phantom_name, (long long)t->m, (long long)k->ncoils, (long long)g.n[0],
            (long long)g.n[1], (long long)g.n[2], fieldmap ? ", with a field map" : "", out);
    rc = 0;
done:
    if (rc)
        cli_error(&err);
    lm_traj_free(t);
    lm_kdata_free(k);
    lm_volume_free(truth);
    lm_volume_free(ref);
    lm_volume_free(mask);
    lm_sens_free(sens);
    lm_coils_synth_free(cs);
    free(fieldmap);
    lm_volume_free(fmv);
    return rc;
}
