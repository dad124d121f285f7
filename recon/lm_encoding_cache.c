/* Encodings kept between reconstructions (lm_encoding_cache.h). */
#include "lm_encoding_cache_impl.h"

#include <stdlib.h>
#include <string.h>

#include "lm_trace.h"

typedef struct entry {
    struct entry *prev, *next; /* most recent first */
    lm_geom g;
    lm_traj *t;                /* owned copies: the encoding borrows them */
    float *fieldmap;
    char *variant;
    int segments, seg_minmax, threads;
    lm_encoding *e;
    double bytes;
    int refs;
} entry;

struct lm_encoding_cache {
    entry *head, *tail;
    int entries;
    double bytes, cap;
    long long hits, misses, evictions;
};

lm_code lm_encoding_cache_new(double cap_bytes, lm_encoding_cache **out, lm_error *err)
{
    *out = NULL;
    if (!(cap_bytes > 0))
        return lm_fail(err, LM_ERR_INVALID, "encoding cache: the cap must be > 0 bytes (got %g)", cap_bytes);
    lm_encoding_cache *c = lm_calloc(1, sizeof *c, err, "encoding cache");
    if (!c)
        return LM_ERR_NOMEM;
    c->cap = cap_bytes;
    *out = c;
    return LM_OK;
}

static void entry_free(entry *x)
{
    if (!x)
        return;
    lm_encoding_free(x->e);
    lm_traj_free(x->t);
    free(x->fieldmap);
    free(x->variant);
    free(x);
}

static void unlink_entry(lm_encoding_cache *c, entry *x)
{
    if (x->prev)
        x->prev->next = x->next;
    else
        c->head = x->next;
    if (x->next)
        x->next->prev = x->prev;
    else
        c->tail = x->prev;
    x->prev = x->next = NULL;
}

static void push_front(lm_encoding_cache *c, entry *x)
{
    x->prev = NULL;
    x->next = c->head;
    if (c->head)
        c->head->prev = x;
    c->head = x;
    if (!c->tail)
        c->tail = x;
}

void lm_encoding_cache_free(lm_encoding_cache *c)
{
    if (!c)
        return;
    for (entry *x = c->head, *n; x; x = n) {
        n = x->next;
        entry_free(x);
    }
    free(c);
}

/* From the oldest: unused entries go while over the cap, the most recent stays. */
static void evict(lm_encoding_cache *c)
{
    for (entry *x = c->tail, *p; x && c->bytes > c->cap; x = p) {
        p = x->prev;
        if (x == c->head || x->refs > 0)
            continue;
        unlink_entry(c, x);
        c->bytes -= x->bytes;
        c->entries--;
        c->evictions++;
        entry_free(x);
        lm_trace("encoding cache: an entry evicted");
    }
}

