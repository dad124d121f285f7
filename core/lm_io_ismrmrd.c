/* ISMRMRD (MRD) HDF5 input and output. See docs/ismrmrd.md for what Larmor
 * takes from a file and the units it assumes.
 *
 * Reading goes straight through HDF5 (read-only, every size checked) with
 * the MRD layout: libismrmrd 1.8's reader opens files read-write, creates
 * /dataset in any HDF5 file it is given, ignores a failed H5Dread and copies
 * trajectory and data by the sizes the header claims, not the sizes stored
 * (a heap over-read on a malformed file). Writing goes through libismrmrd,
 * into a temporary file that is renamed over the destination when complete.
 *
 * The XML header parser below is self-contained (no libxml2): a tag scanner
 * that tracks the element path and picks out the few leaves Larmor needs.
 * It is compiled even without libismrmrd so it can be tested and fuzzed. */
#include "lm_config.h"

#include "lm_io_ismrmrd.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#if LM_HAVE_ISMRMRD
#include <hdf5.h>
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/version.h>
#include <pthread.h>

#include "lm_atomic.h"
#endif

/* ------------------------------------------------------------------------ */
/* Units                                                                     */
/* ------------------------------------------------------------------------ */

lm_code lm_mrd_units_parse(const char *s, lm_mrd_units *out, lm_error *err)
{
    if (!s || !*s || strcasecmp(s, "auto") == 0)
        *out = LM_MRD_UNITS_AUTO;
    else if (strcasecmp(s, "normalized") == 0 || strcasecmp(s, "normalised") == 0)
        *out = LM_MRD_UNITS_NORMALIZED;
    else if (strcasecmp(s, "cycles") == 0 || strcasecmp(s, "cycles/fov") == 0)
        *out = LM_MRD_UNITS_CYCLES;
    else
        return lm_fail(err, LM_ERR_INVALID,
                       "ISMRMRD trajectory units '%s' unknown (auto, normalized or cycles)", s);
    return LM_OK;
}

const char *lm_mrd_units_name(lm_mrd_units u)
{
    switch (u) {
    case LM_MRD_UNITS_AUTO: return "auto";
    case LM_MRD_UNITS_NORMALIZED: return "normalized";
    case LM_MRD_UNITS_CYCLES: return "cycles";
    }
    return "unknown";
}

void lm_mrd_clear(lm_mrd *m)
{
    if (!m)
        return;
    lm_traj_free(m->traj);
    lm_kdata_free(m->kdata);
    lm_kdata_free(m->noise);
    if (m->slices)
        for (int i = 0; i < m->nslices; i++) {
            lm_traj_free(m->slices[i].traj);
            lm_kdata_free(m->slices[i].kdata);
        }
    free(m->slices);
    memset(m, 0, sizeof *m);
}

void lm_mrd_opts_init(lm_mrd_opts *o)
{
    o->units = LM_MRD_UNITS_AUTO;
    o->repetition = -1;
    o->contrast = -1;
}

lm_code lm_mrd_units_env(const char *path, lm_mrd_units *u, lm_error *err)
{
    const char *env = getenv("LARMOR_MRD_TRAJ_UNITS");
    *u = LM_MRD_UNITS_AUTO;
    if (env && *env) {
        lm_code rc = lm_mrd_units_parse(env, u, err);
        if (rc != LM_OK)
            return lm_fail(err, rc, "%s: LARMOR_MRD_TRAJ_UNITS='%s' unknown (auto, normalized or cycles)",
                           path ? path : "", env);
    }
    return LM_OK;
}

/* ------------------------------------------------------------------------ */
/* Multi-slice geometry                                                      */
/* ------------------------------------------------------------------------ */

static double dot3(const double a[3], const double b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Unit vector of v into u; 0 if v is (nearly) zero or not finite. */
static int unit3(const double v[3], double u[3])
{
    double n = sqrt(dot3(v, v));
    if (!(n > 0.5) || !isfinite(n))
        return 0;
    for (int a = 0; a < 3; a++)
        u[a] = v[a] / n;
    return 1;
}

lm_code lm_mrd_slices_affine(const lm_mrd *m, double affine[4][4], double voxel_mm[3], lm_error *err)
{
    if (!m || !affine || !voxel_mm)
        return lm_fail(err, LM_ERR_INVALID, "ISMRMRD slices: nothing to place");
    const int ns = m->nslices;
    if (ns < 2 || !m->slices)
        return lm_fail(err, LM_ERR_INVALID, "ISMRMRD slices: %d slice%s: no slice spacing to measure", ns,
                       ns == 1 ? "" : "s");
    const lm_mrd_slice *s0 = &m->slices[0];
    double rd[3], pd[3], sd[3];
    if (!unit3(s0->read_dir, rd) || !unit3(s0->phase_dir, pd) || !unit3(s0->slice_dir, sd))
        return lm_fail(err, LM_ERR_FORMAT,
                       "ISMRMRD slices: slice %d has no read, phase or slice direction (zero in its acquisition "
                       "headers): cannot place the slices", s0->index);
    for (int i = 1; i < ns; i++) {
        const lm_mrd_slice *si = &m->slices[i];
        double r[3], p[3], q[3];
        if (!unit3(si->read_dir, r) || !unit3(si->phase_dir, p) || !unit3(si->slice_dir, q) ||
            dot3(r, rd) < 0.9999 || dot3(p, pd) < 0.9999 || dot3(q, sd) < 0.9999)
            return lm_fail(err, LM_ERR_FORMAT,
                           "ISMRMRD slices: slice %d is not oriented as slice %d (read, phase and slice "
                           "directions must agree to stack them)", si->index, s0->index);
    }
    /* Offsets along slice_dir from the first slice: ascending, distinct,
     * on one line, evenly spaced (each step within 1 % of the mean). */
    double d_prev = 0;
    for (int i = 1; i < ns; i++) {
        const lm_mrd_slice *a = &m->slices[i - 1], *b = &m->slices[i];
        double diff[3];
        for (int k = 0; k < 3; k++)
            diff[k] = b->position[k] - s0->position[k];
        double d = dot3(diff, sd), step = d - d_prev;
        if (fabs(step) < 1e-4)
            return lm_fail(err, LM_ERR_FORMAT,
                           "ISMRMRD slices: slices %d and %d are both at %.4g mm along the slice direction "
                           "(duplicated position)", a->index, b->index, d);
        if (step < 0)
            return lm_fail(err, LM_ERR_FORMAT,
                           "ISMRMRD slices: slice %d lies before slice %d along the slice direction (slices out "
                           "of order: stack them as lm_mrd_read_opts returns them)", b->index, a->index);
        double off = 0;
        for (int k = 0; k < 3; k++) {
            double e = diff[k] - d * sd[k];
            off += e * e;
        }
        if (sqrt(off) > 0.01 * step + 1e-3)
            return lm_fail(err, LM_ERR_FORMAT,
                           "ISMRMRD slices: slice %d is shifted %.4g mm in-plane from slice %d (centres must lie "
                           "on one line along the slice direction)", b->index, sqrt(off), s0->index);
        d_prev = d;
    }
    const double spacing = d_prev / (ns - 1); /* the mean */
    for (int i = 1; i < ns; i++) {
        const lm_mrd_slice *a = &m->slices[i - 1], *b = &m->slices[i];
        double diff[3];
        for (int k = 0; k < 3; k++)
            diff[k] = b->position[k] - a->position[k];
        double step = dot3(diff, sd);
        if (fabs(step - spacing) > 0.01 * spacing)
            return lm_fail(err, LM_ERR_FORMAT,
                           "ISMRMRD slices: uneven slice spacing: %.4g mm between slices %d and %d, %.4g mm on "
                           "average (more than 1 %% apart)", step, a->index, b->index, spacing);
    }
    const double vx = m->geom.fov_mm[0] / (double)m->geom.n[0], vy = m->geom.fov_mm[1] / (double)m->geom.n[1];
    if (!(vx > 0) || !(vy > 0) || !isfinite(vx) || !isfinite(vy))
        return lm_fail(err, LM_ERR_INVALID, "ISMRMRD slices: field of view %g x %g mm / matrix %lld x %lld is "
                       "not a voxel size", m->geom.fov_mm[0], m->geom.fov_mm[1], (long long)m->geom.n[0],
                       (long long)m->geom.n[1]);
    voxel_mm[0] = vx;
    voxel_mm[1] = vy;
    voxel_mm[2] = spacing;
    /* LPS (MRD) -> RAS (NIfTI): x and y negated. */
    static const double ras[3] = {-1, -1, 1};
    const double cx = (double)(m->geom.n[0] / 2), cy = (double)(m->geom.n[1] / 2);
    memset(affine, 0, 16 * sizeof affine[0][0]);
    for (int r = 0; r < 3; r++) {
        affine[r][0] = ras[r] * rd[r] * vx;
        affine[r][1] = ras[r] * pd[r] * vy;
        affine[r][2] = ras[r] * sd[r] * spacing;
        affine[r][3] = ras[r] * (s0->position[r] - cx * vx * rd[r] - cy * vy * pd[r]);
    }
    affine[3][3] = 1.0;
    return LM_OK;
}

/* ------------------------------------------------------------------------ */
/* XML header                                                                */
/* ------------------------------------------------------------------------ */

#define XML_MAX_DEPTH 64
#define XML_PATH_MAX 256

typedef struct xml_elem {
    const char *name; /* local name (namespace prefix dropped) */
    size_t len;
    const char *qname; /* as written, for matching the closing tag */
    size_t qlen;
    int had_child;
    size_t text_start;
} xml_elem;

typedef struct xml_ctx {
    const char *what;
    lm_error *err;
    lm_mrd_header *out;
    int enc_index;         /* index of the <encoding> being read */
    /* trajectoryDescription state */
    int in_desc;
    char desc_id[32];
    char upl_name[64];
    int upl_has_value;
    long long upl_value;
    int has_units_tag, units_tag;
    int has_readout_tag;
    long long readout_tag;
} xml_ctx;

static int is_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.' || c == ':' ||
           (unsigned char)c >= 0x80;
}

static const char *find_str(const char *s, size_t len, size_t from, const char *pat)
{
    size_t pl = strlen(pat);
    if (pl > len)
        return NULL;
    for (size_t i = from; i + pl <= len; i++)
        if (s[i] == pat[0] && memcmp(s + i, pat, pl) == 0)
            return s + i;
    return NULL;
}

static int starts_with(const char *s, size_t len, size_t at, const char *pat)
{
    size_t pl = strlen(pat);
    return at + pl <= len && memcmp(s + at, pat, pl) == 0;
}

/* Control characters from the file would break the one-line messages
 * (found by fuzz_mrd_xml: a value holding a newline). */
