/* Writes the seed corpora in tests/fuzz/corpus/<target>/: small valid files
 * made by Larmor's own writers, plus hand-made invalid ones. Run once:
 *   tests/fuzz/make_seeds.sh   (builds this against a build folder's liblarmor.a) */
#include <complex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lm_config.h"
#include "lm_io.h"
#include "lm_io_ismrmrd.h"

static const char *root;

static void put(const char *target, const char *name, const void *d, size_t n)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", root, target);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/%s/%s", root, target, name);
    FILE *f = fopen(p, "wb");
    if (!f || (n && fwrite(d, 1, n, f) != n) || fclose(f)) {
        perror(p);
        exit(1);
    }
}

static unsigned char *slurp(const char *p, size_t *n)
{
    FILE *f = fopen(p, "rb");
    if (!f) {
        perror(p);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n + 1);
    if (fread(b, 1, *n, f) != *n)
        exit(1);
    fclose(f);
    return b;
}

/* fuzz_cfl input: u16 hdr length, hdr, cfl. */
static void cfl_seed(const char *name, const char *hdr, const void *cfl, size_t n)
{
    size_t hl = strlen(hdr);
    unsigned char *b = malloc(2 + hl + n);
    b[0] = (unsigned char)(hl & 255);
    b[1] = (unsigned char)(hl >> 8);
    memcpy(b + 2, hdr, hl);
    if (n)
        memcpy(b + 2 + hl, cfl, n);
    put("fuzz_cfl", name, b, 2 + hl + n);
    free(b);
}

