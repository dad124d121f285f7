/* IMPATIENT MRI data directories (lm_io_impatient.h). The format as
 * IMPATIENT's own reader (kernels/structures.cpp: readDataFile for 0.2,
 * readDataFile_10 for 1.0) and its MATLAB writer (datawrite.m) define it. */
#include "lm_io_impatient.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lm_io.h"
#include "lm_io_fieldmap.h"

#define IMP_LINE_MAX 4096

/* One file: its floats and what its header says. */
typedef struct imp_array {
    float *v;
    int64_t n;         /* floats */
    int64_t coils;     /* coil_number (1 when absent) */
    int64_t slices;    /* slice_number (1 when absent) */
    int64_t dims[3];   /* x/y/zDimension (0 when absent: binary form) */
    int text;
    double version;
} imp_array;

static void imp_array_free(imp_array *a)
{
    free(a->v);
    memset(a, 0, sizeof *a);
}

static int parse_int(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\r')
        end++;
    if (end == s || *end || errno || v < 0 || v > ((int64_t)1 << 40))
        return 0;
    *out = v;
    return 1;
}

/* The next line of buf from *pos (without '\n', trimmed); 0 at the end. */
static int next_line(const unsigned char *buf, size_t len, size_t *pos, char line[IMP_LINE_MAX])
{
    if (*pos >= len)
        return 0;
    size_t e = *pos;
    while (e < len && buf[e] != '\n' && e - *pos < IMP_LINE_MAX - 1)
        e++;
    size_t a = *pos, b = e;
    *pos = e < len && buf[e] == '\n' ? e + 1 : e;
    while (a < b && (buf[a] == ' ' || buf[a] == '\t'))
        a++;
    while (b > a && (buf[b - 1] == ' ' || buf[b - 1] == '\t' || buf[b - 1] == '\r'))
        b--;
    memcpy(line, buf + a, b - a);
    line[b - a] = 0;
    return 1;
}

static lm_code parse_text(const char *path, const unsigned char *buf, size_t len, imp_array *a, lm_error *err)
{
    char line[IMP_LINE_MAX];
    size_t pos = 0;
    int64_t file_size = -1, filled = 0;
    a->text = 1;
    a->coils = a->slices = 1;
    while (next_line(buf, len, &pos, line)) {
        if (!line[0] || (line[0] == '/' && line[1] == '/'))
            continue;
        if (!strncmp(line, "EOF", 3))
            break;
        char *eq = strchr(line, '=');
        if (!eq)
            return lm_fail(err, LM_ERR_FORMAT, "%s: header line '%.60s' is not 'key = value'", path, line);
        char *k = line, *v = eq + 1;
        char *ke = eq;
        while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t'))
            ke--;
        *ke = 0;
        while (*v == ' ' || *v == '\t')
            v++;
        if (!strcmp(k, "version")) {
            char *end;
            a->version = strtod(v, &end);
            if (end == v)
                return lm_fail(err, LM_ERR_FORMAT, "%s: version '%.40s' is not a number", path, v);
            continue;
        }
        static const char *const keys[] = {"xDimension", "yDimension", "zDimension", "coil_number",
                                           "slice_number", "file_size", "Binary_Size"};
        int which = -1;
        for (int i = 0; i < 7; i++)
            if (!strcmp(k, keys[i]))
                which = i;
        if (which < 0)
            continue; /* IMPATIENT ignores other keys too */
        int64_t val;
        if (!parse_int(v, &val))
            return lm_fail(err, LM_ERR_FORMAT, "%s: %s '%.40s' is not a count", path, k, v);
        if (which < 3) {
            a->dims[which] = val;
        } else if (which == 3) {
            a->coils = val;
        } else if (which == 4) {
            a->slices = val;
        } else if (which == 5) {
            if (file_size >= 0)
                return lm_fail(err, LM_ERR_FORMAT, "%s: file_size given twice", path);
            file_size = val;
            if (!(a->v = lm_alloc((size_t)(val ? val : 1), sizeof(float), err, path)))
                return LM_ERR_NOMEM;
        } else {
            if (file_size < 0)
                return lm_fail(err, LM_ERR_FORMAT, "%s: Binary_Size before file_size", path);
            if (val > file_size - filled)
                return lm_fail(err, LM_ERR_FORMAT, "%s: binary sections hold more than file_size %lld floats",
                               path, (long long)file_size);
            /* comments and blank lines may come before "Binary:" */
            int found = 0;
            while (next_line(buf, len, &pos, line)) {
                if (!line[0] || (line[0] == '/' && line[1] == '/'))
                    continue;
                found = !strcmp(line, "Binary:");
                break;
            }
            if (!found)
                return lm_fail(err, LM_ERR_FORMAT, "%s: Binary_Size = %lld is not followed by 'Binary:'", path,
                               (long long)val);
            if ((size_t)val * 4 > len - pos)
                return lm_fail(err, LM_ERR_FORMAT, "%s: section of %lld floats needs %lld bytes, the file has %zu "
                               "left (truncated)", path, (long long)val, (long long)val * 4, len - pos);
            memcpy(a->v + filled, buf + pos, (size_t)val * 4);
            pos += (size_t)val * 4;
            filled += val;
        }
    }
    if (file_size < 0)
        return lm_fail(err, LM_ERR_FORMAT, "%s: no file_size in the header (not an IMPATIENT file?)", path);
    if (filled != file_size)
        return lm_fail(err, LM_ERR_FORMAT, "%s: binary sections hold %lld floats but file_size is %lld (truncated?)",
                       path, (long long)filled, (long long)file_size);
    a->n = file_size;
    return LM_OK;
}

