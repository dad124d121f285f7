/* Preferences kept between sessions (last folder, last reconstruction
 * settings, view choices) in $XDG_CONFIG_HOME/larmor/settings.ini, a
 * GKeyFile written atomically (g_file_set_contents: temp file + rename).
 * No GSettings schema, so nothing to install and tests stay hermetic. */
#ifndef LARMOR_SETTINGS_H
#define LARMOR_SETTINGS_H

#include <glib-object.h>

G_BEGIN_DECLS

#define LARMOR_TYPE_SETTINGS (larmor_settings_get_type())
G_DECLARE_FINAL_TYPE(LarmorSettings, larmor_settings, LARMOR, SETTINGS, GObject)

/* Loads path (NULL: the default location); a missing or broken file gives
 * defaults (a broken one is reported once with g_message). */
LarmorSettings *larmor_settings_new(const char *path);
const char *larmor_settings_get_path(LarmorSettings *self);

char *larmor_settings_get_string(LarmorSettings *self, const char *group, const char *key, const char *fallback);
void larmor_settings_set_string(LarmorSettings *self, const char *group, const char *key, const char *value);
double larmor_settings_get_double(LarmorSettings *self, const char *group, const char *key, double fallback);
void larmor_settings_set_double(LarmorSettings *self, const char *group, const char *key, double value);
int larmor_settings_get_int(LarmorSettings *self, const char *group, const char *key, int fallback);
void larmor_settings_set_int(LarmorSettings *self, const char *group, const char *key, int value);
gboolean larmor_settings_get_bool(LarmorSettings *self, const char *group, const char *key, gboolean fallback);
void larmor_settings_set_bool(LarmorSettings *self, const char *group, const char *key, gboolean value);

/* Recently opened data sets, newest first, at most LARMOR_RECENT_MAX:
 * each one is the files it was opened from (trajectory and k-space, or
 * one .h5 / .bin, maybe with coil maps). Entries with a file that no longer
 * exists are dropped when read. Adding an entry already listed moves it to
 * the front. get returns a NULL-terminated array of NULL-terminated path
 * arrays (free each with g_strfreev, then the array with g_free). */
#define LARMOR_RECENT_MAX 8
char ***larmor_settings_get_recent(LarmorSettings *self);
void larmor_settings_add_recent(LarmorSettings *self, const char *const *paths);

/* Creates the folder and writes atomically; only when something changed. */
gboolean larmor_settings_save(LarmorSettings *self, GError **error);

G_END_DECLS

#endif