static void parboil_seed(const char *name, int32_t nk, int32_t nx, int fhd, size_t cut)
{
    size_t nf = 5 * (size_t)(nk > 0 ? nk : 0) + 3 * (size_t)(nx > 0 ? nx : 0) + (fhd ? 2 * (size_t)nk : 0);
    size_t n = 8 + 4 * nf;
    if (cut && cut < n)
        n = cut;
    unsigned char *b = calloc(1, n + 8);
    memcpy(b, &nk, 4);
    memcpy(b + 4, &nx, 4);
    for (size_t i = 0; 8 + 4 * i + 4 <= n; i++) {
        float v = (float)i * 0.25f - 1.0f;
        memcpy(b + 8 + 4 * i, &v, 4);
    }
    put("fuzz_parboil", name, b, n);
    free(b);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: make_seeds CORPUS_DIR SCRATCH_DIR\n");
        return 2;
    }
    root = argv[1];
    const char *tmp = argv[2];
    mkdir(root, 0755);
    lm_error err;
    char p[1024];
    size_t n;

    /* ---- cfl ---- */
    lm_cfloat c12[12];
    for (int i = 0; i < 12; i++)
        c12[i] = (float)i - 0.5f * (float)i * I;
    cfl_seed("valid_4x3", "# Dimensions\n4 3 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n", c12, sizeof c12);
    float traj[3 * 4 * 2 * 2];
    for (int i = 0; i < 48; i++)
        traj[i] = (i & 1) ? 0.0f : (float)(i / 2 % 9) - 4.0f;
    cfl_seed("valid_traj_3x4x2", "# Dimensions\n3 4 2 1 1 1 1 1 1 1 1 1 1 1 1 1\n", traj, sizeof traj);
    cfl_seed("valid_kdata_1x4x2x1x2",
             "# Command\nbart phantom -k\n# Files\n>x\n# Dimensions\n1 4 2 1 2 1 1 1 1 1 1 1 1 1 1 1\n", traj,
             sizeof traj);
    cfl_seed("valid_volume_2x2x3", "# Dimensions\r\n2 2 3\r\n", c12, sizeof c12);
    cfl_seed("short_data", "# Dimensions\n4 3\n", c12, sizeof c12 - 8);
    cfl_seed("long_data", "# Dimensions\n2 3\n", c12, sizeof c12);
    cfl_seed("huge_dims", "# Dimensions\n99999999999 99999999999 99999999999\n", c12, 16);
    cfl_seed("overflow_dims", "# Dimensions\n4294967296 4294967296 4294967296 4294967296\n", c12, 16);
    cfl_seed("zero_dim", "# Dimensions\n4 0 3\n", c12, 0);
    cfl_seed("negative_dim", "# Dimensions\n-4 3\n", c12, sizeof c12);
    cfl_seed("17_dims", "# Dimensions\n1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 2\n", c12, 16);
    cfl_seed("no_dimensions_line", "# Command\nfoo\n", c12, sizeof c12);
    cfl_seed("garbage_size", "# Dimensions\n4 x3\n", c12, sizeof c12);
    cfl_seed("empty_hdr", "", c12, sizeof c12);
    lm_cfloat nanc[4] = {1, 2, 3, 4};
    ((float *)nanc)[3] = __builtin_nanf("");
    cfl_seed("nan", "# Dimensions\n4\n", nanc, sizeof nanc);

    /* ---- parboil ---- */
    parboil_seed("valid_q_3x2", 3, 2, 0, 0);
    parboil_seed("valid_fhd_3x2", 3, 2, 1, 0);
    parboil_seed("truncated", 3, 2, 0, 30);
    parboil_seed("negative_numk", -3, 2, 0, 0);
    parboil_seed("huge_numk", 0x7fffffff, 0x7fffffff, 0, 64);
    parboil_seed("short_header", 3, 2, 0, 6);
    {
        unsigned char out[4 + 8 * 3];
        uint32_t nx = 3;
        memcpy(out, &nx, 4);
        for (int i = 0; i < 6; i++) {
            float v = (float)i;
            memcpy(out + 4 + 4 * i, &v, 4);
        }
        put("fuzz_parboil", "output_3", out, sizeof out);
        nx = 0xffffffffu;
        memcpy(out, &nx, 4);
        put("fuzz_parboil", "output_huge", out, sizeof out);
    }

    /* ---- NIfTI ---- */
    int64_t dims[3] = {4, 3, 2};
    double vox[3] = {1.5, 1.5, 3};
    lm_volume *v = lm_volume_new(dims, vox, &err);
    for (int64_t i = 0; i < 24; i++)
        v->data[i] = (float)i + 0.25f * (float)i * I;
    const char *nii[][2] = {{"mag.nii", "0"}, {"cplx.nii", "1"}, {"mag.nii.gz", "0"}};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", tmp, nii[i][0]);
        if (lm_nifti_write(p, v, nii[i][1][0] == '1', &err) != LM_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        unsigned char *b = slurp(p, &n);
        char name[64];
        snprintf(name, sizeof name, "valid_%s", nii[i][0]);
        put("fuzz_nifti", name, b, n);
        if (i == 0) {
            put("fuzz_nifti", "truncated_header", b, 200);
            put("fuzz_nifti", "truncated_data", b, n - 20);
            unsigned char *c = malloc(n);
            memcpy(c, b, n);
            int16_t big[8] = {7, 32767, 32767, 32767, 32767, 32767, 32767, 32767};
            memcpy(c + 40, big, sizeof big); /* dim[] */
            put("fuzz_nifti", "huge_dims", c, n);
            memcpy(c, b, n);
            float off = 1e9f;
            memcpy(c + 108, &off, 4); /* vox_offset */
            put("fuzz_nifti", "bad_vox_offset", c, n);
            memcpy(c, b, n);
            int16_t dt = 1; /* DT_BINARY */
            memcpy(c + 70, &dt, 2);
            put("fuzz_nifti", "binary_datatype", c, n);
            memcpy(c, b, n);
            float nan = __builtin_nanf("");
            memcpy(c + 352, &nan, 4);
            put("fuzz_nifti", "nan_voxel", c, n);
            free(c);
        }
        free(b);
    }
    lm_volume_free(v);
    put("fuzz_nifti", "not_nifti", "hello\n", 6);

    /* ---- ISMRMRD ---- */
