#include "larmor-session.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "larmor-util.h"
#include "larmor.h"

typedef struct {
    char *group;
    LarmorVolume *volume;
} Image;

struct _LarmorSession {
    GKeyFile *kf;
    GPtrArray *images;   /* Image */
    GString *missing;
};

static void image_free(gpointer p)
{
    Image *im = p;
    g_free(im->group);
    g_clear_object(&im->volume);
    g_free(im);
}

LarmorSession *larmor_session_new(void)
{
    LarmorSession *s = g_new0(LarmorSession, 1);
    s->kf = g_key_file_new();
    s->images = g_ptr_array_new_with_free_func(image_free);
    s->missing = g_string_new(NULL);
    return s;
}

void larmor_session_free(LarmorSession *s)
{
    if (!s)
        return;
    g_key_file_unref(s->kf);
    g_ptr_array_unref(s->images);
    g_string_free(s->missing, TRUE);
    g_free(s);
}

GKeyFile *larmor_session_get_keyfile(LarmorSession *s)
{
    return s->kf;
}

void larmor_session_add_image(LarmorSession *s, const char *group, LarmorVolume *v)
{
    Image *im = g_new0(Image, 1);
    im->group = g_strdup(group);
    im->volume = g_object_ref(v);
    g_ptr_array_add(s->images, im);
}

LarmorVolume *larmor_session_get_image(LarmorSession *s, const char *group)
{
    for (guint i = 0; i < s->images->len; i++) {
        Image *im = s->images->pdata[i];
        if (g_strcmp0(im->group, group) == 0)
            return im->volume;
    }
    return NULL;
}

const char *larmor_session_get_missing(LarmorSession *s)
{
    return s->missing->str;
}

char *larmor_session_data_dir(const char *path)
{
    return g_strconcat(path, ".d", NULL);
}

/* --- numbers ------------------------------------------------------------ */

void larmor_session_set_doubles(GKeyFile *kf, const char *group, const char *key, const double *v, int n)
{
    GString *s = g_string_new(NULL);
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    for (int i = 0; i < n; i++)
        g_string_append_printf(s, "%s%s", i ? ";" : "", g_ascii_formatd(buf, sizeof buf, "%.17g", v[i]));
    g_key_file_set_string(kf, group, key, s->str);
    g_string_free(s, TRUE);
}

gboolean larmor_session_get_doubles(GKeyFile *kf, const char *group, const char *key, double *v, int n)
{
    char *s = g_key_file_get_string(kf, group, key, NULL);
    if (!s)
        return FALSE;
    char **parts = g_strsplit(s, ";", -1);
    gboolean ok = (int)g_strv_length(parts) == n;
    for (int i = 0; ok && i < n; i++) {
        char *end = NULL;
        v[i] = g_ascii_strtod(parts[i], &end);
        ok = end != parts[i] && *end == 0;
    }
    g_strfreev(parts);
    g_free(s);
    return ok;
}

/* --- regions and lines -------------------------------------------------- */

void larmor_session_set_roi(GKeyFile *kf, const char *group, const char *key, const LarmorRoi *roi)
{
    if (roi->shape != LARMOR_ROI_RECT && roi->shape != LARMOR_ROI_ELLIPSE) {
        g_key_file_remove_key(kf, group, key, NULL);
        return;
    }
    const double v[7] = { roi->shape, roi->orientation, (double)roi->slice, (double)roi->u0, (double)roi->v0,
                          (double)roi->u1, (double)roi->v1 };
    larmor_session_set_doubles(kf, group, key, v, 7);
}

gboolean larmor_session_get_roi(GKeyFile *kf, const char *group, const char *key, LarmorRoi *roi)
{
    double v[7];
    if (!larmor_session_get_doubles(kf, group, key, v, 7) || (v[0] != LARMOR_ROI_RECT && v[0] != LARMOR_ROI_ELLIPSE) ||
        !(v[1] >= 0 && v[1] <= LARMOR_ORIENT_SAGITTAL))
        return FALSE;
    for (int i = 2; i < 7; i++)
        if (!(v[i] >= 0 && v[i] < 1e6))
            return FALSE;
    larmor_roi_set(roi, (LarmorRoiShape)v[0], (LarmorOrientation)v[1], (int64_t)v[2], (int64_t)v[3], (int64_t)v[4],
                   (int64_t)v[5], (int64_t)v[6]);
    return TRUE;
}

