/* Larmor on plain arrays (larmor_arrays.h): jobs and sessions over
 * lm_recon_run and lm_recon_session, the Fourier operator, and the
 * benchmark phantoms, copying at the boundary so that a binding's arrays
 * never alias the library's. */
#include "larmor_arrays.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm_backend.h"
#include "lm_config.h"
#include "lm_io.h"
#include "lm_linop_fourier.h"
#include "lm_recon.h"
#include "lm_recon_session.h"
#include "lm_trajgen.h"

struct larmor_job {
    lm_geom g;
    lm_traj *t;
    lm_kdata *k;
    lm_sens *sens;
    float *fieldmap;
    lm_recon_opts o;
    char variant[64];
};

const char *larmor_version(void)
{
    return LM_VERSION;
}

lm_code larmor_job_new(const int64_t n[3], int64_t m, int64_t ncoils, const float *traj, const lm_cfloat *kspace,
                       larmor_job **out, lm_error *err)
{
    *out = NULL;
    if (!n || !traj || !kspace)
        return lm_fail(err, LM_ERR_INVALID, "job: missing matrix, trajectory or k-space");
    for (int a = 0; a < 3; a++)
        if (n[a] < 1 || n[a] > 4096)
            return lm_fail(err, LM_ERR_INVALID, "job: matrix %lldx%lldx%lld is out of range (1..4096 per axis)",
                           (long long)n[0], (long long)n[1], (long long)n[2]);
    if (m < 1 || ncoils < 1 || ncoils > 1024)
        return lm_fail(err, LM_ERR_INVALID, "job: %lld samples x %lld coils is out of range", (long long)m,
                       (long long)ncoils);
    larmor_job *j = lm_calloc(1, sizeof *j, err, "job");
    if (!j)
        return LM_ERR_NOMEM;
    lm_geom_init(&j->g, n[0], n[1], n[2], 240.0);
    lm_recon_opts_init(&j->o);
    j->o.use_cache = 0;
    j->t = lm_traj_new(m, n[2] > 1 ? 3 : 2, err);
    j->k = j->t ? lm_kdata_new(m, ncoils, err) : NULL;
    if (!j->k) {
        larmor_job_free(j);
        return LM_ERR_NOMEM;
    }
    memcpy(j->t->k, traj, (size_t)m * 3 * sizeof *traj);
    memcpy(j->k->d, kspace, (size_t)(m * ncoils) * sizeof *kspace);
    lm_code rc = lm_check_finite("trajectory", j->t->k, (size_t)(3 * m), err);
    if (rc == LM_OK)
        rc = lm_check_finite_complex("k-space", j->k->d, (size_t)(m * ncoils), err);
    if (rc == LM_OK)
        rc = lm_geom_check(&j->g, j->t, err);
    if (rc != LM_OK) {
        larmor_job_free(j);
        return rc;
    }
    *out = j;
    return LM_OK;
}

void larmor_job_free(larmor_job *j)
{
    if (!j)
        return;
    lm_traj_free(j->t);
    lm_kdata_free(j->k);
    lm_sens_free(j->sens);
    free(j->fieldmap);
    free(j);
}

lm_code larmor_job_set_sens(larmor_job *j, const lm_cfloat *sens, lm_error *err)
{
    if (!j || !sens)
        return lm_fail(err, LM_ERR_INVALID, "job: no coil maps");
    lm_sens *s = lm_sens_new(j->g.n, j->k->ncoils, err);
    if (!s)
        return err ? err->code : LM_ERR_NOMEM;
    memcpy(s->s, sens, (size_t)(lm_sens_voxels(s) * s->ncoils) * sizeof *sens);
    lm_code rc = lm_check_finite_complex("coil maps", s->s, (size_t)(lm_sens_voxels(s) * s->ncoils), err);
    if (rc != LM_OK) {
        lm_sens_free(s);
        return rc;
    }
    lm_sens_free(j->sens);
    j->sens = s;
    j->o.sens = s;
    return LM_OK;
}

