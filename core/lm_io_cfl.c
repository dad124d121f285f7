/* BART cfl/hdr: name.hdr is text ("# Dimensions" then up to 16 sizes),
 * name.cfl raw complex64, first dimension fastest (docs/conventions.md section 6).
 * Files are native (little-endian) byte order, as BART writes them. */
#include "lm_io.h"
#include "lm_frames.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lm_atomic.h"
#include "lm_config.h"
#include "lm_trace.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "cfl I/O assumes a little-endian host, as BART's files are little-endian"
#endif

/* A BART header is a few hundred bytes; anything far larger is not one. */
#define LM_HDR_MAX_BYTES ((size_t)1 << 20)

typedef struct cfl_names {
    char *hdr, *cfl;
} cfl_names;

static void cfl_names_free(cfl_names *n)
{
    free(n->hdr);
    free(n->cfl);
    n->hdr = n->cfl = NULL;
}

/* path may be x, x.cfl or x.hdr. */
static lm_code cfl_names_make(const char *path, cfl_names *n, lm_error *err)
{
    n->hdr = n->cfl = NULL;
    if (!path || !*path)
        return lm_fail(err, LM_ERR_INVALID, "empty cfl file name");
    size_t len = strlen(path);
    if (len >= 4 && (strcasecmp(path + len - 4, ".cfl") == 0 || strcasecmp(path + len - 4, ".hdr") == 0))
        len -= 4;
    n->hdr = malloc(len + 5);
    n->cfl = malloc(len + 5);
    if (!n->hdr || !n->cfl) {
        cfl_names_free(n);
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path);
    }
    memcpy(n->hdr, path, len);
    memcpy(n->hdr + len, ".hdr", 5);
    memcpy(n->cfl, path, len);
    memcpy(n->cfl + len, ".cfl", 5);
    return LM_OK;
}

/* "3 x 64 x 100" for messages. */
static const char *format_dims(int ndim, const int64_t *dims, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? " x %" PRId64 : "%" PRId64, dims[i]);
    return buf;
}

/* Number of elements, refusing overflow and absurd sizes. */
static lm_code count_elements(const char *what, int ndim, const int64_t *dims, size_t *count,
                              lm_error *err)
{
    char buf[400];
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] <= 0)
            return lm_fail(err, LM_ERR_FORMAT, "%s: dimension %d is %" PRId64 " (must be at least 1)",
                           what, i, dims[i]);
        if (!lm_size_mul(n, (size_t)dims[i], &n))
            return lm_fail(err, LM_ERR_FORMAT, "%s: dimensions %s overflow the element count", what,
                           format_dims(ndim, dims, buf, sizeof buf));
        if (n > LM_MAX_ELEMENTS)
            return lm_fail(err, LM_ERR_NOMEM,
                           "%s: dimensions %s make more than %zu elements, an absurd size", what,
                           format_dims(ndim, dims, buf, sizeof buf), (size_t)LM_MAX_ELEMENTS);
    }
    *count = n;
    return LM_OK;
}

/* Reads the "# Dimensions" section; other sections (# Command, # Files,
 * # Creator) are ignored, as BART does. */
