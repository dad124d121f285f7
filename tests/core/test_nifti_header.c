/* NIfTI-1 headers checked by Larmor before libniftiio sees them: bad
 * sizeof_hdr, dim[0], used dims, datatype, magic and vox_offset are refused
 * with one-line messages naming the file, in .nii and .nii.gz, and nothing
 * reaches stderr from the library. A .nii.gz whose header asks for more
 * voxel bytes than deflate (at most 1032:1) could hold is refused before any
 * allocation (the fuzzing reproducer nifti_gz_8GB_alloc.nii.gz among them). */
#include <fcntl.h>
#include <nifti1_io.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <zlib.h>

#include "io_util.h"
#include "lm_io.h"

static lm_error err;

/* tests/fuzz/findings/nifti_gz_8GB_alloc.nii.gz: 58 bytes whose header
 * asks for 28676 x 3 x 23554 float32 voxels (8.1 GB). */
static const unsigned char repro_8gb[58] = {
    0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x8b, 0x61, 0x64, 0x20, 0x02,
    0x31, 0x14, 0x30, 0x33, 0xb0, 0x00, 0x31, 0x13, 0x0e, 0x79, 0x01, 0x06, 0x05, 0x30, 0xdd,
    0x60, 0xcf, 0xc0, 0x70, 0x00, 0x8a, 0x1d, 0xe6, 0x17, 0x29, 0xe4, 0x26, 0xa6, 0xb8, 0xe7,
    0x65, 0xa6, 0xa4, 0x12, 0xcf, 0x93, 0xca, 0x1d, 0x81, 0xea, 0x1d, 0x9b, 0xf5};

/* stderr output of the last quiet_read; the test fails if there is any. */
static void check_quiet_file(const char *cap, const char *path)
{
    size_t n = 0;
    char *text = read_bytes(cap, &n);
    CHECK_MSG(text && n == 0, "%s: library wrote %zu bytes to stderr: %s", path, n,
              text ? text : "(unreadable)");
    free(text);
}