lm_code larmor_job_set_fieldmap(larmor_job *j, const float *fieldmap, const float *times, lm_error *err)
{
    if (!j || !fieldmap || !times)
        return lm_fail(err, LM_ERR_INVALID, "job: a field map needs the sample times");
    const int64_t nv = lm_geom_voxels(&j->g), m = j->t->m;
    lm_code rc = lm_check_finite("field map", fieldmap, (size_t)nv, err);
    if (rc == LM_OK)
        rc = lm_check_finite("sample times", times, (size_t)m, err);
    if (rc == LM_OK && !j->t->t)
        rc = lm_traj_alloc_times(j->t, err);
    float *f = rc == LM_OK ? lm_alloc((size_t)nv, sizeof *f, err, "field map") : NULL;
    if (!f)
        return rc != LM_OK ? rc : LM_ERR_NOMEM;
    memcpy(f, fieldmap, (size_t)nv * sizeof *f);
    memcpy(j->t->t, times, (size_t)m * sizeof *times);
    free(j->fieldmap);
    j->fieldmap = f;
    j->o.fieldmap = f;
    return LM_OK;
}

static lm_code parse_num(const char *name, const char *value, double lo, double hi, double *out, lm_error *err)
{
    char *end = NULL;
    errno = 0;
    const double v = strtod(value, &end);
    if (errno || end == value || *end || !(v >= lo && v <= hi))
        return lm_fail(err, LM_ERR_INVALID, "%s: '%s' is not a number in [%g, %g]", name, value, lo, hi);
    *out = v;
    return LM_OK;
}

lm_code larmor_job_set(larmor_job *j, const char *name, const char *value, lm_error *err)
{
    if (!j || !name || !value)
        return lm_fail(err, LM_ERR_INVALID, "job: option without a name or value");
    lm_recon_opts *o = &j->o;
    double v = 0;
    lm_code rc = LM_OK;
    if (strcmp(name, "method") == 0)
        return lm_method_parse(value, &o->method, err);
    if (strcmp(name, "reg") == 0)
        return lm_reg_parse(value, &o->reg, err);
    if (strcmp(name, "combine") == 0)
        return lm_coil_combine_parse(value, &o->combine, err);
    if (strcmp(name, "fallback") == 0)
        return lm_fallback_parse(value, &o->fallback, err);
    if (strcmp(name, "variant") == 0) {
        if (strlen(value) >= sizeof j->variant)
            return lm_fail(err, LM_ERR_INVALID, "variant: '%s' is too long", value);
        const lm_variant *var = lm_variant_resolve(value, err);
        if (!var)
            return err ? err->code : LM_ERR_INVALID;
        strcpy(j->variant, value);
        o->variant = j->variant;
        return LM_OK;
    }
    if (strcmp(name, "lambda") == 0) {
        if (strcmp(value, "auto") == 0) {
            o->lambda_auto = 1;
            return LM_OK;
        }
        if ((rc = parse_num(name, value, 0, 1e12, &v, err)) == LM_OK)
            o->lambda = v, o->lambda_auto = 0;
        return rc;
    }
    if (strcmp(name, "segments") == 0) {
        if (strcmp(value, "auto") == 0) {
            o->segments = -1; /* LM_SEGMENTS_AUTO */
            return LM_OK;
        }
        if ((rc = parse_num(name, value, 0, 1000, &v, err)) == LM_OK && v != floor(v))
            rc = lm_fail(err, LM_ERR_INVALID, "segments: '%s' is not a whole number", value);
        if (rc == LM_OK)
            o->segments = (int)v;
        return rc;
    }
    if (strcmp(name, "iters") == 0 || strcmp(name, "threads") == 0 || strcmp(name, "cache") == 0) {
        const double hi = strcmp(name, "cache") == 0 ? 1 : 100000;
        if ((rc = parse_num(name, value, 0, hi, &v, err)) == LM_OK && v != floor(v))
            rc = lm_fail(err, LM_ERR_INVALID, "%s: '%s' is not a whole number", name, value);
        if (rc != LM_OK)
            return rc;
        if (name[0] == 'i')
            o->iters = (int)v;
        else if (name[0] == 't')
            o->threads = (int)v;
        else
            o->use_cache = (int)v;
        return LM_OK;
    }
    if (strcmp(name, "tol") == 0) {
        if ((rc = parse_num(name, value, 0, 1, &v, err)) == LM_OK)
            o->tol = v;
        return rc;
    }
    if (strcmp(name, "fov") == 0) {
        if ((rc = parse_num(name, value, 1e-3, 1e6, &v, err)) == LM_OK)
            for (int a = 0; a < 3; a++)
                j->g.fov_mm[a] = v;
        return rc;
    }
    return lm_fail(err, LM_ERR_INVALID, "unknown option '%s'", name);
}

static lm_code copy_image(const lm_volume *v, int64_t nv, lm_cfloat *image, lm_error *err)
{
    if (!v || lm_volume_count(v) != nv)
        return lm_fail(err, LM_ERR_INTERNAL, "reconstruction: no image of the job's size");
    memcpy(image, v->data, (size_t)nv * sizeof *image);
    return LM_OK;
}