static lm_code parse_hdr(const char *hdr_path, int *ndim, int64_t dims[LM_CFL_MAX_DIMS],
                         lm_error *err)
{
    FILE *f = fopen(hdr_path, "rb");
    if (!f)
        return lm_fail(err, LM_ERR_IO, "%s: cannot open: %s", hdr_path, strerror(errno));
    char *text = malloc(LM_HDR_MAX_BYTES + 1);
    if (!text) {
        fclose(f);
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", hdr_path);
    }
    size_t len = fread(text, 1, LM_HDR_MAX_BYTES + 1, f);
    int bad_read = ferror(f);
    fclose(f);
    if (bad_read) {
        free(text);
        return lm_fail(err, LM_ERR_IO, "%s: read failed", hdr_path);
    }
    if (len > LM_HDR_MAX_BYTES) {
        free(text);
        return lm_fail(err, LM_ERR_FORMAT, "%s: over 1 MiB, not a BART header", hdr_path);
    }
    text[len] = '\0';
    if (memchr(text, '\0', len)) {
        free(text);
        return lm_fail(err, LM_ERR_FORMAT, "%s: holds binary data, not a BART header", hdr_path);
    }

    /* Find the line "# Dimensions" (trailing blanks or CR tolerated). */
    char *sizes = NULL;
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        size_t l = strlen(line);
        while (l && (line[l - 1] == ' ' || line[l - 1] == '\t' || line[l - 1] == '\r'))
            line[--l] = '\0';
        if (strcmp(line, "# Dimensions") == 0) {
            sizes = next ? next : line + l;
            char *end = strchr(sizes, '\n');
            if (end)
                *end = '\0';
            break;
        }
        line = next;
    }
    if (!sizes) {
        free(text);
        return lm_fail(err, LM_ERR_FORMAT, "%s: has no '# Dimensions' line, not a BART header",
                       hdr_path);
    }

    int n = 0;
    char *p = sizes;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        if (!*p)
            break;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || (*end && *end != ' ' && *end != '\t' && *end != '\r')) {
            char tok[32];
            size_t tl = strcspn(p, " \t\r");
            snprintf(tok, sizeof tok, "%.*s", (int)(tl < 24 ? tl : 24), p);
            free(text);
            return lm_fail(err, LM_ERR_FORMAT, "%s: size '%s' after '# Dimensions' is not a number",
                           hdr_path, tok);
        }
        if (errno == ERANGE) {
            free(text);
            return lm_fail(err, LM_ERR_FORMAT, "%s: dimension %d is too large to be a size", hdr_path, n);
        }
        if (v <= 0) {
            free(text);
            return lm_fail(err, LM_ERR_FORMAT, "%s: dimension %d is %s (must be at least 1)", hdr_path,
                           n, v == 0 ? "0" : "negative");
        }
        if (n >= LM_CFL_MAX_DIMS) {
            if (v != 1) {
                free(text);
                return lm_fail(err, LM_ERR_FORMAT, "%s: has more than %d dimensions", hdr_path,
                               LM_CFL_MAX_DIMS);
            }
        } else {
            dims[n] = v;
        }
        n++;
        p = end;
    }
    free(text);
    if (n == 0)
        return lm_fail(err, LM_ERR_FORMAT, "%s: no sizes on the line after '# Dimensions'", hdr_path);
    if (n > LM_CFL_MAX_DIMS)
        n = LM_CFL_MAX_DIMS;
    while (n > 1 && dims[n - 1] == 1)
        n--;
    *ndim = n;
    return LM_OK;
}

lm_code lm_cfl_read_dims(const char *path, int *ndim, int64_t dims[LM_CFL_MAX_DIMS], lm_error *err)
{
    cfl_names nm;
    lm_code rc = cfl_names_make(path, &nm, err);
    if (rc)
        return rc;
    for (int i = 0; i < LM_CFL_MAX_DIMS; i++)
        dims[i] = 1;
    rc = parse_hdr(nm.hdr, ndim, dims, err);
    cfl_names_free(&nm);
    return rc;
}

int lm_cfl_is_base(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    const char *dot = strrchr(name, '.');
    return !dot || dot == name;
}