static void printable(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

/* Copies the trimmed text into buf, control characters replaced; 0 if it
 * does not fit. */
static int leaf_text(const char *s, size_t len, char *buf, size_t cap)
{
    while (len && isspace((unsigned char)*s)) {
        s++;
        len--;
    }
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    if (len >= cap)
        return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    printable(buf);
    return 1;
}

static lm_code leaf_int(xml_ctx *c, const char *path, const char *s, size_t len, long long lo,
                        long long hi, int64_t *out)
{
    char buf[64];
    if (!leaf_text(s, len, buf, sizeof buf))
        return lm_fail(c->err, LM_ERR_FORMAT, "%s: XML header: %s is too long", c->what, path);
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (!buf[0] || *end || errno)
        return lm_fail(c->err, LM_ERR_FORMAT, "%s: XML header: %s '%s' is not an integer", c->what,
                       path, buf);
    if (v < lo || v > hi)
        return lm_fail(c->err, LM_ERR_FORMAT, "%s: XML header: %s = %lld is out of range (%lld..%lld)",
                       c->what, path, v, lo, hi);
    *out = v;
    return LM_OK;
}

static lm_code leaf_double(xml_ctx *c, const char *path, const char *s, size_t len, double *out)
{
    char buf[64];
    if (!leaf_text(s, len, buf, sizeof buf))
        return lm_fail(c->err, LM_ERR_FORMAT, "%s: XML header: %s is too long", c->what, path);
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (!buf[0] || *end || !isfinite(v))
        return lm_fail(c->err, LM_ERR_FORMAT, "%s: XML header: %s '%s' is not a finite number",
                       c->what, path, buf);
    *out = v;
    return LM_OK;
}

static int axis_of(const char *leaf)
{
    if (strcmp(leaf, "x") == 0)
        return 0;
    if (strcmp(leaf, "y") == 0)
        return 1;
    if (strcmp(leaf, "z") == 0)
        return 2;
    return -1;
}

/* A leaf element closed: path is relative to the root ("encoding/..."). */
static lm_code xml_leaf(xml_ctx *c, const char *path, const char *text, size_t tlen)
{
    lm_mrd_header *h = c->out;
    const char *rest;
    if (strcmp(path, "acquisitionSystemInformation/receiverChannels") == 0)
        return leaf_int(c, path, text, tlen, 0, 65535, &h->receiver_channels);
    if (strncmp(path, "encoding/", 9) != 0 || c->enc_index != 0)
        return LM_OK;
    rest = path + 9;
    int a;
    if (strncmp(rest, "encodedSpace/matrixSize/", 24) == 0 && (a = axis_of(rest + 24)) >= 0)
        return leaf_int(c, path, text, tlen, 0, 65535, &h->matrix[a]);
    if (strncmp(rest, "encodedSpace/fieldOfView_mm/", 28) == 0 && (a = axis_of(rest + 28)) >= 0)
        return leaf_double(c, path, text, tlen, &h->fov_mm[a]);
    if (strncmp(rest, "reconSpace/matrixSize/", 22) == 0 && (a = axis_of(rest + 22)) >= 0)
        return leaf_int(c, path, text, tlen, 0, 65535, &h->recon_matrix[a]);
    if (strncmp(rest, "reconSpace/fieldOfView_mm/", 26) == 0 && (a = axis_of(rest + 26)) >= 0)
        return leaf_double(c, path, text, tlen, &h->recon_fov_mm[a]);
    if (strcmp(rest, "encodingLimits/kspace_encoding_step_1/center") == 0) {
        h->has_center[0] = 1;
        return leaf_int(c, path, text, tlen, 0, 65535, &h->center[0]);
    }
    if (strcmp(rest, "encodingLimits/kspace_encoding_step_2/center") == 0) {
        h->has_center[1] = 1;
        return leaf_int(c, path, text, tlen, 0, 65535, &h->center[1]);
    }
    if (strcmp(rest, "trajectory") == 0) {
        if (!leaf_text(text, tlen, h->trajectory, sizeof h->trajectory))
            return lm_fail(c->err, LM_ERR_FORMAT, "%s: XML header: %s is too long", c->what, path);
        return LM_OK;
    }
    if (strcmp(rest, "trajectoryDescription/identifier") == 0) {
        if (!leaf_text(text, tlen, c->desc_id, sizeof c->desc_id))
            c->desc_id[0] = '\0'; /* not ours: ignore */
        return LM_OK;
    }
    if (strcmp(rest, "trajectoryDescription/userParameterLong/name") == 0) {
        if (!leaf_text(text, tlen, c->upl_name, sizeof c->upl_name))
            c->upl_name[0] = '\0';
        return LM_OK;
    }
    if (strcmp(rest, "trajectoryDescription/userParameterLong/value") == 0) {
        char buf[64];
        char *end;
        c->upl_has_value = 0;
        if (leaf_text(text, tlen, buf, sizeof buf) && buf[0]) {
            errno = 0;
            long long v = strtoll(buf, &end, 10);
            if (!*end && !errno) {
                c->upl_value = v;
                c->upl_has_value = 1;
            }
        }
        return LM_OK;
    }
    return LM_OK;
}

static void xml_open(xml_ctx *c, const char *path)
{
    if (strcmp(path, "encoding") == 0) {
        c->out->encodings++;
        c->enc_index++;
    } else if (c->enc_index == 0 && strcmp(path, "encoding/trajectoryDescription") == 0) {
        c->in_desc = 1;
        c->desc_id[0] = '\0';
    } else if (c->enc_index == 0 && strcmp(path, "encoding/trajectoryDescription/userParameterLong") == 0) {
        c->upl_name[0] = '\0';
        c->upl_has_value = 0;
    }
}

static void xml_close(xml_ctx *c, const char *path)
{
    if (c->enc_index != 0)
        return;
    if (strcmp(path, "encoding/trajectoryDescription/userParameterLong") == 0 && c->upl_has_value) {
        if (strcmp(c->upl_name, "k_units_cycles_per_fov") == 0) {
            c->has_units_tag = 1;
            c->units_tag = c->upl_value ? LM_MRD_UNITS_CYCLES : LM_MRD_UNITS_NORMALIZED;
        } else if (strcmp(c->upl_name, "readout") == 0) {
            c->has_readout_tag = 1;
            c->readout_tag = c->upl_value;
        }
    } else if (strcmp(path, "encoding/trajectoryDescription") == 0) {
        if (strcmp(c->desc_id, "larmor") == 0 && c->has_units_tag)
            c->out->larmor_units = c->units_tag;
        if (strcmp(c->desc_id, "larmor") == 0 && c->has_readout_tag && c->readout_tag >= 0)
            c->out->larmor_readout = c->readout_tag;
        c->in_desc = 0;
        c->has_units_tag = c->has_readout_tag = 0;
    }
}

/* Path of the open elements below the root, local names joined by '/';
 * 0 if it does not fit (then nothing Larmor reads can match). */
static int xml_path(const xml_elem *st, int depth, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 1; i < depth; i++) {
        if (n + st[i].len + 2 > cap)
            return 0;
        if (i > 1)
            buf[n++] = '/';
        memcpy(buf + n, st[i].name, st[i].len);
        n += st[i].len;
        buf[n] = '\0';
    }
    return 1;
}

lm_code lm_mrd_header_parse(const char *xml, size_t len, const char *what, lm_mrd_header *out,
                            lm_error *err)
{
    memset(out, 0, sizeof *out);
    out->larmor_units = -1;
    out->larmor_readout = -1;
    if (!what)
        what = "ISMRMRD header";
    if (!xml)
        return lm_fail(err, LM_ERR_FORMAT, "%s: no XML header", what);
    const char *nul = memchr(xml, '\0', len);
    if (nul)
        len = (size_t)(nul - xml);

    xml_ctx c;
    memset(&c, 0, sizeof c);
    c.what = what;
    c.err = err;
    c.out = out;
    c.enc_index = -1;

    xml_elem st[XML_MAX_DEPTH];
    int depth = 0, root_seen = 0;
    char path[XML_PATH_MAX];
    size_t i = 0;
    while (i < len) {
        if (xml[i] != '<') {
            i++;
            continue;
        }
        size_t lt = i;
        const char *e;
        if (starts_with(xml, len, i, "<!--")) {
            if (!(e = find_str(xml, len, i + 4, "-->")))
                return lm_fail(err, LM_ERR_FORMAT, "%s: XML header: unterminated comment", what);
            i = (size_t)(e - xml) + 3;
            continue;
        }
        if (starts_with(xml, len, i, "<![CDATA[")) {
            if (!(e = find_str(xml, len, i + 9, "]]>")))
                return lm_fail(err, LM_ERR_FORMAT, "%s: XML header: unterminated CDATA", what);
            i = (size_t)(e - xml) + 3;
            continue;
        }
        if (starts_with(xml, len, i, "<?")) {
            if (!(e = find_str(xml, len, i + 2, "?>")))
                return lm_fail(err, LM_ERR_FORMAT, "%s: XML header: unterminated <?...?>", what);
            i = (size_t)(e - xml) + 2;
            continue;
        }
        if (starts_with(xml, len, i, "<!")) {
            if (!(e = memchr(xml + i, '>', len - i)))
                return lm_fail(err, LM_ERR_FORMAT, "%s: XML header: unterminated <!...>", what);
            i = (size_t)(e - xml) + 1;
            continue;
        }
        int closing = starts_with(xml, len, i, "</");
        size_t ns = i + (closing ? 2 : 1), ne = ns;
        while (ne < len && is_name_char(xml[ne]))
            ne++;
        if (ne == ns)
            return lm_fail(err, LM_ERR_FORMAT, "%s: XML header: malformed tag at byte %zu", what, lt);
        /* Find the end of the tag, skipping quoted attribute values. */
        size_t j = ne;
        char quote = 0;
        while (j < len && (quote || xml[j] != '>')) {
            if (quote && xml[j] == quote)
                quote = 0;
            else if (!quote && (xml[j] == '"' || xml[j] == '\''))
                quote = xml[j];
            else if (!quote && xml[j] == '<')
                break;
            j++;
        }
        if (j >= len || xml[j] != '>')
            return lm_fail(err, LM_ERR_FORMAT, "%s: XML header: unterminated tag <%.*s> (truncated?)",
                           what, (int)(ne - ns > 40 ? 40 : ne - ns), xml + ns);
        const char *qname = xml + ns;
        size_t qlen = ne - ns;
        const char *colon = memchr(qname, ':', qlen);
        const char *lname = colon ? colon + 1 : qname;
        size_t llen = qlen - (size_t)(lname - qname);

        if (closing) {
            if (depth == 0)
                return lm_fail(err, LM_ERR_FORMAT, "%s: XML header: unexpected </%.*s>", what,
                               (int)(qlen > 40 ? 40 : qlen), qname);
            xml_elem *top = &st[depth - 1];
            if (top->qlen != qlen || memcmp(top->qname, qname, qlen) != 0)
                return lm_fail(err, LM_ERR_FORMAT, "%s: XML header: </%.*s> closes <%.*s>", what,
                               (int)(qlen > 40 ? 40 : qlen), qname,
                               (int)(top->qlen > 40 ? 40 : top->qlen), top->qname);
            if (xml_path(st, depth, path, sizeof path)) {
                if (!top->had_child && depth > 1) {
                    lm_code rc = xml_leaf(&c, path, xml + top->text_start, lt - top->text_start);
                    if (rc != LM_OK)
                        return rc;
                }
                xml_close(&c, path);
            }
            depth--;
            i = j + 1;
            continue;
        }

        int selfclose = xml[j - 1] == '/';
        if (depth == 0) {
            if (root_seen)
                return lm_fail(err, LM_ERR_FORMAT, "%s: XML header: more than one root element", what);
            if (llen != 13 || memcmp(lname, "ismrmrdHeader", 13) != 0)
                return lm_fail(err, LM_ERR_FORMAT,
                               "%s: XML header: root element <%.*s> is not <ismrmrdHeader>", what,
                               (int)(qlen > 40 ? 40 : qlen), qname);
            root_seen = 1;
        } else {
            st[depth - 1].had_child = 1;
        }
        if (depth >= XML_MAX_DEPTH)
            return lm_fail(err, LM_ERR_FORMAT, "%s: XML header: elements nested deeper than %d", what,
                           XML_MAX_DEPTH);
        st[depth] = (xml_elem){lname, llen, qname, qlen, 0, j + 1};
        depth++;
        if (xml_path(st, depth, path, sizeof path)) {
            xml_open(&c, path);
            if (selfclose)
                xml_close(&c, path);
        }
        if (selfclose)
            depth--;
        i = j + 1;
    }
    if (depth != 0)
        return lm_fail(err, LM_ERR_FORMAT, "%s: XML header: <%.*s> is never closed (truncated?)", what,
                       (int)(st[depth - 1].qlen > 40 ? 40 : st[depth - 1].qlen), st[depth - 1].qname);
    if (!root_seen)
        return lm_fail(err, LM_ERR_FORMAT, "%s: XML header has no <ismrmrdHeader> element", what);
    if (out->encodings == 0)
        return lm_fail(err, LM_ERR_FORMAT, "%s: XML header has no <encoding>", what);
    for (int a = 0; a < 3; a++) {
        if (out->matrix[a] <= 0)
            return lm_fail(err, LM_ERR_FORMAT,
                           "%s: XML header: encoded matrix %lldx%lldx%lld is missing or zero", what,
                           (long long)out->matrix[0], (long long)out->matrix[1],
                           (long long)out->matrix[2]);
    }
    for (int a = 0; a < 3; a++) {
        if (!(out->fov_mm[a] > 0))
            return lm_fail(err, LM_ERR_FORMAT,
                           "%s: XML header: encoded field of view %gx%gx%g mm is missing or not positive",
                           what, out->fov_mm[0], out->fov_mm[1], out->fov_mm[2]);
    }
    return LM_OK;
}

/* ------------------------------------------------------------------------ */
/* Without libismrmrd                                                        */
/* ------------------------------------------------------------------------ */

#if !LM_HAVE_ISMRMRD

lm_code lm_mrd_read_units(const char *path, lm_mrd_units units, lm_mrd *out, lm_error *err)
{
    (void)units;
    if (out)
        memset(out, 0, sizeof *out);
    return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: ISMRMRD input unavailable: built without libismrmrd",
                   path ? path : "");
}

lm_code lm_mrd_read(const char *path, lm_mrd *out, lm_error *err)
{
    return lm_mrd_read_units(path, LM_MRD_UNITS_AUTO, out, err);
}

lm_code lm_mrd_read_opts(const char *path, const lm_mrd_opts *opts, lm_mrd *out, lm_error *err)
{
    (void)opts;
    return lm_mrd_read_units(path, LM_MRD_UNITS_AUTO, out, err);
}

lm_code lm_mrd_write_named(const char *path, const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                           const char *trajectory, lm_error *err)
{
    (void)g, (void)t, (void)k, (void)trajectory;
    return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: ISMRMRD output unavailable: built without libismrmrd",
                   path ? path : "");
}

lm_code lm_mrd_write(const char *path, const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                     lm_error *err)
{
    return lm_mrd_write_named(path, g, t, k, NULL, err);
}

lm_code lm_mrd_write_dataset(const char *path, const lm_mrd *m, const char *trajectory, lm_error *err)
{
    (void)m, (void)trajectory;
    return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: ISMRMRD output unavailable: built without libismrmrd",
                   path ? path : "");
}

lm_code lm_mrd_info(const char *path, char **text, lm_error *err)
{
    if (text)
        *text = NULL;
    return lm_fail(err, LM_ERR_UNSUPPORTED, "%s: ISMRMRD input unavailable: built without libismrmrd",
                   path ? path : "");
}

#else /* LM_HAVE_ISMRMRD */

/* ------------------------------------------------------------------------ */
/* HDF5 plumbing                                                             */
/* ------------------------------------------------------------------------ */

/* HDF5 (the serial build) is not thread-safe, and libismrmrd's error
 * handler is global: one MRD call at a time. */
static pthread_mutex_t mrd_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct h5_quiet {
    H5E_auto2_t func;
    void *data;
} h5_quiet;