lm_code larmor_job_run(larmor_job *j, lm_cfloat *image, lm_error *err)
{
    if (!j || !image)
        return lm_fail(err, LM_ERR_INVALID, "job: no image to fill");
    lm_recon_result res = {0};
    lm_code rc = lm_recon_run(&j->g, j->t, j->k, &j->o, &res, err);
    if (rc == LM_OK)
        rc = copy_image(res.image, lm_geom_voxels(&j->g), image, err);
    lm_recon_result_clear(&res);
    return rc;
}

struct larmor_session {
    lm_recon_session *s;
    int solved;
};

lm_code larmor_session_new(const larmor_job *j, larmor_session **out, lm_error *err)
{
    *out = NULL;
    if (!j)
        return lm_fail(err, LM_ERR_INVALID, "session: no job");
    if (j->o.method != LM_METHOD_CG)
        return lm_fail(err, LM_ERR_INVALID, "session: method %s has no lambda to re-solve (cg only)",
                       lm_method_name(j->o.method));
    larmor_session *s = lm_calloc(1, sizeof *s, err, "session");
    if (!s)
        return LM_ERR_NOMEM;
    lm_code rc = lm_recon_session_new(&j->g, j->t, j->k, &j->o, &s->s, err);
    if (rc != LM_OK) {
        free(s);
        return rc;
    }
    *out = s;
    return LM_OK;
}

void larmor_session_free(larmor_session *s)
{
    if (!s)
        return;
    lm_recon_session_free(&s->s);
    free(s);
}

lm_code larmor_session_solve(larmor_session *s, double lambda, int warm, lm_cfloat *image, lm_error *err)
{
    if (!s || !image)
        return lm_fail(err, LM_ERR_INVALID, "session: no image to fill");
    if (!(lambda >= 0) || !isfinite(lambda))
        return lm_fail(err, LM_ERR_INVALID, "session: lambda %g must be a finite number >= 0", lambda);
    lm_session_solve_opts p;
    lm_session_solve_opts_init(&p, s->s);
    p.lambda = lambda;
    p.warm_start = warm && s->solved;
    lm_code rc = lm_recon_session_solve(s->s, &p, image, NULL, err);
    if (rc == LM_OK)
        s->solved = 1;
    return rc;
}

lm_code larmor_nufft(int adjoint, const int64_t n[3], int64_t m, const float *traj, const char *variant,
                     const lm_cfloat *in, lm_cfloat *out, lm_error *err)
{
    if (!n || !traj || !in || !out)
        return lm_fail(err, LM_ERR_INVALID, "nufft: missing argument");
    for (int a = 0; a < 3; a++)
        if (n[a] < 1 || n[a] > 4096)
            return lm_fail(err, LM_ERR_INVALID, "nufft: matrix %lldx%lldx%lld is out of range (1..4096 per axis)",
                           (long long)n[0], (long long)n[1], (long long)n[2]);
    if (m < 1)
        return lm_fail(err, LM_ERR_INVALID, "nufft: no samples");
    lm_geom g;
    lm_geom_init(&g, n[0], n[1], n[2], 240.0);
    const int64_t nv = lm_geom_voxels(&g);
    const lm_variant *v = lm_variant_resolve(variant, err);
    if (!v)
        return err ? err->code : LM_ERR_INVALID;
    lm_traj *t = lm_traj_new(m, n[2] > 1 ? 3 : 2, err);
    if (!t)
        return LM_ERR_NOMEM;
    memcpy(t->k, traj, (size_t)(3 * m) * sizeof *traj);
    lm_backend *be = NULL;
    lm_linop *f = NULL;
    lm_cfloat *x = NULL, *y = NULL;
    lm_code rc = lm_check_finite("trajectory", t->k, (size_t)(3 * m), err);
    if (rc == LM_OK)
        rc = lm_check_finite_complex(adjoint ? "samples" : "image", in, (size_t)(adjoint ? m : nv), err);
    if (rc == LM_OK)
        rc = lm_backend_for_variant(v, 0, &be, err);
    if (rc == LM_OK)
        rc = lm_linop_fourier(be, &g, t, v, NULL, 0, &f, err);
    if (rc == LM_OK) {
        x = be->alloc(be, nv, "image");
        y = be->alloc(be, m, "samples");
        rc = be->check(be, err);
    }
    if (rc == LM_OK && adjoint) {
        be->upload(be, y, in, (size_t)m * sizeof *in);
        rc = lm_linop_adjoint(f, y, x, err);
        if (rc == LM_OK)
            be->download(be, out, x, (size_t)nv * sizeof *out);
    } else if (rc == LM_OK) {
        be->upload(be, x, in, (size_t)nv * sizeof *in);
        rc = lm_linop_apply(f, x, y, err);
        if (rc == LM_OK)
            be->download(be, out, y, (size_t)m * sizeof *out);
    }
    if (rc == LM_OK)
        rc = be->check(be, err);
    if (be) {
        be->release(be, x);
        be->release(be, y);
    }
    lm_linop_free(f);
    lm_backend_free(be);
    lm_traj_free(t);
    return rc;
}

