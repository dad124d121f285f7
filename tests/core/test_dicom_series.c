/* The DICOM series logic on tag records (choosing, sorting, geometry and
 * every refusal), and Larmor's writer read back by its reader: the affine
 * within 1e-6 mm, voxels within the rescale quantisation (1e-4 of max),
 * magnitude, phase and the enhanced multi-frame file; a non-empty output
 * folder refused with nothing left behind. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lm_dicom.h"
#include "lm_io.h"
#include "lm_test.h"

/* An oblique stack of n slices, 3 mm apart along the normal, in order. */
static void stack(lm_dicom_rec *r, int n, const char *uid)
{
    const double a = 0.4, b = -0.7;
    const double row[3] = {cos(b), sin(b), 0}, col[3] = {-sin(b) * cos(a), cos(b) * cos(a), sin(a)};
    const double nrm[3] = {row[1] * col[2] - row[2] * col[1], row[2] * col[0] - row[0] * col[2],
                           row[0] * col[1] - row[1] * col[0]};
    static char names[64][16];
    for (int k = 0; k < n; k++) {
        memset(&r[k], 0, sizeof r[k]);
        snprintf(names[k % 64], sizeof names[0], "f%02d", k);
        r[k].file = names[k % 64];
        snprintf(r[k].series_uid, sizeof r[k].series_uid, "%s", uid);
        r[k].frame = -1;
        r[k].rows = 20;
        r[k].cols = 24;
        r[k].has_ipp = r[k].has_iop = r[k].has_spacing = 1;
        for (int x = 0; x < 3; x++) {
            r[k].ipp[x] = 10.0 * (x + 1) + 3.0 * k * nrm[x];
            r[k].iop[x] = row[x];
            r[k].iop[3 + x] = col[x];
        }
        r[k].spacing[0] = 0.9;
        r[k].spacing[1] = 1.2;
        r[k].thickness = 3;
    }
}

static lm_code geometry(lm_dicom_rec *r, int n, int *idx, double aff[4][4], double vox[3], lm_error *err)
{
    for (int k = 0; k < n; k++)
        idx[k] = k;
    return lm_dicom_series_geometry(r, idx, n, "test", aff, vox, err);
}

