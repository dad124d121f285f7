#include "larmor-volume.h"

#include <math.h>
#include <string.h>

#include "larmor-util.h"
#include "larmor.h"

struct _LarmorVolume {
    GObject parent_instance;
    lm_volume *vol;
    char *name;
    guint serial;      /* unique per volume made in this process */
    GMutex lock;       /* guards the statistics cache (views and workers share volumes) */
    gboolean have_stats;
    double p_lo, p_hi, maxabs_re, maxabs_im; /* magnitude percentiles (see auto_window) */
    GPtrArray *more;   /* frames 1.. (lm_volume *), guarded by lock: appended while shown */
    double frame_s;    /* one frame's duration, 0 when unknown */
};

G_DEFINE_FINAL_TYPE(LarmorVolume, larmor_volume, G_TYPE_OBJECT)

enum { PROP_0, PROP_NAME, N_PROPS };
static GParamSpec *props[N_PROPS];
enum { SIGNAL_FRAMES_CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];

static void larmor_volume_finalize(GObject *object)
{
    LarmorVolume *self = LARMOR_VOLUME(object);
    lm_volume_free(self->vol);
    g_clear_pointer(&self->more, g_ptr_array_unref);
    g_free(self->name);
    g_mutex_clear(&self->lock);
    G_OBJECT_CLASS(larmor_volume_parent_class)->finalize(object);
}