/* ---- phantoms ---- */

struct larmor_phantom {
    lm_geom g;
    lm_traj *t;
    lm_kdata *k;
    lm_volume *truth;
    lm_sens *sens;
    float *fieldmap;
};

lm_code larmor_phantom_new(const char *problem, larmor_phantom **out, lm_error *err)
{
    *out = NULL;
    const lm_problem_def *def = lm_problem_find(problem ? problem : "", err);
    if (!def)
        return err ? err->code : LM_ERR_INVALID;
    larmor_phantom *p = lm_calloc(1, sizeof *p, err, "phantom");
    if (!p)
        return LM_ERR_NOMEM;
    lm_code rc = lm_problem_make_fieldmap(def, &p->g, &p->t, &p->k, &p->truth, &p->sens, &p->fieldmap, err);
    if (rc != LM_OK) {
        larmor_phantom_free(p);
        return rc;
    }
    *out = p;
    return LM_OK;
}

void larmor_phantom_free(larmor_phantom *p)
{
    if (!p)
        return;
    lm_traj_free(p->t);
    lm_kdata_free(p->k);
    lm_volume_free(p->truth);
    lm_sens_free(p->sens);
    free(p->fieldmap);
    free(p);
}

/* The part's values and element size; NULL for an absent part. */
static const void *part_of(const larmor_phantom *p, const char *part, int64_t dims[4], int *nd, size_t *elem)
{
    const int64_t *n = p->g.n;
    *elem = sizeof(lm_cfloat);
    if (strcmp(part, "traj") == 0) {
        *nd = 2, dims[0] = p->t->m, dims[1] = 3, *elem = sizeof(float);
        return p->t->k;
    }
    if (strcmp(part, "kspace") == 0) {
        *nd = 2, dims[0] = p->k->ncoils, dims[1] = p->k->m;
        return p->k->d;
    }
    if (strcmp(part, "truth") == 0 || strcmp(part, "fieldmap") == 0) {
        *nd = 3, dims[0] = n[2], dims[1] = n[1], dims[2] = n[0];
        if (part[0] == 'f')
            *elem = sizeof(float);
        return part[0] == 't' ? (const void *)(p->truth ? p->truth->data : NULL) : (const void *)p->fieldmap;
    }
    if (strcmp(part, "sens") == 0) {
        *nd = 4, dims[0] = p->sens ? p->sens->ncoils : 0, dims[1] = n[2], dims[2] = n[1], dims[3] = n[0];
        return p->sens ? p->sens->s : NULL;
    }
    if (strcmp(part, "times") == 0) {
        *nd = 1, dims[0] = p->t->m, *elem = sizeof(float);
        return p->t->t;
    }
    *nd = -1;
    return NULL;
}

int larmor_phantom_shape(const larmor_phantom *p, const char *part, int64_t dims[4])
{
    int nd = -1;
    size_t elem;
    if (!p || !part)
        return -1;
    const void *v = part_of(p, part, dims, &nd, &elem);
    return nd < 0 ? -1 : v ? nd : 0;
}

lm_code larmor_phantom_copy(const larmor_phantom *p, const char *part, void *dst, lm_error *err)
{
    int64_t dims[4] = {0};
    int nd = -1;
    size_t elem;
    if (!p || !part || !dst)
        return lm_fail(err, LM_ERR_INVALID, "phantom: missing argument");
    const void *v = part_of(p, part, dims, &nd, &elem);
    if (nd < 0)
        return lm_fail(err, LM_ERR_INVALID, "phantom: unknown part '%s'", part);
    if (!v)
        return lm_fail(err, LM_ERR_INVALID, "phantom: this problem has no %s", part);
    size_t count = 1;
    for (int a = 0; a < nd; a++)
        count *= (size_t)dims[a];
    memcpy(dst, v, count * elem);
    return LM_OK;
}