static lm_code parse_binary(const char *path, const unsigned char *buf, size_t len, imp_array *a, lm_error *err)
{
    if (len < 20)
        return lm_fail(err, LM_ERR_FORMAT, "%s: file holds %zu bytes, too few for its 20-byte header", path, len);
    int32_t h[4];
    memcpy(h, buf + 4, sizeof h);
    a->version = 0.2;
    a->coils = h[1];
    a->slices = h[2];
    if (h[0] < 0 || h[1] < 1 || h[2] < 1 || h[3] < 1)
        return lm_fail(err, LM_ERR_FORMAT, "%s: header sizes %d, coils %d, slices %d, total %d are not all positive",
                       path, h[0], h[1], h[2], h[3]);
    size_t need = 20 + (size_t)h[3] * 4;
    if (len != need)
        return lm_fail(err, LM_ERR_FORMAT, "%s: file holds %zu bytes but its header's %d floats need %zu (%s)", path,
                       len, h[3], need, len < need ? "truncated" : "too long");
    if (!(a->v = lm_alloc((size_t)h[3], sizeof(float), err, path)))
        return LM_ERR_NOMEM;
    memcpy(a->v, buf + 20, (size_t)h[3] * 4);
    a->n = h[3];
    return LM_OK;
}

/* Reads dir/name.dat; *missing set when it does not exist (optional files). */
static lm_code read_array(const char *dir, const char *name, imp_array *a, char *path, size_t pathsz, int *missing,
                          lm_error *err)
{
    memset(a, 0, sizeof *a);
    *missing = 0;
    snprintf(path, pathsz, "%s/%s.dat", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        *missing = errno == ENOENT;
        return lm_fail(err, LM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return lm_fail(err, LM_ERR_IO, "%s: not a regular file", path);
    }
    size_t len = (size_t)st.st_size;
    unsigned char *buf = lm_alloc(len ? len : 1, 1, err, path);
    if (!buf) {
        fclose(f);
        return LM_ERR_NOMEM;
    }
    size_t got = fread(buf, 1, len, f);
    fclose(f);
    lm_code rc;
    if (got != len) {
        rc = lm_fail(err, LM_ERR_IO, "%s: read %zu of %zu bytes", path, got, len);
    } else if (len == 0) {
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: empty file", path);
    } else {
        float v0 = 0;
        if (len >= 4)
            memcpy(&v0, buf, 4);
        if (v0 == 0.2f)
            rc = parse_binary(path, buf, len, a, err);
        else if (len >= 7 && !memcmp(buf, "version", 7))
            rc = parse_text(path, buf, len, a, err);
        else
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: neither a text header ('version = ...') nor a binary one (0.2): "
                         "not an IMPATIENT file", path);
    }
    free(buf);
    if (rc == LM_OK && a->slices != 1)
        rc = lm_fail(err, LM_ERR_UNSUPPORTED, "%s: slice_number %lld: multi-slice IMPATIENT data are not supported",
                     path, (long long)a->slices);
    if (rc == LM_OK)
        rc = lm_check_finite(path, a->v, (size_t)a->n, err);
    if (rc != LM_OK)
        imp_array_free(a);
    return rc;
}

