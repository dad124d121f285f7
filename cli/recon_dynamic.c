/* Dynamic reconstruction from the command line (recon_dynamic.h). */
#include "recon_dynamic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_data.h"
#include "cli_util.h"
#include "larmor.h"

void cli_dyn_args_init(cli_dyn_args *a)
{
    *a = (cli_dyn_args){.time = LM_DYN_TIME_TV, .lambda_space = -1};
}

int cli_dyn_reg_parse(const char *s, cli_dyn_args *a)
{
    static const struct {
        const char *name;
        lm_dyn_time time;
        int space;
    } regs[] = {{"ttv", LM_DYN_TIME_TV, 0}, {"ttv+tv", LM_DYN_TIME_TV, 1}, {"ttik", LM_DYN_TIME_TIKHONOV, 0},
                {"llr", LM_DYN_TIME_LLR, 0}};
    for (size_t i = 0; s && i < sizeof regs / sizeof regs[0]; i++)
        if (!strcmp(s, regs[i].name)) {
            a->reg_given = 1;
            a->time = regs[i].time;
            a->space_tv = regs[i].space;
            return 1;
        }
    return 0;
}

int cli_dyn_wanted(const cli_dyn_args *a, const lm_acq *in)
{
    return a->reg_given || a->spokes_per_frame > 0 || a->frames > 0 || a->lambda_space >= 0 || a->frame_ms > 0 ||
           (in && in->frames);
}

/* The truth of every frame: a 4D NIfTI or a cfl with frames in dimension 10. */
static lm_code load_truth(const char *path, const lm_geom *g, int64_t frames, lm_cfloat **out, lm_error *err)
{
    *out = NULL;
    const int64_t N = lm_geom_voxels(g);
    int64_t n[3] = {0, 0, 0}, t = 0;
    lm_cfloat *data = NULL;
    if (cli_has_suffix(path, ".cfl") || cli_has_suffix(path, ".hdr")) {
        int nd;
        int64_t d[LM_CFL_MAX_DIMS];
        lm_code rc = lm_cfl_read(path, &nd, d, &data, err);
        if (rc != LM_OK)
            return rc;
        n[0] = d[0], n[1] = nd > 1 ? d[1] : 1, n[2] = nd > 2 ? d[2] : 1;
        t = 1;
        for (int i = 3; i < nd; i++)
            t *= d[i];
    } else {
        lm_volume *v = NULL;
        lm_code rc = lm_nifti_read_frames(path, &v, &t, err);
        if (rc != LM_OK)
            return rc;
        memcpy(n, v->dims, sizeof n);
        data = v->data;
        v->data = NULL;
        lm_volume_free(v);
    }
    if (n[0] != g->n[0] || n[1] != g->n[1] || n[2] != g->n[2] || t != frames) {
        free(data);
        return lm_fail(err, LM_ERR_INVALID, "%s: truth is %lldx%lldx%lld x %lld frames, the reconstruction "
                       "%lldx%lldx%lld x %lld frames", path, (long long)n[0], (long long)n[1], (long long)n[2],
                       (long long)t, (long long)g->n[0], (long long)g->n[1], (long long)g->n[2], (long long)frames);
    }
    (void)N;
    *out = data;
    return LM_OK;
}

/* The frames as a 4D NIfTI or cfl (path), and as a dynamic DICOM series
 * (dicom->dir), both on the grid's centred affine. */
