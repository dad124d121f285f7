/* Parallel gzip members (core/lm_gzip_parallel.c) and the .nii.gz written
 * with them: zlib's gzread reads every member back to the exact bytes,
 * across blocks that span the parts; niftilib (nifti_image_read, the
 * reader of FSL and AFNI) and Larmor's reader give the voxels of the .nii
 * written from the same volume, bit for bit.
 *   test_gzip_parallel [DIR]   (DIR: keep v.nii and v.nii.gz there) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <nifti1_io.h>

#include "lm_gzip_parallel.h"
#include "lm_io.h"
#include "lm_test.h"

/* The whole uncompressed content of a gzip file through zlib (n bytes). */
static unsigned char *gunzip_all(const char *path, size_t *n)
{
    gzFile g = gzopen(path, "rb");
    size_t cap = 1 << 20, len = 0;
    unsigned char *buf = malloc(cap);
    int k = 0;
    while (g && buf && (k = gzread(g, buf + len, (unsigned)(cap - len))) > 0) {
        len += (size_t)k;
        if (len == cap)
            buf = realloc(buf, cap *= 2);
    }
    if (g)
        gzclose(g);
    *n = len;
    return k < 0 ? (free(buf), NULL) : buf;
}

/* gzip members in a file: inflated one after another with zlib, each
 * ending where the next begins; -1 when one is damaged. */
static int count_members(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len);
    size_t got = b ? fread(b, 1, (size_t)len, f) : 0;
    fclose(f);
    int members = 0;
    size_t pos = 0;
    unsigned char out[1 << 14];
    while (b && got == (size_t)len && pos < (size_t)len) {
        z_stream z;
        memset(&z, 0, sizeof z);
        if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
            break;
        z.next_in = b + pos;
        z.avail_in = (uInt)((size_t)len - pos);
        int r;
        do {
            z.next_out = out;
            z.avail_out = sizeof out;
            r = inflate(&z, Z_NO_FLUSH);
        } while (r == Z_OK);
        pos += z.total_in;
        inflateEnd(&z);
        if (r != Z_STREAM_END)
            return -1;
        members++;
    }
    free(b);
    return members;
}

static void test_members(const char *dir)
{
    /* three parts with a 333-byte block: blocks span the part boundaries */
    enum { A = 100, B = 5000, C = 1234 };
    unsigned char *all = malloc(A + B + C);
    uint32_t s = 12345;
    for (int i = 0; i < A + B + C; i++) {
        s = s * 1664525u + 1013904223u;
        all[i] = i % 7 ? (unsigned char)(s >> 24) : (unsigned char)i; /* partly compressible */
    }
    const void *parts[3] = {all, all + A, all + A + B};
    const size_t sizes[3] = {A, B, C};
    char path[512];
    snprintf(path, sizeof path, "%s/members.gz", dir);
    FILE *f = fopen(path, "wb");
    lm_error err = {0};
    size_t wrote = 0;
    CHECK(f != NULL);
    CHECK_OK(lm_gzip_parallel_write(f, parts, sizes, 3, 6, 333, &wrote, path, &err), &err);
    CHECK(f && fclose(f) == 0);
    size_t n = 0;
    unsigned char *back = gunzip_all(path, &n);
    CHECK_MSG(back && n == A + B + C && memcmp(back, all, n) == 0, "gzread gave %zu of %d bytes", n, A + B + C);
    const int members = count_members(path);
    CHECK_MSG(members == (A + B + C + 332) / 333, "%d members, expected %d", members, (A + B + C + 332) / 333);
    free(back);
    /* an empty stream is one valid, empty member */
    f = fopen(path, "wb");
    CHECK_OK(lm_gzip_parallel_write(f, NULL, NULL, 0, 1, 0, &wrote, path, &err), &err);
    fclose(f);
    back = gunzip_all(path, &n);
    CHECK(back && n == 0 && count_members(path) == 1);
    free(back);
    CHECK(lm_gzip_parallel_write(NULL, parts, sizes, 3, 0, 0, NULL, path, &err) == LM_ERR_INVALID && err.msg[0]);
    unlink(path);
    free(all);
}

static void test_nifti(const char *dir)
{
    /* 1.1 MB of voxels: several members at the default block size */
    const int64_t dims[3] = {72, 60, 64};
    const double vox[3] = {1.5, 2.0, 2.5};
    lm_error err = {0};
    lm_volume *v = lm_volume_new(dims, vox, &err);
    CHECK(v != NULL);
    if (!v)
        return;
    const int64_t nv = lm_volume_count(v);
    for (int64_t j = 0; j < nv; j++) /* a smooth image with fine detail, as reconstructions are */
        v->data[j] = CMPLXF((float)(sin(0.01 * (double)j) * (j % 5 ? 1.0 : 0.37)), 0.0f);
    v->affine[0][3] = -50.0, v->affine[1][3] = 12.5, v->affine[2][3] = 3.0;
    char nii[512], gz[512];
    snprintf(nii, sizeof nii, "%s/v.nii", dir);
    snprintf(gz, sizeof gz, "%s/v.nii.gz", dir);
    CHECK_OK(lm_nifti_write(nii, v, 0, &err), &err);
    CHECK_OK(lm_nifti_write(gz, v, 0, &err), &err);
    CHECK_MSG(count_members(gz) > 1, "%d gzip members", count_members(gz));
    /* the .nii.gz is the .nii, compressed */
    size_t n = 0;
    unsigned char *back = gunzip_all(gz, &n);
    FILE *f = fopen(nii, "rb");
    unsigned char *plain = malloc(n + 1);
    const size_t pn = f && plain ? fread(plain, 1, n + 1, f) : 0;
    if (f)
        fclose(f);
    CHECK_MSG(back && pn == n && memcmp(back, plain, n) == 0, ".nii.gz inflates to %zu bytes, .nii has %zu", n, pn);
    free(back), free(plain);
    /* niftilib's own reader */
    nifti_set_debug_level(0);
    nifti_image *a = nifti_image_read(nii, 1), *b = nifti_image_read(gz, 1);
    CHECK(a && b);
    if (a && b) {
        CHECK(a->nvox == b->nvox && a->nvox == (size_t)nv && a->datatype == b->datatype);
        CHECK(memcmp(a->data, b->data, a->nvox * (size_t)a->nbyper) == 0);
        CHECK(b->sform_code == NIFTI_XFORM_SCANNER_ANAT && b->sto_xyz.m[0][3] == -50.0f && b->dz == 2.5f);
    }
    nifti_image_free(a);
    nifti_image_free(b);
    /* and Larmor's */
    lm_volume *r = NULL;
    CHECK_OK(lm_nifti_read(gz, &r, &err), &err);
    int same = r && lm_volume_count(r) == nv;
    for (int64_t j = 0; same && j < nv; j++)
        same = crealf(r->data[j]) == cabsf(v->data[j]);
    CHECK(same);
    lm_volume_free(r);
    lm_volume_free(v);
}

int main(int argc, char **argv)
{
    char tmp[] = "/tmp/lm_gzip_XXXXXX";
    const char *dir = argc > 1 ? argv[1] : mkdtemp(tmp);
    CHECK(dir != NULL);
    if (!dir)
        return 1;
    test_members(dir);
    test_nifti(dir);
    if (argc <= 1) {
        char p[600];
        snprintf(p, sizeof p, "%s/v.nii", dir);
        unlink(p);
        snprintf(p, sizeof p, "%s/v.nii.gz", dir);
        unlink(p);
        rmdir(dir);
    }
    return lm_test_finish("test_gzip_parallel");
}
