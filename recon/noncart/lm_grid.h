/* Gridding baselines as the paper compares (section 3 of docs/conventions.md: they are
 * scored after least-squares scale matching, but aim for the truth's units):
 *   linear: trilinear interpolation of samples onto the Cartesian grid
 *           (density-compensated), inverse FFT (the paper's "bilinear");
 *   kb:     Kaiser-Bessel convolution gridding on a 2x grid with Pipe-Menon
 *           iterative density compensation and deapodisation. */
#ifndef LM_GRID_H
#define LM_GRID_H

#include "lm_kernels.h"
#include "lm_types.h"

/* d: m samples of one channel; img: N complex (x fastest) out. */
lm_code lm_grid_linear(const lm_geom *g, const lm_traj *t, const lm_cfloat *d, lm_cfloat *img,
                       const lm_ctl *ctl, lm_error *err);
lm_code lm_grid_kb(const lm_geom *g, const lm_traj *t, const lm_cfloat *d, lm_cfloat *img,
                   const lm_ctl *ctl, lm_error *err);

#endif
