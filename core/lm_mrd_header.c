/* The MRD XML header: parsed with libxml2 (a tree, then a walk that picks
 * out what Larmor uses by element path) and made with libxml2's writer, so
 * text from a caller is escaped. Needs no libismrmrd: tested and fuzzed on
 * its own. */
#include "lm_config.h"

#include "lm_mrd_private.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlwriter.h>

/* The schema version Larmor's headers declare (libismrmrd 1.8's). */
#define MRD_XMLHDR_VERSION 8
#define XML_MAX_DEPTH 64
#define XML_PATH_MAX 256

typedef struct xml_ctx {
    const char *what;
    lm_error *err;
    lm_mrd_header *out;
    int enc_index;         /* index of the <encoding> being read */
    /* trajectoryDescription state */
    char desc_id[32];
    char upl_name[64];
    int upl_has_value;
    long long upl_value;
    /* userParameters/userParameterString being read */
    char ups_name[64], ups_value[32];
    int has_units_tag, units_tag;
    int has_readout_tag;
    long long readout_tag;
} xml_ctx;

/* Control characters from the file would break the one-line messages
 * (found by fuzz_mrd_xml: a value holding a newline). */
static void printable(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

static void trim(const char **s, size_t *len)
{
    while (*len && isspace((unsigned char)**s)) {
        (*s)++;
        (*len)--;
    }
    while (*len && isspace((unsigned char)(*s)[*len - 1]))
        (*len)--;
}

/* Copies the trimmed text into buf, control characters replaced; 0 if it
 * does not fit. */
static int leaf_text(const char *s, size_t len, char *buf, size_t cap)
{
    trim(&s, &len);
    if (len >= cap)
        return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    printable(buf);
    return 1;
}

/* As leaf_text, but text too long is cut at a UTF-8 character boundary. */
static void leaf_string(const char *s, size_t len, char *buf, size_t cap)
{
    trim(&s, &len);
    if (len >= cap) {
        len = cap - 1;
        while (len && ((unsigned char)s[len] & 0xC0) == 0x80)
            len--; /* s[len] continues a character: cut before it */
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    printable(buf);
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

/* Text leaves of the provenance, by path below the root. */
#define PROV(path, field) {path, offsetof(lm_mrd_provenance, field), sizeof(((lm_mrd_provenance *)0)->field)}
static const struct {
    const char *path;
    size_t offset, cap;
} prov_text[] = {
    PROV("subjectInformation/patientName", patient_name),
    PROV("subjectInformation/patientID", patient_id),
    PROV("subjectInformation/patientBirthdate", patient_birthdate),
    PROV("subjectInformation/patientGender", patient_gender),
    PROV("studyInformation/studyInstanceUID", study_instance_uid),
    PROV("studyInformation/studyID", study_id),
    PROV("studyInformation/accessionNumber", accession_number),
    PROV("studyInformation/studyDate", study_date),
    PROV("studyInformation/studyTime", study_time),
    PROV("studyInformation/studyDescription", study_description),
    PROV("measurementInformation/measurementID", measurement_id),
    PROV("measurementInformation/patientPosition", patient_position),
    PROV("measurementInformation/protocolName", protocol_name),
    PROV("measurementInformation/seriesDescription", series_description),
    PROV("measurementInformation/frameOfReferenceUID", frame_of_reference_uid),
    PROV("acquisitionSystemInformation/systemVendor", system_vendor),
    PROV("acquisitionSystemInformation/systemModel", system_model),
};

/* A leaf element: path is relative to the root ("encoding/..."). */
static lm_code xml_leaf(xml_ctx *c, const char *path, const char *text, size_t tlen)
{
    lm_mrd_header *h = c->out;
    lm_mrd_provenance *pv = &h->prov;
    for (size_t i = 0; i < sizeof prov_text / sizeof prov_text[0]; i++)
        if (strcmp(path, prov_text[i].path) == 0) {
            leaf_string(text, tlen, (char *)pv + prov_text[i].offset, prov_text[i].cap);
            return LM_OK;
        }
    int a;
    if (strncmp(path, "measurementInformation/relativeTablePosition/", 45) == 0 && (a = axis_of(path + 45)) >= 0) {
        pv->has_table_position = 1;
        return leaf_double(c, path, text, tlen, &pv->relative_table_position[a]);
    }
    if (strcmp(path, "acquisitionSystemInformation/systemFieldStrength_T") == 0) {
        lm_code rc = leaf_double(c, path, text, tlen, &pv->field_strength_t);
        if (rc == LM_OK && pv->field_strength_t < 0)
            return lm_fail(c->err, LM_ERR_FORMAT, "%s: XML header: %s = %g is negative", c->what, path,
                           pv->field_strength_t);
        return rc;
    }
    if (strcmp(path, "experimentalConditions/H1resonanceFrequency_Hz") == 0)
        return leaf_int(c, path, text, tlen, 0, 100000000000LL, &pv->h1_frequency_hz);
    if (strcmp(path, "userParameters/userParameterString/name") == 0) {
        if (!leaf_text(text, tlen, c->ups_name, sizeof c->ups_name))
            c->ups_name[0] = '\0';
        return LM_OK;
    }
    if (strcmp(path, "userParameters/userParameterString/value") == 0) {
        if (!leaf_text(text, tlen, c->ups_value, sizeof c->ups_value))
            c->ups_value[0] = '\0';
        return LM_OK;
    }
    if (strcmp(path, "acquisitionSystemInformation/receiverChannels") == 0)
        return leaf_int(c, path, text, tlen, 0, 65535, &h->receiver_channels);
    if (strncmp(path, "encoding/", 9) != 0 || c->enc_index != 0)
        return LM_OK;
    const char *rest = path + 9;
    if (strncmp(rest, "encodedSpace/matrixSize/", 24) == 0 && (a = axis_of(rest + 24)) >= 0)
        return leaf_int(c, path, text, tlen, 0, 65535, &h->matrix[a]);
    if (strncmp(rest, "encodedSpace/fieldOfView_mm/", 28) == 0 && (a = axis_of(rest + 28)) >= 0)
        return leaf_double(c, path, text, tlen, &h->fov_mm[a]);
    if (strncmp(rest, "reconSpace/matrixSize/", 22) == 0 && (a = axis_of(rest + 22)) >= 0)
        return leaf_int(c, path, text, tlen, 0, 65535, &h->recon_matrix[a]);
    if (strncmp(rest, "reconSpace/fieldOfView_mm/", 26) == 0 && (a = axis_of(rest + 26)) >= 0)
        return leaf_double(c, path, text, tlen, &h->recon_fov_mm[a]);
    if (strcmp(rest, "parallelImaging/accelerationFactor/kspace_encoding_step_1") == 0)
        return leaf_int(c, path, text, tlen, 0, 65535, &h->parallel.accel[0]);
    if (strcmp(rest, "parallelImaging/accelerationFactor/kspace_encoding_step_2") == 0)
        return leaf_int(c, path, text, tlen, 0, 65535, &h->parallel.accel[1]);
    if (strcmp(rest, "parallelImaging/calibrationMode") == 0) {
        leaf_string(text, tlen, h->parallel.calibration_mode, sizeof h->parallel.calibration_mode);
        return LM_OK;
    }
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
    if (strcmp(path, "userParameters/userParameterString") == 0) {
        c->ups_name[0] = c->ups_value[0] = '\0';
    } else if (strcmp(path, "encoding") == 0) {
        c->out->encodings++;
        c->enc_index++;
    } else if (c->enc_index == 0 && strcmp(path, "encoding/trajectoryDescription") == 0) {
        c->desc_id[0] = '\0';
    } else if (c->enc_index == 0 && strcmp(path, "encoding/trajectoryDescription/userParameterLong") == 0) {
        c->upl_name[0] = '\0';
        c->upl_has_value = 0;
    }
}

static void xml_close(xml_ctx *c, const char *path)
{
    if (strcmp(path, "userParameters/userParameterString") == 0 && lm_nucleus_parameter_name(c->ups_name)) {
        const char *t = lm_nucleus_term(c->ups_value); /* unrecognised text names nothing */
        if (t)
            snprintf(c->out->prov.nucleus, sizeof c->out->prov.nucleus, "%s", t);
        return;
    }
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
        c->has_units_tag = c->has_readout_tag = 0;
    }
}

/* The text of an element holding no element: its text and CDATA children
 * joined (entity references are not expanded: no entity reaches a value).
 * NULL when out of memory. */
static char *leaf_content(const xmlNode *n, size_t *len)
{
    size_t total = 0;
    for (const xmlNode *k = n->children; k; k = k->next)
        if ((k->type == XML_TEXT_NODE || k->type == XML_CDATA_SECTION_NODE) && k->content)
            total += strlen((const char *)k->content);
    char *s = malloc(total + 1);
    if (!s)
        return NULL;
    size_t at = 0;
    for (const xmlNode *k = n->children; k; k = k->next)
        if ((k->type == XML_TEXT_NODE || k->type == XML_CDATA_SECTION_NODE) && k->content) {
            size_t l = strlen((const char *)k->content);
            memcpy(s + at, k->content, l);
            at += l;
        }
    s[at] = '\0';
    *len = at;
    return s;
}

static int has_element_child(const xmlNode *n)
{
    for (const xmlNode *k = n->children; k; k = k->next)
        if (k->type == XML_ELEMENT_NODE)
            return 1;
    return 0;
}

/* Visits n and the elements below it; path holds n's path below the root
 * (plen bytes, "" for the root), depth counts n. */
static lm_code walk(xml_ctx *c, const xmlNode *n, char *path, size_t plen, int depth)
{
    if (depth > XML_MAX_DEPTH)
        return lm_fail(c->err, LM_ERR_FORMAT, "%s: XML header: elements nested deeper than %d", c->what,
                       XML_MAX_DEPTH);
    const int fits = plen < XML_PATH_MAX; /* a path too long matches nothing Larmor reads */
    if (depth > 1 && fits)
        xml_open(c, path);
    lm_code rc = LM_OK;
    if (has_element_child(n)) {
        for (const xmlNode *k = n->children; k && rc == LM_OK; k = k->next) {
            if (k->type != XML_ELEMENT_NODE)
                continue;
            size_t nl = strlen((const char *)k->name), at = plen;
            char sub[XML_PATH_MAX + 2];
            if (fits && plen + nl + 2 <= XML_PATH_MAX) {
                memcpy(sub, path, plen);
                if (plen)
                    sub[at++] = '/';
                memcpy(sub + at, k->name, nl);
                at += nl;
                sub[at] = '\0';
            } else {
                sub[0] = '\0';
                at = XML_PATH_MAX; /* does not fit */
            }
            rc = walk(c, k, sub, at, depth + 1);
        }
    } else if (depth > 1 && fits && n->children) {
        size_t tlen = 0;
        char *text = leaf_content(n, &tlen);
        if (!text)
            return lm_fail(c->err, LM_ERR_NOMEM, "%s: XML header: out of memory", c->what);
        rc = xml_leaf(c, path, text, tlen);
        free(text);
    }
    if (rc == LM_OK && depth > 1 && fits)
        xml_close(c, path);
    return rc;
}

static pthread_once_t xml_once = PTHREAD_ONCE_INIT;

static void xml_init(void)
{
    xmlInitParser();
}

/* One line from libxml2's error: its message, the line, and a hint when the
 * text simply stops. */
static lm_code parse_fail(const char *what, const xmlError *e, lm_error *err)
{
    if (!e || !e->message)
        return lm_fail(err, LM_ERR_FORMAT, "%s: XML header is not well-formed XML", what);
    char msg[200];
    snprintf(msg, sizeof msg, "%s", e->message);
    size_t n = strlen(msg);
    while (n && isspace((unsigned char)msg[n - 1]))
        msg[--n] = '\0';
    printable(msg);
    const int truncated = e->code == XML_ERR_TAG_NOT_FINISHED || e->code == XML_ERR_GT_REQUIRED ||
                          e->code == XML_ERR_COMMENT_NOT_FINISHED || e->code == XML_ERR_LTSLASH_REQUIRED ||
                          e->code == XML_ERR_CDATA_NOT_FINISHED ||
                          e->code == XML_ERR_PI_NOT_FINISHED;
    return lm_fail(err, LM_ERR_FORMAT, "%s: XML header: line %d: %s%s", what, e->line, msg,
                   truncated ? " (truncated?)" : "");
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
    if (!memchr(xml, '<', len))
        return lm_fail(err, LM_ERR_FORMAT, "%s: XML header has no <ismrmrdHeader> element", what);
    if (len > INT_MAX)
        return lm_fail(err, LM_ERR_FORMAT, "%s: XML header of %zu bytes is too large", what, len);

    pthread_once(&xml_once, xml_init);
    xmlParserCtxtPtr pc = xmlNewParserCtxt();
    if (!pc)
        return lm_fail(err, LM_ERR_NOMEM, "%s: XML header: out of memory", what);
    /* No network, no DTD loading, entities left unexpanded; errors come
     * back through the context, not stderr. */
    xmlDocPtr doc = xmlCtxtReadMemory(pc, xml, (int)len, NULL, NULL,
                                      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    lm_code rc = LM_OK;
    if (!doc || !pc->wellFormed) {
        rc = parse_fail(what, xmlCtxtGetLastError(pc), err);
        goto done;
    }
    const xmlNode *root = xmlDocGetRootElement(doc);
    if (!root) {
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: XML header has no <ismrmrdHeader> element", what);
        goto done;
    }
    if (strcmp((const char *)root->name, "ismrmrdHeader") != 0) {
        char name[48];
        leaf_string((const char *)root->name, strlen((const char *)root->name), name, sizeof name);
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: XML header: root element <%s> is not <ismrmrdHeader>", what, name);
        goto done;
    }
    xml_ctx c;
    memset(&c, 0, sizeof c);
    c.what = what;
    c.err = err;
    c.out = out;
    c.enc_index = -1;
    char path[XML_PATH_MAX + 2] = "";
    rc = walk(&c, root, path, 0, 1);
    if (rc != LM_OK)
        goto done;
    lm_mrd_nucleus(&out->prov);
    if (out->encodings == 0) {
        rc = lm_fail(err, LM_ERR_FORMAT, "%s: XML header has no <encoding>", what);
        goto done;
    }
    for (int a = 0; a < 3 && rc == LM_OK; a++)
        if (out->matrix[a] <= 0)
            rc = lm_fail(err, LM_ERR_FORMAT, "%s: XML header: encoded matrix %lldx%lldx%lld is missing or zero",
                         what, (long long)out->matrix[0], (long long)out->matrix[1], (long long)out->matrix[2]);
    for (int a = 0; a < 3 && rc == LM_OK; a++)
        if (!(out->fov_mm[a] > 0))
            rc = lm_fail(err, LM_ERR_FORMAT,
                         "%s: XML header: encoded field of view %gx%gx%g mm is missing or not positive", what,
                         out->fov_mm[0], out->fov_mm[1], out->fov_mm[2]);
done:
    if (doc)
        xmlFreeDoc(doc);
    xmlFreeParserCtxt(pc);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Making a header                                                           */
/* ------------------------------------------------------------------------ */

typedef struct xw {
    xmlTextWriterPtr w;
    int failed;
} xw;

static void xw_ok(xw *x, int r)
{
    if (r < 0)
        x->failed = 1;
}

static void xw_start(xw *x, const char *name)
{
    xw_ok(x, xmlTextWriterStartElement(x->w, BAD_CAST name));
}

static void xw_end(xw *x)
{
    xw_ok(x, xmlTextWriterEndElement(x->w));
}

static void xw_text(xw *x, const char *name, const char *value)
{
    if (value && value[0])
        xw_ok(x, xmlTextWriterWriteElement(x->w, BAD_CAST name, BAD_CAST value));
}

static void xw_long(xw *x, const char *name, long long v)
{
    xw_ok(x, xmlTextWriterWriteFormatElement(x->w, BAD_CAST name, "%lld", v));
}

static void xw_double(xw *x, const char *name, double v)
{
    xw_ok(x, xmlTextWriterWriteFormatElement(x->w, BAD_CAST name, "%.17g", v));
}

static void xw_xyz_long(xw *x, const char *name, const int64_t v[3])
{
    xw_start(x, name);
    xw_long(x, "x", (long long)v[0]);
    xw_long(x, "y", (long long)v[1]);
    xw_long(x, "z", (long long)v[2]);
    xw_end(x);
}

static void xw_xyz_double(xw *x, const char *name, const double v[3])
{
    xw_start(x, name);
    xw_double(x, "x", v[0]);
    xw_double(x, "y", v[1]);
    xw_double(x, "z", v[2]);
    xw_end(x);
}

static void xw_space(xw *x, const char *name, const lm_geom *g)
{
    xw_start(x, name);
    xw_xyz_long(x, "matrixSize", g->n);
    xw_xyz_double(x, "fieldOfView_mm", g->fov_mm);
    xw_end(x);
}

static void xw_limit(xw *x, const char *name, long long max)
{
    xw_start(x, name);
    xw_long(x, "minimum", 0);
    xw_long(x, "maximum", max);
    xw_long(x, "center", 0);
    xw_end(x);
}

static void xw_user_long(xw *x, const char *name, long long v)
{
    xw_start(x, "userParameterLong");
    xw_text(x, "name", name);
    xw_long(x, "value", v);
    xw_end(x);
}

/* The provenance sections, in the schema's order (before experimentalConditions). */
static void xw_provenance(xw *x, const lm_mrd_provenance *p)
{
    if (p->patient_name[0] || p->patient_id[0] || p->patient_birthdate[0] || p->patient_gender[0]) {
        xw_start(x, "subjectInformation");
        xw_text(x, "patientName", p->patient_name);
        xw_text(x, "patientID", p->patient_id);
        xw_text(x, "patientBirthdate", p->patient_birthdate);
        xw_text(x, "patientGender", p->patient_gender);
        xw_end(x);
    }
    if (p->study_date[0] || p->study_time[0] || p->study_id[0] || p->accession_number[0] ||
        p->study_description[0] || p->study_instance_uid[0]) {
        xw_start(x, "studyInformation");
        xw_text(x, "studyDate", p->study_date);
        xw_text(x, "studyTime", p->study_time);
        xw_text(x, "studyID", p->study_id);
        xw_text(x, "accessionNumber", p->accession_number);
        xw_text(x, "studyDescription", p->study_description);
        xw_text(x, "studyInstanceUID", p->study_instance_uid);
        xw_end(x);
    }
    if (p->patient_position[0]) {
        xw_start(x, "measurementInformation");
        xw_text(x, "measurementID", p->measurement_id);
        xw_text(x, "patientPosition", p->patient_position);
        if (p->has_table_position)
            xw_xyz_double(x, "relativeTablePosition", p->relative_table_position);
        xw_text(x, "protocolName", p->protocol_name);
        xw_text(x, "seriesDescription", p->series_description);
        xw_text(x, "frameOfReferenceUID", p->frame_of_reference_uid);
        xw_end(x);
    }
}

char *lm_mrd_header_make(const lm_geom *g, const lm_geom *recon, int64_t ncoils, int64_t nacq, int64_t readout,
                         const char *trajectory, int nslices, int rep, int con, const lm_mrd_provenance *prov,
                         const lm_mrd_parallel *par)
{
    static const lm_mrd_provenance none;
    if (!prov)
        prov = &none;
    pthread_once(&xml_once, xml_init);
    xmlBufferPtr buf = xmlBufferCreate();
    if (!buf)
        return NULL;
    xw x = {xmlNewTextWriterMemory(buf, 0), 0};
    if (!x.w) {
        xmlBufferFree(buf);
        return NULL;
    }
    xw_ok(&x, xmlTextWriterSetIndent(x.w, 1));
    xw_ok(&x, xmlTextWriterSetIndentString(x.w, BAD_CAST "  "));
    xw_ok(&x, xmlTextWriterStartDocument(x.w, "1.0", "UTF-8", NULL));
    xw_start(&x, "ismrmrdHeader");
    xw_ok(&x, xmlTextWriterWriteAttribute(x.w, BAD_CAST "xmlns", BAD_CAST "http://www.ismrm.org/ISMRMRD"));
    xw_ok(&x, xmlTextWriterWriteAttribute(x.w, BAD_CAST "xmlns:xsi",
                                          BAD_CAST "http://www.w3.org/2001/XMLSchema-instance"));
    xw_ok(&x, xmlTextWriterWriteAttribute(x.w, BAD_CAST "xmlns:xs", BAD_CAST "http://www.w3.org/2001/XMLSchema"));
    xw_ok(&x, xmlTextWriterWriteAttribute(x.w, BAD_CAST "xsi:schemaLocation",
                                          BAD_CAST "http://www.ismrm.org/ISMRMRD ismrmrd.xsd"));
    xw_long(&x, "version", MRD_XMLHDR_VERSION);
    xw_provenance(&x, prov);
    xw_start(&x, "acquisitionSystemInformation");
    xw_text(&x, "systemVendor", prov->system_vendor);
    xw_text(&x, "systemModel", prov->system_model);
    if (prov->field_strength_t > 0)
        xw_double(&x, "systemFieldStrength_T", prov->field_strength_t);
    xw_long(&x, "receiverChannels", (long long)ncoils);
    xw_end(&x);
    xw_start(&x, "experimentalConditions");
    /* required by the schema: 1.5 T's proton frequency when unknown */
    xw_long(&x, "H1resonanceFrequency_Hz", prov->h1_frequency_hz > 0 ? (long long)prov->h1_frequency_hz : 63870000);
    xw_end(&x);
    xw_start(&x, "encoding");
    xw_space(&x, "encodedSpace", g);
    xw_space(&x, "reconSpace", recon && recon->n[0] > 0 ? recon : g);
    xw_start(&x, "encodingLimits");
    xw_limit(&x, "kspace_encoding_step_1", nacq - 1 > 65535 ? 65535 : nacq - 1);
    /* the MRD schema's order: slice, contrast, phase, repetition */
    if (nslices > 1)
        xw_limit(&x, "slice", nslices - 1);
    if (con > 0)
        xw_limit(&x, "contrast", con);
    if (rep > 0)
        xw_limit(&x, "repetition", rep);
    xw_end(&x);
    xw_text(&x, "trajectory", trajectory);
    xw_start(&x, "trajectoryDescription");
    xw_text(&x, "identifier", "larmor");
    xw_user_long(&x, "k_units_cycles_per_fov", 1);
    xw_user_long(&x, "readout", (long long)readout);
    xw_text(&x, "comment", "trajectory in cycles per field of view along each axis (Larmor)");
    xw_end(&x);
    if (par && (par->accel[0] > 0 || par->accel[1] > 0)) {
        xw_start(&x, "parallelImaging");
        xw_start(&x, "accelerationFactor");
        xw_long(&x, "kspace_encoding_step_1", (long long)(par->accel[0] > 0 ? par->accel[0] : 1));
        xw_long(&x, "kspace_encoding_step_2", (long long)(par->accel[1] > 0 ? par->accel[1] : 1));
        xw_end(&x);
        xw_text(&x, "calibrationMode", par->calibration_mode);
        xw_end(&x);
    }
    xw_end(&x); /* encoding */
    xw_end(&x); /* ismrmrdHeader */
    xw_ok(&x, xmlTextWriterEndDocument(x.w));
    xmlFreeTextWriter(x.w); /* flushes into buf */
    char *s = NULL;
    if (!x.failed) {
        const char *c = (const char *)xmlBufferContent(buf);
        s = c ? strdup(c) : NULL;
    }
    xmlBufferFree(buf);
    return s;
}

/* Text a header can hold: UTF-8 without control characters. */
static int text_ok(const char *s, size_t cap)
{
    size_t n = strnlen(s, cap);
    if (n == cap)
        return 0; /* not terminated */
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    return xmlCheckUTF8((const unsigned char *)s) != 0;
}

lm_code lm_mrd_provenance_check(const lm_mrd_provenance *p, const char *path, lm_error *err)
{
    for (size_t i = 0; i < sizeof prov_text / sizeof prov_text[0]; i++)
        if (!text_ok((const char *)p + prov_text[i].offset, prov_text[i].cap))
            return lm_fail(err, LM_ERR_INVALID, "%s: provenance %s is not UTF-8 text without control characters",
                           path, prov_text[i].path);
    if (!(p->field_strength_t >= 0) || !isfinite(p->field_strength_t))
        return lm_fail(err, LM_ERR_INVALID, "%s: provenance field strength %g T is not a non-negative number", path,
                       p->field_strength_t);
    for (int a = 0; a < 3 && p->has_table_position; a++)
        if (!isfinite(p->relative_table_position[a]))
            return lm_fail(err, LM_ERR_INVALID, "%s: provenance table position is not finite", path);
    if (p->h1_frequency_hz < 0)
        return lm_fail(err, LM_ERR_INVALID, "%s: provenance H1 frequency %lld Hz is negative", path,
                       (long long)p->h1_frequency_hz);
    if (!p->patient_position[0] && (p->measurement_id[0] || p->protocol_name[0] || p->series_description[0] ||
                                    p->frame_of_reference_uid[0] || p->has_table_position))
        return lm_fail(err, LM_ERR_INVALID,
                       "%s: provenance has measurement information but no patient position (MRD requires one)", path);
    return LM_OK;
}
