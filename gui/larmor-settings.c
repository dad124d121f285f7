#include "larmor-settings.h"

#include <errno.h>

#include <glib/gstdio.h>

struct _LarmorSettings {
    GObject parent_instance;
    GKeyFile *kf;
    char *path;
    gboolean dirty;
};

G_DEFINE_FINAL_TYPE(LarmorSettings, larmor_settings, G_TYPE_OBJECT)

static void larmor_settings_finalize(GObject *object)
{
    LarmorSettings *self = LARMOR_SETTINGS(object);
    g_key_file_unref(self->kf);
    g_free(self->path);
    G_OBJECT_CLASS(larmor_settings_parent_class)->finalize(object);
}

static void larmor_settings_class_init(LarmorSettingsClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = larmor_settings_finalize;
}

static void larmor_settings_init(LarmorSettings *self)
{
    self->kf = g_key_file_new();
}

LarmorSettings *larmor_settings_new(const char *path)
{
    LarmorSettings *self = g_object_new(LARMOR_TYPE_SETTINGS, NULL);
    self->path = path ? g_strdup(path) : g_build_filename(g_get_user_config_dir(), "larmor", "settings.ini", NULL);
    GError *error = NULL;
    if (!g_key_file_load_from_file(self->kf, self->path, G_KEY_FILE_KEEP_COMMENTS, &error)) {
        if (!g_error_matches(error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
            g_message("%s: ignored (%s); using defaults", self->path, error->message);
        g_clear_error(&error);
    }
    return self;
}

const char *larmor_settings_get_path(LarmorSettings *self)
{
    return self->path;
}

char *larmor_settings_get_string(LarmorSettings *self, const char *group, const char *key, const char *fallback)
{
    char *v = g_key_file_get_string(self->kf, group, key, NULL);
    return v ? v : g_strdup(fallback);
}

void larmor_settings_set_string(LarmorSettings *self, const char *group, const char *key, const char *value)
{
    char *old = g_key_file_get_string(self->kf, group, key, NULL);
    if (g_strcmp0(old, value) != 0) {
        if (value)
            g_key_file_set_string(self->kf, group, key, value);
        else
            g_key_file_remove_key(self->kf, group, key, NULL);
        self->dirty = TRUE;
    }
    g_free(old);
}

double larmor_settings_get_double(LarmorSettings *self, const char *group, const char *key, double fallback)
{
    GError *error = NULL;
    double v = g_key_file_get_double(self->kf, group, key, &error);
    if (error) {
        g_error_free(error);
        return fallback;
    }
    return v;
}

void larmor_settings_set_double(LarmorSettings *self, const char *group, const char *key, double value)
{
    GError *error = NULL;
    double old = g_key_file_get_double(self->kf, group, key, &error);
    if (error || old != value) {
        g_key_file_set_double(self->kf, group, key, value);
        self->dirty = TRUE;
    }
    g_clear_error(&error);
}

int larmor_settings_get_int(LarmorSettings *self, const char *group, const char *key, int fallback)
{
    GError *error = NULL;
    int v = g_key_file_get_integer(self->kf, group, key, &error);
    if (error) {
        g_error_free(error);
        return fallback;
    }
    return v;
}

void larmor_settings_set_int(LarmorSettings *self, const char *group, const char *key, int value)
{
    GError *error = NULL;
    int old = g_key_file_get_integer(self->kf, group, key, &error);
    if (error || old != value) {
        g_key_file_set_integer(self->kf, group, key, value);
        self->dirty = TRUE;
    }
    g_clear_error(&error);
}

gboolean larmor_settings_get_bool(LarmorSettings *self, const char *group, const char *key, gboolean fallback)
{
    GError *error = NULL;
    gboolean v = g_key_file_get_boolean(self->kf, group, key, &error);
    if (error) {
        g_error_free(error);
        return fallback;
    }
    return v;
}

void larmor_settings_set_bool(LarmorSettings *self, const char *group, const char *key, gboolean value)
{
    GError *error = NULL;
    gboolean old = g_key_file_get_boolean(self->kf, group, key, &error);
    if (error || old != value) {
        g_key_file_set_boolean(self->kf, group, key, value);
        self->dirty = TRUE;
    }
    g_clear_error(&error);
}

gboolean larmor_settings_save(LarmorSettings *self, GError **error)
{
    if (!self->dirty)
        return TRUE;
    char *dir = g_path_get_dirname(self->path);
    int rc = g_mkdir_with_parents(dir, 0700);
    g_free(dir);
    if (rc != 0) {
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno), "%s: cannot create its folder",
                    self->path);
        return FALSE;
    }
    /* g_key_file_save_to_file goes through g_file_set_contents: atomic. */
    if (!g_key_file_save_to_file(self->kf, self->path, error))
        return FALSE;
    self->dirty = FALSE;
    return TRUE;
}

/* Stored as [recent] data = entry;entry;... with an entry's paths joined
 * by tabs (GKeyFile escapes both). */
static char **recent_raw(LarmorSettings *self)
{
    char **v = g_key_file_get_string_list(self->kf, "recent", "data", NULL, NULL);
    return v ? v : g_new0(char *, 1);
}

static gboolean all_exist(char *const *paths)
{
    if (!paths || !paths[0])
        return FALSE;
    for (int i = 0; paths[i]; i++)
        if (!paths[i][0] || !g_file_test(paths[i], G_FILE_TEST_EXISTS))
            return FALSE;
    return TRUE;
}

char ***larmor_settings_get_recent(LarmorSettings *self)
{
    char **raw = recent_raw(self);
    GPtrArray *out = g_ptr_array_new();
    GPtrArray *keep = g_ptr_array_new();
    for (int i = 0; raw[i] && out->len < LARMOR_RECENT_MAX; i++) {
        char **paths = g_strsplit(raw[i], "\t", -1);
        if (all_exist(paths)) {
            g_ptr_array_add(out, paths);
            g_ptr_array_add(keep, raw[i]);
        } else
            g_strfreev(paths);
    }
    /* Missing ones are forgotten (saved with the next save). */
    if (keep->len != g_strv_length(raw)) {
        g_key_file_set_string_list(self->kf, "recent", "data", (const char *const *)keep->pdata, keep->len);
        self->dirty = TRUE;
    }
    g_ptr_array_free(keep, TRUE);
    g_strfreev(raw);
    g_ptr_array_add(out, NULL);
    return (char ***)g_ptr_array_free(out, FALSE);
}

void larmor_settings_add_recent(LarmorSettings *self, const char *const *paths)
{
    if (!paths || !paths[0])
        return;
    char *entry = g_strjoinv("\t", (char **)paths);
    char **raw = recent_raw(self);
    GPtrArray *list = g_ptr_array_new();
    g_ptr_array_add(list, entry);
    for (int i = 0; raw[i] && list->len < LARMOR_RECENT_MAX; i++)
        if (g_strcmp0(raw[i], entry) != 0)
            g_ptr_array_add(list, raw[i]);
    g_key_file_set_string_list(self->kf, "recent", "data", (const char *const *)list->pdata, list->len);
    self->dirty = TRUE;
    g_ptr_array_free(list, TRUE);
    g_strfreev(raw);
    g_free(entry);
}