static void test_records(void)
{
    lm_dicom_rec r[16], s[16];
    int idx[16];
    double aff[4][4], vox[3];
    lm_error err = {0};
    stack(r, 9, "1.2.3");
    /* Shuffled: sorted back along the normal; affine from the first and last. */
    const int perm[9] = {4, 0, 8, 2, 6, 1, 7, 3, 5};
    for (int k = 0; k < 9; k++)
        s[k] = r[perm[k]];
    CHECK(geometry(s, 9, idx, aff, vox, &err) == LM_OK);
    for (int k = 0; k < 9; k++)
        CHECK(s[idx[k]].ipp[0] == r[k].ipp[0]);
    CHECK_NEAR(vox[0], 1.2, 1e-12);
    CHECK_NEAR(vox[1], 0.9, 1e-12);
    CHECK_NEAR(vox[2], 3.0, 1e-9);
    for (int x = 0; x < 3; x++) {
        const double f = x < 2 ? -1 : 1;
        CHECK_NEAR(aff[x][0], f * r[0].iop[x] * 1.2, 1e-12);
        CHECK_NEAR(aff[x][1], f * r[0].iop[3 + x] * 0.9, 1e-12);
        CHECK_NEAR(aff[x][2], f * (r[8].ipp[x] - r[0].ipp[x]) / 8, 1e-9);
        CHECK_NEAR(aff[x][3], f * r[0].ipp[x], 1e-12);
    }
    CHECK(aff[3][3] == 1 && aff[3][0] == 0);

    /* One slice: the normal times the thickness. */
    CHECK(geometry(r, 1, idx, aff, vox, &err) == LM_OK);
    CHECK_NEAR(vox[2], 3.0, 1e-12);

    /* A missing slice names the gap. */
    stack(r, 9, "1.2.3");
    for (int k = 4; k < 8; k++)
        r[k] = r[k + 1];
    CHECK(geometry(r, 8, idx, aff, vox, &err) == LM_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, "uneven slice spacing: 6 mm between f03 and f05"), "%s", err.msg);
    /* Two slices at one position. */
    stack(r, 5, "1.2.3");
    r[3] = r[2];
    CHECK(geometry(r, 5, idx, aff, vox, &err) == LM_ERR_FORMAT && strstr(err.msg, "same position"));
    /* Mixed orientations name both files. */
    stack(r, 5, "1.2.3");
    r[2].iop[0] += 0.01;
    CHECK(geometry(r, 5, idx, aff, vox, &err) == LM_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, "mixed orientations: f02"), "%s", err.msg);
    /* An in-plane jump off the line of positions. */
    stack(r, 5, "1.2.3");
    for (int x = 0; x < 3; x++)
        r[2].ipp[x] += 2.0 * r[2].iop[x];
    CHECK(geometry(r, 5, idx, aff, vox, &err) == LM_ERR_FORMAT && strstr(err.msg, "f02 is 2 mm off the line"));
    /* Missing tags, bad numbers, another matrix, a non-orthogonal orientation. */
    stack(r, 3, "1.2.3");
    r[1].has_ipp = 0;
    CHECK(geometry(r, 3, idx, aff, vox, &err) == LM_ERR_FORMAT && strstr(err.msg, "f01 has no ImagePositionPatient"));
    stack(r, 3, "1.2.3");
    r[2].spacing[1] = NAN;
    CHECK(geometry(r, 3, idx, aff, vox, &err) == LM_ERR_FORMAT && strstr(err.msg, "f02"));
    stack(r, 3, "1.2.3");
    r[1].rows = 21;
    CHECK(geometry(r, 3, idx, aff, vox, &err) == LM_ERR_FORMAT && strstr(err.msg, "f01 is 24x21"));
    stack(r, 3, "1.2.3");
    for (int k = 0; k < 3; k++)
        r[k].iop[3] = r[k].iop[0], r[k].iop[4] = r[k].iop[1], r[k].iop[5] = r[k].iop[2];
    CHECK(geometry(r, 3, idx, aff, vox, &err) == LM_ERR_FORMAT && strstr(err.msg, "right angles"));

    /* Choosing: two series listed; a UID picks one; an unknown UID refused. */
    stack(r, 4, "1.2.3");
    stack(r + 4, 3, "1.2.4");
    int *pick = NULL, count = 0;
    CHECK(lm_dicom_series_choose(r, 7, NULL, "dir", &pick, &count, &err) == LM_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, "dir: 2 series in one folder (1.2.3, 1.2.4); choose one with --series UID"), "%s",
              err.msg);
    CHECK(!pick);
    CHECK(lm_dicom_series_choose(r, 7, "1.2.4", "dir", &pick, &count, &err) == LM_OK && count == 3 && pick &&
          pick[0] == 4 && pick[2] == 6);
    free(pick);
    CHECK(lm_dicom_series_choose(r, 7, "9.9", "dir", &pick, &count, &err) == LM_ERR_INVALID &&
          strstr(err.msg, "no series 9.9 here"));
    CHECK(lm_dicom_series_choose(r, 4, NULL, "dir", &pick, &count, &err) == LM_OK && count == 4);
    free(pick);
    CHECK(lm_dicom_series_choose(r, 0, NULL, "dir", &pick, &count, &err) == LM_ERR_FORMAT);
}

/* A volume with an oblique, left-handed affine and signed complex values. */
static lm_volume *oblique_volume(void)
{
    const int64_t dims[3] = {24, 20, 7};
    const double vox[3] = {1.25, 0.75, 2.5};
    lm_volume *v = lm_volume_new(dims, vox, NULL);
    const double a = 0.3, b = 0.5;
    const double rot[3][3] = {{cos(b), -sin(b) * cos(a), sin(b) * sin(a)},
                              {sin(b), cos(b) * cos(a), -cos(b) * sin(a)},
                              {0, sin(a), cos(a)}};
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++)
            v->affine[r][c] = rot[r][c] * vox[c] * (c == 2 ? -1 : 1);
        v->affine[r][3] = 5.5 * (r + 1) - 20;
    }
    for (int64_t n = 0; n < lm_volume_count(v); n++)
        v->data[n] = (float)(100 * sin(0.05 * (double)n)) + I * (float)(60 * cos(0.031 * (double)n) - 20);
    return v;
}

