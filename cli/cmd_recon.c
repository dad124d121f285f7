/* larmor-cli recon: Toeplitz CG or a gridding baseline on a trajectory and
 * its k-space, optionally scored against a truth. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_data.h"
#include "cli_dicom.h"
#include "cli_serve.h"
#include "cli_util.h"
#include "commands.h"
#include "larmor.h"
#include "recon_dynamic.h"
#include "recon_realtime.h"

/* Multi-slice 2D ISMRMRD: each slice reconstructed in 2D with the same
 * options, stacked along z in the reader's order (position along the slice
 * direction) with the affine lm_mrd_slices_affine measures. */
static int recon_slices(const char *path, lm_acq *in, lm_geom g, lm_recon_opts *o, const char *noise_path,
                        const char *truth_path, const char *out, int as_complex, int json, const char *refused,
                        const cli_dicom_args *dcm)
{
    lm_error err = {0};
    const int ns = in->nslices;
    lm_volume *vol = NULL, *truth = NULL;
    lm_kdata *noise = NULL;
    lm_recon_result res = {0};
    double tq = 0, tf = 0, tc = 0, tt = 0;
    int q_cached = 1, iters = 0, rc = 1, fell_back = 0;
    const char *variant = o->variant;
    lm_metrics m = {.psnr_db = NAN, .percent_error = NAN};
    if (refused) {
        lm_fail(&err, LM_ERR_UNSUPPORTED, "%s: %d slices: %s is not supported with multi-slice data", path, ns,
                refused);
        goto done;
    }
    if (g.n[2] != 1) {
        lm_fail(&err, LM_ERR_INVALID, "%s: %d slices of 2D data but the matrix asked for is %lldx%lldx%lld "
                "(give NXxNY or NXxNYx1)", path, ns, (long long)g.n[0], (long long)g.n[1], (long long)g.n[2]);
        goto done;
    }
    /* The stacked volume's geometry, on the matrix reconstructed. */
    lm_mrd placed = in->mrd;
    placed.geom = g;
    double aff[4][4], vox[3];
    if (lm_mrd_slices_affine(&placed, aff, vox, &err) != LM_OK) {
        char msg[sizeof err.msg];
        snprintf(msg, sizeof msg, "%s", err.msg);
        lm_fail(&err, err.code, "%s: %s", path, msg);
        goto done;
    }
    const int64_t dims[3] = {g.n[0], g.n[1], ns};
    if (!(vol = lm_volume_new(dims, vox, &err)))
        goto done;
    memcpy(vol->affine, aff, sizeof aff);
    if (truth_path) {
        if (lm_load_volume_series(truth_path, dcm->series, &truth, &err) != LM_OK)
            goto done;
        if (truth->dims[0] != dims[0] || truth->dims[1] != dims[1] || truth->dims[2] != dims[2]) {
            lm_fail(&err, LM_ERR_INVALID, "%s: truth is %lldx%lldx%lld but the %d slices stack to %lldx%lldx%lld",
                    truth_path, (long long)truth->dims[0], (long long)truth->dims[1], (long long)truth->dims[2],
                    ns, (long long)dims[0], (long long)dims[1], (long long)dims[2]);
            goto done;
        }
    }
    const int64_t nc = in->mrd.slices[0].kdata->ncoils;
    if (noise_path) {
        if (cli_load_noise(noise_path, nc, &noise, &err) != LM_OK)
            goto done;
        o->noise = noise;
    } else if (in->noise && nc > 1) {
        o->noise = in->noise; /* the file's own noise scans, for every slice */
        noise_path = path;
    }
    cli_progress prog;
    cli_progress_init(&prog, 1);
    o->progress = cli_progress_cb;
    o->progress_user = &prog;
    const int64_t nvox = g.n[0] * g.n[1];
    for (int z = 0; z < ns; z++) {
        const lm_mrd_slice *sl = &in->mrd.slices[z];
        if (prog.enabled)
            fprintf(stderr, "\rslice %d/%d (idx.slice %d)\n", z + 1, ns, sl->index);
        lm_recon_result_clear(&res);
        lm_code code = lm_recon_run(&g, sl->traj, sl->kdata, o, &res, &err);
        cli_progress_done(&prog);
        if (code != LM_OK) {
            char msg[sizeof err.msg];
            snprintf(msg, sizeof msg, "%s", err.msg);
            lm_fail(&err, code, "%s: slice %d (idx.slice %d): %s", path, z, sl->index, msg);
            goto done;
        }
        if (res.fell_back && !fell_back++) {
            fprintf(stderr, "recon: %s\n", res.fallback_note); /* once: every slice falls back alike */
            variant = res.fallback_variant;
        }
        if (o->lambda_auto)
            fprintf(stderr, "slice %d: lambda auto: %.4g (%s)\n", z, res.lambda_used, res.lambda_note);
        memcpy(vol->data + (size_t)z * (size_t)nvox, res.image->data, (size_t)nvox * sizeof *vol->data);
        tq += res.time_q_s;
        tf += res.time_fhd_s;
        tc += res.time_cg_s;
        tt += res.time_total_s;
        q_cached &= res.q_from_cache;
        iters = res.iters_done;
    }
    if (out && cli_write_image(out, vol, as_complex, &err) != LM_OK)
        goto done;
    if (dcm->dir) {
        char desc[160];
        cli_dicom_describe(desc, sizeof desc, o->method, res.coils, res.combine, o->reg,
                           o->lambda_auto ? res.lambda_used : o->lambda, o->method == LM_METHOD_CG ? variant : NULL);
        if (cli_dicom_write(dcm, vol, &in->prov, desc, json, &err) != LM_OK)
            goto done;
    }
    const int scale = lm_recon_scale_match(o->method, res.combine, res.sens_source);
    if (truth && lm_metrics_compute(vol->data, truth->data, lm_volume_count(truth), NULL, scale, &m, &err) != LM_OK)
        goto done;
    if (json) {
        printf("{");
        cli_json_str(stdout, "method", lm_method_name(o->method), 1);
        cli_json_str(stdout, "variant", o->method == LM_METHOD_CG ? variant : "", 1);
        cli_json_bool(stdout, "fell_back", fell_back > 0, 1);
        cli_json_num(stdout, "lambda", o->lambda_auto ? NAN : o->lambda, 1); /* auto: per slice, on stderr */
        cli_json_bool(stdout, "lambda_auto", o->lambda_auto, 1);
        cli_json_str(stdout, "reg", lm_reg_name(o->reg), 1);
        cli_json_int(stdout, "iters", iters, 1);
        cli_json_num(stdout, "time_q_s", tq, 1);
        cli_json_bool(stdout, "q_cached", q_cached, 1);
        cli_json_num(stdout, "time_fhd_s", tf, 1);
        cli_json_num(stdout, "time_cg_s", tc, 1);
        cli_json_num(stdout, "time_total_s", tt, 1);
        cli_json_num(stdout, "psnr_db", m.psnr_db, 1);
        cli_json_num(stdout, "percent_error", m.percent_error, 1);
        cli_json_int(stdout, "coils", res.coils, 1);
        cli_json_int(stdout, "coils_in", res.coils_in, 1);
        cli_json_bool(stdout, "prewhitened", res.noise_cov != NULL, 1);
        cli_json_str(stdout, "combine",
                     res.coils == 1 ? "none" : res.combine == LM_COMBINE_RSS ? "root-sum-of-squares" : "sense", 1);
        cli_json_int(stdout, "slices", ns, 1);
        cli_json_num(stdout, "slice_spacing_mm", vox[2], 1);
        cli_json_int(stdout, "repetition", in->repetition, 1);
        cli_json_int(stdout, "contrast", in->contrast, 1);
        cli_json_str(stdout, "out_dicom", dcm->dir ? dcm->dir : "", 1);
        cli_json_str(stdout, "out", out ? out : "", 0);
        printf("}\n");
    } else {
        printf("%s", lm_method_name(o->method));
        if (o->method == LM_METHOD_CG)
        {
            if (o->lambda_auto)
                printf(" (%s, lambda auto per slice, %s, %d iterations)", variant, lm_reg_name(o->reg), iters);
            else
                printf(" (%s, lambda %g, %s, %d iterations)", variant, o->lambda, lm_reg_name(o->reg), iters);
        }
        printf(": %d slices of %lldx%lld, %.4g mm apart (repetition %d, contrast %d): Q %.3f s%s, F^H d %.3f s, "
               "CG %.3f s, total %.3f s\n", ns, (long long)g.n[0], (long long)g.n[1], vox[2], in->repetition,
               in->contrast, tq, q_cached ? " (cached)" : "", tf, tc, tt);
        if (truth)
            printf("PSNR %.2f dB, error %.2f %%%s\n", m.psnr_db, m.percent_error, scale ? " (scale-matched)" : "");
        if (res.noise_cov)
            printf("data prewhitened with the noise covariance of %s\n", noise_path);
        if (out)
            printf("wrote %s\n", out);
    }
    rc = 0;
done:
    if (rc)
        cli_error(&err);
    lm_recon_result_clear(&res);
    lm_volume_free(vol);
    lm_volume_free(truth);
    lm_kdata_free(noise);
    return rc;
}

