/* MRD connection configuration: the options a client may set. Options
 * that name files (--sens, --ref, --noise, --out, ...) do not exist here:
 * the server never reads or writes a file a client names. */
#include "lm_mrd_config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "larmor.h"

#define MRD_PRESET_MAX_BYTES (64 * 1024)

void lm_mrd_job_opts_init(lm_mrd_job_opts *o)
{
    memset(o, 0, sizeof *o);
    lm_recon_opts_init(&o->recon);
}

static lm_code parse_num(const char *opt, const char *v, double *out, lm_error *err)
{
    char *end;
    errno = 0;
    const double d = strtod(v, &end);
    if (end == v || *end || errno || !isfinite(d))
        return lm_fail(err, LM_ERR_INVALID, "%s: '%s' is not a number", opt, v);
    *out = d;
    return LM_OK;
}

static lm_code parse_count(const char *opt, const char *v, long lo, long hi, int *out, lm_error *err)
{
    double d = 0;
    if (parse_num(opt, v, &d, err) != LM_OK)
        return err->code;
    if (d != floor(d) || d < lo || d > hi)
        return lm_fail(err, LM_ERR_INVALID, "%s: '%s' is not an integer in %ld..%ld", opt, v, lo, hi);
    *out = (int)d;
    return LM_OK;
}

static lm_code parse_matrix(const char *v, int64_t n[3], lm_error *err)
{
    long long a = 0, b = 0, c = 1;
    char tail;
    const int k = sscanf(v, "%lldx%lldx%lld%c", &a, &b, &c, &tail);
    if (k == 1 && !strchr(v, 'x'))
        b = c = a; /* N: NxNxN, as larmor-cli recon */
    else if (k != 2 && k != 3)
        return lm_fail(err, LM_ERR_INVALID, "--matrix: '%s' is not N, NXxNY or NXxNYxNZ", v);
    if (a < 1 || b < 1 || c < 1 || a > 4096 || b > 4096 || c > 4096)
        return lm_fail(err, LM_ERR_INVALID, "--matrix: '%s' is out of 1..4096", v);
    n[0] = a, n[1] = b, n[2] = c;
    return LM_OK;
}

/* "true"/"1"/"yes"/"on" or false-like; anything else refused. */
static lm_code parse_bool(const char *opt, const char *v, int *out, lm_error *err)
{
    if (!v || !strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "on"))
        *out = 1;
    else if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "off"))
        *out = 0;
    else
        return lm_fail(err, LM_ERR_INVALID, "%s: '%s' is not true or false", opt, v);
    return LM_OK;
}

/* The options, by name without dashes; flag: takes no value on the command
 * line (a Gadgetron parameter gives true/false). */
static const struct {
    const char *name;
    int flag;
} known[] = {
    {"method", 0}, {"variant", 0}, {"lambda", 0}, {"lambda-criterion", 0}, {"reg", 0}, {"iters", 0},
    {"tol", 0}, {"matrix", 0}, {"coil-combine", 0}, {"coils-compress", 0}, {"fallback", 0},
    {"no-cache", 1}, {"complex", 1}, {"dirac", 1}, {"realtime", 0},
};

static int find_known(const char *name)
{
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(known[i].name, name))
            return (int)i;
    return -1;
}