static void h5_quiet_begin(h5_quiet *q)
{
    pthread_mutex_lock(&mrd_lock);
    q->func = NULL;
    q->data = NULL;
    H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void h5_quiet_end(h5_quiet *q)
{
    H5Eclear2(H5E_DEFAULT);
    H5Eset_auto2(H5E_DEFAULT, q->func, q->data);
    pthread_mutex_unlock(&mrd_lock);
}

/* The innermost (most specific) HDF5 error message, one line: the walk
 * goes upward from it, so keep the first one seen. */
static herr_t h5_walk_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    (void)n;
    char *buf = data;
    if (!buf[0] && e->desc && e->desc[0]) {
        snprintf(buf, 160, "%s", e->desc);
        for (char *p = buf; *p; p++)
            if (*p == '\n' || *p == '\r' || *p == '\t')
                *p = ' ';
    }
    return 0;
}

static lm_code h5_fail(lm_error *err, lm_code code, const char *path, const char *what)
{
    char msg[160] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, h5_walk_cb, msg);
    H5Eclear2(H5E_DEFAULT);
    /* Trim trailing spaces. */
    size_t n = strlen(msg);
    while (n && msg[n - 1] == ' ')
        msg[--n] = '\0';
    if (msg[0])
        return lm_fail(err, code, "%s: %s (HDF5: %s)", path, what, msg);
    return lm_fail(err, code, "%s: %s", path, what);
}

/* libismrmrd error capture: its default handler prints to stderr. */
static char mrd_last_error[256];