void larmor_session_set_line(GKeyFile *kf, const char *group, const char *key, const LarmorLine *line)
{
    if (!line->set) {
        g_key_file_remove_key(kf, group, key, NULL);
        return;
    }
    const double v[6] = { line->orientation, (double)line->slice, line->u0, line->v0, line->u1, line->v1 };
    larmor_session_set_doubles(kf, group, key, v, 6);
}

gboolean larmor_session_get_line(GKeyFile *kf, const char *group, const char *key, LarmorLine *line)
{
    double v[6];
    if (!larmor_session_get_doubles(kf, group, key, v, 6) || !(v[0] >= 0 && v[0] <= LARMOR_ORIENT_SAGITTAL) ||
        !(v[1] >= 0 && v[1] < 1e6))
        return FALSE;
    for (int i = 2; i < 6; i++)
        if (!isfinite(v[i]) || fabs(v[i]) > 1e6)
            return FALSE;
    larmor_line_set(line, (LarmorOrientation)v[0], (int64_t)v[1], v[2], v[3], v[4], v[5]);
    return TRUE;
}

/* --- data set spec ------------------------------------------------------ */

static const char *const kinds[] = { "problem", "phantom", "files" };

void larmor_session_set_spec(GKeyFile *kf, const char *g, const LarmorDatasetSpec *spec)
{
    g_key_file_set_string(kf, g, "kind", kinds[CLAMP((int)spec->kind, 0, 2)]);
    switch (spec->kind) {
    case LARMOR_SOURCE_PROBLEM:
        g_key_file_set_string(kf, g, "problem", spec->problem);
        break;
    case LARMOR_SOURCE_PHANTOM: {
        g_key_file_set_string(kf, g, "phantom", spec->phantom);
        g_key_file_set_integer(kf, g, "matrix", spec->matrix);
        g_key_file_set_string(kf, g, "trajectory", lm_traj_kind_name(spec->traj_kind));
        g_key_file_set_int64(kf, g, "samples", spec->samples);
        g_key_file_set_int64(kf, g, "readout", spec->readout);
        larmor_session_set_doubles(kf, g, "noise", &spec->noise, 1);
        g_key_file_set_uint64(kf, g, "seed", spec->seed);
        g_key_file_set_integer(kf, g, "coils", spec->coils);
        if (spec->fieldmap_hz > 0)
            larmor_session_set_doubles(kf, g, "fieldmap-hz", &spec->fieldmap_hz, 1);
        break;
    }
    default:
        /* Absolute: the session may be opened from anywhere. */
        if (spec->traj_path)
            g_key_file_set_string(kf, g, "trajectory-file", spec->traj_path);
        if (spec->kdata_path)
            g_key_file_set_string(kf, g, "kspace-file", spec->kdata_path);
        if (spec->sens_path)
            g_key_file_set_string(kf, g, "maps-file", spec->sens_path);
        break;
    }
    if (spec->grid[0] > 0) {
        double n[3] = { (double)spec->grid[0], (double)spec->grid[1], (double)spec->grid[2] };
        larmor_session_set_doubles(kf, g, "grid", n, 3);
        larmor_session_set_doubles(kf, g, "fov-mm", spec->fov_mm, 3);
    }
}

