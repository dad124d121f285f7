/* BART cfl/hdr: byte-exact round trips of trajectories, k-space and
 * volumes, the header BART writes, every malformed input with its message,
 * and interoperability with the bart command when it is installed. */
#include <stdint.h>

#include "io_util.h"
#include "lm_io.h"

static lm_error err;

static const char bart_hdr_3_16_8[] = "# Dimensions\n3 16 8 1 1 1 1 1 1 1 1 1 1 1 1 1 \n";

static void test_traj(void)
{
    unsigned seed = 1;
    lm_traj *t = lm_traj_new(128, 3, &err);
    t->readout = 16;
    for (int i = 0; i < 3 * 128; i++)
        t->k[i] = 8.0f * io_rand(&seed);
    CHECK_OK(lm_cfl_write_traj(P("t.cfl"), t, &err), &err);
    char *hdr = read_bytes(P("t.hdr"), NULL);
    CHECK_MSG(hdr && strncmp(hdr, bart_hdr_3_16_8, strlen(bart_hdr_3_16_8)) == 0, "header: %s", hdr);
    free(hdr);
    size_t n;
    char *raw = read_bytes(P("t.cfl"), &n);
    CHECK(n == 128 * 3 * 8);
    /* real parts are the samples, imaginary parts zero */
    CHECK(raw && memcmp(raw, &t->k[0], 4) == 0 && ((float *)raw)[1] == 0.0f);
    free(raw);

    lm_traj *r = NULL;
    CHECK_OK(lm_cfl_read_traj(P("t"), &r, &err), &err); /* base name */
    if (r) {
        CHECK(r->m == 128 && r->readout == 16 && r->ndim == 3);
        CHECK(memcmp(r->k, t->k, 128 * 3 * sizeof(float)) == 0);
        CHECK_OK(lm_cfl_write_traj(P("t2.hdr"), r, &err), &err); /* .hdr names the pair too */
        CHECK(files_equal(P("t.cfl"), P("t2.cfl")));
        CHECK(files_equal(P("t.hdr"), P("t2.hdr")));
        lm_traj_free(r);
    }

    /* kz all zero: a 2D trajectory */
    for (int i = 0; i < 128; i++)
        t->k[3 * i + 2] = 0.0f;
    CHECK_OK(lm_cfl_write_traj(P("t2d.cfl"), t, &err), &err);
    r = NULL;
    CHECK_OK(lm_cfl_read_traj(P("t2d.hdr"), &r, &err), &err);
    CHECK(r && r->ndim == 2 && r->m == 128);
    lm_traj_free(r);

    /* readout that does not divide m: 3 x m */
    t->readout = 10;
    CHECK_OK(lm_cfl_write_traj(P("t3.cfl"), t, &err), &err);
    hdr = read_bytes(P("t3.hdr"), NULL);
    CHECK_MSG(hdr && strncmp(hdr, "# Dimensions\n3 128 1 1 ", 23) == 0, "header: %s", hdr);
    free(hdr);
    r = NULL;
    CHECK_OK(lm_cfl_read_traj(P("t3.cfl"), &r, &err), &err);
    CHECK(r && r->m == 128 && r->readout == 128);
    lm_traj_free(r);

    /* dims beyond 3 multiply the spokes */
    int64_t d5[5] = {3, 4, 2, 1, 5};
    lm_cfloat *c = calloc(3 * 40, sizeof(lm_cfloat));
    CHECK_OK(lm_cfl_write(P("t5"), 5, d5, c, &err), &err);
    r = NULL;
    CHECK_OK(lm_cfl_read_traj(P("t5"), &r, &err), &err);
    CHECK(r && r->m == 40 && r->readout == 4);
    lm_traj_free(r);
    free(c);
    lm_traj_free(t);
}