int lm_is_impatient_dir(const char *path)
{
    struct stat st;
    if (!path || stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    char p[4096];
    snprintf(p, sizeof p, "%s/kx.dat", path);
    return stat(p, &st) == 0;
}

void lm_impatient_clear(lm_impatient *m)
{
    lm_traj_free(m->traj);
    lm_kdata_free(m->kdata);
    lm_sens_free(m->sens);
    free(m->fieldmap);
    memset(m, 0, sizeof *m);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Distinct values along one coordinate (positions step by 1/n): the binary
 * form stores no matrix. */
static int64_t distinct(const float *v, int64_t n, lm_error *err, const char *path)
{
    float *s = lm_alloc((size_t)n, sizeof *s, err, path);
    if (!s)
        return -1;
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_float);
    int64_t c = 1;
    for (int64_t i = 1; i < n; i++)
        if (s[i] - s[i - 1] > 1e-5f)
            c++;
    free(s);
    return c;
}

/* Maps IMPATIENT's voxel order onto Larmor's (x fastest) through the
 * positions ix/iy/iz (FOV fractions): perm[file index] = Larmor index.
 * Each axis must be a regular grid of step 1/n, every voxel there once; the
 * lowest position is index 0, and its offset from Larmor's (i - n/2)/n is
 * the axis's shift in voxels (IMPATIENT's MATLAB writer uses (i - n/2 - 1)/n
 * with 1-based i: the same for even n, half a voxel off for odd n). */
static lm_code map_grid(const char *dir, const float *const pos[3], const int64_t n[3], int64_t N, int64_t *perm,
                        double shift[3], lm_error *err)
{
    static const char *const names[3] = {"ix", "iy", "iz"};
    for (int a = 0; a < 3; a++) {
        double lo = INFINITY;
        for (int64_t v = 0; v < N; v++)
            lo = fmin(lo, (double)pos[a][v]);
        shift[a] = n[a] == 1 ? lo : lo * (double)n[a] + (double)(n[a] / 2);
    }
    unsigned char *seen = lm_calloc((size_t)N, 1, err, "voxel map");
    if (!seen)
        return LM_ERR_NOMEM;
    lm_code rc = LM_OK;
    for (int64_t v = 0; v < N && rc == LM_OK; v++) {
        int64_t idx[3] = {0, 0, 0};
        for (int a = 0; a < 3; a++) {
            const double p = (double)pos[a][v];
            const double q = n[a] == 1 ? p - shift[a] : p * (double)n[a] + (double)(n[a] / 2) - shift[a];
            idx[a] = (int64_t)llround(q);
            if (fabs(q - (double)idx[a]) > 1e-3 || idx[a] < 0 || idx[a] >= n[a]) {
                rc = lm_fail(err, LM_ERR_FORMAT, "%s/%s.dat: voxel positions are not a regular grid of %lld "
                             "(voxel %lld at %g)", dir, names[a], (long long)n[a], (long long)v, p);
                break;
            }
        }
        if (rc != LM_OK)
            break;
        int64_t li = (idx[2] * n[1] + idx[1]) * n[0] + idx[0];
        if (seen[li]) {
            rc = lm_fail(err, LM_ERR_FORMAT, "%s/ix.dat, iy.dat, iz.dat: voxel (%lld, %lld, %lld) appears twice", dir,
                         (long long)idx[0], (long long)idx[1], (long long)idx[2]);
            break;
        }
        seen[li] = 1;
        perm[v] = li;
    }
    free(seen);
    return rc;
}

enum { A_KX, A_KY, A_KZ, A_KR, A_KI, A_IX, A_IY, A_IZ, A_SR, A_SI, A_FM, A_T, A_MASK, A_COUNT };
static const char *const arr_names[A_COUNT] = {"kx", "ky", "kz", "kdata_r", "kdata_i", "ix", "iy", "iz",
                                               "sensi_r", "sensi_i", "fm", "t", "mask"};

lm_code lm_impatient_read(const char *dir, lm_impatient *out, lm_error *err)
{
    memset(out, 0, sizeof *out);
    out->mask_voxels = -1;
    imp_array a[A_COUNT];
    memset(a, 0, sizeof a);
    int have[A_COUNT] = {0};
    char path[4096];
    char paths[A_COUNT][4096];
    int64_t *perm = NULL;
    lm_code rc = LM_OK;
    for (int i = 0; i < A_COUNT && rc == LM_OK; i++) {
        lm_error e = {0};
        int missing = 0;
        rc = read_array(dir, arr_names[i], &a[i], path, sizeof path, &missing, &e);
        snprintf(paths[i], sizeof paths[i], "%s", path);
        if (rc != LM_OK && missing && i >= A_SR) {
            rc = LM_OK;
            continue;
        }
        if (rc != LM_OK) {
            if (err)
                *err = e;
            break;
        }
        have[i] = 1;
    }
    if (rc != LM_OK)
        goto done;
    if (have[A_SR] != have[A_SI]) {
        rc = lm_fail(err, LM_ERR_IO, "%s: missing (%s is there)", have[A_SR] ? paths[A_SI] : paths[A_SR],
                     have[A_SR] ? "sensi_r.dat" : "sensi_i.dat");
        goto done;
    }
    out->text_form = a[A_KX].text;
    out->version = a[A_KX].version;
    for (int i = 1; i < A_COUNT; i++)
        if (have[i] && a[i].text != a[A_KX].text) {
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: %s header but kx.dat has a %s one", paths[i],
                         a[i].text ? "a text" : "a binary", a[A_KX].text ? "text" : "binary");
            goto done;
        }

    /* Samples and coils. */
    const int64_t M = a[A_KX].n;
    for (int i = A_KY; i <= A_KZ; i++)
        if (a[i].n != M) {
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: holds %lld values but kx.dat %lld", paths[i], (long long)a[i].n,
                         (long long)M);
            goto done;
        }
    if (have[A_T] && a[A_T].n != M) {
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: holds %lld sample times but kx.dat %lld samples", paths[A_T],
                     (long long)a[A_T].n, (long long)M);
        goto done;
    }
    const int64_t P = a[A_KR].coils;
    if (a[A_KI].coils != P || a[A_KR].n != M * P || a[A_KI].n != M * P) {
        int bad = a[A_KR].n != M * P ? A_KR : A_KI;
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: holds %lld values for %lld coils but kx.dat has %lld samples "
                     "(%lld needed)", paths[bad], (long long)a[bad].n, (long long)a[bad].coils, (long long)M,
                     (long long)(M * a[bad].coils));
        goto done;
    }

    /* The image grid. */
    const int64_t N = a[A_IX].n;
    for (int i = A_IY; i <= A_IZ; i++)
        if (a[i].n != N) {
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: holds %lld positions but ix.dat %lld", paths[i], (long long)a[i].n,
                         (long long)N);
            goto done;
        }
    int64_t n[3];
    if (a[A_IX].text && a[A_IX].dims[0] > 0 && a[A_IX].dims[1] > 0 && a[A_IX].dims[2] > 0) {
        memcpy(n, a[A_IX].dims, sizeof n);
        if (n[0] * n[1] * n[2] != N) {
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: holds %lld positions but its header's matrix %lldx%lldx%lld has "
                         "%lld voxels", paths[A_IX], (long long)N, (long long)n[0], (long long)n[1], (long long)n[2],
                         (long long)(n[0] * n[1] * n[2]));
            goto done;
        }
    } else {
        for (int ax = 0; ax < 3; ax++)
            if ((n[ax] = distinct(a[A_IX + ax].v, N, err, paths[A_IX + ax])) < 0) {
                rc = LM_ERR_NOMEM;
                goto done;
            }
        if (n[0] * n[1] * n[2] != N) {
            rc = lm_fail(err, LM_ERR_FORMAT, "%s/ix.dat, iy.dat, iz.dat: %lld x %lld x %lld distinct positions do "
                         "not make the %lld voxels", dir, (long long)n[0], (long long)n[1], (long long)n[2],
                         (long long)N);
            goto done;
        }
    }
    for (int i = 0; i < A_COUNT; i++)
        if (have[i] && a[i].text && a[i].dims[0] && (a[i].dims[0] != n[0] || a[i].dims[1] != n[1] ||
                                                     a[i].dims[2] != n[2])) {
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: matrix %lldx%lldx%lld but ix.dat's is %lldx%lldx%lld", paths[i],
                         (long long)a[i].dims[0], (long long)a[i].dims[1], (long long)a[i].dims[2], (long long)n[0],
                         (long long)n[1], (long long)n[2]);
            goto done;
        }
    if (!(perm = lm_alloc((size_t)N, sizeof *perm, err, "voxel map"))) {
        rc = LM_ERR_NOMEM;
        goto done;
    }
    const float *pos[3] = {a[A_IX].v, a[A_IY].v, a[A_IZ].v};
    rc = map_grid(dir, pos, n, N, perm, out->shift_vox, err);
    if (rc != LM_OK)
        goto done;
    lm_geom_init(&out->geom, n[0], n[1], n[2], 0);
    out->geom.basis = LM_BASIS_DIRAC;

    /* Trajectory: IMPATIENT's unitless k (k * FOV) is cycles/FOV. */
    if (n[2] == 1)
        for (int64_t j = 0; j < M; j++)
            if (a[A_KZ].v[j] != 0) {
                rc = lm_fail(err, LM_ERR_FORMAT, "%s: kz = %g at sample %lld but the matrix has z = 1", paths[A_KZ],
                             (double)a[A_KZ].v[j], (long long)j);
                goto done;
            }
    if (!(out->traj = lm_traj_new(M, n[2] > 1 ? 3 : 2, err))) {
        rc = err ? err->code : LM_ERR_NOMEM;
        goto done;
    }
    for (int64_t j = 0; j < M; j++)
        for (int ax = 0; ax < 3; ax++)
            out->traj->k[3 * j + ax] = a[A_KX + ax].v[j];
    if (have[A_T]) {
        /* Readouts start where the times restart. IMPATIENT takes any list
         * of samples, so their lengths may differ (interleaves of several
         * lengths, samples removed); a common length is kept only for
         * display and cfl shapes: the reconstruction needs none. */
        int64_t start = 0, common = -1;
        out->readout_min = M;
        for (int64_t j = 1; j <= M; j++)
            if (j == M || a[A_T].v[j] < a[A_T].v[j - 1]) {
                const int64_t len = j - start;
                out->readouts++;
                out->readout_min = len < out->readout_min ? len : out->readout_min;
                out->readout_max = len > out->readout_max ? len : out->readout_max;
                if (common < 0)
                    common = len;
                else if (common > 0 && (j < M ? len != common : len > common))
                    common = 0; /* every readout but the last the same length */
                start = j;
            }
        out->traj->readout = common > 0 ? common : 0;
        /* Each readout ends where the times drop, so none decreases within
         * one: finiteness and range are what is left to check (readouts of
         * one sample). */
        rc = lm_check_times(a[A_T].v, M, 1, paths[A_T], err);
        if (rc != LM_OK)
            goto done;
        out->traj->t = a[A_T].v;
        a[A_T].v = NULL;
    }

    /* k-space: Larmor's F carries 1/N, and a grid offset delta (FOV
     * fractions) is exp(-i 2 pi k.delta) on IMPATIENT's data. */
    if (!(out->kdata = lm_kdata_new(M, P, err))) {
        rc = err ? err->code : LM_ERR_NOMEM;
        goto done;
    }
    double delta[3];
    for (int ax = 0; ax < 3; ax++)
        delta[ax] = n[ax] == 1 ? out->shift_vox[ax] : out->shift_vox[ax] / (double)n[ax];
    const int shifted = delta[0] != 0 || delta[1] != 0 || delta[2] != 0;
    for (int64_t j = 0; j < M; j++) {
        lm_cfloat ph = 1.0f / (float)N;
        if (shifted) {
            const float *k = out->traj->k + 3 * j;
            double arg = 2 * M_PI * (k[0] * delta[0] + k[1] * delta[1] + k[2] * delta[2]);
            ph = (float)(cos(arg) / (double)N) + I * (float)(sin(arg) / (double)N);
        }
        for (int64_t c = 0; c < P; c++) {
            size_t s = (size_t)(c * M + j);
            out->kdata->d[s] = (a[A_KR].v[s] + I * a[A_KI].v[s]) * ph;
        }
    }

    /* Coil maps: one coil needs none (IMPATIENT sets them to 1). */
    if (have[A_SR] && P > 1) {
        for (int i = A_SR; i <= A_SI; i++)
            if (a[i].n != N * P) {
                rc = lm_fail(err, LM_ERR_FORMAT, "%s: holds %lld values but %lld coils x %lld voxels need %lld",
                             paths[i], (long long)a[i].n, (long long)P, (long long)N, (long long)(N * P));
                goto done;
            }
        if (!(out->sens = lm_sens_new(n, P, err))) {
            rc = err ? err->code : LM_ERR_NOMEM;
            goto done;
        }
        for (int64_t c = 0; c < P; c++)
            for (int64_t v = 0; v < N; v++) {
                size_t s = (size_t)(c * N + v);
                out->sens->s[(size_t)(c * N + perm[v])] = a[A_SR].v[s] + I * a[A_SI].v[s];
            }
    }

    /* Field map: rad/s in IMPATIENT's model exp(-i (2 pi k.x + fm t)). */
    if (have[A_FM]) {
        if (a[A_FM].n != N) {
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: holds %lld values but the matrix has %lld voxels", paths[A_FM],
                         (long long)a[A_FM].n, (long long)N);
            goto done;
        }
        int zero = 1;
        for (int64_t v = 0; v < N; v++)
            zero &= a[A_FM].v[v] == 0;
        out->fieldmap_zero = zero;
        if (!zero) {
            if (!have[A_T]) {
                rc = lm_fail(err, LM_ERR_FORMAT, "%s: a field map needs the sample times of t.dat, which is missing",
                             paths[A_FM]);
                goto done;
            }
            if (!(out->fieldmap = lm_alloc((size_t)N, sizeof(float), err, "field map"))) {
                rc = LM_ERR_NOMEM;
                goto done;
            }
            for (int64_t v = 0; v < N; v++)
                out->fieldmap[perm[v]] = (float)((double)a[A_FM].v[v] / (2 * M_PI));
        }
    }
    if (have[A_MASK]) {
        if (a[A_MASK].n != N) {
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: holds %lld values but the matrix has %lld voxels", paths[A_MASK],
                         (long long)a[A_MASK].n, (long long)N);
            goto done;
        }
        out->mask_voxels = 0;
        for (int64_t v = 0; v < N; v++)
            out->mask_voxels += a[A_MASK].v[v] != 0;
    }