#if LM_HAVE_ISMRMRD
    lm_geom g;
    lm_geom_init(&g, 8, 8, 1, 100);
    lm_traj *t = lm_traj_new(24, 2, &err);
    lm_kdata *k = lm_kdata_new(24, 2, &err);
    for (int64_t i = 0; i < 24; i++) {
        t->k[3 * i] = (float)(i % 8) - 4.0f;
        t->k[3 * i + 1] = (float)(i / 8) - 1.0f;
        k->d[i] = (float)i;
        k->d[24 + i] = (float)i * I;
    }
    t->readout = 8;
    snprintf(p, sizeof p, "%s/larmor.h5", tmp);
    if (lm_mrd_write(p, &g, t, k, &err) != LM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    unsigned char *b = slurp(p, &n);
    put("fuzz_mrd", "valid_larmor.h5", b, n);
    put("fuzz_mrd", "truncated.h5", b, n / 2);
    free(b);
    lm_traj_free(t);
    lm_kdata_free(k);
    put("fuzz_mrd", "not_hdf5.h5", "\x89HDF\r\n\x1a\n", 8);

    /* The XML header of the file above, and a Cartesian one. */
    lm_mrd_header h;
    (void)h;
    const char *xml_cart =
        "<?xml version=\"1.0\"?>\n<ismrmrdHeader xmlns=\"http://www.ismrm.org/ISMRMRD\">"
        "<experimentalConditions><H1resonanceFrequency_Hz>63500000</H1resonanceFrequency_Hz></experimentalConditions>"
        "<encoding><encodedSpace><matrixSize><x>64</x><y>32</y><z>1</z></matrixSize>"
        "<fieldOfView_mm><x>600</x><y>300</y><z>6</z></fieldOfView_mm></encodedSpace>"
        "<reconSpace><matrixSize><x>32</x><y>32</y><z>1</z></matrixSize>"
        "<fieldOfView_mm><x>300</x><y>300</y><z>6</z></fieldOfView_mm></reconSpace>"
        "<encodingLimits><kspace_encoding_step_1><minimum>0</minimum><maximum>31</maximum><center>16</center>"
        "</kspace_encoding_step_1></encodingLimits><trajectory>cartesian</trajectory></encoding></ismrmrdHeader>\n";
    put("fuzz_mrd_xml", "cartesian.xml", xml_cart, strlen(xml_cart));
    const char *xml_larmor =
        "<ismrmrdHeader><encoding><encodedSpace><matrixSize><x>8</x><y>8</y><z>1</z></matrixSize>"
        "<fieldOfView_mm><x>100</x><y>100</y><z>100</z></fieldOfView_mm></encodedSpace>"
        "<trajectory>other</trajectory><trajectoryDescription><identifier>larmor</identifier>"
        "<userParameterLong><name>k_units_cycles_per_fov</name><value>1</value></userParameterLong>"
        "<userParameterLong><name>readout</name><value>8</value></userParameterLong>"
        "<comment>x</comment></trajectoryDescription></encoding></ismrmrdHeader>";
    put("fuzz_mrd_xml", "larmor.xml", xml_larmor, strlen(xml_larmor));
    const char *xml_ns = "<?xml version='1.0'?><!-- c --><m:ismrmrdHeader xmlns:m='u' a='>'><m:encoding>"
                         "<m:encodedSpace><m:matrixSize><m:x>4</m:x><m:y>4</m:y><m:z>4</m:z></m:matrixSize>"
                         "<m:fieldOfView_mm><m:x>1e2</m:x><m:y>1</m:y><m:z>1</m:z></m:fieldOfView_mm>"
                         "</m:encodedSpace><![CDATA[<x>]]></m:encoding></m:ismrmrdHeader>";
    put("fuzz_mrd_xml", "namespaced.xml", xml_ns, strlen(xml_ns));
    put("fuzz_mrd_xml", "truncated.xml", xml_cart, 300);

    /* fuzz_mrd_struct: opt, nacq, then per acquisition 12 bytes + values. */
    unsigned char s[1 + 1 + 2 * (12 + 4 * 96)];
    memset(s, 0, sizeof s);
    size_t q = 0;
    s[q++] = 0x40;   /* preset 16x16x1 radial, info too */
    s[q++] = 2;      /* two acquisitions */
    for (int a = 0; a < 2; a++) {
        s[q++] = 1;      /* tdim 2 */
        s[q++] = 16;     /* samples */
        s[q++] = 2;      /* channels */
        s[q++] = 0;      /* discard pre */
        s[q++] = 0;      /* discard post */
        s[q++] = 8;      /* centre */
        s[q++] = 0;      /* flags */
        s[q++] = (unsigned char)a;
        s[q++] = 0;
        s[q++] = 3;      /* traj length exact */
        s[q++] = 3;      /* data length exact */
        q++;             /* (padding: value bytes follow) */
        for (int j = 0; j < 96; j++, q += 4)
            s[q + 3] = (unsigned char)(j * 37 % 200); /* low byte < 0xf0: small numbers */
    }
    put("fuzz_mrd_struct", "two_radial", s, q);
    s[0] = 0x80 | 0x08; /* cartesian 8x8x4 */
    s[2] = 0;           /* tdim 0 */
    put("fuzz_mrd_struct", "cartesian3d", s, q);
    s[0] = 0x01;        /* fixed-length XML */
    s[2] = 1;
    s[3 + 6] = 1;       /* noise flag on the first */
    put("fuzz_mrd_struct", "noise_fixedxml", s, q);
#endif
    return 0;
}
