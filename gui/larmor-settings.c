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