static void larmor_volume_get_property(GObject *object, guint id, GValue *value, GParamSpec *pspec)
{
    LarmorVolume *self = LARMOR_VOLUME(object);
    switch (id) {
    case PROP_NAME: g_value_set_string(value, self->name); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
}

static void larmor_volume_set_property(GObject *object, guint id, const GValue *value,
                                       GParamSpec *pspec)
{
    LarmorVolume *self = LARMOR_VOLUME(object);
    switch (id) {
    case PROP_NAME: larmor_volume_set_name(self, g_value_get_string(value)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
}

static void larmor_volume_class_init(LarmorVolumeClass *klass)
{
    GObjectClass *oc = G_OBJECT_CLASS(klass);
    oc->finalize = larmor_volume_finalize;
    oc->get_property = larmor_volume_get_property;
    oc->set_property = larmor_volume_set_property;
    props[PROP_NAME] = g_param_spec_string("name", NULL, NULL, NULL,
                                           G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY |
                                               G_PARAM_STATIC_STRINGS);
    g_object_class_install_properties(oc, N_PROPS, props);
    /* A frame was appended (larmor_volume_append_frame). */
    signals[SIGNAL_FRAMES_CHANGED] = g_signal_new("frames-changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
                                                  NULL, NULL, NULL, G_TYPE_NONE, 0);
}

static void larmor_volume_init(LarmorVolume *self)
{
    static guint next_serial;
    g_mutex_init(&self->lock);
    self->more = g_ptr_array_new_with_free_func((GDestroyNotify)lm_volume_free);
    self->serial = (guint)g_atomic_int_add((gint *)&next_serial, 1) + 1;
}

guint larmor_volume_get_serial(LarmorVolume *self)
{
    return self->serial;
}

LarmorVolume *larmor_volume_new_take(lm_volume *vol, const char *name)
{
    g_return_val_if_fail(vol != NULL, NULL);
    LarmorVolume *self = g_object_new(LARMOR_TYPE_VOLUME, NULL);
    self->vol = vol;
    self->name = g_strdup(name ? name : "volume");
    return self;
}

const lm_volume *larmor_volume_get_data(LarmorVolume *self)
{
    return self->vol;
}

const char *larmor_volume_get_name(LarmorVolume *self)
{
    return self->name;
}

void larmor_volume_set_name(LarmorVolume *self, const char *name)
{
    if (g_strcmp0(self->name, name) == 0)
        return;
    g_free(self->name);
    self->name = g_strdup(name);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_NAME]);
}

gboolean larmor_volume_same_grid(LarmorVolume *a, LarmorVolume *b)
{
    if (!a || !b)
        return FALSE;
    for (int i = 0; i < 3; i++)
        if (a->vol->dims[i] != b->vol->dims[i])
            return FALSE;
    return TRUE;
}

#define LARMOR_WINDOW_P_LO 0.01
#define LARMOR_WINDOW_P_HI 0.995

/* Frame t's data (t < 1 + more->len; caller holds the lock). */
static const lm_cfloat *frame_values(LarmorVolume *self, guint t)
{
    return t == 0 ? self->vol->data : ((const lm_volume *)self->more->pdata[t - 1])->data;
}

/* Robust range of |v| over every frame: its 1st and 99.5th percentiles
 * from a 4096-bin histogram, one pass over the data after the maximum
 * (fine for 128^3). One window for all frames, so a cine does not flicker. */
static void compute_stats(LarmorVolume *self)
{
    const int64_t per = lm_volume_count(self->vol);
    const guint nf = 1 + self->more->len;
    const int64_t n = per * nf;
    double maxabs = 0, mre = 0, mim = 0;
    for (guint f = 0; f < nf; f++) {
        const lm_cfloat *d = frame_values(self, f);
        for (int64_t i = 0; i < per; i++) {
            double a = cabsf(d[i]), r = fabsf(crealf(d[i])), m = fabsf(cimagf(d[i]));
            if (a > maxabs) maxabs = a;
            if (r > mre) mre = r;
            if (m > mim) mim = m;
        }
    }
    double lo = 0, hi = maxabs;
    if (maxabs > 0 && n > 1) {
        enum { BINS = 4096 };
        int64_t *hist = g_new0(int64_t, BINS);
        for (guint f = 0; f < nf; f++) {
            const lm_cfloat *d = frame_values(self, f);
            for (int64_t i = 0; i < per; i++) {
                int b = (int)(cabsf(d[i]) / maxabs * (BINS - 1));
                hist[b < 0 ? 0 : b >= BINS ? BINS - 1 : b]++;
            }
        }
        /* Bin b holds [b, b + 1) * maxabs / (BINS - 1): lo is a bin's lower
         * edge, hi an upper edge, so [lo, hi] covers the wanted fraction. */
        int64_t want_lo = (int64_t)(LARMOR_WINDOW_P_LO * (double)n), want_hi = (int64_t)ceil(LARMOR_WINDOW_P_HI * (double)n);
        int64_t acc = 0;
        gboolean got_lo = FALSE;
        for (int b = 0; b < BINS; b++) {
            if (!got_lo && acc + hist[b] > want_lo) {
                lo = b * maxabs / (BINS - 1);
                got_lo = TRUE;
            }
            acc += hist[b];
            if (acc >= want_hi) {
                hi = (b + 1) * maxabs / (BINS - 1);
                break;
            }
        }
        g_free(hist);
        hi = MIN(hi, maxabs);
    }
    if (!(hi > lo)) {
        /* Constant image: a window that shows it mid-grey. */
        lo = 0;
        hi = maxabs > 0 ? maxabs : 1.0;
    }
    self->p_lo = lo;
    self->p_hi = hi;
    self->maxabs_re = mre > 0 ? mre : 1.0;
    self->maxabs_im = mim > 0 ? mim : 1.0;
    self->have_stats = TRUE;
}

void larmor_volume_auto_window(LarmorVolume *self, LarmorMode mode, double *window, double *level)
{
    g_mutex_lock(&self->lock);
    if (!self->have_stats)
        compute_stats(self);
    double lo = self->p_lo, hi = self->p_hi, re = self->maxabs_re, im = self->maxabs_im;
    g_mutex_unlock(&self->lock);
    switch (mode) {
    case LARMOR_MODE_PHASE: *window = 2 * G_PI, *level = 0; break;
    case LARMOR_MODE_REAL: *window = 2 * re, *level = 0; break;
    case LARMOR_MODE_IMAGINARY: *window = 2 * im, *level = 0; break;
    default: *window = hi - lo, *level = (lo + hi) / 2; break;
    }
}

LarmorVolume *larmor_volume_new_difference(LarmorVolume *a, LarmorVolume *b, const char *name)
{
    if (!larmor_volume_same_grid(a, b))
        return NULL;
    lm_error err = { 0 };
    /* Frame by frame when both have the same frames (dynamic runs against
     * a dynamic truth), else frame 0 of each. */
    const int64_t nf = larmor_volume_get_n_frames(a) == larmor_volume_get_n_frames(b) ? larmor_volume_get_n_frames(a) : 1;
    LarmorVolume *out = NULL;
    for (int64_t t = 0; t < nf; t++) {
        lm_volume *d = lm_volume_copy(larmor_volume_get_frame_data(a, t), &err);
        if (!d) {
            g_clear_object(&out);
            return NULL;
        }
        const lm_volume *bv = larmor_volume_get_frame_data(b, t);
        const int64_t n = lm_volume_count(d);
        for (int64_t i = 0; i < n; i++)
            d->data[i] -= bv->data[i];
        if (!out) {
            out = larmor_volume_new_take(d, name);
            out->frame_s = a->frame_s;
        } else
            g_ptr_array_add(out->more, d);
    }
    return out;
}

lm_cfloat larmor_volume_value_at(LarmorVolume *self, const int64_t ijk[3])
{
    return larmor_volume_value_at_frame(self, ijk, 0);
}

void larmor_volume_voxel_to_mm(LarmorVolume *self, const int64_t ijk[3], double mm[3])
{
    for (int r = 0; r < 3; r++) {
        mm[r] = self->vol->affine[r][3];
        for (int c = 0; c < 3; c++)
            mm[r] += self->vol->affine[r][c] * (double)ijk[c];
    }
}

gboolean larmor_volume_same_world_grid(LarmorVolume *a, LarmorVolume *b)
{
    return a && b && lm_same_grid(a->vol, b->vol->dims, b->vol->affine);
}

/* The last alignment of a volume, kept on it: compare panels redraw often. */
typedef struct {
    guint ref_serial;
    LarmorVolume *aligned;
} Aligned;

static void aligned_free(gpointer p)
{
    Aligned *a = p;
    g_clear_object(&a->aligned);
    g_free(a);
}

LarmorVolume *larmor_volume_aligned_to(LarmorVolume *self, LarmorVolume *ref)
{
    if (!self || !ref)
        return NULL;
    if (larmor_volume_same_world_grid(self, ref))
        return g_object_ref(self);
    Aligned *c = g_object_get_data(G_OBJECT(self), "larmor-aligned");
    if (c && c->ref_serial == ref->serial)
        return g_object_ref(c->aligned);
    lm_volume *out = NULL;
    lm_error err = { 0 };
    if (lm_resample(self->vol, ref->vol->dims, ref->vol->voxel_mm, ref->vol->affine, NULL, LM_OUTSIDE_ZERO, &out,
                    &err) != LM_OK) {
        lm_error_clear(&err);
        return NULL;
    }
    char *name = g_strdup_printf("%s (resampled)", self->name ? self->name : "image");
    Aligned *a = g_new0(Aligned, 1);
    a->ref_serial = ref->serial;
    a->aligned = larmor_volume_new_take(out, name);
    g_free(name);
    g_object_set_data_full(G_OBJECT(self), "larmor-aligned", a, aligned_free);
    return g_object_ref(a->aligned);
}

/* --- frames -------------------------------------------------------------- */

LarmorVolume *larmor_volume_new_frames(const lm_volume *geom, const lm_cfloat *x, int64_t frames, double frame_s,
                                       const char *name, GError **error)
{
    g_return_val_if_fail(geom && x && frames >= 1, NULL);
    lm_error err = { 0 };
    const int64_t per = lm_volume_count(geom);
    LarmorVolume *self = NULL;
    for (int64_t t = 0; t < frames; t++) {
        lm_volume *v = lm_volume_new(geom->dims, geom->voxel_mm, &err);
        if (!v) {
            larmor_set_error(error, &err);
            g_clear_object(&self);
            return NULL;
        }
        memcpy(v->affine, geom->affine, sizeof v->affine);
        memcpy(v->data, x + t * per, (size_t)per * sizeof *x);
        if (!self)
            self = larmor_volume_new_take(v, name);
        else
            g_ptr_array_add(self->more, v);
    }
    self->frame_s = frame_s > 0 ? frame_s : 0;
    return self;
}

int64_t larmor_volume_get_n_frames(LarmorVolume *self)
{
    g_mutex_lock(&self->lock);
    int64_t n = 1 + (int64_t)self->more->len;
    g_mutex_unlock(&self->lock);
    return n;
}

const lm_volume *larmor_volume_get_frame_data(LarmorVolume *self, int64_t t)
{
    g_mutex_lock(&self->lock);
    const int64_t last = (int64_t)self->more->len;
    t = CLAMP(t, 0, last);
    const lm_volume *v = t == 0 ? self->vol : self->more->pdata[t - 1];
    g_mutex_unlock(&self->lock);
    return v;
}

double larmor_volume_get_frame_s(LarmorVolume *self)
{
    return self->frame_s;
}

void larmor_volume_set_frame_s(LarmorVolume *self, double frame_s)
{
    self->frame_s = frame_s > 0 && isfinite(frame_s) ? frame_s : 0;
}

gboolean larmor_volume_append_frame(LarmorVolume *self, lm_volume *frame, GError **error)
{
    g_return_val_if_fail(frame != NULL, FALSE);
    if (!lm_same_grid(self->vol, frame->dims, frame->affine)) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID,
                    "%s: a frame of %lldx%lldx%lld is not on the image's grid of %lldx%lldx%lld", self->name,
                    (long long)frame->dims[0], (long long)frame->dims[1], (long long)frame->dims[2],
                    (long long)self->vol->dims[0], (long long)self->vol->dims[1], (long long)self->vol->dims[2]);
        lm_volume_free(frame);
        return FALSE;
    }
    g_mutex_lock(&self->lock);
    g_ptr_array_add(self->more, frame);
    self->have_stats = FALSE;
    g_mutex_unlock(&self->lock);
    g_signal_emit(self, signals[SIGNAL_FRAMES_CHANGED], 0);
    return TRUE;
}