static double value_of(lm_cfloat z, lm_dicom_part p)
{
    return p == LM_DICOM_PHASE ? cargf(z) : p == LM_DICOM_REAL ? crealf(z) : p == LM_DICOM_IMAG ? cimagf(z) : cabsf(z);
}

static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_round_trip(const char *tmp)
{
    lm_volume *v = oblique_volume();
    const lm_dicom_part parts[4] = {LM_DICOM_MAGNITUDE, LM_DICOM_PHASE, LM_DICOM_REAL, LM_DICOM_IMAG};
    for (int enh = 0; enh < 2; enh++)
        for (int p = 0; p < 4; p++) {
            char dir[512];
            snprintf(dir, sizeof dir, "%s/s%d%d", tmp, enh, p);
            lm_error err = {0};
            lm_dicom_write_opts o;
            lm_dicom_write_opts_init(&o);
            o.part = parts[p];
            o.enhanced = enh;
            o.series_description = "test";
            CHECK_MSG(lm_dicom_write_series(dir, v, &o, &err) == LM_OK, "%s", err.msg);
            CHECK(o.files == (enh ? 1 : 7) && entries(dir) == o.files);
            CHECK(strstr(o.note, "anonymous patient, new study"));
            lm_volume *w = NULL;
            CHECK_MSG(lm_load_volume(dir, &w, &err) == LM_OK, "%s", err.msg);
            if (!w)
                continue;
            CHECK(w->dims[0] == 24 && w->dims[1] == 20 && w->dims[2] == 7);
            /* The reader sorts along the normal: this affine's k runs against it. */
            const int flip = w->affine[0][2] * v->affine[0][2] + w->affine[1][2] * v->affine[1][2] +
                                 w->affine[2][2] * v->affine[2][2] < 0;
            CHECK(flip);
            for (int r = 0; r < 3; r++) {
                CHECK_NEAR(w->affine[r][0], v->affine[r][0], 1e-6);
                CHECK_NEAR(w->affine[r][1], v->affine[r][1], 1e-6);
                CHECK_NEAR(w->affine[r][2], -v->affine[r][2], 1e-6);
                CHECK_NEAR(w->affine[r][3], v->affine[r][3] + 6 * v->affine[r][2], 1e-6);
            }
            double mx = 0, e = 0;
            for (int64_t n = 0; n < lm_volume_count(v); n++)
                mx = fmax(mx, fabs(value_of(v->data[n], parts[p])));
            for (int64_t k = 0; k < 7; k++)
                for (int64_t i = 0; i < 24 * 20; i++) {
                    double a = value_of(v->data[k * 480 + i], parts[p]), b = crealf(w->data[(6 - k) * 480 + i]);
                    e = fmax(e, fabs(a - b));
                }
            CHECK_MSG(e <= 1e-4 * mx, "part %d enhanced %d: error %g of max %g", p, enh, e, mx);
            lm_volume_free(w);
        }
    /* A folder that exists and is not empty is refused; nothing is written. */
    char dir[512];
    snprintf(dir, sizeof dir, "%s/s00", tmp);
    lm_error err = {0};
    lm_dicom_write_opts o;
    lm_dicom_write_opts_init(&o);
    CHECK(lm_dicom_write_series(dir, v, &o, &err) == LM_ERR_INVALID && strstr(err.msg, "not empty"));
    CHECK(entries(dir) == 7);
    /* An existing empty folder is filled; provenance gives patient and study. */
    snprintf(dir, sizeof dir, "%s/empty", tmp);
    mkdir(dir, 0700);
    lm_mrd_provenance prov = {0};
    strcpy(prov.patient_id, "P-42");
    strcpy(prov.study_instance_uid, "1.2.826.0.1.3680043.10.543.99");
    o.prov = &prov;
    CHECK_MSG(lm_dicom_write_series(dir, v, &o, &err) == LM_OK, "%s", err.msg);
    CHECK(o.note[0] == '\0');
    /* Only the finished folders: no temporary sibling left. */
    CHECK(entries(tmp) == 9);
    /* The template: its study joined, the series number after its own. */
    snprintf(dir, sizeof dir, "%s/like", tmp);
    lm_dicom_write_opts_init(&o);
    char like[512];
    snprintf(like, sizeof like, "%s/empty", tmp);
    o.like_dir = like;
    CHECK_MSG(lm_dicom_write_series(dir, v, &o, &err) == LM_OK, "%s", err.msg);
    CHECK(o.note[0] == '\0');
    /* A sheared in-plane affine has no DICOM plane: refused, nothing written. */
    v->affine[0][1] += 0.3;
    snprintf(dir, sizeof dir, "%s/shear", tmp);
    CHECK(lm_dicom_write_series(dir, v, &o, &err) == LM_ERR_INVALID && strstr(err.msg, "right angles"));
    CHECK(access(dir, F_OK) != 0);
    CHECK(entries(tmp) == 10);
    lm_volume_free(v);
}