static void test_kdata(void)
{
    unsigned seed = 2;
    lm_kdata *k = lm_kdata_new(128, 4, &err);
    for (int i = 0; i < 128 * 4; i++)
        k->d[i] = CMPLXF(io_rand(&seed), io_rand(&seed));
    CHECK_OK(lm_cfl_write_kdata(P("k.cfl"), k, 16, &err), &err);
    char *hdr = read_bytes(P("k.hdr"), NULL);
    CHECK_MSG(hdr && strncmp(hdr, "# Dimensions\n1 16 8 4 1 ", 24) == 0, "header: %s", hdr);
    free(hdr);
    lm_kdata *r = NULL;
    CHECK_OK(lm_cfl_read_kdata(P("k.cfl"), &r, &err), &err);
    if (r) {
        CHECK(r->m == 128 && r->ncoils == 4);
        CHECK(memcmp(r->d, k->d, 128 * 4 * sizeof(lm_cfloat)) == 0);
        CHECK_OK(lm_cfl_write_kdata(P("k2"), r, 16, &err), &err);
        CHECK(files_equal(P("k.cfl"), P("k2.cfl")) && files_equal(P("k.hdr"), P("k2.hdr")));
        lm_kdata_free(r);
    }
    /* readout not dividing m: 1 x m x 1 x coils */
    CHECK_OK(lm_cfl_write_kdata(P("k3.cfl"), k, 0, &err), &err);
    hdr = read_bytes(P("k3.hdr"), NULL);
    CHECK_MSG(hdr && strncmp(hdr, "# Dimensions\n1 128 1 4 1 ", 25) == 0, "header: %s", hdr);
    free(hdr);
    lm_kdata_free(k);

    /* BART order (sample, coil, frame) becomes (sample, frame) per coil */
    int64_t d[5] = {1, 4, 2, 3, 5}; /* 8 samples per block, 3 coils, 5 frames */
    lm_cfloat *c = malloc(120 * sizeof(lm_cfloat));
    for (int i = 0; i < 120; i++)
        c[i] = (float)i;
    CHECK_OK(lm_cfl_write(P("k5"), 5, d, c, &err), &err);
    r = NULL;
    CHECK_OK(lm_cfl_read_kdata(P("k5"), &r, &err), &err);
    if (r) {
        CHECK(r->m == 40 && r->ncoils == 3);
        int ok = 1;
        for (int s = 0; s < 8; s++)
            for (int coil = 0; coil < 3; coil++)
                for (int f = 0; f < 5; f++)
                    ok &= crealf(r->d[s + 8 * f + 40 * coil]) == (float)(s + 8 * (coil + 3 * f));
        CHECK(ok);
        lm_kdata_free(r);
    }
    free(c);
}

static void test_volume(void)
{
    unsigned seed = 3;
    int64_t dims[3] = {5, 4, 3};
    lm_volume *v = lm_volume_new(dims, NULL, &err);
    for (int i = 0; i < 60; i++)
        v->data[i] = CMPLXF(io_rand(&seed), io_rand(&seed));
    CHECK_OK(lm_cfl_write_volume(P("v.cfl"), v, &err), &err);
    lm_volume *r = NULL;
    CHECK_OK(lm_cfl_read_volume(P("v"), &r, &err), &err);
    CHECK(r && r->dims[0] == 5 && r->dims[1] == 4 && r->dims[2] == 3);
    CHECK(r && memcmp(r->data, v->data, 60 * sizeof(lm_cfloat)) == 0);
    if (r) {
        CHECK_OK(lm_cfl_write_volume(P("v2"), r, &err), &err);
        CHECK(files_equal(P("v.cfl"), P("v2.cfl")) && files_equal(P("v.hdr"), P("v2.hdr")));
    }
    lm_volume_free(r);
    lm_volume_free(v);

    /* 2D: z = 1 */
    int64_t d2[2] = {6, 7};
    lm_cfloat *c = calloc(42, sizeof(lm_cfloat));
    c[41] = 3.0f;
    CHECK_OK(lm_cfl_write(P("img2d"), 2, d2, c, &err), &err);
    r = NULL;
    CHECK_OK(lm_cfl_read_volume(P("img2d.cfl"), &r, &err), &err);
    CHECK(r && r->dims[0] == 6 && r->dims[1] == 7 && r->dims[2] == 1 && crealf(r->data[41]) == 3.0f);
    lm_volume_free(r);
    free(c);

    /* generic read trims trailing 1s */
    int nd = 0;
    int64_t dd[LM_CFL_MAX_DIMS];
    lm_cfloat *data = NULL;
    CHECK_OK(lm_cfl_read(P("img2d"), &nd, dd, &data, &err), &err);
    CHECK(nd == 2 && dd[0] == 6 && dd[1] == 7);
    free(data);
}

/* hdr text plus a cfl of the given byte count (zeros). */
static void make_pair(const char *base, const char *hdr_text, size_t cfl_bytes)
{
    char name[256];
    snprintf(name, sizeof name, "%s.hdr", base);
    write_text(P(name), hdr_text);
    snprintf(name, sizeof name, "%s.cfl", base);
    char *z = calloc(cfl_bytes ? cfl_bytes : 1, 1);
    write_bytes(P(name), z, cfl_bytes);
    free(z);
}