static void mrd_error_handler(const char *file, int line, const char *function, int code, const char *msg)
{
    (void)file, (void)line, (void)function, (void)code;
    snprintf(mrd_last_error, sizeof mrd_last_error, "%s", msg ? msg : "unknown error");
    for (char *p = mrd_last_error; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

/* ------------------------------------------------------------------------ */
/* The acquisition layout Larmor reads (a subset of the MRD compound)        */
/* ------------------------------------------------------------------------ */

typedef struct mrd_idx {
    uint16_t e1, e2, average, slice, contrast, phase, repetition, set;
} mrd_idx;

typedef struct mrd_head {
    uint64_t flags;
    uint16_t ns, channels, dpre, dpost, center, encref, tdim;
    mrd_idx idx;
    float geo[4][3]; /* position, read_dir, phase_dir, slice_dir (0 when the file has none) */
    float dwell_us;  /* sample_time_us: the dwell time (0 when the file has none) */
} mrd_head;

typedef struct mrd_acq {
    mrd_head head;
    hvl_t traj;
    hvl_t data;
} mrd_acq;

typedef struct mrd_head_only {
    mrd_head head;
} mrd_head_only;

static const char *const head_fields[] = {"flags", "number_of_samples", "active_channels",
                                          "discard_pre", "discard_post", "center_sample",
                                          "encoding_space_ref", "trajectory_dimensions"};
static const size_t head_offsets[] = {
    offsetof(mrd_head, flags),  offsetof(mrd_head, ns),     offsetof(mrd_head, channels),
    offsetof(mrd_head, dpre),   offsetof(mrd_head, dpost),  offsetof(mrd_head, center),
    offsetof(mrd_head, encref), offsetof(mrd_head, tdim)};
static const char *const idx_fields[] = {"kspace_encode_step_1", "kspace_encode_step_2", "average",
                                         "slice", "contrast", "phase", "repetition", "set"};
/* Optional: read only when the file has all four (float arrays of 3). */
static const char *const geo_fields[] = {"position", "read_dir", "phase_dir", "slice_dir"};

/* Memory types; data_complex: the file stores data as vlen of {real, imag}
 * (old MRD) rather than vlen of float pairs. */
typedef struct mrd_types {
    hid_t idx, head, head_only, acq, traj_vl, data_vl, cplx;
} mrd_types;

static void mrd_types_close(mrd_types *t)
{
    hid_t *all[] = {&t->idx, &t->head, &t->head_only, &t->acq, &t->traj_vl, &t->data_vl, &t->cplx};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (*all[i] >= 0)
            H5Tclose(*all[i]);
        *all[i] = -1;
    }
}

static int mrd_types_make(mrd_types *t, int data_complex, int has_geo, int has_dwell)
{
    t->idx = t->head = t->head_only = t->acq = t->traj_vl = t->data_vl = t->cplx = -1;
    int ok = 1;
    t->idx = H5Tcreate(H5T_COMPOUND, sizeof(mrd_idx));
    for (size_t i = 0; i < 8; i++)
        ok &= H5Tinsert(t->idx, idx_fields[i], i * sizeof(uint16_t), H5T_NATIVE_UINT16) >= 0;
    t->head = H5Tcreate(H5T_COMPOUND, sizeof(mrd_head));
    ok &= H5Tinsert(t->head, head_fields[0], head_offsets[0], H5T_NATIVE_UINT64) >= 0;
    for (size_t i = 1; i < 8; i++)
        ok &= H5Tinsert(t->head, head_fields[i], head_offsets[i], H5T_NATIVE_UINT16) >= 0;
    ok &= H5Tinsert(t->head, "idx", offsetof(mrd_head, idx), t->idx) >= 0;
    if (has_geo) {
        hsize_t three = 3;
        hid_t f3 = H5Tarray_create2(H5T_NATIVE_FLOAT, 1, &three);
        ok &= f3 >= 0;
        for (size_t i = 0; i < 4 && f3 >= 0; i++)
            ok &= H5Tinsert(t->head, geo_fields[i], offsetof(mrd_head, geo) + i * 3 * sizeof(float), f3) >= 0;
        if (f3 >= 0)
            H5Tclose(f3);
    }
    if (has_dwell)
        ok &= H5Tinsert(t->head, "sample_time_us", offsetof(mrd_head, dwell_us), H5T_NATIVE_FLOAT) >= 0;
    t->head_only = H5Tcreate(H5T_COMPOUND, sizeof(mrd_head_only));
    ok &= H5Tinsert(t->head_only, "head", 0, t->head) >= 0;
    t->traj_vl = H5Tvlen_create(H5T_NATIVE_FLOAT);
    if (data_complex) {
        t->cplx = H5Tcreate(H5T_COMPOUND, 2 * sizeof(float));
        ok &= H5Tinsert(t->cplx, "real", 0, H5T_NATIVE_FLOAT) >= 0;
        ok &= H5Tinsert(t->cplx, "imag", sizeof(float), H5T_NATIVE_FLOAT) >= 0;
        t->data_vl = H5Tvlen_create(t->cplx);
    } else {
        t->data_vl = H5Tvlen_create(H5T_NATIVE_FLOAT);
    }
    t->acq = H5Tcreate(H5T_COMPOUND, sizeof(mrd_acq));
    ok &= H5Tinsert(t->acq, "head", offsetof(mrd_acq, head), t->head) >= 0;
    ok &= H5Tinsert(t->acq, "traj", offsetof(mrd_acq, traj), t->traj_vl) >= 0;
    ok &= H5Tinsert(t->acq, "data", offsetof(mrd_acq, data), t->data_vl) >= 0;
    return ok && t->idx >= 0 && t->head >= 0 && t->head_only >= 0 && t->acq >= 0 && t->traj_vl >= 0 &&
           t->data_vl >= 0;
}

/* Checks that the file's member name exists with the class wanted;
 * returns its type (caller closes) or -1 with err set. */
static hid_t member_type(hid_t parent, const char *name, H5T_class_t want, const char *path,
                         const char *where, lm_error *err)
{
    int i = H5Tget_member_index(parent, name);
    if (i < 0) {
        H5Eclear2(H5E_DEFAULT);
        lm_fail(err, LM_ERR_FORMAT, "%s: /dataset/data has no %s%s field (not MRD acquisitions?)", path,
                where, name);
        return -1;
    }
    hid_t t = H5Tget_member_type(parent, (unsigned)i);
    if (t < 0 || H5Tget_class(t) != want) {
        if (t >= 0)
            H5Tclose(t);
        H5Eclear2(H5E_DEFAULT);
        lm_fail(err, LM_ERR_FORMAT, "%s: /dataset/data field %s%s has the wrong type", path, where, name);
        return -1;
    }
    return t;
}

/* Whether head holds name as an array of 3 floating-point numbers. */
static int geo_member_ok(hid_t head, const char *name)
{
    int i = H5Tget_member_index(head, name);
    if (i < 0) {
        H5Eclear2(H5E_DEFAULT);
        return 0;
    }
    hid_t t = H5Tget_member_type(head, (unsigned)i);
    int ok = 0;
    if (t >= 0 && H5Tget_class(t) == H5T_ARRAY && H5Tget_array_ndims(t) == 1) {
        hsize_t n = 0;
        hid_t b = H5Tget_super(t);
        ok = H5Tget_array_dims2(t, &n) == 1 && n == 3 && b >= 0 && H5Tget_class(b) == H5T_FLOAT;
        if (b >= 0)
            H5Tclose(b);
    }
    if (t >= 0)
        H5Tclose(t);
    H5Eclear2(H5E_DEFAULT);
    return ok;
}

/* Whether head holds name as a floating-point number. */
static int float_member_ok(hid_t head, const char *name)
{
    int i = H5Tget_member_index(head, name);
    if (i < 0) {
        H5Eclear2(H5E_DEFAULT);
        return 0;
    }
    hid_t t = H5Tget_member_type(head, (unsigned)i);
    int ok = t >= 0 && H5Tget_class(t) == H5T_FLOAT;
    if (t >= 0)
        H5Tclose(t);
    H5Eclear2(H5E_DEFAULT);
    return ok;
}

/* Validates the file's acquisition type; *data_complex tells the data
 * layout, *has_geo whether the slice geometry fields are there, *has_dwell
 * whether sample_time_us is. */
static lm_code check_acq_type(hid_t ftype, const char *path, int *data_complex, int *has_geo, int *has_dwell,
                              lm_error *err)
{
    if (H5Tget_class(ftype) != H5T_COMPOUND)
        return lm_fail(err, LM_ERR_FORMAT, "%s: /dataset/data is not a compound dataset (not MRD acquisitions)", path);
    lm_code rc = LM_OK;
    hid_t head = member_type(ftype, "head", H5T_COMPOUND, path, "", err);
    if (head < 0)
        return LM_ERR_FORMAT;
    for (size_t i = 0; i < 8 && rc == LM_OK; i++) {
        hid_t m = member_type(head, head_fields[i], H5T_INTEGER, path, "head.", err);
        if (m < 0)
            rc = LM_ERR_FORMAT;
        else
            H5Tclose(m);
    }
    if (rc == LM_OK) {
        hid_t idx = member_type(head, "idx", H5T_COMPOUND, path, "head.", err);
        if (idx < 0)
            rc = LM_ERR_FORMAT;
        for (size_t i = 0; i < 8 && rc == LM_OK; i++) {
            hid_t m = member_type(idx, idx_fields[i], H5T_INTEGER, path, "head.idx.", err);
            if (m < 0)
                rc = LM_ERR_FORMAT;
            else
                H5Tclose(m);
        }
        if (idx >= 0)
            H5Tclose(idx);
    }
    *has_geo = 1;
    for (size_t i = 0; i < 4; i++)
        *has_geo &= geo_member_ok(head, geo_fields[i]);
    *has_dwell = float_member_ok(head, "sample_time_us");
    H5Tclose(head);
    if (rc != LM_OK)
        return rc;

    hid_t traj = member_type(ftype, "traj", H5T_VLEN, path, "", err);
    if (traj < 0)
        return LM_ERR_FORMAT;
    hid_t base = H5Tget_super(traj);
    int ok = base >= 0 && H5Tget_class(base) == H5T_FLOAT;
    if (base >= 0)
        H5Tclose(base);
    H5Tclose(traj);
    if (!ok) {
        H5Eclear2(H5E_DEFAULT);
        return lm_fail(err, LM_ERR_FORMAT, "%s: /dataset/data trajectories are not floating point", path);
    }

    hid_t data = member_type(ftype, "data", H5T_VLEN, path, "", err);
    if (data < 0)
        return LM_ERR_FORMAT;
    base = H5Tget_super(data);
    ok = 0;
    if (base >= 0 && H5Tget_class(base) == H5T_FLOAT) {
        *data_complex = 0;
        ok = 1;
    } else if (base >= 0 && H5Tget_class(base) == H5T_COMPOUND) {
        int r = H5Tget_member_index(base, "real"), im = H5Tget_member_index(base, "imag");
        if (r >= 0 && im >= 0 && H5Tget_member_class(base, (unsigned)r) == H5T_FLOAT &&
            H5Tget_member_class(base, (unsigned)im) == H5T_FLOAT) {
            *data_complex = 1;
            ok = 1;
        }
    }
    if (base >= 0)
        H5Tclose(base);
    H5Tclose(data);
    if (!ok) {
        H5Eclear2(H5E_DEFAULT);
        return lm_fail(err, LM_ERR_FORMAT,
                       "%s: /dataset/data samples are neither float pairs nor {real, imag} compounds", path);
    }
    return LM_OK;
}

/* Reads /dataset/xml (variable or fixed-length string, one element). */
#define MRD_XML_MAX ((size_t)64 << 20)

static lm_code read_xml(hid_t fid, const char *path, char **out, size_t *out_len, lm_error *err)
{
    *out = NULL;
    if (H5Lexists(fid, "/dataset", H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return lm_fail(err, LM_ERR_FORMAT, "%s: HDF5 file without /dataset (not an ISMRMRD file)", path);
    }
    if (H5Lexists(fid, "/dataset/xml", H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return lm_fail(err, LM_ERR_FORMAT, "%s: no /dataset/xml header (not an ISMRMRD file?)", path);
    }
    hid_t ds = H5Dopen2(fid, "/dataset/xml", H5P_DEFAULT);
    if (ds < 0)
        return h5_fail(err, LM_ERR_FORMAT, path, "/dataset/xml is not a dataset");
    lm_code rc = LM_OK;
    hid_t ft = H5Dget_type(ds), sp = H5Dget_space(ds), mt = -1;
    hssize_t npts = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    if (ft < 0 || sp < 0) {
        rc = h5_fail(err, LM_ERR_FORMAT, path, "cannot read /dataset/xml");
        goto done;
    }
    if (H5Tget_class(ft) != H5T_STRING) {
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: /dataset/xml is not a string", path);
        goto done;
    }
    if (npts < 1) {
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: /dataset/xml is empty", path);
        goto done;
    }
    /* Read the first element only. */
    hsize_t one = 1;
    if (H5Sget_simple_extent_ndims(sp) > 0) {
        int nd = H5Sget_simple_extent_ndims(sp);
        hsize_t start[H5S_MAX_RANK] = {0}, count[H5S_MAX_RANK];
        for (int d = 0; d < nd && d < H5S_MAX_RANK; d++)
            count[d] = 1;
        if (H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, count, NULL) < 0) {
            rc = h5_fail(err, LM_ERR_FORMAT, path, "cannot read /dataset/xml");
            goto done;
        }
    }
    hid_t ms = H5Screate_simple(1, &one, NULL);
    htri_t var = H5Tis_variable_str(ft);
    if (var > 0) {
        char *s = NULL;
        mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5Tget_cset(ft)); /* h5py writes UTF-8: no ASCII conversion */
        if (H5Dread(ds, mt, ms, sp, H5P_DEFAULT, &s) < 0 || !s) {
            rc = h5_fail(err, LM_ERR_FORMAT, path, "cannot read the XML header /dataset/xml");
        } else {
            size_t n = strnlen(s, MRD_XML_MAX + 1);
            if (n > MRD_XML_MAX)
                rc = lm_fail(err, LM_ERR_FORMAT, "%s: XML header larger than %zu MiB", path, MRD_XML_MAX >> 20);
            else if (!(*out = malloc(n + 1)))
                rc = lm_fail(err, LM_ERR_NOMEM, "%s: no memory for the XML header", path);
            else {
                memcpy(*out, s, n);
                (*out)[n] = '\0';
                *out_len = n;
            }
            H5Dvlen_reclaim(mt, ms, H5P_DEFAULT, &s);
        }
    } else {
        size_t n = H5Tget_size(ft);
        if (n == 0 || n > MRD_XML_MAX) {
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: XML header size %zu is invalid", path, n);
        } else if (!(*out = calloc(n + 1, 1))) {
            rc = lm_fail(err, LM_ERR_NOMEM, "%s: no memory for the XML header", path);
        } else {
            mt = H5Tcopy(H5T_C_S1);
            H5Tset_size(mt, n + 1);
            H5Tset_strpad(mt, H5T_STR_NULLTERM);
            H5Tset_cset(mt, H5Tget_cset(ft));
            if (H5Dread(ds, mt, ms, sp, H5P_DEFAULT, *out) < 0) {
                rc = h5_fail(err, LM_ERR_FORMAT, path, "cannot read the XML header /dataset/xml");
                free(*out);
                *out = NULL;
            } else {
                (*out)[n] = '\0';
                *out_len = strlen(*out);
            }
        }
    }
    H5Sclose(ms);
done:
    if (mt >= 0)
        H5Tclose(mt);
    if (ft >= 0)
        H5Tclose(ft);
    if (sp >= 0)
        H5Sclose(sp);
    H5Dclose(ds);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */
/* ------------------------------------------------------------------------ */

/* Flag bits (1-based, as ismrmrd_is_flag_set) of acquisitions that are not
 * imaging data: skipped. */
static const struct {
    int bit;
    const char *name;
} skip_flags[] = {
    {ISMRMRD_ACQ_IS_NOISE_MEASUREMENT, "noise"},
    {ISMRMRD_ACQ_IS_NAVIGATION_DATA, "navigator"},
    {ISMRMRD_ACQ_IS_PHASECORR_DATA, "phase correction"},
    {ISMRMRD_ACQ_IS_HPFEEDBACK_DATA, "feedback"},
    {ISMRMRD_ACQ_IS_DUMMYSCAN_DATA, "dummy scan"},
    {ISMRMRD_ACQ_IS_RTFEEDBACK_DATA, "feedback"},
    {ISMRMRD_ACQ_IS_SURFACECOILCORRECTIONSCAN_DATA, "surface coil correction"},
    {ISMRMRD_ACQ_IS_PHASE_STABILIZATION_REFERENCE, "phase stabilisation"},
    {ISMRMRD_ACQ_IS_PHASE_STABILIZATION, "phase stabilisation"},
};

static int flag_set(uint64_t flags, int bit)
{
    return bit >= 1 && bit <= 64 && ((flags >> (bit - 1)) & 1u);
}

/* Acquisition count above which a file is taken as corrupt. */
#define MRD_MAX_ACQ ((hsize_t)1 << 24)
#define MRD_BLOCK 256

typedef struct mrd_scan {
    uint64_t total, noise, other_skipped, empty, other_encoding, kept;
    int tdim;               /* -1 until the first kept acquisition */
    int64_t channels;
    int64_t m;              /* samples per channel kept */
    int64_t readout;        /* common kept length (last may be shorter), 0 if it varies */
    int64_t ns_min, ns_max; /* number_of_samples of kept acquisitions */
    int64_t dpre, dpost;    /* of the first kept acquisition */
    int reversed;
    uint16_t lo[4], hi[4];  /* slice, contrast, phase, set among kept */
    uint16_t e2_max;
    int64_t noise_m;        /* samples per channel of the noise scans */
    int64_t noise_channels; /* their channel count (0: none) */
    uint64_t other_sel;     /* imaging acquisitions of other repetitions/contrasts skipped */
    int nslices;            /* distinct idx.slice among kept */
    int64_t *slice_m;       /* 65536 entries: samples per channel of each idx.slice (owned) */
} mrd_scan;

/* The repetition and contrast read, chosen before pass 1 (-1: the file
 * has no imaging acquisitions). */
typedef struct mrd_sel {
    int repetition, contrast;
    int nrep, ncon;         /* distinct values among imaging acquisitions */
    int rep_lo, rep_hi, con_lo, con_hi;
} mrd_sel;

static int acq_selected(const mrd_head *h, const mrd_sel *sel)
{
    return h->idx.repetition == sel->repetition && h->idx.contrast == sel->contrast;
}

static int acq_skipped(const mrd_head *h, mrd_scan *s)
{
    if (flag_set(h->flags, ISMRMRD_ACQ_IS_NOISE_MEASUREMENT)) {
        if (s)
            s->noise++;
        return 1;
    }
    for (size_t f = 1; f < sizeof skip_flags / sizeof skip_flags[0]; f++)
        if (flag_set(h->flags, skip_flags[f].bit)) {
            if (s)
                s->other_skipped++;
            return 1;
        }
    if (h->encref != 0) {
        if (s)
            s->other_encoding++;
        return 1;
    }
    if (h->ns == 0) {
        if (s)
            s->empty++;
        return 1;
    }
    return 0;
}

typedef struct mrd_file {
    uint64_t file_size;
    hid_t fid, ds, fspace;
    hsize_t nacq;
    int data_complex, has_geo, has_dwell;
    mrd_types types;
    lm_mrd_header hdr;
} mrd_file;

static void mrd_file_close(mrd_file *f)
{
    mrd_types_close(&f->types);
    if (f->fspace >= 0)
        H5Sclose(f->fspace);
    if (f->ds >= 0)
        H5Dclose(f->ds);
    if (f->fid >= 0)
        H5Fclose(f->fid);
    f->fspace = f->ds = f->fid = -1;
}

static lm_code mrd_file_open(const char *path, mrd_file *f, lm_error *err)
{
    memset(f, 0, sizeof *f);
    f->fid = f->ds = f->fspace = -1;
    f->types.idx = f->types.head = f->types.head_only = f->types.acq = -1;
    f->types.traj_vl = f->types.data_vl = f->types.cplx = -1;
    if (!path || !*path)
        return lm_fail(err, LM_ERR_INVALID, "empty ISMRMRD file name");

    struct stat st;
    if (stat(path, &st) != 0)
        return lm_fail(err, LM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return lm_fail(err, LM_ERR_IO, "%s: is a folder, not an ISMRMRD file", path);
    FILE *probe = fopen(path, "rb");
    if (!probe)
        return lm_fail(err, LM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    fclose(probe);
    if (st.st_size == 0)
        return lm_fail(err, LM_ERR_FORMAT, "%s: empty file (not an ISMRMRD HDF5 file)", path);
    f->file_size = (uint64_t)st.st_size;

    htri_t is = H5Fis_hdf5(path);
    if (is <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return lm_fail(err, LM_ERR_FORMAT, "%s: not an HDF5 file (ISMRMRD files are HDF5)", path);
    }
    f->fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f->fid < 0)
        return h5_fail(err, LM_ERR_FORMAT, path, "cannot open as HDF5 (damaged or truncated?)");

    char *xml = NULL;
    size_t xml_len = 0;
    lm_code rc = read_xml(f->fid, path, &xml, &xml_len, err);
    if (rc != LM_OK)
        goto fail;
    rc = lm_mrd_header_parse(xml, xml_len, path, &f->hdr, err);
    free(xml);
    if (rc != LM_OK)
        goto fail;

    if (H5Lexists(f->fid, "/dataset/data", H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: no acquisitions (/dataset/data is missing)", path);
        goto fail;
    }
    f->ds = H5Dopen2(f->fid, "/dataset/data", H5P_DEFAULT);
    if (f->ds < 0) {
        rc = h5_fail(err, LM_ERR_FORMAT, path, "/dataset/data is not a dataset");
        goto fail;
    }
    hid_t ft = H5Dget_type(f->ds);
    if (ft < 0) {
        rc = h5_fail(err, LM_ERR_FORMAT, path, "cannot read the type of /dataset/data");
        goto fail;
    }
    rc = check_acq_type(ft, path, &f->data_complex, &f->has_geo, &f->has_dwell, err);
    H5Tclose(ft);
    if (rc != LM_OK)
        goto fail;
    f->fspace = H5Dget_space(f->ds);
    if (f->fspace < 0 || H5Sget_simple_extent_type(f->fspace) != H5S_SIMPLE ||
        H5Sget_simple_extent_ndims(f->fspace) != 1) {
        H5Eclear2(H5E_DEFAULT);
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: /dataset/data is not a one-dimensional list of acquisitions", path);
        goto fail;
    }
    hsize_t dims[1];
    if (H5Sget_simple_extent_dims(f->fspace, dims, NULL) != 1) {
        rc = h5_fail(err, LM_ERR_FORMAT, path, "cannot read the size of /dataset/data");
        goto fail;
    }
    f->nacq = dims[0];
    if (f->nacq == 0) {
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: no acquisitions (/dataset/data is empty)", path);
        goto fail;
    }
    if (f->nacq > MRD_MAX_ACQ) {
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: %llu acquisitions is absurd (more than %llu)", path,
                     (unsigned long long)f->nacq, (unsigned long long)MRD_MAX_ACQ);
        goto fail;
    }
    if (!mrd_types_make(&f->types, f->data_complex, f->has_geo, f->has_dwell)) {
        rc = h5_fail(err, LM_ERR_INTERNAL, path, "cannot build the HDF5 memory types");
        goto fail;
    }
    return LM_OK;
fail:
    mrd_file_close(f);
    return rc;
}

/* Reads count elements from start with memory type mt into buf. */
static int read_block(mrd_file *f, hid_t mt, hsize_t start, hsize_t count, void *buf)
{
    hid_t ms = H5Screate_simple(1, &count, NULL);
    if (ms < 0)
        return 0;
    int ok = H5Sselect_hyperslab(f->fspace, H5S_SELECT_SET, &start, NULL, &count, NULL) >= 0 &&
             H5Dread(f->ds, mt, ms, f->fspace, H5P_DEFAULT, buf) >= 0;
    H5Sclose(ms);
    return ok;
}

/* Pass 0: headers only, to choose the repetition and contrast. With no
 * repetition asked for, the lowest present is read, and the contrast is
 * the one asked for or the lowest present in that repetition. */
static lm_code scan_select(mrd_file *f, const char *path, const lm_mrd_opts *o, mrd_sel *sel, lm_error *err)
{
    memset(sel, 0, sizeof *sel);
    sel->repetition = sel->contrast = -1;
    unsigned char *rep = calloc(65536, 1), *con = calloc(65536, 1);
    uint32_t *con_in = calloc(65536, sizeof *con_in); /* stamp: seen in the repetition wanted */
    mrd_head_only *buf = calloc(MRD_BLOCK, sizeof *buf);
    lm_code rc = LM_OK;
    if (!rep || !con || !con_in || !buf) {
        rc = lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path);
        goto out;
    }
    const int want_rep = o->repetition;
    int cur = -1;
    uint32_t stamp = 1;
    for (hsize_t start = 0; start < f->nacq; start += MRD_BLOCK) {
        hsize_t count = f->nacq - start < MRD_BLOCK ? f->nacq - start : MRD_BLOCK;
        memset(buf, 0, count * sizeof *buf);
        if (!read_block(f, f->types.head_only, start, count, buf)) {
            rc = h5_fail(err, LM_ERR_FORMAT, path, "cannot read the acquisition headers");
            goto out;
        }
        for (hsize_t b = 0; b < count; b++) {
            const mrd_head *h = &buf[b].head;
            if (acq_skipped(h, NULL))
                continue;
            int r = h->idx.repetition, c = h->idx.contrast;
            rep[r] = con[c] = 1;
            if (want_rep < 0 && (cur < 0 || r < cur)) {
                cur = r;
                stamp++; /* forget the contrasts of the higher repetition */
            }
            if (r == (want_rep >= 0 ? want_rep : cur))
                con_in[c] = stamp;
        }
    }
    sel->rep_lo = sel->con_lo = -1;
    for (int v = 0; v < 65536; v++) {
        if (rep[v]) {
            if (sel->rep_lo < 0)
                sel->rep_lo = v;
            sel->rep_hi = v;
            sel->nrep++;
        }
        if (con[v]) {
            if (sel->con_lo < 0)
                sel->con_lo = v;
            sel->con_hi = v;
            sel->ncon++;
        }
    }
    if (sel->nrep == 0)
        goto out; /* pass 1 says there is nothing to reconstruct */
    if (want_rep >= 0 && (want_rep > 65535 || !rep[want_rep])) {
        rc = lm_fail(err, LM_ERR_INVALID, "%s: repetition %d is not in the file (it holds %d: %d..%d)", path,
                     want_rep, sel->nrep, sel->rep_lo, sel->rep_hi);
        goto out;
    }
    sel->repetition = want_rep >= 0 ? want_rep : cur;
    if (o->contrast >= 0) {
        if (o->contrast > 65535 || con_in[o->contrast] != stamp) {
            rc = lm_fail(err, LM_ERR_INVALID,
                         "%s: contrast %d is not in repetition %d of the file (it holds contrasts %d..%d)", path,
                         o->contrast, sel->repetition, sel->con_lo, sel->con_hi);
            goto out;
        }
        sel->contrast = o->contrast;
    } else {
        for (int v = 0; v < 65536 && sel->contrast < 0; v++)
            if (con_in[v] == stamp)
                sel->contrast = v;
    }
out:
    free(rep);
    free(con);
    free(con_in);
    free(buf);
    return rc;
}

/* Pass 1: headers only. Counts, checks consistency and sizes. */
static lm_code scan_headers(mrd_file *f, const char *path, const mrd_sel *sel, mrd_scan *s, lm_error *err)
{
    memset(s, 0, sizeof *s);
    s->tdim = -1;
    s->total = f->nacq;
    mrd_head_only *buf = calloc(MRD_BLOCK, sizeof *buf);
    s->slice_m = calloc(65536, sizeof *s->slice_m);
    if (!buf || !s->slice_m) {
        free(buf);
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path);
    }
    lm_code rc = LM_OK;
    int64_t last_len = 0, first = -1;
    int uniform = 1;
    /* Bytes the headers say are stored: at most 2^24 x 65535 x 65535 x 12,
     * no overflow. Vlen data live in HDF5's global heap, never compressed,
     * so they cannot exceed the file's size: checked before allocating. */
    uint64_t stored = 0;
    for (hsize_t start = 0; start < f->nacq && rc == LM_OK; start += MRD_BLOCK) {
        hsize_t count = f->nacq - start < MRD_BLOCK ? f->nacq - start : MRD_BLOCK;
        memset(buf, 0, count * sizeof *buf);
        if (!read_block(f, f->types.head_only, start, count, buf)) {
            rc = h5_fail(err, LM_ERR_FORMAT, path, "cannot read the acquisition headers");
            break;
        }
        for (hsize_t b = 0; b < count; b++) {
            const mrd_head *h = &buf[b].head;
            unsigned long long a = (unsigned long long)(start + b);
            if (flag_set(h->flags, ISMRMRD_ACQ_IS_NOISE_MEASUREMENT) && h->ns > 0 && h->channels > 0) {
                /* noise scans are kept for prewhitening, all their samples */
                if (s->noise_channels && h->channels != s->noise_channels) {
                    rc = lm_fail(err, LM_ERR_FORMAT, "%s: noise acquisition %llu has %u channels, an earlier one "
                                 "%lld", path, a, h->channels, (long long)s->noise_channels);
                    break;
                }
                s->noise_channels = h->channels;
                s->noise_m += h->ns;
                stored += (uint64_t)h->ns * (uint64_t)h->channels * 8u;
            }
            if (acq_skipped(h, s))
                continue;
            if (!acq_selected(h, sel)) {
                s->other_sel++;
                continue;
            }
            if (h->tdim != 0 && h->tdim != 2 && h->tdim != 3) {
                rc = lm_fail(err, LM_ERR_UNSUPPORTED,
                             "%s: acquisition %llu has trajectory_dimensions %u (Larmor reads 0, 2 or 3)",
                             path, a, h->tdim);
                break;
            }
            if (h->channels == 0) {
                rc = lm_fail(err, LM_ERR_FORMAT, "%s: acquisition %llu has no active channels", path, a);
                break;
            }
            if ((unsigned)h->dpre + h->dpost >= h->ns) {
                rc = lm_fail(err, LM_ERR_FORMAT,
                             "%s: acquisition %llu discards %u + %u of its %u samples", path, a,
                             h->dpre, h->dpost, h->ns);
                break;
            }
            if (s->tdim < 0) {
                s->tdim = h->tdim;
                s->channels = h->channels;
                s->dpre = h->dpre;
                s->dpost = h->dpost;
                s->ns_min = s->ns_max = h->ns;
                first = (int64_t)a;
                s->lo[0] = s->hi[0] = h->idx.slice;
                s->lo[1] = s->hi[1] = h->idx.contrast;
                s->lo[2] = s->hi[2] = h->idx.phase;
                s->lo[3] = s->hi[3] = h->idx.set;
            } else if (h->tdim != s->tdim) {
                rc = lm_fail(err, LM_ERR_FORMAT,
                             "%s: acquisition %llu has trajectory_dimensions %u, acquisition %lld has %d",
                             path, a, h->tdim, (long long)first, s->tdim);
                break;
            } else if (h->channels != s->channels) {
                rc = lm_fail(err, LM_ERR_FORMAT,
                             "%s: acquisition %llu has %u channels, acquisition %lld has %lld", path, a,
                             h->channels, (long long)first, (long long)s->channels);
                break;
            }
            uint16_t v[4] = {h->idx.slice, h->idx.contrast, h->idx.phase, h->idx.set};
            for (int q = 0; q < 4; q++) {
                if (v[q] < s->lo[q])
                    s->lo[q] = v[q];
                if (v[q] > s->hi[q])
                    s->hi[q] = v[q];
            }
            if (h->idx.e2 > s->e2_max)
                s->e2_max = h->idx.e2;
            if (h->tdim == 0 && flag_set(h->flags, ISMRMRD_ACQ_IS_REVERSE))
                s->reversed = 1;
            if (h->ns < s->ns_min)
                s->ns_min = h->ns;
            if (h->ns > s->ns_max)
                s->ns_max = h->ns;
            int64_t len = (int64_t)h->ns - h->dpre - h->dpost;
            /* A common readout length: every readout but the last has the
             * first's length, the last may be shorter (a cut trajectory). */
            if (s->kept == 0)
                s->readout = len;
            else if (last_len != s->readout)
                uniform = 0;
            last_len = len;
            s->m += len; /* at most 2^24 x 65535 < 2^40: no overflow */
            if (s->slice_m[h->idx.slice] == 0)
                s->nslices++;
            s->slice_m[h->idx.slice] += len;
            stored += (uint64_t)h->ns * ((uint64_t)h->channels * 8u + (uint64_t)h->tdim * 4u);
            s->kept++;
        }
    }
    free(buf);
    if (rc != LM_OK)
        return rc;
    if (s->kept == 0)
        return lm_fail(err, LM_ERR_FORMAT,
                       "%s: no imaging acquisitions (%llu in all: %llu noise, %llu other non-imaging, %llu "
                       "of other encodings, %llu empty)",
                       path, (unsigned long long)s->total, (unsigned long long)s->noise,
                       (unsigned long long)s->other_skipped, (unsigned long long)s->other_encoding,
                       (unsigned long long)s->empty);
    if (!uniform || last_len > s->readout)
        s->readout = 0;
    if (stored > f->file_size)
        return lm_fail(err, LM_ERR_FORMAT,
                       "%s: acquisition headers claim %llu bytes of samples (%lld x %lld channels) but the "
                       "file holds %llu bytes (truncated or inconsistent headers)",
                       path, (unsigned long long)stored, (long long)s->m, (long long)s->channels,
                       (unsigned long long)f->file_size);
    /* Slices are the caller's to judge; contrasts are one by selection. */
    static const char *const what[4] = {"slices", "contrasts", "cardiac phases", "sets"};
    for (int q = 2; q < 4; q++)
        if (s->hi[q] != s->lo[q])
            return lm_fail(err, LM_ERR_UNSUPPORTED,
                           "%s: %s %u..%u in one file; Larmor reconstructs one phase and one set", path, what[q],
                           s->lo[q], s->hi[q]);
    if (s->reversed)
        return lm_fail(err, LM_ERR_UNSUPPORTED,
                       "%s: reversed (EPI-style) Cartesian readouts are not supported", path);
    size_t total;
    if (!lm_size_mul((size_t)s->m, (size_t)s->channels, &total) || total > LM_MAX_ELEMENTS ||
        (size_t)s->m > LM_MAX_ELEMENTS / 3)
        return lm_fail(err, LM_ERR_NOMEM, "%s: %lld samples x %lld channels is absurd", path,
                       (long long)s->m, (long long)s->channels);
    return LM_OK;
}

/* The k-space centre along encode steps 1 and 2 for Cartesian data. */
static double enc_center(const lm_mrd_header *h, int step)
{
    if (h->has_center[step])
        return (double)h->center[step];
    return (double)(h->matrix[step + 1] / 2);
}

/* Where pass 2 puts one slice's samples (one target for single-volume data). */
typedef struct mrd_target {
    float *k;          /* m x 3 */
    lm_kdata *kd;
    int64_t m, pos;
    int have_geo;
    float geo[4][3];   /* from the slice's first acquisition */
    float *t;          /* sample times (s), when the file has dwell times */
    int no_dwell;      /* an acquisition without a dwell time: t unusable */
} mrd_target;

/* Pass 2: trajectories and data. Each target's k gets the trajectory as
 * stored (tdim values per sample scaled later); for tdim 0 the trajectory
 * is derived from the counters. slice_of maps idx.slice to a target (NULL:
 * everything to target 0). */
static lm_code read_samples(mrd_file *f, const char *path, const mrd_scan *s, const mrd_sel *sel,
                            mrd_target *tg, const int32_t *slice_of, int tdim_eff, lm_kdata *noise,
                            lm_error *err)
{
    mrd_acq *buf = calloc(MRD_BLOCK, sizeof *buf);
    if (!buf)
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path);
    lm_code rc = LM_OK;
    int64_t total = 0, npos = 0;
    const int64_t nc = s->channels;
    const lm_mrd_header *hdr = &f->hdr;
    double c1 = enc_center(hdr, 0), c2 = enc_center(hdr, 1);
    for (hsize_t start = 0; start < f->nacq && rc == LM_OK; start += MRD_BLOCK) {
        hsize_t count = f->nacq - start < MRD_BLOCK ? f->nacq - start : MRD_BLOCK;
        memset(buf, 0, count * sizeof *buf);
        hsize_t cnt = count;
        hid_t ms = H5Screate_simple(1, &cnt, NULL);
        if (ms < 0 || !read_block(f, f->types.acq, start, count, buf)) {
            rc = h5_fail(err, LM_ERR_FORMAT, path, "cannot read the acquisitions");
            if (ms >= 0) {
                H5Dvlen_reclaim(f->types.acq, ms, H5P_DEFAULT, buf); /* whatever was read */
                H5Sclose(ms);
            }
            break;
        }
        for (hsize_t b = 0; b < count && rc == LM_OK; b++) {
            const mrd_acq *q = &buf[b];
            const mrd_head *h = &q->head;
            unsigned long long a = (unsigned long long)(start + b);
            if (noise && flag_set(h->flags, ISMRMRD_ACQ_IS_NOISE_MEASUREMENT) && h->ns > 0 && h->channels > 0) {
                const size_t want = (size_t)h->ns * h->channels * (f->data_complex ? 1 : 2);
                if (h->channels != noise->ncoils || npos + h->ns > noise->m || q->data.len != want || !q->data.p) {
                    rc = lm_fail(err, LM_ERR_FORMAT, "%s: noise acquisition %llu stores %zu values, its header "
                                 "says %u samples x %u channels", path, a, q->data.len, h->ns, h->channels);
                    break;
                }
                const float *dv = q->data.p;
                for (int64_t c = 0; c < noise->ncoils; c++)
                    for (int64_t j = 0; j < h->ns; j++) {
                        const float *p = dv + 2 * ((size_t)c * h->ns + (size_t)j);
                        float *dst = (float *)&noise->d[(size_t)c * (size_t)noise->m + (size_t)(npos + j)];
                        dst[0] = p[0];
                        dst[1] = p[1];
                    }
                npos += h->ns;
                continue;
            }
            if (acq_skipped(h, NULL) || !acq_selected(h, sel))
                continue;
            /* The headers must still agree with pass 1. */
            int64_t len = (int64_t)h->ns - h->dpre - h->dpost;
            int32_t ti = slice_of ? slice_of[h->idx.slice] : 0;
            mrd_target *T = ti >= 0 ? &tg[ti] : NULL;
            if (!T || h->tdim != s->tdim || h->channels != nc || len <= 0 || T->pos + len > T->m) {
                rc = lm_fail(err, LM_ERR_FORMAT, "%s: acquisition %llu changed while reading", path, a);
                break;
            }
            size_t want_traj = (size_t)h->ns * h->tdim;
            size_t want_data = (size_t)h->ns * h->channels * (f->data_complex ? 1 : 2);
            if (h->tdim && q->traj.len != want_traj) {
                rc = lm_fail(err, LM_ERR_FORMAT,
                             "%s: acquisition %llu stores %zu trajectory values, its header says %u "
                             "samples x %u dimensions",
                             path, a, q->traj.len, h->ns, h->tdim);
                break;
            }
            if (q->data.len != want_data) {
                rc = lm_fail(err, LM_ERR_FORMAT,
                             "%s: acquisition %llu stores %zu data values, its header says %u samples x "
                             "%u channels%s",
                             path, a, q->data.len, h->ns, h->channels,
                             f->data_complex ? "" : " x 2 (re, im)");
                break;
            }
            if ((want_traj && h->tdim && !q->traj.p) || (want_data && !q->data.p)) {
                rc = lm_fail(err, LM_ERR_FORMAT, "%s: acquisition %llu has no stored samples", path, a);
                break;
            }
            const float *tr = q->traj.p;
            const float *dv = q->data.p; /* {real, imag} compound is two floats too */
            if (!T->have_geo) {
                memcpy(T->geo, h->geo, sizeof T->geo);
                T->have_geo = 1;
            }
            const int64_t pos = T->pos, m = T->m;
            lm_kdata *kd = T->kd;
            for (int64_t j = 0; j < len && rc == LM_OK; j++) {
                int64_t smp = h->dpre + j; /* index in the stored readout */
                float *kk = T->k + 3 * (pos + j);
                if (h->tdim) {
                    for (int d = 0; d < h->tdim; d++) {
                        float v = tr[smp * h->tdim + d];
                        if (!isfinite(v)) {
                            rc = lm_fail(err, LM_ERR_FORMAT,
                                         "%s: acquisition %llu sample %lld: trajectory is not a finite number",
                                         path, a, (long long)smp);
                            break;
                        }
                        kk[d] = v;
                    }
                    if (h->tdim == 2)
                        kk[2] = tdim_eff == 3 ? (float)((double)h->idx.e2 - c2) : 0.0f;
                } else {
                    kk[0] = (float)((double)smp - (double)h->center);
                    kk[1] = (float)((double)h->idx.e1 - c1);
                    kk[2] = tdim_eff == 3 ? (float)((double)h->idx.e2 - c2) : 0.0f;
                }
                /* t = 0 at center_sample (the echo: k-space centre), both
                 * counted in the stored readout (docs/fieldmap.md) */
                if (T->t && h->dwell_us > 0 && isfinite(h->dwell_us))
                    T->t[pos + j] = (float)(((double)smp - (double)h->center) * (double)h->dwell_us * 1e-6);
                else if (T->t)
                    T->no_dwell = 1;
                for (int64_t c = 0; c < nc && rc == LM_OK; c++) {
                    const float *p = dv + 2 * ((size_t)c * h->ns + (size_t)smp);
                    if (!isfinite(p[0]) || !isfinite(p[1])) {
                        rc = lm_fail(err, LM_ERR_FORMAT,
                                     "%s: acquisition %llu sample %lld channel %lld is not a finite number",
                                     path, a, (long long)smp, (long long)c);
                        break;
                    }
                    /* complex float is laid out as float[2] (C11 6.2.5) */
                    float *dst = (float *)&kd->d[(size_t)c * (size_t)m + (size_t)(pos + j)];
                    dst[0] = p[0];
                    dst[1] = p[1];
                }
            }
            T->pos += len;
            total += len;
        }
        H5Dvlen_reclaim(f->types.acq, ms, H5P_DEFAULT, buf);
        H5Sclose(ms);
    }
    free(buf);
    if (rc == LM_OK && total != s->m)
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: acquisitions changed while reading", path);
    return rc;
}