/* lm_nifti_read with stderr sent to a file, which must stay empty. */
static lm_code quiet_read(const char *path, lm_volume **v, lm_error *e)
{
    const char *cap = P("stderr.txt");
    fflush(stderr);
    int saved = dup(2);
    int fd = open(cap, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (saved < 0 || fd < 0 || dup2(fd, 2) < 0) {
        fprintf(stderr, "cannot redirect stderr\n");
        exit(1);
    }
    close(fd);
    lm_code rc = lm_nifti_read(path, v, e);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    check_quiet_file(cap, path);
    return rc;
}

/* A valid 348-byte header (magic n+1, vox_offset 352) of the given type. */
static nifti_1_header make_header(int datatype, int nx, int ny, int nz)
{
    int dims[8] = {3, nx, ny, nz, 1, 1, 1, 1};
    nifti_1_header *p = nifti_make_new_header(dims, datatype);
    nifti_1_header h = *p;
    free(p);
    h.vox_offset = 352.0f;
    memcpy(h.magic, "n+1", 4);
    h.pixdim[1] = h.pixdim[2] = h.pixdim[3] = 1.0f;
    h.xyzt_units = NIFTI_UNITS_MM;
    return h;
}

/* Header, 4 zero extender bytes, then data: plain or gzip by the name. */
static void write_nifti(const char *path, const nifti_1_header *h, const void *data, size_t bytes)
{
    unsigned char ext[4] = {0};
    size_t len = strlen(path);
    if (len > 3 && strcmp(path + len - 3, ".gz") == 0) {
        gzFile g = gzopen(path, "wb");
        int ok = g && gzwrite(g, h, sizeof *h) == (int)sizeof *h && gzwrite(g, ext, 4) == 4 &&
                 (bytes == 0 || gzwrite(g, data, (unsigned)bytes) == (int)bytes);
        if (!g || gzclose(g) != Z_OK || !ok) {
            fprintf(stderr, "cannot write fixture %s\n", path);
            exit(1);
        }
        return;
    }
    unsigned char *buf = calloc(1, sizeof *h + 4 + bytes);
    memcpy(buf, h, sizeof *h);
    if (bytes)
        memcpy(buf + sizeof *h + 4, data, bytes);
    write_bytes(path, buf, sizeof *h + 4 + bytes);
    free(buf);
}

static void test_good_and_swapped(void)
{
    const int16_t px[6] = {-3, 0, 7, 300, 1, 2};
    lm_volume *v = NULL;
    nifti_1_header h = make_header(NIFTI_TYPE_INT16, 3, 2, 1);
    write_nifti(P("good.nii"), &h, px, sizeof px);
    CHECK_OK(quiet_read(P("good.nii"), &v, &err), &err);
    CHECK(v && v->dims[0] == 3 && v->dims[1] == 2 && v->dims[2] == 1 &&
          crealf(v->data[3]) == 300.0f);
    lm_volume_free(v);

    /* Other byte order: sizeof_hdr reads 0x5C010000; data swapped too. */
    int16_t sw[6];
    memcpy(sw, px, sizeof sw);
    nifti_swap_2bytes(6, sw);
    nifti_1_header hs = h;
    swap_nifti_header(&hs, 1);
    CHECK(hs.sizeof_hdr == 0x5C010000);
    const char *names[2] = {"swapped.nii", "swapped.nii.gz"};
    for (int i = 0; i < 2; i++) {
        write_nifti(P(names[i]), &hs, sw, sizeof sw);
        v = NULL;
        CHECK_OK(quiet_read(P(names[i]), &v, &err), &err);
        CHECK_MSG(v && v->dims[0] == 3 && v->dims[1] == 2 && crealf(v->data[0]) == -3.0f &&
                  crealf(v->data[3]) == 300.0f, "%s: wrong contents", names[i]);
        lm_volume_free(v);
    }

    /* swapped, with dim[2] = -16: the check reads the swapped fields */
    nifti_1_header bad = h;
    bad.dim[2] = -16;
    swap_nifti_header(&bad, 1);
    write_nifti(P("swapped-dim.nii"), &bad, sw, sizeof sw);
    EXPECT_FAIL(quiet_read(P("swapped-dim.nii"), &v, &err), &err, LM_ERR_FORMAT,
                "swapped-dim.nii", "dim[2] is -16");
}

static void test_bad_headers(void)
{
    static const char *const ext[2] = {".nii", ".nii.gz"};
    const float px[6] = {1, 2, 3, 4, 5, 6};
    lm_volume *v = NULL;
    char name[64];
    for (int e = 0; e < 2; e++) {
        nifti_1_header h;

        h = make_header(NIFTI_TYPE_FLOAT32, 3, 2, 1);
        h.sizeof_hdr = 999;
        snprintf(name, sizeof name, "size999%s", ext[e]);
        write_nifti(P(name), &h, px, sizeof px);
        EXPECT_FAIL(quiet_read(P(name), &v, &err), &err, LM_ERR_FORMAT, name,
                    "not a readable NIfTI-1 file", "sizeof_hdr is 999");

        h = make_header(NIFTI_TYPE_FLOAT32, 3, 2, 1);
        h.sizeof_hdr = 540;
        snprintf(name, sizeof name, "nifti2%s", ext[e]);
        write_nifti(P(name), &h, px, sizeof px);
        EXPECT_FAIL(quiet_read(P(name), &v, &err), &err, LM_ERR_UNSUPPORTED, name, "NIfTI-2");

        h = make_header(NIFTI_TYPE_FLOAT32, 3, 2, 1);
        h.dim[0] = 9;
        snprintf(name, sizeof name, "dim0-9%s", ext[e]);
        write_nifti(P(name), &h, px, sizeof px);
        EXPECT_FAIL(quiet_read(P(name), &v, &err), &err, LM_ERR_FORMAT, name,
                    "dim[0] is 9 (must be 1 to 7)");

        h = make_header(NIFTI_TYPE_FLOAT32, 3, 2, 1);
        h.dim[0] = 0;
        snprintf(name, sizeof name, "dim0-0%s", ext[e]);
        write_nifti(P(name), &h, px, sizeof px);
        EXPECT_FAIL(quiet_read(P(name), &v, &err), &err, LM_ERR_FORMAT, name,
                    "dim[0] is 0 (must be 1 to 7)");

        h = make_header(NIFTI_TYPE_FLOAT32, 3, 2, 1);
        h.dim[2] = -16;
        snprintf(name, sizeof name, "dim2-neg%s", ext[e]);
        write_nifti(P(name), &h, px, sizeof px);
        EXPECT_FAIL(quiet_read(P(name), &v, &err), &err, LM_ERR_FORMAT, name,
                    "dim[2] is -16 (must be at least 1)");

        h = make_header(NIFTI_TYPE_FLOAT32, 3, 2, 1);
        h.dim[3] = 0;
        snprintf(name, sizeof name, "dim3-zero%s", ext[e]);
        write_nifti(P(name), &h, px, sizeof px);
        EXPECT_FAIL(quiet_read(P(name), &v, &err), &err, LM_ERR_FORMAT, name,
                    "dim[3] is 0 (must be at least 1)");

        h = make_header(NIFTI_TYPE_FLOAT32, 3, 2, 1);
        h.datatype = 12345;
        snprintf(name, sizeof name, "dt12345%s", ext[e]);
        write_nifti(P(name), &h, px, sizeof px);
        EXPECT_FAIL(quiet_read(P(name), &v, &err), &err, LM_ERR_UNSUPPORTED, name,
                    "datatype code 12345 is not supported");

        h = make_header(NIFTI_TYPE_FLOAT32, 3, 2, 1);
        memset(h.magic, 0, 4); /* ANALYZE 7.5 layout under a .nii name */
        snprintf(name, sizeof name, "nomagic%s", ext[e]);
        write_nifti(P(name), &h, px, sizeof px);
        EXPECT_FAIL(quiet_read(P(name), &v, &err), &err, LM_ERR_UNSUPPORTED, name,
                    "not a single-file NIfTI-1 image", "magic 'n+1'");

        h = make_header(NIFTI_TYPE_FLOAT32, 3, 2, 1);
        h.vox_offset = 0.0f;
        snprintf(name, sizeof name, "off0%s", ext[e]);
        write_nifti(P(name), &h, px, sizeof px);
        EXPECT_FAIL(quiet_read(P(name), &v, &err), &err, LM_ERR_FORMAT, name, "vox_offset is 0");

        h = make_header(NIFTI_TYPE_FLOAT32, 3, 2, 1);
        h.vox_offset = 1e9f;
        snprintf(name, sizeof name, "offbig%s", ext[e]);
        write_nifti(P(name), &h, px, sizeof px);
        EXPECT_FAIL(quiet_read(P(name), &v, &err), &err, LM_ERR_FORMAT, name, "vox_offset is 1e+09");

        h = make_header(NIFTI_TYPE_FLOAT32, 3, 2, 1);
        h.vox_offset = NAN;
        snprintf(name, sizeof name, "offnan%s", ext[e]);
        write_nifti(P(name), &h, px, sizeof px);
        EXPECT_FAIL(quiet_read(P(name), &v, &err), &err, LM_ERR_FORMAT, name, "vox_offset is nan");

        /* short header */
        snprintf(name, sizeof name, "short%s", ext[e]);
        h = make_header(NIFTI_TYPE_FLOAT32, 3, 2, 1);
        if (e == 0) {
            write_bytes(P(name), &h, 200);
        } else {
            gzFile g = gzopen(P(name), "wb");
            CHECK(g && gzwrite(g, &h, 200) == 200 && gzclose(g) == Z_OK);
        }
        EXPECT_FAIL(quiet_read(P(name), &v, &err), &err, LM_ERR_FORMAT, name,
                    "not a readable NIfTI-1 file", "200 of 348 header bytes");
    }
    write_bytes(P("empty.nii"), "", 0);
    EXPECT_FAIL(quiet_read(P("empty.nii"), &v, &err), &err, LM_ERR_FORMAT, "empty.nii",
                "0 of 348 header bytes");
    /* gzip magic, then garbage */
    write_bytes(P("badgz.nii.gz"), "\x1f\x8b\x08\x00garbage garbage garbage", 28);
    EXPECT_FAIL(quiet_read(P("badgz.nii.gz"), &v, &err), &err, LM_ERR_FORMAT, "badgz.nii.gz",
                "not a readable NIfTI-1 file", "damaged gzip stream");
}

/* The reproducer and a well-formed .nii.gz header asking for 8 GiB, read
 * in a child whose address space is capped: refused as a format error (a
 * failed allocation would say LM_ERR_NOMEM), quietly, without allocating. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LM_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define LM_TEST_ASAN 1
#endif

static int big_gz_child(void)
{
#ifndef LM_TEST_ASAN /* ASan reserves terabytes of address space */
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    rlim_t cap = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)512 << 20);
    struct rlimit rl = {cap, cap};
    if (setrlimit(RLIMIT_AS, &rl) != 0)
        perror("setrlimit");
