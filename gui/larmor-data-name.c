#include "larmor-data-name.h"

#include <string.h>

/* Stems that name the content, not the data. */
static const char *const generic_stems[] = { "traj", "trajectory", "kspace", "k-space", "ksp", "kdata",
                                             "data", "raw", "k", "sens", "times" };

static const char *const suffixes[] = { ".nii.gz", ".cfl", ".hdr", ".h5", ".nii", ".bin", ".mrd" };

char *larmor_data_name_from_path(const char *path)
{
    if (!path || !*path)
        return g_strdup("data");
    char *base = g_path_get_basename(path);
    for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++)
        if (g_str_has_suffix(base, suffixes[i]) && strlen(base) > strlen(suffixes[i])) {
            base[strlen(base) - strlen(suffixes[i])] = 0;
            break;
        }
    gboolean generic = FALSE;
    for (guint i = 0; i < G_N_ELEMENTS(generic_stems); i++)
        generic |= g_ascii_strcasecmp(base, generic_stems[i]) == 0;
    if (!generic)
        return base;
    char *dir = g_path_get_dirname(path);
    char *folder = g_path_get_basename(dir);
    g_free(dir);
    if (strcmp(folder, ".") == 0 || strcmp(folder, G_DIR_SEPARATOR_S) == 0) {
        g_free(folder);
        return base;
    }
    g_free(base);
    return folder;
}