gboolean larmor_session_get_spec(GKeyFile *kf, const char *g, LarmorDatasetSpec *spec, GError **error)
{
    memset(spec, 0, sizeof *spec);
    char *kind = g_key_file_get_string(kf, g, "kind", NULL);
    int k = -1;
    for (int i = 0; i < 3; i++)
        if (g_strcmp0(kind, kinds[i]) == 0)
            k = i;
    g_free(kind);
    if (k < 0) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_FORMAT, "[%s]: no data kind (problem, phantom or files)", g);
        return FALSE;
    }
    spec->kind = k;
    GError *e = NULL;
    gboolean ok = TRUE;
    if (k == LARMOR_SOURCE_PROBLEM) {
        char *p = g_key_file_get_string(kf, g, "problem", NULL);
        ok = p && strlen(p) < sizeof spec->problem;
        if (ok)
            g_strlcpy(spec->problem, p, sizeof spec->problem);
        g_free(p);
    } else if (k == LARMOR_SOURCE_PHANTOM) {
        char *p = g_key_file_get_string(kf, g, "phantom", NULL);
        char *t = g_key_file_get_string(kf, g, "trajectory", NULL);
        lm_error err = { 0 };
        ok = p && strlen(p) < sizeof spec->phantom && t && lm_traj_kind_parse(t, &spec->traj_kind, &err) == LM_OK;
        lm_error_clear(&err);
        if (ok)
            g_strlcpy(spec->phantom, p, sizeof spec->phantom);
        g_free(p);
        g_free(t);
        spec->matrix = g_key_file_get_integer(kf, g, "matrix", &e);
        if (!e)
            spec->samples = g_key_file_get_int64(kf, g, "samples", &e);
        if (!e)
            spec->readout = g_key_file_get_int64(kf, g, "readout", &e);
        if (!e)
            spec->seed = g_key_file_get_uint64(kf, g, "seed", &e);
        if (!e)
            spec->coils = g_key_file_get_integer(kf, g, "coils", &e);
        ok = ok && !e && larmor_session_get_doubles(kf, g, "noise", &spec->noise, 1);
        g_clear_error(&e);
        /* Optional (sessions before field maps have none). */
        if (g_key_file_has_key(kf, g, "fieldmap-hz", NULL) &&
            !larmor_session_get_doubles(kf, g, "fieldmap-hz", &spec->fieldmap_hz, 1))
            ok = FALSE;
    } else {
        spec->traj_path = g_key_file_get_string(kf, g, "trajectory-file", NULL);
        spec->kdata_path = g_key_file_get_string(kf, g, "kspace-file", NULL);
        spec->sens_path = g_key_file_get_string(kf, g, "maps-file", NULL);
        ok = spec->traj_path || spec->kdata_path;
    }
    double n[3];
    if (ok && larmor_session_get_doubles(kf, g, "grid", n, 3)) {
        for (int a = 0; a < 3; a++)
            spec->grid[a] = (int64_t)n[a];
        ok = larmor_session_get_doubles(kf, g, "fov-mm", spec->fov_mm, 3);
    }
    if (!ok) {
        g_free(spec->traj_path);
        g_free(spec->kdata_path);
        g_free(spec->sens_path);
        spec->traj_path = spec->kdata_path = spec->sens_path = NULL;
        g_set_error(error, LARMOR_ERROR, LM_ERR_FORMAT, "[%s]: incomplete %s data description", g, kinds[k]);
    }
    return ok;
}

/* --- writing ------------------------------------------------------------ */

/* Removes the images of the folder that the manifest just written does
 * not name (those of earlier saves). Only *.nii: the folder is ours, but
 * nothing else in it is touched. */
static void remove_stale(const char *dir, GHashTable *keep)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    if (!d)
        return;
    const char *name;
    while ((name = g_dir_read_name(d)))
        if (g_str_has_suffix(name, ".nii") && !g_hash_table_contains(keep, name)) {
            char *p = g_build_filename(dir, name, NULL);
            g_remove(p);
            g_free(p);
        }
    g_dir_close(d);
}

