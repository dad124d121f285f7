/* Image quality metrics (docs/conventions.md section 3). Everything accumulates in
 * double: a 128^3 sum of float squares loses digits otherwise. */
#include "lm_metrics.h"

#include <complex.h>
#include <math.h>

int lm_metrics_scale_match_for(int gridded, int rss_combined, int maps_estimated)
{
    if (rss_combined || maps_estimated)
        return LM_METRICS_SCALE | LM_METRICS_MAGNITUDE;
    return gridded ? LM_METRICS_SCALE : 0;
}

/* One voxel of image and truth as scored: complex, or both magnitudes. */
static void voxel_pair(lm_cfloat image, lm_cfloat truth, int magnitude, double *ar, double *ai, double *tr,
                       double *ti)
{
    if (magnitude) {
        *ar = hypot(crealf(image), cimagf(image)), *ai = 0;
        *tr = hypot(crealf(truth), cimagf(truth)), *ti = 0;
    } else {
        *ar = crealf(image), *ai = cimagf(image), *tr = crealf(truth), *ti = cimagf(truth);
    }
}

lm_code lm_metrics_compute(const lm_cfloat *image, const lm_cfloat *truth, int64_t n,
                           const uint8_t *mask, int scale_match, lm_metrics *out, lm_error *err)
{
    if (!image || !truth || !out || n <= 0)
        return lm_fail(err, LM_ERR_INVALID, "metrics: empty or missing image");

    /* One pass for the scale, the truth's energy and peak. */
    const int magnitude = (scale_match & LM_METRICS_MAGNITUDE) != 0;
    double ii = 0, i0i0 = 0, cre = 0, cim = 0, peak = 0;
    int64_t count = 0;
    for (int64_t j = 0; j < n; j++) {
        if (mask && !mask[j])
            continue;
        double ar, ai, tr, ti;
        voxel_pair(image[j], truth[j], magnitude, &ar, &ai, &tr, &ti);
        ii += ar * ar + ai * ai;
        double t2 = tr * tr + ti * ti;
        i0i0 += t2;
        if (t2 > peak)
            peak = t2;
        /* <I, I0> = sum conj(I) I0 */
        cre += ar * tr + ai * ti;
        cim += ar * ti - ai * tr;
        count++;
    }
    if (count == 0)
        return lm_fail(err, LM_ERR_INVALID, "metrics: the mask selects no voxels");

    /* alpha = <I, I0> / <I, I> minimises ||alpha I - I0||; an all-zero
     * image leaves any alpha optimal, so keep 1. */
    double sr = 1, si = 0;
    if ((scale_match & LM_METRICS_SCALE) && ii > 0) {
        sr = cre / ii;
        si = cim / ii;
    }

    double se = 0;
    for (int64_t j = 0; j < n; j++) {
        if (mask && !mask[j])
            continue;
        double ar, ai, tr, ti;
        voxel_pair(image[j], truth[j], magnitude, &ar, &ai, &tr, &ti);
        double er = sr * ar - si * ai - tr;
        double ei = sr * ai + si * ar - ti;
        se += er * er + ei * ei;
    }

    double mse = se / (double)count;
    out->count = count;
    out->scale_re = sr;
    out->scale_im = si;
    out->rmse = sqrt(mse);
    double rms0 = sqrt(i0i0 / (double)count);
    if (mse == 0) {
        /* Identical images: the ratios are 0/0 or x/0; report a perfect
         * score as +inf PSNR and zero error. */
        out->percent_error = 0;
        out->psnr_db = INFINITY;
    } else {
        out->percent_error = rms0 > 0 ? 100.0 * out->rmse / rms0 : INFINITY;
        out->psnr_db = peak > 0 ? 20.0 * log10(sqrt(peak) / out->rmse) : -INFINITY;
    }
    return LM_OK;
}

double lm_rel_error(const float *a_re, const float *a_im, const float *b_re, const float *b_im, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t j = 0; j < n; j++) {
        double ar = a_re ? a_re[j] : 0, ai = a_im ? a_im[j] : 0;
        double br = b_re ? b_re[j] : 0, bi = b_im ? b_im[j] : 0;
        num += (ar - br) * (ar - br) + (ai - bi) * (ai - bi);
        den += br * br + bi * bi;
    }
    if (den == 0)
        return num == 0 ? 0.0 : INFINITY;
    return sqrt(num / den);
}

double lm_rel_error_c(const lm_cfloat *a, const lm_cfloat *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t j = 0; j < n; j++) {
        double dr = (double)crealf(a[j]) - crealf(b[j]);
        double di = (double)cimagf(a[j]) - cimagf(b[j]);
        double br = crealf(b[j]), bi = cimagf(b[j]);
        num += dr * dr + di * di;
        den += br * br + bi * bi;
    }
    if (den == 0)
        return num == 0 ? 0.0 : INFINITY;
    return sqrt(num / den);
}

lm_code lm_lesion_contrast(const lm_cfloat *image, const lm_cfloat *truth, const lm_cfloat *mask, int64_t n,
                           lm_lesion_score *out, lm_error *err)
{
    if (!image || !truth || !mask || !out || n <= 0)
        return lm_fail(err, LM_ERR_INVALID, "lesion contrast: missing image, truth or mask");
    double si[3] = {0}, st[3] = {0};
    int64_t cnt[3] = {0};
    for (int64_t j = 0; j < n; j++) {
        long lab = lround(crealf(mask[j]));
        if (lab != 1 && lab != 2)
            continue;
        /* the image's component along the truth's phase: linear in the
         * image, so noise adds no bias (a magnitude would, |noise| > 0) */
        const float at = cabsf(truth[j]);
        const lm_cfloat ph = at > 0 ? truth[j] / at : 1.0f;
        si[lab] += crealf(image[j] * conjf(ph));
        st[lab] += at;
        cnt[lab]++;
    }
    if (cnt[1] == 0 || cnt[2] == 0)
        return lm_fail(err, LM_ERR_INVALID, "lesion contrast: the mask has %lld lesion and %lld shell voxels",
                       (long long)cnt[1], (long long)cnt[2]);
    *out = (lm_lesion_score){.image_lesion = si[1] / (double)cnt[1], .image_shell = si[2] / (double)cnt[2],
                             .truth_lesion = st[1] / (double)cnt[1], .truth_shell = st[2] / (double)cnt[2],
                             .lesion_voxels = cnt[1], .shell_voxels = cnt[2]};
    const double ct = out->truth_lesion - out->truth_shell;
    if (!(fabs(ct) > 1e-12 * fmax(fabs(out->truth_lesion), fabs(out->truth_shell))) || ct == 0)
        return lm_fail(err, LM_ERR_INVALID, "lesion contrast: the truth has no contrast between lesion and shell");
    out->contrast = (out->image_lesion - out->image_shell) / ct;
    return LM_OK;
}
