/* The raw sums behind the encoding operator, through a kernel variant. */
#ifndef LM_SUMS_H
#define LM_SUMS_H

#include "lm_kernels.h"
#include "lm_types.h"

/* Building blocks (used by recon, bench and tests). Both return the raw
 * kernel sums of lm_kernels.h (no 1/N factors), allocated for the caller.
 * Q on the 2x grid (8N values), looked up in / stored to the disk cache when
 * use_cache; F^H d on the N voxels for one channel of k-space.
 * (lm_q_count() values in general: 4N in 2D. The cache is keyed by the
 * variant's accuracy class, lm_sums_q_class. ctl may be NULL.) */
lm_code lm_compute_q(const lm_geom *g, const lm_traj *t, const char *variant, int use_cache,
                     const lm_ctl *ctl, lm_cfloat **q, int *from_cache, lm_error *err);
lm_code lm_compute_fhd(const lm_geom *g, const lm_traj *t, const lm_cfloat *d, const char *variant,
                       const lm_ctl *ctl, lm_cfloat **fhd, lm_error *err);
/* F^H d of every channel of k (k->m == t->m) in one call: the channels are
 * the kernel's weight sets (lm_ksum_in.nsets), so variants with multi_set
 * compute each exp(i 2 pi k.x) once for all of them. *fhd: N x k->ncoils
 * values, channel c at *fhd + c * N, each as lm_compute_fhd would give it
 * (to float rounding). Needs 16 bytes per voxel and channel while it runs. */
lm_code lm_compute_fhd_sets(const lm_geom *g, const lm_traj *t, const lm_kdata *k,
                            const char *variant, const lm_ctl *ctl, lm_cfloat **fhd,
                            lm_error *err);

/* The Q cache class of a variant's Q (lm_qcache.h): "exact-double"
 * (cpu-dp), "exact-single" (every other direct sum) or the NUFFT variant's
 * own name (its tolerance). */
const char *lm_sums_q_class(const lm_variant *v);

/* The variant by name ("" or NULL: the default), checked for availability. */
const lm_variant *lm_sums_variant(const char *name, lm_error *err);

#endif
