/* larmor-cli metrics: PSNR and percent error (docs/conventions.md section 3). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "larmor.h"

int cmd_metrics(int argc, char **argv)
{
    static const struct option opts[] = {
        {"truth", required_argument, 0, 't'}, {"image", required_argument, 0, 'i'},
        {"mask", required_argument, 0, 'm'}, {"scale-match", no_argument, 0, 's'},
        {"magnitude", no_argument, 0, 'g'},
        {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *truth_path = NULL, *image_path = NULL, *mask_path = NULL;
    int scale = 0, json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 't': truth_path = optarg; break;
        case 'i': image_path = optarg; break;
        case 'm': mask_path = optarg; break;
        case 's': scale |= LM_METRICS_SCALE; break;
        case 'g': scale |= LM_METRICS_MAGNITUDE; break;
        case 'j': json = 1; break;
        case 'h':
            puts("usage: larmor-cli metrics --truth A --image B [--mask M] [--scale-match] [--magnitude] [--json]\n"
                 "  PSNR = 20 log10(max|I0| / RMSE), error = 100 RMS(I - I0) / RMS(I0);\n"
                 "  --scale-match applies the least-squares alpha (gridding, rss, estimated maps);\n"
                 "  --magnitude scores |I| against |I0| (as the workbench scores rss and estimated maps;\n"
                 "  a magnitude export needs no flag); mask: voxels != 0");
            return 0;
        default: return 2;
        }
    }
    if (!truth_path || !image_path)
        return cli_errorf("metrics: --truth and --image are required");
    lm_error err = {0};
    lm_volume *truth = NULL, *image = NULL, *maskv = NULL;
    uint8_t *mask = NULL;
    int rc = 1;
    if (lm_load_volume(truth_path, &truth, &err) || lm_load_volume(image_path, &image, &err))
        goto done;
    for (int a = 0; a < 3; a++)
        if (truth->dims[a] != image->dims[a]) {
            lm_fail(&err, LM_ERR_INVALID, "%s: image is %lldx%lldx%lld but the truth %s is %lldx%lldx%lld",
                    image_path, (long long)image->dims[0], (long long)image->dims[1],
                    (long long)image->dims[2], truth_path, (long long)truth->dims[0],
                    (long long)truth->dims[1], (long long)truth->dims[2]);
            goto done;
        }
    int64_t count = lm_volume_count(truth);
    if (mask_path) {
        if (lm_load_volume(mask_path, &maskv, &err))
            goto done;
        if (lm_volume_count(maskv) != count) {
            lm_fail(&err, LM_ERR_INVALID, "%s: mask size differs from the truth", mask_path);
            goto done;
        }
        if (!(mask = lm_alloc((size_t)count, 1, &err, "mask")))
            goto done;
        for (int64_t i = 0; i < count; i++)
            mask[i] = maskv->data[i] != 0;
    }
    lm_metrics m;
    if (lm_metrics_compute(image->data, truth->data, count, mask, scale, &m, &err) != LM_OK)
        goto done;
    if (json) {
        printf("{");
        cli_json_num(stdout, "psnr_db", m.psnr_db, 1);
        cli_json_num(stdout, "percent_error", m.percent_error, 1);
        cli_json_num(stdout, "rmse", m.rmse, 1);
        cli_json_num(stdout, "scale_re", m.scale_re, 1);
        cli_json_num(stdout, "scale_im", m.scale_im, 1);
        cli_json_int(stdout, "voxels", m.count, 0);
        printf("}\n");
    } else {
        printf("PSNR %.3f dB, error %.3f %%, RMSE %.4g over %lld voxels%s\n", m.psnr_db, m.percent_error,
               m.rmse, (long long)m.count,
               (scale & LM_METRICS_SCALE) ? ((scale & LM_METRICS_MAGNITUDE) ? " (magnitudes, scale-matched)"
                                                                            : " (scale-matched)")
               : (scale & LM_METRICS_MAGNITUDE) ? " (magnitudes)" : "");
    }
    rc = 0;
done:
    if (rc)
        cli_error(&err);
    free(mask);
    lm_volume_free(maskv);
    lm_volume_free(truth);
    lm_volume_free(image);
    return rc;
}