/* One option; name without dashes, '_' already turned into '-'. */
static lm_code apply_one(lm_mrd_job_opts *o, const char *name, const char *v, lm_error *err)
{
    lm_recon_opts *r = &o->recon;
    int on = 1;
    if (!strcmp(name, "method")) {
        if (lm_method_parse(v, &r->method, err) != LM_OK)
            return err->code;
        o->method_given = 1;
    } else if (!strcmp(name, "variant")) {
        if (strlen(v) >= sizeof o->variant)
            return lm_fail(err, LM_ERR_INVALID, "--variant: '%s' is too long", v);
        snprintf(o->variant, sizeof o->variant, "%s", v);
        r->variant = o->variant;
    } else if (!strcmp(name, "lambda")) {
        if (!strcmp(v, "auto"))
            r->lambda_auto = 1;
        else if (parse_num("--lambda", v, &r->lambda, err) != LM_OK)
            return err->code;
        else if (r->lambda < 0)
            return lm_fail(err, LM_ERR_INVALID, "--lambda must be >= 0 or auto (got %s)", v);
        else
            r->lambda_auto = 0;
    } else if (!strcmp(name, "lambda-criterion")) {
        if (lm_lambda_criterion_parse(v, &r->lambda_criterion, err) != LM_OK)
            return err->code;
    } else if (!strcmp(name, "reg")) {
        if (lm_reg_parse(v, &r->reg, err) != LM_OK)
            return err->code;
        if (lm_reg_weighted(r->reg))
            return lm_fail(err, LM_ERR_INVALID, "--reg %s needs a reference image, which a stream does not carry", v);
    } else if (!strcmp(name, "iters")) {
        if (parse_count("--iters", v, 0, 100000, &r->iters, err) != LM_OK)
            return err->code;
        o->iters_given = 1;
    } else if (!strcmp(name, "tol")) {
        if (parse_num("--tol", v, &r->tol, err) != LM_OK)
            return err->code;
    } else if (!strcmp(name, "matrix")) {
        if (parse_matrix(v, o->matrix, err) != LM_OK)
            return err->code;
    } else if (!strcmp(name, "coil-combine")) {
        if (lm_coil_combine_parse(v, &r->combine, err) != LM_OK)
            return err->code;
    } else if (!strcmp(name, "coils-compress")) {
        if (!strcmp(v, "auto"))
            r->compress_coils = -1;
        else if (parse_count("--coils-compress", v, 1, 1024, &r->compress_coils, err) != LM_OK)
            return err->code;
    } else if (!strcmp(name, "fallback")) {
        if (lm_fallback_parse(v, &r->fallback, err) != LM_OK)
            return err->code;
    } else if (!strcmp(name, "no-cache")) {
        if (parse_bool("--no-cache", v, &on, err) != LM_OK)
            return err->code;
        r->use_cache = !on;
    } else if (!strcmp(name, "complex")) {
        if (parse_bool("--complex", v, &o->as_complex, err) != LM_OK)
            return err->code;
    } else if (!strcmp(name, "dirac")) {
        if (parse_bool("--dirac", v, &o->dirac, err) != LM_OK)
            return err->code;
    } else if (!strcmp(name, "realtime")) {
        if (lm_sliding_parse(v, &o->rt_window, &o->rt_step, err) != LM_OK)
            return err->code;
    } else {
        return lm_fail(err, LM_ERR_INVALID, "unknown option --%s (docs/mrd-server.md lists them)", name);
    }
    return LM_OK;
}

/* The checks larmor-cli recon makes once all options are in. */
static lm_code check_all(const lm_mrd_job_opts *o, lm_error *err)
{
    const lm_recon_opts *r = &o->recon;
    if (r->lambda_criterion != LM_LAMBDA_DEFAULT && !r->lambda_auto)
        return lm_fail(err, LM_ERR_INVALID, "--lambda-criterion needs --lambda auto");
    if (r->lambda_auto && o->method_given && r->method != LM_METHOD_CG)
        return lm_fail(err, LM_ERR_INVALID, "--lambda auto applies to --method cg only");
    if (o->rt_window && (r->lambda_auto || (o->method_given && r->method != LM_METHOD_CG) ||
                         r->reg != LM_REG_IDENTITY))
        return lm_fail(err, LM_ERR_INVALID, "--realtime reconstructs by CG with Tikhonov (identity) and a fixed "
                       "--lambda: drop --lambda auto, --method and --reg");
    return LM_OK;
}

static lm_code apply_cli(lm_mrd_job_opts *o, const char *text, lm_error *err)
{
    char *copy = strdup(text), *save = NULL;
    if (!copy)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    lm_code rc = LM_OK;
    for (char *t = strtok_r(copy, " \t\r\n", &save); t && rc == LM_OK; t = strtok_r(NULL, " \t\r\n", &save)) {
        if (strncmp(t, "--", 2) != 0 || !t[2]) {
            rc = lm_fail(err, LM_ERR_INVALID, "configuration: '%s' is not an option (--name value)", t);
            break;
        }
        char *name = t + 2, *eq = strchr(name, '=');
        const char *v = NULL;
        if (eq) {
            *eq = '\0';
            v = eq + 1;
        }
        const int k = find_known(name);
        if (k < 0) {
            rc = lm_fail(err, LM_ERR_INVALID, "unknown option --%s (docs/mrd-server.md lists them)", name);
            break;
        }
        if (!v && !known[k].flag && !(v = strtok_r(NULL, " \t\r\n", &save))) {
            rc = lm_fail(err, LM_ERR_INVALID, "--%s needs a value", name);
            break;
        }
        rc = apply_one(o, name, v, err);
    }
    free(copy);
    return rc == LM_OK ? check_all(o, err) : rc;
}

/* Gadgetron parameters: <parameter name="lambda" value="0.01"/> anywhere,
 * or <property><name>lambda</name><value>0.01</value></property>; names
 * with '_' or '-' alike. Names Larmor does not know are skipped: a chain's
 * configuration also holds its other nodes' parameters. */