/* A set: two images as two series in sub-folders of one new folder, read
 * back each with its values; nothing left beside it; bad names, two of one
 * name and a non-empty folder refused with one line, nothing written. */
static void test_set(const char *tmp)
{
    lm_volume *a = oblique_volume(), *b = oblique_volume();
    for (int64_t n = 0; n < lm_volume_count(b); n++)
        b->data[n] *= 2.5f;
    for (int r = 0; r < 3; r++) /* k along the normal: read back in the same order */
        a->affine[r][2] = b->affine[r][2] = -a->affine[r][2];
    lm_dicom_set_item items[2];
    memset(items, 0, sizeof items);
    items[0] = (lm_dicom_set_item){.v = a, .name = "run1-cg", .series_description = "Larmor run 1"};
    items[1] = (lm_dicom_set_item){.v = b, .name = "run2-cg", .series_description = "Larmor run 2",
                                   .window = {100, 50}};
    char parent[512], sub[600];
    snprintf(parent, sizeof parent, "%s/set", tmp);
    lm_dicom_write_opts o;
    lm_dicom_write_opts_init(&o);
    lm_error err = {0};
    const int before = entries(tmp);
    CHECK_MSG(lm_dicom_write_set(parent, items, 2, &o, &err) == LM_OK, "%s", err.msg);
    CHECK(entries(parent) == 2 && entries(tmp) == before + 1); /* no temporary folder left */
    CHECK(o.files == 2 * 7 && strcmp(items[0].series_uid, items[1].series_uid) != 0);
    for (int i = 0; i < 2; i++) {
        snprintf(sub, sizeof sub, "%s/%s", parent, items[i].name);
        lm_volume *r = NULL;
        CHECK_MSG(lm_dicom_read(sub, NULL, &r, &err) == LM_OK, "%s", err.msg);
        double mx = 0, e = 0;
        for (int64_t n = 0; r && n < lm_volume_count(r); n++) {
            mx = fmax(mx, cabsf(items[i].v->data[n]));
            e = fmax(e, fabs(cabsf(items[i].v->data[n]) - crealf(r->data[n])));
        }
        CHECK_MSG(r && e <= 1e-4 * mx, "series %d: error %g of max %g", i, e, mx);
        lm_volume_free(r);
    }
    snprintf(sub, sizeof sub, "%s/set2", tmp);
    items[1].name = "run1-cg";
    CHECK(lm_dicom_write_set(sub, items, 2, &o, &err) == LM_ERR_INVALID && strstr(err.msg, "two series named"));
    items[1].name = "../escape";
    CHECK(lm_dicom_write_set(sub, items, 2, &o, &err) == LM_ERR_INVALID && strstr(err.msg, "not a folder name"));
    items[1].name = "run2-cg";
    CHECK(lm_dicom_write_set(parent, items, 2, &o, &err) == LM_ERR_INVALID && strstr(err.msg, "not empty"));
    CHECK(entries(tmp) == before + 1);
    lm_volume_free(a);
    lm_volume_free(b);
}

int main(void)
{
    test_records();
    char tmp[] = "/tmp/lm-dicom-test-XXXXXX";
    if (!mkdtemp(tmp))
        return 1;
    test_round_trip(tmp);
    test_set(tmp);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", tmp);
    if (lm_test_failures)
        fprintf(stderr, "%d failures\n", lm_test_failures);
    return lm_test_failures ? 1 : 0;
}