gboolean larmor_session_write(LarmorSession *s, const char *path, GError **error)
{
    char *dir = larmor_session_data_dir(path);
    gboolean ok = TRUE;
    if (s->images->len > 0 && g_mkdir_with_parents(dir, 0755) != 0) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_IO, "%s: cannot make the folder: %s", dir, g_strerror(errno));
        ok = FALSE;
    }
    /* A new generation of names: the old manifest's images stay intact
     * until the new manifest is in place. */
    char *gen = g_strdup_printf("%" G_GINT64_MODIFIER "x%04x", g_get_real_time(), g_random_int_range(0, 0x10000));
    GHashTable *keep = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_key_file_set_integer(s->kf, "session", "format", LARMOR_SESSION_FORMAT);
    /* The groups whose "image" is a file of ours: other groups may use the
     * key for something else (the viewer's shown image). */
    GString *listed = g_string_new(NULL);
    for (guint i = 0; i < s->images->len; i++)
        g_string_append_printf(listed, "%s%s", i ? ";" : "", ((Image *)s->images->pdata[i])->group);
    g_key_file_set_string(s->kf, "session", "images", listed->str);
    g_string_free(listed, TRUE);
    for (guint i = 0; ok && i < s->images->len; i++) {
        Image *im = s->images->pdata[i];
        char *name = g_strdup_printf("%s-%s.nii", gen, im->group);
        char *file = g_build_filename(dir, name, NULL);
        const lm_volume *v = larmor_volume_get_data(im->volume);
        lm_error err = { 0 };
        /* Complex64, uncompressed: bit-identical and quick to read back;
         * a dynamic image as a 4D time series. */
        lm_code rc;
        if (larmor_volume_get_n_frames(im->volume) > 1) {
            int64_t frames;
            lm_cfloat *x = larmor_volume_dup_frames(im->volume, &frames);
            rc = lm_nifti_write_series(file, v, frames, x, 1, larmor_volume_get_frame_s(im->volume), &err);
            g_free(x);
        } else
            rc = lm_nifti_write(file, v, 1, &err);
        if (rc != LM_OK) {
            larmor_set_error(error, &err);
            ok = FALSE;
        } else {
            g_key_file_set_string(s->kf, im->group, "image", name);
            /* NIfTI keeps the affine in float32: the exact one goes here. */
            larmor_session_set_doubles(s->kf, im->group, "image-affine", &v->affine[0][0], 16);
            larmor_session_set_doubles(s->kf, im->group, "image-voxel-mm", v->voxel_mm, 3);
            g_hash_table_add(keep, g_steal_pointer(&name));
        }
        g_free(name);
        g_free(file);
    }
    if (ok) {
        gsize len;
        char *text = g_key_file_to_data(s->kf, &len, NULL);
        /* g_file_set_contents: temporary file, fsync, rename (atomic). */
        ok = g_file_set_contents(path, text, (gssize)len, error);
        g_free(text);
    }
    if (ok)
        remove_stale(dir, keep);
    else {
        /* This generation's images are of no manifest: remove them. */
        GHashTableIter it;
        gpointer name;
        g_hash_table_iter_init(&it, keep);
        while (g_hash_table_iter_next(&it, &name, NULL)) {
            char *p = g_build_filename(dir, name, NULL);
            g_remove(p);
            g_free(p);
        }
    }
    if (s->images->len > 0)
        g_rmdir(dir); /* only if empty */
    g_hash_table_unref(keep);
    g_free(gen);
    g_free(dir);
    return ok;
}

/* --- reading ------------------------------------------------------------ */

