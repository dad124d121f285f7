/* A chosen DICOM file stands for its series' folder. */
#include "larmor-dicom-path.h"

#include "larmor.h"

char *larmor_dicom_series_path(char *path)
{
    if (!path || !lm_dicom_has_preamble(path))
        return path;
    char *dir = g_path_get_dirname(path);
    g_free(path);
    return dir;
}
