/* FFTW set-up shared by every module that plans (solver, NUFFT, gridding,
 * Cartesian FFT): threads initialised once and the planner made
 * thread-safe, since reconstructions run in worker threads. */
#ifndef LM_FFTW_H
#define LM_FFTW_H

/* Idempotent and thread-safe. Returns 1 when FFTW's threads work. */
int lm_fftw_setup(void);

#endif