lm_code lm_cfl_read(const char *path, int *ndim, int64_t dims[LM_CFL_MAX_DIMS], lm_cfloat **data,
                    lm_error *err)
{
    cfl_names nm;
    lm_code rc = cfl_names_make(path, &nm, err);
    if (rc)
        return rc;
    struct stat st;
    int have_cfl = stat(nm.cfl, &st) == 0;
    int cfl_errno = errno;
    FILE *f = NULL;
    lm_cfloat *buf = NULL;

    int nd = 0;
    int64_t d[LM_CFL_MAX_DIMS];
    int have_hdr = access(nm.hdr, F_OK) == 0;
    if (!have_hdr && !have_cfl) {
        /* neither half: name the file as asked for (x.cfl for a base name) */
        size_t len = strlen(path);
        int named = len >= 4 && (strcasecmp(path + len - 4, ".cfl") == 0 ||
                                 strcasecmp(path + len - 4, ".hdr") == 0);
        rc = lm_fail(err, LM_ERR_IO, "%s: cannot open: %s", named ? path : nm.cfl, strerror(cfl_errno));
        goto out;
    }
    if (!have_hdr) {
        rc = lm_fail(err, LM_ERR_IO, "%s: header missing (%s needs it for its dimensions)", nm.hdr,
                     nm.cfl);
        goto out;
    }
    rc = parse_hdr(nm.hdr, &nd, d, err);
    if (rc)
        goto out;
    size_t count = 0;
    rc = count_elements(nm.hdr, nd, d, &count, err);
    if (rc)
        goto out;
    if (!have_cfl) {
        rc = lm_fail(err, LM_ERR_IO, "%s: cannot open: %s", nm.cfl, strerror(cfl_errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = lm_fail(err, LM_ERR_IO, "%s: not a regular file", nm.cfl);
        goto out;
    }
    size_t need = count * sizeof(lm_cfloat); /* count <= 2^36: no overflow */
    if ((uint64_t)st.st_size != need) {
        char buf_dims[400];
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: file holds %lld bytes but %s's dimensions %s need %zu (%s)",
                     nm.cfl, (long long)st.st_size, nm.hdr,
                     format_dims(nd, d, buf_dims, sizeof buf_dims), need,
                     (uint64_t)st.st_size < need ? "truncated" : "too long");
        goto out;
    }
    buf = lm_alloc(count, sizeof(lm_cfloat), err, nm.cfl);
    if (!buf) {
        rc = err ? err->code : LM_ERR_NOMEM;
        goto out;
    }
    f = fopen(nm.cfl, "rb");
    if (!f) {
        rc = lm_fail(err, LM_ERR_IO, "%s: cannot open: %s", nm.cfl, strerror(errno));
        goto out;
    }
    if (fread(buf, sizeof(lm_cfloat), count, f) != count) {
        rc = lm_fail(err, LM_ERR_IO, "%s: read failed (file shrank or unreadable)", nm.cfl);
        goto out;
    }
    lm_trace("cfl: data read");
    rc = lm_check_finite_complex(nm.cfl, buf, count, err);
    if (rc)
        goto out;

    *ndim = nd;
    memcpy(dims, d, (size_t)nd * sizeof d[0]);
    *data = buf;
    buf = NULL;
out:
    if (f)
        fclose(f);
    free(buf);
    cfl_names_free(&nm);
    return rc;
}

lm_code lm_cfl_write(const char *path, int ndim, const int64_t *dims, const lm_cfloat *data,
                     lm_error *err)
{
    if (ndim < 1 || ndim > LM_CFL_MAX_DIMS)
        return lm_fail(err, LM_ERR_INVALID, "%s: %d dimensions (a cfl holds 1 to %d)", path, ndim,
                       LM_CFL_MAX_DIMS);
    size_t count = 0;
    lm_code rc = count_elements(path, ndim, dims, &count, err);
    if (rc)
        return rc;
    cfl_names nm;
    rc = cfl_names_make(path, &nm, err);
    if (rc)
        return rc;

    lm_atomic ac = {0}, ah = {0};
    rc = lm_atomic_begin(&ac, nm.cfl, 1, err);
    if (rc)
        goto out;
    rc = lm_atomic_begin(&ah, nm.hdr, 1, err);
    if (rc)
        goto out;
    if (fwrite(data, sizeof(lm_cfloat), count, ac.f) != count) {
        rc = lm_fail(err, LM_ERR_IO, "%s: cannot write: %s", nm.cfl, strerror(errno));
        goto out;
    }
    /* As BART 0.8 writes it: all 16 sizes, each followed by a blank. */
    fputs("# Dimensions\n", ah.f);
    for (int i = 0; i < LM_CFL_MAX_DIMS; i++)
        fprintf(ah.f, "%" PRId64 " ", i < ndim ? dims[i] : (int64_t)1);
    fputs("\n# Creator\nLarmor " LM_VERSION "\n", ah.f);

    /* Data first: if the header's rename then failed, a reader would see
     * the old header disagree with the new size and say so. */
    rc = lm_atomic_commit(&ac, err);
    if (rc)
        goto out;
    rc = lm_atomic_commit(&ah, err);
out:
    lm_atomic_abort(&ac);
    lm_atomic_abort(&ah);
    cfl_names_free(&nm);
    return rc;
}

static int64_t product(int from, int ndim, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = from; i < ndim; i++)
        n *= dims[i];
    return n;
}

lm_code lm_cfl_read_traj(const char *path, lm_traj **out, lm_error *err)
{
    int nd;
    int64_t d[LM_CFL_MAX_DIMS];
    lm_cfloat *data;
    lm_code rc = lm_cfl_read(path, &nd, d, &data, err);
    if (rc)
        return rc;
    if (d[0] != 3) {
        char buf[400];
        free(data);
        return lm_fail(err, LM_ERR_FORMAT,
                       "%s: a trajectory is 3 x readout x spokes (kx ky kz first), this file is %s",
                       path, format_dims(nd, d, buf, sizeof buf));
    }
    int64_t m = product(1, nd, d);
    lm_traj *t = lm_traj_new(m, 3, err);
    if (!t) {
        free(data);
        return err ? err->code : LM_ERR_NOMEM;
    }
    int any_kz = 0;
    for (int64_t i = 0; i < 3 * m; i++) {
        t->k[i] = crealf(data[i]);
        if (i % 3 == 2 && t->k[i] != 0.0f)
            any_kz = 1;
    }
    free(data);
    t->ndim = any_kz ? 3 : 2;
    t->readout = nd >= 2 ? d[1] : 1;
    *out = t;
    return LM_OK;
}