static lm_code mrd_units_from_env(const char *path, lm_mrd_units *u, lm_error *err)
{
    return lm_mrd_units_env(path, u, err);
}

typedef struct mrd_summary {
    mrd_scan scan;          /* slice_m not kept */
    mrd_sel sel;
    lm_mrd_header hdr;
    lm_mrd_units units_used; /* NORMALIZED or CYCLES for stored trajectories */
    const char *units_why;
    double kmax_stored;
    int ndim;
    int has_times, file_has_dwell; /* sample times from sample_time_us */
    double t_lo, t_hi;
} mrd_summary;

/* Slices sorted by position along the first slice's slice_dir, ties by index. */
static double sort_dir[3];

static int slice_cmp(const void *a, const void *b)
{
    const lm_mrd_slice *x = a, *y = b;
    double dx = dot3(x->position, sort_dir), dy = dot3(y->position, sort_dir);
    if (dx < dy)
        return -1;
    if (dx > dy)
        return 1;
    return (x->index > y->index) - (x->index < y->index);
}

static void targets_free(mrd_target *tg, lm_traj **tr, lm_kdata **kd, int n)
{
    for (int i = 0; i < n; i++) {
        lm_traj_free(tr[i]);
        lm_kdata_free(kd[i]);
    }
    free(tg);
    free(tr);
    free(kd);
}

