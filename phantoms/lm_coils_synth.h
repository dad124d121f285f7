/* Synthetic receive-coil sensitivities and the exact multi-coil k-space of
 * an analytic phantom seen through them (docs/conventions.md section 4, multi-coil).
 *
 * Each map is a low-order Fourier series over the FOV, as BART's
 * `phantom -s` does:
 *     s_c(x) = sum_j a_cj exp(+i 2 pi f_j . x),
 * x in FOV fractions (voxel i at (i - n/2)/n), f_j integer frequencies in
 * cycles/FOV with |f| <= order per axis (3D: order 2, 5x5x5 = 125 terms;
 * 2D: order 3, 7x7 = 49 terms, fz = 0). The modulation shifts the
 * phantom's transform, so with d(k) = integral rho(x) exp(-i 2 pi k.x) dx
 * (lm_phantom_kspace),
 *     d_c(k) = integral rho(x) s_c(x) exp(-i 2 pi k.x) dx = sum_j a_cj RHO(k - f_j),
 * exact at every trajectory point: the maps and the data agree exactly.
 *
 * Design (deterministic, no randomness): coils sit on an elliptic cylinder
 * around the head, 3D on 1-4 rings at different z (2D: one ring; 3D: one
 * ring up to 8 coils, 2 up to 16, 3 up to 40, else 4), each with a target
 * profile 1 / (1 + |x - p_c|^2 / w^2), w = 0.3 FOV, times a phase: an
 * offset 2 pi slot_c / C (distinct per coil) plus a ramp of 0.3 cycles/FOV
 * along the coil's tangent; the coefficients are the weighted
 * least-squares fit of that target over the head (a small dense solve in
 * double), then scaled so that the root-sum-of-squares over coils is 1 at
 * the FOV centre. The fitted series, not the target, is the map. Being
 * periodic over the FOV, a series cannot fall off fully between the head's
 * top and bottom edges (0.46 of 0.5 FOV): coils facing +-y contrast ~2.6:1
 * across the head, the others 5-9:1 (test_coils_maps prints them). */
#ifndef LM_COILS_SYNTH_H
#define LM_COILS_SYNTH_H

#include <stdint.h>

#include "lm_phantom.h"
#include "lm_types.h"

#define LM_COILS_SYNTH_MAX 64 /* coils */

typedef struct lm_coils_synth {
    int dim;            /* 2: maps of (x, y) only (fz = 0), or 3 */
    int64_t ncoils;     /* 1 .. LM_COILS_SYNTH_MAX */
    int order;          /* |f| <= order per axis */
    int64_t nterms;     /* (2 order + 1)^dim */
    double *freq;       /* nterms x 3: (fx, fy, fz) of term j, cycles/FOV, fx fastest over j */
    double _Complex *a; /* ncoils x nterms, term fastest */
    double *pos;        /* ncoils x 3: coil centres (FOV fractions) the design put them at */
} lm_coils_synth;

/* Builds the coefficient set for ncoils coils (the fit takes milliseconds). */
lm_code lm_coils_synth_make(int dim, int64_t ncoils, lm_coils_synth **out, lm_error *err);
void lm_coils_synth_free(lm_coils_synth *cs);

/* s_c at one position (FOV fractions), double precision; 0 for a bad coil. */
double _Complex lm_coils_synth_value(const lm_coils_synth *cs, int64_t coil, double x, double y, double z);
/* d_c(k) = sum_j a_cj lm_phantom_ft(p, k - f_j) in double precision: the
 * reference for the fast path. 0 when p or coil is invalid or a 2D phantom
 * meets 3D maps. */
double _Complex lm_coils_synth_ft(const lm_coils_synth *cs, const lm_phantom *p, int64_t coil, double kx,
                                  double ky, double kz);

/* The maps on the n grid (positions as docs/conventions.md section 2; n[2] == 1 samples the
 * plane z = 0), exact values of the series rounded to float. */
lm_code lm_coils_synth_maps(const lm_coils_synth *cs, const int64_t n[3], lm_sens **out, lm_error *err);
/* Exact multi-coil k-space at every sample of t into out (allocated by the
 * caller: out->m == t->m, out->ncoils == cs->ncoils). A 2D phantom needs
 * dim-2 maps; a 3D phantom takes either. OpenMP over samples. */
lm_code lm_coils_synth_data(const lm_coils_synth *cs, const lm_phantom *p, const lm_traj *t, lm_kdata *out,
                            lm_error *err);

/* One-call forms: the same coefficient set every time for the same
 * (dim, ncoils), so maps and data from separate calls agree. */
lm_code lm_coils_synth_sens(int dim, int64_t ncoils, const int64_t n[3], lm_sens **out, lm_error *err);
lm_code lm_coils_synth_kspace(const lm_phantom *p, int dim, int64_t ncoils, const lm_traj *t, lm_kdata *out,
                              lm_error *err);

#endif