#endif
    lm_volume *v = NULL;
    EXPECT_FAIL(quiet_read(P("repro.nii.gz"), &v, &err), &err, LM_ERR_FORMAT, "repro.nii.gz",
                "sizeof_hdr");
    EXPECT_FAIL(quiet_read(P("big.nii.gz"), &v, &err), &err, LM_ERR_FORMAT, "big.nii.gz",
                "cannot hold", "2048 x 2048 x 512");
    /* the fuzzing finding itself, when the source tree is at hand */
    const char *data = getenv("LM_TEST_DATA"); /* <source>/tests/data */
    size_t n = data ? strlen(data) : 0;
    if (n > 5 && strcmp(data + n - 5, "/data") == 0) {
        char path[1024];
        snprintf(path, sizeof path, "%.*s/fuzz/findings/nifti_gz_8GB_alloc.nii.gz", (int)(n - 5),
                 data);
        if (!file_exists(path))
            fprintf(stderr, "  (%s not found; its bytes were checked above)\n", path);
        else
            EXPECT_FAIL(quiet_read(path, &v, &err), &err, LM_ERR_FORMAT,
                        "nifti_gz_8GB_alloc.nii.gz", "sizeof_hdr");
    }
    return lm_test_failures == 0 ? 0 : 1;
}