LarmorSession *larmor_session_read(const char *path, GError **error)
{
    LarmorSession *s = larmor_session_new();
    GError *e = NULL;
    if (!g_key_file_load_from_file(s->kf, path, G_KEY_FILE_NONE, &e)) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_FORMAT, "%s: %s", path, e->message);
        g_error_free(e);
        larmor_session_free(s);
        return NULL;
    }
    int format = g_key_file_get_integer(s->kf, "session", "format", NULL);
    if (format < 1 || format > LARMOR_SESSION_FORMAT) {
        g_set_error(error, LARMOR_ERROR, LM_ERR_FORMAT, "%s: not a Larmor session (format %d)", path, format);
        larmor_session_free(s);
        return NULL;
    }
    char *dir = larmor_session_data_dir(path);
    gsize n;
    /* Sessions written before the list: every group's image that names a .nii. */
    char *listed = g_key_file_get_string(s->kf, "session", "images", NULL);
    const gboolean old = listed == NULL;
    char **groups = old ? g_key_file_get_groups(s->kf, &n) : g_strsplit(listed, ";", -1);
    n = g_strv_length(groups);
    g_free(listed);
    for (gsize i = 0; i < n; i++) {
        char *name = *groups[i] ? g_key_file_get_string(s->kf, groups[i], "image", NULL) : NULL;
        if (name && old && !g_str_has_suffix(name, ".nii"))
            g_clear_pointer(&name, g_free);
        if (!name)
            continue;
        /* Only a plain name inside the session's folder. */
        char *base = g_path_get_basename(name);
        char *file = g_build_filename(dir, base, NULL);
        lm_volume *v = NULL;
        lm_error err = { 0 };
        int64_t frames = 1;
        double frame_s = 0;
        if (g_strcmp0(base, name) != 0)
            g_string_append_printf(s->missing, "%s%s: not a file name", s->missing->len ? "\n" : "", name);
        else if (lm_nifti_read_frames(file, &v, &frames, &err) != LM_OK ||
                 lm_nifti_frame_seconds(file, &frame_s, &err) != LM_OK) {
            lm_volume_free(v);
            g_string_append_printf(s->missing, "%s%s", s->missing->len ? "\n" : "", err.msg);
            lm_error_clear(&err);
        } else {
            double aff[16], mm[3];
            if (larmor_session_get_doubles(s->kf, groups[i], "image-affine", aff, 16))
                memcpy(&v->affine[0][0], aff, sizeof aff);
            if (larmor_session_get_doubles(s->kf, groups[i], "image-voxel-mm", mm, 3))
                memcpy(v->voxel_mm, mm, sizeof mm);
            LarmorVolume *vol = frames > 1 ? larmor_volume_new_frames(v, v->data, frames, frame_s, groups[i], NULL)
                                           : larmor_volume_new_take(v, groups[i]);
            if (frames > 1)
                lm_volume_free(v);
            if (vol) {
                Image *im = g_new0(Image, 1);
                im->group = g_strdup(groups[i]);
                im->volume = vol;
                g_ptr_array_add(s->images, im);
            } else
                g_string_append_printf(s->missing, "%s%s: out of memory for %lld frames", s->missing->len ? "\n" : "",
                                       name, (long long)frames);
        }
        g_free(file);
        g_free(base);
        g_free(name);
    }
    g_strfreev(groups);
    g_free(dir);
    return s;
}

/* --- async -------------------------------------------------------------- */

static void write_thread(GTask *task, gpointer source, gpointer data, GCancellable *c)
{
    GError *error = NULL;
    const char *path = g_object_get_data(G_OBJECT(task), "path");
    if (larmor_session_write(data, path, &error))
        g_task_return_boolean(task, TRUE);
    else
        g_task_return_error(task, error);
}

void larmor_session_write_async(LarmorSession *s, const char *path, GAsyncReadyCallback cb, gpointer data)
{
    GTask *task = g_task_new(NULL, NULL, cb, data);
    g_task_set_source_tag(task, larmor_session_write_async);
    g_object_set_data_full(G_OBJECT(task), "path", g_strdup(path), g_free);
    g_task_set_task_data(task, s, (GDestroyNotify)larmor_session_free);
    g_task_run_in_thread(task, write_thread);
    g_object_unref(task);
}

gboolean larmor_session_write_finish(GAsyncResult *result, GError **error)
{
    return g_task_propagate_boolean(G_TASK(result), error);
}

static void read_thread(GTask *task, gpointer source, gpointer data, GCancellable *c)
{
    GError *error = NULL;
    LarmorSession *s = larmor_session_read(data, &error);
    if (s)
        g_task_return_pointer(task, s, (GDestroyNotify)larmor_session_free);
    else
        g_task_return_error(task, error);
}

void larmor_session_read_async(const char *path, GAsyncReadyCallback cb, gpointer data)
{
    GTask *task = g_task_new(NULL, NULL, cb, data);
    g_task_set_source_tag(task, larmor_session_read_async);
    g_task_set_task_data(task, g_strdup(path), g_free);
    g_task_run_in_thread(task, read_thread);
    g_object_unref(task);
}

LarmorSession *larmor_session_read_finish(GAsyncResult *result, GError **error)
{
    return g_task_propagate_pointer(G_TASK(result), error);
}