/* --fov 240 (every axis) or 240x240x60 */
static int parse_fov(const char *s, double fov[3])
{
    double a = 0, b = 0, c = 0;
    char tail;
    int k = sscanf(s, "%lfx%lfx%lf%c", &a, &b, &c, &tail);
    if (k == 1 && !strchr(s, 'x'))
        b = c = a;
    else if (k != 3)
        return cli_errorf("--fov: '%s' is not MM or XxYxZ (mm)", s), 0;
    if (!(a > 0 && b > 0 && c > 0 && isfinite(a) && isfinite(b) && isfinite(c)))
        return cli_errorf("--fov: '%s' must be positive mm", s), 0;
    fov[0] = a, fov[1] = b, fov[2] = c;
    return 1;
}

static void help(void)
{
    puts("usage: larmor-cli recon --traj T --kspace K --matrix N --method cg|grid-linear|grid-kb|fft --out OUT\n"
         "        [--variant NAME|auto] [--fallback none|cpu] [--lambda L] [--reg identity|gradient|tv|wavelet|anatomical|anatomical-edges\n"
         "        --ref R.nii.gz [--edge 0.05] [--no-register | --ref-transform RX,RY,RZ,TX,TY,TZ]\n"
         "        [--data-edge K] [--data-edge-sigma V]] [--prior-influence-out F] [--lesion-mask M]\n"
         "        [--iters 60] [--tol 0] [--fov MM] [--basis box|dirac] [--dirac] [--truth TRUTH.nii.gz] [--complex]\n"
         "        [--no-cache] [--json] [--sens S] [--sens-out S] [--coil-combine auto|sense|rss]\n"
         "        [--noise N] [--coils-compress K|auto] [--coil-images OUT] [--repetition R] [--contrast C]\n"
         "        [--fieldmap FM] [--times T] [--segments auto|L|0]\n"
         "        [--out-dicom DIR [--dicom-enhanced] [--dicom-part magnitude|phase|real|imag] [--dicom-like DIR]]\n"
         "        [--series UID]\n"
         "  --out-dicom DIR: also (or, without --out, only) the image as a DICOM series (docs/dicom.md): one\n"
         "  MR Image per slice, or one Enhanced MR multi-frame file (--dicom-enhanced); int16 rescaled;\n"
         "  patient and study from the ISMRMRD header, or from the series in --dicom-like DIR; a dynamic\n"
         "  reconstruction's frames as one dynamic series (per slice per frame, or a temporal dimension)\n"
         "  --ref, --truth, --fieldmap, --lesion-mask may name a DICOM folder or file; --series UID picks\n"
         "  one series where a --ref, --truth, --fieldmap, --lesion-mask or --dicom-like folder holds several\n"
         "  T, K: .cfl (BART), .h5 (ISMRMRD: one file gives both and the matrix), .bin (Parboil mri-fhd);\n"
         "  --traj DIR alone: a data directory or any one file of it (traj.cfl + kspace.cfl, an .h5, an\n"
         "  IMPATIENT directory; no FOV: --fov sets it): its sens, fieldmap and times are used unless\n"
         "  --sens/--fieldmap/--times name others; one line on stderr says what was found (--quiet: none)\n"
         "  --matrix N, NXxNY or NXxNYxNZ; --fov MM or XxYxZ mm (files with a FOV keep theirs)\n"
         "  --fieldmap FM: off-resonance in Hz (.nii/.nii.gz resampled onto the matrix through its affine\n"
         "  when another matrix; .cfl on the matrix); needs sample times: --times T (.cfl [1, samples,\n"
         "  spokes], seconds from the echo), an ISMRMRD file's dwell times or an IMPATIENT t.dat\n"
         "  --segments: time segments of the field-map model (auto: enough for its accuracy; 0: exact)\n"
         "  ISMRMRD: --repetition R, --contrast C pick one (default: the first present); a multi-slice 2D\n"
         "  file is reconstructed slice by slice (same options) and stacked into nx x ny x slices with\n"
         "  the slices' own geometry (NIfTI affine); --truth then compares the stacked volume\n"
         "  OUT: .nii, .nii.gz (magnitude; --complex for complex64) or .cfl\n"
         "  lambda is relative to the diagonal of F^H F (see README); variants: larmor-cli variants\n"
         "  --lambda auto: chosen from the data (docs/lambda.md): the discrepancy principle with the noise\n"
         "  of --noise scans or of the outer k-space; --lambda-criterion discrepancy|gcv picks the rule\n"
         "  (gcv: linear priors only; tv and wavelet use the discrepancy over ADMM trial solves); dynamic\n"
         "  data (ttv, llr): the temporal weight by k-space cross-validation (docs/dynamic.md)\n"
         "  --variant auto (the default): the fastest accurate one here (gpu-nufft with a GPU, else cpu-nufft)\n"
         "  --fallback cpu: when a GPU variant (cg) runs out of GPU memory, hits a driver error or is not\n"
         "  available here, run again on its CPU twin (gpu-nufft -> cpu-nufft, the direct sums -> cpu-simd)\n"
         "  with every other option kept, and say so on stderr (default none: fail with the GPU's error)\n"
         "  --sens S: coil maps [nx, ny, nz, coils] (.cfl as bart ecalib writes them); with maps the coils\n"
         "  are reconstructed together (SENSE: one complex image); --coil-combine rss reconstructs each\n"
         "  channel on its own and combines them by root-sum-of-squares (magnitude)\n"
         "  without --sens, multi-coil data get maps estimated from their k-space centre (ESPIRiT, Walsh\n"
         "  as fallback); --sens-out S writes the maps used (.cfl or .nii/.nii.gz complex 4D)\n"
         "  --noise N: noise samples [1, samples, 1, coils] (.cfl) to prewhiten data and maps with\n"
         "  --coils-compress K|auto: K virtual coils by SVD of the data (auto: 99 %% of the energy)\n"
         "  --coil-images OUT: also write one image per channel (.cfl [nx, ny, nz, coils]): each channel's\n"
         "  own reconstruction, or s_c rho under SENSE\n"
         "  --edge: anatomical edge scale as a fraction of max|ref|: differences across reference\n"
         "  edges larger than this are barely penalised (weight 1/(1+(|d ref|/(edge max|ref|))^2))\n"
         "  anatomical: the reference's edge weights times the edges of a pilot reconstruction of the\n"
         "  data, so an edge the data show and the reference lacks is let through (docs/priors.md);\n"
         "  anatomical-edges: the reference's weights alone. The reference (any NIfTI) is resampled\n"
         "  through its affine and,\n"
         "  unless --no-register, registered (rigid, mutual information) to a pilot reconstruction;\n"
         "  the transform is printed; --ref-transform gives it back (degrees about x, y, z, then mm;\n"
         "  reconstruction world -> reference world, about the grid centre) and skips registration\n"
         "  --data-edge K: data edge scale as a fraction of the pilot's 99th percentile of |rho| (default\n"
         "  0.03); --data-edge-sigma V: the pilot is smoothed by a Gaussian of V voxels first (default 1)\n"
         "  --prior-influence-out F: |this image - the same with the identity prior| (.nii magnitude)\n"
         "  --lesion-mask M: labels 1 lesion, 2 surrounding shell (larmor-cli phantom --lesion): prints\n"
         "  the lesion contrast (needs --truth)\n"
         "  dynamic data (docs/dynamic.md): cfl with frames in dimension 10, or binned by\n"
         "  --spokes-per-frame N or --frames F; --reg ttv|ttv+tv|ttik|llr (temporal TV, with spatial TV,\n"
         "  temporal Tikhonov, locally low rank [--llr-block 8]); --lambda L|auto the temporal weight\n"
         "  (default 0.02), --lambda-space L the spatial; --iters ADMM iterations (default 25, 2 CG steps each);\n"
         "  the Dirac voxel basis unless --basis box; OUT .cfl (frames in dimension 10) or\n"
         "  .nii/.nii.gz (4D, pixdim[4] the frame duration: --frame-ms MS where the data carry none);\n"
         "  --truth a 4D NIfTI or cfl\n"
         "  --realtime WINDOW:STEP: the frames a real-time MRD stream gives (docs/mrd-server.md): frame f by\n"
         "  SENSE CG (--iters, default 8, warm-started from frame f-1; --lambda, Tikhonov) from acquisitions\n"
         "  [f STEP, f STEP + WINDOW), the NUFFT pair per window (cpu-nufft, or --variant gpu-nufft), maps\n"
         "  from the first window unless --sens; OUT 4D .nii/.nii.gz or .cfl");
}

