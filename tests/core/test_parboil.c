/* Parboil mri-q / mri-fhd: the real small and large inputs and reference
 * outputs (from LM_SHARED_DATA), mri-q vs mri-fhd by size, byte-exact
 * output round trips, and malformed files with their messages. */
#include <stdint.h>

#include "io_util.h"
#include "lm_io.h"

static lm_error err;

/* A synthetic input: numK samples, numX points, optionally with dR, dI. */
static void write_input(const char *path, int32_t nk, int32_t nx, int fhd, int extra_bytes)
{
    size_t nfloat = (size_t)(5 + (fhd ? 2 : 0)) * (size_t)nk + 3 * (size_t)nx;
    size_t bytes = 8 + 4 * nfloat + (size_t)extra_bytes;
    char *b = calloc(bytes, 1);
    int32_t h[2] = {nk, nx};
    memcpy(b, h, 8);
    float *f = (float *)(b + 8);
    for (size_t i = 0; i < nfloat && 4 * i + 4 <= bytes - 8; i++)
        f[i] = (float)i * 0.5f;
    write_bytes(path, b, bytes);
    free(b);
}

static void test_real_data(void)
{
    const char *root = getenv("LM_SHARED_DATA");
    static const struct {
        const char *in, *out;
        int32_t nk, nx;
    } sets[] = {
        {"parboil-mri-q/small/32_32_32_dataset.bin", "parboil-mri-q/small/32_32_32_dataset.out", 3072, 32768},
        {"parboil-mri-q/large/64_64_64_dataset.bin", "parboil-mri-q/large/64_64_64_dataset.out", 2048, 262144},
    };
    for (int s = 0; s < 2; s++) {
        char in[1024], out[1024];
        snprintf(in, sizeof in, "%s/%s", root ? root : "", sets[s].in);
        snprintf(out, sizeof out, "%s/%s", root ? root : "", sets[s].out);
        if (!root || !file_exists(in) || !file_exists(out)) {
            fprintf(stderr, "SKIP (sub-check): %s not found (LM_SHARED_DATA=%s)\n", sets[s].in,
                    root ? root : "(unset)");
            continue;
        }
        lm_parboil *p = NULL;
        CHECK_OK(lm_parboil_read(in, &p, &err), &err);
        int64_t n = 0;
        float *re = NULL, *im = NULL;
        CHECK_OK(lm_parboil_read_output(out, &n, &re, &im, &err), &err);
        CHECK(n == sets[s].nx);
        if (p) {
            CHECK(p->num_k == sets[s].nk && p->num_x == sets[s].nx);
            CHECK(p->d_r == NULL && p->d_i == NULL); /* mri-q inputs */
            fprintf(stderr, "  %s: numK %d numX %d\n", sets[s].in, p->num_k, p->num_x);
        }
        /* The arrays are where Parboil's reader puts them: Q at a few voxels,
         * in double precision, matches the reference output (docs/conventions.md section 6). */
        if (p && re && im && n == p->num_x) {
            float qmax = 0;
            for (int64_t i = 0; i < n; i++)
                qmax = fmaxf(qmax, hypotf(re[i], im[i]));
            const int64_t probe[4] = {0, 1, n / 2 + 17, n - 1};
            for (int j = 0; j < 4; j++) {
                int64_t i = probe[j];
                double qr = 0, qi = 0;
                for (int32_t m = 0; m < p->num_k; m++) {
                    double mag = (double)p->phi_r[m] * p->phi_r[m] + (double)p->phi_i[m] * p->phi_i[m];
                    double arg = 2 * M_PI * ((double)p->kx[m] * p->x[i] + (double)p->ky[m] * p->y[i] +
                                             (double)p->kz[m] * p->z[i]);
                    qr += mag * cos(arg);
                    qi += mag * sin(arg);
                }
                double tol = 1e-4 * qmax;
                CHECK_MSG(fabs(qr - re[i]) <= fmax(tol, 2e-3 * fabs(re[i])) &&
                              fabs(qi - im[i]) <= fmax(tol, 2e-3 * fabs(im[i])),
                          "%s voxel %lld: Q %g%+gi, reference %g%+gi", sets[s].in, (long long)i, qr,
                          qi, re[i], im[i]);
            }
        }
        lm_parboil_free(p);
        if (re && im) {
            /* rewriting the reference output reproduces it byte for byte */
            CHECK_OK(lm_parboil_write_output(P("ref.out"), n, re, im, &err), &err);
            CHECK(files_equal(out, P("ref.out")));
        }
        free(re);
        free(im);
    }
}