static lm_code write_frames(const char *path, const cli_dicom_args *dicom, const char *desc, const lm_acq *in,
                            const lm_geom *g, const lm_dyn_result *res, double frame_s, int as_complex, int quiet,
                            lm_error *err)
{
    if (path && cli_has_suffix(path, ".cfl")) {
        lm_code rc = lm_cfl_write_image_frames(path, g->n, res->frames, res->x, err);
        if (rc != LM_OK)
            return rc;
        path = NULL;
    }
    double vox[3];
    for (int a = 0; a < 3; a++)
        vox[a] = g->fov_mm[a] / (double)g->n[a];
    lm_volume *v = lm_volume_new(g->n, vox, err);
    if (!v)
        return err ? err->code : LM_ERR_NOMEM;
    lm_code rc = path ? lm_nifti_write_series(path, v, res->frames, res->x, as_complex, frame_s, err) : LM_OK;
    if (rc == LM_OK && dicom && dicom->dir) {
        lm_cfloat *own = v->data;
        v->data = res->x; /* borrowed: every frame, frame slowest */
        rc = cli_dicom_write_frames(dicom, v, res->frames, frame_s, &in->prov, desc, quiet, err);
        v->data = own;
    }
    lm_volume_free(v);
    return rc;
}

int cli_recon_dynamic(lm_acq *in, const lm_geom *g, const cli_dyn_args *a, const cli_dyn_run *r)
{
    lm_error err = {0};
    const char *data = in->paths.kspace ? in->paths.kspace : in->paths.traj;
    lm_dyn_model *m = NULL;
    lm_dyn_result res = {0};
    lm_cfloat *truth = NULL;
    lm_metrics met = {.psnr_db = NAN, .percent_error = NAN};
    int rc = 1;
    if (r->refused) {
        lm_fail(&err, LM_ERR_UNSUPPORTED, "%s: %s is not supported with dynamic reconstruction", data, r->refused);
        goto done;
    }
    if (in->nslices > 1 || !in->traj) {
        lm_fail(&err, LM_ERR_UNSUPPORTED, "%s: dynamic reconstruction takes one volume per frame (no multi-slice data)",
                data);
        goto done;
    }
    if ((a->spokes_per_frame > 0 || a->frames > 0) &&
        lm_acq_bin(in, a->spokes_per_frame, a->frames, &err) != LM_OK)
        goto done;
    if (!in->frames) {
        lm_fail(&err, LM_ERR_INVALID, "%s: no frames: give --spokes-per-frame N or --frames F, or data with frames "
                "in dimension %d", data, LM_CFL_TIME_DIM);
        goto done;
    }
    if (lm_acq_regrid(in, g, &err) != LM_OK)
        goto done;
    if (r->truth && load_truth(r->truth, g, in->frames->count, &truth, &err) != LM_OK)
        goto done;
    if (r->out && !cli_has_suffix(r->out, ".cfl") && !cli_has_suffix(r->out, ".nii") &&
        !cli_has_suffix(r->out, ".nii.gz")) {
        lm_fail(&err, LM_ERR_INVALID, "%s: dynamic output is .cfl (frames in dimension %d), .nii or .nii.gz (4D)",
                r->out, LM_CFL_TIME_DIM);
        goto done;
    }
    const double t0 = cli_now();
    lm_geom gd = *g;
    if (!r->basis_given)
        gd.basis = LM_DYN_BASIS_DEFAULT;
    lm_dyn_model_desc md = {.geom = &gd, .traj = in->traj, .kdata = in->kdata, .sens = in->sens, .frames = in->frames,
                            .variant = r->variant, .use_cache = r->use_cache};
    if (lm_dyn_model_new(&md, &m, &err) != LM_OK)
        goto done;
    lm_dyn_opts o;
    lm_dyn_opts_init(&o);
    o.time = a->time;
    o.space_tv = a->space_tv;
    o.lambda_t = r->lambda >= 0 ? r->lambda : LM_DYN_LAMBDA_DEFAULT;
    o.lambda_s = a->lambda_space > 0 ? a->lambda_space : 0;
    o.lambda_auto = r->lambda_auto;
    o.llr_block = (int)a->llr_block;
    if (r->iters > 0)
        o.iters = r->iters;
    if (lm_dyn_solve(m, &o, &res, &err) != LM_OK)
        goto done;
    const double total = cli_now() - t0;
    const int estimated = lm_dyn_model_sens_estimated(m);
    if (truth && lm_metrics_compute(res.x, truth, res.frames * res.nvox, NULL,
                                    lm_metrics_scale_match_for(0, 0, estimated), &met, &err) != LM_OK)
        goto done;
    if (a->frame_ms > 0)
        in->frames->duration_s = 1e-3 * a->frame_ms;
    const char *reg = a->space_tv ? "ttv+tv" : lm_dyn_time_name(a->time);
    char desc[160];
    const int named = r->variant && *r->variant && !lm_variant_is_auto(r->variant);
    snprintf(desc, sizeof desc, "Larmor dynamic %s lambda=%g%s%s", reg, res.lambda_t, named ? " " : "",
             named ? r->variant : "");
    for (char *p = desc + strlen("Larmor dynamic "); *p && *p != ' '; p++)
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p); /* TTV, TTV+TV, LLR as the static names */
    if (write_frames(r->out, r->dicom, desc, in, g, &res, in->frames->duration_s, r->as_complex, r->json, &err) !=
        LM_OK)
        goto done;
    if (r->json) {
        printf("{");
        cli_json_str(stdout, "method", "dynamic", 1);
        cli_json_str(stdout, "reg", reg, 1);
        cli_json_int(stdout, "frames", res.frames, 1);
        cli_json_num(stdout, "frame_s", in->frames->duration_s, 1);
        cli_json_num(stdout, "lambda", res.lambda_t, 1);
        cli_json_bool(stdout, "lambda_auto", r->lambda_auto, 1);
        if (r->lambda_auto)
            cli_json_num(stdout, "heldout_error", res.cv_score, 1);
        cli_json_num(stdout, "lambda_space", res.lambda_s, 1);
        cli_json_int(stdout, "iters", res.iters_done, 1);
        cli_json_str(stdout, "basis", gd.basis == LM_BASIS_DIRAC ? "dirac" : "box", 1);
        cli_json_int(stdout, "solves", res.solves, 1);
        cli_json_num(stdout, "time_prep_s", res.time_prep_s, 1);
        cli_json_num(stdout, "time_solve_s", res.time_solve_s, 1);
        cli_json_num(stdout, "time_total_s", total, 1);
        cli_json_num(stdout, "psnr_db", met.psnr_db, 1);
        cli_json_num(stdout, "percent_error", met.percent_error, 1);
        cli_json_str(stdout, "sens_source", !lm_dyn_model_sens(m) ? "none" : estimated ? "estimated" : "given", 1);
        cli_json_str(stdout, "out_dicom", r->dicom && r->dicom->dir ? r->dicom->dir : "", 1);
        cli_json_str(stdout, "out", r->out ? r->out : "", 0);
        printf("}\n");
    } else {
        printf("dynamic (%s, lambda %.4g%s", reg, res.lambda_t, r->lambda_auto ? " auto by cross-validation" : "");
        if (a->space_tv)
            printf(", lambda-space %.4g", res.lambda_s);
        printf(", %d iterations, %s basis): %lld frames of %lldx%lldx%lld: E^H d and Q %.3f s, solve %.3f s, total %.3f s\n",
               res.iters_done, gd.basis == LM_BASIS_DIRAC ? "Dirac" : "box", (long long)res.frames, (long long)g->n[0], (long long)g->n[1], (long long)g->n[2],
               res.time_prep_s, res.time_solve_s, total);
        if (estimated)
            printf("%lld channels with coil maps estimated from the time-averaged data (all frames' samples)\n",
                   (long long)in->kdata->ncoils);
        if (truth)
            printf("PSNR %.2f dB, error %.2f %% (all frames%s)\n", met.psnr_db, met.percent_error,
                   estimated ? ", magnitudes scale-matched" : "");
        if (r->out)
            printf("wrote %s\n", r->out);
    }
    rc = 0;
done:
    if (rc)
        cli_error(&err);
    free(truth);
    lm_dyn_result_clear(&res);
    lm_dyn_model_free(m);
    return rc;
}
