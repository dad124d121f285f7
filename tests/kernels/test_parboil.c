/* Parboil mri-q: every available CPU direct variant (explicit points, not
 * approximate) computes Q for the small data set and passes Parboil's rule
 * against its reference output: each element within 1e-4 x max|ref| or
 * within 0.2 % of |ref| (real and imaginary parts alike). The large set
 * (64^3 points) runs with cpu-simd only, which takes well under a second
 * (LM_PARBOIL_LARGE_ALL=1 runs every variant on it).
 * Data from $LM_SHARED_DATA/parboil-mri-q; skipped (77) when absent. */
#include <sys/stat.h>
#include <time.h>

#include "ksum_util.h"
#include "lm_io.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Returns the number of failing elements. */
static int64_t parboil_compare(int64_t n, const float *re, const float *im, const float *rr,
                               const float *ri, double *worst)
{
    double maxref = 0;
    for (int64_t j = 0; j < n; j++) {
        if (fabs(rr[j]) > maxref)
            maxref = fabs(rr[j]);
        if (fabs(ri[j]) > maxref)
            maxref = fabs(ri[j]);
    }
    int64_t bad = 0;
    *worst = 0;
    for (int64_t j = 0; j < n; j++) {
        const float a[2] = {re[j], im[j]}, b[2] = {rr[j], ri[j]};
        for (int c = 0; c < 2; c++) {
            double d = fabs((double)a[c] - b[c]);
            if (d / maxref > *worst)
                *worst = d / maxref;
            if (!(d <= 1e-4 * maxref || d <= 2e-3 * fabs(b[c])))
                bad++;
        }
    }
    return bad;
}

static void run_set(const char *dir, const char *base, const char **names, size_t count)
{
    char in_path[4096], out_path[4096];
    snprintf(in_path, sizeof in_path, "%s/%s.bin", dir, base);
    snprintf(out_path, sizeof out_path, "%s/%s.out", dir, base);
    lm_parboil *pb = NULL;
    lm_error err;
    lm_code c = lm_parboil_read(in_path, &pb, &err);
    CHECK_OK(c, &err);
    if (c)
        return;
    int64_t nref = 0;
    float *rr = NULL, *ri = NULL;
    c = lm_parboil_read_output(out_path, &nref, &rr, &ri, &err);
    CHECK_OK(c, &err);
    if (c) {
        lm_parboil_free(pb);
        return;
    }
    CHECK(nref == pb->num_x);

    /* Q's weights |phi|^2, in float as Parboil computes them. */
    float *mag = malloc(pb->num_k * sizeof(float));
    for (int32_t m = 0; m < pb->num_k; m++)
        mag[m] = pb->phi_r[m] * pb->phi_r[m] + pb->phi_i[m] * pb->phi_i[m];
    lm_ksum_in in = {.m = pb->num_k, .kx = pb->kx, .ky = pb->ky, .kz = pb->kz, .wr = mag, .wi = NULL, .nsets = 1};
    lm_points pts = {.n = pb->num_x, .x = pb->x, .y = pb->y, .z = pb->z};
    float *re = malloc(pb->num_x * sizeof(float)), *im = malloc(pb->num_x * sizeof(float));

    for (size_t i = 0; i < count; i++) {
        const lm_variant *v = lm_variant_find(names[i], &err);
        CHECK(v != NULL);
        if (!v)
            continue;
        double t0 = now();
        CHECK_OK(lm_ksum_run(v, &in, &pts, re, im, NULL, &err), &err);
        double dt = now() - t0;
        double worst;
        int64_t nc = nref < pb->num_x ? nref : pb->num_x;
        int64_t bad = parboil_compare(nc, re, im, rr, ri, &worst);
        fprintf(stderr, "%s %-10s %.3f s, %.3f Gpairs/s, max |diff|/max|ref| %.2g, %lld failing\n",
                base, v->name, dt, (double)pb->num_k * pb->num_x / dt * 1e-9, worst,
                (long long)bad);
        CHECK_MSG(bad == 0, "%s on %s: %lld elements fail Parboil's rule", v->name, base,
                  (long long)bad);
    }
    free(re);
    free(im);
    free(mag);
    free(rr);
    free(ri);
    lm_parboil_free(pb);
}

int main(void)
{
    const char *root = getenv("LM_SHARED_DATA");
    if (!root)
        LM_TEST_SKIP("LM_SHARED_DATA not set");
    char small[4096], large[4096];
    snprintf(small, sizeof small, "%s/parboil-mri-q/small", root);
    snprintf(large, sizeof large, "%s/parboil-mri-q/large", root);
    struct stat st;
    if (stat(small, &st) != 0)
        LM_TEST_SKIP("%s: no Parboil data", small);

    /* Every available CPU variant that takes explicit points and is exact. */
    const char *names[16];
    size_t count = 0;
    for (size_t i = 0; i < lm_variant_count() && count < 16; i++) {
        const lm_variant *v = lm_variant_at(i);
        lm_error why;
        if (v->device == LM_DEVICE_CPU && !v->approximate && !v->grid_only &&
            v->available(&why) == LM_OK)
            names[count++] = v->name;
    }
    CHECK(count >= 3);
    run_set(small, "32_32_32_dataset", names, count);
    if (stat(large, &st) == 0) {
        /* LM_PARBOIL_LARGE_ALL=1: every variant on the large set too (cpu-dp
         * takes ~10 s per core there). */
        const char *fast[] = {"cpu-simd"};
        if (getenv("LM_PARBOIL_LARGE_ALL"))
            run_set(large, "64_64_64_dataset", names, count);
        else
            run_set(large, "64_64_64_dataset", fast, 1);
    }
    return lm_test_finish("test_parboil");
}