lm_cfloat *larmor_volume_dup_frames(LarmorVolume *self, int64_t *frames)
{
    const int64_t per = lm_volume_count(self->vol);
    g_mutex_lock(&self->lock);
    const guint nf = 1 + self->more->len;
    lm_cfloat *x = g_new(lm_cfloat, (gsize)(per * nf));
    for (guint f = 0; f < nf; f++)
        memcpy(x + f * per, frame_values(self, f), (size_t)per * sizeof *x);
    g_mutex_unlock(&self->lock);
    *frames = nf;
    return x;
}

lm_cfloat larmor_volume_value_at_frame(LarmorVolume *self, const int64_t ijk[3], int64_t t)
{
    const lm_volume *v = larmor_volume_get_frame_data(self, t);
    int64_t idx = 0, stride = 1;
    for (int a = 0; a < 3; a++) {
        idx += CLAMP(ijk[a], 0, v->dims[a] - 1) * stride;
        stride *= v->dims[a];
    }
    return v->data[idx];
}

void larmor_volume_watch_frames(LarmorVolume **slot, gulong *handler, LarmorVolume *volume, GCallback on_changed,
                                gpointer data)
{
    if (*slot)
        g_clear_signal_handler(handler, *slot);
    g_set_object(slot, volume);
    if (volume && on_changed)
        *handler = g_signal_connect_swapped(volume, "frames-changed", on_changed, data);
}