static void test_synthetic(void)
{
    /* mri-fhd: dR, dI present */
    write_input(P("fhd.bin"), 4, 3, 1, 0);
    lm_parboil *p = NULL;
    CHECK_OK(lm_parboil_read(P("fhd.bin"), &p, &err), &err);
    if (p) {
        CHECK(p->num_k == 4 && p->num_x == 3 && p->d_r && p->d_i);
        /* layout: kx ky kz (4 each), x y z (3 each), phiR phiI dR dI (4 each) */
        CHECK(p->kx[0] == 0.0f && p->ky[0] == 2.0f && p->kz[3] == 5.5f);
        CHECK(p->x[0] == 6.0f && p->z[2] == 10.0f);
        CHECK(p->phi_r[0] == 10.5f && p->phi_i[0] == 12.5f && p->d_r[0] == 14.5f &&
              p->d_i[3] == 18.0f);
        lm_parboil_free(p);
    }
    write_input(P("q.bin"), 4, 3, 0, 0);
    p = NULL;
    CHECK_OK(lm_parboil_read(P("q.bin"), &p, &err), &err);
    CHECK(p && !p->d_r && p->phi_i[3] == 14.0f);
    lm_parboil_free(p);

    /* output round trip, and the exact layout */
    float re[3] = {1.0f, -2.5f, 3.25f}, im[3] = {0.0f, 1e-3f, -7.0f};
    CHECK_OK(lm_parboil_write_output(P("o.out"), 3, re, im, &err), &err);
    size_t nb;
    char *b = read_bytes(P("o.out"), &nb);
    CHECK(b && nb == 4 + 24 && *(uint32_t *)b == 3 && memcmp(b + 4, re, 12) == 0 &&
          memcmp(b + 16, im, 12) == 0);
    free(b);
    int64_t n;
    float *r2 = NULL, *i2 = NULL;
    CHECK_OK(lm_parboil_read_output(P("o.out"), &n, &r2, &i2, &err), &err);
    CHECK(n == 3 && r2 && i2 && memcmp(r2, re, 12) == 0 && memcmp(i2, im, 12) == 0);
    free(r2);
    free(i2);
}

static void test_bad_inputs(void)
{
    lm_parboil *p = NULL;
    EXPECT_FAIL(lm_parboil_read(P("missing.bin"), &p, &err), &err, LM_ERR_IO, "missing.bin",
                "No such file");

    write_bytes(P("short.bin"), "\1\0\0\0", 4);
    EXPECT_FAIL(lm_parboil_read(P("short.bin"), &p, &err), &err, LM_ERR_FORMAT, "short.bin",
                "4 bytes, too few for numK and numX");

    /* 4 extra bytes: neither layout (numK 4, numX 3: mri-q 124, mri-fhd 156) */
    write_input(P("odd.bin"), 4, 3, 0, 4);
    EXPECT_FAIL(lm_parboil_read(P("odd.bin"), &p, &err), &err, LM_ERR_FORMAT, "odd.bin",
                "holds 128 bytes", "numK 4 and numX 3", "124 for an mri-q input",
                "156 for an mri-fhd input");
    write_input(P("cut.bin"), 3072, 32768, 0, -400);
    EXPECT_FAIL(lm_parboil_read(P("cut.bin"), &p, &err), &err, LM_ERR_FORMAT, "cut.bin",
                "454264 bytes", "454664 for an mri-q input", "479240 for an mri-fhd input");

    int32_t neg[2] = {-5, 10};
    write_bytes(P("neg.bin"), neg, 8);
    EXPECT_FAIL(lm_parboil_read(P("neg.bin"), &p, &err), &err, LM_ERR_FORMAT, "neg.bin",
                "numK -5", "must both be positive");
    int32_t zero[2] = {4, 0};
    write_bytes(P("zero.bin"), zero, 8);
    EXPECT_FAIL(lm_parboil_read(P("zero.bin"), &p, &err), &err, LM_ERR_FORMAT, "zero.bin",
                "numX 0");

    /* NaN in ky: named */
    write_input(P("nan.bin"), 4, 3, 0, 0);
    size_t nb;
    char *b = read_bytes(P("nan.bin"), &nb);
    ((float *)(b + 8))[4 + 2] = NAN; /* ky[2] */
    write_bytes(P("nan.bin"), b, nb);
    free(b);
    EXPECT_FAIL(lm_parboil_read(P("nan.bin"), &p, &err), &err, LM_ERR_FORMAT, "nan.bin", "ky",
                "value 2 of 4 is NaN");

    /* outputs */
    int64_t n;
    float *re = NULL, *im = NULL;
    uint32_t o[3] = {5, 0, 0};
    write_bytes(P("bad.out"), o, sizeof o);
    EXPECT_FAIL(lm_parboil_read_output(P("bad.out"), &n, &re, &im, &err), &err, LM_ERR_FORMAT,
                "bad.out", "holds 12 bytes", "numX 5 needs 44", "truncated");
    o[0] = 0;
    write_bytes(P("long.out"), o, sizeof o);
    EXPECT_FAIL(lm_parboil_read_output(P("long.out"), &n, &re, &im, &err), &err, LM_ERR_FORMAT,
                "long.out", "numX 0 needs 4", "too long");
    write_bytes(P("tiny.out"), o, 2);
    EXPECT_FAIL(lm_parboil_read_output(P("tiny.out"), &n, &re, &im, &err), &err, LM_ERR_FORMAT,
                "tiny.out", "too few");
    float fz[1] = {0};
    EXPECT_FAIL(lm_parboil_write_output(P("w.out"), -1, fz, fz, &err), &err, LM_ERR_INVALID,
                "w.out", "uint32");
    CHECK(!file_exists(P("w.out")) && stray_temps() == 0);
}

int main(void)
{
    io_make_dir();
    test_real_data();
    test_synthetic();
    test_bad_inputs();
    io_remove_dir();
    return lm_test_finish("test_parboil");
}