/* Locked: the caller holds h5_quiet. allow_slices: return multi-slice 2D
 * data in out->slices (else such files are refused when out is given). */
static lm_code mrd_load(const char *path, const lm_mrd_opts *o, int allow_slices, lm_mrd *out, mrd_summary *sum,
                        lm_error *err)
{
    mrd_file f;
    lm_code rc = mrd_file_open(path, &f, err);
    if (rc != LM_OK)
        return rc;
    mrd_scan s;
    memset(&s, 0, sizeof s);
    mrd_sel sel;
    int32_t *slice_of = NULL;
    mrd_target *tg = NULL;
    lm_traj **trs = NULL;
    lm_kdata **kds = NULL;
    lm_kdata *nk = NULL;
    int nt = 0;
    rc = scan_select(&f, path, o, &sel, err);
    if (rc == LM_OK)
        rc = scan_headers(&f, path, &sel, &s, err);
    if (rc != LM_OK)
        goto done;
    const lm_mrd_header *h = &f.hdr;
    if (sum) {
        sum->scan = s;
        sum->scan.slice_m = NULL;
        sum->sel = sel;
        sum->hdr = *h;
    }
    if (s.nslices > 1 && h->matrix[2] > 1) {
        rc = lm_fail(err, LM_ERR_UNSUPPORTED,
                     "%s: slices %u..%u of a 3D encoding (z = %lld): multi-slab data are not supported", path,
                     s.lo[0], s.hi[0], (long long)h->matrix[2]);
        goto done;
    }
    if (s.nslices > 1 && out && !allow_slices) {
        rc = lm_fail(err, LM_ERR_UNSUPPORTED,
                     "%s: holds %d slices (idx.slice %u..%u): reconstruct them with larmor-cli recon", path,
                     s.nslices, s.lo[0], s.hi[0]);
        goto done;
    }

    /* Dimensionality. */
    int ndim;
    if (s.tdim == 3)
        ndim = 3;
    else if (h->matrix[2] > 1)
        ndim = 3; /* Cartesian 3D, or a 2D trajectory per kz partition (stack of stars/spirals) */
    else {
        ndim = 2;
        if (s.e2_max > 0) {
            rc = lm_fail(err, LM_ERR_FORMAT,
                         "%s: kspace_encode_step_2 reaches %u but the encoded matrix has z = 1", path,
                         s.e2_max);
            goto done;
        }
    }

    if (s.noise_channels && s.noise_channels != s.channels) {
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: noise scans have %lld channels but the imaging data %lld", path,
                     (long long)s.noise_channels, (long long)s.channels);
        goto done;
    }

    /* One target per slice, in idx.slice order. */
    nt = s.nslices;
    slice_of = malloc(65536 * sizeof *slice_of);
    tg = calloc((size_t)nt, sizeof *tg);
    trs = calloc((size_t)nt, sizeof *trs);
    kds = calloc((size_t)nt, sizeof *kds);
    if (!slice_of || !tg || !trs || !kds) {
        rc = lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    for (int v = 0, i = 0; v < 65536; v++) {
        slice_of[v] = -1;
        if (s.slice_m[v] > 0 && i < nt) {
            slice_of[v] = i;
            tg[i].m = s.slice_m[v];
            i++;
        }
    }
    for (int i = 0; i < nt && rc == LM_OK; i++) {
        trs[i] = lm_traj_new(tg[i].m, ndim, err);
        kds[i] = trs[i] ? lm_kdata_new(tg[i].m, s.channels, err) : NULL;
        if (!trs[i] || !kds[i])
            rc = err ? err->code : LM_ERR_NOMEM;
        else {
            tg[i].k = trs[i]->k;
            tg[i].kd = kds[i];
            if (f.has_dwell) {
                rc = lm_traj_alloc_times(trs[i], err);
                tg[i].t = trs[i]->t;
            }
        }
    }
    if (rc == LM_OK && s.noise_m > 0 && out && !(nk = lm_kdata_new(s.noise_m, s.noise_channels, err)))
        rc = err ? err->code : LM_ERR_NOMEM;
    if (rc != LM_OK) {
        if (err) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            lm_fail(err, rc, "%s: %s", path, msg);
        }
        goto done;
    }
    rc = read_samples(&f, path, &s, &sel, tg, nt > 1 ? slice_of : NULL, ndim, nk, err);
    if (rc != LM_OK)
        goto done;
    /* Times only when every acquisition gave its dwell time. */
    double tlo = INFINITY, thi = -INFINITY;
    for (int i = 0; i < nt; i++) {
        if (trs[i]->t && tg[i].no_dwell) {
            free(trs[i]->t);
            trs[i]->t = NULL;
        }
        for (int64_t j = 0; trs[i]->t && j < trs[i]->m; j++) {
            tlo = fmin(tlo, trs[i]->t[j]);
            thi = fmax(thi, trs[i]->t[j]);
        }
    }

    /* Units of a stored trajectory. */
    double kmax = 0;
    lm_mrd_units used = LM_MRD_UNITS_CYCLES;
    const char *why = "derived from the encoding counters";
    if (s.tdim > 0) {
        for (int ti = 0; ti < nt; ti++)
            for (int64_t i = 0; i < tg[ti].m; i++)
                for (int d = 0; d < s.tdim; d++) {
                    double v = fabs(tg[ti].k[3 * i + d]);
                    if (v > kmax)
                        kmax = v;
                }
        if (o->units != LM_MRD_UNITS_AUTO) {
            used = o->units;
            why = "as asked";
        } else if (h->larmor_units >= 0) {
            used = (lm_mrd_units)h->larmor_units;
            why = "as tagged by Larmor in the header";
        } else if (kmax <= 0.5) {
            used = LM_MRD_UNITS_NORMALIZED;
            why = "max |k| <= 0.5: taken as normalised to the matrix";
        } else {
            used = LM_MRD_UNITS_CYCLES;
            why = "max |k| > 0.5: taken as cycles/FOV";
        }
        for (int ti = 0; ti < nt; ti++) {
            lm_traj *t = trs[ti];
            if (used == LM_MRD_UNITS_NORMALIZED)
                for (int64_t i = 0; i < t->m; i++)
                    for (int d = 0; d < s.tdim; d++)
                        t->k[3 * i + d] *= (float)h->matrix[d];
            if (s.tdim == 3 && h->matrix[2] == 1) {
                for (int64_t i = 0; i < t->m; i++)
                    if (t->k[3 * i + 2] != 0) {
                        rc = lm_fail(err, LM_ERR_FORMAT,
                                     "%s: 3-D trajectory (kz = %g at sample %lld) but the encoded matrix has z = 1",
                                     path, (double)t->k[3 * i + 2], (long long)i);
                        goto done;
                    }
                t->ndim = 2;
            }
        }
    }
    for (int ti = 0; ti < nt; ti++) {
        if (h->larmor_readout >= 0 && h->larmor_readout <= trs[ti]->m)
            trs[ti]->readout = h->larmor_readout;
        else
            trs[ti]->readout = s.readout <= trs[ti]->m ? s.readout : 0;
    }
    if (sum) {
        sum->units_used = used;
        sum->units_why = why;
        sum->kmax_stored = kmax;
        sum->ndim = nt ? trs[0]->ndim : ndim;
        sum->has_times = nt && trs[0]->t != NULL;
        sum->t_lo = tlo;
        sum->t_hi = thi;
        sum->file_has_dwell = f.has_dwell;
    }
    if (out) {
        lm_geom_init(&out->geom, h->matrix[0], h->matrix[1], h->matrix[2], h->fov_mm[0]);
        for (int a = 0; a < 3; a++)
            out->geom.fov_mm[a] = h->fov_mm[a];
        out->noise = nk;
        nk = NULL;
        out->cartesian = s.tdim == 0;
        out->nslices = nt;
        out->repetition = sel.repetition;
        out->contrast = sel.contrast;
        out->nrepetitions = sel.nrep;
        out->ncontrasts = sel.ncon;
        if (nt == 1) {
            out->traj = trs[0];
            out->kdata = kds[0];
            trs[0] = NULL;
            kds[0] = NULL;
        } else {
            out->slices = calloc((size_t)nt, sizeof *out->slices);
            if (!out->slices) {
                rc = lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path);
                lm_mrd_clear(out);
                goto done;
            }
            for (int v = 0; v < 65536; v++) {
                int i = slice_of[v];
                if (i < 0)
                    continue;
                lm_mrd_slice *sl = &out->slices[i];
                sl->traj = trs[i];
                sl->kdata = kds[i];
                trs[i] = NULL;
                kds[i] = NULL;
                sl->index = v;
                for (int a = 0; a < 3; a++) {
                    sl->position[a] = tg[i].geo[0][a];
                    sl->read_dir[a] = tg[i].geo[1][a];
                    sl->phase_dir[a] = tg[i].geo[2][a];
                    sl->slice_dir[a] = tg[i].geo[3][a];
                }
            }
            double sd[3];
            if (unit3(out->slices[0].slice_dir, sd)) {
                /* sort_dir is shared: the caller holds the reader's lock */
                memcpy(sort_dir, sd, sizeof sd);
                qsort(out->slices, (size_t)nt, sizeof *out->slices, slice_cmp);
            }
        }
    }
