/* Larmor on plain arrays: the calls a binding (the Python module,
 * python/larmor) or an embedding program makes without Larmor's structs.
 * Every array is the caller's, in Larmor's layout (docs/conventions.md):
 *
 *   trajectory  m x 3 float32, (kx, ky, kz) per sample, cycles per FOV
 *   k-space     ncoils x m complex64, samples fastest
 *   images      nx x ny x nz complex64, x fastest (as NIfTI and nibabel)
 *   coil maps   ncoils x nx x ny x nz complex64, x fastest
 *   field map   nx x ny x nz float32, Hz;  sample times  m float32, s
 *
 * Every call returns an lm_code and fills err with a one-line message; none
 * exits, aborts or prints. Handles are opaque and not shared between
 * threads. */
#ifndef LARMOR_ARRAYS_H
#define LARMOR_ARRAYS_H

#include <stdint.h>

#include "lm_error.h"
#include "lm_types.h"

/* ---- a reconstruction job: data, then options, then run ---- */

typedef struct larmor_job larmor_job;

/* Copies the trajectory and k-space. n: the matrix (n[2] 1 in 2D). */
lm_code larmor_job_new(const int64_t n[3], int64_t m, int64_t ncoils, const float *traj, const lm_cfloat *kspace,
                       larmor_job **out, lm_error *err);
void larmor_job_free(larmor_job *j);
/* Copies the coil maps (ncoils x N). */
lm_code larmor_job_set_sens(larmor_job *j, const lm_cfloat *sens, lm_error *err);
/* Copies the field map (N, Hz) and sample times (m, s). */
lm_code larmor_job_set_fieldmap(larmor_job *j, const float *fieldmap, const float *times, lm_error *err);
/* One option by name, as the command line spells it (larmor-cli recon):
 * method (cg, grid-linear, grid-kb), reg (identity, gradient, tv, ...),
 * lambda (a number or auto), iters, tol, variant, segments (auto, 0, L),
 * threads, fov (mm), combine (auto, sense, rss), fallback (none, cpu),
 * cache (0 or 1). Unknown names and bad values are refused. */
lm_code larmor_job_set(larmor_job *j, const char *name, const char *value, lm_error *err);
/* Reconstructs into image (N values). */
lm_code larmor_job_run(larmor_job *j, lm_cfloat *image, lm_error *err);

/* ---- a session: set up once (Q, E^H d), then solve for many lambdas ---- */

typedef struct larmor_session larmor_session;

/* The job's data and options (CG); the job may be freed afterwards. */
lm_code larmor_session_new(const larmor_job *j, larmor_session **out, lm_error *err);
void larmor_session_free(larmor_session *s);
/* Solves at lambda (the regulariser and iterations as made), warm-started
 * from the previous solve when warm is non-zero; image: N values. */
lm_code larmor_session_solve(larmor_session *s, double lambda, int warm, lm_cfloat *image, lm_error *err);

/* ---- the encoding's Fourier operator, one coil ----
 *
 *   forward  d(m) = (1/N) phi(k_m) sum_n x(x_n) exp(-i 2 pi k_m . x_n)
 *   adjoint  x(n) = (1/N) sum_m phi(k_m) d(m) exp(+i 2 pi k_m . x_n)
 *
 * through the variant's operator (lm_linop_fourier.h); "auto" or NULL
 * picks the fastest accurate one here. adjoint 0: in is the image, out
 * the samples; 1: the reverse. */
lm_code larmor_nufft(int adjoint, const int64_t n[3], int64_t m, const float *traj, const char *variant,
                     const lm_cfloat *in, lm_cfloat *out, lm_error *err);

/* ---- benchmark phantoms ---- */

typedef struct larmor_phantom larmor_phantom;

/* A named problem (B32, B64c8, S128c8f, ...) with its exact k-space, truth
 * and, as the problem has them, coil maps, field map and sample times. */
lm_code larmor_phantom_new(const char *problem, larmor_phantom **out, lm_error *err);
void larmor_phantom_free(larmor_phantom *p);
/* The shape of one part ("traj", "kspace", "truth", "sens", "fieldmap",
 * "times") in the layout above, slowest dimension first (numpy's C order of
 * the arrays above: traj (m, 3), kspace (ncoils, m), truth (nz, ny, nx),
 * sens (ncoils, nz, ny, nx), fieldmap (nz, ny, nx), times (m,)): the number
 * of dimensions, 0 when the problem has no such part, -1 for an unknown
 * name. dims: room for 4. */
int larmor_phantom_shape(const larmor_phantom *p, const char *part, int64_t dims[4]);
/* Copies the part into dst (its shape's product of float32 or complex64
 * values: traj, fieldmap and times are float32, the rest complex64). */
lm_code larmor_phantom_copy(const larmor_phantom *p, const char *part, void *dst, lm_error *err);

/* The library's version string. */
const char *larmor_version(void);

#endif