static void test_bad_inputs(void)
{
    int nd;
    int64_t d[LM_CFL_MAX_DIMS];
    lm_cfloat *data = NULL;
    lm_traj *t = NULL;
    lm_volume *v = NULL;

    EXPECT_FAIL(lm_cfl_read(P("missing"), &nd, d, &data, &err), &err, LM_ERR_IO,
                "missing.cfl: cannot open: No such file");
    EXPECT_FAIL(lm_cfl_read_traj(P("missing.hdr"), &t, &err), &err, LM_ERR_IO,
                "missing.hdr: cannot open: No such file");

    write_bytes(P("nohdr.cfl"), "12345678", 8);
    EXPECT_FAIL(lm_cfl_read(P("nohdr"), &nd, d, &data, &err), &err, LM_ERR_IO, "nohdr.hdr",
                "header missing", "nohdr.cfl");

    make_pair("nodims", "# Command\ntraj -x 16\n3 16 8\n", 3 * 16 * 8 * 8);
    EXPECT_FAIL(lm_cfl_read(P("nodims"), &nd, d, &data, &err), &err, LM_ERR_FORMAT, "nodims.hdr",
                "no '# Dimensions' line");

    make_pair("garbled", "# Dimensions\n3 x 16\n", 8);
    EXPECT_FAIL(lm_cfl_read(P("garbled"), &nd, d, &data, &err), &err, LM_ERR_FORMAT, "garbled.hdr",
                "'x'", "not a number");

    make_pair("empty", "# Dimensions\n\n", 8);
    EXPECT_FAIL(lm_cfl_read(P("empty"), &nd, d, &data, &err), &err, LM_ERR_FORMAT, "empty.hdr",
                "no sizes");

    make_pair("zero", "# Dimensions\n3 0 8\n", 8);
    EXPECT_FAIL(lm_cfl_read(P("zero"), &nd, d, &data, &err), &err, LM_ERR_FORMAT, "zero.hdr",
                "dimension 1 is 0");

    make_pair("neg", "# Dimensions\n3 -5 8\n", 8);
    EXPECT_FAIL(lm_cfl_read(P("neg"), &nd, d, &data, &err), &err, LM_ERR_FORMAT, "neg.hdr",
                "negative");

    make_pair("many", "# Dimensions\n1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 2\n", 16);
    EXPECT_FAIL(lm_cfl_read(P("many"), &nd, d, &data, &err), &err, LM_ERR_FORMAT, "many.hdr",
                "more than 16 dimensions");
    /* extra trailing 1s are harmless */
    make_pair("many1", "# Dimensions\n2 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n", 16);
    CHECK_OK(lm_cfl_read(P("many1"), &nd, d, &data, &err), &err);
    CHECK(nd == 1 && d[0] == 2);
    free(data);
    data = NULL;

    char bin[16] = "# Dimensions\n3\0";
    write_bytes(P("binary.hdr"), bin, sizeof bin);
    write_bytes(P("binary.cfl"), "\0\0\0\0\0\0\0\0", 8);
    EXPECT_FAIL(lm_cfl_read(P("binary"), &nd, d, &data, &err), &err, LM_ERR_FORMAT, "binary.hdr",
                "binary data");

    make_pair("trunc", "# Dimensions\n3 64 100 1 1\n", 3000);
    EXPECT_FAIL(lm_cfl_read_traj(P("trunc.cfl"), &t, &err), &err, LM_ERR_FORMAT,
                "trunc.cfl: file holds 3000 bytes but ", "trunc.hdr's dimensions 3 x 64 x 100 need 153600 (truncated)");

    make_pair("long", "# Dimensions\n3 64 100\n", 153608);
    EXPECT_FAIL(lm_cfl_read_traj(P("long"), &t, &err), &err, LM_ERR_FORMAT,
                "long.cfl: file holds 153608 bytes but ", "need 153600 (too long)");

    /* A header edited after the data was written. */
    lm_traj *good = lm_traj_new(128, 3, &err);
    good->readout = 16;
    CHECK_OK(lm_cfl_write_traj(P("edited"), good, &err), &err);
    lm_traj_free(good);
    write_text(P("edited.hdr"), "# Dimensions\n3 16 9 1 1 1 1 1 1 1 1 1 1 1 1 1 \n");
    EXPECT_FAIL(lm_cfl_read_traj(P("edited"), &t, &err), &err, LM_ERR_FORMAT,
                "holds 3072 bytes", "3 x 16 x 9 need 3456 (truncated)");

    make_pair("overflow", "# Dimensions\n4294967296 4294967296\n", 8);
    EXPECT_FAIL(lm_cfl_read(P("overflow"), &nd, d, &data, &err), &err, LM_ERR_FORMAT,
                "overflow.hdr", "4294967296 x 4294967296", "overflow");

    make_pair("absurd", "# Dimensions\n100000 100000 100\n", 8);
    EXPECT_FAIL(lm_cfl_read(P("absurd"), &nd, d, &data, &err), &err, LM_ERR_NOMEM, "absurd.hdr",
                "100000 x 100000 x 100", "absurd");

    make_pair("huge", "# Dimensions\n99999999999999999999\n", 8);
    EXPECT_FAIL(lm_cfl_read(P("huge"), &nd, d, &data, &err), &err, LM_ERR_FORMAT, "huge.hdr",
                "too large to be a size");

    /* NaN and infinity in the data */
    lm_cfloat c[6] = {0};
    int64_t d6[1] = {6};
    CHECK_OK(lm_cfl_write(P("nan"), 1, d6, c, &err), &err);
    float *raw = (float *)c;
    raw[9] = NAN; /* element 4, imaginary */
    write_bytes(P("nan.cfl"), c, sizeof c);
    EXPECT_FAIL(lm_cfl_read(P("nan"), &nd, d, &data, &err), &err, LM_ERR_FORMAT, "nan.cfl",
                "element 4 of 6", "NaN imaginary part");
    raw[9] = 0.0f;
    raw[2] = INFINITY;
    write_bytes(P("nan.cfl"), c, sizeof c);
    EXPECT_FAIL(lm_cfl_read(P("nan"), &nd, d, &data, &err), &err, LM_ERR_FORMAT, "nan.cfl",
                "element 1 of 6", "infinite real part");

    /* shapes that do not fit what is asked for */
    make_pair("two", "# Dimensions\n2 16 8\n", 2 * 16 * 8 * 8);
    EXPECT_FAIL(lm_cfl_read_traj(P("two"), &t, &err), &err, LM_ERR_FORMAT, "two",
                "3 x readout x spokes", "2 x 16 x 8");
    make_pair("four", "# Dimensions\n4 4 4 2\n", 4 * 4 * 4 * 2 * 8);
    EXPECT_FAIL(lm_cfl_read_volume(P("four"), &v, &err), &err, LM_ERR_FORMAT, "four",
                "at most 3 dimensions", "4 x 4 x 4 x 2");

    /* write-side argument checks */
    int64_t bad[2] = {3, 0};
    EXPECT_FAIL(lm_cfl_write(P("w"), 2, bad, c, &err), &err, LM_ERR_FORMAT, "w", "dimension 1 is 0");
    EXPECT_FAIL(lm_cfl_write(P("w"), 17, d6, c, &err), &err, LM_ERR_INVALID, "w", "17 dimensions");
    CHECK(!file_exists(P("w.cfl")) && !file_exists(P("w.hdr")));
    CHECK(stray_temps() == 0);
}