done:
    if (tg)
        targets_free(tg, trs, kds, nt);
    lm_kdata_free(nk);
    free(slice_of);
    free(s.slice_m);
    mrd_file_close(&f);
    return rc;
}

lm_code lm_mrd_read_opts(const char *path, const lm_mrd_opts *opts, lm_mrd *out, lm_error *err)
{
    if (!out)
        return lm_fail(err, LM_ERR_INVALID, "%s: no output for the ISMRMRD reader", path ? path : "");
    memset(out, 0, sizeof *out);
    lm_mrd_opts def;
    lm_mrd_opts_init(&def);
    if (!opts)
        opts = &def;
    h5_quiet q;
    h5_quiet_begin(&q);
    lm_code rc = mrd_load(path, opts, 1, out, NULL, err);
    h5_quiet_end(&q);
    return rc;
}

lm_code lm_mrd_read_units(const char *path, lm_mrd_units units, lm_mrd *out, lm_error *err)
{
    if (!out)
        return lm_fail(err, LM_ERR_INVALID, "%s: no output for the ISMRMRD reader", path ? path : "");
    memset(out, 0, sizeof *out);
    lm_mrd_opts o;
    lm_mrd_opts_init(&o);
    o.units = units;
    h5_quiet q;
    h5_quiet_begin(&q);
    lm_code rc = mrd_load(path, &o, 0, out, NULL, err);
    h5_quiet_end(&q);
    return rc;
}

lm_code lm_mrd_read(const char *path, lm_mrd *out, lm_error *err)
{
    lm_mrd_units u;
    if (out)
        memset(out, 0, sizeof *out);
    lm_code rc = mrd_units_from_env(path, &u, err);
    if (rc != LM_OK)
        return rc;
    return lm_mrd_read_units(path, u, out, err);
}

/* ------------------------------------------------------------------------ */
/* Info                                                                      */
/* ------------------------------------------------------------------------ */

typedef struct strbuf {
    char *s;
    size_t len, cap;
    int failed;
} strbuf;

static void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap ? b->cap * 2 : 1024) + (size_t)n;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
}

