/* The name a data set read from files goes by (data card, run labels,
 * CSV): the file's stem, or its folder's name when the stem only says
 * what the file holds ("traj", "kspace"...), as phantom and BART folders
 * name them. Plain C. */
#ifndef LARMOR_DATA_NAME_H
#define LARMOR_DATA_NAME_H

#include <glib.h>

/* "/data/B64/traj.cfl" -> "B64"; "/data/knee_radial.h5" -> "knee_radial".
 * Free with g_free. */
char *larmor_data_name_from_path(const char *path);

#endif