lm_code lm_cfl_write_traj(const char *path, const lm_traj *t, lm_error *err)
{
    if (!t || t->m <= 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: empty trajectory", path);
    int64_t dims[3] = {3, t->m, 1};
    int nd = 2;
    if (t->readout > 0 && t->m % t->readout == 0) {
        dims[1] = t->readout;
        dims[2] = t->m / t->readout;
        nd = 3;
    }
    lm_cfloat *c = lm_alloc((size_t)t->m, 3 * sizeof(lm_cfloat), err, path);
    if (!c)
        return err ? err->code : LM_ERR_NOMEM;
    for (int64_t i = 0; i < 3 * t->m; i++)
        c[i] = t->k[i]; /* imaginary part 0, as BART's trajectories */
    lm_code rc = lm_cfl_write(path, nd, dims, c, err);
    free(c);
    return rc;
}

lm_code lm_cfl_read_kdata(const char *path, lm_kdata **out, lm_error *err)
{
    int nd;
    int64_t d[LM_CFL_MAX_DIMS];
    lm_cfloat *data;
    lm_code rc = lm_cfl_read(path, &nd, d, &data, err);
    if (rc)
        return rc;
    int64_t ncoils = nd > 3 ? d[3] : 1;
    int64_t inner = product(0, nd < 3 ? nd : 3, d); /* dims 0-2: one readout block */
    int64_t outer = nd > 4 ? product(4, nd, d) : 1;  /* dims 4+: more samples */
    int64_t m = inner * outer;
    int64_t one = 1;
    lm_kdata *k = lm_kdata_new(one, one, err);
    if (!k) {
        free(data);
        return err ? err->code : LM_ERR_NOMEM;
    }
    if (outer > 1 && ncoils > 1) {
        /* BART order is (sample, coil, rest); Larmor wants (sample, rest) per coil. */
        lm_cfloat *p = lm_alloc((size_t)m, (size_t)ncoils * sizeof(lm_cfloat), err, path);
        if (!p) {
            free(data);
            lm_kdata_free(k);
            return err ? err->code : LM_ERR_NOMEM;
        }
        for (int64_t r = 0; r < outer; r++)
            for (int64_t c = 0; c < ncoils; c++)
                memcpy(p + (r * inner + c * m), data + inner * (c + ncoils * r),
                       (size_t)inner * sizeof(lm_cfloat));
        free(data);
        data = p;
    }
    free(k->d);
    k->d = data;
    k->m = m;
    k->ncoils = ncoils;
    *out = k;
    return LM_OK;
}

lm_code lm_cfl_write_kdata(const char *path, const lm_kdata *k, int64_t readout, lm_error *err)
{
    if (!k || k->m <= 0 || k->ncoils <= 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: empty k-space data", path);
    int64_t dims[4] = {1, k->m, 1, k->ncoils};
    if (readout > 0 && k->m % readout == 0) {
        dims[1] = readout;
        dims[2] = k->m / readout;
    }
    return lm_cfl_write(path, 4, dims, k->d, err);
}

lm_code lm_cfl_read_volume(const char *path, lm_volume **out, lm_error *err)
{
    int nd;
    int64_t d[LM_CFL_MAX_DIMS];
    lm_cfloat *data;
    lm_code rc = lm_cfl_read(path, &nd, d, &data, err);
    if (rc)
        return rc;
    if (nd > 3) {
        char buf[400];
        free(data);
        return lm_fail(err, LM_ERR_FORMAT, "%s: an image has at most 3 dimensions, this file is %s",
                       path, format_dims(nd, d, buf, sizeof buf));
    }
    /* Take the buffer over instead of copying it into a zeroed volume. */
    const int64_t one[3] = {1, 1, 1};
    lm_volume *v = lm_volume_new(one, NULL, err);
    if (!v) {
        free(data);
        return err ? err->code : LM_ERR_NOMEM;
    }
    free(v->data);
    v->data = data;
    for (int a = 0; a < 3; a++)
        v->dims[a] = a < nd ? d[a] : 1;
    lm_volume_set_centered_affine(v);
    v->no_geometry = 1;
    *out = v;
    return LM_OK;
}

lm_code lm_cfl_write_volume(const char *path, const lm_volume *v, lm_error *err)
{
    if (!v || !v->data)
        return lm_fail(err, LM_ERR_INVALID, "%s: empty volume", path);
    return lm_cfl_write(path, 3, v->dims, v->data, err);
}

/* ---- dynamic data: frames in BART's dimension 10 ---- */

/* readout x spokes per frame: m / frames samples split by readout. */
static lm_code frame_shape(const char *path, int64_t m, int64_t readout, int64_t frames, int64_t *r, int64_t *s,
                           lm_error *err)
{
    if (frames < 1 || m % frames)
        return lm_fail(err, LM_ERR_INVALID, "%s: %lld samples do not split into %lld equal frames", path,
                       (long long)m, (long long)frames);
    const int64_t per = m / frames;
    *r = readout > 0 && per % readout == 0 ? readout : per;
    *s = per / *r;
    return LM_OK;
}

lm_code lm_cfl_write_traj_frames(const char *path, const lm_traj *t, int64_t frames, lm_error *err)
{
    if (!t || t->m <= 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: empty trajectory", path);
    int64_t dims[LM_CFL_TIME_DIM + 1], r = 0, s = 0;
    lm_code rc = frame_shape(path, t->m, t->readout, frames, &r, &s, err);
    if (rc != LM_OK)
        return rc;
    for (int i = 0; i <= LM_CFL_TIME_DIM; i++)
        dims[i] = 1;
    dims[0] = 3;
    dims[1] = r;
    dims[2] = s;
    dims[LM_CFL_TIME_DIM] = frames;
    lm_cfloat *c = lm_alloc((size_t)t->m, 3 * sizeof(lm_cfloat), err, path);
    if (!c)
        return err ? err->code : LM_ERR_NOMEM;
    for (int64_t i = 0; i < 3 * t->m; i++)
        c[i] = t->k[i];
    rc = lm_cfl_write(path, LM_CFL_TIME_DIM + 1, dims, c, err);
    free(c);
    return rc;
}

lm_code lm_cfl_write_kdata_frames(const char *path, const lm_kdata *k, int64_t readout, int64_t frames,
                                  lm_error *err)
{
    if (!k || k->m <= 0 || k->ncoils <= 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: empty k-space data", path);
    int64_t dims[LM_CFL_TIME_DIM + 1], r = 0, s = 0;
    lm_code rc = frame_shape(path, k->m, readout, frames, &r, &s, err);
    if (rc != LM_OK)
        return rc;
    for (int i = 0; i <= LM_CFL_TIME_DIM; i++)
        dims[i] = 1;
    dims[1] = r;
    dims[2] = s;
    dims[3] = k->ncoils;
    dims[LM_CFL_TIME_DIM] = frames;
    /* BART order (sample, coil, frame); Larmor's per coil (sample, frame) */
    const int64_t per = k->m / frames;
    lm_cfloat *p = lm_alloc((size_t)k->m, (size_t)k->ncoils * sizeof(lm_cfloat), err, path);
    if (!p)
        return err ? err->code : LM_ERR_NOMEM;
    for (int64_t f = 0; f < frames; f++)
        for (int64_t c = 0; c < k->ncoils; c++)
            memcpy(p + per * (c + k->ncoils * f), k->d + c * k->m + f * per, (size_t)per * sizeof(lm_cfloat));
    rc = lm_cfl_write(path, LM_CFL_TIME_DIM + 1, dims, p, err);
    free(p);
    return rc;
}

lm_code lm_cfl_write_image_frames(const char *path, const int64_t n[3], int64_t frames, const lm_cfloat *data,
                                  lm_error *err)
{
    if (!data || frames < 1)
        return lm_fail(err, LM_ERR_INVALID, "%s: empty image", path);
    int64_t dims[LM_CFL_TIME_DIM + 1];
    for (int i = 0; i <= LM_CFL_TIME_DIM; i++)
        dims[i] = 1;
    dims[0] = n[0];
    dims[1] = n[1];
    dims[2] = n[2];
    dims[LM_CFL_TIME_DIM] = frames;
    return lm_cfl_write(path, LM_CFL_TIME_DIM + 1, dims, data, err);
}