/* ---- BART interop ---- */

static int have_bart(void)
{
    return system("command -v bart >/dev/null 2>&1") == 0;
}

static int run(const char *fmt, const char *a, const char *b)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    int rc = system(cmd);
    if (rc != 0)
        fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
    return rc;
}

/* Parses `bart show` output ("+1.0e+00-2.0e-01i" separated by tabs/lines). */
static int parse_show(const char *path, lm_cfloat *out, int max)
{
    char *s = read_bytes(path, NULL);
    if (!s)
        return -1;
    int n = 0;
    char *p = s;
    float re, im;
    int used;
    while (n < max && sscanf(p, " %f%fi%n", &re, &im, &used) == 2) {
        out[n++] = CMPLXF(re, im);
        p += used;
    }
    free(s);
    return n;
}

static void test_bart(void)
{
    if (!have_bart()) {
        fprintf(stderr, "SKIP (sub-check): bart not on PATH, BART interop not tested\n");
        return;
    }
    /* bart's 3D radial trajectory, read by Larmor */
    if (run("bart traj -x 16 -y 8 -r -3 %s%s >/dev/null", P("bt"), "") == 0) {
        lm_traj *t = NULL;
        CHECK_OK(lm_cfl_read_traj(P("bt"), &t, &err), &err);
        if (t) {
            double kmax[3];
            lm_traj_extent(t, kmax);
            fprintf(stderr, "  bart traj: m %lld, readout %lld, ndim %d, kmax %g %g %g\n",
                    (long long)t->m, (long long)t->readout, t->ndim, kmax[0], kmax[1], kmax[2]);
            CHECK(t->m == 128 && t->readout == 16 && t->ndim == 3);
            CHECK(kmax[0] <= 8.0 && kmax[1] <= 8.0 && kmax[2] <= 8.0 && kmax[2] >= 7.0);
            /* the values bart itself shows */
            lm_cfloat shown[384];
            if (run("bart show %s > %s", P("bt"), P("bt.txt")) == 0) {
                int n = parse_show(P("bt.txt"), shown, 384);
                CHECK_MSG(n == 384, "parsed %d values from bart show", n);
                int ok = n == 384;
                for (int i = 0; ok && i < 384; i++)
                    ok = fabsf(crealf(shown[i]) - t->k[i]) <= 1e-5f * (1.0f + fabsf(t->k[i]));
                CHECK_MSG(ok, "trajectory values differ from bart show");
            }
            /* bart's k-space of its phantom on that trajectory */
            if (run("bart phantom -k -t %s %s >/dev/null", P("bt"), P("bk")) == 0) {
                lm_kdata *k = NULL;
                CHECK_OK(lm_cfl_read_kdata(P("bk"), &k, &err), &err);
                CHECK(k && k->m == 128 && k->ncoils == 1);
                CHECK_OK(lm_check_traj_kdata(t, k, P("bt"), P("bk"), &err), &err);
                lm_kdata_free(k);
            }
            lm_traj_free(t);
        }
    }

    /* a Larmor cfl read by bart */
    int64_t dims[3] = {4, 3, 2};
    lm_volume *v = lm_volume_new(dims, NULL, &err);
    unsigned seed = 9;
    for (int i = 0; i < 24; i++)
        v->data[i] = CMPLXF(io_rand(&seed), io_rand(&seed));
    CHECK_OK(lm_cfl_write_volume(P("lv"), v, &err), &err);
    CHECK(run("bart show -m %s > %s", P("lv"), P("lv.meta")) == 0);
    char *meta = read_bytes(P("lv.meta"), NULL);
    CHECK_MSG(meta && strstr(meta, "4\t3\t2\t1\t1"), "bart show -m: %s", meta ? meta : "(none)");
    if (meta)
        fprintf(stderr, "  bart show -m on a Larmor cfl:\n%s", meta);
    free(meta);
    lm_cfloat shown[24];
    if (run("bart show %s > %s", P("lv"), P("lv.txt")) == 0) {
        int n = parse_show(P("lv.txt"), shown, 24);
        CHECK_MSG(n == 24, "parsed %d values from bart show", n);
        int ok = n == 24;
        for (int i = 0; ok && i < 24; i++)
            ok = cabsf(shown[i] - v->data[i]) <= 2e-6f;
        CHECK_MSG(ok, "bart show values differ from what Larmor wrote");
    }
    /* bart computes on it and Larmor reads the result */
    if (run("bart scale 2 %s %s", P("lv"), P("lv2")) == 0) {
        lm_volume *r = NULL;
        CHECK_OK(lm_cfl_read_volume(P("lv2"), &r, &err), &err);
        int ok = r != NULL;
        for (int i = 0; ok && i < 24; i++)
            ok = cabsf(r->data[i] - 2.0f * v->data[i]) <= 1e-6f;
        CHECK_MSG(ok, "bart scale 2 result differs");
        lm_volume_free(r);
    }
    /* coil dimension as bart sees it */
    lm_kdata *k = lm_kdata_new(64, 3, &err);
    CHECK_OK(lm_cfl_write_kdata(P("lk"), k, 16, &err), &err);
    CHECK(run("bart show -d 3 %s > %s", P("lk"), P("lk.d3")) == 0);
    char *d3 = read_bytes(P("lk.d3"), NULL);
    CHECK_MSG(d3 && atoi(d3) == 3, "bart show -d 3: %s", d3 ? d3 : "(none)");
    free(d3);
    lm_kdata_free(k);
    lm_volume_free(v);
}

int main(void)
{
    io_make_dir();
    test_traj();
    test_kdata();
    test_volume();
    test_bad_inputs();
    test_bart();
    io_remove_dir();
    return lm_test_finish("test_cfl");
}