done:
    for (int i = 0; i < A_COUNT; i++)
        imp_array_free(&a[i]);
    free(perm);
    if (rc != LM_OK)
        lm_impatient_clear(out);
    return rc;
}

lm_code lm_impatient_info(const char *dir, char **text, lm_error *err)
{
    lm_impatient m;
    lm_code rc = lm_impatient_read(dir, &m, err);
    if (rc != LM_OK)
        return rc;
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    if (!o) {
        lm_impatient_clear(&m);
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory for the summary", dir);
    }
    const lm_geom *g = &m.geom;
    fprintf(o, "%s: IMPATIENT data directory (%s headers, version %g)\n", dir,
            m.text_form ? "text" : "binary", m.version);
    fprintf(o, "  matrix: %lldx%lldx%lld (no field of view stored; recon --fov sets it)\n", (long long)g->n[0],
            (long long)g->n[1], (long long)g->n[2]);
    double kmax[3];
    lm_traj_extent(m.traj, kmax);
    fprintf(o, "  trajectory: %lld samples, %dD", (long long)m.traj->m, m.traj->ndim);
    if (m.traj->readout > 0)
        fprintf(o, ", readout %lld (%lld readouts)", (long long)m.traj->readout, (long long)m.readouts);
    else if (m.readouts > 0)
        fprintf(o, ", %lld readouts of %lld to %lld samples", (long long)m.readouts, (long long)m.readout_min,
                (long long)m.readout_max);
    fprintf(o, "\n  kmax: %g %g %g cycles/FOV (|k| per axis)\n", kmax[0], kmax[1], kmax[2]);
    fprintf(o, "  coils: %lld%s\n", (long long)m.kdata->ncoils,
            m.sens ? " with coil maps (sensi_r/i)" : m.kdata->ncoils > 1 ? " (no coil maps)" : "");
    double lo, hi;
    if (m.traj->t) {
        lm_float_range(m.traj->t, m.traj->m, &lo, &hi);
        fprintf(o, "  sample times: [%g, %g] s\n", lo, hi);
    } else {
        fprintf(o, "  sample times: none (no t.dat)\n");
    }
    if (m.fieldmap) {
        lm_float_range(m.fieldmap, lm_geom_voxels(g), &lo, &hi);
        fprintf(o, "  field map: [%g, %g] Hz (fm.dat [%g, %g] rad/s)\n", lo, hi, lo * 2 * M_PI, hi * 2 * M_PI);
    } else {
        fprintf(o, "  field map: %s\n", m.fieldmap_zero ? "zero everywhere (no off-resonance)" : "none (no fm.dat)");
    }
    if (m.shift_vox[0] != 0 || m.shift_vox[1] != 0 || m.shift_vox[2] != 0)
        fprintf(o, "  voxel grid offset from Larmor's: %g %g %g voxels (applied to the data as a phase)\n",
                m.shift_vox[0], m.shift_vox[1], m.shift_vox[2]);
    if (m.mask_voxels >= 0)
        fprintf(o, "  mask: %lld of %lld voxels (not applied)\n", (long long)m.mask_voxels,
                (long long)lm_geom_voxels(g));
    lm_impatient_clear(&m);
    if (fclose(o) != 0) {
        free(buf);
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory for the summary", dir);
    }
    *text = buf;
    return LM_OK;
}