static int same_floats(const float *a, const float *b, int64_t n)
{
    if (!a || !b)
        return a == b;
    return memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

static int matches(const entry *x, const lm_encoding_desc *d)
{
    const lm_traj *t = d->traj, *u = x->t;
    const int64_t nv = lm_geom_voxels(d->geom);
    if (memcmp(x->g.n, d->geom->n, sizeof x->g.n) || memcmp(x->g.fov_mm, d->geom->fov_mm, sizeof x->g.fov_mm) ||
        x->g.basis != d->geom->basis)
        return 0;
    if (u->m != t->m || u->ndim != t->ndim || strcmp(x->variant, d->variant ? d->variant : "") ||
        x->threads != d->threads)
        return 0;
    /* the segmentation matters only with a field map */
    if (!!x->fieldmap != !!d->fieldmap ||
        (d->fieldmap && (x->segments != d->segments || x->seg_minmax != d->seg_minmax)))
        return 0;
    return same_floats(u->k, t->k, 3 * t->m) && same_floats(u->w, t->w, t->m) && same_floats(u->t, t->t, t->m) &&
           same_floats(x->fieldmap, d->fieldmap, nv);
}

/* Bytes the entry holds: the copies, and the operator's largest parts
 * (Q's spectrum and padded grid, the segment blocks and phases, a NUFFT's
 * fine grid and samples), wherever they live. */
static double entry_bytes(const entry *x)
{
    const double m = (double)x->t->m, nv = (double)lm_geom_voxels(&x->g), p = (double)lm_q_count(x->g.n);
    double b = m * (3 + (x->t->w ? 1 : 0) + (x->t->t ? 1 : 0)) * sizeof(float);
    if (x->fieldmap)
        b += nv * sizeof(float);
    const int L = lm_encoding_segments(x->e, NULL);
    b += L > 0 ? (double)L * (L + 1) / 2 * p * sizeof(float) + 2 * p * sizeof(lm_cfloat) + L * nv * sizeof(lm_cfloat)
               : p * (sizeof(float) + sizeof(lm_cfloat));
    if (lm_encoding_variant(x->e)->approximate)
        b += p * sizeof(lm_cfloat) + m * 6 * sizeof(float);
    return b;
}

static lm_code entry_new(const lm_encoding_desc *d, entry **out, lm_error *err)
{
    *out = NULL;
    const lm_traj *t = d->traj;
    entry *x = lm_calloc(1, sizeof *x, err, "encoding cache entry");
    if (!x)
        return LM_ERR_NOMEM;
    x->g = *d->geom;
    x->segments = d->segments;
    x->seg_minmax = d->seg_minmax;
    x->threads = d->threads;
    lm_code rc = (x->variant = strdup(d->variant ? d->variant : "")) ? LM_OK
                                                                      : lm_fail(err, LM_ERR_NOMEM, "encoding cache: out of memory");
    if (rc == LM_OK && !(x->t = lm_traj_new(t->m, t->ndim, err)))
        rc = LM_ERR_NOMEM;
    if (rc == LM_OK) {
        memcpy(x->t->k, t->k, (size_t)t->m * 3 * sizeof *t->k);
        x->t->readout = t->readout;
        if (t->w && !(x->t->w = lm_alloc((size_t)t->m, sizeof *t->w, err, "trajectory weights")))
            rc = LM_ERR_NOMEM;
        else if (t->w)
            memcpy(x->t->w, t->w, (size_t)t->m * sizeof *t->w);
    }
    if (rc == LM_OK && t->t) {
        if (!(x->t->t = lm_alloc((size_t)t->m, sizeof *t->t, err, "sample times")))
            rc = LM_ERR_NOMEM;
        else
            memcpy(x->t->t, t->t, (size_t)t->m * sizeof *t->t);
    }
    const int64_t nv = lm_geom_voxels(d->geom);
    if (rc == LM_OK && d->fieldmap) {
        if (!(x->fieldmap = lm_alloc((size_t)nv, sizeof *x->fieldmap, err, "field map")))
            rc = LM_ERR_NOMEM;
        else
            memcpy(x->fieldmap, d->fieldmap, (size_t)nv * sizeof *x->fieldmap);
    }
    if (rc != LM_OK) {
        entry_free(x);
        return rc;
    }
    *out = x;
    return LM_OK;
}

lm_code lm_encoding_cache_get(lm_encoding_cache *c, const lm_encoding_desc *d, lm_encoding **e, int *hit,
                              lm_error *err)
{
    *e = NULL;
    *hit = 0;
    if (!c || !d || !d->geom || !d->traj)
        return lm_fail(err, LM_ERR_INVALID, "encoding cache: missing cache or description");
    if (d->sens)
        return lm_fail(err, LM_ERR_INVALID, "encoding cache: encodings with coil maps are not kept");
    for (entry *x = c->head; x; x = x->next)
        if (matches(x, d)) {
            unlink_entry(c, x);
            push_front(c, x);
            x->refs++;
            c->hits++;
            *hit = 1;
            *e = x->e;
            lm_trace("encoding cache: hit");
            return LM_OK;
        }
    entry *x = NULL;
    lm_code rc = entry_new(d, &x, err);
    if (rc != LM_OK)
        return rc;
    lm_encoding_desc own = *d;
    own.traj = x->t;
    own.fieldmap = x->fieldmap;
    own.variant = x->variant;
    rc = lm_encoding_new(&own, &x->e, err);
    if (rc != LM_OK) {
        entry_free(x);
        return rc;
    }
    c->misses++;
    x->bytes = entry_bytes(x);
    x->refs = 1;
    push_front(c, x);
    c->entries++;
    c->bytes += x->bytes;
    lm_trace("encoding cache: miss, entry made");
    evict(c);
    *e = x->e;
    return LM_OK;
}

void lm_encoding_cache_release(lm_encoding_cache *c, lm_encoding *e, int discard)
{
    if (!c || !e)
        return;
    for (entry *x = c->head; x; x = x->next)
        if (x->e == e) {
            if (x->refs > 0)
                x->refs--;
            if (discard && x->refs == 0) { /* its set-up failed part way: not worth keeping */
                unlink_entry(c, x);
                c->bytes -= x->bytes;
                c->entries--;
                entry_free(x);
            }
            break;
        }
    evict(c);
}

void lm_encoding_cache_get_stats(const lm_encoding_cache *c, lm_encoding_cache_stats *s)
{
    memset(s, 0, sizeof *s);
    if (!c)
        return;
    s->entries = c->entries;
    s->bytes = c->bytes;
    s->cap_bytes = c->cap;
    s->hits = c->hits;
    s->misses = c->misses;
    s->evictions = c->evictions;
}