static lm_code apply_param(lm_mrd_job_opts *o, const char *name, const char *value, lm_error *err)
{
    char n[64];
    if (!name || !value || strlen(name) >= sizeof n)
        return LM_OK;
    size_t i = 0;
    for (; name[i]; i++)
        n[i] = name[i] == '_' ? '-' : (char)tolower((unsigned char)name[i]);
    n[i] = '\0';
    if (find_known(n) < 0)
        return LM_OK;
    return apply_one(o, n, value, err);
}

static char *child_text(xmlNode *parent, const char *tag)
{
    for (xmlNode *c = parent->children; c; c = c->next)
        if (c->type == XML_ELEMENT_NODE && !xmlStrcmp(c->name, (const xmlChar *)tag))
            return (char *)xmlNodeGetContent(c);
    return NULL;
}

static lm_code walk(lm_mrd_job_opts *o, xmlNode *n, int depth, lm_error *err)
{
    if (depth > 64)
        return lm_fail(err, LM_ERR_INVALID, "configuration XML nests too deep");
    for (; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE)
            continue;
        lm_code rc = LM_OK;
        char *name = NULL, *value = NULL;
        if (!xmlStrcmp(n->name, (const xmlChar *)"parameter")) {
            name = (char *)xmlGetProp(n, (const xmlChar *)"name");
            value = (char *)xmlGetProp(n, (const xmlChar *)"value");
        } else if (!xmlStrcmp(n->name, (const xmlChar *)"property")) {
            name = child_text(n, "name");
            value = child_text(n, "value");
        }
        if (name || value) {
            rc = apply_param(o, name, value, err);
            xmlFree(name);
            xmlFree(value);
        } else {
            rc = walk(o, n->children, depth + 1, err);
        }
        if (rc != LM_OK)
            return rc;
    }
    return LM_OK;
}

static lm_code apply_xml(lm_mrd_job_opts *o, const char *text, lm_error *err)
{
    const size_t len = strlen(text);
    if (len > (size_t)1 << 24)
        return lm_fail(err, LM_ERR_INVALID, "configuration XML of %zu bytes is too long", len);
    /* no network, no entity expansion, no DTD loading */
    xmlDoc *doc = xmlReadMemory(text, (int)len, "config.xml", NULL, XML_PARSE_NONET | XML_PARSE_NOERROR |
                                XML_PARSE_NOWARNING);
    if (!doc)
        return lm_fail(err, LM_ERR_INVALID, "configuration: not well-formed XML");
    lm_code rc = walk(o, xmlDocGetRootElement(doc), 0, err);
    xmlFreeDoc(doc);
    return rc == LM_OK ? check_all(o, err) : rc;
}

lm_code lm_mrd_config_apply(lm_mrd_job_opts *o, const char *text, lm_error *err)
{
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    return *p == '<' ? apply_xml(o, p, err) : apply_cli(o, p, err);
}

static int preset_name_ok(const char *name)
{
    const size_t n = strlen(name);
    if (n == 0 || n > 64 || name[0] == '.' || strstr(name, ".."))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '.' && name[i] != '_' && name[i] != '-')
            return 0;
    return 1;
}

lm_code lm_mrd_config_preset(lm_mrd_job_opts *o, const char *dir, const char *name, lm_error *err)
{
    if (!preset_name_ok(name))
        return lm_fail(err, LM_ERR_INVALID, "CONFIG_FILE '%.80s': not a preset name (letters, digits, '.', '_', "
                       "'-'; no path)", name);
    const size_t n = strlen(name);
    const int has_ext = n > 5 && !strcmp(name + n - 5, ".conf");
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s%s", dir, name, has_ext ? "" : ".conf") >= (int)sizeof path)
        return lm_fail(err, LM_ERR_INVALID, "CONFIG_FILE '%s': the preset folder's path is too long", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return lm_fail(err, LM_ERR_INVALID, "CONFIG_FILE '%s': no such preset", name); /* no server path told */
    char *text = malloc(MRD_PRESET_MAX_BYTES + 1);
    size_t got = text ? fread(text, 1, MRD_PRESET_MAX_BYTES + 1, f) : 0;
    fclose(f);
    if (!text)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    if (got > MRD_PRESET_MAX_BYTES) {
        free(text);
        return lm_fail(err, LM_ERR_INVALID, "CONFIG_FILE '%s': the preset is over %d bytes", name,
                       MRD_PRESET_MAX_BYTES);
    }
    text[got] = '\0';
    /* '#' starts a comment to the end of the line */
    for (char *c = text; (c = strchr(c, '#'));)
        while (*c && *c != '\n')
            *c++ = ' ';
    lm_code rc = lm_mrd_config_apply(o, text, err);
    free(text);
    return rc;
}
