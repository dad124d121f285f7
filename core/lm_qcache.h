/* On-disk cache of Q, keyed by a hash of the trajectory, the matrix, the
 * voxel basis and the accuracy class of the kernel that made it: a second
 * reconstruction on the same trajectory skips Q, and a reference run never
 * takes a Q that a less accurate kernel made. Classes (lm_sums_q_class):
 * "exact-double" (cpu-dp), "exact-single" (the other direct sums),
 * "nufft-<tolerance>"; NULL means "".
 * Lives under $XDG_CACHE_HOME/larmor (default ~/.cache/larmor). Entries are
 * written atomically and verified (size, key, checksum) on load. */
#ifndef LM_QCACHE_H
#define LM_QCACHE_H

#include <stdint.h>

#include "lm_types.h"

/* Cache folder (malloc'd), created if missing. */
lm_code lm_qcache_dir(char **dir, lm_error *err);
uint64_t lm_qcache_key(const lm_geom *g, const lm_traj *t, const char *cls);
/* LM_OK and *q (8N values) on a hit; LM_ERR_IO when absent or stale. */
lm_code lm_qcache_load(const lm_geom *g, const lm_traj *t, const char *cls, lm_cfloat **q, lm_error *err);
lm_code lm_qcache_store(const lm_geom *g, const lm_traj *t, const char *cls, const lm_cfloat *q,
                         lm_error *err);
/* Time-segmented Q (nsets blocks Q_ll', lm_toeplitz_block.h): the key also
 * takes extra (a hash of the segmentation: centres, interpolators b_l(t_m),
 * hence the sample times) and nsets; the entry holds nsets x lm_q_count. */
uint64_t lm_qcache_key_sets(const lm_geom *g, const lm_traj *t, const char *cls, uint64_t extra, int64_t nsets);
lm_code lm_qcache_load_sets(const lm_geom *g, const lm_traj *t, const char *cls, uint64_t extra, int64_t nsets,
                            lm_cfloat **q, lm_error *err);
lm_code lm_qcache_store_sets(const lm_geom *g, const lm_traj *t, const char *cls, uint64_t extra, int64_t nsets,
                             const lm_cfloat *q, lm_error *err);

#endif