int cmd_recon(int argc, char **argv)
{
    static const struct option opts[] = {
        {"traj", required_argument, 0, 't'}, {"kspace", required_argument, 0, 'k'},
        {"matrix", required_argument, 0, 'n'}, {"method", required_argument, 0, 'M'},
        {"variant", required_argument, 0, 'v'}, {"lambda", required_argument, 0, 'l'},
        {"reg", required_argument, 0, 'r'}, {"ref", required_argument, 0, 'R'},
        {"iters", required_argument, 0, 'i'}, {"tol", required_argument, 0, 'T'},
        {"truth", required_argument, 0, 'x'}, {"out", required_argument, 0, 'o'},
        {"fov", required_argument, 0, 'f'}, {"dirac", no_argument, 0, 'd'},
        {"complex", no_argument, 0, 'c'}, {"no-cache", no_argument, 0, 'C'},
        {"edge", required_argument, 0, 'e'},
        {"sens", required_argument, 0, 'S'}, {"coil-combine", required_argument, 0, 'B'},
        {"coil-images", required_argument, 0, 'I'}, {"sens-out", required_argument, 0, 'O'},
        {"noise", required_argument, 0, 'N'}, {"coils-compress", required_argument, 0, 'K'},
        {"repetition", required_argument, 0, 'E'}, {"contrast", required_argument, 0, 'G'},
        {"fieldmap", required_argument, 0, 'F'}, {"times", required_argument, 0, 'u'},
        {"segments", required_argument, 0, 's'},
        {"lambda-criterion", required_argument, 0, 'L'},
        {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'},
        {"lesion-mask", required_argument, 0, 1001}, {"ref-transform", required_argument, 0, 1002},
        {"no-register", no_argument, 0, 1003}, {"prior-influence-out", required_argument, 0, 1004},
        {"data-edge", required_argument, 0, 1005}, {"data-edge-sigma", required_argument, 0, 1006},
        {"fallback", required_argument, 0, 1007}, {"quiet", no_argument, 0, 'q'},
        {"out-dicom", required_argument, 0, 1010}, {"dicom-enhanced", no_argument, 0, 1011},
        {"dicom-part", required_argument, 0, 1012}, {"dicom-like", required_argument, 0, 1013},
        {"series", required_argument, 0, 1014},
        {"spokes-per-frame", required_argument, 0, 1020}, {"frames", required_argument, 0, 1021},
        {"lambda-space", required_argument, 0, 1022}, {"llr-block", required_argument, 0, 1023},
        {"frame-ms", required_argument, 0, 1024}, {"realtime", required_argument, 0, 1025},
        {"basis", required_argument, 0, 1026},
        {0, 0, 0, 0}};
    const char *lesion_path = NULL, *influence_path = NULL;
    const char *traj = NULL, *kspace = NULL, *truth_path = NULL, *out = NULL, *ref_path = NULL;
    const char *sens_path = NULL, *coil_images_path = NULL, *sens_out = NULL, *noise_path = NULL;
    const char *fieldmap_path = NULL, *times_path = NULL;
    int64_t n[3] = {0, 0, 0};
    double fov[3] = {240.0, 240.0, 240.0};
    int quiet = 0, json = 0, as_complex = 0, dirac = 0, method_given = 0, repetition = -1, contrast = -1;
    lm_recon_opts o;
    lm_recon_opts_init(&o);
    cli_dicom_args dcm = {0};
    cli_dyn_args dyn;
    cli_dyn_args_init(&dyn);
    int iters_given = 0, lambda_given = 0, rt_window = 0, rt_step = 0;
    lm_error err = {0};
    long long iv;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 't': traj = optarg; break;
        case 'k': kspace = optarg; break;
        case 'n': if (!cli_parse_matrix(optarg, n)) return 1; break;
        case 'M':
            if (lm_method_parse(optarg, &o.method, &err) != LM_OK)
                return cli_error(&err);
            method_given = 1;
            break;
        case 'v': o.variant = optarg; break;
        case 'l':
            lambda_given = 1;
            if (strcmp(optarg, "auto") == 0)
                o.lambda_auto = 1;
            else if (!cli_parse_double("--lambda", optarg, &o.lambda))
                return 1;
            break;
        case 'L':
            if (lm_lambda_criterion_parse(optarg, &o.lambda_criterion, &err) != LM_OK)
                return cli_error(&err);
            break;
        case 'r':
            if (!cli_dyn_reg_parse(optarg, &dyn) && lm_reg_parse(optarg, &o.reg, &err) != LM_OK)
                return cli_error(&err);
            break;
        case 'R': ref_path = optarg; break;
        case 'i':
            if (!cli_parse_int("--iters", optarg, 0, 100000, &iv))
                return 1;
            o.iters = (int)iv;
            iters_given = 1;
            break;
        case 'T': if (!cli_parse_double("--tol", optarg, &o.tol)) return 1; break;
        case 'x': truth_path = optarg; break;
        case 'o': out = optarg; break;
        case 'f': if (!parse_fov(optarg, fov)) return 1; break;
        case 'F': fieldmap_path = optarg; break;
        case 'u': times_path = optarg; break;
        case 's':
            if (strcmp(optarg, "auto") == 0) {
                o.segments = -1; /* LM_SEGMENTS_AUTO */
            } else {
                if (!cli_parse_int("--segments", optarg, 0, 1000, &iv))
                    return 1;
                o.segments = (int)iv;
            }
            break;
        case 'd': dirac = 1; break;
        case 1026:
            if (strcmp(optarg, "box") && strcmp(optarg, "dirac"))
                return cli_errorf("recon: --basis %s: box or dirac", optarg);
            dirac = strcmp(optarg, "dirac") == 0 ? 1 : -1;
            break;
        case 'e': if (!cli_parse_double("--edge", optarg, &o.edge_frac)) return 1; break;
        case 'c': as_complex = 1; break;
        case 'S': sens_path = optarg; break;
        case 'I': coil_images_path = optarg; o.keep_coil_images = 1; break;
        case 'O': sens_out = optarg; break;
        case 'N': noise_path = optarg; break;
        case 'E': if (!cli_parse_int("--repetition", optarg, 0, 65535, &iv)) return 1; repetition = (int)iv; break;
        case 'G': if (!cli_parse_int("--contrast", optarg, 0, 65535, &iv)) return 1; contrast = (int)iv; break;
        case 'K':
            if (strcmp(optarg, "auto") == 0) {
                o.compress_coils = -1;
            } else {
                if (!cli_parse_int("--coils-compress", optarg, 1, 1024, &iv))
                    return 1;
                o.compress_coils = (int)iv;
            }
            break;
        case 'B':
            if (lm_coil_combine_parse(optarg, &o.combine, &err) != LM_OK)
                return cli_error(&err);
            break;
        case 'C': o.use_cache = 0; break;
        case 1001: lesion_path = optarg; break;
        case 1002: {
            double p[6];
            if (!cli_parse_doubles("--ref-transform", optarg, p, 6))
                return 1;
            o.ref_transform = (lm_rigid){.rot_deg = {p[0], p[1], p[2]}, .shift_mm = {p[3], p[4], p[5]}};
            o.ref_transform_given = 1;
            break;
        }
        case 1003: o.ref_register = 0; break;
        case 1004: influence_path = optarg; o.prior_influence = 1; break;
        case 1005: if (!cli_parse_double("--data-edge", optarg, &o.data_edge)) return 1; break;
        case 1007:
            if (lm_fallback_parse(optarg, &o.fallback, &err) != LM_OK)
                return cli_error(&err);
            break;
        case 1006: if (!cli_parse_double("--data-edge-sigma", optarg, &o.data_edge_sigma)) return 1; break;
        case 1010: dcm.dir = optarg; break;
        case 1011: dcm.enhanced = 1; break;
        case 1012: if (lm_dicom_part_parse(optarg, &dcm.part, &err) != LM_OK) return cli_error(&err); break;
        case 1013: dcm.like = optarg; break;
        case 1014: dcm.series = optarg; break;
        case 1020: if (!cli_parse_int("--spokes-per-frame", optarg, 1, 1LL << 40, &dyn.spokes_per_frame)) return 1; break;
        case 1021: if (!cli_parse_int("--frames", optarg, 1, 1LL << 40, &dyn.frames)) return 1; break;
        case 1025:
            if (lm_sliding_parse(optarg, &rt_window, &rt_step, &err) != LM_OK)
                return cli_error(&err);
            break;
        case 1022:
            if (!cli_parse_double("--lambda-space", optarg, &dyn.lambda_space) || dyn.lambda_space < 0)
                return cli_errorf("recon: --lambda-space must be a number >= 0 (got %s)", optarg);
            break;
        case 1023: if (!cli_parse_int("--llr-block", optarg, 2, 256, &dyn.llr_block)) return 1; break;
        case 1024:
            if (!cli_parse_double("--frame-ms", optarg, &dyn.frame_ms) || !(dyn.frame_ms > 0))
                return cli_errorf("recon: --frame-ms must be a duration > 0 ms (got %s)", optarg);
            break;
        case 'j': json = 1; break;
        case 'q': quiet = 1; break;
        case 'h': help(); return 0;
        default: return 2;
        }
    }
    if (!out && !dcm.dir)
        return cli_errorf("recon: --out OUT (or --out-dicom DIR) is required");
    if (cli_dicom_check(&dcm, &err) != LM_OK)
        return cli_error(&err);
    if (o.lambda < 0)
        return cli_errorf("recon: --lambda must be >= 0 or auto (got %g)", o.lambda);
    if (o.lambda_criterion != LM_LAMBDA_DEFAULT && !o.lambda_auto)
        return cli_errorf("recon: --lambda-criterion needs --lambda auto");
    if (o.lambda_auto && o.method != LM_METHOD_CG)
        return cli_errorf("recon: --lambda auto applies to --method cg only");
    if (lm_reg_weighted(o.reg) && !ref_path)
        return cli_errorf("recon: --reg %s needs --ref REFERENCE.nii.gz", lm_reg_name(o.reg));
    if (o.data_edge < 0 || o.data_edge_sigma < 0)
        return cli_errorf("recon: --data-edge and --data-edge-sigma must be > 0");
    if (lesion_path && !truth_path)
        return cli_errorf("recon: --lesion-mask needs --truth TRUTH.nii.gz");
    if (influence_path && method_given && o.method != LM_METHOD_CG)
        return cli_errorf("recon: --prior-influence-out needs --method cg");

    lm_acq *in = NULL;
    lm_volume *ref = NULL, *truth = NULL, *lesion = NULL;
    lm_kdata *noise = NULL;
    lm_recon_result res = {0};
    int rc = 1;
    o.encodings = cli_serve_encodings(); /* served: Q and plans kept between commands */
    cli_trace("options parsed");
    /* A GPU run's CUDA context is made while the inputs are read. */
    if (o.method == LM_METHOD_CG) {
        const lm_variant *pv = lm_variant_is_auto(o.variant) ? NULL : lm_variant_find(o.variant, NULL);
        if (!pv || pv->device == LM_DEVICE_GPU)
            larmor_gpu_prewarm();
    }
    const cli_acq_args la = {.cmd = "recon", .traj = traj, .kspace = kspace, .sens = sens_path,
                             .fieldmap = fieldmap_path, .series = dcm.series, .times = times_path,
                             .repetition = repetition, .contrast = contrast, .quiet = quiet || json};
    if (cli_load_acq(&la, &in, NULL, &err) != LM_OK)
        return cli_error(&err);
    cli_trace("inputs read");
    if ((repetition >= 0 || contrast >= 0) && !in->is_mrd) {
        lm_acq_free(in);
        return cli_errorf("recon: --repetition and --contrast apply to ISMRMRD (.h5) input only");
    }
    lm_geom g = in->geom;
    if (n[0]) {
        lm_geom_init(&g, n[0], n[1], n[2], 0);
        if (in->have_geom)
            g.basis = in->geom.basis; /* a new matrix over the file's field of view */
    } else if (!in->have_geom) {
        lm_acq_free(in);
        return cli_errorf("recon: --matrix N is required for %s", traj ? traj : kspace);
    }
    for (int a = 0; a < 3; a++)
        g.fov_mm[a] = in->fov_known ? in->geom.fov_mm[a] : fov[a];
    if (dirac > 0)
        g.basis = LM_BASIS_DIRAC;
    if (in->cartesian && !method_given) {
        if (in->accel > 1 || in->missing_lines > 0) /* an FFT would alias: SENSE */
            fprintf(stderr, "recon: %s: undersampled Cartesian data (acceleration %lld, %lld phase-encode lines "
                    "missing): SENSE (--method cg, estimated coil maps) by default; --method fft for the FFT\n",
                    traj ? traj : kspace, (long long)(in->accel > 1 ? in->accel : 1), (long long)in->missing_lines);
        else
            o.method = LM_METHOD_FFT; /* the first method for Cartesian acquisitions */
    }
    if (rt_window) { /* a real-time stream's frames: recon_realtime.c */
        if (o.lambda_auto || (method_given && o.method != LM_METHOD_CG) || o.reg != LM_REG_IDENTITY ||
            cli_dyn_wanted(&dyn, in) || fieldmap_path || ref_path) {
            lm_acq_free(in);
            return cli_errorf("recon: --realtime reconstructs by CG with Tikhonov (identity) and a fixed --lambda: "
                              "drop --lambda auto, --method, --reg, --fieldmap, --ref and frame binning");
        }
        const cli_rt_run run = {.window = rt_window, .step = rt_step, .variant = o.variant, .lambda = o.lambda,
                                .iters = iters_given ? o.iters : 0, .threads = o.threads,
                                .compress = o.compress_coils, .name = traj ? traj : kspace, .out = out, .as_complex = as_complex, .json = json};
        rc = cli_recon_realtime(in, &g, &run);
        lm_acq_free(in);
        return rc;
    }
    if (cli_dyn_wanted(&dyn, in)) { /* frames: recon_dynamic.c */
        const char *refused = method_given && o.method != LM_METHOD_CG ? "--method" : ref_path ? "--ref"
                              : noise_path ? "--noise" : fieldmap_path ? "--fieldmap" : coil_images_path ? "--coil-images"
                              : sens_out ? "--sens-out" : lesion_path ? "--lesion-mask"
                              : influence_path ? "--prior-influence-out" : o.compress_coils ? "--coils-compress" : NULL;
        const cli_dyn_run run = {.variant = o.variant, .lambda = lambda_given ? o.lambda : -1, .lambda_auto = o.lambda_auto,
                                 .iters = iters_given ? o.iters : 0, .use_cache = o.use_cache, .truth = truth_path,
                                 .out = out, .dicom = &dcm, .as_complex = as_complex, .json = json,
                                 .refused = refused, .basis_given = dirac != 0};
        rc = cli_recon_dynamic(in, &g, &dyn, &run);
        lm_acq_free(in);
        return rc;
    }
    if (in->nslices > 1) {
        const char *refused = sens_path ? "--sens" : sens_out ? "--sens-out" : coil_images_path ? "--coil-images"
                              : lm_reg_weighted(o.reg) ? "--reg anatomical" : fieldmap_path ? "--fieldmap"
                              : times_path ? "--times" : lesion_path ? "--lesion-mask"
                              : influence_path ? "--prior-influence-out" : NULL;
        rc = recon_slices(in->paths.traj, in, g, &o, noise_path, truth_path,
                          out, as_complex, json, refused, &dcm);
        lm_acq_free(in);
        return rc;
    }
    /* Coil maps and field map onto the matrix asked for (checked there). */
    if (lm_acq_regrid(in, &g, &err) != LM_OK)
        goto done;
    o.fieldmap = in->fieldmap;
    fieldmap_path = in->paths.fieldmap ? in->paths.fieldmap : in->paths.traj; /* a carried map: the data's */
    if (ref_path && lm_load_volume_series(ref_path, dcm.series, &ref, &err) != LM_OK)
        goto done;
    if (truth_path && lm_load_volume_series(truth_path, dcm.series, &truth, &err) != LM_OK)
        goto done;
    if (truth && (truth->dims[0] != g.n[0] || truth->dims[1] != g.n[1] || truth->dims[2] != g.n[2])) {
        lm_fail(&err, LM_ERR_INVALID, "%s: truth is %lldx%lldx%lld but the matrix is %lldx%lldx%lld",
                truth_path, (long long)truth->dims[0], (long long)truth->dims[1],
                (long long)truth->dims[2], (long long)g.n[0], (long long)g.n[1], (long long)g.n[2]);
        goto done;
    }
    if (lesion_path && lm_load_volume_series(lesion_path, dcm.series, &lesion, &err) != LM_OK)
        goto done;
    if (lesion && (lesion->dims[0] != g.n[0] || lesion->dims[1] != g.n[1] || lesion->dims[2] != g.n[2])) {
        lm_fail(&err, LM_ERR_INVALID, "%s: lesion mask is %lldx%lldx%lld but the matrix is %lldx%lldx%lld",
                lesion_path, (long long)lesion->dims[0], (long long)lesion->dims[1], (long long)lesion->dims[2],
                (long long)g.n[0], (long long)g.n[1], (long long)g.n[2]);
        goto done;
    }
    if (o.compress_coils > in->kdata->ncoils) {
        lm_fail(&err, LM_ERR_INVALID, "--coils-compress %d: %s has only %lld channels", o.compress_coils,
                kspace ? kspace : traj, (long long)in->kdata->ncoils);
        goto done;
    }
    if (noise_path) {
        if (cli_load_noise(noise_path, in->kdata->ncoils, &noise, &err) != LM_OK)
            goto done;
        o.noise = noise;
    } else if (in->noise && in->kdata->ncoils > 1) {
        o.noise = in->noise; /* the file's own noise scans */
        noise_path = traj ? traj : kspace;
    }
    o.ref = ref;
    o.sens = in->sens;
    cli_progress prog;
    cli_progress_init(&prog, 1);
    o.progress = cli_progress_cb;
    o.progress_user = &prog;
    cli_report_found(&la, in);
    cli_trace("reconstruction starts");
    lm_code code = lm_recon_run(&g, in->traj, in->kdata, &o, &res, &err);
    cli_progress_done(&prog);
    cli_trace("reconstruction done");
    if (code != LM_OK)
        goto done;
    if (res.fell_back)
        fprintf(stderr, "recon: %s\n", res.fallback_note);
    if (o.lambda_auto)
        fprintf(stderr, "lambda auto: %.4g (%s; %d trial solves, %d CG iterations, %.2f s)\n", res.lambda_used,
                res.lambda_note, res.lambda_solves, res.lambda_iters, res.time_lambda_s);
    if (coil_images_path && !res.coil_images) {
        lm_fail(&err, LM_ERR_INVALID, "%s: one channel: there are no coil images to write", coil_images_path);
        goto done;
    }
    if (out && cli_write_image(out, res.image, as_complex, &err) != LM_OK)
        goto done;
    cli_trace("image written");
    if (influence_path && !res.prior_influence) {
        lm_fail(&err, LM_ERR_INVALID, "%s: only CG reconstructions have a prior influence", influence_path);
        goto done;
    }
    if (influence_path && cli_write_image(influence_path, res.prior_influence, 0, &err) != LM_OK)
        goto done;
    if (sens_out) {
        const lm_sens *used = res.sens ? res.sens : o.sens;
        if (!used) {
            lm_fail(&err, LM_ERR_INVALID, "%s: this reconstruction used no coil maps", sens_out);
            goto done;
        }
        if (lm_save_sens(sens_out, used, g.fov_mm, &err) != LM_OK)
            goto done;
    }
    if (coil_images_path) {
        const int64_t dims[4] = {res.coil_images->n[0], res.coil_images->n[1], res.coil_images->n[2],
                                 res.coil_images->ncoils};
        if (lm_cfl_write(coil_images_path, 4, dims, res.coil_images->s, &err) != LM_OK)
            goto done;
    }

    lm_metrics m = {.psnr_db = NAN, .percent_error = NAN};
    /* Gridding, rss and estimated maps are scored after scale matching. */
    const int scale = lm_recon_scale_match(o.method, res.combine, res.sens_source);
    if (truth && lm_metrics_compute(res.image->data, truth->data, lm_volume_count(truth), NULL, scale, &m,
                                    &err) != LM_OK)
        goto done;
    lm_lesion_score ls = {.contrast = NAN};
    if (lesion && lm_lesion_contrast(res.image->data, truth->data, lesion->data, lm_volume_count(lesion), &ls,
                                     &err) != LM_OK) {
        char msg[sizeof err.msg];
        snprintf(msg, sizeof msg, "%s", err.msg);
        lm_fail(&err, err.code, "%s: %s", lesion_path, msg);
        goto done;
    }
    const lm_rigid *rt = &res.ref_transform;
    /* The variant the run used: "auto" (the default) names the one it picked,
     * a fallback the CPU twin. */
    const lm_variant *v = res.fell_back ? lm_variant_find(res.fallback_variant, NULL) : lm_variant_resolve(o.variant, NULL);
    const int is_cg = o.method == LM_METHOD_CG;
    char vlabel[96];
    snprintf(vlabel, sizeof vlabel, "%s%s%s", lm_variant_is_auto(o.variant) ? LM_VARIANT_AUTO " -> " : "",
             res.fell_back ? "fell back to " : "", v ? v->name : o.variant ? o.variant : "");
    if (dcm.dir) {
        char desc[160];
        cli_dicom_describe(desc, sizeof desc, o.method, res.coils, res.combine, o.reg, res.lambda_used,
                           is_cg && v ? v->name : NULL);
        if (cli_dicom_write(&dcm, res.image, &in->prov, desc, json, &err) != LM_OK)
            goto done;
    }
    double gflops = NAN;
    if (o.method == LM_METHOD_CG && v && res.time_fhd_s > 0)
        gflops = res.fhd_pairs * lm_ksum_flops_per_pair(0) / res.time_fhd_s * 1e-9;
    if (json) {
        printf("{");
        cli_json_str(stdout, "method", lm_method_name(o.method), 1);
        cli_json_str(stdout, "variant", is_cg && v ? v->name : "", 1);
        cli_json_str(stdout, "variant_requested", is_cg ? (o.variant && *o.variant ? o.variant : LM_VARIANT_AUTO) : "", 1);
        cli_json_str(stdout, "variant_choice", is_cg ? vlabel : "", 1);
        cli_json_bool(stdout, "fell_back", res.fell_back, 1);
        cli_json_str(stdout, "fallback_note", res.fallback_note, 1);
        cli_json_num(stdout, "lambda", is_cg ? res.lambda_used : o.lambda, 1);
        cli_json_bool(stdout, "lambda_auto", o.lambda_auto, 1);
        cli_json_str(stdout, "lambda_criterion", is_cg ? res.lambda_criterion : "", 1);
        cli_json_str(stdout, "lambda_note", res.lambda_note, 1);
        cli_json_num(stdout, "lambda_sigma", o.lambda_auto && res.lambda_sigma > 0 ? res.lambda_sigma : NAN, 1);
        cli_json_num(stdout, "time_lambda_s", res.time_lambda_s, 1);
        cli_json_int(stdout, "lambda_solves", res.lambda_solves, 1);
        cli_json_int(stdout, "lambda_iters", res.lambda_iters, 1);
        cli_json_str(stdout, "reg", lm_reg_name(o.reg), 1);
        cli_json_int(stdout, "iters", res.iters_done, 1);
        cli_json_num(stdout, "time_q_s", res.time_q_s, 1);
        cli_json_bool(stdout, "q_cached", res.q_from_cache, 1);
        cli_json_bool(stdout, "encoding_cached", res.encoding_cached, 1);
        cli_json_num(stdout, "time_fhd_s", res.time_fhd_s, 1);
        cli_json_num(stdout, "time_cg_s", res.time_cg_s, 1);
        cli_json_num(stdout, "time_total_s", res.time_total_s, 1);
        cli_json_num(stdout, "gflops_fhd", gflops, 1);
        cli_json_num(stdout, "final_residual",
                     res.resid_history && res.iters_done >= 0 ? res.resid_history[res.iters_done] : NAN, 1);
        cli_json_num(stdout, "psnr_db", m.psnr_db, 1);
        cli_json_num(stdout, "percent_error", m.percent_error, 1);
        cli_json_int(stdout, "coils", res.coils, 1);
        cli_json_int(stdout, "coils_in", res.coils_in, 1);
        cli_json_str(stdout, "sens_source", lm_sens_source_name(res.sens_source), 1);
        cli_json_num(stdout, "energy_kept", res.coils_in > res.coils ? res.energy_kept : NAN, 1);
        cli_json_bool(stdout, "prewhitened", res.noise_cov != NULL, 1);
        cli_json_str(stdout, "note", res.note, 1);
        cli_json_str(stdout, "combine",
                     res.coils == 1 ? "none" : res.combine == LM_COMBINE_RSS ? "root-sum-of-squares" : "sense", 1);
        cli_json_int(stdout, "slices", 1, 1);
        cli_json_str(stdout, "fieldmap", o.fieldmap ? fieldmap_path : "", 1);
        cli_json_bool(stdout, "fieldmap_resampled", in->fieldmap_resampled, 1);
        cli_json_int(stdout, "segments", o.fieldmap ? res.segments : 0, 1);
        cli_json_num(stdout, "segment_error", o.fieldmap ? res.segment_error : NAN, 1);
        if (lesion) {
            cli_json_num(stdout, "lesion_contrast", ls.contrast, 1);
            cli_json_num(stdout, "lesion_mean", ls.image_lesion, 1);
            cli_json_num(stdout, "lesion_shell_mean", ls.image_shell, 1);
        }
        if (res.ref_used) {
            char tr[160];
            snprintf(tr, sizeof tr, "%.4f,%.4f,%.4f,%.4f,%.4f,%.4f", rt->rot_deg[0], rt->rot_deg[1], rt->rot_deg[2],
                     rt->shift_mm[0], rt->shift_mm[1], rt->shift_mm[2]);
            cli_json_str(stdout, "ref_transform", tr, 1);
            cli_json_bool(stdout, "ref_registered", res.ref_registered, 1);
            cli_json_num(stdout, "ref_mi_start", res.ref_registered ? res.ref_mi_start : NAN, 1);
            cli_json_num(stdout, "ref_mi_end", res.ref_registered ? res.ref_mi_end : NAN, 1);
            cli_json_num(stdout, "time_register_s", res.time_register_s, 1);
        }
        cli_json_str(stdout, "out_dicom", dcm.dir ? dcm.dir : "", 1);
        cli_json_str(stdout, "out", out ? out : "", 0);
        printf("}\n");
    } else {
        printf("%s", lm_method_name(o.method));
        if (o.method == LM_METHOD_CG)
            printf(" (%s, lambda %g%s, %s, %d iterations)", vlabel, res.lambda_used, o.lambda_auto ? " auto" : "",
                   lm_reg_name(o.reg), res.iters_done);
        printf(": Q %.3f s%s, F^H d %.3f s, CG %.3f s, total %.3f s\n", res.time_q_s,
               res.encoding_cached ? " (kept by the server)" : res.q_from_cache ? " (cached)" : "", res.time_fhd_s, res.time_cg_s, res.time_total_s);
        if (truth)
            printf("PSNR %.2f dB, error %.2f %%%s\n", m.psnr_db, m.percent_error, scale ? " (scale-matched)" : "");
        if (res.coils > 1 && res.combine == LM_COMBINE_RSS)
            printf("%d channels reconstructed one by one and combined by root-sum-of-squares "
                   "(magnitude; no coil sensitivities)\n", res.coils);
        else if (res.coils > 1)
            printf("%d channels reconstructed together with their coil maps (SENSE, maps %s)\n", res.coils,
                   lm_sens_source_name(res.sens_source));
        if (res.noise_cov)
            printf("data prewhitened with the noise covariance of %s\n", noise_path);
        if (res.coils_in > res.coils)
            printf("%d channels compressed to %d virtual coils keeping %.2f %% of the energy\n", res.coils_in,
                   res.coils, 100 * res.energy_kept);
        if (res.note[0])
            printf("%s\n", res.note);
        if (o.fieldmap) {
            double lo, hi;
            lm_float_range(o.fieldmap, lm_geom_voxels(&g), &lo, &hi);
            printf("off-resonance: field map %s ([%g, %g] Hz%s), ", fieldmap_path, lo, hi,
                   in->fieldmap_resampled ? ", resampled onto the matrix" : "");
            if (res.segments > 0)
                printf("%d time segments (interpolation error %.3g)\n", res.segments, res.segment_error);
            else
                printf("exact model (no time segments)\n");
        }
        if (res.ref_used)
            printf("reference %s: --ref-transform %.4f,%.4f,%.4f,%.4f,%.4f,%.4f (degrees, mm)%s\n",
                   res.ref_registered ? "registered" : "placed", rt->rot_deg[0], rt->rot_deg[1], rt->rot_deg[2],
                   rt->shift_mm[0], rt->shift_mm[1], rt->shift_mm[2],
                   res.ref_registered ? "" : o.ref_transform_given ? " as given" : " through its affine");
        if (res.ref_registered)
            printf("registration: mutual information %.4f -> %.4f nats, %d evaluations, %.2f s with the pilot\n",
                   res.ref_mi_start, res.ref_mi_end, res.ref_evals, res.time_register_s);
        if (lesion)
            printf("lesion contrast %.3f (lesion %.4f, shell %.4f; truth %.4f, %.4f)\n", ls.contrast, ls.image_lesion,
                   ls.image_shell, ls.truth_lesion, ls.truth_shell);
        if (influence_path)
            printf("wrote %s (prior influence)\n", influence_path);
        if (out)
            printf("wrote %s\n", out);
    }
    rc = 0;
done:
    cli_trace("outputs written");
    if (rc)
        cli_error(&err);
    lm_recon_result_clear(&res);
    lm_volume_free(ref);
    lm_volume_free(truth);
    lm_volume_free(lesion);
    lm_kdata_free(noise);
    lm_acq_free(in);
    return rc;
}
