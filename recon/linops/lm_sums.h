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

/* Q_ll' of time segmentation (lm_toeplitz_block.h, lm_timeseg.h): the sum
 * with weights |phi(k_m)|^2 conj(b_l(t_m)) b_l'(t_m) (b: L x m) on the 2x
 * grid, every pair a weight set of one kernel call. all_pairs 0: the
 * L(L+1)/2 pairs l <= l' in lm_block_pair order, looked up in / stored to
 * the cache under seg_hash (lm_qcache_load_sets); 1: all L x L pairs, (l, l')
 * at l L + l', not cached (tests). */
lm_code lm_compute_q_segments(const lm_geom *g, const lm_traj *t, int L, const lm_cfloat *b, uint64_t seg_hash,
                              int all_pairs, const char *variant, int use_cache, const lm_ctl *ctl, lm_cfloat **q,
                              int *from_cache, lm_error *err);
/* The same L(L+1)/2 blocks summed by a GPU variant into device memory
 * (q_dev: L(L+1)/2 x lm_q_count values), never cached: on the GPU they take
 * milliseconds, reading them back from disk seconds. */
lm_code lm_compute_q_segments_gpu(const lm_geom *g, const lm_traj *t, int L, const lm_cfloat *b, const char *variant,
                                  lm_cfloat *q_dev, const lm_ctl *ctl, lm_error *err);

/* The exact encoding with a field map f (N values, Hz) and t->t, through a
 * direct variant with time_term (lm_kernels.h), raw sums (no 1/N, phi):
 *   adjoint: fhd_c(x_n) = sum_m conj(phi(k_m)) d_c(m) exp(+i 2 pi (k_m . x_n + f_n t_m)),
 *            *fhd: N x k->ncoils values;
 *   forward: out_c(m) = sum_n x_c(n) exp(-i 2 pi (k_m . x_n + f_n t_m)) for nsets
 *            images x (N each, host), out: m x nsets, the caller's. The same
 *            kernel with the roles swapped: the voxels as its samples (their
 *            positions as k, f as t, weights conj(x)), the samples as its
 *            points (f := t); conjugated afterwards. */
lm_code lm_compute_fhd_exact(const lm_geom *g, const lm_traj *t, const lm_kdata *k, const float *f,
                             const char *variant, const lm_ctl *ctl, lm_cfloat **fhd, lm_error *err);
lm_code lm_compute_forward_exact(const lm_geom *g, const lm_traj *t, const float *f, const lm_cfloat *x,
                                 int64_t nsets, const char *variant, const lm_ctl *ctl, lm_cfloat *out, lm_error *err);
/* The direct variant for the exact off-resonance sums: v itself when it
 * evaluates explicit points exactly; for a NUFFT or grid-only variant the
 * best direct one of its device (cpu-simd, gpu-tuned). NULL and why when it
 * cannot run here. */
const lm_variant *lm_sums_exact_variant(const lm_variant *v, lm_error *err);

/* The Q cache class of a variant's Q (lm_qcache.h): "exact-double"
 * (cpu-dp), "exact-single" (every other direct sum) or the NUFFT variant's
 * own name (its tolerance). */
const char *lm_sums_q_class(const lm_variant *v);

/* The variant by name ("" or NULL: the default), checked for availability. */
const lm_variant *lm_sums_variant(const char *name, lm_error *err);

#endif
