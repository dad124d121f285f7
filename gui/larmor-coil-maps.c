#include "larmor-coil-maps.h"

#include <stdlib.h>
#include <string.h>

#include "larmor-util.h"
#include "larmor.h"

struct _LarmorCoilMaps {
    GObject parent_instance;
    lm_sens *sens;
    char *origin;
};

G_DEFINE_FINAL_TYPE(LarmorCoilMaps, larmor_coil_maps, G_TYPE_OBJECT)

static void larmor_coil_maps_finalize(GObject *object)
{
    LarmorCoilMaps *self = LARMOR_COIL_MAPS(object);
    lm_sens_free(self->sens);
    g_free(self->origin);
    G_OBJECT_CLASS(larmor_coil_maps_parent_class)->finalize(object);
}

static void larmor_coil_maps_class_init(LarmorCoilMapsClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = larmor_coil_maps_finalize;
}

static void larmor_coil_maps_init(LarmorCoilMaps *self)
{
}

LarmorCoilMaps *larmor_coil_maps_new_take(lm_sens *sens, const char *origin)
{
    g_return_val_if_fail(sens != NULL, NULL);
    LarmorCoilMaps *self = g_object_new(LARMOR_TYPE_COIL_MAPS, NULL);
    self->sens = sens;
    self->origin = g_strdup(origin ? origin : "coil maps");
    return self;
}

const lm_sens *larmor_coil_maps_get_sens(LarmorCoilMaps *self)
{
    return self->sens;
}

const char *larmor_coil_maps_get_origin(LarmorCoilMaps *self)
{
    return self->origin;
}

int64_t larmor_coil_maps_get_count(LarmorCoilMaps *self)
{
    return self->sens->ncoils;
}

gboolean larmor_coil_maps_check(const lm_sens *s, const int64_t n[3], int64_t ncoils, const char *what,
                                GError **error)
{
    if (s->n[0] != n[0] || s->n[1] != n[1] || s->n[2] != n[2]) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "%s: coil maps are %lld × %lld × %lld but the matrix is %lld × %lld × %lld",
                    what, (long long)s->n[0], (long long)s->n[1], (long long)s->n[2], (long long)n[0],
                    (long long)n[1], (long long)n[2]);
        return FALSE;
    }
    if (s->ncoils != ncoils) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_INVALID, "%s: %lld coil map%s but the k-space has %lld channel%s", what,
                    (long long)s->ncoils, s->ncoils == 1 ? "" : "s", (long long)ncoils, ncoils == 1 ? "" : "s");
        return FALSE;
    }
    lm_error err = { 0 };
    if (lm_check_finite_complex(what, s->s, (size_t)(lm_sens_voxels(s) * s->ncoils), &err) != LM_OK) {
        larmor_set_error(error, &err);
        return FALSE;
    }
    return TRUE;
}

LarmorCoilMaps *larmor_coil_maps_load(const char *path, const int64_t n[3], int64_t ncoils, GError **error)
{
    lm_error err = { 0 };
    lm_sens *s = NULL;
    char *base = g_path_get_basename(path);
    LarmorCoilMaps *maps = NULL;
    /* The library's reader (.cfl or complex 4D NIfTI, as larmor-cli --sens). */
    if (lm_load_sens(path, &s, &err) != LM_OK)
        larmor_set_error(error, &err);
    else if (larmor_coil_maps_check(s, n, ncoils, base, error)) {
        maps = larmor_coil_maps_new_take(s, base);
        s = NULL;
    }
    lm_sens_free(s);
    g_free(base);
    return maps;
}

typedef struct {
    char *path;
    int64_t n[3];
    int64_t ncoils;
} LoadJob;

static void load_job_free(LoadJob *j)
{
    g_free(j->path);
    g_free(j);
}

static void load_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
    LoadJob *j = data;
    GError *error = NULL;
    LarmorCoilMaps *m = larmor_coil_maps_load(j->path, j->n, j->ncoils, &error);
    if (m)
        g_task_return_pointer(task, m, g_object_unref);
    else
        g_task_return_error(task, error);
}

void larmor_coil_maps_load_async(const char *path, const int64_t n[3], int64_t ncoils, GCancellable *cancellable,
                                 GAsyncReadyCallback callback, gpointer user_data)
{
    LoadJob *j = g_new0(LoadJob, 1);
    j->path = g_strdup(path);
    memcpy(j->n, n, sizeof j->n);
    j->ncoils = ncoils;
    GTask *task = g_task_new(NULL, cancellable, callback, user_data);
    g_task_set_source_tag(task, larmor_coil_maps_load_async);
    g_task_set_task_data(task, j, (GDestroyNotify)load_job_free);
    g_task_run_in_thread(task, load_thread);
    g_object_unref(task);
}

LarmorCoilMaps *larmor_coil_maps_load_finish(GAsyncResult *result, GError **error)
{
    return g_task_propagate_pointer(G_TASK(result), error);
}