lm_code lm_mrd_info(const char *path, char **text, lm_error *err)
{
    if (!text)
        return lm_fail(err, LM_ERR_INVALID, "%s: no output for the ISMRMRD summary", path ? path : "");
    *text = NULL;
    lm_mrd_units u;
    lm_code rc = mrd_units_from_env(path, &u, err);
    if (rc != LM_OK)
        return rc;
    mrd_summary sm;
    memset(&sm, 0, sizeof sm);
    h5_quiet q;
    h5_quiet_begin(&q);
    lm_mrd_opts o;
    lm_mrd_opts_init(&o);
    o.units = u;
    rc = mrd_load(path, &o, 1, NULL, &sm, err);
    h5_quiet_end(&q);
    if (rc != LM_OK)
        return rc;
    const mrd_scan *s = &sm.scan;
    const lm_mrd_header *h = &sm.hdr;
    strbuf b = {0};
    sb_printf(&b, "%s: ISMRMRD (MRD) HDF5\n", path);
    sb_printf(&b, "  acquisitions: %llu (%llu imaging, %llu noise, %llu other non-imaging skipped",
              (unsigned long long)s->total, (unsigned long long)s->kept, (unsigned long long)s->noise,
              (unsigned long long)s->other_skipped);
    if (s->other_encoding)
        sb_printf(&b, ", %llu of other encodings skipped", (unsigned long long)s->other_encoding);
    if (s->empty)
        sb_printf(&b, ", %llu empty", (unsigned long long)s->empty);
    if (s->other_sel)
        sb_printf(&b, ", %llu of other repetitions/contrasts skipped", (unsigned long long)s->other_sel);
    sb_printf(&b, ")\n");
    const mrd_sel *sel = &sm.sel;
    sb_printf(&b, "  repetitions: %d (%d..%d), reading %d\n", sel->nrep, sel->rep_lo, sel->rep_hi, sel->repetition);
    sb_printf(&b, "  contrasts: %d (%d..%d), reading %d\n", sel->ncon, sel->con_lo, sel->con_hi, sel->contrast);
    if (s->nslices > 1)
        sb_printf(&b, "  slices: %d (idx.slice %u..%u), 2D multi-slice: reconstructed slice by slice and stacked\n",
                  s->nslices, s->lo[0], s->hi[0]);
    else
        sb_printf(&b, "  slices: 1 (idx.slice %u)\n", s->lo[0]);
    sb_printf(&b, "  channels: %lld\n", (long long)s->channels);
    if (s->noise_m > 0)
        sb_printf(&b, "  noise scans: %lld samples per channel (used to prewhiten)\n", (long long)s->noise_m);
    if (s->ns_min == s->ns_max)
        sb_printf(&b, "  samples per acquisition: %lld", (long long)s->ns_min);
    else
        sb_printf(&b, "  samples per acquisition: %lld..%lld", (long long)s->ns_min, (long long)s->ns_max);
    if (s->dpre || s->dpost)
        sb_printf(&b, " (discarding %lld before, %lld after)", (long long)s->dpre, (long long)s->dpost);
    sb_printf(&b, "\n  samples kept: %lld per channel\n", (long long)s->m);
    if (s->tdim == 0)
        sb_printf(&b, "  trajectory: Cartesian, derived from the encoding counters (%dD)\n", sm.ndim);
    else
        sb_printf(&b, "  trajectory: non-Cartesian, %d dimensions stored, %dD; units %s (%s; stored max |k| %.4g)\n",
                  s->tdim, sm.ndim, lm_mrd_units_name(sm.units_used), sm.units_why, sm.kmax_stored);
    if (sm.has_times)
        sb_printf(&b, "  sample times: [%g, %g] s (sample_time_us, t = 0 at center_sample)\n", sm.t_lo, sm.t_hi);
    else
        sb_printf(&b, "  sample times: none (%s)\n", sm.file_has_dwell ? "sample_time_us is 0" : "no sample_time_us");
    sb_printf(&b, "  header trajectory: %s\n", h->trajectory[0] ? h->trajectory : "(none)");
    sb_printf(&b, "  encoded matrix: %lld x %lld x %lld, FOV %g x %g x %g mm\n", (long long)h->matrix[0],
              (long long)h->matrix[1], (long long)h->matrix[2], h->fov_mm[0], h->fov_mm[1], h->fov_mm[2]);
    if (h->recon_matrix[0] > 0)
        sb_printf(&b, "  recon matrix: %lld x %lld x %lld, FOV %g x %g x %g mm\n",
                  (long long)h->recon_matrix[0], (long long)h->recon_matrix[1], (long long)h->recon_matrix[2],
                  h->recon_fov_mm[0], h->recon_fov_mm[1], h->recon_fov_mm[2]);
    if (h->encodings > 1)
        sb_printf(&b, "  encodings: %d (only the first is read)\n", h->encodings);
    if (b.failed) {
        free(b.s);
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory for the summary", path);
    }
    *text = b.s;
    return LM_OK;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */
/* ------------------------------------------------------------------------ */

static const char *const traj_names[] = {"cartesian", "epi", "radial", "goldenangle", "spiral", "other"};

/* nslices, nrep, ncon > 1 add their encodingLimits (0..n-1). */
static char *make_xml(const lm_geom *g, int64_t ncoils, int64_t nacq, int64_t readout, const char *traj,
                      int nslices, int rep, int con)
{
    strbuf b = {0};
    sb_printf(&b, "<?xml version=\"1.0\"?>\n"
                  "<ismrmrdHeader xmlns=\"http://www.ismrm.org/ISMRMRD\" "
                  "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
                  "xmlns:xs=\"http://www.w3.org/2001/XMLSchema\" "
                  "xsi:schemaLocation=\"http://www.ismrm.org/ISMRMRD ismrmrd.xsd\">\n");
    sb_printf(&b, "  <version>%d</version>\n", ISMRMRD_XMLHDR_VERSION);
    sb_printf(&b, "  <acquisitionSystemInformation>\n    <receiverChannels>%lld</receiverChannels>\n"
                  "  </acquisitionSystemInformation>\n", (long long)ncoils);
    sb_printf(&b, "  <experimentalConditions>\n    <H1resonanceFrequency_Hz>63870000</H1resonanceFrequency_Hz>\n"
                  "  </experimentalConditions>\n");
    sb_printf(&b, "  <encoding>\n");
    static const char *const space[2] = {"encodedSpace", "reconSpace"};
    for (int sp = 0; sp < 2; sp++)
        sb_printf(&b, "    <%s>\n      <matrixSize><x>%lld</x><y>%lld</y><z>%lld</z></matrixSize>\n"
                      "      <fieldOfView_mm><x>%.17g</x><y>%.17g</y><z>%.17g</z></fieldOfView_mm>\n    </%s>\n",
                  space[sp], (long long)g->n[0], (long long)g->n[1], (long long)g->n[2], g->fov_mm[0],
                  g->fov_mm[1], g->fov_mm[2], space[sp]);
    sb_printf(&b, "    <encodingLimits>\n      <kspace_encoding_step_1><minimum>0</minimum>"
                  "<maximum>%lld</maximum><center>0</center></kspace_encoding_step_1>\n",
              (long long)(nacq - 1 > 65535 ? 65535 : nacq - 1));
    /* the MRD schema's order: slice, contrast, phase, repetition */
    if (nslices > 1)
        sb_printf(&b, "      <slice><minimum>0</minimum><maximum>%d</maximum><center>0</center></slice>\n",
                  nslices - 1);
    if (con > 0)
        sb_printf(&b, "      <contrast><minimum>0</minimum><maximum>%d</maximum><center>0</center></contrast>\n",
                  con);
    if (rep > 0)
        sb_printf(&b, "      <repetition><minimum>0</minimum><maximum>%d</maximum><center>0</center></repetition>\n",
                  rep);
    sb_printf(&b, "    </encodingLimits>\n");
    sb_printf(&b, "    <trajectory>%s</trajectory>\n", traj);
    sb_printf(&b, "    <trajectoryDescription>\n      <identifier>larmor</identifier>\n"
                  "      <userParameterLong><name>k_units_cycles_per_fov</name><value>1</value></userParameterLong>\n"
                  "      <userParameterLong><name>readout</name><value>%lld</value></userParameterLong>\n"
                  "      <comment>trajectory in cycles per field of view along each axis (Larmor)</comment>\n"
                  "    </trajectoryDescription>\n",
              (long long)readout);
    sb_printf(&b, "  </encoding>\n</ismrmrdHeader>\n");
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

static lm_code mrd_fail_lib(lm_error *err, const char *path, const char *what)
{
    if (mrd_last_error[0])
        return lm_fail(err, LM_ERR_IO, "%s: %s (libismrmrd: %s)", path, what, mrd_last_error);
    return lm_fail(err, LM_ERR_IO, "%s: %s", path, what);
}

/* One slice (or the only one) to write: its acquisitions carry idx.slice
 * and, when geo is not NULL, its position and directions. */
typedef struct wpart {
    const lm_traj *t;
    const lm_kdata *k;
    int slice;
    const lm_mrd_slice *geo;
} wpart;

/* Sample times as MRD holds them: t_j = (j - center_sample) * dwell. Set
 * only when the readout's times are of that form (else the file has none). */
static void set_dwell(ISMRMRD_AcquisitionHeader *hd, const float *t, int64_t ns)
{
    if (ns < 2)
        return;
    const double dt = (double)t[1] - (double)t[0];
    if (!(dt > 0) || !isfinite(dt))
        return;
    const double c = -(double)t[0] / dt;
    const double ci = nearbyint(c);
    if (fabs(c - ci) > 1e-3 || ci < 0 || ci > 65535)
        return;
    for (int64_t j = 0; j < ns; j++)
        if (fabs((double)t[j] - ((double)j - ci) * dt) > 1e-3 * dt)
            return;
    hd->sample_time_us = (float)(dt * 1e6);
    hd->center_sample = (uint16_t)ci;
}

/* Samples per acquisition of a part. */
static int64_t part_per(const lm_traj *t)
{
    int64_t per = t->readout > 0 ? t->readout : (t->m < 4096 ? t->m : 4096);
    return per > 65535 ? 65535 : per;
}

static lm_code check_part(const char *path, const wpart *p, const wpart *first, lm_error *err)
{
    const lm_traj *t = p->t;
    const lm_kdata *k = p->k;
    if (!t || !k || !t->k || !k->d)
        return lm_fail(err, LM_ERR_INVALID, "%s: nothing to write", path);
    if (t->m != k->m || t->m <= 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: trajectory has %lld samples, k-space %lld", path,
                       (long long)t->m, (long long)k->m);
    if (t->ndim != 2 && t->ndim != 3)
        return lm_fail(err, LM_ERR_INVALID, "%s: trajectory in %d dimensions", path, t->ndim);
    if (k->ncoils < 1 || k->ncoils > 65535)
        return lm_fail(err, LM_ERR_INVALID, "%s: %lld channels (ISMRMRD holds 1..65535)", path,
                       (long long)k->ncoils);
    /* what the reader refuses is not written */
    if (p != first && (k->ncoils != first->k->ncoils || t->ndim != first->t->ndim))
        return lm_fail(err, LM_ERR_INVALID,
                       "%s: slice %d has %lld channels in %d dimensions, the first %lld in %d", path, p->slice,
                       (long long)k->ncoils, t->ndim, (long long)first->k->ncoils, first->t->ndim);
    for (int64_t i = 0; i < 3 * t->m; i++)
        if (!isfinite(t->k[i]))
            return lm_fail(err, LM_ERR_INVALID, "%s: trajectory sample %lld is not a finite number", path,
                           (long long)(i / 3));
    return LM_OK;
}

static void set_mask(ISMRMRD_AcquisitionHeader *hd, int64_t nc)
{
    hd->available_channels = (uint16_t)nc;
    hd->active_channels = (uint16_t)nc;
    for (int64_t c = 0; c < nc && c < 64 * ISMRMRD_CHANNEL_MASKS; c++)
        hd->channel_mask[c / 64] |= (uint64_t)1 << (c % 64);
}

static lm_code mrd_write_parts(const char *path, const lm_geom *g, const wpart *parts, int nparts,
                               const lm_kdata *noise, int rep, int con, const char *trajectory, lm_error *err)
{
    if (!path || !*path)
        return lm_fail(err, LM_ERR_INVALID, "empty ISMRMRD output file name");
    if (!g || nparts < 1 || !parts)
        return lm_fail(err, LM_ERR_INVALID, "%s: nothing to write", path);
    if (!trajectory)
        trajectory = "other";
    int known = 0;
    for (size_t i = 0; i < sizeof traj_names / sizeof traj_names[0]; i++)
        known |= strcmp(trajectory, traj_names[i]) == 0;
    if (!known)
        return lm_fail(err, LM_ERR_INVALID,
                       "%s: ISMRMRD trajectory '%s' unknown (cartesian, epi, radial, goldenangle, spiral, other)",
                       path, trajectory);
    for (int a = 0; a < 3; a++) {
        if (g->n[a] < 1 || g->n[a] > 65535)
            return lm_fail(err, LM_ERR_INVALID, "%s: matrix %lldx%lldx%lld out of ISMRMRD's range", path,
                           (long long)g->n[0], (long long)g->n[1], (long long)g->n[2]);
        if (!(g->fov_mm[a] > 0) || !isfinite(g->fov_mm[a]))
            return lm_fail(err, LM_ERR_INVALID, "%s: field of view %gx%gx%g mm is invalid", path,
                           g->fov_mm[0], g->fov_mm[1], g->fov_mm[2]);
    }
    if (nparts > 1 && g->n[2] != 1)
        return lm_fail(err, LM_ERR_INVALID, "%s: %d slices need a 2D matrix (z = 1), not %lldx%lldx%lld", path,
                       nparts, (long long)g->n[0], (long long)g->n[1], (long long)g->n[2]);
    if (rep < 0 || rep > 65535 || con < 0 || con > 65535)
        return lm_fail(err, LM_ERR_INVALID, "%s: repetition %d or contrast %d out of ISMRMRD's range 0..65535", path,
                       rep, con);
    int64_t nacq = 0, maxacq = 0, readout = parts[0].t && parts[0].t->readout > 0 ? parts[0].t->readout : 0;
    for (int p = 0; p < nparts; p++) {
        lm_code rc = check_part(path, &parts[p], &parts[0], err);
        if (rc != LM_OK)
            return rc;
        if (parts[p].slice < 0 || parts[p].slice > 65535)
            return lm_fail(err, LM_ERR_INVALID, "%s: slice index %d out of ISMRMRD's range 0..65535", path,
                           parts[p].slice);
        for (int q = 0; q < p; q++)
            if (parts[q].slice == parts[p].slice)
                return lm_fail(err, LM_ERR_INVALID, "%s: two slices with index %d", path, parts[p].slice);
        if ((parts[p].t->readout > 0 ? parts[p].t->readout : 0) != readout)
            readout = 0; /* the header's tag holds one readout length: "unknown" */
        int64_t n = (parts[p].t->m + part_per(parts[p].t) - 1) / part_per(parts[p].t);
        nacq += n;
        maxacq = n > maxacq ? n : maxacq;
    }
    const int64_t nc = parts[0].k->ncoils;
    int64_t noise_per = 4096, nnoise = 0;
    if (noise) {
        if (!noise->d || noise->m < 1 || noise->ncoils != nc)
            return lm_fail(err, LM_ERR_INVALID, "%s: noise samples have %lld channels but the k-space has %lld", path,
                           (long long)noise->ncoils, (long long)nc);
        nnoise = (noise->m + noise_per - 1) / noise_per;
    }
    if ((uint64_t)(nacq + nnoise) > (uint64_t)UINT32_MAX)
        return lm_fail(err, LM_ERR_INVALID, "%s: too many readouts (%lld)", path, (long long)(nacq + nnoise));

    char *xml = make_xml(g, nc, maxacq, readout, trajectory, nparts, rep, con);
    if (!xml)
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory for the XML header", path);

    lm_atomic at;
    lm_code rc = lm_atomic_begin(&at, path, 0, err);
    if (rc != LM_OK) {
        free(xml);
        return rc;
    }

    h5_quiet q;
    h5_quiet_begin(&q);
    mrd_last_error[0] = '\0';
    ismrmrd_set_error_handler(mrd_error_handler);
    ISMRMRD_Dataset d;
    memset(&d, 0, sizeof d);
    int opened = 0;
    ISMRMRD_Acquisition acq;
    int acq_init = 0;
    uint32_t counter = 0;
    if (ismrmrd_init_dataset(&d, at.tmp_path, "/dataset") != ISMRMRD_NOERROR) {
        rc = mrd_fail_lib(err, path, "cannot start the ISMRMRD file");
        goto out;
    }
    if (ismrmrd_open_dataset(&d, true) != ISMRMRD_NOERROR) {
        rc = mrd_fail_lib(err, path, "cannot create the ISMRMRD file");
        goto out;
    }
    opened = 1;
    if (ismrmrd_write_header(&d, xml) != ISMRMRD_NOERROR) {
        rc = mrd_fail_lib(err, path, "cannot write the XML header");
        goto out;
    }
    if (ismrmrd_init_acquisition(&acq) != ISMRMRD_NOERROR) {
        rc = mrd_fail_lib(err, path, "cannot make an acquisition");
        goto out;
    }
    acq_init = 1;
    /* Noise scans first, as scanners record them: no trajectory. */
    for (int64_t j = 0; j < nnoise; j++) {
        int64_t s0 = j * noise_per, ns = noise->m - s0 < noise_per ? noise->m - s0 : noise_per;
        ISMRMRD_AcquisitionHeader *hd = &acq.head;
        ismrmrd_init_acquisition_header(hd);
        hd->number_of_samples = (uint16_t)ns;
        set_mask(hd, nc);
        hd->trajectory_dimensions = 0;
        hd->scan_counter = counter++;
        hd->idx.repetition = (uint16_t)rep;
        hd->idx.contrast = (uint16_t)con;
        ismrmrd_set_flag(&hd->flags, ISMRMRD_ACQ_IS_NOISE_MEASUREMENT);
        if (ismrmrd_make_consistent_acquisition(&acq) != ISMRMRD_NOERROR) {
            rc = mrd_fail_lib(err, path, "out of memory for an acquisition");
            goto out;
        }
        for (int64_t c = 0; c < nc; c++)
            memcpy(acq.data + c * ns, noise->d + (size_t)c * (size_t)noise->m + (size_t)s0,
                   (size_t)ns * sizeof(lm_cfloat));
        if (ismrmrd_append_acquisition(&d, &acq) != ISMRMRD_NOERROR) {
            rc = mrd_fail_lib(err, path, "cannot write an acquisition (disk full?)");
            goto out;
        }
    }
    for (int p = 0; p < nparts; p++) {
        const lm_traj *t = parts[p].t;
        const lm_kdata *k = parts[p].k;
        const int64_t per = part_per(t), n = (t->m + per - 1) / per;
        for (int64_t j = 0; j < n; j++) {
            int64_t s0 = j * per, ns = t->m - s0 < per ? t->m - s0 : per;
            ISMRMRD_AcquisitionHeader *hd = &acq.head;
            ismrmrd_init_acquisition_header(hd);
            hd->number_of_samples = (uint16_t)ns;
            set_mask(hd, nc);
            hd->trajectory_dimensions = (uint16_t)t->ndim;
            hd->center_sample = 0;
            if (t->t)
                set_dwell(hd, t->t + s0, ns);
            hd->scan_counter = counter++;
            hd->idx.kspace_encode_step_1 = (uint16_t)(j > 65535 ? 65535 : j);
            hd->idx.slice = (uint16_t)parts[p].slice;
            hd->idx.repetition = (uint16_t)rep;
            hd->idx.contrast = (uint16_t)con;
            if (parts[p].geo) {
                for (int a = 0; a < 3; a++) {
                    hd->position[a] = (float)parts[p].geo->position[a];
                    hd->read_dir[a] = (float)parts[p].geo->read_dir[a];
                    hd->phase_dir[a] = (float)parts[p].geo->phase_dir[a];
                    hd->slice_dir[a] = (float)parts[p].geo->slice_dir[a];
                }
            } else {
                hd->read_dir[0] = 1.0f;
                hd->phase_dir[1] = 1.0f;
                hd->slice_dir[2] = 1.0f;
            }
            if (j == 0)
                ismrmrd_set_flag(&hd->flags, ISMRMRD_ACQ_FIRST_IN_SLICE);
            if (j == n - 1) {
                ismrmrd_set_flag(&hd->flags, ISMRMRD_ACQ_LAST_IN_SLICE);
                if (p == nparts - 1)
                    ismrmrd_set_flag(&hd->flags, ISMRMRD_ACQ_LAST_IN_MEASUREMENT);
            }
            if (ismrmrd_make_consistent_acquisition(&acq) != ISMRMRD_NOERROR) {
                rc = mrd_fail_lib(err, path, "out of memory for an acquisition");
                goto out;
            }
            for (int64_t i = 0; i < ns; i++)
                for (int a = 0; a < t->ndim; a++)
                    acq.traj[i * t->ndim + a] = t->k[3 * (s0 + i) + a];
            /* data are channels x samples, samples fastest: every channel of this readout */
            for (int64_t c = 0; c < nc; c++)
                memcpy(acq.data + c * ns, k->d + (size_t)c * (size_t)k->m + (size_t)s0,
                       (size_t)ns * sizeof(lm_cfloat));
            if (ismrmrd_append_acquisition(&d, &acq) != ISMRMRD_NOERROR) {
                rc = mrd_fail_lib(err, path, "cannot write an acquisition (disk full?)");
                goto out;
            }
        }
    }
out:
    if (acq_init)
        ismrmrd_cleanup_acquisition(&acq);
    if (opened && ismrmrd_close_dataset(&d) != ISMRMRD_NOERROR && rc == LM_OK)
        rc = mrd_fail_lib(err, path, "cannot close the ISMRMRD file");
    free(d.filename);
    free(d.groupname);
    h5_quiet_end(&q);
    free(xml);
    if (rc == LM_OK)
        return lm_atomic_commit(&at, err);
    lm_atomic_abort(&at);
    return rc;
}

lm_code lm_mrd_write_named(const char *path, const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                           const char *trajectory, lm_error *err)
{
    const wpart p = {t, k, 0, NULL};
    if (!t || !k)
        return lm_fail(err, LM_ERR_INVALID, "%s: nothing to write", path ? path : "");
    return mrd_write_parts(path, g, &p, 1, NULL, 0, 0, trajectory, err);
}

lm_code lm_mrd_write(const char *path, const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                     lm_error *err)
{
    return lm_mrd_write_named(path, g, t, k, NULL, err);
}

lm_code lm_mrd_write_dataset(const char *path, const lm_mrd *m, const char *trajectory, lm_error *err)
{
    if (!m)
        return lm_fail(err, LM_ERR_INVALID, "%s: nothing to write", path ? path : "");
    const int rep = m->repetition > 0 ? m->repetition : 0, con = m->contrast > 0 ? m->contrast : 0;
    if (m->nslices <= 1 || !m->slices) {
        const wpart p = {m->traj, m->kdata, 0, NULL};
        return mrd_write_parts(path, &m->geom, &p, 1, m->noise, rep, con, trajectory, err);
    }
    wpart *parts = calloc((size_t)m->nslices, sizeof *parts);
    if (!parts)
        return lm_fail(err, LM_ERR_NOMEM, "%s: out of memory", path ? path : "");
    for (int i = 0; i < m->nslices; i++)
        parts[i] = (wpart){m->slices[i].traj, m->slices[i].kdata, m->slices[i].index, &m->slices[i]};
    lm_code rc = mrd_write_parts(path, &m->geom, parts, m->nslices, m->noise, rep, con, trajectory, err);
    free(parts);
    return rc;
}

#endif /* LM_HAVE_ISMRMRD */