static void test_big_gz(void)
{
    write_bytes(P("repro.nii.gz"), repro_8gb, sizeof repro_8gb);
    nifti_1_header h = make_header(NIFTI_TYPE_FLOAT32, 2048, 2048, 512);
    write_nifti(P("big.nii.gz"), &h, NULL, 0);
    /* the same header uncompressed: refused by the plain-file size check */
    write_nifti(P("big.nii"), &h, NULL, 0);
    lm_volume *v = NULL;
    EXPECT_FAIL(quiet_read(P("big.nii"), &v, &err), &err, LM_ERR_FORMAT, "big.nii", "truncated");

    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0)
        _exit(big_gz_child());
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);

    /* A highly compressible image (zeros, ~1000:1) is still read. */
    int64_t dims[3] = {128, 128, 128};
    lm_volume *z = lm_volume_new(dims, NULL, &err);
    CHECK_OK(lm_nifti_write(P("zeros.nii.gz"), z, 0, &err), &err);
    struct stat st;
    CHECK(stat(P("zeros.nii.gz"), &st) == 0);
    fprintf(stderr, "  zeros.nii.gz: %lld bytes for %d voxel bytes (%.0f:1)\n", (long long)st.st_size,
            128 * 128 * 128 * 4, 128.0 * 128 * 128 * 4 / (double)st.st_size);
    v = NULL;
    CHECK_OK(quiet_read(P("zeros.nii.gz"), &v, &err), &err);
    CHECK(v && v->dims[0] == 128 && v->dims[2] == 128);
    lm_volume_free(v);
    lm_volume_free(z);
}

int main(void)
{
    io_make_dir();
    test_good_and_swapped();
    test_bad_headers();
    test_big_gz();
    io_remove_dir();
    return lm_test_finish("test_nifti_header");
}
